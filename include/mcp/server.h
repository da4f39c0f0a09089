/*
 * libmcp server: registries of tools, resources, prompts and completions,
 * and the handler API.
 *
 * A server is built once, filled with what it offers, then served over one
 * or more transports (mcp_server_run_stdio() here; HTTP in
 * mcp/server_http.h; your own through mcp/server_core.h). The same handler
 * code serves every transport and both protocol eras.
 *
 *     static int echo(mcp_call_t *call, void *user)
 *     {
 *         const char *text = mcp_call_arg_string(call, "text");
 *         if (!text)
 *             return mcp_call_tool_error(call, "text is required");
 *         return mcp_call_add_text(call, text);
 *     }
 *
 *     mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){
 *         .name = "demo", .version = "1.0.0"}, NULL);
 *     mcp_server_add_tool(srv, &(mcp_tool_t){
 *         .name = "echo", .description = "Echo the text back",
 *         .input_schema = "{\"type\":\"object\",\"properties\":"
 *                         "{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}",
 *         .handler = echo}, NULL);
 *     mcp_server_run_stdio(srv, NULL);
 *     mcp_server_free(srv);
 *
 * Threading: handlers run several at once, on the thread that read the
 * request (the stdio reader, an event thread of the built-in HTTP engine)
 * until they block or compute for about a millisecond, then on the
 * server's worker pool (mcp_http_options_t.threads); a slow handler never
 * blocks other requests for longer than that, once. On the libmicrohttpd
 * engine, and for tools that may become tasks, always on the pool.
 * Handlers must be thread-safe either way. Everything in this header may
 * be called from any thread, including adding and removing registry entries
 * while the server is serving (the change is published to listeners as a
 * list_changed event). mcp_call_* functions may only be used on the `call`
 * a handler was given, during that handler's run.
 */
#ifndef MCP_SERVER_H
#define MCP_SERVER_H

#include "mcp/common.h"
#include "mcp/content.h"
#include "mcp/errors.h"
#include "mcp/version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcp_server mcp_server_t;
typedef struct mcp_call mcp_call_t;
typedef struct mcp_codec mcp_codec_t; /* requestState sealing, see mcp/request_state.h */
typedef struct mcp_replay_store mcp_replay_store_t; /* single use, ditto */

/* ------------------------------------------------------------------------
 * Creating a server
 * ------------------------------------------------------------------------ */

/*
 * How a server treats legacy clients (2025-11-25, 2025-06-18, 2025-03-26:
 * those that open with initialize instead of a per-request _meta claim).
 * The era is decided per message: a request carrying the modern claim is
 * served as 2026-07-28 whatever the mode. Over stdio the first message of
 * the process decides its era, and a legacy session is the process.
 * JSON-RPC batches (an array of messages in one POST or line) are served
 * in 2025-03-26 conversations, the one revision that had them: each
 * message as if it came alone, the responses in one array (202 over HTTP
 * when there are none), at most 256 messages. Elsewhere a batch is
 * refused whole with -32600.
 */
typedef enum mcp_legacy_mode {
    /* Serve legacy clients with sessions: initialize mints a random
     * Mcp-Session-Id that later requests must carry (400 without, 404 when
     * unknown or expired); GET opens the session's stream of server
     * messages (resumable with Last-Event-ID); DELETE ends it. */
    MCP_LEGACY_SESSIONS = 0,
    /* Serve each legacy POST on its own, no session minted: for
     * deployments behind a plain load balancer. Without a session the
     * server cannot remember what initialize and logging/setLevel said:
     * requests speak their MCP-Protocol-Version header, handlers may ask
     * for any input (a client that cannot answer refuses), every log
     * message is sent, and list changes and resource updates have no
     * stream to go to. See README, "Legacy clients". */
    MCP_LEGACY_STATELESS = 1,
    /* Modern only: legacy requests are refused with -32022 naming the
     * supported versions. */
    MCP_LEGACY_REJECT = 2
} mcp_legacy_mode_t;

/* For mcp_server_options_t.cache_ttl_ms: results are immediately stale. */
#define MCP_CACHE_TTL_NONE (-1)

