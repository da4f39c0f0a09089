/*
 * The params digest a requestState is bound to: SHA-256 over the RFC 8785
 * canonical JSON of the request's salient params. The members a retry adds
 * or changes (inputResponses, requestState) and the per-request _meta are
 * left out, so the retry of a request digests like the request itself.
 */
#include <stdlib.h>

#include <nettle/sha2.h>

#include "mcp/canonical_json.h"
#include "mcp/request_state.h"

static const char *const NOT_SALIENT[] = {"_meta", "inputResponses", "requestState"};

/* The params to digest, as a new reference (NULL when out of memory). */
static json_t *salient_params(const json_t *params)
{
    if (!params)
        return json_object();
    /* A shallow copy only touches the members' reference counts, which
     * jansson updates atomically, so borrowed params stay shareable. */
    json_t *copy = json_copy((json_t *)params);
    if (copy && json_is_object(copy))
        for (size_t i = 0; i < sizeof NOT_SALIENT / sizeof NOT_SALIENT[0]; i++)
            json_object_del(copy, NOT_SALIENT[i]);
    return copy;
}

int mcp_state_params_digest(const json_t *params, uint8_t out[32])
{
    if (!out)
        return MCP_EINVAL;
    json_t *salient = salient_params(params);
    if (!salient)
        return MCP_ENOMEM;
    size_t len = 0;
    char *canonical = mcp_json_canonical(salient, &len);
    json_decref(salient);
    if (!canonical)
        return MCP_ENOMEM;
    struct sha256_ctx sha;
    sha256_init(&sha);
    sha256_update(&sha, len, (const uint8_t *)canonical);
    sha256_digest(&sha, SHA256_DIGEST_SIZE, out);
    free(canonical);
    return MCP_OK;
}
