/*
 * Internals of the client shared by the files of src/client.
 *
 *   client.c        the client object: options, connecting, server identity
 *   roundtrip.c     one request on the wire: start, wait, timeout, cancel
 *   driver.c        one call: cache, version retry, Mcp-Param retry, MRTR rounds
 *   request_build.c the request and its HTTP hints (pure)
 *   input.c         answering MRTR input requests through the callbacks
 *   task_shape.c    reading a task the server sent (pure)
 *   tasks.c         following a task to its end; tasks/get, update, cancel
 *   skill_shape.c   reading a skill entry the server sent (pure)
 *   skills.c        skills/list, skills/get, reading and verifying skill files
 *   sha256.c        SHA-256 (Nettle, loaded on first use), for OAuth and skills
 *   known_tools.c   what tools/list said of each tool: x-mcp-header
 *                   annotations, legacy execution.taskSupport
 *   cache.c         the result cache (pure)
 *   calls.c         the public call functions
 *   listen.c        subscriptions/listen
 *   cancel.c        mcp_cancel_t
 *   era.c           connecting: the server/discover probe and its verdict
 *   legacy/         the legacy client (initialize, sessions, server requests,
 *                   resources/subscribe), behind the same calls
 *
 * Locking: `lock` guards the mutable state of the client (version in use,
 * cache, tool table, subscriptions). It is never held while calling into
 * the transport or a user callback.
 */
#ifndef MCP_CLIENT_INTERNAL_H
#define MCP_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "client/cache.h"
#include "client/transport.h"
#include "mcp/client.h"
#include "mcp/xmcp_header.h"

/* ------------------------------------------------------------------------
 * Cancellation (cancel.c)
 * ------------------------------------------------------------------------ */

/* A waiter that mcp_cancel_trigger() wakes. */
typedef struct client_cancel_waiter {
    pthread_mutex_t *lock;
    pthread_cond_t *cond;
    struct client_cancel_waiter *next;
} client_cancel_waiter_t;

void client_cancel_watch(mcp_cancel_t *cancel, client_cancel_waiter_t *w);
void client_cancel_unwatch(mcp_cancel_t *cancel, client_cancel_waiter_t *w);

/* Sleeps until the monotonic instant `until` (mcp_clock_deadline), or
 * until `cancel` (may be NULL) is triggered: MCP_OK or MCP_ECANCELED. */
int client_cancel_sleep_until(mcp_cancel_t *cancel, const struct timespec *until);

/* The same on the caller's lock and condition variable (created with
 * CLOCK_MONOTONIC), which another thread may also broadcast after setting
 * *woken under `lock`: returns MCP_OK early then, leaving *woken set. */
int client_cancel_wait_until(mcp_cancel_t *cancel, pthread_mutex_t *lock, pthread_cond_t *cond,
                             const bool *woken, const struct timespec *until);

/* ------------------------------------------------------------------------
 * Requests and hints (request_build.c; pure)
 * ------------------------------------------------------------------------ */

/* What every modern request carries in _meta. */
typedef struct client_meta {
    const char *protocol_version;
    const json_t *capabilities;  /* ClientCapabilities */
    const json_t *client_info;   /* Implementation, or NULL */
    const char *log_level;       /* or NULL */
} client_meta_t;

/*
 * The JSON-RPC request `method` with id `id`: a copy of `params` (borrowed,
 * may be NULL) whose _meta gets the keys of `meta` (keys the caller put in
 * _meta, e.g. traceparent, are kept; the reserved ones are replaced), plus
 * progressToken = id when `progress`. NULL on allocation failure.
 */
json_t *client_request_build(json_int_t id, const char *method, const json_t *params,
                             const client_meta_t *meta, bool progress);

/* The HTTP hints of a request, with the storage they point into. */
typedef struct client_hints {
    client_http_hints_t h;
    char *name;               /* Mcp-Name (unencoded) */
    mcp_header_t *params;     /* owned: Mcp-Param-<name> suffixes, encoded values */
    size_t n_params;
} client_hints_t;

