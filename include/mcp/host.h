/*
 * libmcp host: many MCP servers at once, the era of each one hidden.
 *
 * Applications that embed MCP (agents, IDE plugins, chat front ends) talk
 * to several servers. A host owns one client per server, connects them all
 * concurrently, keeps retrying the ones that fail, restarts stdio servers
 * that die, and presents one aggregated view: every tool, resource,
 * template and prompt, each naming its server, with collision-free tool
 * names ("notes__echo") that route calls back to the right server.
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
 *        "remote": {"url": "https://example.com/mcp", "headers": {"X-Key": "..."}}}}
 *
 * with optional per-server keys "era" ("auto", "modern", "legacy"),
 * "timeoutMs", "token" and "tokenEnv" (the name of an environment variable
 * holding a bearer token). Unknown keys are ignored with a warning.
 *
 * Thread safety: every function may be called from any thread. Callbacks
 * run on client threads and are told which server they are about.
 */
#ifndef MCP_HOST_H
#define MCP_HOST_H

#include "mcp/client.h"

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
     * additions ("KEY=VALUE", NULL-terminated), working directory. */
    char **argv;
    char **env;
    char *cwd;
    /* HTTP: endpoint URL and extra headers ("Name: value", NULL-terminated). */
    char *url;
    char **headers;
    /* Options. */
    mcp_client_era_t era;
    int64_t timeout_ms;    /* 0: the client default */
    char *token;           /* bearer token, or NULL */
} mcp_server_config_t;

typedef struct mcp_server_configs {
    mcp_server_config_t *items;
    size_t count;
} mcp_server_configs_t;

/*
 * Parses an mcpServers document (`len` bytes of JSON). Each server needs
 * either "command" (stdio) or "url" (HTTP), not both. Unknown keys are
 * reported through `warn` (may be NULL) and ignored. Errors (MCP_EINVAL,
 * *err naming the server and field): bad JSON (with line and column), no
 * "mcpServers" object, a server that is not an object, a missing or
 * mistyped field, a "tokenEnv" naming an unset variable. Release *out with
 * mcp_server_configs_clear.
 */
MCP_API int mcp_server_configs_parse(const char *json_text, size_t len,
                                     mcp_server_configs_t *out, mcp_log_fn warn,
                                     void *warn_user, mcp_error_t *err);

/* mcp_server_configs_parse on a file; MCP_EIO when it cannot be read. */
MCP_API int mcp_server_configs_load(const char *path, mcp_server_configs_t *out, mcp_log_fn warn,
                                    void *warn_user, mcp_error_t *err);

/* The default location of the configuration: $MCP_CONFIG when set, else
 * $XDG_CONFIG_HOME/mcp/servers.json, else ~/.config/mcp/servers.json.
 * Returns a malloc'd path, or NULL when no home directory is known. */
MCP_API char *mcp_server_configs_default_path(void);

/* Frees everything in *configs and zeroes it. NULL-safe. */
MCP_API void mcp_server_configs_clear(mcp_server_configs_t *configs);

/* Connects `client` (created by the caller) to the server `config`
 * describes: stdio or HTTP, with its headers and token. */
MCP_API int mcp_server_config_connect(const mcp_server_config_t *config, mcp_client_t *client,
                                      mcp_error_t *err);

/* ------------------------------------------------------------------------
 * The host
 * ------------------------------------------------------------------------ */

typedef enum mcp_host_server_state {
    MCP_HOST_CONNECTING = 0,
    MCP_HOST_READY,
    MCP_HOST_FAILED      /* will be retried after a backoff */
} mcp_host_server_state_t;

typedef struct mcp_host_callbacks {
    /* Input requests from any server (MRTR or legacy), told which server
     * asks; same contracts as in mcp/client.h. */
    int (*elicit)(void *user, const char *server, const json_t *params, json_t **result_out);
    unsigned elicit_modes;
    int (*sample)(void *user, const char *server, const json_t *params, json_t **result_out);
    int (*roots)(void *user, const char *server, json_t **result_out);
    /* Progress of a host call; log messages of any server. */
    void (*progress)(void *user, const char *server, double progress, double total,
                     const char *message);
    void (*log)(void *user, const char *server, const char *level, const char *logger,
                const json_t *data);
    /* The aggregated views changed (a server connected or failed, a list
     * changed). Called once per change, on a host thread. */
    void (*changed)(void *user);
    /* A server's state changed; `error` says why it failed (NULL otherwise). */
    void (*server_state)(void *user, const char *server, mcp_host_server_state_t state,
                         const char *error);
    void *user;
} mcp_host_callbacks_t;

