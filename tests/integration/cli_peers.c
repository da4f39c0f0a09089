/*
 * The mcp command against real peers from npm (tests/interop/package.json):
 *
 *   TypeScript SDK v2 server over stdio  (interop/ts2_stdio_server.mjs)  modern
 *   TypeScript SDK v2 server over HTTP   (interop/ts2_http_cli_server.mjs) modern
 *   server-everything over stdio                                         legacy
 *   server-everything over Streamable HTTP                               legacy
 *
 * Every command, with --json documents checked field by field: the same
 * mcp, whatever the era or the SDK on the other side. An elicitation is
 * also answered at a pseudo-terminal. HTTP peers listen on 127.0.0.1 only.
 *
 * A peer that is not installed FAILS the test and says what to install
 * (scripts/install-deps.sh check installs them).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_harness.h"
#include "pty_proc.h"

#define INTEROP_DIR MCP_SOURCE_DIR "/tests/interop"
#define MODULES INTEROP_DIR "/node_modules"
#define EVERYTHING MODULES "/@modelcontextprotocol/server-everything/dist/index.js"
#define TS2_STDIO INTEROP_DIR "/ts2_stdio_server.mjs"
#define TS2_HTTP INTEROP_DIR "/ts2_http_cli_server.mjs"
#define LOOPBACK "--import=file://" INTEROP_DIR "/loopback_only.mjs"
#define PATIENCE_MS 30000

static char node[512];

/* The peers must be there: they are the suite's only foreign servers. */
static int require_peers(void **state)
{
    FILE *p = popen("command -v node", "r");
    if (!p || !fgets(node, sizeof node, p))
        node[0] = '\0';
    if (p)
        pclose(p);
    node[strcspn(node, "\n")] = '\0';
    if (!node[0] || access(EVERYTHING, R_OK) != 0 ||
        access(MODULES "/@modelcontextprotocol/server/package.json", R_OK) != 0 ||
        access(MODULES "/@modelcontextprotocol/node/package.json", R_OK) != 0) {
        fprintf(stderr, "cli_peers: the npm peers are missing: run `npm ci` in tests/interop "
                        "(scripts/install-deps.sh check) with node on PATH\n");
        return -1;
    }
    return 0;
}

/* The first text block of a --json CallToolResult. */
static const char *text_of(const proc_result_t *r)
{
    return jstr(r->json, "content/0/text");
}