/*
 * Fills *out for a request of `method` with `params` (borrowed): the version,
 * the method, Mcp-Name from params.name (tools/call, prompts/get) or
 * params.uri (resources/read), and for tools/call one Mcp-Param per entry of
 * `tool_headers` (may be NULL) whose argument is present and not null,
 * encoded with mcp_header_value_from_json. An argument that cannot be
 * encoded (a type its annotation does not allow) is left out: the server
 * judges the call. Returns MCP_OK or MCP_ENOMEM; release with
 * client_hints_clear() in both cases.
 */
int client_hints_build(client_hints_t *out, const char *protocol_version, const char *method,
                       const json_t *params, const mcp_param_headers_t *tool_headers);
void client_hints_clear(client_hints_t *hints);

/* ------------------------------------------------------------------------
 * MRTR input (input.c)
 * ------------------------------------------------------------------------ */

typedef struct client_input_handlers {
    const json_t *capabilities; /* what the client declared */
    mcp_elicit_fn elicit;
    void *elicit_user;
    mcp_sample_fn sample;
    void *sample_user;
    mcp_roots_fn roots;
    void *roots_user;
} client_input_handlers_t;

/*
 * Answers every entry of an InputRequiredResult's inputRequests (borrowed)
 * through the handlers: *responses_out receives the inputResponses object.
 *   elicitation/create    : the elicit callback; a negative return answers
 *                           {"action":"cancel"}. A request the client did not
 *                           declare (no callback, or a mode it does not
 *                           handle) is answered {"action":"decline"}: the
 *                           user never saw it, and a form left unanswered
 *                           is what decline means to the server.
 *   sampling/createMessage: the sample callback; a negative return abandons
 *   roots/list            : the roots callback;   the call with that code.
 * A sampling or roots request the client did not declare, an unknown
 * method or a malformed entry abandons the call with MCP_EPROTO: the client
 * never invents an answer. A callback that returns 0 without an object is
 * MCP_EINVAL.
 */
int client_answer_inputs(const client_input_handlers_t *h, const json_t *input_requests,
                         json_t **responses_out, mcp_error_t *err);

/*
 * The params of an MRTR retry: a copy of `base` (borrowed, may be NULL) plus
 * inputResponses (when `responses` is given) and requestState (when
 * `request_state` is given, copied verbatim). NULL on allocation failure.
 */
json_t *client_retry_params(const json_t *base, const json_t *responses,
                            const json_t *request_state);

/* ------------------------------------------------------------------------
 * Tasks (task_shape.c, pure; tasks.c)
 * ------------------------------------------------------------------------ */

typedef enum client_task_status {
    CLIENT_TASK_WORKING,
    CLIENT_TASK_INPUT_REQUIRED,
    CLIENT_TASK_COMPLETED,
    CLIENT_TASK_FAILED,
    CLIENT_TASK_CANCELLED
} client_task_status_t;

/* A task as the server described it; the pointers borrow from the object
 * read. */
typedef struct client_task {
    const char *id;
    client_task_status_t status;
    bool has_poll_interval;
    json_int_t poll_interval_ms;  /* as sent, when has_poll_interval */
    const json_t *input_requests; /* detailed, input_required: an object */
    const json_t *result;         /* detailed, completed: an object */
    const json_t *error;          /* detailed, failed: a JSON-RPC error object */
    const char *status_message;   /* or NULL */
} client_task_t;

/*
 * Reads `obj` (borrowed) as a Task and fills *out:
 *   taskId        a string (equal to `expected_id` when that is not NULL);
 *   status        "working", "input_required", "completed", "failed" or
 *                 "cancelled";
 *   createdAt, lastUpdatedAt  strings; ttlMs an integer or null;
 *   statusMessage a string, pollIntervalMs an integer, when present.
 * A `detailed` task (a DetailedTask: what tasks/get answers) also has the
 * member of its status: inputRequests (an object) when input_required,
 * result (an object whose resultType, if any, is "complete") when
 * completed, error (a JSON-RPC error object, as mcp_error_from_json()
 * reads it) when failed. A CreateTaskResult is not detailed: those members
 * are not read. Returns MCP_OK, or MCP_EPROTO with *err saying what is
 * wrong.
 */
