/*
 * Legacy sessions (see session.h): the session object, its resumable
 * stream of server messages, and the in-memory session store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/secrets.h"
#include "server/server_internal.h"
#include "server/session.h"

/* Slots of a session's replay ring when its first message comes; it
 * doubles from there up to session_replay_events. */
#define RING_FIRST_SLOTS 8

/* ------------------------------------------------------------------------
 * The in-memory store
 * ------------------------------------------------------------------------ */

typedef struct memory_store {
    session_store_t ops;
    pthread_mutex_t lock;
    json_t *records; /* id -> {"record": ..., "expires": ms} */
    int64_t next_sweep_ms;
} memory_store_t;

/* How often a lookup also drops the expired records. */
#define MEMORY_SWEEP_MS 1000

static int memory_save(session_store_t *store, const char *id, const json_t *record,
                       int64_t expires_ms)
{
    memory_store_t *m = (memory_store_t *)store;
    json_t *entry = json_pack("{s:O, s:I}", "record", record, "expires", (json_int_t)expires_ms);
    if (!entry)
        return MCP_ENOMEM;
    pthread_mutex_lock(&m->lock);
    int rc = json_object_set_new(m->records, id, entry) == 0 ? MCP_OK : MCP_ENOMEM;
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static json_t *memory_load(session_store_t *store, const char *id, int64_t now_ms)
{
    memory_store_t *m = (memory_store_t *)store;
    json_t *record = NULL;
    pthread_mutex_lock(&m->lock);
    /* Expired records go in a sweep at most once a second, so the table
     * never holds much more than the live sessions, and a lookup is not a
     * walk over all of them. */
    const char *key;
    void *tmp;
    json_t *entry;
    if (now_ms >= m->next_sweep_ms) {
        m->next_sweep_ms = now_ms + MEMORY_SWEEP_MS;
        json_object_foreach_safe(m->records, tmp, key, entry) {
            if (json_integer_value(json_object_get(entry, "expires")) <= now_ms)
                json_object_del(m->records, key);
        }
    }
    entry = json_object_get(m->records, id);
    if (entry && json_integer_value(json_object_get(entry, "expires")) > now_ms)
        record = json_incref(json_object_get(entry, "record"));
    pthread_mutex_unlock(&m->lock);
    return record;
}

static void memory_remove(session_store_t *store, const char *id)
{
    memory_store_t *m = (memory_store_t *)store;
    pthread_mutex_lock(&m->lock);
    json_object_del(m->records, id);
    pthread_mutex_unlock(&m->lock);
}

static void memory_free(session_store_t *store)
{
    memory_store_t *m = (memory_store_t *)store;
    json_decref(m->records);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

session_store_t *session_store_memory_new(void)
{
    memory_store_t *m = calloc(1, sizeof *m);
    if (!m || !(m->records = json_object())) {
        free(m);
        return NULL;
    }
    m->ops.save = memory_save;
    m->ops.load = memory_load;
    m->ops.remove = memory_remove;
    m->ops.free = memory_free;
    pthread_mutex_init(&m->lock, NULL);
    return &m->ops;
}

/* ------------------------------------------------------------------------
 * Sessions
 * ------------------------------------------------------------------------ */

int session_mint_id(char out[65])
{
    unsigned char raw[32];
    if (mcp_secret_random(raw, sizeof raw) != MCP_OK)
        return MCP_EIO;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return MCP_OK;
}

static mcp_session_t *session_alloc(struct mcp_server *srv, const char *id)
{
    mcp_session_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (id && !(s->id = strdup(id))) {
        free(s);
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->srv = srv;
    s->log_level = -1;
    s->subscriptions = json_array();
    s->ring_limit = srv->session_replay_events;
    s->next_seq = 1;
    pthread_mutex_init(&s->lock, NULL);
    if (!s->subscriptions) {
        session_unref(s);
        return NULL;
    }
    return s;
}

mcp_session_t *session_new(struct mcp_server *srv, const char *id, const json_t *init_params)
{
    mcp_session_t *s = session_alloc(srv, id);
    if (!s)
        return NULL;
    const char *requested = json_string_value(json_object_get(init_params, "protocolVersion"));
    s->protocol_version = strdup(mcp_legacy_negotiate_version(requested));
    json_t *caps = json_object_get(init_params, "capabilities");
    s->client_caps = json_is_object(caps) ? json_deep_copy(caps) : json_object();
    json_t *info = json_object_get(init_params, "clientInfo");
    s->client_info = json_is_object(info) ? json_deep_copy(info) : NULL;
    if (!s->protocol_version || !s->client_caps) {
        session_unref(s);
        return NULL;
    }
    return s;
}

int session_set_principal(mcp_session_t *s, const char *principal)
{
    free(s->principal);
    s->principal = NULL;
    if (principal && !(s->principal = strdup(principal)))
        return MCP_ENOMEM;
    return MCP_OK;
}

bool session_principal_may_use(const mcp_session_t *s, const char *principal)
{
    return task_principal_equal(s->principal, principal);
}

json_t *session_record(mcp_session_t *s)
{
    pthread_mutex_lock(&s->lock);
    json_t *r = json_pack("{s:s, s:O, s:O?, s:i, s:O, s:s?}", "protocolVersion",
                          s->protocol_version, "capabilities", s->client_caps, "clientInfo",
                          s->client_info, "logLevel", s->log_level, "subscriptions",
                          s->subscriptions, "principal", s->principal);
    pthread_mutex_unlock(&s->lock);
    return r;
}

mcp_session_t *session_from_record(struct mcp_server *srv, const char *id, const json_t *record)
{
    json_t *params = json_pack("{s:O?, s:O?, s:O?}", "protocolVersion",
                               json_object_get(record, "protocolVersion"), "capabilities",
                               json_object_get(record, "capabilities"), "clientInfo",
                               json_object_get(record, "clientInfo"));
    mcp_session_t *s = params ? session_new(srv, id, params) : NULL;
    json_decref(params);
    if (!s)
        return NULL;
    /* The binding travels with the record: any instance enforces it. */
    json_t *principal = json_object_get(record, "principal");
    if (json_is_string(principal) &&
        session_set_principal(s, json_string_value(principal)) != MCP_OK) {
        session_unref(s);
        return NULL;
    }
    json_t *level = json_object_get(record, "logLevel");
    s->log_level = json_is_integer(level) ? (int)json_integer_value(level) : -1;
    json_t *subs = json_object_get(record, "subscriptions");
    if (json_is_array(subs))
        json_array_extend(s->subscriptions, subs);
    return s;
}

void session_ref(mcp_session_t *s)
{
    atomic_fetch_add(&s->refs, 1);
}

void session_unref(mcp_session_t *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (size_t i = 0; i < s->ring_count; i++)
        json_decref(s->ring[(s->ring_start + i) % s->ring_cap].msg);
    free(s->ring);
    json_decref(s->subscriptions);
    json_decref(s->client_caps);
    json_decref(s->client_info);
    free(s->protocol_version);
    free(s->id);
    free(s->principal);
    mcp_conn_free(s->conn);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Makes the ring (lock held) twice as big, up to its limit, keeping its
 * messages in order. False when it is at its limit or out of memory. */
static bool ring_grow(mcp_session_t *s)
{
    if (s->ring_cap >= s->ring_limit)
        return false;
    size_t cap = s->ring_cap ? s->ring_cap * 2 : RING_FIRST_SLOTS;
    if (cap > s->ring_limit)
        cap = s->ring_limit;
    struct replay_event *ring = malloc(cap * sizeof *ring);
    if (!ring)
        return false;
    for (size_t i = 0; i < s->ring_count; i++)
        ring[i] = s->ring[(s->ring_start + i) % s->ring_cap];
    free(s->ring);
    s->ring = ring;
    s->ring_cap = cap;
    s->ring_start = 0;
    return true;
}

/* Keeps a message for resumption; the oldest goes when the ring is full
 * (or cannot grow: out of memory, a message is lost for resumption only,
 * never for the live stream). */
static uint64_t remember_locked(mcp_session_t *s, json_t *msg)
{
    uint64_t seq = s->next_seq++;
    if (s->ring_count == s->ring_cap && !ring_grow(s) && s->ring_cap == 0)
        return seq;
    if (s->ring_count == s->ring_cap) {
        json_decref(s->ring[s->ring_start].msg);
        s->ring_start = (s->ring_start + 1) % s->ring_cap;
        s->ring_count--;
    }
    size_t at = (s->ring_start + s->ring_count) % s->ring_cap;
    s->ring[at].seq = seq;
    s->ring[at].msg = json_incref(msg);
    s->ring_count++;
    return seq;
}

void session_push(mcp_session_t *s, json_t *msg_new)
{
    if (!msg_new)
        return;
    pthread_mutex_lock(&s->lock);
    if (s->ended) {
        pthread_mutex_unlock(&s->lock);
        json_decref(msg_new);
        return;
    }
    /* stdio: the connection's output; no ids, nothing to resume. */
    if (s->outbound) {
        s->outbound->send(s->outbound, MCP_OUT_NOTIFICATION, msg_new, 0);
        pthread_mutex_unlock(&s->lock);
        json_decref(msg_new);
        return;
    }
    uint64_t seq = remember_locked(s, msg_new);
    mcp_exchange_t *stream = s->stream;
    if (stream)
        exchange_ref(stream);
    pthread_mutex_unlock(&s->lock);
    if (stream) {
        char id[24];
        snprintf(id, sizeof id, "%llu", (unsigned long long)seq);
        exchange_send_event(stream, msg_new, id);
        exchange_unref(stream);
    }
    json_decref(msg_new);
}

void session_end(mcp_session_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->ended = true;
    mcp_exchange_t *stream = s->stream;
    s->stream = NULL;
    pthread_mutex_unlock(&s->lock);
    if (stream) {
        exchange_release_sink(stream);
        exchange_unref(stream);
    }
}

/* ------------------------------------------------------------------------
 * The GET stream
 * ------------------------------------------------------------------------ */

/* The client closed the GET stream: detach it (messages are buffered for
 * its return). */
static void stream_cancelled(mcp_exchange_t *ex)
{
    mcp_session_t *s = ex->session;
    pthread_mutex_lock(&s->lock);
    bool ours = s->stream == ex;
    if (ours)
        s->stream = NULL;
    pthread_mutex_unlock(&s->lock);
    if (ours) {
        exchange_release_sink(ex);
        exchange_unref(ex);
    }
}

int session_attach_stream(mcp_session_t *s, mcp_exchange_t *ex, const char *last_event_id)
{
    char *end = NULL;
    unsigned long long after = 0;
    bool resume = last_event_id && *last_event_id;
    if (resume) {
        after = strtoull(last_event_id, &end, 10);
        if (!end || *end)
            resume = false; /* not one of our ids: start afresh */
    }
    ex->session = s;
    session_ref(s);
    /* Set under wait_lock, where exchange_cancel reads it. */
    pthread_mutex_lock(&ex->wait_lock);
    ex->on_cancel = stream_cancelled;
    pthread_mutex_unlock(&ex->wait_lock);

    /* Replay under the stream's send lock, so that live messages queue
     * behind the replayed ones. */
    pthread_mutex_lock(&ex->send_lock);
    pthread_mutex_lock(&s->lock);
    mcp_exchange_t *old = s->stream;
    s->stream = ex;
    size_t n = 0;
    struct replay_event *replay = NULL;
    if (resume && s->ring_count) {
        replay = calloc(s->ring_count, sizeof *replay);
        for (size_t i = 0; replay && i < s->ring_count; i++) {
            struct replay_event *e = &s->ring[(s->ring_start + i) % s->ring_cap];
            if (e->seq > after) {
                replay[n].seq = e->seq;
                replay[n++].msg = json_incref(e->msg);
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char id[24];
        snprintf(id, sizeof id, "%llu", (unsigned long long)replay[i].seq);
        if (rc >= 0)
            rc = ex->sink->send_event(ex->sink, replay[i].msg, id);
        json_decref(replay[i].msg);
    }
    free(replay);
    pthread_mutex_unlock(&ex->send_lock);

    /* One stream per session: a newer GET replaces an older one. Whoever
     * takes a stream out of s->stream releases it: here that is us, even
     * when its cancellation has begun (its hook then finds it gone). */
    if (old) {
        atomic_store(&old->cancel_handled, true);
        exchange_release_sink(old);
        exchange_unref(old);
    }
    /* Cancelled before it was in s->stream, its hook found nothing to
     * detach: detach it now (stream_cancelled acts for whoever finds it
     * there, once). */
    if (atomic_load(&ex->cancelled))
        stream_cancelled(ex);
    else if (rc < 0)
        exchange_cancel(ex);
    return MCP_OK;
}