typedef struct mcp_server_options {
    /* Identity (Implementation): name and version are required. */
    const char *name;
    const char *version;
    const char *title;       /* optional display name */
    const char *description; /* optional */
    const char *website_url; /* optional */
    const char *icons;       /* optional JSON text: an array of Icon objects */

    /* Natural-language guidance for the model (server/discover, initialize). */
    const char *instructions;
    /* Extensions this server supports beyond those libmcp serves itself,
     * advertised in server/discover's capabilities.extensions: JSON text
     * of an object {"<extension id>": {<settings>}, ...}, each value an
     * object, e.g. "{\"io.modelcontextprotocol/oauth-client-credentials\":
     * {}}" for a server whose authorization server grants client
     * credentials. The Tasks extension is added by itself when a tool may
     * become a task. NULL: none. */
    const char *extensions;

    /* Worker threads kept ready for handlers (those that run on the pool:
     * see run_inline); 0 picks one per CPU but the first (at least one),
     * leaving a CPU to the threads that read requests. When every worker
     * is busy, a request waits up to 5 ms for one to come free; if a
     * worker is then blocked in its handler (sleeping, waiting for I/O),
     * the request gets a thread of its own:
     * the pool grows up to 64 threads, or this number if larger, so a
     * blocked handler delays no other request by more than that; the
     * extra threads exit after 30 s without work. Workers that compute
     * get no extra threads: handlers that spend milliseconds of CPU each,
     * many at once, are served by at most this many CPUs, so set it to
     * the number of CPUs for them (quick handlers run fastest with the
     * default: fewer workers are woken less often). */
    int worker_threads;
    /* How long (µs) a thread of the server with nothing to do waits
     * actively for its next piece of work before it sleeps: one idle
     * worker for the next job, the stdio reader for the next request
     * when it comes back for input and after each answer, and each event
     * thread of the built-in HTTP engine (mcp_http_server_start) that has
     * connections open, for their next request. 0 picks 50, < 0 never, at
     * most 10000. A client sends its next request a few microseconds
     * after an answer, and waking a sleeping thread costs tens of them on
     * a virtual machine: on a 2-vCPU VM, sequential stdio calls went from
     * ~9k to 26-40k a second, HTTP calls over one connection from ~8k to
     * 13-18k, and over 16 connections from ~67k to ~88k
     * (docs/benchmarks.md).
     * The price is at most spin_us of CPU time each time a thread runs out
     * of work; the wait yields the CPU to any thread that is ready to run,
     * and is off when the process may use only one CPU. */
    int spin_us;
    /* Items per page of tools/list, prompts/list, resources/list and
     * resources/templates/list; 0 picks 100. */
    size_t page_size;
    /* Cache hints for cacheable results a handler did not set itself:
     * ttlMs (0 picks 60000; MCP_CACHE_TTL_NONE sends ttlMs 0, "immediately
     * stale") and cacheScope: "private" (also when NULL) or "public";
     * mcp_server_new refuses any other value. */
    int64_t cache_ttl_ms;
    const char *cache_scope;
    /* Do not put _meta["io.modelcontextprotocol/serverInfo"] into results. */
    bool omit_server_info_meta;
    /* How many input_required results one request may get (0 picks 8):
     * the answers to the last one still reach the handler; a handler that
     * asks once more fails the request with -32602. */
    int max_input_rounds;
    /*
     * The keys that seal requestState (formats in mcp/request_state.h):
     * read from state_keys_file, else from the environment variable named
     * state_keys_env; mcp_server_new fails when the one named cannot be
     * read or parsed. With neither, a random key is generated on first use
     * and a warning logged: states then neither survive a restart nor open
     * on another instance. Instances that share keys open each other's
     * states; the newest key of the file seals, all of them open.
     * mcp_server_set_codec replaces all of this with a codec of your own.
     */
    const char *state_keys_file;
    const char *state_keys_env;
    /* Lifetime of a sealed state (0 picks 10 minutes; negative is
     * MCP_EINVAL from mcp_server_new). */
    int64_t state_ttl_ms;
    /* Each state opens at most once. A retry refused for an invalid
     * inputResponse does not spend it (with the built-in codec): the
     * corrected retry may follow. The server remembers the states redeemed
     * in an in-memory replay store (mcp_replay_store_memory_new(0): each
     * principal may hold a tenth of it, and clients without
     * authentication are all one principal), which a restart forgets: so
     * that a state redeemed before it cannot open again, a state opens
     * only in the process that sealed it, even with keys from a file.
     * After a restart, and on another instance behind a load balancer,
     * the client gets -32602 and starts the request over; to span
     * instances and restarts, bring a shared store through
     * mcp_server_set_codec (see mcp/request_state.h, "Replay store"). */
    bool state_single_use;

    /* Tasks (the io.modelcontextprotocol/tasks extension, see
     * mcp_call_start_task): how long a task stays readable after it was
     * created (0 picks one hour; < 0: until the server stops, "ttlMs":
     * null), and the interval between polls suggested to clients (0 picks
     * 500 ms). A task whose time is up is cancelled if still running and
     * forgotten: tasks/get then answers -32602, and so does, at that
     * moment, a legacy tasks/result still waiting for it. */
    int64_t task_ttl_ms;
    int64_t task_poll_interval_ms;
    /* Tasks stored at once (0 picks 10000), and of those, tasks of one
     * principal (0 picks a tenth of max_tasks, at least 1): a task holds
     * its request and outcome until its time to live is over, so no
     * client may pile them up without bound. Beyond either, a call gets
     * no task: a tool that may run without one (MCP_TASKS_OPTIONAL) does,
     * answering the call itself (mcp_call_start_task returns
     * MCP_EUNSUPPORTED); one that may not is refused with -32603 "Server
     * busy: too many tasks" (as is a 2025-11-25 call of such a tool).
     * Clients without authentication cannot be told apart: only
     * max_tasks bounds them. */
    size_t max_tasks;
    size_t max_tasks_per_principal;
    /* subscriptions/listen streams open at once (0 picks 512, half the
     * HTTP server's default connection limit: on HTTP each stream holds
     * a connection, and streams alone must not take them all), and of
     * those, streams of one principal (0 picks a tenth of
     * max_listen_streams, at least 1). Beyond either, a listen request is
     * refused with -32603 "Server busy: too many subscriptions"; it may
     * be tried again once streams have ended. Clients without
     * authentication cannot be told apart: only max_listen_streams
     * bounds them. Legacy sessions' streams are bounded by max_sessions
     * instead. */
    size_t max_listen_streams;
    size_t max_listen_streams_per_principal;

    /* Legacy clients (see mcp_legacy_mode_t); sessions by default. */
    mcp_legacy_mode_t legacy;
    /* A legacy session expires this long after its last request or
     * stream ended (0 picks 30 minutes); while its GET stream is open or
     * a request of it runs, it does not. */
    int64_t session_idle_ms;
    /* Server messages a session keeps for Last-Event-ID resumption of its
     * stream (0 picks 256). */
    size_t session_replay_events;
    /* Legacy HTTP sessions open at once (0 picks 10000). Each holds a few
     * KiB until its client ends it or it expires; an initialize beyond
     * the limit is answered 503 (-32603) instead of opening one more. */
    size_t max_sessions;
    /* How long a legacy client may take to answer a request the server
     * sent it on a handler's behalf (elicitation, sampling, roots); 0 picks
     * 10 minutes. The handler's request fails with -32603 when it passes
     * (and with -32602 when an answer is not a valid result). Whenever the
     * server stops waiting for an answer (this timeout, the request
     * cancelled, the session deleted, the server stopping), it sends the
     * client notifications/cancelled for that request on the stream it
     * went out on, while that stream is open. */
    int64_t legacy_input_timeout_ms;

    /* Where the library's diagnostics go (NULL: nowhere). */
    mcp_log_fn log;
    void *log_user;
} mcp_server_options_t;

/*
 * Creates a server. `opts` is copied (strings included). Returns NULL with
 * *err filled when:
 *   - name or version is missing, or an identity string is not UTF-8;
 *   - icons is not a JSON array, or extensions not a JSON object of objects;
 *   - cache_scope is neither "private" nor "public";
 *   - state_ttl_ms is negative, or the keys named by state_keys_file or
 *     state_keys_env cannot be read or parsed;
 *   - allocation fails.
 * The worker pool starts on first use.
 */
MCP_API mcp_server_t *mcp_server_new(const mcp_server_options_t *opts, mcp_error_t *err);

/*
 * Stops the worker pool (running handlers see mcp_call_cancelled() and are
 * waited for), then frees the server. Every transport serving it must have
 * been stopped first. NULL-safe.
 */
MCP_API void mcp_server_free(mcp_server_t *srv);

