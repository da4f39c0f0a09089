/*
 * The mcp command on a terminal (a pseudo-terminal): elicitation forms
 * asked field by field and answered by typing -- typed and checked by the
 * schema, choices by number, defaults with Enter --, a URL to visit, end of
 * input and Ctrl-C at a question; the progress bar; colour, and none with
 * NO_COLOR.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <dirent.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_harness.h"
#include "pty_proc.h"

#define PATIENCE_MS 20000

/* Colour is on unless a test asks for NO_COLOR: remove any inherited. */
static const char *const colour_env[] = {"NO_COLOR", "TERM=xterm", NULL};
static const char *const no_colour_env[] = {"NO_COLOR=1", "TERM=xterm", NULL};

static void start(pty_proc_t *p, const char *const *env, const char *server,
                  const char *const *words)
{
    const char *argv[16];
    size_t n = 0;
    argv[n++] = MCP_CLI;
    for (size_t i = 0; words[i]; i++)
        argv[n++] = words[i];
    argv[n++] = "--";
    argv[n++] = server;
    argv[n] = NULL;
    pty_start(p, argv, env);
}

#define EXPECT(p, text)                                                                      \
    do {                                                                                     \
        if (!pty_expect((p), (text), PATIENCE_MS))                                           \
            fail_msg("the terminal never showed \"%s\"; it shows:\n%s", (text), pty_output(p)); \
    } while (0)

/* The confirmation of notes_server's delete_note, typed. */
static void test_confirmation_typed(void **state)
{
    pty_proc_t p;
    start(&p, no_colour_env, MCP_NOTES_SERVER,
          (const char *const[]){"call", "delete_note", "name=welcome", NULL});
    EXPECT(&p, "The server asks: Really delete the note \"welcome\"?");
    EXPECT(&p, "Delete it (confirm)");
    EXPECT(&p, "[y/n]");
    pty_send(&p, "maybe\n");
    EXPECT(&p, "expected true or false");
    pty_send(&p, "y\n");
    EXPECT(&p, "Send this answer? [Y/n]");
    pty_send(&p, "\n");
    EXPECT(&p, "Deleted the note \"welcome\".");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    pty_free(&p);

    /* The same through a legacy session: the server's own request. */
    start(&p, no_colour_env, MCP_NOTES_SERVER,
          (const char *const[]){"--era", "legacy", "call", "delete_note", "name=welcome", NULL});
    EXPECT(&p, "Really delete the note \"welcome\"?");
    EXPECT(&p, "[y/n]");
    pty_send(&p, "yes\n");
    EXPECT(&p, "Send this answer?");
    pty_send(&p, "\n");
    EXPECT(&p, "Deleted the note \"welcome\".");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    pty_free(&p);

    /* "n" at the end declines. */
    start(&p, no_colour_env, MCP_NOTES_SERVER,
          (const char *const[]){"call", "delete_note", "name=welcome", NULL});
    EXPECT(&p, "[y/n]");
    pty_send(&p, "y\n");
    EXPECT(&p, "Send this answer?");
    pty_send(&p, "n\n");
    EXPECT(&p, "Kept the note \"welcome\".");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    pty_free(&p);
}

