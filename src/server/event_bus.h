/*
 * The fan-out seam between what changes and who listens.
 *
 * Registries (a tool added or removed) and the application
 * (mcp_server_notify_resource_updated) publish events on a bus; the bus
 * delivers every event to its receiver, the server's subscription hub,
 * which forwards it to the subscriptions/listen streams whose filter asks
 * for it.
 *
 * The default bus delivers in-process, synchronously, on the publishing
 * thread. A bus backed by an external broker implements the same two
 * operations: publish() sends the event out, and events arriving from the
 * broker (this instance's own included) are handed to deliver(). Several
 * server instances sharing a broker then notify each other's listeners, so
 * a client's listen stream may live on any instance.
 *
 * Thread safety: publish() may be called from any thread; deliver() may be
 * called from any thread, concurrently.
 */
#ifndef MCP_SERVER_EVENT_BUS_H
#define MCP_SERVER_EVENT_BUS_H

#include <jansson.h>

/* What happened. */
typedef enum server_event_kind {
    SERVER_EVENT_TOOLS_CHANGED = 0,
    SERVER_EVENT_PROMPTS_CHANGED,
    SERVER_EVENT_RESOURCES_CHANGED,
    SERVER_EVENT_RESOURCE_UPDATED,
    SERVER_EVENT_TASK_CHANGED
} server_event_kind_t;

typedef struct server_event {
    server_event_kind_t kind;
    const char *uri; /* SERVER_EVENT_RESOURCE_UPDATED: the resource; else NULL */
    /* SERVER_EVENT_TASK_CHANGED: the task's id, the principal it belongs
     * to (NULL: unauthenticated) and its DetailedTask now; else NULL. */
    const char *task_id;
    const char *principal;
    const json_t *task;
} server_event_t;

typedef struct server_event_bus server_event_bus_t;

struct server_event_bus {
    /* Sends an event to every receiver on the bus (including this one).
     * Returns 0 or a negative MCP_E* code. */
    int (*publish)(server_event_bus_t *bus, const server_event_t *ev);
    /* Frees the bus. */
    void (*free)(server_event_bus_t *bus);
    /* Set by the server: where events received from the bus go. */
    void (*deliver)(void *user, const server_event_t *ev);
    void *deliver_user;
};

/* The default in-process bus. NULL on allocation failure. */
server_event_bus_t *server_event_bus_local_new(void);

#endif /* MCP_SERVER_EVENT_BUS_H */
