/*
 * libmcp client: talk to any MCP server over stdio or Streamable HTTP.
 *
 *     mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
 *         .name = "my-agent", .version = "1.0"}, &err);
 *     mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
 *         .argv = (const char *const[]){"notes_server", NULL}}, &err);
 *     json_t *result = NULL;
 *     mcp_client_call_tool(c, "echo", args, NULL, &result, &err);
 *     ...
 *     json_decref(result);
 *     mcp_client_free(c);
 *
 * The client speaks 2026-07-28 first: every request carries the protocol
 * version, client capabilities and client info in _meta (and, on HTTP, the
 * MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-* headers).
 * Results that ask for input (resultType "input_required") are driven to
 * completion automatically through the elicitation, sampling and roots
 * callbacks. With the option `tasks`, a server may answer tools/call with
 * a task (the Tasks extension), which mcp_client_call_tool() follows to its
 * end through the same callbacks (see "Tasks" below). In the default
 * `auto` era the client first probes the server with server/discover and
 * falls back to the legacy protocol (initialize handshake, 2025-11-25,
 * 2025-06-18 or 2025-03-26) only when the server is legacy; the calls
 * below are the same for both eras. Over HTTP the legacy
 * fallback tries Streamable HTTP (with its session) first and then the
 * older HTTP+SSE transport (2024-11-05). The era decided at connect is
 * pinned for the connection: it is never downgraded later. A legacy
 * server's event streams are resumed after the delay their `retry` field
 * names, up to 60 s: a longer one is taken as 60 s.
 *
 * On a legacy connection the server's requests (sampling/createMessage,
 * elicitation/create, roots/list) are answered through the same elicit,
 * sample and roots callbacks that answer input_required rounds on a
 * modern one, each on a client thread of its own; ping is answered by the
 * client itself. At most 16 such callbacks run at once for the server's
 * requests: a request beyond them is refused at once with -32603 ("too
 * many concurrent requests"), and taken again once one returns. Its
 * notifications go to the same progress, log and listen callbacks.
 *
 * Results are returned as the method's result object (new reference):
 * CallToolResult, ReadResourceResult, ... exactly as the server sent them
 * (after MRTR rounds), with resultType present. The json_t ** a call
 * returns its result through (result_out, tools_out, ...) is required: the
 * call sets it to NULL first, and it holds a new reference only when the
 * call returns MCP_OK.
 *
 * Errors: every call returns 0 or a negative MCP_E* code and fills the
 * optional mcp_error_t. MCP_ERPC means the server answered with a JSON-RPC
 * error (err->code, message, data hold it). For every other code err->code
 * is 0 and the message says what happened: MCP_ETIMEDOUT, MCP_ECANCELED,
 * MCP_ECLOSED, MCP_EIO and MCP_EPROTO are local or transport failures;
 * MCP_EINVAL a bad argument (a NULL client or result pointer, a missing
 * name or uri, arguments that are not an object, a string that is not
 * UTF-8); MCP_ESTATE a client that is not connected; MCP_EUNSUPPORTED a
 * method the server's legacy protocol does not have; MCP_ELIMIT a server
 * that still asks for input after max_input_rounds, or an answer over the
 * message limit (MCP_DEFAULT_MAX_MESSAGE_BYTES); MCP_EAUTH an HTTP
 * request refused with 401/403; MCP_ENOMEM. A negative code returned by
 * one of your callbacks (sample, roots, token, token_proof) fails the call
 * with that code.
 *
 * Thread safety: calls are blocking and may be made from several threads
 * at once on one client. The input callbacks (elicit, sample, roots) run on
 * the thread of the call that needs them; listen callbacks on a thread of
 * their subscription; progress and log callbacks on the thread that reads
 * the connection (the client's reader thread, or over stdio a call that
 * reads it itself while it waits actively for its answer, see spin_us),
 * stderr callbacks on the reader thread. No callback runs while a client
 * lock is held, so input and listen callbacks may make calls on the
 * client; progress, log and stderr callbacks should return quickly and
 * must not wait for a call on the same stdio connection (its answer would
 * be read by the very thread they block). mcp_client_free() must not race
 * with other calls.
 */
#ifndef MCP_CLIENT_H
#define MCP_CLIENT_H

#include "mcp/common.h"
#include "mcp/probe.h"
#include "mcp/version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcp_client mcp_client_t;

/* ------------------------------------------------------------------------
 * Callbacks: what the client can do for servers
 *
 * Capabilities advertised to servers are built only from the callbacks
 * that are set.
 * ------------------------------------------------------------------------ */

/*
 * Answers an elicitation (elicitation/create): `params` (borrowed) holds
 * mode ("form" or "url"), message, and requestedSchema or url. Store an
 * ElicitResult in *result_out ({"action": "accept"|"decline"|"cancel",
 * "content": {...}} for an accepted form) and return 0. A negative return
 * is sent as {"action":"cancel"}: the client never invents an answer.
 *
 * For this callback and the two below: *result_out is NULL on entry, and
 * the library takes the reference stored there whatever the callback
 * returns (it releases it after a negative return). Returning 0 without
 * storing an object is a failure: an input_required round then fails its
 * call with MCP_EINVAL, and a legacy server's request gets an error.
 */
typedef int (*mcp_elicit_fn)(void *user, const json_t *params, json_t **result_out);

/*
 * Answers a sampling request (sampling/createMessage): store a
 * CreateMessageResult (role, content, model, stopReason) in *result_out and
 * return 0. A negative return abandons the request that needed it (the
 * call fails with that code; the server is not waiting, per the spec).
 */
typedef int (*mcp_sample_fn)(void *user, const json_t *params, json_t **result_out);

/* Lists the client's roots: store a ListRootsResult ({"roots": [{"uri":
 * "file:///...", "name"?}]}) in *result_out and return 0. A negative
 * return abandons the request that needed it. */
typedef int (*mcp_roots_fn)(void *user, json_t **result_out);

/* Progress of a call: `progress`, `total` (< 0 when unknown), `message`
 * (may be NULL). */
