/*
 * Server core, prompts and completion: prompts/list definitions,
 * prompts/get (messages, description, argument checks) and
 * completion/complete (both reference kinds, the 100-value cap, totals,
 * context, malformed requests, the capability coming and going).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/request.h"
#include "mcp/server_core.h"

#include "capture_sink.h"
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

static mcp_server_t *new_server(void)
{
    mcp_server_t *srv =
        mcp_server_new(&(mcp_server_options_t){.name = "prompt-test", .version = "1"}, NULL);
    assert_non_null(srv);
    return srv;
}

/* ------------------------------------------------------------------ */
/* Prompts                                                             */
/* ------------------------------------------------------------------ */

static int greet(mcp_call_t *call, void *user)
{
    const char *name = mcp_call_arg_string(call, "name");
    const char *tone = mcp_call_arg_string(call, "tone");
    HANDLER_CHECK(call, strcmp(mcp_call_method(call), "prompts/get") == 0);
    HANDLER_CHECK(call, strcmp(mcp_call_target(call), "greet") == 0);
    HANDLER_CHECK(call, mcp_call_add_message(call, "system", mcp_content_text("x")) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_add_message(call, NULL, mcp_content_text("x")) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_add_message(call, "user", json_string("x")) == MCP_EINVAL);
    mcp_call_set_description(call, "A first draft");
    mcp_call_set_description(call, "A greeting");
    int rc = mcp_call_add_message(call, "user",
                                  mcp_content_textf("Greet %s in a %s tone.", name,
                                                    tone ? tone : "neutral"));
    rc |= mcp_call_add_message(call, "assistant",
                               mcp_content_embedded_text("test://style", "text/plain", "Be kind"));
    return rc;
}

static const mcp_prompt_arg_t greet_args[] = {
    {.name = "name", .title = "Name", .description = "Who to greet", .required = true},
    {.name = "tone"},
};

static void add_greet(mcp_server_t *srv)
{
    assert_int_equal(mcp_server_add_prompt(srv,
                                           &(mcp_prompt_t){.name = "greet", .title = "Greeting",
                                                           .description = "Greets someone",
                                                           .args = greet_args, .n_args = 2,
                                                           .icons = "[{\"src\":\"https://e.x/i\"}]",
                                                           .meta = "{\"com.example/p\":1}",
                                                           .handler = greet},
                                           NULL),
                     MCP_OK);
}

static json_t *get_request(const char *name, json_t *arguments_new)
{
    json_t *params = json_pack("{s:s}", "name", name);
    if (arguments_new)
        json_object_set_new(params, "arguments", arguments_new);
    return modern_request(1, "prompts/get", params);
}

static void test_prompt_definitions(void **state)
{
    mcp_server_t *srv = new_server();
    add_greet(srv);
    json_t *response = serve(srv, modern_request(1, "prompts/list", NULL), NULL);
    const json_t *prompts = json_object_get(expect_complete(response), "prompts");
    json_t *want = json_loads(
        "[{\"name\":\"greet\",\"title\":\"Greeting\",\"description\":\"Greets someone\","
        "\"icons\":[{\"src\":\"https://e.x/i\"}],\"_meta\":{\"com.example/p\":1},"
        "\"arguments\":[{\"name\":\"name\",\"title\":\"Name\",\"description\":\"Who to greet\","
        "\"required\":true},{\"name\":\"tone\"}]}]",
        0, NULL);
    if (!json_equal(prompts, want))
        fail_msg("listed %s", json_dumps(prompts, JSON_COMPACT));
    json_decref(want);
    json_decref(response);
    mcp_server_free(srv);
}

static void test_get_prompt(void **state)
{
    mcp_server_t *srv = new_server();
    add_greet(srv);
    int status = 0;
    json_t *response = serve(srv, get_request("greet", json_pack("{s:s}", "name", "Ada")), &status);
    const json_t *result = expect_complete(response);
    assert_int_equal(status, 200);
    assert_string_equal(json_string_value(json_object_get(result, "description")), "A greeting");
    const json_t *messages = json_object_get(result, "messages");
    assert_int_equal(json_array_size(messages), 2);
    const json_t *first = json_array_get(messages, 0);
    assert_string_equal(json_string_value(json_object_get(first, "role")), "user");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(first, "content"), "text")),
        "Greet Ada in a neutral tone.");
    assert_string_equal(json_string_value(json_object_get(json_array_get(messages, 1), "role")),
                        "assistant");
    /* prompts/get is not cacheable. */
    assert_null(json_object_get(result, "ttlMs"));
    json_decref(response);
    mcp_server_free(srv);
}

