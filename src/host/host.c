/*
 * The host object: its options, its servers (each with a supervisor thread
 * once connecting starts), their states, and the clients it lends out.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "host/host_internal.h"
#include "clock.h"

#define DEFAULT_SEPARATOR "__"
#define DEFAULT_RETRY_INITIAL_MS 500
#define DEFAULT_RETRY_MAX_MS 30000


void host_log(mcp_host_t *h, mcp_log_level_t level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcp_vlogf(h->client.log, h->client.log_user, level, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------
 * Creating and freeing
 * ------------------------------------------------------------------------ */

/* Keeps the host's own copies of the client options' strings. */
static bool copy_client_strings(mcp_host_t *h)
{
    const char **fields[] = {&h->client.name,
                             &h->client.version,
                             &h->client.title,
                             &h->client.protocol_version,
                             &h->client.legacy_protocol_version,
                             &h->client.extensions,
                             &h->client.log_level};
    _Static_assert(sizeof fields / sizeof fields[0] ==
                       sizeof h->client_strings / sizeof h->client_strings[0],
                   "one copy per string option");
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (!*fields[i])
            continue;
        if (!(h->client_strings[i] = strdup(*fields[i])))
            return false;
        *fields[i] = h->client_strings[i];
    }
    return true;
}

static void free_host(mcp_host_t *h)
{
    for (size_t i = 0; i < sizeof h->client_strings / sizeof h->client_strings[0]; i++)
        free(h->client_strings[i]);
    free(h->separator);
    free(h->oauth_redirect_uri);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->attempted);
    pthread_cond_destroy(&h->reap_wake);
    free(h);
}

static int check_options(const mcp_host_options_t *opts, mcp_error_t *err)
{
    const mcp_client_options_t *c = &opts->client;
    if (c->elicit || c->sample || c->roots || c->on_log || c->on_closed)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "the host's callbacks replace the client's input, log and "
                             "on_closed callbacks: leave those NULL");
    if (opts->separator && !opts->separator[0])
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the separator must not be empty");
    if (opts->retry_initial_ms < 0 || opts->retry_max_ms < 0)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "retry delays must not be negative");
    int64_t initial = opts->retry_initial_ms ? opts->retry_initial_ms : DEFAULT_RETRY_INITIAL_MS;
    int64_t max = opts->retry_max_ms ? opts->retry_max_ms : DEFAULT_RETRY_MAX_MS;
    if (max < initial)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "retry_max_ms (%lld) is below retry_initial_ms (%lld)",
                             (long long)max, (long long)initial);
    if (opts->oauth_authorize && !opts->oauth_redirect_uri)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "oauth_authorize needs its oauth_redirect_uri");
    return MCP_OK;
}

mcp_host_t *mcp_host_new(const mcp_host_options_t *opts, mcp_error_t *err)
{
    if (!opts) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "options are required");
        return NULL;
    }
    if (check_options(opts, err) != MCP_OK)
        return NULL;
    /* The client options as every client will get them, tried once now so
     * that a bad one is reported here rather than by each connection. */
    mcp_client_options_t tried = opts->client;
    tried.elicit_modes = opts->callbacks.elicit_modes;
    mcp_client_t *probe = mcp_client_new(&tried, err);
    if (!probe)
        return NULL;
    mcp_client_free(probe);

    mcp_host_t *h = calloc(1, sizeof *h);
    if (!h) {
        mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->attempted, NULL);
    pthread_cond_init(&h->reap_wake, NULL);
    h->client = opts->client;
    h->client.previous_verdict = NULL;
    h->cb = opts->callbacks;
    h->separator = strdup(opts->separator ? opts->separator : DEFAULT_SEPARATOR);
    h->retry_initial_ms = opts->retry_initial_ms ? opts->retry_initial_ms
                                                 : DEFAULT_RETRY_INITIAL_MS;
    h->retry_max_ms = opts->retry_max_ms ? opts->retry_max_ms : DEFAULT_RETRY_MAX_MS;
    h->oauth_authorize = opts->oauth_authorize;
    h->oauth_authorize_user = opts->oauth_authorize_user;
    bool oauth_ok = !opts->oauth_authorize ||
                    (h->oauth_redirect_uri = strdup(opts->oauth_redirect_uri)) != NULL;
    if (!h->separator || !copy_client_strings(h) || !oauth_ok) {
        free_host(h);
        mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        return NULL;
    }
    h->separator_len = strlen(h->separator);
    return h;
}

