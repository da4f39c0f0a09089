/*
 * The client side of the Tasks extension (src/client/tasks.c) against a
 * scripted transport: declaring the extension, following a task through
 * its polls (intervals, input, the outcomes), giving up on it (cancel,
 * timeouts, invalid states), keep_task and the public task calls.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "client/client_internal.h"
#include "client_fake_transport.h"
#include "mcp/mcp.h"
#include "test_clock.h"

/* ------------------------------------------------------------------------
 * A server whose tools/call becomes task "t-1", and whose tasks/get
 * answers follow a script
 * ------------------------------------------------------------------------ */

#define TIMES "\"createdAt\":\"2026-07-28T10:00:00Z\",\"lastUpdatedAt\":\"2026-07-28T10:00:01Z\""

#define MAX_STATES 8

typedef struct server {
    const char *created;          /* the tools/call result (JSON) */
    const char *states[MAX_STATES]; /* the tasks/get results in turn; the last repeats */
    size_t polls;                 /* tasks/get seen */
    bool hang_polls;              /* leave tasks/get in flight */
    bool hang_listen;             /* never acknowledge subscriptions/listen */
} server_t;

static json_t *respond(void *user, fake_transport_t *ft, const json_t *req)
{
    (void)ft;
    server_t *s = user;
    const char *m = fake_method(req);
    if (strcmp(m, "server/discover") == 0)
        return fake_result(req, fake_discover_result());
    if (strcmp(m, "tools/call") == 0 || strcmp(m, "prompts/get") == 0)
        return fake_result(req, json_loads(s->created, 0, NULL));
    if (strcmp(m, "tasks/get") == 0) {
        if (s->hang_polls)
            return NULL;
        size_t n = 0;
        while (n < MAX_STATES && s->states[n])
            n++;
        if (n == 0)
            return fake_error(req, -32602, "Unknown task", NULL);
        const char *state = s->states[s->polls < n ? s->polls : n - 1];
        s->polls++;
        return fake_result(req, json_loads(state, 0, NULL));
    }
    if (strcmp(m, "subscriptions/listen") == 0 && s->hang_listen)
        return NULL;
    if (strcmp(m, "tasks/update") == 0 || strcmp(m, "tasks/cancel") == 0)
        return fake_result(req, json_pack("{s:s}", "resultType", "complete"));
    return fake_error(req, -32601, "Method not found", NULL);
}

/* The user: answers every form with {"name": "Ada"}, counting per message. */
typedef struct user {
    int asked;
    json_t *messages;             /* message -> times asked */
} user_t;

static int elicit(void *arg, const json_t *params, json_t **out)
{
    user_t *u = arg;
    u->asked++;
    const char *message = json_string_value(json_object_get(params, "message"));
    json_int_t n = json_integer_value(json_object_get(u->messages, message));
    json_object_set_new(u->messages, message, json_integer(n + 1));
    *out = json_pack("{s:s, s:{s:s}}", "action", "accept", "content", "name", "Ada");
    return 0;
}

typedef struct fixture {
    server_t server;
    user_t user;
    fake_transport_t *ft;
    mcp_client_t *c;
} fixture_t;

static void connect_client(fixture_t *f, bool tasks, int max_input_rounds)
{
    f->c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1", .tasks = tasks,
                                                  .max_input_rounds = max_input_rounds,
                                                  .elicit = elicit, .elicit_user = &f->user},
                          NULL);
    assert_non_null(f->c);
    f->ft = fake_transport_connect(f->c, respond, &f->server);
    assert_non_null(f->ft);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->user.messages = json_object();
    f->server.created = "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"working\","
                        TIMES ",\"ttlMs\":60000,\"pollIntervalMs\":10}";
    connect_client(f, true, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->c);
    json_decref(f->user.messages);
    free(f);
    return 0;
}

static int call(fixture_t *f, const mcp_request_options_t *opts, json_t **result,
                mcp_error_t *err)
{
    return mcp_client_call_tool(f->c, "slow", NULL, opts, result, err);
}

#define WORKING "{\"resultType\":\"complete\",\"taskId\":\"t-1\",\"status\":\"working\"," \
                TIMES ",\"ttlMs\":60000}"
