/*
 * The experimental tasks of 2025-11-25 end to end: libmcp's client in the
 * legacy era against libmcp's server, over Streamable HTTP (the server in
 * this process, with sessions) and over stdio (this program, started
 * again with --stdio-server). Every case runs over both:
 *   - initialize declares capabilities.tasks, tools/list each task tool's
 *     execution.taskSupport;
 *   - a call of a tool that allows tasks is made a task by the client,
 *     polled, and its result read with tasks/result (with the related-task
 *     _meta); the handler sees a task from its first line;
 *   - questions inside the task arrive as elicitation/create requests
 *     carrying the related-task _meta, and the answers reach the handler;
 *   - a failed task is the call's JSON-RPC error; a tool error makes the
 *     task "failed" while tasks/result still gives the CallToolResult;
 *   - the caller's cancel sends tasks/cancel, which the handler sees and
 *     tasks/list shows;
 *   - tasks/result waits for the task; giving up that wait leaves the task
 *     running; a cancelled task's result is an error, and a result's own
 *     _meta is kept beside the related-task entry;
 *   - -32601 for "task" on a tool without task support and for a tool that
 *     requires one called without; -32602 for an unknown task and for
 *     cancelling a task that is over;
 *   - over HTTP, another session sees none of it;
 *   - a 2025-06-18 client is offered no tasks.
 */
#define _GNU_SOURCE

#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/mcp.h"
#include "schema_check.h"
#include "self_served.h"
#include "test_clock.h"

#define POLL_INTERVAL_MS 20

/* ------------------------------------------------------------------------
 * The server
 * ------------------------------------------------------------------------ */

static atomic_int tasks_seen;  /* handler runs that found their call a task */
static atomic_int saw_cancel;  /* task handlers that saw their cancel */

static int render(mcp_call_t *call, void *user)
{
    (void)user;
    bool task = mcp_call_start_task(call) == MCP_OK;
    if (task)
        atomic_fetch_add(&tasks_seen, 1);
    if (mcp_call_sleep(call, 100) != MCP_OK)
        return MCP_ECANCELED;
    return mcp_call_add_textf(call, "rendered %s", task ? "as a task" : "directly");
}

/* Asks for a name, then (in the next run) for a city. */
static int survey(mcp_call_t *call, void *user)
{
    (void)user;
    static const char *const keys[] = {"name", "city"};
    static const char *const questions[] = {"Your name?", "Your city?"};
    const char *answers[2];
    for (int i = 0; i < 2; i++) {
        const json_t *answer = mcp_call_input(call, keys[i]);
        if (!answer) {
            int rc = mcp_call_elicit(call, keys[i], questions[i],
                                     json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object",
                                               "properties", keys[i], "type", "string",
                                               "required", keys[i]),
                                     MCP_INPUT_NEEDED);
            return rc == MCP_OK ? MCP_INPUT_REQUIRED : rc;
        }
        answers[i] = json_string_value(json_object_get(json_object_get(answer, "content"),
                                                       keys[i]));
    }
    return mcp_call_add_textf(call, "%s from %s", answers[0] ? answers[0] : "?",
                              answers[1] ? answers[1] : "?");
}

static int quota(mcp_call_t *call, void *user)
{
    (void)user;
    return mcp_call_fail_data(call, -32042, json_pack("{s:i}", "retryAfterMs", 1000),
                              "Quota exceeded");
}

static int broken(mcp_call_t *call, void *user)
{
    (void)user;
    return mcp_call_tool_error(call, "the render farm is on fire");
}

static int forever(mcp_call_t *call, void *user)
{
    (void)user;
    while (mcp_call_sleep(call, 60000) == MCP_OK)
        ;
    atomic_fetch_add(&saw_cancel, 1);
    return MCP_ECANCELED;
}

/* A result with a _meta of its own, which tasks/result must keep beside
 * the related-task entry. */
static int stamped(mcp_call_t *call, void *user)
{
    (void)user;
    int rc = mcp_call_set_result_meta(call, "example.com/stamp", json_string("42"));
    return rc == MCP_OK ? mcp_call_add_text(call, "stamped") : rc;
}

static int plain(mcp_call_t *call, void *user)
{
    (void)user;
    return mcp_call_add_text(call, mcp_call_task_id(call) ? "a task?" : "plain");
}

static int stats(mcp_call_t *call, void *user)
{
    (void)user;
    return mcp_call_set_structured(call, json_pack("{s:i, s:i}", "tasks",
                                                   atomic_load(&tasks_seen), "sawCancel",
                                                   atomic_load(&saw_cancel)));
}

