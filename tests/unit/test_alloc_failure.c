/*
 * Allocation failure: every allocation an operation makes fails in turn,
 * and the operation must fail cleanly each time: no crash, no leak, an
 * error reported as one (MCP_ENOMEM, or a JSON-RPC -32603 from the server
 * core), never a success with something missing, never a hang, and the
 * same operation succeeds again once memory is back.
 *
 * This binary is linked with --wrap for malloc, calloc, realloc, strdup,
 * strndup, asprintf, vasprintf and free (tests/CMakeLists.txt): every
 * allocation libmcp makes goes through the counting wrappers below, and
 * jansson's through json_set_alloc_funcs. __real_malloc is ASan's
 * interceptor in the sanitizer build, so leaks and misuse are still seen.
 *
 * sweep() runs an operation with the Nth counted allocation failing, for
 * N = 1, 2, ... until a run injects no failure. The test's own allocations
 * (building requests, recording answers, handler code that is not libmcp)
 * are exempt: a thread-local counter turns counting off around them.
 *
 * Leaks: besides LeakSanitizer at exit, the wrappers count the blocks
 * alive, so a block an error path forgets (even one a long-lived object
 * still points to) shows up as growth over the failed run and its retry,
 * attributed to the allocation that failed.
 *
 * Covered: the server core (tools/call plain, inline with progress and
 * structured content, tools/list, server/discover, resources/read of a
 * resource and of a template, resources/list, prompts/get, two errors, an
 * MRTR round with its sealed requestState, a legacy initialize and call),
 * with a sink that takes trees and one that takes text; the client core
 * over a transport that answers at once (connecting, tools/call, an MRTR
 * round, tools/list, resources/read, server/discover); json_read,
 * json_write and the requestState codec on their own.
 *
 * When debugging: OOM_TEST=<cmocka test> and OOM_SWEEP=<part of a sweep's
 * name> narrow the run, OOM_TRACE=<N> prints the stack of each Nth
 * allocation that is made to fail (sanitizer builds).
 */
#define _GNU_SOURCE /* vasprintf */

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

#include <cmocka.h>

#include "client/client_internal.h"
#include "client/transport.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "mcp/request_state.h"
#include "mcp/server_core.h"
#include "protocol/json_reader.h"
#include "protocol/json_writer.h"
#include "test_clock.h"

/* ------------------------------------------------------------------------
 * Allocations that fail on demand
 * ------------------------------------------------------------------------ */

static atomic_bool armed;     /* counting down */
static atomic_long countdown; /* the allocation that takes it to 0 fails */
static atomic_long arming;    /* the N of the run */
static atomic_bool injected;  /* a failure was injected since arm() */
static atomic_long live;      /* blocks allocated through the wrappers, not yet freed */
static _Thread_local int exempt; /* > 0: the test's own allocations */

#define EXEMPT(stmt)                                                                           \
    do {                                                                                       \
        exempt++;                                                                              \
        stmt;                                                                                  \
        exempt--;                                                                              \
    } while (0)

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vasprintf(char **out, const char *fmt, va_list ap);
int __wrap_asprintf(char **out, const char *fmt, ...);
void __wrap_free(void *p);

/* ASan's, when the binary has it: OOM_TRACE=<N> prints where the Nth
 * allocation of each run fails, when debugging. */
void __sanitizer_print_stack_trace(void) __attribute__((weak));
static long trace_at;

static bool fail_now(void)
{
    if (exempt || !atomic_load(&armed))
        return false;
    if (atomic_fetch_sub(&countdown, 1) != 1)
        return false;
    atomic_store(&injected, true);
    if (trace_at && atomic_load(&arming) == trace_at && __sanitizer_print_stack_trace) {
        exempt++;
        __sanitizer_print_stack_trace();
        exempt--;
    }
    return true;
}

static void *counted(void *p)
{
    if (p)
        atomic_fetch_add(&live, 1);
    return p;
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : counted(__real_malloc(n));
}

void *__wrap_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : counted(__real_calloc(n, size));
}

void *__wrap_realloc(void *p, size_t n)
{
    if (fail_now())
        return NULL;
    void *q = __real_realloc(p, n);
    if (!p)
        counted(q);
    return q;
}

char *__wrap_strdup(const char *s)
{
    return fail_now() ? NULL : counted(__real_strdup(s));
}

char *__wrap_strndup(const char *s, size_t n)
{
    return fail_now() ? NULL : counted(__real_strndup(s, n));
}

/* glibc allocates the string of vasprintf() inside libc, out of the
 * wrappers' sight: this one makes it through them. */
int __wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *text = n < 0 ? NULL : __wrap_malloc((size_t)n + 1);
    if (text)
        vsnprintf(text, (size_t)n + 1, fmt, again);
    va_end(again);
    *out = text;
    return text ? n : -1;
}

int __wrap_asprintf(char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = __wrap_vasprintf(out, fmt, ap);
    va_end(ap);
    return n;
}

void __wrap_free(void *p)
{
    if (p)
        atomic_fetch_sub(&live, 1);
    __real_free(p);
}

/* jansson's allocator, routed through the same countdown. */
static void *json_alloc(size_t n)
{
    return __wrap_malloc(n);
}

static void json_release(void *p)
{
    __wrap_free(p);
}

static void arm(long n)
{
    atomic_store(&injected, false);
    atomic_store(&countdown, n);
    atomic_store(&arming, n);
    atomic_store(&armed, true);
}

/* Stops injecting; whether a failure was injected since arm(). */
static bool disarm(void)
{
    atomic_store(&armed, false);
    return atomic_load(&injected);
}

/* Waits for worker threads to free what they still hold after an answer
 * went out: true once `live` is back to `baseline`. */
