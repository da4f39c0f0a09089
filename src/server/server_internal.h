/*
 * Internal structures of the server library, shared by its files:
 *
 *   server.c    the server object: identity, options, capabilities, logs
 *   registry.c  tools, resources, templates and prompts, with pagination
 *   dispatch.c  mcp_server_submit(): parse, classify, validate, route
 *   exchange.c  one request in flight: lifetime, cancellation, sending
 *   call.c      the handler API (mcp_call_*): reading the request, building
 *               the result
 *   input.c     asking the client for input (MRTR) and the round trip state
 *   methods.c   the methods the server answers itself (discover, lists) and
 *               the handler-backed ones (call, read, get, complete)
 */
#ifndef MCP_SERVER_INTERNAL_H
#define MCP_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "mcp/protocol.h"
#include "mcp/request_state.h"
#include "mcp/server.h"
#include "mcp/server_core.h"
#include "protocol/json_writer.h"
#include "server/event_bus.h"
#include "server/session.h"
#include "server/skills.h"

struct mcp_pool;
struct mcp_uri_template;

/* ------------------------------------------------------------------------
 * Registry entries
 * ------------------------------------------------------------------------ */

typedef enum entry_kind {
    ENTRY_TOOL = 0,
    ENTRY_RESOURCE,
    ENTRY_TEMPLATE,
    ENTRY_PROMPT,
    ENTRY_KIND_COUNT
} entry_kind_t;

/* An entry's def as compact JSON text, `len` bytes and a NUL. */
typedef struct entry_text {
    size_t len;
    char text[];
} entry_text_t;

/* One registered item. Immutable after registration and reference-counted,
 * so a request keeps its entry alive even if it is removed meanwhile. */
typedef struct entry {
    atomic_int refs;
    entry_kind_t kind;
    uint64_t seq;        /* registration order (template matching precedence) */
    char *key;           /* tool/prompt name, resource URI, or URI template */
    json_t *def;         /* the object as listed (Tool, Resource, ...) */
    union {
        mcp_tool_fn tool;
        mcp_resource_fn resource; /* resources and templates */
        mcp_prompt_fn prompt;
    } fn;
    void *user;
    json_t *required_caps;        /* tools: ClientCapabilities every call needs */
    mcp_param_headers_t param_headers; /* tools: x-mcp-header annotations of the inputSchema */
    struct mcp_uri_template *tpl; /* templates */
    json_t *required_args;        /* prompts: array of required argument names */
    bool run_inline;              /* the handler runs on the receiving thread */
    /* The mutable part: when a call of the handler held a lent thread too
     * long (lend.h), its calls go to the pool until lend_again_ms
     * (mcp_clock_coarse_ms), a pause that doubles with each such call. */
    _Atomic int64_t lend_again_ms;
    atomic_uint long_runs;
    /* `def` as text, written the first time the entry is listed: a list
     * page is these texts pasted together (registry_page()). */
    _Atomic(entry_text_t *) def_text;
    mcp_task_support_t tasks;     /* tools: may a call become a task */
    bool unlisted;                /* resources: readable, but not in resources/list */
    void (*release)(void *user);  /* called with `user` when the entry is freed, or NULL */
} entry_t;

void entry_ref(entry_t *e);
void entry_unref(entry_t *e);

/* One kind of registry: entries sorted by key (strcmp). */
typedef struct registry {
    entry_t **items;
    size_t count, cap;
} registry_t;

/* ------------------------------------------------------------------------
 * The server
 * ------------------------------------------------------------------------ */

struct listen_hub;

/* Buckets of the live legacy sessions' index (server.session_index). */
#define SESSION_BUCKETS 1024

struct mcp_server {
    /* Identity and options (immutable after mcp_server_new). */
    json_t *impl;          /* Implementation object: name, version, title, ... */
    char *instructions;
    json_t *extensions;    /* the options' extensions (object), or NULL */
    size_t page_size;
    int64_t cache_ttl_ms;
    char *cache_scope;
    bool omit_server_info_meta;
    /* The _meta of a result, {"io.modelcontextprotocol/serverInfo":impl},
     * written once (for answers written without a result tree, see
     * tool_answer_text()); NULL when it could not be, or is not sent. */
    char *result_meta_text;
    size_t result_meta_len;
    int max_input_rounds;
    int worker_threads;
    int spin_us;            /* active waits of idle threads; 0: none (spin.h) */
    mcp_log_fn log;
    void *log_user;

