/*
 * Where a server's requestState keys come from (mcp_server_options_t
 * state_keys_file / state_keys_env, state_single_use): a state sealed by
 * one instance opens on another that shares the keys, a bad source fails
 * mcp_server_new with a message naming it, and single-use states open once.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, mkstemp, setenv */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "mcp/request_state.h"
#include "mcp/server.h"
#include "modern_request.h"
#include "server_expect.h"

/* 32 bytes of key as base64, under two ids (the newest seals). */
#define KEYS_TEXT                                                                              \
    "old AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"                                        \
    "new ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=\n"

/* Asks for a confirmation, then says which answer it got. */
static int confirm(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "ok");
    if (!answer) {
        json_t *schema = json_pack("{s:s, s:{s:{s:s}}}", "type", "object", "properties", "sure",
                                   "type", "boolean");
        int rc = mcp_call_elicit(call, "ok", "Sure?", schema, MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    return mcp_call_add_textf(call, "answer: %s",
                              json_string_value(json_object_get(answer, "action")));
}

static mcp_server_t *server_with(const mcp_server_options_t *extra, mcp_error_t *err)
{
    mcp_server_options_t o = *extra;
    o.name = "keys";
    o.version = "1";
    mcp_server_t *srv = mcp_server_new(&o, err);
    if (srv)
        assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "confirm",
                                                                .handler = confirm}, NULL),
                         MCP_OK);
    return srv;
}

