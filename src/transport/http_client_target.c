/*
 * The HTTP client's target: the endpoint, its TLS settings, the headers
 * every POST carries, and the bearer token.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp/header_value.h"
#include "protocol/headers_internal.h"
#include "transport/http_client.h"
#include "transport/http_client_target.h"

/* ------------------------------------------------------------------------
 * Validating and copying
 * ------------------------------------------------------------------------ */

static bool is_token(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!mcp_is_tchar((unsigned char)s[i]))
            return false;
    }
    return true;
}

/* Headers the transport writes itself: a target may not send its own. */
static bool is_managed_header(const char *name, size_t n, bool has_token)
{
    static const char *const managed[] = {
        "Content-Type", "Accept", "Content-Length", "Transfer-Encoding", "Expect", "Host",
        "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"};
    for (size_t i = 0; i < sizeof managed / sizeof managed[0]; i++) {
        if (strlen(managed[i]) == n && strncasecmp(name, managed[i], n) == 0)
            return true;
    }
    if (n >= 10 && strncasecmp(name, "Mcp-Param-", 10) == 0)
        return true;
    return has_token && ((n == 13 && strncasecmp(name, "Authorization", 13) == 0) ||
                         (n == 4 && strncasecmp(name, "DPoP", 4) == 0));
}

static int copy_headers(http_target_t *to, const char *const *headers, bool has_token,
                        mcp_error_t *err)
{
    size_t count = 0;
    while (headers && headers[count])
        count++;
    if (!(to->extra_headers = calloc(count + 1, sizeof *to->extra_headers)))
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    for (size_t i = 0; i < count; i++) {
        const char *line = headers[i];
        const char *colon = strchr(line, ':');
        size_t name_len = colon ? (size_t)(colon - line) : 0;
        if (!colon || !is_token(line, name_len) || strpbrk(line, "\r\n"))
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "extra header %zu is not a \"Name: value\" line", i);
        if (is_managed_header(line, name_len, has_token))
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "extra header %.*s is set by the transport itself",
                                 (int)name_len, line);
        if (!(to->extra_headers[i] = strdup(line)))
            return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    return MCP_OK;
}

static int check_url(const char *url, mcp_error_t *err)
{
    if (!url)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the HTTP target has no url");
    CURLU *u = mcp_curl.url();
    if (!u)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    char *scheme = NULL;
    CURLUcode uc = mcp_curl.url_set(u, CURLUPART_URL, url, 0);
    if (uc == CURLUE_OK)
        uc = mcp_curl.url_get(u, CURLUPART_SCHEME, &scheme, 0);
    int rc = MCP_OK;
    if (uc != CURLUE_OK)
        rc = mcp_error_set(err, MCP_EINVAL, 0, NULL, "bad url \"%s\": %s", url,
                           mcp_curl.url_strerror(uc));
    else if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)
        rc = mcp_error_set(err, MCP_EINVAL, 0, NULL, "the url \"%s\" is not http or https", url);
    mcp_curl.free(scheme);
    mcp_curl.url_cleanup(u);
    return rc;
}

int http_target_init(http_target_t *to, const mcp_http_target_t *from, mcp_error_t *err)
{
    memset(to, 0, sizeof *to);
    pthread_mutex_init(&to->lock, NULL);
    int rc = mcp_curl_load(err); /* libcurl parses the url */
    if (rc != MCP_OK)
        return rc;
    rc = check_url(from->url, err);
    if (rc != MCP_OK)
        return rc;
    if (from->bearer_token && strpbrk(from->bearer_token, "\r\n"))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the bearer token contains a line break");
    rc = copy_headers(to, from->headers, from->bearer_token || from->token, err);
    if (rc != MCP_OK)
        return rc;
    if (!(to->url = strdup(from->url)) ||
        (from->bearer_token && !(to->bearer_token = strdup(from->bearer_token))) ||
        (from->ca_file && !(to->ca_file = strdup(from->ca_file))))
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    to->token_fn = from->token;
    to->proof_fn = from->token ? from->token_proof : NULL;
    to->token_user = from->token_user;
    to->connect_timeout_ms = from->connect_timeout_ms > 0
                                 ? (long)from->connect_timeout_ms
                                 : CLIENT_HTTP_DEFAULT_CONNECT_TIMEOUT_MS;
    to->insecure = from->insecure;
    return MCP_OK;
}