typedef struct mcp_host_options {
    /* The identity and options every client gets (callbacks are the
     * host's: leave the client's input and log callbacks NULL). */
    mcp_client_options_t client;
    mcp_host_callbacks_t callbacks;
    /* Aggregated tool names are "<server><separator><tool>"; NULL picks
     * "__". A tool name unique across servers is still prefixed, so names
     * do not change when a server is added. */
    const char *separator;
    /* Reconnection backoff after a failure: starts at retry_initial_ms
     * (0 picks 500) and doubles up to retry_max_ms (0 picks 30000). */
    int64_t retry_initial_ms;
    int64_t retry_max_ms;
} mcp_host_options_t;

/* Creates a host with no servers. NULL with *err on bad options. */
MCP_API mcp_host_t *mcp_host_new(const mcp_host_options_t *opts, mcp_error_t *err);

/* Disconnects every server and frees the host. NULL-safe. */
MCP_API void mcp_host_free(mcp_host_t *host);

/* Adds a server (copied). MCP_EEXIST for a name already present,
 * MCP_EINVAL for a config that is neither stdio nor HTTP, or a name that
 * contains the separator. A host already connecting connects it too. */
MCP_API int mcp_host_add_server(mcp_host_t *host, const mcp_server_config_t *config,
                                mcp_error_t *err);

/* Adds every server of an mcpServers document / file (all or none). */
MCP_API int mcp_host_load_config(mcp_host_t *host, const char *json_text, size_t len,
                                 mcp_error_t *err);
MCP_API int mcp_host_load_config_file(mcp_host_t *host, const char *path, mcp_error_t *err);

/* Disconnects and removes a server. MCP_ENOTFOUND when absent. */
MCP_API int mcp_host_remove_server(mcp_host_t *host, const char *name);

/*
 * Starts connecting every server concurrently and waits up to `wait_ms`
 * (< 0: until each has connected or failed once; 0: do not wait) for
 * them. Servers that fail are retried in the background with backoff;
 * stdio servers that die are restarted. Returns the number of servers
 * ready, or a negative code.
 */
MCP_API int mcp_host_connect(mcp_host_t *host, int64_t wait_ms);

/* The state of a server (and, when failed, the last error in *error as a
 * malloc'd string, if error is not NULL). MCP_ENOTFOUND when absent. */
MCP_API int mcp_host_server_state(mcp_host_t *host, const char *name,
                                  mcp_host_server_state_t *state, char **error);

/* The names of the configured servers, as a JSON array of strings (new
 * reference). */
MCP_API json_t *mcp_host_servers(mcp_host_t *host);

/*
 * Aggregated views over the ready servers (new references). Each entry is
 * the server's object plus "_meta": {"io.libmcp/server": "<server>"}; tools
 * also carry "name" = the aggregated name and "_meta"."io.libmcp/tool" = the
 * server's own name. Refreshed when a server connects and when its lists
 * change (listen or legacy list_changed).
 */
MCP_API json_t *mcp_host_tools(mcp_host_t *host);
MCP_API json_t *mcp_host_resources(mcp_host_t *host);
MCP_API json_t *mcp_host_resource_templates(mcp_host_t *host);
MCP_API json_t *mcp_host_prompts(mcp_host_t *host);

/* Splits an aggregated tool name into its server and the server's tool
 * name (malloc'd strings). MCP_ENOTFOUND when no ready server has it. */
MCP_API int mcp_host_resolve_tool(mcp_host_t *host, const char *aggregated, char **server,
                                  char **tool);

/* Calls a tool by its aggregated name: the CallToolResult. */
MCP_API int mcp_host_call_tool(mcp_host_t *host, const char *aggregated,
                               const json_t *arguments, const mcp_request_options_t *opts,
                               json_t **result_out, mcp_error_t *err);

/* Reads a resource of `server` (NULL: the first ready server that lists
 * the URI or a matching template). */
MCP_API int mcp_host_read_resource(mcp_host_t *host, const char *server, const char *uri,
                                   const mcp_request_options_t *opts, json_t **result_out,
                                   mcp_error_t *err);

/* Gets a prompt by aggregated name ("<server><separator><prompt>"). */
MCP_API int mcp_host_get_prompt(mcp_host_t *host, const char *aggregated,
                                const json_t *arguments, const mcp_request_options_t *opts,
                                json_t **result_out, mcp_error_t *err);

/* The client of a server (borrowed; valid until the server is removed or
 * the host freed), for anything the host does not wrap. NULL when absent
 * or not ready. */
MCP_API mcp_client_t *mcp_host_client(mcp_host_t *host, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* MCP_HOST_H */
