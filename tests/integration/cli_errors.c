/*
 * The mcp command when things go wrong: an unreachable URL, servers that
 * cannot start or exit at once, an unknown tool, bad KEY=VALUE words, bad
 * command lines, and the configuration file (good ones, bad ones). Each
 * failure must give a clear message, the documented exit status and, with
 * --json, an error document -- and never a crash (the tests run under
 * ASan/UBSan in make check). Also --help and --version.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_harness.h"

static const char *config_file(const char *text);

static const char *const notes_argv[] = {MCP_NOTES_SERVER, NULL};
static const cli_target_t notes = {.server = notes_argv};

/* Runs mcp with exactly these words (no target added). */
#define RAW(r, ...) cli_run((r), NULL, NULL, NULL, (const char *const[]){__VA_ARGS__, NULL})
#define RAW_ENV(r, env, ...) cli_run((r), NULL, (env), NULL, (const char *const[]){__VA_ARGS__, NULL})

/* ------------------------------------------------------------------------
 * Connections
 * ------------------------------------------------------------------------ */

static void test_unreachable_url(void **state)
{
    proc_result_t r;
    /* Port 1 on the loopback: nothing listens there. */
    RAW(&r, "http://127.0.0.1:1/mcp", "info");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "mcp: error: cannot connect to http://127.0.0.1:1/mcp");
    assert_string_equal(r.out, "");
    proc_result_free(&r);

    RAW(&r, "--json", "http://127.0.0.1:1/mcp", "tools");
    assert_status(&r, EXIT_CONNECTION);
    assert_int_equal(json_integer_value(jpath(r.json, "error/status")), EXIT_CONNECTION);
    assert_string_equal(jstr(r.json, "error/kind"), "connection");
    assert_contains(jstr(r.json, "error/message"), "cannot connect");
    assert_null(jpath(r.json, "error/code"));
    proc_result_free(&r);
}

static void test_server_that_cannot_start_or_exits(void **state)
{
    proc_result_t r;
    RAW(&r, "info", "--", "/no/such/server");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "cannot connect to the server /no/such/server");
    proc_result_free(&r);

    /* Exits at once, saying why on its stderr. */
    RAW(&r, "tools", "--", "/bin/sh", "-c", "echo 'database is locked' >&2; exit 1");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "cannot connect to the server /bin/sh");
    assert_contains(r.err, "database is locked");
    proc_result_free(&r);

    /* Talks nonsense: not a JSON-RPC peer. */
    RAW(&r, "--timeout", "2", "info", "--", "/bin/sh", "-c", "echo hello; sleep 10");
    assert_true(r.status == EXIT_CONNECTION || r.status == EXIT_PROTOCOL);
    assert_contains(r.err, "cannot connect");
    proc_result_free(&r);
}

/* Reads the request head a client sends to a listening socket (the
 * headers, up to the blank line) and refuses it with 401. */
static void read_request_head(int listener, char *buf, size_t cap)
{
    struct pollfd p = {listener, POLLIN, 0};
    assert_true(poll(&p, 1, 20000) == 1);
    int fd = accept(listener, NULL, NULL);
    assert_true(fd >= 0);
    size_t len = 0;
    while (len + 1 < cap && !strstr(buf, "\r\n\r\n")) {
        p = (struct pollfd){fd, POLLIN, 0};
        if (poll(&p, 1, 20000) != 1)
            break;
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
    }
    static const char refusal[] = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n"
                                  "Connection: close\r\n\r\n";
    assert_int_equal(write(fd, refusal, sizeof refusal - 1), (ssize_t)(sizeof refusal - 1));
    close(fd);
}

/* --header, --token, --token-env and a configured server's headers reach
 * the server. */
