/*
 * Header blocks for the fuzzers that feed HTTP headers to libmcp: lines of
 * "Name:value", split in place.
 */
#ifndef MCP_FUZZ_HEADER_LINES_H
#define MCP_FUZZ_HEADER_LINES_H

#include <stddef.h>

#include "mcp/headers.h"

/* Splits the NUL-terminated `block` in place at '\n' and at each line's
 * first ':' into at most `max` name/value pairs in `items` (lines without
 * a colon are skipped; values are left untrimmed, as a peer sent them).
 * Returns how many pairs were stored. */
size_t fuzz_split_header_lines(char *block, mcp_header_t *items, size_t max);

#endif
