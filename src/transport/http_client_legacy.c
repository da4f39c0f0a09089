/*
 * What only legacy Streamable HTTP servers (2025-03-26 ... 2025-11-25)
 * need from the HTTP client transport (digest section 10.3):
 *
 *   - the session: the Mcp-Session-Id the server assigns on the answer to
 *     initialize is kept and sent on every later request, forgotten when
 *     the server says it is gone (404), and ended with DELETE;
 *   - the GET stream, on which the server sends requests and notifications
 *     of its own, and on which a broken POST stream is resumed with
 *     Last-Event-ID.
 *
 * A modern connection never turns sessions on, so none of this touches it.
 */
#include <stdlib.h>
#include <string.h>

#include "mcp/headers.h"
#include "transport/http_client_internal.h"

/* A visible-ASCII value (0x21-0x7E), as the spec requires of session ids:
 * anything else could not be sent back as a header. */
static bool valid_session_id(const char *v, size_t len)
{
    if (len == 0 || len > HTTP_MAX_SESSION_ID)
        return false;
    for (size_t i = 0; i < len; i++)
        if (v[i] < 0x21 || v[i] > 0x7e)
            return false;
    return true;
}

void http_client_keep_session(http_client_t *t, const char *value, size_t len)
{
    char copy[HTTP_MAX_SESSION_ID + 8];
    while (len > 0 && (value[len - 1] == '\r' || value[len - 1] == '\n'))
        len--;
    if (len >= sizeof copy)
        return;
    memcpy(copy, value, len);
    copy[len] = '\0';
    const char *start;
    size_t n;
    mcp_header_trim(copy, &start, &n);
    if (!valid_session_id(start, n))
        return;
    pthread_mutex_lock(&t->lock);
    if (t->sessions && (!t->session_id || strncmp(t->session_id, start, n) != 0 ||
                        t->session_id[n] != '\0')) {
        char *id = malloc(n + 1);
        if (id) {
            memcpy(id, start, n);
            id[n] = '\0';
            free(t->session_id);
            t->session_id = id;
        }
    }
    pthread_mutex_unlock(&t->lock);
}

static int append(struct curl_slist **headers, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 3;
    char *line = malloc(n);
    if (!line)
        return MCP_ENOMEM;
    snprintf(line, n, "%s: %s", name, value);
    struct curl_slist *grown = mcp_curl.slist_append(*headers, line);
    free(line);
    if (!grown)
        return MCP_ENOMEM;
    *headers = grown;
    return MCP_OK;
}

int http_client_session_headers(http_client_t *t, const char *last_event_id,
                                struct curl_slist **headers)
{
    char id[HTTP_MAX_SESSION_ID + 1] = "";
    pthread_mutex_lock(&t->lock);
    if (t->session_id)
        snprintf(id, sizeof id, "%s", t->session_id);
    pthread_mutex_unlock(&t->lock);
    int rc = MCP_OK;
    if (id[0])
        rc = append(headers, "Mcp-Session-Id", id);
    /* An event ID is the server's text: it must not break the framing. */
    if (rc == MCP_OK && last_event_id && !strpbrk(last_event_id, "\r\n"))
        rc = append(headers, "Last-Event-ID", last_event_id);
    return rc;
}

void http_client_session_begin(client_transport_t *base)
{
    http_client_t *t = (http_client_t *)base;
    pthread_mutex_lock(&t->lock);
    t->sessions = true;
    pthread_mutex_unlock(&t->lock);
}

bool http_client_session_active(client_transport_t *base)
{
    http_client_t *t = (http_client_t *)base;
    pthread_mutex_lock(&t->lock);
    bool active = t->session_id != NULL;
    pthread_mutex_unlock(&t->lock);
    return active;
}

void http_client_session_reset(client_transport_t *base)
{
    http_client_t *t = (http_client_t *)base;
    pthread_mutex_lock(&t->lock);
    free(t->session_id);
    t->session_id = NULL;
    pthread_mutex_unlock(&t->lock);
}

static size_t discard(char *bytes, size_t size, size_t n, void *user)
{
    (void)bytes;
    (void)user;
    return size * n;
}

/* DELETE runs on the caller's thread with an easy handle of its own: it is
 * the last thing a connection does, and waiting for it is what close
 * means. */
void http_client_session_end(client_transport_t *base, const char *protocol_version)
{
    http_client_t *t = (http_client_t *)base;
    if (!http_client_session_active(base))
        return;
    CURL *e = mcp_curl.easy_init();
    struct curl_slist *headers = NULL;
    client_http_hints_t hints = {.protocol_version = protocol_version};
    int rc = e ? http_target_headers(&t->target, "DELETE", NULL, &hints, &headers) : MCP_ENOMEM;
    if (rc == MCP_OK)
        rc = http_client_session_headers(t, NULL, &headers);
    CURLcode c = rc == MCP_OK ? http_target_configure(&t->target, e) : CURLE_OUT_OF_MEMORY;
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_HTTPHEADER, headers);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)HTTP_SESSION_END_TIMEOUT_MS);
    if (c == CURLE_OK)
        c = mcp_curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    if (c == CURLE_OK)
        c = mcp_curl.easy_perform(e);
    long status = 0;
    if (c == CURLE_OK)
        mcp_curl.easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    const client_transport_hooks_t *h = &t->base.hooks;
    if (h->log)
        h->log(h->log_user, MCP_LOG_DEBUG,
               c != CURLE_OK ? "ending the session failed"
               : status == 405 ? "the server does not let clients end sessions (405)"
                               : "session ended");
    mcp_curl.slist_free_all(headers);
    if (e)
        mcp_curl.easy_cleanup(e);
    http_client_session_reset(base);
}

int http_client_open_stream(client_transport_t *base, const char *protocol_version,
                            const char *last_event_id, const json_t *request_id,
                            const client_exchange_events_t *ev, void *user,
                            client_exchange_t **out)
{
    http_client_t *t = (http_client_t *)base;
    if (!ev || !ev->on_done || !out)
        return MCP_EINVAL;
    /* The server's own stream ends no request: an id no response carries
     * keeps every message on it flowing to the callbacks. */
    json_t *own = request_id ? NULL : json_string("libmcp/get-stream");
    if (!request_id && !own)
        return MCP_ENOMEM;
    client_http_hints_t hints = {.protocol_version = protocol_version, .long_lived = true};
    client_exchange_t *ex;
    int rc = http_client_exchange_new(t, NULL, request_id ? request_id : own, &hints,
                                      last_event_id, ev, user, 0, &ex);
    json_decref(own);
    if (rc != MCP_OK)
        return rc;
    rc = http_client_submit(t, ex);
    if (rc != MCP_OK)
        return rc;
    *out = ex;
    return MCP_OK;
}