static void test_http_headers_and_tokens(void **state)
{
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(listener, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(listener, 8), 0);
    getsockname(listener, (struct sockaddr *)&a, &len);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", ntohs(a.sin_port));

    proc_t p;
    proc_start(&p, (const char *const[]){MCP_CLI, url, "info", "--header", "X-Team: blue",
                                        "-H", "X-Extra:1", "--token", "s3cret", NULL},
               NULL, NULL);
    char head[8192] = "";
    read_request_head(listener, head, sizeof head);
    proc_result_t r;
    proc_finish(&p, &r, 30000);
    assert_contains(head, "POST /mcp");
    assert_contains(head, "X-Team: blue\r\n");
    assert_contains(head, "X-Extra:1\r\n");
    assert_contains(head, "Authorization: Bearer s3cret\r\n");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "the server requires authorization");
    proc_result_free(&r);

    const char *const env[] = {"MCP_CLI_TEST_TOKEN=from-the-environment", NULL};
    proc_start(&p, (const char *const[]){MCP_CLI, url, "info", "--token-env",
                                        "MCP_CLI_TEST_TOKEN", NULL},
               env, NULL);
    head[0] = '\0';
    read_request_head(listener, head, sizeof head);
    proc_finish(&p, &r, 30000);
    assert_contains(head, "Authorization: Bearer from-the-environment\r\n");
    proc_result_free(&r);

    char text[512];
    snprintf(text, sizeof text,
             "{\"mcpServers\": {\"remote\": {\"url\": \"%s\", \"headers\": "
             "{\"X-From\": \"${MCP_CLI_TEST_TOKEN}\"}, \"token\": \"configured\"}}}",
             url);
    const char *path = config_file(text);
    proc_start(&p, (const char *const[]){MCP_CLI, "--config", path, "remote", "info", NULL}, env,
               NULL);
    head[0] = '\0';
    read_request_head(listener, head, sizeof head);
    proc_finish(&p, &r, 30000);
    unlink(path);
    assert_contains(head, "X-From: from-the-environment\r\n");
    assert_contains(head, "Authorization: Bearer configured\r\n");
    proc_result_free(&r);
    close(listener);
}

/* ------------------------------------------------------------------------
 * Tools and arguments
 * ------------------------------------------------------------------------ */

static void test_unknown_tool(void **state)
{
    proc_result_t r;
    CLI(&r, &notes, "call", "frobnicate");
    assert_status(&r, EXIT_PROTOCOL);
    assert_contains(r.err, "the server has no tool \"frobnicate\" (it has: add, add_note, "
                           "countdown, delete_note, echo, export_notes)");
    proc_result_free(&r);

    CLI(&r, &notes, "--json", "call", "frobnicate");
    assert_status(&r, EXIT_PROTOCOL);
    assert_string_equal(jstr(r.json, "error/kind"), "protocol");
    proc_result_free(&r);
}

