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
 * The store is shared by every client, so one of them alone must not be
 * able to fill it and refuse everybody else's retries: each principal may
 * hold at most max_per_principal live ids (MCP_ELIMIT beyond, fail closed
 * as when full). A third table counts them, one owner per principal with
 * live ids, freed with its last id. Clients without a principal cannot be
 * told apart, so no quota applies to them (a share would only shrink the
 * store for all of them): max_entries alone bounds them.
 *
 * The hashes are not keyed: ids come from the CSPRNG inside an
 * authenticated envelope, and principals arrive as truncated SHA-256, so
 * nobody can choose keys that collide.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/replay_store.h"

#define DEFAULT_MAX_ENTRIES 100000
#define DEFAULT_SHARE_DIVISOR 10 /* a principal's default quota: a tenth */
#define INITIAL_SLOTS 64

/* A principal holding live ids. */
typedef struct owner {
    uint8_t principal[MCP_PRINCIPAL_HASH_BYTES];
    size_t live;
    struct owner *next; /* in its hash bucket */
} owner_t;

typedef struct entry {
    uint8_t id[MCP_STATE_ID_BYTES];
    int64_t expires_ms;
    owner_t *owner;
    struct entry *next; /* in its hash bucket */
} entry_t;

typedef struct memory_store {
    pthread_mutex_t lock;
    size_t max_entries;
    size_t max_per_principal;
    uint8_t anonymous[MCP_PRINCIPAL_HASH_BYTES]; /* the hash of no principal */
    size_t count;
    entry_t **buckets; /* nbuckets chains; nbuckets is a power of two */
    size_t nbuckets;
    entry_t **heap; /* count entries, soonest expiry first */
    size_t heap_capacity;
    owner_t **owners; /* nowner_buckets chains, a power of two */
    size_t nowner_buckets, nowners;
} memory_store_t;

/* A 16-byte key (an id or a principal hash) to a bucket of `n`, a power of
 * two. */
static size_t slot_of(const uint8_t key[16], size_t n)
{
    uint64_t a, b;
    memcpy(&a, key, 8);
    memcpy(&b, key + 8, 8);
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15u)) * 0xBF58476D1CE4E5B9u;
    return (size_t)(h >> 32) & (n - 1);
}

