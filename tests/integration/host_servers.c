/*
 * A host over several real servers at once, configured from an mcpServers
 * document:
 *
 *   notes       examples/notes_server over stdio            modern
 *   web         examples/notes_server --http                modern, HTTP
 *   everything  @modelcontextprotocol/server-everything     legacy (2025-11-25), stdio
 *   dyn         servers/host_test_server over stdio         modern; adds tools on request
 *
 * The aggregated lists name every server's entries; calls by aggregated
 * name reach the right server (echo exists on all four and stays apart);
 * the host's callbacks (elicitation, sampling, roots, progress, logs) are
 * told which server asked; a tool added on one server and a resource added
 * on the legacy one show up through list-changed notifications; a stdio
 * server killed (modern, then legacy) is restarted while the others keep
 * answering.
 *
 * server-everything is started through sh so that the test learns its pid;
 * it runs over stdio only (nothing listens on the network) and its get-env
 * tool is never called. A missing server-everything FAILS the test: it is
 * the suite's legacy peer (run `npm ci` in tests/interop).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "host_harness.h"
#include "http_child.h"

#define INTEROP_DIR MCP_SOURCE_DIR "/tests/interop"
#define EVERYTHING INTEROP_DIR "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

typedef struct fixture {
    recorder_t rec;
    mcp_host_t *host;
    http_child_t web;            /* notes_server --http */
    char notes_pidfile[64];
    char everything_pidfile[64];
} fixture_t;

static fixture_t fx;

/* ------------------------------------------------------------------------
 * The host's callbacks
 * ------------------------------------------------------------------------ */

static int elicit(void *user, const char *server, const json_t *params, json_t **result_out)
{
    record_asked(user, "elicit", server);
    *result_out = json_pack("{s:s, s:{s:b}}", "action", "accept", "content", "confirm", 1);
    return 0;
}

static int sample(void *user, const char *server, const json_t *params, json_t **result_out)
{
    record_asked(user, "sample", server);
    *result_out = json_pack("{s:s, s:{s:s, s:s}, s:s, s:s}", "role", "assistant", "content",
                            "type", "text", "text", "sampled", "model", "test-model",
                            "stopReason", "endTurn");
    return 0;
}

static int roots(void *user, const char *server, json_t **result_out)
{
    record_asked(user, "roots", server);
    *result_out = json_pack("{s:[{s:s}]}", "roots", "uri", "file:///tmp");
    return 0;
}

static void progress(void *user, const char *server, double p, double total, const char *message)
{
    record_asked(user, "progress", server);
}

static void log_message(void *user, const char *server, const char *level, const char *logger,
                        const json_t *data)
{
    record_asked(user, "log", server);
}

/* ------------------------------------------------------------------------
 * The servers
 * ------------------------------------------------------------------------ */

static pid_t read_pid(const char *path)
{
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return (pid_t)pid;
}

