/*
 * The client against examples/notes_server over stdio: every call type,
 * pagination helpers, progress, cancellation, timeouts, MRTR, concurrency,
 * listen, the server exiting under a call, restart, stderr, a log message
 * before the first request.
 */
#define _GNU_SOURCE /* mkdtemp, kill, clock_gettime with -std=c11 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/client.h"
#include "mcp/mcp.h"
#include "schema_check.h"

#ifndef MCP_NOTES_SERVER
#error "MCP_NOTES_SERVER must name the notes_server binary"
#endif

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Checks a result against the schema, as the server's response to `method`. */
static void assert_result_valid(const json_t *result, const char *method)
{
    json_t *msg = json_pack("{s:s, s:i, s:O}", "jsonrpc", "2.0", "id", 1, "result", result);
    MCP_ASSERT_SCHEMA_VALID(msg, method, "2026-07-28");
    json_decref(msg);
}

static const char *first_text(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

/* ------------------------------------------------------------------------
 * Elicitation answers for delete_note
 * ------------------------------------------------------------------------ */

typedef struct elicit_script {
    const char *action;
    int calls;
    char message[256];
} elicit_script_t;

static int elicit(void *user, const json_t *params, json_t **result_out)
{
    elicit_script_t *s = user;
    s->calls++;
    snprintf(s->message, sizeof s->message, "%s",
             json_string_value(json_object_get(params, "message")));
    if (strcmp(s->action, "accept") == 0)
        *result_out = json_pack("{s:s, s:{s:b}}", "action", "accept", "content", "confirm", 1);
    else
        *result_out = json_pack("{s:s}", "action", s->action);
    return 0;
}

static elicit_script_t script = {"accept", 0, ""};

static mcp_client_t *connect_to(const char *const *argv, const mcp_stdio_target_t *extra)
{
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "integration", .version = "1.0",
        .elicit = elicit, .elicit_user = &script}, &err);
    assert_non_null(c);
    mcp_stdio_target_t target = extra ? *extra : (mcp_stdio_target_t){0};
    target.argv = argv;
    int rc = mcp_client_connect_stdio(c, &target, &err);
    if (rc != MCP_OK)
        fail_msg("connect: %s", err.message);
    mcp_error_clear(&err);
    return c;
}

static const char *const notes_argv[] = {MCP_NOTES_SERVER, NULL};

static int setup(void **state)
{
    *state = connect_to(notes_argv, NULL);
    return 0;
}

static int teardown(void **state)
{
    mcp_client_free(*state);
    return 0;
}

/* ------------------------------------------------------------------------
 * Every call type
 * ------------------------------------------------------------------------ */

static void test_identity_and_discover(void **state)
{
    mcp_client_t *c = *state;
    assert_int_equal(mcp_client_era(c), MCP_ERA_MODERN);
    assert_string_equal(mcp_client_protocol_version(c), "2026-07-28");
    assert_string_equal(json_string_value(json_object_get(mcp_client_server_info(c), "name")),
                        "notes-server");
    assert_non_null(json_object_get(mcp_client_server_capabilities(c), "tools"));
    assert_non_null(strstr(mcp_client_instructions(c), "notes"));

    json_t *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_discover(c, NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "server/discover");
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
    json_decref(result);
}

