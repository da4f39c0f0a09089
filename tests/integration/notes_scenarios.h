/*
 * notes_scenarios: the client scenarios against examples/notes_server that
 * are the same over every transport, written once and run by
 * client_stdio_notes.c and client_http_notes.c: every call type, pagination
 * helpers, progress, cancellation, timeouts, MRTR (one round, accepted and
 * declined), concurrency, listen with a change event that invalidates the
 * cache.
 *
 * A transport's program runs them as one cmocka group:
 *
 *     const struct CMUnitTest shared[] = {NOTES_SCENARIOS};
 *     cmocka_run_group_tests_name("client_stdio_shared", shared, setup, teardown);
 *
 * where setup starts a notes_server, connects a client made by
 * notes_client_new() to it and leaves the client in *state, and teardown
 * frees the client (and stops the server, checking it exits cleanly). The
 * scenarios share that server, so each one uses notes of its own.
 *
 * The helpers after the scenarios serve the transports' own tests too.
 */
#ifndef MCP_TEST_NOTES_SCENARIOS_H
#define MCP_TEST_NOTES_SCENARIOS_H

#include <pthread.h>
#include <stdint.h>

#include "mcp/client.h"

/* A client for the scenarios, not connected yet: it logs to stderr and
 * answers delete_note's confirmation as test_mrtr_accept_and_decline
 * scripts it. NULL (after saying why on stderr) if it cannot be made. */
mcp_client_t *notes_client_new(void);

/* Calls the echo tool `calls` times on `c` from `threads` threads at once,
 * each with its own texts; asserts that every call got its own text back. */
void notes_echo_from_threads(mcp_client_t *c, int threads, int calls);

void test_identity_and_discover(void **state);
void test_lists(void **state);
void test_calls(void **state);
void test_progress(void **state);
void test_cancel_from_another_thread(void **state);
void test_timeout(void **state);
void test_mrtr_accept_and_decline(void **state);
void test_concurrent_calls(void **state);
void test_listen_invalidates_cache(void **state);

#define NOTES_SCENARIOS                                                                       \
    cmocka_unit_test(test_identity_and_discover), cmocka_unit_test(test_lists),               \
        cmocka_unit_test(test_calls), cmocka_unit_test(test_progress),                        \
        cmocka_unit_test(test_cancel_from_another_thread), cmocka_unit_test(test_timeout),    \
        cmocka_unit_test(test_mrtr_accept_and_decline),                                       \
        cmocka_unit_test(test_concurrent_calls), cmocka_unit_test(test_listen_invalidates_cache)

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

int64_t now_ms(void); /* CLOCK_MONOTONIC */
void sleep_ms(int ms);

/* Adds a note through the add_note tool, which updates notes://index. */
void add_note(mcp_client_t *c, const char *name);

/* What a subscription to notes://index heard, guarded by `lock`: the
 * callbacks run on the client's threads. */
typedef struct listen_events {
    pthread_mutex_t lock;
    int updated;          /* notifications/resources/updated */
    char uri[128];        /* the last one's uri */
    mcp_client_t *reader; /* when set, each event first reads notes://index with it */
    int read_rc;          /* that read's result */
    int ended;            /* on_end calls */
    int end_rc;           /* the last one's rc */
} listen_events_t;

#define LISTEN_EVENTS_INIT {.lock = PTHREAD_MUTEX_INITIALIZER, .read_rc = -1, .end_rc = 1}

/* Subscribes to notes://index, recording into `events` (which must outlive
 * the subscription), or fails the test. `honoured` may be NULL. */
mcp_subscription_t *listen_to_index(mcp_client_t *c, listen_events_t *events, json_t **honoured);

/* Waits up to timeout_ms for *counter (a field of `events`) to reach `n`;
 * returns its last value. */
int wait_count(listen_events_t *events, const int *counter, int n, int timeout_ms);

#endif /* MCP_TEST_NOTES_SCENARIOS_H */