#define COMPLETED "{\"resultType\":\"complete\",\"taskId\":\"t-1\",\"status\":\"completed\"," \
                  TIMES ",\"ttlMs\":60000,\"result\":{\"content\":[{\"type\":\"text\"," \
                  "\"text\":\"done\"}],\"isError\":false}}"

/* ------------------------------------------------------------------------
 * Declaring the extension
 * ------------------------------------------------------------------------ */

static const json_t *extensions_of(const json_t *request)
{
    const json_t *meta = json_object_get(fake_params(request), "_meta");
    return json_object_get(json_object_get(meta, MCP_META_CLIENT_CAPABILITIES), "extensions");
}

static void test_declared_only_with_the_option(void **state)
{
    fixture_t *f = *state;
    f->server.states[0] = COMPLETED;
    json_t *r = NULL;
    assert_int_equal(call(f, NULL, &r, NULL), MCP_OK);
    json_decref(r);
    /* Every request, the probe and the polls too, declares it... */
    json_t *declared = json_pack("{s:{}}", MCP_EXTENSION_TASKS);
    json_t *all = fake_requests(f->ft);
    /* discover, tools/call, the subscription to the task (which this
     * server refuses: it is polled alone), tasks/get */
    assert_int_equal(json_array_size(all), 4);
    const json_t *listen = json_array_get(all, 2);
    assert_string_equal(fake_method(listen), "subscriptions/listen");
    const json_t *ids = json_object_get(json_object_get(fake_params(listen), "notifications"),
                                        "taskIds");
    assert_int_equal(json_array_size(ids), 1);
    assert_string_equal(json_string_value(json_array_get(ids, 0)), "t-1");
    assert_string_equal(fake_method(json_array_get(all, 3)), "tasks/get");
    size_t i;
    json_t *req;
    json_array_foreach(all, i, req)
        assert_true(json_equal(extensions_of(req), declared));
    json_decref(all);
    json_decref(declared);
    /* ... and the legacy capabilities never do. */
    assert_null(json_object_get(f->c->legacy_capabilities, "extensions"));

    fixture_t off = {.server = f->server};
    connect_client(&off, false, 0);
    all = fake_requests(off.ft);
    assert_null(extensions_of(json_array_get(all, 0)));
    json_decref(all);
    mcp_client_free(off.c);
}

/* Other extensions come from the options' JSON text, next to tasks; text
 * that is not an object of objects is refused. */
static void test_other_extensions_declared(void **state)
{
    fixture_t *f = *state;
    fixture_t other = {.server = f->server};
    other.c = mcp_client_new(
        &(mcp_client_options_t){.name = "t", .version = "1", .tasks = true,
                                .extensions = "{\"" MCP_EXTENSION_OAUTH_CLIENT_CREDENTIALS
                                              "\":{},\"x.example/ext\":{\"level\":2}}"},
        NULL);
    assert_non_null(other.c);
    other.ft = fake_transport_connect(other.c, respond, &other.server);
    assert_non_null(other.ft);
    json_t *all = fake_requests(other.ft);
    json_t *want = json_pack("{s:{}, s:{}, s:{s:i}}", MCP_EXTENSION_TASKS,
                             MCP_EXTENSION_OAUTH_CLIENT_CREDENTIALS, "x.example/ext", "level", 2);
    assert_true(json_equal(extensions_of(json_array_get(all, 0)), want));
    json_decref(want);
    json_decref(all);
    assert_null(json_object_get(other.c->legacy_capabilities, "extensions"));
    mcp_client_free(other.c);

    static const char *const bad[] = {"[]", "{\"x\":true}", "{\"\":{}}", "{", "{\"a\":{},\"a\":{}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_t err = {0};
        assert_null(mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1",
                                                           .extensions = bad[i]},
                                   &err));
        assert_non_null(strstr(err.message, "extensions"));
        mcp_error_clear(&err);
    }
}

/* ------------------------------------------------------------------------
 * Following a task
 * ------------------------------------------------------------------------ */

