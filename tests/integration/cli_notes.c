/*
 * The mcp command against libmcp's example server (examples/notes_server),
 * which serves both eras, over stdio and over Streamable HTTP, in the
 * modern era and (with --era legacy) the legacy one: every command, its
 * --json document checked field by field and its human output checked for
 * what a person needs to see.
 *
 * Each test runs once per transport and era (four cmocka groups). Over
 * stdio every mcp run starts its own server; over HTTP all runs of a group
 * share one, so the tests that change notes use names of their own.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli_harness.h"

typedef struct fixture {
    cli_target_t target;
    http_server_t http;
    bool over_http;
    bool legacy;
} fixture_t;

static const char *const notes_argv[] = {MCP_NOTES_SERVER, NULL};
static const char *const legacy_options[] = {"--era", "legacy", NULL};
static fixture_t fixtures[4];

/* Group n: bit 0 is HTTP, bit 1 the legacy era. */
static int setup(void **state, int n)
{
    fixture_t *f = &fixtures[n];
    memset(f, 0, sizeof *f);
    f->over_http = n & 1;
    f->legacy = n & 2;
    if (f->over_http) {
        http_server_start(&f->http, MCP_NOTES_SERVER);
        f->target.url = f->http.url;
    } else {
        f->target.server = notes_argv;
    }
    f->target.options = f->legacy ? legacy_options : NULL;
    *state = f;
    return 0;
}

static int setup_stdio(void **state) { return setup(state, 0); }
static int setup_http(void **state) { return setup(state, 1); }
static int setup_stdio_legacy(void **state) { return setup(state, 2); }
static int setup_http_legacy(void **state) { return setup(state, 3); }

static int teardown(void **state)
{
    fixture_t *f = *state;
    if (f->over_http)
        http_server_stop(&f->http);
    return 0;
}

/* ------------------------------------------------------------------------
 * info
 * ------------------------------------------------------------------------ */

static void test_info(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "--json", "info");
    assert_status(&r, EXIT_OK);
    assert_non_null(r.json);
    assert_string_equal(jstr(r.json, "transport"), f->over_http ? "http" : "stdio");
    if (f->over_http)
        assert_string_equal(jstr(r.json, "target"), f->http.url);
    else
        assert_string_equal(jstr(r.json, "target/0"), MCP_NOTES_SERVER);
    assert_string_equal(jstr(r.json, "era"), f->legacy ? "legacy" : "modern");
    assert_string_equal(jstr(r.json, "protocolVersion"), f->legacy ? "2025-11-25" : "2026-07-28");
    /* How the era was decided: the probe, or the option. */
    assert_string_equal(jstr(r.json, "verdict/kind"), f->legacy ? "legacy" : "modern");
    assert_int_equal(json_is_true(jpath(r.json, "verdict/probed")), !f->legacy);
    assert_string_equal(jstr(r.json, "verdict/reason"),
                        f->legacy ? "era option" : "server/discover succeeded");
    assert_string_equal(jstr(r.json, "serverInfo/name"), "notes-server");
    assert_string_equal(jstr(r.json, "serverInfo/title"), "Notes");
    assert_true(json_is_string(jpath(r.json, "serverInfo/version")));
    assert_true(json_is_true(jpath(r.json, "capabilities/tools/listChanged")));
    assert_true(json_is_true(jpath(r.json, "capabilities/resources/subscribe")));
    assert_true(json_is_object(jpath(r.json, "capabilities/completions")));
    assert_contains(jstr(r.json, "instructions"), "Keeps short notes");
    proc_result_free(&r);

    CLI(&r, &f->target, "info");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "notes-server");
    assert_contains(r.out, f->legacy ? "2025-11-25 (legacy era)"
                                     : "2026-07-28 (modern era; probe: server/discover succeeded)");
    assert_contains(r.out, "resources (listChanged, subscribe)");
    assert_contains(r.out, f->over_http ? "Streamable HTTP" : "stdio");
    assert_contains(r.out, "Keeps short notes");
    assert_string_equal(r.err, "");
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * Lists
 * ------------------------------------------------------------------------ */

