/*
 * One HTTP request on the endpoint, from its headers to the last byte of
 * its answer:
 *
 *   begin   the checks that need no body (path, Host, Origin, method,
 *           auth, Content-Type, Accept, declared length); refusals are
 *           answered on the spot
 *   body    collected up to the limit
 *   end     handed to the server core, which answers through the sink
 *   sink    frames what the core sends: one JSON document, or an event
 *           stream as soon as a notification comes before the response
 *
 * The exchange lock serialises every responder callback, so an exchange
 * that is DONE (finished, aborted or cancelled) calls nobody any more.
 */
#include <stdlib.h>
#include <string.h>

#include "protocol/headers_internal.h"
#include "protocol/sse.h"
#include "server/server_internal.h"
#include "transport/http_cors.h"
#include "transport/http_endpoint.h"
#include "zalloc.h"

static const mcp_header_t JSON_HEADERS[] = {{"Content-Type", "application/json"}};
static const mcp_header_t SSE_HEADERS[] = {
    {"Content-Type", "text/event-stream"},
    {"Cache-Control", "no-cache"},
    /* Tells nginx-style proxies not to hold events back. */
    {"X-Accel-Buffering", "no"},
};
#define N_SSE_HEADERS (sizeof SSE_HEADERS / sizeof SSE_HEADERS[0])
#define TOO_LARGE "Content Too Large: the request body exceeds the server's limit"

/* The largest Content-Length a body buffer is sized to before its bytes
 * arrive (see mcp_http_body). */
#define TRUSTED_CONTENT_LENGTH (64 * 1024)

/* ------------------------------------------------------------------------
 * Answers without an exchange (refusals at begin)
 * ------------------------------------------------------------------------ */

/* `cors_origin`: the page's origin when the endpoint does CORS (its
 * headers are added), else NULL. */
static void respond(const mcp_http_responder_t *out, const char *cors_origin, int status,
                    const mcp_header_t *headers, size_t n_headers, const char *body, size_t len)
{
    mcp_header_t all[HTTP_CORS_PREFLIGHT_HEADERS + HTTP_CORS_ANSWER_HEADERS];
    size_t n = 0;
    for (size_t i = 0; i < n_headers && i < HTTP_CORS_PREFLIGHT_HEADERS; i++)
        all[n++] = headers[i];
    if (cors_origin)
        http_cors_answer_headers(cors_origin, all, &n);
    bool ok = out->start(out->user, status, all, n, (int64_t)len) >= 0 &&
              (len == 0 || out->write(out->user, body, len) >= 0);
    out->finish(out->user, ok);
}

/* A JSON-RPC error response without id (malloc'd text), or NULL. */
static char *error_body(int code, const char *reason, size_t *len)
{
    json_t *msg = mcp_jsonrpc_error(NULL, code, reason, NULL);
    char *body = mcp_json_dump(msg, len);
    json_decref(msg);
    return body;
}

/*
 * An HTTP-level refusal: a JSON-RPC error without id (-32600, the HTTP
 * request is not a valid MCP request) so that a client can say why.
 * Header values are never echoed back: the reason is a fixed sentence.
 * `extra` is an additional header (Allow, WWW-Authenticate) or NULL.
 */
static void refuse(const mcp_http_responder_t *out, const char *cors_origin, int status,
                   const mcp_header_t *extra, const char *reason)
{
    size_t len = 0;
    char *body = error_body(MCP_INVALID_REQUEST, reason, &len);
    mcp_header_t headers[2] = {JSON_HEADERS[0], extra ? *extra : JSON_HEADERS[0]};
    respond(out, cors_origin, status, headers, extra ? 2 : 1, body ? body : "", len);
    free(body);
}

/* The wrong path gets plain text: a JSON -32601 on 404 would tell a modern
 * client "method not found" rather than "no endpoint here". */
static void answer_not_found(const mcp_http_responder_t *out)
{
    static const mcp_header_t text[] = {{"Content-Type", "text/plain"}};
    static const char body[] = "Not Found\n";
    respond(out, NULL, 404, text, 1, body, sizeof body - 1);
}

/* ------------------------------------------------------------------------
 * Exchange lifetime
 * ------------------------------------------------------------------------ */

void http_exchange_ref(mcp_http_exchange_t *x)
{
    atomic_fetch_add(&x->refs, 1);
}

