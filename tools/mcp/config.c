/*
 * The mcpServers configuration file.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

const char *config_default_path(char *buf, size_t cap)
{
    const char *explicit = getenv("MCP_CONFIG");
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    if (explicit && explicit[0])
        snprintf(buf, cap, "%s", explicit);
    else if (xdg && xdg[0])
        snprintf(buf, cap, "%s/mcp/servers.json", xdg);
    else
        snprintf(buf, cap, "%s/.config/mcp/servers.json", home && home[0] ? home : ".");
    return buf;
}

void config_server_clear(config_server_t *s)
{
    char **lists[] = {s->argv, s->env, s->headers};
    for (size_t l = 0; l < 3; l++) {
        for (size_t i = 0; lists[l] && lists[l][i]; i++)
            free(lists[l][i]);
        free(lists[l]);
    }
    free(s->cwd);
    free(s->url);
    free(s->token);
    memset(s, 0, sizeof *s);
}

/* Where a problem was found, for messages: "FILE: server "NAME"". */
typedef struct where {
    const char *path;
    const char *name;
    char *why;
    size_t cap;
} where_t;

static bool fail(const where_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(const where_t *w, const char *fmt, ...)
{
    int n = snprintf(w->why, w->cap, "%s: server \"%s\": ", w->path, w->name);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < w->cap)
        vsnprintf(w->why + n, w->cap - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* ------------------------------------------------------------------------
 * ${VAR} and ${VAR:-default}
 * ------------------------------------------------------------------------ */

/* A growing string. */
typedef struct buf {
    char *s;
    size_t len, cap;
} buf_t;

static bool put(buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown)
            return false;
        b->s = grown;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
    return true;
}

/* A copy of `in` with its variables replaced; NULL (and *why) on an unset
 * variable, a malformed reference or no memory. */
static char *expand(const where_t *w, const char *field, const char *in)
{
    buf_t out = {0};
    bool ok = put(&out, "", 0);
    const char *p = in;
    while (ok && *p) {
        const char *ref = strstr(p, "${");
        if (!ref) {
            ok = put(&out, p, strlen(p));
            break;
        }
        ok = put(&out, p, (size_t)(ref - p));
        const char *end = strchr(ref, '}');
        if (!ok || !end) {
            ok = ok && fail(w, "%s: \"${\" without a closing \"}\"", field);
            break;
        }
        char name[256];
        size_t len = (size_t)(end - ref - 2);
        if (len == 0 || len >= sizeof name) {
            ok = fail(w, "%s: bad variable reference", field);
            break;
        }
        memcpy(name, ref + 2, len);
        name[len] = '\0';
        char *fallback = strstr(name, ":-");
        if (fallback) {
            *fallback = '\0';
            fallback += 2;
        }
        const char *value = getenv(name);
        if (!value || (fallback && !value[0]))
            value = fallback;
        if (!value) {
            ok = fail(w, "%s: the environment variable %s is not set", field, name);
            break;
        }
        ok = put(&out, value, strlen(value));
        p = end + 1;
    }
    if (!ok) {
        free(out.s);
        return NULL;
    }
    return out.s;
}

/* ------------------------------------------------------------------------
 * The entries
 * ------------------------------------------------------------------------ */

static char **strv_new(size_t n)
{
    return calloc(n + 1, sizeof(char *));
}

/* "args": an array of strings, after the command. */
static bool read_argv(const where_t *w, const json_t *entry, config_server_t *out)
{
    const json_t *command = json_object_get(entry, "command");
    const json_t *args = json_object_get(entry, "args");
    if (!json_is_string(command) || !json_string_length(command))
        return fail(w, "\"command\" must be a non-empty string");
    if (args && !json_is_array(args))
        return fail(w, "\"args\" must be an array of strings");
    size_t n = json_array_size(args);
    if (!(out->argv = strv_new(n + 1)))
        return fail(w, "out of memory");
    if (!(out->argv[0] = expand(w, "command", json_string_value(command))))
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *arg = json_string_value(json_array_get(args, i));
        if (!arg)
            return fail(w, "\"args\" must be an array of strings");
        if (!(out->argv[i + 1] = expand(w, "args", arg)))
            return false;
    }
    return true;
}

/* An object of strings ("env", "headers") as "NAME<sep>value" entries. */
static bool read_pairs(const where_t *w, const json_t *entry, const char *field, const char *sep,
                       char ***out)
{
    const json_t *pairs = json_object_get(entry, field);
    if (!pairs)
        return true;
    if (!json_is_object(pairs))
        return fail(w, "\"%s\" must be an object of strings", field);
    if (!(*out = strv_new(json_object_size(pairs))))
        return fail(w, "out of memory");
    size_t i = 0;
    const char *name;
    const json_t *value;
    json_object_foreach((json_t *)pairs, name, value) {
        if (!json_is_string(value))
            return fail(w, "\"%s\": \"%s\" must be a string", field, name);
        char *expanded = expand(w, field, json_string_value(value));
        if (!expanded)
            return false;
        buf_t b = {0};
        bool ok = put(&b, name, strlen(name)) && put(&b, sep, strlen(sep)) &&
                  put(&b, expanded, strlen(expanded));
        free(expanded);
        if (!ok) {
            free(b.s);
            return fail(w, "out of memory");
        }
        (*out)[i++] = b.s;
    }
    return true;
}

