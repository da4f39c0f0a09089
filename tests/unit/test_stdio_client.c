/*
 * The stdio client transport (src/transport/stdio_client.c), driven
 * directly, without the client core: the hooks it is made with hear every
 * event of the server's life, even one that comes before the constructor
 * has returned (a server that exits at once, a line it prints before any
 * request), and nothing after close().
 */
#define _GNU_SOURCE /* mkdtemp */
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client/transport.h"
#include "clock.h"

#define WAIT_MS 10000 /* generous: the suite runs under sanitizers on 2 shared cores */

/* What the hooks heard; `lock` guards everything, `changed` signals it. */
typedef struct heard {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int closed, restarted, unrouted, received;
    int closed_rc;
    void *closed_user;
    char why[256];
    char unrouted_method[64];
    char received_text[256];
} heard_t;

static void heard_init(heard_t *h)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&h->changed, &attr);
    pthread_condattr_destroy(&attr);
}

static void heard_destroy(heard_t *h)
{
    pthread_cond_destroy(&h->changed);
    pthread_mutex_destroy(&h->lock);
}

static void on_closed(void *user, int rc, const char *why)
{
    heard_t *h = user;
    pthread_mutex_lock(&h->lock);
    h->closed++;
    h->closed_rc = rc;
    h->closed_user = user;
    snprintf(h->why, sizeof h->why, "%s", why ? why : "");
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
}

static void on_restarted(void *user)
{
    heard_t *h = user;
    pthread_mutex_lock(&h->lock);
    h->restarted++;
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
}

static void on_unrouted(void *user, const json_t *msg)
{
    heard_t *h = user;
    pthread_mutex_lock(&h->lock);
    h->unrouted++;
    snprintf(h->unrouted_method, sizeof h->unrouted_method, "%s",
             json_string_value(json_object_get(msg, "method")));
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->lock);
}

static void on_trace(void *user, mcp_trace_direction_t direction, const char *text, size_t len)
{
    heard_t *h = user;
    if (direction != MCP_TRACE_RECEIVED)
        return;
    pthread_mutex_lock(&h->lock);
    h->received++;
    snprintf(h->received_text, sizeof h->received_text, "%.*s", (int)len, text);
    pthread_mutex_unlock(&h->lock);
}

static client_transport_hooks_t hooks_for(heard_t *h)
{
    return (client_transport_hooks_t){.on_unrouted = on_unrouted, .on_closed = on_closed,
                                      .on_restarted = on_restarted, .user = h,
                                      .trace = on_trace, .trace_user = h};
}

/* Waits until *counter (guarded by h->lock) reaches `n`; false on timeout. */
static bool wait_for(heard_t *h, const int *counter, int n)
{
    struct timespec until = mcp_clock_deadline(WAIT_MS);
    pthread_mutex_lock(&h->lock);
    while (*counter < n)
        if (pthread_cond_timedwait(&h->changed, &h->lock, &until) != 0)
            break;
    bool reached = *counter >= n;
    pthread_mutex_unlock(&h->lock);
    return reached;
}

static int count(heard_t *h, const int *counter)
{
    pthread_mutex_lock(&h->lock);
    int n = *counter;
    pthread_mutex_unlock(&h->lock);
    return n;
}

static client_transport_t *spawn(const mcp_stdio_target_t *target, heard_t *h)
{
    client_transport_hooks_t hooks = hooks_for(h);
    mcp_error_t err = {0};
    client_transport_t *t = NULL;
    if (client_stdio_new(target, &hooks, &t, &err) != MCP_OK)
        fail_msg("client_stdio_new: %s", err.message);
    return t;
}

static void destroy(client_transport_t *t)
{
    t->ops->close(t);
    t->ops->free(t);
}

/* A server that exits as soon as it starts: its end reaches on_closed,
 * once, with the hooks' user, however early the reader thread sees it. */
static void test_exit_at_once_is_reported_once(void **state)
{
    (void)state;
    heard_t h;
    heard_init(&h);
    client_transport_t *t =
        spawn(&(mcp_stdio_target_t){.argv = (const char *const[]){"sh", "-c", "exit 7", NULL}},
              &h);
    assert_true(wait_for(&h, &h.closed, 1));
    destroy(t);
    assert_int_equal(count(&h, &h.closed), 1);
    assert_int_equal(h.closed_rc, MCP_ECLOSED);
    assert_ptr_equal(h.closed_user, &h);
    if (!strstr(h.why, "7"))
        fail_msg("why: %s", h.why);
    assert_int_equal(count(&h, &h.restarted), 0);
    heard_destroy(&h);
}

/* A message the server writes before any request is traced and goes to
 * on_unrouted; close() itself is no end to report. */