/* Every kind of field of cli_test_server's profile form. */
static void test_form_field_by_field(void **state)
{
    pty_proc_t p;
    start(&p, no_colour_env, CLI_TEST_SERVER,
          (const char *const[]){"--json", "call", "profile", NULL});
    EXPECT(&p, "The server asks: Tell us about you");

    EXPECT(&p, "Your name (name)");
    EXPECT(&p, "[a string]");
    pty_send(&p, "\n");
    EXPECT(&p, "An answer is needed.");
    pty_send(&p, "A\n");
    EXPECT(&p, "must be at least 2 characters long");
    pty_send(&p, "Ann Lee\n");

    EXPECT(&p, "email");
    EXPECT(&p, "[an email address]");
    pty_send(&p, "ann.example.com\n");
    EXPECT(&p, "must be an email address");
    pty_send(&p, "ann@example.com\n");

    EXPECT(&p, "age optional");
    EXPECT(&p, "[an integer from 0 to 150]");
    pty_send(&p, "old\n");
    EXPECT(&p, "expected an integer from 0 to 150");
    pty_send(&p, "\n"); /* optional: left out */

    EXPECT(&p, "Favourite colour (color)");
    EXPECT(&p, "1) Red (r)");
    EXPECT(&p, "3) Blue (b)");
    EXPECT(&p, "[choose 1-3; Enter for Green]");
    pty_send(&p, "7\n");
    EXPECT(&p, "\"7\" is not one of the choices");
    pty_send(&p, "blue\n"); /* a title works too */

    EXPECT(&p, "Newsletter (news)");
    EXPECT(&p, "[y/n; Enter for n]");
    pty_send(&p, "\n");

    EXPECT(&p, "tags");
    EXPECT(&p, "[choose from 1-3, separated by commas]");
    pty_send(&p, "1, z\n");

    EXPECT(&p, "Send this answer? [Y/n]");
    pty_send(&p, "y\n");
    EXPECT(&p, "\"resultType\"");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);

    /* The tool answered with what it received. */
    const char *out = pty_output(&p);
    const char *doc = strstr(out, "{\r\n  \"content\"");
    assert_non_null(doc);
    json_t *result = json_loads(doc, JSON_DISABLE_EOF_CHECK, NULL);
    json_t *answer = json_loads(jstr(result, "content/0/text"), 0, NULL);
    assert_string_equal(jstr(answer, "action"), "accept");
    assert_string_equal(jstr(answer, "content/name"), "Ann Lee");
    assert_string_equal(jstr(answer, "content/email"), "ann@example.com");
    assert_string_equal(jstr(answer, "content/color"), "b");
    assert_true(json_is_false(jpath(answer, "content/news")));
    assert_string_equal(jstr(answer, "content/tags/0"), "x");
    assert_string_equal(jstr(answer, "content/tags/1"), "z");
    assert_null(jpath(answer, "content/age"));
    json_decref(answer);
    json_decref(result);
    pty_free(&p);
}

/* --answer fills some fields; the terminal is asked only the rest. */
static void test_flags_and_terminal_together(void **state)
{
    pty_proc_t p;
    start(&p, no_colour_env, CLI_TEST_SERVER,
          (const char *const[]){"call", "profile", "-a", "name=Ann", "-a", "color=r", NULL});
    EXPECT(&p, "email");
    pty_send(&p, "a@b.example\n");
    EXPECT(&p, "age");
    pty_send(&p, "30\n");
    EXPECT(&p, "Newsletter");
    pty_send(&p, "yes\n");
    EXPECT(&p, "tags");
    pty_send(&p, "\n");
    EXPECT(&p, "Send this answer?");
    pty_send(&p, "\n");
    EXPECT(&p, "\"action\":\"accept\"");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    const char *out = pty_output(&p);
    assert_contains(out, "\"age\":30");
    assert_contains(out, "\"color\":\"r\"");
    assert_contains(out, "\"name\":\"Ann\"");
    assert_contains(out, "\"news\":true");
    assert_not_contains(out, "Your name"); /* answered by the flag: not asked */
    pty_free(&p);
}

static void test_end_of_input_cancels(void **state)
{
    pty_proc_t p;
    start(&p, no_colour_env, CLI_TEST_SERVER, (const char *const[]){"call", "profile", NULL});
    EXPECT(&p, "Your name");
    pty_send(&p, "\004"); /* Ctrl-D */
    EXPECT(&p, "{\"action\":\"cancel\"}");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    pty_free(&p);
}

static void test_ctrl_c_at_a_question(void **state)
{
    pty_proc_t p;
    start(&p, no_colour_env, CLI_TEST_SERVER, (const char *const[]){"call", "profile", NULL});
    EXPECT(&p, "Your name");
    pty_send(&p, "\003"); /* Ctrl-C: SIGINT to the foreground process group */
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_INTERRUPTED);
    pty_free(&p);
}

/* ------------------------------------------------------------------------
 * Ctrl-C and the server's process
 * ------------------------------------------------------------------------ */