    /* Registries, under `lock`. */
    pthread_rwlock_t lock;
    registry_t reg[ENTRY_KIND_COUNT];
    uint64_t next_seq;
    mcp_complete_fn complete;
    void *complete_user;

    /* The worker pool runs handlers; created on first use. */
    pthread_mutex_t pool_lock;
    struct mcp_pool *pool;
    /* The stdio transport's reader threads, which run handlers too (lent,
     * lend.h) and may outlive their run while a handler finishes:
     * mcp_server_free() waits for them as for the pool. Under pool_lock. */
    unsigned stdio_threads;
    pthread_cond_t stdio_threads_gone;

    /* requestState sealing; created on first use when none was set. */
    pthread_mutex_t codec_lock;
    struct codec_ref *codec;
    int64_t state_ttl_ms;     /* options of the default codec */
    bool state_single_use;
    /* With state_single_use: the default codec's store (a reference),
     * which mcp_server_replay_store() hands on to the codecs of key
     * rotations. Set once, in mcp_server_new. */
    mcp_replay_store_t *replay_store;

    /* Live exchanges, for cancelling everything at shutdown. */
    pthread_mutex_t live_lock;
    struct mcp_exchange *live;
    atomic_bool shutting_down;

    /* Registry and resource events travel on the bus to the hub of
     * subscriptions/listen streams. */
    server_event_bus_t *bus;
    struct listen_hub *hub;

    /* stdio transport: the eventfd that wakes a running
     * mcp_server_run_stdio (made by the first run, closed by
     * mcp_server_free: mcp_server_stop_stdio may write to it at any time,
     * so it must never close under it), and whether a run is on. */
    atomic_int stdio_stop_fd;
    atomic_bool stdio_running;

    /* Legacy clients (legacy_serve.c, session.c, bridge.c). */
    mcp_legacy_mode_t legacy_mode;
    int64_t session_idle_ms;
    size_t session_replay_events;
    int64_t legacy_input_timeout_ms;
    session_store_t *session_store;
    pthread_mutex_t session_lock;     /* guards the live sessions list */
    struct mcp_session *sessions;
    /* The same sessions by id, in chains, so a request finds its session
     * without walking them all (ids are random: any hash bits spread). */
    struct mcp_session *session_index[SESSION_BUCKETS];
    size_t n_sessions;
    size_t max_sessions;
    int64_t next_sweep_ms;            /* expired sessions are freed then */
    struct bridge *bridge;            /* server requests awaiting answers */

    /* Tasks (tasks.c): offered from the first tool registered with task
     * support on, for good (tasks outlive their tool's registration). */
    struct task_store *tasks;
    atomic_bool tasks_offered;
    int64_t task_ttl_ms;              /* < 0: no limit */
    int64_t task_poll_ms;

    /* Skills (skills.c), under `lock` with the registries. */
    skill_list_t skills;
};

/* Logs through the user's callback (no-op without one). */
void server_log(mcp_server_t *srv, mcp_log_level_t level, const char *fmt, ...)
    MCP_PRINTF(3, 4);

/* Publishes a registry or resource event on the server's bus. */
void server_publish(mcp_server_t *srv, server_event_kind_t kind, const char *uri);

/* The ServerCapabilities object derived from what is registered now (new
 * reference; NULL when out of memory). */
json_t *server_capabilities(mcp_server_t *srv);

/* Submits a job to the worker pool (starting it on first use). */
int server_run_job(mcp_server_t *srv, void (*fn)(void *), void *arg);

/* The requestState codec, counted: mcp_server_set_codec() may replace it
 * while a worker seals or opens with it, and its last user frees it. */
typedef struct codec_ref {
    mcp_codec_t *codec;
    atomic_int refs;
} codec_ref_t;

/* A reference to the codec in use (created with an ephemeral key on first
 * use), or NULL when it cannot be made. Give it back with codec_put(). */
codec_ref_t *server_codec_get(mcp_server_t *srv);
void codec_put(codec_ref_t *ref); /* NULL-safe */

/* Result shaping options for this server. */
void server_result_shape(const mcp_server_t *srv, mcp_result_shape_t *shape);

/* ------------------------------------------------------------------------
 * Registry operations (registry.c)
 * ------------------------------------------------------------------------ */

void registry_init(registry_t *r);
void registry_clear(registry_t *r);