static void server_free(host_server_t *s)
{
    mcp_oauth_free(s->oauth);
    mcp_server_config_clear(&s->config);
    host_lists_clear(&s->lists);
    free(s->error);
    pthread_cond_destroy(&s->wake);
    free(s);
}

/* Asks a server's supervisor to stop, the server being out of the list;
 * host->lock held. */
static void server_stop_locked(host_server_t *s)
{
    s->stop = true;
    pthread_cond_signal(&s->wake);
    /* mcp_host_connect may have been waiting for it alone. */
    pthread_cond_broadcast(&s->host->attempted);
}

/* Waits for a stopped server's supervisor (which retires its connection)
 * and frees the server, no longer in the list. */
static void server_join_free(host_server_t *s)
{
    if (s->has_thread)
        pthread_join(s->thread, NULL);
    server_free(s);
}

void mcp_host_free(mcp_host_t *host)
{
    if (!host)
        return;
    /* All stop at once: each may be in the middle of a connection attempt. */
    pthread_mutex_lock(&host->lock);
    host_server_t *servers = host->servers;
    host->servers = NULL;
    for (host_server_t *s = servers; s; s = s->next)
        server_stop_locked(s);
    pthread_mutex_unlock(&host->lock);
    while (servers) {
        host_server_t *next = servers->next;
        server_join_free(servers);
        servers = next;
    }
    /* What is left is referenced by acquired clients, and by the calls a
     * callback of theirs may still be making (no new one finds a
     * server); and the reaper's queue: all freed here, now. */
    pthread_mutex_lock(&host->lock);
    host->freeing = true;
    host_conn_t *conns = host->conns;
    host->conns = NULL;
    host->reaper_stop = true;
    pthread_cond_signal(&host->reap_wake);
    bool has_reaper = host->has_reaper;
    pthread_mutex_unlock(&host->lock);
    /* It drains its queue first: a client it frees may be ending a call,
     * made from a callback, on one of `conns`. */
    if (has_reaper)
        pthread_join(host->reaper, NULL);
    /* Left over only when the reaper could not start. */
    pthread_mutex_lock(&host->lock);
    host_conn_t *queued = host->reap;
    host->reap = NULL;
    pthread_mutex_unlock(&host->lock);
    while (queued) {
        host_conn_t *next = queued->next;
        host_conn_free(queued);
        queued = next;
    }
    while (conns) {
        host_conn_t *next = conns->next;
        host_conn_free(conns);
        conns = next;
    }
    free_host(host);
}

/* ------------------------------------------------------------------------
 * Servers
 * ------------------------------------------------------------------------ */

host_server_t *host_find_locked(mcp_host_t *h, const char *name, size_t len)
{
    for (host_server_t *s = h->servers; s; s = s->next)
        if (strlen(s->config.name) == len && memcmp(s->config.name, name, len) == 0)
            return s;
    return NULL;
}

static int check_config(const mcp_host_t *h, const mcp_server_config_t *config, mcp_error_t *err)
{
    if (!config->name || !config->name[0])
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "a server needs a name");
    if (strstr(config->name, h->separator))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "server \"%s\": the name contains the separator \"%s\" of "
                             "aggregated names", config->name, h->separator);
    /* An aggregated name is split at the first separator: a name that
     * ends with the separator's beginning ("notes_" before "__") would
     * move that split into the name. */
    size_t name_len = strlen(config->name);
    for (size_t k = 1; k < h->separator_len && k <= name_len; k++)
        if (memcmp(config->name + name_len - k, h->separator, k) == 0)
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "server \"%s\": the name ends with \"%.*s\", the beginning "
                                 "of the separator \"%s\" of aggregated names", config->name,
                                 (int)k, h->separator, h->separator);
    if (!host_config_is_stdio(config) && !host_config_is_http(config))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "server \"%s\": give either a command (stdio) or a URL (HTTP)",
                             config->name);
    if (config->era < MCP_CLIENT_ERA_AUTO || config->era > MCP_CLIENT_ERA_LEGACY)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "server \"%s\": no such era",
                             config->name);
    return MCP_OK;
}

