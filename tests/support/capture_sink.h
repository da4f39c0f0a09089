/*
 * capture_sink: an mcp_sink_t for tests of the server core.
 *
 * It records every send() -- kind, HTTP status and a deep copy of the
 * message -- and the release(), and lets the test wait for either with a
 * timeout. It also checks the contract the core promises a sink
 * (mcp/server_core.h): release() exactly once, nothing sent after it, at
 * most one MCP_OUT_RESPONSE or MCP_OUT_ACCEPTED and nothing after that.
 * Breaches are recorded and capture_assert_done() fails on them.
 *
 * It supports the optional members too: set_header() is recorded (the
 * last one wins, see capture_header) and send_event() is recorded like a
 * send() of an MCP_OUT_NOTIFICATION that carries its event id.
 *
 *     capture_sink_t cap;
 *     capture_init(&cap);
 *     const json_t *response = capture_roundtrip(srv, NULL, request, NULL, &cap);
 *     MCP_ASSERT_SCHEMA_VALID(response, "tools/list", "2026-07-28");
 *     capture_cleanup(&cap);
 *
 * Thread safety: the core calls send() and release() from worker threads
 * while the test reads; every function here takes the sink's lock.
 */
#ifndef MCP_TEST_CAPTURE_SINK_H
#define MCP_TEST_CAPTURE_SINK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "mcp/server_core.h"

/* How long the helpers wait for something the core must do (ms). Generous:
 * the machine is shared and the tests run under sanitizers. */
#define CAPTURE_PATIENCE_MS 20000

typedef struct capture_item {
    mcp_out_kind_t kind;
    int status;  /* http_status as passed to send() */
    json_t *msg; /* deep copy, owned by the sink; NULL for MCP_OUT_ACCEPTED */
    char *event_id; /* send_event(): the event id (owned); NULL for send() */
    char *text;     /* send_text(): the bytes as sent (owned, NUL-terminated); else NULL */
    size_t text_len;
} capture_item_t;

typedef struct capture_sink {
    mcp_sink_t sink; /* first: hand &cap->sink to mcp_server_submit() */

    /* Set before submitting: from the send with this index on (0-based),
     * send() returns -1, as for a peer that went away. -1: never. */
    int fail_from;

    pthread_mutex_t lock;
    pthread_cond_t changed;
    capture_item_t *items;
    size_t count, cap;
    int releases;
    char header_name[64]; /* the last set_header(), or "" */
    char header_value[256];
    char breach[256]; /* the first contract breach, or "" */
} capture_sink_t;

/* Prepares an empty sink. */
void capture_init(capture_sink_t *cap);

/* Offers the core the optional send_text() as well, as the HTTP and stdio
 * transports do: what comes that way is recorded as sent (item.text) and
 * as parsed (item.msg), so the other helpers read it like any message. */
void capture_take_text(capture_sink_t *cap);

/* Frees what the sink recorded. The core must be done with it (released). */
void capture_cleanup(capture_sink_t *cap);

/* Empties the sink for reuse with another submission (after its release). */
void capture_reset(capture_sink_t *cap);

/* Waits until release() was called; false after `timeout_ms`. */
bool capture_wait_released(capture_sink_t *cap, int timeout_ms);

/* Waits until at least `n` messages were sent; false after `timeout_ms`. */
bool capture_wait_count(capture_sink_t *cap, size_t n, int timeout_ms);

/* Number of send() calls so far. */
size_t capture_count(capture_sink_t *cap);

/* Whether release() was called. */
bool capture_released(capture_sink_t *cap);

/* The i-th send (its msg borrowed until cleanup/reset); i < capture_count. */
capture_item_t capture_item(capture_sink_t *cap, size_t i);

/* The MCP_OUT_RESPONSE message (borrowed), or NULL; its status into
 * *status when not NULL. */
const json_t *capture_response(capture_sink_t *cap, int *status);

/* Number of MCP_OUT_NOTIFICATION sends. */
size_t capture_notification_count(capture_sink_t *cap);

/* The value of the last set_header() for `name` (case-insensitive; copied
 * into `out`), or false when none was set. */
bool capture_header(capture_sink_t *cap, const char *name, char *out, size_t out_size);

/* cmocka: fails unless release() was called exactly once and no contract
 * breach was seen. */
void capture_assert_done(capture_sink_t *cap);

/*
 * Serialises `msg` and submits it to the core on `conn` (may be NULL) with
 * `ctx` (NULL: stdio, no principal). Returns what mcp_server_submit
 * returned; `exchange_out` may be NULL.
 */
int capture_submit(mcp_server_t *srv, mcp_conn_t *conn, const json_t *msg,
                   const mcp_request_context_t *ctx, capture_sink_t *cap,
                   mcp_exchange_t **exchange_out);

/*
 * capture_submit, then (cmocka) asserts the core took the message, waits
 * for the release and runs capture_assert_done. Returns the response
 * (borrowed from `cap`), or NULL when only ACCEPTED or nothing was sent.
 */
const json_t *capture_roundtrip(mcp_server_t *srv, mcp_conn_t *conn, const json_t *msg,
                                const mcp_request_context_t *ctx, capture_sink_t *cap);

#endif
