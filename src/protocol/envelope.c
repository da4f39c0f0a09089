/* The _meta envelope of a request, read in one pass; see envelope.h. */
#include "protocol/envelope.h"

#include <stdbool.h>
#include <string.h>

#include "mcp/request.h"
#include "json_get.h"

static bool key_is(const char *key, size_t len, const char *name, size_t name_len)
{
    return len == name_len && memcmp(key, name, len) == 0;
}

#define KEY_IS(key, len, name) key_is(key, len, name, sizeof name - 1)

void mcp_envelope_read(const json_t *params, mcp_envelope_t *out)
{
    memset(out, 0, sizeof *out);
    out->meta = mcp_json_get(params, "_meta");
    if (!json_is_object(out->meta))
        return;
    json_t *meta = (json_t *)out->meta;
    /* The iterator itself: json_object_keylen_foreach goes from key to
     * iterator and back for every member (as json_writer.c notes). */
    for (void *it = json_object_iter(meta); it; it = json_object_iter_next(meta, it)) {
        const char *key = json_object_iter_key(it);
        size_t len = json_object_iter_key_len(it);
        const json_t *value = json_object_iter_value(it);
        if (KEY_IS(key, len, MCP_META_PROTOCOL_VERSION))
            out->protocol_version = value;
        else if (KEY_IS(key, len, MCP_META_CLIENT_CAPABILITIES))
            out->client_capabilities = value;
        else if (KEY_IS(key, len, MCP_META_CLIENT_INFO))
            out->client_info = value;
        else if (KEY_IS(key, len, MCP_META_LOG_LEVEL))
            out->log_level = value;
        else if (KEY_IS(key, len, "progressToken"))
            out->progress_token = value;
    }
}