static host_server_t *server_new(mcp_host_t *h, const mcp_server_config_t *config)
{
    host_server_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (host_config_copy(&s->config, config) != MCP_OK) {
        free(s);
        return NULL;
    }
    /* Only the authorization code grant has a user sign in: the others
     * need no authorize callback. */
    bool machine = config->oauth_grant != MCP_OAUTH_AUTHORIZATION_CODE;
    if (config->oauth && (h->oauth_authorize || machine)) {
        mcp_error_t err = {0};
        mcp_oauth_options_t options = {
            .redirect_uri = h->oauth_redirect_uri,
            .authorize = h->oauth_authorize,
            .authorize_user = h->oauth_authorize_user,
            .client_name = h->client.name,
        };
        mcp_server_config_oauth_options(&s->config, &options); /* s->config outlives s->oauth */
        s->oauth = mcp_oauth_new(&options, &err);
        mcp_error_clear(&err);
        if (!s->oauth) { /* the options were checked: memory ran out */
            mcp_server_config_clear(&s->config);
            free(s);
            return NULL;
        }
    } else if (config->oauth) {
        host_log(h, MCP_LOG_WARNING,
                 "server \"%s\" asks for an OAuth sign-in, and the host has no "
                 "oauth_authorize to sign in with: it connects without a token",
                 config->name);
    }
    s->host = h;
    s->state = MCP_HOST_CONNECTING;
    mcp_clock_cond_init(&s->wake);
    return s;
}

static int start_locked(host_server_t *s)
{
    if (s->has_thread)
        return MCP_OK;
    if (pthread_create(&s->thread, NULL, host_supervise, s) != 0)
        return MCP_ENOMEM;
    s->has_thread = true;
    return MCP_OK;
}

/* Adds `n` servers, all or none. */
static int add_servers(mcp_host_t *h, const mcp_server_config_t *configs, size_t n,
                       mcp_error_t *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = check_config(h, &configs[i], err);
        if (rc != MCP_OK)
            return rc;
    }
    host_server_t *head = NULL, **tail = &head;
    for (size_t i = 0; i < n; i++, tail = &(*tail)->next)
        if (!(*tail = server_new(h, &configs[i]))) {
            while (head) {
                host_server_t *next = head->next;
                server_free(head);
                head = next;
            }
            return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        }

    pthread_mutex_lock(&h->lock);
    int rc = MCP_OK;
    for (host_server_t *s = head; rc == MCP_OK && s; s = s->next) {
        size_t len = strlen(s->config.name);
        bool twice = false;
        for (host_server_t *t = head; t != s; t = t->next)
            twice |= strcmp(t->config.name, s->config.name) == 0;
        if (twice || host_find_locked(h, s->config.name, len))
            rc = mcp_error_set(err, MCP_EEXIST, 0, NULL, "there is already a server \"%s\"",
                               s->config.name);
    }
    if (rc == MCP_OK) {
        host_server_t **end = &h->servers;
        while (*end)
            end = &(*end)->next;
        *end = head;
        for (host_server_t *s = head; h->connecting && s; s = s->next)
            if (start_locked(s) != MCP_OK)
                host_log(h, MCP_LOG_ERROR, "server \"%s\": cannot start its thread; "
                         "mcp_host_connect will try again", s->config.name);
        head = NULL;
    }
    pthread_mutex_unlock(&h->lock);
    while (head) {
        host_server_t *next = head->next;
        server_free(head);
        head = next;
    }
    return rc;
}

int mcp_host_add_server(mcp_host_t *host, const mcp_server_config_t *config, mcp_error_t *err)
{
    if (!host || !config)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "host and config are required");
    return add_servers(host, config, 1, err);
}

mcp_oauth_t *mcp_host_server_oauth(mcp_host_t *host, const char *name)
{
    if (!host || !name)
        return NULL;
    pthread_mutex_lock(&host->lock);
    host_server_t *s = host_find_locked(host, name, strlen(name));
    mcp_oauth_t *oauth = s ? s->oauth : NULL;
    pthread_mutex_unlock(&host->lock);
    return oauth;
}

/* The parser's warnings go to the library diagnostics. */
static void config_warning(void *user, mcp_log_level_t level, const char *msg)
{
    mcp_host_t *h = user;
    host_log(h, level, "%s", msg);
}

int mcp_host_load_config(mcp_host_t *host, const char *json_text, size_t len, mcp_error_t *err)
{
    if (!host)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "host is required");
    mcp_server_configs_t configs;
    int rc = mcp_server_configs_parse(json_text, len, &configs, config_warning, host, err);
    if (rc == MCP_OK)
        rc = add_servers(host, configs.items, configs.count, err);
    mcp_server_configs_clear(&configs);
    return rc;
}