bool http_exchange_tryref(mcp_http_exchange_t *x)
{
    int refs = atomic_load(&x->refs);
    while (refs > 0)
        if (atomic_compare_exchange_weak(&x->refs, &refs, refs + 1))
            return true;
    return false;
}

void http_exchange_unref(mcp_http_exchange_t *x)
{
    if (atomic_fetch_sub(&x->refs, 1) != 1)
        return;
    mcp_http_endpoint_t *ep = x->ep;
    pthread_mutex_lock(&ep->lock);
    if (x->prev)
        x->prev->next = x->next;
    else
        ep->live = x->next;
    if (x->next)
        x->next->prev = x->prev;
    ep->n_live--;
    pthread_cond_broadcast(&ep->changed);
    pthread_mutex_unlock(&ep->lock);

    mcp_exchange_release(x->core);
    free(x->headers);
    free(x->extra_header_name);
    free(x->extra_header_value);
    free(x->principal);
    free(x->body);
    pthread_mutex_destroy(&x->lock);
    free(x);
    http_endpoint_unref(ep);
}

/* Copies the headers into one block: the array, then the strings. */
static bool copy_headers(mcp_http_exchange_t *x, const mcp_headers_t *h)
{
    size_t n = 0, bytes = 0;
    for (size_t i = 0; i < h->count; i++) {
        if (!h->items[i].name)
            continue;
        n++;
        bytes += strlen(h->items[i].name) + 1;
        bytes += strlen(h->items[i].value ? h->items[i].value : "") + 1;
    }
    x->headers = malloc(n * sizeof *x->headers + bytes + 1);
    if (!x->headers)
        return false;
    char *p = (char *)(x->headers + n);
    size_t k = 0;
    for (size_t i = 0; i < h->count; i++) {
        if (!h->items[i].name)
            continue;
        x->headers[k].name = p;
        p = stpcpy(p, h->items[i].name) + 1;
        x->headers[k].value = p;
        p = stpcpy(p, h->items[i].value ? h->items[i].value : "") + 1;
        k++;
    }
    x->n_headers = n;
    return true;
}

static int sink_send(mcp_sink_t *sink, mcp_out_kind_t kind, const json_t *msg, int status);
static void sink_release(mcp_sink_t *sink);
static void sink_set_header(mcp_sink_t *sink, const char *name, const char *value);
static int sink_send_event(mcp_sink_t *sink, const json_t *msg, const char *event_id);
static int sink_send_text(mcp_sink_t *sink, mcp_out_kind_t kind, const char *text, size_t len,
                          int status);
static void sink_started(mcp_sink_t *sink, mcp_exchange_t *core);

static mcp_http_exchange_t *exchange_create(mcp_http_endpoint_t *ep, const mcp_http_request_t *req,
                                         const mcp_http_responder_t *responder,
                                         const http_accept_t *accept)
{
    mcp_http_exchange_t *x = mcp_zalloc(sizeof *x);
    if (!x)
        return NULL;
    if (!copy_headers(x, &req->headers)) {
        free(x);
        return NULL;
    }
    x->sink.send = sink_send;
    x->sink.release = sink_release;
    x->sink.set_header = sink_set_header;
    x->sink.send_event = sink_send_event;
    x->sink.send_text = sink_send_text;
    x->sink.started = sink_started;
    atomic_init(&x->refs, 1);
    pthread_mutex_init(&x->lock, NULL);
    x->state = EXCHANGE_READING;
    x->cors_origin = http_cors_origin(ep->cors, &(mcp_headers_t){x->headers, x->n_headers});
    x->out = *responder;
    x->accept = *accept;
    x->idle_ms = req->timeout_ms > 0 ? req->timeout_ms : ep->idle_ms;
    if (x->idle_ms > ep->max_ms)
        x->idle_ms = ep->max_ms;

    http_endpoint_ref(ep);
    x->ep = ep;
    pthread_mutex_lock(&ep->lock);
    x->next = ep->live;
    if (ep->live)
        ep->live->prev = x;
    ep->live = x;
    ep->n_live++;
    pthread_mutex_unlock(&ep->lock);
    return x;
}

/* ------------------------------------------------------------------------
 * Answering through an exchange (x->lock held)
 * ------------------------------------------------------------------------ */

