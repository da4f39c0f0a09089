/* The OAuth client's HTTP exchanges (oauth_http.h). */
#include <stdio.h> /* asprintf */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/oauth/oauth_http.h"
#include "transport/curl_api.h"

/* Whole exchanges that never answer still end. */
#define CONNECT_TIMEOUT_MS 10000L

typedef struct {
    oauth_http_response_t *out;
    bool too_big;
} sink_t;

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    sink_t *s = user;
    size_t len = size * n;
    oauth_http_response_t *r = s->out;
    if (r->len + len > OAUTH_HTTP_MAX_BODY) {
        s->too_big = true;
        return 0; /* libcurl stops the transfer */
    }
    char *grown = realloc(r->body, r->len + len + 1);
    if (!grown)
        return 0;
    memcpy(grown + r->len, data, len);
    r->len += len;
    grown[r->len] = '\0';
    r->body = grown;
    return len;
}

/* Keeps the DPoP-Nonce of the final response (RFC 9449 §8): a server
 * asks for a nonce in the proofs with it. */
static size_t on_header(char *line, size_t size, size_t n, void *user)
{
    oauth_http_response_t *r = ((sink_t *)user)->out;
    size_t len = size * n;
    static const char name[] = "DPoP-Nonce:";
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        free(r->dpop_nonce); /* a new response (after a 100 Continue) */
        r->dpop_nonce = NULL;
    } else if (len > sizeof name - 1 && strncasecmp(line, name, sizeof name - 1) == 0) {
        const char *v = line + sizeof name - 1, *end = line + len;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
            end--;
        free(r->dpop_nonce);
        r->dpop_nonce = strndup(v, (size_t)(end - v));
    }
    return len;
}

/* Appends "name: value" to *list; false when out of memory. */
static bool add_header(struct curl_slist **list, const char *name, const char *value)
{
    char *line = NULL;
    if (asprintf(&line, "%s: %s", name, value) < 0)
        return false;
    struct curl_slist *grown = mcp_curl.slist_append(*list, line);
    free(line);
    if (!grown)
        return false;
    *list = grown;
    return true;
}

int oauth_http_request(const oauth_http_options_t *o, const char *url, const char *content_type,
                       const char *body, const char *authorization, oauth_http_response_t *out,
                       mcp_error_t *err)
{
    return oauth_http_request_dpop(o, url, content_type, body, authorization, NULL, out, err);
}

int oauth_http_request_dpop(const oauth_http_options_t *o, const char *url,
                            const char *content_type, const char *body, const char *authorization,
                            const char *dpop, oauth_http_response_t *out, mcp_error_t *err)
{
    memset(out, 0, sizeof *out);
    int rc = mcp_curl_load(err);
    if (rc != MCP_OK)
        return rc;
    struct curl_slist *headers = NULL;
    bool built = add_header(&headers, "Accept", "application/json") &&
                 (!content_type || add_header(&headers, "Content-Type", content_type)) &&
                 (!authorization || add_header(&headers, "Authorization", authorization)) &&
                 (!dpop || add_header(&headers, "DPoP", dpop));
    CURL *e = built ? mcp_curl.easy_init() : NULL;
    if (!e) {
        mcp_curl.slist_free_all(headers);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    sink_t sink = {.out = out};
    CURLcode c = mcp_curl.easy_setopt(e, CURLOPT_URL, url);
#define SET(opt, value) \
    if (c == CURLE_OK)  \
    c = mcp_curl.easy_setopt(e, opt, value)
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    SET(CURLOPT_TIMEOUT_MS, (long)(o->timeout_ms > 0 ? o->timeout_ms : 30000));
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_WRITEFUNCTION, on_body);
    SET(CURLOPT_WRITEDATA, &sink);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, &sink);
    if (body) {
        SET(CURLOPT_POSTFIELDS, body);
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    if (o->insecure) {
        SET(CURLOPT_SSL_VERIFYPEER, 0L);
        SET(CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (o->ca_file)
        SET(CURLOPT_CAINFO, o->ca_file);
#undef SET
    if (c == CURLE_OK)
        c = mcp_curl.easy_perform(e);
    if (c == CURLE_OK)
        mcp_curl.easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out->status);
    mcp_curl.easy_cleanup(e);
    mcp_curl.slist_free_all(headers);

    if (c == CURLE_OK)
        return MCP_OK;
    rc = sink.too_big ? MCP_EIO
         : c == CURLE_OPERATION_TIMEDOUT ? MCP_ETIMEDOUT
         : c == CURLE_URL_MALFORMAT || c == CURLE_UNSUPPORTED_PROTOCOL ? MCP_EINVAL
         : c == CURLE_OUT_OF_MEMORY ? MCP_ENOMEM
                                    : MCP_EIO;
    oauth_http_response_free(out);
    return mcp_error_set(err, rc, 0, NULL, "%s %s: %s", body ? "POST" : "GET", url,
                         sink.too_big ? "the answer is over 1 MiB" : mcp_curl.easy_strerror(c));
}

void oauth_http_response_free(oauth_http_response_t *r)
{
    if (!r)
        return;
    free(r->body);
    free(r->dpop_nonce);
    memset(r, 0, sizeof *r);
}

json_t *oauth_http_json(const oauth_http_response_t *r)
{
    if (r->status < 200 || r->status > 299 || !r->body)
        return NULL;
    json_t *doc = json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, NULL);
    if (doc && !json_is_object(doc)) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}
