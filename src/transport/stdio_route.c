/*
 * Routing the lines of a stdio server to the requests in flight; see
 * stdio_route.h. The table is a chained hash map keyed by the id's compact
 * JSON text, so that an integer and a string with the same digits stay
 * apart and a string id may contain any character.
 */
#include <stdlib.h>
#include <string.h>

#include "mcp/request.h"
#include "transport/stdio_route.h"
#include "fnv.h"

#define INITIAL_BUCKETS 16

struct stdio_route_entry {
    stdio_route_entry_t *next;
    char *key;
    size_t key_len;
    uint64_t hash;
    void *value;
};

/* The key text of an id, or NULL for an id that is not a string/integer. */
static char *key_of(const json_t *id, size_t *len)
{
    if (!json_is_string(id) && !json_is_integer(id))
        return NULL;
    char *k = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
    if (k)
        *len = strlen(k);
    return k;
}


void stdio_router_init(stdio_router_t *r)
{
    memset(r, 0, sizeof *r);
}

void stdio_router_clear(stdio_router_t *r)
{
    for (size_t b = 0; b < r->n_buckets; b++)
        for (stdio_route_entry_t *e = r->buckets[b], *next; e; e = next) {
            next = e->next;
            free(e->key);
            free(e);
        }
    free(r->buckets);
    memset(r, 0, sizeof *r);
}

static int grow(stdio_router_t *r)
{
    size_t n = r->n_buckets ? r->n_buckets * 2 : INITIAL_BUCKETS;
    stdio_route_entry_t **b = calloc(n, sizeof *b);
    if (!b)
        return MCP_ENOMEM;
    for (size_t i = 0; i < r->n_buckets; i++)
        for (stdio_route_entry_t *e = r->buckets[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    free(r->buckets);
    r->buckets = b;
    r->n_buckets = n;
    return MCP_OK;
}

/* The link pointing at the entry for key, or at the NULL ending its chain. */
static stdio_route_entry_t **slot(const stdio_router_t *r, const char *key, size_t len,
                                  uint64_t hash)
{
    stdio_route_entry_t **p = &r->buckets[hash & (r->n_buckets - 1)];
    while (*p && !((*p)->hash == hash && (*p)->key_len == len && memcmp((*p)->key, key, len) == 0))
        p = &(*p)->next;
    return p;
}

int stdio_router_add(stdio_router_t *r, const json_t *id, void *value)
{
    size_t len = 0;
    char *key = key_of(id, &len);
    if (!key)
        return json_is_string(id) || json_is_integer(id) ? MCP_ENOMEM : MCP_EINVAL;
    uint64_t hash = mcp_fnv1a(key, len);
    if ((r->count + 1 > r->n_buckets * 3 / 4 && grow(r) != MCP_OK) || !r->n_buckets) {
        free(key);
        return MCP_ENOMEM;
    }
    stdio_route_entry_t **p = slot(r, key, len, hash);
    if (*p) {
        free(key);
        return MCP_EEXIST;
    }
    stdio_route_entry_t *e = calloc(1, sizeof *e);
    if (!e) {
        free(key);
        return MCP_ENOMEM;
    }
    *e = (stdio_route_entry_t){NULL, key, len, hash, value};
    *p = e;
    r->count++;
    return MCP_OK;
}

void *stdio_router_find(const stdio_router_t *r, const json_t *id)
{
    if (!r->count)
        return NULL;
    size_t len = 0;
    char *key = key_of(id, &len);
    if (!key)
        return NULL;
    stdio_route_entry_t *e = *slot(r, key, len, mcp_fnv1a(key, len));
    free(key);
    return e ? e->value : NULL;
}

void *stdio_router_remove(stdio_router_t *r, const json_t *id)
{
    if (!r->count)
        return NULL;
    size_t len = 0;
    char *key = key_of(id, &len);
    if (!key)
        return NULL;
    stdio_route_entry_t **p = slot(r, key, len, mcp_fnv1a(key, len));
    free(key);
    stdio_route_entry_t *e = *p;
    if (!e)
        return NULL;
    *p = e->next;
    void *value = e->value;
    free(e->key);
    free(e);
    r->count--;
    return value;
}

void *stdio_router_pop(stdio_router_t *r)
{
    for (size_t b = 0; r->count && b < r->n_buckets; b++) {
        stdio_route_entry_t *e = r->buckets[b];
        if (e) {
            r->buckets[b] = e->next;
            void *value = e->value;
            free(e->key);
            free(e);
            r->count--;
            return value;
        }
    }
    return NULL;
}

/* The id a notification belongs to, or NULL. */
static const json_t *notification_key(const mcp_message_t *m)
{
    const json_t *token = json_object_get(m->params, "progressToken");
    if (token)
        return token;
    const json_t *sub = json_object_get(json_object_get(m->params, "_meta"),
                                        MCP_META_SUBSCRIPTION_ID);
    if (sub)
        return sub;
    if (strcmp(m->method, "notifications/cancelled") == 0)
        return json_object_get(m->params, "requestId");
    return NULL;
}

void stdio_route_parse(const char *line, size_t len, stdio_route_t *out, mcp_error_t *why)
{
    memset(out, 0, sizeof *out);
    out->kind = STDIO_ROUTE_DROP;
    if (mcp_jsonrpc_parse(line, len, NULL, &out->msg, why) != MCP_OK) {
        /* Not valid JSON-RPC, but an object with an id and no method (a
         * result that is not an object, say): an answer gone wrong. */
        if (out->msg.id && json_is_object(out->msg.root) &&
            !json_object_get(out->msg.root, "method")) {
            out->key = out->msg.id;
            out->kind = STDIO_ROUTE_BROKEN;
        }
        return;
    }
    switch (out->msg.kind) {
    case MCP_MSG_RESULT:
    case MCP_MSG_ERROR:
        /* An error without id: the server could not read some request. */
        out->key = out->msg.id;
        out->kind = out->key ? STDIO_ROUTE_RESPONSE : STDIO_ROUTE_UNROUTED;
        return;
    case MCP_MSG_NOTIFICATION:
        out->key = notification_key(&out->msg);
        out->kind = out->key ? STDIO_ROUTE_NOTIFICATION : STDIO_ROUTE_UNROUTED;
        return;
    case MCP_MSG_REQUEST:
        out->kind = STDIO_ROUTE_UNROUTED;
        return;
    case MCP_MSG_INVALID:
        break;
    }
}

void stdio_route_resolve(const stdio_router_t *r, stdio_route_t *route, mcp_error_t *why)
{
    if (route->kind != STDIO_ROUTE_RESPONSE && route->kind != STDIO_ROUTE_BROKEN &&
        route->kind != STDIO_ROUTE_NOTIFICATION)
        return;
    route->value = stdio_router_find(r, route->key);
    if (route->value)
        return;
    if (route->kind != STDIO_ROUTE_NOTIFICATION) {
        route->kind = STDIO_ROUTE_DROP;
        mcp_error_set(why, MCP_ENOTFOUND, 0, NULL, "a response to no request in flight");
    } else {
        route->kind = STDIO_ROUTE_UNROUTED;
    }
    route->key = NULL;
}

void stdio_route_line(const stdio_router_t *r, const char *line, size_t len, stdio_route_t *out,
                      mcp_error_t *why)
{
    stdio_route_parse(line, len, out, why);
    stdio_route_resolve(r, out, why);
}

void stdio_route_clear(stdio_route_t *route)
{
    mcp_message_clear(&route->msg);
    memset(route, 0, sizeof *route);
}
