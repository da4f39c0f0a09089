/*
 * Interop: the C client over Streamable HTTP against a server written with
 * the TypeScript SDK v2 (tests/interop/ts2_http_server.mjs: createMcpHandler
 * behind node:http), pinned to the modern era: discover, list, call, an MRTR
 * elicitation and a listen event (tools/list_changed) that refreshes the
 * cached tool list.
 *
 * The peer comes from npm (tests/interop, installed by
 * scripts/install-deps.sh check): without node or the installed package the
 * test fails and says so -- make check must prove interop, not skip it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "http_child.h"
#include "mcp/client.h"
#include "mcp/mcp.h"
#include "schema_check.h"

#define INTEROP_DIR MCP_SOURCE_DIR "/tests/interop"
#define SERVER_SCRIPT INTEROP_DIR "/ts2_http_server.mjs"
#define PEER_PACKAGE INTEROP_DIR "/node_modules/@modelcontextprotocol/server/package.json"

static const char *answer = "accept";
static int asked;

static int elicit(void *user, const json_t *params, json_t **result_out)
{
    asked++;
    if (!strstr(json_string_value(json_object_get(params, "message")), "deploy"))
        return -1;
    *result_out = strcmp(answer, "accept") == 0
                      ? json_pack("{s:s, s:{s:b}}", "action", "accept", "content", "confirm", 1)
                      : json_pack("{s:s}", "action", answer);
    return 0;
}

typedef struct fixture {
    http_child_t server;
    mcp_client_t *c;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    if (!f || http_child_start(&f->server, (const char *const[]){"node", SERVER_SCRIPT, NULL},
                               30000) != 0) {
        free(f);
        return -1;
    }
    mcp_error_t err = {0};
    f->c = mcp_client_new(&(mcp_client_options_t){
        .name = "libmcp-interop", .version = "1.0", .era = MCP_CLIENT_ERA_MODERN,
        .log = mcp_log_stderr, .elicit = elicit}, &err);
    if (!f->c || mcp_client_connect_http(f->c, &(mcp_http_target_t){.url = f->server.url},
                                         &err) != MCP_OK) {
        fprintf(stderr, "cannot connect to the TypeScript server: %s\n", err.message);
        mcp_error_clear(&err);
        mcp_client_free(f->c);
        http_child_stop(&f->server, 10000);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->c);
    int status = http_child_stop(&f->server, 10000);
    free(f);
    if (status != 0)
        fprintf(stderr, "the TypeScript server exited with status %d\n", status);
    return status == 0 ? 0 : -1;
}

static mcp_client_t *client_of(void **state)
{
    return ((fixture_t *)*state)->c;
}

static void assert_valid(const json_t *result, const char *method)
{
    json_t *msg = json_pack("{s:s, s:i, s:O}", "jsonrpc", "2.0", "id", 1, "result", result);
    MCP_ASSERT_SCHEMA_VALID(msg, method, "2026-07-28");
    json_decref(msg);
}

static const char *text_of(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

static void test_discover_list_call(void **state)
{
    mcp_client_t *c = client_of(state);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_era(c), MCP_ERA_MODERN);
    assert_string_equal(json_string_value(json_object_get(mcp_client_server_info(c), "name")),
                        "ts2-interop-http");
    assert_string_equal(mcp_client_protocol_version(c), "2026-07-28");
    assert_true(json_is_true(json_object_get(
        json_object_get(mcp_client_server_capabilities(c), "tools"), "listChanged")));
    json_t *r = NULL;
    assert_int_equal(mcp_client_discover(c, NULL, &r, &err), MCP_OK);
    assert_valid(r, "server/discover");
    json_decref(r);

    assert_int_equal(mcp_client_list_tools(c, NULL, NULL, &r, &err), MCP_OK);
    assert_valid(r, "tools/list");
    json_decref(r);
    json_t *tools = NULL;
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &tools, &err), MCP_OK);
    assert_true(json_array_size(tools) >= 3);
    json_decref(tools);

    /* Non-ASCII travels in the body (and in Mcp-Name only when needed). */
    json_t *args = json_pack("{s:s}", "text", "hello, 世界");
    assert_int_equal(mcp_client_call_tool(c, "echo", args, NULL, &r, &err), MCP_OK);
    assert_valid(r, "tools/call");
    assert_string_equal(text_of(r), "hello, 世界");
    json_decref(r);
    json_decref(args);

    /* Its errors come back as JSON-RPC errors. */
    assert_int_equal(mcp_client_call_tool(c, "missing", NULL, NULL, &r, &err), MCP_ERPC);
    assert_int_equal(err.code, -32602);
    mcp_error_clear(&err);
}