/*
 * Replaces the codec that seals requestState for input-required round trips
 * (see mcp/request_state.h). Takes ownership of `codec` (even on failure).
 * Without one, the server creates an AES-256-GCM codec with a random key on
 * first use and logs a warning: such states do not survive a restart and do
 * not open on another instance.
 *
 * Best set before serving. It may also be replaced while serving (to
 * rotate keys, say): a request sealing or opening a state meanwhile
 * finishes with the old codec, which is freed after it; later ones use
 * the new one, so a state the old codec sealed opens only if the new one
 * knows its key (keep the old key in the new keyring for a while) and,
 * with single use, has the same replay store: a codec with a store of
 * its own would not know which states the old one redeemed, so states
 * bound to the old in-memory store are refused. With state_single_use,
 * rotate like this:
 *
 *     mcp_aead_options_t o = {.ttl_ms = ..., .replay_store = mcp_server_replay_store(srv)};
 *     mcp_server_set_codec(srv, mcp_codec_aead_new(ring_with_old_and_new_keys, &o, &err));
 *
 * Returns MCP_OK; MCP_EINVAL for a NULL argument; MCP_ENOMEM.
 */
MCP_API int mcp_server_set_codec(mcp_server_t *srv, mcp_codec_t *codec);

/*
 * A new reference to the replay store of the server's own codec, made
 * with the server when state_single_use is set (NULL otherwise): give it
 * to the codec you replace that one with (mcp_aead_options_t.replay_store)
 * so that single use holds across the change, or drop it with
 * mcp_replay_store_free(). Thread-safe.
 */
MCP_API mcp_replay_store_t *mcp_server_replay_store(mcp_server_t *srv);

/* ------------------------------------------------------------------------
 * Tools
 * ------------------------------------------------------------------------ */

/*
 * A tool handler. Reads its arguments with mcp_call_arg_*(), adds content
 * with mcp_call_add_*(), and returns:
 *   0 (MCP_OK)           the result is complete -- unless the handler
 *                        asked for input, which makes it input_required
 *                        as if it had returned MCP_INPUT_REQUIRED;
 *   MCP_INPUT_REQUIRED   it asked for input with mcp_call_elicit() & co.
 *                        and must run again once the client answers;
 *   a negative MCP_E*    failure: the JSON-RPC error recorded with
 *                        mcp_call_fail() is sent, or -32603 when none was.
 * Tool-level failures the model should see (bad input values, an API that
 * failed) are results, not errors: use mcp_call_tool_error(). Keep
 * mcp_call_fail() for protocol-level errors, which reach the client
 * program rather than the model: a request that cannot be served at all
 * (a resource that does not exist, a prompt without a required
 * argument), never an argument value the model could correct.
 */
typedef int (*mcp_tool_fn)(mcp_call_t *call, void *user);

/* Returned by a handler that asked for input (a positive value on purpose:
 * it is not a failure). */
#define MCP_INPUT_REQUIRED 1

/*
 * Whether calls of a tool may become tasks (the Tasks extension,
 * io.modelcontextprotocol/tasks): a task answers the call at once with a
 * task handle, and the client polls for the outcome. The handler decides,
 * per call, by calling mcp_call_start_task(). A server with such a tool
 * advertises the extension and serves tasks/get, tasks/update and
 * tasks/cancel.
 *
 * Legacy clients of 2025-11-25 get that version's experimental tasks
 * from the same handlers: initialize declares capabilities.tasks,
 * tools/list shows execution.taskSupport ("optional" or "required"), and
 * the client decides: a tools/call with params.task is a task before the
 * handler runs (mcp_call_start_task() then returns 0), read with
 * tasks/get, tasks/result (questions the task asks are sent to the client
 * as requests on its stream), tasks/list and tasks/cancel. Older legacy
 * versions have no tasks.
 */
typedef enum mcp_task_support {
    MCP_TASKS_NONE = 0,  /* never a task (mcp_call_start_task refuses; a
                          * 2025-11-25 call with params.task is -32601) */
    MCP_TASKS_OPTIONAL,  /* a task when the client declared the extension
                          * (or, 2025-11-25, asked for one); with other
                          * clients the handler runs as usual */
    MCP_TASKS_REQUIRED   /* only as a task: modern clients that did not
                          * declare the extension are refused with -32021
                          * naming it, 2025-11-25 calls without params.task
                          * with -32601, older legacy clients with -32021,
                          * all before the handler runs */
} mcp_task_support_t;

typedef struct mcp_tool {
    const char *name;          /* required; unique; 1-128 chars of [A-Za-z0-9_.-] */
    const char *title;         /* optional display name */
    const char *description;   /* optional */
    /* JSON text of the inputSchema; its root must be {"type":"object",...}.
     * NULL means {"type":"object"}. x-mcp-header annotations are validated
     * (an invalid one makes registration fail). */
    const char *input_schema;
    const char *output_schema; /* optional JSON text of the outputSchema */
    const char *annotations;   /* optional JSON text of ToolAnnotations */
    const char *icons;         /* optional JSON text: array of Icon */
    const char *meta;          /* optional JSON text: the tool's _meta object */
    /* Optional JSON text: the ClientCapabilities every call of this tool
     * needs, e.g. "{\"sampling\":{}}". A call from a client that did not
     * declare them is refused with -32021 before the handler runs. */
    const char *required_capabilities;
    mcp_tool_fn handler;       /* required */
    void *user;                /* passed to the handler */
    /* Always run the handler on the thread that received the request (an
     * HTTP event thread, the stdio reader), never on the worker pool. Only
     * for handlers that finish in microseconds and never block: no I/O, no
     * sleeping, no lock held for long. The built-in HTTP engine runs every
     * handler on its event thread at first anyway, and moves its other
     * connections away from one that blocks (mcp_http_options_t.threads),
     * and so does the stdio reader; this flag also skips the hand-off on
     * the libmicrohttpd engine, where it roughly doubles the throughput of
     * a trivial tool (docs/benchmarks.md), and it never moves: while the handler runs,
     * its thread serves nothing else (other connections of that event
     * thread wait, and on stdio the next message, a cancellation
     * included, is read only once it returns). Asking for input is fine
     * (it never waits: the handler returns and runs again with the
     * answers). Default false. Not with `tasks` (a task outlives its
     * request on a worker). */
    bool run_inline;
    /* May calls of this tool become tasks? (MCP_TASKS_NONE by default.) */
    mcp_task_support_t tasks;
} mcp_tool_t;

/*
 * Registers a tool (everything is copied). Fails with MCP_EINVAL and *err
 * filled for a missing or malformed field, invalid JSON text, an inputSchema
 * whose root is not an object schema, invalid x-mcp-header annotations, or
 * run_inline together with tasks; with MCP_EEXIST when a tool of that name
 * exists. Publishes a tools
 * list_changed event.
 */
MCP_API int mcp_server_add_tool(mcp_server_t *srv, const mcp_tool_t *tool, mcp_error_t *err);