static bool settles_at(long baseline)
{
    /* Fewer than before is no leak: a worker freed what an earlier run
     * left it after that run's `baseline` was taken. */
    for (int waited = 0; waited < 2000; waited++) {
        if (atomic_load(&live) <= baseline)
            return true;
        sleep_ms(1);
    }
    return atomic_load(&live) <= baseline;
}

/* ------------------------------------------------------------------------
 * The sweep
 * ------------------------------------------------------------------------ */

/* What one run of an operation came to. */
typedef enum outcome {
    RAN_OK,     /* succeeded, with everything it should have */
    RAN_FAILED, /* failed, and said so as it should */
    RAN_WRONG   /* anything else: `why` says what */
} outcome_t;

typedef outcome_t (*operation_fn)(void *ctx, char *why, size_t why_size);

#define WRONG(...)                                                                             \
    do {                                                                                       \
        snprintf(why, why_size, __VA_ARGS__);                                                  \
        return RAN_WRONG;                                                                      \
    } while (0)

static long total_runs;

/* What went wrong in a sweep: each finding is printed as it comes and the
 * sweep goes on, so that one run shows them all; the test fails at its
 * end. */
static int findings;

#define FINDING(...)                                                                           \
    do {                                                                                       \
        print_error(__VA_ARGS__);                                                              \
        findings++;                                                                            \
    } while (0)

/* Runs `op` with its 1st, 2nd, ... allocation failing, then again without
 * failures each time. */
static void sweep(const char *name, operation_fn op, void *ctx)
{
    /* OOM_SWEEP=<text> runs only the sweeps whose name holds it, when
     * debugging. */
    if (getenv("OOM_SWEEP") && !strstr(name, getenv("OOM_SWEEP")))
        return;
    char why[512] = "";
    /* Twice first: lazily made things (the worker pool, keys, caches) are
     * made then, so that every later run starts from the same state. */
    for (int i = 0; i < 2; i++)
        if (op(ctx, why, sizeof why) != RAN_OK)
            fail_msg("%s: fails without any injected failure: %s", name, why);

    int found = findings;
    long n;
    for (n = 1;; n++) {
        long before = atomic_load(&live);
        why[0] = '\0';
        arm(n);
        outcome_t first = op(ctx, why, sizeof why);
        bool hit = disarm();
        if (first == RAN_WRONG)
            FINDING("%s, allocation %ld failing: %s\n", name, n, why);
        if (!hit && first != RAN_OK)
            FINDING("%s: failed with no failure injected (run %ld)\n", name, n);
        outcome_t again = op(ctx, why, sizeof why);
        if (again != RAN_OK)
            FINDING("%s, after allocation %ld failed: the next run %s: %s\n", name, n,
                    again == RAN_FAILED ? "failed" : "went wrong", why);
        total_runs += 2;
        if (!settles_at(before))
            FINDING("%s, allocation %ld failing: %ld blocks more alive after the run and "
                    "its retry\n", name, n, atomic_load(&live) - before);
        if (!hit)
            break;
    }
    print_message("%s: %ld allocations, each failed once%s\n", name, n - 1,
                  findings > found ? " (with findings)" : "");
}

/* Fails the test when a sweep of it had findings. */
static void expect_no_findings(void)
{
    int n = findings;
    findings = 0;
    if (n)
        fail_msg("%d findings", n);
}

/* ------------------------------------------------------------------------
 * The server core
 * ------------------------------------------------------------------------ */

/* A sink that keeps the response: a copy of the message, or its text
 * parsed back. Its own allocations are exempt. */
typedef struct sink {
    mcp_sink_t base;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    json_t *response;
    int notifications;
    bool released;
} sink_t;

