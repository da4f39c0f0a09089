/*
 * Server core, run_inline: a tool, resource, resource template or prompt
 * registered run_inline runs on the thread that submitted its request, and
 * its whole answer (notifications included) is in the sink when
 * mcp_server_submit() returns; everything else still runs on the worker
 * pool. Resolution happens on the submitting thread for every request, so
 * an unknown target is answered at once too.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/content.h"
#include "mcp/errors.h"
#include "mcp/server_core.h"

#include "capture_sink.h"
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

/* Where a handler ran. Written by the handler, read after the release. */
typedef struct where {
    pthread_t thread;
    int runs;
} where_t;

static void note_thread(void *user)
{
    where_t *w = user;
    w->thread = pthread_self();
    w->runs++;
}

static int tool_fn(mcp_call_t *call, void *user)
{
    note_thread(user);
    mcp_call_progress(call, 1, 2, "half way");
    return mcp_call_add_text(call, "inline or not");
}

static int resource_fn(mcp_call_t *call, const char *uri, void *user)
{
    note_thread(user);
    return mcp_call_add_resource_text(call, uri, "text/plain", "contents");
}

static int prompt_fn(mcp_call_t *call, void *user)
{
    note_thread(user);
    return mcp_call_add_message(call, "user", mcp_content_text("hello"));
}