/* Does a --json list hold an item with this name? */
static bool lists(const json_t *items, const char *key, const char *name)
{
    size_t i;
    const json_t *item;
    json_array_foreach(items, i, item)
        if (strcmp(jstr(item, key), name) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------------------
 * HTTP peers
 * ------------------------------------------------------------------------ */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

static bool accepts(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

typedef struct peer {
    proc_t proc;
    char url[128];
} peer_t;

static void peer_start_everything(peer_t *p)
{
    int port = free_port();
    char env_port[32];
    snprintf(env_port, sizeof env_port, "PORT=%d", port);
    const char *const env[] = {env_port, NULL};
    proc_start(&p->proc, (const char *const[]){node, LOOPBACK, EVERYTHING, "streamableHttp", NULL},
               env, NULL);
    for (int i = 0; i < 600 && !accepts(port); i++) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(accepts(port));
    snprintf(p->url, sizeof p->url, "http://127.0.0.1:%d/mcp", port);
}

static void peer_start_ts2(peer_t *p)
{
    proc_start(&p->proc, (const char *const[]){node, TS2_HTTP, "0", NULL}, NULL, NULL);
    if (!proc_wait_for(&p->proc, PROC_STDOUT, "/mcp\n", PATIENCE_MS))
        fail_msg("the TypeScript HTTP server did not start: %s",
                 proc_output(&p->proc, PROC_STDERR));
    snprintf(p->url, sizeof p->url, "%.*s",
             (int)strcspn(proc_output(&p->proc, PROC_STDOUT), "\n"),
             proc_output(&p->proc, PROC_STDOUT));
}

static void peer_stop(peer_t *p)
{
    proc_result_t r;
    proc_signal(&p->proc, SIGTERM);
    proc_finish(&p->proc, &r, PATIENCE_MS);
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * The TypeScript SDK v2 (modern)
 * ------------------------------------------------------------------------ */

/* What both transports of the TypeScript server share. */
static void ts2_common(const cli_target_t *t, const char *name, bool over_http)
{
    proc_result_t r;
    CLI(&r, t, "--json", "info");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "era"), "modern");
    assert_string_equal(jstr(r.json, "protocolVersion"), "2026-07-28");
    assert_string_equal(jstr(r.json, "serverInfo/name"), name);
    assert_string_equal(jstr(r.json, "transport"), over_http ? "http" : "stdio");
    assert_string_equal(jstr(r.json, "verdict/kind"), "modern");
    assert_true(json_is_true(jpath(r.json, "capabilities/tools/listChanged")));
    proc_result_free(&r);

    CLI(&r, t, "--json", "tools");
    assert_status(&r, EXIT_OK);
    assert_true(lists(jpath(r.json, "tools"), "name", "echo"));
    assert_true(lists(jpath(r.json, "tools"), "name", "confirm"));
    assert_string_equal(jstr(r.json, "tools/0/inputSchema/type"), "object");
    proc_result_free(&r);

    CLI(&r, t, "--json", "call", "echo", "text=hello, TypeScript");
    assert_status(&r, EXIT_OK);
    assert_string_equal(text_of(&r), "hello, TypeScript");
    assert_string_equal(jstr(r.json, "resultType"), "complete");
    proc_result_free(&r);

    /* The confirmation is an MRTR elicitation: answered by flags. */
    CLI(&r, t, "--json", "call", "confirm", "what=deploy", "--yes");
    assert_status(&r, EXIT_OK);
    assert_string_equal(text_of(&r), "confirmed deploy");
    proc_result_free(&r);
    CLI(&r, t, "call", "confirm", "what=deploy", "--decline");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "refused deploy\n");
    assert_contains(r.err, "Confirm deploy?");
    proc_result_free(&r);
    CLI(&r, t, "call", "confirm", "what=deploy", "--answer", "confirm=false");
    assert_string_equal(r.out, "refused deploy\n");
    proc_result_free(&r);

    CLI(&r, t, "call", "echo");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "missing argument \"text\"");
    proc_result_free(&r);

    CLI(&r, t, "--json", "ping");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "method"), "server/discover");
    proc_result_free(&r);

    CLI(&r, t, "--json", "listen", "--tools", "--timeout", "1");
    assert_status(&r, EXIT_OK);
    json_t *ack = json_loads(r.out, JSON_DISABLE_EOF_CHECK, NULL);
    assert_string_equal(jstr(ack, "method"), "notifications/subscriptions/acknowledged");
    assert_true(json_is_true(jpath(ack, "params/notifications/toolsListChanged")));
    json_decref(ack);
    proc_result_free(&r);
}

static void test_ts2_stdio(void **state)
{
    static const char *argv[] = {NULL, TS2_STDIO, NULL};
    argv[0] = node;
    const cli_target_t t = {.server = argv};
    ts2_common(&t, "ts2-interop", false);

    /* The same confirmation, typed at a terminal. */
    pty_proc_t p;
    pty_start(&p, (const char *const[]){MCP_CLI, "call", "confirm", "what=launch", "--", node,
                                        TS2_STDIO, NULL},
              (const char *const[]){"NO_COLOR=1", NULL});
    assert_true(pty_expect(&p, "Confirm launch?", PATIENCE_MS));
    assert_true(pty_expect(&p, "[y/n]", PATIENCE_MS));
    pty_send(&p, "y\n");
    assert_true(pty_expect(&p, "Send this answer?", PATIENCE_MS));
    pty_send(&p, "\n");
    assert_true(pty_expect(&p, "confirmed launch", PATIENCE_MS));
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    pty_free(&p);
}

