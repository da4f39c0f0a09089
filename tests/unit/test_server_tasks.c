/*
 * Server core, the Tasks extension (io.modelcontextprotocol/tasks): a
 * tools/call handler turns its call into a task with
 * mcp_call_start_task(); the client polls tasks/get, answers input with
 * tasks/update and stops work with tasks/cancel. Covered: advertisement
 * and gating (-32021 for clients that did not declare the extension,
 * -32601 on servers without task tools), the CreateTaskResult and the
 * DetailedTask of every status (validated against the extension's
 * schema), durable creation, tool errors versus JSON-RPC failures, input
 * inside a task (partial answers, invalid answers, unknown keys, a reused
 * key), cancellation while running and while waiting for input, the
 * principal a task is bound to, its time to live, the bounds of the store
 * (max_tasks, overall and per principal), what an ended task lets go of,
 * registration rules, and freeing a server with tasks in every state.
 */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/request.h"
#include "mcp/server_core.h"
#include "server/task_internal.h"

#include "capture_sink.h"
#include "legacy_request.h"
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

static atomic_bool gate_open;  /* "job" tasks wait for it */
static atomic_int start_rc;    /* what the last mcp_call_start_task returned */
static atomic_int runs;        /* handler runs */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts a task, waits for the gate (or a cancellation), then ends as
 * arguments.mode says. */
static int job(mcp_call_t *call, void *user)
{
    (void)user;
    atomic_fetch_add(&runs, 1);
    int rc = mcp_call_start_task(call);
    atomic_store(&start_rc, rc);
    if (rc != MCP_OK && rc != MCP_EUNSUPPORTED)
        return rc;
    /* Sent nowhere for a task (the sink contract would catch a send). */
    mcp_call_progress(call, 1, 2, "half way");
    mcp_call_logf(call, "info", "working");
    while (!atomic_load(&gate_open))
        if (mcp_call_sleep(call, 2) != MCP_OK)
            return MCP_ECANCELED;
    const char *mode = mcp_call_arg_string(call, "mode");
    if (mode && strcmp(mode, "tool_error") == 0)
        return mcp_call_tool_error(call, "the input was rejected");
    if (mode && strcmp(mode, "fail") == 0)
        return mcp_call_fail_data(call, -31999, json_pack("{s:i}", "why", 7), "job broke");
    return mcp_call_add_textf(call, "done%s", rc == MCP_OK ? " as a task" : "");
}

static json_t *text_schema(const char *field)
{
    return json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", field, "type",
                     "string", "required", field);
}

static const char *answer_text(const json_t *answer, const char *field)
{
    return json_string_value(json_object_get(json_object_get(answer, "content"), field));
}

/* Asks "a" and "b" at once inside the task, then reports both. */
static int ask(mcp_call_t *call, void *user)
{
    (void)user;
    atomic_fetch_add(&runs, 1);
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK)
        return rc;
    const json_t *a = mcp_call_input(call, "a");
    const json_t *b = mcp_call_input(call, "b");
    if (a && b)
        return mcp_call_add_textf(call, "a=%s b=%s round=%d", answer_text(a, "v"),
                                  answer_text(b, "v"), mcp_call_round(call));
    if (!a && (rc = mcp_call_elicit(call, "a", "First?", text_schema("v"), 0)) < 0)
        return rc;
    if (!b && (rc = mcp_call_elicit(call, "b", "Second?", text_schema("v"), 0)) < 0)
        return rc;
    return MCP_INPUT_REQUIRED;
}

/* Asks under "k", then asks under "k" again: keys are once per task. */
static int reuse(mcp_call_t *call, void *user)
{
    (void)user;
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK)
        return rc;
    rc = mcp_call_elicit(call, "k", "Again?", text_schema("v"), 0);
    return rc < 0 ? rc : MCP_INPUT_REQUIRED;
}

/* Asks under a new key every round, for ever. */
static int endless(mcp_call_t *call, void *user)
{
    (void)user;
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK)
        return rc;
    char key[32];
    snprintf(key, sizeof key, "k%d", mcp_call_round(call));
    rc = mcp_call_elicit(call, key, "Once more?", text_schema("v"), 0);
    return rc < 0 ? rc : MCP_INPUT_REQUIRED;
}

/* Says it needs input, and asks for none. */
static int mute(mcp_call_t *call, void *user)
{
    (void)user;
    int rc = mcp_call_start_task(call);
    return rc != MCP_OK ? rc : MCP_INPUT_REQUIRED;
}

/* Not a task tool: mcp_call_start_task refuses. */
static int plain(mcp_call_t *call, void *user)
{
    (void)user;
    return mcp_call_add_textf(call, "start=%d id=%s", mcp_call_start_task(call),
                              mcp_call_task_id(call) ? "set" : "none");
}

/* Sleeps as a task until cancelled, reporting its progress in the
 * statusMessage. */
static int sleeper(mcp_call_t *call, void *user)
{
    (void)user;
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK)
        return rc;
    mcp_call_set_task_message(call, "sleeping");
    if (mcp_call_sleep(call, 60000) != MCP_OK)
        return MCP_ECANCELED;
    return mcp_call_add_text(call, "woke up");
}

/* A server of the tools above, whose task store holds at most max_tasks
 * tasks, per_principal of one principal (0: the defaults). */
static mcp_server_t *new_bounded_server(int64_t task_ttl_ms, size_t max_tasks,
                                        size_t per_principal)
{
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "tasks-test", .version = "1",
                                .task_ttl_ms = task_ttl_ms, .task_poll_interval_ms = 250,
                                .max_tasks = max_tasks,
                                .max_tasks_per_principal = per_principal},
        NULL);
    assert_non_null(srv);
    static const mcp_tool_t tools[] = {
        {.name = "job", .tasks = MCP_TASKS_OPTIONAL, .handler = job},
        {.name = "ask", .tasks = MCP_TASKS_OPTIONAL, .handler = ask},
        {.name = "reuse", .tasks = MCP_TASKS_OPTIONAL, .handler = reuse},
        {.name = "endless", .tasks = MCP_TASKS_OPTIONAL, .handler = endless},
        {.name = "mute", .tasks = MCP_TASKS_OPTIONAL, .handler = mute},
        {.name = "sleeper", .tasks = MCP_TASKS_REQUIRED, .handler = sleeper},
        {.name = "plain", .handler = plain},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        assert_int_equal(mcp_server_add_tool(srv, &tools[i], NULL), MCP_OK);
    atomic_store(&gate_open, false);
    atomic_store(&start_rc, 1);
    atomic_store(&runs, 0);
    return srv;
}

static mcp_server_t *new_server(int64_t task_ttl_ms)
{
    return new_bounded_server(task_ttl_ms, 0, 0);
}