static int sink_send(mcp_sink_t *base, mcp_out_kind_t kind, const json_t *msg, int status)
{
    sink_t *s = (sink_t *)base;
    pthread_mutex_lock(&s->lock);
    if (kind == MCP_OUT_RESPONSE && !s->response)
        EXEMPT(s->response = json_deep_copy(msg));
    else if (kind == MCP_OUT_NOTIFICATION || kind == MCP_OUT_REQUEST)
        s->notifications++;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static int sink_send_text(mcp_sink_t *base, mcp_out_kind_t kind, const char *text, size_t len,
                          int status)
{
    sink_t *s = (sink_t *)base;
    pthread_mutex_lock(&s->lock);
    if (kind == MCP_OUT_RESPONSE && !s->response)
        EXEMPT(s->response = json_loadb(text, len, 0, NULL));
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static void sink_release(mcp_sink_t *base)
{
    sink_t *s = (sink_t *)base;
    pthread_mutex_lock(&s->lock);
    s->released = true;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

static void sink_init(sink_t *s, bool with_text)
{
    memset(s, 0, sizeof *s);
    s->base.send = sink_send;
    s->base.release = sink_release;
    if (with_text)
        s->base.send_text = sink_send_text;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
}

static void sink_cleanup(sink_t *s)
{
    json_decref(s->response);
    pthread_cond_destroy(&s->changed);
    pthread_mutex_destroy(&s->lock);
}

typedef struct server_fixture {
    mcp_server_t *srv;
    bool send_text; /* the sink takes serialised responses */
} server_fixture_t;

/* How a submission ended. */
typedef enum submitted {
    ANSWERED,     /* *response_out holds the response */
    REFUSED,      /* mcp_server_submit() said MCP_ENOMEM: the sink was not taken */
    SUBMIT_WRONG  /* `why` says what */
} submitted_t;

/* Submits `msg` (borrowed) and waits for its release. */
static submitted_t submit(server_fixture_t *f, mcp_conn_t *conn, const json_t *msg,
                          json_t **response_out, char *why, size_t why_size)
{
    *response_out = NULL;
    char *text;
    EXEMPT(text = json_dumps(msg, JSON_COMPACT));
    sink_t s;
    sink_init(&s, f->send_text);
    mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO};
    int rc = mcp_server_submit(f->srv, conn, text, strlen(text), &ctx, &s.base, NULL);
    EXEMPT(free(text));
    if (rc != MCP_OK) {
        sink_cleanup(&s);
        if (rc == MCP_ENOMEM)
            return REFUSED;
        snprintf(why, why_size, "mcp_server_submit returned %d", rc);
        return SUBMIT_WRONG;
    }
    struct timespec until = time_in(CLOCK_REALTIME, 20000);
    pthread_mutex_lock(&s.lock);
    while (!s.released)
        if (pthread_cond_timedwait(&s.changed, &s.lock, &until) != 0)
            break;
    bool released = s.released;
    pthread_mutex_unlock(&s.lock);
    if (!released)
        fail_msg("no release within 20 s: the core hangs (or lost the sink)");
    *response_out = s.response;
    s.response = NULL;
    sink_cleanup(&s);
    return ANSWERED;
}

/* Classifies a response: RAN_OK when it is a result (which `check` then
 * inspects), RAN_FAILED for a -32603 error, RAN_WRONG otherwise. A
 * notification (no id expected) has no response and passes `expect_none`. */
static outcome_t judge(submitted_t how, json_t *response, int clean_error, char *why,
                       size_t why_size)
{
    if (how == SUBMIT_WRONG)
        return RAN_WRONG;
    if (how == REFUSED)
        return RAN_FAILED;
    if (!response)
        WRONG("released without a response");
    const json_t *error = json_object_get(response, "error");
    if (error) {
        json_int_t code = json_integer_value(json_object_get(error, "code"));
        if (code == -32603)
            return RAN_FAILED;
        if (clean_error && code == clean_error)
            return RAN_OK;
        char *text;
        EXEMPT(text = json_dumps(response, JSON_COMPACT));
        snprintf(why, why_size, "answered %s", text);
        EXEMPT(free(text));
        return RAN_WRONG;
    }
    if (clean_error)
        WRONG("a result where error %d was due", clean_error);
    if (!json_is_object(json_object_get(response, "result")))
        WRONG("a response with neither result nor error");
    return RAN_OK;
}

static json_t *modern(json_int_t id, const char *method, json_t *params_new)
{
    json_t *msg;
    EXEMPT({
        if (!params_new)
            params_new = json_object();
        json_object_set_new(params_new, "_meta",
                            json_pack("{s:s, s:{s:{}}, s:{s:s, s:s}}",
                                      "io.modelcontextprotocol/protocolVersion", "2026-07-28",
                                      "io.modelcontextprotocol/clientCapabilities",
                                      "elicitation", "io.modelcontextprotocol/clientInfo",
                                      "name", "oom", "version", "1"));
        msg = json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method,
                        "params", params_new);
    });
    return msg;
}

static void drop(json_t *j)
{
    EXEMPT(json_decref(j));
}

/* The text of content[0] of a result, or NULL. */
static const char *first_text(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

/* A string's value, or "" for anything else. */
static const char *text_of(const json_t *string)
{
    return json_is_string(string) ? json_string_value(string) : "";
}

static const json_t *result_of(const json_t *response)
{
    return json_object_get(response, "result");
}

/* One request, one result that `check` inspects. */
typedef bool (*result_check_fn)(const json_t *result);

typedef struct one_request {
    server_fixture_t *f;
    const char *method;
    const char *params; /* JSON text, or NULL */
    int clean_error;    /* the error the request gets anyway (0: a result) */
    result_check_fn check;
} one_request_t;

static outcome_t run_one_request(void *ctx, char *why, size_t why_size)
{
    one_request_t *r = ctx;
    json_t *params = NULL;
    if (r->params)
        EXEMPT(params = json_loads(r->params, 0, NULL));
    json_t *msg = modern(1, r->method, params);
    json_t *response;
    submitted_t how = submit(r->f, NULL, msg, &response, why, why_size);
    drop(msg);
    outcome_t o = judge(how, response, r->clean_error, why, why_size);
    if (o == RAN_OK && r->check && !r->check(result_of(response))) {
        char *text;
        EXEMPT(text = json_dumps(response, JSON_COMPACT));
        snprintf(why, why_size, "incomplete result %s", text);
        EXEMPT(free(text));
        o = RAN_WRONG;
    }
    drop(response);
    return o;
}

static bool is_echo(const json_t *result)
{
    const char *text = first_text(result);
    return text && strcmp(text, "echo: hi") == 0 &&
           strcmp(json_string_value(json_object_get(result, "resultType")), "complete") == 0;
}

static bool is_structured(const json_t *result)
{
    const char *text = first_text(result);
    return text && strcmp(text, "n=42") == 0 &&
           json_integer_value(json_object_get(json_object_get(result, "structuredContent"),
                                              "n")) == 42 &&
           json_array_size(json_object_get(result, "content")) == 2;
}

static bool is_tool_list(const json_t *result)
{
    const json_t *tools = json_object_get(result, "tools");
    return json_array_size(tools) == 3 &&
           json_is_object(json_object_get(json_array_get(tools, 0), "inputSchema"));
}

static bool is_discover(const json_t *result)
{
    return json_is_array(json_object_get(result, "supportedVersions")) &&
           json_is_object(json_object_get(json_object_get(result, "capabilities"), "tools"));
}

static bool is_contents(const json_t *result)
{
    const json_t *c = json_array_get(json_object_get(result, "contents"), 0);
    return c && strcmp(text_of(json_object_get(c, "text")), "contents of x:/a") == 0 &&
           strcmp(text_of(json_object_get(c, "uri")), "x:/a") == 0;
}

static bool is_resource_list(const json_t *result)
{
    return json_array_size(json_object_get(result, "resources")) == 1;
}

static bool is_prompt(const json_t *result)
{
    const json_t *m = json_array_get(json_object_get(result, "messages"), 0);
    return m && strcmp(text_of(json_object_get(json_object_get(m, "content"), "text")),
                       "say hi") == 0;
}

/* Handlers. They make no allocations of their own but through libmcp. */

static int echo_tool(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    if (!text)
        return mcp_call_fail(call, MCP_INVALID_PARAMS, "text is required");
    return mcp_call_add_textf(call, "echo: %s", text);
}

static int structured_tool(mcp_call_t *call, void *user)
{
    int64_t n = 0;
    mcp_call_arg_int(call, "n", &n);
    int rc = mcp_call_progress(call, 1, 2, "half way");
    if (rc < 0)
        return rc;
    rc = mcp_call_add_textf(call, "n=%lld", (long long)n);
    if (rc < 0)
        return rc;
    rc = mcp_call_add_text(call, "second block");
    if (rc < 0)
        return rc;
    json_t *value;
    EXEMPT(value = json_pack("{s:I}", "n", (json_int_t)n));
    return mcp_call_set_structured(call, value);
}

static json_t *confirm_schema(void)
{
    json_t *schema;
    EXEMPT(schema = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", "ok",
                              "type", "boolean", "required", "ok"));
    return schema;
}

/* Asks "Sure?" and keeps handler state across the round. */
static int confirm_tool(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "confirm");
    if (!answer) {
        json_t *state;
        EXEMPT(state = json_pack("{s:s}", "step", "asked"));
        int rc = mcp_call_set_state(call, state);
        if (rc < 0)
            return rc;
        rc = mcp_call_elicit(call, "confirm", "Sure?", confirm_schema(), MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    const char *step = json_string_value(json_object_get(mcp_call_state(call), "step"));
    if (!step || strcmp(step, "asked") != 0)
        return mcp_call_fail(call, -32000, "the handler state did not come back");
    const char *action = json_string_value(json_object_get(answer, "action"));
    return mcp_call_add_textf(call, "%s", action ? action : "?");
}

static int read_resource(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, "text/plain", "contents of x:/a");
}

static int read_template(mcp_call_t *call, const char *uri, void *user)
{
    const char *name = mcp_call_uri_var(call, "name");
    return mcp_call_add_resource_text(call, uri, "text/plain", name ? name : "?");
}

static int get_prompt(mcp_call_t *call, void *user)
{
    json_t *content;
    EXEMPT(content = mcp_content_text("say hi"));
    return mcp_call_add_message(call, "user", content);
}

static mcp_keyring_t *test_ring(void)
{
    mcp_keyring_t *ring = mcp_keyring_new();
    assert_non_null(ring);
    assert_int_equal(mcp_keyring_generate(ring, "k1"), MCP_OK);
    return ring;
}

static mcp_server_t *new_server(void)
{
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "oom", .version = "1", .worker_threads = 1,
                                .spin_us = -1, .state_single_use = true},
        NULL);
    assert_non_null(srv);
    mcp_codec_t *codec = mcp_codec_aead_new(test_ring(), NULL, NULL);
    assert_non_null(codec);
    assert_int_equal(mcp_server_set_codec(srv, codec), MCP_OK);
    assert_int_equal(mcp_server_add_tool(srv,
                                         &(mcp_tool_t){.name = "echo",
                                                       .description = "Echoes",
                                                       .input_schema =
                                                           "{\"type\":\"object\",\"properties\":"
                                                           "{\"text\":{\"type\":\"string\"}}}",
                                                       .handler = echo_tool},
                                         NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_tool(srv,
                                         &(mcp_tool_t){.name = "structured",
                                                       .handler = structured_tool,
                                                       .run_inline = true},
                                         NULL),
                     MCP_OK);
    assert_int_equal(
        mcp_server_add_tool(srv, &(mcp_tool_t){.name = "confirm", .handler = confirm_tool}, NULL),
        MCP_OK);
    assert_int_equal(mcp_server_add_resource(srv,
                                             &(mcp_resource_t){.uri = "x:/a", .name = "a",
                                                               .mime_type = "text/plain",
                                                               .handler = read_resource},
                                             NULL),
                     MCP_OK);
    assert_int_equal(mcp_server_add_resource_template(
                         srv,
                         &(mcp_resource_template_t){.uri_template = "x:/t/{name}", .name = "t",
                                                    .handler = read_template},
                         NULL),
                     MCP_OK);
    assert_int_equal(
        mcp_server_add_prompt(srv, &(mcp_prompt_t){.name = "greet", .handler = get_prompt}, NULL),
        MCP_OK);
    return srv;
}