static int setup(void **state)
{
    recorder_init(&fx.rec);
    if (access(EVERYTHING, R_OK) != 0 || system("node --version >/dev/null 2>&1") != 0) {
        fprintf(stderr, "host_servers: FAILED: @modelcontextprotocol/server-everything is "
                        "missing: run `npm ci` in tests/interop (scripts/install-deps.sh "
                        "check) with node on PATH\n");
        return -1;
    }
    if (http_child_start(&fx.web, (const char *const[]){NOTES_SERVER, "--http", NULL}, 10000) != 0) {
        fx.web.pid = 0; /* stopped already */
        return -1;
    }
    snprintf(fx.notes_pidfile, sizeof fx.notes_pidfile, "/tmp/libmcp-host-notes-%d.pid",
             (int)getpid());
    snprintf(fx.everything_pidfile, sizeof fx.everything_pidfile,
             "/tmp/libmcp-host-everything-%d.pid", (int)getpid());

    fx.host = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "libmcp-host-test", .version = "1.0", .timeout_ms = 30000,
                   .log_level = "info"},
        .callbacks = {.elicit = elicit, .sample = sample, .roots = roots, .progress = progress,
                      .log = log_message, .changed = on_changed,
                      .server_state = on_server_state, .user = &fx.rec},
        .retry_initial_ms = 100, .retry_max_ms = 2000}, NULL);
    assert_non_null(fx.host);

    /* The servers come from a document, as an application's would. */
    char config[4096];
    snprintf(config, sizeof config,
             "{\"mcpServers\": {\n"
             "  \"notes\": {\"command\": \"/bin/sh\",\n"
             "             \"args\": [\"-c\", \"echo $$ > %s; exec %s\"]},\n"
             "  \"web\": {\"type\": \"http\", \"url\": \"%s\"},\n"
             "  \"everything\": {\"command\": \"/bin/sh\",\n"
             "                  \"args\": [\"-c\", \"echo $$ > %s; exec node %s stdio\"]},\n"
             "  \"dyn\": {\"command\": \"%s\", \"args\": [\"dyn\"], \"timeoutMs\": 20000}\n"
             "}}",
             fx.notes_pidfile, NOTES_SERVER, fx.web.url, fx.everything_pidfile, EVERYTHING,
             HOST_TEST_SERVER);
    mcp_error_t err = {0};
    if (mcp_host_load_config(fx.host, config, strlen(config), &err) != MCP_OK)
        fail_msg("%s", err.message);
    *state = &fx;
    return 0;
}

/* Also after a failed setup: only what was started is stopped. */
static int teardown(void **state)
{
    mcp_host_free(fx.host);
    int status = fx.web.pid > 0 ? http_child_stop(&fx.web, 10000) : 0;
    unlink(fx.notes_pidfile);
    unlink(fx.everything_pidfile);
    recorder_clear(&fx.rec);
    return status == 0 ? 0 : -1; /* notes_server --http exits cleanly */
}

/* ------------------------------------------------------------------------
 * The tests, in order: each builds on the host the previous ones used
 * ------------------------------------------------------------------------ */

static void test_all_connect(void **state)
{
    json_t *servers = mcp_host_servers(fx.host);
    char *names = json_dumps(servers, JSON_COMPACT);
    assert_string_equal(names, "[\"notes\",\"web\",\"everything\",\"dyn\"]");
    free(names);
    json_decref(servers);

    assert_int_equal(mcp_host_connect(fx.host, -1), 4);
    static const char *const all[] = {"notes", "web", "everything", "dyn"};
    for (size_t i = 0; i < 4; i++) {
        assert_true(has_state(fx.host, all[i], MCP_HOST_READY));
        assert_int_equal(state_count(&fx.rec, all[i], MCP_HOST_READY), 1);
    }
    /* Each server's era, hidden behind the same calls. */
    mcp_client_t *c = mcp_host_client_acquire(fx.host, "everything");
    assert_non_null(c);
    assert_int_equal(mcp_client_era(c), MCP_ERA_LEGACY);
    mcp_host_client_release(fx.host, c);
    c = mcp_host_client_acquire(fx.host, "web");
    assert_int_equal(mcp_client_era(c), MCP_ERA_MODERN);
    mcp_host_client_release(fx.host, c);
}

