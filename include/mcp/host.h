/*
 * libmcp host: many MCP servers at once, the era of each one hidden.
 *
 * Applications that embed MCP (agents, IDE plugins, chat front ends) talk
 * to several servers. A host owns one client per server, connects them all
 * concurrently, keeps retrying the ones that fail, restarts stdio servers
 * that die, and presents one aggregated view: every tool, resource,
 * template, prompt and skill, each naming its server, with collision-free
 * tool and prompt names ("notes__echo") that route calls back to the
 * right server.
 *
 *     mcp_host_t *host = mcp_host_new(&(mcp_host_options_t){
 *         .client = {.name = "my-agent", .version = "1.0"}}, &err);
 *     mcp_host_load_config_file(host, "servers.json", &err);
 *     mcp_host_connect(host, 5000);              // all at once, up to 5 s
 *     json_t *tools = mcp_host_tools(host);      // [{"name":"notes__echo", ...}, ...]
 *     mcp_host_call_tool(host, "notes__echo", args, NULL, &result, &err);
 *     mcp_host_free(host);
 *
 * Configuration uses the "mcpServers" JSON format of desktop MCP clients:
 *
 *     {"mcpServers": {
 *        "notes":  {"command": "notes_server", "args": [], "env": {"K": "V"}, "cwd": "/tmp"},
 *        "remote": {"url": "https://example.com/mcp", "headers": {"X-Key": "${KEY}"}}}}
 *
 * with optional per-server keys "type" ("stdio", "http", "streamable-http"
 * or "sse"; it must agree with "command"/"url"), "era" ("auto", "modern",
 * "legacy"), "timeoutMs", "token" and "tokenEnv" (the name of an
 * environment variable holding a bearer token), and "oauth": true, or
 * {"clientId": ..., "clientSecretEnv": ..., "clientMetadataUrl": ...}
 * for a pre-registered client or a metadata document URL: the server
 * signs its users in with OAuth (mcp/oauth.h; the host does when its
 * options say how the user signs in, the mcp command with --oauth's
 * sign-in). With "grant": "client_credentials" no user signs in: the
 * client (its "clientId") gets tokens in its own name, authenticated by
 * its secret ("clientSecretEnv") or by its EC P-256 private key, a PKCS#8
 * PEM file ("privateKeyFile", read and checked when the document is
 * parsed; private_key_jwt with ES256). With "grant": "jwt_bearer" the
 * workload presents the JWT its platform issued, read from
 * "assertionFile" at each grant. With "grant": "enterprise" the user's
 * enterprise IdP grants access (Enterprise-Managed Authorization): the
 * user's ID token, read from "assertionFile" at each grant (kept fresh by
 * an SSO agent, say), is exchanged at the IdP's token endpoint
 * ("idpTokenEndpoint") by this client's registration there
 * ("idpClientId", and "idpClientSecretEnv" for a confidential one) for
 * an ID-JAG, presented to the server's authorization server as the
 * client "clientId". "issuer" pins the authorization server: credentials
 * go to no other, whatever the server names (recommended with a secret,
 * a key or an assertion; mcp_oauth_options_t.issuer). In every string value (the paths "privateKeyFile"
 * and "assertionFile" included; not the variable names "tokenEnv",
 * "clientSecretEnv" and "idpClientSecretEnv" hold) ${VAR} is replaced by
 * the environment variable VAR (an error when it is not set) and
 * ${VAR:-default} by VAR, or the default when VAR is unset or empty.
 * Unknown keys of a server are ignored with a warning; other top-level
 * keys than "mcpServers" belong to the application and are ignored
 * silently.
 *
 * Thread safety: every function may be called from any thread, except
 * that mcp_host_remove_server() and mcp_host_free() must not be called
 * from the host's own callbacks. Callbacks run on client or host threads,
 * possibly several at once (one server's thread each), never while the
 * host holds a lock, and are told which server they are about. A callback
 * may call the server that asked (an elicitation answered with a tool's
 * help, say) even when that server is removed or reconnected meanwhile:
 * a connection the host has moved on from is freed, and its stdio server
 * stopped, by a host thread once its last call ends, never by the thread
 * that made that call.
 *
 * Processes: a stdio server is a child process of the application, in
 * the application's process group (the host does not set
 * mcp_stdio_target_t.own_process_group, and mcp_stdio_servers_kill() does
 * not apply). A terminal's Ctrl-C (SIGINT to the foreground group)
 * therefore reaches the servers together with the application: one that
 * leaves SIGINT's default action leaves no server behind, and one that
 * catches SIGINT to shut down in order may find servers already gone
 * (their calls fail; mcp_host_free() still cleans up). The host stops a
 * server (removed, reconnected, or the host freed) by closing its stdin,
 * then SIGTERM and SIGKILL to the server process after grace periods.
 * What a wrapper command started besides the server (sh -c 'helper &
 * exec server') gets no signal from the host: a helper that ignores the
 * server's exit outlives it until a Ctrl-C. A process group of the
 * server's own (which the client signals once its server has exited)
 * would stop such helpers, but it would also keep Ctrl-C from every
 * server and helper, which applications that leave SIGINT's default
 * action count on: the host does not use one.
 */