/* The two rounds of a question: input_required with a sealed
 * requestState, then the retry with the answer. */
static outcome_t run_mrtr(void *ctx, char *why, size_t why_size)
{
    server_fixture_t *f = ctx;
    json_t *params;
    EXEMPT(params = json_pack("{s:s, s:{}}", "name", "confirm", "arguments"));
    json_t *msg = modern(1, "tools/call", params);
    json_t *response;
    submitted_t how = submit(f, NULL, msg, &response, why, why_size);
    outcome_t o = judge(how, response, 0, why, why_size);
    if (o != RAN_OK) {
        drop(msg);
        drop(response);
        return o;
    }
    const json_t *result = result_of(response);
    const char *state = json_string_value(json_object_get(result, "requestState"));
    const char *type = json_string_value(json_object_get(result, "resultType"));
    if (!state || !type || strcmp(type, "input_required") != 0 ||
        !json_object_get(json_object_get(result, "inputRequests"), "confirm")) {
        drop(msg);
        drop(response);
        WRONG("the first round is not a complete input_required result");
    }
    json_t *retry;
    EXEMPT({
        retry = json_deep_copy(msg);
        json_t *p = json_object_get(retry, "params");
        json_object_set_new(retry, "id", json_integer(2));
        json_object_set_new(p, "requestState", json_string(state));
        json_object_set_new(p, "inputResponses",
                            json_pack("{s:{s:s, s:{s:b}}}", "confirm", "action", "accept",
                                      "content", "ok", 1));
    });
    drop(msg);
    drop(response);
    how = submit(f, NULL, retry, &response, why, why_size);
    drop(retry);
    o = judge(how, response, 0, why, why_size);
    if (o == RAN_OK) {
        const char *text = first_text(result_of(response));
        if (!text || strcmp(text, "accept") != 0)
            o = RAN_WRONG, snprintf(why, why_size, "the retry's result lacks the answer");
    }
    drop(response);
    return o;
}