static mcp_server_t *make_server(void)
{
    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){
        .name = "legacy-tasks", .version = "1.0", .task_poll_interval_ms = POLL_INTERVAL_MS},
        &err);
    const mcp_tool_t tools[] = {
        {.name = "render", .handler = render, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "survey", .handler = survey, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "quota", .handler = quota, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "broken", .handler = broken, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "forever", .handler = forever, .tasks = MCP_TASKS_REQUIRED},
        {.name = "stamped", .handler = stamped, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "plain", .handler = plain},
        {.name = "stats", .handler = stats},
    };
    for (size_t i = 0; srv && i < sizeof tools / sizeof tools[0]; i++)
        if (mcp_server_add_tool(srv, &tools[i], &err) != MCP_OK) {
            fprintf(stderr, "tool %s: %s\n", tools[i].name, err.message);
            mcp_server_free(srv);
            srv = NULL;
        }
    mcp_error_clear(&err);
    return srv;
}

static int serve_stdio(void)
{
    mcp_server_t *srv = make_server();
    int rc = srv ? mcp_server_run_stdio(srv, NULL) : MCP_ENOMEM;
    mcp_server_free(srv);
    return rc == MCP_OK ? 0 : 1;
}

/* ------------------------------------------------------------------------
 * The client side
 * ------------------------------------------------------------------------ */

/* What the client saw: the questions (by message) and whether each came
 * with the related-task _meta, from the trace. */
typedef struct seen {
    pthread_mutex_t lock;
    int asked;
    int related;          /* elicitation/create requests naming a task */
    int results_related;  /* tasks/result answers naming their task */
} seen_t;

static int elicit(void *arg, const json_t *params, json_t **result_out)
{
    seen_t *s = arg;
    const char *message = json_string_value(json_object_get(params, "message"));
    const char *key = message && strcmp(message, "Your city?") == 0 ? "city" : "name";
    pthread_mutex_lock(&s->lock);
    s->asked++;
    pthread_mutex_unlock(&s->lock);
    *result_out = json_pack("{s:s, s:{s:s}}", "action", "accept", "content", key,
                            strcmp(key, "city") == 0 ? "Paris" : "Ada");
    return 0;
}

static void trace(void *arg, mcp_trace_direction_t direction, const char *text, size_t len)
{
    seen_t *s = arg;
    if (direction != MCP_TRACE_RECEIVED)
        return;
    json_t *msg = json_loadb(text, len, 0, NULL);
    const char *method = json_string_value(json_object_get(msg, "method"));
    const json_t *meta_of_params = json_object_get(json_object_get(msg, "params"), "_meta");
    const json_t *meta_of_result = json_object_get(json_object_get(msg, "result"), "_meta");
    pthread_mutex_lock(&s->lock);
    if (method && strcmp(method, "elicitation/create") == 0 &&
        json_object_get(meta_of_params, "io.modelcontextprotocol/related-task"))
        s->related++;
    if (json_string_value(json_object_get(
            json_object_get(meta_of_result, "io.modelcontextprotocol/related-task"), "taskId")))
        s->results_related++;
    pthread_mutex_unlock(&s->lock);
    json_decref(msg);
}

typedef struct fixture {
    bool http;
    mcp_server_t *srv;
    mcp_http_server_t *server;
    char url[64];
    seen_t seen;
    mcp_client_t *c; /* legacy era, with the option tasks */
} fixture_t;


static mcp_client_t *connect_client(fixture_t *f, bool tasks, const char *version)
{
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "legacy-tasks-test", .version = "1.0", .era = MCP_CLIENT_ERA_LEGACY,
        .legacy_protocol_version = version, .tasks = tasks, .elicit = elicit,
        .elicit_user = &f->seen, .trace = trace, .trace_user = &f->seen}, &err);
    assert_non_null(c);
    int rc = f->http ? mcp_client_connect_http(c, &(mcp_http_target_t){.url = f->url}, &err)
                     : mcp_client_connect_stdio(
                           c, &(mcp_stdio_target_t){.argv = (const char *const[]){
                                  self_served_path(), "--stdio-server", NULL}},
                           &err);
    if (rc != MCP_OK)
        fail_msg("connect over %s: %s", f->http ? "HTTP" : "stdio", err.message);
    return c;
}