/*
 * Registers a tool from a complete Tool object (borrowed; deep-copied), for
 * programs that build definitions as JSON. Same checks and errors as
 * mcp_server_add_tool.
 */
MCP_API int mcp_server_add_tool_json(mcp_server_t *srv, const json_t *tool, mcp_tool_fn handler,
                                     void *user, mcp_error_t *err);

/* Removes a tool. Calls already running finish normally. Returns
 * MCP_ENOTFOUND when there is no such tool. Publishes list_changed. */
MCP_API int mcp_server_remove_tool(mcp_server_t *srv, const char *name);

/* ------------------------------------------------------------------------
 * Resources and resource templates
 * ------------------------------------------------------------------------ */

/*
 * Reads a resource: adds one or more contents with mcp_call_add_resource_*()
 * for `uri` (the URI the client asked for) and returns 0. May return
 * MCP_INPUT_REQUIRED, or fail like a tool handler; return
 * mcp_call_resource_not_found(call) when the URI names nothing.
 */
typedef int (*mcp_resource_fn)(mcp_call_t *call, const char *uri, void *user);

typedef struct mcp_resource {
    const char *uri;         /* required; unique */
    const char *name;        /* required */
    const char *title;
    const char *description;
    const char *mime_type;
    int64_t size;            /* size in bytes when known; 0 = not advertised */
    const char *annotations; /* optional JSON text of Annotations */
    const char *icons;       /* optional JSON text: array of Icon */
    const char *meta;        /* optional JSON text: _meta object */
    mcp_resource_fn handler; /* required */
    void *user;
    bool run_inline;         /* as mcp_tool_t.run_inline */
} mcp_resource_t;

/* Registers a static resource (copied). MCP_EINVAL / MCP_EEXIST as for
 * tools. Publishes a resources list_changed event. */
MCP_API int mcp_server_add_resource(mcp_server_t *srv, const mcp_resource_t *res,
                                    mcp_error_t *err);

/* Removes a resource; MCP_ENOTFOUND when absent. Publishes list_changed. */
MCP_API int mcp_server_remove_resource(mcp_server_t *srv, const char *uri);

typedef struct mcp_resource_template {
    /* Required. An RFC 6570 URI template, matched against requested URIs:
     * {var} takes one or more unreserved characters (never a '/'), {+var}
     * and {#var} also reserved ones, {/var} a path segment, {?a,b} and {&a}
     * query parameters in any order. Variables arrive percent-decoded. */
    const char *uri_template;
    const char *name;        /* required */
    const char *title;
    const char *description;
    const char *mime_type;
    const char *annotations; /* optional JSON text */
    const char *icons;       /* optional JSON text */
    const char *meta;        /* optional JSON text */
    mcp_resource_fn handler; /* required; reads variables with mcp_call_uri_var() */
    void *user;
    bool run_inline;         /* as mcp_tool_t.run_inline */
} mcp_resource_template_t;

/* Registers a resource template (copied). A resources/read whose URI is not
 * a static resource is matched against templates in registration order.
 * MCP_EINVAL with *err filled for a template that does not parse or a
 * missing or malformed field (as for resources); MCP_EEXIST when a
 * template with the same uri_template text exists; MCP_ENOMEM. Publishes
 * a resources list_changed event. */
MCP_API int mcp_server_add_resource_template(mcp_server_t *srv,
                                             const mcp_resource_template_t *tpl,
                                             mcp_error_t *err);

/* Removes a template by its uri_template text; MCP_ENOTFOUND when absent.
 * Publishes a resources list_changed event. */
MCP_API int mcp_server_remove_resource_template(mcp_server_t *srv, const char *uri_template);

/*
 * Tells subscribers that the resource at `uri` changed: listen streams whose
 * filter names it (and legacy sessions subscribed to it) receive
 * notifications/resources/updated. A subscription covers its URI and the
 * sub-resources below it: URIs that continue it at a "/" boundary, when
 * it has an authority and names more than a scheme ("file:///dir" covers
 * "file:///dir/a"; "file:///", "test://" or "test:" cover nothing else).
 * Only URIs that name a resource (registered, or matched by a template)
 * can be subscribed to: a listen stream's acknowledgement leaves others
 * out, and a legacy resources/subscribe answers them -32002.
 * Returns MCP_OK, also when no one is
 * subscribed (an event that cannot be published is logged, not returned);
 * MCP_EINVAL for a NULL argument. Safe from any thread.
 */
MCP_API int mcp_server_notify_resource_updated(mcp_server_t *srv, const char *uri);

/* ------------------------------------------------------------------------
 * Skills (the extension io.modelcontextprotocol/skills, SEP-2640)
 *
 * A skill is a directory: a SKILL.md that opens with YAML frontmatter
 * (at least `name` and `description`, as the Agent Skills format asks),
 * and any files beside it and below it (references/, scripts/, assets/).
 * A server serves a skill it was given:
 *   - skills/list (paginated, by name) and skills/get answer with its
 *     entry: uri "skill://<name>/SKILL.md", the frontmatter as a JSON
 *     object, and "resources", the manifest of every file: its uri, the
 *     SHA-256 digest of its bytes ("sha256:<hex>") and its size, the
 *     SKILL.md first;
 *   - resources/read serves every file at its uri, skill://<name>/<path>
 *     (path segments percent-encoded where URIs need it): as text when it
 *     is UTF-8, else as a base64 blob, with a MIME type from its extension
 *     (text/markdown for .md). Each SKILL.md is in resources/list, named
 *     and described by its frontmatter; the other files are readable but
 *     not listed, as the manifest names them;
 *   - resources/directory/read lists a directory of a skill
 *     (skill://<name> or skill://<name>/<dir>): its direct children,
 *     subdirectories with mimeType "inode/directory"; any other uri is
 *     -32602;
 *   - server/discover declares the extension, with {"directoryRead":
 *     true}, and the resources capability.
 * The skills methods are answered to modern clients (2026-07-28); legacy
 * clients have no way to declare or discover an extension, and get
 * -32601, but may still read the files as resources.
 *
 * A skill is read once, when it is added: its files are held in memory
 * and served as they were then, so what a client verified stays true.
 * Add it again (after mcp_server_remove_skill) to serve a change.
 * ------------------------------------------------------------------------ */

/* At most this many files per skill (SKILL.md included) and this many
 * bytes in all: the extension's limits for what a server serves. */
#define MCP_SKILL_MAX_FILES 512
#define MCP_SKILL_MAX_BYTES (16 * 1024 * 1024)