static void test_output_before_any_request(void **state)
{
    (void)state;
    heard_t h;
    heard_init(&h);
    client_transport_t *t = spawn(
        &(mcp_stdio_target_t){.argv = (const char *const[]){
                                  "sh", "-c",
                                  "echo '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
                                  "\"params\":{\"level\":\"info\",\"data\":\"early\"}}'; "
                                  "cat >/dev/null", /* sh keeps stdout open meanwhile */
                                  NULL}},
        &h);
    assert_true(wait_for(&h, &h.unrouted, 1));
    assert_string_equal(h.unrouted_method, "notifications/message");
    pthread_mutex_lock(&h.lock);
    assert_int_equal(h.received, 1);
    assert_non_null(strstr(h.received_text, "\"data\":\"early\""));
    pthread_mutex_unlock(&h.lock);
    destroy(t);
    assert_int_equal(count(&h, &h.closed), 0);
    assert_int_equal(count(&h, &h.unrouted), 1);
    heard_destroy(&h);
}

/* With restart, a server that dies at once is started again: on_restarted,
 * and no on_closed. The first run leaves a mark; the second, seeing it,
 * stays until its stdin closes. */
static void test_restart_is_reported(void **state)
{
    (void)state;
    char dir[] = "/tmp/mcp-stdio-client-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char mark[600];
    snprintf(mark, sizeof mark, "%s/started", dir);
    heard_t h;
    heard_init(&h);
    const char *env[] = {"MARK=started", NULL};
    client_transport_t *t = spawn(
        &(mcp_stdio_target_t){
            .argv = (const char *const[]){"sh", "-c",
                                          /* the second run: sh holds stdout open */
                                          "if [ -e \"$MARK\" ]; then cat >/dev/null; exit; fi; "
                                          ": > \"$MARK\"",
                                          NULL},
            .env = env, .cwd = dir, .restart = true},
        &h);
    assert_true(wait_for(&h, &h.restarted, 1));
    destroy(t);
    assert_int_equal(count(&h, &h.restarted), 1);
    assert_int_equal(count(&h, &h.closed), 0);
    heard_destroy(&h);
    unlink(mark);
    rmdir(dir);
}

/* A constructor that fails has reported nothing. */
static void test_failed_constructor_reports_nothing(void **state)
{
    (void)state;
    heard_t h;
    heard_init(&h);
    client_transport_hooks_t hooks = hooks_for(&h);
    mcp_error_t err = {0};
    client_transport_t *t = NULL;
    assert_int_equal(client_stdio_new(&(mcp_stdio_target_t){.argv = (const char *const[]){
                                          "/nonexistent/server", NULL}},
                                      &hooks, &t, &err),
                     MCP_EIO);
    assert_null(t);
    assert_non_null(strstr(err.message, "nonexistent"));
    mcp_error_clear(&err);
    assert_int_equal(client_stdio_new(&(mcp_stdio_target_t){0}, &hooks, &t, &err), MCP_EINVAL);
    assert_null(t);
    mcp_error_clear(&err);
    assert_int_equal(count(&h, &h.closed) + count(&h, &h.restarted) + count(&h, &h.unrouted), 0);
    heard_destroy(&h);
}

/* Is `pid` a live process (not gone, not a zombie)? */
static bool alive(pid_t pid)
{
    char path[64], stat[512] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    stat[n] = '\0';
    fclose(f);
    const char *after = strrchr(stat, ')'); /* "PID (COMM) STATE ..." */
    return after && after[1] == ' ' && after[2] != 'Z';
}

/* Waits for `pid` to die; false if it lives on (it is then killed, so
 * that a failing test leaves nothing behind). */
static bool dies(pid_t pid)
{
    for (int waited = 0; waited < WAIT_MS; waited += 10) {
        if (!alive(pid))
            return true;
        usleep(10 * 1000);
    }
    kill(pid, SIGKILL);
    return false;
}

/* Starts `sh -c` with `script`, which writes "$$ $!" (itself and a child
 * it leaves running) to $PIDS, and reads them. */
static client_transport_t *spawn_shell(const char *script, bool own_group, heard_t *h,
                                       pid_t *shell, pid_t *child, char *dir)
{
    char pids[600], pids_env[640];
    snprintf(pids, sizeof pids, "%s/pids", dir);
    snprintf(pids_env, sizeof pids_env, "PIDS=%s", pids);
    const char *env[] = {pids_env, NULL};
    client_transport_t *t = spawn(
        &(mcp_stdio_target_t){.argv = (const char *const[]){"sh", "-c", script, NULL},
                              .env = env, .own_process_group = own_group},
        h);
    int got = 0;
    for (int waited = 0; got != 2 && waited < WAIT_MS; waited += 10) {
        FILE *f = fopen(pids, "r");
        int a = 0, b = 0;
        if (f) {
            got = fscanf(f, "%d %d", &a, &b);
            fclose(f);
        }
        *shell = a, *child = b;
        if (got != 2)
            usleep(10 * 1000);
    }
    assert_int_equal(got, 2);
    unlink(pids);
    return t;
}