/* ------------------------------------------------------------------ */
/* Requests and responses                                              */
/* ------------------------------------------------------------------ */

static json_int_t next_id = 1;

/* A request of a client that declared the extension (and form
 * elicitation) when `declare`. */
static json_t *request(const char *method, json_t *params_new, bool declare)
{
    json_t *req = modern_request(next_id++, method, params_new);
    if (declare)
        modern_set_capabilities(req, "{\"elicitation\":{},\"extensions\":"
                                     "{\"" MCP_EXTENSION_TASKS "\":{}}}");
    return req;
}

/* Submits `req_new` as `principal` over stdio and returns the response
 * (new); the sink contract is asserted. */
static json_t *submit(mcp_server_t *srv, json_t *req_new, const char *principal)
{
    mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO, .principal = principal};
    capture_sink_t cap;
    capture_init(&cap);
    capture_roundtrip(srv, NULL, req_new, &ctx, &cap);
    json_decref(req_new);
    json_t *response = json_incref((json_t *)capture_response(&cap, NULL));
    /* A task sends its CreateTaskResult and nothing else, progress and
     * logs included. */
    assert_int_equal(capture_count(&cap), 1);
    capture_cleanup(&cap);
    assert_non_null(response);
    return response;
}

static const json_t *result_of(const json_t *response)
{
    const json_t *result = json_object_get(response, "result");
    if (!result)
        fail_msg("expected a result, got %s", json_dumps(response, JSON_COMPACT));
    return result;
}

/* tools/call `name` with `args_new` (NULL: {}); returns the response. */
static json_t *call_tool(mcp_server_t *srv, const char *name, json_t *args_new, bool declare,
                         const char *principal)
{
    return submit(srv,
                  request("tools/call",
                          json_pack("{s:s, s:o}", "name", name, "arguments",
                                    args_new ? args_new : json_object()),
                          declare),
                  principal);
}

/* Starts a task of `name`; returns its id (malloc'd). */
static char *start_task(mcp_server_t *srv, const char *name, json_t *args_new,
                        const char *principal)
{
    json_t *response = call_tool(srv, name, args_new, true, principal);
    const json_t *result = result_of(response);
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "task");
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(result, "CreateTaskResult", SCHEMA_EXT_TASKS);
    char *id = strdup(json_string_value(json_object_get(result, "taskId")));
    json_decref(response);
    return id;
}

static json_t *task_request(mcp_server_t *srv, const char *method, const char *id,
                            json_t *extra_new, bool declare, const char *principal)
{
    json_t *params = json_pack("{s:s}", "taskId", id);
    if (extra_new) {
        json_object_update(params, extra_new);
        json_decref(extra_new);
    }
    return submit(srv, request(method, params, declare), principal);
}

/* tasks/get; returns the GetTaskResult (new), schema-checked. */
static json_t *get_task(mcp_server_t *srv, const char *id, const char *principal)
{
    json_t *response = task_request(srv, "tasks/get", id, NULL, true, principal);
    json_t *result = json_incref((json_t *)result_of(response));
    json_decref(response);
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(result, "GetTaskResult", SCHEMA_EXT_TASKS);
    assert_string_equal(json_string_value(json_object_get(result, "taskId")), id);
    assert_null(json_object_get(result, "requestState"));
    return result;
}

static const char *status_of(const json_t *task)
{
    return json_string_value(json_object_get(task, "status"));
}

/* Polls tasks/get (as `principal`) until the task has `status`; returns
 * the task (new). */
static json_t *await_status_as(mcp_server_t *srv, const char *id, const char *status,
                               const char *principal)
{
    for (int waited = 0; waited < CAPTURE_PATIENCE_MS; waited += 5) {
        json_t *task = get_task(srv, id, principal);
        if (strcmp(status_of(task), status) == 0)
            return task;
        json_decref(task);
        sleep_ms(5);
    }
    fail_msg("task %s never reached %s", id, status);
    return NULL;
}

static json_t *await_status(mcp_server_t *srv, const char *id, const char *status)
{
    return await_status_as(srv, id, status, NULL);
}

/* An empty acknowledgement: {resultType: complete} and nothing of a task. */
static void assert_ack(const json_t *response, const char *definition)
{
    const json_t *result = result_of(response);
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
    assert_null(json_object_get(result, "taskId"));
    assert_null(json_object_get(result, "status"));
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(result, definition, SCHEMA_EXT_TASKS);
}

static const char *first_text(const json_t *tool_result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(tool_result, "content"), 0), "text"));
}

/* ------------------------------------------------------------------ */
/* Advertisement and gating                                            */
/* ------------------------------------------------------------------ */

static void test_discover_advertises_only_with_task_tools(void **state)
{
    (void)state;
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "plain", .version = "1"}, NULL);
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "plain", .handler = plain},
                                         NULL),
                     MCP_OK);
    json_t *response = serve(srv, modern_request(1, "server/discover", NULL), NULL);
    assert_null(json_object_get(json_object_get(result_of(response), "capabilities"),
                                "extensions"));
    json_decref(response);
    /* Without task tools the methods do not exist. */
    response = task_request(srv, "tasks/get", "x", NULL, true, NULL);
    expect_error(response, MCP_METHOD_NOT_FOUND);
    json_decref(response);
    mcp_server_free(srv);

    srv = new_server(0);
    response = serve(srv, modern_request(1, "server/discover", NULL), NULL);
    const json_t *caps = json_object_get(result_of(response), "capabilities");
    assert_true(json_is_object(json_object_get(json_object_get(caps, "extensions"),
                                               MCP_EXTENSION_TASKS)));
    assert_null(json_object_get(caps, "tasks")); /* not the 2025-11-25 slot */
    json_decref(response);
    mcp_server_free(srv);
}

static void assert_needs_extension(const json_t *response)
{
    const json_t *error = expect_error(response, MCP_MISSING_CLIENT_CAPABILITY);
    const json_t *need = json_object_get(
        json_object_get(json_object_get(json_object_get(error, "data"), "requiredCapabilities"),
                        "extensions"),
        MCP_EXTENSION_TASKS);
    assert_true(json_is_object(need));
}

static void test_undeclared_client_gets_no_task(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    atomic_store(&gate_open, true);
    /* An optional task tool runs as usual: the handler hears why. */
    json_t *response = call_tool(srv, "job", NULL, false, NULL);
    const json_t *result = expect_complete(response);
    assert_string_equal(first_text(result), "done");
    assert_int_equal(atomic_load(&start_rc), MCP_EUNSUPPORTED);
    json_decref(response);
    /* A required one is refused before it runs. */
    atomic_store(&runs, 0);
    response = call_tool(srv, "sleeper", NULL, false, NULL);
    assert_needs_extension(response);
    json_decref(response);
    /* So are the tasks methods, whatever the id. */
    static const char *const methods[] = {"tasks/get", "tasks/update", "tasks/cancel"};
    for (size_t i = 0; i < 3; i++) {
        response = task_request(srv, methods[i], "any",
                                i == 1 ? json_pack("{s:{}}", "inputResponses") : NULL, false,
                                NULL);
        assert_needs_extension(response);
        json_decref(response);
    }
    /* tasks/result and tasks/list are gone from the protocol. */
    response = task_request(srv, "tasks/result", "any", NULL, true, NULL);
    expect_error(response, MCP_METHOD_NOT_FOUND);
    json_decref(response);
    mcp_server_free(srv);
}

