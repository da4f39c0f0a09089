/*
 * Case-insensitive lookup in a borrowed list of HTTP headers.
 *
 * Every request is looked up a dozen times (Host, Origin, Accept, ...), so
 * names are compared inline rather than with strcasecmp: header names are
 * ASCII tokens (RFC 9110), two names usually differ in their first bytes,
 * and the loop stops there. ASCII folding is also what HTTP means by
 * "case-insensitive", whatever the process locale.
 */
#include "mcp/headers.h"
#include "protocol/headers_internal.h"

const bool mcp_tchar_table[256] = {
    ['!'] = true, ['#'] = true, ['$'] = true, ['%'] = true, ['&'] = true, ['\''] = true,
    ['*'] = true, ['+'] = true, ['-'] = true, ['.'] = true, ['^'] = true, ['_'] = true,
    ['`'] = true, ['|'] = true, ['~'] = true,
    ['0'] = true, ['1'] = true, ['2'] = true, ['3'] = true, ['4'] = true, ['5'] = true,
    ['6'] = true, ['7'] = true, ['8'] = true, ['9'] = true,
    ['A'] = true, ['B'] = true, ['C'] = true, ['D'] = true, ['E'] = true, ['F'] = true,
    ['G'] = true, ['H'] = true, ['I'] = true, ['J'] = true, ['K'] = true, ['L'] = true,
    ['M'] = true, ['N'] = true, ['O'] = true, ['P'] = true, ['Q'] = true, ['R'] = true,
    ['S'] = true, ['T'] = true, ['U'] = true, ['V'] = true, ['W'] = true, ['X'] = true,
    ['Y'] = true, ['Z'] = true,
    ['a'] = true, ['b'] = true, ['c'] = true, ['d'] = true, ['e'] = true, ['f'] = true,
    ['g'] = true, ['h'] = true, ['i'] = true, ['j'] = true, ['k'] = true, ['l'] = true,
    ['m'] = true, ['n'] = true, ['o'] = true, ['p'] = true, ['q'] = true, ['r'] = true,
    ['s'] = true, ['t'] = true, ['u'] = true, ['v'] = true, ['w'] = true, ['x'] = true,
    ['y'] = true, ['z'] = true,
};

bool mcp_header_name_is(const char *name, const char *wanted)
{
    const unsigned char *a = (const unsigned char *)name, *b = (const unsigned char *)wanted;
    for (; mcp_ascii_same_nocase(*a, *b); a++, b++)
        if (*a == '\0')
            return true;
    return false;
}

const char *mcp_headers_lookup(const mcp_headers_t *headers, const char *name, size_t *count)
{
    const char *first = NULL;
    size_t n = 0;
    for (size_t i = 0; headers && name && i < headers->count; i++) {
        const mcp_header_t *h = &headers->items[i];
        if (!h->name || !mcp_header_name_is(h->name, name))
            continue;
        if (n++ == 0)
            first = h->value ? h->value : "";
    }
    *count = n;
    return first;
}

const char *mcp_headers_get(const mcp_headers_t *headers, const char *name)
{
    for (size_t i = 0; headers && name && i < headers->count; i++) {
        const mcp_header_t *h = &headers->items[i];
        if (h->name && mcp_header_name_is(h->name, name))
            return h->value ? h->value : "";
    }
    return NULL;
}

size_t mcp_headers_count(const mcp_headers_t *headers, const char *name)
{
    size_t n;
    mcp_headers_lookup(headers, name, &n);
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
