/*
 * Server core, multi round-trip requests (digest section 3): a handler that
 * asks for input yields an input_required result with inputRequests and a
 * sealed requestState; the retry runs it again with the answers. Covered:
 * one and two rounds with handler state, declined answers, every kind of
 * input request and the capability each needs (-32021 when the handler
 * cannot go on without it), requestState that was tampered with, expired,
 * replayed or minted for another request (-32602, the handler never runs),
 * the round limit, and the validation of inputResponses.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, strndup */

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

#include "mcp/errors.h"
#include "mcp/request.h"
#include "mcp/request_state.h"
#include "mcp/server_core.h"

#include "capture_sink.h"
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

static atomic_int runs; /* handler runs, to prove a rejected retry never ran */

static int64_t fake_now; /* the sealing codec's clock, in ms */

static int64_t read_fake_clock(void *user)
{
    return fake_now;
}

/* A server whose requestState codec runs on fake_now (states live 1 s),
 * optionally single-use. */
static mcp_server_t *new_server(int max_rounds, bool single_use)
{
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "mrtr-test", .version = "1", .max_input_rounds = max_rounds},
        NULL);
    assert_non_null(srv);
    mcp_keyring_t *ring = mcp_keyring_new();
    assert_int_equal(mcp_keyring_generate(ring, "test-key"), MCP_OK);
    fake_now = 1700000000000;
    mcp_codec_t *codec = mcp_codec_aead_new(
        ring,
        &(mcp_aead_options_t){.ttl_ms = 1000, .now_ms = read_fake_clock,
                              .replay_store = single_use ? mcp_replay_store_memory_new(0) : NULL},
        NULL);
    assert_non_null(codec);
    assert_int_equal(mcp_server_set_codec(srv, codec), MCP_OK);
    atomic_store(&runs, 0);
    return srv;
}

/* What a handler returns after asking: the failure, or MCP_INPUT_REQUIRED. */
static int asked(int rc)
{
    return rc < 0 ? rc : MCP_INPUT_REQUIRED;
}

static json_t *confirm_schema(void)
{
    return json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "ok", "type",
                     "boolean", "required", "ok");
}

/* Asks "Sure?" under "confirm" until answered; then reports the answer. */
static int confirm(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&runs, 1);
    const json_t *answer = mcp_call_input(call, "confirm");
    if (!answer) {
        int rc = mcp_call_elicit(call, "confirm", "Sure?", confirm_schema(), MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    HANDLER_CHECK(call, mcp_call_input(call, "bogus") == NULL);
    HANDLER_CHECK(call, mcp_call_input(call, NULL) == NULL);
    const char *action = json_string_value(json_object_get(answer, "action"));
    const json_t *ok = json_object_get(json_object_get(answer, "content"), "ok");
    return mcp_call_add_textf(call, "%s%s", action, json_is_true(ok) ? "+ok" : "");
}

/* The same handler behind the other two methods that may ask. */
static int confirm_prompt(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&runs, 1);
    const json_t *answer = mcp_call_input(call, "confirm");
    if (!answer) {
        int rc = mcp_call_elicit(call, "confirm", "Sure?", confirm_schema(), MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    return mcp_call_add_message(call, "user", mcp_content_text("confirmed"));
}

static int confirm_resource(mcp_call_t *call, const char *uri, void *user)
{
    atomic_fetch_add(&runs, 1);
    const json_t *answer = mcp_call_input(call, "confirm");
    if (!answer) {
        int rc = mcp_call_elicit(call, "confirm", "Sure?", confirm_schema(), MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    return mcp_call_add_resource_text(call, uri, "text/plain", "secret");
}

static void add_everything(mcp_server_t *srv);

static json_t *call_request(json_int_t id, const char *tool, json_t *arguments_new,
                            const char *caps)
{
    json_t *params = json_pack("{s:s}", "name", tool);
    if (arguments_new)
        json_object_set_new(params, "arguments", arguments_new);
    json_t *request = modern_request(id, "tools/call", params);
    if (caps)
        modern_set_capabilities(request, caps);
    return request;
}

static const char *state_of(const json_t *response)
{
    const char *state =
        json_string_value(json_object_get(expect_input_required(response), "requestState"));
    assert_non_null(state);
    return state;
}

static json_t *accept_confirm(bool ok)
{
    return json_pack("{s:{s:s, s:{s:b}}}", "confirm", "action", "accept", "content", "ok", ok);
}

static const char *first_text(const json_t *response)
{
    return json_string_value(json_object_get(
        json_array_get(json_object_get(expect_complete(response), "content"), 0), "text"));
}

/* ------------------------------------------------------------------ */
/* Round trips                                                         */
/* ------------------------------------------------------------------ */

static void test_one_round(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", json_pack("{s:s}", "what", "x"),
                                   "{\"elicitation\":{}}");
    int status = 0;
    json_t *first = serve(srv, json_incref(request), &status);
    const json_t *result = expect_input_required(first);
    assert_int_equal(status, 200);

    const json_t *asked = json_object_get(json_object_get(result, "inputRequests"), "confirm");
    assert_string_equal(json_string_value(json_object_get(asked, "method")), "elicitation/create");
    const json_t *params = json_object_get(asked, "params");
    assert_string_equal(json_string_value(json_object_get(params, "mode")), "form");
    assert_string_equal(json_string_value(json_object_get(params, "message")), "Sure?");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(params, "requestedSchema"), "type")),
        "object");
    /* Interim results carry no cache hints, but do name the server. */
    assert_null(json_object_get(result, "ttlMs"));
    assert_null(json_object_get(result, "cacheScope"));
    assert_non_null(json_object_get(json_object_get(result, "_meta"), MCP_META_SERVER_INFO));

    json_t *retry = modern_retry(request, 2, accept_confirm(true), state_of(first));
    json_t *second = serve(srv, retry, &status);
    assert_string_equal(first_text(second), "accept+ok");
    assert_int_equal(status, 200);
    assert_int_equal(atomic_load(&runs), 2);

    /* The state stays valid until it expires: the retry can be repeated
     * (no replay store here), with another answer. */
    retry = modern_retry(request, 3,
                         json_pack("{s:{s:s}}", "confirm", "action", "decline"), state_of(first));
    json_t *third = serve(srv, retry, NULL);
    assert_string_equal(first_text(third), "decline");
    retry = modern_retry(request, 4, json_pack("{s:{s:s}}", "confirm", "action", "cancel"),
                         state_of(first));
    json_t *fourth = serve(srv, retry, NULL);
    assert_string_equal(first_text(fourth), "cancel");

    json_decref(first);
    json_decref(second);
    json_decref(third);
    json_decref(fourth);
    json_decref(request);
    mcp_server_free(srv);
}