int client_task_read(const json_t *obj, bool detailed, const char *expected_id,
                     client_task_t *out, mcp_error_t *err);

/*
 * Reads `obj` (borrowed) as the Task of a legacy (2025-11-25) server's
 * experimental tasks: the members client_task_read() checks, but with
 * ttl and pollInterval for ttlMs and pollIntervalMs, and no detailed
 * members (tasks/result gives the outcome). Same errors.
 */
int client_task_read_legacy(const json_t *obj, const char *expected_id, client_task_t *out,
                            mcp_error_t *err);

/* tasks/<op> {taskId, inputResponses?} (input_responses borrowed, may be
 * NULL) through client_call(); *result_out its result. Both eras'. */
int client_task_request(mcp_client_t *c, const char *method, const char *task_id,
                        const json_t *input_responses, const mcp_request_options_t *opts,
                        json_t **result_out, mcp_error_t *err);

/* Gives up on a task that has not ended: tasks/cancel within
 * `timeout_ms`; a failure is only logged. */
void client_task_abandon(mcp_client_t *c, const char *task_id, int64_t timeout_ms);

/*
 * The wait between polls when the server never named one, and the range
 * any interval is kept in. Clients SHOULD honour pollIntervalMs (digest
 * 8.2), and a server may rate-limit one that polls faster, so an interval
 * of minutes or hours is taken as given: the wait never delays the
 * outcome anyway, since a notifications/tasks about the task and the
 * call's cancel end it at once (tasks.c). The floor keeps a server from
 * making the client spin. The ceiling (a day) is no policy: it only keeps
 * a value no server means (pollIntervalMs is any integer, 2^53 included)
 * from leaving a call that nobody cancels asleep for good, and the clock
 * arithmetic in range.
 */
#define CLIENT_TASK_DEFAULT_POLL_MS 1000
#define CLIENT_TASK_MIN_POLL_MS 10
#define CLIENT_TASK_MAX_POLL_MS (24 * 3600 * 1000)

/* The wait between polls after the server described `task`: the interval
 * it asks for, kept in range, or `current_ms` when it asks for none. */
int64_t client_task_poll_interval(const client_task_t *task, int64_t current_ms);

/* Does this status end the task? */
bool client_task_status_final(client_task_status_t status);

/*
 * A result with resultType "task" (borrowed) that answered `method`. It is
 * invalid (MCP_EPROTO) unless the request declared the extension and the
 * method may become a task (tools/call); otherwise it is read as a
 * CreateTaskResult and either kept (opts->keep_task: *result_out is a new
 * reference to it) or followed to the task's end (see client.h, "Tasks").
 */
int client_task_answered(mcp_client_t *c, const char *method, json_t *created,
                         const mcp_request_options_t *opts, json_t **result_out,
                         mcp_error_t *err);

/* ------------------------------------------------------------------------
 * Skills (skill_shape.c, pure; skills.c)
 * ------------------------------------------------------------------------ */

/* A skill entry as the server described it; the pointers borrow from the
 * entry read. */
typedef struct client_skill {
    const char *uri;          /* its SKILL.md: "<scheme>://.../<name>/SKILL.md" */
    size_t dir_len;           /* uri[0, dir_len) is the skill's directory */
    const char *name;         /* frontmatter.name, the uri's last directory segment */
    const json_t *frontmatter;
    const json_t *files;      /* the manifest (an array), or NULL: "dynamic" */
} client_skill_t;

/* One file of a skill: its manifest entry, or only its uri when the
 * skill's resources are "dynamic". */