static void test_bad_arguments(void **state)
{
    static const struct {
        const char *words[4];
        const char *message;
    } cases[] = {
        {{"echo", "text"}, "expected KEY=VALUE (or KEY:=JSON), got \"text\""},
        {{"echo", "=x"}, "expected KEY=VALUE"},
        {{"add", "a=x", "b=1"}, "argument \"a\": expected a number, got \"x\""},
        {{"add", "a=1"}, "missing argument \"b\" (a number)"},
        {{"add", "a=1", "b=2", "c=3"}, "the tool has no argument \"c\" (it takes: a, b)"},
        {{"add", "a:=[1", "b=2"}, "argument \"a\": not JSON"},
        {{"countdown", "seconds=2.5"}, "expected an integer from 0 to 60, got \"2.5\""},
        {{"countdown", "seconds=99"}, "\"99\" must be at most 60"},
        {{"echo", "text=a", "text=b"}, "argument \"text\" is given twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *words[8] = {"call"};
        size_t n = 1;
        for (size_t w = 0; w < 4 && cases[i].words[w]; w++)
            words[n++] = cases[i].words[w];
        proc_result_t r;
        cli_run(&r, &notes, NULL, NULL, words);
        assert_status(&r, EXIT_USAGE);
        assert_contains(r.err, cases[i].message);
        assert_string_equal(r.out, "");
        proc_result_free(&r);
    }

    proc_result_t r;
    CLI(&r, &notes, "call", "add", "--args", "[1, 2]");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "--args: expected a JSON object");
    proc_result_free(&r);

    CLI(&r, &notes, "--json", "call", "add", "--args", "{oops");
    assert_status(&r, EXIT_USAGE);
    assert_string_equal(jstr(r.json, "error/kind"), "usage");
    assert_contains(jstr(r.json, "error/message"), "--args:");
    proc_result_free(&r);

    /* A word that is not UTF-8 in the message: the document still goes
     * out, the byte replaced. */
    CLI(&r, &notes, "--json", "call", "echo", "k\xff=1");
    assert_status(&r, EXIT_USAGE);
    assert_contains(jstr(r.json, "error/message"), "the tool has no argument \"k?\"");
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * The command line
 * ------------------------------------------------------------------------ */

static void test_bad_command_lines(void **state)
{
    static const struct {
        const char *words[6];
        const char *message;
    } cases[] = {
        {{NULL}, "no server and no command given"},
        {{"tools"}, "tools: no server given"},
        {{"http://127.0.0.1:1/mcp"}, "no command given after \"http://127.0.0.1:1/mcp\""},
        {{"http://127.0.0.1:1/mcp", "frob"}, "unknown command \"frob\""},
        {{"--frob", "x", "tools"}, "unknown option \"--frob\""},
        {{"-Z", "x", "tools"}, "unknown option \"-Z\""},
        {{"x", "tools", "--era", "new"}, "--era takes auto, modern or legacy"},
        {{"x", "tools", "--timeout", "-1"}, "--timeout takes a number of seconds above 0"},
        {{"x", "tools", "--log-level", "loud"}, "--log-level takes debug"},
        {{"x", "call", "t", "--yes", "--decline"}, "--yes and --decline contradict"},
        {{"x", "call"}, "usage: mcp TARGET call TOOL"},
        {{"x", "read", "a", "b"}, "usage: mcp TARGET read URI"},
        {{"x", "tools", "--args", "{}"}, "tools does not take --args"},
        {{"x", "call", "t", "--count", "2"}, "call does not take --count"},
        {{"x", "listen", "--count", "0"}, "--count takes a number of events above 0"},
        {{"x", "call", "t", "--answer", "novalue"}, "--answer takes KEY=VALUE"},
        {{"x", "tools", "--header", "novalue"}, "--header takes \"Name: value\""},
        {{"x", "tools", "--token", "a", "--token-env", "B"}, "give --token or --token-env"},
        {{"x", "tools", "--oauth", "--token", "a"}, "--oauth gets its own token"},
        {{"x", "tools", "--config"}, "--config needs a value"},
        {{"-vZ", "x", "tools"}, "-Z cannot be grouped"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *words[8] = {0};
        for (size_t w = 0; w < 6 && cases[i].words[w]; w++)
            words[w] = cases[i].words[w];
        const char *argv_words[9] = {0};
        size_t n = 0;
        for (size_t w = 0; words[w]; w++)
            argv_words[n++] = words[w];
        proc_result_t r;
        cli_run(&r, NULL, NULL, NULL, argv_words);
        assert_status(&r, EXIT_USAGE);
        assert_contains(r.err, cases[i].message);
        assert_contains(r.err, "mcp --help");
        assert_string_equal(r.out, "");
        proc_result_free(&r);
    }

    /* With --json anywhere before "--", a usage error is a document too. */
    proc_result_t r;
    RAW(&r, "--json", "x", "tools", "--era", "new");
    assert_status(&r, EXIT_USAGE);
    assert_int_equal(json_integer_value(jpath(r.json, "error/status")), EXIT_USAGE);
    assert_string_equal(jstr(r.json, "error/kind"), "usage");
    assert_contains(jstr(r.json, "error/message"), "--era takes auto, modern or legacy");
    proc_result_free(&r);
    RAW(&r, "--json", "call", "--", MCP_NOTES_SERVER);
    assert_status(&r, EXIT_USAGE);
    assert_contains(jstr(r.json, "error/message"), "usage: mcp TARGET call TOOL");
    proc_result_free(&r);

    RAW(&r, "http://127.0.0.1:1/mcp", "tools", "--", MCP_NOTES_SERVER);
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "give either a TARGET or a server command line after \"--\"");
    proc_result_free(&r);

    RAW(&r, "tools", "--");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "\"--\" must be followed by the server's command line");
    proc_result_free(&r);

    /* HTTP-only options on a stdio server. */
    CLI(&r, &notes, "tools", "--header", "X-A: 1");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "are for HTTP servers");
    proc_result_free(&r);

    CLI(&r, &notes, "tools", "--oauth");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "are for HTTP servers");
    proc_result_free(&r);

    RAW(&r, "http://127.0.0.1:1/mcp", "tools", "--token-env", "MCP_CLI_TEST_UNSET_TOKEN");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "--token-env MCP_CLI_TEST_UNSET_TOKEN: the variable is not set");
    proc_result_free(&r);
}