/* Round 0 asks "a" (elicitation), round 1 asks "b" (sampling) and keeps
 * "a" in its state, round 2 answers with both. */
static int two_rounds(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&runs, 1);
    const json_t *state = mcp_call_state(call);
    switch (mcp_call_round(call)) {
    case 0:
        HANDLER_CHECK(call, state == NULL);
        mcp_call_set_state(call, json_pack("{s:i}", "step", 1));
        HANDLER_CHECK(call, mcp_call_set_state(call, NULL) == MCP_EINVAL);
        return asked(mcp_call_elicit(call, "a", "A?", confirm_schema(), MCP_INPUT_NEEDED));
    case 1: {
        const json_t *a = mcp_call_input(call, "a");
        HANDLER_CHECK(call, json_integer_value(json_object_get(state, "step")) == 1);
        HANDLER_CHECK(call, a != NULL);
        mcp_call_set_state(call, json_pack("{s:i, s:O}", "step", 2, "a", a));
        json_t *sampling = json_pack("{s:[{s:s, s:{s:s, s:s}}], s:i}", "messages", "role", "user",
                                     "content", "type", "text", "text", "Pick", "maxTokens", 10);
        return asked(mcp_call_sample(call, "b", sampling, MCP_INPUT_NEEDED));
    }
    default: {
        const json_t *b = mcp_call_input(call, "b");
        HANDLER_CHECK(call, mcp_call_round(call) == 2);
        HANDLER_CHECK(call, json_integer_value(json_object_get(state, "step")) == 2);
        HANDLER_CHECK(call, b != NULL);
        /* Answers are per round: "a" came with the previous retry. */
        HANDLER_CHECK(call, mcp_call_input(call, "a") == NULL);
        const char *a_action =
            json_string_value(json_object_get(json_object_get(state, "a"), "action"));
        const char *model = json_string_value(json_object_get(b, "model"));
        return mcp_call_add_textf(call, "a=%s b=%s", a_action, model);
    }
    }
}

static void test_two_rounds(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *request = call_request(1, "two", NULL, "{\"elicitation\":{},\"sampling\":{}}");
    json_t *r0 = serve(srv, json_incref(request), NULL);
    json_t *retry = modern_retry(
        request, 2, json_pack("{s:{s:s, s:{s:b}}}", "a", "action", "accept", "content", "ok", 1),
        state_of(r0));
    json_t *r1 = serve(srv, retry, NULL);
    const json_t *asked = json_object_get(expect_input_required(r1), "inputRequests");
    assert_string_equal(json_string_value(json_object_get(json_object_get(asked, "b"), "method")),
                        "sampling/createMessage");
    assert_null(json_object_get(asked, "a"));
    /* Each round seals a new state. */
    assert_string_not_equal(state_of(r0), state_of(r1));

    retry = modern_retry(request, 3,
                         json_pack("{s:{s:s, s:{s:s, s:s}, s:s}}", "b", "role", "assistant",
                                   "content", "type", "text", "text", "42", "model", "m-1"),
                         state_of(r1));
    json_t *r2 = serve(srv, retry, NULL);
    assert_string_equal(first_text(r2), "a=accept b=m-1");
    assert_int_equal(atomic_load(&runs), 3);
    json_decref(r0);
    json_decref(r1);
    json_decref(r2);
    json_decref(request);
    mcp_server_free(srv);
}

