/*
 * The Tasks extension end to end: libmcp's client against libmcp's server,
 * over Streamable HTTP (the server runs in this process) and over stdio
 * (this program, started again with --stdio-server, is the server). Every
 * case runs over both:
 *   - a tools/call that becomes a task is followed to its result;
 *   - input inside a task is asked through the elicit callback, once per
 *     key, and answered with tasks/update;
 *   - a task that fails is MCP_ERPC with the tool's error;
 *   - the caller's mcp_cancel_t cancels the task at the server;
 *   - keep_task, then mcp_client_task_get/update/cancel by hand, and
 *     mcp_client_task_follow() of a task known by its id;
 *   - a subscription with taskIds hears the task's states (notifications/tasks),
 *     and a followed task's end is heard without waiting out the interval;
 *     tasks followed at once share one subscription;
 *   - without the option, the same tool answers directly, and a tool that
 *     needs a task is refused with -32021.
 * What the server saw is read back through its "stats" tool, so that the
 * assertions are the same whichever process the server runs in.
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

#define POLL_INTERVAL_MS 20

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------------
 * The server
 * ------------------------------------------------------------------------ */

static atomic_int became_task;    /* calls that became tasks */
static atomic_int answered_direct;/* calls answered without a task */
static atomic_int survey_runs;    /* runs of the survey handler */
static atomic_int saw_cancel;     /* task handlers that saw their cancel */

/* Renders for a while: a task when the client declared the extension,
 * a direct answer otherwise. */
static int render(mcp_call_t *call, void *user)
{
    (void)user;
    bool task = mcp_call_start_task(call) == MCP_OK;
    atomic_fetch_add(task ? &became_task : &answered_direct, 1);
    if (mcp_call_sleep(call, 150) != MCP_OK)
        return MCP_ECANCELED;
    return mcp_call_add_textf(call, "rendered %s", task ? "as a task" : "directly");
}