static void test_followed_to_completion(void **state)
{
    fixture_t *f = *state;
    f->server.states[0] = WORKING;
    f->server.states[1] = WORKING;
    f->server.states[2] = COMPLETED;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(call(f, NULL, &r, &err), MCP_OK);
    /* The task's result, as a direct call gives it. */
    json_t *expected = json_pack("{s:s, s:[{s:s, s:s}], s:b}", "resultType", "complete",
                                 "content", "type", "text", "text", "done", "isError", 0);
    assert_true(json_equal(r, expected));
    json_decref(expected);
    json_decref(r);

    json_t *polls = fake_requests_of(f->ft, "tasks/get");
    assert_int_equal(json_array_size(polls), 3);
    size_t i;
    json_t *p;
    json_array_foreach(polls, i, p) {
        assert_string_equal(json_string_value(json_object_get(fake_params(p), "taskId")), "t-1");
        /* Polls carry no progress token: tasks report no progress. */
        assert_null(json_object_get(json_object_get(fake_params(p), "_meta"), "progressToken"));
    }
    json_decref(polls);
    /* Over HTTP the task id is the Mcp-Name of task requests. */
    json_t *hints = fake_hints(f->ft);
    json_t *last = json_array_get(hints, json_array_size(hints) - 1);
    assert_string_equal(json_string_value(json_object_get(last, "method")), "tasks/get");
    assert_string_equal(json_string_value(json_object_get(last, "name")), "t-1");
    json_decref(hints);
    assert_int_equal(fake_count(f->ft, "tasks/cancel"), 0);
    assert_int_equal(fake_outstanding(f->ft), 0);
}

/* The server's pollIntervalMs paces the polls, the latest value counting,
 * kept at 10 ms at least; without one the client waits a second. */
static void test_poll_interval(void **state)
{
    fixture_t *f = *state;
    f->server.created = "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"working\","
                        TIMES ",\"ttlMs\":null,\"pollIntervalMs\":0}";
    f->server.states[0] = "{\"taskId\":\"t-1\",\"status\":\"working\"," TIMES
                          ",\"ttlMs\":null,\"pollIntervalMs\":150}";
    f->server.states[1] = WORKING; /* no interval: the last one stands */
    f->server.states[2] = COMPLETED;
    int64_t t0 = now_ms();
    json_t *r = NULL;
    assert_int_equal(call(f, NULL, &r, NULL), MCP_OK);
    int64_t took = now_ms() - t0;
    json_decref(r);
    /* 10 (0 raised to the minimum), then 150 twice. */
    assert_true(took >= 310);
    assert_true(took < 1000);
    assert_int_equal(f->server.polls, 3);

    f->server.created = "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"working\","
                        TIMES ",\"ttlMs\":null}";
    f->server.states[0] = COMPLETED;
    f->server.polls = 0;
    t0 = now_ms();
    assert_int_equal(call(f, NULL, &r, NULL), MCP_OK);
    took = now_ms() - t0;
    json_decref(r);
    assert_true(took >= 1000);
    assert_true(took < 3000);
}

/* What the client logs, and a wait for a line that contains a phrase. */
typedef struct log_tap {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char lines[4096];
} log_tap_t;

static void tap_log(void *user, mcp_log_level_t level, const char *msg)
{
    (void)level;
    log_tap_t *tap = user;
    pthread_mutex_lock(&tap->lock);
    size_t len = strlen(tap->lines);
    snprintf(tap->lines + len, sizeof tap->lines - len, "%s\n", msg);
    pthread_cond_broadcast(&tap->cond);
    pthread_mutex_unlock(&tap->lock);
}

static bool tap_wait(log_tap_t *tap, const char *phrase, int ms)
{
    struct timespec until = time_in(CLOCK_REALTIME, ms);
    pthread_mutex_lock(&tap->lock);
    while (!strstr(tap->lines, phrase) &&
           pthread_cond_timedwait(&tap->cond, &tap->lock, &until) == 0)
        ;
    bool found = strstr(tap->lines, phrase) != NULL;
    pthread_mutex_unlock(&tap->lock);
    return found;
}

typedef struct slow_poll {
    log_tap_t *tap;
    mcp_cancel_t *cancel;
} slow_poll_t;