/* A legacy client cannot declare the extension. Before 2025-11-25 it has
 * no tasks at all: a task-only tool refuses it as it refuses modern
 * clients that did not declare the extension. A 2025-11-25 client that
 * does not ask for a task gets -32601 for it, as that version's tasks
 * say (test_legacy_tasks covers the tasks it asks for). An optional one
 * runs as usual for both. */
static void test_legacy_clients_get_no_task(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    json_decref(legacy_serve(srv, conn, NULL, legacy_initialize(1, "2025-06-18", NULL), NULL));
    json_t *response = legacy_serve(
        srv, conn, NULL,
        legacy_request(2, "tools/call", json_pack("{s:s, s:{}}", "name", "sleeper", "arguments")),
        NULL);
    /* -32602 rather than -32021, a 2026-07-28 code legacy clients do not
     * know; the capability is still named. */
    const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
    assert_non_null(json_object_get(
        json_object_get(json_object_get(json_object_get(error, "data"), "requiredCapabilities"),
                        "extensions"),
        MCP_EXTENSION_TASKS));
    json_decref(response);
    mcp_conn_free(conn);
    conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    json_decref(legacy_serve(srv, conn, NULL, legacy_initialize(1, "2025-11-25", NULL), NULL));
    response = legacy_serve(
        srv, conn, NULL,
        legacy_request(2, "tools/call", json_pack("{s:s, s:{}}", "name", "sleeper", "arguments")),
        NULL);
    expect_error(response, MCP_METHOD_NOT_FOUND);
    json_decref(response);
    atomic_store(&gate_open, true);
    response = legacy_serve(
        srv, conn, NULL,
        legacy_request(3, "tools/call", json_pack("{s:s, s:{}}", "name", "job", "arguments")),
        NULL);
    assert_string_equal(first_text(expect_legacy_result(response)), "done");
    assert_int_equal(atomic_load(&start_rc), MCP_EUNSUPPORTED);
    json_decref(response);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

static void test_start_task_refused_outside_task_tools(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    json_t *response = call_tool(srv, "plain", NULL, true, NULL);
    char expected[64];
    snprintf(expected, sizeof expected, "start=%d id=none", MCP_EINVAL);
    assert_string_equal(first_text(expect_complete(response)), expected);
    json_decref(response);

    mcp_error_t err = {0};
    assert_int_equal(mcp_server_add_tool(srv,
                                         &(mcp_tool_t){.name = "fast", .run_inline = true,
                                                       .tasks = MCP_TASKS_OPTIONAL,
                                                       .handler = plain},
                                         &err),
                     MCP_EINVAL);
    assert_non_null(strstr(err.message, "inline"));
    mcp_error_clear(&err);
    assert_int_equal(mcp_server_add_tool(srv,
                                         &(mcp_tool_t){.name = "odd",
                                                       .tasks = (mcp_task_support_t)7,
                                                       .handler = plain},
                                         NULL),
                     MCP_EINVAL);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                           */
/* ------------------------------------------------------------------ */

static void test_task_runs_to_completion(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    json_t *response = call_tool(srv, "job", NULL, true, NULL);
    const json_t *created = result_of(response);
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(created, "CreateTaskResult", SCHEMA_EXT_TASKS);
    assert_string_equal(json_string_value(json_object_get(created, "resultType")), "task");
    assert_string_equal(status_of(created), "working");
    const char *id = json_string_value(json_object_get(created, "taskId"));
    assert_int_equal(strlen(id), 32); /* 128 random bits */
    assert_int_equal(json_integer_value(json_object_get(created, "ttlMs")), 3600000);
    assert_int_equal(json_integer_value(json_object_get(created, "pollIntervalMs")), 250);
    assert_null(json_object_get(created, "task")); /* flat, no wrapper */
    assert_null(json_object_get(created, "cacheScope"));
    assert_null(json_object_get(created, "requestState"));
    /* The answer left from inside mcp_call_start_task(): the handler may
     * not have stored what the call returned yet. */
    for (int i = 0; i < 2000 && atomic_load(&start_rc) == 1; i++)
        sleep_ms(1);
    assert_int_equal(atomic_load(&start_rc), MCP_OK);

    /* Durable before the answer: tasks/get finds it at once. */
    json_t *task = get_task(srv, id, NULL);
    assert_string_equal(status_of(task), "working");
    assert_null(json_object_get(task, "result"));
    assert_string_equal(json_string_value(json_object_get(task, "createdAt")),
                        json_string_value(json_object_get(created, "createdAt")));
    json_decref(task);

    atomic_store(&gate_open, true);
    task = await_status(srv, id, "completed");
    const json_t *result = json_object_get(task, "result");
    assert_string_equal(first_text(result), "done as a task");
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
    assert_null(json_object_get(result, "isError"));
    assert_null(json_object_get(task, "error"));
    json_decref(task);
    assert_int_equal(atomic_load(&runs), 1);

    /* Cancelling a finished task is acknowledged and changes nothing. */
    json_t *ack = task_request(srv, "tasks/cancel", id, NULL, true, NULL);
    assert_ack(ack, "CancelTaskResult");
    json_decref(ack);
    task = get_task(srv, id, NULL);
    assert_string_equal(status_of(task), "completed");
    json_decref(task);
    json_decref(response);
    mcp_server_free(srv);
}

static void test_tool_error_completes_and_rpc_failure_fails(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    atomic_store(&gate_open, true);
    char *id = start_task(srv, "job", json_pack("{s:s}", "mode", "tool_error"), NULL);
    json_t *task = await_status(srv, id, "completed");
    assert_true(json_is_true(json_object_get(json_object_get(task, "result"), "isError")));
    json_decref(task);
    free(id);

    id = start_task(srv, "job", json_pack("{s:s}", "mode", "fail"), NULL);
    task = await_status(srv, id, "failed");
    const json_t *error = json_object_get(task, "error");
    assert_int_equal(json_integer_value(json_object_get(error, "code")), -31999);
    assert_string_equal(json_string_value(json_object_get(error, "message")), "job broke");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(error, "data"), "why")),
                     7);
    assert_null(json_object_get(task, "result"));
    json_decref(task);
    free(id);
    mcp_server_free(srv);
}