static void test_tools(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "tools", "--json");
    assert_status(&r, EXIT_OK);
    const json_t *tools = jpath(r.json, "tools");
    static const char *const names[] = {"add",  "add_note", "countdown", "delete_note",
                                        "echo", "export_notes"};
    const size_t n = sizeof names / sizeof names[0];
    assert_int_equal(json_array_size(tools), n);
    for (size_t i = 0; i < n; i++) {
        const json_t *tool = json_array_get(tools, i);
        assert_string_equal(jstr(tool, "name"), names[i]);
        assert_string_equal(jstr(tool, "inputSchema/type"), "object");
        assert_true(json_is_string(jpath(tool, "description")));
    }
    assert_string_equal(jstr(tools, "0/outputSchema/properties/sum/type"), "number");
    assert_true(json_is_true(jpath(tools, "4/annotations/readOnlyHint")));
    proc_result_free(&r);

    CLI(&r, &f->target, "tools");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "NAME");
    assert_contains(r.out, "DESCRIPTION");
    assert_contains(r.out, "a:number b:number");
    assert_contains(r.out, "[seconds:integer]");
    assert_contains(r.out, "Echo the text back");
    assert_not_contains(r.out, "\033["); /* no colour off a terminal */
    proc_result_free(&r);
}

static void test_resources_and_templates(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "--json", "resources");
    assert_status(&r, EXIT_OK);
    assert_int_equal(json_array_size(jpath(r.json, "resources")), 1);
    assert_string_equal(jstr(r.json, "resources/0/uri"), "notes://index");
    assert_string_equal(jstr(r.json, "resources/0/name"), "index");
    assert_string_equal(jstr(r.json, "resources/0/mimeType"), "application/json");
    proc_result_free(&r);

    CLI(&r, &f->target, "resources");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "notes://index");
    assert_contains(r.out, "The names of all notes");
    proc_result_free(&r);

    CLI(&r, &f->target, "--json", "templates");
    assert_status(&r, EXIT_OK);
    assert_int_equal(json_array_size(jpath(r.json, "resourceTemplates")), 1);
    assert_string_equal(jstr(r.json, "resourceTemplates/0/uriTemplate"), "note://{name}");
    assert_string_equal(jstr(r.json, "resourceTemplates/0/mimeType"), "text/plain");
    proc_result_free(&r);

    CLI(&r, &f->target, "templates");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "URI TEMPLATE");
    assert_contains(r.out, "note://{name}");
    proc_result_free(&r);
}

static void test_prompts(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "--json", "prompts");
    assert_status(&r, EXIT_OK);
    assert_int_equal(json_array_size(jpath(r.json, "prompts")), 1);
    assert_string_equal(jstr(r.json, "prompts/0/name"), "summarize_notes");
    assert_string_equal(jstr(r.json, "prompts/0/arguments/0/name"), "style");
    proc_result_free(&r);

    CLI(&r, &f->target, "prompts");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "summarize_notes");
    assert_contains(r.out, "[style]");
    proc_result_free(&r);

    CLI(&r, &f->target, "--json", "prompt", "summarize_notes", "style=detailed");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "description"), "Summarize the notes");
    assert_string_equal(jstr(r.json, "messages/0/role"), "user");
    assert_string_equal(jstr(r.json, "messages/0/content/type"), "text");
    assert_contains(jstr(r.json, "messages/0/content/text"), "(detailed)");
    proc_result_free(&r);

    CLI(&r, &f->target, "prompt", "summarize_notes");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "user:\n");
    assert_contains(r.out, "Summarize these notes (brief)");
    proc_result_free(&r);

    /* A prompt argument it does not declare. */
    CLI(&r, &f->target, "prompt", "summarize_notes", "tone=dry");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "no argument \"tone\" (it takes: style)");
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * call
 * ------------------------------------------------------------------------ */