static void test_lists(void **state)
{
    mcp_client_t *c = *state;
    mcp_error_t err = {0};
    json_t *page = NULL, *all = NULL;

    assert_int_equal(mcp_client_list_tools(c, NULL, NULL, &page, &err), MCP_OK);
    assert_result_valid(page, "tools/list");
    assert_int_equal(mcp_client_list_tools_all(c, NULL, &all, &err), MCP_OK);
    assert_int_equal(json_array_size(all), json_array_size(json_object_get(page, "tools")));
    assert_true(json_array_size(all) >= 5);
    json_decref(page);
    json_decref(all);

    assert_int_equal(mcp_client_list_resources(c, NULL, NULL, &page, &err), MCP_OK);
    assert_result_valid(page, "resources/list");
    json_decref(page);
    assert_int_equal(mcp_client_list_resources_all(c, NULL, &all, &err), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "uri")),
                        "notes://index");
    json_decref(all);

    assert_int_equal(mcp_client_list_resource_templates(c, NULL, NULL, &page, &err), MCP_OK);
    assert_result_valid(page, "resources/templates/list");
    json_decref(page);
    assert_int_equal(mcp_client_list_resource_templates_all(c, NULL, &all, &err), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(json_array_get(all, 0), "uriTemplate")),
                        "note://{name}");
    json_decref(all);

    assert_int_equal(mcp_client_list_prompts(c, NULL, NULL, &page, &err), MCP_OK);
    assert_result_valid(page, "prompts/list");
    json_decref(page);
    assert_int_equal(mcp_client_list_prompts_all(c, NULL, &all, &err), MCP_OK);
    assert_int_equal(json_array_size(all), 1);
    json_decref(all);
}

static void test_calls(void **state)
{
    mcp_client_t *c = *state;
    mcp_error_t err = {0};
    json_t *result = NULL;

    json_t *args = json_pack("{s:s}", "text", "héllo\nworld");
    assert_int_equal(mcp_client_call_tool(c, "echo", args, NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "tools/call");
    assert_string_equal(first_text(result), "héllo\nworld");
    json_decref(result);
    json_decref(args);

    args = json_pack("{s:i, s:i}", "a", 20, "b", 22);
    assert_int_equal(mcp_client_call_tool(c, "add", args, NULL, &result, &err), MCP_OK);
    assert_true(json_number_value(json_object_get(json_object_get(result, "structuredContent"),
                                                  "sum")) == 42.0);
    json_decref(result);
    json_decref(args);

    /* A tool failure is a successful call with isError. */
    args = json_pack("{s:s}", "a", "x");
    assert_int_equal(mcp_client_call_tool(c, "add", args, NULL, &result, &err), MCP_OK);
    assert_true(json_is_true(json_object_get(result, "isError")));
    json_decref(result);
    json_decref(args);

    /* An unknown tool is a JSON-RPC error. */
    assert_int_equal(mcp_client_call_tool(c, "nope", NULL, NULL, &result, &err), MCP_ERPC);
    assert_int_equal(err.code, -32602);
    assert_null(result);

    assert_int_equal(mcp_client_read_resource(c, "notes://index", NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "resources/read");
    json_decref(result);
    assert_int_equal(mcp_client_read_resource(c, "note://welcome", NULL, &result, &err), MCP_OK);
    assert_non_null(strstr(json_string_value(json_object_get(
                               json_array_get(json_object_get(result, "contents"), 0), "text")),
                           "memory"));
    json_decref(result);
    assert_int_equal(mcp_client_read_resource(c, "note://missing", NULL, &result, &err), MCP_ERPC);
    assert_int_equal(err.code, -32602);

    args = json_pack("{s:s}", "style", "brief");
    assert_int_equal(mcp_client_get_prompt(c, "summarize_notes", args, NULL, &result, &err),
                     MCP_OK);
    assert_result_valid(result, "prompts/get");
    json_decref(result);
    json_decref(args);

    json_t *ref = json_pack("{s:s, s:s}", "type", "ref/prompt", "name", "summarize_notes");
    assert_int_equal(mcp_client_complete(c, ref, "style", "b", NULL, NULL, &result, &err), MCP_OK);
    assert_result_valid(result, "completion/complete");
    json_t *values = json_object_get(json_object_get(result, "completion"), "values");
    assert_int_equal(json_array_size(values), 2); /* brief, bullet points */
    json_decref(result);
    json_decref(ref);

    /* The generic entry point. */
    assert_int_equal(mcp_client_request(c, "tools/call",
                                        json_pack("{s:s, s:{s:s}}", "name", "echo", "arguments",
                                                  "text", "raw"),
                                        NULL, &result, &err),
                     MCP_OK);
    assert_string_equal(first_text(result), "raw");
    json_decref(result);
    assert_int_equal(mcp_client_request(c, "no/such", NULL, NULL, &result, &err), MCP_ERPC);
    assert_int_equal(err.code, -32601);
    mcp_error_clear(&err);
}

/* ------------------------------------------------------------------------
 * Progress, cancellation, timeouts
 * ------------------------------------------------------------------------ */

typedef struct progress_log {
    int count;
    double last, total;
} progress_log_t;

static void on_progress(void *user, double progress, double total, const char *message)
{
    progress_log_t *p = user;
    p->count++;
    p->last = progress;
    p->total = total;
}

static void test_progress(void **state)
{
    mcp_client_t *c = *state;
    progress_log_t log = {0};
    json_t *args = json_pack("{s:i}", "seconds", 2), *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "countdown", args,
                                          &(mcp_request_options_t){.progress = on_progress,
                                                                   .progress_user = &log},
                                          &result, &err),
                     MCP_OK);
    assert_int_equal(log.count, 3); /* 0/2, 1/2, 2/2 */
    assert_true(log.last == 2.0 && log.total == 2.0);
    assert_non_null(strstr(first_text(result), "Lift-off"));
    json_decref(result);
    json_decref(args);
}