/*
 * Reads the skill in directory `dir` and serves it. Every regular file
 * below `dir` is part of the skill, except those whose name starts with a
 * dot (and everything in such directories); symbolic links are not
 * followed. The frontmatter (between a first line "---" and the next
 * "---" line) must be UTF-8 YAML 1.2 read with the core schema: one
 * mapping, at most 64 KiB and 32 levels deep, without duplicate keys,
 * anchors or aliases, tags other than the core schema's (!!str, !!int
 * ...), .inf, .nan, or numbers beyond int64 and double. Plain null, ~
 * and empty values are null; true and false booleans; decimal, 0o
 * (octal) and 0x (hex) integers and floats numbers; every other scalar,
 * quoted ones included, a string. It needs a non-empty string
 * `description` and a string `name` that is a valid skill name (1-64
 * lowercase letters, digits and single hyphens, not at either end); the
 * name need not match the directory's.
 *
 * Errors (with the reason in *err; nothing is served then): MCP_EINVAL
 * for a missing SKILL.md, a bad frontmatter or name; MCP_EEXIST when a
 * skill of that name is served already; MCP_ELIMIT beyond
 * MCP_SKILL_MAX_FILES or MCP_SKILL_MAX_BYTES; MCP_EIO when a file cannot
 * be read; MCP_EUNSUPPORTED when libyaml cannot be loaded; MCP_ENOMEM.
 * Publishes a resources list_changed event. Thread-safe.
 */
MCP_API int mcp_server_add_skill(mcp_server_t *srv, const char *dir, mcp_error_t *err);

/*
 * Adds every skill directly under `root`: each subdirectory that holds a
 * SKILL.md (others, and dot-directories, are passed over), in name order.
 * All or nothing: on the first error, the skills this call added are
 * removed again and the error is that of mcp_server_add_skill(), its
 * message naming the directory. *added_out (may be NULL) receives how many
 * were added. MCP_EIO when `root` cannot be read.
 */
MCP_API int mcp_server_add_skills(mcp_server_t *srv, const char *root, size_t *added_out,
                                  mcp_error_t *err);

/* Stops serving the skill called `name` and its files (reads already
 * running finish). MCP_ENOTFOUND when there is none. Publishes a resources
 * list_changed event. Thread-safe. */
MCP_API int mcp_server_remove_skill(mcp_server_t *srv, const char *name);

/*
 * Ends every open subscriptions/listen stream gracefully: each listen
 * request receives its result ({"resultType":"complete"} with the
 * subscription id in _meta), which closes the stream. Clients may open new
 * streams afterwards. Transports call this when they stop; an application
 * calls it to make clients re-subscribe. Returns MCP_OK, or MCP_EINVAL for
 * a NULL srv. Safe from any thread.
 */
MCP_API int mcp_server_close_subscriptions(mcp_server_t *srv);

/* ------------------------------------------------------------------------
 * Prompts
 * ------------------------------------------------------------------------ */

/* Builds a prompt: mcp_call_add_message() for each message, optionally
 * mcp_call_set_description(). Returns like a tool handler. Arguments are
 * read with mcp_call_arg_string(). */
typedef int (*mcp_prompt_fn)(mcp_call_t *call, void *user);

typedef struct mcp_prompt_arg {
    const char *name;        /* required */
    const char *title;
    const char *description;
    bool required;           /* prompts/get without it fails with -32602 */
} mcp_prompt_arg_t;

typedef struct mcp_prompt {
    const char *name;        /* required; unique */
    const char *title;
    const char *description;
    const mcp_prompt_arg_t *args; /* n_args entries */
    size_t n_args;
    const char *icons;       /* optional JSON text */
    const char *meta;        /* optional JSON text */
    mcp_prompt_fn handler;   /* required */
    void *user;
    bool run_inline;         /* as mcp_tool_t.run_inline */
} mcp_prompt_t;

/* Registers a prompt (copied). MCP_EINVAL / MCP_EEXIST as for tools.
 * Publishes a prompts list_changed event. */
MCP_API int mcp_server_add_prompt(mcp_server_t *srv, const mcp_prompt_t *prompt,
                                  mcp_error_t *err);

/* Removes a prompt; MCP_ENOTFOUND when absent. Publishes list_changed. */
MCP_API int mcp_server_remove_prompt(mcp_server_t *srv, const char *name);

/* ------------------------------------------------------------------------
 * Completion
 * ------------------------------------------------------------------------ */

typedef enum mcp_completion_ref_kind {
    MCP_REF_PROMPT = 0,   /* ref/prompt: `name` is the prompt name */
    MCP_REF_RESOURCE = 1  /* ref/resource: `name` is the URI or URI template */
} mcp_completion_ref_kind_t;

/*
 * Suggests values for one argument: calls mcp_call_add_completion() for each
 * (at most 100 are sent) and optionally mcp_call_set_completion_total().
 * `context` is the request's context.arguments object (borrowed), or NULL.
 */
typedef int (*mcp_complete_fn)(mcp_call_t *call, mcp_completion_ref_kind_t kind,
                               const char *name, const char *argument, const char *value,
                               const json_t *context, void *user);

/* Installs the completion handler; this also advertises the `completions`
 * capability. NULL removes it. Returns MCP_OK, or MCP_EINVAL for a NULL
 * srv. */
MCP_API int mcp_server_set_completion(mcp_server_t *srv, mcp_complete_fn handler, void *user);

/* ------------------------------------------------------------------------
 * Inside a handler: the request
 *
 * The strings and JSON values returned here (and by mcp_call_input(),
 * mcp_call_state() and mcp_call_task_id() below) are borrowed from the
 * request: valid during the handler's run, never to be freed or changed.
 * Copy what must outlive the run.
 * ------------------------------------------------------------------------ */

/* The method being served: "tools/call", "resources/read", ... */
MCP_API const char *mcp_call_method(const mcp_call_t *call);

/* The tool or prompt name, or the resource URI, of this request. */
MCP_API const char *mcp_call_target(const mcp_call_t *call);

/* The request's params object (borrowed; never NULL). */
MCP_API const json_t *mcp_call_params(const mcp_call_t *call);

/* The arguments object of tools/call and prompts/get (borrowed; an empty
 * object when the client sent none). */
MCP_API const json_t *mcp_call_arguments(const mcp_call_t *call);

/* One argument (borrowed), or NULL when absent. */
MCP_API const json_t *mcp_call_arg(const mcp_call_t *call, const char *name);

/* A string argument, or NULL when absent or not a string. */
MCP_API const char *mcp_call_arg_string(const mcp_call_t *call, const char *name);

/* An integer argument into *out; false when absent or not an integer. */
MCP_API bool mcp_call_arg_int(const mcp_call_t *call, const char *name, int64_t *out);