/* Adds under srv->lock (write). MCP_EEXIST when the key is taken. Takes the
 * entry's reference on success only. */
int registry_add(mcp_server_t *srv, entry_t *e);
/* A new entry of `kind` (one reference) owning `def_new`; NULL when out of
 * memory (def_new is released then too). */
entry_t *entry_new(entry_kind_t kind, const char *key, json_t *def_new, void *user);
/* registry_add and registry_remove for a caller that holds srv->lock for
 * writing and publishes the change event itself, after unlocking. */
int registry_insert_locked(mcp_server_t *srv, entry_t *e);
int registry_delete_locked(mcp_server_t *srv, entry_kind_t kind, const char *key);
/* Page cursors name the last key returned: "k" and its hex (malloc'd). */
char *registry_cursor_encode(const char *key);
/* The optional params.cursor of a list request, decoded into the key it
 * names (*after_out malloc'd, NULL without a cursor). false with *err
 * (-32602) for a cursor that is not a string, or not one of ours. */
bool registry_cursor_param(const json_t *params, char **after_out, mcp_error_t *err);
/* Removes by key under srv->lock (write). MCP_ENOTFOUND when absent. */
int registry_remove(mcp_server_t *srv, entry_kind_t kind, const char *key);
/* Finds by exact key; returns a new reference or NULL. */
entry_t *registry_find(mcp_server_t *srv, entry_kind_t kind, const char *key);
/* The template matching `uri` with the lowest registration order; returns a
 * new reference and the variables (new object; vars_out may be NULL) or
 * NULL, with *out_of_memory set when a template could not be tried. */
entry_t *registry_match_template(mcp_server_t *srv, const char *uri, json_t **vars_out,
                                 bool *out_of_memory);
/* Whether `uri` names a resource resources/read would serve now: a
 * registered resource, or one a template matches. */
bool registry_resource_known(mcp_server_t *srv, const char *uri);
/* Whether any entry of `kind` exists. */
bool registry_has(mcp_server_t *srv, entry_kind_t kind);
/*
 * One page of definitions after the key `after` (NULL for the first page;
 * see registry_cursor_param) into *items (new array) and *next_cursor
 * (malloc'd, NULL at the end). When `text` is not NULL, it receives the
 * text of each definition of the page (list_text_t), for pasting; when
 * out of memory for that, it is left empty (text->splice.node NULL).
 */
typedef struct list_text list_text_t;
void registry_page(mcp_server_t *srv, entry_kind_t kind, const char *after, json_t **items,
                   char **next_cursor, list_text_t *text);

/* A list page's definitions as text (registry_page()): splice.node is the
 * page's items array, splice.items the text of each definition. The texts
 * live in their entries, which are held until list_text_clear(). */
struct list_text {
    json_splice_t splice;
    entry_t **held;
    size_t n_held;
};

/* Drops what `text` holds, and empties it. */
void list_text_clear(list_text_t *text);

/* ------------------------------------------------------------------------
 * Connections and exchanges (dispatch.c, exchange.c)
 * ------------------------------------------------------------------------ */

struct mcp_conn {
    atomic_int refs;
    mcp_server_t *srv;
    mcp_transport_kind_t transport;
    pthread_mutex_t lock;
    struct mcp_exchange *inflight; /* requests in flight, for cancellation by id */
    mcp_era_t era;                 /* stdio: decided by the first request */
    struct mcp_session *session;   /* a legacy session (stdio: the process's) */
    mcp_sink_t *outbound;          /* messages that belong to no request */
};

void conn_ref(mcp_conn_t *conn);
void conn_unref(mcp_conn_t *conn);
/* Ends the connection's listen streams: with their listen result when
 * `graceful` (the server stops), silently otherwise (the client is gone). */
void conn_end_streams(mcp_conn_t *conn, bool graceful);
/* Registers a request on its connection (false: the id is in flight). */
bool conn_track(mcp_conn_t *conn, mcp_exchange_t *ex);
/* conn_track() for a new exchange on `conn` (may be NULL): false after
 * refusing a request id in flight (-32600) and dropping the exchange. */
bool exchange_track(mcp_conn_t *conn, mcp_exchange_t *ex);
/* Cancels the request of `id` in flight on the connection, if any. */
void conn_cancel_id(mcp_conn_t *conn, const json_t *id);

