/*
 * A client with a token callback against libmcp's HTTP server, whose auth
 * hook admits one token at a time: a request refused with 401 (or 403) is
 * sent exactly once more, after the callback was asked again with the
 * server's challenge; a second refusal fails the request with MCP_EAUTH.
 * This holds for calls after connecting, not only for the connect probe.
 * Results the server marked "private" (its default) are not served to a
 * token other than the one they were fetched with.
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/mcp.h"

#define CHALLENGE "Bearer error=\"invalid_token\", resource_metadata=\"http://127.0.0.1/x\""

/* ---- the server: admits "Bearer <valid>" only ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char valid[32];  /* the token the server admits now */
static int refused;     /* requests it refused */
static int admitted;    /* requests it admitted */

static void admit_only(const char *token)
{
    pthread_mutex_lock(&lock);
    snprintf(valid, sizeof valid, "%s", token);
    pthread_mutex_unlock(&lock);
}

static int check_token(void *user, const mcp_headers_t *headers, char **principal,
                       char **www_authenticate)
{
    (void)user;
    (void)principal;
    const char *auth = mcp_headers_get(headers, "Authorization");
    pthread_mutex_lock(&lock);
    bool ok = auth && strncmp(auth, "Bearer ", 7) == 0 && strcmp(auth + 7, valid) == 0;
    if (ok)
        admitted++;
    else
        refused++;
    pthread_mutex_unlock(&lock);
    if (ok)
        return 0;
    *www_authenticate = strdup(CHALLENGE);
    return 401;
}

static int echo(mcp_call_t *call, void *user)
{
    (void)user;
    return mcp_call_add_text(call, "ok");
}

/* ---- the client's token callback: hands out t1, t2, t3, ... ---- */

static int token_calls;
static char last_challenge[256];

static int next_token(void *user, const char *url, const char *challenge, char **token_out)
{
    (void)user;
    (void)url;
    pthread_mutex_lock(&lock);
    token_calls++;
    snprintf(last_challenge, sizeof last_challenge, "%s", challenge ? challenge : "(none)");
    int n = token_calls;
    pthread_mutex_unlock(&lock);
    return asprintf(token_out, "t%d", n) < 0 ? MCP_ENOMEM : 0;
}

typedef struct fixture {
    mcp_server_t *srv;
    mcp_http_server_t *http;
    mcp_client_t *client;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    mcp_error_t err = {0};
    f->srv = mcp_server_new(&(mcp_server_options_t){.name = "auth", .version = "1.0.0"}, &err);
    assert_non_null(f->srv);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = "echo", .handler = echo},
                                         &err),
                     MCP_OK);
    assert_int_equal(mcp_http_server_start(f->srv,
                                           &(mcp_http_options_t){.endpoint = {.auth = check_token}},
                                           &f->http, &err),
                     MCP_OK);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", (unsigned)mcp_http_server_port(f->http));
    token_calls = refused = admitted = 0;
    admit_only("t1"); /* the callback's first answer */
    f->client = mcp_client_new(&(mcp_client_options_t){.name = "c", .version = "1",
                                                       .era = MCP_CLIENT_ERA_MODERN},
                               &err);
    assert_non_null(f->client);
    if (mcp_client_connect_http(f->client,
                                &(mcp_http_target_t){.url = url, .token = next_token}, &err) !=
        MCP_OK)
        fail_msg("connect: %s", err.message);
    /* The tools are known, so that a tools/call is one request (a new
     * tool's call would list the tools first, to learn its headers). */
    json_t *tools = NULL;
    assert_int_equal(mcp_client_list_tools_all(f->client, NULL, &tools, &err), MCP_OK);
    json_decref(tools);
    assert_int_equal(token_calls, 1); /* asked once, without a challenge */
    assert_string_equal(last_challenge, "(none)");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->client);
    mcp_http_server_stop(f->http);
    mcp_server_free(f->srv);
    free(f);
    return 0;
}

static int call_echo(fixture_t *f, mcp_error_t *err)
{
    json_t *result = NULL;
    int rc = mcp_client_call_tool(f->client, "echo", NULL, NULL, &result, err);
    json_decref(result);
    return rc;
}