static void test_aggregated_lists(void **state)
{
    json_t *tools = mcp_host_tools(fx.host);
    static const struct {
        const char *name, *server, *own;
    } expect[] = {
        {"notes__echo", "notes", "echo"},       {"notes__add_note", "notes", "add_note"},
        {"web__echo", "web", "echo"},           {"web__countdown", "web", "countdown"},
        {"everything__echo", "everything", "echo"},
        {"everything__get-sum", "everything", "get-sum"},
        {"dyn__echo", "dyn", "echo"},           {"dyn__add_tool", "dyn", "add_tool"},
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        const json_t *found = NULL;
        size_t j;
        json_t *t;
        json_array_foreach(tools, j, t)
            if (strcmp(json_string_value(json_object_get(t, "name")), expect[i].name) == 0)
                found = t;
        if (!found)
            fail_msg("no %s in the aggregated tools", expect[i].name);
        const json_t *meta = json_object_get(found, "_meta");
        assert_string_equal(json_string_value(json_object_get(meta, "io.libmcp/server")),
                            expect[i].server);
        assert_string_equal(json_string_value(json_object_get(meta, "io.libmcp/tool")),
                            expect[i].own);
        assert_non_null(json_object_get(found, "inputSchema")); /* the server's object */
        char *server, *tool;
        assert_int_equal(mcp_host_resolve_tool(fx.host, expect[i].name, &server, &tool), MCP_OK);
        assert_string_equal(server, expect[i].server);
        assert_string_equal(tool, expect[i].own);
        free(server);
        free(tool);
    }
    /* Servers keep their order: notes' tools before web's. */
    size_t i;
    json_t *t;
    const char *first = json_string_value(
        json_object_get(json_object_get(json_array_get(tools, 0), "_meta"), "io.libmcp/server"));
    assert_string_equal(first, "notes");
    json_array_foreach(tools, i, t)
        assert_non_null(strstr(json_string_value(json_object_get(t, "name")), "__"));
    json_decref(tools);

    assert_true(lists_name(mcp_host_prompts(fx.host), "name", "notes__summarize_notes"));
    assert_true(lists_name(mcp_host_prompts(fx.host), "name", "everything__simple-prompt"));
    assert_true(lists_name(mcp_host_prompts(fx.host), "name", "dyn__greet"));
    assert_true(lists_name(mcp_host_resources(fx.host), "uri", "notes://index"));
    assert_true(lists_name(mcp_host_resources(fx.host), "uri", "test://dyn"));
    assert_true(lists_name(mcp_host_resource_templates(fx.host), "uriTemplate", "note://{name}"));
    assert_true(lists_name(mcp_host_resource_templates(fx.host), "uriTemplate",
                           "test://dyn/item/{id}"));
}

static void test_calls_routed(void **state)
{
    /* echo on four servers: each answers in its own way. */
    ASSERT_CALL_TEXT(fx.host, "notes__echo", "{\"text\": \"hi\"}", "hi");
    ASSERT_CALL_TEXT(fx.host, "web__echo", "{\"text\": \"hi\"}", "hi");
    ASSERT_CALL_TEXT(fx.host, "everything__echo", "{\"message\": \"hi\"}", "Echo: hi");
    ASSERT_CALL_TEXT(fx.host, "dyn__echo", "{\"text\": \"hi\"}", "dyn: hi");

    /* notes over stdio and over HTTP are two servers: state stays apart. */
    ASSERT_CALL_TEXT(fx.host, "notes__add_note", "{\"name\": \"only-stdio\", \"text\": \"x\"}",
                     "Saved note \"only-stdio\".");
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_host_read_resource(fx.host, "notes", "note://only-stdio", NULL, &r, &err),
                     MCP_OK);
    assert_string_equal(first_text(r), "x");
    json_decref(r);
    assert_int_not_equal(mcp_host_read_resource(fx.host, "web", "note://only-stdio", NULL, &r,
                                                &err), MCP_OK);

    /* Resources by URI alone: the first server listing it, else a template. */
    assert_int_equal(mcp_host_read_resource(fx.host, NULL, "test://dyn", NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "dyn");
    json_decref(r);
    assert_int_equal(mcp_host_read_resource(fx.host, NULL, "test://dyn/item/7", NULL, &r, &err),
                     MCP_OK);
    assert_string_equal(first_text(r), "item 7");
    json_decref(r);
    assert_int_equal(mcp_host_read_resource(fx.host, NULL, "demo://resource/dynamic/text/1", NULL,
                                            &r, &err), MCP_OK);
    json_decref(r);
    assert_int_equal(mcp_host_read_resource(fx.host, NULL, "nowhere://x", NULL, &r, &err),
                     MCP_ENOTFOUND);

    /* Prompts by aggregated name. */
    json_t *args = json_pack("{s:s}", "who", "the host");
    assert_int_equal(mcp_host_get_prompt(fx.host, "dyn__greet", args, NULL, &r, &err), MCP_OK);
    assert_string_equal(first_text(r), "dyn greets the host");
    json_decref(r);
    json_decref(args);
    assert_int_equal(mcp_host_get_prompt(fx.host, "everything__simple-prompt", NULL, NULL, &r,
                                         &err), MCP_OK);
    json_decref(r);

    /* Unknown servers and names. */
    assert_int_equal(mcp_host_call_tool(fx.host, "nobody__echo", NULL, NULL, &r, &err),
                     MCP_ENOTFOUND);
    assert_non_null(strstr(err.message, "no server \"nobody\""));
    assert_int_equal(mcp_host_call_tool(fx.host, "echo", NULL, NULL, &r, &err), MCP_ENOTFOUND);
    char *server, *tool;
    assert_int_equal(mcp_host_resolve_tool(fx.host, "dyn__nope", &server, &tool), MCP_ENOTFOUND);
    mcp_error_clear(&err);
}

