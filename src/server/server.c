/* The server object: identity, options, derived capabilities, the worker
 * pool, the requestState codec and the event hook. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "protocol/json_writer.h"
#include "spin.h"
#include "server/server_internal.h"
#include "server/worker_pool.h"

#define DEFAULT_PAGE_SIZE 100
#define DEFAULT_MAX_INPUT_ROUNDS 8
#define MAX_WORKER_THREADS 64
#define WORKER_IDLE_MS 30000
#define DEFAULT_TASK_TTL_MS (60 * 60 * 1000)
#define DEFAULT_TASK_POLL_MS 500
#define DEFAULT_MAX_TASKS 10000
#define DEFAULT_TASK_SHARE_DIVISOR 10 /* a principal's default share: a tenth */
/* Half the HTTP server's default connection limit: listen streams alone
 * never leave no connection for requests. */
#define DEFAULT_MAX_LISTEN_STREAMS 512
#define DEFAULT_LISTEN_SHARE_DIVISOR 10

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

void server_log(mcp_server_t *srv, mcp_log_level_t level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcp_vlogf(srv->log, srv->log_user, level, fmt, ap);
    va_end(ap);
}

/* {"io.modelcontextprotocol/serverInfo":impl} as compact text, the _meta
 * every result carries, in a malloc'd string; NULL on failure, which only
 * costs the answers written without a tree their shortcut. */
static char *result_meta_text(const json_t *impl, size_t *len)
{
    json_t *meta = json_object();
    char *text = NULL;
    if (meta && json_object_set(meta, MCP_META_SERVER_INFO, (json_t *)impl) == 0)
        text = json_write(meta, JSON_WRITE_COMPACT, len);
    json_decref(meta);
    return text;
}

/* The Implementation object that identifies the server (serverInfo). */
static json_t *build_implementation(const mcp_server_options_t *o, mcp_error_t *err)
{
    json_t *impl = json_pack("{s:s, s:s}", "name", o->name, "version", o->version);
    if (!impl) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL,
                      "server name and version must be valid UTF-8");
        return NULL;
    }
    struct { const char *key, *value; } optional[] = {
        {"title", o->title}, {"description", o->description}, {"websiteUrl", o->website_url}};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
        if (!optional[i].value)
            continue;
        json_t *v = json_string(optional[i].value);
        if (!v) {
            json_decref(impl);
            mcp_error_set(err, MCP_EINVAL, 0, NULL,
                          "server %s is not valid UTF-8", optional[i].key);
            return NULL;
        }
        json_object_set_new(impl, optional[i].key, v);
    }
    if (o->icons) {
        json_error_t jerr;
        json_t *icons = json_loads(o->icons, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_array(icons)) {
            json_decref(icons);
            json_decref(impl);
            mcp_error_set(err, MCP_EINVAL, 0, NULL,
                          "server icons must be a JSON array of Icon objects");
            return NULL;
        }
        json_object_set_new(impl, "icons", icons);
    }
    return impl;
}

/* The options' extensions: an object of objects, or NULL (none). */
static int parse_extensions(const char *text, json_t **out, mcp_error_t *err)
{
    *out = NULL;
    if (!text)
        return MCP_OK;
    json_t *ext = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
    bool ok = json_is_object(ext);
    const char *key;
    json_t *settings;
    json_object_foreach(ext, key, settings) {
        ok = ok && key[0] && json_is_object(settings);
    }
    if (!ok) {
        json_decref(ext);
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "server extensions must be a JSON object of objects, "
                             "{\"<extension id>\": {...}}");
    }
    *out = ext;
    return MCP_OK;
}

/* A counted codec holding the server's reference; takes `codec` (NULL
 * gives NULL). */
static codec_ref_t *codec_ref_new(mcp_codec_t *codec)
{
    codec_ref_t *ref = codec ? malloc(sizeof *ref) : NULL;
    if (!ref) {
        mcp_codec_free(codec);
        return NULL;
    }
    ref->codec = codec;
    atomic_init(&ref->refs, 1);
    return ref;
}