#ifndef MCP_HOST_H
#define MCP_HOST_H

#include "mcp/client.h"
#include "mcp/oauth.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcp_host mcp_host_t;

/* ------------------------------------------------------------------------
 * Server configurations (also used by the mcp command)
 * ------------------------------------------------------------------------ */

typedef struct mcp_server_config {
    char *name;            /* the key in mcpServers */
    /* stdio: command and arguments (argv, NULL-terminated), environment
     * additions ("KEY=VALUE", NULL-terminated, or NULL), working directory
     * (or NULL). */
    char **argv;
    char **env;
    char *cwd;
    /* HTTP: endpoint URL and extra headers ("Name: value", NULL-terminated,
     * or NULL). */
    char *url;
    char **headers;
    /* Options. */
    mcp_client_era_t era;  /* AUTO: the client's own era option */
    int64_t timeout_ms;    /* 0: the client's own timeout */
    char *token;           /* bearer token, or NULL */
    /* "oauth": the server signs its users in with OAuth; a pre-registered
     * client (id and secret) and a metadata document URL, each NULL when
     * not given. */
    bool oauth;
    char *oauth_client_id;
    char *oauth_client_secret;
    char *oauth_client_metadata_url;
    /* "grant": the authorization code grant (a user signs in; the
     * default), client credentials, with the secret above or the private
     * key read from "privateKeyFile" (PEM text, or NULL), or the JWT
     * bearer grant with "assertionFile" (below). */
    mcp_oauth_grant_t oauth_grant;
    char *oauth_private_key_pem;
    /* "dpop": true: tokens bound to a key (DPoP, RFC 9449) wherever the
     * authorization server offers it (mcp_oauth_options_t.dpop); the
     * connection then sends proofs (mcp_server_connect_options_t). */
    bool oauth_dpop;
    /* "grant": "jwt_bearer" (workload identity): the file whose JWT is
     * the grant; "grant": "enterprise": the file holding the user's ID
     * token from the enterprise IdP. Read at each grant ("assertionFile";
     * mcp_oauth_assertion_from_file), or NULL. */
    char *oauth_assertion_file;
    /* "grant": "enterprise": the IdP's token endpoint
     * ("idpTokenEndpoint"), this client's id there ("idpClientId") and,
     * for a confidential client, its secret (the value of the variable
     * "idpClientSecretEnv" names); each NULL when not given (always with
     * the other grants). */
    char *oauth_idp_token_endpoint;
    char *oauth_idp_client_id;
    char *oauth_idp_client_secret;
    /* "issuer": the authorization server that alone may receive the
     * pre-registered client's credentials (mcp_oauth_options_t.issuer),
     * or NULL. */
    char *oauth_issuer;
} mcp_server_config_t;