/* The last callback: the exchange is over. */
static void finish_locked(mcp_http_exchange_t *x, bool complete)
{
    x->state = EXCHANGE_DONE;
    x->out.finish(x->out.user, complete);
    http_timeouts_disarm(x);
}

/* Starts the response with `headers` plus the header the core asked for
 * (the Mcp-Session-Id an initialize minted), if any. */
static int start_locked(mcp_http_exchange_t *x, int status, const mcp_header_t *headers,
                        size_t n_headers, int64_t length)
{
    mcp_header_t all[8 + HTTP_CORS_ANSWER_HEADERS];
    size_t n = 0;
    for (size_t i = 0; i < n_headers && n < 7; i++)
        all[n++] = headers[i];
    if (x->extra_header_name)
        all[n++] = (mcp_header_t){x->extra_header_name, x->extra_header_value};
    if (x->cors_origin)
        http_cors_answer_headers(x->cors_origin, all, &n);
    return x->out.start(x->out.user, status, all, n, length);
}

/* A complete response; -1 (and the response abandoned) when the client is
 * gone. */
static int send_whole_locked(mcp_http_exchange_t *x, int status, const mcp_header_t *headers,
                             size_t n_headers, const char *body, size_t len)
{
    x->started = true;
    if (start_locked(x, status, headers, n_headers, (int64_t)len) < 0 ||
        (len > 0 && x->out.write(x->out.user, body, len) < 0)) {
        finish_locked(x, false);
        return -1;
    }
    finish_locked(x, true);
    return 0;
}

/* A JSON-RPC error without id as the whole response. */
static void send_error_locked(mcp_http_exchange_t *x, int status, int code, const char *reason)
{
    size_t len = 0;
    char *body = error_body(code, reason, &len);
    send_whole_locked(x, status, JSON_HEADERS, 1, body ? body : "", len);
    free(body);
}

static int start_stream_locked(mcp_http_exchange_t *x)
{
    x->started = x->streaming = true;
    if (start_locked(x, 200, SSE_HEADERS, N_SSE_HEADERS, -1) < 0) {
        finish_locked(x, false);
        return -1;
    }
    return 0;
}

/* One message as one event, "event: message" like the reference SDK;
 * `id` is the SSE event id of a resumable stream, or NULL. */
static int write_event_id_locked(mcp_http_exchange_t *x, const char *json, size_t len,
                                 const char *id)
{
    char *event = NULL;
    size_t event_len = 0;
    if (mcp_sse_format_event("message", id, json, len, &event, &event_len) != MCP_OK) {
        finish_locked(x, false); /* out of memory: the stream cannot go on whole */
        return -1;
    }
    int rc = x->out.write(x->out.user, event, event_len);
    free(event);
    if (rc < 0) {
        finish_locked(x, false);
        return -1;
    }
    return 0;
}

static int write_event_locked(mcp_http_exchange_t *x, const char *json, size_t len)
{
    return write_event_id_locked(x, json, len, NULL);
}

static int send_notification_locked(mcp_http_exchange_t *x, const json_t *msg)
{
    http_timeouts_touch(x);
    if (!x->streaming) {
        /* A client that admits only JSON gets the response alone. */
        if (!x->accept.sse)
            return 0;
        if (start_stream_locked(x) < 0)
            return -1;
    }
    size_t len;
    char *json = mcp_json_dump(msg, &len);
    if (!json)
        return 0; /* nothing sendable; the request itself goes on */
    int rc = write_event_locked(x, json, len);
    free(json);
    return rc;
}

static int send_response_text_locked(mcp_http_exchange_t *x, const char *json, size_t len,
                                     int status)
{
    if (x->streaming || (status == 200 && !x->accept.json)) {
        /* The stream carries the response as its last event. (Errors are
         * always JSON: an HTTP error status needs no stream.) */
        int rc = x->streaming ? 0 : start_stream_locked(x);
        if (rc == 0 && (rc = write_event_locked(x, json, len)) == 0)
            finish_locked(x, true);
        return rc;
    }
    return send_whole_locked(x, status, JSON_HEADERS, 1, json, len);
}

static int send_response_locked(mcp_http_exchange_t *x, const json_t *msg, int status)
{
    size_t len;
    char *json = mcp_json_dump(msg, &len);
    if (!json) {
        if (x->streaming)
            finish_locked(x, false);
        else
            send_whole_locked(x, 500, NULL, 0, NULL, 0);
        return -1;
    }
    int rc = send_response_text_locked(x, json, len, status);
    free(json);
    return rc;
}

