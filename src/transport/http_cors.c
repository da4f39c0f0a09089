/* CORS for browser clients (http_cors.h). */
#include "transport/http_cors.h"

#include <string.h>

#include "protocol/headers_internal.h"

const char *http_cors_origin(bool enabled, const mcp_headers_t *headers)
{
    if (!enabled)
        return NULL;
    size_t count;
    const char *origin = mcp_headers_lookup(headers, "Origin", &count);
    return count == 1 && origin[0] ? origin : NULL;
}

bool http_cors_is_preflight(const char *method, const mcp_headers_t *headers)
{
    return strcmp(method, "OPTIONS") == 0 &&
           mcp_headers_get(headers, "Access-Control-Request-Method") != NULL;
}

void http_cors_answer_headers(const char *origin, mcp_header_t *headers, size_t *n)
{
    headers[(*n)++] = (mcp_header_t){"Access-Control-Allow-Origin", origin};
    headers[(*n)++] = (mcp_header_t){"Vary", "Origin"};
    /* Content-Type needs no exposing; these are the others a client
     * reads: the legacy session id and the authentication challenge. */
    headers[(*n)++] =
        (mcp_header_t){"Access-Control-Expose-Headers", "Mcp-Session-Id, WWW-Authenticate"};
}

/* A list of header names, as a browser sends Access-Control-Request-Headers:
 * token characters, commas and spaces only, so that it is safe to echo. */
static bool is_name_list(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!mcp_is_tchar((unsigned char)*s) && !strchr(", \t", *s))
            return false;
    return true;
}

size_t http_cors_preflight_headers(const char *origin, const mcp_headers_t *request, bool sessions,
                                   mcp_header_t out[HTTP_CORS_PREFLIGHT_HEADERS])
{
    size_t n = 0;
    out[n++] = (mcp_header_t){"Access-Control-Allow-Origin", origin};
    out[n++] = (mcp_header_t){"Vary", "Origin"};
    out[n++] = (mcp_header_t){"Access-Control-Allow-Methods",
                              sessions ? "GET, POST, DELETE" : "POST"};
    /* The names a page may send are open-ended (Mcp-Param-* follows the
     * tool's schema), so the ones it asks for are allowed: the Origin
     * check has already said the page may call. */
    const char *asked = mcp_headers_get(request, "Access-Control-Request-Headers");
    if (asked && is_name_list(asked))
        out[n++] = (mcp_header_t){"Access-Control-Allow-Headers", asked};
    /* Ten minutes: long enough to spare most preflights, short enough for
     * a changed policy to be seen (browsers cap it at 2 h or less). */
    out[n++] = (mcp_header_t){"Access-Control-Max-Age", "600"};
    return n;
}
