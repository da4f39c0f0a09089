/*
 * A requestState codec: seal and open over an implementation's context.
 *
 * The wrapper holds the guarantees every codec must give the server core,
 * so that a custom codec cannot weaken them by accident: a failed open never
 * yields a payload, and a failed seal never yields a state.
 */
#include <stdlib.h>

#include "mcp/errors.h"
#include "mcp/request_state.h"
#include "server/codec_internal.h"

mcp_codec_t *mcp_codec_new(const mcp_codec_ops_t *ops, void *ctx)
{
    if (!ops || !ops->seal || !ops->open) {
        if (ops && ops->free)
            ops->free(ctx);
        return NULL;
    }
    mcp_codec_t *codec = malloc(sizeof *codec);
    if (!codec) {
        if (ops->free)
            ops->free(ctx);
        return NULL;
    }
    codec->ops = *ops;
    codec->ctx = ctx;
    return codec;
}

void mcp_codec_free(mcp_codec_t *codec)
{
    if (!codec)
        return;
    if (codec->ops.free)
        codec->ops.free(codec->ctx);
    free(codec);
}

/* A codec's own failure code, or MCP_EINVAL if it broke the convention. */
static int failure_code(int rc)
{
    return rc < 0 ? rc : MCP_EINVAL;
}

int mcp_codec_seal(mcp_codec_t *codec, const json_t *payload, const mcp_state_binding_t *binding,
                   char **out, mcp_error_t *err)
{
    if (out)
        *out = NULL;
    if (!codec || !payload || !binding || !binding->method || !out)
        return mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                             "mcp_codec_seal: missing argument");
    int rc = codec->ops.seal(codec->ctx, payload, binding, out, err);
    if (rc == MCP_OK && *out)
        return MCP_OK;
    free(*out);
    *out = NULL;
    if (rc == MCP_OK)
        return mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                             "the requestState codec sealed nothing");
    return failure_code(rc);
}

int mcp_codec_open(mcp_codec_t *codec, const char *state, const mcp_state_binding_t *binding,
                   json_t **payload_out, mcp_error_t *err)
{
    if (payload_out)
        *payload_out = NULL;
    if (!codec || !binding || !binding->method || !payload_out)
        return mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                             "mcp_codec_open: missing argument");
    if (!state)
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                             "requestState is missing");
    int rc = codec->ops.open(codec->ctx, state, binding, payload_out, err);
    if (rc == MCP_OK && *payload_out)
        return MCP_OK;
    json_decref(*payload_out);
    *payload_out = NULL;
    if (rc == MCP_OK)
        return mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                             "the requestState codec opened no payload");
    return failure_code(rc);
}