static void *trigger_later(void *arg)
{
    sleep_ms(300);
    mcp_cancel_trigger(arg);
    return NULL;
}

static void assert_still_serving(mcp_client_t *c)
{
    json_t *args = json_pack("{s:s}", "text", "still here"), *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "echo", args, NULL, &result, &err), MCP_OK);
    assert_string_equal(first_text(result), "still here");
    json_decref(result);
    json_decref(args);
}

static void test_cancel_from_another_thread(void **state)
{
    mcp_client_t *c = *state;
    mcp_cancel_t *cancel = mcp_cancel_new();
    pthread_t th;
    pthread_create(&th, NULL, trigger_later, cancel);
    json_t *args = json_pack("{s:i}", "seconds", 20), *result = NULL;
    mcp_error_t err = {0};
    int64_t start = now_ms();
    assert_int_equal(mcp_client_call_tool(c, "countdown", args,
                                          &(mcp_request_options_t){.cancel = cancel}, &result,
                                          &err),
                     MCP_ECANCELED);
    assert_true(now_ms() - start < 2000);
    assert_null(result);
    pthread_join(th, NULL);
    assert_true(mcp_cancel_triggered(cancel));
    /* A triggered cancel fails the next call at once. */
    assert_int_equal(mcp_client_call_tool(c, "countdown", args,
                                          &(mcp_request_options_t){.cancel = cancel}, &result,
                                          &err),
                     MCP_ECANCELED);
    mcp_cancel_free(cancel);
    json_decref(args);
    assert_still_serving(c);
}

static void test_timeout(void **state)
{
    mcp_client_t *c = *state;
    json_t *args = json_pack("{s:i}", "seconds", 20), *result = NULL;
    mcp_error_t err = {0};
    int64_t start = now_ms();
    assert_int_equal(mcp_client_call_tool(c, "countdown", args,
                                          &(mcp_request_options_t){.timeout_ms = 300}, &result,
                                          &err),
                     MCP_ETIMEDOUT);
    int64_t took = now_ms() - start;
    assert_true(took >= 290 && took < 2000);
    json_decref(args);
    assert_still_serving(c);
}

/* ------------------------------------------------------------------------
 * MRTR: delete_note asks for confirmation
 * ------------------------------------------------------------------------ */

static void add_note(mcp_client_t *c, const char *name)
{
    json_t *args = json_pack("{s:s, s:s}", "name", name, "text", "to delete"), *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(c, "add_note", args, NULL, &result, &err), MCP_OK);
    json_decref(result);
    json_decref(args);
}

