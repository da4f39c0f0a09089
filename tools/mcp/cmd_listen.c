/*
 * mcp TARGET listen [--tools] [--prompts] [--resources] [--subscribe URI ...]
 *                   [--task ID ...] [--count N]
 *
 * Notifications arrive on a thread of the subscription; the main thread
 * waits (poll) for one of: enough notifications, the end of the
 * subscription, Ctrl-C, or --timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "failure.h"
#include "json_out.h"
#include "signals.h"
#include "term.h"

typedef struct listen_state {
    bool json;
    long want;               /* stop after this many (0: no limit) */
    pthread_mutex_t lock;    /* guards the fields below */
    long seen;
    bool ended;              /* the subscription ended by itself */
    int end_rc;
    int wake[2];             /* tells the main thread to look */
} listen_state_t;

static void wake(listen_state_t *st)
{
    char b = 1;
    ssize_t n = write(st->wake[1], &b, 1);
    (void)n; /* a full pipe is readable already */
}

static void print_event(const listen_state_t *st, const char *method, const json_t *params)
{
    if (st->json) {
        json_t *line = json_pack("{s:s, s:O?}", "method", method, "params", params);
        json_out_line(line);
        json_decref(line);
        return;
    }
    static const struct {
        const char *method, *text;
    } names[] = {
        {"notifications/tools/list_changed", "the tools changed"},
        {"notifications/prompts/list_changed", "the prompts changed"},
        {"notifications/resources/list_changed", "the resources changed"},
        {"notifications/resources/updated", "updated"},
    };
    char when[16];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%H:%M:%S", localtime_r(&now, &tm));
    const char *text = method;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].method, method) == 0)
            text = names[i].text;
    const char *uri = json_string_value(json_object_get(params, "uri"));
    if (strcmp(method, "notifications/tasks") == 0) {
        /* "task 786512e2 input_required: Waiting for your answer" */
        const char *id = json_string_value(json_object_get(params, "taskId"));
        const char *status = json_string_value(json_object_get(params, "status"));
        const char *message = json_string_value(json_object_get(params, "statusMessage"));
        printf("%s%s%s task %s %s%s%s\n", term_sgr(stdout, TERM_DIM), when,
               term_sgr(stdout, TERM_RESET), id ? id : "?", status ? status : "?",
               message ? ": " : "", message ? message : "");
        fflush(stdout);
        return;
    }
    printf("%s%s%s %s%s%s\n", term_sgr(stdout, TERM_DIM), when, term_sgr(stdout, TERM_RESET), text,
           uri ? " " : "", uri ? uri : "");
    fflush(stdout);
}

static void on_event(void *user, const char *method, const json_t *params)
{
    listen_state_t *st = user;
    pthread_mutex_lock(&st->lock);
    bool wanted = st->want == 0 || st->seen < st->want;
    if (wanted) {
        print_event(st, method, params);
        st->seen++;
    }
    bool enough = st->want > 0 && st->seen >= st->want;
    pthread_mutex_unlock(&st->lock);
    if (enough)
        wake(st);
}

static void on_end(void *user, int rc)
{
    listen_state_t *st = user;
    pthread_mutex_lock(&st->lock);
    st->ended = true;
    st->end_rc = rc;
    pthread_mutex_unlock(&st->lock);
    wake(st);
}

/* Appends "WHAT a, b" (or "; WHAT a, b" after other text) for the
 * strings of `list` to buf, which holds `used` bytes; returns the new
 * length. */
static size_t describe_list(const json_t *list, const char *what, char *buf, size_t used,
                            size_t cap)
{
    size_t i;
    const json_t *item;
    json_array_foreach(list, i, item) {
        int n = snprintf(buf + used, cap - used, "%s%s%s", i ? ", " : used ? "; " : "",
                         i ? "" : what, json_string_value(item) ? json_string_value(item) : "?");
        if (n > 0 && (size_t)n < cap - used)
            used += (size_t)n;
    }
    return used;
}

/* "tools, prompts and resources changes, updates of notes://index" */
static void describe_filter(const json_t *filter, char *buf, size_t cap)
{
    static const struct {
        const char *key, *name;
    } lists[] = {{"toolsListChanged", "tools"},
                 {"promptsListChanged", "prompts"},
                 {"resourcesListChanged", "resources"}};
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < 3; i++) {
        if (!json_is_true(json_object_get(filter, lists[i].key)))
            continue;
        int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", lists[i].name);
        if (n > 0 && (size_t)n < cap - used)
            used += (size_t)n;
    }
    if (used) {
        int n = snprintf(buf + used, cap - used, " list changes");
        if (n > 0 && (size_t)n < cap - used)
            used += (size_t)n;
    }
    used = describe_list(json_object_get(filter, "resourceSubscriptions"), "updates of ", buf,
                         used, cap);
    describe_list(json_object_get(filter, "taskIds"), "task ", buf, used, cap);
}