typedef struct mcp_server_configs {
    mcp_server_config_t *items;  /* in the order of the document */
    size_t count;
} mcp_server_configs_t;

/*
 * Parses an mcpServers document (`len` bytes of JSON). Each server needs
 * either "command" (stdio) or "url" (HTTP), not both; "type": "sse" (the
 * HTTP+SSE transport of 2024-11-05) makes the era legacy. Unknown keys of
 * a server are reported through `warn` (may be NULL) at MCP_LOG_WARNING,
 * naming the server and the key, and ignored. Errors (MCP_EINVAL, *err
 * naming the server and field: `server "notes": "args" must be an array
 * of strings`): bad JSON ("LINE:COLUMN: not valid JSON: ...", duplicate
 * keys included), no "mcpServers" object, a server that is not an object,
 * a missing or mistyped field, a ${VAR} naming an unset variable, a
 * "tokenEnv" naming an unset or empty variable. All or nothing: on failure
 * *out is empty. Release *out with mcp_server_configs_clear. Thread-safe
 * (reads the environment).
 */
MCP_API int mcp_server_configs_parse(const char *json_text, size_t len,
                                     mcp_server_configs_t *out, mcp_log_fn warn,
                                     void *warn_user, mcp_error_t *err);

/* The largest configuration file read: 4 MiB, far above any real
 * mcpServers document, and small enough that a wrong path (a log, a disk
 * image) fails at once instead of being held in memory whole. */
#define MCP_SERVER_CONFIGS_FILE_MAX (4 * 1024 * 1024)

/* mcp_server_configs_parse on a file; messages and warnings start with
 * its path ("PATH:1:39: not valid JSON: ...", "PATH: server ..."). MCP_EIO
 * when it cannot be read ("cannot read the configuration file PATH: ...").
 * Only a regular file is read, of at most MCP_SERVER_CONFIGS_FILE_MAX
 * bytes: anything else (a FIFO, which would block, a device such as
 * /dev/zero, a directory) and a larger file are MCP_EINVAL ("the
 * configuration file PATH is a FIFO, not a regular file", "... is larger
 * than 4 MiB, the limit for one"). */
MCP_API int mcp_server_configs_load(const char *path, mcp_server_configs_t *out, mcp_log_fn warn,
                                    void *warn_user, mcp_error_t *err);

/*
 * Reads only the server `name` from the file at `path` into *out (release
 * with mcp_server_config_clear): the other entries are not checked, so a
 * broken neighbour does not stop a tool that needs one server. The same
 * messages and limits as mcp_server_configs_load; MCP_ENOTFOUND when the
 * file has no such server (the message lists the names it has), MCP_EIO
 * when it cannot be read.
 */
MCP_API int mcp_server_configs_load_one(const char *path, const char *name,
                                        mcp_server_config_t *out, mcp_log_fn warn,
                                        void *warn_user, mcp_error_t *err);

/* The default location of the configuration: $MCP_CONFIG when set, else
 * $XDG_CONFIG_HOME/mcp/servers.json, else ~/.config/mcp/servers.json
 * ($HOME, or the user's home directory in the password database).
 * Returns a malloc'd path, or NULL when no home directory is known. */
MCP_API char *mcp_server_configs_default_path(void);

/* Frees everything in *configs and zeroes it. NULL-safe. */
MCP_API void mcp_server_configs_clear(mcp_server_configs_t *configs);

/* Frees everything in one *config and zeroes it. NULL-safe. */
MCP_API void mcp_server_config_clear(mcp_server_config_t *config);

/*
 * Applies the options of `config` to client options about to be given to
 * mcp_client_new(): its era when it is not AUTO, its timeout_ms when it is
 * not 0, and for a server reached with the client_credentials or the
 * enterprise grant the declaration of the OAuth client-credentials or the
 * Enterprise-Managed Authorization extension (when *opts declares no
 * extensions of its own: those are the application's). The other fields
 * of *opts are left alone. NULL-safe.
 */