/* Cancels the call once it said how long it waits (or after 2 s). */
static void *cancel_once_paced(void *arg)
{
    slow_poll_t *sp = arg;
    tap_wait(sp->tap, "polling every", 2000);
    mcp_cancel_trigger(sp->cancel);
    return NULL;
}

/* A server that asks to be polled every two minutes is (digest 8.2:
 * clients SHOULD honour pollIntervalMs; a faster client may be rate
 * limited): the wait the client takes is the server's, not a cap of its
 * own. Read from the client's log, so the test need not wait it out. */
static void test_long_poll_interval_honoured(void **state)
{
    fixture_t *f = *state;
    log_tap_t tap = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1",
                                                             .tasks = true, .log = tap_log,
                                                             .log_user = &tap},
                                     NULL);
    assert_non_null(c);
    fake_transport_t *ft = fake_transport_connect(c, respond, &f->server);
    assert_non_null(ft);
    f->server.created = "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"working\","
                        TIMES ",\"ttlMs\":null,\"pollIntervalMs\":120000}";
    f->server.states[0] = COMPLETED;
    slow_poll_t sp = {&tap, mcp_cancel_new()};
    pthread_t th;
    pthread_create(&th, NULL, cancel_once_paced, &sp);
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "slow", NULL,
                                          &(mcp_request_options_t){.cancel = sp.cancel}, &r,
                                          &err),
                     MCP_ECANCELED);
    pthread_join(th, NULL);
    mcp_cancel_free(sp.cancel);
    mcp_error_clear(&err);
    if (!tap_wait(&tap, "polling every 120000 ms", 0))
        fail_msg("the client did not take the server's interval; it logged:\n%s", tap.lines);
    assert_int_equal(fake_count(ft, "tasks/get"), 0); /* cancelled during the wait */
    assert_int_equal(fake_count(ft, "tasks/cancel"), 1);
    mcp_client_free(c);
}

/* A task created already over is asked for its outcome at once. */
/* A server that takes the task's subscription but never acknowledges it
 * delays the first poll by no more than the poll interval: the wait for
 * the acknowledgement is bounded by it, not by the client's timeout. */
static void test_unacknowledged_listen(void **state)
{
    fixture_t *f = *state;
    f->server.created = "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"working\","
                        TIMES ",\"ttlMs\":null,\"pollIntervalMs\":100}";
    f->server.states[0] = COMPLETED;
    f->server.hang_listen = true;
    int64_t t0 = now_ms();
    json_t *r = NULL;
    assert_int_equal(call(f, NULL, &r, NULL), MCP_OK);
    int64_t took = now_ms() - t0;
    json_decref(r);
    /* 100 ms for the acknowledgement, 100 to the poll. */
    assert_true(took >= 200);
    assert_true(took < 2000);
    assert_int_equal(f->server.polls, 1);
}

static void test_created_over_polled_at_once(void **state)
{
    fixture_t *f = *state;
    f->server.created = "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"completed\","
                        TIMES ",\"ttlMs\":null,\"pollIntervalMs\":5000}";
    f->server.states[0] = COMPLETED;
    int64_t t0 = now_ms();
    json_t *r = NULL;
    assert_int_equal(call(f, NULL, &r, NULL), MCP_OK);
    assert_true(now_ms() - t0 < 2500);
    json_decref(r);
}

#define INPUT(requests) "{\"taskId\":\"t-1\",\"status\":\"input_required\"," TIMES \
                        ",\"ttlMs\":60000,\"inputRequests\":{" requests "}}"
#define ASK(key, message) "\"" key "\":{\"method\":\"elicitation/create\",\"params\":{" \
                          "\"message\":\"" message "\",\"requestedSchema\":{\"type\":\"object\"}}}"

/* Each input request is put to the user once, however many polls show it
 * before the server took the answer; each tasks/update carries the new
 * answers only. */