/* The core's handle, before the handler starts: the handler may run inside
 * mcp_server_submit() (lend.h), and a client that leaves meanwhile must be
 * able to cancel it. The reference is the one submit hands back; x->core
 * is set to the same pointer when it returns. */
static void sink_started(mcp_sink_t *sink, mcp_exchange_t *core)
{
    mcp_http_exchange_t *x = (mcp_http_exchange_t *)sink;
    pthread_mutex_lock(&x->lock);
    x->core = core;
    pthread_mutex_unlock(&x->lock);
}

static int sink_send(mcp_sink_t *sink, mcp_out_kind_t kind, const json_t *msg, int status)
{
    mcp_http_exchange_t *x = (mcp_http_exchange_t *)sink;
    int rc = -1; /* over already: the core stops sending */
    pthread_mutex_lock(&x->lock);
    if (x->state == EXCHANGE_SUBMITTED) {
        switch (kind) {
        case MCP_OUT_NOTIFICATION:
        case MCP_OUT_REQUEST: /* a legacy client's server request: an event too */
            rc = send_notification_locked(x, msg);
            break;
        case MCP_OUT_RESPONSE:
            rc = send_response_locked(x, msg, status);
            break;
        case MCP_OUT_ACCEPTED:
            rc = send_whole_locked(x, status, NULL, 0, NULL, 0);
            break;
        }
    }
    pthread_mutex_unlock(&x->lock);
    return rc;
}

static int sink_send_text(mcp_sink_t *sink, mcp_out_kind_t kind, const char *text, size_t len,
                          int status)
{
    mcp_http_exchange_t *x = (mcp_http_exchange_t *)sink;
    int rc = -1; /* over already: the core stops sending */
    pthread_mutex_lock(&x->lock);
    if (x->state == EXCHANGE_SUBMITTED && kind == MCP_OUT_RESPONSE)
        rc = send_response_text_locked(x, text, len, status);
    pthread_mutex_unlock(&x->lock);
    return rc;
}

static void sink_set_header(mcp_sink_t *sink, const char *name, const char *value)
{
    mcp_http_exchange_t *x = (mcp_http_exchange_t *)sink;
    pthread_mutex_lock(&x->lock);
    if (!x->started && name && value) {
        free(x->extra_header_name);
        free(x->extra_header_value);
        x->extra_header_name = strdup(name);
        x->extra_header_value = strdup(value);
    }
    pthread_mutex_unlock(&x->lock);
}

/* A message of a session's resumable stream (the legacy GET stream). */
static int sink_send_event(mcp_sink_t *sink, const json_t *msg, const char *event_id)
{
    mcp_http_exchange_t *x = (mcp_http_exchange_t *)sink;
    int rc = -1;
    pthread_mutex_lock(&x->lock);
    if (x->state == EXCHANGE_SUBMITTED) {
        http_timeouts_touch(x);
        rc = x->streaming ? 0 : start_stream_locked(x);
        size_t len;
        char *json = rc == 0 ? mcp_json_dump(msg, &len) : NULL;
        if (json)
            rc = write_event_id_locked(x, json, len, event_id);
        free(json);
    }
    pthread_mutex_unlock(&x->lock);
    return rc;
}

/* The core is done with the request. If it never answered (it cancelled
 * the request, or the server is shutting down), the response is closed
 * unfinished. */
static void sink_release(mcp_sink_t *sink)
{
    mcp_http_exchange_t *x = (mcp_http_exchange_t *)sink;
    pthread_mutex_lock(&x->lock);
    if (x->state != EXCHANGE_DONE)
        finish_locked(x, false);
    pthread_mutex_unlock(&x->lock);
    http_exchange_unref(x);
}

void http_exchange_keepalive(mcp_http_exchange_t *x)
{
    static const char comment[] = ": keep-alive\n\n";
    pthread_mutex_lock(&x->lock);
    bool gone = false;
    mcp_exchange_t *core = x->core;
    if (x->state == EXCHANGE_SUBMITTED && x->streaming &&
        x->out.write(x->out.user, comment, sizeof comment - 1) < 0) {
        finish_locked(x, false);
        gone = true;
    }
    pthread_mutex_unlock(&x->lock);
    if (gone)
        mcp_exchange_cancel(core); /* the client vanished: end its subscription */
}