/* "era", "timeoutMs", "token" and "tokenEnv", as the host reads them. */
static bool read_options(const where_t *w, const json_t *entry, config_server_t *out)
{
    const json_t *era = json_object_get(entry, "era");
    const json_t *timeout = json_object_get(entry, "timeoutMs");
    const json_t *token = json_object_get(entry, "token");
    const json_t *token_env = json_object_get(entry, "tokenEnv");
    if (era) {
        static const char *const names[] = {"auto", "modern", "legacy"};
        static const mcp_client_era_t eras[] = {MCP_CLIENT_ERA_AUTO, MCP_CLIENT_ERA_MODERN,
                                                MCP_CLIENT_ERA_LEGACY};
        for (size_t i = 0; i < 3 && !out->has_era; i++)
            if (json_is_string(era) && strcmp(json_string_value(era), names[i]) == 0) {
                out->era = eras[i];
                out->has_era = true;
            }
        if (!out->has_era)
            return fail(w, "\"era\" must be \"auto\", \"modern\" or \"legacy\"");
    }
    if (timeout && !(json_is_integer(timeout) && json_integer_value(timeout) > 0))
        return fail(w, "\"timeoutMs\" must be a number of milliseconds above 0");
    out->timeout_ms = timeout ? json_integer_value(timeout) : 0;
    if (token && token_env)
        return fail(w, "give \"token\" or \"tokenEnv\", not both");
    if (token && !json_is_string(token))
        return fail(w, "\"token\" must be a string");
    if (token)
        return (out->token = expand(w, "token", json_string_value(token))) != NULL;
    if (token_env) {
        const char *value = json_is_string(token_env) ? getenv(json_string_value(token_env)) : NULL;
        if (!json_is_string(token_env))
            return fail(w, "\"tokenEnv\" must be the name of an environment variable");
        if (!value || !value[0])
            return fail(w, "tokenEnv: the environment variable %s is not set",
                        json_string_value(token_env));
        if (!(out->token = strdup(value)))
            return fail(w, "out of memory");
    }
    return true;
}

static bool read_entry(const where_t *w, const json_t *entry, config_server_t *out)
{
    if (!json_is_object(entry))
        return fail(w, "the entry must be an object");
    const char *type = json_string_value(json_object_get(entry, "type"));
    const json_t *url = json_object_get(entry, "url");
    bool has_command = json_object_get(entry, "command") != NULL;
    if (type && strcmp(type, "sse") == 0)
        return fail(w, "the HTTP+SSE transport of 2024-11-05 is not supported; "
                       "use the server's Streamable HTTP endpoint (\"type\": \"http\")");
    if (type && strcmp(type, "stdio") != 0 && strcmp(type, "http") != 0 &&
        strcmp(type, "streamable-http") != 0)
        return fail(w, "unknown \"type\" \"%s\" (stdio, http or streamable-http)", type);
    if (has_command == (url != NULL))
        return fail(w, "give either \"command\" (stdio) or \"url\" (HTTP)");
    if (type && (strcmp(type, "stdio") == 0) != has_command)
        return fail(w, "\"type\" \"%s\" does not match %s", type,
                    has_command ? "\"command\"" : "\"url\"");
    if (!read_options(w, entry, out))
        return false;
    if (has_command) {
        const json_t *cwd = json_object_get(entry, "cwd");
        if (cwd && !json_is_string(cwd))
            return fail(w, "\"cwd\" must be a string");
        return read_argv(w, entry, out) && read_pairs(w, entry, "env", "=", &out->env) &&
               (!cwd || (out->cwd = expand(w, "cwd", json_string_value(cwd))));
    }
    if (!json_is_string(url))
        return fail(w, "\"url\" must be a string");
    return (out->url = expand(w, "url", json_string_value(url))) &&
           read_pairs(w, entry, "headers", ": ", &out->headers);
}

/* ------------------------------------------------------------------------
 * The file
 * ------------------------------------------------------------------------ */

static config_status_t load(const char *path, json_t **root_out, char *why, size_t cap)
{
    *root_out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, cap, "cannot read the configuration file %s: %s", path, strerror(errno));
        return CONFIG_NO_FILE;
    }
    json_error_t jerr;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    if (!root) {
        snprintf(why, cap, "%s:%d:%d: not valid JSON: %s", path, jerr.line, jerr.column,
                 jerr.text);
        return CONFIG_BAD;
    }
    if (!json_is_object(json_object_get(root, "mcpServers"))) {
        snprintf(why, cap, "%s: expected an object {\"mcpServers\": {\"NAME\": {...}}}", path);
        json_decref(root);
        return CONFIG_BAD;
    }
    *root_out = root;
    return CONFIG_OK;
}

config_status_t config_load_server(const char *path, const char *name, config_server_t *out,
                                   char *why, size_t why_cap)
{
    memset(out, 0, sizeof *out);
    json_t *root;
    config_status_t status = load(path, &root, why, why_cap);
    if (status != CONFIG_OK)
        return status;
    const json_t *servers = json_object_get(root, "mcpServers");
    const json_t *entry = json_object_get(servers, name);
    if (!entry) {
        char names[512];
        size_t used = 0;
        names[0] = '\0';
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)servers, key, v) {
            int n = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", key);
            if (n < 0 || (size_t)n >= sizeof names - used)
                break;
            used += (size_t)n;
        }
        snprintf(why, why_cap, "%s has no server \"%s\" (it has: %s)", path, name,
                 used ? names : "none");
        status = CONFIG_NO_SERVER;
    } else {
        where_t w = {path, name, why, why_cap};
        status = read_entry(&w, entry, out) ? CONFIG_OK : CONFIG_BAD;
    }
    json_decref(root);
    if (status != CONFIG_OK)
        config_server_clear(out);
    return status;
}
