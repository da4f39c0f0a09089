/*
 * Who the HTTP client talks to, and what every POST to it carries
 * (internal): the endpoint and its TLS settings, the extra headers, the
 * bearer token, and the MCP headers of digest section 4.2 built from a
 * request's hints.
 *
 * The target is validated and copied once, when the transport is created.
 * Afterwards its functions may be called from any thread: the cached token
 * has its own lock, which is never held while the token callback runs.
 */
#ifndef MCP_TRANSPORT_HTTP_CLIENT_TARGET_H
#define MCP_TRANSPORT_HTTP_CLIENT_TARGET_H

#include "transport/curl_api.h"
#include <pthread.h>

#include "client/transport.h"

/* Treat the fields as private. */
typedef struct http_target {
    char *url;
    char **extra_headers; /* "Name: value", NULL-terminated */
    char *bearer_token;
    mcp_token_fn token_fn;
    mcp_token_proof_fn proof_fn;
    void *token_user;
    long connect_timeout_ms;
    bool insecure;
    char *ca_file;

    pthread_mutex_t lock; /* guards the six fields below */
    char *token;          /* the token callback's last answer */
    uint64_t token_generation; /* changes with `token` (see below) */
    bool token_known;     /* `token` holds an answer */
    bool token_stale;     /* a 401/403 came since: ask again */
    char *challenge;      /* its WWW-Authenticate, for the next ask */
    char *dpop_nonce;     /* the server's last DPoP-Nonce, for the next proof */
} http_target_t;

/*
 * Validates `from` and copies it into *to: the URL must be http:// or
 * https://; an extra header must be a "Name: value" line without line
 * breaks, and must not be one the transport writes itself (Content-Type,
 * Accept, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*, ...;
 * Authorization too when a token is configured). Returns MCP_OK,
 * MCP_EINVAL or MCP_ENOMEM with *err filled; in every case release *to
 * with http_target_free().
 */
int http_target_init(http_target_t *to, const mcp_http_target_t *from, mcp_error_t *err);

/* Releases what *tg holds. */
void http_target_free(http_target_t *tg);

/*
 * The request headers of one request (`method`: "POST", "GET", "DELETE";
 * `url`: where it goes, NULL for the target's URL):
 * Content-Type, Accept, the MCP headers from `hints` (may be NULL; Mcp-Name
 * is encoded here, Mcp-Param-<name> values come encoded), the extra
 * headers, Authorization when there is a token ("DPoP <token>" and a DPoP
 * proof header when the proof callback makes one, else "Bearer <token>"),
 * and an empty Expect. May run the token and proof callbacks, on the
 * calling thread. Returns MCP_OK with the list in *out (free it with
 * curl_slist_free_all), MCP_EINVAL for a hint that is not a valid header
 * (a line break, a bad name, a name that is not UTF-8), MCP_ENOMEM, or the
 * token callback's failure.
 */
int http_target_headers(http_target_t *tg, const char *method, const char *url,
                        const client_http_hints_t *hints, struct curl_slist **out);

/* A response's DPoP-Nonce header value (`len` bytes, trimmed): the next
 * proofs carry it (RFC 9449 §9). */
void http_target_keep_nonce(http_target_t *tg, const char *value, size_t len);

/* A 401/403 answered with `challenge` (may be NULL): the next POST asks the
 * token callback again, with it. */
void http_target_auth_failed(http_target_t *tg, const char *challenge);

/* A number that changes whenever the token callback's answer does (a
 * first answer, or one unlike the last): requests sent while it stays the
 * same carried the same credentials. Constant without a token callback
 * (a fixed bearer token, or none). */
uint64_t http_target_auth_generation(http_target_t *tg);

/*
 * Where a redirect sends a request that went to `from` (NULL: the target's
 * URL), given the answer's Location value (absolute or relative): the
 * absolute URL (free() it) when it keeps the origin of `from`, its
 * scheme, host and port; NULL when it leaves it, or is no URL. A request
 * is never sent elsewhere than where the application pointed it: its
 * token, DPoP proofs and extra headers are meant for that origin.
 */
char *http_target_redirect(const http_target_t *tg, const char *from, const char *location);

/*
 * A request whose headers were built for one URL goes to `url` instead
 * (a redirect): when its Authorization is a DPoP token, its DPoP proof is
 * made again for `method` and `url` (a proof names the URL it is for), by
 * the proof callback, on the calling thread. Otherwise *headers stays as
 * it is. MCP_OK, MCP_ENOMEM, or the proof callback's failure; *headers is
 * unchanged on failure.
 */
int http_target_reproof(http_target_t *tg, const char *method, const char *url,
                        struct curl_slist **headers);

/* Sets the URL, allowed protocols, connect timeout and TLS options of an
 * easy handle. Returns the first libcurl failure, or CURLE_OK. */
CURLcode http_target_configure(const http_target_t *tg, CURL *easy);

#endif /* MCP_TRANSPORT_HTTP_CLIENT_TARGET_H */
