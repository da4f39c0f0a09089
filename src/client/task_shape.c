/*
 * Reading a task the server sent (the Tasks extension, SEP-2663): the
 * CreateTaskResult that answers tools/call, and the DetailedTask that
 * answers tasks/get; and the Task of a legacy (2025-11-25) server's
 * experimental tasks, which names two members differently (ttl,
 * pollInterval). Everything the client does with a task starts from what
 * client_task_read() or client_task_read_legacy() accepted, so this is the
 * one place that decides whether a peer's task is well formed. Pure.
 */
#include <string.h>

#include "client/client_internal.h"

static const struct {
    const char *name;
    client_task_status_t status;
} statuses[] = {
    {"working", CLIENT_TASK_WORKING},
    {"input_required", CLIENT_TASK_INPUT_REQUIRED},
    {"completed", CLIENT_TASK_COMPLETED},
    {"failed", CLIENT_TASK_FAILED},
    {"cancelled", CLIENT_TASK_CANCELLED},
};

int64_t client_task_poll_interval(const client_task_t *task, int64_t current_ms)
{
    if (!task->has_poll_interval)
        return current_ms;
    json_int_t ms = task->poll_interval_ms;
    return ms < CLIENT_TASK_MIN_POLL_MS   ? CLIENT_TASK_MIN_POLL_MS
           : ms > CLIENT_TASK_MAX_POLL_MS ? CLIENT_TASK_MAX_POLL_MS
                                          : (int64_t)ms;
}

bool client_task_status_final(client_task_status_t status)
{
    return status == CLIENT_TASK_COMPLETED || status == CLIENT_TASK_FAILED ||
           status == CLIENT_TASK_CANCELLED;
}

static int malformed(mcp_error_t *err, const char *what)
{
    return mcp_error_set(err, MCP_EPROTO, 0, NULL, "invalid task: %s", what);
}

/* The member of a detailed task that its status calls for. */
static int read_status_member(const json_t *obj, client_task_t *out, mcp_error_t *err)
{
    if (out->status == CLIENT_TASK_INPUT_REQUIRED) {
        out->input_requests = json_object_get(obj, "inputRequests");
        if (!json_is_object(out->input_requests))
            return malformed(err, "status input_required without an inputRequests object");
    } else if (out->status == CLIENT_TASK_COMPLETED) {
        out->result = json_object_get(obj, "result");
        if (!json_is_object(out->result))
            return malformed(err, "status completed without a result object");
        /* The result is final: it can neither ask for input nor be a task. */
        const json_t *type = json_object_get(out->result, "resultType");
        if (type && !(json_is_string(type) && strcmp(json_string_value(type), "complete") == 0))
            return malformed(err, "the result of a completed task is not complete");
    } else if (out->status == CLIENT_TASK_FAILED) {
        out->error = json_object_get(obj, "error");
        if (mcp_error_from_json(NULL, out->error) != MCP_OK)
            return malformed(err, "status failed without a JSON-RPC error object");
    }
    return MCP_OK;
}

/* What both eras' tasks have; the names of the two members that differ
 * are given. */
static int read_task(const json_t *obj, const char *expected_id, const char *ttl_key,
                     const char *interval_key, client_task_t *out, mcp_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(obj))
        return malformed(err, "not an object");

    out->id = json_string_value(json_object_get(obj, "taskId"));
    if (!out->id)
        return malformed(err, "taskId is missing or not a string");
    if (expected_id && strcmp(out->id, expected_id) != 0)
        return mcp_error_set(err, MCP_EPROTO, 0, NULL,
                             "invalid task: the state of task \"%.64s\" answers for \"%.64s\"",
                             out->id, expected_id);

    const char *status = json_string_value(json_object_get(obj, "status"));
    size_t i = 0;
    while (status && i < sizeof statuses / sizeof statuses[0] &&
           strcmp(statuses[i].name, status) != 0)
        i++;
    if (!status || i == sizeof statuses / sizeof statuses[0])
        return malformed(err, "status is missing or unknown");
    out->status = statuses[i].status;

    const json_t *ttl = json_object_get(obj, ttl_key);
    if (!json_is_string(json_object_get(obj, "createdAt")) ||
        !json_is_string(json_object_get(obj, "lastUpdatedAt")))
        return malformed(err, "createdAt or lastUpdatedAt is missing or not a string");
    if (!json_is_integer(ttl) && !json_is_null(ttl))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL,
                             "invalid task: %s is missing or neither an integer nor null",
                             ttl_key);

    const json_t *message = json_object_get(obj, "statusMessage");
    if (message && !json_is_string(message))
        return malformed(err, "statusMessage is not a string");
    out->status_message = json_string_value(message);

    const json_t *interval = json_object_get(obj, interval_key);
    if (interval && !json_is_integer(interval))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "invalid task: %s is not an integer",
                             interval_key);
    out->has_poll_interval = interval != NULL;
    out->poll_interval_ms = json_integer_value(interval);
    return MCP_OK;
}

int client_task_read(const json_t *obj, bool detailed, const char *expected_id,
                     client_task_t *out, mcp_error_t *err)
{
    int rc = read_task(obj, expected_id, "ttlMs", "pollIntervalMs", out, err);
    return rc == MCP_OK && detailed ? read_status_member(obj, out, err) : rc;
}

int client_task_read_legacy(const json_t *obj, const char *expected_id, client_task_t *out,
                            mcp_error_t *err)
{
    return read_task(obj, expected_id, "ttl", "pollInterval", out, err);
}
