/*
 * Serving legacy clients (2025-11-25 and earlier) from the same registries
 * and handlers as modern ones.
 *
 * A legacy client opens with initialize and then speaks without the
 * per-request _meta claim. What it declared in initialize lives in its
 * session (session.c): on stdio the process is the session; over HTTP the
 * server mints an Mcp-Session-Id (MCP_LEGACY_SESSIONS) or serves every POST
 * on its own (MCP_LEGACY_STATELESS). From there the methods are the same
 * as the modern era's, answered in legacy shapes (no resultType, no cache
 * hints, -32002 for a missing resource), plus the legacy-only ones: ping,
 * logging/setLevel, resources/subscribe and resources/unsubscribe.
 * Handlers that ask for input are bridged (bridge.c).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fnv.h"
#include "server/server_internal.h"
#include "transport/http_rules.h"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------------
 * The live sessions of this instance
 * ------------------------------------------------------------------------ */

static size_t bucket_of(const char *id)
{
    return (size_t)(mcp_fnv1a(id, strlen(id)) % SESSION_BUCKETS);
}

/* The live session of `id`, without a reference (session_lock held). */
static mcp_session_t *index_find_locked(mcp_server_t *srv, const char *id)
{
    for (mcp_session_t *s = srv->session_index[bucket_of(id)]; s; s = s->index_next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

/* Adds `s` to the live list, unless a session of the same id is there
 * already (two requests may rebuild one from the store at once): then
 * that one is returned (a new reference) and `s` is not added. Sessions
 * without an id are never live (stdio and stateless ones are not). */
static mcp_session_t *live_add(mcp_server_t *srv, mcp_session_t *s)
{
    pthread_mutex_lock(&srv->session_lock);
    mcp_session_t *other = index_find_locked(srv, s->id);
    if (other) {
        session_ref(other);
        pthread_mutex_unlock(&srv->session_lock);
        return other;
    }
    size_t b = bucket_of(s->id);
    s->index_next = srv->session_index[b];
    srv->session_index[b] = s;
    session_ref(s);
    s->next = srv->sessions;
    if (srv->sessions)
        srv->sessions->prev = s;
    srv->sessions = s;
    srv->n_sessions++;
    pthread_mutex_unlock(&srv->session_lock);
    listen_hub_add_session(srv->hub, s);
    return NULL;
}

/* Removes `s` from the live list (if it is there) and drops that
 * reference. */
static void live_remove(mcp_server_t *srv, mcp_session_t *s)
{
    pthread_mutex_lock(&srv->session_lock);
    bool linked = s->prev || s->next || srv->sessions == s;
    if (linked) {
        if (s->prev)
            s->prev->next = s->next;
        else
            srv->sessions = s->next;
        if (s->next)
            s->next->prev = s->prev;
        s->prev = s->next = NULL;
        mcp_session_t **link = &srv->session_index[bucket_of(s->id)];
        while (*link != s) /* a linked session is in its chain */
            link = &(*link)->index_next;
        *link = s->index_next;
        s->index_next = NULL;
        srv->n_sessions--;
    }
    pthread_mutex_unlock(&srv->session_lock);
    if (!linked)
        return;
    listen_hub_remove_session(srv->hub, s);
    session_end(s);
    mcp_conn_cancel_all(s->conn);
    session_unref(s);
}

void sessions_free_all(mcp_server_t *srv)
{
    for (;;) {
        pthread_mutex_lock(&srv->session_lock);
        mcp_session_t *s = srv->sessions;
        if (s)
            session_ref(s);
        pthread_mutex_unlock(&srv->session_lock);
        if (!s)
            return;
        live_remove(srv, s);
        session_unref(s);
    }
}

/* ------------------------------------------------------------------------
 * Idle expiry
 *
 * A session expires session_idle_ms after it was last used: a request
 * arrived or ended, its GET stream opened or closed. While its stream is
 * open or a request of it runs, the client is demonstrably there and the
 * session does not expire. The store keeps each record's expiry (another
 * instance may serve the session); the live sessions of this instance are
 * swept now and then, so that those whose clients went away without a
 * DELETE are freed with their buffers and subscriptions.
 * ------------------------------------------------------------------------ */

void session_touch(mcp_server_t *srv, mcp_session_t *s)
{
    if (!s || !s->id)
        return;
    int64_t expires = wall_ms() + srv->session_idle_ms;
    pthread_mutex_lock(&s->lock);
    bool ended = s->ended; /* an ended session must not come back */
    s->expires_ms = expires;
    pthread_mutex_unlock(&s->lock);
    if (ended)
        return;
    json_t *record = session_record(s);
    if (record)
        srv->session_store->save(srv->session_store, s->id, record, expires);
    json_decref(record);
}

/* Is the session in use: its stream open or a request of it running? */
static bool session_busy(mcp_session_t *s)
{
    pthread_mutex_lock(&s->lock);
    bool busy = s->stream != NULL;
    pthread_mutex_unlock(&s->lock);
    if (!busy && s->conn) {
        pthread_mutex_lock(&s->conn->lock);
        busy = s->conn->inflight != NULL;
        pthread_mutex_unlock(&s->conn->lock);
    }
    return busy;
}

/* Frees the live sessions that expired; busy ones are kept and their
 * records refreshed. Runs at most every half idle period (and at most
 * once a second), from the requests that look sessions up. */
static void sessions_sweep(mcp_server_t *srv)
{
    int64_t now = wall_ms();
    int64_t interval = srv->session_idle_ms / 2 < 1000 ? srv->session_idle_ms / 2 : 1000;
    pthread_mutex_lock(&srv->session_lock);
    if (now < srv->next_sweep_ms) {
        pthread_mutex_unlock(&srv->session_lock);
        return;
    }
    srv->next_sweep_ms = now + interval;
    size_t n = 0;
    for (mcp_session_t *s = srv->sessions; s; s = s->next)
        n++;
    mcp_session_t **due = calloc(n ? n : 1, sizeof *due);
    size_t k = 0;
    for (mcp_session_t *s = srv->sessions; s && due; s = s->next) {
        pthread_mutex_lock(&s->lock);
        bool expired = s->expires_ms <= now;
        pthread_mutex_unlock(&s->lock);
        if (expired) {
            session_ref(s);
            due[k++] = s;
        }
    }
    pthread_mutex_unlock(&srv->session_lock);
    for (size_t i = 0; i < k; i++) {
        mcp_session_t *s = due[i];
        json_t *record = NULL;
        if (session_busy(s)) {
            session_touch(srv, s);
        } else if ((record = srv->session_store->load(srv->session_store, s->id, now))) {
            /* Used on another instance meanwhile: keep it. */
            pthread_mutex_lock(&s->lock);
            s->expires_ms = now + srv->session_idle_ms;
            pthread_mutex_unlock(&s->lock);
            json_decref(record);
        } else {
            live_remove(srv, s);
        }
        session_unref(s);
    }
    free(due);
}

/* The live session of `id` (a new reference), or NULL. */
static mcp_session_t *live_find(mcp_server_t *srv, const char *id)
{
    pthread_mutex_lock(&srv->session_lock);
    mcp_session_t *found = index_find_locked(srv, id);
    if (found)
        session_ref(found);
    pthread_mutex_unlock(&srv->session_lock);
    return found;
}

/* The session `id` names: live here, or rebuilt from the store (another
 * instance may have created it). A new reference, or NULL when unknown or
 * expired. */
static mcp_session_t *session_lookup_any(mcp_server_t *srv, const char *id)
{
    sessions_sweep(srv);
    json_t *record = srv->session_store->load(srv->session_store, id, wall_ms());
    mcp_session_t *found = live_find(srv, id);
    if (!record) {
        if (found && session_busy(found)) {
            session_touch(srv, found); /* expired in the store, but in use here */
            return found;
        }
        if (found) { /* expired or deleted elsewhere */
            live_remove(srv, found);
            session_unref(found);
        }
        return NULL;
    }
    if (!found) {
        mcp_session_t *rebuilt = session_from_record(srv, id, record);
        if (rebuilt && (rebuilt->conn = mcp_conn_new(srv, MCP_TRANSPORT_HTTP))) {
            rebuilt->expires_ms = wall_ms() + srv->session_idle_ms;
            found = live_add(srv, rebuilt);
            if (!found) {
                found = rebuilt;
                rebuilt = NULL;
            }
        }
        session_unref(rebuilt);
    }
    json_decref(record);
    return found;
}

/* The session `id` names, if `principal` may use it: a session of another
 * principal is as unknown (404) as one that never existed, so the id
 * alone, leaked, is worth nothing to anyone else. */
static mcp_session_t *session_lookup(mcp_server_t *srv, const char *id, const char *principal)
{
    mcp_session_t *s = session_lookup_any(srv, id);
    if (s && !session_principal_may_use(s, principal)) {
        server_log(srv, MCP_LOG_WARNING,
                   "legacy session used by another principal than the one that opened it; "
                   "answered as unknown");
        session_unref(s);
        s = NULL;
    }
    return s;
}

int mcp_server_open_session_stream(mcp_server_t *srv, const char *session_id,
                                   const char *last_event_id, mcp_sink_t *sink,
                                   mcp_exchange_t **exchange_out)
{
    return mcp_server_open_session_stream_as(srv, session_id, NULL, last_event_id, sink,
                                             exchange_out);
}

int mcp_server_open_session_stream_as(mcp_server_t *srv, const char *session_id,
                                      const char *principal, const char *last_event_id,
                                      mcp_sink_t *sink, mcp_exchange_t **exchange_out)
{
    if (exchange_out)
        *exchange_out = NULL;
    if (!srv || !sink || !sink->send_event)
        return MCP_EINVAL;
    if (srv->legacy_mode != MCP_LEGACY_SESSIONS)
        return MCP_EUNSUPPORTED;
    if (!session_id || !*session_id)
        return MCP_EINVAL;
    mcp_session_t *s = session_lookup(srv, session_id, principal);
    if (!s)
        return MCP_ENOTFOUND;
    mcp_message_t none = {0};
    mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_HTTP, .principal = principal};
    mcp_exchange_t *ex = exchange_new(srv, NULL, &none, &ctx, sink);
    if (!ex) {
        session_unref(s);
        return MCP_ENOMEM;
    }
    ex->era = MCP_ERA_LEGACY;
    if (exchange_out) { /* a stream, not a handler: no started() */
        exchange_ref(ex);
        *exchange_out = ex;
    }
    session_attach_stream(s, ex, last_event_id);
    session_touch(srv, s);
    session_unref(s);
    return MCP_OK;
}

int mcp_server_end_session(mcp_server_t *srv, const char *session_id)
{
    return mcp_server_end_session_as(srv, session_id, NULL);
}

int mcp_server_end_session_as(mcp_server_t *srv, const char *session_id, const char *principal)
{
    if (!srv)
        return MCP_EINVAL;
    if (srv->legacy_mode != MCP_LEGACY_SESSIONS)
        return MCP_EUNSUPPORTED;
    if (!session_id || !*session_id)
        return MCP_EINVAL;
    mcp_session_t *s = session_lookup(srv, session_id, principal);
    if (!s)
        return MCP_ENOTFOUND;
    srv->session_store->remove(srv->session_store, session_id);
    live_remove(srv, s);
    session_unref(s);
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Answering. JSON-RPC errors go out with HTTP 200 (legacy clients read
 * them from successful responses); only session problems use 400/404.
 * ------------------------------------------------------------------------ */

static void answer_error(mcp_sink_t *sink, const mcp_message_t *msg, int status, int code,
                         const char *text)
{
    json_t *id = msg->kind == MCP_MSG_REQUEST ? msg->id : NULL;
    sink_answer(sink, mcp_jsonrpc_error(id, code, text, NULL), status);
}

static void answer_result(mcp_sink_t *sink, const mcp_message_t *msg, json_t *result_new)
{
    sink_answer_result(sink, msg->id, result_new, NULL);
}

/* The initialize result: negotiated version, legacy capabilities (tasks
 * from 2025-11-25; listed only for clients the server can tell apart),
 * identity. */
static json_t *initialize_result(mcp_server_t *srv, const char *version, bool can_list_tasks)
{
    json_t *caps = server_capabilities(srv);
    json_t *legacy_caps = caps ? mcp_legacy_server_capabilities(caps) : NULL;
    json_decref(caps);
    /* Out of memory, the whole result fails: a capability or the
     * instructions left out would be a wrong answer, not a smaller one. */
    if (legacy_caps && legacy_tasks_served(srv, version) &&
        json_object_set_new(legacy_caps, "tasks", legacy_tasks_capability(can_list_tasks)) != 0) {
        json_decref(legacy_caps);
        return NULL;
    }
    json_t *result = json_pack("{s:s, s:o, s:O}", "protocolVersion", version, "capabilities",
                               legacy_caps, "serverInfo", srv->impl);
    if (result && srv->instructions &&
        json_object_set_new(result, "instructions", json_string(srv->instructions)) != 0) {
        json_decref(result);
        return NULL;
    }
    return result;
}

static bool valid_initialize(const json_t *params)
{
    const json_t *info = json_object_get(params, "clientInfo");
    return json_is_object(params) &&
           json_is_string(json_object_get(params, "protocolVersion")) &&
           json_is_object(json_object_get(params, "capabilities")) &&
           (!info || json_is_object(info));
}

static void serve_initialize(mcp_server_t *srv, mcp_conn_t *conn, mcp_message_t *msg,
                             const mcp_request_context_t *ctx, mcp_sink_t *sink)
{
    if (!valid_initialize(msg->params)) {
        answer_error(sink, msg, 200, MCP_INVALID_PARAMS,
                     "initialize needs protocolVersion (string) and capabilities (object)");
        return;
    }
    bool http = ctx->transport == MCP_TRANSPORT_HTTP;
    mcp_session_t *s = NULL;
    if (!http && conn) {
        pthread_mutex_lock(&conn->lock);
        bool again = conn->session != NULL;
        pthread_mutex_unlock(&conn->lock);
        if (again) {
            answer_error(sink, msg, 200, MCP_INVALID_REQUEST,
                         "Invalid Request: this connection is already initialized");
            return;
        }
        s = session_new(srv, NULL, msg->params);
        if (s) {
            s->outbound = conn->outbound;
            pthread_mutex_lock(&conn->lock);
            conn->session = s; /* the connection's reference */
            pthread_mutex_unlock(&conn->lock);
            session_ref(s);
            listen_hub_add_session(srv->hub, s);
        }
    } else if (http && srv->legacy_mode == MCP_LEGACY_SESSIONS) {
        char id[65];
        sessions_sweep(srv);
        pthread_mutex_lock(&srv->session_lock);
        bool full = srv->n_sessions >= srv->max_sessions;
        pthread_mutex_unlock(&srv->session_lock);
        if (full) {
            server_log(srv, MCP_LOG_WARNING,
                       "legacy initialize refused: %zu sessions are open (max_sessions)",
                       srv->max_sessions);
            answer_error(sink, msg, 503, MCP_INTERNAL_ERROR,
                         "Server busy: too many open sessions; try again later");
            return;
        }
        if (session_mint_id(id) == MCP_OK && (s = session_new(srv, id, msg->params)) &&
            session_set_principal(s, ctx->principal) != MCP_OK) {
            session_unref(s);
            s = NULL;
        }
        if (s) {
            s->conn = mcp_conn_new(srv, MCP_TRANSPORT_HTTP);
            session_touch(srv, s);
            live_add(srv, s); /* a fresh random id: never there already */
            if (sink->set_header)
                sink->set_header(sink, MCP_HEADER_SESSION_ID, id);
        }
    } else {
        /* Stateless: nothing is kept; the answer is all there is. */
        const char *v = json_string_value(json_object_get(msg->params, "protocolVersion"));
        answer_result(sink, msg, initialize_result(srv, mcp_legacy_negotiate_version(v),
                                                   ctx->principal != NULL));
        return;
    }
    if (!s) {
        answer_error(sink, msg, 500, MCP_INTERNAL_ERROR, "Internal error: cannot open a session");
        return;
    }
    answer_result(sink, msg, initialize_result(srv, s->protocol_version, true));
    session_unref(s);
}

/* logging/setLevel, resources/subscribe and resources/unsubscribe: they
 * change the session. */
static void serve_session_change(mcp_server_t *srv, mcp_session_t *s, mcp_message_t *msg,
                                 mcp_sink_t *sink)
{
    const json_t *params = msg->params;
    if (strcmp(msg->method, "logging/setLevel") == 0) {
        const char *level = json_string_value(json_object_get(params, "level"));
        int index = level ? mcp_log_level_index(level) : -1;
        if (index < 0) {
            answer_error(sink, msg, 200, MCP_INVALID_PARAMS,
                         "params.level must be a logging level (debug ... emergency)");
            return;
        }
        if (s) {
            pthread_mutex_lock(&s->lock);
            s->log_level = index;
            pthread_mutex_unlock(&s->lock);
        }
    } else {
        if (!registry_has(srv, ENTRY_RESOURCE) && !registry_has(srv, ENTRY_TEMPLATE)) {
            answer_error(sink, msg, 200, MCP_METHOD_NOT_FOUND, "Method not found");
            return;
        }
        const json_t *uri = json_object_get(params, "uri");
        if (!json_is_string(uri)) {
            answer_error(sink, msg, 200, MCP_INVALID_PARAMS, "params.uri must be a string");
            return;
        }
        bool subscribe = strcmp(msg->method, "resources/subscribe") == 0;
        if (subscribe && !registry_resource_known(srv, json_string_value(uri))) {
            /* A URI that names no resource subscribes to nothing; kept, a
             * prefix of others' URIs would tell this client what they are
             * called. -32002 is what a 2025 client knows as "no such
             * resource" (as resources/read answers it). */
            sink_answer(sink,
                        mcp_jsonrpc_error(msg->id, MCP_LEGACY_RESOURCE_NOT_FOUND,
                                          "Resource not found",
                                          json_pack("{s:O}", "uri", uri)),
                        200);
            return;
        }
        if (s) {
            pthread_mutex_lock(&s->lock);
            size_t i, at = (size_t)-1;
            json_t *u;
            json_array_foreach(s->subscriptions, i, u) {
                if (json_equal(u, uri))
                    at = i;
            }
            if (subscribe && at == (size_t)-1)
                json_array_append(s->subscriptions, (json_t *)uri);
            else if (!subscribe && at != (size_t)-1)
                json_array_remove(s->subscriptions, at);
            pthread_mutex_unlock(&s->lock);
        }
    }
    if (s)
        session_touch(srv, s);
    answer_result(sink, msg, json_object());
}

/* The version a request without a session speaks: over HTTP its
 * MCP-Protocol-Version header (validated before we get here), or
 * 2025-03-26 when it has none, as the transport spec says to assume;
 * elsewhere the newest legacy version. */
static const char *stateless_version(const mcp_request_context_t *ctx)
{
    if (ctx->transport != MCP_TRANSPORT_HTTP)
        return MCP_PROTOCOL_LATEST_LEGACY;
    const char *raw = mcp_headers_get(ctx->headers, MCP_HEADER_PROTOCOL_VERSION);
    const char *value;
    size_t len;
    mcp_header_trim(raw, &value, &len);
    if (!raw || len == 0)
        return MCP_PROTOCOL_2025_03_26;
    char version[16];
    if (len >= sizeof version)
        return MCP_PROTOCOL_LATEST_LEGACY;
    memcpy(version, value, len);
    version[len] = '\0';
    return mcp_legacy_negotiate_version(version);
}

mcp_exchange_t *legacy_exchange_new(mcp_server_t *srv, mcp_conn_t *conn, mcp_session_t *s,
                                    mcp_message_t *msg, const mcp_request_context_t *ctx,
                                    mcp_sink_t *sink, mcp_exchange_t **exchange_out)
{
    mcp_exchange_t *ex = exchange_new(srv, conn, msg, ctx, sink);
    if (!ex) {
        answer_error(sink, msg, 500, MCP_INTERNAL_ERROR, "Internal error: out of memory");
        return NULL;
    }
    ex->era = MCP_ERA_LEGACY;
    json_decref(ex->client_caps);
    if (s) {
        session_ref(s);
        ex->session = s;
        ex->protocol_version = s->protocol_version;
        pthread_mutex_lock(&s->lock);
        ex->client_caps = json_incref(s->client_caps);
        ex->client_info = s->client_info;
        ex->log_level = s->log_level;
        pthread_mutex_unlock(&s->lock);
    } else {
        /* Stateless: what initialize declared is gone (see README, "Legacy
         * clients"). The version is the one the request names; the server
         * asks for input anyway (a client that cannot answer refuses, and
         * an elicitation refused reads as "cancel"); and since a
         * logging/setLevel cannot be remembered either, every log message
         * goes out, as the spec lets a server decide when no level is set
         * (clients ignore what they do not want). */
        ex->protocol_version = stateless_version(ctx);
        ex->client_caps = json_pack("{s:{s:{}, s:{}}, s:{}, s:{}}", "elicitation", "form", "url",
                                    "sampling", "roots");
        ex->client_info = NULL;
        ex->log_level = 0;
    }
    if (ctx->transport == MCP_TRANSPORT_HTTP && ctx->headers) {
        /* A server request can only go out as an event of this POST's
         * stream: a client that admits JSON alone could never see it (and
         * so never answer), so asking must fail at once rather than wait
         * out legacy_input_timeout_ms. No Accept header admits both. */
        http_accept_t accept;
        http_accept_read(ctx->headers, &accept);
        ex->no_event_stream = !accept.sse;
    }
    if (!exchange_track(conn, ex))
        return NULL;
    exchange_hand_out(ex, exchange_out);
    return ex;
}

/* A request that runs a handler. */
static void serve_handler(mcp_server_t *srv, mcp_conn_t *conn, mcp_session_t *s,
                          mcp_message_t *msg, const mcp_request_context_t *ctx,
                          mcp_sink_t *sink, mcp_exchange_t **exchange_out)
{
    mcp_exchange_t *ex = legacy_exchange_new(srv, conn, s, msg, ctx, sink, exchange_out);
    if (!ex)
        return;
    mcp_error_t err = {0};
    if (strcmp(ex->msg.method, "tools/call") == 0 && legacy_task_requested(ex, &err) != MCP_OK) {
        exchange_fail(ex, &err, false);
        mcp_error_clear(&err);
        exchange_unref(ex);
        return;
    }
    method_start(ex);
}

/*
 * notifications/cancelled for a request served without a session or a
 * connection (MCP_LEGACY_STATELESS): nothing tracks such requests by id,
 * so the server's live exchanges are searched for the request of that id
 * from the same principal. Clients without authentication cannot be told
 * apart, and their ids collide (every client starts at 1): when more than
 * one request matches, none is cancelled rather than perhaps another
 * client's. (Closing the POST cancels in any case.)
 */
static void stateless_cancel_id(mcp_server_t *srv, const char *principal, const json_t *id)
{
    if (!id)
        return;
    mcp_exchange_t *found = NULL;
    size_t matches = 0;
    pthread_mutex_lock(&srv->live_lock);
    for (mcp_exchange_t *ex = srv->live; ex; ex = ex->live_next) {
        if (ex->era != MCP_ERA_LEGACY || ex->session || ex->conn ||
            ex->msg.kind != MCP_MSG_REQUEST || atomic_load(&ex->released) ||
            !json_equal(ex->msg.id, id) || !task_principal_equal(ex->principal, principal))
            continue;
        /* An exchange being freed (no reference left) is over anyway. */
        if (++matches == 1 && exchange_try_ref(ex))
            found = ex;
    }
    pthread_mutex_unlock(&srv->live_lock);
    if (found && matches == 1)
        exchange_cancel(found);
    else if (matches > 1)
        server_log(srv, MCP_LOG_INFO,
                   "notifications/cancelled ignored: %zu stateless requests share its id", matches);
    if (found)
        exchange_unref(found);
}

/* The session a message belongs to. Returns false after answering when
 * the message cannot be served (no session where one is required). */
/* The session a message from `ctx` speaks in (a new reference, or NULL):
 * on a connection (stdio) the connection's; over HTTP with sessions the
 * one its Mcp-Session-Id names, for its principal (*named tells whether
 * the header was there). Over HTTP without sessions, none. */
static mcp_session_t *session_of(mcp_server_t *srv, mcp_conn_t *conn,
                                 const mcp_request_context_t *ctx, bool *named)
{
    *named = false;
    mcp_session_t *s = NULL;
    if (ctx->transport != MCP_TRANSPORT_HTTP) {
        if (!conn) /* an embedder that gave no connection: serve statelessly */
            return NULL;
        pthread_mutex_lock(&conn->lock);
        s = conn->session;
        if (s)
            session_ref(s);
        pthread_mutex_unlock(&conn->lock);
        return s;
    }
    if (srv->legacy_mode != MCP_LEGACY_SESSIONS)
        return NULL;
    const char *raw = mcp_headers_get(ctx->headers, MCP_HEADER_SESSION_ID);
    const char *id;
    size_t len;
    mcp_header_trim(raw, &id, &len);
    if (!raw || len == 0)
        return NULL;
    *named = true;
    char *copy = strndup(id, len);
    s = copy ? session_lookup(srv, copy, ctx->principal) : NULL;
    free(copy);
    return s;
}

static bool find_session(mcp_server_t *srv, mcp_conn_t *conn, const mcp_message_t *msg,
                         const mcp_request_context_t *ctx, mcp_sink_t *sink,
                         mcp_session_t **out)
{
    bool named;
    *out = session_of(srv, conn, ctx, &named);
    if (ctx->transport != MCP_TRANSPORT_HTTP || srv->legacy_mode != MCP_LEGACY_SESSIONS)
        return true;
    if (!named) {
        answer_error(sink, msg, 400, MCP_INVALID_REQUEST,
                     "Bad Request: Mcp-Session-Id header is required");
        return false;
    }
    if (!*out) {
        answer_error(sink, msg, 404, MCP_INVALID_REQUEST, "Session not found");
        return false;
    }
    return true;
}

void legacy_submit(mcp_server_t *srv, mcp_conn_t *conn, mcp_message_t *msg,
                   const mcp_request_context_t *ctx, mcp_sink_t *sink,
                   mcp_exchange_t **exchange_out)
{
    bool http = ctx->transport == MCP_TRANSPORT_HTTP;

    if (msg->kind == MCP_MSG_REQUEST && strcmp(msg->method, "initialize") == 0) {
        serve_initialize(srv, conn, msg, ctx, sink);
        return;
    }

    mcp_session_t *s = NULL;
    if (!find_session(srv, conn, msg, ctx, sink, &s))
        return;
    mcp_conn_t *track = http ? (s ? s->conn : NULL) : conn;

    /* A response answers one of the requests the bridge sent this
     * session; anything else is accepted and ignored. */
    if (msg->kind == MCP_MSG_RESULT || msg->kind == MCP_MSG_ERROR) {
        bridge_deliver(srv, s, ctx->principal, msg);
        sink->send(sink, MCP_OUT_ACCEPTED, NULL, 202);
        sink->release(sink);
        session_unref(s);
        return;
    }

    if (msg->kind == MCP_MSG_NOTIFICATION) {
        /* notifications/initialized, roots/list_changed: nothing to do. */
        if (strcmp(msg->method, "notifications/cancelled") == 0) {
            const json_t *id = json_object_get(msg->params, "requestId");
            if (track)
                conn_cancel_id(track, id);
            else
                stateless_cancel_id(srv, ctx->principal, id);
        }
        sink->send(sink, MCP_OUT_ACCEPTED, NULL, 202);
        sink->release(sink);
        session_unref(s);
        return;
    }
    /* Ping needs no session: the lifecycle lets a client ping before
     * initialize. */
    bool ping = strcmp(msg->method, "ping") == 0;
    if (!http && conn && !s && !ping) {
        answer_error(sink, msg, 200, MCP_INVALID_REQUEST,
                     "Invalid Request: the server is not initialized (send initialize first)");
        return;
    }
    if (s)
        session_touch(srv, s); /* activity keeps the session alive */

    method_id_t method = method_lookup(msg->method);
    if (ping) {
        answer_result(sink, msg, json_object());
    } else if (strcmp(msg->method, "logging/setLevel") == 0 ||
               strcmp(msg->method, "resources/subscribe") == 0 ||
               strcmp(msg->method, "resources/unsubscribe") == 0) {
        serve_session_change(srv, s, msg, sink);
    } else if (method == METHOD_TOOLS_LIST || method == METHOD_RESOURCES_LIST ||
               method == METHOD_RESOURCES_TEMPLATES_LIST || method == METHOD_PROMPTS_LIST) {
        if (!method_served(srv, method)) {
            answer_error(sink, msg, 200, MCP_METHOD_NOT_FOUND, "Method not found");
        } else {
            mcp_error_t err = {0};
            list_text_t items;
            json_t *result = method_builtin(srv, method, msg->params, &items, &err);
            const char *version = s ? s->protocol_version : stateless_version(ctx);
            /* Shown with their task support, tools are copies: the texts
             * of the registered definitions no longer fit. Otherwise
             * legacy shaping touches only the result's own members. */
            bool shown = result && method == METHOD_TOOLS_LIST && legacy_tasks_served(srv, version);
            if (shown &&
                legacy_tools_show_task_support(srv, json_object_get(result, "tools")) != MCP_OK) {
                json_decref(result);
                result = NULL;
                mcp_error_set(&err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
            }
            if (result) {
                mcp_shape_legacy_result(msg->method, result, s ? s->protocol_version : NULL);
                sink_answer_result(sink, msg->id, result, shown ? NULL : &items.splice);
            } else {
                sink_answer(sink, mcp_jsonrpc_error_from(msg->id, &err), 200);
            }
            list_text_clear(&items);
            mcp_error_clear(&err);
        }
    } else if ((method == METHOD_TOOLS_CALL || method == METHOD_RESOURCES_READ ||
                method == METHOD_PROMPTS_GET || method == METHOD_COMPLETE) &&
               method_served(srv, method)) {
        serve_handler(srv, track, s, msg, ctx, sink, exchange_out);
    } else if (legacy_task_method(srv, track, s, msg, ctx, sink, exchange_out,
                                  s ? s->protocol_version : stateless_version(ctx))) {
        /* tasks/get, tasks/result, tasks/list, tasks/cancel (2025-11-25) */
    } else {
        /* server/discover and subscriptions/listen are modern methods: a
         * legacy client cannot call them without the modern claim. */
        answer_error(sink, msg, 200, MCP_METHOD_NOT_FOUND, "Method not found");
    }
    session_unref(s);
}

bool legacy_batch_allowed(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx)
{
    if (srv->legacy_mode == MCP_LEGACY_REJECT)
        return false;
    if (ctx->transport == MCP_TRANSPORT_HTTP && srv->legacy_mode != MCP_LEGACY_SESSIONS)
        return strcmp(stateless_version(ctx), MCP_PROTOCOL_2025_03_26) == 0;
    /* A session of another principal is unknown here too: its batch is
     * refused whole, as the session's requests would be one by one. */
    bool named;
    mcp_session_t *s = session_of(srv, conn, ctx, &named);
    bool allowed = s && strcmp(s->protocol_version, MCP_PROTOCOL_2025_03_26) == 0;
    session_unref(s);
    return allowed;
}