static void test_inputs_answered_once(void **state)
{
    fixture_t *f = *state;
    f->server.states[0] = INPUT(ASK("name", "Your name?"));
    f->server.states[1] = INPUT(ASK("name", "Your name?")); /* not taken yet */
    f->server.states[2] = WORKING;
    f->server.states[3] = INPUT(ASK("name", "Your name?") "," ASK("city", "Your city?"));
    f->server.states[4] = INPUT(ASK("city", "Your city?"));
    f->server.states[5] = COMPLETED;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(call(f, NULL, &r, &err), MCP_OK);
    json_decref(r);
    assert_int_equal(f->server.polls, 6);
    assert_int_equal(f->user.asked, 2);
    assert_int_equal(json_integer_value(json_object_get(f->user.messages, "Your name?")), 1);
    assert_int_equal(json_integer_value(json_object_get(f->user.messages, "Your city?")), 1);

    json_t *updates = fake_requests_of(f->ft, "tasks/update");
    assert_int_equal(json_array_size(updates), 2);
    json_t *first = json_object_get(fake_params(json_array_get(updates, 0)), "inputResponses");
    json_t *second = json_object_get(fake_params(json_array_get(updates, 1)), "inputResponses");
    assert_string_equal(json_string_value(json_object_get(
                            fake_params(json_array_get(updates, 0)), "taskId")),
                        "t-1");
    assert_int_equal(json_object_size(first), 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(first, "name"),
                                                          "action")),
                        "accept");
    assert_int_equal(json_object_size(second), 1);
    assert_non_null(json_object_get(second, "city"));
    json_decref(updates);
}

/* max_input_rounds bounds the updates of a task: the client gives up and
 * cancels it. */
static void test_input_limit(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->c);
    connect_client(f, true, 2);
    f->server.states[0] = INPUT(ASK("a", "A?"));
    f->server.states[1] = INPUT(ASK("b", "B?"));
    f->server.states[2] = INPUT(ASK("c", "C?"));
    f->server.states[3] = COMPLETED;
    mcp_error_t err = {0};
    json_t *r = NULL;
    assert_int_equal(call(f, NULL, &r, &err), MCP_ELIMIT);
    assert_null(r);
    assert_int_equal(f->user.asked, 2);
    assert_int_equal(fake_count(f->ft, "tasks/update"), 2);
    assert_int_equal(fake_count(f->ft, "tasks/cancel"), 1);
    mcp_error_clear(&err);
}

/* Input the client did not declare is never invented: the call fails and
 * the task is cancelled. */
static void test_undeclared_input_abandons(void **state)
{
    fixture_t *f = *state;
    f->server.states[0] = INPUT("\"s\":{\"method\":\"sampling/createMessage\",\"params\":{"
                                "\"messages\":[],\"maxTokens\":5}}");
    mcp_error_t err = {0};
    json_t *r = NULL;
    assert_int_equal(call(f, NULL, &r, &err), MCP_EPROTO);
    assert_non_null(strstr(err.message, "sampling/createMessage"));
    assert_int_equal(fake_count(f->ft, "tasks/update"), 0);
    json_t *cancels = fake_requests_of(f->ft, "tasks/cancel");
    assert_int_equal(json_array_size(cancels), 1);
    assert_string_equal(json_string_value(json_object_get(
                            fake_params(json_array_get(cancels, 0)), "taskId")),
                        "t-1");
    json_decref(cancels);
    mcp_error_clear(&err);
}

static void test_failed_task(void **state)
{
    fixture_t *f = *state;
    f->server.states[0] = WORKING;
    f->server.states[1] = "{\"taskId\":\"t-1\",\"status\":\"failed\"," TIMES
                          ",\"ttlMs\":60000,\"statusMessage\":\"quota\",\"error\":{"
                          "\"code\":-32042,\"message\":\"Quota exceeded\",\"data\":{\"left\":0}}}";
    mcp_error_t err = {0};
    json_t *r = NULL;
    assert_int_equal(call(f, NULL, &r, &err), MCP_ERPC);
    assert_null(r);
    assert_int_equal(err.code, -32042);
    assert_string_equal(err.message, "Quota exceeded");
    assert_int_equal(json_integer_value(json_object_get(err.data, "left")), 0);
    assert_int_equal(fake_count(f->ft, "tasks/cancel"), 0); /* over: nothing to cancel */
    mcp_error_clear(&err);
}