static json_t *legacy_message(json_int_t id, const char *method, const char *params)
{
    json_t *msg;
    EXEMPT({
        msg = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
        if (id)
            json_object_set_new(msg, "id", json_integer(id));
        if (params)
            json_object_set_new(msg, "params", json_loads(params, 0, NULL));
    });
    return msg;
}

static bool is_echo_legacy(const json_t *result)
{
    const char *text = first_text(result);
    return text && strcmp(text, "echo: hi") == 0;
}

/* A legacy stdio conversation: initialize, notifications/initialized and
 * a tools/call, on a connection of its own. */
static outcome_t run_legacy(void *ctx, char *why, size_t why_size)
{
    server_fixture_t *f = ctx;
    mcp_conn_t *conn = mcp_conn_new(f->srv, MCP_TRANSPORT_STDIO);
    if (!conn)
        return RAN_FAILED;
    static const struct {
        json_int_t id;
        const char *method, *params;
    } script[] = {
        {1, "initialize",
         "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
         "\"clientInfo\":{\"name\":\"oom\",\"version\":\"1\"}}"},
        {0, "notifications/initialized", NULL},
        {2, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}"},
    };
    outcome_t o = RAN_OK;
    for (size_t i = 0; i < sizeof script / sizeof *script && o == RAN_OK; i++) {
        json_t *msg = legacy_message(script[i].id, script[i].method, script[i].params);
        json_t *response;
        submitted_t how = submit(f, conn, msg, &response, why, why_size);
        drop(msg);
        if (!script[i].id) {
            /* A notification: nothing comes back, and a failure to take
             * it cannot be told to anyone. */
            if (how == SUBMIT_WRONG)
                o = RAN_WRONG;
            drop(response);
            continue;
        }
        o = judge(how, response, 0, why, why_size);
        if (o == RAN_OK && i == 0 &&
            strcmp(text_of(json_object_get(result_of(response), "protocolVersion")),
                   "2025-11-25") != 0)
            o = RAN_WRONG, snprintf(why, why_size, "initialize without protocolVersion");
        if (o == RAN_OK && i == 2 && !is_echo_legacy(result_of(response)))
            o = RAN_WRONG, snprintf(why, why_size, "tools/call without its text");
        drop(response);
    }
    mcp_conn_free(conn);
    return o;
}

/* Judges a batch's answer: both members' results, or -32603 where one
 * failed; a member left out is an answer lost. */
static outcome_t judge_batch(submitted_t how, json_t *response, char *why, size_t why_size)
{
    if (how != ANSWERED || !json_is_array(response))
        return judge(how, response, 0, why, why_size); /* refused whole */
    bool failed = false, seen[2] = {false, false};
    size_t i;
    json_t *member;
    json_array_foreach(response, i, member) {
        json_int_t id = json_integer_value(json_object_get(member, "id"));
        if (id != 2 && id != 3) {
            char *text;
            EXEMPT(text = json_dumps(member, JSON_COMPACT));
            snprintf(why, why_size, "a batch answer with id %lld: %s", (long long)id, text);
            EXEMPT(free(text));
            return RAN_WRONG;
        }
        seen[id - 2] = true;
        const json_t *error = json_object_get(member, "error");
        if (error && json_integer_value(json_object_get(error, "code")) == -32603)
            failed = true;
        else if (error || !is_echo_legacy(result_of(member))) {
            char *text;
            EXEMPT(text = json_dumps(member, JSON_COMPACT));
            snprintf(why, why_size, "batch member %lld: neither its text nor -32603: %s",
                     (long long)id, text);
            EXEMPT(free(text));
            return RAN_WRONG;
        }
    }
    if (!seen[0] || !seen[1])
        WRONG("a batch answer without member %d", seen[0] ? 3 : 2);
    return failed ? RAN_FAILED : RAN_OK;
}

/* A 2025-03-26 stdio conversation whose two tools/calls come as one
 * JSON-RPC batch. */
static outcome_t run_batch(void *ctx, char *why, size_t why_size)
{
    server_fixture_t *f = ctx;
    mcp_conn_t *conn = mcp_conn_new(f->srv, MCP_TRANSPORT_STDIO);
    if (!conn)
        return RAN_FAILED;
    json_t *init = legacy_message(1, "initialize",
                                  "{\"protocolVersion\":\"2025-03-26\",\"capabilities\":{},"
                                  "\"clientInfo\":{\"name\":\"oom\",\"version\":\"1\"}}");
    json_t *response;
    outcome_t o = judge(submit(f, conn, init, &response, why, why_size), response, 0, why,
                        why_size);
    drop(init);
    drop(response);
    if (o == RAN_OK) {
        json_t *initialized = legacy_message(0, "notifications/initialized", NULL);
        if (submit(f, conn, initialized, &response, why, why_size) == SUBMIT_WRONG)
            o = RAN_WRONG;
        drop(initialized);
        drop(response);
    }
    if (o == RAN_OK) {
        json_t *batch;
        EXEMPT(batch = json_pack(
                   "[o, o]",
                   legacy_message(2, "tools/call",
                                  "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}"),
                   legacy_message(3, "tools/call",
                                  "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}")));
        o = judge_batch(submit(f, conn, batch, &response, why, why_size), response, why,
                        why_size);
        drop(batch);
        drop(response);
    }
    mcp_conn_free(conn);
    return o;
}