static void test_mrtr_accept_and_decline(void **state)
{
    mcp_client_t *c = *state;
    add_note(c, "doomed");
    json_t *args = json_pack("{s:s}", "name", "doomed"), *result = NULL;
    mcp_error_t err = {0};

    script = (elicit_script_t){"decline", 0, ""};
    assert_int_equal(mcp_client_call_tool(c, "delete_note", args, NULL, &result, &err), MCP_OK);
    assert_int_equal(script.calls, 1);
    assert_non_null(strstr(script.message, "doomed"));
    assert_non_null(strstr(first_text(result), "Kept"));
    json_decref(result);

    script = (elicit_script_t){"accept", 0, ""};
    assert_int_equal(mcp_client_call_tool(c, "delete_note", args, NULL, &result, &err), MCP_OK);
    assert_int_equal(script.calls, 1);
    assert_result_valid(result, "tools/call");
    assert_non_null(strstr(first_text(result), "Deleted"));
    json_decref(result);
    json_decref(args);
}

/* ------------------------------------------------------------------------
 * Several threads at once
 * ------------------------------------------------------------------------ */

typedef struct worker {
    mcp_client_t *c;
    int n;
    int ok;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < 25; i++) {
        char text[64];
        snprintf(text, sizeof text, "thread %d call %d", w->n, i);
        json_t *args = json_pack("{s:s}", "text", text), *result = NULL;
        if (mcp_client_call_tool(w->c, "echo", args, NULL, &result, NULL) == MCP_OK &&
            strcmp(first_text(result), text) == 0)
            w->ok++;
        json_decref(result);
        json_decref(args);
    }
    return NULL;
}

static void test_concurrent_calls(void **state)
{
    enum { N = 8 };
    pthread_t th[N];
    worker_t w[N];
    for (int i = 0; i < N; i++) {
        w[i] = (worker_t){*state, i, 0};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].ok, 25);
    }
}

/* ------------------------------------------------------------------------
 * subscriptions/listen
 * ------------------------------------------------------------------------ */

typedef struct events {
    pthread_mutex_t lock;
    int updated;
    char uri[128];
    mcp_client_t *client; /* when set, the callback itself calls the server */
    int call_rc;
} events_t;

static void on_event(void *user, const char *method, const json_t *params)
{
    events_t *e = user;
    if (e->client) {
        /* A listen callback may make calls, even over stdio. */
        json_t *r = NULL;
        int rc = mcp_client_read_resource(e->client, "notes://index", NULL, &r, NULL);
        json_decref(r);
        pthread_mutex_lock(&e->lock);
        e->call_rc = rc;
        pthread_mutex_unlock(&e->lock);
    }
    pthread_mutex_lock(&e->lock);
    if (strcmp(method, "notifications/resources/updated") == 0) {
        e->updated++;
        snprintf(e->uri, sizeof e->uri, "%s", json_string_value(json_object_get(params, "uri")));
    }
    pthread_mutex_unlock(&e->lock);
}

static int updates(events_t *e)
{
    pthread_mutex_lock(&e->lock);
    int n = e->updated;
    pthread_mutex_unlock(&e->lock);
    return n;
}

static const char *index_text(mcp_client_t *c, json_t **keep)
{
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_read_resource(c, "notes://index", NULL, keep, &err), MCP_OK);
    return json_string_value(
        json_object_get(json_array_get(json_object_get(*keep, "contents"), 0), "text"));
}

static void test_listen_invalidates_cache(void **state)
{
    mcp_client_t *c = *state;
    events_t ev = {PTHREAD_MUTEX_INITIALIZER, 0, "", c, -1};
    const char *uris[] = {"notes://index"};
    mcp_subscription_t *sub = NULL;
    json_t *honoured = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_listen(c, &(mcp_listen_filter_t){.resource_uris = uris, .n_resource_uris = 1},
                               on_event, &ev, NULL, &sub, &honoured, &err);
    if (rc != MCP_OK)
        fail_msg("listen: %s", err.message);
    assert_string_equal(json_string_value(json_array_get(
                            json_object_get(honoured, "resourceSubscriptions"), 0)),
                        "notes://index");
    json_decref(honoured);

    /* The index is cached (ttlMs 60000)... */
    json_t *before = NULL, *cached = NULL, *after = NULL;
    index_text(c, &before);
    assert_null(strstr(index_text(c, &cached), "listened"));
    json_decref(cached);
    add_note(c, "listened");
    for (int i = 0; i < 200 && updates(&ev) == 0; i++)
        sleep_ms(10);
    assert_true(updates(&ev) >= 1);
    pthread_mutex_lock(&ev.lock);
    assert_int_equal(ev.call_rc, MCP_OK);
    pthread_mutex_unlock(&ev.lock);
    /* ...until the update invalidates it. */
    assert_non_null(strstr(index_text(c, &after), "listened"));
    json_decref(before);
    json_decref(after);
    mcp_subscription_close(sub);
    assert_still_serving(c);
}