typedef void (*mcp_progress_fn)(void *user, double progress, double total,
                                const char *message);

/* A log message from the server (notifications/message): level, logger
 * (may be NULL) and data (borrowed). */
typedef void (*mcp_server_log_fn)(void *user, const char *level, const char *logger,
                                  const json_t *data);

/* A line the stdio server wrote to its stderr (without the newline). */
typedef void (*mcp_stderr_fn)(void *user, const char *line);

/* Which way a traced message went. */
typedef enum mcp_trace_direction {
    MCP_TRACE_SENT = 0,    /* from the client to the server */
    MCP_TRACE_RECEIVED = 1 /* from the server to the client */
} mcp_trace_direction_t;

/*
 * Sees every message on the wire, for debugging (`mcp --verbose` prints
 * them). `text` (NUL-terminated, `len` bytes, valid only during the call)
 * is one JSON-RPC message: over stdio the line as written or read, without
 * its newline; over HTTP the body of a POST, or a message of the reply (the
 * JSON document or one event of its stream, as compact JSON). An HTTP reply
 * that carries no JSON-RPC message is described instead, e.g.
 * "HTTP 404 (text/html): <the start of the body>". Messages are traced
 * before they are written and as soon as they are read, so the order seen
 * is the order on the wire for each direction. Called on the thread that
 * sends or reads, possibly on several threads at once: return quickly and
 * do not call the client.
 */
typedef void (*mcp_trace_fn)(void *user, mcp_trace_direction_t direction, const char *text,
                             size_t len);

/* ------------------------------------------------------------------------
 * Creating a client
 * ------------------------------------------------------------------------ */

typedef enum mcp_client_era {
    MCP_CLIENT_ERA_AUTO = 0, /* probe with server/discover; legacy only if the server is */
    MCP_CLIENT_ERA_MODERN,   /* 2026-07-28 only; a legacy server is an error */
    MCP_CLIENT_ERA_LEGACY    /* skip the probe: initialize handshake */
} mcp_client_era_t;

/*
 * How the era of a connection was decided (mcp_client_verdict()), and what
 * a later client may be given to skip the probe (options.previous_verdict).
 *
 *   kind      MCP_VERDICT_MODERN, MCP_VERDICT_LEGACY or
 *             MCP_VERDICT_RECONNECT_LEGACY (stdio: the server exited during
 *             the probe, or after it but before it answered initialize,
 *             and was restarted for the initialize handshake).
 *             A MODERN_RETRY verdict ends as MODERN; the others fail the
 *             connect and are never pinned.
 *   probed    the probe ran (false: the era option or a previous verdict
 *             decided).
 *   http_sse  legacy over HTTP fell back to the HTTP+SSE transport
 *             (2024-11-05): the Streamable HTTP endpoint answered
 *             initialize with 400, 404 or 405 and no JSON-RPC response.
 *   reason    a static English phrase: why the probe decided so ("JSON-RPC
 *             -32601", "timeout", "HTTP 400", "era option", ...).
 */
typedef struct mcp_client_verdict {
    mcp_verdict_kind_t kind;
    bool probed;
    bool http_sse;
    const char *reason;
} mcp_client_verdict_t;

/* Elicitation modes the elicit callback handles (bit mask). */
enum { MCP_ELICIT_FORM = 1u << 0, MCP_ELICIT_URL = 1u << 1 };

typedef struct mcp_client_options {
    /* clientInfo: name and version are required. */
    const char *name;
    const char *version;
    const char *title;

    mcp_client_era_t era;
    /* The verdict of an earlier connection to the same server
     * (mcp_client_verdict()), copied: in the auto era the client acts on it
     * without probing (MODERN: server/discover; LEGACY or RECONNECT_LEGACY:
     * initialize, over HTTP+SSE when http_sse). A verdict that no longer
     * fits the server (its era's first request is answered with an error,
     * or a body of the other era) is followed by a probe, as the protocol
     * asks, and logged; mcp_client_verdict() then tells the new verdict,
     * which is worth saving in place of the old. An HTTP+SSE verdict is not
     * probed again (that transport has no probe): it fails the connect.
     * NULL: probe. Ignored unless era is AUTO. */
    const mcp_client_verdict_t *previous_verdict;
    /* The modern protocol version to prefer (NULL: the newest this SDK
     * speaks). */
    const char *protocol_version;
    /* The legacy protocol version initialize asks for (NULL: 2025-11-25).
     * The server may answer another legacy version this SDK speaks, which
     * the client then uses; any other answer fails the connect. */
    const char *legacy_protocol_version;
    /* Default per-request timeout in ms (0 picks 60000; < 0: none). */
    int64_t timeout_ms;
    /* Maximum input_required rounds for one call (0 picks 8). */
    int max_input_rounds;
    /* How long (µs) a thread that sent a request waits actively for its
     * answer before sleeping; 0 picks 50, < 0 never, at most 10000. A local
     * server often answers within microseconds, and waking a sleeping
     * thread costs tens of them on a VM. The price is at most spin_us of
     * CPU time per request; the wait yields the CPU to any thread that is
     * ready to run, and is off when the process may use only one CPU. */
    int spin_us;
    /* Reuse cacheable results while fresh (ttlMs). On by default. The
     * cache is this client's own. Results the server marked "private" are
     * reused only within the authorization context they were fetched in:
     * the same client and the same token. When the token callback answers
     * with a different token (after a 401/403, a step-up to a wider scope
     * included), a new context begins and the private results of the old
     * one are dropped; a result whose token changed while it was on the
     * wire is not kept. Public results are reused across tokens. */
    bool disable_cache;
    /* Declare the Tasks extension (io.modelcontextprotocol/tasks) in the
     * capabilities of every modern request: the server may then answer
     * tools/call with a task instead of its result (see "Tasks" below).
     * Legacy connections never declare it. */
    bool tasks;
    /* Other extensions to declare (modern requests only): JSON text of an
     * object {"<extension id>": {<settings>}, ...}, each value an object
     * ({} for no settings), e.g. "{\"io.modelcontextprotocol/oauth-client-
     * credentials\":{}}". NULL: none. Declaring an extension promises the
     * server that the application handles what it adds. */
    const char *extensions;
    /* The resultType values that those extensions add, which the
     * application interprets itself: a NULL-terminated list, copied by
     * mcp_client_new(). A result of one of them is returned as it came
     * (never cached); a value that is neither one of them nor core
     * ("complete", "input_required", and "task" with `tasks`) fails the
     * call with MCP_EPROTO, as the protocol requires. NULL: none. */
    const char *const *extension_result_types;
    /* Ask servers for log messages at or above this level ("debug" ...
     * "emergency"), delivered to on_log. NULL: no logs. */
    const char *log_level;

    /* Input callbacks (each enables the matching capability). */
    mcp_elicit_fn elicit;
    unsigned elicit_modes;   /* MCP_ELICIT_FORM | MCP_ELICIT_URL; 0 means FORM */
    void *elicit_user;
    mcp_sample_fn sample;
    bool sample_tools;       /* the sample callback handles tools/toolChoice */
    void *sample_user;
    mcp_roots_fn roots;
    void *roots_user;

    /* Notifications. */
    mcp_server_log_fn on_log;
    void *on_log_user;
    /* The connection ended by itself after a successful connect (stdio:
     * the server exited and was not restarted; HTTP+SSE: the event stream
     * ended); `why` says how. Calls fail from then on: free the client and
     * connect a new one. Called once, on the thread that read the
     * connection (or, when it ended as connect finished, on connect's),
     * so mcp_client_free() must not be called from it. Not called for
     * mcp_client_free() itself, nor for Streamable HTTP, which has no
     * connection to lose: its calls fail instead. */
    void (*on_closed)(void *user, int rc, const char *why);
    void *on_closed_user;

    /* Library diagnostics (NULL: none). */
    mcp_log_fn log;
    void *log_user;

    /* Every message on the wire (NULL: none); see mcp_trace_fn. */
    mcp_trace_fn trace;
    void *trace_user;
} mcp_client_options_t;

