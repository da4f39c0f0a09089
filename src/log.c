/*
 * Handing diagnostics to the user's log callback (log.h).
 */
#include <stdio.h>

#include "log.h"

void mcp_vlogf(mcp_log_fn fn, void *user, mcp_log_level_t level, const char *fmt, va_list ap)
{
    if (!fn)
        return;
    char line[MCP_LOG_LINE_MAX];
    vsnprintf(line, sizeof line, fmt, ap);
    fn(user, level, line);
}

void mcp_logf(mcp_log_fn fn, void *user, mcp_log_level_t level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcp_vlogf(fn, user, level, fmt, ap);
    va_end(ap);
}