/* ------------------------------------------------------------------------
 * The server process: env, cwd, stderr, exit under a call, restart
 * ------------------------------------------------------------------------ */

typedef struct lines {
    pthread_mutex_t lock;
    char seen[512];
} lines_t;

static void on_stderr(void *user, const char *line)
{
    lines_t *l = user;
    pthread_mutex_lock(&l->lock);
    if (strlen(l->seen) + strlen(line) + 2 < sizeof l->seen) {
        strcat(l->seen, line);
        strcat(l->seen, "|");
    }
    pthread_mutex_unlock(&l->lock);
}

/* A shell wrapper writes its pid to $PIDFILE (relative to the cwd it was
 * given), says hello on stderr, then becomes notes_server. */
static const char *const wrapper_argv[] = {
    "sh", "-c", "echo $$ > \"$PIDFILE\"; echo \"hello from $GREETING\" >&2; exec \"$0\"",
    MCP_NOTES_SERVER, NULL};

static pid_t read_pid(const char *path)
{
    pid_t pid = 0;
    for (int i = 0; i < 200 && pid == 0; i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            long v = 0;
            if (fscanf(f, "%ld", &v) == 1)
                pid = (pid_t)v;
            fclose(f);
        }
        if (pid == 0)
            sleep_ms(10);
    }
    return pid;
}

static void *kill_later(void *arg)
{
    sleep_ms(300);
    kill(*(pid_t *)arg, SIGKILL);
    return NULL;
}

static void test_server_process(void **state)
{
    char dir[] = "/tmp/mcp-client-stdio-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char pidfile[600];
    snprintf(pidfile, sizeof pidfile, "%s/server.pid", dir);
    lines_t lines = {PTHREAD_MUTEX_INITIALIZER, ""};
    const char *env[] = {"PIDFILE=server.pid", "GREETING=the test", NULL};
    mcp_client_t *c = connect_to(wrapper_argv, &(mcp_stdio_target_t){
        .env = env, .cwd = dir, .on_stderr = on_stderr, .stderr_user = &lines, .restart = true});

    pid_t pid = read_pid(pidfile);
    assert_true(pid > 0);
    for (int i = 0; i < 200 && !strstr(lines.seen, "hello from the test"); i++)
        sleep_ms(10);
    pthread_mutex_lock(&lines.lock);
    assert_non_null(strstr(lines.seen, "hello from the test|"));
    pthread_mutex_unlock(&lines.lock);

    /* A listen stream that must survive the restart. */
    events_t ev = {PTHREAD_MUTEX_INITIALIZER, 0, "", NULL, 0};
    const char *uris[] = {"notes://index"};
    mcp_subscription_t *sub = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_listen(c, &(mcp_listen_filter_t){.resource_uris = uris,
                                                                 .n_resource_uris = 1},
                                       on_event, &ev, NULL, &sub, NULL, &err),
                     MCP_OK);

    /* The server dies under a call: the call fails with MCP_ECLOSED. */
    unlink(pidfile);
    pthread_t th;
    pthread_create(&th, NULL, kill_later, &pid);
    json_t *args = json_pack("{s:i}", "seconds", 20), *result = NULL;
    int64_t start = now_ms();
    assert_int_equal(mcp_client_call_tool(c, "countdown", args, NULL, &result, &err), MCP_ECLOSED);
    assert_true(now_ms() - start < 5000);
    pthread_join(th, NULL);
    json_decref(args);

    /* ...and comes back: new calls work, and the listen stream re-opens. */
    pid_t again = read_pid(pidfile);
    assert_true(again > 0 && again != pid);
    int ok = MCP_ECLOSED;
    for (int i = 0; i < 100 && ok != MCP_OK; i++) {
        json_t *a = json_pack("{s:s}", "text", "back"), *r = NULL;
        ok = mcp_client_call_tool(c, "echo", a, NULL, &r, NULL);
        json_decref(a);
        json_decref(r);
        if (ok != MCP_OK)
            sleep_ms(20);
    }
    assert_int_equal(ok, MCP_OK);
    for (int i = 0; i < 300 && updates(&ev) == 0; i++) {
        if (i % 20 == 0)
            add_note(c, "after-restart");
        sleep_ms(10);
    }
    assert_true(updates(&ev) >= 1);
    mcp_subscription_close(sub);
    mcp_error_clear(&err);

    mcp_client_free(c); /* stops the second server */
    unlink(pidfile);
    rmdir(dir);
}