/* A retry that leaves out the needed answer is asked again, not refused. */
static void test_missing_answer_asks_again(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", NULL, "{\"elicitation\":{}}");
    json_t *first = serve(srv, json_incref(request), NULL);
    json_t *retry = modern_retry(request, 2, NULL, state_of(first));
    json_t *second = serve(srv, retry, NULL);
    expect_input_required(second);
    json_decref(first);
    json_decref(second);
    json_decref(request);
    mcp_server_free(srv);
}

/* The other two methods that may ask. */
static void test_prompts_and_resources_may_ask(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *requests[] = {
        modern_request(1, "prompts/get", json_pack("{s:s}", "name", "confirm_prompt")),
        modern_request(1, "resources/read", json_pack("{s:s}", "uri", "test://secret")),
    };
    for (size_t i = 0; i < 2; i++) {
        modern_set_capabilities(requests[i], "{\"elicitation\":{}}");
        json_t *first = serve(srv, json_incref(requests[i]), NULL);
        const json_t *interim = expect_input_required(first);
        assert_null(json_object_get(interim, "ttlMs"));
        json_t *retry = modern_retry(requests[i], 2, accept_confirm(true), state_of(first));
        json_t *second = serve(srv, retry, NULL);
        const json_t *result = expect_complete(second);
        if (i == 1) {
            /* A read that went through MRTR depends on inputs outside the
             * cache key: it must not be cached (caching.mdx). */
            assert_int_equal(json_integer_value(json_object_get(result, "ttlMs")), 0);
        }
        json_decref(first);
        json_decref(second);
        json_decref(requests[i]);
    }
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Capabilities                                                        */
/* ------------------------------------------------------------------ */

/* Asks for whatever the argument "kind" names, with or without
 * MCP_INPUT_NEEDED ("needed"), and reports MCP_EUNSUPPORTED as a result. */
static int ask_kind(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&runs, 1);
    const char *kind = mcp_call_arg_string(call, "kind");
    bool needed = false;
    mcp_call_arg_bool(call, "needed", &needed);
    unsigned flags = needed ? MCP_INPUT_NEEDED : 0;
    json_t *sampling = json_pack("{s:[{s:s, s:{s:s, s:s}}], s:i}", "messages", "role", "user",
                                 "content", "type", "text", "text", "Hi", "maxTokens", 5);
    int rc;
    if (strcmp(kind, "form") == 0) {
        json_decref(sampling);
        rc = mcp_call_elicit(call, "k", "Name?", confirm_schema(), flags);
    } else if (strcmp(kind, "url") == 0) {
        json_decref(sampling);
        rc = mcp_call_elicit_url(call, "k", "Log in", "https://example.com/login", flags);
    } else if (strcmp(kind, "sampling") == 0) {
        rc = mcp_call_sample(call, "k", sampling, flags);
    } else if (strcmp(kind, "sampling_tools") == 0) {
        json_object_set_new(sampling, "tools", json_pack("[{s:s, s:{s:s}}]", "name", "t",
                                                         "inputSchema", "type", "object"));
        rc = mcp_call_sample(call, "k", sampling, flags);
    } else {
        json_decref(sampling);
        rc = mcp_call_list_roots(call, "k", flags);
    }
    if (rc == MCP_EUNSUPPORTED && !needed)
        return mcp_call_add_text(call, "unsupported");
    return rc < 0 ? rc : MCP_INPUT_REQUIRED;
}