static int setup(void **state, bool http)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->http = http;
    pthread_mutex_init(&f->seen.lock, NULL);
    if (http) {
        f->srv = make_server();
        self_served_http_start(f->srv, &f->server, f->url, sizeof f->url);
    }
    f->c = connect_client(f, true, NULL);
    assert_string_equal(mcp_client_protocol_version(f->c), "2025-11-25");
    *state = f;
    return 0;
}

static int setup_http(void **state)
{
    return setup(state, true);
}

static int setup_stdio(void **state)
{
    return setup(state, false);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->c);
    self_served_http_stop(f->srv, f->server);
    pthread_mutex_destroy(&f->seen.lock);
    free(f);
    return 0;
}

static const char *first_text(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

/* A raw request; *result_out its result (new) on MCP_OK. */
static int raw(mcp_client_t *c, const char *method, json_t *params_new, json_t **result_out,
               mcp_error_t *err)
{
    return mcp_client_request(c, method, params_new, NULL, result_out, err);
}

/* Calls `tool` as a task by hand (tools/call with "task"): the task id. */
static char *create_task(mcp_client_t *c, const char *tool)
{
    json_t *r = NULL;
    mcp_error_t err = {0};
    if (raw(c, "tools/call", json_pack("{s:s, s:{}}", "name", tool, "task"), &r, &err) != MCP_OK)
        fail_msg("tools/call %s as a task: %s", tool, err.message);
    json_t *msg = json_pack("{s:s, s:i, s:O}", "jsonrpc", "2.0", "id", 1, "result", r);
    json_object_del(json_object_get(msg, "result"), "resultType"); /* the client's mark */
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(json_object_get(msg, "result"), "CreateTaskResult",
                                       "2025-11-25");
    json_decref(msg);
    char *id = strdup(json_string_value(json_object_get(json_object_get(r, "task"), "taskId")));
    assert_non_null(id);
    json_decref(r);
    return id;
}

/* Polls tasks/get by hand until the status is `status` (up to 5 s). */
static void await_status(mcp_client_t *c, const char *id, const char *status)
{
    for (int i = 0; i < 250; i++) {
        json_t *r = NULL;
        mcp_error_t err = {0};
        if (raw(c, "tasks/get", json_pack("{s:s}", "taskId", id), &r, &err) != MCP_OK)
            fail_msg("tasks/get: %s", err.message);
        bool there = strcmp(json_string_value(json_object_get(r, "status")), status) == 0;
        assert_true(json_is_integer(json_object_get(r, "pollInterval")));
        json_decref(r);
        if (there)
            return;
        sleep_ms(POLL_INTERVAL_MS);
    }
    fail_msg("task %s never became %s", id, status);
}

/* ------------------------------------------------------------------------
 * The cases
 * ------------------------------------------------------------------------ */

static void test_declared(void **state)
{
    fixture_t *f = *state;
    const json_t *tasks = json_object_get(mcp_client_server_capabilities(f->c), "tasks");
    assert_non_null(json_object_get(tasks, "list"));
    assert_non_null(json_object_get(tasks, "cancel"));
    assert_non_null(json_object_get(json_object_get(json_object_get(tasks, "requests"),
                                                    "tools"),
                                    "call"));
    json_t *tools = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_tools_all(f->c, NULL, &tools, &err), MCP_OK);
    size_t i;
    json_t *tool;
    int marked = 0;
    json_array_foreach(tools, i, tool) {
        const char *name = json_string_value(json_object_get(tool, "name"));
        const char *support = json_string_value(
            json_object_get(json_object_get(tool, "execution"), "taskSupport"));
        if (strcmp(name, "forever") == 0)
            assert_string_equal(support, "required");
        else if (strcmp(name, "render") == 0)
            assert_string_equal(support, "optional");
        else if (strcmp(name, "plain") == 0)
            assert_null(support);
        marked += support != NULL;
    }
    assert_int_equal(marked, 6);
    json_decref(tools);
}

static void test_task_followed(void **state)
{
    fixture_t *f = *state;
    int before = self_served_stat(f->c, "tasks");
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "render", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "rendered as a task");
    json_decref(r);
    assert_int_equal(self_served_stat(f->c, "tasks"), before + 1);
    assert_true(f->seen.results_related >= 1);

    /* A plain tool is called plainly. */
    assert_int_equal(mcp_client_call_tool(f->c, "plain", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "plain");
    json_decref(r);
}

static void test_questions_in_the_task(void **state)
{
    fixture_t *f = *state;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "survey", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "Ada from Paris");
    json_decref(r);
    assert_int_equal(f->seen.asked, 2);
    assert_int_equal(f->seen.related, 2);
}

