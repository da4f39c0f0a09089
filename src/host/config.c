/*
 * mcpServers documents: the configuration format of desktop MCP clients,
 * read strictly (a mistyped field is an error naming the server and the
 * field) but tolerantly (a key this library does not know is a warning, so
 * that a file written for another client still works).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/oauth/oauth_jwt.h"
#include "host/host_internal.h"

/* Where a problem is, for messages: "SOURCE: server "NAME": ...". */
typedef struct where {
    const char *source;   /* the file, or NULL for a document in memory */
    const char *server;   /* the entry being read, or NULL */
    mcp_log_fn warn;
    void *warn_user;
    mcp_error_t *err;
} where_t;

static void prefix(const where_t *w, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s%s%s", w->source ? w->source : "", w->source ? ": " : "",
             w->server ? "server \"" : "", w->server ? w->server : "", w->server ? "\": " : "");
}

static int fail(const where_t *w, int rc, const char *fmt, ...) MCP_PRINTF(3, 4);
static int fail(const where_t *w, int rc, const char *fmt, ...)
{
    char head[MCP_ERROR_MESSAGE_MAX], body[MCP_ERROR_MESSAGE_MAX];
    prefix(w, head, sizeof head);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    return mcp_error_set(w->err, rc, 0, NULL, "%s%s", head, body);
}

static void warn(const where_t *w, const char *fmt, ...) MCP_PRINTF(2, 3);
static void warn(const where_t *w, const char *fmt, ...)
{
    if (!w->warn)
        return;
    char head[MCP_ERROR_MESSAGE_MAX], body[MCP_ERROR_MESSAGE_MAX], msg[2 * MCP_ERROR_MESSAGE_MAX];
    prefix(w, head, sizeof head);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(msg, sizeof msg, "%s%s", head, body);
    w->warn(w->warn_user, MCP_LOG_WARNING, msg);
}

/* ------------------------------------------------------------------------
 * Values
 * ------------------------------------------------------------------------ */

/* A string field with its variables expanded; NULL after fail(). */
static char *string_of(const where_t *w, const char *field, const json_t *value)
{
    if (!json_is_string(value)) {
        fail(w, MCP_EINVAL, "\"%s\" must be a string", field);
        return NULL;
    }
    char why[MCP_ERROR_MESSAGE_MAX];
    char *s = host_expand(json_string_value(value), why, sizeof why);
    if (!s)
        fail(w, MCP_EINVAL, "%s: %s", field, why);
    return s;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* "command" and "args": argv. */
static int read_argv(const where_t *w, const json_t *entry, mcp_server_config_t *out)
{
    const json_t *command = json_object_get(entry, "command");
    const json_t *args = json_object_get(entry, "args");
    if (!json_is_string(command) || json_string_length(command) == 0)
        return fail(w, MCP_EINVAL, "\"command\" must be a non-empty string");
    if (args && !json_is_array(args))
        return fail(w, MCP_EINVAL, "\"args\" must be an array of strings");
    size_t n = json_array_size(args);
    if (!(out->argv = calloc(n + 2, sizeof *out->argv)))
        return fail(w, MCP_ENOMEM, "out of memory");
    if (!(out->argv[0] = string_of(w, "command", command)))
        return MCP_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (!json_is_string(json_array_get(args, i)))
            return fail(w, MCP_EINVAL, "\"args\" must be an array of strings");
        if (!(out->argv[i + 1] = string_of(w, "args", json_array_get(args, i))))
            return MCP_EINVAL;
    }
    return MCP_OK;
}

/* Is `name` acceptable before `sep` ("=" for env, ": " for headers)? An
 * environment name has no '='; a header name is an HTTP token. */