/* The AEAD codec for requestState, over a keyring. Takes `ring`. */
static mcp_codec_t *state_codec(const mcp_server_t *srv, mcp_keyring_t *ring, mcp_error_t *err)
{
    mcp_aead_options_t o = {.ttl_ms = srv->state_ttl_ms,
                            .replay_store = mcp_replay_store_ref(srv->replay_store)};
    return mcp_codec_aead_new(ring, &o, err);
}

/* Keys from the configured file or environment variable. */
static int configure_state_keys(mcp_server_t *srv, const mcp_server_options_t *opts,
                                mcp_error_t *err)
{
    mcp_keyring_t *ring = mcp_keyring_new();
    if (!ring)
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    int rc = opts->state_keys_file ? mcp_keyring_load_file(ring, opts->state_keys_file, err)
                                   : mcp_keyring_load_env(ring, opts->state_keys_env, err);
    if (rc != MCP_OK) {
        mcp_keyring_free(ring);
        char why[MCP_ERROR_MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", err && err->message[0] ? err->message : mcp_strerror(rc));
        return mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL, "requestState keys from %s %s: %s",
                             opts->state_keys_file ? "file" : "environment variable",
                             opts->state_keys_file ? opts->state_keys_file
                                                   : opts->state_keys_env,
                             why);
    }
    mcp_codec_t *codec = state_codec(srv, ring, err);
    if (!codec)
        return MCP_EINVAL;
    srv->codec = codec_ref_new(codec);
    return srv->codec ? MCP_OK
                      : mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
}

