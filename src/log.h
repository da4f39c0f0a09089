/*
 * log.h - handing libmcp's diagnostics to the user's log callback.
 *
 * The server, the client, the host and each client transport report what
 * they notice (a peer that misbehaves, a stream re-opened) through an
 * mcp_log_fn the user supplied, or to nobody. Every one of them formats
 * its message the same way, here.
 *
 * Thread-safe: the message is formatted on the caller's stack; the
 * callback runs on the calling thread.
 */
#ifndef MCP_LOG_H
#define MCP_LOG_H

#include <stdarg.h>

#include "mcp/common.h"

/* Longest message passed to a callback, in bytes; longer ones are cut. */
#define MCP_LOG_LINE_MAX 1024

/* Formats the message and calls fn(user, level, message); does nothing
 * when `fn` is NULL. */
void mcp_logf(mcp_log_fn fn, void *user, mcp_log_level_t level, const char *fmt, ...)
    MCP_PRINTF(4, 5);

/* mcp_logf with a va_list. */
void mcp_vlogf(mcp_log_fn fn, void *user, mcp_log_level_t level, const char *fmt, va_list ap)
    MCP_PRINTF(4, 0);

#endif /* MCP_LOG_H */