static bool good_pair_name(const char *name, const char *sep)
{
    if (!name[0])
        return false;
    for (const char *p = name; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (sep[0] == '=' ? c == '=' : (c <= ' ' || c >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", c)))
            return false;
    }
    return true;
}

/* An object of strings ("env", "headers") as "NAME<sep>value" entries. */
static int read_pairs(const where_t *w, const json_t *entry, const char *field, const char *sep,
                      char ***out)
{
    const json_t *pairs = json_object_get(entry, field);
    if (!pairs)
        return MCP_OK;
    if (!json_is_object(pairs))
        return fail(w, MCP_EINVAL, "\"%s\" must be an object of strings", field);
    if (!(*out = calloc(json_object_size(pairs) + 1, sizeof **out)))
        return fail(w, MCP_ENOMEM, "out of memory");
    size_t i = 0;
    const char *name;
    const json_t *value;
    json_object_foreach((json_t *)pairs, name, value) {
        if (!json_is_string(value))
            return fail(w, MCP_EINVAL, "\"%s\": \"%s\" must be a string", field, name);
        if (!good_pair_name(name, sep))
            return fail(w, MCP_EINVAL, "\"%s\": \"%s\" is not a valid name", field, name);
        char *v = string_of(w, field, value);
        if (!v)
            return MCP_EINVAL;
        if (sep[0] == ':' && strpbrk(v, "\r\n")) {
            free(v);
            return fail(w, MCP_EINVAL, "\"%s\": the value of \"%s\" has a line break", field,
                        name);
        }
        size_t len = strlen(name) + strlen(sep) + strlen(v) + 1;
        char *pair = malloc(len);
        if (pair)
            snprintf(pair, len, "%s%s%s", name, sep, v);
        free(v);
        if (!pair)
            return fail(w, MCP_ENOMEM, "out of memory");
        (*out)[i++] = pair;
    }
    return MCP_OK;
}

static int read_era(const where_t *w, const json_t *entry, bool sse, mcp_server_config_t *out)
{
    static const struct {
        const char *name;
        mcp_client_era_t era;
    } eras[] = {{"auto", MCP_CLIENT_ERA_AUTO},
                {"modern", MCP_CLIENT_ERA_MODERN},
                {"legacy", MCP_CLIENT_ERA_LEGACY}};
    const json_t *era = json_object_get(entry, "era");
    /* HTTP+SSE is a legacy transport: no probe needed. */
    out->era = sse ? MCP_CLIENT_ERA_LEGACY : MCP_CLIENT_ERA_AUTO;
    if (!era)
        return MCP_OK;
    for (size_t i = 0; json_is_string(era) && i < sizeof eras / sizeof eras[0]; i++)
        if (strcmp(json_string_value(era), eras[i].name) == 0) {
            if (sse && eras[i].era == MCP_CLIENT_ERA_MODERN)
                return fail(w, MCP_EINVAL, "\"type\" \"sse\" is a legacy transport: \"era\" "
                                           "cannot be \"modern\"");
            if (!sse)
                out->era = eras[i].era;
            return MCP_OK;
        }
    return fail(w, MCP_EINVAL, "\"era\" must be \"auto\", \"modern\" or \"legacy\"");
}

static int read_options(const where_t *w, const json_t *entry, bool http, mcp_server_config_t *out)
{
    const json_t *timeout = json_object_get(entry, "timeoutMs");
    if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) <= 0))
        return fail(w, MCP_EINVAL, "\"timeoutMs\" must be a positive integer (milliseconds)");
    out->timeout_ms = timeout ? (int64_t)json_integer_value(timeout) : 0;

    const json_t *token = json_object_get(entry, "token");
    const json_t *token_env = json_object_get(entry, "tokenEnv");
    if (!http)
        return MCP_OK; /* warned about */
    if (token && token_env)
        return fail(w, MCP_EINVAL, "give \"token\" or \"tokenEnv\", not both");
    if (token)
        return (out->token = string_of(w, "token", token)) ? MCP_OK : MCP_EINVAL;
    if (!token_env)
        return MCP_OK;
    if (!json_is_string(token_env))
        return fail(w, MCP_EINVAL, "\"tokenEnv\" must be a string");
    const char *value = getenv(json_string_value(token_env));
    if (!value || !value[0])
        return fail(w, MCP_EINVAL, "\"tokenEnv\": the environment variable %s is not set",
                    json_string_value(token_env));
    return (out->token = strdup(value)) ? MCP_OK : fail(w, MCP_ENOMEM, "out of memory");
}

/* A private key file: a regular file (not a pipe or a device that would
 * block or never end) of at most 64 KiB, as text. */