mcp_server_t *mcp_server_new(const mcp_server_options_t *opts, mcp_error_t *err)
{
    if (!opts || !opts->name || !opts->name[0] || !opts->version || !opts->version[0]) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL,
                      "a server needs a name and a version");
        return NULL;
    }
    if (opts->cache_scope && strcmp(opts->cache_scope, MCP_CACHE_PRIVATE) != 0 &&
        strcmp(opts->cache_scope, MCP_CACHE_PUBLIC) != 0) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL,
                      "cache_scope must be \"private\" or \"public\"");
        return NULL;
    }
    if (opts->state_ttl_ms < 0) {
        /* Caught here rather than when the first state is sealed, which
         * would fail every round trip that asks the user. */
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "state_ttl_ms must not be negative");
        return NULL;
    }
    mcp_server_t *srv = calloc(1, sizeof *srv);
    if (!srv) {
        mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        return NULL;
    }
    srv->impl = build_implementation(opts, err);
    if (!srv->impl) {
        free(srv);
        return NULL;
    }
    srv->instructions = dup_or_null(opts->instructions);
    if (parse_extensions(opts->extensions, &srv->extensions, err) != MCP_OK) {
        json_decref(srv->impl);
        free(srv->instructions);
        free(srv);
        return NULL;
    }
    srv->page_size = opts->page_size ? opts->page_size : DEFAULT_PAGE_SIZE;
    srv->cache_ttl_ms = opts->cache_ttl_ms == 0  ? MCP_DEFAULT_TTL_MS
                        : opts->cache_ttl_ms < 0 ? 0
                                                 : opts->cache_ttl_ms;
    srv->cache_scope = strdup(opts->cache_scope ? opts->cache_scope : MCP_CACHE_PRIVATE);
    srv->omit_server_info_meta = opts->omit_server_info_meta;
    if (!srv->omit_server_info_meta)
        srv->result_meta_text = result_meta_text(srv->impl, &srv->result_meta_len);
    srv->max_input_rounds =
        opts->max_input_rounds > 0 ? opts->max_input_rounds : DEFAULT_MAX_INPUT_ROUNDS;
    srv->worker_threads = opts->worker_threads;
    srv->spin_us = mcp_spin_budget_us(opts->spin_us);
    srv->log = opts->log;
    srv->log_user = opts->log_user;
    pthread_rwlock_init(&srv->lock, NULL);
    pthread_mutex_init(&srv->pool_lock, NULL);
    pthread_cond_init(&srv->stdio_threads_gone, NULL);
    pthread_mutex_init(&srv->codec_lock, NULL);
    pthread_mutex_init(&srv->live_lock, NULL);
    srv->state_ttl_ms = opts->state_ttl_ms;
    srv->state_single_use = opts->state_single_use;
    /* Made now, not with the codec: every codec of this server, those of
     * key rotations included, is to share it (mcp_server_replay_store). */
    if (srv->state_single_use)
        srv->replay_store = mcp_replay_store_memory_new(0);
    srv->legacy_mode = opts->legacy;
    srv->session_idle_ms = opts->session_idle_ms > 0 ? opts->session_idle_ms : 30 * 60 * 1000;
    srv->session_replay_events =
        opts->session_replay_events ? opts->session_replay_events : 256;
    srv->max_sessions = opts->max_sessions ? opts->max_sessions : 10000;
    srv->legacy_input_timeout_ms =
        opts->legacy_input_timeout_ms > 0 ? opts->legacy_input_timeout_ms : 10 * 60 * 1000;
    srv->task_ttl_ms = opts->task_ttl_ms == 0 ? DEFAULT_TASK_TTL_MS
                       : opts->task_ttl_ms < 0 ? -1
                                               : opts->task_ttl_ms;
    srv->task_poll_ms =
        opts->task_poll_interval_ms > 0 ? opts->task_poll_interval_ms : DEFAULT_TASK_POLL_MS;
    atomic_init(&srv->tasks_offered, false);
    size_t max_tasks = opts->max_tasks ? opts->max_tasks : DEFAULT_MAX_TASKS;
    size_t task_share = opts->max_tasks_per_principal
                            ? opts->max_tasks_per_principal
                            : max_tasks / DEFAULT_TASK_SHARE_DIVISOR;
    srv->tasks = task_store_new(max_tasks, task_share ? task_share : 1);
    pthread_mutex_init(&srv->session_lock, NULL);
    srv->session_store = session_store_memory_new();
    srv->bridge = bridge_new(srv);
    srv->bus = server_event_bus_local_new();
    size_t max_listens =
        opts->max_listen_streams ? opts->max_listen_streams : DEFAULT_MAX_LISTEN_STREAMS;
    size_t listen_share = opts->max_listen_streams_per_principal
                              ? opts->max_listen_streams_per_principal
                              : max_listens / DEFAULT_LISTEN_SHARE_DIVISOR;
    srv->hub = listen_hub_new(max_listens, listen_share ? listen_share : 1);
    if (!srv->bus || !srv->hub || !srv->session_store || !srv->bridge || !srv->tasks ||
        (srv->state_single_use && !srv->replay_store)) {
        /* (The replay store also needs the CSPRNG, which works wherever
         * the keys and ids of a server can be made at all.) */
        mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
        mcp_server_free(srv);
        return NULL;
    }
    srv->bus->deliver = listen_hub_deliver;
    srv->bus->deliver_user = srv->hub;
    for (int k = 0; k < ENTRY_KIND_COUNT; k++)
        registry_init(&srv->reg[k]);
    atomic_init(&srv->shutting_down, false);
    atomic_init(&srv->stdio_stop_fd, -1);
    atomic_init(&srv->stdio_running, false);
    if ((opts->state_keys_file || opts->state_keys_env) &&
        configure_state_keys(srv, opts, err) != MCP_OK) {
        mcp_server_free(srv);
        return NULL;
    }
    return srv;
}

