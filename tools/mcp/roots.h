/*
 * --root PATH: the directories mcp offers a server as its roots
 * (roots/list), as file:// URIs of their absolute, resolved paths.
 */
#ifndef MCP_CLI_ROOTS_H
#define MCP_CLI_ROOTS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/*
 * The ListRootsResult for `paths` ({"roots": [{"uri", "name"}]}), new
 * reference; NULL with a sentence in `why` when a path does not exist.
 */
json_t *roots_result(const char *const *paths, size_t n, char *why, size_t why_cap);

/* The mcp_roots_fn: answers with a copy of `user` (the result above). */
int roots_list(void *user, json_t **result_out);

#endif /* MCP_CLI_ROOTS_H */