/* The token held is reused while the server admits it. */
static void test_token_kept(void **state)
{
    fixture_t *f = *state;
    mcp_error_t err = {0};
    for (int i = 0; i < 3; i++)
        assert_int_equal(call_echo(f, &err), MCP_OK);
    assert_int_equal(token_calls, 1);
    assert_int_equal(refused, 0);
}

/* The server moves on to t2: the refused call goes again with the
 * callback's answer to the challenge, and succeeds. */
static void test_refused_call_sent_again(void **state)
{
    fixture_t *f = *state;
    mcp_error_t err = {0};
    admit_only("t2");
    int before = admitted;
    if (call_echo(f, &err) != MCP_OK)
        fail_msg("call: %s", err.message);
    assert_int_equal(token_calls, 2);
    assert_string_equal(last_challenge, CHALLENGE);
    assert_int_equal(refused, 1);
    assert_int_equal(admitted, before + 1);
    /* and t2 is kept for the next call */
    assert_int_equal(call_echo(f, &err), MCP_OK);
    assert_int_equal(token_calls, 2);
}

/* A server that refuses the new token too: one more try, no loop. */
static void test_second_refusal_fails(void **state)
{
    fixture_t *f = *state;
    mcp_error_t err = {0};
    admit_only("nobody");
    assert_int_equal(call_echo(f, &err), MCP_EAUTH);
    assert_int_equal(refused, 2); /* the call and its one retry */
    assert_int_equal(token_calls, 2);
    mcp_error_clear(&err);
}

/* Requests the server admitted so far. */
static int admitted_now(void)
{
    pthread_mutex_lock(&lock);
    int n = admitted;
    pthread_mutex_unlock(&lock);
    return n;
}

static void list_tools(fixture_t *f)
{
    json_t *tools = NULL;
    mcp_error_t err = {0};
    if (mcp_client_list_tools_all(f->client, NULL, &tools, &err) != MCP_OK)
        fail_msg("tools/list: %s", err.message);
    assert_int_equal(json_array_size(tools), 1);
    json_decref(tools);
}

/* Digest 6: a "private" result (the server's tools/list: ttlMs 60000,
 * private) is reused only within the authorization context it was
 * fetched in. The client's own re-authorization (401, the callback's new
 * token) starts a new context: the list fetched with t1 is not served
 * for t2, which gets its own, cached in turn. */
static void test_private_cache_follows_the_token(void **state)
{
    fixture_t *f = *state;
    mcp_error_t err = {0};
    int before = admitted_now();
    list_tools(f); /* fetched with t1 by setup: from the cache */
    assert_int_equal(admitted_now(), before);

    admit_only("t2");
    if (call_echo(f, &err) != MCP_OK)
        fail_msg("call: %s", err.message);
    assert_int_equal(token_calls, 2);
    before = admitted_now();
    list_tools(f);
    assert_int_equal(admitted_now(), before + 1); /* asked with t2 */
    list_tools(f);
    assert_int_equal(admitted_now(), before + 1); /* t2's own, from the cache */
}

/* A configured server connected with a token source in the connect
 * options (as for a "oauth" server): the source's token is sent, not the
 * config's. */
static void test_config_connect_with_token_source(void **state)
{
    fixture_t *f = *state;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", (unsigned)mcp_http_server_port(f->http));
    mcp_server_config_t config = {.name = "s", .url = url, .token = "from-config"};
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "c", .version = "1",
                                                            .era = MCP_CLIENT_ERA_MODERN},
                                     &err);
    assert_non_null(c);
    admit_only("t2"); /* next_token's next answer */
    if (mcp_server_config_connect(&config, c,
                                  &(mcp_server_connect_options_t){.token = next_token}, &err) !=
        MCP_OK)
        fail_msg("connect: %s", err.message);
    assert_int_equal(token_calls, 2);
    assert_int_equal(refused, 0);
    mcp_client_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_token_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_call_sent_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_refusal_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_private_cache_follows_the_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_connect_with_token_source, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