static void test_unknown_and_malformed_task_ids(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    static const char *const methods[] = {"tasks/get", "tasks/cancel", "tasks/update"};
    for (size_t i = 0; i < 3; i++) {
        json_t *response = task_request(srv, methods[i], "no-such-task",
                                        i == 2 ? json_pack("{s:{}}", "inputResponses") : NULL,
                                        true, NULL);
        const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(error, "data"), "taskId")),
            "no-such-task");
        json_decref(response);
    }
    json_t *response = submit(srv, request("tasks/get", json_pack("{s:i}", "taskId", 5), true),
                              NULL);
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);
    char *id = start_task(srv, "ask", NULL, NULL);
    response = task_request(srv, "tasks/update", id, NULL, true, NULL); /* no inputResponses */
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);
    free(id);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Input inside a task                                                 */
/* ------------------------------------------------------------------ */

static json_t *accept_answer(const char *value)
{
    return json_pack("{s:s, s:{s:s}}", "action", "accept", "content", "v", value);
}

static void test_input_inside_a_task(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    char *id = start_task(srv, "ask", NULL, NULL);
    json_t *task = await_status(srv, id, "input_required");
    const json_t *requests = json_object_get(task, "inputRequests");
    assert_int_equal(json_object_size(requests), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(requests, "a"), "method")),
        "elicitation/create");
    json_decref(task);

    /* An invalid answer to an outstanding key is refused; nothing moves. */
    json_t *ack = task_request(srv, "tasks/update", id,
                               json_pack("{s:{s:{s:s}}}", "inputResponses", "a", "action",
                                         "maybe"),
                               true, NULL);
    expect_error(ack, MCP_INVALID_PARAMS);
    json_decref(ack);

    /* One of two, plus a key nobody asked for (ignored). */
    ack = task_request(srv, "tasks/update", id,
                       json_pack("{s:{s:o, s:{s:b}}}", "inputResponses", "a",
                                 accept_answer("one"), "unknown", "ignored", 1),
                       true, NULL);
    assert_ack(ack, "UpdateTaskResult");
    json_decref(ack);
    task = get_task(srv, id, NULL);
    assert_string_equal(status_of(task), "input_required");
    requests = json_object_get(task, "inputRequests");
    assert_int_equal(json_object_size(requests), 1);
    assert_non_null(json_object_get(requests, "b"));
    json_decref(task);
    assert_int_equal(atomic_load(&runs), 1); /* nothing runs until all are in */

    /* An answer to an answered key is ignored. */
    ack = task_request(srv, "tasks/update", id,
                       json_pack("{s:{s:o, s:o}}", "inputResponses", "a", accept_answer("late"),
                                 "b", accept_answer("two")),
                       true, NULL);
    assert_ack(ack, "UpdateTaskResult");
    json_decref(ack);
    task = await_status(srv, id, "completed");
    assert_string_equal(first_text(json_object_get(task, "result")), "a=one b=two round=1");
    json_decref(task);
    assert_int_equal(atomic_load(&runs), 2);

    /* Once done, answers are acknowledged and ignored. */
    ack = task_request(srv, "tasks/update", id,
                       json_pack("{s:{s:o}}", "inputResponses", "b", accept_answer("x")), true,
                       NULL);
    assert_ack(ack, "UpdateTaskResult");
    json_decref(ack);
    free(id);
    mcp_server_free(srv);
}

static void test_reused_input_key_fails_the_task(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    char *id = start_task(srv, "reuse", NULL, NULL);
    json_decref(await_status(srv, id, "input_required"));
    json_t *ack = task_request(srv, "tasks/update", id,
                               json_pack("{s:{s:o}}", "inputResponses", "k", accept_answer("1")),
                               true, NULL);
    json_decref(ack);
    json_t *task = await_status(srv, id, "failed");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(task, "error"), "code")),
                     MCP_INTERNAL_ERROR);
    json_decref(task);
    free(id);
    mcp_server_free(srv);
}

/* Waits for task `id` to fail, with the error `code` and a message
 * that says `why`. */
static void expect_failed(mcp_server_t *srv, const char *id, int code, const char *why)
{
    json_t *task = await_status(srv, id, "failed");
    const json_t *error = json_object_get(task, "error");
    assert_int_equal(json_integer_value(json_object_get(error, "code")), code);
    assert_non_null(strstr(json_string_value(json_object_get(error, "message")), why));
    json_decref(task);
}

/* A task gets at most max_input_rounds rounds of questions (8 by
 * default): the one that asks once more fails with -32602; and a run that
 * says it needs input without asking for any fails with -32603. */
static void test_input_rounds_are_bounded(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    char *id = start_task(srv, "endless", NULL, NULL);
    int answered = 0;
    for (;;) {
        json_t *task = await_status(srv, id, "input_required");
        const json_t *requests = json_object_get(task, "inputRequests");
        char key[32];
        snprintf(key, sizeof key, "k%d", answered);
        assert_non_null(json_object_get(requests, key));
        json_t *ack = task_request(srv, "tasks/update", id,
                                   json_pack("{s:{s:o}}", "inputResponses", key,
                                             accept_answer("again")),
                                   true, NULL);
        assert_ack(ack, "UpdateTaskResult");
        json_decref(ack);
        json_decref(task);
        answered++;
        if (answered == 8)
            break;
    }
    expect_failed(srv, id, MCP_INVALID_PARAMS, "Too many input rounds");
    free(id);

    id = start_task(srv, "mute", NULL, NULL);
    expect_failed(srv, id, MCP_INTERNAL_ERROR, "made no input request");
    free(id);
    mcp_server_free(srv);
}