#define KEY_FILE_MAX 65536

static int read_key_path(const where_t *w, const char *path, char **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > KEY_FILE_MAX) {
        int why = errno;
        if (fd >= 0)
            close(fd);
        return fail(w, MCP_EINVAL, "\"oauth\": cannot read the private key file %s: %s", path,
                    fd < 0 ? strerror(why) : "not a small regular file");
    }
    char *text = calloc(1, (size_t)st.st_size + 1);
    ssize_t n = text ? read(fd, text, (size_t)st.st_size) : -1;
    close(fd);
    if (!text)
        return fail(w, MCP_ENOMEM, "out of memory");
    if (n != (ssize_t)st.st_size) {
        free(text);
        return fail(w, MCP_EINVAL, "\"oauth\": cannot read the private key file %s", path);
    }
    *out = text;
    return MCP_OK;
}

/* "privateKeyFile": the path, then the key it names. */
static int read_key_file(const where_t *w, const json_t *value, char **out)
{
    if (!json_is_string(value))
        return fail(w, MCP_EINVAL, "\"oauth\": \"privateKeyFile\" must be a string");
    /* A path like any other string value: ${VAR} is expanded, so that a
     * key kept under $HOME or a secrets mount need not be spelt out. */
    char *path = string_of(w, "privateKeyFile", value);
    if (!path)
        return MCP_EINVAL;
    int rc = read_key_path(w, path, out);
    free(path);
    return rc;
}

/* "grant": "enterprise" names the client at both ends and the IdP. */
static int check_enterprise(const where_t *w, const mcp_server_config_t *c)
{
    const struct {
        const char *value, *key;
    } needed[] = {
        {c->oauth_client_id, "clientId"},
        {c->oauth_idp_token_endpoint, "idpTokenEndpoint"},
        {c->oauth_idp_client_id, "idpClientId"},
    };
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++)
        if (!needed[i].value)
            return fail(w, MCP_EINVAL, "\"oauth\": the enterprise grant needs \"%s\"",
                        needed[i].key);
    return MCP_OK;
}

/* The combination of an "oauth" object's members makes sense, so that
 * mcp_oauth_new() takes it; a private key parses (mcp_oauth_new() would
 * refuse it later, far from here). */
static int check_oauth_client(const where_t *w, const mcp_server_config_t *c)
{
    bool enterprise = c->oauth_grant == MCP_OAUTH_ENTERPRISE;
    bool asserted = c->oauth_grant == MCP_OAUTH_JWT_BEARER || enterprise;
    if (c->oauth_client_secret && !c->oauth_client_id)
        return fail(w, MCP_EINVAL, "\"oauth\": a client secret needs its \"clientId\"");
    if (!enterprise && (c->oauth_idp_token_endpoint || c->oauth_idp_client_id ||
                        c->oauth_idp_client_secret))
        return fail(w, MCP_EINVAL, "\"oauth\": \"idpTokenEndpoint\", \"idpClientId\" and "
                                   "\"idpClientSecretEnv\" are for \"grant\": \"enterprise\"");
    if (asserted != (c->oauth_assertion_file != NULL))
        return fail(w, MCP_EINVAL, "\"oauth\": \"assertionFile\" goes with \"grant\": "
                                   "\"jwt_bearer\" or \"enterprise\", and those grants need it");
    if (enterprise && check_enterprise(w, c) != MCP_OK)
        return MCP_EINVAL;
    if (c->oauth_grant != MCP_OAUTH_CLIENT_CREDENTIALS) {
        return c->oauth_private_key_pem
                   ? fail(w, MCP_EINVAL, "\"oauth\": \"privateKeyFile\" is for \"grant\": "
                                         "\"client_credentials\"")
                   : MCP_OK;
    }
    if (!c->oauth_client_id || !c->oauth_client_secret == !c->oauth_private_key_pem)
        return fail(w, MCP_EINVAL, "\"oauth\": the client credentials grant needs \"clientId\" "
                                   "and either \"clientSecretEnv\" or \"privateKeyFile\"");
    if (c->oauth_private_key_pem) {
        uint8_t key[OAUTH_ES256_KEY_SIZE];
        mcp_error_t err = {0};
        int rc = oauth_es256_key_from_pem(c->oauth_private_key_pem, key, &err);
        explicit_bzero(key, sizeof key);
        if (rc != MCP_OK)
            return fail(w, rc, "\"oauth\": \"privateKeyFile\": %s", err.message);
    }
    return MCP_OK;
}