/* A scratch directory with a log the server's wrapper writes and the file
 * it records its pid in, passed to it (through mcp) in LOG and PIDS. */
typedef struct scratch {
    char dir[64], log[96], pids[96], log_env[128], pids_env[128];
    const char *env[5];
} scratch_t;

static void scratch_init(scratch_t *s)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/mcp-cli-tty-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->log, sizeof s->log, "%s/log", s->dir);
    snprintf(s->pids, sizeof s->pids, "%s/pid", s->dir);
    snprintf(s->log_env, sizeof s->log_env, "LOG=%s", s->log);
    snprintf(s->pids_env, sizeof s->pids_env, "PIDS=%s", s->pids);
    s->env[0] = "NO_COLOR=1";
    s->env[1] = "TERM=xterm";
    s->env[2] = s->log_env;
    s->env[3] = s->pids_env;
    s->env[4] = NULL;
}

static void scratch_free(scratch_t *s)
{
    unlink(s->log);
    unlink(s->pids);
    rmdir(s->dir);
}

/* The file's text ("" when absent), in a static buffer. */
static const char *file_text(const char *path)
{
    static char text[1024];
    text[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    return text;
}

/* How many processes of process group `pgid` are alive (zombies do not
 * count: whether they are reaped is up to whoever adopted them). */
static int alive_in_group(pid_t pgid)
{
    int alive = 0;
    DIR *proc = opendir("/proc");
    assert_non_null(proc);
    for (struct dirent *e; (e = readdir(proc));) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        const char *stat = file_text(path);
        /* "PID (COMM) STATE PPID PGRP ...": COMM may hold anything. */
        const char *after = strrchr(stat, ')');
        char state;
        int ppid, pgrp;
        if (after && sscanf(after + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
            pgrp == pgid && state != 'Z')
            alive++;
    }
    closedir(proc);
    return alive;
}

/* Waits up to 5 s for group `pgid` to have no live process. */
static bool group_gone(pid_t pgid)
{
    for (int waited = 0; waited < 5000; waited += 20) {
        if (alive_in_group(pgid) == 0)
            return true;
        usleep(20 * 1000);
    }
    return false;
}

/* Ctrl-C reaches mcp only, not the server: mcp cancels the call and closes
 * the server's stdin, and the server ends by itself. In mcp's process
 * group the terminal's SIGINT would kill it first. Its wrapper logs the
 * signals it sees and how the server ended. */
static void test_ctrl_c_reaches_mcp_not_the_server(void **state)
{
    scratch_t s;
    scratch_init(&s);
    pty_proc_t p;
    pty_start(&p,
              (const char *const[]){MCP_CLI, "call", "countdown", "seconds=30", "--", "/bin/sh",
                                    "-c",
                                    "echo $$ > \"$PIDS\"; trap 'echo SIGINT >> \"$LOG\"' INT; "
                                    "trap 'echo SIGTERM >> \"$LOG\"' TERM; "
                                    "\"$0\"; echo \"exit $?\" >> \"$LOG\"",
                                    MCP_NOTES_SERVER, NULL},
              s.env);
    EXPECT(&p, "counting down");
    pty_send(&p, "\003");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_INTERRUPTED);
    assert_contains(pty_output(&p), "tools/call countdown: interrupted");
    /* No SIGINT: the server ended because mcp stopped it -- by itself
     * once its call was cancelled and its stdin closed ("exit 0"), or, on a
     * machine too slow for the two seconds mcp waits, by its SIGTERM. */
    const char *log = file_text(s.log);
    assert_not_contains(log, "SIGINT");
    assert_contains(log, "exit ");
    pid_t server = (pid_t)atoi(file_text(s.pids));
    assert_true(server > 0);
    assert_true(group_gone(server));
    pty_free(&p);
    scratch_free(&s);
}

/* A second Ctrl-C ends mcp at once, and the server with it, though it
 * ignores SIGINT, SIGTERM and the end of its stdin: in a process group of
 * its own it gets no signal from the terminal, so mcp must kill it. */
