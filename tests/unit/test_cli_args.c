/*
 * The mcp command line (tools/mcp/args.c): where the target, the command,
 * its words and the options end up, and which lines are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "args.h"

/* Parses a NULL-terminated word list (after "mcp"). */
static int parse(cli_options_t *opt, const char *const *words)
{
    char *argv[32] = {"mcp"};
    int argc = 1;
    for (size_t i = 0; words[i]; i++)
        argv[argc++] = (char *)words[i];
    argv[argc] = NULL;
    return args_parse(argc, argv, opt);
}

#define PARSE(opt, ...) parse((opt), (const char *const[]){__VA_ARGS__, NULL})

static void test_targets(void **state)
{
    cli_options_t opt;
    assert_int_equal(PARSE(&opt, "http://h/mcp", "tools"), CLI_EXIT_OK);
    assert_string_equal(opt.target, "http://h/mcp");
    assert_string_equal(opt.command->name, "tools");
    assert_null(opt.server_argv);
    cli_options_free(&opt);

    assert_int_equal(PARSE(&opt, "call", "echo", "text=hi", "--", "srv", "--flag", "x"),
                     CLI_EXIT_OK);
    assert_null(opt.target);
    assert_string_equal(opt.command->name, "call");
    assert_int_equal(opt.words.n, 2);
    assert_string_equal(opt.words.v[0], "echo");
    assert_string_equal(opt.words.v[1], "text=hi");
    /* Everything after "--" is the server's, options included. */
    assert_string_equal(opt.server_argv[0], "srv");
    assert_string_equal(opt.server_argv[1], "--flag");
    assert_string_equal(opt.server_argv[2], "x");
    assert_null(opt.server_argv[3]);
    assert_false(opt.json);
    cli_options_free(&opt);

    /* Options anywhere before "--". */
    assert_int_equal(PARSE(&opt, "-v", "notes", "--json", "call", "t", "-a", "k=v", "--args={}",
                           "--answer=x=y", "-H", "A: b", "-Hc:d", "-vy"),
                     CLI_EXIT_OK);
    assert_string_equal(opt.target, "notes");
    assert_true(opt.verbose && opt.json && opt.yes);
    assert_string_equal(opt.args_json, "{}");
    assert_int_equal(opt.answers.n, 2);
    assert_string_equal(opt.answers.v[1], "x=y");
    assert_int_equal(opt.headers.n, 2);
    assert_string_equal(opt.headers.v[1], "c:d");
    cli_options_free(&opt);
}

static void test_values(void **state)
{
    cli_options_t opt;
    assert_int_equal(PARSE(&opt, "x", "listen", "--era", "legacy", "--timeout", "2.5",
                           "--log-level", "debug", "--count", "3", "--subscribe", "a://1",
                           "--subscribe", "a://2", "--tools"),
                     CLI_EXIT_OK);
    assert_int_equal(opt.era, MCP_CLIENT_ERA_LEGACY);
    assert_true(opt.timeout_s == 2.5);
    assert_string_equal(opt.log_level, "debug");
    assert_int_equal(opt.count, 3);
    assert_int_equal(opt.subscribe.n, 2);
    assert_true(opt.listen_tools && !opt.listen_prompts && !opt.listen_resources);
    cli_options_free(&opt);
}

static void test_help_without_target(void **state)
{
    cli_options_t opt;
    assert_int_equal(PARSE(&opt, "--help"), CLI_EXIT_OK);
    assert_true(opt.help);
    assert_null(opt.command);
    cli_options_free(&opt);

    assert_int_equal(PARSE(&opt, "call", "--help"), CLI_EXIT_OK);
    assert_true(opt.help);
    assert_string_equal(opt.command->name, "call");
    cli_options_free(&opt);

    assert_int_equal(PARSE(&opt, "help", "read"), CLI_EXIT_OK);
    assert_true(opt.help);
    assert_string_equal(opt.command->name, "read");
    cli_options_free(&opt);

    assert_int_equal(PARSE(&opt, "-V"), CLI_EXIT_OK);
    assert_true(opt.version);
    cli_options_free(&opt);
}

static void test_refused(void **state)
{
    static const char *const lines[][8] = {
        {NULL},
        {"tools"},
        {"x"},
        {"x", "nope"},
        {"x", "tools", "--nope"},
        {"x", "tools", "--json=yes"},
        {"x", "tools", "--era"},
        {"x", "tools", "--era", "old"},
        {"x", "tools", "--timeout", "0"},
        {"x", "tools", "--timeout", "1s"},
        {"x", "tools", "--timeout", "nan"},
        {"x", "listen", "--count", "-1"},
        {"x", "listen", "--count", "1.5"},
        {"x", "call"},
        {"x", "info", "extra"},
        {"x", "complete", "prompt", "p"},
        {"x", "tools", "--subscribe", "u"},
        {"x", "info", "--args", "{}"},
        {"x", "call", "t", "--yes", "--decline"},
        {"x", "tools", "--token", "a", "--token-env", "B"},
        {"x", "tools", "--oauth", "--token", "a"},
        {"x", "tools", "--oauth", "--token-env", "B"},
        {"x", "tools", "--oauth=yes"},
        {"x", "tools", "-H", "no-colon"},
        {"x", "tools", "-a", "=v"},
        {"-yZ", "x", "tools"},
        {"tools", "--"},
        {"--", "srv"},
        {"x", "tools", "--", "srv"},
        {"help", "nope"},
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        cli_options_t opt;
        int rc = parse(&opt, lines[i]);
        if (rc != CLI_EXIT_USAGE)
            fail_msg("line %zu (%s %s %s ...) was not refused", i, lines[i][0] ? lines[i][0] : "",
                     lines[i][0] && lines[i][1] ? lines[i][1] : "",
                     lines[i][0] && lines[i][1] && lines[i][2] ? lines[i][2] : "");
        cli_options_free(&opt);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_help_without_target),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
