/*
 * Where a line from a stdio server goes (digest sections 2.10 and 5.1).
 *
 * A stdio server shares one stream between every request in flight, so
 * each line is routed by what it carries:
 *   - a response (result or error) to the exchange whose request id it
 *     echoes;
 *   - a notification to the exchange whose id equals its
 *     params.progressToken (progress: the client uses a request's own id
 *     as its token), its params._meta["io.modelcontextprotocol/subscriptionId"]
 *     (listen streams), or, for notifications/cancelled, its
 *     params.requestId (a server ending a listen stream);
 *   - anything else -- notifications of no exchange in flight (log
 *     messages), requests, an error without id -- is "unrouted";
 *   - a line that is not a JSON-RPC message, or a response to no exchange
 *     in flight (a late answer to a cancelled request), is dropped.
 *
 * Pure: parsing and classification have no side effects; the table is a
 * plain hash map the caller locks.
 */
#ifndef MCP_TRANSPORT_STDIO_ROUTE_H
#define MCP_TRANSPORT_STDIO_ROUTE_H

#include "mcp/jsonrpc.h"

/* The pending exchanges, keyed by request id (a string or an integer; 1
 * and "1" are different ids). */
typedef struct stdio_route_entry stdio_route_entry_t;
typedef struct stdio_router {
    stdio_route_entry_t **buckets;
    size_t n_buckets;
    size_t count;
} stdio_router_t;

void stdio_router_init(stdio_router_t *r);
/* Frees the table (not the values). */
void stdio_router_clear(stdio_router_t *r);
/* Adds `value` under `id`. MCP_EINVAL for an id that is not a string or
 * integer, MCP_EEXIST when the id is taken, MCP_ENOMEM. */
int stdio_router_add(stdio_router_t *r, const json_t *id, void *value);
/* The value under `id`, or NULL. */
void *stdio_router_find(const stdio_router_t *r, const json_t *id);
/* Removes `id` and returns its value, or NULL when absent. */
void *stdio_router_remove(stdio_router_t *r, const json_t *id);
/* Removes and returns any one value (NULL when empty): for draining. */
void *stdio_router_pop(stdio_router_t *r);

typedef enum stdio_route_kind {
    STDIO_ROUTE_DROP = 0,     /* not a message, or an answer nobody waits for */
    STDIO_ROUTE_RESPONSE,     /* the answer of `value` */
    STDIO_ROUTE_NOTIFICATION, /* a notification for `value` */
    STDIO_ROUTE_UNROUTED,     /* a message for nobody in particular */
    STDIO_ROUTE_BROKEN        /* a malformed answer to `value` (why says how): it
                                 fails, rather than wait for a timeout */
} stdio_route_kind_t;

typedef struct stdio_route {
    stdio_route_kind_t kind;
    mcp_message_t msg;  /* the parsed line (kind != DROP or a parse that half-worked) */
    const json_t *key;  /* the id that routed it (borrowed from msg.root), or NULL */
    void *value;        /* RESPONSE / NOTIFICATION: the table's value */
} stdio_route_t;

/*
 * Parses one line (without its newline) and routes it against `r`. Always
 * fills *out; release it with stdio_route_clear(). `why` (may be NULL)
 * receives a reason for a DROP. The same as stdio_route_parse() followed by
 * stdio_route_resolve(), which the transport splits so that parsing runs
 * outside its lock.
 */
void stdio_route_line(const stdio_router_t *r, const char *line, size_t len, stdio_route_t *out,
                      mcp_error_t *why);
void stdio_route_clear(stdio_route_t *route);

/* Step 1: parses and classifies; RESPONSE, BROKEN and NOTIFICATION are
 * tentative (value NULL, key set) until resolved. */
void stdio_route_parse(const char *line, size_t len, stdio_route_t *out, mcp_error_t *why);

/* Step 2: looks the key up; a response (or broken one) nobody waits for
 * becomes DROP, a notification nobody waits for UNROUTED. */
void stdio_route_resolve(const stdio_router_t *r, stdio_route_t *route, mcp_error_t *why);

#endif /* MCP_TRANSPORT_STDIO_ROUTE_H */
