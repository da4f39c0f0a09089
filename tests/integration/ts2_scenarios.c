/*
 * The interop scenarios against the TypeScript SDK v2 servers that do not
 * depend on the transport (see ts2_scenarios.h).
 */
#define _GNU_SOURCE /* nanosleep with -std=c11 */
#include "ts2_scenarios.h"

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

#include "mcp/mcp.h"
#include "schema_check.h"

#define PEER_PACKAGE TS2_INTEROP_DIR "/node_modules/@modelcontextprotocol/server/package.json"

bool ts2_peer_installed(const char *program)
{
    if (access(PEER_PACKAGE, R_OK) == 0 && system("node --version > /dev/null 2>&1") == 0)
        return true;
    fprintf(stderr, "%s: FAILED: node or %s is missing; "
                    "run scripts/install-deps.sh check (npm ci in tests/interop)\n",
            program, PEER_PACKAGE);
    return false;
}

/* How test_mrtr_elicitation answers, and how often it was asked. */
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

mcp_client_t *ts2_client_new(mcp_client_era_t era)
{
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "libmcp-interop", .version = "1.0", .era = era, .log = mcp_log_stderr,
        .elicit = elicit}, &err);
    if (!c) {
        fprintf(stderr, "cannot make a client: %s\n", err.message);
        mcp_error_clear(&err);
    }
    return c;
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

void test_discover_list_call(void **state)
{
    const ts2_peer_t *peer = *state;
    mcp_client_t *c = peer->client;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_era(c), MCP_ERA_MODERN);
    assert_string_equal(json_string_value(json_object_get(mcp_client_server_info(c), "name")),
                        peer->server_name);
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

    /* Non-ASCII arguments travel intact (over HTTP in the body, and in
     * Mcp-Name only when needed). */
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

void test_mrtr_elicitation(void **state)
{
    mcp_client_t *c = ((const ts2_peer_t *)*state)->client;
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

/* What the listen callback heard; it runs on the client's threads. */
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

/* Waits up to 5 s for the first tools/list_changed; returns how many came. */
static int wait_changed(heard_t *h)
{
    int n = 0;
    for (int i = 0; i < 500 && n == 0; i++) {
        if (i > 0)
            nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
        pthread_mutex_lock(&h->lock);
        n = h->changed;
        pthread_mutex_unlock(&h->lock);
    }
    return n;
}

void test_listen_event(void **state)
{
    mcp_client_t *c = ((const ts2_peer_t *)*state)->client;
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
    assert_true(wait_changed(&h) >= 1);
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