static void test_cancelled_by_the_server(void **state)
{
    fixture_t *f = *state;
    f->server.states[0] = "{\"taskId\":\"t-1\",\"status\":\"cancelled\"," TIMES
                          ",\"ttlMs\":60000,\"statusMessage\":\"shutting down\"}";
    mcp_error_t err = {0};
    json_t *r = NULL;
    assert_int_equal(call(f, NULL, &r, &err), MCP_ECANCELED);
    assert_non_null(strstr(err.message, "shutting down"));
    assert_int_equal(fake_count(f->ft, "tasks/cancel"), 0);
    mcp_error_clear(&err);
}

/* ------------------------------------------------------------------------
 * Giving up
 * ------------------------------------------------------------------------ */

static void *cancel_after_100ms(void *arg)
{
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    mcp_cancel_trigger(arg);
    return NULL;
}

/* The caller's cancel ends the call at once, whether it comes while the
 * client waits between polls or while a poll is in flight, and the server
 * is told with tasks/cancel. */
static void test_cancel_while_following(void **state)
{
    fixture_t *f = *state;
    for (int in_flight = 0; in_flight < 2; in_flight++) {
        f->server.created = in_flight ? "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":"
                                        "\"working\"," TIMES ",\"ttlMs\":1,\"pollIntervalMs\":10}"
                                      : "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":"
                                        "\"working\"," TIMES ",\"ttlMs\":1,\"pollIntervalMs\":"
                                        "60000}";
        f->server.hang_polls = in_flight;
        f->server.states[0] = WORKING;
        mcp_cancel_t *cancel = mcp_cancel_new();
        pthread_t th;
        pthread_create(&th, NULL, cancel_after_100ms, cancel);
        int64_t t0 = now_ms();
        json_t *r = NULL;
        mcp_error_t err = {0};
        assert_int_equal(call(f, &(mcp_request_options_t){.cancel = cancel, .timeout_ms = -1},
                              &r, &err),
                         MCP_ECANCELED);
        assert_true(now_ms() - t0 < 5000);
        pthread_join(th, NULL);
        mcp_cancel_free(cancel);
        assert_int_equal(fake_count(f->ft, "tasks/cancel"), (size_t)in_flight + 1);
        assert_int_equal(fake_count(f->ft, "tasks/get"), (size_t)in_flight);
        assert_int_equal(fake_outstanding(f->ft), 0);
        mcp_error_clear(&err);
    }
}

/* The timeout bounds each request, not the task: a task that outlives it
 * completes, a poll that takes longer fails the call (and cancels the
 * task). */
static void test_timeout_per_request(void **state)
{
    fixture_t *f = *state;
    f->server.created = "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"working\","
                        TIMES ",\"ttlMs\":1,\"pollIntervalMs\":40}";
    for (int i = 0; i < 4; i++)
        f->server.states[i] = WORKING;
    f->server.states[4] = COMPLETED;
    const mcp_request_options_t opts = {.timeout_ms = 60};
    int64_t t0 = now_ms();
    json_t *r = NULL;
    assert_int_equal(call(f, &opts, &r, NULL), MCP_OK);
    assert_true(now_ms() - t0 >= 200);
    json_decref(r);

    f->server.hang_polls = true;
    mcp_error_t err = {0};
    assert_int_equal(call(f, &opts, &r, &err), MCP_ETIMEDOUT);
    assert_int_equal(fake_count(f->ft, "tasks/cancel"), 1);
    assert_int_equal(fake_outstanding(f->ft), 0);
    mcp_error_clear(&err);
}

/* A state the client cannot trust ends the call as an invalid response,
 * and the task is cancelled. */