/* A secret given by the name of the environment variable holding it
 * ("clientSecretEnv", "idpClientSecretEnv"), copied into *out. */
static int read_secret_env(const where_t *w, const char *key, const json_t *value, char **out)
{
    const char *secret = json_is_string(value) ? getenv(json_string_value(value)) : NULL;
    if (!secret || !secret[0])
        return fail(w, MCP_EINVAL, "\"oauth\": \"%s\" must name a set environment variable",
                    key);
    return (*out = strdup(secret)) ? MCP_OK : fail(w, MCP_ENOMEM, "out of memory");
}

/* "oauth": true, false, or an object naming the client (and the grant). */
static int read_oauth(const where_t *w, const json_t *entry, bool http, mcp_server_config_t *out)
{
    const json_t *oauth = json_object_get(entry, "oauth");
    if (!oauth || !http)
        return MCP_OK; /* none, or warned about */
    if (json_is_boolean(oauth)) {
        out->oauth = json_is_true(oauth);
    } else if (json_is_object(oauth)) {
        out->oauth = true;
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)oauth, key, value) {
            char **slot = strcmp(key, "clientId") == 0            ? &out->oauth_client_id
                          : strcmp(key, "clientMetadataUrl") == 0 ? &out->oauth_client_metadata_url
                          : strcmp(key, "assertionFile") == 0     ? &out->oauth_assertion_file
                          : strcmp(key, "idpTokenEndpoint") == 0  ? &out->oauth_idp_token_endpoint
                          : strcmp(key, "idpClientId") == 0       ? &out->oauth_idp_client_id
                          : strcmp(key, "issuer") == 0            ? &out->oauth_issuer
                                                                  : NULL;
            if (slot && !(*slot = string_of(w, key, value)))
                return MCP_EINVAL;
            if (strcmp(key, "grant") == 0) {
                const char *grant = json_string_value(value);
                if (grant && strcmp(grant, "client_credentials") == 0)
                    out->oauth_grant = MCP_OAUTH_CLIENT_CREDENTIALS;
                else if (grant && strcmp(grant, "jwt_bearer") == 0)
                    out->oauth_grant = MCP_OAUTH_JWT_BEARER;
                else if (grant && strcmp(grant, "enterprise") == 0)
                    out->oauth_grant = MCP_OAUTH_ENTERPRISE;
                else if (!grant || strcmp(grant, "authorization_code") != 0)
                    return fail(w, MCP_EINVAL, "\"oauth\": \"grant\" must be "
                                               "\"authorization_code\", \"client_credentials\", "
                                               "\"jwt_bearer\" or \"enterprise\"");
            } else if (strcmp(key, "dpop") == 0) {
                if (!json_is_boolean(value))
                    return fail(w, MCP_EINVAL, "\"oauth\": \"dpop\" must be true or false");
                out->oauth_dpop = json_is_true(value);
            } else if (strcmp(key, "privateKeyFile") == 0) {
                if (read_key_file(w, value, &out->oauth_private_key_pem) != MCP_OK)
                    return MCP_EINVAL;
            } else if (strcmp(key, "clientSecretEnv") == 0) {
                if (read_secret_env(w, key, value, &out->oauth_client_secret) != MCP_OK)
                    return MCP_EINVAL;
            } else if (strcmp(key, "idpClientSecretEnv") == 0) {
                if (read_secret_env(w, key, value, &out->oauth_idp_client_secret) != MCP_OK)
                    return MCP_EINVAL;
            } else if (!slot) {
                warn(w, "unknown key \"oauth.%s\" ignored", key);
            }
        }
        int rc = check_oauth_client(w, out);
        if (rc != MCP_OK)
            return rc;
    } else {
        return fail(w, MCP_EINVAL, "\"oauth\" must be true, false or an object");
    }
    if (out->oauth && out->token)
        return fail(w, MCP_EINVAL, "give a token or \"oauth\", not both");
    return MCP_OK;
}