/* One request being served. */
struct mcp_exchange {
    atomic_int refs;        /* the core's, plus one for a transport handle */
    atomic_bool cancelled;
    atomic_bool released;   /* the sink was released */
    mcp_server_t *srv;
    mcp_conn_t *conn;       /* reference, or NULL */
    mcp_sink_t *sink;
    mcp_message_t msg;      /* the parsed request (owns it) */
    mcp_era_t era;
    mcp_transport_kind_t transport;
    char *principal;

    /* From the request's params._meta. */
    const char *protocol_version; /* borrowed from msg */
    json_t *client_caps;          /* borrowed from msg, or an owned {} */
    json_t *client_info;          /* borrowed, or NULL */
    json_t *progress_token;       /* borrowed, or NULL */
    int log_level;                /* index 0..7, or -1: no logs */

    /* The registry entry serving it (tools/call, resources/read, prompts/get). */
    entry_t *entry;
    json_t *uri_vars;             /* template variables, or NULL */

    /* Round trip state opened from requestState (MRTR). */
    int round;
    json_t *state;                /* handler state from the previous round, or NULL */
    json_t *input_responses;      /* the answers the handler may read (owned), or NULL */

    /* Serialises sends: listen streams are written by whichever thread
     * publishes an event, and a bridged request may be sent while its
     * round already timed out. */
    pthread_mutex_t send_lock;
    /* Called once when the exchange is cancelled (a listen stream ends
     * then); NULL for ordinary requests. Set and read under wait_lock. */
    void (*on_cancel)(mcp_exchange_t *ex);
    atomic_bool cancel_handled;
    struct subscription *listen; /* the subscription of a listen request */
    struct mcp_session *session;  /* legacy: the client's session (reference), or NULL */
    /* Legacy HTTP: the POST's Accept header left out text/event-stream, so
     * its answer can only be one JSON document and no server request
     * (elicitation, sampling, roots) can travel on it. */
    bool no_event_stream;
    bool resumed;                 /* legacy: the handler runs again with answers */
    struct round *bridge_round;   /* legacy: the round of requests sent for it */
    /* Legacy 2025-11-25 tasks (legacy_tasks.c): a tools/call that asked to
     * be a task, with the ttl it asked for (-1: none); a tasks/result
     * waiting for its task. */
    bool legacy_task;
    int64_t legacy_task_ttl_ms;
    struct task_waiter *task_waiter;
    /* Set when the exchange's task questions are forgotten
     * (bridge_forget_exchange): questions registered after that must not
     * wait for answers that will not come on it. */
    atomic_bool task_questions_closed;

    /* Wakes mcp_call_sleep() early on cancellation. */
    pthread_mutex_t wait_lock;
    pthread_cond_t wait_cond;

    /* Links in the connection's in-flight list and the server's live list. */
    struct mcp_exchange *conn_prev, *conn_next;
    struct mcp_exchange *live_prev, *live_next;
};

/* Creates an exchange that owns `msg` (moved in) and takes the sink. */
mcp_exchange_t *exchange_new(mcp_server_t *srv, mcp_conn_t *conn, mcp_message_t *msg,
                             const mcp_request_context_t *ctx, mcp_sink_t *sink);
void exchange_ref(mcp_exchange_t *ex);
/* Gives the transport its handle to a request that runs a handler, when
 * it asked for one (`out` not NULL): a reference in *out, and the sink's
 * started() callback. Called before the handler starts, which may be
 * inside the submission (lend.h). Streams (listen, a legacy session's
 * GET) hand theirs out without started(): the transport must not end a
 * stream before its submission has opened it. */
void exchange_hand_out(mcp_exchange_t *ex, mcp_exchange_t **out);
/* Takes a reference unless the exchange is already being freed. */
bool exchange_try_ref(mcp_exchange_t *ex);
void exchange_unref(mcp_exchange_t *ex);
/* Sends a request-scoped notification unless cancelled. */
int exchange_notify(mcp_exchange_t *ex, json_t *notification_new);
/* Sends a server-to-client request on the exchange's stream (legacy). */
int exchange_request(mcp_exchange_t *ex, json_t *request_new);
/* Sends a notification (borrowed) on the exchange's stream even after a
 * cancellation, as long as its sink is not released: the legacy bridge
 * tells the client which of the server's requests it gave up on. */