static void test_callbacks_told_the_server(void **state)
{
    /* Elicitation (MRTR on the modern HTTP server). */
    ASSERT_CALL_TEXT(fx.host, "web__add_note", "{\"name\": \"gone\", \"text\": \"x\"}",
                     "Saved note \"gone\".");
    ASSERT_CALL_TEXT(fx.host, "web__delete_note", "{\"name\": \"gone\"}",
                     "Deleted the note \"gone\".");
    assert_int_equal(asked_count(&fx.rec, "elicit", "web"), 1);
    /* Sampling (a real request from the legacy server). */
    char *text = call_text(fx.host, "everything__trigger-sampling-request",
                           "{\"prompt\": \"hello\", \"maxTokens\": 5}");
    free(text);
    assert_int_equal(asked_count(&fx.rec, "sample", "everything"), 1);
    /* Progress of a host call on the stdio server. */
    ASSERT_CALL_TEXT(fx.host, "notes__countdown", "{\"seconds\": 1}", "Lift-off after 1 seconds!");
    assert_true(asked_count(&fx.rec, "progress", "notes") >= 1);
    assert_int_equal(asked_count(&fx.rec, "progress", "web"), 0);
    /* server-everything asks for the roots after initializing, then logs. */
    WAIT_UNTIL(asked_count(&fx.rec, "roots", "everything") >= 1, 10000);
    WAIT_UNTIL(asked_count(&fx.rec, "log", "everything") >= 1, 10000);
    assert_int_equal(asked_count(&fx.rec, "sample", NULL), 1);
}

static void test_tool_added(void **state)
{
    int changed = changed_count(&fx.rec);
    assert_false(lists_name(mcp_host_tools(fx.host), "name", "dyn__fresh"));
    ASSERT_CALL_TEXT(fx.host, "dyn__add_tool", "{\"name\": \"fresh\"}", "added fresh");
    WAIT_UNTIL(lists_name(mcp_host_tools(fx.host), "name", "dyn__fresh"), 10000);
    assert_true(changed_count(&fx.rec) > changed);
    ASSERT_CALL_TEXT(fx.host, "dyn__fresh", NULL, "fresh of dyn");

    /* And removed. */
    changed = changed_count(&fx.rec);
    ASSERT_CALL_TEXT(fx.host, "dyn__remove_tool", "{\"name\": \"fresh\"}", "removed fresh");
    WAIT_UNTIL(!lists_name(mcp_host_tools(fx.host), "name", "dyn__fresh"), 10000);
    WAIT_UNTIL(changed_count(&fx.rec) == changed + 1, 2000);
    sleep_ms(300); /* once per change: no second call follows */
    assert_int_equal(changed_count(&fx.rec), changed + 1);
}