/* The keys of an entry, and which transport each belongs to. */
typedef enum { FOR_BOTH, FOR_STDIO, FOR_HTTP } key_use_t;

static const struct {
    const char *key;
    key_use_t use;
} known_keys[] = {
    {"type", FOR_BOTH},     {"era", FOR_BOTH},    {"timeoutMs", FOR_BOTH},
    {"command", FOR_STDIO}, {"args", FOR_STDIO},  {"env", FOR_STDIO},
    {"cwd", FOR_STDIO},     {"url", FOR_HTTP},    {"headers", FOR_HTTP},
    {"token", FOR_HTTP},    {"tokenEnv", FOR_HTTP},   {"oauth", FOR_HTTP},
};

/* Warns about the keys this library does not use for the entry. */
static void warn_unused_keys(const where_t *w, const json_t *entry, bool http)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)entry, key, value) {
        size_t i = 0;
        while (i < sizeof known_keys / sizeof known_keys[0] && strcmp(known_keys[i].key, key) != 0)
            i++;
        if (i == sizeof known_keys / sizeof known_keys[0])
            warn(w, "unknown key \"%s\" ignored", key);
        else if (known_keys[i].use == (http ? FOR_STDIO : FOR_HTTP))
            warn(w, "\"%s\" is for %s servers; ignored", key, http ? "stdio" : "HTTP");
    }
}

/* One server's entry into *out (which the caller clears on failure). */
static int read_entry(const where_t *w, const json_t *entry, mcp_server_config_t *out)
{
    if (!json_is_object(entry))
        return fail(w, MCP_EINVAL, "the entry must be an object");
    const json_t *type = json_object_get(entry, "type");
    const char *t = json_string_value(type);
    if (type && !t)
        return fail(w, MCP_EINVAL, "\"type\" must be a string");
    if (t && strcmp(t, "stdio") != 0 && strcmp(t, "http") != 0 &&
        strcmp(t, "streamable-http") != 0 && strcmp(t, "sse") != 0)
        return fail(w, MCP_EINVAL, "unknown \"type\" \"%s\" (stdio, http, streamable-http or sse)",
                    t);
    bool has_command = json_object_get(entry, "command") != NULL;
    bool has_url = json_object_get(entry, "url") != NULL;
    if (has_command == has_url)
        return fail(w, MCP_EINVAL, "give either \"command\" (stdio) or \"url\" (HTTP)");
    if (t && (strcmp(t, "stdio") == 0) != has_command)
        return fail(w, MCP_EINVAL, "\"type\" \"%s\" does not match \"%s\"", t,
                    has_command ? "command" : "url");
    warn_unused_keys(w, entry, has_url);
    if (!(out->name = strdup(w->server)))
        return fail(w, MCP_ENOMEM, "out of memory");

    int rc;
    if (has_command) {
        const json_t *cwd = json_object_get(entry, "cwd");
        rc = read_argv(w, entry, out);
        if (rc == MCP_OK)
            rc = read_pairs(w, entry, "env", "=", &out->env);
        if (rc == MCP_OK && cwd && !(out->cwd = string_of(w, "cwd", cwd)))
            rc = MCP_EINVAL;
    } else {
        rc = (out->url = string_of(w, "url", json_object_get(entry, "url"))) ? MCP_OK
                                                                              : MCP_EINVAL;
        if (rc == MCP_OK && strncmp(out->url, "http://", 7) != 0 &&
            strncmp(out->url, "https://", 8) != 0)
            rc = fail(w, MCP_EINVAL, "\"url\" must be an http:// or https:// URL");
        if (rc == MCP_OK)
            rc = read_pairs(w, entry, "headers", ": ", &out->headers);
    }
    if (rc == MCP_OK)
        rc = read_era(w, entry, t && strcmp(t, "sse") == 0, out);
    if (rc == MCP_OK)
        rc = read_options(w, entry, has_url, out);
    if (rc == MCP_OK)
        rc = read_oauth(w, entry, has_url, out);
    return rc;
}

