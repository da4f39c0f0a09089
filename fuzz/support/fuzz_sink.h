/*
 * A sink for fuzz targets of the server core: it enforces the contract
 * the core promises a sink (mcp/server_core.h) -- release exactly once,
 * nothing sent after it, at most one response or ACCEPTED -- by trapping
 * on a breach, serialises what it is sent as a transport would, and lets
 * the target wait for releases.
 *
 *     fuzz_sink_t s;
 *     fuzz_sink_init(&s);                  // counted as pending
 *     if (mcp_server_submit(..., &s.sink, NULL) != MCP_OK)
 *         fuzz_sink_abandon(&s);           // the core took nothing
 *     ...
 *     fuzz_sinks_wait_all();
 *
 * Thread safety: the core sends and releases from worker threads; every
 * function here takes one process-wide lock.
 */
#ifndef MCP_FUZZ_SINK_H
#define MCP_FUZZ_SINK_H

#include <stdbool.h>

#include "mcp/server_core.h"

typedef struct fuzz_sink {
    mcp_sink_t sink; /* first: hand &s->sink to mcp_server_submit() */
    bool answered;   /* a response or ACCEPTED was sent */
    bool done;       /* released */
} fuzz_sink_t;

/* Called with every message any sink is sent (under the lock; NULL: none). */
typedef void (*fuzz_sink_observer_fn)(const json_t *msg);
void fuzz_sink_observe(fuzz_sink_observer_fn fn);

/* Prepares `s` and counts it as pending until it is released. */
void fuzz_sink_init(fuzz_sink_t *s);

/* mcp_server_submit() refused the message: `s` will never be released. */
void fuzz_sink_abandon(fuzz_sink_t *s);

/* Waits until `s` is released. */
void fuzz_sink_wait(fuzz_sink_t *s);

/* Waits until every pending sink is released. */
void fuzz_sinks_wait_all(void);

#endif