static void test_help_and_version(void **state)
{
    proc_result_t r;
    RAW(&r, "--help");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "Usage:");
    static const char *const commands[] = {"info", "tools", "call", "resources", "templates",
                                           "read", "prompts", "prompt", "complete", "task",
                                           "skills", "skill", "listen", "ping"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n  %s ", commands[i]);
        assert_contains(r.out, line);
    }
    /* Every option starts a line of its own, and no line is wider than a
     * terminal of 80 columns. */
    static const char *const options[] = {"-c, --config", "--era", "-j, --json", "-H, --header",
                                          "--token ", "--token-env", "--oauth", "-t, --timeout",
                                          "--log-level", "-v, --verbose", "-k, --insecure",
                                          "-h, --help", "-V, --version", "-a, --answer",
                                          "-y, --yes", "--decline", "--sample-command", "--root"};
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        const char *at = strstr(r.out, options[i]);
        if (!at)
            fail_msg("--help does not show %s", options[i]);
        while (at > r.out && at[-1] == ' ')
            at--;
        if (at > r.out && at[-1] != '\n')
            fail_msg("%s does not start a line of --help:\n%s", options[i], r.out);
    }
    for (const char *line = r.out; *line;) {
        size_t n = strcspn(line, "\n");
        if (n > 79)
            fail_msg("a line of --help is %zu columns wide: %.*s", n, (int)n, line);
        line += n + (line[n] == '\n');
    }
    assert_contains(r.out, "Exit status:");
    assert_contains(r.out, "--sample-command");
    proc_result_free(&r);

    RAW(&r, "call", "--help");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "mcp [OPTIONS] TARGET call TOOL [KEY=VALUE ...] [--args JSON]");
    assert_contains(r.out, "KEY:=JSON");
    proc_result_free(&r);

    RAW(&r, "help", "listen");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "--subscribe URI");
    proc_result_free(&r);

    RAW(&r, "http://example.com/mcp", "read", "--help");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "TARGET read URI");
    proc_result_free(&r);

    RAW(&r, "help", "frob");
    assert_status(&r, EXIT_USAGE);
    proc_result_free(&r);

    RAW(&r, "--version");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "mcp (libmcp) ");
    assert_contains(r.out, "2026-07-28 2025-11-25 2025-06-18 2025-03-26");
    proc_result_free(&r);
}

/* ------------------------------------------------------------------------
 * The configuration file
 * ------------------------------------------------------------------------ */