void http_exchange_abort(mcp_http_exchange_t *x, const char *why)
{
    pthread_mutex_lock(&x->lock);
    bool live = x->state != EXCHANGE_DONE;
    mcp_exchange_t *core = x->core;
    if (live)
        finish_locked(x, false);
    pthread_mutex_unlock(&x->lock);
    if (!live)
        return;
    if (why)
        server_log(x->ep->srv, MCP_LOG_WARNING, "HTTP: request %s; cancelled", why);
    /* Before submission ended, mcp_http_end() sees DONE and cancels. */
    mcp_exchange_cancel(core);
}

/* ------------------------------------------------------------------------
 * The embedding API
 * ------------------------------------------------------------------------ */

/* The methods RFC 9110 section 9.3 defines, and PATCH (RFC 5789): the
 * endpoint knows them, and refuses those it does not allow with 405 and
 * Allow. Any other method is not implemented: 501 (section 9.1). */
static bool is_standard_method(const char *method)
{
    static const char *const known[] = {"GET",     "HEAD",  "POST",  "PUT",  "DELETE",
                                        "CONNECT", "OPTIONS", "TRACE", "PATCH"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(method, known[i]) == 0)
            return true;
    return false;
}

int mcp_http_begin(mcp_http_endpoint_t *ep, const mcp_http_request_t *req,
                   const mcp_http_responder_t *responder, mcp_http_exchange_t **out)
{
    if (out)
        *out = NULL;
    if (!ep || !req || !req->method || !responder || !responder->start || !responder->write ||
        !responder->finish || !out)
        return MCP_EINVAL;
    const mcp_headers_t *h = &req->headers;

    if (!http_path_matches(req->path, ep->path)) {
        answer_not_found(responder);
        return MCP_OK;
    }
    if (!http_host_allowed(h, (const char *const *)ep->allowed_hosts)) {
        server_log(ep->srv, MCP_LOG_WARNING, "HTTP: refused Host \"%.100s\" (see allowed_hosts)",
                   mcp_headers_get(h, "Host"));
        refuse(responder, NULL, 403, NULL,
               "Forbidden: this server does not answer to that Host");
        return MCP_OK;
    }
    if (!http_origin_allowed(h, (const char *const *)ep->allowed_origins)) {
        server_log(ep->srv, MCP_LOG_WARNING,
                   "HTTP: refused Origin \"%.100s\" (see allowed_origins)",
                   mcp_headers_get(h, "Origin"));
        refuse(responder, NULL, 403, NULL, "Forbidden: requests from that Origin are not allowed");
        return MCP_OK;
    }
    /* POST carries messages. GET (a session's stream of server messages)
     * and DELETE (the end of a session) exist only for legacy sessions. */
    bool sessions = ep->srv->legacy_mode == MCP_LEGACY_SESSIONS;
    const char *cors = http_cors_origin(ep->cors, h);
    if (cors && http_cors_is_preflight(req->method, h)) {
        mcp_header_t allow[HTTP_CORS_PREFLIGHT_HEADERS];
        size_t n = http_cors_preflight_headers(cors, h, sessions, allow);
        respond(responder, NULL, 204, allow, n, "", 0);
        return MCP_OK;
    }
    int verb = strcmp(req->method, "POST") == 0 ? HTTP_VERB_POST
               : sessions && strcmp(req->method, "GET") == 0    ? HTTP_VERB_GET
               : sessions && strcmp(req->method, "DELETE") == 0 ? HTTP_VERB_DELETE
                                                                : -1;
    if (verb < 0 && !is_standard_method(req->method)) {
        refuse(responder, cors, 501, NULL, "Not Implemented: unknown request method");
        return MCP_OK;
    }
    if (verb < 0) {
        static const mcp_header_t allow_post = {"Allow", "POST"};
        static const mcp_header_t allow_all = {"Allow", "GET, POST, DELETE"};
        refuse(responder, cors, 405, sessions ? &allow_all : &allow_post,
               sessions ? "Method Not Allowed: use POST, GET or DELETE"
                        : "Method Not Allowed: the MCP endpoint accepts POST only");
        return MCP_OK;
    }

    char *principal = NULL;
    if (ep->auth) {
        char *challenge = NULL;
        int verdict = ep->auth(ep->auth_user, h, &principal, &challenge);
        if (verdict != 0) {
            /* A 401 carries a challenge (RFC 9110 section 15.5.2): the
             * plainest one when the callback gave none. */
            mcp_header_t www = {"WWW-Authenticate", challenge ? challenge : "Bearer"};
            bool with_www = challenge || verdict == 401;
            refuse(responder, cors, verdict == 401 ? 401 : 403, with_www ? &www : NULL,
                   verdict == 401 ? "Unauthorized" : "Forbidden");
            free(principal);
            free(challenge);
            return MCP_OK;
        }
        free(challenge);
    }

    int status = 0;
    const char *reason = NULL;
    http_accept_t accept;
    uint64_t declared = 0; /* the Content-Length; stays 0 when there is none */
    http_accept_read(h, &accept);
    if (verb == HTTP_VERB_GET) {
        if (!accept.sse) {
            status = 406;
            reason = "Not Acceptable: the session stream is text/event-stream";
        }
    } else if (verb == HTTP_VERB_DELETE) {
        /* no body, no content negotiation */
    } else if (!http_content_type_is_json(h)) {
        status = 415;
        reason = "Unsupported Media Type: the body must be application/json";
    } else if (!accept.json && !accept.sse) {
        status = 406;
        reason = "Not Acceptable: the answer is application/json or text/event-stream";
    } else if (http_content_length(h, &declared) && declared > ep->max_body) {
        status = 413;
        reason = TOO_LARGE;
    }
    if (status) {
        refuse(responder, cors, status, NULL, reason);
        free(principal);
        return MCP_OK;
    }

    mcp_http_exchange_t *x = exchange_create(ep, req, responder, &accept);
    if (!x) {
        free(principal);
        return MCP_ENOMEM;
    }
    x->principal = principal;
    x->verb = verb;
    x->body_declared = (size_t)declared; /* at most max_body: larger is refused above */
    *out = x;
    return MCP_OK;
}

