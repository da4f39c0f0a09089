/*
 * The in-memory replay store: the ids of redeemed states, each remembered
 * until its state expires (after that the codec refuses the state anyway).
 *
 * Two structures index the same entries: a chained hash set answers "seen
 * before?", and a binary min-heap ordered by expiry lets every call first
 * drop the ids that have expired, in O(log n) each. A full store refuses new
 * ids (MCP_ELIMIT) rather than forget a live one, which would let a replay
 * through.
 *
 * The hash is not keyed: ids come from the CSPRNG inside an authenticated
 * envelope, so nobody can choose ids that collide.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/replay_store.h"

#define DEFAULT_MAX_ENTRIES 100000
#define INITIAL_SLOTS 64

typedef struct entry {
    uint8_t id[MCP_STATE_ID_BYTES];
    int64_t expires_ms;
    struct entry *next; /* in its hash bucket */
} entry_t;

typedef struct memory_store {
    pthread_mutex_t lock;
    size_t max_entries;
    size_t count;
    entry_t **buckets; /* nbuckets chains; nbuckets is a power of two */
    size_t nbuckets;
    entry_t **heap; /* count entries, soonest expiry first */
    size_t heap_capacity;
} memory_store_t;

static size_t bucket_of(const memory_store_t *s, const uint8_t id[MCP_STATE_ID_BYTES])
{
    uint64_t a, b;
    memcpy(&a, id, 8);
    memcpy(&b, id + 8, 8);
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15u)) * 0xBF58476D1CE4E5B9u;
    return (size_t)(h >> 32) & (s->nbuckets - 1);
}

static entry_t **find_link(memory_store_t *s, const uint8_t id[MCP_STATE_ID_BYTES])
{
    entry_t **link = &s->buckets[bucket_of(s, id)];
    while (*link && memcmp((*link)->id, id, MCP_STATE_ID_BYTES) != 0)
        link = &(*link)->next;
    return link;
}

/* ---- the expiry heap ---------------------------------------------------- */

static void heap_swap(entry_t **heap, size_t i, size_t j)
{
    entry_t *t = heap[i];
    heap[i] = heap[j];
    heap[j] = t;
}

static void heap_push(memory_store_t *s, entry_t *e)
{
    size_t i = s->count;
    s->heap[i] = e;
    while (i > 0 && s->heap[(i - 1) / 2]->expires_ms > s->heap[i]->expires_ms) {
        heap_swap(s->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

/* Removes the root; `count` already excludes it. */
static void heap_pop(memory_store_t *s)
{
    s->heap[0] = s->heap[s->count];
    size_t i = 0;
    for (;;) {
        size_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < s->count && s->heap[l]->expires_ms < s->heap[least]->expires_ms)
            least = l;
        if (r < s->count && s->heap[r]->expires_ms < s->heap[least]->expires_ms)
            least = r;
        if (least == i)
            return;
        heap_swap(s->heap, i, least);
        i = least;
    }
}

static void forget_expired(memory_store_t *s, int64_t now_ms)
{
    while (s->count > 0 && s->heap[0]->expires_ms <= now_ms) {
        entry_t *e = s->heap[0];
        s->count--;
        heap_pop(s);
        entry_t **link = find_link(s, e->id);
        *link = e->next;
        free(e);
    }
}

/* ---- growth -------------------------------------------------------------- */

/* Keeps chains short: at most one entry per bucket on average. */
static int grow_buckets(memory_store_t *s)
{
    size_t n = s->nbuckets * 2;
    entry_t **buckets = calloc(n, sizeof *buckets);
    if (!buckets)
        return MCP_ENOMEM;
    entry_t **old = s->buckets;
    size_t old_n = s->nbuckets;
    s->buckets = buckets;
    s->nbuckets = n;
    for (size_t i = 0; i < old_n; i++) {
        for (entry_t *e = old[i], *next; e; e = next) {
            next = e->next;
            size_t b = bucket_of(s, e->id);
            e->next = buckets[b];
            buckets[b] = e;
        }
    }
    free(old);
    return MCP_OK;
}

static int make_room(memory_store_t *s)
{
    if (s->count == s->heap_capacity) {
        size_t capacity = s->heap_capacity * 2;
        entry_t **heap = realloc(s->heap, capacity * sizeof *heap);
        if (!heap)
            return MCP_ENOMEM;
        s->heap = heap;
        s->heap_capacity = capacity;
    }
    if (s->count >= s->nbuckets)
        return grow_buckets(s);
    return MCP_OK;
}

/* ---- the ops ------------------------------------------------------------- */

static int memory_redeem(void *ctx, const uint8_t id[MCP_STATE_ID_BYTES], int64_t expires_ms,
                         int64_t now_ms)
{
    memory_store_t *s = ctx;
    int rc = MCP_OK;
    pthread_mutex_lock(&s->lock);
    forget_expired(s, now_ms);
    if (*find_link(s, id))
        rc = MCP_EEXIST;
    else if (expires_ms <= now_ms)
        rc = MCP_OK; /* already dead: nothing to remember */
    else if (s->count >= s->max_entries)
        rc = MCP_ELIMIT;
    else if ((rc = make_room(s)) == MCP_OK) {
        entry_t *e = malloc(sizeof *e);
        if (!e) {
            rc = MCP_ENOMEM;
        } else {
            memcpy(e->id, id, MCP_STATE_ID_BYTES);
            e->expires_ms = expires_ms;
            entry_t **head = &s->buckets[bucket_of(s, id)];
            e->next = *head;
            *head = e;
            heap_push(s, e);
            s->count++;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static void memory_free(void *ctx)
{
    memory_store_t *s = ctx;
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        free(s->heap[i]);
    free(s->heap);
    free(s->buckets);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static const mcp_replay_store_ops_t MEMORY_OPS = {memory_redeem, memory_free};

mcp_replay_store_t *mcp_replay_store_memory_new(size_t max_entries)
{
    memory_store_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->max_entries = max_entries ? max_entries : DEFAULT_MAX_ENTRIES;
    s->nbuckets = INITIAL_SLOTS;
    s->heap_capacity = INITIAL_SLOTS;
    s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
    s->heap = malloc(s->heap_capacity * sizeof *s->heap);
    if (!s->buckets || !s->heap || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s->buckets);
        free(s->heap);
        free(s);
        return NULL;
    }
    return mcp_replay_store_new(&MEMORY_OPS, s);
}
