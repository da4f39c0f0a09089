/*
 * The experimental tasks of legacy (2025-11-25) servers, on the client: a
 * tools/call made a task because the tool asks for it (digest section
 * 10.2).
 *
 * In that protocol the caller chooses: a tools/call whose params carry
 * "task" is answered at once with a CreateTaskResult ({"task": Task}), and
 * the outcome is fetched later with tasks/result. A client created with
 * the option `tasks` makes a task of a call when the server declares
 * capabilities.tasks.requests.tools.call and listed the tool with
 * execution.taskSupport "optional" or "required" (tools/list is fetched
 * once for a tool the client has not seen); a tool that requires a task
 * cannot be called otherwise. The task is then followed as the reference
 * TypeScript client follows it:
 *
 *   - tasks/get is polled at the task's pollInterval until the task needs
 *     input or ends;
 *   - tasks/result gives the outcome: the server holds its answer until
 *     the task ends, and meanwhile sends the task's questions
 *     (elicitation/create, ...) as requests of its own, which the client
 *     answers through its callbacks like any legacy server request
 *     (inbound.c);
 *   - a task the server cancelled is MCP_ECANCELED;
 *   - when the caller's cancel fires, or anything else fails before the
 *     task ended, tasks/cancel tells the server: no one else knows the id.
 *
 * A server that ignores "task" and answers the call at once is taken at
 * its word. keep_task does not apply: the legacy protocol's tasks cannot
 * be handed to mcp_client_task_get() and its neighbours, so they are
 * always followed.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "client/legacy/legacy.h"
#include "clock.h"
#include "json_copy.h"

/* Does the server take tasks for tools/call? */
static bool server_takes_tool_tasks(const mcp_client_t *c)
{
    const json_t *requests = json_object_get(json_object_get(c->server_caps, "tasks"), "requests");
    return json_is_object(json_object_get(json_object_get(requests, "tools"), "call"));
}

bool client_legacy_task_wanted(mcp_client_t *c, const json_t *params,
                               const mcp_request_options_t *opts)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    if (!c->tasks || !c->legacy || !name || json_object_get(params, "task") ||
        !server_takes_tool_tasks(c))
        return false;
    pthread_mutex_lock(&c->lock);
    client_task_support_t support = client_tools_task_support(&c->tools, name);
    bool complete = c->tools.complete;
    pthread_mutex_unlock(&c->lock);
    if (support == CLIENT_TASK_SUPPORT_UNKNOWN && !complete) {
        client_call_opts_t o;
        client_resolve_opts(c, opts, &o);
        mcp_error_t e = {0};
        if (client_refresh_tools(c, &o, &e) != MCP_OK)
            client_log(c, MCP_LOG_WARNING,
                       "cannot list tools to learn whether \"%s\" runs as a task: %s", name,
                       e.message);
        mcp_error_clear(&e);
        pthread_mutex_lock(&c->lock);
        support = client_tools_task_support(&c->tools, name);
        pthread_mutex_unlock(&c->lock);
    }
    return support == CLIENT_TASK_SUPPORT_OPTIONAL || support == CLIENT_TASK_SUPPORT_REQUIRED;
}

/* Polls the task `created` (borrowed, as is its id) until it needs input
 * or ends; then asks for its outcome. */
static int follow(mcp_client_t *c, const char *id, const client_task_t *created,
                  const client_call_opts_t *o, json_t **result_out, mcp_error_t *err)
{
    /* Each request on the wire: the call's timeout and cancel. */
    const mcp_request_options_t wire = {.timeout_ms = o->timeout_ms, .cancel = o->cancel};
    int64_t interval_ms = client_task_poll_interval(created, CLIENT_TASK_DEFAULT_POLL_MS);
    client_task_status_t status = created->status;
    int rc = MCP_OK;
    while (status == CLIENT_TASK_WORKING) {
        struct timespec until = mcp_clock_deadline(interval_ms);
        if (client_cancel_sleep_until(o->cancel, &until) != MCP_OK) {
            rc = mcp_error_set(err, MCP_ECANCELED, 0, NULL, "the call was cancelled");
            break;
        }
        json_t *state = NULL;
        client_task_t task;
        rc = client_task_request(c, "tasks/get", id, NULL, &wire, &state, err);
        if (rc == MCP_OK)
            rc = client_task_read_legacy(state, id, &task, err);
        if (rc == MCP_OK) {
            interval_ms = client_task_poll_interval(&task, interval_ms);
            status = task.status;
        }
        json_decref(state);
        if (rc != MCP_OK)
            break;
    }
    if (rc == MCP_OK && status == CLIENT_TASK_CANCELLED)
        return mcp_error_set(err, MCP_ECANCELED, 0, NULL, "the server cancelled task %s", id);
    /* Input required, completed or failed: tasks/result answers once the
     * task is over, with the call's result or its JSON-RPC error. */
    if (rc == MCP_OK)
        rc = client_task_request(c, "tasks/result", id, NULL, &wire, result_out, err);
    if (rc != MCP_OK && rc != MCP_ERPC && !client_task_status_final(status))
        client_task_abandon(c, id, o->timeout_ms);
    return rc;
}

int client_legacy_task_call(mcp_client_t *c, const json_t *params,
                            const mcp_request_options_t *opts, json_t **result_out,
                            mcp_error_t *err)
{
    *result_out = NULL;
    json_t *augmented = mcp_json_copy_object(params);
    if (!augmented || json_object_set_new(augmented, "task", json_object()) != 0) {
        json_decref(augmented);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    json_t *answer = NULL;
    int rc = client_call(c, "tools/call", augmented, opts, &answer, err);
    json_decref(augmented);
    if (rc != MCP_OK)
        return rc;
    const json_t *task_obj = json_object_get(answer, "task");
    if (!task_obj) {
        *result_out = answer; /* answered at once, not as a task */
        return MCP_OK;
    }
    client_task_t created;
    rc = client_task_read_legacy(task_obj, NULL, &created, err);
    if (rc == MCP_OK) {
        client_call_opts_t o;
        client_resolve_opts(c, opts, &o);
        rc = follow(c, created.id, &created, &o, result_out, err);
    }
    json_decref(answer);
    return rc;
}