static void test_mrtr_elicitation(void **state)
{
    mcp_client_t *c = client_of(state);
    json_t *args = json_pack("{s:s}", "what", "deploy"), *r = NULL;
    mcp_error_t err = {0};
    asked = 0;
    answer = "accept";
    assert_int_equal(mcp_client_call_tool(c, "confirm", args, NULL, &r, &err), MCP_OK);
    assert_int_equal(asked, 1);
    assert_valid(r, "tools/call");
    assert_string_equal(text_of(r), "confirmed deploy");
    json_decref(r);

    answer = "decline";
    assert_int_equal(mcp_client_call_tool(c, "confirm", args, NULL, &r, &err), MCP_OK);
    assert_int_equal(asked, 2);
    assert_string_equal(text_of(r), "refused deploy");
    json_decref(r);
    json_decref(args);
}

typedef struct heard {
    pthread_mutex_t lock;
    int changed;
} heard_t;

static void on_event(void *user, const char *method, const json_t *params)
{
    heard_t *h = user;
    pthread_mutex_lock(&h->lock);
    if (strcmp(method, "notifications/tools/list_changed") == 0)
        h->changed++;
    pthread_mutex_unlock(&h->lock);
}

static void test_listen_event(void **state)
{
    mcp_client_t *c = client_of(state);
    heard_t h = {PTHREAD_MUTEX_INITIALIZER, 0};
    mcp_subscription_t *sub = NULL;
    json_t *honoured = NULL, *r = NULL, *tools = NULL;
    mcp_error_t err = {0};

    /* Cached before the change... */
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &tools, &err), MCP_OK);
    size_t before = json_array_size(tools);
    json_decref(tools);

    assert_int_equal(mcp_client_listen(c, &(mcp_listen_filter_t){.tools_list_changed = true,
                                                                 .prompts_list_changed = true},
                                       on_event, &h, NULL, &sub, &honoured, &err),
                     MCP_OK);
    /* The server has no prompts: it honours the tools part only. */
    assert_true(json_is_true(json_object_get(honoured, "toolsListChanged")));
    assert_null(json_object_get(honoured, "promptsListChanged"));
    json_decref(honoured);

    assert_int_equal(mcp_client_call_tool(c, "add_tool", NULL, NULL, &r, &err), MCP_OK);
    json_decref(r);
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&h.lock);
        int n = h.changed;
        pthread_mutex_unlock(&h.lock);
        if (n > 0)
            break;
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    }
    pthread_mutex_lock(&h.lock);
    assert_true(h.changed >= 1);
    pthread_mutex_unlock(&h.lock);
    /* ...and fresh after it: the added tool is listed and answers. */
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &tools, &err), MCP_OK);
    assert_int_equal(json_array_size(tools), before + 1);
    json_decref(tools);
    assert_int_equal(mcp_client_call_tool(c, "extra_1", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(text_of(r), "extra_1");
    json_decref(r);
    mcp_subscription_close(sub);
    mcp_error_clear(&err);
}

int main(void)
{
    if (access(PEER_PACKAGE, R_OK) != 0 || system("node --version > /dev/null 2>&1") != 0) {
        fprintf(stderr, "client_http_ts2: FAILED: node or %s is missing; "
                        "run scripts/install-deps.sh check (npm ci in tests/interop)\n",
                PEER_PACKAGE);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discover_list_call),
        cmocka_unit_test(test_mrtr_elicitation),
        cmocka_unit_test(test_listen_event),
    };
    return cmocka_run_group_tests_name("client_http_ts2", tests, setup, teardown);
}