int exchange_notify_late(mcp_exchange_t *ex, const json_t *msg);
/* Sends a message of a resumable stream with its event id. */
int exchange_send_event(mcp_exchange_t *ex, const json_t *msg, const char *event_id);
/* Sends the final response (unless cancelled), then releases the sink. */
void exchange_finish(mcp_exchange_t *ex, json_t *response_new, int http_status);
/* Sends the result `result_new` (taken; an object) as the final response
 * {"jsonrpc","id","result"}, serialised without building that message
 * when the sink takes text, then releases the sink. */
void exchange_finish_result(mcp_exchange_t *ex, json_t *result_new);
/* Sends `len` bytes of `text` (borrowed), a whole successful response, as
 * the final response, then releases the sink. The sink must take text. */
void exchange_finish_text(mcp_exchange_t *ex, const char *text, size_t len);
/* Finishes with a JSON-RPC error built from err. */
void exchange_fail(mcp_exchange_t *ex, const mcp_error_t *err, bool before_dispatch);
/* Releases the sink once (no-op the second time). */
void exchange_release_sink(mcp_exchange_t *ex);
/* Sets cancelled and wakes sleepers. */
void exchange_cancel(mcp_exchange_t *ex);

/* The answer to request `id` when its response cannot be built: -32603
 * without data, the smallest error there is (NULL when even that fails).
 * Without an answer a client would wait for one that never comes. */
json_t *response_out_of_memory(const json_t *id);
/* Answers a message at once, without an exchange: one response, release. */
void sink_answer(mcp_sink_t *sink, json_t *response_new, int http_status);
/* The same with the result `result_new` (taken; an object) of the request
 * `id`, serialised without building the response when the sink takes text,
 * pasting `splice` (NULL: none; see json_write_result_spliced()). */
void sink_answer_result(mcp_sink_t *sink, const json_t *id, json_t *result_new,
                        const json_splice_t *splice);

/* ------------------------------------------------------------------------
 * subscriptions/listen (listen.c)
 * ------------------------------------------------------------------------ */

/* A hub of at most `max` streams, `max_per_principal` of them for any one
 * authenticated principal (unauthenticated streams: only `max`). */
struct listen_hub *listen_hub_new(size_t max, size_t max_per_principal);
/* Ends every stream gracefully, then frees the hub. */
void listen_hub_free(struct listen_hub *hub);
/* Delivers an event to the matching streams (the bus's receiver). */
void listen_hub_deliver(void *hub, const server_event_t *ev);
/* Opens a stream for a validated listen request: takes `ex` (the core's
 * reference), sends the acknowledgement and keeps the stream open. */
void listen_open(mcp_server_t *srv, mcp_exchange_t *ex);
/* Ends every open stream gracefully (the listen result, then close). */
void listen_close_all(struct listen_hub *hub);
/* Ends one listen stream gracefully; no-op for other exchanges and for a
 * stream that already ended. */
void listen_close_one(mcp_exchange_t *ex);
/* The number of open listen streams (tests and diagnostics). */
size_t listen_count(mcp_server_t *srv);

/* ------------------------------------------------------------------------
 * Submission (dispatch.c, batch.c)
 * ------------------------------------------------------------------------ */

/* mcp_server_submit() of one message (its arguments checked): a batch
 * member goes through here, so that batches do not nest. */
int server_submit_one(mcp_server_t *srv, mcp_conn_t *conn, const char *bytes, size_t len,
                      const mcp_request_context_t *ctx, mcp_sink_t *sink,
                      mcp_exchange_t **exchange_out);
/* Does the text start (after white space) as a JSON array would? */
bool server_looks_like_batch(const char *bytes, size_t len);
/* Serves a JSON-RPC batch, where legacy_batch_allowed(): each message as
 * if it came alone, the responses as one array on `sink` (released once
 * every message is answered), 202 when none. Text that is no JSON array
 * is served as one message (and refused as the reader says). */
int server_submit_batch(mcp_server_t *srv, mcp_conn_t *conn, const char *bytes, size_t len,
                        const mcp_request_context_t *ctx, mcp_sink_t *sink);

/* ------------------------------------------------------------------------
 * Legacy clients (legacy_serve.c, bridge.c, session.c)
 * ------------------------------------------------------------------------ */

/* Whether a JSON-RPC batch from this client is served: only in a
 * 2025-03-26 conversation (the stdio connection's session, the HTTP
 * session its Mcp-Session-Id names, or a stateless request of that
 * version), the one revision that had batches. */
bool legacy_batch_allowed(mcp_server_t *srv, mcp_conn_t *conn, const mcp_request_context_t *ctx);

