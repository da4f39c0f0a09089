/*
 * --json output.
 */
#include "json_out.h"

#include <stdio.h>

void json_out_print(const json_t *value)
{
    if (!value)
        return;
    json_dumpf(value, stdout, JSON_INDENT(2));
    fputc('\n', stdout);
    fflush(stdout);
}

void json_out_line(const json_t *value)
{
    if (!value)
        return;
    json_dumpf(value, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    fflush(stdout);
}