MCP_API void mcp_server_config_client_options(const mcp_server_config_t *config,
                                              mcp_client_options_t *opts);

/*
 * Applies the "oauth" of `config` to token source options about to be
 * given to mcp_oauth_new(): grant, client_id, client_secret,
 * private_key_pem, client_metadata_url, dpop, issuer, the IdP fields, and for the
 * JWT bearer and enterprise grants `assertion` (mcp_oauth_assertion_from_file
 * on the config's assertion file). The fields the application decides
 * (redirect_uri, authorize, client_name, timeout_ms, insecure, ...) are
 * left alone. The strings are borrowed: `config` must outlive the options
 * and the mcp_oauth_t made with them (its assertion callback reads the
 * config's path at each grant). The parser checked the combination, so
 * with a parsed config mcp_oauth_new() fails only for the application's
 * fields or memory. NULL-safe; thread-safe.
 */
MCP_API void mcp_server_config_oauth_options(const mcp_server_config_t *config,
                                             mcp_oauth_options_t *opts);

/* What connecting needs beyond the configuration; all optional. */
typedef struct mcp_server_connect_options {
    mcp_stderr_fn on_stderr;       /* stdio: the server's stderr lines (NULL: discarded) */
    void *stderr_user;
    int64_t connect_timeout_ms;    /* HTTP: 0 picks the client's default */
    bool insecure;                 /* HTTP: skip TLS certificate verification */
    /* HTTP: a token source (e.g. mcp_oauth_token with an mcp_oauth_t made
     * from the config's oauth fields), used instead of the config's
     * token. NULL: the config's token, if any. */
    mcp_token_fn token;
    void *token_user;
    /* HTTP, with `token`: DPoP proofs for its tokens (mcp_oauth_proof with
     * the same mcp_oauth_t), or NULL. */
    mcp_token_proof_fn token_proof;
} mcp_server_connect_options_t;

/*
 * Connects `client` (created by the caller, not yet connected; see
 * mcp_server_config_client_options) to the server `config` describes:
 * stdio (argv, env, cwd) or HTTP (url, headers, token). `opts` may be
 * NULL. Errors: MCP_EINVAL for a config that is neither stdio nor HTTP,
 * and those of mcp_client_connect_stdio / mcp_client_connect_http.
 */
MCP_API int mcp_server_config_connect(const mcp_server_config_t *config, mcp_client_t *client,
                                      const mcp_server_connect_options_t *opts,
                                      mcp_error_t *err);

/* ------------------------------------------------------------------------
 * The host
 * ------------------------------------------------------------------------ */

typedef enum mcp_host_server_state {
    MCP_HOST_CONNECTING = 0, /* not connected yet, or connecting (again) */
    MCP_HOST_READY,
    MCP_HOST_FAILED          /* will be retried after a backoff */
} mcp_host_server_state_t;

typedef struct mcp_host_callbacks {
    /* Input requests from any server (MRTR or legacy), told which server
     * asks; same contracts as in mcp/client.h. Each one set enables the
     * matching client capability for every server. */
    int (*elicit)(void *user, const char *server, const json_t *params, json_t **result_out);
    unsigned elicit_modes;   /* MCP_ELICIT_FORM | MCP_ELICIT_URL; 0 means FORM */
    int (*sample)(void *user, const char *server, const json_t *params, json_t **result_out);
    int (*roots)(void *user, const char *server, json_t **result_out);
    /* Progress of a host call (unless the call's own options name a
     * progress callback); log messages of any server (see the client
     * option log_level). Both run on a client's reading thread: return
     * quickly. */
    void (*progress)(void *user, const char *server, double progress, double total,
                     const char *message);
    void (*log)(void *user, const char *server, const char *level, const char *logger,
                const json_t *data);
    /* The aggregated views changed: a server became ready (after its
     * server_state call), stopped being ready (likewise), or a list of a
     * ready server changed (refetched after a list-changed notification
     * and found different). Called once per change, on the thread of the
     * server concerned; not for mcp_host_remove_server() and
     * mcp_host_free(), whose caller knows. */
    void (*changed)(void *user);
    /* A server's state changed (CONNECTING is also entered before each
     * retry); `error` says why it failed (NULL otherwise). On the thread of
     * the server concerned. */
    void (*server_state)(void *user, const char *server, mcp_host_server_state_t state,
                         const char *error);
    void *user;
} mcp_host_callbacks_t;