/* Serves a message without the modern claim (stdio: on a legacy
 * connection; HTTP: per the legacy mode). Takes `msg` (moved) and the sink
 * as mcp_server_submit would. */
void legacy_submit(mcp_server_t *srv, mcp_conn_t *conn, mcp_message_t *msg,
                   const mcp_request_context_t *ctx, mcp_sink_t *sink,
                   mcp_exchange_t **exchange_out);
/* A request of a legacy client as an exchange on its session (s may be
 * NULL: stateless): version, declared capabilities and log level from the
 * session, tracked on `conn`, the transport's handle in *exchange_out.
 * Takes `msg`. NULL after answering when it cannot be. */
mcp_exchange_t *legacy_exchange_new(mcp_server_t *srv, mcp_conn_t *conn, mcp_session_t *s,
                                    mcp_message_t *msg, const mcp_request_context_t *ctx,
                                    mcp_sink_t *sink, mcp_exchange_t **exchange_out);
/* Attaches a GET stream to a session, replaying after last_event_id. */
int session_attach_stream(mcp_session_t *s, mcp_exchange_t *ex, const char *last_event_id);
/* Frees every live session (server teardown). */
void sessions_free_all(mcp_server_t *srv);
/* The session was used: saves its record with a fresh expiry (no-op for
 * sessions without an id and for ended ones). NULL-safe. */
void session_touch(mcp_server_t *srv, mcp_session_t *s);

typedef struct bridge bridge_t;
bridge_t *bridge_new(mcp_server_t *srv);
/* Stops the bridge's timer thread (idempotent): before the task store is
 * freed, since the thread sweeps it. */
void bridge_stop_timer(bridge_t *b);
void bridge_free(bridge_t *b);
/* Has the bridge's timer thread sweep the task store at `when_ms`
 * (monotonic), and from then on whenever the next task a legacy
 * tasks/result waits for expires. */
void bridge_sweep_tasks_at(bridge_t *b, int64_t when_ms);
/* The handler of `ex` asked for input on a legacy connection: send the
 * real requests and run it again when every answer is in. Takes the
 * exchange's core reference and the call's input requests and state. */
void bridge_start(mcp_exchange_t *ex, mcp_call_t *call);
/* A response from a legacy client of `session` (NULL: stateless), sent as
 * `principal` (NULL: unauthenticated). True when it answered one of the
 * requests sent to that session and principal. */
bool bridge_deliver(mcp_server_t *srv, const mcp_session_t *session, const char *principal,
                    const mcp_message_t *msg);
/* Drops the exchange's reference to its latest round (exchange_unref). */
void bridge_round_release(struct round *r);
/* A legacy task needs input (`requests`, taken): sends the requests, with
 * the related-task _meta, on the stream of `ex` (a tasks/result waiting
 * for the task) and hands the answers, or why there are none, to
 * legacy_task_input_answered(). The cancellation of `ex` stays with its
 * owner, which calls bridge_forget_exchange(). */
struct task;
void bridge_ask_for_task(mcp_exchange_t *ex, struct task *t, json_t *requests);
/* Drops the rounds sent on `ex` without waiting for their answers; true
 * when there was one. */
bool bridge_forget_exchange(bridge_t *b, mcp_exchange_t *ex);

/* ------------------------------------------------------------------------
 * Legacy 2025-11-25 tasks (legacy_tasks.c)
 * ------------------------------------------------------------------------ */

struct task_waiter;
/* Does a legacy client of `version` get tasks? (2025-11-25, once a tool
 * may run as a task.) */
bool legacy_tasks_served(mcp_server_t *srv, const char *version);
/* capabilities.tasks of the initialize result (new): cancel, tools/call
 * augmentation, and list when `can_list` (the server can tell clients
 * apart). */
json_t *legacy_tasks_capability(bool can_list);
/* Adds execution.taskSupport to the task tools of a tools/list page. The
 * page's tools are the registry's definitions, shared by every request
 * and thread: a tool that gets the member is replaced in the page by a
 * copy of its own, the definition left as it was. MCP_OK or MCP_ENOMEM. */
int legacy_tools_show_task_support(mcp_server_t *srv, json_t *tools);
/* Reads params.task of a legacy tools/call into ex->legacy_task (ignored
 * below 2025-11-25); -32602 when it is malformed. */
int legacy_task_requested(mcp_exchange_t *ex, mcp_error_t *err);
/* -32601 for a call with "task" of a tool that allows none, or without
 * it of a tool that requires one (true, with *err). */