int mcp_http_body(mcp_http_exchange_t *x, const void *data, size_t len)
{
    if (!x || (!data && len))
        return MCP_EINVAL;
    size_t max = x->ep->max_body;
    int rc = MCP_OK;
    pthread_mutex_lock(&x->lock);
    if (x->state != EXCHANGE_READING) {
        rc = MCP_ESTATE;
    } else if (x->body_too_large || len > max - x->body_len) {
        /* Drop what we have: the answer will be 413 whatever follows. */
        x->body_too_large = true;
        free(x->body);
        x->body = NULL;
        x->body_len = x->body_cap = 0;
        rc = MCP_ELIMIT;
    } else if (len > 0) {
        if (x->body_len + len > x->body_cap) {
            /* A body that keeps to its Content-Length fits in one
             * allocation of exactly that size; any other grows by doubling.
             * Only up to TRUSTED_CONTENT_LENGTH is the claim believed before
             * the bytes arrive: a peer must not make the server hold
             * max_body per connection for a few bytes sent. */
            size_t cap = x->body_cap ? x->body_cap
                         : x->body_declared && x->body_declared <= TRUSTED_CONTENT_LENGTH
                             ? x->body_declared
                             : 4096;
            while (cap < x->body_len + len)
                cap = cap > max / 2 ? max : cap * 2;
            char *grown = realloc(x->body, cap);
            if (!grown) {
                finish_locked(x, false);
                pthread_mutex_unlock(&x->lock);
                return MCP_ENOMEM;
            }
            x->body = grown;
            x->body_cap = cap;
        }
        memcpy(x->body + x->body_len, data, len);
        x->body_len += len;
    }
    pthread_mutex_unlock(&x->lock);
    return rc;
}

/* The trimmed value of a request header, copied (NULL when absent). */
static char *header_copy(mcp_http_exchange_t *x, const char *name)
{
    const char *raw = mcp_headers_get(&(mcp_headers_t){x->headers, x->n_headers}, name);
    if (!raw)
        return NULL;
    const char *v;
    size_t len;
    mcp_header_trim(raw, &v, &len);
    return strndup(v, len);
}

static int session_status(int rc)
{
    switch (rc) {
    case MCP_ENOTFOUND:
        return 404;
    case MCP_EUNSUPPORTED:
        return 405;
    case MCP_EINVAL:
        return 400;
    default:
        return 500;
    }
}

