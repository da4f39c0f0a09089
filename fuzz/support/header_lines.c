/* Header blocks for the fuzzers (header_lines.h). */
#include <string.h>

#include "header_lines.h"

size_t fuzz_split_header_lines(char *block, mcp_header_t *items, size_t max)
{
    size_t n = 0;
    for (char *line = block; line && *line && n < max;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *colon = strchr(line, ':');
        if (colon) {
            *colon = '\0';
            items[n].name = line;
            items[n].value = colon + 1;
            n++;
        }
        line = next;
    }
    return n;
}