bool legacy_task_refused(const mcp_exchange_t *ex, mcp_error_t *err);
/* Before the handler of a task-augmented call runs: makes it a task and
 * answers the call with {"task": Task}; call->task is then set. When the
 * task store is full, a tool that may run without a task runs as a plain
 * call (MCP_OK, call->task NULL); otherwise a failure, with *err filled
 * when it says more than the code. */
int legacy_task_start(mcp_call_t *call, mcp_error_t *err);
/* tasks/get, tasks/result, tasks/list, tasks/cancel of a legacy client
 * of `version`: answered (or, tasks/result, made to wait), and true;
 * false for any other method. Takes `msg` only when it waits. */
bool legacy_task_method(mcp_server_t *srv, mcp_conn_t *conn, mcp_session_t *s,
                        mcp_message_t *msg, const mcp_request_context_t *ctx, mcp_sink_t *sink,
                        mcp_exchange_t **exchange_out, const char *version);
/* The answers to a task's questions came in on `ex` (or `failure` says
 * why not; taken): the task takes them and runs again. */
void legacy_task_input_answered(struct task *t, mcp_exchange_t *ex, const json_t *answers,
                                mcp_error_t *failure);

/* Hub: legacy sessions receive list_changed and subscribed resources/updated
 * notifications (untagged) on their stream. */
void listen_hub_add_session(struct listen_hub *hub, mcp_session_t *s);
void listen_hub_remove_session(struct listen_hub *hub, mcp_session_t *s);

/* ------------------------------------------------------------------------
 * Calls (call.c, input.c, methods.c)
 * ------------------------------------------------------------------------ */

typedef enum method_id {
    METHOD_UNKNOWN = 0,
    METHOD_DISCOVER,
    METHOD_TOOLS_LIST,
    METHOD_TOOLS_CALL,
    METHOD_RESOURCES_LIST,
    METHOD_RESOURCES_TEMPLATES_LIST,
    METHOD_RESOURCES_READ,
    METHOD_PROMPTS_LIST,
    METHOD_PROMPTS_GET,
    METHOD_COMPLETE,
    METHOD_LISTEN,
    METHOD_TASKS_GET,
    METHOD_TASKS_UPDATE,
    METHOD_TASKS_CANCEL,
    METHOD_SKILLS_LIST,
    METHOD_SKILLS_GET,
    METHOD_RESOURCES_DIRECTORY_READ
} method_id_t;

method_id_t method_lookup(const char *method);
/* Whether the server serves `method` now (its feature is registered). */
bool method_served(mcp_server_t *srv, method_id_t method);

/* What one handler run produces. */
struct mcp_call {
    mcp_exchange_t *ex;
    method_id_t method;
    const char *target;      /* tool/prompt name or resource URI */
    json_t *arguments;       /* borrowed, or an owned {} */
    bool owns_arguments;

    /* Tool result (the arrays here are NULL until first appended to) */
    json_t *content;         /* array, or NULL */
    char *first_text;        /* the content while it is one text block (see
                                call_settle_content), or NULL */
    size_t first_text_len;
    json_t *structured;      /* or NULL */
    bool is_error;
    /* Resource result */
    json_t *contents;        /* array, or NULL */
    /* Prompt result */
    json_t *messages;        /* array, or NULL */
    char *description;
    /* Completion result */
    json_t *values;          /* array of strings, or NULL */
    int64_t total;           /* < 0: omitted */
    bool has_more;
    /* Any result */
    json_t *result_meta;     /* or NULL */
    int64_t cache_ttl_ms;    /* < 0: server default */
    const char *cache_scope; /* static string or NULL */
    /* Failure */
    mcp_error_t error;
    /* Input requests (MRTR) */
    json_t *input_requests;  /* object key -> InputRequest, or NULL */
    json_t *next_state;      /* state for the next round, or NULL */

    double last_progress;
    bool progress_sent;

    /* The task this call became (mcp_call_start_task; a reference), or
     * NULL. */
    struct task *task;
};

void call_init(mcp_call_t *call, mcp_exchange_t *ex, method_id_t method, const char *target);
void call_cleanup(mcp_call_t *call);
/* Moves a text kept in call->first_text into call->content, as its first
 * block; MCP_ENOMEM (nothing changed) when it cannot. Done before anything
 * reads call->content or adds to it. */