static char *write_keys(void)
{
    char *path = strdup("/tmp/mcp-keys-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, KEYS_TEXT, strlen(KEYS_TEXT)), (ssize_t)strlen(KEYS_TEXT));
    close(fd);
    return path;
}

static json_t *ask(void)
{
    json_t *request = modern_request(1, "tools/call", json_pack("{s:s}", "name", "confirm"));
    modern_set_capabilities(request, "{\"elicitation\":{}}");
    return request;
}

/* The first round on `a`, the retry on `b`: the answer text, or NULL when
 * the retry failed (its error code in *code). */
static char *round_trip(mcp_server_t *a, mcp_server_t *b, int *code)
{
    json_t *request = ask();
    json_t *first = serve(a, json_incref(request), NULL);
    const json_t *result = expect_input_required(first);
    const char *state = json_string_value(json_object_get(result, "requestState"));
    json_t *retry = modern_retry(request, 2, json_pack("{s:{s:s}}", "ok", "action", "accept"),
                                 state);
    json_t *second = serve(b, retry, NULL);
    char *text = NULL;
    json_t *error = json_object_get(second, "error");
    if (error)
        *code = (int)json_integer_value(json_object_get(error, "code"));
    else
        text = strdup(json_string_value(json_object_get(
            json_array_get(json_object_get(expect_complete(second), "content"), 0), "text")));
    json_decref(first);
    json_decref(second);
    json_decref(request);
    return text;
}

static void test_instances_sharing_a_key_file(void **state)
{
    char *path = write_keys();
    mcp_server_t *a = server_with(&(mcp_server_options_t){.state_keys_file = path}, NULL);
    mcp_server_t *b = server_with(&(mcp_server_options_t){.state_keys_file = path}, NULL);
    int code = 0;
    char *text = round_trip(a, b, &code);
    assert_non_null(text);
    assert_string_equal(text, "answer: accept");
    free(text);

    /* An instance with its own random key cannot open a shared-key state. */
    mcp_server_t *stranger = server_with(&(mcp_server_options_t){0}, NULL);
    assert_null(round_trip(a, stranger, &code));
    assert_int_equal(code, MCP_INVALID_PARAMS);
    mcp_server_free(stranger);
    mcp_server_free(a);
    mcp_server_free(b);
    unlink(path);
    free(path);
}

static void test_keys_from_the_environment(void **state)
{
    setenv("MCP_TEST_STATE_KEYS", KEYS_TEXT, 1);
    char *path = write_keys();
    mcp_server_t *a = server_with(&(mcp_server_options_t){.state_keys_env = "MCP_TEST_STATE_KEYS"},
                                  NULL);
    mcp_server_t *b = server_with(&(mcp_server_options_t){.state_keys_file = path}, NULL);
    int code = 0;
    char *text = round_trip(a, b, &code); /* same keys, two sources */
    assert_non_null(text);
    free(text);
    mcp_server_free(a);
    mcp_server_free(b);
    unlink(path);
    free(path);
    unsetenv("MCP_TEST_STATE_KEYS");
}

static void test_bad_sources_fail_creation(void **state)
{
    mcp_error_t err = {0};
    assert_null(server_with(&(mcp_server_options_t){.state_keys_file = "/no/such/keys"}, &err));
    assert_non_null(strstr(err.message, "/no/such/keys"));
    mcp_error_clear(&err);

    unsetenv("MCP_TEST_NO_KEYS");
    assert_null(server_with(&(mcp_server_options_t){.state_keys_env = "MCP_TEST_NO_KEYS"}, &err));
    assert_non_null(strstr(err.message, "MCP_TEST_NO_KEYS"));
    mcp_error_clear(&err);

    setenv("MCP_TEST_BAD_KEYS", "k not-base64!", 1);
    assert_null(server_with(&(mcp_server_options_t){.state_keys_env = "MCP_TEST_BAD_KEYS"}, &err));
    assert_non_null(strstr(err.message, "MCP_TEST_BAD_KEYS"));
    mcp_error_clear(&err);
    unsetenv("MCP_TEST_BAD_KEYS");
}

static void test_single_use(void **state)
{
    char *path = write_keys();
    mcp_server_t *srv = server_with(
        &(mcp_server_options_t){.state_keys_file = path, .state_single_use = true}, NULL);
    json_t *request = ask();
    json_t *first = serve(srv, json_incref(request), NULL);
    const char *sealed =
        json_string_value(json_object_get(expect_input_required(first), "requestState"));
    json_t *answers = json_pack("{s:{s:s}}", "ok", "action", "accept");
    json_t *once = serve(srv, modern_retry(request, 2, json_incref(answers), sealed), NULL);
    expect_complete(once);
    json_t *twice = serve(srv, modern_retry(request, 3, json_incref(answers), sealed), NULL);
    expect_error(twice, MCP_INVALID_PARAMS); /* a replay */
    json_decref(once);
    json_decref(twice);
    json_decref(answers);
    json_decref(first);
    json_decref(request);
    mcp_server_free(srv);
    unlink(path);
    free(path);
}

/* The first round of `request` on `srv`: its requestState (malloc'd). */
static char *first_state(mcp_server_t *srv, const json_t *request)
{
    json_t *first = serve(srv, json_incref((json_t *)request), NULL);
    char *state =
        strdup(json_string_value(json_object_get(expect_input_required(first), "requestState")));
    json_decref(first);
    return state;
}

/* The retry of `request` with `state` on `srv`: 0 when it completed, else
 * its error code. */
static int retry(mcp_server_t *srv, const json_t *request, json_int_t id, const char *state)
{
    json_t *answers = json_pack("{s:{s:s}}", "ok", "action", "accept");
    json_t *response = serve(srv, modern_retry(request, id, answers, state), NULL);
    json_t *error = json_object_get(response, "error");
    int code = error ? (int)json_integer_value(json_object_get(error, "code")) : 0;
    if (!error)
        expect_complete(response);
    json_decref(response);
    return code;
}

/* The keys outlive the process, the memory of redeemed states does not:
 * after a restart a state of the previous process must not open, or one
 * already redeemed would run its handler again. */
static void test_single_use_survives_a_restart(void **state)
{
    char *path = write_keys();
    mcp_server_options_t o = {.state_keys_file = path, .state_single_use = true};
    mcp_server_t *before = server_with(&o, NULL);
    json_t *request = ask();
    char *redeemed = first_state(before, request), *in_flight = first_state(before, request);
    assert_int_equal(retry(before, request, 2, redeemed), 0);
    mcp_server_free(before);

    mcp_server_t *after = server_with(&o, NULL);
    assert_int_equal(retry(after, request, 3, redeemed), MCP_INVALID_PARAMS);
    assert_int_equal(retry(after, request, 4, in_flight), MCP_INVALID_PARAMS);
    char *fresh = first_state(after, request);
    assert_int_equal(retry(after, request, 5, fresh), 0);
    assert_int_equal(retry(after, request, 6, fresh), MCP_INVALID_PARAMS);
    mcp_server_free(after);
    free(redeemed), free(in_flight), free(fresh);
    json_decref(request);
    unlink(path);
    free(path);
}

/* A key rotation through mcp_server_set_codec that keeps the server's
 * replay store: redeemed states stay redeemed, states in flight open
 * once. A codec with a store of its own refuses both. */
static void test_single_use_across_a_rotation(void **state)
{
    char *path = write_keys();
    mcp_server_t *srv =
        server_with(&(mcp_server_options_t){.state_keys_file = path, .state_single_use = true},
                    NULL);
    assert_null(mcp_server_replay_store(NULL));
    json_t *request = ask();
    char *redeemed = first_state(srv, request), *in_flight = first_state(srv, request);
    char *third = first_state(srv, request);
    assert_int_equal(retry(srv, request, 2, redeemed), 0);

    mcp_keyring_t *ring = mcp_keyring_new();
    assert_int_equal(mcp_keyring_load_file(ring, path, NULL), MCP_OK);
    assert_int_equal(mcp_keyring_generate(ring, "newest"), MCP_OK);
    mcp_aead_options_t o = {.replay_store = mcp_server_replay_store(srv)};
    assert_non_null(o.replay_store);
    assert_int_equal(mcp_server_set_codec(srv, mcp_codec_aead_new(ring, &o, NULL)), MCP_OK);
    assert_int_equal(retry(srv, request, 3, redeemed), MCP_INVALID_PARAMS);
    assert_int_equal(retry(srv, request, 4, in_flight), 0);
    assert_int_equal(retry(srv, request, 5, in_flight), MCP_INVALID_PARAMS);

    /* The same rotation with a store of its own cannot tell. */
    ring = mcp_keyring_new();
    assert_int_equal(mcp_keyring_load_file(ring, path, NULL), MCP_OK);
    o.replay_store = mcp_replay_store_memory_new(0);
    assert_int_equal(mcp_server_set_codec(srv, mcp_codec_aead_new(ring, &o, NULL)), MCP_OK);
    assert_int_equal(retry(srv, request, 6, redeemed), MCP_INVALID_PARAMS);
    assert_int_equal(retry(srv, request, 7, third), MCP_INVALID_PARAMS);
    mcp_server_free(srv);
    free(redeemed), free(in_flight), free(third);
    json_decref(request);
    unlink(path);
    free(path);

    /* Without single use there is no store to hand on. */
    srv = server_with(&(mcp_server_options_t){0}, NULL);
    assert_null(mcp_server_replay_store(srv));
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_instances_sharing_a_key_file),
        cmocka_unit_test(test_keys_from_the_environment),
        cmocka_unit_test(test_bad_sources_fail_creation),
        cmocka_unit_test(test_single_use),
        cmocka_unit_test(test_single_use_survives_a_restart),
        cmocka_unit_test(test_single_use_across_a_rotation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