typedef struct client_skill_file {
    const char *uri;
    const char *digest;       /* "sha256:" and 64 lowercase hex digits; NULL: dynamic */
    json_int_t size;          /* >= 0, when digest is set */
} client_skill_file_t;

/*
 * Reads `entry` (borrowed) as a skill entry and fills *out:
 *   uri          a string "<scheme>://<path>/SKILL.md";
 *   frontmatter  an object with a string name, a valid skill name
 *                (mcp_skill_name_valid) equal to the uri's segment before
 *                "/SKILL.md", and a non-empty string description;
 *   resources    "dynamic", or an array of {uri, digest, size}: each uri
 *                the skill's SKILL.md or a path below its directory (no
 *                empty, "." or ".." segment), listed once, the SKILL.md
 *                among them; digest "sha256:<64 lowercase hex>"; size an
 *                integer >= 0.
 * Strings holding a NUL byte are refused. Returns MCP_OK, MCP_EPROTO with
 * *err saying what is wrong (and in which entry), or MCP_ENOMEM.
 */
int client_skill_read(const json_t *entry, client_skill_t *out, mcp_error_t *err);

/* A ListSkillsResult (borrowed): a skills array of entries that
 * client_skill_read() accepts, and a nextCursor that is a string when
 * present. MCP_OK, MCP_EPROTO (the first bad entry fails the page),
 * MCP_ENOMEM. */
int client_skill_list_read(const json_t *result, mcp_error_t *err);

/* A GetSkillResult (borrowed) that answered skills/get of `uri`: its skill
 * member, an entry client_skill_read() accepts whose uri is `uri`, in
 * *entry_out (borrowed from result). MCP_OK, MCP_EPROTO, MCP_ENOMEM. */
int client_skill_get_read(const json_t *result, const char *uri, const json_t **entry_out,
                          mcp_error_t *err);

/* Is `uri` the skill's SKILL.md or a file below its directory? */
bool client_skill_contains(const client_skill_t *skill, const char *uri);

/* The file `uri` of `skill` in *out: its manifest entry, or for a
 * "dynamic" skill any uri client_skill_contains() (digest NULL). False
 * when the skill has no such file. */
bool client_skill_file(const client_skill_t *skill, const char *uri, client_skill_file_t *out);

/*
 * Verifies a ReadResourceResult (borrowed) that answered resources/read of
 * `file`, a file of `skill`: one content, for file->uri, with a text (its
 * UTF-8 bytes) or a base64 blob (its decoded bytes); when the file has a
 * manifest entry, those bytes have its size, then its digest; when it is
 * the skill's SKILL.md, its frontmatter parses and equals the entry's. On
 * MCP_OK *bytes_out is a malloc'd copy of the bytes, NUL-terminated, and
 * *len_out their length. MCP_EPROTO with *err naming the file and the
 * check that failed; MCP_EUNSUPPORTED when Nettle or libyaml cannot be
 * loaded; MCP_ENOMEM.
 */
int client_skill_file_verify(const client_skill_t *skill, const client_skill_file_t *file,
                             const json_t *result, char **bytes_out, size_t *len_out,
                             mcp_error_t *err);

/* ------------------------------------------------------------------------
 * Known tools: their x-mcp-header annotations and legacy task support
 * (known_tools.c)
 * ------------------------------------------------------------------------ */

typedef struct client_tool client_tool_t;

/* execution.taskSupport of a legacy (2025-11-25) server's tool. */
typedef enum client_task_support {
    CLIENT_TASK_SUPPORT_UNKNOWN,   /* a tool the client has not seen */
    CLIENT_TASK_SUPPORT_FORBIDDEN, /* "forbidden", or no execution.taskSupport */
    CLIENT_TASK_SUPPORT_OPTIONAL,
    CLIENT_TASK_SUPPORT_REQUIRED
} client_task_support_t;