/* ------------------------------------------------------------------------
 * Documents
 * ------------------------------------------------------------------------ */

/* The document's "mcpServers" object (borrowed from *root_out, which the
 * caller releases), or NULL after fail(). */
static const json_t *servers_of(const where_t *w, const char *text, size_t len, json_t **root_out)
{
    json_error_t jerr;
    json_t *root = *root_out = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        /* Compiler style, "PATH:LINE:COLUMN: ...", which editors follow. */
        mcp_error_set(w->err, MCP_EINVAL, 0, NULL, "%s%s%d:%d: not valid JSON: %s",
                      w->source ? w->source : "", w->source ? ":" : "", jerr.line, jerr.column,
                      jerr.text);
        return NULL;
    }
    const json_t *servers = json_object_get(root, "mcpServers");
    if (!json_is_object(servers)) {
        fail(w, MCP_EINVAL, "expected an object {\"mcpServers\": {\"NAME\": {...}}}");
        return NULL;
    }
    return servers;
}

static int parse(const where_t *at, const char *text, size_t len, mcp_server_configs_t *out)
{
    memset(out, 0, sizeof *out);
    if (!text)
        return fail(at, MCP_EINVAL, "no document");
    json_t *root;
    const json_t *servers = servers_of(at, text, len, &root);
    int rc = servers ? MCP_OK : MCP_EINVAL;
    if (rc == MCP_OK && json_object_size(servers) > 0 &&
        !(out->items = calloc(json_object_size(servers), sizeof *out->items)))
        rc = fail(at, MCP_ENOMEM, "out of memory");
    const char *name;
    const json_t *entry;
    if (rc == MCP_OK) {
        json_object_foreach((json_t *)servers, name, entry) {
            where_t w = *at;
            w.server = name;
            rc = read_entry(&w, entry, &out->items[out->count++]);
            if (rc != MCP_OK)
                break;
        }
    }
    json_decref(root);
    if (rc != MCP_OK)
        mcp_server_configs_clear(out);
    return rc;
}

int mcp_server_configs_parse(const char *json_text, size_t len, mcp_server_configs_t *out,
                             mcp_log_fn warn_fn, void *warn_user, mcp_error_t *err)
{
    if (!out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "out is required");
    where_t w = {NULL, NULL, warn_fn, warn_user, err};
    return parse(&w, json_text, len, out);
}

/* What a file that is not a regular one is, for messages. */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

static int too_large(const where_t *w, const char *path)
{
    return mcp_error_set(w->err, MCP_EINVAL, 0, NULL,
                         "the configuration file %s is larger than %d MiB, the limit for one",
                         path, MCP_SERVER_CONFIGS_FILE_MAX / (1024 * 1024));
}

/*
 * The whole file at `path` into *text (malloc'd, *len bytes). Only a
 * regular file of at most MCP_SERVER_CONFIGS_FILE_MAX bytes is read: the
 * path may come from the environment ($MCP_CONFIG), and a FIFO would
 * block in open() or read() forever, /dev/zero would never end, and a
 * mistaken multi-gigabyte file would be held in memory whole (then as
 * JSON). The limit is checked on what is read, not only on the size
 * fstat saw, since a file may grow meanwhile.
 */