static void test_legacy_list_changed(void **state)
{
    /* A resource added on the legacy server arrives through its session's
     * notifications/resources/list_changed. */
    const char *uri = "demo://resource/session/greeting.txt.gz";
    assert_false(lists_name(mcp_host_resources(fx.host), "uri", uri));
    char *text = call_text(fx.host, "everything__gzip-file-as-resource",
                           "{\"name\": \"greeting.txt.gz\", \"data\": \"data:text/plain,hello\","
                           " \"outputType\": \"resourceLink\"}");
    free(text);
    WAIT_UNTIL(lists_name(mcp_host_resources(fx.host), "uri", uri), 10000);
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_host_read_resource(fx.host, NULL, uri, NULL, &r, &err), MCP_OK);
    assert_non_null(json_object_get(json_array_get(json_object_get(r, "contents"), 0), "blob"));
    json_decref(r);
}

/* Kills a stdio server through its pid file; the others keep answering
 * while the host brings it back. */
static void kill_and_wait_restart(const char *server, const char *pidfile,
                                  const char *check_tool, const char *check_args,
                                  const char *check_text)
{
    pid_t pid = read_pid(pidfile);
    assert_true(pid > 1); /* never kill(0) or kill(-1) */
    int failed = state_count(&fx.rec, server, MCP_HOST_FAILED);
    int ready = state_count(&fx.rec, server, MCP_HOST_READY);
    assert_int_equal(kill(pid, SIGKILL), 0);
    WAIT_UNTIL(state_count(&fx.rec, server, MCP_HOST_FAILED) > failed, 10000);
    char why[MCP_ERROR_MESSAGE_MAX];
    assert_non_null(strstr(last_error(&fx.rec, server, why, sizeof why), "signal"));

    /* The others answer meanwhile. */
    static const struct {
        const char *server, *tool, *args, *text;
    } others[] = {
        {"notes", "notes__echo", "{\"text\": \"still\"}", "still"},
        {"web", "web__echo", "{\"text\": \"still\"}", "still"},
        {"everything", "everything__echo", "{\"message\": \"still\"}", "Echo: still"},
        {"dyn", "dyn__echo", "{\"text\": \"still\"}", "dyn: still"},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (strcmp(others[i].server, server) != 0)
            ASSERT_CALL_TEXT(fx.host, others[i].tool, others[i].args, others[i].text);

    WAIT_UNTIL(state_count(&fx.rec, server, MCP_HOST_READY) > ready, 20000);
    assert_true(has_state(fx.host, server, MCP_HOST_READY));
    ASSERT_CALL_TEXT(fx.host, check_tool, check_args, check_text);
    pid_t fresh = read_pid(pidfile);
    assert_true(fresh > 0 && fresh != pid);
    /* Its tools are back in the views. */
    char name[64];
    snprintf(name, sizeof name, "%s__echo", server);
    assert_true(lists_name(mcp_host_tools(fx.host), "name", name));
}

static void test_kill_modern_stdio(void **state)
{
    kill_and_wait_restart("notes", fx.notes_pidfile, "notes__echo", "{\"text\": \"back\"}",
                          "back");
}

static void test_kill_legacy_stdio(void **state)
{
    /* A legacy server needs a new initialize handshake after the restart:
     * a call that needs the session's capabilities shows it had one. */
    int samples = asked_count(&fx.rec, "sample", "everything");
    kill_and_wait_restart("everything", fx.everything_pidfile, "everything__get-sum",
                          "{\"a\": 2, \"b\": 3}", "The sum of 2 and 3 is 5.");
    char *text = call_text(fx.host, "everything__trigger-sampling-request",
                           "{\"prompt\": \"again\", \"maxTokens\": 5}");
    free(text);
    assert_int_equal(asked_count(&fx.rec, "sample", "everything"), samples + 1);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_connect),
        cmocka_unit_test(test_aggregated_lists),
        cmocka_unit_test(test_calls_routed),
        cmocka_unit_test(test_callbacks_told_the_server),
        cmocka_unit_test(test_tool_added),
        cmocka_unit_test(test_legacy_list_changed),
        cmocka_unit_test(test_kill_modern_stdio),
        cmocka_unit_test(test_kill_legacy_stdio),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
