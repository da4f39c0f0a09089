/*
 * The configuration file: servers by name, in the "mcpServers" format that
 * desktop MCP clients use, so that an existing file works as it is:
 *
 *   {"mcpServers": {
 *      "notes":  {"command": "notes_server", "args": [], "env": {"K": "v"}},
 *      "remote": {"url": "https://example.com/mcp",
 *                 "headers": {"Authorization": "Bearer ${API_TOKEN}"}}}}
 *
 * A stdio server has "command" (and optionally "args", "env", "cwd"); an
 * HTTP server has "url" (and optionally "headers"). A "type" member, when
 * present, must agree ("stdio", "http" or "streamable-http"). As in libmcp's
 * host configuration (include/mcp/host.h), a server may also say "era"
 * ("auto", "modern", "legacy"), "timeoutMs", and "token" or "tokenEnv"
 * (the name of a variable holding a bearer token); the command line
 * overrides them. Other members are ignored. In every string, ${VAR} is
 * replaced by the environment variable VAR (an error when it is not set)
 * and ${VAR:-default} by VAR or else the default.
 *
 * Where: --config FILE, else $MCP_CONFIG, else
 * $XDG_CONFIG_HOME/mcp/servers.json (~/.config/mcp/servers.json).
 */
#ifndef MCP_CLI_CONFIG_H
#define MCP_CLI_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mcp/client.h>

/* One server of the file. Lists are NULL-terminated; unused ones NULL. */
typedef struct config_server {
    char **argv;    /* stdio: command and args */
    char **env;     /* stdio: "NAME=value" */
    char *cwd;      /* stdio: working directory, or NULL */
    char *url;      /* HTTP */
    char **headers; /* HTTP: "Name: value" */
    char *token;    /* HTTP: bearer token ("token", or "tokenEnv"'s value), or NULL */
    bool has_era;   /* "era" was given: */
    mcp_client_era_t era;
    int64_t timeout_ms; /* "timeoutMs", or 0 */
} config_server_t;

/* The file to read when --config is not given, written into buf. */
const char *config_default_path(char *buf, size_t cap);

/* How looking a server up went. */
typedef enum config_status {
    CONFIG_OK = 0,
    CONFIG_NO_FILE,    /* the file cannot be read */
    CONFIG_NO_SERVER,  /* the file has no server of that name */
    CONFIG_BAD         /* the file, or the server's entry, is malformed */
} config_status_t;

/*
 * Reads the file at `path` and fills *out with the server called `name`.
 * Anything but CONFIG_OK comes with a sentence in `why` (naming the file,
 * and for JSON errors the line and column).
 */
config_status_t config_load_server(const char *path, const char *name, config_server_t *out,
                                   char *why, size_t why_cap);

void config_server_clear(config_server_t *server);

#endif /* MCP_CLI_CONFIG_H */