static void test_input_capabilities(void **state)
{
    struct {
        const char *kind;
        const char *caps;       /* declared */
        const char *missing;    /* requiredCapabilities when refused, or NULL */
    } rows[] = {
        {"form", "{\"elicitation\":{}}", NULL},
        {"form", "{\"elicitation\":{\"form\":{}}}", NULL},
        {"form", "{}", "{\"elicitation\":{\"form\":{}}}"},
        {"form", "{\"elicitation\":{\"url\":{}}}", "{\"elicitation\":{\"form\":{}}}"},
        {"url", "{\"elicitation\":{\"url\":{}}}", NULL},
        {"url", "{\"elicitation\":{}}", "{\"elicitation\":{\"url\":{}}}"},
        {"sampling", "{\"sampling\":{}}", NULL},
        {"sampling", "{\"roots\":{}}", "{\"sampling\":{}}"},
        {"sampling_tools", "{\"sampling\":{\"tools\":{}}}", NULL},
        {"sampling_tools", "{\"sampling\":{}}", "{\"sampling\":{\"tools\":{}}}"},
        {"roots", "{\"roots\":{}}", NULL},
        {"roots", "{\"elicitation\":{}}", "{\"roots\":{}}"},
    };
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        for (int needed = 0; needed < 2; needed++) {
            json_t *request = call_request(
                1, "ask", json_pack("{s:s, s:b}", "kind", rows[i].kind, "needed", needed),
                rows[i].caps);
            modern_http_headers_t h;
            modern_http_headers_init(&h, request);
            mcp_request_context_t ctx = modern_http_context(&h, NULL);
            int status = 0;
            json_t *response = serve_with(srv, NULL, &ctx, request, &status);
            if (!rows[i].missing) {
                const json_t *asked = json_object_get(
                    json_object_get(expect_input_required(response), "inputRequests"), "k");
                assert_non_null(asked);
                assert_int_equal(status, 200);
            } else if (!needed) {
                assert_string_equal(first_text(response), "unsupported");
            } else {
                const json_t *error = expect_error(response, MCP_MISSING_CLIENT_CAPABILITY);
                json_t *want = json_loads(rows[i].missing, 0, NULL);
                const json_t *got =
                    json_object_get(json_object_get(error, "data"), "requiredCapabilities");
                if (!json_equal(got, want))
                    fail_msg("row %zu: requiredCapabilities %s", i, json_dumps(got, JSON_COMPACT));
                json_decref(want);
                assert_int_equal(status, 400);
            }
            json_decref(response);
            modern_http_headers_cleanup(&h);
        }
    }
    mcp_server_free(srv);
}

static int bad_asks(mcp_call_t *call, void *user)
{
    HANDLER_CHECK(call, mcp_call_elicit(call, "", "m", confirm_schema(), 0) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_elicit(call, NULL, "m", confirm_schema(), 0) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_elicit(call, "k", NULL, confirm_schema(), 0) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_elicit(call, "k", "m", json_string("no"), 0) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_elicit(call, "k", "m", NULL, 0) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_elicit_url(call, "k", "m", NULL, 0) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_sample(call, "k", json_pack("{s:i}", "maxTokens", 1), 0) ==
                            MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_sample(call, "k", NULL, 0) == MCP_EINVAL);
    /* Keys are unique within a round. */
    HANDLER_CHECK(call, mcp_call_elicit(call, "k", "m", confirm_schema(), 0) == MCP_OK);
    HANDLER_CHECK(call, mcp_call_list_roots(call, "k", 0) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_can_ask(call, "elicitation/create", NULL));
    HANDLER_CHECK(call, mcp_call_can_ask(call, "roots/list", NULL));
    HANDLER_CHECK(call, !mcp_call_can_ask(call, "sampling/createMessage", NULL));
    HANDLER_CHECK(call, !mcp_call_can_ask(call, "tools/call", NULL));
    json_t *url_mode = json_pack("{s:s}", "mode", "url");
    bool can_ask_url = mcp_call_can_ask(call, "elicitation/create", url_mode);
    json_decref(url_mode);
    HANDLER_CHECK(call, !can_ask_url);
    return MCP_INPUT_REQUIRED;
}

static void test_bad_asks(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *response =
        serve(srv, call_request(1, "bad_asks", NULL, "{\"elicitation\":{},\"roots\":{}}"), NULL);
    const json_t *asked = json_object_get(expect_input_required(response), "inputRequests");
    assert_int_equal(json_object_size(asked), 1);
    json_decref(response);
    mcp_server_free(srv);
}

static int asks_nothing(mcp_call_t *call, void *user)
{
    return MCP_INPUT_REQUIRED;
}