/* Every request of the server core, with the sink taking trees or text. */
static void sweep_server(bool send_text)
{
    server_fixture_t f = {.srv = new_server(), .send_text = send_text};
    static const struct {
        const char *name, *method, *params;
        int clean_error;
        result_check_fn check;
    } requests[] = {
        {"tools/call echo", "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}",
         0, is_echo},
        {"tools/call inline, progress, structured", "tools/call",
         "{\"name\":\"structured\",\"arguments\":{\"n\":42},\"_meta\":{\"progressToken\":7}}", 0,
         is_structured},
        {"tools/list", "tools/list", NULL, 0, is_tool_list},
        {"server/discover", "server/discover", NULL, 0, is_discover},
        {"resources/read", "resources/read", "{\"uri\":\"x:/a\"}", 0, is_contents},
        {"resources/read of a template", "resources/read", "{\"uri\":\"x:/t/b\"}", 0, NULL},
        {"resources/list", "resources/list", NULL, 0, is_resource_list},
        {"prompts/get", "prompts/get", "{\"name\":\"greet\"}", 0, is_prompt},
        {"tools/call of an unknown tool", "tools/call", "{\"name\":\"nope\"}", -32602, NULL},
        {"an unknown method", "no/such", NULL, -32601, NULL},
    };
    char name[128];
    for (size_t i = 0; i < sizeof requests / sizeof *requests; i++) {
        one_request_t r = {&f, requests[i].method, requests[i].params, requests[i].clean_error,
                           requests[i].check};
        snprintf(name, sizeof name, "server (%s): %s", send_text ? "text" : "tree",
                 requests[i].name);
        sweep(name, run_one_request, &r);
    }
    snprintf(name, sizeof name, "server (%s): MRTR round with requestState",
             send_text ? "text" : "tree");
    sweep(name, run_mrtr, &f);
    snprintf(name, sizeof name, "server (%s): legacy initialize and tools/call",
             send_text ? "text" : "tree");
    sweep(name, run_legacy, &f);
    snprintf(name, sizeof name, "server (%s): a 2025-03-26 batch of two tools/calls",
             send_text ? "text" : "tree");
    sweep(name, run_batch, &f);
    mcp_server_free(f.srv);
    expect_no_findings();
}

static void test_server_core_text(void **state)
{
    sweep_server(true);
}

static void test_server_core_tree(void **state)
{
    sweep_server(false);
}

/* ------------------------------------------------------------------------
 * The client core, over a transport that answers at once
 * ------------------------------------------------------------------------ */

typedef struct script {
    client_transport_t base; /* first */
    int calls; /* tools/call requests seen */
} script_t;

struct client_exchange {
    int unused;
};

static client_exchange_t one_exchange; /* the calls are sequential */

static json_t *answer_tools_call(const json_t *req)
{
    const json_t *p = json_object_get(req, "params");
    const char *name = json_string_value(json_object_get(p, "name"));
    const json_t *id = json_object_get(req, "id");
    if (name && strcmp(name, "confirm") == 0) {
        const json_t *answer = json_object_get(json_object_get(p, "inputResponses"), "q");
        if (!answer)
            return mcp_jsonrpc_result(
                id, json_pack("{s:s, s:{s:{s:s, s:{s:s, s:s, s:{s:s}}}}, s:s}", "resultType",
                              "input_required", "inputRequests", "q", "method",
                              "elicitation/create", "params", "mode", "form", "message",
                              "Sure?", "requestedSchema", "type", "object", "requestState",
                              "opaque-state"));
        const char *state = json_string_value(json_object_get(p, "requestState"));
        const char *action = json_string_value(json_object_get(answer, "action"));
        return mcp_jsonrpc_result(
            id, json_pack("{s:s, s:[{s:s, s:s}]}", "resultType", "complete", "content", "type",
                          "text", "text",
                          state && action && strcmp(state, "opaque-state") == 0 ? action
                                                                                 : "lost"));
    }
    return mcp_jsonrpc_result(
        id, json_pack("{s:s, s:[{s:s, s:s}], s:{s:i}}", "resultType", "complete", "content",
                      "type", "text", "text", "hello", "structuredContent", "n", 1));
}

/* What a 2026-07-28 server would answer. */
static json_t *answer(const json_t *req)
{
    const char *method = json_string_value(json_object_get(req, "method"));
    const json_t *id = json_object_get(req, "id");
    if (strcmp(method, "server/discover") == 0)
        return mcp_jsonrpc_result(
            id, json_pack("{s:s, s:[s], s:{s:{}, s:{}, s:{}}, s:{s:{s:s, s:s}}, s:s}",
                          "resultType", "complete", "supportedVersions", "2026-07-28",
                          "capabilities", "tools", "resources", "prompts", "_meta",
                          "io.modelcontextprotocol/serverInfo", "name", "scripted", "version",
                          "1", "instructions", "be nice"));
    if (strcmp(method, "tools/list") == 0)
        return mcp_jsonrpc_result(
            id, json_pack("{s:s, s:[{s:s, s:{s:s}}, {s:s, s:s, s:{s:s, s:{s:{s:s}}}}]}",
                          "resultType", "complete", "tools", "name", "a", "inputSchema", "type",
                          "object", "name", "b", "description", "B", "inputSchema", "type",
                          "object", "properties", "x", "type", "string"));
    if (strcmp(method, "resources/read") == 0)
        return mcp_jsonrpc_result(id, json_pack("{s:s, s:[{s:s, s:s, s:s}]}", "resultType",
                                                "complete", "contents", "uri", "x:/a",
                                                "mimeType", "text/plain", "text", "A"));
    if (strcmp(method, "tools/call") == 0)
        return answer_tools_call(req);
    return mcp_jsonrpc_error(id, -32601, "Method not found", NULL);
}

