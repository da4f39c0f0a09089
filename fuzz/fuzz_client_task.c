/*
 * Fuzzes client_task_read(), the reader of every task a server sends the
 * client (CreateTaskResult, tasks/get answers), and
 * client_task_read_legacy(), its twin for legacy servers' experimental
 * tasks, and checks that what they accept is what the client relies on,
 * and that the poll interval taken from it stays in range.
 *
 * Input: [flags][JSON...]
 *   flags bit 0  a detailed task (tasks/get), else a CreateTaskResult
 *   flags bit 1  expect the task id "t-1"
 *   flags bit 2  a legacy Task (bit 0 then has no meaning)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"

static void check(const json_t *obj, bool legacy, bool detailed, const char *expected,
                  const client_task_t *t)
{
    if (!t->id || json_string_value(json_object_get(obj, "taskId")) != t->id)
        abort();
    if (expected && strcmp(t->id, expected) != 0)
        abort();
    const char *interval_key = legacy ? "pollInterval" : "pollIntervalMs";
    if (t->has_poll_interval != (json_object_get(obj, interval_key) != NULL))
        abort();
    int64_t interval = client_task_poll_interval(t, CLIENT_TASK_DEFAULT_POLL_MS);
    if (interval < CLIENT_TASK_MIN_POLL_MS || interval > CLIENT_TASK_MAX_POLL_MS)
        abort();
    bool input = detailed && t->status == CLIENT_TASK_INPUT_REQUIRED;
    bool completed = detailed && t->status == CLIENT_TASK_COMPLETED;
    bool failed = detailed && t->status == CLIENT_TASK_FAILED;
    if (input != json_is_object(t->input_requests) || completed != json_is_object(t->result) ||
        failed != json_is_object(t->error))
        abort();
    /* What the client turns a failed task into must be a JSON-RPC error. */
    if (failed && client_rpc_error(t->error, NULL) != MCP_ERPC)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool legacy = data[0] & 4;
    bool detailed = !legacy && (data[0] & 1);
    const char *expected = (data[0] & 2) ? "t-1" : NULL;
    json_t *obj = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY, NULL);
    client_task_t task;
    mcp_error_t err = {0};
    int rc = legacy ? client_task_read_legacy(obj, expected, &task, &err)
                    : client_task_read(obj, detailed, expected, &task, &err);
    if (rc == MCP_OK)
        check(obj, legacy, detailed, expected, &task);
    else if (rc != MCP_EPROTO || err.message[0] == '\0')
        abort();
    mcp_error_clear(&err);
    json_decref(obj);
    return 0;
}
