/*
 * oauth_http.h - the OAuth client's requests to authorization servers and
 * metadata URLs: one blocking HTTP exchange at a time, on the caller's
 * thread, with libcurl's easy interface (loaded by mcp_curl_load()).
 * Redirects are not followed: a metadata document must be where it is
 * looked for. Only the status and the body are kept.
 */
#ifndef MCP_OAUTH_HTTP_H
#define MCP_OAUTH_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "mcp/common.h"

typedef struct {
    int64_t timeout_ms; /* the whole exchange */
    bool insecure;
    const char *ca_file;
} oauth_http_options_t;

typedef struct {
    long status;
    char *body; /* NUL-terminated; at most OAUTH_HTTP_MAX_BODY bytes */
    size_t len;
    char *dpop_nonce; /* the DPoP-Nonce header's value (trimmed), or NULL */
} oauth_http_response_t;

#define OAUTH_HTTP_MAX_BODY (1024 * 1024)

/*
 * GET `url` (body NULL) or POST `body` as `content_type`; `authorization`
 * is an Authorization header value, `dpop` a DPoP proof (RFC 9449), each
 * NULL for none. Any HTTP status is MCP_OK
 * (look at out->status). Errors: MCP_EIO (no exchange; a body over the
 * limit), MCP_ETIMEDOUT, MCP_EINVAL (a bad URL), MCP_ENOMEM, or
 * mcp_curl_load()'s; *err names the URL.
 */
int oauth_http_request(const oauth_http_options_t *o, const char *url, const char *content_type,
                       const char *body, const char *authorization, oauth_http_response_t *out,
                       mcp_error_t *err);
int oauth_http_request_dpop(const oauth_http_options_t *o, const char *url,
                            const char *content_type, const char *body, const char *authorization,
                            const char *dpop, oauth_http_response_t *out, mcp_error_t *err);

void oauth_http_response_free(oauth_http_response_t *r);

/* The body as a JSON object when the status is 2xx and the body parses as
 * one (new reference), else NULL. */
json_t *oauth_http_json(const oauth_http_response_t *r);

#endif /* MCP_OAUTH_HTTP_H */