static int script_start(client_transport_t *t, const json_t *request,
                        const client_http_hints_t *hints, const client_exchange_events_t *ev,
                        void *user, client_exchange_t **out)
{
    *out = &one_exchange;
    client_outcome_t outcome = {.rc = MCP_OK};
    EXEMPT(outcome.response = answer(request));
    ev->on_done(user, &outcome);
    drop(outcome.response);
    return MCP_OK;
}

static void script_cancel(client_transport_t *t, client_exchange_t *ex, bool notify_peer)
{
    /* Every exchange is done before start() returns. */
}

static void script_release(client_transport_t *t, client_exchange_t *ex)
{
}

static int script_notify(client_transport_t *t, const json_t *msg,
                         const client_http_hints_t *hints)
{
    return MCP_OK;
}

static void script_close(client_transport_t *t)
{
}

static void script_free(client_transport_t *t)
{
    EXEMPT(free(t));
}

static const client_transport_ops_t script_ops = {
    .start = script_start,
    .cancel = script_cancel,
    .release = script_release,
    .notify = script_notify,
    .close = script_close,
    .free = script_free,
};

static int elicit_accept(void *user, const json_t *params, json_t **result_out)
{
    EXEMPT(*result_out = json_pack("{s:s, s:{}}", "action", "accept", "content"));
    return 0;
}

static const mcp_client_options_t client_options = {
    .name = "oom", .version = "1", .spin_us = -1, .disable_cache = true,
    .elicit = elicit_accept};

/* Connects `c` over a new scripted transport. */
static int connect_scripted(mcp_client_t *c, mcp_error_t *err)
{
    script_t *s;
    EXEMPT(s = calloc(1, sizeof *s));
    s->base.ops = &script_ops;
    s->base.hooks = client_transport_hooks(c);
    return client_connect_transport(c, &s->base, MCP_TRANSPORT_STDIO, err);
}

/* A client's whole life: made, connected (server/discover), freed. */
static outcome_t run_client_connect(void *ctx, char *why, size_t why_size)
{
    mcp_error_t err = {0};
    mcp_client_t *c = mcp_client_new(&client_options, &err);
    if (!c) {
        mcp_error_clear(&err);
        return RAN_FAILED; /* the documented failure: NULL with err filled */
    }
    int rc = connect_scripted(c, &err);
    outcome_t o = RAN_OK;
    if (rc == MCP_OK) {
        const json_t *info = mcp_client_server_info(c);
        if (!info || strcmp(text_of(json_object_get(info, "name")), "scripted"))
            o = RAN_WRONG, snprintf(why, why_size, "connected without the serverInfo");
        else if (!mcp_client_instructions(c) || strcmp(mcp_client_instructions(c), "be nice"))
            o = RAN_WRONG, snprintf(why, why_size, "connected without the instructions");
    } else if (rc == MCP_ENOMEM) {
        o = RAN_FAILED;
    } else {
        o = RAN_WRONG;
        snprintf(why, why_size, "connect: %d %s", rc, err.message);
    }
    mcp_error_clear(&err);
    mcp_client_free(c);
    return o;
}

typedef struct client_call {
    mcp_client_t *c;
    const char *what;
} client_call_t;

static outcome_t run_client_call(void *ctx, char *why, size_t why_size)
{
    client_call_t *cc = ctx;
    mcp_error_t err = {0};
    json_t *result = NULL, *args;
    const char *want = NULL; /* content[0].text */
    int rc;
    EXEMPT(args = json_pack("{s:s}", "x", "y"));
    if (strcmp(cc->what, "tools/call") == 0) {
        rc = mcp_client_call_tool(cc->c, "t", args, NULL, &result, &err);
        want = "hello";
    } else if (strcmp(cc->what, "mrtr") == 0) {
        rc = mcp_client_call_tool(cc->c, "confirm", args, NULL, &result, &err);
        want = "accept";
    } else if (strcmp(cc->what, "tools/list") == 0) {
        rc = mcp_client_list_tools_all(cc->c, NULL, &result, &err);
    } else if (strcmp(cc->what, "resources/read") == 0) {
        rc = mcp_client_read_resource(cc->c, "x:/a", NULL, &result, &err);
    } else {
        rc = mcp_client_discover(cc->c, NULL, &result, &err);
    }
    drop(args);
    outcome_t o = RAN_OK;
    if (rc == MCP_ENOMEM) {
        o = RAN_FAILED;
        if (result)
            o = RAN_WRONG, snprintf(why, why_size, "a result with MCP_ENOMEM");
    } else if (rc != MCP_OK) {
        o = RAN_WRONG;
        snprintf(why, why_size, "returned %d (%s)", rc, err.message);
    } else if (!result) {
        o = RAN_WRONG;
        snprintf(why, why_size, "MCP_OK without a result");
    } else if (want) {
        const char *text = first_text(result);
        if (!text || strcmp(text, want) != 0)
            o = RAN_WRONG, snprintf(why, why_size, "the result lacks \"%s\"", want);
    } else if (strcmp(cc->what, "tools/list") == 0) {
        if (json_array_size(result) != 2)
            o = RAN_WRONG, snprintf(why, why_size, "%zu tools of 2", json_array_size(result));
    } else if (strcmp(cc->what, "resources/read") == 0) {
        if (strcmp(text_of(json_object_get(
                       json_array_get(json_object_get(result, "contents"), 0), "text")),
                   "A") != 0)
            o = RAN_WRONG, snprintf(why, why_size, "the contents are missing");
    } else if (!json_is_array(json_object_get(result, "supportedVersions"))) {
        o = RAN_WRONG, snprintf(why, why_size, "a DiscoverResult without supportedVersions");
    }
    mcp_error_clear(&err);
    drop(result);
    return o;
}