/* GET: a legacy session's stream of server messages. */
static int open_session_stream(mcp_http_exchange_t *x)
{
    char *id = header_copy(x, MCP_HEADER_SESSION_ID);
    char *last = header_copy(x, "Last-Event-ID");
    pthread_mutex_lock(&x->lock);
    x->long_lived = true;
    pthread_mutex_unlock(&x->lock);
    mcp_exchange_t *core = NULL;
    http_exchange_ref(x); /* the core's, through the sink */
    /* x->principal is set at begin and never changes: no lock needed. */
    int rc = mcp_server_open_session_stream_as(x->ep->srv, id, x->principal, last, &x->sink,
                                               &core);
    free(id);
    free(last);
    if (rc != MCP_OK) {
        http_exchange_unref(x); /* the core did not take the sink */
        pthread_mutex_lock(&x->lock);
        if (x->state != EXCHANGE_DONE)
            send_error_locked(x, session_status(rc), MCP_INVALID_REQUEST,
                              rc == MCP_ENOTFOUND ? "Session not found"
                              : rc == MCP_EINVAL  ? "Bad Request: Mcp-Session-Id header is required"
                                                  : "The session stream is not available");
        pthread_mutex_unlock(&x->lock);
        return MCP_OK;
    }
    /* The stream starts at once (replayed events may have started it):
     * libmicrohttpd holds the headers until the first body bytes, and the
     * client waits for them. */
    pthread_mutex_lock(&x->lock);
    x->core = core;
    bool over = x->state == EXCHANGE_DONE;
    if (!over && !x->streaming && start_stream_locked(x) == 0 &&
        x->out.write(x->out.user, ": stream\n\n", 10) < 0)
        finish_locked(x, false);
    over = x->state == EXCHANGE_DONE;
    pthread_mutex_unlock(&x->lock);
    if (over)
        mcp_exchange_cancel(core);
    else
        http_timeouts_arm(x);
    return MCP_OK;
}

/* DELETE: the end of a legacy session. */
static int end_session(mcp_http_exchange_t *x)
{
    char *id = header_copy(x, MCP_HEADER_SESSION_ID);
    int rc = mcp_server_end_session_as(x->ep->srv, id, x->principal);
    free(id);
    pthread_mutex_lock(&x->lock);
    if (rc == MCP_OK)
        send_whole_locked(x, 200, NULL, 0, NULL, 0);
    else
        send_error_locked(x, session_status(rc), MCP_INVALID_REQUEST,
                          rc == MCP_ENOTFOUND ? "Session not found" : "Bad Request");
    pthread_mutex_unlock(&x->lock);
    return MCP_OK;
}

