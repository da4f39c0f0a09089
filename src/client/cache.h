/*
 * The client's result cache (digest section 6).
 *
 * Results of the cacheable methods (server/discover, the four lists, one
 * entry per cursor page, resources/read per uri; skills/list and
 * skills/get) are kept while fresh:
 * `now < received + ttlMs`. ttlMs absent, negative or not an integer counts
 * as 0 (immediately stale, so such a result is not stored at all).
 *
 * The key is the method plus the canonical JSON (RFC 8785) of the params
 * that affect the result: everything but _meta (and the MRTR members, whose
 * results are never stored anyway). A "private" entry belongs to one
 * authorization context and is only served to it; a "public" one to anyone
 * (a missing or unknown cacheScope counts as private).
 *
 * Pure: the caller passes the time; not thread-safe (the client locks).
 */
#ifndef MCP_CLIENT_CACHE_H
#define MCP_CLIENT_CACHE_H

#include <stdint.h>

#include "mcp/common.h"

typedef struct client_cache client_cache_t;

/* An empty cache holding at most `max_entries` results (oldest evicted
 * first). NULL on allocation failure. */
client_cache_t *client_cache_new(size_t max_entries);
void client_cache_free(client_cache_t *cache);

/* The key of `method` with `params` (borrowed, may be NULL), malloc'd; NULL
 * on allocation failure. */
char *client_cache_key(const char *method, const json_t *params);

/* The freshness lifetime a result asks for, in ms (>= 0). */
int64_t client_cache_ttl(const json_t *result);

/* A fresh entry for `key` visible to `auth_context`: a deep copy of the
 * result (the caller owns it), or NULL. */
json_t *client_cache_get(client_cache_t *cache, const char *key, uint64_t auth_context,
                         int64_t now_ms);

/* Would client_cache_get() find an entry? (Without copying it.) */
bool client_cache_fresh(const client_cache_t *cache, const char *key, uint64_t auth_context,
                        int64_t now_ms);

/* Stores `result` (borrowed; deep-copied) of `method` under `key`, received
 * at now_ms by `auth_context`; `uri` (may be NULL) is the resource a
 * resources/read result is about. Replaces an entry with the same key and
 * visibility. Does nothing for a ttl of 0 or on allocation failure. */
void client_cache_put(client_cache_t *cache, const char *key, const char *method,
                      const char *uri, uint64_t auth_context, const json_t *result,
                      int64_t now_ms);

/* Drops every entry of `method` (a list_changed notification). */
void client_cache_invalidate_method(client_cache_t *cache, const char *method);

/* Drops the resources/read entries about `uri` or a resource under it (a
 * resources/updated notification: the uri may name a sub-resource, and a
 * cached parent may list it). */
void client_cache_invalidate_uri(client_cache_t *cache, const char *uri);

/* Drops the private entries of every authorization context but
 * `auth_context` (the credentials changed: the old ones' entries can never
 * be served again). Public entries stay. */
void client_cache_drop_private(client_cache_t *cache, uint64_t auth_context);

/* A number that changes with every invalidation. A result fetched while it
 * changed may predate the change the invalidation announced: the caller
 * reads the epoch before sending and stores the answer only if it is
 * still the same. */
uint64_t client_cache_epoch(const client_cache_t *cache);

/* Number of entries (fresh or not) held. */
size_t client_cache_count(const client_cache_t *cache);

#endif /* MCP_CLIENT_CACHE_H */
