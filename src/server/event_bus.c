/* The default event bus: delivery in-process, on the publishing thread. */
#include <stdlib.h>

#include "mcp/common.h"
#include "server/event_bus.h"

static int local_publish(server_event_bus_t *bus, const server_event_t *ev)
{
    if (bus->deliver)
        bus->deliver(bus->deliver_user, ev);
    return MCP_OK;
}

static void local_free(server_event_bus_t *bus)
{
    free(bus);
}

server_event_bus_t *server_event_bus_local_new(void)
{
    server_event_bus_t *bus = calloc(1, sizeof *bus);
    if (bus) {
        bus->publish = local_publish;
        bus->free = local_free;
    }
    return bus;
}