static size_t bucket_of(const memory_store_t *s, const uint8_t id[MCP_STATE_ID_BYTES])
{
    return slot_of(id, s->nbuckets);
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

/* ---- the owners ---------------------------------------------------------- */

static owner_t **find_owner(memory_store_t *s, const uint8_t principal[MCP_PRINCIPAL_HASH_BYTES])
{
    owner_t **link = &s->owners[slot_of(principal, s->nowner_buckets)];
    while (*link && memcmp((*link)->principal, principal, MCP_PRINCIPAL_HASH_BYTES) != 0)
        link = &(*link)->next;
    return link;
}

/* Keeps owner chains short, like the id buckets; on allocation failure
 * they just grow longer. */
static void grow_owners(memory_store_t *s)
{
    if (s->nowners < s->nowner_buckets)
        return;
    size_t n = s->nowner_buckets * 2;
    owner_t **owners = calloc(n, sizeof *owners);
    if (!owners)
        return;
    for (size_t i = 0; i < s->nowner_buckets; i++) {
        for (owner_t *o = s->owners[i], *next; o; o = next) {
            next = o->next;
            size_t b = slot_of(o->principal, n);
            o->next = owners[b];
            owners[b] = o;
        }
    }
    free(s->owners);
    s->owners = owners;
    s->nowner_buckets = n;
}

/* The owner of `principal`'s ids, made on its first one; NULL when out of
 * memory. */
static owner_t *owner_of(memory_store_t *s, const uint8_t principal[MCP_PRINCIPAL_HASH_BYTES])
{
    owner_t **link = find_owner(s, principal);
    if (*link)
        return *link;
    owner_t *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    memcpy(o->principal, principal, MCP_PRINCIPAL_HASH_BYTES);
    *link = o;
    s->nowners++;
    grow_owners(s);
    return o;
}

/* An id of `o` is forgotten; so is `o` with its last one. */
static void owner_release(memory_store_t *s, owner_t *o)
{
    if (--o->live > 0)
        return;
    owner_t **link = find_owner(s, o->principal);
    *link = o->next;
    s->nowners--;
    free(o);
}

static void forget_expired(memory_store_t *s, int64_t now_ms)
{
    while (s->count > 0 && s->heap[0]->expires_ms <= now_ms) {
        entry_t *e = s->heap[0];
        s->count--;
        heap_pop(s);
        entry_t **link = find_link(s, e->id);
        *link = e->next;
        owner_release(s, e->owner);
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

/* Remembers a new live id of `principal`, under the lock. */
static int remember(memory_store_t *s, const uint8_t id[MCP_STATE_ID_BYTES],
                    const uint8_t principal[MCP_PRINCIPAL_HASH_BYTES], int64_t expires_ms)
{
    if (s->count >= s->max_entries)
        return MCP_ELIMIT;
    owner_t **found = find_owner(s, principal);
    if (*found && (*found)->live >= s->max_per_principal &&
        memcmp(principal, s->anonymous, MCP_PRINCIPAL_HASH_BYTES) != 0)
        return MCP_ELIMIT; /* its share is taken: refuse, never forget */
    int rc = make_room(s);
    if (rc != MCP_OK)
        return rc;
    entry_t *e = malloc(sizeof *e);
    owner_t *o = e ? owner_of(s, principal) : NULL;
    if (!o) {
        free(e);
        return MCP_ENOMEM;
    }
    memcpy(e->id, id, MCP_STATE_ID_BYTES);
    e->expires_ms = expires_ms;
    e->owner = o;
    o->live++;
    entry_t **head = &s->buckets[bucket_of(s, id)];
    e->next = *head;
    *head = e;
    heap_push(s, e);
    s->count++;
    return MCP_OK;
}

static int memory_redeem_as(void *ctx, const uint8_t id[MCP_STATE_ID_BYTES],
                            const uint8_t principal[MCP_PRINCIPAL_HASH_BYTES], int64_t expires_ms,
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
    else
        rc = remember(s, id, principal, expires_ms);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* The ops' redeem, which has no principal: every such caller is one
 * (libmcp itself always redeems through memory_redeem_as). */
static int memory_redeem(void *ctx, const uint8_t id[MCP_STATE_ID_BYTES], int64_t expires_ms,
                         int64_t now_ms)
{
    uint8_t nobody[MCP_PRINCIPAL_HASH_BYTES];
    mcp_replay_principal_hash(NULL, nobody);
    return memory_redeem_as(ctx, id, nobody, expires_ms, now_ms);
}

static void memory_free(void *ctx)
{
    memory_store_t *s = ctx;
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        free(s->heap[i]);
    for (size_t i = 0; i < s->nowner_buckets; i++) {
        for (owner_t *o = s->owners[i], *next; o; o = next) {
            next = o->next;
            free(o);
        }
    }
    free(s->heap);
    free(s->buckets);
    free(s->owners);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static const mcp_replay_store_ops_t MEMORY_OPS = {memory_redeem, memory_free};

mcp_replay_store_t *
mcp_replay_store_memory_new_with(const mcp_replay_store_memory_options_t *opts)
{
    memory_store_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->max_entries = opts && opts->max_entries ? opts->max_entries : DEFAULT_MAX_ENTRIES;
    s->max_per_principal = opts && opts->max_per_principal
                               ? opts->max_per_principal
                               : s->max_entries / DEFAULT_SHARE_DIVISOR;
    if (s->max_per_principal == 0)
        s->max_per_principal = 1;
    mcp_replay_principal_hash(NULL, s->anonymous);
    s->nbuckets = INITIAL_SLOTS;
    s->heap_capacity = INITIAL_SLOTS;
    s->nowner_buckets = INITIAL_SLOTS;
    s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
    s->heap = malloc(s->heap_capacity * sizeof *s->heap);
    s->owners = calloc(s->nowner_buckets, sizeof *s->owners);
    if (!s->buckets || !s->heap || !s->owners || pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s->buckets);
        free(s->heap);
        free(s->owners);
        free(s);
        return NULL;
    }
    /* It forgets everything when the process ends: the codec binds its
     * states to this store's identity (mcp/request_state.h). */
    return mcp_replay_store_new_local(&MEMORY_OPS, memory_redeem_as, s);
}

mcp_replay_store_t *mcp_replay_store_memory_new(size_t max_entries)
{
    return mcp_replay_store_memory_new_with(
        &(mcp_replay_store_memory_options_t){.max_entries = max_entries});
}