static int slurp(const where_t *w, const char *path, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    if (!path)
        return mcp_error_set(w->err, MCP_EIO, 0, NULL,
                             "cannot read the configuration file (none): no path given");
    /* O_NONBLOCK: opening a FIFO does not wait for a writer, so that it can
     * be refused below. A regular file's reads ignore the flag. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int why = errno;
        if (fd >= 0)
            close(fd);
        return mcp_error_set(w->err, MCP_EIO, 0, NULL, "cannot read the configuration file %s: %s",
                             path, strerror(why));
    }
    int rc = MCP_OK;
    if (!S_ISREG(st.st_mode))
        rc = mcp_error_set(w->err, MCP_EINVAL, 0, NULL,
                           "the configuration file %s is %s, not a regular file", path,
                           file_kind(st.st_mode));
    else if (st.st_size > MCP_SERVER_CONFIGS_FILE_MAX)
        rc = too_large(w, path);
    /* One byte more than the limit is asked for, to see a file that grew
     * past it. */
    size_t cap = rc == MCP_OK ? (size_t)st.st_size + 1 : 0;
    if (rc == MCP_OK && !(*text = malloc(cap)))
        rc = fail(w, MCP_ENOMEM, "out of memory");
    while (rc == MCP_OK) {
        if (*len == cap) {
            if (cap > MCP_SERVER_CONFIGS_FILE_MAX) {
                rc = too_large(w, path);
                break;
            }
            size_t grown_cap = cap * 2 > (size_t)MCP_SERVER_CONFIGS_FILE_MAX + 1
                                   ? (size_t)MCP_SERVER_CONFIGS_FILE_MAX + 1
                                   : cap * 2;
            char *grown = realloc(*text, grown_cap);
            if (!grown) {
                rc = fail(w, MCP_ENOMEM, "out of memory");
                break;
            }
            *text = grown;
            cap = grown_cap;
        }
        ssize_t n = read(fd, *text + *len, cap - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = mcp_error_set(w->err, MCP_EIO, 0, NULL,
                               "cannot read the configuration file %s: %s", path, strerror(errno));
        if (n <= 0)
            break;
        *len += (size_t)n;
    }
    close(fd);
    if (rc != MCP_OK) {
        free(*text);
        *text = NULL;
        *len = 0;
    }
    return rc;
}

int mcp_server_configs_load(const char *path, mcp_server_configs_t *out, mcp_log_fn warn_fn,
                            void *warn_user, mcp_error_t *err)
{
    if (!out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "out is required");
    memset(out, 0, sizeof *out);
    where_t w = {path ? path : "(no path)", NULL, warn_fn, warn_user, err};
    size_t len;
    char *text;
    int rc = slurp(&w, path, &text, &len);
    if (rc != MCP_OK)
        return rc;
    rc = parse(&w, text, len, out);
    free(text);
    return rc;
}

/* The names of `servers`, comma-separated, into buf. */
static void list_names(const json_t *servers, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)servers, key, v) {
        int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", key);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
    if (!used)
        snprintf(buf, size, "none");
}

int mcp_server_configs_load_one(const char *path, const char *name, mcp_server_config_t *out,
                                mcp_log_fn warn_fn, void *warn_user, mcp_error_t *err)
{
    if (!out || !name)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "name and out are required");
    memset(out, 0, sizeof *out);
    where_t w = {path ? path : "(no path)", NULL, warn_fn, warn_user, err};
    size_t len;
    char *text;
    int rc = slurp(&w, path, &text, &len);
    if (rc != MCP_OK)
        return rc;
    json_t *root;
    const json_t *servers = servers_of(&w, text, len, &root);
    free(text);
    rc = servers ? MCP_OK : MCP_EINVAL;
    const json_t *entry = servers ? json_object_get(servers, name) : NULL;
    if (servers && !entry) {
        char names[MCP_ERROR_MESSAGE_MAX];
        list_names(servers, names, sizeof names);
        rc = mcp_error_set(err, MCP_ENOTFOUND, 0, NULL, "%s has no server \"%s\" (it has: %s)",
                           w.source, name, names);
    } else if (entry) {
        w.server = name;
        rc = read_entry(&w, entry, out);
    }
    json_decref(root);
    if (rc != MCP_OK)
        mcp_server_config_clear(out);
    return rc;
}

char *mcp_server_configs_default_path(void)
{
    const char *explicit = getenv("MCP_CONFIG");
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    const char *dir, *tail;
    struct passwd pw, *found = NULL;
    char pwbuf[4096];
    if (explicit && explicit[0]) {
        dir = explicit;
        tail = "";
    } else if (xdg && xdg[0]) {
        dir = xdg;
        tail = "/mcp/servers.json";
    } else {
        if ((!home || !home[0]) && getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &found) == 0 &&
            found)
            home = found->pw_dir;
        if (!home || !home[0])
            return NULL;
        dir = home;
        tail = "/.config/mcp/servers.json";
    }
    size_t len = strlen(dir) + strlen(tail) + 1;
    char *path = malloc(len);
    if (path)
        snprintf(path, len, "%s%s", dir, tail);
    return path;
}