/* Hundreds of tasks at once: each stays findable by its id. */
static void test_many_tasks(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    atomic_store(&gate_open, true);
    enum { N = 300 };
    char *ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = start_task(srv, "job", NULL, NULL);
    for (int i = 0; i < N; i++) {
        json_t *task = await_status(srv, ids[i], "completed");
        assert_string_equal(first_text(json_object_get(task, "result")), "done as a task");
        json_decref(task);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(ids[i], ids[j]);
    }
    for (int i = 0; i < N; i++)
        free(ids[i]);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Cancellation                                                        */
/* ------------------------------------------------------------------ */

static void test_cancel_running_and_waiting_tasks(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    char *running = start_task(srv, "sleeper", NULL, NULL);
    json_t *task = await_status(srv, running, "working");
    json_decref(task);
    for (int i = 0; i < 1000; i++) { /* the statusMessage appears */
        task = get_task(srv, running, NULL);
        bool set = json_object_get(task, "statusMessage") != NULL;
        if (set)
            assert_string_equal(json_string_value(json_object_get(task, "statusMessage")),
                                "sleeping");
        json_decref(task);
        if (set)
            break;
        sleep_ms(2);
    }
    json_t *ack = task_request(srv, "tasks/cancel", running, NULL, true, NULL);
    assert_ack(ack, "CancelTaskResult");
    json_decref(ack);
    json_decref(await_status(srv, running, "cancelled"));

    char *waiting = start_task(srv, "ask", NULL, NULL);
    json_decref(await_status(srv, waiting, "input_required"));
    ack = task_request(srv, "tasks/cancel", waiting, NULL, true, NULL);
    assert_ack(ack, "CancelTaskResult");
    json_decref(ack);
    task = get_task(srv, waiting, NULL); /* at once: nothing was running */
    assert_string_equal(status_of(task), "cancelled");
    assert_null(json_object_get(task, "inputRequests"));
    json_decref(task);
    /* Late answers do not revive it. */
    ack = task_request(srv, "tasks/update", waiting,
                       json_pack("{s:{s:o, s:o}}", "inputResponses", "a", accept_answer("1"),
                                 "b", accept_answer("2")),
                       true, NULL);
    json_decref(ack);
    task = get_task(srv, waiting, NULL);
    assert_string_equal(status_of(task), "cancelled");
    json_decref(task);
    free(running);
    free(waiting);
    mcp_server_free(srv);
}

/* A transport cancels a request whose client went away; once the
 * tools/call was answered with its task, that must not stop the task (the
 * HTTP layer cancels a request that ended while it was being submitted). */
static void test_transport_cancel_after_answer_spares_the_task(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    capture_sink_t cap;
    capture_init(&cap);
    json_t *req = request("tools/call", json_pack("{s:s, s:{}}", "name", "job", "arguments"),
                          true);
    mcp_exchange_t *handle = NULL;
    assert_int_equal(capture_submit(srv, NULL, req, NULL, &cap, &handle), MCP_OK);
    json_decref(req);
    assert_non_null(handle);
    assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
    const json_t *created = result_of(capture_response(&cap, NULL));
    char *id = strdup(json_string_value(json_object_get(created, "taskId")));
    capture_assert_done(&cap);
    capture_cleanup(&cap);
    mcp_exchange_cancel(handle);
    mcp_exchange_release(handle);

    atomic_store(&gate_open, true);
    json_t *task = await_status(srv, id, "completed");
    assert_string_equal(first_text(json_object_get(task, "result")), "done as a task");
    json_decref(task);
    free(id);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* notifications/tasks on subscriptions/listen                         */
/* ------------------------------------------------------------------ */

/* Opens a listen stream for `ids_json` (a JSON array) as `principal`;
 * the acknowledgement is the stream's first message. */
static void open_task_stream(mcp_server_t *srv, capture_sink_t *cap, const char *ids_json,
                             const char *principal, mcp_exchange_t **handle)
{
    json_t *req = request("subscriptions/listen",
                          json_pack("{s:{s:o}}", "notifications", "taskIds",
                                    json_loads(ids_json, 0, NULL)),
                          true);
    mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO, .principal = principal};
    capture_init(cap);
    assert_int_equal(capture_submit(srv, NULL, req, &ctx, cap, handle), MCP_OK);
    json_decref(req);
    assert_true(capture_wait_count(cap, 1, CAPTURE_PATIENCE_MS));
}

static const json_t *ack_task_ids(capture_sink_t *cap)
{
    const json_t *ack = capture_item(cap, 0).msg;
    assert_string_equal(json_string_value(json_object_get(ack, "method")),
                        "notifications/subscriptions/acknowledged");
    return json_object_get(json_object_get(json_object_get(ack, "params"), "notifications"),
                           "taskIds");
}

static void test_task_notifications_on_listen(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    char *id = start_task(srv, "ask", NULL, "alice");
    json_decref(await_status_as(srv, id, "input_required", "alice"));

    /* alice hears of her task; an id that is nobody's is not echoed. */
    char ids[128];
    snprintf(ids, sizeof ids, "[\"%s\", \"no-such-task\"]", id);
    capture_sink_t mine, theirs;
    mcp_exchange_t *mine_handle = NULL, *theirs_handle = NULL;
    open_task_stream(srv, &mine, ids, "alice", &mine_handle);
    const json_t *echoed = ack_task_ids(&mine);
    assert_int_equal(json_array_size(echoed), 1);
    assert_string_equal(json_string_value(json_array_get(echoed, 0)), id);
    /* bob asked for it too: he is told nothing, and hears nothing. */
    open_task_stream(srv, &theirs, ids, "bob", &theirs_handle);
    assert_null(ack_task_ids(&theirs));

    json_t *ack = task_request(srv, "tasks/update", id,
                               json_pack("{s:{s:o, s:o}}", "inputResponses", "a",
                                         accept_answer("x"), "b", accept_answer("y")),
                               true, "alice");
    json_decref(ack);
    json_decref(await_status_as(srv, id, "completed", "alice"));
    /* working (the answers are in), then completed with the result. */
    assert_true(capture_wait_count(&mine, 3, CAPTURE_PATIENCE_MS));
    const json_t *working = capture_item(&mine, 1).msg;
    const json_t *done = capture_item(&mine, 2).msg;
    assert_string_equal(json_string_value(json_object_get(done, "method")), "notifications/tasks");
    const json_t *params = json_object_get(done, "params");
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(done, "TaskStatusNotification", SCHEMA_EXT_TASKS);
    assert_string_equal(json_string_value(json_object_get(params, "taskId")), id);
    assert_string_equal(status_of(params), "completed");
    assert_string_equal(first_text(json_object_get(params, "result")), "a=x b=y round=1");
    assert_non_null(json_object_get(json_object_get(params, "_meta"), MCP_META_SUBSCRIPTION_ID));
    assert_string_equal(status_of(json_object_get(working, "params")), "working");
    assert_int_equal(capture_count(&theirs), 1); /* the ack, nothing more */

    assert_int_equal(mcp_server_close_subscriptions(srv), MCP_OK);
    mcp_exchange_release(mine_handle);
    mcp_exchange_release(theirs_handle);
    capture_cleanup(&mine);
    capture_cleanup(&theirs);

    /* Without the extension declared, asking for taskIds is refused. */
    json_t *req = modern_request(next_id++, "subscriptions/listen",
                                 json_pack("{s:{s:[s]}}", "notifications", "taskIds", id));
    json_t *response = submit(srv, req, "alice");
    assert_needs_extension(response);
    json_decref(response);
    free(id);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Who may see a task, and for how long                                */
/* ------------------------------------------------------------------ */

static void test_task_is_bound_to_its_principal(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    char *id = start_task(srv, "ask", NULL, "alice");
    json_decref(await_status_as(srv, id, "input_required", "alice"));
    static const char *const others[] = {"bob", NULL};
    for (size_t i = 0; i < 2; i++) {
        json_t *response = task_request(srv, "tasks/get", id, NULL, true, others[i]);
        expect_error(response, MCP_INVALID_PARAMS); /* as if it did not exist */
        json_decref(response);
        response = task_request(srv, "tasks/cancel", id, NULL, true, others[i]);
        expect_error(response, MCP_INVALID_PARAMS);
        json_decref(response);
    }
    json_t *response = task_request(srv, "tasks/get", id, NULL, true, "alice");
    assert_string_equal(status_of(result_of(response)), "input_required");
    json_decref(response);
    free(id);
    mcp_server_free(srv);
}

static void test_task_expires_after_its_ttl(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(100);
    atomic_store(&gate_open, true);
    char *done = start_task(srv, "job", NULL, NULL);
    json_decref(await_status(srv, done, "completed"));
    char *sleeping = start_task(srv, "sleeper", NULL, NULL);
    sleep_ms(1200); /* past the TTL and the once-a-second sweep */
    json_t *response = task_request(srv, "tasks/get", done, NULL, true, NULL);
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);
    response = task_request(srv, "tasks/get", sleeping, NULL, true, NULL);
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);
    free(done);
    free(sleeping);
    mcp_server_free(srv); /* the expired sleeper was cancelled: this returns */

    /* A negative TTL: kept until the server stops, "ttlMs": null. */
    srv = new_server(-1);
    response = call_tool(srv, "ask", NULL, true, NULL);
    assert_true(json_is_null(json_object_get(result_of(response), "ttlMs")));
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(result_of(response), "CreateTaskResult", SCHEMA_EXT_TASKS);
    json_decref(response);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* The bounds of the store, and what an ended task keeps                */
/* ------------------------------------------------------------------ */

/* A refusal for a full store: -32603, and it says so. */
static void expect_busy(json_t *response_new)
{
    const json_t *error = expect_error(response_new, MCP_INTERNAL_ERROR);
    assert_non_null(strstr(json_string_value(json_object_get(error, "message")), "Server busy"));
    json_decref(response_new);
}

/* No principal takes more than its share, nobody more than max_tasks: a
 * tool that may run without a task then does, one that may not is
 * refused. An ended task keeps its place (tasks/get still shows it)
 * until its time to live is over. */
static void test_task_store_is_bounded(void **state)
{
    (void)state;
    mcp_server_t *srv = new_bounded_server(0, 4, 2);
    char *a1 = start_task(srv, "sleeper", NULL, "alice");
    char *a2 = start_task(srv, "sleeper", NULL, "alice");
    expect_busy(call_tool(srv, "sleeper", NULL, true, "alice"));
    atomic_store(&gate_open, true);
    json_t *response = call_tool(srv, "job", NULL, true, "alice");
    assert_string_equal(first_text(result_of(response)), "done");
    assert_int_equal(atomic_load(&start_rc), MCP_EUNSUPPORTED);
    json_decref(response);

    char *b1 = start_task(srv, "sleeper", NULL, "bob");
    char *b2 = start_task(srv, "job", NULL, NULL);
    expect_busy(call_tool(srv, "sleeper", NULL, true, "carol")); /* 4 in all */

    json_decref(task_request(srv, "tasks/cancel", a1, NULL, true, "alice"));
    json_decref(await_status_as(srv, a1, "cancelled", "alice"));
    expect_busy(call_tool(srv, "sleeper", NULL, true, "alice"));
    free(a1), free(a2), free(b1), free(b2);
    mcp_server_free(srv);

    /* Clients without a principal cannot be told apart: no share holds
     * them, only max_tasks. */
    srv = new_bounded_server(0, 3, 1);
    a1 = start_task(srv, "sleeper", NULL, NULL);
    a2 = start_task(srv, "sleeper", NULL, NULL);
    b1 = start_task(srv, "sleeper", NULL, NULL);
    expect_busy(call_tool(srv, "sleeper", NULL, true, NULL));
    free(a1), free(a2), free(b1);
    mcp_server_free(srv);

    /* Places come back when tasks expire. */
    srv = new_bounded_server(100, 0, 1);
    a1 = start_task(srv, "sleeper", NULL, "alice");
    expect_busy(call_tool(srv, "sleeper", NULL, true, "alice"));
    sleep_ms(1200); /* past the TTL and the once-a-second sweep */
    a2 = start_task(srv, "sleeper", NULL, "alice");
    free(a1), free(a2);
    mcp_server_free(srv);
}

/* The 2025-11-25 client asks for its task: when the store is full, a tool
 * that may run without one answers the call itself, one that may not is
 * refused. */
static void test_legacy_task_store_is_bounded(void **state)
{
    (void)state;
    mcp_server_t *srv = new_bounded_server(0, 1, 0);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    json_decref(legacy_serve(srv, conn, NULL,
                             legacy_initialize(1, "2025-11-25", "{\"elicitation\":{}}"), NULL));
    json_t *response = legacy_serve(
        srv, conn, NULL,
        legacy_request(next_id++, "tools/call",
                       json_pack("{s:s, s:{}, s:{}}", "name", "sleeper", "arguments", "task")),
        NULL);
    assert_non_null(json_object_get(expect_legacy_result(response), "task"));
    json_decref(response);
    expect_busy(legacy_serve(
        srv, conn, NULL,
        legacy_request(next_id++, "tools/call",
                       json_pack("{s:s, s:{}, s:{}}", "name", "sleeper", "arguments", "task")),
        NULL));
    atomic_store(&gate_open, true);
    response = legacy_serve(
        srv, conn, NULL,
        legacy_request(next_id++, "tools/call",
                       json_pack("{s:s, s:{}, s:{}}", "name", "job", "arguments", "task")),
        NULL);
    const json_t *result = expect_legacy_result(response);
    assert_null(json_object_get(result, "task"));
    assert_string_equal(first_text(result), "done");
    json_decref(response);
    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* The request's params of task `id` as the store holds them now (new). */
static json_t *stored_params(mcp_server_t *srv, const char *id)
{
    struct task_store *s = srv->tasks;
    pthread_mutex_lock(&s->lock);
    struct task *t = task_find_locked(s, id, NULL, false, NULL);
    assert_non_null(t);
    json_t *params = json_deep_copy(t->ex->msg.params);
    size_t answers = json_object_size(t->answers);
    pthread_mutex_unlock(&s->lock);
    json_object_set_new(params, "answers", json_integer((json_int_t)answers));
    return params;
}

/* Starts `tool` as a task with a large argument and _meta member. */
static char *start_heavy_task(mcp_server_t *srv, const char *tool)
{
    char *blob = malloc(100001);
    memset(blob, 'x', 100000);
    blob[100000] = '\0';
    json_t *req = request("tools/call",
                          json_pack("{s:s, s:{s:s}}", "name", tool, "arguments", "blob", blob),
                          true);
    json_object_set_new(json_object_get(json_object_get(req, "params"), "_meta"), "padding",
                        json_string(blob));
    free(blob);
    json_t *response = submit(srv, req, NULL);
    char *id = strdup(json_string_value(json_object_get(result_of(response), "taskId")));
    json_decref(response);
    return id;
}

/* A task that ended lets go of its arguments and answers (nothing reads
 * them any more), and of what _meta held beyond what the server reads;
 * one still running keeps them. */
static void test_ended_task_lets_go_of_its_request(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    char *id = start_heavy_task(srv, "job");
    json_t *params = stored_params(srv, id);
    assert_non_null(json_object_get(params, "arguments")); /* still working */
    json_decref(params);
    atomic_store(&gate_open, true);
    json_decref(await_status(srv, id, "completed"));
    params = stored_params(srv, id);
    assert_null(json_object_get(params, "arguments"));
    assert_string_equal(json_string_value(json_object_get(params, "name")), "job");
    const json_t *meta = json_object_get(params, "_meta");
    assert_null(json_object_get(meta, "padding"));
    assert_non_null(json_object_get(meta, MCP_META_PROTOCOL_VERSION));
    assert_non_null(json_object_get(meta, MCP_META_CLIENT_CAPABILITIES));
    json_decref(params);
    /* tasks/get still shows the outcome. */
    json_t *task = get_task(srv, id, NULL);
    assert_string_equal(first_text(json_object_get(task, "result")), "done as a task");
    json_decref(task);
    free(id);

    /* Cancelled while it waited for input: the answers go too. */
    id = start_heavy_task(srv, "ask");
    json_decref(await_status(srv, id, "input_required"));
    json_decref(task_request(srv, "tasks/update", id,
                             json_pack("{s:{s:{s:s, s:{s:s}}}}", "inputResponses", "a", "action",
                                       "accept", "content", "v", "1"),
                             true, NULL));
    params = stored_params(srv, id);
    assert_int_equal(json_integer_value(json_object_get(params, "answers")), 1);
    json_decref(params);
    json_decref(task_request(srv, "tasks/cancel", id, NULL, true, NULL));
    json_decref(await_status(srv, id, "cancelled"));
    params = stored_params(srv, id);
    assert_null(json_object_get(params, "arguments"));
    assert_int_equal(json_integer_value(json_object_get(params, "answers")), 0);
    json_decref(params);
    free(id);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Legacy (2025-11-25) tasks/result and the task's time to live         */
/* ------------------------------------------------------------------ */

/* A 2025-11-25 session on `conn` that can answer elicitations. */
static void legacy_session(mcp_server_t *srv, mcp_conn_t *conn)
{
    json_decref(legacy_serve(srv, conn, NULL,
                             legacy_initialize(1, "2025-11-25", "{\"elicitation\":{}}"), NULL));
    json_decref(legacy_serve(srv, conn, NULL,
                             legacy_notification("notifications/initialized", NULL), NULL));
}

/* A task-augmented tools/call of `tool` asking for `ttl_ms`: the task id
 * (new string). */
static char *legacy_task(mcp_server_t *srv, mcp_conn_t *conn, const char *tool, int ttl_ms)
{
    json_t *response = legacy_serve(
        srv, conn, NULL,
        legacy_request(next_id++, "tools/call",
                       json_pack("{s:s, s:{}, s:{s:i}}", "name", tool, "arguments", "task", "ttl",
                                 ttl_ms)),
        NULL);
    const char *id = json_string_value(
        json_object_get(json_object_get(expect_legacy_result(response), "task"), "taskId"));
    assert_non_null(id);
    char *copy = strdup(id);
    json_decref(response);
    return copy;
}

/* The legacy tasks/get status of `id`, or NULL when it is an error. */
static bool legacy_status_is(mcp_server_t *srv, mcp_conn_t *conn, const char *id,
                             const char *status)
{
    json_t *response = legacy_serve(
        srv, conn, NULL, legacy_request(next_id++, "tasks/get", json_pack("{s:s}", "taskId", id)),
        NULL);
    const char *now = json_string_value(
        json_object_get(json_object_get(response, "result"), "status"));
    bool same = now && strcmp(now, status) == 0;
    json_decref(response);
    return same;
}

/* Waits for the release of a tasks/result submitted on `cap` and checks it
 * ended with the -32602 of an expired task. */
static void expect_expired(capture_sink_t *cap, const char *id)
{
    /* The input timeout is ten minutes: only the expiry ends it now. */
    assert_true(capture_wait_released(cap, 10000));
    capture_assert_done(cap);
    const json_t *response = capture_response(cap, NULL);
    const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
    assert_non_null(strstr(json_string_value(json_object_get(error, "message")), "expired"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(error, "data"), "taskId")),
                        id);
}

/* A tasks/result waits for its task's end; when the task's time to live
 * runs out first, every waiting tasks/result ends with -32602 at once
 * (the one that carried the task's questions, after cancelling them, and
 * one that waited behind it), without any other request coming to look at the store. So does one
 * waiting for a task whose handler runs; the handler is cancelled. */
static void test_legacy_task_result_ends_when_task_expires(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    legacy_session(srv, conn);

    char *id = legacy_task(srv, conn, "ask", 400);
    for (int i = 0; i < 500 && !legacy_status_is(srv, conn, id, "input_required"); i++)
        sleep_ms(10);
    capture_sink_t asked, behind;
    capture_init(&asked);
    capture_init(&behind);
    json_t *msg = legacy_request(next_id++, "tasks/result", json_pack("{s:s}", "taskId", id));
    assert_int_equal(capture_submit(srv, conn, msg, NULL, &asked, NULL), MCP_OK);
    json_decref(msg);
    assert_true(capture_wait_count(&asked, 2, CAPTURE_PATIENCE_MS)); /* "a" and "b" */
    for (size_t i = 0; i < 2; i++) {
        capture_item_t item = capture_item(&asked, i);
        assert_int_equal(item.kind, MCP_OUT_REQUEST);
        assert_string_equal(json_string_value(json_object_get(item.msg, "method")),
                            "elicitation/create");
    }
    msg = legacy_request(next_id++, "tasks/result", json_pack("{s:s}", "taskId", id));
    assert_int_equal(capture_submit(srv, conn, msg, NULL, &behind, NULL), MCP_OK);
    json_decref(msg);
    expect_expired(&asked, id);
    /* The questions nobody waits for any more are cancelled first. */
    assert_int_equal(capture_count(&asked), 5);
    for (size_t i = 0; i < 2; i++) {
        capture_item_t note = capture_item(&asked, 2 + i);
        assert_int_equal(note.kind, MCP_OUT_NOTIFICATION);
        assert_string_equal(json_string_value(json_object_get(note.msg, "method")),
                            "notifications/cancelled");
        assert_true(json_equal(json_object_get(json_object_get(note.msg, "params"), "requestId"),
                               json_object_get(capture_item(&asked, i).msg, "id")));
    }
    expect_expired(&behind, id);
    assert_int_equal(capture_count(&behind), 1); /* its answer only: no questions */
    json_t *response = legacy_serve(
        srv, conn, NULL, legacy_request(next_id++, "tasks/get", json_pack("{s:s}", "taskId", id)),
        NULL);
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);
    capture_cleanup(&asked);
    capture_cleanup(&behind);
    free(id);

    /* A running handler: the waiter ends at the expiry, the handler is
     * cancelled (or this test's server_free would wait a minute for it). */
    id = legacy_task(srv, conn, "sleeper", 300);
    capture_sink_t waiting;
    capture_init(&waiting);
    msg = legacy_request(next_id++, "tasks/result", json_pack("{s:s}", "taskId", id));
    assert_int_equal(capture_submit(srv, conn, msg, NULL, &waiting, NULL), MCP_OK);
    json_decref(msg);
    expect_expired(&waiting, id);
    capture_cleanup(&waiting);
    free(id);

    mcp_conn_free(conn);
    mcp_server_free(srv);
}

/* A tasks/result whose Accept admits JSON alone cannot carry the task's
 * questions: it fails at once with -32600 naming text/event-stream
 * (rather than wait for answers to questions never seen), and the task
 * keeps them for the next tasks/result, which can carry them. */
static void test_legacy_task_result_without_event_stream(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    legacy_http_t http;
    char sid[128];
    json_decref(legacy_serve_http(srv, NULL, legacy_http_init(&http, NULL, NULL),
                                  legacy_initialize(1, "2025-11-25", "{\"elicitation\":{}}"),
                                  NULL, sid));
    assert_true(sid[0] != '\0');
    legacy_http_init(&http, "2025-11-25", sid);
    json_t *response = legacy_serve(
        srv, NULL, &http.ctx,
        legacy_request(next_id++, "tools/call",
                       json_pack("{s:s, s:{}, s:{s:i}}", "name", "ask", "arguments", "task", "ttl",
                                 60000)),
        NULL);
    char *id = strdup(json_string_value(
        json_object_get(json_object_get(expect_legacy_result(response), "task"), "taskId")));
    json_decref(response);
    bool waiting = false;
    for (int i = 0; i < 500 && !waiting; i++) {
        response = legacy_serve(srv, NULL, &http.ctx,
                                legacy_request(next_id++, "tasks/get",
                                               json_pack("{s:s}", "taskId", id)),
                                NULL);
        const char *status = json_string_value(
            json_object_get(json_object_get(response, "result"), "status"));
        waiting = status && strcmp(status, "input_required") == 0;
        json_decref(response);
        if (!waiting)
            sleep_ms(10);
    }
    assert_true(waiting);

    legacy_http_t json_only;
    legacy_http_init(&json_only, "2025-11-25", sid);
    legacy_http_accept(&json_only, "application/json");
    capture_sink_t cap;
    capture_init(&cap);
    json_t *msg = legacy_request(next_id++, "tasks/result", json_pack("{s:s}", "taskId", id));
    assert_int_equal(capture_submit(srv, NULL, msg, &json_only.ctx, &cap, NULL), MCP_OK);
    json_decref(msg);
    assert_true(capture_wait_released(&cap, 5000));
    capture_assert_done(&cap);
    assert_int_equal(capture_count(&cap), 1); /* the answer only */
    const json_t *error = expect_error(capture_response(&cap, NULL), MCP_INVALID_REQUEST);
    assert_non_null(strstr(json_string_value(json_object_get(error, "message")),
                           "text/event-stream"));
    capture_cleanup(&cap);

    capture_init(&cap);
    msg = legacy_request(next_id++, "tasks/result", json_pack("{s:s}", "taskId", id));
    assert_int_equal(capture_submit(srv, NULL, msg, &http.ctx, &cap, NULL), MCP_OK);
    json_decref(msg);
    assert_true(capture_wait_count(&cap, 2, CAPTURE_PATIENCE_MS)); /* "a" and "b" */
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(capture_item(&cap, i).kind, MCP_OUT_REQUEST);
    mcp_server_free(srv); /* ends the waiting tasks/result */
    assert_true(capture_released(&cap));
    capture_cleanup(&cap);
    free(id);
}

/* A server freed with tasks running, waiting for input and finished
 * frees them all (LeakSanitizer checks) and does not wait for a sleeper. */
static void test_free_with_tasks_in_every_state(void **state)
{
    (void)state;
    mcp_server_t *srv = new_server(0);
    char *sleeping = start_task(srv, "sleeper", NULL, NULL);
    char *waiting = start_task(srv, "ask", NULL, NULL);
    json_decref(await_status(srv, waiting, "input_required"));
    atomic_store(&gate_open, true);
    char *done = start_task(srv, "job", NULL, NULL);
    json_decref(await_status(srv, done, "completed"));
    mcp_server_free(srv);
    free(sleeping);
    free(waiting);
    free(done);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discover_advertises_only_with_task_tools),
        cmocka_unit_test(test_undeclared_client_gets_no_task),
        cmocka_unit_test(test_legacy_clients_get_no_task),
        cmocka_unit_test(test_start_task_refused_outside_task_tools),
        cmocka_unit_test(test_task_runs_to_completion),
        cmocka_unit_test(test_tool_error_completes_and_rpc_failure_fails),
        cmocka_unit_test(test_unknown_and_malformed_task_ids),
        cmocka_unit_test(test_input_inside_a_task),
        cmocka_unit_test(test_reused_input_key_fails_the_task),
        cmocka_unit_test(test_input_rounds_are_bounded),
        cmocka_unit_test(test_many_tasks),
        cmocka_unit_test(test_cancel_running_and_waiting_tasks),
        cmocka_unit_test(test_transport_cancel_after_answer_spares_the_task),
        cmocka_unit_test(test_task_notifications_on_listen),
        cmocka_unit_test(test_task_is_bound_to_its_principal),
        cmocka_unit_test(test_task_expires_after_its_ttl),
        cmocka_unit_test(test_legacy_task_result_ends_when_task_expires),
        cmocka_unit_test(test_legacy_task_result_without_event_stream),
        cmocka_unit_test(test_task_store_is_bounded),
        cmocka_unit_test(test_legacy_task_store_is_bounded),
        cmocka_unit_test(test_ended_task_lets_go_of_its_request),
        cmocka_unit_test(test_free_with_tasks_in_every_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