static void test_invalid_states(void **state)
{
    fixture_t *f = *state;
    static const char *const states[] = {
        "{\"taskId\":\"t-2\",\"status\":\"working\"," TIMES ",\"ttlMs\":1}",
        "{\"taskId\":\"t-1\",\"status\":\"paused\"," TIMES ",\"ttlMs\":1}",
        "{\"taskId\":\"t-1\",\"status\":\"completed\"," TIMES ",\"ttlMs\":1}",
        "{\"taskId\":\"t-1\",\"status\":\"failed\"," TIMES ",\"ttlMs\":1}",
        "{\"taskId\":\"t-1\",\"status\":\"input_required\"," TIMES ",\"ttlMs\":1}",
        /* tasks/get is no task-creating method */
        "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"working\"," TIMES
        ",\"ttlMs\":1}",
    };
    /* A client that took the state would go on to the end. */
    f->server.states[1] = COMPLETED;
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        f->server.states[0] = states[i];
        f->server.polls = 0;
        size_t cancels = fake_count(f->ft, "tasks/cancel");
        mcp_error_t err = {0};
        json_t *r = NULL;
        assert_int_equal(call(f, NULL, &r, &err), MCP_EPROTO);
        assert_null(r);
        assert_int_equal(err.code, 0);
        assert_int_equal(fake_count(f->ft, "tasks/cancel"), cancels + 1);
        mcp_error_clear(&err);
    }
}

static void test_invalid_created(void **state)
{
    fixture_t *f = *state;
    static const char *const created[] = {
        "{\"resultType\":\"task\",\"status\":\"working\"," TIMES ",\"ttlMs\":1}",
        "{\"resultType\":\"task\",\"taskId\":9,\"status\":\"working\"," TIMES ",\"ttlMs\":1}",
        "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"ready\"," TIMES
        ",\"ttlMs\":1}",
        "{\"resultType\":\"task\",\"taskId\":\"t-1\",\"status\":\"working\",\"ttlMs\":1}",
    };
    for (size_t i = 0; i < sizeof created / sizeof created[0]; i++) {
        f->server.created = created[i];
        json_t *r = NULL;
        assert_int_equal(call(f, NULL, &r, NULL), MCP_EPROTO);
        assert_null(r);
    }
    assert_int_equal(fake_count(f->ft, "tasks/get"), 0);
}

/* Without the option, resultType "task" is an invalid response; with it,
 * only tools/call may be answered with a task. */
static void test_task_where_none_may_be(void **state)
{
    fixture_t *f = *state;
    f->server.states[0] = COMPLETED; /* what following would reach */
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_get_prompt(f->c, "p", NULL, NULL, &r, &err), MCP_EPROTO);
    assert_non_null(strstr(err.message, "prompts/get"));
    mcp_error_clear(&err);

    fixture_t off = {.server = f->server};
    connect_client(&off, false, 0);
    assert_int_equal(call(&off, NULL, &r, &err), MCP_EPROTO);
    assert_null(r);
    assert_non_null(strstr(err.message, "did not declare the Tasks extension"));
    assert_int_equal(fake_count(off.ft, "tasks/get"), 0);
    assert_int_equal(fake_count(off.ft, "tasks/cancel"), 0);
    mcp_error_clear(&err);
    mcp_client_free(off.c);
    assert_int_equal(fake_count(f->ft, "tasks/get"), 0);
}

/* ------------------------------------------------------------------------
 * keep_task and the public task calls
 * ------------------------------------------------------------------------ */