static void test_call(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "--json", "call", "echo", "text=hello, MCP");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "content/0/type"), "text");
    assert_string_equal(jstr(r.json, "content/0/text"), "hello, MCP");
    /* Legacy results too (the client adds resultType). */
    assert_string_equal(jstr(r.json, "resultType"), "complete");
    assert_false(json_is_true(jpath(r.json, "isError")));
    proc_result_free(&r);

    CLI(&r, &f->target, "call", "echo", "text=hello");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "hello\n");
    proc_result_free(&r);

    /* Structured output; numbers typed by the schema. */
    CLI(&r, &f->target, "--json", "call", "add", "a=2", "b=40.5");
    assert_status(&r, EXIT_OK);
    assert_true(json_is_number(jpath(r.json, "structuredContent/sum")));
    assert_true(json_number_value(jpath(r.json, "structuredContent/sum")) == 42.5);
    json_t *text = json_loads(jstr(r.json, "content/0/text"), 0, NULL);
    assert_true(json_number_value(json_object_get(text, "sum")) == 42.5);
    json_decref(text);
    proc_result_free(&r);
}

/* KEY=VALUE is typed by the input schema; KEY:=JSON and --args bypass it. */
static void test_call_argument_typing(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    /* "42" for a string property stays a string. */
    CLI(&r, &f->target, "--json", "call", "echo", "text=42");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "content/0/text"), "42");
    proc_result_free(&r);

    CLI(&r, &f->target, "--json", "call", "add", "--args", "{\"a\": 1}", "b:=2");
    assert_status(&r, EXIT_OK);
    assert_true(json_number_value(jpath(r.json, "structuredContent/sum")) == 3);
    proc_result_free(&r);

    /* A word overrides --args. */
    CLI(&r, &f->target, "--json", "call", "add", "--args", "{\"a\": 1, \"b\": 1}", "b=10");
    assert_status(&r, EXIT_OK);
    assert_true(json_number_value(jpath(r.json, "structuredContent/sum")) == 11);
    proc_result_free(&r);
}

static void test_call_with_progress(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "call", "countdown", "seconds=2");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "Lift-off after 2 seconds!\n");
    assert_contains(r.err, "progress 0/2: counting down");
    assert_contains(r.err, "progress 1/2: counting down");
    assert_contains(r.err, "progress 2/2: done");
    proc_result_free(&r);
}

/* delete_note asks for confirmation: answered by flags. */
static void test_call_with_confirmation(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "call", "delete_note", "name=welcome", "--decline");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "Kept the note \"welcome\".\n");
    assert_contains(r.err, "Really delete the note \"welcome\"?");
    assert_contains(r.err, "declined");
    proc_result_free(&r);

    CLI(&r, &f->target, "call", "delete_note", "name=welcome", "--answer", "confirm=no");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "Kept the note \"welcome\".\n");
    proc_result_free(&r);

    /* Over HTTP the server is shared: delete a note of this test's own. */
    const char *doomed = "welcome";
    if (f->over_http) {
        CLI(&r, &f->target, "call", "add_note", "name=doomed", "text=bye");
        assert_status(&r, EXIT_OK);
        proc_result_free(&r);
        doomed = "doomed";
    }
    char word[64];
    snprintf(word, sizeof word, "name=%s", doomed);
    CLI(&r, &f->target, "--json", "call", "delete_note", word, "--yes");
    assert_status(&r, EXIT_OK);
    char expected[128];
    snprintf(expected, sizeof expected, "Deleted the note \"%s\".", doomed);
    assert_string_equal(jstr(r.json, "content/0/text"), expected);
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * read, complete, ping
 * ------------------------------------------------------------------------ */

static void test_read(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "--json", "read", "notes://index");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "contents/0/uri"), "notes://index");
    assert_string_equal(jstr(r.json, "contents/0/mimeType"), "application/json");
    json_t *names = json_loads(jstr(r.json, "contents/0/text"), 0, NULL);
    assert_true(json_is_array(names));
    json_decref(names);
    proc_result_free(&r);

    CLI(&r, &f->target, "call", "add_note", "name=shopping", "text=milk, bread");
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);
    if (f->over_http) { /* over stdio the note died with its server */
        CLI(&r, &f->target, "read", "note://shopping");
        assert_status(&r, EXIT_OK);
        assert_string_equal(r.out, "milk, bread\n");
        proc_result_free(&r);
    }

    CLI(&r, &f->target, "read", "note://no-such-note");
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "resources/read note://no-such-note");
    proc_result_free(&r);
}