/* own_process_group: the server leads a process group of its own, and
 * stopping it stops the group, so what it started goes too. This one
 * ignores the end of its stdin and has a child: after the grace period
 * SIGTERM reaches both. mcp_stdio_servers_kill() kills such a group at
 * once. Without the option the server is in the client's group. */
static void test_own_process_group(void **state)
{
    (void)state;
    char dir[] = "/tmp/mcp-stdio-client-XXXXXX";
    assert_non_null(mkdtemp(dir));
    static const char script[] =
        "sleep 60 & echo $$ $! > \"$PIDS.new\"; mv \"$PIDS.new\" \"$PIDS\"; wait";
    heard_t h;
    heard_init(&h);
    pid_t shell, child;
    client_transport_t *t = spawn_shell(script, true, &h, &shell, &child, dir);
    assert_int_equal(getpgid(shell), shell);
    assert_int_equal(getpgid(child), shell);
    destroy(t);
    assert_false(alive(shell));
    assert_true(dies(child));
    heard_destroy(&h);

    /* mcp_stdio_servers_kill(): at once, SIGTERM ignored or not. */
    heard_init(&h);
    t = spawn_shell("trap '' TERM; sleep 60 & echo $$ $! > \"$PIDS.new\"; "
                    "mv \"$PIDS.new\" \"$PIDS\"; wait",
                    true, &h, &shell, &child, dir);
    mcp_stdio_servers_kill();
    assert_true(wait_for(&h, &h.closed, 1)); /* the transport saw it die */
    assert_true(dies(child));
    destroy(t);
    assert_false(alive(shell));
    heard_destroy(&h);

    /* A server that ends at the end of its stdin by itself, leaving a
     * background job: the job stops with it. */
    heard_init(&h);
    t = spawn_shell("sleep 60 & echo $$ $! > \"$PIDS.new\"; mv \"$PIDS.new\" \"$PIDS\"; "
                    "cat >/dev/null",
                    true, &h, &shell, &child, dir);
    destroy(t);
    assert_false(alive(shell));
    assert_true(dies(child));
    heard_destroy(&h);

    heard_init(&h);
    t = spawn_shell("echo $$ $$ > \"$PIDS.new\"; mv \"$PIDS.new\" \"$PIDS\"; cat >/dev/null",
                    false, &h, &shell, &child, dir);
    assert_int_equal(getpgid(shell), getpgid(0));
    destroy(t);
    heard_destroy(&h);
    rmdir(dir);
}

/* A working directory that cannot be entered is named as the cause:
 * posix_spawn gives ENOENT for a missing directory as for a missing
 * program, and "cannot start sh: No such file or directory" would send
 * the user looking for a program that is there. */
static void test_bad_working_directory_is_named(void **state)
{
    (void)state;
    heard_t h;
    heard_init(&h);
    client_transport_hooks_t hooks = hooks_for(&h);
    mcp_error_t err = {0};
    client_transport_t *t = NULL;
    const char *const sh[] = {"sh", "-c", "cat >/dev/null", NULL};
    assert_int_equal(client_stdio_new(&(mcp_stdio_target_t){.argv = sh,
                                                             .cwd = "/nonexistent/dir"},
                                      &hooks, &t, &err),
                     MCP_EIO);
    assert_null(t);
    assert_string_equal(err.message, "cannot start sh: cannot enter its working directory "
                                     "/nonexistent/dir: No such file or directory");
    mcp_error_clear(&err);

    /* A file where the directory should be. */
    assert_int_equal(client_stdio_new(&(mcp_stdio_target_t){.argv = sh, .cwd = "/dev/null"},
                                      &hooks, &t, &err),
                     MCP_EIO);
    assert_null(t);
    assert_non_null(strstr(err.message, "working directory /dev/null: Not a directory"));
    mcp_error_clear(&err);

    /* A missing program in a good directory is still the program's fault. */
    assert_int_equal(client_stdio_new(&(mcp_stdio_target_t){.argv = (const char *const[]){
                                          "/nonexistent/server", NULL}, .cwd = "/"},
                                      &hooks, &t, &err),
                     MCP_EIO);
    assert_string_equal(err.message,
                        "cannot start /nonexistent/server: No such file or directory");
    mcp_error_clear(&err);
    heard_destroy(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_at_once_is_reported_once),
        cmocka_unit_test(test_output_before_any_request),
        cmocka_unit_test(test_restart_is_reported),
        cmocka_unit_test(test_failed_constructor_reports_nothing),
        cmocka_unit_test(test_bad_working_directory_is_named),
        cmocka_unit_test(test_own_process_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
