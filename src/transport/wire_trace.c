/*
 * Reporting the messages on the wire to the client's trace callback
 * (mcp_trace_fn), for the transports.
 */
#include <stdlib.h>

#include "client/transport.h"
#include "mcp/jsonrpc.h"

void client_trace_text(const client_transport_t *t, mcp_trace_direction_t direction,
                       const char *text, size_t len)
{
    if (t->hooks.trace)
        t->hooks.trace(t->hooks.trace_user, direction, text, len);
}

void client_trace_json(const client_transport_t *t, mcp_trace_direction_t direction,
                       const json_t *msg)
{
    if (!t->hooks.trace)
        return;
    size_t len = 0;
    char *text = mcp_json_dump(msg, &len);
    if (text)
        t->hooks.trace(t->hooks.trace_user, direction, text, len);
    free(text);
}