/* Asks for a name, then (in the next round) for a city. */
static int survey(mcp_call_t *call, void *user)
{
    (void)user;
    atomic_fetch_add(&survey_runs, 1);
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK)
        return rc;
    static const char *const keys[] = {"name", "city"};
    static const char *const questions[] = {"Your name?", "Your city?"};
    const char *answers[2];
    for (int i = 0; i < 2; i++) {
        const json_t *answer = mcp_call_input(call, keys[i]);
        if (!answer) {
            rc = mcp_call_elicit(call, keys[i], questions[i],
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
    mcp_call_start_task(call);
    mcp_call_sleep(call, 50);
    return mcp_call_fail_data(call, -32042, json_pack("{s:i}", "retryAfterMs", 1000),
                              "Quota exceeded");
}

/* Works until it is cancelled. */
static int forever(mcp_call_t *call, void *user)
{
    (void)user;
    mcp_call_start_task(call);
    while (mcp_call_sleep(call, 60000) == MCP_OK)
        ;
    atomic_fetch_add(&saw_cancel, 1);
    return MCP_ECANCELED;
}

static int stats(mcp_call_t *call, void *user)
{
    (void)user;
    return mcp_call_set_structured(
        call, json_pack("{s:i, s:i, s:i, s:i}", "tasks", atomic_load(&became_task), "direct",
                        atomic_load(&answered_direct), "surveyRuns", atomic_load(&survey_runs),
                        "sawCancel", atomic_load(&saw_cancel)));
}

/* A server whose tasks ask to be polled every `poll_ms`. */
static mcp_server_t *make_server(int poll_ms)
{
    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){
        .name = "tasks", .version = "1.0.0", .task_poll_interval_ms = poll_ms}, &err);
    const mcp_tool_t tools[] = {
        {.name = "render", .handler = render, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "survey", .handler = survey, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "quota", .handler = quota, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "forever", .handler = forever, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "must_task", .handler = render, .tasks = MCP_TASKS_REQUIRED},
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

static int serve_stdio(int poll_ms)
{
    mcp_server_t *srv = make_server(poll_ms);
    int rc = srv ? mcp_server_run_stdio(srv, NULL) : MCP_ENOMEM;
    mcp_server_free(srv);
    return rc == MCP_OK ? 0 : 1;
}

/* ------------------------------------------------------------------------
 * The user: answers each question, counting how often it was asked
 * ------------------------------------------------------------------------ */

typedef struct user {
    pthread_mutex_t lock;
    json_t *asked; /* message -> times */
    int total;
} user_t;

static int elicit(void *arg, const json_t *params, json_t **result_out)
{
    user_t *u = arg;
    const char *message = json_string_value(json_object_get(params, "message"));
    pthread_mutex_lock(&u->lock);
    u->total++;
    json_int_t n = json_integer_value(json_object_get(u->asked, message));
    json_object_set_new(u->asked, message, json_integer(n + 1));
    pthread_mutex_unlock(&u->lock);
    const json_t *fields =
        json_object_get(json_object_get(params, "requestedSchema"), "properties");
    json_t *content = json_object();
    if (json_object_get(fields, "name"))
        json_object_set_new(content, "name", json_string("Ada"));
    if (json_object_get(fields, "city"))
        json_object_set_new(content, "city", json_string("Paris"));
    *result_out = json_pack("{s:s, s:o}", "action", "accept", "content", content);
    return 0;
}

/* ------------------------------------------------------------------------
 * Fixtures: one per transport
 * ------------------------------------------------------------------------ */


typedef struct fixture {
    bool http;
    mcp_server_t *srv;        /* HTTP: in this process */
    mcp_http_server_t *server;
    char url[64];
    user_t user;
    mcp_client_t *c;          /* declares the extension */
} fixture_t;

static mcp_client_t *connect_client(fixture_t *f, bool tasks)
{
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "tasks-test", .version = "1.0", .era = MCP_CLIENT_ERA_MODERN, .tasks = tasks,
        .elicit = elicit, .elicit_user = &f->user}, &err);
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
    pthread_mutex_init(&f->user.lock, NULL);
    f->user.asked = json_object();
    if (http) {
        f->srv = make_server(POLL_INTERVAL_MS);
        self_served_http_start(f->srv, &f->server, f->url, sizeof f->url);
    }
    f->c = connect_client(f, true);
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
    json_decref(f->user.asked);
    pthread_mutex_destroy(&f->user.lock);
    free(f);
    return 0;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

static const char *first_text(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

static void assert_call_result_valid(const json_t *result)
{
    json_t *msg = json_pack("{s:s, s:i, s:O}", "jsonrpc", "2.0", "id", 1, "result", result);
    MCP_ASSERT_SCHEMA_VALID(msg, "tools/call", "2026-07-28");
    json_decref(msg);
}


/* Polls the task by hand until its status is `status` (up to 5 s); its
 * state then (new reference). */
static json_t *await_status(mcp_client_t *c, const char *task_id, const char *status)
{
    for (int i = 0; i < 250; i++) {
        json_t *state = NULL;
        mcp_error_t err = {0};
        if (mcp_client_task_get(c, task_id, NULL, &state, &err) != MCP_OK)
            fail_msg("tasks/get: %s", err.message);
        MCP_ASSERT_SCHEMA_DEFINITION_VALID(state, "GetTaskResult", SCHEMA_EXT_TASKS);
        if (strcmp(json_string_value(json_object_get(state, "status")), status) == 0)
            return state;
        json_decref(state);
        sleep_ms(POLL_INTERVAL_MS);
    }
    fail_msg("task %s never reached %s", task_id, status);
    return NULL;
}

/* ------------------------------------------------------------------------
 * Following tasks
 * ------------------------------------------------------------------------ */

static void test_task_completes(void **state)
{
    fixture_t *f = *state;
    int tasks = self_served_stat(f->c, "tasks"), direct = self_served_stat(f->c, "direct");
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "render", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "rendered as a task");
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
    assert_call_result_valid(r);
    json_decref(r);
    assert_int_equal(self_served_stat(f->c, "tasks"), tasks + 1);
    assert_int_equal(self_served_stat(f->c, "direct"), direct);
}

/* Two rounds of input inside the task: each question reaches the user
 * exactly once, and the handler runs once per round. */
static void test_task_input(void **state)
{
    fixture_t *f = *state;
    int runs = self_served_stat(f->c, "surveyRuns");
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "survey", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "Ada from Paris");
    assert_call_result_valid(r);
    json_decref(r);
    assert_int_equal(f->user.total, 2);
    assert_int_equal(json_integer_value(json_object_get(f->user.asked, "Your name?")), 1);
    assert_int_equal(json_integer_value(json_object_get(f->user.asked, "Your city?")), 1);
    assert_int_equal(self_served_stat(f->c, "surveyRuns"), runs + 3);
}