void mcp_server_free(mcp_server_t *srv)
{
    if (!srv)
        return;
    atomic_store(&srv->shutting_down, true);

    /* Subscriptions end gracefully (their result goes out) when a
     * transport is still attached; then everything still in flight is
     * cancelled, outside the lock (cancelling may release sinks), and the
     * pool shutdown below waits for the handlers to return. */
    listen_close_all(srv->hub);
    pthread_mutex_lock(&srv->live_lock);
    size_t n = 0;
    for (mcp_exchange_t *ex = srv->live; ex; ex = ex->live_next)
        n++;
    mcp_exchange_t **live = calloc(n ? n : 1, sizeof *live);
    size_t k = 0;
    for (mcp_exchange_t *ex = srv->live; ex && live; ex = ex->live_next) {
        /* An exchange on this list may be in its last unref (it unlinks
         * itself only then): skip it rather than revive it. */
        if (exchange_try_ref(ex))
            live[k++] = ex;
    }
    pthread_mutex_unlock(&srv->live_lock);
    for (size_t i = 0; i < k; i++) {
        exchange_cancel(live[i]);
        exchange_unref(live[i]);
    }
    free(live);

    pthread_mutex_lock(&srv->pool_lock);
    struct mcp_pool *pool = srv->pool;
    srv->pool = NULL;
    while (srv->stdio_threads > 0) /* handlers on stdio readers, cancelled above */
        pthread_cond_wait(&srv->stdio_threads_gone, &srv->pool_lock);
    pthread_mutex_unlock(&srv->pool_lock);
    mcp_pool_free(pool);

    /* No handler runs any more, and the bridge's timer, which sweeps the
     * task store, stops: the tasks (and the exchanges they keep) can go. */
    bridge_stop_timer(srv->bridge);
    task_store_free(srv->tasks);
    sessions_free_all(srv);
    bridge_free(srv->bridge);
    if (srv->session_store)
        srv->session_store->free(srv->session_store);
    if (srv->bus)
        srv->bus->free(srv->bus);
    listen_hub_free(srv->hub);
    pthread_mutex_destroy(&srv->session_lock);
    for (int r = 0; r < ENTRY_KIND_COUNT; r++)
        registry_clear(&srv->reg[r]);
    skill_list_clear(&srv->skills);
    codec_put(srv->codec);
    mcp_replay_store_free(srv->replay_store);
    json_decref(srv->impl);
    free(srv->result_meta_text);
    json_decref(srv->extensions);
    free(srv->instructions);
    free(srv->cache_scope);
    pthread_rwlock_destroy(&srv->lock);
    pthread_mutex_destroy(&srv->pool_lock);
    pthread_cond_destroy(&srv->stdio_threads_gone);
    pthread_mutex_destroy(&srv->codec_lock);
    pthread_mutex_destroy(&srv->live_lock);
    if (atomic_load(&srv->stdio_stop_fd) >= 0)
        close(atomic_load(&srv->stdio_stop_fd));
    free(srv);
}

int server_run_job(mcp_server_t *srv, void (*fn)(void *), void *arg)
{
    if (atomic_load(&srv->shutting_down))
        return MCP_ECLOSED;
    pthread_mutex_lock(&srv->pool_lock);
    if (!srv->pool) {
        int min = srv->worker_threads;
        if (min <= 0) {
            /* One core thread per CPU but the first, which the event
             * threads need. More core threads than that only take turns:
             * a quick job often finds its thread asleep and pays a futex
             * wake-up, where one busy thread would go straight on to the
             * next job (pooled echo over HTTP at c=16 on 2 CPUs: 42-45k
             * req/s with one, 24-31k with two; 40-41k and an unsteadier
             * 35-50k once a job stopped waking sleepers for nothing). A
             * blocked handler still gets a thread of its own after 5 ms
             * (worker_pool.c). */
            long cpus = sysconf(_SC_NPROCESSORS_ONLN);
            min = cpus > 2 ? (int)cpus - 1 : 1;
        }
        int max = min > MAX_WORKER_THREADS ? min : MAX_WORKER_THREADS;
        srv->pool = mcp_pool_new(min, max, WORKER_IDLE_MS);
        if (srv->pool)
            mcp_pool_set_spin(srv->pool, srv->spin_us);
    }
    struct mcp_pool *pool = srv->pool;
    pthread_mutex_unlock(&srv->pool_lock);
    if (!pool)
        return MCP_ENOMEM;
    return mcp_pool_submit(pool, fn, arg);
}

void codec_put(codec_ref_t *ref)
{
    if (ref && atomic_fetch_sub(&ref->refs, 1) == 1) {
        mcp_codec_free(ref->codec);
        free(ref);
    }
}