typedef struct client_tools {
    client_tool_t **buckets;     /* 2^bits chains by name, or NULL */
    unsigned bits;
    size_t count;
    client_tool_t *retired;      /* replaced tools, freed by client_tools_clear() */
    /* Names compared by lookups so far (a merge adds those of the page
     * merged): tests check that the cost of a page stays in proportion to
     * the page. */
    uint64_t comparisons;
    /* Every page of tools/list was seen since the last invalidation, so a
     * tool that is not here does not exist. */
    bool complete;
    /* Counts invalidations (client_tools_clear(), client_tools_forget()),
     * so that a refresh that raced with one does not claim completeness,
     * nor a page fetched before it fill the table again. */
    uint64_t generation;
} client_tools_t;

/*
 * Checks the tools of a ListToolsResult page (modified in place, in one
 * pass): tools whose x-mcp-header annotations are invalid, or that are not
 * objects with a string name, are removed from result.tools (and logged
 * through `log`: the first few one by one, then how many more); the
 * annotations and task support of the others are recorded in `tools`
 * (meant to be a table of the page's own, filled off the client's lock).
 * Returns MCP_OK or MCP_ENOMEM. Expected time: linear in the page.
 */
int client_tools_accept_page(client_tools_t *tools, json_t *result, mcp_log_fn log,
                             void *log_user);

/* The recorded annotations of tool `name` (borrowed until the table
 * changes), or NULL when the tool is unknown. */
const mcp_param_headers_t *client_tools_find(client_tools_t *tools, const char *name);

/* The execution.taskSupport tool `name` was listed with. */
client_task_support_t client_tools_task_support(client_tools_t *tools, const char *name);

/* Moves the tools of `from` into `to`, replacing tools of the same name;
 * those replaced go to from's retired list. Expected time: linear in
 * `from` (and O(1) when `to` is empty), so that it may run under the
 * client's lock; clear `from` after dropping the lock. */
void client_tools_merge(client_tools_t *to, client_tools_t *from);

/* Forgets every tool of `tools` (and bumps the generation) in O(1): they
 * move to *old, for the caller to clear once it dropped the lock. */
void client_tools_forget(client_tools_t *tools, client_tools_t *old);

/* Frees every tool (and bumps the generation). */
void client_tools_clear(client_tools_t *tools);

/* ------------------------------------------------------------------------
 * The client
 * ------------------------------------------------------------------------ */

#define CLIENT_MAX_VERSIONS 8

/* The tasks the client is following, and the one subscription that
 * listens for all of them (tasks.c). */
struct follow;
typedef struct client_task_watch {
    pthread_mutex_t lock;
    struct follow *follows;     /* the tasks followed now */
    mcp_subscription_t *sub;    /* listens for `covered`, or NULL */
    json_t *covered;            /* the task ids `sub` names (array), or NULL */
    bool refreshing;            /* a thread is replacing `sub` */
    bool stale;                 /* `follows` changed since it began */
} client_task_watch_t;

/* The task watch of a new client, and its end (closing its subscription,
 * if a call left one open). */
void client_task_watch_init(client_task_watch_t *w);
void client_task_watch_close(client_task_watch_t *w);

struct mcp_client {
    /* Options, fixed after mcp_client_new. */
    json_t *client_info;
    json_t *capabilities;        /* ClientCapabilities built from the callbacks */
    mcp_client_era_t era_option;
    const char *versions[CLIENT_MAX_VERSIONS]; /* modern versions, preferred first */
    size_t n_versions;
    int64_t timeout_ms;          /* < 0: none */
    int max_input_rounds;
    int spin_us;                 /* active wait for an answer; 0: none (spin.h) */
    bool disable_cache;
    bool tasks;                  /* modern requests declare the Tasks extension */
    json_t *extension_result_types; /* array of strings the application takes */
    /* HTTP with a token callback: a request refused with 401/403 is sent
     * once more, with the token the callback gives for the challenge. Set
     * before connecting, then fixed. */
    bool reauthorizes;
    client_input_handlers_t input;
    mcp_server_log_fn on_log;
    void *on_log_user;
    void (*on_closed)(void *user, int rc, const char *why);
    void *on_closed_user;
    mcp_log_fn log;
    void *log_user;
    mcp_trace_fn trace;
    void *trace_user;