void http_target_free(http_target_t *tg)
{
    for (char **line = tg->extra_headers; line && *line; line++)
        free(*line);
    free(tg->extra_headers);
    free(tg->url);
    free(tg->bearer_token);
    free(tg->ca_file);
    free(tg->token);
    free(tg->challenge);
    free(tg->dpop_nonce);
    pthread_mutex_destroy(&tg->lock);
}

CURLcode http_target_configure(const http_target_t *tg, CURL *easy)
{
    CURLcode c = mcp_curl.easy_setopt(easy, CURLOPT_URL, tg->url);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, tg->connect_timeout_ms);
    if (c == CURLE_OK && tg->insecure)
        c = mcp_curl.easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
    if (c == CURLE_OK && tg->insecure)
        c = mcp_curl.easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    if (c == CURLE_OK && tg->ca_file)
        c = mcp_curl.easy_setopt(easy, CURLOPT_CAINFO, tg->ca_file);
    return c;
}

/* ------------------------------------------------------------------------
 * The bearer token
 * ------------------------------------------------------------------------ */

/*
 * The token for the next POST into *token_out (malloc'd), or NULL for
 * none. The token callback's answer is kept and reused until a 401/403
 * makes it stale; then the callback is asked again, with that answer's
 * challenge. It runs without the lock, on the caller's thread, possibly on
 * several threads at once.
 */
static int current_token(http_target_t *tg, char **token_out)
{
    *token_out = NULL;
    if (!tg->token_fn) {
        if (tg->bearer_token && !(*token_out = strdup(tg->bearer_token)))
            return MCP_ENOMEM;
        return MCP_OK;
    }

    pthread_mutex_lock(&tg->lock);
    bool ask = !tg->token_known || tg->token_stale;
    char *challenge = NULL;
    int rc = MCP_OK;
    if (ask) {
        challenge = tg->challenge;
        tg->challenge = NULL;
        tg->token_stale = false;
    } else if (tg->token && !(*token_out = strdup(tg->token))) {
        rc = MCP_ENOMEM;
    }
    pthread_mutex_unlock(&tg->lock);
    if (!ask)
        return rc;

    char *fresh = NULL;
    rc = tg->token_fn(tg->token_user, tg->url, challenge, &fresh);
    free(challenge);
    if (rc < 0) {
        free(fresh);
        return rc;
    }
    char *kept = fresh ? strdup(fresh) : NULL;
    if (fresh && !kept) {
        free(fresh);
        return MCP_ENOMEM;
    }
    pthread_mutex_lock(&tg->lock);
    /* Results a server marks private belong to the credentials they were
     * fetched with (digest 6); the client tells credentials apart by this
     * number. An answer equal to the last (a callback asked again only for
     * a DPoP nonce, say) keeps it. */
    bool same = tg->token_known && (tg->token && kept ? strcmp(tg->token, kept) == 0
                                                      : tg->token == kept);
    if (!same)
        tg->token_generation++;
    free(tg->token);
    tg->token = kept;
    tg->token_known = true;
    pthread_mutex_unlock(&tg->lock);
    *token_out = fresh;
    return MCP_OK;
}

uint64_t http_target_auth_generation(http_target_t *tg)
{
    pthread_mutex_lock(&tg->lock);
    uint64_t g = tg->token_generation;
    pthread_mutex_unlock(&tg->lock);
    return g;
}

void http_target_auth_failed(http_target_t *tg, const char *challenge)
{
    if (!tg->token_fn)
        return;
    char *copy = challenge ? strdup(challenge) : NULL;
    pthread_mutex_lock(&tg->lock);
    free(tg->challenge);
    tg->challenge = copy;
    tg->token_stale = true;
    pthread_mutex_unlock(&tg->lock);
}

