/*
 * The params digest a requestState is bound to: SHA-256 over the RFC 8785
 * canonical JSON of the request's salient params. The members a retry adds
 * or changes (inputResponses, requestState) and the per-request _meta are
 * left out, so the retry of a request digests like the request itself.
 *
 * RFC 8785 writes every number as the double nearest to it, so integers
 * beyond 2^53 that differ would digest alike, and a state sealed for one
 * amount would open for another. Params holding such an integer (outside
 * I-JSON, RFC 7493, so outside any promise of interoperability) digest
 * their exact text as well.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "mcp/canonical_json.h"
#include "json_copy.h"
#include "mcp/request_state.h"

static const char *const NOT_SALIENT[] = {"_meta", "inputResponses", "requestState"};

/* The params to digest, as a new reference (NULL when out of memory). */
static json_t *salient_params(const json_t *params)
{
    if (!params)
        return json_object();
    /* A shallow copy only touches the members' reference counts, which
     * jansson updates atomically, so borrowed params stay shareable. */
    json_t *copy = json_is_object(params) ? mcp_json_copy_object(params)
                                          : json_copy((json_t *)params);
    if (copy && json_is_object(copy))
        for (size_t i = 0; i < sizeof NOT_SALIENT / sizeof NOT_SALIENT[0]; i++)
            json_object_del(copy, NOT_SALIENT[i]);
    return copy;
}

/* Does `v` hold an integer that a double cannot represent exactly? */
static bool has_inexact_integer(const json_t *v)
{
    const json_int_t exact = (json_int_t)1 << 53;
    if (json_is_integer(v))
        return json_integer_value(v) > exact || json_integer_value(v) < -exact;
    if (json_is_object(v)) {
        const char *key;
        json_t *member;
        json_object_foreach((json_t *)v, key, member) {
            if (has_inexact_integer(member))
                return true;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item) {
            if (has_inexact_integer(item))
                return true;
        }
    }
    return false;
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
    bool inexact = has_inexact_integer(salient);
    char *exact = inexact ? json_dumps(salient, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)
                          : NULL;
    json_decref(salient);
    if (!canonical || (inexact && !exact)) {
        free(exact);
        free(canonical);
        return MCP_ENOMEM;
    }
    struct sha256_ctx sha;
    sha256_init(&sha);
    sha256_update(&sha, len, (const uint8_t *)canonical);
    if (exact) {
        sha256_update(&sha, 1, (const uint8_t *)"\n");
        sha256_update(&sha, strlen(exact), (const uint8_t *)exact);
    }
    sha256_digest(&sha, SHA256_DIGEST_SIZE, out);
    free(canonical);
    free(exact);
    return MCP_OK;
}
