/*
 * nested_json: deeply nested JSON texts for tests of depth limits.
 */
#ifndef MCP_TEST_NESTED_JSON_H
#define MCP_TEST_NESTED_JSON_H

#include <stddef.h>

/*
 * `levels` arrays nested in one another around `inner` (which may be ""):
 * "[[" ... inner ... "]]". Not NUL-terminated: its length goes to *len.
 * The caller frees it; fails the test when out of memory.
 */
char *nested_arrays(size_t levels, const char *inner, size_t *len);

#endif /* MCP_TEST_NESTED_JSON_H */
