/* For the install test's programs: whether this process has mapped a
 * library whose file name contains `library`. */
#ifndef MCP_INSTALL_MAPPED_H
#define MCP_INSTALL_MAPPED_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool mapped(const char *library)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    bool found = false;
    while (maps && fgets(line, sizeof line, maps))
        found = found || strstr(line, library) != NULL;
    if (maps)
        fclose(maps);
    return found;
}

#endif