int call_settle_content(mcp_call_t *call);

/* Starts the handler-backed method of an exchange, taking the caller's
 * reference: resolves its tool, resource or prompt (an unknown one is
 * answered at once), then runs the handler right here when the entry was
 * registered run_inline, else hands it to the worker pool. */
void method_start(mcp_exchange_t *ex);

/* Runs the handler-backed method of a started (resolved) exchange on the
 * calling thread and finishes the exchange. */
void method_run(mcp_exchange_t *ex);

/* The complete result of a handler run that returned 0 (new), or NULL
 * with *err filled. */
json_t *method_complete_result(mcp_call_t *call, mcp_error_t *err);

/* params[key] as a string without NUL bytes (borrowed); NULL with *err
 * set to -32602 "params.<key> must be a string" otherwise (methods.c). */
const char *method_string_param(const json_t *params, const char *key, mcp_error_t *err);

/* Answers the methods the server serves itself (discover and the lists).
 * Returns the result object (new) or NULL with *err filled. When `text` is
 * not NULL, a list fills it with the texts of its items (registry_page()),
 * to be pasted when the result is written unchanged below its top level;
 * other methods leave it empty. Clear it with list_text_clear() in any
 * case. */
json_t *method_builtin(mcp_server_t *srv, method_id_t method, const json_t *params,
                       list_text_t *text, mcp_error_t *err);

/* MRTR: opens the request's requestState and checks inputResponses before
 * the handler runs. MCP_OK, or a negative code with *err (-32602). */
int input_prepare(mcp_exchange_t *ex, mcp_error_t *err);
/* MRTR: whether `answer` is the result a request of `method` asks for
 * (an ElicitResult, CreateMessageResult or ListRootsResult). */
bool input_answer_valid(const char *method, const json_t *answer);
/* Legacy HTTP: the error of a request that needs to send the client a
 * `method` request (elicitation/create, ...) on a POST whose Accept
 * header did not admit an event stream (-32600, naming the reason). */
int input_no_event_stream(mcp_error_t *err, const char *method);
/* MRTR: builds the input_required result after a handler asked for input.
 * Returns the result (new) or NULL with *err filled. */
json_t *input_required_result(mcp_call_t *call, mcp_error_t *err);

/* ------------------------------------------------------------------------
 * Tasks (tasks.c)
 * ------------------------------------------------------------------------ */

struct task;
/* A store of at most `max_tasks` tasks, `max_per_principal` of them for
 * any one principal. */
struct task_store *task_store_new(size_t max_tasks, size_t max_per_principal);
/* Frees every task; the worker pool must have stopped (no handler runs). */
void task_store_free(struct task_store *store);
void task_unref(struct task *t);
/* A handler run of the task `call->task` returned `rc`: the task takes the
 * outcome (result, failure, input requests or cancellation). */
void task_settle(mcp_call_t *call, int rc);
/* What a client must declare for tasks: {"extensions": {"io.
 * modelcontextprotocol/tasks": {}}} (new; NULL when out of memory), as
 * -32021 names it. */
json_t *task_required_capabilities(void);
/* Did the client declare the Tasks extension in these capabilities? */
bool task_client_declares(const json_t *client_caps);
/* Are two principals the same caller? NULL (unauthenticated) matches only
 * NULL. A task belongs to the principal that started it. */
bool task_principal_equal(const char *a, const char *b);
/* Does a task of `id` exist that `principal` may see? */
bool task_visible(mcp_server_t *srv, const char *id, const char *principal);
/* Answers tasks/get, tasks/update or tasks/cancel for `principal`: the
 * result (new) or NULL with *err filled. */
json_t *task_method(mcp_server_t *srv, method_id_t method, const json_t *params,
                    const char *principal, mcp_error_t *err);

/* ------------------------------------------------------------------------
 * Skills (skills.c; the loading in skill_load.c, see skills.h)
 * ------------------------------------------------------------------------ */

/* Whether any skill is served: the extension and its methods are offered. */
bool skills_offered(mcp_server_t *srv);
/* Answers skills/list, skills/get or resources/directory/read: the result
 * (new) or NULL with *err filled. */
json_t *skills_method(mcp_server_t *srv, method_id_t method, const json_t *params,
                      mcp_error_t *err);
/* The extension's settings in server/discover (new object). */
json_t *skills_extension_settings(void);

#endif /* MCP_SERVER_INTERNAL_H */
