/*
 * The client's result cache: a short list of entries, newest first.
 *
 * A client caches a few dozen results (server info, list pages, resources
 * it read), so a list scanned linearly beats a hash table in clarity at no
 * measurable cost; it is bounded so a long-running client cannot grow it
 * without limit.
 */
#include <stdlib.h>
#include <string.h>

#include "client/cache.h"
#include "json_copy.h"
#include "mcp/canonical_json.h"

typedef struct entry {
    struct entry *next;
    char *key;
    char *method;
    char *uri;              /* resources/read only */
    bool is_public;
    uint64_t auth_context;  /* private entries only */
    int64_t expires_ms;
    json_t *result;
} entry_t;

struct client_cache {
    entry_t *head;
    size_t count;
    size_t max;
    uint64_t epoch; /* bumped by every invalidation */
};

client_cache_t *client_cache_new(size_t max_entries)
{
    client_cache_t *c = calloc(1, sizeof *c);
    if (c)
        c->max = max_entries ? max_entries : 1;
    return c;
}

static void entry_free(entry_t *e)
{
    free(e->key);
    free(e->method);
    free(e->uri);
    json_decref(e->result);
    free(e);
}

void client_cache_free(client_cache_t *cache)
{
    if (!cache)
        return;
    for (entry_t *e = cache->head, *next; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    free(cache);
}

char *client_cache_key(const char *method, const json_t *params)
{
    json_t *affecting = json_is_object(params) ? mcp_json_copy_object(params) : json_object();
    if (!affecting)
        return NULL;
    json_object_del(affecting, "_meta");
    json_object_del(affecting, "inputResponses");
    json_object_del(affecting, "requestState");
    char *canon = mcp_json_canonical(affecting, NULL);
    json_decref(affecting);
    if (!canon)
        return NULL;
    size_t n = strlen(method) + 1 + strlen(canon) + 1;
    char *key = malloc(n);
    if (key) {
        strcpy(key, method);
        strcat(key, "\n");
        strcat(key, canon);
    }
    free(canon);
    return key;
}

int64_t client_cache_ttl(const json_t *result)
{
    json_t *ttl = json_object_get(result, "ttlMs");
    if (!json_is_integer(ttl) || json_integer_value(ttl) < 0)
        return 0;
    return (int64_t)json_integer_value(ttl);
}

static bool visible(const entry_t *e, uint64_t auth_context)
{
    return e->is_public || e->auth_context == auth_context;
}

static const entry_t *find_fresh(const client_cache_t *cache, const char *key,
                                 uint64_t auth_context, int64_t now_ms)
{
    for (const entry_t *e = cache->head; e; e = e->next)
        if (strcmp(e->key, key) == 0 && visible(e, auth_context) && now_ms < e->expires_ms)
            return e;
    return NULL;
}

json_t *client_cache_get(client_cache_t *cache, const char *key, uint64_t auth_context,
                         int64_t now_ms)
{
    const entry_t *e = find_fresh(cache, key, auth_context, now_ms);
    return e ? json_deep_copy(e->result) : NULL;
}

bool client_cache_fresh(const client_cache_t *cache, const char *key, uint64_t auth_context,
                        int64_t now_ms)
{
    return find_fresh(cache, key, auth_context, now_ms) != NULL;
}

/* Unlinks and frees the entries `drop` selects. */
static void remove_if(client_cache_t *cache, bool (*drop)(const entry_t *, const void *),
                      const void *arg)
{
    for (entry_t **p = &cache->head; *p;) {
        entry_t *e = *p;
        if (drop(e, arg)) {
            *p = e->next;
            entry_free(e);
            cache->count--;
        } else {
            p = &e->next;
        }
    }
}

typedef struct same_slot {
    const char *key;
    bool is_public;
    uint64_t auth_context;
} same_slot_t;

static bool is_same_slot(const entry_t *e, const void *arg)
{
    const same_slot_t *s = arg;
    return strcmp(e->key, s->key) == 0 && e->is_public == s->is_public &&
           (s->is_public || e->auth_context == s->auth_context);
}

static bool is_expired(const entry_t *e, const void *arg)
{
    return *(const int64_t *)arg >= e->expires_ms;
}

static char *dup_or_null(const char *s, bool *failed)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *failed = true;
    return d;
}

void client_cache_put(client_cache_t *cache, const char *key, const char *method,
                      const char *uri, uint64_t auth_context, const json_t *result,
                      int64_t now_ms)
{
    int64_t ttl = client_cache_ttl(result);
    if (ttl <= 0)
        return;
    const char *scope = json_string_value(json_object_get(result, "cacheScope"));
    same_slot_t slot = {key, scope && strcmp(scope, "public") == 0, auth_context};
    remove_if(cache, is_same_slot, &slot);

    entry_t *e = calloc(1, sizeof *e);
    if (!e)
        return;
    bool failed = false;
    e->key = dup_or_null(key, &failed);
    e->method = dup_or_null(method, &failed);
    e->uri = dup_or_null(uri, &failed);
    e->result = json_deep_copy(result);
    if (failed || !e->result) {
        entry_free(e);
        return;
    }
    e->is_public = slot.is_public;
    e->auth_context = auth_context;
    e->expires_ms = ttl > INT64_MAX - now_ms ? INT64_MAX : now_ms + ttl;

    if (cache->count >= cache->max)
        remove_if(cache, is_expired, &now_ms);
    while (cache->count >= cache->max) {
        /* Evict the oldest (the tail). */
        entry_t **p = &cache->head;
        while ((*p)->next)
            p = &(*p)->next;
        entry_free(*p);
        *p = NULL;
        cache->count--;
    }
    e->next = cache->head;
    cache->head = e;
    cache->count++;
}

static bool is_of_method(const entry_t *e, const void *method)
{
    return strcmp(e->method, method) == 0;
}

void client_cache_invalidate_method(client_cache_t *cache, const char *method)
{
    cache->epoch++;
    remove_if(cache, is_of_method, method);
}

/* Is `uri` the same resource as `base`, or under it ("file:///a" covers
 * "file:///a/b" and "file:///a?x", not "file:///ab")? */
static bool uri_covers(const char *base, const char *uri)
{
    size_t n = strlen(base);
    if (strncmp(base, uri, n) != 0)
        return false;
    char c = uri[n];
    return c == '\0' || c == '/' || c == '?' || c == '#' || (n > 0 && base[n - 1] == '/');
}

static bool is_about_uri(const entry_t *e, const void *uri)
{
    return e->uri && (uri_covers(e->uri, uri) || uri_covers(uri, e->uri));
}

void client_cache_invalidate_uri(client_cache_t *cache, const char *uri)
{
    cache->epoch++;
    remove_if(cache, is_about_uri, uri);
}

static bool is_private_elsewhere(const entry_t *e, const void *auth_context)
{
    return !e->is_public && e->auth_context != *(const uint64_t *)auth_context;
}

void client_cache_drop_private(client_cache_t *cache, uint64_t auth_context)
{
    remove_if(cache, is_private_elsewhere, &auth_context);
}

uint64_t client_cache_epoch(const client_cache_t *cache)
{
    return cache->epoch;
}

size_t client_cache_count(const client_cache_t *cache)
{
    return cache->count;
}