/* ------------------------------------------------------------------------
 * Copying and clearing
 * ------------------------------------------------------------------------ */

void mcp_server_config_clear(mcp_server_config_t *config)
{
    if (!config)
        return;
    free(config->name);
    strv_free(config->argv);
    strv_free(config->env);
    free(config->cwd);
    free(config->url);
    strv_free(config->headers);
    free(config->token);
    free(config->oauth_client_id);
    if (config->oauth_client_secret)
        explicit_bzero(config->oauth_client_secret, strlen(config->oauth_client_secret));
    free(config->oauth_client_secret);
    free(config->oauth_client_metadata_url);
    free(config->oauth_assertion_file);
    free(config->oauth_idp_token_endpoint);
    free(config->oauth_idp_client_id);
    free(config->oauth_issuer);
    if (config->oauth_idp_client_secret)
        explicit_bzero(config->oauth_idp_client_secret, strlen(config->oauth_idp_client_secret));
    free(config->oauth_idp_client_secret);
    if (config->oauth_private_key_pem)
        explicit_bzero(config->oauth_private_key_pem, strlen(config->oauth_private_key_pem));
    free(config->oauth_private_key_pem);
    memset(config, 0, sizeof *config);
}

void mcp_server_configs_clear(mcp_server_configs_t *configs)
{
    if (!configs)
        return;
    for (size_t i = 0; i < configs->count; i++)
        mcp_server_config_clear(&configs->items[i]);
    free(configs->items);
    memset(configs, 0, sizeof *configs);
}

/* A copy of a NULL-terminated vector (NULL stays NULL); *ok false when
 * memory ran out. */
static char **strv_copy(char *const *v, bool *ok)
{
    if (!v)
        return NULL;
    size_t n = 0;
    while (v[n])
        n++;
    char **copy = calloc(n + 1, sizeof *copy);
    for (size_t i = 0; copy && i < n; i++)
        if (!(copy[i] = strdup(v[i]))) {
            strv_free(copy);
            copy = NULL;
        }
    *ok = *ok && copy;
    return copy;
}

static char *str_copy(const char *s, bool *ok)
{
    char *copy = s ? strdup(s) : NULL;
    *ok = *ok && (!s || copy);
    return copy;
}

int host_config_copy(mcp_server_config_t *to, const mcp_server_config_t *from)
{
    bool ok = true;
    *to = (mcp_server_config_t){
        .name = str_copy(from->name, &ok),
        .argv = strv_copy(from->argv, &ok),
        .env = strv_copy(from->env, &ok),
        .cwd = str_copy(from->cwd, &ok),
        .url = str_copy(from->url, &ok),
        .headers = strv_copy(from->headers, &ok),
        .era = from->era,
        .timeout_ms = from->timeout_ms,
        .token = str_copy(from->token, &ok),
        .oauth = from->oauth,
        .oauth_client_id = str_copy(from->oauth_client_id, &ok),
        .oauth_client_secret = str_copy(from->oauth_client_secret, &ok),
        .oauth_client_metadata_url = str_copy(from->oauth_client_metadata_url, &ok),
        .oauth_grant = from->oauth_grant,
        .oauth_private_key_pem = str_copy(from->oauth_private_key_pem, &ok),
        .oauth_dpop = from->oauth_dpop,
        .oauth_assertion_file = str_copy(from->oauth_assertion_file, &ok),
        .oauth_idp_token_endpoint = str_copy(from->oauth_idp_token_endpoint, &ok),
        .oauth_idp_client_id = str_copy(from->oauth_idp_client_id, &ok),
        .oauth_idp_client_secret = str_copy(from->oauth_idp_client_secret, &ok),
        .oauth_issuer = str_copy(from->oauth_issuer, &ok),
    };
    if (ok)
        return MCP_OK;
    mcp_server_config_clear(to);
    return MCP_ENOMEM;
}

bool host_config_is_stdio(const mcp_server_config_t *config)
{
    return config->argv && config->argv[0] && !config->url;
}

bool host_config_is_http(const mcp_server_config_t *config)
{
    return config->url && !(config->argv && config->argv[0]);
}