static void test_input_required_without_asking(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *response = serve(srv, call_request(1, "nothing", NULL, NULL), NULL);
    expect_error(response, MCP_INTERNAL_ERROR);
    json_decref(response);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* requestState the server must refuse                                 */
/* ------------------------------------------------------------------ */

/* Runs the first round of `request` and returns its sealed state (malloc'd). */
static char *first_state(mcp_server_t *srv, const json_t *request,
                         const mcp_request_context_t *ctx)
{
    json_t *first = serve_with(srv, NULL, ctx, json_deep_copy(request), NULL);
    char *sealed = strdup(state_of(first));
    json_decref(first);
    return sealed;
}

/* Sends `retry_new` and expects -32602 without the handler running; its
 * error.data (borrowed until the next call), or NULL. */
static json_t *refused_data;

static const json_t *expect_refused(mcp_server_t *srv, json_t *retry_new,
                                    const mcp_request_context_t *ctx)
{
    int before = atomic_load(&runs);
    int status = 0;
    json_t *response = serve_with(srv, NULL, ctx, retry_new, &status);
    const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
    assert_int_equal(atomic_load(&runs), before);
    json_decref(refused_data);
    refused_data = json_incref(json_object_get(error, "data"));
    json_decref(response);
    return refused_data;
}

/* A state that does not open is refused without saying why: the reason
 * goes to the server's log, not to a possibly hostile client. */
static void expect_state_refused(mcp_server_t *srv, json_t *retry_new,
                                 const mcp_request_context_t *ctx)
{
    assert_null(expect_refused(srv, retry_new, ctx));
}

static void test_tampered_state(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", NULL, "{\"elicitation\":{}}");
    char *sealed = first_state(srv, request, NULL);
    size_t n = strlen(sealed);

    char *flipped = strdup(sealed);
    flipped[n / 2] = flipped[n / 2] == 'A' ? 'B' : 'A';
    char *truncated = strndup(sealed, n - 4);
    char *extended = malloc(n + 3);
    snprintf(extended, n + 3, "%sAA", sealed);
    const char *forged[] = {flipped, truncated, extended, "", "not-a-state", "eyJyIjo1fQ"};
    for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++)
        expect_state_refused(srv, modern_retry(request, 2, accept_confirm(true), forged[i]), NULL);

    /* requestState must be a string. */
    json_t *retry = modern_retry(request, 2, accept_confirm(true), NULL);
    json_object_set_new(json_object_get(retry, "params"), "requestState", json_integer(1));
    expect_state_refused(srv, retry, NULL);

    /* The genuine one still works. */
    json_t *response = serve(srv, modern_retry(request, 3, accept_confirm(true), sealed), NULL);
    assert_string_equal(first_text(response), "accept+ok");
    json_decref(response);
    free(flipped);
    free(truncated);
    free(extended);
    free(sealed);
    json_decref(request);
    mcp_server_free(srv);
}

static void test_expired_state(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", NULL, "{\"elicitation\":{}}");
    char *sealed = first_state(srv, request, NULL);
    fake_now += 999;
    json_t *response = serve(srv, modern_retry(request, 2, accept_confirm(true), sealed), NULL);
    expect_complete(response);
    json_decref(response);
    fake_now += 1;
    expect_state_refused(srv, modern_retry(request, 3, accept_confirm(true), sealed), NULL);
    free(sealed);
    json_decref(request);
    mcp_server_free(srv);
}

static void test_replayed_state(void **state)
{
    mcp_server_t *srv = new_server(0, true);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", NULL, "{\"elicitation\":{}}");
    char *sealed = first_state(srv, request, NULL);
    json_t *response = serve(srv, modern_retry(request, 2, accept_confirm(true), sealed), NULL);
    expect_complete(response);
    json_decref(response);
    expect_state_refused(srv, modern_retry(request, 3, accept_confirm(true), sealed), NULL);
    free(sealed);
    json_decref(request);
    mcp_server_free(srv);
}

/* Single use spends a state only on a retry that is accepted: one refused
 * for an invalid inputResponse (-32602 naming it) keeps it, so the
 * corrected retry the error asks for goes through -- and spends it. */
static void test_refused_retry_keeps_single_use_state(void **state)
{
    mcp_server_t *srv = new_server(0, true);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", NULL, "{\"elicitation\":{}}");
    char *sealed = first_state(srv, request, NULL);
    json_t *bad = json_pack("{s:{s:s}}", "confirm", "action", "maybe");
    json_t *response = serve(srv, modern_retry(request, 2, bad, sealed), NULL);
    const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
    assert_non_null(strstr(json_string_value(json_object_get(error, "message")), "inputResponses"));
    json_decref(response);
    response = serve(srv, modern_retry(request, 3, accept_confirm(true), sealed), NULL);
    assert_string_equal(first_text(response), "accept+ok");
    json_decref(response);
    expect_state_refused(srv, modern_retry(request, 4, accept_confirm(true), sealed), NULL);
    free(sealed);
    json_decref(request);
    mcp_server_free(srv);
}

/* A full replay store is the server's failure, not the client's: -32603,
 * not the -32602 that tells a client its state was altered. */