static void test_complete(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "--json", "complete", "prompt", "summarize_notes", "style=b");
    assert_status(&r, EXIT_OK);
    const json_t *values = jpath(r.json, "completion/values");
    assert_int_equal(json_array_size(values), 2);
    assert_string_equal(jstr(values, "0"), "brief");
    assert_string_equal(jstr(values, "1"), "bullet points");
    proc_result_free(&r);

    CLI(&r, &f->target, "complete", "resource", "note://{name}", "name=wel");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "welcome\n");
    proc_result_free(&r);

    CLI(&r, &f->target, "complete", "prompt", "summarize_notes", "style");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "brief\ndetailed\nbullet points\n");
    proc_result_free(&r);

    CLI(&r, &f->target, "complete", "tool", "x", "y");
    assert_status(&r, EXIT_USAGE);
    proc_result_free(&r);
}

static void test_ping(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "--json", "ping");
    assert_status(&r, EXIT_OK);
    /* A modern server has no ping: server/discover stands in. */
    assert_string_equal(jstr(r.json, "method"), f->legacy ? "ping" : "server/discover");
    assert_true(json_number_value(jpath(r.json, "milliseconds")) >= 0);
    proc_result_free(&r);

    CLI(&r, &f->target, "ping");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, f->legacy ? "notes-server answered ping in"
                                     : "notes-server answered server/discover in");
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * listen
 * ------------------------------------------------------------------------ */

/* Over HTTP: a listen receives the update another mcp's call causes. */
static void test_listen_receives_update(void **state)
{
    fixture_t *f = *state;
    if (!f->over_http)
        skip(); /* each stdio mcp has its own server: nobody else can change it */
    proc_t listener;
    cli_start(&listener, &f->target, NULL,
              (const char *const[]){"--json", "listen", "--subscribe", "notes://index", "--count",
                                    "2", "--timeout", "30", NULL});
    assert_true(proc_wait_for(&listener, PROC_STDERR, "listening for", 20000));

    proc_result_t r;
    CLI(&r, &f->target, "call", "add_note", "name=listened", "text=hi");
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);
    CLI(&r, &f->target, "call", "add_note", "name=listened", "text=again");
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);

    proc_finish(&listener, &r, 30000);
    assert_status(&r, EXIT_OK);
    /* JSON lines: the acknowledgement, then the two updates. */
    char *second = strchr(r.out, '\n');
    assert_non_null(second);
    *second++ = '\0';
    json_t *ack = json_loads(r.out, 0, NULL);
    assert_string_equal(jstr(ack, "method"), "notifications/subscriptions/acknowledged");
    assert_string_equal(jstr(ack, "params/notifications/resourceSubscriptions/0"),
                        "notes://index");
    json_decref(ack);
    for (int i = 0; i < 2; i++) {
        char *next = strchr(second, '\n');
        assert_non_null(next);
        *next++ = '\0';
        json_t *event = json_loads(second, 0, NULL);
        assert_string_equal(jstr(event, "method"), "notifications/resources/updated");
        assert_string_equal(jstr(event, "params/uri"), "notes://index");
        json_decref(event);
        second = next;
    }
    assert_string_equal(second, "");
    proc_result_free(&r);

    /* The human form of the same. */
    cli_start(&listener, &f->target, NULL,
              (const char *const[]){"listen", "--resources", "--subscribe", "notes://index",
                                    "--count", "1", "--timeout", "30", NULL});
    assert_true(proc_wait_for(&listener, PROC_STDERR, "listening for", 20000));
    assert_contains(proc_output(&listener, PROC_STDERR),
                    "resources list changes; updates of notes://index");
    CLI(&r, &f->target, "call", "add_note", "name=listened", "text=third");
    proc_result_free(&r);
    proc_finish(&listener, &r, 30000);
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "updated notes://index");
    proc_result_free(&r);
}

/* Ends with --timeout: fine without --count, a failure when --count was
 * not reached. */