/* A number (integer or real) argument into *out; false otherwise. */
MCP_API bool mcp_call_arg_number(const mcp_call_t *call, const char *name, double *out);

/* A boolean argument into *out; false when absent or not a boolean. */
MCP_API bool mcp_call_arg_bool(const mcp_call_t *call, const char *name, bool *out);

/* A variable of the matched resource template, or NULL. */
MCP_API const char *mcp_call_uri_var(const mcp_call_t *call, const char *name);

/* The client's declared capabilities for this request (borrowed; {} when
 * none). On a legacy session: those of initialize. */
MCP_API const json_t *mcp_call_client_capabilities(const mcp_call_t *call);

/* The client's self-reported Implementation (borrowed), or NULL. Not to be
 * used for security decisions. */
MCP_API const json_t *mcp_call_client_info(const mcp_call_t *call);

/* The protocol version this request speaks ("2026-07-28", "2025-11-25"...). */
MCP_API const char *mcp_call_protocol_version(const mcp_call_t *call);

/* The era of this request. Handlers rarely need it: the SDK bridges. */
MCP_API mcp_era_t mcp_call_era(const mcp_call_t *call);

/* The authenticated principal the transport attached, or NULL. */
MCP_API const char *mcp_call_principal(const mcp_call_t *call);

/* True once the client cancelled the request (stdio notifications/cancelled,
 * HTTP stream closed) or the server is shutting down. Long handlers should
 * poll it and return MCP_ECANCELED; nothing more is sent for the request. */
MCP_API bool mcp_call_cancelled(const mcp_call_t *call);

/*
 * Sleeps up to `ms` milliseconds, waking early when the request is
 * cancelled. Returns 0 after the full sleep, MCP_ECANCELED when cut short.
 */
MCP_API int mcp_call_sleep(mcp_call_t *call, int64_t ms);

/* ------------------------------------------------------------------------
 * Inside a handler: notifications during the request
 * ------------------------------------------------------------------------ */

/*
 * Reports progress (notifications/progress) when the client asked for it
 * with a progressToken; otherwise does nothing and returns 0. `progress`
 * must increase from call to call (MCP_EINVAL otherwise); `total` < 0 and
 * `message` NULL are omitted.
 */
MCP_API int mcp_call_progress(mcp_call_t *call, double progress, double total,
                              const char *message);

/*
 * Sends a log message (notifications/message) for this request when the
 * client opted in (modern: _meta logLevel; legacy: logging/setLevel; always
 * in the stateless legacy mode, which cannot remember a level) at or above
 * the client's level; otherwise does nothing and returns 0. `level`
 * is one of "debug", "info", "notice", "warning", "error", "critical",
 * "alert", "emergency" (MCP_EINVAL otherwise). `logger` may be NULL.
 * data_new is stolen.
 */
MCP_API int mcp_call_log(mcp_call_t *call, const char *level, const char *logger,
                         json_t *data_new);

/* mcp_call_log with a printf-formatted string as data, of any length.
 * MCP_EINVAL when the formatted text is not UTF-8, MCP_ENOMEM when it
 * cannot be formatted. */
MCP_API int mcp_call_logf(mcp_call_t *call, const char *level, const char *fmt, ...)
    MCP_PRINTF(3, 4);

/* ------------------------------------------------------------------------
 * Inside a handler: the result
 *
 * The mcp_call_add_* and mcp_call_set_* functions of this section (and
 * mcp_call_set_state()) return MCP_OK; MCP_EINVAL for a NULL or malformed
 * argument, and then a value passed to be stolen is released all the same;
 * or MCP_ENOMEM. Those that build the JSON value from your strings
 * (add_text, add_textf, add_resource_text, add_resource_blob, add_message,
 * add_completion) give MCP_EINVAL also for text that is not UTF-8 and when
 * memory runs out while building it. What does not belong to the method
 * being served (content in a resources/read handler, a description outside
 * prompts/get, ...) is accepted with MCP_OK and then ignored. Differences
 * are noted per function.
 * ------------------------------------------------------------------------ */

/* Appends a content block (stolen; MCP_EINVAL unless an object) to a tool
 * result. */
MCP_API int mcp_call_add_content(mcp_call_t *call, json_t *block_new);

/* Appends {"type":"text","text":text}. */
MCP_API int mcp_call_add_text(mcp_call_t *call, const char *text);

/* Appends a text block from a printf format. */
MCP_API int mcp_call_add_textf(mcp_call_t *call, const char *fmt, ...) MCP_PRINTF(2, 3);

/*
 * Sets structuredContent (stolen; any JSON value), replacing a value set
 * before. When the tool declares an outputSchema the value should conform.
 * If the handler adds no content block, the SDK adds the value's JSON text
 * as a text block, as the spec recommends for compatibility. Returns
 * MCP_OK, or MCP_EINVAL for NULL; never MCP_ENOMEM.
 */
MCP_API int mcp_call_set_structured(mcp_call_t *call, json_t *value_new);

/* Marks the tool result as a tool-level error (isError: true) and appends
 * a text block with the formatted message. Returns 0: the handler should
 * return it (`return mcp_call_tool_error(call, "no such city: %s", c);`).
 * A message that is not valid UTF-8 (or cannot be formatted) is dropped:
 * the result still has isError true, but no text explains it. */
MCP_API int mcp_call_tool_error(mcp_call_t *call, const char *fmt, ...) MCP_PRINTF(2, 3);

/* Appends resource contents (stolen; TextResourceContents or
 * BlobResourceContents, see mcp_resource_text/blob) to a resources/read
 * result. MCP_EINVAL unless it is an object with a string "uri". */
MCP_API int mcp_call_add_resource_contents(mcp_call_t *call, json_t *contents_new);

/* Appends {"uri","mimeType"?,"text"} contents. MCP_EINVAL when uri or
 * text is NULL. */
MCP_API int mcp_call_add_resource_text(mcp_call_t *call, const char *uri, const char *mime_type,
                                       const char *text);

/* Appends {"uri","mimeType"?,"blob"} contents (data is Base64-encoded).
 * MCP_EINVAL when uri is NULL. */
MCP_API int mcp_call_add_resource_blob(mcp_call_t *call, const char *uri, const char *mime_type,
                                       const void *data, size_t len);

/* Records "resource not found" (-32602 with data.uri; -32002 on legacy
 * sessions) and returns MCP_ENOTFOUND for the handler to return. */
MCP_API int mcp_call_resource_not_found(mcp_call_t *call);

/* Appends a prompt message {"role":role,"content":content_new (stolen)}.
 * MCP_EINVAL unless role is "user" or "assistant" and content_new is an
 * object. */