/* Creates a client (not connected). `opts` is copied. NULL with *err on a
 * missing name/version or bad option. */
MCP_API mcp_client_t *mcp_client_new(const mcp_client_options_t *opts, mcp_error_t *err);

/* Closes the subscriptions still open (their handles become invalid),
 * closes the connection (stdio: close the server's stdin, wait, then
 * SIGTERM, then SIGKILL), fails calls in flight with MCP_ECLOSED, and frees
 * the client. NULL-safe. */
MCP_API void mcp_client_free(mcp_client_t *client);

/* ------------------------------------------------------------------------
 * Connecting
 * ------------------------------------------------------------------------ */

typedef struct mcp_stdio_target {
    /* argv[0] is the program (looked up on PATH); NULL-terminated. */
    const char *const *argv;
    /* Extra environment "KEY=VALUE" entries added to the client's own
     * environment (NULL-terminated), or NULL. */
    const char *const *env;
    const char *cwd;            /* working directory, or NULL */
    mcp_stderr_fn on_stderr;    /* the server's stderr lines; NULL: discarded */
    void *stderr_user;
    /* auto era: how long to wait for the server/discover probe before
     * deciding the server is legacy (0 picks 5000 ms). A legacy server may
     * ignore the unknown method instead of answering -32601, so silence
     * is legacy evidence on stdio; the default is long enough for an
     * interpreter-based server (node, python, npx) to start on a loaded
     * machine, and short enough that such a silent server costs a few
     * seconds once -- pass the verdict to later clients to skip it. */
    int64_t probe_timeout_ms;
    /* Restart the server if it exits unexpectedly. Calls in flight fail
     * with MCP_ECLOSED, and so do calls made before the new process runs.
     * Modern: the listen streams are re-opened. Legacy: the new process is
     * initialized again, told the log level, and subscribed again to the
     * resources of the open subscriptions; calls made meanwhile wait for
     * its handshake. */
    bool restart;
    /* How long one message may wait for the server to read its stdin (0
     * picks 30000 ms; negative is MCP_EINVAL). A request waits at most
     * its call's timeout, if that is shorter, counting the wait for
     * another message still being written. A message not written whole
     * in time counts as not sent: a request's call fails with
     * MCP_ETIMEDOUT. When part of its line had gone out, the client ends
     * that line, before its next message, with a control byte (0x01) that
     * no JSON parser accepts: the server rejects the line instead of
     * running a request whose caller was told it failed, and every later
     * message still arrives whole. */
    int64_t write_timeout_ms;
    /* Start the server in a process group of its own. Signals sent to the
     * application's group, such as a terminal's Ctrl-C (SIGINT to the
     * foreground group), then reach the application only, which can cancel
     * the calls in flight and stop the server in order (mcp_client_free:
     * its stdin closed, then SIGTERM and SIGKILL to its group) instead of
     * the server dying first. Once the server has exited, by itself or
     * not, what is left of its group (a wrapper shell's background job,
     * what npx started) gets SIGTERM. The application takes over what the
     * terminal did: it must stop the server on every way out, and one that
     * must exit at once calls mcp_stdio_servers_kill() first; otherwise a
     * server that ignores the end of its stdin outlives it. */
    bool own_process_group;
} mcp_stdio_target_t;

/*
 * Starts the server process and connects (probing the era unless the era
 * option says otherwise). The probe's verdict: a DiscoverResult is modern;
 * a JSON-RPC error (other than the modern -32020/-32021/-32022) or no
 * answer within probe_timeout_ms is legacy, and the same process is sent
 * initialize; a server that exits during the probe, or after it before
 * answering initialize, is started again (once) and sent initialize
 * (RECONNECT_LEGACY). What the server wrote to stderr
 * during the probe ends up in the error message when connecting fails.
 * Errors: MCP_EINVAL (a NULL client or target, no argv[0]), MCP_ESTATE (the
 * client is already connected), MCP_EIO (cannot start), MCP_ECLOSED (it
 * exited), MCP_EPROTO, MCP_ETIMEDOUT, MCP_ERPC, MCP_EUNSUPPORTED (no common
 * version; or the era option is modern and the server is legacy).
 */