static void test_task_failed(void **state)
{
    fixture_t *f = *state;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "quota", NULL, NULL, &r, &err), MCP_ERPC);
    assert_null(r);
    assert_int_equal(err.code, -32042);
    assert_string_equal(err.message, "Quota exceeded");
    assert_int_equal(json_integer_value(json_object_get(err.data, "retryAfterMs")), 1000);
    mcp_error_clear(&err);
}

static void *cancel_after_300ms(void *arg)
{
    sleep_ms(300);
    mcp_cancel_trigger(arg);
    return NULL;
}

/* The caller's cancel ends the call, and the server's task is cancelled:
 * its handler sees it. */
static void test_task_cancelled_by_caller(void **state)
{
    fixture_t *f = *state;
    int before = self_served_stat(f->c, "sawCancel");
    mcp_cancel_t *cancel = mcp_cancel_new();
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_after_300ms, cancel), 0);
    json_t *r = NULL;
    mcp_error_t err = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(mcp_client_call_tool(f->c, "forever", NULL,
                                          &(mcp_request_options_t){.cancel = cancel}, &r, &err),
                     MCP_ECANCELED);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 5);
    pthread_join(th, NULL);
    mcp_cancel_free(cancel);
    mcp_error_clear(&err);
    self_served_await_stat(f->c, "sawCancel", before + 1);
}

/* ------------------------------------------------------------------------
 * Managing a task by hand
 * ------------------------------------------------------------------------ */

static void test_keep_task_and_task_calls(void **state)
{
    fixture_t *f = *state;
    json_t *created = NULL;
    mcp_error_t err = {0};
    const mcp_request_options_t keep = {.keep_task = true};
    assert_int_equal(mcp_client_call_tool(f->c, "survey", NULL, &keep, &created, &err), MCP_OK);
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(created, "CreateTaskResult", SCHEMA_EXT_TASKS);
    assert_string_equal(json_string_value(json_object_get(created, "resultType")), "task");
    assert_int_equal(json_integer_value(json_object_get(created, "pollIntervalMs")),
                     POLL_INTERVAL_MS);
    const char *id = json_string_value(json_object_get(created, "taskId"));

    /* The application answers; the elicit callback is not involved. */
    json_t *s = await_status(f->c, id, "input_required");
    assert_non_null(json_object_get(json_object_get(s, "inputRequests"), "name"));
    json_decref(s);
    json_t *answer = json_pack("{s:{s:s, s:{s:s}}}", "name", "action", "accept", "content",
                               "name", "Grace");
    assert_int_equal(mcp_client_task_update(f->c, id, answer, NULL, &err), MCP_OK);
    json_decref(answer);
    s = await_status(f->c, id, "input_required");
    assert_non_null(json_object_get(json_object_get(s, "inputRequests"), "city"));
    assert_null(json_object_get(json_object_get(s, "inputRequests"), "name"));
    json_decref(s);
    answer = json_pack("{s:{s:s, s:{s:s}}}", "city", "action", "accept", "content", "city",
                       "Arlington");
    assert_int_equal(mcp_client_task_update(f->c, id, answer, NULL, &err), MCP_OK);
    json_decref(answer);
    s = await_status(f->c, id, "completed");
    assert_string_equal(first_text(json_object_get(s, "result")), "Grace from Arlington");
    json_decref(s);
    assert_int_equal(f->user.total, 0);
    /* Cancelling a task that is over is acknowledged, and changes nothing. */
    assert_int_equal(mcp_client_task_cancel(f->c, id, NULL, &err), MCP_OK);
    s = await_status(f->c, id, "completed");
    json_decref(s);
    json_decref(created);

    /* A running task, cancelled by hand. */
    int before = self_served_stat(f->c, "sawCancel");
    assert_int_equal(mcp_client_call_tool(f->c, "forever", NULL, &keep, &created, &err), MCP_OK);
    id = json_string_value(json_object_get(created, "taskId"));
    assert_int_equal(mcp_client_task_cancel(f->c, id, NULL, &err), MCP_OK);
    json_decref(await_status(f->c, id, "cancelled"));
    self_served_await_stat(f->c, "sawCancel", before + 1);
    json_decref(created);

    /* A task the server does not know. */
    assert_int_equal(mcp_client_task_get(f->c, "no-such-task", NULL, &s, &err), MCP_ERPC);
    assert_int_equal(err.code, -32602);
    assert_null(s);
    mcp_error_clear(&err);
}

