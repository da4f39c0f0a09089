/*
 * mcp TARGET task ID [--wait | --cancel]
 *
 * A task of the Tasks extension, known by its id: one that call --detach
 * left running, or that another program started. Without an option, its
 * state (tasks/get); with --wait, followed to its end as call follows the
 * tasks it makes, questions included; with --cancel, tasks/cancel and the
 * state after it.
 *
 * The exit status tells how the task stands: 0 while it works or waits
 * for input, and when it completed; 1 when its result is a tool error; 3
 * when it failed or was cancelled (except with --cancel, which asked for
 * that).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "failure.h"
#include "json_out.h"
#include "output.h"
#include "signals.h"
#include "term.h"

/* What an input request (borrowed) asks, in a few words. */
static const char *question(const json_t *request)
{
    const char *method = json_string_value(json_object_get(request, "method"));
    const json_t *params = json_object_get(request, "params");
    if (method && strcmp(method, "elicitation/create") == 0) {
        const char *message = json_string_value(json_object_get(params, "message"));
        return message ? message : "a question";
    }
    if (method && strcmp(method, "sampling/createMessage") == 0)
        return "a sampling request (see --sample-command)";
    if (method && strcmp(method, "roots/list") == 0)
        return "the roots (see --root)";
    return method ? method : "an input request";
}

/* A task still running: its fields, and what it asks. */
static void print_running(const json_t *state)
{
    const char *message = json_string_value(json_object_get(state, "statusMessage"));
    out_field("Task", "%s", json_string_value(json_object_get(state, "taskId")));
    out_field("Status", "%s", json_string_value(json_object_get(state, "status")));
    if (message)
        out_field("Message", "%s", message);
    out_field("Updated", "%s", json_string_value(json_object_get(state, "lastUpdatedAt")));
    const char *key;
    const json_t *request;
    json_object_foreach((json_t *)json_object_get(state, "inputRequests"), key, request)
        out_field("Asks", "%s: %s", key, question(request));
    if (json_object_size(json_object_get(state, "inputRequests")) > 0)
        term_notef("task --wait answers (see --answer, --yes, --decline)");
    fflush(stdout);
}

/* Prints a tasks/get state (borrowed); returns the exit status it means.
 * A cancelled task is a failure unless `cancel_asked`. */
static int report_state(const cli_session_t *s, const json_t *state, bool cancel_asked)
{
    const char *id = json_string_value(json_object_get(state, "taskId"));
    const char *status = json_string_value(json_object_get(state, "status"));
    const char *message = json_string_value(json_object_get(state, "statusMessage"));
    const json_t *result = json_object_get(state, "result");
    int exit_status = CLI_EXIT_OK;
    if (strcmp(status, "completed") == 0 && json_is_true(json_object_get(result, "isError")))
        exit_status = CLI_EXIT_TOOL_ERROR;
    else if (strcmp(status, "failed") == 0 ||
             (strcmp(status, "cancelled") == 0 && !cancel_asked))
        exit_status = CLI_EXIT_PROTOCOL;

    if (s->opt->json) {
        json_out_print(state);
        return exit_status;
    }
    if (strcmp(status, "completed") == 0) {
        out_tool_result(NULL, id, result);
    } else if (strcmp(status, "failed") == 0) {
        mcp_error_t err = {0};
        mcp_error_from_json(&err, json_object_get(state, "error"));
        term_errorf("task %s failed: %s (%d)", id, err.message, err.code);
        mcp_error_clear(&err);
    } else if (strcmp(status, "cancelled") == 0 && !cancel_asked) {
        term_errorf("task %s was cancelled%s%s", id, message ? ": " : "", message ? message : "");
    } else {
        print_running(state);
    }
    return exit_status;
}

static int get_and_report(cli_session_t *s, const char *id, bool cancel_asked)
{
    json_t *state = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_task_get(s->client, id, &s->request, &state, &err);
    int status = rc == MCP_OK ? report_state(s, state, cancel_asked)
                              : cli_fail_call(s->opt, "tasks/get", rc, &err);
    json_decref(state);
    mcp_error_clear(&err);
    return status;
}

/* Follows the task to its end and prints its result. Ctrl-C ends the
 * wait only: the task runs on. */
static int wait_for(cli_session_t *s, const char *id)
{
    json_t *result = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_task_follow(s->client, id, &s->request, &result, &err);
    int status;
    if (rc == MCP_OK) {
        if (s->opt->json)
            json_out_print(result);
        else
            out_tool_result(NULL, id, result);
        status = json_is_true(json_object_get(result, "isError")) ? CLI_EXIT_TOOL_ERROR
                                                                  : CLI_EXIT_OK;
    } else if (rc == MCP_ECANCELED && signals_interrupted()) {
        status = cli_fail(s->opt, CLI_EXIT_INTERRUPTED, NULL,
                          "stopped waiting; task %s runs on (task %s --cancel stops it)", id, id);
    } else {
        char what[300];
        snprintf(what, sizeof what, "task %s", id);
        status = cli_fail_call(s->opt, what, rc, &err);
    }
    json_decref(result);
    mcp_error_clear(&err);
    return status;
}

int cmd_task(cli_session_t *s)
{
    const char *id = s->opt->words.v[0];
    if (s->opt->task_wait)
        return wait_for(s, id);
    if (s->opt->task_cancel) {
        mcp_error_t err = {0};
        int rc = mcp_client_task_cancel(s->client, id, &s->request, &err);
        if (rc != MCP_OK) {
            int status = cli_fail_call(s->opt, "tasks/cancel", rc, &err);
            mcp_error_clear(&err);
            return status;
        }
    }
    return get_and_report(s, id, s->opt->task_cancel);
}