static void test_get_prompt_errors(void **state)
{
    struct {
        const char *params;
        const char *data_key; /* expected key in error.data, or NULL */
    } rows[] = {
        {"{\"name\":\"nope\"}", "name"},
        {"{\"name\":\"greet\"}", "argument"},
        {"{\"name\":\"greet\",\"arguments\":{}}", "argument"},
        {"{\"name\":\"greet\",\"arguments\":{\"tone\":\"warm\"}}", "argument"},
        {"{\"name\":\"greet\",\"arguments\":{\"name\":42}}", NULL},
        {"{\"name\":\"greet\",\"arguments\":{\"name\":\"Ada\",\"tone\":null}}", NULL},
        {"{\"name\":\"greet\",\"arguments\":[\"Ada\"]}", NULL},
        {"{}", NULL},
        {"{\"name\":1}", NULL},
    };
    mcp_server_t *srv = new_server();
    add_greet(srv);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *request = modern_request(1, "prompts/get", json_loads(rows[i].params, 0, NULL));
        int status = 0;
        json_t *response = serve(srv, request, &status);
        const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
        if (rows[i].data_key)
            assert_non_null(json_object_get(json_object_get(error, "data"), rows[i].data_key));
        assert_int_equal(status, 200);
        json_decref(response);
    }
    mcp_server_free(srv);
}