static void test_listen_timeout(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "--json", "listen", "--timeout", "1");
    assert_status(&r, EXIT_OK);
    json_t *ack = json_loads(r.out, JSON_DISABLE_EOF_CHECK, NULL);
    assert_string_equal(jstr(ack, "method"), "notifications/subscriptions/acknowledged");
    assert_true(json_is_true(jpath(ack, "params/notifications/toolsListChanged")));
    assert_true(json_is_true(jpath(ack, "params/notifications/promptsListChanged")));
    assert_true(json_is_true(jpath(ack, "params/notifications/resourcesListChanged")));
    json_decref(ack);
    proc_result_free(&r);

    CLI(&r, &f->target, "--json", "listen", "--tools", "--count", "1", "--timeout", "1");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "only 0 of 1 notifications");
    proc_result_free(&r);

    /* The connection did not break (the events did not come): what the
     * server wrote on its stderr does not explain that, and is not shown
     * as if it did. */
    if (!f->over_http) {
        const char *const chatty[] = {"/bin/sh", "-c", "echo 'notes: ready' >&2; exec \"$0\"",
                                      MCP_NOTES_SERVER, NULL};
        const cli_target_t target = {.server = chatty, .options = f->target.options};
        CLI(&r, &target, "listen", "--tools", "--count", "1", "--timeout", "1");
        assert_status(&r, EXIT_CONNECTION);
        assert_contains(r.err, "only 0 of 1 notifications");
        assert_not_contains(r.err, "what the server last wrote");
        assert_not_contains(r.err, "notes: ready");
        proc_result_free(&r);
    }

    /* Ctrl-C is how listening ends: a success. */
    proc_t listener;
    cli_start(&listener, &f->target, NULL, (const char *const[]){"listen", NULL});
    assert_true(proc_wait_for(&listener, PROC_STDERR, "listening for", 20000));
    proc_signal(&listener, SIGINT);
    proc_finish(&listener, &r, 20000);
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * --verbose
 * ------------------------------------------------------------------------ */

static void test_verbose_shows_the_wire(void **state)
{
    fixture_t *f = *state;
    proc_result_t r;
    CLI(&r, &f->target, "-v", "call", "echo", "text=traced");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "traced\n");
    /* Each request and its answer, with its direction. */
    assert_contains(r.err, f->legacy ? "\"method\":\"initialize\""
                                     : "\"method\":\"server/discover\"");
    assert_contains(r.err, "\"method\":\"tools/list\"");
    assert_contains(r.err, "\"method\":\"tools/call\"");
    assert_contains(r.err, "\"text\":\"traced\"");
    assert_true(strstr(r.err, "-> {\"jsonrpc\"") || strstr(r.err, "\u2192 {\"jsonrpc\""));
    assert_true(strstr(r.err, "<- {\"jsonrpc\"") || strstr(r.err, "\u2190 {\"jsonrpc\""));
    proc_result_free(&r);

    CLI(&r, &f->target, "call", "echo", "text=quiet");
    assert_not_contains(r.err, "jsonrpc");
    proc_result_free(&r);
}

#define BOTH(fn) cmocka_unit_test(fn)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_info),
        BOTH(test_tools),
        BOTH(test_resources_and_templates),
        BOTH(test_prompts),
        BOTH(test_call),
        BOTH(test_call_argument_typing),
        BOTH(test_call_with_progress),
        BOTH(test_call_with_confirmation),
        BOTH(test_read),
        BOTH(test_complete),
        BOTH(test_ping),
        BOTH(test_listen_receives_update),
        BOTH(test_listen_timeout),
        BOTH(test_verbose_shows_the_wire),
    };
    int failed = cmocka_run_group_tests_name("stdio", tests, setup_stdio, teardown);
    failed += cmocka_run_group_tests_name("http", tests, setup_http, teardown);
    failed += cmocka_run_group_tests_name("stdio, legacy era", tests, setup_stdio_legacy, teardown);
    failed += cmocka_run_group_tests_name("http, legacy era", tests, setup_http_legacy, teardown);
    return failed;
}