int mcp_http_end(mcp_http_exchange_t *x)
{
    if (!x)
        return MCP_EINVAL;
    mcp_http_endpoint_t *ep = x->ep;
    pthread_mutex_lock(&x->lock);
    bool again = x->ended;
    x->ended = true;
    if (x->state != EXCHANGE_READING) {
        /* Aborted or cancelled while its body was read: nothing to do. */
        pthread_mutex_unlock(&x->lock);
        return again ? MCP_ESTATE : MCP_OK;
    }
    if (x->body_too_large) {
        send_error_locked(x, 413, MCP_INVALID_REQUEST, TOO_LARGE);
        pthread_mutex_unlock(&x->lock);
        return MCP_OK;
    }
    x->state = EXCHANGE_SUBMITTED;
    if (x->verb != HTTP_VERB_POST) {
        /* A legacy session's GET and DELETE come after initialize: their
         * MCP-Protocol-Version, if any, must be one this server speaks. */
        mcp_error_t bad = {0};
        if (mcp_check_legacy_version_header(&(mcp_headers_t){x->headers, x->n_headers}, &bad) !=
            MCP_OK) {
            send_error_locked(x, 400, bad.code, bad.message);
            pthread_mutex_unlock(&x->lock);
            mcp_error_clear(&bad);
            return MCP_OK;
        }
        pthread_mutex_unlock(&x->lock);
        return x->verb == HTTP_VERB_GET ? open_session_stream(x) : end_session(x);
    }
    /* A listen stream lives on without the request timeouts, so the
     * claim is believed only from a modern request: there the ladder makes
     * sure Mcp-Method names the body's method. Legacy traffic has no
     * listen method and nothing checks its Mcp-Method. */
    mcp_headers_t all = {x->headers, x->n_headers};
    const char *method = mcp_headers_get(&all, MCP_HEADER_METHOD);
    const char *m;
    size_t mlen;
    mcp_header_trim(method, &m, &mlen);
    x->long_lived = method && mlen == 20 && memcmp(m, "subscriptions/listen", 20) == 0 &&
                    mcp_header_names_modern_version(
                        mcp_headers_get(&all, MCP_HEADER_PROTOCOL_VERSION));
    if (x->long_lived && !x->accept.sse) {
        /* A listen stream is an event stream, or nothing at all. */
        send_error_locked(x, 406, MCP_INVALID_REQUEST,
                          "Not Acceptable: subscriptions/listen answers with text/event-stream");
        pthread_mutex_unlock(&x->lock);
        return MCP_OK;
    }
    pthread_mutex_unlock(&x->lock);

    http_timeouts_arm(x);
    /* Ours, until this returns: the handler may run inside the submission
     * (lend.h), and its event loop, moved to another thread meanwhile, may
     * close the connection and drop the engine's reference. */
    http_exchange_ref(x);
    mcp_headers_t headers = {x->headers, x->n_headers};
    mcp_request_context_t ctx = {
        .transport = MCP_TRANSPORT_HTTP, .headers = &headers, .principal = x->principal};
    mcp_exchange_t *core = NULL;
    http_exchange_ref(x); /* the core's, through the sink */
    int rc = mcp_server_submit(ep->srv, NULL, x->body ? x->body : "", x->body_len, &ctx, &x->sink,
                               &core);
    if (rc != MCP_OK)
        http_exchange_unref(x); /* the core did not take the sink (never the last reference) */

    pthread_mutex_lock(&x->lock);
    if (rc != MCP_OK && x->state != EXCHANGE_DONE)
        send_error_locked(x, rc == MCP_ECLOSED ? 503 : 500, MCP_INTERNAL_ERROR,
                          rc == MCP_ECLOSED ? "Server is shutting down" : "Internal error");
    x->core = core;
    bool over = x->state == EXCHANGE_DONE;
    bool end_stream = core && x->long_lived && x->end_stream_pending && !over;
    free(x->body); /* the core has parsed it */
    x->body = NULL;
    x->body_len = x->body_cap = 0;
    pthread_mutex_unlock(&x->lock);
    /* Aborted while it was being submitted: the core must hear of it.
     * (If it had simply finished, the core ignores the cancel: an
     * answered request is over -- and a task it became goes on.) */
    if (over)
        mcp_exchange_cancel(core);
    /* A listen stream whose ack went out while the endpoint was closing
     * its streams, before x->core was set: end it as they were ended. */
    if (end_stream)
        mcp_exchange_end_stream(core);
    http_exchange_unref(x);
    return MCP_OK;
}

int mcp_http_handle(mcp_http_endpoint_t *ep, const mcp_http_request_t *req, const char *body,
                    size_t len, const mcp_http_responder_t *responder, mcp_http_exchange_t **out)
{
    if (out)
        *out = NULL;
    if (!body && len)
        return MCP_EINVAL;
    mcp_http_exchange_t *x;
    int rc = mcp_http_begin(ep, req, responder, &x);
    if (rc != MCP_OK || !x)
        return rc;
    /* Over the limit: mcp_http_end() answers 413. Out of memory: the
     * exchange is aborted already and mcp_http_end() does nothing. */
    mcp_http_body(x, body, len);
    mcp_http_end(x);
    if (out)
        *out = x;
    else
        mcp_http_exchange_release(x);
    return MCP_OK;
}

void mcp_http_exchange_cancel(mcp_http_exchange_t *x)
{
    if (!x)
        return;
    pthread_mutex_lock(&x->lock);
    bool live = x->state != EXCHANGE_DONE;
    x->state = EXCHANGE_DONE; /* no callback from now on, finish() included */
    mcp_exchange_t *core = x->core;
    pthread_mutex_unlock(&x->lock);
    if (!live)
        return;
    http_timeouts_disarm(x);
    mcp_exchange_cancel(core);
}

void mcp_http_exchange_release(mcp_http_exchange_t *x)
{
    if (x)
        http_exchange_unref(x);
}