/* A kept task followed later by its id alone: its questions go to the
 * elicit callback as in a call, and its result is the call's; a task
 * that already ended gives its outcome at once. */
static void test_follow_by_id(void **state)
{
    fixture_t *f = *state;
    json_t *created = NULL, *r = NULL;
    mcp_error_t err = {0};
    const mcp_request_options_t keep = {.keep_task = true};
    assert_int_equal(mcp_client_call_tool(f->c, "survey", NULL, &keep, &created, &err), MCP_OK);
    const char *id = json_string_value(json_object_get(created, "taskId"));
    assert_int_equal(mcp_client_task_follow(f->c, id, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "Ada from Paris");
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
    assert_call_result_valid(r);
    assert_int_equal(f->user.total, 2);
    json_decref(r);
    r = NULL;
    /* Over already: the same result again, and no question. */
    assert_int_equal(mcp_client_task_follow(f->c, id, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "Ada from Paris");
    assert_int_equal(f->user.total, 2);
    json_decref(r);
    json_decref(created);

    /* A task that fails is the call's error. */
    assert_int_equal(mcp_client_call_tool(f->c, "quota", NULL, &keep, &created, &err), MCP_OK);
    id = json_string_value(json_object_get(created, "taskId"));
    r = NULL;
    assert_int_equal(mcp_client_task_follow(f->c, id, NULL, &r, &err), MCP_ERPC);
    assert_null(r);
    assert_int_equal(err.code, -32042);
    mcp_error_clear(&err);
    json_decref(created);

    /* A task the server does not know. */
    assert_int_equal(mcp_client_task_follow(f->c, "no-such-task", NULL, &r, &err), MCP_ERPC);
    assert_int_equal(err.code, -32602);
    assert_null(r);
    mcp_error_clear(&err);
}

/* Giving up on a task followed by its id ends the wait and leaves the
 * task running: whoever has the id decides its fate. */
static void test_follow_by_id_cancelled(void **state)
{
    fixture_t *f = *state;
    int before = self_served_stat(f->c, "sawCancel");
    json_t *created = NULL, *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "forever", NULL,
                                          &(mcp_request_options_t){.keep_task = true}, &created,
                                          &err),
                     MCP_OK);
    const char *id = json_string_value(json_object_get(created, "taskId"));
    mcp_cancel_t *cancel = mcp_cancel_new();
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, cancel_after_300ms, cancel), 0);
    assert_int_equal(mcp_client_task_follow(f->c, id, &(mcp_request_options_t){.cancel = cancel},
                                            &r, &err),
                     MCP_ECANCELED);
    assert_null(r);
    mcp_error_clear(&err);
    pthread_join(th, NULL);
    mcp_cancel_free(cancel);
    json_decref(await_status(f->c, id, "working"));
    assert_int_equal(self_served_stat(f->c, "sawCancel"), before);

    assert_int_equal(mcp_client_task_cancel(f->c, id, NULL, &err), MCP_OK);
    json_decref(await_status(f->c, id, "cancelled"));
    self_served_await_stat(f->c, "sawCancel", before + 1);
    json_decref(created);
}