    const char *legacy_version;  /* initialize asks for it (static storage) */
    bool has_previous_verdict;
    mcp_client_verdict_t previous_verdict;
    json_t *legacy_capabilities; /* ClientCapabilities of the legacy era */

    /* The stdio server's stderr: forwarded to the user's callback, and its
     * tail kept while connecting, for the error message. */
    mcp_stderr_fn user_stderr;
    void *user_stderr_user;

    /* The connection; set by connect, stable until free. */
    client_transport_t *transport;
    mcp_client_verdict_t verdict; /* how the era was decided */
    /* Legacy connections only. Atomic: the transport's reader thread reads
     * it, without the lock, for every message that belongs to no call. */
    struct client_legacy *_Atomic legacy;
    mcp_transport_kind_t kind;
    json_t *server_info;         /* from the DiscoverResult of connect */
    json_t *server_caps;
    char *instructions;

    pthread_mutex_t lock;        /* guards everything below */
    const char *log_level;       /* static storage (client_log_level_name), or NULL */
    mcp_era_t era;
    const char *version;         /* in use (static storage) */
    json_int_t next_id;
    uint64_t auth_context;       /* the context private cache entries belong to
                                    (client_auth_context) */
    uint64_t auth_seen;          /* the transport's auth_generation it stands for */
    client_cache_t *cache;
    client_tools_t tools;
    mcp_subscription_t *subs;    /* open subscriptions */
    client_task_watch_t task_watch;
    bool connected;              /* connect succeeded: on_closed is reported */
    bool closed;                 /* the transport in use ended by itself
                                    (false while there is none) */
    bool capturing_stderr;
    char stderr_tail[1024];      /* the last stderr bytes while connecting */
    size_t stderr_len;
};

void client_log(mcp_client_t *c, mcp_log_level_t level, const char *fmt, ...) MCP_PRINTF(3, 4);

/* The static spelling of a valid log level (NULL for NULL or an unknown
 * one): the level may change while requests are built, so it is never
 * freed. */
const char *client_log_level_name(const char *level);

/* A fresh request id. */
json_int_t client_next_id(mcp_client_t *c);

/* Delivers a notifications/message (borrowed) to the on_log callback. */
void client_deliver_log(mcp_client_t *c, const json_t *msg);

/* Messages that belong to no call in flight (the transport's on_unrouted,
 * and notifications a call's stream carried that are not its own). */
void client_on_unrouted(void *user, const json_t *msg);

/* The connection ended by itself (the transport's on_closed). */
void client_on_closed(void *user, int rc, const char *why);

/* The transport restarted the server (its on_restarted). */
void client_on_restarted(void *user);

/* The hooks every transport of `c` is made with: the three callbacks
 * above, and the client's trace and log options. */
client_transport_hooks_t client_transport_hooks(mcp_client_t *c);

/* Keeps what an Implementation/capabilities/instructions triple says about
 * the server (each borrowed, may be NULL). */
int client_adopt_server(mcp_client_t *c, const json_t *info, const json_t *caps,
                         const char *instructions);

/* What connecting needs beyond the transport (era.c). Both constructors
 * make the new transport with client_transport_hooks(), and are called
 * once the old transport is closed: what the new one reports is its own. */
typedef struct client_connector {
    /* stdio: starts the server again, for RECONNECT_LEGACY. NULL: none. */
    int (*restart)(void *ctx, client_transport_t **out, mcp_error_t *err);
    /* HTTP: the HTTP+SSE transport (2024-11-05) for the last fallback.
     * NULL: none. */
    int (*open_sse)(void *ctx, client_transport_t **out, mcp_error_t *err);
    void *ctx;
    /* stdio: how long the probe waits (<= 0: the client's timeout). */
    int64_t probe_timeout_ms;
} client_connector_t;

/* How long the HTTP probe waits before retrying a transient failure, and
 * how often it tries. */