MCP_API int mcp_client_connect_stdio(mcp_client_t *client, const mcp_stdio_target_t *target,
                                     mcp_error_t *err);

/*
 * Kills (SIGKILL) the process group of every stdio server of the process
 * started with own_process_group that has not been stopped yet, whatever
 * client started it: for an application about to exit without freeing its
 * clients (a second Ctrl-C), so that none of its servers outlives it.
 * The clients are not freed; a client used afterwards finds its server
 * dead. Thread-safe, may run while those clients are in use; not
 * async-signal-safe (call it from a thread that waits for signals, as
 * sigwait() does, not from a signal handler).
 */
MCP_API void mcp_stdio_servers_kill(void);

/* Supplies a bearer token for a request to `url`; return a malloc'd token
 * in *token_out (or NULL for none) and 0. `challenge` is the server's
 * WWW-Authenticate value after a 401/403, NULL before the first request.
 * The client asks before its first request and keeps the answer until a
 * 401/403; it then asks again, with that challenge, and sends the refused
 * request once more with the new answer (a second refusal fails the
 * request with MCP_EAUTH). A negative return fails the request with it.
 * Called on the thread making the call, possibly on several threads at
 * once; it may block (say, for a login) but must not call the client.
 * mcp_oauth_token (mcp/oauth.h) is one. */
typedef int (*mcp_token_fn)(void *user, const char *url, const char *challenge,
                            char **token_out);

/* Proves possession of the key a token is bound to (DPoP, RFC 9449), for
 * one request carrying `token` (the token callback's answer): `method` is
 * the request's ("POST", "GET", "DELETE"), `url` the target's URL, `nonce`
 * the last DPoP-Nonce the server sent (NULL: none yet). Return 0 with a
 * malloc'd proof in *proof_out: the request then carries "Authorization:
 * DPoP <token>" and "DPoP: <proof>"; or 0 with NULL for a bearer token
 * ("Authorization: Bearer <token>"). A negative return fails the request
 * with it. Called with token_user before every request that carries a
 * token, on the calling thread, possibly on several threads at once (and,
 * for a request redirected with 307 or 308, on the client's HTTP thread,
 * with the URL it is redirected to: it must not block there). A 401
 * that brings a DPoP-Nonce is answered once more than other refusals (the
 * token callback is asked again with its challenge; the new proof carries
 * the nonce). mcp_oauth_proof (mcp/oauth.h) is one. */
typedef int (*mcp_token_proof_fn)(void *user, const char *method, const char *url,
                                  const char *token, const char *nonce, char **proof_out);

typedef struct mcp_http_target {
    const char *url;                 /* the MCP endpoint, http:// or https:// */
    const char *const *headers;      /* extra "Name: value" headers, NULL-terminated */
    const char *bearer_token;        /* sent as Authorization: Bearer ... */
    mcp_token_fn token;              /* or: asked for a token (takes precedence) */
    mcp_token_proof_fn token_proof;  /* with `token`: DPoP proofs, or NULL */
    void *token_user;
    int64_t connect_timeout_ms;      /* 0 picks 10000 */
    bool insecure;                   /* skip TLS certificate verification */
    const char *ca_file;             /* PEM bundle to verify against, or NULL */
} mcp_http_target_t;

/*
 * Connects to a Streamable HTTP endpoint (probing the era unless the era
 * option says otherwise). The probe's verdicts: a DiscoverResult is
 * modern (a -32022 naming a mutual version is retried with it); 400, 404
 * or 405 without a modern error, and -32601 at any status, are legacy: the
 * client sends initialize over Streamable HTTP and, when that is answered
 * 400, 404 or 405 without a JSON-RPC answer, falls back to HTTP+SSE
 * (2024-11-05). A JSON-RPC error in answer to initialize is the server's
 * word, whatever the status: the connect fails with MCP_ERPC and that
 * error in *err (code, message, data), and no HTTP+SSE is tried (a server
 * that speaks only 2026-07-28 answers -32601, or -32022 naming its
 * versions in data.supported). 401/403 fail with MCP_EAUTH unless a
 * token callback is set, which is asked again with the challenge before
 * one more probe. 408, 429, 5xx and network errors are retried (three
 * attempts, with backoff) and then fail: they are never taken for legacy.
 * Redirects: a request answered 307 or 308 goes again, unchanged, where
 * the Location header points, at most five times, but only within the
 * target's origin (scheme, host and port): its token, proofs and headers
 * are for that origin alone. Every request is sent to `url` first and
 * redirected anew (a server that redirects /mcp to /mcp/ costs a round
 * trip per request; the client logs the new URL once, at info level).
 * Other redirects (301, 302, 303, or one that leaves the origin) fail the
 * request with MCP_EIO, and the message names where they point.
 * Errors: MCP_EINVAL (a NULL client or target, or a target that is not
 * one: not an http(s) URL, malformed headers, ...), MCP_ESTATE (the client
 * is already connected), MCP_EIO, MCP_EAUTH (401/403), MCP_EPROTO,
 * MCP_ETIMEDOUT, MCP_ERPC, MCP_EUNSUPPORTED (as for stdio; or libcurl
 * cannot be loaded).
 */
MCP_API int mcp_client_connect_http(mcp_client_t *client, const mcp_http_target_t *target,
                                    mcp_error_t *err);

/* ------------------------------------------------------------------------
 * What the server is
 * ------------------------------------------------------------------------ */

/* The era in use after connecting (MCP_ERA_UNKNOWN before). */
MCP_API mcp_era_t mcp_client_era(const mcp_client_t *client);

/* How the era was decided: fills *out (its reason is static storage) and
 * returns MCP_OK, or MCP_ESTATE before a successful connect. Keep a copy
 * to give later clients of the same server as options.previous_verdict. */
MCP_API int mcp_client_verdict(const mcp_client_t *client, mcp_client_verdict_t *out);

/* The protocol version in use ("2026-07-28", "2025-11-25", ...), or NULL
 * before a connect decided the era. The string is static storage: it is
 * never freed and stays valid after the client is freed. */