/* ------------------------------------------------------------------------
 * Listening to a task
 * ------------------------------------------------------------------------ */

/* The notifications/tasks a subscription delivered: the states, in order. */
typedef struct heard {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    json_t *states;
    int other; /* notifications of any other method */
} heard_t;

static void on_task_event(void *user, const char *method, const json_t *params)
{
    heard_t *h = user;
    pthread_mutex_lock(&h->lock);
    if (strcmp(method, "notifications/tasks") == 0)
        json_array_append_new(h->states, json_deep_copy(params));
    else
        h->other++;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

/* Waits up to 5 s for a notified state with `status` (and, when `asking`
 * is not NULL, an input request of that key); a copy of it (new
 * reference). */
static json_t *await_heard(heard_t *h, const char *status, const char *asking)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    json_t *found = NULL;
    pthread_mutex_lock(&h->lock);
    while (!found) {
        size_t i;
        json_t *state;
        json_array_foreach(h->states, i, state) {
            if (strcmp(json_string_value(json_object_get(state, "status")), status) == 0 &&
                (!asking || json_object_get(json_object_get(state, "inputRequests"), asking))) {
                found = json_deep_copy(state);
                break;
            }
        }
        if (!found && pthread_cond_timedwait(&h->cond, &h->lock, &until) != 0)
            break;
    }
    pthread_mutex_unlock(&h->lock);
    if (!found)
        fail_msg("no notifications/tasks with status %s", status);
    return found;
}

/* A subscription with taskIds hears the task's states as they change --
 * the input it asks for, then its result -- with no polling. */
static void test_listen_to_task(void **state)
{
    fixture_t *f = *state;
    json_t *created = NULL;
    mcp_error_t err = {0};
    const mcp_request_options_t keep = {.keep_task = true};
    assert_int_equal(mcp_client_call_tool(f->c, "survey", NULL, &keep, &created, &err), MCP_OK);
    const char *id = json_string_value(json_object_get(created, "taskId"));

    heard_t h = {.states = json_array()};
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.cond, NULL);
    const char *const ids[] = {id};
    mcp_subscription_t *sub = NULL;
    json_t *honoured = NULL;
    int rc = mcp_client_listen(f->c, &(mcp_listen_filter_t){.task_ids = ids, .n_task_ids = 1},
                               on_task_event, &h, NULL, &sub, &honoured, &err);
    if (rc != MCP_OK)
        fail_msg("listen: %s", err.message);
    json_t *listed = json_object_get(honoured, "taskIds");
    assert_int_equal(json_array_size(listed), 1);
    assert_string_equal(json_string_value(json_array_get(listed, 0)), id);
    json_decref(honoured);

    /* The task waits for a name (maybe from before the subscription):
     * answered, it asks for the city, which the stream tells. */
    json_decref(await_status(f->c, id, "input_required"));
    json_t *answer = json_pack("{s:{s:s, s:{s:s}}}", "name", "action", "accept", "content",
                               "name", "Grace");
    assert_int_equal(mcp_client_task_update(f->c, id, answer, NULL, &err), MCP_OK);
    json_decref(answer);
    json_t *heard = await_heard(&h, "input_required", "city");
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(heard, "DetailedTask", SCHEMA_EXT_TASKS);
    assert_string_equal(json_string_value(json_object_get(heard, "taskId")), id);
    assert_non_null(json_object_get(json_object_get(heard, "inputRequests"), "city"));
    json_decref(heard);

    answer = json_pack("{s:{s:s, s:{s:s}}}", "city", "action", "accept", "content", "city",
                       "Arlington");
    assert_int_equal(mcp_client_task_update(f->c, id, answer, NULL, &err), MCP_OK);
    json_decref(answer);
    heard = await_heard(&h, "completed", NULL);
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(heard, "DetailedTask", SCHEMA_EXT_TASKS);
    assert_string_equal(first_text(json_object_get(heard, "result")), "Grace from Arlington");
    json_decref(heard);
    assert_int_equal(h.other, 0);
    mcp_subscription_close(sub);
    json_decref(h.states);
    pthread_cond_destroy(&h.cond);
    pthread_mutex_destroy(&h.lock);
    json_decref(created);

    /* Task ids need the extension declared. */
    mcp_client_t *plain = connect_client(f, false);
    assert_int_equal(mcp_client_listen(plain,
                                       &(mcp_listen_filter_t){.task_ids = ids, .n_task_ids = 1},
                                       on_task_event, &h, NULL, &sub, NULL, &err),
                     MCP_ESTATE);
    assert_null(sub);
    mcp_error_clear(&err);
    mcp_client_free(plain);
}