static void test_second_ctrl_c_leaves_no_server(void **state)
{
    scratch_t s;
    scratch_init(&s);
    pty_proc_t p;
    pty_start(&p,
              (const char *const[]){MCP_CLI, "call", "countdown", "seconds=30", "--", "/bin/sh",
                                    "-c",
                                    "echo $$ > \"$PIDS\"; trap '' INT TERM; \"$0\"; exec sleep 60",
                                    MCP_NOTES_SERVER, NULL},
              s.env);
    EXPECT(&p, "counting down");
    pty_send(&p, "\003");
    /* mcp now waits for the server to exit, which it will not. */
    EXPECT(&p, "interrupted");
    pty_send(&p, "\003");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_INTERRUPTED);
    pid_t server = (pid_t)atoi(file_text(s.pids));
    assert_true(server > 0);
    if (!group_gone(server))
        fail_msg("the server's process group %d outlived mcp", (int)server);
    pty_free(&p);
    scratch_free(&s);
}

static void test_url_to_visit(void **state)
{
    pty_proc_t p;
    start(&p, no_colour_env, CLI_TEST_SERVER, (const char *const[]){"call", "visit", NULL});
    EXPECT(&p, "Sign in to continue");
    EXPECT(&p, "https://example.com/login?session=42");
    EXPECT(&p, "press Enter when you are done there");
    pty_send(&p, "\n");
    EXPECT(&p, "accept");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    pty_free(&p);

    start(&p, no_colour_env, CLI_TEST_SERVER, (const char *const[]){"call", "visit", NULL});
    EXPECT(&p, "press Enter");
    pty_send(&p, "n\n");
    EXPECT(&p, "decline");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    pty_free(&p);
}

/* On a terminal progress is a bar on one line, redrawn in place. */
static void test_progress_bar(void **state)
{
    pty_proc_t p;
    start(&p, no_colour_env, MCP_NOTES_SERVER,
          (const char *const[]){"call", "countdown", "seconds=2", NULL});
    EXPECT(&p, "\r\033[K");
    EXPECT(&p, " 1/2  counting down");
    EXPECT(&p, "Lift-off after 2 seconds!");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    const char *out = pty_output(&p);
    assert_true(strstr(out, "#") || strstr(out, "\u2588")); /* the filled part */
    assert_not_contains(out, "progress 1/2"); /* the line form is for logs */
    pty_free(&p);
}

static void test_colour(void **state)
{
    pty_proc_t p;
    start(&p, colour_env, MCP_NOTES_SERVER, (const char *const[]){"tools", NULL});
    EXPECT(&p, "echo");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    assert_contains(pty_output(&p), "\033[1mNAME"); /* a bold header */
    pty_free(&p);

    start(&p, colour_env, MCP_NOTES_SERVER, (const char *const[]){"call", "nothing", NULL});
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_PROTOCOL);
    assert_contains(pty_output(&p), "\033[31merror: ");
    pty_free(&p);

    /* NO_COLOR: not a single colour or style sequence. */
    start(&p, no_colour_env, MCP_NOTES_SERVER, (const char *const[]){"tools", NULL});
    EXPECT(&p, "echo");
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_OK);
    assert_not_contains(pty_output(&p), "\033[");
    pty_free(&p);

    start(&p, no_colour_env, MCP_NOTES_SERVER, (const char *const[]){"call", "nothing", NULL});
    assert_int_equal(pty_finish(&p, PATIENCE_MS), EXIT_PROTOCOL);
    assert_contains(pty_output(&p), "mcp: error: the server has no tool");
    assert_not_contains(pty_output(&p), "\033[");
    pty_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_confirmation_typed),
        cmocka_unit_test(test_form_field_by_field),
        cmocka_unit_test(test_flags_and_terminal_together),
        cmocka_unit_test(test_end_of_input_cancels),
        cmocka_unit_test(test_ctrl_c_at_a_question),
        cmocka_unit_test(test_ctrl_c_reaches_mcp_not_the_server),
        cmocka_unit_test(test_second_ctrl_c_leaves_no_server),
        cmocka_unit_test(test_url_to_visit),
        cmocka_unit_test(test_progress_bar),
        cmocka_unit_test(test_colour),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