void http_target_keep_nonce(http_target_t *tg, const char *value, size_t len)
{
    if (!tg->proof_fn)
        return;
    char *copy = strndup(value, len);
    if (!copy)
        return; /* the server asks again */
    pthread_mutex_lock(&tg->lock);
    free(tg->dpop_nonce);
    tg->dpop_nonce = copy;
    pthread_mutex_unlock(&tg->lock);
}

/* The proof of possession for a request to `url` carrying `token` (RFC
 * 9449 §7), or NULL when the token is a bearer token. The proof callback
 * runs without the lock, with the server's last nonce. */
static int token_proof(http_target_t *tg, const char *method, const char *url,
                       const char *token, char **proof_out)
{
    *proof_out = NULL;
    if (!tg->proof_fn)
        return MCP_OK;
    pthread_mutex_lock(&tg->lock);
    char *nonce = tg->dpop_nonce ? strdup(tg->dpop_nonce) : NULL;
    pthread_mutex_unlock(&tg->lock);
    int rc = tg->proof_fn(tg->token_user, method, url ? url : tg->url, token, nonce, proof_out);
    free(nonce);
    if (rc < 0) {
        free(*proof_out);
        *proof_out = NULL;
    }
    return rc < 0 ? rc : MCP_OK;
}

/* ------------------------------------------------------------------------
 * Request headers
 * ------------------------------------------------------------------------ */

/* Appends "name: prefix value" to *list. A value must not break the header
 * framing; an empty one is written "name;", libcurl's spelling of a header
 * with an empty value ("name:" would remove the header). */
static int add_header(struct curl_slist **list, const char *name, const char *prefix,
                      const char *value)
{
    if (strpbrk(value, "\r\n"))
        return MCP_EINVAL;
    size_t n = strlen(name) + strlen(prefix) + strlen(value) + 3;
    char *line = malloc(n);
    if (!line)
        return MCP_ENOMEM;
    if (*prefix || *value)
        snprintf(line, n, "%s: %s%s", name, prefix, value);
    else
        snprintf(line, n, "%s;", name);
    struct curl_slist *grown = mcp_curl.slist_append(*list, line);
    free(line);
    if (!grown)
        return MCP_ENOMEM;
    *list = grown;
    return MCP_OK;
}

static int add_line(struct curl_slist **list, const char *line)
{
    struct curl_slist *grown = mcp_curl.slist_append(*list, line);
    if (!grown)
        return MCP_ENOMEM;
    *list = grown;
    return MCP_OK;
}

static int add_hint_headers(struct curl_slist **h, const client_http_hints_t *hints)
{
    int rc = MCP_OK;
    if (hints->protocol_version)
        rc = add_header(h, "MCP-Protocol-Version", "", hints->protocol_version);
    if (rc == MCP_OK && hints->method)
        rc = add_header(h, "Mcp-Method", "", hints->method);
    if (rc == MCP_OK && hints->name) {
        char *encoded = NULL;
        rc = mcp_header_value_encode(hints->name, strlen(hints->name), &encoded);
        if (rc == MCP_OK)
            rc = add_header(h, "Mcp-Name", "", encoded);
        free(encoded);
    }
    for (size_t i = 0; rc == MCP_OK && i < hints->n_params; i++) {
        const mcp_header_t *p = &hints->params[i];
        char name[256];
        if (!p->name || !p->value || !is_token(p->name, strlen(p->name)) ||
            (size_t)snprintf(name, sizeof name, "Mcp-Param-%s", p->name) >= sizeof name)
            return MCP_EINVAL;
        rc = add_header(h, name, "", p->value);
    }
    return rc;
}

