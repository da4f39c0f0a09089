/* Case-insensitive lookup in a borrowed list of HTTP headers. */
#include <strings.h>

#include "mcp/headers.h"

const char *mcp_headers_get(const mcp_headers_t *headers, const char *name)
{
    if (!headers || !name)
        return NULL;
    for (size_t i = 0; i < headers->count; i++)
        if (headers->items[i].name && strcasecmp(headers->items[i].name, name) == 0)
            return headers->items[i].value ? headers->items[i].value : "";
    return NULL;
}

size_t mcp_headers_count(const mcp_headers_t *headers, const char *name)
{
    size_t n = 0;
    if (!headers || !name)
        return 0;
    for (size_t i = 0; i < headers->count; i++)
        if (headers->items[i].name && strcasecmp(headers->items[i].name, name) == 0)
            n++;
    return n;
}

void mcp_header_trim(const char *value, const char **start, size_t *len)
{
    const char *s = value ? value : "";
    while (*s == ' ' || *s == '\t')
        s++;
    const char *e = s;
    while (*e)
        e++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *start = s;
    *len = (size_t)(e - s);
}