MCP_API int mcp_call_add_message(mcp_call_t *call, const char *role, json_t *content_new);

/* Sets the description of a prompts/get result (copied; NULL clears it).
 * Returns MCP_OK or MCP_ENOMEM, never MCP_EINVAL. */
MCP_API int mcp_call_set_description(mcp_call_t *call, const char *description);

/* Adds one completion value; MCP_EINVAL when NULL. At most 100 are kept:
 * a value past the 100th is dropped, sets hasMore and returns MCP_OK. */
MCP_API int mcp_call_add_completion(mcp_call_t *call, const char *value);

/* Sets completion.total (< 0 omits it) and completion.hasMore (false
 * does not clear a hasMore set by values past the 100th). Always returns
 * MCP_OK. */
MCP_API int mcp_call_set_completion_total(mcp_call_t *call, int64_t total, bool has_more);

/* Sets a key of the result's _meta (value stolen). Keys under
 * "io.modelcontextprotocol/" are reserved and refused with MCP_EINVAL. */
MCP_API int mcp_call_set_result_meta(mcp_call_t *call, const char *key, json_t *value_new);

/* Overrides the cache hints of a cacheable result (resources/read): ttl_ms
 * >= 0, scope "public" or "private" (MCP_EINVAL otherwise; never
 * MCP_ENOMEM). A read that answers a retry carrying inputResponses or
 * requestState is sent with ttlMs 0 whatever is set here. */
MCP_API int mcp_call_set_cache(mcp_call_t *call, int64_t ttl_ms, const char *scope);

/*
 * Records a JSON-RPC error for this request and returns MCP_ERPC, for the
 * handler to return: `return mcp_call_fail(call, MCP_INVALID_PARAMS, "...");`.
 * For protocol-level errors only: a tool's bad argument value is
 * mcp_call_tool_error()'s (see mcp_tool_fn).
 * `code` is the JSON-RPC error code (0 records -32603, internal error) and
 * the printf-formatted message is the error's message. Replaces an error
 * recorded before. Never fails.
 */
MCP_API int mcp_call_fail(mcp_call_t *call, int code, const char *fmt, ...) MCP_PRINTF(3, 4);

/* mcp_call_fail with the error's data member: data_new (stolen; may be
 * NULL for none). Returns MCP_ERPC. */
MCP_API int mcp_call_fail_data(mcp_call_t *call, int code, json_t *data_new, const char *fmt,
                               ...) MCP_PRINTF(4, 5);

/* ------------------------------------------------------------------------
 * Inside a handler: asking the client for input (MRTR)
 *
 * A tools/call, prompts/get or resources/read handler that needs something
 * from the user or the client's model asks for it by key and returns
 * MCP_INPUT_REQUIRED. On the modern era the client receives an
 * input_required result, gathers the answers and retries; the handler then
 * runs again and finds the answers with mcp_call_input(). On a legacy
 * session the SDK sends the real server-to-client requests and runs the
 * handler again when the answers arrive. Either way the handler code is the
 * same:
 *
 *     const json_t *answer = mcp_call_input(call, "confirm");
 *     if (!answer) {
 *         int rc = mcp_call_elicit(call, "confirm", "Delete everything?", schema,
 *                                  MCP_INPUT_NEEDED);
 *         return rc < 0 ? rc : MCP_INPUT_REQUIRED;
 *     }
 *     ... read answer's "action" and "content" ...
 *
 * State that must survive to the next round goes in mcp_call_set_state();
 * it travels sealed (encrypted and authenticated) inside requestState.
 * ------------------------------------------------------------------------ */

/* Flags of the mcp_call_elicit/sample/list_roots family. */
enum {
    /* The handler cannot finish without this input: when the client did not
     * declare the capability, record -32021 (with data.requiredCapabilities)
     * for the handler to return, instead of just MCP_EUNSUPPORTED. */
    MCP_INPUT_NEEDED = 1u << 0
};

/*
 * The client's answer to the input request `key` from the previous round
 * (borrowed): an ElicitResult, CreateMessageResult or ListRootsResult. NULL
 * when the client has not answered it (first round, or it left it out).
 *
 * After a round that asked, only answers to the keys asked are kept. A
 * client may also send inputResponses with its first request, without a
 * requestState (the protocol allows flows that keep no state); those
 * answers are kept too, as the answers of a question never asked. Where
 * the question itself matters (a confirmation, a URL flow, single use),
 * act only when mcp_call_round() is above 0: the answer then provably
 * follows a round of this server's.
 */
MCP_API const json_t *mcp_call_input(const mcp_call_t *call, const char *key);

/* How many times this request has returned MCP_INPUT_REQUIRED before
 * (0 on the first run). */
MCP_API int mcp_call_round(const mcp_call_t *call);

/*
 * Asks for a form elicitation under `key`: `message` for the user and
 * `requested_schema_new` (stolen) a flat object schema of primitive
 * properties. Returns 0 when queued; MCP_EUNSUPPORTED when the client did
 * not declare elicitation (form) -- with MCP_INPUT_NEEDED, *also* records
 * -32021; MCP_EINVAL for a bad argument or duplicate key.
 * A legacy HTTP client whose POST did not accept text/event-stream cannot
 * be sent a request at all (it would travel on that POST's event stream):
 * asking then returns MCP_EUNSUPPORTED at once, and with MCP_INPUT_NEEDED
 * records -32600 naming the missing text/event-stream. (In a task the
 * questions go out on a tasks/result stream instead; a tasks/result that
 * cannot carry them fails the same way, and the task keeps them.)
 */
MCP_API int mcp_call_elicit(mcp_call_t *call, const char *key, const char *message,
                            json_t *requested_schema_new, unsigned flags);

/* Asks for a URL-mode elicitation (the user visits `url`). Needs the
 * elicitation.url capability. Returns as mcp_call_elicit. */
MCP_API int mcp_call_elicit_url(mcp_call_t *call, const char *key, const char *message,
                                const char *url, unsigned flags);

/* Asks the client's model for a completion: params_new (stolen) is a
 * CreateMessageRequest params object (messages, maxTokens, ...). Needs the
 * sampling capability (sampling.tools for tools/toolChoice). Returns as
 * mcp_call_elicit. */
MCP_API int mcp_call_sample(mcp_call_t *call, const char *key, json_t *params_new,
                            unsigned flags);

/* Asks for the client's roots (roots/list). Needs the roots capability.
 * Returns as mcp_call_elicit. */
MCP_API int mcp_call_list_roots(mcp_call_t *call, const char *key, unsigned flags);