static void test_client_core(void **state)
{
    sweep("client: new, connect, free", run_client_connect, NULL);

    mcp_client_t *c = mcp_client_new(&client_options, NULL);
    assert_non_null(c);
    assert_int_equal(connect_scripted(c, NULL), MCP_OK);
    static const char *const calls[] = {"tools/call", "mrtr", "tools/list", "resources/read",
                                        "server/discover"};
    char name[64];
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        client_call_t cc = {c, calls[i]};
        snprintf(name, sizeof name, "client: %s", calls[i]);
        sweep(name, run_client_call, &cc);
    }
    mcp_client_free(c);
    expect_no_findings();
}

/* ------------------------------------------------------------------------
 * The JSON reader and writer, and the requestState codec
 * ------------------------------------------------------------------------ */

static const char document[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
    "\"arguments\":{\"text\":\"h\\u00e9llo \\\"world\\\"\",\"n\":[1,2.5,-0.25,true,false,null],"
    "\"deep\":{\"a\":{\"b\":{\"c\":\"a string long enough not to fit any small inline buffer "
    "of the reader, with an escape\\n in it\"}}}},\"_meta\":{\"progressToken\":\"t\"}}}";

static outcome_t run_json_read(void *ctx, char *why, size_t why_size)
{
    json_error_t error;
    json_t *v = json_read(document, sizeof document - 1, &error);
    if (!v) {
        if (json_error_code(&error) == json_error_out_of_memory)
            return RAN_FAILED;
        WRONG("json_read failed with \"%s\" (not out of memory)", error.text);
    }
    json_t *expected;
    EXEMPT(expected = json_loads(document, 0, NULL));
    bool same = json_equal(v, expected);
    drop(expected);
    drop(v);
    if (!same)
        WRONG("json_read read something else");
    return RAN_OK;
}

static outcome_t run_json_write(void *ctx, char *why, size_t why_size)
{
    json_t *v;
    EXEMPT(v = json_loads(document, 0, NULL));
    outcome_t o = RAN_OK;
    for (int mode = JSON_WRITE_COMPACT; mode <= JSON_WRITE_CANONICAL && o == RAN_OK; mode++) {
        size_t len = 0;
        char *text = json_write(v, (json_write_mode_t)mode, &len);
        if (!text) {
            o = RAN_FAILED;
            break;
        }
        json_t *back;
        EXEMPT(back = json_loadb(text, len, 0, NULL));
        if (!json_equal(back, v))
            o = RAN_WRONG, snprintf(why, why_size, "json_write wrote something else");
        drop(back);
        free(text);
    }
    size_t len = 0;
    char *text = o == RAN_OK ? json_write_result(json_object_get(v, "id"),
                                                 json_object_get(v, "params"), &len)
                             : NULL;
    if (o == RAN_OK && !text)
        o = RAN_FAILED;
    free(text);
    drop(v);
    return o;
}

static outcome_t run_codec(void *ctx, char *why, size_t why_size)
{
    mcp_codec_t *codec = ctx;
    json_t *payload, *params;
    EXEMPT(payload = json_pack("{s:s, s:[i, i]}", "step", "asked", "seen", 1, 2));
    EXEMPT(params = json_pack("{s:s, s:{s:s}}", "name", "confirm", "arguments", "x", "y"));
    mcp_state_binding_t binding = {.principal = "alice", .method = "tools/call",
                                   .params = params};
    mcp_error_t err = {0};
    char *sealed = NULL;
    json_t *opened = NULL;
    outcome_t o = RAN_OK;
    int rc = mcp_codec_seal(codec, payload, &binding, &sealed, &err);
    if (rc == MCP_OK && !sealed)
        o = RAN_WRONG, snprintf(why, why_size, "sealed without a state");
    else if (rc == MCP_OK)
        rc = mcp_codec_open(codec, sealed, &binding, &opened, &err);
    if (o == RAN_OK) {
        if (rc == MCP_ENOMEM)
            o = opened ? RAN_WRONG : RAN_FAILED;
        else if (rc != MCP_OK)
            o = RAN_WRONG, snprintf(why, why_size, "codec: %d %s", rc,
                                     err.message);
        else if (!json_equal(opened, payload))
            o = RAN_WRONG, snprintf(why, why_size, "opened another payload");
    }
    mcp_error_clear(&err);
    free(sealed);
    drop(opened);
    drop(payload);
    drop(params);
    return o;
}

static void test_json_and_codec(void **state)
{
    sweep("json_read", run_json_read, NULL);
    sweep("json_write", run_json_write, NULL);
    mcp_codec_t *codec = mcp_codec_aead_new(test_ring(), NULL, NULL);
    assert_non_null(codec);
    sweep("requestState seal and open", run_codec, codec);
    mcp_codec_free(codec);
    expect_no_findings();
}

int main(void)
{
    json_set_alloc_funcs(json_alloc, json_release);
    /* OOM_TEST=<pattern> runs only the matching tests, when debugging. */
    if (getenv("OOM_TEST"))
        cmocka_set_test_filter(getenv("OOM_TEST"));
    if (getenv("OOM_TRACE"))
        trace_at = atol(getenv("OOM_TRACE"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_and_codec),
        cmocka_unit_test(test_server_core_text),
        cmocka_unit_test(test_server_core_tree),
        cmocka_unit_test(test_client_core),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    print_message("%ld runs\n", total_runs);
    return failed;
}
