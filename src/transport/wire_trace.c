/*
 * What the transports report to the client core's hooks: the messages on
 * the wire to its trace callback (mcp_trace_fn), diagnostics to its log.
 */
#include <stdlib.h>

#include "client/transport.h"
#include "log.h"
#include "mcp/jsonrpc.h"

void client_transport_log(const client_transport_t *t, mcp_log_level_t level, const char *fmt,
                          ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcp_vlogf(t->hooks.log, t->hooks.log_user, level, fmt, ap);
    va_end(ap);
}

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
