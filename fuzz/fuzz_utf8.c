/*
 * Differential fuzzing of mcp_utf8_valid against jansson's own check
 * (json_stringn accepts exactly the well-formed strings, NUL bytes
 * included): the two must agree on every input. The input is also tried
 * from each of its first eight offsets, so that the word-at-a-time path
 * meets every byte at every alignment.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "protocol/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t skip = 0; skip < 8 && skip <= size; skip++) {
        const char *s = (const char *)data + skip;
        size_t len = size - skip;
        json_t *theirs = json_stringn(s, len);
        if (mcp_utf8_valid(s, len) != (theirs != NULL))
            abort();
        json_decref(theirs);
    }
    return 0;
}