static void test_full_replay_store_is_internal(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    mcp_keyring_t *ring = mcp_keyring_new();
    assert_int_equal(mcp_keyring_generate(ring, "small-store"), MCP_OK);
    mcp_codec_t *codec = mcp_codec_aead_new(
        ring, &(mcp_aead_options_t){.replay_store = mcp_replay_store_memory_new(1)}, NULL);
    assert_non_null(codec);
    assert_int_equal(mcp_server_set_codec(srv, codec), MCP_OK);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", NULL, "{\"elicitation\":{}}");
    char *first = first_state(srv, request, NULL);
    char *second = first_state(srv, request, NULL);
    json_t *response = serve(srv, modern_retry(request, 2, accept_confirm(true), first), NULL);
    assert_string_equal(first_text(response), "accept+ok");
    json_decref(response);
    response = serve(srv, modern_retry(request, 3, accept_confirm(true), second), NULL);
    const json_t *error = expect_error(response, MCP_INTERNAL_ERROR);
    assert_null(strstr(json_string_value(json_object_get(error, "message")), "altered"));
    json_decref(response);
    free(first);
    free(second);
    json_decref(request);
    mcp_server_free(srv);
}

/* A state opens only for the request it was minted for: same method, same
 * salient params, same principal. */
static void test_state_of_another_request(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", json_pack("{s:s}", "what", "x"),
                                   "{\"elicitation\":{}}");
    char *sealed = first_state(srv, request, NULL);

    /* Another tool that would accept the same answers. */
    json_t *other = call_request(2, "confirm2", json_pack("{s:s}", "what", "x"),
                                 "{\"elicitation\":{}}");
    expect_state_refused(srv, modern_retry(other, 2, accept_confirm(true), sealed), NULL);
    json_decref(other);
    /* The same tool with other arguments. */
    other = call_request(2, "confirm", json_pack("{s:s}", "what", "y"), "{\"elicitation\":{}}");
    expect_state_refused(srv, modern_retry(other, 2, accept_confirm(true), sealed), NULL);
    json_decref(other);
    other = call_request(2, "confirm", NULL, "{\"elicitation\":{}}");
    expect_state_refused(srv, modern_retry(other, 2, accept_confirm(true), sealed), NULL);
    json_decref(other);
    /* Another method that may ask, with the same name and arguments. */
    other = modern_request(2, "prompts/get",
                           json_pack("{s:s, s:{s:s}}", "name", "confirm", "arguments", "what", "x"));
    modern_set_capabilities(other, "{\"elicitation\":{}}");
    expect_state_refused(srv, modern_retry(other, 2, accept_confirm(true), sealed), NULL);
    json_decref(other);

    /* Other _meta (a new id, other capabilities, a progress token) is not
     * part of the request's identity. */
    json_t *retry = modern_retry(request, 9, accept_confirm(true), sealed);
    modern_set_capabilities(retry, "{\"elicitation\":{},\"roots\":{}}");
    json_object_set_new(modern_meta(retry), "progressToken", json_integer(3));
    json_t *response = serve(srv, retry, NULL);
    expect_complete(response);
    json_decref(response);
    free(sealed);

    /* Bound to the principal the transport authenticated. */
    modern_http_headers_t h;
    modern_http_headers_init(&h, request);
    mcp_request_context_t alice = modern_http_context(&h, "alice");
    mcp_request_context_t bob = modern_http_context(&h, "bob");
    mcp_request_context_t nobody = modern_http_context(&h, NULL);
    sealed = first_state(srv, request, &alice);
    expect_state_refused(srv, modern_retry(request, 2, accept_confirm(true), sealed), &bob);
    expect_state_refused(srv, modern_retry(request, 2, accept_confirm(true), sealed), &nobody);
    response = serve_with(srv, NULL, &alice, modern_retry(request, 2, accept_confirm(true), sealed),
                          NULL);
    expect_complete(response);
    json_decref(response);
    free(sealed);
    modern_http_headers_cleanup(&h);
    json_decref(request);
    mcp_server_free(srv);
}

/* The confirm tool's two rounds: its question's state is sealed, then
 * opened with the answer (`ok`), and the tool answers `want`. */
static void expect_confirmed(mcp_server_t *srv, bool ok, const char *want)
{
    json_t *request = call_request(1, "confirm", NULL, "{\"elicitation\":{}}");
    char *sealed = first_state(srv, request, NULL);
    json_t *response = serve(srv, modern_retry(request, 2, accept_confirm(ok), sealed), NULL);
    assert_string_equal(first_text(response), want);
    json_decref(response);
    free(sealed);
    json_decref(request);
}

/* Without a codec of its own the server seals with an ephemeral key. */
static void test_default_codec(void **state)
{
    mcp_server_t *srv =
        mcp_server_new(&(mcp_server_options_t){.name = "mrtr-test", .version = "1"}, NULL);
    add_everything(srv);
    expect_confirmed(srv, false, "accept");
    assert_int_equal(mcp_server_set_codec(srv, NULL), MCP_EINVAL);
    mcp_server_free(srv);
}

/* The codec replaced again and again while requests seal with it: each
 * request finishes with a codec that is still alive (ASan would see one
 * freed under it), and every one gets its state. */
struct sealer {
    mcp_server_t *srv;
    int sealed;
    atomic_int *done;
};

#define SEALS_PER_THREAD 150