int mcp_host_load_config_file(mcp_host_t *host, const char *path, mcp_error_t *err)
{
    if (!host)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "host is required");
    mcp_server_configs_t configs;
    int rc = mcp_server_configs_load(path, &configs, config_warning, host, err);
    if (rc == MCP_OK)
        rc = add_servers(host, configs.items, configs.count, err);
    mcp_server_configs_clear(&configs);
    return rc;
}

int mcp_host_remove_server(mcp_host_t *host, const char *name)
{
    if (!host || !name)
        return MCP_EINVAL;
    pthread_mutex_lock(&host->lock);
    host_server_t **p = &host->servers;
    while (*p && strcmp((*p)->config.name, name) != 0)
        p = &(*p)->next;
    host_server_t *s = *p;
    if (s) {
        *p = s->next;
        server_stop_locked(s);
    }
    pthread_mutex_unlock(&host->lock);
    if (!s)
        return MCP_ENOTFOUND;
    server_join_free(s);
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Connecting and states
 * ------------------------------------------------------------------------ */

static bool all_attempted_locked(const mcp_host_t *h)
{
    for (const host_server_t *s = h->servers; s; s = s->next)
        if (s->has_thread && !s->attempted)
            return false;
    return true;
}

int mcp_host_connect(mcp_host_t *host, int64_t wait_ms)
{
    if (!host)
        return MCP_EINVAL;
    pthread_mutex_lock(&host->lock);
    host->connecting = true;
    int rc = MCP_OK;
    for (host_server_t *s = host->servers; s; s = s->next)
        if (start_locked(s) != MCP_OK)
            rc = MCP_ENOMEM;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    if (wait_ms > 0) {
        deadline.tv_sec += (time_t)(wait_ms / 1000);
        deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    while (wait_ms != 0 && !all_attempted_locked(host)) {
        if (wait_ms < 0)
            pthread_cond_wait(&host->attempted, &host->lock);
        else if (pthread_cond_timedwait(&host->attempted, &host->lock, &deadline) == ETIMEDOUT)
            break;
    }
    int ready = 0;
    for (host_server_t *s = host->servers; s; s = s->next)
        ready += s->state == MCP_HOST_READY;
    pthread_mutex_unlock(&host->lock);
    return rc != MCP_OK ? rc : ready;
}

int mcp_host_server_state(mcp_host_t *host, const char *name, mcp_host_server_state_t *state,
                          char **error)
{
    if (error)
        *error = NULL;
    if (!host || !name || !state)
        return MCP_EINVAL;
    int rc = MCP_ENOTFOUND;
    pthread_mutex_lock(&host->lock);
    host_server_t *s = host_find_locked(host, name, strlen(name));
    if (s) {
        rc = MCP_OK;
        *state = s->state;
        if (error && s->state == MCP_HOST_FAILED && s->error && !(*error = strdup(s->error)))
            rc = MCP_ENOMEM;
    }
    pthread_mutex_unlock(&host->lock);
    return rc;
}

json_t *mcp_host_servers(mcp_host_t *host)
{
    if (!host)
        return NULL;
    json_t *names = json_array();
    bool ok = names != NULL;
    pthread_mutex_lock(&host->lock);
    for (host_server_t *s = host->servers; ok && s; s = s->next)
        ok = json_array_append_new(names, json_string(s->config.name)) == 0;
    pthread_mutex_unlock(&host->lock);
    if (!ok) {
        json_decref(names);
        return NULL;
    }
    return names;
}

/* ------------------------------------------------------------------------
 * Lending clients
 * ------------------------------------------------------------------------ */

mcp_client_t *mcp_host_client_acquire(mcp_host_t *host, const char *name)
{
    if (!host || !name)
        return NULL;
    mcp_client_t *client = NULL;
    pthread_mutex_lock(&host->lock);
    host_server_t *s = host_find_locked(host, name, strlen(name));
    if (s && s->state == MCP_HOST_READY && s->conn) {
        host_conn_ref_locked(s->conn);
        client = s->conn->client;
    }
    pthread_mutex_unlock(&host->lock);
    return client;
}

void mcp_host_client_release(mcp_host_t *host, mcp_client_t *client)
{
    if (!host || !client)
        return;
    pthread_mutex_lock(&host->lock);
    host_conn_t *conn = host->conns;
    while (conn && conn->client != client)
        conn = conn->next;
    pthread_mutex_unlock(&host->lock);
    /* The caller's reference keeps it alive until this drops it. */
    if (conn)
        host_conn_release(conn);
}