typedef struct mcp_host_options {
    /* The identity and options every client gets (copied). Its input and
     * log callbacks must be NULL (the host's callbacks replace them; the
     * library diagnostics `log` stays and also receives the host's own);
     * previous_verdict is ignored (the host keeps each server's verdict
     * and reconnects without probing again). A server's config overrides
     * era and timeout_ms. */
    mcp_client_options_t client;
    mcp_host_callbacks_t callbacks;
    /* Aggregated tool and prompt names are "<server><separator><name>";
     * NULL picks "__". A name unique across servers is still prefixed, so
     * names do not change when a server is added. */
    const char *separator;
    /* Reconnection backoff: the first retry after a failure (or a lost
     * connection) waits retry_initial_ms (0 picks 500), each further one
     * twice as long, up to retry_max_ms (0 picks 30000). A connection that
     * stayed up for retry_max_ms starts the sequence over. */
    int64_t retry_initial_ms;
    int64_t retry_max_ms;
    /* Servers whose configuration says "oauth" sign in with an
     * mcp_oauth_t of their own (mcp/oauth.h), made with this redirect URI
     * and `oauth_authorize`, the user's part of the sign-in, which runs
     * on that server's connecting thread and may block. Without
     * oauth_authorize such servers connect without a token (with a
     * warning). See mcp_host_server_oauth() to keep their tokens. */
    const char *oauth_redirect_uri;
    mcp_oauth_authorize_fn oauth_authorize;
    void *oauth_authorize_user;
} mcp_host_options_t;

/* Creates a host with no servers (opts is copied, strings included). NULL
 * with *err (MCP_EINVAL) on bad options: client options mcp_client_new()
 * refuses, client input, log or on_closed callbacks set, an empty
 * separator, a negative delay or a maximum below the initial one, an
 * oauth_authorize without an oauth_redirect_uri. */
MCP_API mcp_host_t *mcp_host_new(const mcp_host_options_t *opts, mcp_error_t *err);

/* Disconnects every server and frees the host, with every client still
 * acquired and every old connection a host thread has yet to free: no
 * host thread, client or stdio server process is left. Waits for
 * connection attempts in progress (each bounded by its timeouts). Must
 * not race with other calls on the host. NULL-safe. */
MCP_API void mcp_host_free(mcp_host_t *host);

/* Adds a server (copied). MCP_EEXIST for a name already present,
 * MCP_EINVAL for a config that is neither stdio nor HTTP (or both), an
 * empty name, a name that contains the separator or ends with its
 * beginning ("notes_" with "__": the split of "notes___echo" would be
 * ambiguous), or an unknown era. A
 * host already connecting connects it too. */
MCP_API int mcp_host_add_server(mcp_host_t *host, const mcp_server_config_t *config,
                                mcp_error_t *err);

/*
 * The token source of server `name`: one whose configuration says
 * "oauth", on a host with oauth_authorize. NULL for any other server (or
 * none of that name). For mcp_oauth_save() and mcp_oauth_restore(), so
 * that the user signs in once across runs: restore before
 * mcp_host_connect(). Owned by the host, valid until the server is
 * removed; thread-safe as mcp_oauth_t is.
 */
MCP_API mcp_oauth_t *mcp_host_server_oauth(mcp_host_t *host, const char *name);

/* Adds every server of an mcpServers document / file (all or none; the
 * parser's warnings go to the client option `log`). Errors: those of
 * mcp_server_configs_parse / _load and of mcp_host_add_server. */
