/*
 * Tools of the Tasks extension scenarios (tasks-*): calls that become
 * tasks with mcp_call_start_task(), run on after the client has its task
 * handle, ask for input inside the task, fail in both ways a task can, and
 * honour tasks/cancel.
 */
#include <stdio.h>
#include <string.h>

#include "fixture.h"

/* A task's handler starts it and goes on; for a client that did not
 * declare the extension (MCP_EUNSUPPORTED) it just answers as usual. */
static int start(mcp_call_t *call)
{
    int rc = mcp_call_start_task(call);
    return rc == MCP_EUNSUPPORTED ? MCP_OK : rc;
}

static int greet(mcp_call_t *call, void *user)
{
    (void)user;
    const char *name = mcp_call_arg_string(call, "name");
    return mcp_call_add_textf(call, "Hello, %s!", name ? name : "World");
}

/* Sleeps `seconds`, then reports. 0 takes the immediate path: no task. A
 * cancelled task ends "cancelled" (the library sees to that); returning
 * the cancellation is all it takes. */
static int slow_compute(mcp_call_t *call, void *user)
{
    (void)user;
    int64_t seconds = 0;
    mcp_call_arg_int(call, "seconds", &seconds);
    const char *label = mcp_call_arg_string(call, "label");
    int rc;
    if (seconds > 0 && (rc = start(call)) != MCP_OK)
        return rc;
    if (seconds > 0) {
        mcp_call_set_task_message(call, "computing");
        if ((rc = mcp_call_sleep(call, seconds * 1000)) != MCP_OK)
            return rc;
    }
    return mcp_call_add_textf(call, "Computed %s after %lld s", label ? label : "result",
                              (long long)seconds);
}

/* A tool execution error: the task completes, with isError. */
static int failing_job(mcp_call_t *call, void *user)
{
    (void)user;
    int rc = start(call);
    if (rc != MCP_OK || (rc = mcp_call_sleep(call, 1000)) != MCP_OK)
        return rc;
    return mcp_call_tool_error(call, "The job failed: the input data was rejected");
}

/* A protocol error: the task fails, with the JSON-RPC error inlined. */
static int protocol_error_job(mcp_call_t *call, void *user)
{
    (void)user;
    int rc = start(call);
    if (rc != MCP_OK)
        return rc;
    return mcp_call_fail(call, MCP_INTERNAL_ERROR, "The job crashed: internal failure");
}

static json_t *confirm_schema(void)
{
    return fixture_json("{\"type\":\"object\",\"properties\":{\"confirm\":{\"type\":\"boolean\","
                        "\"description\":\"Go ahead?\"}},\"required\":[\"confirm\"]}");
}

/* Did the user accept with confirm: true? */
static bool confirmed(const json_t *answer)
{
    const char *action = json_string_value(json_object_get(answer, "action"));
    return action && strcmp(action, "accept") == 0 &&
           json_is_true(json_object_get(json_object_get(answer, "content"), "confirm"));
}

/* Asks inside the task, then completes with what the user said. */
static int confirm_delete(mcp_call_t *call, void *user)
{
    (void)user;
    int rc = start(call);
    if (rc != MCP_OK)
        return rc;
    const char *file = mcp_call_arg_string(call, "filename");
    if (!file)
        file = "the file";
    const json_t *answer = mcp_call_input(call, "confirm_delete");
    if (!answer) {
        char message[256];
        snprintf(message, sizeof message, "Delete %s?", file);
        rc = mcp_call_elicit(call, "confirm_delete", message, confirm_schema(), MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    return confirmed(answer) ? mcp_call_add_textf(call, "Deleted %s", file)
                             : mcp_call_add_textf(call, "Kept %s", file);
}

/* Two questions at once: the task waits until both are answered. */
static int multi_input(mcp_call_t *call, void *user)
{
    (void)user;
    int rc = start(call);
    if (rc != MCP_OK)
        return rc;
    const json_t *name = mcp_call_input(call, "name");
    const json_t *confirm = mcp_call_input(call, "confirm");
    if (name && confirm) {
        const char *who = json_string_value(json_object_get(json_object_get(name, "content"),
                                                            "name"));
        return mcp_call_add_textf(call, "%s %s", who ? who : "someone",
                                  confirmed(confirm) ? "confirmed" : "declined");
    }
    if (!name && (rc = mcp_call_elicit(call, "name", "Your name?",
                                       fixture_json("{\"type\":\"object\",\"properties\":"
                                                    "{\"name\":{\"type\":\"string\"}},"
                                                    "\"required\":[\"name\"]}"),
                                       MCP_INPUT_NEEDED)) < 0)
        return rc;
    if (!confirm && (rc = mcp_call_elicit(call, "confirm", "Confirm?", confirm_schema(),
                                          MCP_INPUT_NEEDED)) < 0)
        return rc;
    return MCP_INPUT_REQUIRED;
}

/* MRTR first (round 1 asks for the name on the request itself), then a
 * task for the work: the answer travels into the task's result. */
static int tool_with_task(mcp_call_t *call, void *user)
{
    (void)user;
    const json_t *answer = mcp_call_input(call, "user_name");
    if (!answer) {
        int rc = mcp_call_elicit(call, "user_name", "What is your name?",
                                 fixture_json("{\"type\":\"object\",\"properties\":"
                                              "{\"name\":{\"type\":\"string\"}},"
                                              "\"required\":[\"name\"]}"),
                                 MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK)
        return rc;
    const char *name =
        json_string_value(json_object_get(json_object_get(answer, "content"), "name"));
    return mcp_call_add_textf(call, "Hello, %s! Your task is done.", name ? name : "stranger");
}

static const mcp_tool_t tools[] = {
    {.name = "greet", .description = "Greets by name, at once (never a task)",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}",
     .handler = greet},
    {.name = "slow_compute",
     .description = "Sleeps for the given seconds as a task, then reports (0: at once)",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":\"integer\"},"
                     "\"label\":{\"type\":\"string\"}}}",
     .tasks = MCP_TASKS_OPTIONAL, .handler = slow_compute},
    {.name = "failing_job", .description = "A task that ends with a tool execution error",
     .tasks = MCP_TASKS_REQUIRED, .handler = failing_job},
    {.name = "protocol_error_job", .description = "A task that fails with a JSON-RPC error",
     .tasks = MCP_TASKS_OPTIONAL, .handler = protocol_error_job},
    {.name = "confirm_delete", .description = "A task that asks for a confirmation",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"filename\":{\"type\":\"string\"}}}",
     .tasks = MCP_TASKS_OPTIONAL, .handler = confirm_delete},
    {.name = "multi_input", .description = "A task that asks two questions at once",
     .tasks = MCP_TASKS_OPTIONAL, .handler = multi_input},
    {.name = "test_tool_with_task",
     .description = "Asks for a name on the request, then finishes as a task",
     .tasks = MCP_TASKS_REQUIRED, .handler = tool_with_task},
};

int fixture_add_task_tools(mcp_server_t *srv, mcp_error_t *err)
{
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        int rc = mcp_server_add_tool(srv, &tools[i], err);
        if (rc != MCP_OK)
            return rc;
    }
    return MCP_OK;
}