static void test_failures(void **state)
{
    fixture_t *f = *state;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "quota", NULL, NULL, &r, &err), MCP_ERPC);
    assert_int_equal(err.code, -32042);
    assert_string_equal(err.message, "Quota exceeded");
    assert_int_equal(json_integer_value(json_object_get(err.data, "retryAfterMs")), 1000);
    mcp_error_clear(&err);

    /* A tool error: the task is "failed", tasks/result the CallToolResult. */
    char *id = create_task(f->c, "broken");
    await_status(f->c, id, "failed");
    assert_int_equal(raw(f->c, "tasks/result", json_pack("{s:s}", "taskId", id), &r, &err),
                     MCP_OK);
    assert_true(json_is_true(json_object_get(r, "isError")));
    assert_string_equal(first_text(r), "the render farm is on fire");
    assert_string_equal(json_string_value(json_object_get(json_object_get(
                            json_object_get(r, "_meta"), "io.modelcontextprotocol/related-task"),
                                                          "taskId")),
                        id);
    json_decref(r);
    /* Over: it cannot be cancelled. */
    assert_int_equal(raw(f->c, "tasks/cancel", json_pack("{s:s}", "taskId", id), &r, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32602);
    mcp_error_clear(&err);
    free(id);

    assert_int_equal(raw(f->c, "tasks/get", json_pack("{s:s}", "taskId", "nope"), &r, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32602);
    mcp_error_clear(&err);
    assert_int_equal(raw(f->c, "tasks/result", json_pack("{s:s}", "taskId", "nope"), &r, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32602);
    mcp_error_clear(&err);

    /* "task" where the tool allows none, and none where it needs one. */
    assert_int_equal(raw(f->c, "tools/call", json_pack("{s:s, s:{}}", "name", "plain", "task"),
                         &r, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32601);
    mcp_error_clear(&err);
    assert_int_equal(raw(f->c, "tools/call", json_pack("{s:s, s:{s:s}}", "name", "render", "task",
                                                       "ttl", "long"),
                         &r, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32602);
    mcp_error_clear(&err);
    mcp_client_t *plain_client = connect_client(f, false, NULL);
    assert_int_equal(mcp_client_call_tool(plain_client, "forever", NULL, NULL, &r, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32601);
    mcp_error_clear(&err);
    /* Without the option the client never asks for a task. */
    assert_int_equal(mcp_client_call_tool(plain_client, "render", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "rendered directly");
    json_decref(r);
    mcp_client_free(plain_client);
}

static void *cancel_after_300ms(void *arg)
{
    sleep_ms(300);
    mcp_cancel_trigger(arg);
    return NULL;
}

static void test_cancelled(void **state)
{
    fixture_t *f = *state;
    int before = self_served_stat(f->c, "sawCancel");
    mcp_cancel_t *cancel = mcp_cancel_new();
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_after_300ms, cancel), 0);
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "forever", NULL,
                                          &(mcp_request_options_t){.cancel = cancel}, &r, &err),
                     MCP_ECANCELED);
    mcp_error_clear(&err);
    pthread_join(th, NULL);
    mcp_cancel_free(cancel);
    self_served_await_stat(f->c, "sawCancel", before + 1);

    /* tasks/cancel answers with the task, cancelled already. */
    char *id = create_task(f->c, "forever");
    assert_int_equal(raw(f->c, "tasks/cancel", json_pack("{s:s}", "taskId", id), &r, &err),
                     MCP_OK);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "cancelled");
    json_decref(r);
    assert_int_equal(raw(f->c, "tasks/list", NULL, &r, &err), MCP_OK);
    int cancelled = 0;
    size_t i;
    json_t *task;
    json_array_foreach(json_object_get(r, "tasks"), i, task)
        cancelled += strcmp(json_string_value(json_object_get(task, "status")), "cancelled") == 0;
    assert_int_equal(cancelled, 2);
    json_decref(r);
    free(id);
}

/* tasks/result blocks until the task is over; giving up that wait leaves
 * the task running, and a cancelled task's result is a JSON-RPC error. */
static void test_result_waits(void **state)
{
    fixture_t *f = *state;
    int before = self_served_stat(f->c, "sawCancel");
    char *id = create_task(f->c, "forever");
    mcp_cancel_t *cancel = mcp_cancel_new();
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_after_300ms, cancel), 0);
    json_t *r = NULL;
    mcp_error_t err = {0};
    int64_t t0 = now_ms();
    assert_int_equal(mcp_client_request(f->c, "tasks/result", json_pack("{s:s}", "taskId", id),
                                        &(mcp_request_options_t){.cancel = cancel}, &r, &err),
                     MCP_ECANCELED);
    assert_true(now_ms() - t0 >= 250); /* it waited for the task */
    mcp_error_clear(&err);
    pthread_join(th, NULL);
    mcp_cancel_free(cancel);

    /* The task did not notice: still working, its handler not cancelled. */
    assert_int_equal(raw(f->c, "tasks/get", json_pack("{s:s}", "taskId", id), &r, &err), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "working");
    json_decref(r);
    assert_int_equal(self_served_stat(f->c, "sawCancel"), before);

    /* Cancelled now; its result is the error the call ended with. */
    assert_int_equal(raw(f->c, "tasks/cancel", json_pack("{s:s}", "taskId", id), &r, &err),
                     MCP_OK);
    json_decref(r);
    self_served_await_stat(f->c, "sawCancel", before + 1);
    assert_int_equal(raw(f->c, "tasks/result", json_pack("{s:s}", "taskId", id), &r, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, MCP_INTERNAL_ERROR);
    assert_non_null(strstr(err.message, "cancelled"));
    mcp_error_clear(&err);
    free(id);

    /* A waiting tasks/result gets the result when it comes, with the
     * result's own _meta kept beside the related-task entry. */
    id = create_task(f->c, "stamped");
    assert_int_equal(raw(f->c, "tasks/result", json_pack("{s:s}", "taskId", id), &r, &err),
                     MCP_OK);
    assert_string_equal(first_text(r), "stamped");
    const json_t *meta = json_object_get(r, "_meta");
    assert_string_equal(json_string_value(json_object_get(meta, "example.com/stamp")), "42");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(meta, "io.modelcontextprotocol/related-task"),
                            "taskId")),
                        id);
    json_decref(r);
    free(id);
}

