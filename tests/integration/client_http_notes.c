/*
 * The client against examples/notes_server over Streamable HTTP: the
 * scenarios every transport shares (notes_scenarios.h) and the server going
 * away: a listen stream ends gracefully, calls fail. (Two-round MRTR and
 * counted cache hits: client_rounds_and_cache.c.) The server runs as a child
 * process and must exit cleanly (status 0) when stopped, so a leak or
 * sanitizer report on the server side fails too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "http_child.h"
#include "mcp/client.h"
#include "mcp/mcp.h"
#include "notes_scenarios.h"

#ifndef MCP_NOTES_SERVER
#error "MCP_NOTES_SERVER must name the notes_server binary"
#endif

static const char *const notes_argv[] = {MCP_NOTES_SERVER, "--http", NULL};

static mcp_client_t *connect_to(const char *url)
{
    mcp_client_t *c = notes_client_new();
    mcp_error_t err = {0};
    if (!c || mcp_client_connect_http(c, &(mcp_http_target_t){.url = url}, &err) != MCP_OK) {
        fprintf(stderr, "cannot connect to %s: %s\n", url, err.message);
        mcp_error_clear(&err);
        mcp_client_free(c);
        return NULL;
    }
    return c;
}

/* The shared scenarios' server; their state is the client connected to it. */
static http_child_t shared_server;

static int start_notes(void **state)
{
    if (http_child_start(&shared_server, notes_argv, 20000) != 0)
        return -1;
    if (!(*state = connect_to(shared_server.url))) {
        http_child_stop(&shared_server, 10000);
        return -1;
    }
    return 0;
}

/* Frees the client, then requires the server to stop cleanly. */
static int stop_notes(void **state)
{
    mcp_client_free(*state);
    int status = http_child_stop(&shared_server, 20000);
    if (status != 0)
        fprintf(stderr, "the server exited with status %d\n", status);
    return status == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------
 * The server going away
 * ------------------------------------------------------------------------ */

static void test_server_stops(void **state)
{
    http_child_t server;
    assert_int_equal(http_child_start(&server, notes_argv, 20000), 0);
    mcp_client_t *c = connect_to(server.url);
    assert_non_null(c);
    listen_events_t ev = LISTEN_EVENTS_INIT;
    mcp_subscription_t *sub = listen_to_index(c, &ev, NULL);

    /* A stopping server ends its listen streams with a result: the
     * subscription ends gracefully. */
    assert_int_equal(http_child_stop(&server, 20000), 0);
    assert_int_equal(wait_count(&ev, &ev.ended, 1, 5000), 1);
    pthread_mutex_lock(&ev.lock);
    assert_int_equal(ev.end_rc, MCP_OK);
    pthread_mutex_unlock(&ev.lock);
    mcp_subscription_close(sub);

    /* Nobody answers any more. */
    json_t *args = json_pack("{s:s}", "text", "anyone?"), *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "echo", args, NULL, &result, &err), MCP_EIO);
    assert_null(result);
    json_decref(args);
    mcp_client_free(c);

    /* Connecting to a closed port fails the same way. */
    c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"}, NULL);
    assert_int_equal(mcp_client_connect_http(c, &(mcp_http_target_t){.url = server.url}, &err),
                     MCP_EIO);
    mcp_client_free(c);
    mcp_error_clear(&err);
}

/* Whether process `pid` has mapped a file whose name contains `library`. */
static bool maps_library(pid_t pid, const char *library)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *maps = fopen(path, "r");
    assert_non_null(maps);
    char line[4096];
    bool found = false;
    while (fgets(line, sizeof line, maps))
        found = found || strstr(line, library) != NULL;
    fclose(maps);
    return found;
}

/* After every scenario has run through it: a server on plain HTTP is
 * served by libmcp's own engine, and never loads libmicrohttpd, nor the
 * GnuTLS stack under it (docs/architecture.md). */
static void test_plain_http_loads_no_tls(void **state)
{
    (void)state;
    assert_false(maps_library(shared_server.pid, "libmicrohttpd"));
    assert_false(maps_library(shared_server.pid, "libgnutls"));
}

int main(void)
{
    const struct CMUnitTest shared[] = {NOTES_SCENARIOS,
                                        cmocka_unit_test(test_plain_http_loads_no_tls)};
    const struct CMUnitTest own[] = {
        cmocka_unit_test(test_server_stops),
    };
    int failed = cmocka_run_group_tests_name("client_http_notes", shared, start_notes, stop_notes);
    return failed + cmocka_run_group_tests_name("client_http_own", own, NULL, NULL);
}