int http_target_headers(http_target_t *tg, const char *method, const char *url,
                        const client_http_hints_t *hints, struct curl_slist **out)
{
    struct curl_slist *h = NULL;
    int rc = add_header(&h, "Content-Type", "", "application/json");
    if (rc == MCP_OK)
        rc = add_header(&h, "Accept", "", "application/json, text/event-stream");
    if (rc == MCP_OK && hints)
        rc = add_hint_headers(&h, hints);
    for (char **line = tg->extra_headers; rc == MCP_OK && line && *line; line++)
        rc = add_line(&h, *line);
    if (rc == MCP_OK) {
        char *token = NULL, *proof = NULL;
        rc = current_token(tg, &token);
        if (rc == MCP_OK && token)
            rc = token_proof(tg, method, url, token, &proof);
        if (rc == MCP_OK && token)
            rc = add_header(&h, "Authorization", proof ? "DPoP " : "Bearer ", token);
        if (rc == MCP_OK && proof)
            rc = add_header(&h, "DPoP", "", proof);
        free(token);
        free(proof);
    }
    /* No "Expect: 100-continue" wait before large bodies. */
    if (rc == MCP_OK)
        rc = add_line(&h, "Expect:");
    if (rc != MCP_OK) {
        mcp_curl.slist_free_all(h);
        return rc;
    }
    *out = h;
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Redirects
 * ------------------------------------------------------------------------ */

/* The scheme, host and port of the URL in `u`, as one comparable string
 * ("http://example.com:80"; the port is the scheme's default when the URL
 * names none), or NULL. */
static char *origin_of(CURLU *u)
{
    char *scheme = NULL, *host = NULL, *port = NULL, *origin = NULL;
    if (mcp_curl.url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        mcp_curl.url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        mcp_curl.url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        for (char *c = host; *c; c++) /* host names are case-insensitive */
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        size_t n = strlen(scheme) + strlen(host) + strlen(port) + 5;
        if ((origin = malloc(n)))
            snprintf(origin, n, "%s://%s:%s", scheme, host, port);
    }
    mcp_curl.free(scheme);
    mcp_curl.free(host);
    mcp_curl.free(port);
    return origin;
}

char *http_target_redirect(const http_target_t *tg, const char *from, const char *location)
{
    CURLU *u = mcp_curl.url();
    if (!u)
        return NULL;
    char *before = NULL, *after = NULL, *absolute = NULL, *result = NULL;
    /* Setting a second URL on the handle resolves it against the first,
     * as RFC 3986 section 5 says a relative reference is. */
    if (mcp_curl.url_set(u, CURLUPART_URL, from ? from : tg->url, 0) == CURLUE_OK &&
        (before = origin_of(u)) &&
        mcp_curl.url_set(u, CURLUPART_URL, location, 0) == CURLUE_OK &&
        (after = origin_of(u)) && strcmp(before, after) == 0 &&
        (strncmp(after, "http://", 7) == 0 || strncmp(after, "https://", 8) == 0) &&
        mcp_curl.url_get(u, CURLUPART_URL, &absolute, 0) == CURLUE_OK)
        result = strdup(absolute);
    mcp_curl.free(absolute);
    free(before);
    free(after);
    mcp_curl.url_cleanup(u);
    return result;
}

int http_target_reproof(http_target_t *tg, const char *method, const char *url,
                        struct curl_slist **headers)
{
    static const char dpop_auth[] = "Authorization: DPoP ";
    const char *token = NULL;
    for (const struct curl_slist *line = *headers; line && !token; line = line->next)
        if (strncmp(line->data, dpop_auth, sizeof dpop_auth - 1) == 0)
            token = line->data + sizeof dpop_auth - 1;
    if (!token || !tg->proof_fn)
        return MCP_OK; /* a bearer token, or none: nothing names the URL */
    char *proof = NULL;
    int rc = token_proof(tg, method, url, token, &proof);
    struct curl_slist *fresh = NULL;
    for (const struct curl_slist *line = *headers; rc == MCP_OK && line; line = line->next)
        if (strncasecmp(line->data, "DPoP:", 5) != 0)
            rc = add_line(&fresh, line->data);
    if (rc == MCP_OK && proof)
        rc = add_header(&fresh, "DPoP", "", proof);
    free(proof);
    if (rc != MCP_OK) {
        mcp_curl.slist_free_all(fresh);
        return rc;
    }
    mcp_curl.slist_free_all(*headers);
    *headers = fresh;
    return MCP_OK;
}
