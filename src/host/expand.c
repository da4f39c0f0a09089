/*
 * ${VAR} and ${VAR:-default} in configuration strings, as desktop MCP
 * clients write them ("Authorization": "Bearer ${API_TOKEN}"), so that
 * secrets stay in the environment rather than in the file. A '$' not
 * followed by '{' is an ordinary character.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host_internal.h"

/* A growing string. */
typedef struct text {
    char *s;
    size_t len, cap;
} text_t;

static bool append(text_t *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown)
            return false;
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
    return true;
}

/* A shell variable name: a letter or '_', then letters, digits and '_'. */
static bool is_name(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

/* The text that replaces the reference between "${" and "}" (`ref`, `n`
 * bytes) in *value (`*value_len` bytes; borrowed from the environment or
 * from `ref`). False with *why on a bad reference or an unset variable. */
static bool resolve(const char *ref, size_t n, const char **value, size_t *value_len, char *why,
                    size_t why_size)
{
    const char *fallback = NULL;
    size_t name_len = n;
    const char *sep = memchr(ref, ':', n);
    if (sep && (size_t)(sep - ref) + 1 < n && sep[1] == '-') {
        name_len = (size_t)(sep - ref);
        fallback = sep + 2;
    }
    char name[256];
    if (!is_name(ref, name_len) || name_len >= sizeof name) {
        snprintf(why, why_size, "bad variable reference \"${%.*s}\"", (int)(n < 64 ? n : 64), ref);
        return false;
    }
    memcpy(name, ref, name_len);
    name[name_len] = '\0';
    const char *env = getenv(name);
    if (fallback && (!env || !env[0])) {
        *value = fallback;
        *value_len = n - (size_t)(fallback - ref);
        return true;
    }
    if (!env) {
        snprintf(why, why_size, "the environment variable %s is not set", name);
        return false;
    }
    *value = env;
    *value_len = strlen(env);
    return true;
}

char *host_expand(const char *in, char *why, size_t why_size)
{
    text_t out = {0};
    bool ok = append(&out, "", 0), bad = false;
    const char *p = in;
    while (ok && *p) {
        const char *ref = strstr(p, "${");
        if (!ref) {
            ok = append(&out, p, strlen(p));
            break;
        }
        const char *end = strchr(ref + 2, '}');
        const char *value = NULL;
        size_t value_len = 0;
        if (!end) {
            snprintf(why, why_size, "\"${\" without a closing \"}\"");
            bad = true;
        } else if (!resolve(ref + 2, (size_t)(end - ref - 2), &value, &value_len, why,
                            why_size)) {
            bad = true;
        }
        if (bad)
            break;
        ok = append(&out, p, (size_t)(ref - p)) && append(&out, value, value_len);
        p = end + 1;
    }
    if (!ok || bad) {
        if (!bad)
            snprintf(why, why_size, "out of memory");
        free(out.s);
        return NULL;
    }
    return out.s;
}