static int asks_fn(mcp_call_t *call, void *user)
{
    note_thread(user);
    if (!mcp_call_input(call, "ok")) {
        int rc = mcp_call_elicit(call, "ok", "Go on?",
                                 json_pack("{s:s, s:{}}", "type", "object", "properties"),
                                 MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    return mcp_call_add_text(call, "went on");
}

typedef struct fixture {
    mcp_server_t *srv;
    where_t tool, pooled_tool, resource, tpl, prompt, asks;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->srv = mcp_server_new(&(mcp_server_options_t){.name = "inline-test", .version = "1"},
                            NULL);
    assert_non_null(f->srv);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = "fast", .handler = tool_fn,
                                                               .user = &f->tool,
                                                               .run_inline = true},
                                         NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = "pooled",
                                                               .handler = tool_fn,
                                                               .user = &f->pooled_tool},
                                         NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_tool(f->srv, &(mcp_tool_t){.name = "asks", .handler = asks_fn,
                                                               .user = &f->asks,
                                                               .run_inline = true},
                                         NULL),
                     MCP_OK);
    assert_int_equal(
        mcp_server_add_resource(f->srv, &(mcp_resource_t){.uri = "mem://fixed", .name = "fixed",
                                                          .handler = resource_fn,
                                                          .user = &f->resource,
                                                          .run_inline = true},
                                NULL),
        MCP_OK);
    assert_int_equal(mcp_server_add_resource_template(
                         f->srv,
                         &(mcp_resource_template_t){.uri_template = "mem://item/{id}",
                                                    .name = "item", .handler = resource_fn,
                                                    .user = &f->tpl, .run_inline = true},
                         NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_prompt(f->srv, &(mcp_prompt_t){.name = "greet",
                                                                   .handler = prompt_fn,
                                                                   .user = &f->prompt,
                                                                   .run_inline = true},
                                           NULL),
                     MCP_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mcp_server_free(f->srv);
    free(f);
    return 0;
}

/* Submits `request_new` and asserts the exchange was over -- released,
 * every contract kept -- by the time submit returned. Returns the response
 * (borrowed from `cap`). */
static const json_t *submit_done_at_once(fixture_t *f, json_t *request_new,
                                         capture_sink_t *cap)
{
    capture_init(cap);
    assert_int_equal(capture_submit(f->srv, NULL, request_new, NULL, cap, NULL), MCP_OK);
    json_decref(request_new);
    assert_true(capture_released(cap));
    capture_assert_done(cap);
    return capture_response(cap, NULL);
}

static void test_inline_tool_runs_on_the_submitting_thread(void **state)
{
    fixture_t *f = *state;
    json_t *request = modern_request(1, "tools/call", json_pack("{s:s}", "name", "fast"));
    json_object_set_new(modern_meta(request), "progressToken", json_integer(7));
    capture_sink_t cap;
    const json_t *response = submit_done_at_once(f, request, &cap);
    expect_complete(response);
    expect_all_schema_valid(&cap, "tools/call");
    assert_int_equal(f->tool.runs, 1);
    assert_true(pthread_equal(f->tool.thread, pthread_self()));
    /* The progress notification came first, in the same call. */
    assert_int_equal(capture_notification_count(&cap), 1);
    capture_item_t first = capture_item(&cap, 0);
    assert_int_equal(first.kind, MCP_OUT_NOTIFICATION);
    assert_string_equal(json_string_value(json_object_get(first.msg, "method")),
                        "notifications/progress");
    capture_cleanup(&cap);
}

static void test_other_tools_still_use_the_pool(void **state)
{
    fixture_t *f = *state;
    capture_sink_t cap;
    capture_init(&cap);
    json_t *request = modern_request(2, "tools/call", json_pack("{s:s}", "name", "pooled"));
    expect_complete(capture_roundtrip(f->srv, NULL, request, NULL, &cap));
    json_decref(request);
    assert_int_equal(f->pooled_tool.runs, 1);
    assert_false(pthread_equal(f->pooled_tool.thread, pthread_self()));
    capture_cleanup(&cap);
}

static void test_inline_resources_templates_and_prompts(void **state)
{
    fixture_t *f = *state;
    capture_sink_t cap;

    expect_complete(submit_done_at_once(
        f, modern_request(3, "resources/read", json_pack("{s:s}", "uri", "mem://fixed")), &cap));
    expect_all_schema_valid(&cap, "resources/read");
    capture_cleanup(&cap);
    assert_int_equal(f->resource.runs, 1);
    assert_true(pthread_equal(f->resource.thread, pthread_self()));

    expect_complete(submit_done_at_once(
        f, modern_request(4, "resources/read", json_pack("{s:s}", "uri", "mem://item/42")),
        &cap));
    capture_cleanup(&cap);
    assert_int_equal(f->tpl.runs, 1);
    assert_true(pthread_equal(f->tpl.thread, pthread_self()));

    expect_complete(submit_done_at_once(
        f, modern_request(5, "prompts/get", json_pack("{s:s}", "name", "greet")), &cap));
    expect_all_schema_valid(&cap, "prompts/get");
    capture_cleanup(&cap);
    assert_int_equal(f->prompt.runs, 1);
    assert_true(pthread_equal(f->prompt.thread, pthread_self()));
}

static void test_inline_tool_asks_for_input_without_waiting(void **state)
{
    fixture_t *f = *state;
    capture_sink_t cap;
    json_t *request = modern_request(6, "tools/call", json_pack("{s:s}", "name", "asks"));
    modern_set_capabilities(request, "{\"elicitation\":{}}");
    const json_t *response = submit_done_at_once(f, json_incref(request), &cap);
    const json_t *result = expect_input_required(response);
    const json_t *state_value = json_object_get(result, "requestState");
    assert_non_null(state_value);

    json_t *answers = json_pack("{s:{s:s, s:{}}}", "ok", "action", "accept", "content");
    json_t *retry = modern_retry(request, 7, answers, json_string_value(state_value));
    capture_sink_t second;
    expect_complete(submit_done_at_once(f, retry, &second));
    assert_int_equal(f->asks.runs, 2);
    assert_true(pthread_equal(f->asks.thread, pthread_self()));
    capture_cleanup(&second);
    capture_cleanup(&cap);
    json_decref(request);
}

static void test_unknown_targets_are_answered_at_once(void **state)
{
    fixture_t *f = *state;
    capture_sink_t cap;
    expect_error(submit_done_at_once(
                     f, modern_request(8, "tools/call", json_pack("{s:s}", "name", "nope")), &cap),
                 MCP_INVALID_PARAMS);
    capture_cleanup(&cap);
    expect_error(submit_done_at_once(
                     f,
                     modern_request(9, "resources/read", json_pack("{s:s}", "uri", "mem://none")),
                     &cap),
                 MCP_INVALID_PARAMS);
    capture_cleanup(&cap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_inline_tool_runs_on_the_submitting_thread, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_other_tools_still_use_the_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inline_resources_templates_and_prompts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_inline_tool_asks_for_input_without_waiting, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unknown_targets_are_answered_at_once, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