MCP_API const char *mcp_client_protocol_version(const mcp_client_t *client);

/* The server's Implementation (borrowed), or NULL when unknown. Valid
 * until the client is freed, or until a legacy server initialized again --
 * after an HTTP 404, or a stdio restart -- describes itself differently:
 * the old object is then freed. That may happen during any call, or on a
 * client thread after a restart, so on a legacy connection do not hold it
 * while other threads may make calls: copy what you need. */
MCP_API const json_t *mcp_client_server_info(const mcp_client_t *client);

/* The server's capabilities (borrowed), or NULL. Valid as the server info
 * is: a legacy server initialized again with different capabilities
 * replaces them and frees the old object. */
MCP_API const json_t *mcp_client_server_capabilities(const mcp_client_t *client);

/* The server's instructions (borrowed), or NULL. Valid as the server info
 * is: a legacy server initialized again with different instructions
 * replaces them and frees the old string. */
MCP_API const char *mcp_client_instructions(const mcp_client_t *client);

/* ------------------------------------------------------------------------
 * Calls
 * ------------------------------------------------------------------------ */

/* Cancels calls from another thread: pass it in mcp_request_options_t,
 * trigger it to cancel (stdio: notifications/cancelled; HTTP: the stream
 * is closed). Triggering cancels every call it was given. A cancel stays
 * triggered (there is no reset): a call given one already triggered sends
 * no request and fails with MCP_ECANCELED, unless the cache answers it.
 * Use a new one for each operation.
 *
 * mcp_cancel_new() returns NULL when out of memory. mcp_cancel_trigger()
 * and mcp_cancel_triggered() are thread-safe and NULL-safe (a NULL cancel
 * is never triggered). mcp_cancel_free() is NULL-safe; call it only once
 * every call given the cancel has returned. */
typedef struct mcp_cancel mcp_cancel_t;
MCP_API mcp_cancel_t *mcp_cancel_new(void);
MCP_API void mcp_cancel_trigger(mcp_cancel_t *cancel);
MCP_API bool mcp_cancel_triggered(const mcp_cancel_t *cancel);
MCP_API void mcp_cancel_free(mcp_cancel_t *cancel);

/* Per-call options; pass NULL for the defaults. */
typedef struct mcp_request_options {
    /* 0: the client's default; < 0: none. Applies to each request on the
     * wire: the time a user spends answering an input request between
     * input_required rounds is not counted. */
    int64_t timeout_ms;
    mcp_progress_fn progress;   /* receive progress notifications */
    void *progress_user;
    mcp_cancel_t *cancel;       /* cancel from another thread */
    bool bypass_cache;          /* always ask the server */
    /* tools/call on a client with the option `tasks`: when the server
     * answers with a task, return its CreateTaskResult instead of following
     * the task, for an application that manages tasks itself (see
     * mcp_client_task_get() and its neighbours). */
    bool keep_task;
} mcp_request_options_t;

/* server/discover: the DiscoverResult. */
MCP_API int mcp_client_discover(mcp_client_t *client, const mcp_request_options_t *opts,
                                json_t **result_out, mcp_error_t *err);

/* One page of tools/list after `cursor` (NULL: first page): the
 * ListToolsResult (tools, nextCursor?). Tools whose x-mcp-header
 * annotations are invalid are dropped (and logged). */
MCP_API int mcp_client_list_tools(mcp_client_t *client, const char *cursor,
                                  const mcp_request_options_t *opts, json_t **result_out,
                                  mcp_error_t *err);

/* All pages of tools/list: an array of Tool objects in *tools_out.
 * Like every *_all function: a server that repeats a cursor fails it with
 * MCP_EPROTO, one still paging after 10,000 pages with MCP_ELIMIT. A page
 * asked for with a cursor that the server refuses with -32602 (its
 * cursors changed, say, while a cached page still named an old one) drops
 * the method's cached pages, and the walk starts again from the first
 * page, asking the server for every page; a second such refusal fails
 * the call with MCP_ERPC. */
MCP_API int mcp_client_list_tools_all(mcp_client_t *client, const mcp_request_options_t *opts,
                                      json_t **tools_out, mcp_error_t *err);

/* resources/list, one page / all pages (array of Resource). */
MCP_API int mcp_client_list_resources(mcp_client_t *client, const char *cursor,
                                      const mcp_request_options_t *opts, json_t **result_out,
                                      mcp_error_t *err);
MCP_API int mcp_client_list_resources_all(mcp_client_t *client,
                                          const mcp_request_options_t *opts,
                                          json_t **resources_out, mcp_error_t *err);

/* resources/templates/list, one page / all pages (array of ResourceTemplate). */
MCP_API int mcp_client_list_resource_templates(mcp_client_t *client, const char *cursor,
                                               const mcp_request_options_t *opts,
                                               json_t **result_out, mcp_error_t *err);
MCP_API int mcp_client_list_resource_templates_all(mcp_client_t *client,
                                                   const mcp_request_options_t *opts,
                                                   json_t **templates_out, mcp_error_t *err);

/* prompts/list, one page / all pages (array of Prompt). */
MCP_API int mcp_client_list_prompts(mcp_client_t *client, const char *cursor,
                                    const mcp_request_options_t *opts, json_t **result_out,
                                    mcp_error_t *err);
MCP_API int mcp_client_list_prompts_all(mcp_client_t *client, const mcp_request_options_t *opts,
                                        json_t **prompts_out, mcp_error_t *err);

/* tools/call with `arguments` (borrowed object, or NULL): the
 * CallToolResult. A result with isError true is a success of the call
 * (return 0): the tool reported a failure. A task the server made of the
 * call is followed to its end unless opts->keep_task (see "Tasks"). */
MCP_API int mcp_client_call_tool(mcp_client_t *client, const char *name,
                                 const json_t *arguments, const mcp_request_options_t *opts,
                                 json_t **result_out, mcp_error_t *err);

/* resources/read: the ReadResourceResult. */
MCP_API int mcp_client_read_resource(mcp_client_t *client, const char *uri,
                                     const mcp_request_options_t *opts, json_t **result_out,
                                     mcp_error_t *err);