#define CLIENT_PROBE_ATTEMPTS 3
/* stdio: the probe timeout when the target names none (see client.h). */
#define CLIENT_DEFAULT_PROBE_TIMEOUT_MS 5000
#define CLIENT_PROBE_BACKOFF_MS 250

/*
 * Attaches a transport (taken, even on failure; made with
 * client_transport_hooks(c)) and connects over it as the era option says:
 * probing with server/discover (auto), adopting its DiscoverResult
 * (modern), or the initialize handshake (legacy, or an auto probe whose
 * verdict is legacy). `how` may be NULL.
 */
int client_connect_with(mcp_client_t *c, client_transport_t *t, mcp_transport_kind_t kind,
                        const client_connector_t *how, mcp_error_t *err);

/* client_connect_with() without a connector: the seam through which tests
 * plug in a fake transport. */
int client_connect_transport(mcp_client_t *c, client_transport_t *t, mcp_transport_kind_t kind,
                             mcp_error_t *err);

/* While connecting over stdio: the stderr tail kept so far ("" if none). */
void client_stderr_tail(mcp_client_t *c, char *buf, size_t size);

/* ------------------------------------------------------------------------
 * One request on the wire (roundtrip.c)
 * ------------------------------------------------------------------------ */

/* Per-call options with the client's defaults resolved. */
typedef struct client_call_opts {
    int64_t timeout_ms;          /* < 0: none */
    mcp_progress_fn progress;
    void *progress_user;
    mcp_cancel_t *cancel;
    bool bypass_cache;
    /* Giving up sends no notifications/cancelled: for initialize, which
     * clients MUST NOT cancel (2025-11-25 cancellation). */
    bool no_cancel_notice;
} client_call_opts_t;

void client_resolve_opts(const mcp_client_t *c, const mcp_request_options_t *opts,
                         client_call_opts_t *out);

/* What came back on the wire besides a JSON-RPC response (HTTP). */
typedef struct client_wire {
    int http_status;             /* 0: none (stdio, or no HTTP answer) */
    bool answered;               /* a JSON-RPC response came back (whatever
                                    the status) */
    char *content_type;
    char *body;                  /* raw body when there was no response */
    size_t body_len;
    char *last_event_id;         /* a legacy event stream's last event ID */
    int64_t retry_ms;            /* with last_event_id: the stream's retry
                                    delay, -1 when it named none */
} client_wire_t;

void client_wire_clear(client_wire_t *w);

/*
 * The longest delay a server's SSE `retry` field makes the client wait
 * before it resumes a call's stream or opens the session's stream again.
 * The client respects the field, as the spec asks, but a server (buggy or
 * hostile) naming hours would silence the session's stream that long and
 * hold a call without a timeout as long; beyond this it asks again
 * anyway.
 */
#define CLIENT_MAX_RETRY_MS 60000

/* The delay the client honours for a stream's retry field `ms` (-1, none,
 * stays -1). */
static inline int64_t client_retry_honoured_ms(int64_t ms)
{
    return ms > CLIENT_MAX_RETRY_MS ? CLIENT_MAX_RETRY_MS : ms;
}

/* client_roundtrip() that also fills *wire (may be NULL; clear it after
 * use, whatever the result). A legacy POST stream that ends before its
 * response, after naming an event ID, is resumed with a GET and
 * Last-Event-ID (at most twice), once the stream's retry delay passed. */
int client_roundtrip_wire(mcp_client_t *c, const json_t *request,
                          const client_http_hints_t *hints, const client_call_opts_t *o,
                          json_t **response_out, client_wire_t *wire, mcp_error_t *err);

/*
 * Sends `request` (borrowed) and waits for its outcome. On MCP_OK
 * *response_out is the JSON-RPC response message (a result or an error).
 * Otherwise MCP_ETIMEDOUT (the exchange was cancelled on expiry),
 * MCP_ECANCELED (o->cancel was triggered), or the transport's failure
 * (MCP_ECLOSED, MCP_EIO, MCP_EPROTO, MCP_EAUTH), with *err describing it.
 */
