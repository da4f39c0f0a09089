/*
 * Roots from --root.
 */
#include "roots.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/common.h>

/* "file://" and the path, percent-encoding what a URI path may not hold. */
static char *file_uri(const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t len = strlen(path);
    char *uri = malloc(strlen("file://") + 3 * len + 1);
    if (!uri)
        return NULL;
    char *p = uri + sprintf(uri, "file://");
    for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
        bool plain = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                     (*s >= '0' && *s <= '9') || strchr("/-._~!$&'()*+,;=:@", *s);
        if (plain) {
            *p++ = (char)*s;
        } else {
            *p++ = '%';
            *p++ = hex[*s >> 4];
            *p++ = hex[*s & 15];
        }
    }
    *p = '\0';
    return uri;
}

json_t *roots_result(const char *const *paths, size_t n, char *why, size_t why_cap)
{
    json_t *roots = json_array();
    for (size_t i = 0; roots && i < n; i++) {
        char *real = realpath(paths[i], NULL);
        if (!real) {
            snprintf(why, why_cap, "--root %s: %s", paths[i], strerror(errno));
            json_decref(roots);
            return NULL;
        }
        char *uri = file_uri(real);
        const char *base = strrchr(real, '/');
        base = base && base[1] ? base + 1 : real;
        json_array_append_new(roots, json_pack("{s:s?, s:s?}", "uri", uri, "name", base));
        free(uri);
        free(real);
    }
    return json_pack("{s:o*}", "roots", roots);
}

int roots_list(void *user, json_t **result_out)
{
    *result_out = json_deep_copy(user);
    return *result_out ? MCP_OK : MCP_ENOMEM;
}