/* prompts/get with string `arguments` (borrowed, or NULL): the
 * GetPromptResult. */
MCP_API int mcp_client_get_prompt(mcp_client_t *client, const char *name,
                                  const json_t *arguments, const mcp_request_options_t *opts,
                                  json_t **result_out, mcp_error_t *err);

/* completion/complete for `ref` ({"type":"ref/prompt","name":...} or
 * {"type":"ref/resource","uri":...}, borrowed), argument name and partial
 * value, optional context arguments (borrowed or NULL): the CompleteResult. */
MCP_API int mcp_client_complete(mcp_client_t *client, const json_t *ref, const char *argument,
                                const char *value, const json_t *context,
                                const mcp_request_options_t *opts, json_t **result_out,
                                mcp_error_t *err);

/*
 * Checks that the server is there and answering. Legacy: the ping request.
 * 2026-07-28 has no ping, so on a modern connection it is a server/discover
 * round trip that bypasses the cache. opts may be NULL.
 */
MCP_API int mcp_client_ping(mcp_client_t *client, const mcp_request_options_t *opts,
                            mcp_error_t *err);

/*
 * Asks the server for log messages at or above `level` ("debug", "info",
 * "notice", "warning", "error", "critical", "alert", "emergency"),
 * delivered to on_log; NULL stops asking. Modern: every later request
 * carries the level in its _meta (the option log_level set the first
 * one). Legacy: logging/setLevel is sent (a NULL level sends nothing: the
 * legacy protocol has no way to turn logs off), and the level is kept for
 * a re-initialized session. Errors: MCP_EINVAL (unknown level), and those
 * of a call.
 */
MCP_API int mcp_client_set_log_level(mcp_client_t *client, const char *level, mcp_error_t *err);

/* Any request by method name; params_new (stolen, may be NULL) without
 * _meta (the client adds it). For methods this header has no function for. */
MCP_API int mcp_client_request(mcp_client_t *client, const char *method, json_t *params_new,
                               const mcp_request_options_t *opts, json_t **result_out,
                               mcp_error_t *err);

/* ------------------------------------------------------------------------
 * Tasks (the extension io.modelcontextprotocol/tasks, SEP-2663)
 *
 * A client created with the option `tasks` declares the extension on every
 * modern request, and a server may then answer tools/call with a
 * CreateTaskResult ({"resultType":"task", "taskId", "status", "createdAt",
 * "lastUpdatedAt", "ttlMs", "pollIntervalMs"?, "statusMessage"?}): the
 * tool runs on, and the client asks for its outcome with tasks/get.
 *
 * mcp_client_call_tool() follows such a task to its end, so that its
 * caller sees what a direct call would give:
 *   - it polls tasks/get, waiting pollIntervalMs between polls (the latest
 *     value the server gave, however long: the extension asks clients to
 *     honour it; 1000 ms when it gives none; at least 10 ms, and at most
 *     a day, a bound only for values no server means); meanwhile it
 *     listens for the task
 *     (subscriptions/listen with taskIds: one subscription names every
 *     task the client follows at the time, whichever calls follow them),
 *     and a notifications/tasks ends the wait at once. A server that
 *     refuses the subscription is polled alone;
 *   - status "input_required": each input request is answered through the
 *     elicit, sample and roots callbacks, exactly as an input_required
 *     round is, and the answers are sent with tasks/update. A key is
 *     answered once: the polls that still show it before the server took
 *     the answer do not ask again. More than max_input_rounds updates fail
 *     the call with MCP_ELIMIT;
 *   - "completed": *result_out is the task's result, the CallToolResult;
 *   - "failed": MCP_ERPC, with err holding the task's JSON-RPC error;
 *   - "cancelled" (by the server): MCP_ECANCELED.
 * Triggering opts->cancel while the task runs sends tasks/cancel and fails
 * the call with MCP_ECANCELED. opts->timeout_ms bounds each request on the
 * wire, not the task, which may run for as long as the server lets it.
 * When the client gives up on a task for any other reason (a failed poll,
 * a callback that declined, an invalid answer) it sends tasks/cancel too:
 * no one else knows the task's id. A task, or a task's state, that does
 * not have the shape the extension gives it fails the call with
 * MCP_EPROTO, as does resultType "task" on a request that did not declare
 * the extension, or to any method but tools/call.
 *
 * A legacy (2025-11-25) server has experimental tasks of its own, which
 * the caller asks for: with the option `tasks`, a tools/call of a tool
 * the server listed with execution.taskSupport "optional" or "required"
 * is sent as a task when the server declares tasks for tools/call
 * (tools/list is fetched first when the tool is new to the client). It
 * is followed the same way (tasks/get polls, then tasks/result, during
 * which the server's questions reach the callbacks as its requests), the
 * caller's cancel sends tasks/cancel, and the caller sees what a direct
 * call gives. keep_task does not apply there, nor do the functions below.
 *
 * With opts->keep_task the CreateTaskResult itself is the result of
 * mcp_client_call_tool(), and the functions below manage the task. They
 * need the option `tasks` (MCP_ESTATE without it) and a modern connection
 * (MCP_EUNSUPPORTED on a legacy one); their other errors are those of a
 * call (MCP_ERPC: -32602 for a task the server does not know). Like every
 * call they may be made from several threads at once. `task_id` is
 * borrowed; a NULL client or task_id is MCP_EINVAL.
 * ------------------------------------------------------------------------ */

/* tasks/get: the task's state (a GetTaskResult: the task, with
 * "inputRequests" while its status is "input_required", "result" once
 * "completed", "error" once "failed") in *result_out (new reference). A
 * state of another task, or with a member of its status missing, is
 * MCP_EPROTO. A task that failed is a success of this call: its state
 * says how it ended. */
MCP_API int mcp_client_task_get(mcp_client_t *client, const char *task_id,
                                const mcp_request_options_t *opts, json_t **result_out,
                                mcp_error_t *err);