/* Over HTTP each session has its own tasks. */
static void test_sessions_apart(void **state)
{
    fixture_t *f = *state;
    char *id = create_task(f->c, "render");
    mcp_client_t *other = connect_client(f, true, NULL);
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(raw(other, "tasks/get", json_pack("{s:s}", "taskId", id), &r, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32602);
    mcp_error_clear(&err);
    assert_int_equal(raw(other, "tasks/list", NULL, &r, &err), MCP_OK);
    assert_int_equal(json_array_size(json_object_get(r, "tasks")), 0);
    json_decref(r);
    mcp_client_free(other);
    await_status(f->c, id, "completed");
    free(id);
}

/* Before 2025-11-25 there are no tasks: none declared, none listed. */
/* How many tools of `c`'s tools/list carry execution.taskSupport. */
static int tools_marked(mcp_client_t *c)
{
    json_t *tools = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &tools, &err), MCP_OK);
    size_t i;
    json_t *tool;
    int marked = 0;
    json_array_foreach(tools, i, tool)
        marked += json_object_get(tool, "execution") != NULL;
    json_decref(tools);
    return marked;
}

static void test_older_version(void **state)
{
    fixture_t *f = *state;
    mcp_client_t *old = connect_client(f, true, "2025-06-18");
    assert_string_equal(mcp_client_protocol_version(old), "2025-06-18");
    assert_null(json_object_get(mcp_client_server_capabilities(old), "tasks"));
    /* The marks a 2025-11-25 client's tools/list gets are its page's own:
     * over HTTP both clients list the same server's definitions, which
     * must not keep them. */
    assert_int_equal(tools_marked(f->c), 6);
    assert_int_equal(tools_marked(old), 0);
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(old, "render", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "rendered directly");
    json_decref(r);
    assert_int_equal(raw(old, "tasks/list", NULL, &r, &err), MCP_ERPC);
    assert_int_equal(err.code, -32601);
    mcp_error_clear(&err);
    mcp_client_free(old);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--stdio-server") == 0)
        return serve_stdio();
#define BOTH(test)                                                  \
    {#test " (HTTP)", test, setup_http, teardown, NULL},            \
        {#test " (stdio)", test, setup_stdio, teardown, NULL}
    const struct CMUnitTest tests[] = {
        BOTH(test_declared),
        BOTH(test_task_followed),
        BOTH(test_questions_in_the_task),
        BOTH(test_failures),
        BOTH(test_cancelled),
        BOTH(test_result_waits),
        {"test_sessions_apart (HTTP)", test_sessions_apart, setup_http, teardown, NULL},
        BOTH(test_older_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