/* Writes `text` to a new temporary file; returns its path (static). */
static const char *config_file(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/mcp-cli-config-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_config_servers(void **state)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"mcpServers\": {\n"
             "  \"notes\": {\"command\": \"%s\"},\n"
             "  \"notes-by-variable\": {\"type\": \"stdio\", \"command\": \"${MCP_CLI_TEST_BIN}\"},\n"
             "  \"with-default\": {\"command\": \"${MCP_CLI_TEST_UNSET:-%s}\"},\n"
             "  \"env\": {\"command\": \"/bin/sh\", \"args\": [\"-c\", \"echo \\\"[$GREETING]\\\" >&2; exit 1\"],\n"
             "          \"env\": {\"GREETING\": \"hello from the config\"}},\n"
             "  \"unset\": {\"command\": \"${MCP_CLI_TEST_UNSET}\"},\n"
             "  \"badcwd\": {\"command\": \"%s\", \"cwd\": \"/nonexistent/dir\"},\n"
             "  \"remote\": {\"url\": \"http://127.0.0.1:1/mcp\", \"headers\": {\"X-A\": \"b\"}}\n"
             "}}\n",
             MCP_NOTES_SERVER, MCP_NOTES_SERVER, MCP_NOTES_SERVER);
    const char *path = config_file(text);
    char bin[600];
    snprintf(bin, sizeof bin, "MCP_CLI_TEST_BIN=%s", MCP_NOTES_SERVER);
    const char *const env[] = {bin, "MCP_CLI_TEST_UNSET", NULL};

    proc_result_t r;
    RAW_ENV(&r, env, "--config", path, "--json", "notes", "info");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "serverInfo/name"), "notes-server");
    assert_string_equal(jstr(r.json, "target/0"), MCP_NOTES_SERVER);
    proc_result_free(&r);

    RAW_ENV(&r, env, "--config", path, "notes-by-variable", "call", "echo", "text=via ${}");
    assert_status(&r, EXIT_OK);
    assert_string_equal(r.out, "via ${}\n");
    proc_result_free(&r);

    RAW_ENV(&r, env, "-c", path, "with-default", "ping");
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);

    /* env reaches the server (it says so on stderr, and exits). */
    RAW_ENV(&r, env, "--config", path, "env", "info");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "[hello from the config]");
    proc_result_free(&r);

    RAW_ENV(&r, env, "--config", path, "unset", "info");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "server \"unset\": command: the environment variable "
                           "MCP_CLI_TEST_UNSET is not set");
    proc_result_free(&r);

    /* A missing working directory is named as such: the program is there. */
    RAW_ENV(&r, env, "--config", path, "badcwd", "info");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "cannot enter its working directory /nonexistent/dir: "
                           "No such file or directory");
    proc_result_free(&r);

    RAW_ENV(&r, env, "--config", path, "remote", "info");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "cannot connect to http://127.0.0.1:1/mcp");
    proc_result_free(&r);

    RAW_ENV(&r, env, "--config", path, "nameless", "info");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "has no server \"nameless\" (it has: notes, notes-by-variable, "
                           "with-default, env, unset, badcwd, remote)");
    proc_result_free(&r);

    unlink(path);

    /* Options of a server: era, timeoutMs, token(Env). */
    snprintf(text, sizeof text,
             "{\"mcpServers\": {\n"
             "  \"legacy\": {\"command\": \"%s\", \"era\": \"legacy\"},\n"
             "  \"hasty\": {\"command\": \"%s\", \"timeoutMs\": 300},\n"
             "  \"tokened\": {\"url\": \"http://127.0.0.1:1/mcp\", \"tokenEnv\": \"MCP_CLI_TEST_UNSET\"},\n"
             "  \"bad-era\": {\"command\": \"x\", \"era\": \"old\"}\n"
             "}}\n",
             MCP_NOTES_SERVER, CLI_TEST_SERVER);
    path = config_file(text);
    RAW_ENV(&r, env, "--config", path, "--json", "legacy", "info");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "era"), "legacy");
    assert_string_equal(jstr(r.json, "verdict/reason"), "era option");
    proc_result_free(&r);
    RAW_ENV(&r, env, "--config", path, "--era", "auto", "--json", "legacy", "info");
    assert_string_equal(jstr(r.json, "era"), "modern"); /* the command line wins */
    proc_result_free(&r);
    RAW_ENV(&r, env, "--config", path, "hasty", "call", "slow", "ms=5000");
    assert_status(&r, EXIT_CONNECTION);
    assert_contains(r.err, "300 ms");
    proc_result_free(&r);
    RAW_ENV(&r, env, "--config", path, "tokened", "info");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err,
                    "\"tokenEnv\": the environment variable MCP_CLI_TEST_UNSET is not set");
    proc_result_free(&r);
    RAW_ENV(&r, env, "--config", path, "bad-era", "info");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "\"era\" must be \"auto\", \"modern\" or \"legacy\"");
    proc_result_free(&r);

    /* $MCP_CONFIG names the file when --config does not. */
    char config_env[128];
    snprintf(config_env, sizeof config_env, "MCP_CONFIG=%s", path);
    const char *const env2[] = {config_env, NULL};
    RAW_ENV(&r, env2, "legacy", "ping");
    assert_status(&r, EXIT_OK);
    proc_result_free(&r);
    unlink(path);

    /* Without any file, a name that is not a URL is explained. */
    const char *const no_config[] = {"MCP_CONFIG", "XDG_CONFIG_HOME=/nonexistent", NULL};
    RAW_ENV(&r, no_config, "./my-server", "tools");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "\"./my-server\" is not a URL, nor a configured server");
    assert_contains(r.err, "/nonexistent/mcp/servers.json");
    assert_contains(r.err, "put it after --");
    proc_result_free(&r);
}