/* tasks/update: answers input requests of the task. `input_responses`
 * (borrowed) is an object mapping keys of the task's inputRequests to
 * their answers (an ElicitResult, CreateMessageResult or ListRootsResult).
 * The server's acknowledgement is not a promise that the task took the
 * answers yet: poll with mcp_client_task_get(). */
MCP_API int mcp_client_task_update(mcp_client_t *client, const char *task_id,
                                   const json_t *input_responses,
                                   const mcp_request_options_t *opts, mcp_error_t *err);

/* tasks/cancel: asks the server to cancel the task. Cancelling is
 * cooperative: the task may still end otherwise (tasks/get tells). */
MCP_API int mcp_client_task_cancel(mcp_client_t *client, const char *task_id,
                                   const mcp_request_options_t *opts, mcp_error_t *err);

/* Follows a task known by its id (kept with opts->keep_task, or by an
 * earlier process) to its end, as mcp_client_call_tool() follows the
 * tasks it makes: the first tasks/get goes out at once, input requests
 * are answered through the callbacks and sent with tasks/update, and
 * *result_out (new reference) is the CallToolResult of a task that
 * completed; "failed" is MCP_ERPC and "cancelled" MCP_ECANCELED.
 * Giving up does not cancel the task, since the caller knows its id:
 * triggering opts->cancel, or any failure, only ends the wait (send
 * mcp_client_task_cancel() to stop the task). opts->timeout_ms bounds
 * each request on the wire, not the task. */
MCP_API int mcp_client_task_follow(mcp_client_t *client, const char *task_id,
                                   const mcp_request_options_t *opts, json_t **result_out,
                                   mcp_error_t *err);

/* ------------------------------------------------------------------------
 * Skills (the extension io.modelcontextprotocol/skills, SEP-2640)
 *
 * A server that declares the extension serves skills: directories of
 * files, each with a SKILL.md that opens with YAML frontmatter (name,
 * description, ...), read through resources/read under skill:// URIs. Its
 * skills/list and skills/get answer with skill entries:
 *
 *   {"uri": "skill://pdf-processing/SKILL.md",
 *    "frontmatter": {"name": "pdf-processing", "description": "..."},
 *    "resources": [{"uri": "skill://pdf-processing/SKILL.md",
 *                   "digest": "sha256:<64 lowercase hex>", "size": 1234},
 *                  {"uri": "skill://pdf-processing/references/FORMS.md", ...}]}
 *
 * ("resources" may instead be the string "dynamic": the server publishes
 * no manifest for that skill). The entry is the host's promise of what the
 * files hold, so that a host can load a skill the user approved without
 * trusting the bytes that arrive later:
 *   - nothing of a skill is fetched before it is needed: listing fetches
 *     no file, and a host fetches a file only when it loads the skill (or
 *     the model asks for that file);
 *   - every file fetched is checked against its manifest entry: its size,
 *     then its SHA-256 digest; content that fails is never handed out;
 *   - a SKILL.md's frontmatter is parsed and compared field by field with
 *     the entry's frontmatter: any difference refuses the skill.
 * mcp_client_read_skill_file() does the checking; a host uses nothing it
 * did not return.
 *
 * These functions need a modern connection (MCP_EUNSUPPORTED on a legacy
 * one). A result or entry without the extension's shape is MCP_EPROTO,
 * as are content that fails verification and a SKILL.md whose frontmatter
 * differs from the entry's; the message says which file and what. Other
 * errors are those of a call (MCP_ERPC: -32601 when the server serves no
 * skills, -32602 for a skill it does not know). Thread-safe like every
 * call; arguments are borrowed; a NULL client, uri or skill is MCP_EINVAL.
 * ------------------------------------------------------------------------ */

/* One page of skills/list after `cursor` (NULL: the first page): the
 * ListSkillsResult ({"skills": [entry...], "nextCursor"?}) in *result_out
 * (new reference). Every entry has been checked: a uri
 * "<scheme>://.../SKILL.md", a frontmatter object with a string name that
 * is a valid skill name (1-64 lowercase letters, digits and single
 * hyphens, not at either end) and a non-empty string description, the
 * uri's last path segment before "/SKILL.md" equal to that name, and
 * resources either "dynamic" or an array of {uri, digest "sha256:<64
 * lowercase hex>", size >= 0} that lists the SKILL.md itself, names each
 * file once, and holds only files under the skill's directory (no empty,
 * "." or ".." path segment). One bad entry fails the page (MCP_EPROTO). */
MCP_API int mcp_client_list_skills(mcp_client_t *client, const char *cursor,
                                   const mcp_request_options_t *opts, json_t **result_out,
                                   mcp_error_t *err);

/* Every page of skills/list: an array of skill entries in *skills_out. */
MCP_API int mcp_client_list_skills_all(mcp_client_t *client, const mcp_request_options_t *opts,
                                       json_t **skills_out, mcp_error_t *err);

/* skills/get: the entry of the skill whose SKILL.md is `uri`, checked as
 * by mcp_client_list_skills(), in *skill_out (new reference; the entry
 * itself, not the GetSkillResult around it). An entry for another uri is
 * MCP_EPROTO. */
MCP_API int mcp_client_get_skill(mcp_client_t *client, const char *uri,
                                 const mcp_request_options_t *opts, json_t **skill_out,
                                 mcp_error_t *err);

/* resources/directory/read (servers whose skills settings say
 * "directoryRead": true): one page, after `cursor` (NULL: the first), of
 * the direct children of the directory `uri` (e.g. "skill://pdf-processing"
 * or "skill://pdf-processing/references"), in *result_out (new reference):
 * {"resources": [Resource...], "nextCursor"?}, subdirectories with mimeType
 * "inode/directory". This is how a host finds the files of a skill whose
 * resources are "dynamic"; what it then reads is unverified. A result
 * without a resources array of objects with a string uri is MCP_EPROTO;
 * -32602 (MCP_ERPC) for a uri that is not a directory. */
MCP_API int mcp_client_read_directory(mcp_client_t *client, const char *uri, const char *cursor,
                                      const mcp_request_options_t *opts, json_t **result_out,
                                      mcp_error_t *err);

