/*
 * Fuzzes the Tasks extension of the server core: every line of the input
 * is one message for mcp_server_submit() on a server whose tools become
 * tasks (one asks for input inside its task, one fails, one waits for a
 * cancellation), so tools/call, tasks/get, tasks/update, tasks/cancel and
 * listen streams with taskIds meet peer-controlled bytes; and, after a
 * legacy initialize of 2025-11-25, the experimental tasks of that version
 * (tools/call with "task", tasks/get, tasks/result -- which sends a
 * task's questions --, tasks/list and tasks/cancel).
 *
 * Task ids are random, so a message may name the last task created with
 * the placeholder "$TASK" (in any string): the harness puts the id of the
 * newest CreateTaskResult there, and updates and cancellations reach real
 * tasks in every state.
 *
 * Input: a flags byte, then newline-separated messages.
 *   flags & 1: with an authenticated principal ("fuzzer"); flags & 2: the
 *   next messages as another principal ("other"), to exercise binding.
 *
 * Each input gets a server of its own, freed at the end: tasks outlive the
 * request that made them, and a shared server would keep them across
 * inputs (libFuzzer then runs a full leak scan after each one). Freeing
 * cancels what still runs and frees every task, so the leak check covers
 * the task store too.
 */
#define _GNU_SOURCE /* memmem */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/request.h"
#include "mcp/server_core.h"
#include "support/fuzz_sink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MESSAGES 24
#define TASK_PLACEHOLDER "$TASK"

/* ------------------------------------------------------------------------
 * The server's tools
 * ------------------------------------------------------------------------ */

/* Becomes a task; asks for "go" inside it when arguments.ask is true;
 * sets a status message from arguments.message. */
static int job(mcp_call_t *call, void *user)
{
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK && rc != MCP_EUNSUPPORTED)
        return rc;
    mcp_call_set_task_message(call, mcp_call_arg_string(call, "message"));
    bool ask = false;
    if (mcp_call_arg_bool(call, "ask", &ask) && ask && !mcp_call_input(call, "go")) {
        json_t *schema = json_pack("{s:s, s:{s:{s:s}}}", "type", "object", "properties", "go",
                                   "type", "boolean");
        rc = mcp_call_elicit(call, "go", "Go?", schema, 0);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    return mcp_call_add_textf(call, "task %s", mcp_call_task_id(call) ? "yes" : "no");
}

/* A task that ends with a JSON-RPC error. */
static int broken(mcp_call_t *call, void *user)
{
    int rc = mcp_call_start_task(call);
    return rc != MCP_OK ? rc : mcp_call_fail(call, -32050, "broken as asked");
}

/* A task that waits until it is cancelled (tasks/cancel, or the server
 * freed at the end of the input). */
static int waiter(mcp_call_t *call, void *user)
{
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK)
        return rc;
    while (mcp_call_sleep(call, 1000) == MCP_OK)
        ;
    return MCP_ECANCELED;
}

static mcp_server_t *new_server(void)
{
    /* A legacy client that never answers a question holds its request (and
     * the harness, which waits for each answer) only briefly. */
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "fuzz", .version = "1", .task_poll_interval_ms = 10,
                                .legacy_input_timeout_ms = 50},
        NULL);
    if (!srv)
        return NULL;
    const mcp_tool_t tools[] = {
        {.name = "job", .handler = job, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "broken", .handler = broken, .tasks = MCP_TASKS_OPTIONAL},
        {.name = "waiter", .handler = waiter, .tasks = MCP_TASKS_REQUIRED},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        mcp_server_add_tool(srv, &tools[i], NULL);
    return srv;
}

/* ------------------------------------------------------------------------
 * The newest task id any sink was sent (fuzz_sink.h's observer)
 * ------------------------------------------------------------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char last_task[64];

static void remember_task(const json_t *msg)
{
    const json_t *result = json_object_get(msg, "result");
    const char *id = json_string_value(json_object_get(result, "taskId"));
    if (!id) /* a legacy CreateTaskResult: {"task": Task} */
        id = json_string_value(json_object_get(json_object_get(result, "task"), "taskId"));
    pthread_mutex_lock(&lock);
    if (id && strlen(id) < sizeof last_task)
        strcpy(last_task, id);
    pthread_mutex_unlock(&lock);
}

/* The message with every "$TASK" replaced by the newest task id (new). */
static char *with_task_id(const char *text, size_t len, size_t *len_out)
{
    char id[sizeof last_task];
    pthread_mutex_lock(&lock);
    strcpy(id, last_task);
    pthread_mutex_unlock(&lock);
    size_t ph = strlen(TASK_PLACEHOLDER), idl = strlen(id);
    char *out = malloc(len * (idl > ph ? idl : ph) / ph + len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        if (len - i >= ph && memcmp(text + i, TASK_PLACEHOLDER, ph) == 0) {
            memcpy(out + o, id, idl);
            o += idl;
            i += ph;
        } else {
            out[o++] = text[i++];
        }
    }
    out[o] = '\0';
    *len_out = o;
    return out;
}

/* ------------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    mcp_server_t *srv = new_server();
    if (!srv)
        return 0;
    uint8_t flags = data[0];
    const char *text = (const char *)data + 1;
    size_t left = size - 1;
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    fuzz_sink_t sinks[MAX_MESSAGES];
    fuzz_sink_observe(remember_task);
    pthread_mutex_lock(&lock);
    last_task[0] = '\0';
    pthread_mutex_unlock(&lock);

    for (int n = 0; n < MAX_MESSAGES && left > 0; n++) {
        const char *nl = memchr(text, '\n', left);
        size_t len = nl ? (size_t)(nl - text) : left;
        size_t msg_len = 0;
        char *msg = with_task_id(text, len, &msg_len);
        /* Later messages speak as another principal when asked to. */
        const char *principal = (flags & 2) && n >= 2 ? "other" : flags & 1 ? "fuzzer" : NULL;
        mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO, .principal = principal};
        fuzz_sink_init(&sinks[n]);
        bool stream = msg && (memmem(msg, msg_len, "subscriptions/listen", 20) ||
                              memmem(msg, msg_len, "tasks/result", 12));
        if (!msg || mcp_server_submit(srv, conn, msg, msg_len, &ctx, &sinks[n].sink, NULL) != MCP_OK)
            fuzz_sink_abandon(&sinks[n]);
        /* Each answer (a task id among them) is in before the next
         * message, except for listen streams, which stay open, and
         * tasks/result, which waits for its task. */
        else if (!stream)
            fuzz_sink_wait(&sinks[n]);
        free(msg);
        text += nl ? len + 1 : len;
        left -= nl ? len + 1 : len;
    }

    /* Listen streams end when the server stops: their sinks are released
     * by mcp_server_free, as are the tasks still waiting or running. */
    mcp_conn_free(conn);
    mcp_server_free(srv);
    fuzz_sinks_wait_all();
    return 0;
}