static void test_keep_task(void **state)
{
    fixture_t *f = *state;
    json_t *r = NULL;
    assert_int_equal(call(f, &(mcp_request_options_t){.keep_task = true}, &r, NULL), MCP_OK);
    json_t *expected = json_loads(f->server.created, 0, NULL);
    assert_true(json_equal(r, expected));
    json_decref(expected);
    json_decref(r);
    assert_int_equal(fake_count(f->ft, "tasks/get"), 0);

    /* A result that is not a task is the result, keep_task or not. */
    f->server.created = "{\"resultType\":\"complete\",\"content\":[]}";
    assert_int_equal(call(f, &(mcp_request_options_t){.keep_task = true}, &r, NULL), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
    json_decref(r);
}

static void test_task_calls(void **state)
{
    fixture_t *f = *state;
    f->server.states[0] = INPUT(ASK("name", "Your name?"));
    json_t *r = NULL;
    assert_int_equal(mcp_client_task_get(f->c, "t-1", NULL, &r, NULL), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "input_required");
    assert_non_null(json_object_get(json_object_get(r, "inputRequests"), "name"));
    json_decref(r);
    assert_int_equal(f->user.asked, 0); /* managing the task is the application's part */

    json_t *answers = json_pack("{s:{s:s}}", "name", "action", "decline");
    assert_int_equal(mcp_client_task_update(f->c, "t-1", answers, NULL, NULL), MCP_OK);
    assert_int_equal(mcp_client_task_cancel(f->c, "t-1", NULL, NULL), MCP_OK);
    json_t *update = fake_requests_of(f->ft, "tasks/update");
    json_t *cancel = fake_requests_of(f->ft, "tasks/cancel");
    json_t *up = fake_params(json_array_get(update, 0));
    assert_string_equal(json_string_value(json_object_get(up, "taskId")), "t-1");
    assert_true(json_equal(json_object_get(up, "inputResponses"), answers));
    assert_string_equal(json_string_value(json_object_get(
                            fake_params(json_array_get(cancel, 0)), "taskId")),
                        "t-1");
    json_decref(update);
    json_decref(cancel);

    /* The state of another task, or one missing the member of its status,
     * is invalid. */
    assert_int_equal(mcp_client_task_get(f->c, "t-9", NULL, &r, NULL), MCP_EPROTO);
    assert_null(r);
    f->server.states[0] = "{\"taskId\":\"t-1\",\"status\":\"completed\"," TIMES ",\"ttlMs\":1}";
    assert_int_equal(mcp_client_task_get(f->c, "t-1", NULL, &r, NULL), MCP_EPROTO);
    /* A failed task is a state like any other. */
    f->server.states[0] = "{\"taskId\":\"t-1\",\"status\":\"failed\"," TIMES
                          ",\"ttlMs\":1,\"error\":{\"code\":-1,\"message\":\"m\"}}";
    assert_int_equal(mcp_client_task_get(f->c, "t-1", NULL, &r, NULL), MCP_OK);
    json_decref(r);

    /* Arguments */
    json_t *before = fake_requests(f->ft);
    size_t sent = json_array_size(before);
    json_decref(before);
    assert_int_equal(mcp_client_task_get(NULL, "t-1", NULL, &r, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_task_get(f->c, NULL, NULL, &r, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_task_get(f->c, "t-1", NULL, NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_task_update(f->c, "t-1", NULL, NULL, NULL), MCP_EINVAL);
    json_t *array = json_array();
    assert_int_equal(mcp_client_task_update(f->c, "t-1", array, NULL, NULL), MCP_EINVAL);
    json_decref(array);
    assert_int_equal(mcp_client_task_cancel(f->c, NULL, NULL, NULL), MCP_EINVAL);

    /* A client that does not declare the extension cannot use it. */
    fixture_t off = {.server = f->server};
    connect_client(&off, false, 0);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_task_get(off.c, "t-1", NULL, &r, &err), MCP_ESTATE);
    assert_non_null(strstr(err.message, "option tasks"));
    assert_int_equal(mcp_client_task_update(off.c, "t-1", answers, NULL, NULL), MCP_ESTATE);
    assert_int_equal(mcp_client_task_cancel(off.c, "t-1", NULL, NULL), MCP_ESTATE);
    assert_int_equal(fake_count(off.ft, "tasks/get") + fake_count(off.ft, "tasks/update") +
                         fake_count(off.ft, "tasks/cancel"),
                     0);
    mcp_error_clear(&err);
    mcp_client_free(off.c);
    json_t *after = fake_requests(f->ft);
    assert_int_equal(json_array_size(after), sent);
    json_decref(after);
    json_decref(answers);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_declared_only_with_the_option, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_extensions_declared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_followed_to_completion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_poll_interval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_poll_interval_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unacknowledged_listen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_created_over_polled_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inputs_answered_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undeclared_input_abandons, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_task, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_by_the_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_while_following, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_per_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_states, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_created, setup, teardown),
        cmocka_unit_test_setup_teardown(test_task_where_none_may_be, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_task, setup, teardown),
        cmocka_unit_test_setup_teardown(test_task_calls, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
