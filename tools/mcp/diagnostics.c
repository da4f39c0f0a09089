/*
 * Server logs, the wire trace and libmcp's diagnostics, on stderr.
 */
#include "diagnostics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "term.h"

/* The colour of a log level (RFC 5424 names, as MCP uses them). */
static term_style_t level_style(const char *level)
{
    static const char *const severe[] = {"error", "critical", "alert", "emergency"};
    for (size_t i = 0; i < sizeof severe / sizeof severe[0]; i++)
        if (strcmp(level, severe[i]) == 0)
            return TERM_RED;
    if (strcmp(level, "warning") == 0)
        return TERM_YELLOW;
    if (strcmp(level, "debug") == 0)
        return TERM_DIM;
    return TERM_CYAN;
}

void diagnostics_server_log(void *user, const char *level, const char *logger,
                            const json_t *data)
{
    char *dumped = json_is_string(data) ? NULL : json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY);
    const char *text = json_is_string(data) ? json_string_value(data) : dumped ? dumped : "";
    term_stderr_lock();
    fprintf(stderr, "%sserver %s%s%s%s%s: %s\n", term_sgr(stderr, level_style(level)), level,
            term_sgr(stderr, TERM_RESET), logger ? " [" : "", logger ? logger : "",
            logger ? "]" : "", text);
    term_stderr_unlock();
    free(dumped);
}

void diagnostics_trace(void *user, mcp_trace_direction_t direction, const char *text,
                       size_t len)
{
    bool sent = direction == MCP_TRACE_SENT;
    const char *arrow = term_unicode() ? (sent ? "\u2192" : "\u2190") : (sent ? "->" : "<-");
    term_stderr_lock();
    fprintf(stderr, "%s%s%s ", term_sgr(stderr, sent ? TERM_GREEN : TERM_BLUE), arrow,
            term_sgr(stderr, TERM_RESET));
    fwrite(text, 1, len, stderr);
    fputc('\n', stderr);
    term_stderr_unlock();
}

void diagnostics_library_log(void *user, mcp_log_level_t level, const char *msg)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};
    const char *name = level >= MCP_LOG_DEBUG && level <= MCP_LOG_ERROR ? names[level] : "log";
    term_stderr_lock();
    fprintf(stderr, "%smcp: libmcp: %s: %s%s\n", term_sgr(stderr, TERM_DIM), name, msg,
            term_sgr(stderr, TERM_RESET));
    term_stderr_unlock();
}