/* A server whose tasks ask to be polled every 5 s, and a client of it:
 * over HTTP the server runs in this process (*srv_out, *http_out), over
 * stdio in a child. */
static mcp_client_t *slow_poll_client(fixture_t *f, mcp_trace_fn trace, void *trace_user,
                                      mcp_server_t **srv_out, mcp_http_server_t **http_out)
{
    mcp_error_t err = {0};
    *srv_out = NULL;
    *http_out = NULL;
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "tasks-test", .version = "1.0", .era = MCP_CLIENT_ERA_MODERN, .tasks = true,
        .trace = trace, .trace_user = trace_user}, &err);
    assert_non_null(c);
    int rc;
    if (f->http) {
        *srv_out = make_server(5000);
        char url[64];
        self_served_http_start(*srv_out, http_out, url, sizeof url);
        rc = mcp_client_connect_http(c, &(mcp_http_target_t){.url = url}, &err);
    } else {
        rc = mcp_client_connect_stdio(
            c, &(mcp_stdio_target_t){.argv = (const char *const[]){self_served_path(),
                                                                   "--stdio-server", "5000",
                                                                   NULL}},
            &err);
    }
    if (rc != MCP_OK)
        fail_msg("connect: %s", err.message);
    return c;
}

static void slow_poll_client_free(mcp_client_t *c, mcp_server_t *srv, mcp_http_server_t *http)
{
    mcp_client_free(c);
    self_served_http_stop(srv, http);
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Following a task, the client listens for it: a server that asks to be
 * polled every 5 s still has its 150 ms task's result read at once, when
 * it notifies the end. */
static void test_follow_hears_the_end(void **state)
{
    mcp_server_t *srv;
    mcp_http_server_t *http;
    mcp_client_t *c = slow_poll_client(*state, NULL, NULL, &srv, &http);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "render", NULL, NULL, &r, &err), MCP_OK);
    long took_ms = ms_since(&t0);
    assert_string_equal(first_text(r), "rendered as a task");
    json_decref(r);
    if (took_ms >= 2500)
        fail_msg("the call took %ld ms: the task's end was not heard", took_ms);
    slow_poll_client_free(c, srv, http);
}

/* The subscriptions/listen requests the client sent: how many, and the
 * most task ids one of them named. */
typedef struct listens {
    atomic_int sent;
    atomic_int widest;
} listens_t;

static void count_listens(void *user, mcp_trace_direction_t direction, const char *text,
                          size_t len)
{
    listens_t *l = user;
    if (direction != MCP_TRACE_SENT)
        return;
    json_t *msg = json_loadb(text, len, 0, NULL);
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (method && strcmp(method, "subscriptions/listen") == 0) {
        atomic_fetch_add(&l->sent, 1);
        int n = (int)json_array_size(json_object_get(
            json_object_get(json_object_get(msg, "params"), "notifications"), "taskIds"));
        int widest = atomic_load(&l->widest);
        while (n > widest && !atomic_compare_exchange_weak(&l->widest, &widest, n))
            ;
    }
    json_decref(msg);
}