static void test_bad_config_files(void **state)
{
    static const struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\"},}}", ":1:39: not valid JSON"},
        {"{\"servers\": {}}", "expected an object {\"mcpServers\""},
        {"[]", "expected an object {\"mcpServers\""},
        {"{\"mcpServers\": {\"a\": 1}}", "server \"a\": the entry must be an object"},
        {"{\"mcpServers\": {\"a\": {}}}", "give either \"command\" (stdio) or \"url\" (HTTP)"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"url\": \"http://h/\"}}}",
         "give either \"command\""},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": \"-v\"}}}",
         "\"args\" must be an array of strings"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [1]}}}",
         "\"args\" must be an array of strings"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": 1}}}}",
         "\"env\": \"K\" must be a string"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"headers\": []}}}",
         "\"headers\" must be an object of strings"},
        {"{\"mcpServers\": {\"a\": {\"type\": \"http\", \"command\": \"x\"}}}",
         "\"type\" \"http\" does not match \"command\""},
        {"{\"mcpServers\": {\"a\": {\"type\": \"pigeon\", \"command\": \"x\"}}}",
         "unknown \"type\" \"pigeon\""},
        {"{\"mcpServers\": {\"a\": {\"command\": \"${UNCLOSED\"}}}", "without a closing"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"a\": {\"command\": \"y\"}}}",
         "duplicate object key"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = config_file(cases[i].text);
        proc_result_t r;
        RAW(&r, "--config", path, "a", "info");
        unlink(path);
        assert_status(&r, EXIT_USAGE);
        assert_contains(r.err, path);
        assert_contains(r.err, cases[i].message);
        proc_result_free(&r);
    }
    proc_result_t r;
    RAW(&r, "--config", "/no/such/file.json", "a", "info");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "cannot read the configuration file /no/such/file.json");
    proc_result_free(&r);

    RAW(&r, "--json", "--config", "/no/such/file.json", "a", "info");
    assert_status(&r, EXIT_USAGE);
    assert_string_equal(jstr(r.json, "error/kind"), "usage");
    proc_result_free(&r);

    /* Not a file to read whole: a FIFO would block mcp forever, and a
     * file above the 4 MiB limit is refused before it is read. */
    char dir[] = "/tmp/mcp-cli-config-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char fifo[sizeof dir + 8];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    RAW(&r, "--config", fifo, "a", "info");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "the configuration file ");
    assert_contains(r.err, "/fifo is a FIFO, not a regular file");
    proc_result_free(&r);
    unlink(fifo);
    rmdir(dir);

    size_t big = 4 * 1024 * 1024 + 1;
    char *text = malloc(big + 1);
    assert_non_null(text);
    memset(text, ' ', big);
    memcpy(text, "{\"mcpServers\": {}}", 18);
    text[big] = '\0';
    const char *path = config_file(text);
    free(text);
    RAW(&r, "--config", path, "a", "info");
    unlink(path);
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, path);
    assert_contains(r.err, "is larger than 4 MiB, the limit for one");
    proc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unreachable_url),
        cmocka_unit_test(test_server_that_cannot_start_or_exits),
        cmocka_unit_test(test_http_headers_and_tokens),
        cmocka_unit_test(test_unknown_tool),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_bad_command_lines),
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_config_servers),
        cmocka_unit_test(test_bad_config_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