MCP_API int mcp_host_load_config(mcp_host_t *host, const char *json_text, size_t len,
                                 mcp_error_t *err);
MCP_API int mcp_host_load_config_file(mcp_host_t *host, const char *path, mcp_error_t *err);

/* Removes a server and disconnects it (waiting for a connection attempt
 * in progress). Calls in flight on it, and a client acquired from it, keep
 * the connection until they end or it is released; a host thread then
 * disconnects it. MCP_ENOTFOUND when absent. */
MCP_API int mcp_host_remove_server(mcp_host_t *host, const char *name);

/*
 * Starts connecting every server concurrently (one thread each) and waits
 * up to `wait_ms` (< 0: until each has connected or failed once; 0: do not
 * wait) for them. Servers that fail are retried in the background with
 * backoff; stdio servers that die are restarted, and every server is
 * reconnected when its connection is lost (the client reports it closed,
 * or a call fails on the transport and a ping confirms it). A server's
 * first attempt counts as over once its server_state callback has
 * returned. Calling it again waits for the servers whose first attempt is
 * not over (added since, say). Returns the number of servers ready, or a
 * negative code (MCP_EINVAL, MCP_ENOMEM: a thread could not start; the
 * next call tries again).
 */
MCP_API int mcp_host_connect(mcp_host_t *host, int64_t wait_ms);

/* The state of a server (and, when failed, the last error in *error as a
 * malloc'd string, if error is not NULL; NULL otherwise). MCP_ENOTFOUND
 * when absent. */
MCP_API int mcp_host_server_state(mcp_host_t *host, const char *name,
                                  mcp_host_server_state_t *state, char **error);

/* The names of the configured servers in the order they were added, as a
 * JSON array of strings (new reference), or NULL when out of memory. */
MCP_API json_t *mcp_host_servers(mcp_host_t *host);

/*
 * Aggregated views over the ready servers (new references, deep copies;
 * NULL when out of memory), in the order the servers were added and, for
 * each, the order the server listed them. Each entry is the server's
 * object plus "_meta": {"io.libmcp/server": "<server>"} (the server's own
 * _meta keys are kept). Tools and prompts also carry "name" = the
 * aggregated name and "_meta"."io.libmcp/tool" (or "io.libmcp/prompt") =
 * the server's own name. Refreshed when a server connects and when its
 * lists change (listen, or legacy list_changed notifications).
 */
MCP_API json_t *mcp_host_tools(mcp_host_t *host);
MCP_API json_t *mcp_host_resources(mcp_host_t *host);
MCP_API json_t *mcp_host_resource_templates(mcp_host_t *host);
MCP_API json_t *mcp_host_prompts(mcp_host_t *host);

/*
 * The skills of the ready servers (the Skills extension; see "Skills" in
 * mcp/client.h), an aggregated view like those above: every page of
 * skills/list of each server whose server/discover capabilities declare
 * extensions["io.modelcontextprotocol/skills"], each entry the server's,
 * as mcp_client_list_skills() checked it, plus "_meta":
 * {"io.libmcp/server": "<server>"}. Servers that do not declare the
 * extension, and legacy servers (whose protocol has no extensions), are
 * not asked and contribute nothing; a server that refuses the listing, or
 * lists a malformed entry, contributes nothing either (logged). Skills
 * are resources: the view is refreshed with the resources, when a server
 * connects and after its resources list_changed. Listing fetches no file
 * of a skill. New reference (deep copy), NULL when out of memory.
 */
MCP_API json_t *mcp_host_skills(mcp_host_t *host);

/* Splits an aggregated tool name into its server and the server's tool
 * name (malloc'd strings). MCP_ENOTFOUND when no ready server lists it. */
MCP_API int mcp_host_resolve_tool(mcp_host_t *host, const char *aggregated, char **server,
                                  char **tool);

