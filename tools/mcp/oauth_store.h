/*
 * Where mcp --oauth keeps what it signed in with, so that the next command
 * need not ask again: one JSON file, $XDG_STATE_HOME/mcp/oauth.json
 * (~/.local/state/mcp/oauth.json), an object with one member per server
 * URL holding mcp_oauth_save()'s document. It holds tokens and client
 * secrets: the directory is made 0700 and the file 0600, written whole
 * (a temporary file renamed over it). Delete it to sign out everywhere.
 */
#ifndef MCP_CLI_OAUTH_STORE_H
#define MCP_CLI_OAUTH_STORE_H

#include <stdbool.h>

#include <mcp/oauth.h>

/* The store's path (malloc'd), or NULL when there is no home to put it in. */
char *oauth_store_path(void);

/* Restores what was kept for `url` into `oauth`, if anything. A store that
 * cannot be read or parsed is said on stderr and otherwise ignored. */
void oauth_store_load(mcp_oauth_t *oauth, const char *url);

/* Keeps `oauth`'s state for `url` (and forgets the entry when it holds
 * nothing). False, said on stderr, when the store cannot be written. */
bool oauth_store_save(mcp_oauth_t *oauth, const char *url);

#endif /* MCP_CLI_OAUTH_STORE_H */