static void test_prompt_registration(void **state)
{
    mcp_server_t *srv = new_server();
    const mcp_prompt_arg_t unnamed[] = {{.description = "no name"}};
    const mcp_prompt_t bad[] = {
        {.handler = greet},
        {.name = "", .handler = greet},
        {.name = "p"},
        {.name = "p", .args = unnamed, .n_args = 1, .handler = greet},
        {.name = "p", .icons = "{}", .handler = greet},
        {.name = "p", .meta = "[]", .handler = greet},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_t err = {0};
        if (mcp_server_add_prompt(srv, &bad[i], &err) != MCP_EINVAL)
            fail_msg("prompt row %zu was accepted", i);
        mcp_error_clear(&err);
    }
    add_greet(srv);
    assert_int_equal(mcp_server_add_prompt(srv, &(mcp_prompt_t){.name = "greet", .handler = greet},
                                           NULL),
                     MCP_EEXIST);
    assert_int_equal(mcp_server_remove_prompt(srv, "nope"), MCP_ENOTFOUND);
    assert_int_equal(mcp_server_remove_prompt(srv, "greet"), MCP_OK);
    json_t *response = serve(srv, get_request("greet", NULL), NULL);
    expect_error(response, MCP_METHOD_NOT_FOUND);
    json_decref(response);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Completion                                                          */
/* ------------------------------------------------------------------ */

/* Suggests "<kind>:<ref>:<argument>:<value>:<context.city or ->"; for the
 * argument "many", 150 numbered values; for "none", nothing. */
static int complete(mcp_call_t *call, mcp_completion_ref_kind_t kind, const char *ref,
                    const char *argument, const char *value, const json_t *context, void *user)
{
    HANDLER_CHECK(call, strcmp(mcp_call_method(call), "completion/complete") == 0);
    /* Completion can never ask for input. */
    HANDLER_CHECK(call, mcp_call_elicit(call, "k", "m", json_pack("{s:s}", "type", "object"), 0) ==
                            MCP_EINVAL);
    if (strcmp(argument, "many") == 0) {
        for (int i = 0; i < 150; i++) {
            char v[16];
            snprintf(v, sizeof v, "v%03d", i);
            mcp_call_add_completion(call, v);
        }
        return mcp_call_set_completion_total(call, 150, false);
    }
    if (strcmp(argument, "total") == 0) {
        mcp_call_add_completion(call, "one");
        return mcp_call_set_completion_total(call, 7, true);
    }
    if (strcmp(argument, "none") == 0)
        return MCP_OK;
    HANDLER_CHECK(call, mcp_call_add_completion(call, NULL) == MCP_EINVAL);
    const char *city = json_string_value(json_object_get(context, "city"));
    char line[256];
    snprintf(line, sizeof line, "%s:%s:%s:%s:%s", kind == MCP_REF_PROMPT ? "prompt" : "resource",
             ref, argument, value, city ? city : "-");
    return mcp_call_add_completion(call, line);
}

static json_t *complete_request(const char *ref_json, const char *argument_json,
                                const char *context_json)
{
    json_t *params = json_object();
    if (ref_json)
        json_object_set_new(params, "ref", json_loads(ref_json, 0, NULL));
    if (argument_json)
        json_object_set_new(params, "argument", json_loads(argument_json, 0, NULL));
    if (context_json)
        json_object_set_new(params, "context", json_loads(context_json, 0, NULL));
    return modern_request(1, "completion/complete", params);
}

static const json_t *completion_of(const json_t *response)
{
    return json_object_get(expect_complete(response), "completion");
}

static void test_completion(void **state)
{
    mcp_server_t *srv = new_server();
    assert_int_equal(mcp_server_set_completion(srv, complete, NULL), MCP_OK);
    struct {
        const char *ref, *argument, *context;
        const char *value;
    } rows[] = {
        {"{\"type\":\"ref/prompt\",\"name\":\"greet\"}", "{\"name\":\"tone\",\"value\":\"wa\"}",
         NULL, "prompt:greet:tone:wa:-"},
        {"{\"type\":\"ref/resource\",\"uri\":\"test://t/{x}\"}", "{\"name\":\"x\",\"value\":\"\"}",
         NULL, "resource:test://t/{x}:x::-"},
        {"{\"type\":\"ref/prompt\",\"name\":\"greet\",\"title\":\"G\"}",
         "{\"name\":\"tone\",\"value\":\"w\"}", "{\"arguments\":{\"city\":\"Paris\"}}",
         "prompt:greet:tone:w:Paris"},
        /* A context without arguments, or with a non-object, is no context. */
        {"{\"type\":\"ref/prompt\",\"name\":\"greet\"}", "{\"name\":\"tone\",\"value\":\"w\"}",
         "{}", "prompt:greet:tone:w:-"},
        {"{\"type\":\"ref/prompt\",\"name\":\"greet\"}", "{\"name\":\"tone\",\"value\":\"w\"}",
         "{\"arguments\":[1]}", "prompt:greet:tone:w:-"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int status = 0;
        json_t *response =
            serve(srv, complete_request(rows[i].ref, rows[i].argument, rows[i].context), &status);
        const json_t *completion = completion_of(response);
        assert_int_equal(status, 200);
        assert_int_equal(json_array_size(json_object_get(completion, "values")), 1);
        assert_string_equal(json_string_value(json_array_get(json_object_get(completion, "values"), 0)),
                            rows[i].value);
        assert_null(json_object_get(completion, "total"));
        assert_null(json_object_get(completion, "hasMore"));
        json_decref(response);
    }
    mcp_server_free(srv);
}

static void test_completion_limits_and_totals(void **state)
{
    mcp_server_t *srv = new_server();
    mcp_server_set_completion(srv, complete, NULL);
    const char *ref = "{\"type\":\"ref/prompt\",\"name\":\"p\"}";

    /* At most 100 values; the rest shows as hasMore. */
    json_t *response = serve(srv, complete_request(ref, "{\"name\":\"many\",\"value\":\"\"}", NULL),
                             NULL);
    const json_t *completion = completion_of(response);
    const json_t *values = json_object_get(completion, "values");
    assert_int_equal(json_array_size(values), 100);
    assert_string_equal(json_string_value(json_array_get(values, 99)), "v099");
    assert_int_equal(json_integer_value(json_object_get(completion, "total")), 150);
    assert_true(json_is_true(json_object_get(completion, "hasMore")));
    json_decref(response);

    response = serve(srv, complete_request(ref, "{\"name\":\"total\",\"value\":\"\"}", NULL), NULL);
    completion = completion_of(response);
    assert_int_equal(json_integer_value(json_object_get(completion, "total")), 7);
    assert_true(json_is_true(json_object_get(completion, "hasMore")));
    json_decref(response);

    /* No suggestion at all is still a values array (it is required). */
    response = serve(srv, complete_request(ref, "{\"name\":\"none\",\"value\":\"\"}", NULL), NULL);
    values = json_object_get(completion_of(response), "values");
    assert_true(json_is_array(values));
    assert_int_equal(json_array_size(values), 0);
    json_decref(response);
    mcp_server_free(srv);
}

static void test_completion_errors(void **state)
{
    struct {
        const char *ref, *argument;
    } rows[] = {
        {NULL, "{\"name\":\"a\",\"value\":\"\"}"},
        {"{\"type\":\"ref/prompt\",\"name\":\"p\"}", NULL},
        {"{\"type\":\"ref/tool\",\"name\":\"p\"}", "{\"name\":\"a\",\"value\":\"\"}"},
        {"{\"name\":\"p\"}", "{\"name\":\"a\",\"value\":\"\"}"},
        {"{\"type\":\"ref/prompt\"}", "{\"name\":\"a\",\"value\":\"\"}"},
        {"{\"type\":\"ref/prompt\",\"uri\":\"test://x\"}", "{\"name\":\"a\",\"value\":\"\"}"},
        {"{\"type\":\"ref/resource\",\"name\":\"p\"}", "{\"name\":\"a\",\"value\":\"\"}"},
        {"{\"type\":\"ref/prompt\",\"name\":\"p\"}", "{\"value\":\"\"}"},
        {"{\"type\":\"ref/prompt\",\"name\":\"p\"}", "{\"name\":\"a\"}"},
        {"{\"type\":\"ref/prompt\",\"name\":\"p\"}", "{\"name\":\"a\",\"value\":3}"},
        {"{\"type\":\"ref/prompt\",\"name\":\"p\"}", "[\"a\"]"},
    };
    mcp_server_t *srv = new_server();
    mcp_server_set_completion(srv, complete, NULL);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *response = serve(srv, complete_request(rows[i].ref, rows[i].argument, NULL), NULL);
        expect_error(response, MCP_INVALID_PARAMS);
        json_decref(response);
    }
    mcp_server_free(srv);
}

static int complete_fails(mcp_call_t *call, mcp_completion_ref_kind_t kind, const char *ref,
                          const char *argument, const char *value, const json_t *context,
                          void *user)
{
    return mcp_call_fail(call, MCP_INVALID_PARAMS, "no such argument: %s", argument);
}

static void test_completion_capability_comes_and_goes(void **state)
{
    mcp_server_t *srv = new_server();
    const char *ref = "{\"type\":\"ref/prompt\",\"name\":\"p\"}";
    const char *arg = "{\"name\":\"a\",\"value\":\"\"}";
    int status = 0;
    json_t *response = serve(srv, complete_request(ref, arg, NULL), &status);
    expect_error(response, MCP_METHOD_NOT_FOUND);
    assert_int_equal(status, 404);
    json_decref(response);

    mcp_server_set_completion(srv, complete_fails, NULL);
    response = serve(srv, complete_request(ref, arg, NULL), NULL);
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);

    mcp_server_set_completion(srv, NULL, NULL);
    response = serve(srv, complete_request(ref, arg, NULL), NULL);
    expect_error(response, MCP_METHOD_NOT_FOUND);
    json_decref(response);
    assert_int_equal(mcp_server_set_completion(NULL, complete, NULL), MCP_EINVAL);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt_definitions),
        cmocka_unit_test(test_get_prompt),
        cmocka_unit_test(test_get_prompt_errors),
        cmocka_unit_test(test_prompt_registration),
        cmocka_unit_test(test_completion),
        cmocka_unit_test(test_completion_limits_and_totals),
        cmocka_unit_test(test_completion_errors),
        cmocka_unit_test(test_completion_capability_comes_and_goes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