/*
 * Calls a tool by its aggregated name: the CallToolResult. The part
 * before the first separator names the server, the rest the tool, which
 * is called even when the server's list (which may lag) does not show it
 * yet. `opts` may be NULL; without a progress callback of its own the
 * call reports progress to the host's. Errors: MCP_EINVAL (a NULL
 * argument), MCP_ENOTFOUND (not an aggregated name, or no such server),
 * MCP_ESTATE (the server is not ready; the message says why), and those
 * of mcp_client_call_tool().
 * A call that fails on the transport (MCP_EIO, MCP_ECLOSED, MCP_ETIMEDOUT)
 * makes the host check the connection.
 */
MCP_API int mcp_host_call_tool(mcp_host_t *host, const char *aggregated,
                               const json_t *arguments, const mcp_request_options_t *opts,
                               json_t **result_out, mcp_error_t *err);

/* Reads a resource of `server`; with server NULL, of the first ready
 * server (in the order they were added) that lists the URI, else the first
 * with a template that matches it. Errors as for mcp_host_call_tool
 * (MCP_ENOTFOUND also when no server claims the URI). */
MCP_API int mcp_host_read_resource(mcp_host_t *host, const char *server, const char *uri,
                                   const mcp_request_options_t *opts, json_t **result_out,
                                   mcp_error_t *err);

/* Gets a prompt by aggregated name ("<server><separator><prompt>"), as
 * mcp_host_call_tool calls a tool: the GetPromptResult. */
MCP_API int mcp_host_get_prompt(mcp_host_t *host, const char *aggregated,
                                const json_t *arguments, const mcp_request_options_t *opts,
                                json_t **result_out, mcp_error_t *err);

/*
 * Fetches one file of a skill and verifies it, as
 * mcp_client_read_skill_file() does, on the server that listed it:
 * `skill` is an entry of mcp_host_skills() (borrowed), whose
 * _meta["io.libmcp/server"] names the server, and `file_uri` one of its
 * files (the skill's SKILL.md is its "uri"). On success *content_out holds
 * the verified bytes, NUL-terminated (free them with free()), *len_out
 * their length, and *verified_out (may be NULL) whether size and digest
 * were checked (false only for a skill whose resources are "dynamic"); on
 * any failure nothing is returned. Errors: MCP_EINVAL (a NULL argument,
 * an entry without a string _meta["io.libmcp/server"], or one the client
 * finds malformed), MCP_ENOTFOUND (no such server, or a file the entry
 * does not list), MCP_ESTATE (the server is not ready; the message says
 * why), MCP_EPROTO (the content failed verification: a size, digest or
 * frontmatter mismatch), and the others of mcp_client_read_skill_file().
 * A read that fails on the transport (MCP_EIO, MCP_ECLOSED,
 * MCP_ETIMEDOUT) makes the host check the connection. Thread-safe; `opts`
 * as for mcp_host_call_tool.
 */
MCP_API int mcp_host_read_skill_file(mcp_host_t *host, const json_t *skill,
                                     const char *file_uri, const mcp_request_options_t *opts,
                                     char **content_out, size_t *len_out, bool *verified_out,
                                     mcp_error_t *err);

/*
 * The client of a ready server, for anything the host does not wrap
 * (completion, resource subscriptions, ...): a reference, to be given back
 * with mcp_host_client_release(). NULL when the server is absent or not
 * ready. The client stays valid until released (or the host is freed)
 * even if the host reconnects the server meanwhile with a new client: the
 * old one keeps its lost connection (a stdio one fails every call with
 * MCP_ECLOSED), and a new acquire gets the new one. Do not free it. It
 * may be released from any thread, its own callbacks included: when that
 * is the last use of a client the host has moved on from (reconnected, or
 * its server removed), a host thread frees it shortly after, and
 * mcp_host_free() at the latest.
 */
MCP_API mcp_client_t *mcp_host_client_acquire(mcp_host_t *host, const char *name);
MCP_API void mcp_host_client_release(mcp_host_t *host, mcp_client_t *client);

#ifdef __cplusplus
}
#endif
#endif /* MCP_HOST_H */