static void test_server_that_will_not_start(void **state)
{
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"}, NULL);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
                         .argv = (const char *const[]){"/nonexistent/server", NULL}}, &err),
                     MCP_EIO);
    assert_non_null(strstr(err.message, "nonexistent"));
    /* A server that exits at once: connecting fails cleanly. */
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
                         .argv = (const char *const[]){"true", NULL}}, &err),
                     MCP_ECLOSED);
    mcp_error_clear(&err);
    mcp_client_free(c);
}

/* A log message the server writes as it starts, before the client sent
 * anything, reaches on_log: the transport's reader thread may read it
 * before connect has even begun. */
typedef struct early_logs {
    pthread_mutex_t lock;
    int count;
    char data[64];
} early_logs_t;

static void on_early_log(void *user, const char *level, const char *logger, const json_t *data)
{
    (void)level, (void)logger;
    early_logs_t *l = user;
    pthread_mutex_lock(&l->lock);
    l->count++;
    snprintf(l->data, sizeof l->data, "%s", json_string_value(data));
    pthread_mutex_unlock(&l->lock);
}

static int early_count(early_logs_t *l)
{
    pthread_mutex_lock(&l->lock);
    int n = l->count;
    pthread_mutex_unlock(&l->lock);
    return n;
}

static void test_log_before_any_request(void **state)
{
    (void)state;
    early_logs_t logs = {PTHREAD_MUTEX_INITIALIZER, 0, ""};
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "t", .version = "1", .on_log = on_early_log, .on_log_user = &logs}, &err);
    assert_non_null(c);
    const char *const argv[] = {
        "sh", "-c",
        "echo '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
        "\"params\":{\"level\":\"info\",\"data\":\"starting\"}}'; exec \"$0\"",
        MCP_NOTES_SERVER, NULL};
    if (mcp_client_connect_stdio(c, &(mcp_stdio_target_t){.argv = argv}, &err) != MCP_OK)
        fail_msg("connect: %s", err.message);
    for (int i = 0; i < 500 && early_count(&logs) == 0; i++)
        sleep_ms(10);
    mcp_client_free(c);
    assert_int_equal(early_count(&logs), 1);
    assert_string_equal(logs.data, "starting");
}

int main(void)
{
    const struct CMUnitTest shared[] = {
        cmocka_unit_test(test_identity_and_discover),
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_calls),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_cancel_from_another_thread),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_mrtr_accept_and_decline),
        cmocka_unit_test(test_concurrent_calls),
        cmocka_unit_test(test_listen_invalidates_cache),
    };
    const struct CMUnitTest own[] = {
        cmocka_unit_test(test_server_process),
        cmocka_unit_test(test_server_that_will_not_start),
        cmocka_unit_test(test_log_before_any_request),
    };
    int failed = cmocka_run_group_tests_name("client_stdio_shared", shared, setup, teardown);
    return failed + cmocka_run_group_tests_name("client_stdio_own", own, NULL, NULL);
}