static void *seal_many(void *arg)
{
    struct sealer *s = arg;
    for (int i = 0; i < SEALS_PER_THREAD; i++) {
        json_t *response =
            serve(s->srv, call_request(i + 1, "confirm", NULL, "{\"elicitation\":{}}"), NULL);
        const json_t *result = json_object_get(response, "result");
        if (json_is_string(json_object_get(result, "requestState")))
            s->sealed++;
        json_decref(response);
    }
    atomic_fetch_add(s->done, 1);
    return NULL;
}

static void test_codec_replaced_while_serving(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    atomic_int done;
    atomic_init(&done, 0);
    struct sealer sealers[2] = {{srv, 0, &done}, {srv, 0, &done}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, seal_many, &sealers[i]), 0);
    while (atomic_load(&done) < 2) {
        mcp_keyring_t *ring = mcp_keyring_new();
        assert_int_equal(mcp_keyring_generate(ring, "rotated"), MCP_OK);
        mcp_codec_t *codec = mcp_codec_aead_new(ring, NULL, NULL);
        assert_non_null(codec);
        assert_int_equal(mcp_server_set_codec(srv, codec), MCP_OK);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    assert_int_equal(sealers[0].sealed, SEALS_PER_THREAD);
    assert_int_equal(sealers[1].sealed, SEALS_PER_THREAD);

    /* A state sealed now opens with the codec now in place. */
    expect_confirmed(srv, true, "accept+ok");
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Round limit and inputResponses                                      */
/* ------------------------------------------------------------------ */

/* Asks one question per round until round "rounds", where it answers
 * (each round must see the answer to the previous one). */
static int patient(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&runs, 1);
    int64_t rounds = 0;
    mcp_call_arg_int(call, "rounds", &rounds);
    int round = mcp_call_round(call);
    char key[16];
    if (round > 0) {
        snprintf(key, sizeof key, "q%d", round - 1);
        HANDLER_CHECK(call, mcp_call_input(call, key) != NULL);
    }
    if (round == rounds)
        return mcp_call_add_textf(call, "answered %d", round);
    snprintf(key, sizeof key, "q%d", round);
    return asked(mcp_call_elicit(call, key, "Again?", confirm_schema(), MCP_INPUT_NEEDED));
}

/* Runs `rounds` rounds of patient: the last response (new reference). */
static json_t *run_rounds(mcp_server_t *srv, const json_t *request, int rounds)
{
    json_t *response = serve(srv, json_deep_copy(request), NULL);
    for (int round = 1; round <= rounds; round++) {
        char key[16];
        snprintf(key, sizeof key, "q%d", round - 1);
        json_t *answers = json_pack("{s:{s:s}}", key, "action", "decline");
        json_t *next = serve(srv, modern_retry(request, round + 1, answers, state_of(response)),
                             NULL);
        json_decref(response);
        response = next;
    }
    return response;
}

/* max_input_rounds N: a request may come back with input_required N times
 * and still finish; asking an N+1th time fails it. */
static void test_round_limit(void **state)
{
    const int limits[] = {1, 3, 0 /* the default, 8 */};
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        int max = limits[l] ? limits[l] : 8;
        mcp_server_t *srv = new_server(limits[l], false);
        add_everything(srv);

        json_t *request = call_request(1, "patient", json_pack("{s:i}", "rounds", max),
                                       "{\"elicitation\":{}}");
        json_t *response = run_rounds(srv, request, max);
        char want[32];
        snprintf(want, sizeof want, "answered %d", max);
        assert_string_equal(first_text(response), want);
        assert_int_equal(atomic_load(&runs), max + 1);
        json_decref(response);
        json_decref(request);

        atomic_store(&runs, 0);
        request = call_request(1, "patient", json_pack("{s:i}", "rounds", max + 1),
                               "{\"elicitation\":{}}");
        response = run_rounds(srv, request, max);
        const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
        assert_non_null(strstr(json_string_value(json_object_get(error, "message")),
                               "input rounds"));
        assert_int_equal(atomic_load(&runs), max + 1);
        json_decref(response);
        json_decref(request);
        mcp_server_free(srv);
    }
}

static void test_extra_answers_are_ignored(void **state)
{
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", NULL, "{\"elicitation\":{}}");
    char *sealed = first_state(srv, request, NULL);
    json_t *answers = accept_confirm(true);
    /* Keys the server never asked for, well-formed or not. */
    json_object_set_new(answers, "bogus", json_pack("{s:s}", "action", "accept"));
    json_object_set_new(answers, "junk", json_string("not even an object"));
    json_t *response = serve(srv, modern_retry(request, 2, answers, sealed), NULL);
    assert_string_equal(first_text(response), "accept+ok");
    json_decref(response);
    free(sealed);
    json_decref(request);
    mcp_server_free(srv);
}