/* Waits for the end; returns the exit status. */
static int wait_for_end(cli_session_t *s, listen_state_t *st)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    double limit_ms = s->opt->timeout_s > 0 ? s->opt->timeout_s * 1000.0 : -1;
    for (;;) {
        pthread_mutex_lock(&st->lock);
        bool enough = st->want > 0 && st->seen >= st->want;
        bool ended = st->ended;
        int end_rc = st->end_rc;
        long seen = st->seen;
        pthread_mutex_unlock(&st->lock);
        if (enough)
            return CLI_EXIT_OK;
        if (ended && end_rc == MCP_OK) {
            term_notef("the server ended the subscription");
            return CLI_EXIT_OK;
        }
        if (ended)
            return cli_fail_call(s->opt, "subscriptions/listen", end_rc, NULL);
        if (signals_interrupted())
            return CLI_EXIT_OK; /* Ctrl-C is how listening normally ends */

        int wait_ms = -1;
        if (limit_ms >= 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            double spent = (now.tv_sec - start.tv_sec) * 1000.0 +
                           (now.tv_nsec - start.tv_nsec) / 1e6;
            if (spent >= limit_ms) {
                if (st->want == 0)
                    return CLI_EXIT_OK;
                s->connection_intact = true; /* only the events are missing */
                return cli_fail(s->opt, CLI_EXIT_CONNECTION, NULL,
                                "only %ld of %ld notifications came within --timeout", seen,
                                st->want);
            }
            wait_ms = (int)(limit_ms - spent) + 1;
        }
        struct pollfd p[2] = {{st->wake[0], POLLIN, 0}, {signals_fd(), POLLIN, 0}};
        if (poll(p, 2, wait_ms) > 0 && p[0].revents) {
            char drain[64];
            ssize_t n = read(st->wake[0], drain, sizeof drain);
            (void)n;
        }
    }
}

int cmd_listen(cli_session_t *s)
{
    const cli_options_t *opt = s->opt;
    bool everything = !opt->listen_tools && !opt->listen_prompts && !opt->listen_resources &&
                      opt->subscribe.n == 0 && opt->listen_task_ids.n == 0;
    mcp_listen_filter_t filter = {
        .tools_list_changed = everything || opt->listen_tools,
        .prompts_list_changed = everything || opt->listen_prompts,
        .resources_list_changed = everything || opt->listen_resources,
        .resource_uris = opt->subscribe.v,
        .n_resource_uris = opt->subscribe.n,
        .task_ids = opt->listen_task_ids.v,
        .n_task_ids = opt->listen_task_ids.n,
    };
    listen_state_t st = {.json = opt->json, .want = opt->count, .wake = {-1, -1}};
    pthread_mutex_init(&st.lock, NULL);
    if (pipe2(st.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        pthread_mutex_destroy(&st.lock);
        return cli_fail(opt, CLI_EXIT_CONNECTION, NULL, "cannot make a pipe: %s", strerror(errno));
    }

    mcp_subscription_t *sub = NULL;
    json_t *honoured = NULL;
    mcp_error_t err = {0};
    int status = CLI_EXIT_OK;
    /* Notifications wait for the lock until the acknowledgement is out, so
     * that it comes first. */
    pthread_mutex_lock(&st.lock);
    int rc = mcp_client_listen(s->client, &filter, on_event, &st,
                               &(mcp_listen_options_t){.on_end = on_end}, &sub, &honoured, &err);
    if (rc != MCP_OK) {
        status = cli_fail_call(opt, "subscriptions/listen", rc, &err);
    } else {
        char what[2048];
        describe_filter(honoured, what, sizeof what);
        if (opt->json) {
            json_t *ack = json_pack("{s:s, s:{s:O}}", "method",
                                    "notifications/subscriptions/acknowledged", "params",
                                    "notifications", honoured);
            json_out_line(ack);
            json_decref(ack);
        }
        if (!what[0])
            status = cli_fail(opt, CLI_EXIT_PROTOCOL, NULL,
                              "the server will send none of the notifications asked for");
        else
            term_notef("listening for %s (Ctrl-C to stop)", what);
    }
    pthread_mutex_unlock(&st.lock);
    if (status == CLI_EXIT_OK)
        status = wait_for_end(s, &st);
    mcp_subscription_close(sub);
    mcp_error_clear(&err);
    json_decref(honoured);
    close(st.wake[0]);
    close(st.wake[1]);
    pthread_mutex_destroy(&st.lock);
    return status;
}