/*
 * Fetches one file of a skill with resources/read and verifies it against
 * `skill`, an entry from mcp_client_list_skills() or
 * mcp_client_get_skill() (MCP_EINVAL when it is not a valid entry):
 * `file_uri` must be listed in its resources, compared as exact strings
 * (MCP_ENOTFOUND otherwise, before anything is sent). The server's answer
 * must be one content for that uri, and its bytes (a text content's
 * UTF-8, or a blob's decoded base64) must have the listed size, then the
 * listed digest. For the skill's SKILL.md (its uri), the frontmatter is
 * parsed and must equal the entry's. On success *content_out holds the
 * verified bytes, NUL-terminated, with their length in *len_out; free
 * them with free(). On any failure nothing is returned. A copy from the
 * client's cache that fails is fetched once more from the server, which
 * may have changed the skill since the copy was kept (the entry being
 * newer). MCP_EUNSUPPORTED also when SHA-256 (Nettle) or the YAML reader
 * (libyaml) cannot be loaded.
 *
 * A skill whose resources are "dynamic" has no manifest to check against:
 * any file_uri under the skill's directory may be read, its content is
 * returned as it comes (only the SKILL.md frontmatter is still compared),
 * and *verified_out, when not NULL, is false; it is true when size and
 * digest were checked.
 */
MCP_API int mcp_client_read_skill_file(mcp_client_t *client, const json_t *skill,
                                       const char *file_uri, const mcp_request_options_t *opts,
                                       char **content_out, size_t *len_out, bool *verified_out,
                                       mcp_error_t *err);

/* ------------------------------------------------------------------------
 * Subscriptions (subscriptions/listen; resources/subscribe on legacy
 * servers)
 *
 * On a legacy connection there is no listen stream: list_changed
 * notifications arrive on the session anyway, and resource updates after
 * resources/subscribe. mcp_client_listen() then sends resources/subscribe
 * for each URI of the filter, acknowledges at once with the part of the
 * filter the server's capabilities promise (listChanged of tools, prompts
 * and resources; resources.subscribe for the URIs), and delivers the
 * matching notifications to the same callback; closing the subscription
 * sends resources/unsubscribe for the URIs no other open subscription
 * still wants.
 * ------------------------------------------------------------------------ */

typedef struct mcp_listen_filter {
    bool tools_list_changed;
    bool prompts_list_changed;
    bool resources_list_changed;
    const char *const *resource_uris; /* resourceSubscriptions; n_resource_uris entries */
    size_t n_resource_uris;
    /* taskIds (the Tasks extension): the state of each of these tasks as
     * it changes. Needs the client option `tasks` (MCP_ESTATE without it)
     * and a modern connection (MCP_EUNSUPPORTED on a legacy one). */
    const char *const *task_ids;
    size_t n_task_ids;
} mcp_listen_filter_t;

/*
 * A notification of a subscription: `method` is
 * "notifications/tools/list_changed", "notifications/prompts/list_changed",
 * "notifications/resources/list_changed",
 * "notifications/resources/updated" (params.uri names the resource) or
 * "notifications/tasks" (params is the task's state, as tasks/get gives
 * it: the task, with inputRequests, result or error by its status);
 * `params` is borrowed. Called on a client thread.
 */
typedef void (*mcp_listen_fn)(void *user, const char *method, const json_t *params);

typedef struct mcp_subscription mcp_subscription_t;

typedef struct mcp_listen_options {
    /* Re-open the subscription after a broken HTTP stream or a stdio
     * server restart (with backoff). On by default. */
    bool no_reopen;
    /* Called (with the `user` given to mcp_client_listen) when the
     * subscription ends for good: the server closed it gracefully (rc 0), or
     * the stream broke and re-opening failed or was disabled (rc < 0). Not
     * called after mcp_subscription_close(). May be NULL. */
    void (*on_end)(void *user, int rc);
    /* How long to wait for the server's acknowledgement, in ms; 0: the
     * client's timeout (option timeout_ms). */
    int64_t ack_timeout_ms;
} mcp_listen_options_t;

/*
 * Opens a subscription and waits for the server's acknowledgement. On
 * success *sub_out is the subscription and, if `honoured_out` is not NULL,
 * it receives the filter the server will honour (a SubscriptionFilter
 * object, new reference). `opts` may be NULL. Errors: MCP_ERPC (e.g.
 * -32601 when the server supports no subscriptions), MCP_ETIMEDOUT, ...
 */
MCP_API int mcp_client_listen(mcp_client_t *client, const mcp_listen_filter_t *filter,
                              mcp_listen_fn fn, void *user, const mcp_listen_options_t *opts,
                              mcp_subscription_t **sub_out, json_t **honoured_out,
                              mcp_error_t *err);

/*
 * How many events of one subscription may wait for its callback. The
 * callback runs on the subscription's thread, one event at a time; a
 * callback slower than the server's events falls behind, and past this
 * many waiting events the oldest waiting one is dropped for each new one
 * (the newest are what tell the current state). Drops are counted
 * (mcp_subscription_dropped()) and logged: one warning when dropping
 * starts, and an info message with the count once the callback caught
 * up. A callback that sees drops should re-read what it watches, as
 * after a reconnection. The client's cache is updated by every event as
 * it arrives, dropped or not.
 */
#define MCP_LISTEN_MAX_PENDING 1024

/* How many events of `sub` were dropped since it was opened because its
 * callback fell more than MCP_LISTEN_MAX_PENDING events behind. 0 for
 * NULL. Thread-safe, may be called from the callback. */
MCP_API uint64_t mcp_subscription_dropped(mcp_subscription_t *sub);

/* Ends a subscription (HTTP: closes the stream; stdio:
 * notifications/cancelled) and frees it. After it returns the callback is
 * not called again. Call it also after on_end reported the end: the handle
 * stays valid until then. Must not be called from the subscription's own
 * callbacks. NULL-safe. */
MCP_API void mcp_subscription_close(mcp_subscription_t *sub);

#ifdef __cplusplus
}
#endif
#endif /* MCP_CLIENT_H */