#define PARALLEL_CALLS 4

static void *call_render(void *arg)
{
    json_t *r = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_call_tool(arg, "render", NULL, NULL, &r, &err);
    bool ok = rc == MCP_OK && strcmp(first_text(r), "rendered as a task") == 0;
    json_decref(r);
    mcp_error_clear(&err);
    return ok ? arg : NULL;
}

/* Tasks followed at the same time share one subscription: one request
 * names several of them, and every call still hears its task's end. */
static void test_followed_tasks_share_a_subscription(void **state)
{
    listens_t listens = {0};
    mcp_server_t *srv;
    mcp_http_server_t *http;
    mcp_client_t *c = slow_poll_client(*state, count_listens, &listens, &srv, &http);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t threads[PARALLEL_CALLS];
    for (int i = 0; i < PARALLEL_CALLS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, call_render, c), 0);
    int ok = 0;
    for (int i = 0; i < PARALLEL_CALLS; i++) {
        void *result;
        pthread_join(threads[i], &result);
        ok += result != NULL;
    }
    long took_ms = ms_since(&t0);
    assert_int_equal(ok, PARALLEL_CALLS);
    if (took_ms >= 2500)
        fail_msg("the calls took %ld ms: the tasks' ends were not heard", took_ms);
    assert_true(atomic_load(&listens.sent) >= 1);
    assert_true(atomic_load(&listens.widest) >= 2);
    slow_poll_client_free(c, srv, http);
}

/* ------------------------------------------------------------------------
 * Without the option
 * ------------------------------------------------------------------------ */

static void test_tasks_off(void **state)
{
    fixture_t *f = *state;
    mcp_client_t *plain = connect_client(f, false);
    int tasks = self_served_stat(plain, "tasks"), direct = self_served_stat(plain, "direct");
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(plain, "render", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "rendered directly");
    assert_call_result_valid(r);
    json_decref(r);
    assert_int_equal(self_served_stat(plain, "tasks"), tasks);
    assert_int_equal(self_served_stat(plain, "direct"), direct + 1);

    /* A tool that must be a task needs the extension declared. */
    assert_int_equal(mcp_client_call_tool(plain, "must_task", NULL, NULL, &r, &err), MCP_ERPC);
    assert_int_equal(err.code, -32021);
    assert_non_null(json_object_get(
        json_object_get(json_object_get(err.data, "requiredCapabilities"), "extensions"),
        MCP_EXTENSION_TASKS));
    mcp_error_clear(&err);
    assert_int_equal(mcp_client_task_get(plain, "any", NULL, &r, &err), MCP_ESTATE);
    mcp_error_clear(&err);
    mcp_client_free(plain);

    /* The client that declares it gets the task, and follows it. */
    assert_int_equal(mcp_client_call_tool(f->c, "must_task", NULL, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "rendered as a task");
    json_decref(r);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--stdio-server") == 0)
        return serve_stdio(argc > 2 ? atoi(argv[2]) : POLL_INTERVAL_MS);
#define BOTH(test)                                                  \
    {#test " (HTTP)", test, setup_http, teardown, NULL},            \
        {#test " (stdio)", test, setup_stdio, teardown, NULL}
    const struct CMUnitTest tests[] = {
        BOTH(test_task_completes),
        BOTH(test_task_input),
        BOTH(test_task_failed),
        BOTH(test_task_cancelled_by_caller),
        BOTH(test_keep_task_and_task_calls),
        BOTH(test_follow_by_id),
        BOTH(test_follow_by_id_cancelled),
        BOTH(test_listen_to_task),
        BOTH(test_follow_hears_the_end),
        BOTH(test_followed_tasks_share_a_subscription),
        BOTH(test_tasks_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
