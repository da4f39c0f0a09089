/*
 * Ctrl-C. The first SIGINT (or SIGTERM, or SIGHUP) cancels what is
 * running -- the call in flight is cancelled on the wire, a listen ends, a
 * question at the terminal is abandoned -- and mcp exits with status 130,
 * after stopping the server; a second one kills a stdio server and ends
 * mcp at once.
 *
 * signals_start() blocks the signals in the calling thread before any
 * other thread exists (so every thread inherits the mask) and hands them to
 * a thread of their own, which is the only one to receive them.
 */
#ifndef MCP_CLI_SIGNALS_H
#define MCP_CLI_SIGNALS_H

#include <stdbool.h>

#include <mcp/client.h>

/* Starts watching; returns false when the watcher cannot start. Call once,
 * first thing in main(). */
bool signals_start(void);

/* Has a signal arrived? */
bool signals_interrupted(void);

/* The cancel handle every call carries; triggered by the first signal. */
mcp_cancel_t *signals_cancel(void);

/* A descriptor that becomes readable (and stays so) once a signal has
 * arrived: poll it beside whatever else is being waited for. */
int signals_fd(void);

#endif /* MCP_CLI_SIGNALS_H */