static void test_ts2_http(void **state)
{
    peer_t peer;
    peer_start_ts2(&peer);
    const cli_target_t t = {.url = peer.url};
    ts2_common(&t, "ts2-http", true);

    proc_result_t r;
    CLI(&r, &t, "--json", "resources");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "resources/0/uri"), "memo://note");
    proc_result_free(&r);
    CLI(&r, &t, "--json", "read", "memo://note");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "contents/0/text"), "remember the milk");
    proc_result_free(&r);
    CLI(&r, &t, "--json", "prompts");
    assert_string_equal(jstr(r.json, "prompts/0/name"), "greet");
    proc_result_free(&r);
    CLI(&r, &t, "--json", "prompt", "greet", "name=Ann");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "messages/0/content/text"), "Say hello to Ann.");
    proc_result_free(&r);

    /* A listener hears the update another mcp causes. */
    proc_t listener;
    cli_start(&listener, &t, NULL,
              (const char *const[]){"--json", "listen", "--subscribe", "memo://note", "--count",
                                    "1", "--timeout", "30", NULL});
    assert_true(proc_wait_for(&listener, PROC_STDERR, "listening for", PATIENCE_MS));
    CLI(&r, &t, "call", "touch", "uri=memo://note");
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);
    proc_finish(&listener, &r, PATIENCE_MS);
    assert_status(&r, EXIT_OK);
    const char *event = strchr(r.out, '\n');
    assert_non_null(event);
    json_t *update = json_loads(event + 1, JSON_DISABLE_EOF_CHECK, NULL);
    assert_string_equal(jstr(update, "method"), "notifications/resources/updated");
    assert_string_equal(jstr(update, "params/uri"), "memo://note");
    json_decref(update);
    proc_result_free(&r);
    peer_stop(&peer);
}

/* ------------------------------------------------------------------------
 * server-everything (legacy)
 * ------------------------------------------------------------------------ */