/* Whether the client declared what a given input request needs, without
 * asking: `method` is "elicitation/create" (form unless params say url),
 * "sampling/createMessage" or "roots/list"; params may be NULL. False as
 * well when the request cannot be sent (see mcp_call_elicit()). */
MCP_API bool mcp_call_can_ask(const mcp_call_t *call, const char *method, const json_t *params);

/* Stores the handler's continuation state (stolen) for the next round,
 * replacing a state stored before in this run. It is kept only when the run
 * ends asking for input; otherwise it is dropped. Returns MCP_OK, or
 * MCP_EINVAL when state_new is NULL; never MCP_ENOMEM. */
MCP_API int mcp_call_set_state(mcp_call_t *call, json_t *state_new);

/* The state stored in the previous round (borrowed), or NULL. */
MCP_API const json_t *mcp_call_state(const mcp_call_t *call);

/* ------------------------------------------------------------------------
 * Inside a handler: tasks (the io.modelcontextprotocol/tasks extension)
 *
 * A tools/call handler of a tool registered with `tasks` may turn its call
 * into a task once it knows the work will take a while:
 *
 *     if (mcp_call_start_task(call) == MCP_OK) {
 *         ... the client has its task handle; keep working ...
 *     }
 *     rc = long_computation(call);   // polls mcp_call_cancelled()
 *     return mcp_call_add_textf(call, "done: %d", rc);
 *
 * Everything after the start is the task's: what the handler returns
 * becomes the outcome a client reads with tasks/get -- the result
 * ("completed", tool errors included), a JSON-RPC failure recorded with
 * mcp_call_fail() ("failed"), or a request for input. Input works as in a
 * request: mcp_call_elicit() & co. and MCP_INPUT_REQUIRED put the task in
 * "input_required"; once the client has answered every request through
 * tasks/update, the handler runs again (on a worker) and finds every answer
 * the task was given so far with mcp_call_input(), and its state with
 * mcp_call_state(). Input gathered before the start (an input_required
 * round trip on the request itself) stays readable in the task.
 * mcp_call_cancelled() turns true on tasks/cancel, when the task's time
 * is up, and when the server stops; a task cancelled while it runs ends
 * "cancelled" whatever the handler returns. Progress and log
 * notifications are not sent for a task (the extension has no channel for
 * them): mcp_call_progress() and mcp_call_log() return 0 and send nothing.
 * Each task is bound to the principal of the call that started it. A task
 * that has ended keeps its outcome for tasks/get until its time to live
 * is over, and lets go of its request's arguments and answers at once.
 * ------------------------------------------------------------------------ */

/*
 * Turns the call into a task: the task is stored (tasks/get finds it from
 * now on), the client receives the CreateTaskResult as the answer to its
 * tools/call, and the handler goes on as the task's body. Returns 0, also
 * when the call is a task already (a handler that runs again after input,
 * or a 2025-11-25 client's call that asked to be a task); MCP_EUNSUPPORTED
 * when the client did not declare the extension on this request (or is a
 * legacy client that did not ask for a task), or when the server holds as
 * many tasks as it may (mcp_server_options_t.max_tasks) and the tool is
 * MCP_TASKS_OPTIONAL: go on and answer as usual; MCP_ELIMIT when it holds
 * as many and the tool is MCP_TASKS_REQUIRED, with the call's error set
 * to -32603 "Server busy" (return the code: the client gets that error);
 * MCP_EINVAL outside a tools/call handler or for a tool registered without
 * `tasks`; MCP_ECANCELED when the request was cancelled; MCP_ENOMEM.
 */
MCP_API int mcp_call_start_task(mcp_call_t *call);

/* The id of the call's task, or NULL when it is not a task. */
MCP_API const char *mcp_call_task_id(const mcp_call_t *call);

/* Sets the task's statusMessage (copied; NULL clears it), which clients
 * see with its status, e.g. what a long computation is doing now.
 * MCP_EINVAL when the call is not a task. */
MCP_API int mcp_call_set_task_message(mcp_call_t *call, const char *message);

/* ------------------------------------------------------------------------
 * stdio transport
 * ------------------------------------------------------------------------ */

typedef struct mcp_stdio_options {
    int in_fd;            /* default 0 (stdin); any negative value also means 0 */
    /* Default 1 (stdout); 0 and any negative value also mean 1, so fd 0
     * cannot be the output (for a socket on fd 0, dup() it first). */
    int out_fd;
    /* Longest accepted line in bytes; 0 picks 16 MiB. A longer line is
     * refused with -32600 once it ends, naming the request's id when the
     * line is a request whose id could be read in passing (so that the
     * client's call fails at once), else without an id. */
    size_t max_line;
    int shutdown_grace_ms;/* on EOF, how long in-flight work may finish; 0 picks 5000 */
} mcp_stdio_options_t;

/*
 * Serves the server over newline-delimited JSON on stdin/stdout until stdin
 * reaches EOF (then in-flight requests get up to shutdown_grace_ms to
 * finish and are cancelled after that) or mcp_server_stop_stdio() is
 * called. Nothing but MCP messages is ever written to out_fd. `opts` may be
 * NULL. A client slow to read our output slows the handlers' answers down,
 * never the reading of its requests; once its input ended (or a stop came),
 * an answer it does not take within shutdown_grace_ms is given up and the
 * run ends: a client that stopped reading cannot keep it alive. (out_fd is
 * never made non-blocking: a pipe is written through a description of our
 * own, opened from /proc/self/fd.) Returns 0 after a clean end; MCP_EIO on
 * a read/write failure or when answers were lost (or when the eventfd
 * mcp_server_stop_stdio() uses cannot be made); MCP_ESTATE
 * when a run is already in progress on this server (one at a time);
 * MCP_EINVAL for a NULL srv; MCP_ENOMEM. Blocks the calling thread, while
 * a thread of the run's own reads the input and runs the handlers of
 * quick requests (one that blocks or computes for a millisecond or two
 * has the reading moved to a new thread, and its next calls go to the
 * worker pool for a while). A handler still running when the run returns
 * (it ignored cancellation) runs on; mcp_server_free() waits for it.
 */
MCP_API int mcp_server_run_stdio(mcp_server_t *srv, const mcp_stdio_options_t *opts);

/* Asks a running mcp_server_run_stdio() to finish as if stdin had closed.
 * Does nothing when no run is on (a stop is not remembered for a later
 * run). Safe from any thread or a signal handler, until mcp_server_free()
 * begins. */
MCP_API void mcp_server_stop_stdio(mcp_server_t *srv);

#ifdef __cplusplus
}
#endif
#endif /* MCP_SERVER_H */