codec_ref_t *server_codec_get(mcp_server_t *srv)
{
    pthread_mutex_lock(&srv->codec_lock);
    if (!srv->codec) {
        /* No key was configured: seal with a random key that lives as long
         * as this process. States then neither survive a restart nor open
         * on another instance, which the log says once. */
        mcp_keyring_t *ring = mcp_keyring_new();
        if (ring && mcp_keyring_generate(ring, "ephemeral") == MCP_OK) {
            srv->codec = codec_ref_new(state_codec(srv, ring, NULL));
            server_log(srv, MCP_LOG_WARNING,
                       "no requestState key configured: using a random key; input-required "
                       "round trips will not survive a restart or span instances");
        } else {
            mcp_keyring_free(ring);
        }
    }
    codec_ref_t *ref = srv->codec;
    if (ref)
        atomic_fetch_add(&ref->refs, 1);
    pthread_mutex_unlock(&srv->codec_lock);
    return ref;
}

int mcp_server_set_codec(mcp_server_t *srv, mcp_codec_t *codec)
{
    if (!srv || !codec) {
        mcp_codec_free(codec);
        return MCP_EINVAL;
    }
    codec_ref_t *ref = codec_ref_new(codec);
    if (!ref)
        return MCP_ENOMEM;
    pthread_mutex_lock(&srv->codec_lock);
    codec_ref_t *old = srv->codec;
    srv->codec = ref;
    pthread_mutex_unlock(&srv->codec_lock);
    codec_put(old); /* freed here, or by the last request still using it */
    return MCP_OK;
}

mcp_replay_store_t *mcp_server_replay_store(mcp_server_t *srv)
{
    return srv ? mcp_replay_store_ref(srv->replay_store) : NULL;
}

void server_result_shape(const mcp_server_t *srv, mcp_result_shape_t *shape)
{
    shape->server_info = srv->omit_server_info_meta ? NULL : srv->impl;
    shape->ttl_ms = srv->cache_ttl_ms;
    shape->cache_scope = srv->cache_scope;
}

json_t *server_capabilities(mcp_server_t *srv)
{
    json_t *caps = json_object();
    bool tools = registry_has(srv, ENTRY_TOOL);
    bool prompts = registry_has(srv, ENTRY_PROMPT);
    bool resources = registry_has(srv, ENTRY_RESOURCE) || registry_has(srv, ENTRY_TEMPLATE);
    pthread_rwlock_rdlock(&srv->lock);
    bool completions = srv->complete != NULL;
    pthread_rwlock_unlock(&srv->lock);

    /* Every change of these lists, and every resource update, reaches the
     * subscriptions/listen streams that ask for it. set_new takes its value
     * even when it fails, so one check at the end covers every member: a
     * capability left out would tell clients the server lacks it. */
    int bad = 0;
    if (tools)
        bad |= json_object_set_new(caps, "tools", json_pack("{s:b}", "listChanged", 1));
    if (prompts)
        bad |= json_object_set_new(caps, "prompts", json_pack("{s:b}", "listChanged", 1));
    if (resources)
        bad |= json_object_set_new(caps, "resources",
                                   json_pack("{s:b, s:b}", "listChanged", 1, "subscribe", 1));
    if (completions)
        bad |= json_object_set_new(caps, "completions", json_object());
    /* Handlers may log (only to clients that opt in per request). */
    bad |= json_object_set_new(caps, "logging", json_object());
    if (bad) {
        json_decref(caps);
        return NULL;
    }
    return caps;
}

void server_publish(mcp_server_t *srv, server_event_kind_t kind, const char *uri)
{
    server_event_t ev = {.kind = kind, .uri = uri};
    int rc = srv->bus->publish(srv->bus, &ev);
    if (rc != MCP_OK)
        server_log(srv, MCP_LOG_WARNING, "could not publish an event: %s", mcp_strerror(rc));
}

int mcp_server_notify_resource_updated(mcp_server_t *srv, const char *uri)
{
    if (!srv || !uri)
        return MCP_EINVAL;
    server_publish(srv, SERVER_EVENT_RESOURCE_UPDATED, uri);
    return MCP_OK;
}

int mcp_server_set_completion(mcp_server_t *srv, mcp_complete_fn handler, void *user)
{
    if (!srv)
        return MCP_EINVAL;
    pthread_rwlock_wrlock(&srv->lock);
    srv->complete = handler;
    srv->complete_user = user;
    pthread_rwlock_unlock(&srv->lock);
    return MCP_OK;
}