static void everything_common(const cli_target_t *t, bool over_http)
{
    proc_result_t r;
    CLI(&r, t, "--json", "info");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "era"), "legacy");
    assert_string_equal(jstr(r.json, "protocolVersion"), "2025-11-25");
    assert_string_equal(jstr(r.json, "serverInfo/name"), "mcp-servers/everything");
    assert_string_equal(jstr(r.json, "verdict/kind"), "legacy");
    assert_true(json_is_true(jpath(r.json, "verdict/probed")));
    assert_false(json_is_true(jpath(r.json, "verdict/httpSse")));
    assert_true(json_is_true(jpath(r.json, "capabilities/resources/subscribe")));
    assert_contains(jstr(r.json, "instructions"), "Everything Server");
    proc_result_free(&r);

    CLI(&r, t, "info");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "2025-11-25 (legacy era; probe: ");
    assert_contains(r.out, over_http ? "Streamable HTTP" : "stdio");
    proc_result_free(&r);

    CLI(&r, t, "--json", "tools");
    assert_status(&r, EXIT_OK);
    const json_t *tools = jpath(r.json, "tools");
    static const char *const names[] = {"echo", "get-sum", "trigger-long-running-operation",
                                        "trigger-elicitation-request"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_true(lists(tools, "name", names[i]));
    assert_false(lists(tools, "name", "trigger-sampling-request")); /* sampling not declared */
    proc_result_free(&r);

    CLI(&r, t, "--json", "call", "echo", "message=hello, everything");
    assert_status(&r, EXIT_OK);
    assert_string_equal(text_of(&r), "Echo: hello, everything");
    proc_result_free(&r);

    CLI(&r, t, "call", "get-sum", "a=2", "b=3.5");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "5.5");
    proc_result_free(&r);

    CLI(&r, t, "call", "trigger-long-running-operation", "duration=1", "steps=2");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "Long running operation completed");
    assert_contains(r.err, "progress 1/2");
    assert_contains(r.err, "progress 2/2");
    proc_result_free(&r);

    /* The server's own elicitation request, answered by flags. */
    CLI(&r, t, "call", "trigger-elicitation-request", "--yes", "-a", "name=Ann", "-a",
        "titledMultipleSelectEnum=fish-2,fish-3", "-a", "integer=7");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "\"action\": \"accept\"");
    assert_contains(r.out, "\"name\": \"Ann\"");
    assert_contains(r.out, "\"integer\": 7");
    assert_contains(r.out, "\"fish-3\"");
    assert_contains(r.out, "\"number\": 3.14"); /* a default */
    assert_contains(r.err, "Please provide inputs for the following fields");
    proc_result_free(&r);
    CLI(&r, t, "call", "trigger-elicitation-request", "--decline");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "\"action\": \"decline\"");
    proc_result_free(&r);

    /* A tool that needs the experimental tasks of 2025-11-25: mcp runs it
     * as one, and its question, asked through tasks/result, is answered
     * by a flag. */
    CLI(&r, t, "-v", "call", "simulate-research-query", "topic=python", "ambiguous=true", "-a",
        "interpretation=snake");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "# Research Report: python (snake)");
    assert_contains(r.err, "\"method\":\"tasks/result\"");
    proc_result_free(&r);

    /* Sampling through --sample-command; roots from --root. */
    CLI(&r, t, "call", "trigger-sampling-request", "prompt=hi", "maxTokens=5",
        "--sample-command",
        "cat >/dev/null; echo '{\"role\":\"assistant\",\"content\":{\"type\":\"text\","
        "\"text\":\"sampled by a shell\"},\"model\":\"sh\"}'");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "sampled by a shell");
    proc_result_free(&r);
    /* Over HTTP the server asks for roots on its GET stream, which may not
     * be open yet when the call arrives (a race of the legacy client). */
    if (!over_http) {
        CLI(&r, t, "call", "get-roots-list", "--root", "/tmp");
        assert_status(&r, EXIT_OK);
        assert_contains(r.out, "URI: file://");
        proc_result_free(&r);
    }

    CLI(&r, t, "--json", "resources");
    assert_status(&r, EXIT_OK);
    assert_true(lists(jpath(r.json, "resources"), "uri",
                      "demo://resource/static/document/architecture.md"));
    proc_result_free(&r);
    CLI(&r, t, "--json", "read", "demo://resource/static/document/architecture.md");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "contents/0/mimeType"), "text/markdown");
    assert_true(strlen(jstr(r.json, "contents/0/text")) > 0);
    proc_result_free(&r);
    CLI(&r, t, "--json", "templates");
    assert_status(&r, EXIT_OK);
    assert_true(lists(jpath(r.json, "resourceTemplates"), "uriTemplate",
                      "demo://resource/dynamic/blob/{resourceId}"));
    proc_result_free(&r);
    CLI(&r, t, "read", "demo://resource/dynamic/blob/1");
    assert_status(&r, EXIT_OK);
    assert_true(r.out_len > 0); /* the decoded bytes */
    proc_result_free(&r);

    CLI(&r, t, "--json", "prompts");
    assert_status(&r, EXIT_OK);
    assert_true(lists(jpath(r.json, "prompts"), "name", "args-prompt"));
    proc_result_free(&r);
    CLI(&r, t, "--json", "prompt", "args-prompt", "city=Paris");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "messages/0/role"), "user");
    assert_contains(jstr(r.json, "messages/0/content/text"), "Paris");
    proc_result_free(&r);
    CLI(&r, t, "prompt", "args-prompt", "state=Texas");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "missing argument \"city\"");
    proc_result_free(&r);

    CLI(&r, t, "--json", "complete", "prompt", "completable-prompt", "department=E");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "completion/values/0"), "Engineering");
    proc_result_free(&r);
    CLI(&r, t, "complete", "prompt", "completable-prompt", "name=", "department=Engineering");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "Alice\n");
    proc_result_free(&r);

    CLI(&r, t, "--json", "ping");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "method"), "ping");
    proc_result_free(&r);

    /* resources/subscribe: acknowledged with what the capabilities promise. */
    CLI(&r, t, "--json", "listen", "--subscribe", "demo://resource/static/document/features.md",
        "--timeout", "1");
    assert_status(&r, EXIT_OK);
    json_t *ack = json_loads(r.out, JSON_DISABLE_EOF_CHECK, NULL);
    assert_string_equal(jstr(ack, "params/notifications/resourceSubscriptions/0"),
                        "demo://resource/static/document/features.md");
    json_decref(ack);
    proc_result_free(&r);

    CLI(&r, t, "call", "no-such-tool");
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "the server has no tool \"no-such-tool\"");
    proc_result_free(&r);
}

static void test_everything_stdio(void **state)
{
    static const char *argv[] = {NULL, EVERYTHING, "stdio", NULL};
    argv[0] = node;
    const cli_target_t t = {.server = argv};
    everything_common(&t, false);
}

static void test_everything_streamable_http(void **state)
{
    peer_t peer;
    peer_start_everything(&peer);
    const cli_target_t t = {.url = peer.url};
    everything_common(&t, true);
    peer_stop(&peer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ts2_stdio),
        cmocka_unit_test(test_ts2_http),
        cmocka_unit_test(test_everything_stdio),
        cmocka_unit_test(test_everything_streamable_http),
    };
    return cmocka_run_group_tests(tests, require_peers, NULL);
}