int client_roundtrip(mcp_client_t *c, const json_t *request, const client_http_hints_t *hints,
                     const client_call_opts_t *o, json_t **response_out, mcp_error_t *err);

/* ------------------------------------------------------------------------
 * One call (driver.c)
 * ------------------------------------------------------------------------ */

/*
 * Performs `method` with `params` (borrowed, may be NULL; without _meta):
 * served from the cache when fresh, retried once on -32022 with a mutual
 * version and once on a -32020 about Mcp-Param-* headers (after refetching
 * tools/list), driven through input_required rounds. *result_out is the
 * final result (new reference).
 */
int client_call(mcp_client_t *c, const char *method, const json_t *params,
                const mcp_request_options_t *opts, json_t **result_out, mcp_error_t *err);

/*
 * The authorization context of a request sent now, for the cache (digest
 * 6: a "private" result is reused only within the context it was fetched
 * in). A new one begins whenever the transport's credentials change (the
 * token callback's new answer, after a 401/403 or a step-up); the private
 * entries of the old one are dropped then, since no request will carry
 * those credentials again. Takes c->lock.
 */
uint64_t client_auth_context(mcp_client_t *c);

/* A JSON-RPC error object (borrowed) into *err: MCP_ERPC, or MCP_EPROTO
 * when it is not a valid error object. */
int client_rpc_error(const json_t *error, mcp_error_t *err);

/* Refetches every page of tools/list (bypassing the cache), which refreshes
 * the tool table. */
int client_refresh_tools(mcp_client_t *c, const client_call_opts_t *o, mcp_error_t *err);

/* One page of a paginated list `method` after `cursor` (NULL: the first
 * page), calls.c: *result_out is its result. */
int client_list_page(mcp_client_t *c, const char *method, const char *cursor,
                     const mcp_request_options_t *opts, json_t **result_out, mcp_error_t *err);

/* Checks one page (borrowed) of a list before its items are taken:
 * MCP_OK, or an error with *err filled. */
typedef int (*client_page_check_fn)(const json_t *page, mcp_error_t *err);

/* Pages an *_all listing follows before it gives up with MCP_ELIMIT. */
#define CLIENT_MAX_LIST_PAGES 10000

/* Every page of a paginated list `method` (calls.c): the concatenated
 * arrays under `key` in *items_out, each page first passed to `check`
 * (may be NULL), whose error ends the listing. A cursor the server repeats
 * is MCP_EPROTO, and more than CLIENT_MAX_LIST_PAGES pages MCP_ELIMIT
 * (neither would ever end). */
int client_list_all_checked(mcp_client_t *c, const char *method, const char *key,
                            client_page_check_fn check, const mcp_request_options_t *opts,
                            json_t **items_out, mcp_error_t *err);

/* client_list_all_checked() without a check. */
int client_list_all(mcp_client_t *c, const char *method, const char *key,
                    const mcp_request_options_t *opts, json_t **items_out, mcp_error_t *err);

/* ------------------------------------------------------------------------
 * Subscriptions (listen.c)
 * ------------------------------------------------------------------------ */

/* Closes every subscription (mcp_client_free). */
void client_close_subscriptions(mcp_client_t *c);

/* A list_changed or resources/updated notification (borrowed) invalidates
 * the matching cache entries (and tool table). */
void client_invalidate_for(mcp_client_t *c, const char *method, const json_t *params);

/* Legacy: a list_changed or resources/updated notification of the session
 * (borrowed) goes to every open subscription whose filter covers it. */
void client_listen_deliver(mcp_client_t *c, const char *method, const json_t *params);

/* The filters ({"notifications": SubscriptionFilter}) of the open
 * subscriptions other than `except` (new reference: an array). */
json_t *client_listen_filters(mcp_client_t *c, const mcp_subscription_t *except);

#endif /* MCP_CLIENT_INTERNAL_H */