static void test_malformed_answers(void **state)
{
    const char *with_state[] = {
        "[]",
        "\"yes\"",
        "{\"confirm\":\"yes\"}",
        "{\"confirm\":{}}",
        "{\"confirm\":{\"action\":\"maybe\"}}",
        "{\"confirm\":{\"action\":\"accept\",\"content\":[1]}}",
        "{\"confirm\":{\"action\":\"accept\",\"content\":{\"ok\":{\"nested\":1}}}}",
        "{\"confirm\":{\"action\":\"accept\",\"content\":{\"ok\":[1]}}}",
        /* a sampling answer under an elicitation key */
        ("{\"confirm\":{\"role\":\"assistant\",\"content\":{\"type\":\"text\",\"text\":\"x\"},"
         "\"model\":\"m\"}}"),
        "{\"confirm\":{\"roots\":[]}}",
    };
    mcp_server_t *srv = new_server(0, false);
    add_everything(srv);
    json_t *request = call_request(1, "confirm", NULL, "{\"elicitation\":{}}");
    char *sealed = first_state(srv, request, NULL);
    for (size_t i = 0; i < sizeof with_state / sizeof with_state[0]; i++) {
        json_t *answers = json_loads(with_state[i], JSON_DECODE_ANY, NULL);
        assert_non_null(answers);
        bool per_key = json_is_object(answers);
        const json_t *data = expect_refused(srv, modern_retry(request, 2, answers, sealed), NULL);
        if (per_key)
            assert_string_equal(json_string_value(json_object_get(data, "key")), "confirm");
    }
    /* An accepted form may carry string arrays (multi-select). */
    json_t *response = serve(
        srv,
        modern_retry(request, 2,
                     json_pack("{s:{s:s, s:{s:b, s:[s, s]}}}", "confirm", "action", "accept",
                               "content", "ok", 1, "tags", "a", "b"),
                     sealed),
        NULL);
    assert_string_equal(first_text(response), "accept+ok");
    json_decref(response);

    /* Without a state the server cannot know what it asked: any well-formed
     * answer is passed on, a malformed one refused. */
    expect_refused(srv, modern_retry(request, 3, json_pack("{s:{s:s}}", "confirm", "action", "x"),
                                     NULL),
                   NULL);
    expect_refused(srv, modern_retry(request, 3, json_pack("[]"), NULL), NULL);
    response = serve(srv, modern_retry(request, 3, accept_confirm(true), NULL), NULL);
    assert_string_equal(first_text(response), "accept+ok");
    json_decref(response);
    free(sealed);
    json_decref(request);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */

static void add_everything(mcp_server_t *srv)
{
    const mcp_tool_t tools[] = {
        {.name = "confirm", .handler = confirm},
        {.name = "confirm2", .handler = confirm},
        {.name = "two", .handler = two_rounds},
        {.name = "ask", .handler = ask_kind},
        {.name = "bad_asks", .handler = bad_asks},
        {.name = "nothing", .handler = asks_nothing},
        {.name = "patient", .handler = patient},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        assert_int_equal(mcp_server_add_tool(srv, &tools[i], NULL), MCP_OK);
    static const mcp_prompt_arg_t what[] = {{.name = "what"}};
    assert_int_equal(mcp_server_add_prompt(srv,
                                           &(mcp_prompt_t){.name = "confirm_prompt",
                                                           .handler = confirm_prompt},
                                           NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_prompt(srv,
                                           &(mcp_prompt_t){.name = "confirm", .args = what,
                                                           .n_args = 1, .handler = confirm_prompt},
                                           NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_resource(srv,
                                             &(mcp_resource_t){.uri = "test://secret",
                                                               .name = "secret",
                                                               .handler = confirm_resource},
                                             NULL),
                     MCP_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_round),
        cmocka_unit_test(test_two_rounds),
        cmocka_unit_test(test_missing_answer_asks_again),
        cmocka_unit_test(test_prompts_and_resources_may_ask),
        cmocka_unit_test(test_input_capabilities),
        cmocka_unit_test(test_bad_asks),
        cmocka_unit_test(test_input_required_without_asking),
        cmocka_unit_test(test_tampered_state),
        cmocka_unit_test(test_expired_state),
        cmocka_unit_test(test_replayed_state),
        cmocka_unit_test(test_refused_retry_keeps_single_use_state),
        cmocka_unit_test(test_full_replay_store_is_internal),
        cmocka_unit_test(test_state_of_another_request),
        cmocka_unit_test(test_default_codec),
        cmocka_unit_test(test_codec_replaced_while_serving),
        cmocka_unit_test(test_round_limit),
        cmocka_unit_test(test_extra_answers_are_ignored),
        cmocka_unit_test(test_malformed_answers),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    json_decref(refused_data);
    return failed;
}
