/*
 * An MCP server for the tests of the mcp command: everything a server may
 * ask of a client, and ways of failing. Over stdio, or with --http 0 over
 * HTTP on a free port of 127.0.0.1 (its URL on stderr) until SIGTERM.
 *
 * Tools:
 *   profile   asks for a form with every kind of field (string with a
 *             length limit, email, bounded integer, titled choice with a
 *             default, boolean with a default, multi-select), answers
 *             {"action", "content"} as JSON text
 *   visit     asks to visit a URL (URL-mode elicitation), answers the action
 *   think     asks the client's model (sampling), answers the reply's text
 *   where     asks for the client's roots, answers them as JSON text
 *   chatty    logs at info and warning, then answers "ok"
 *   fail      reports a tool error
 *   slow {ms} sleeps (cancellable), answers "slept"
 *   job {ms}  a task (for clients that declared the Tasks extension; a
 *             plain call for others): sleeps (cancellable), then asks
 *             "Proceed?" (boolean go), answers "job done: go=<go>", or
 *             with a tool error "job declined" when go is false
 *   broken_job  a task that fails with a JSON-RPC error (-32603 "the job
 *             broke")
 *   crash     writes a last word on stderr and exits
 * Resources:
 *   data://blob   the bytes 0..255 (a blob)
 *   data://two    two text contents
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/mcp.h>
#include <mcp/server.h>

#include "serve_http.h"

/* Answers a tool with the JSON text of `value` (borrowed). */
static int answer_json(mcp_call_t *call, const json_t *value)
{
    char *text = json_dumps(value, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    int rc = mcp_call_add_text(call, text ? text : "null");
    free(text);
    return rc;
}

/* The first round asks (with `ask`); the second answers with the input. */
#define ASK_ONCE(call, key, ask)                                        \
    do {                                                                \
        const json_t *answer_ = mcp_call_input(call, key);              \
        if (!answer_) {                                                 \
            int rc_ = (ask);                                            \
            return rc_ < 0 ? rc_ : MCP_INPUT_REQUIRED;                  \
        }                                                               \
    } while (0)

static int profile(mcp_call_t *call, void *user)
{
    static const char schema[] =
        "{\"type\":\"object\",\"properties\":{"
        "\"name\":{\"type\":\"string\",\"title\":\"Your name\",\"minLength\":2},"
        "\"email\":{\"type\":\"string\",\"format\":\"email\"},"
        "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150},"
        "\"color\":{\"type\":\"string\",\"title\":\"Favourite colour\",\"oneOf\":["
        "{\"const\":\"r\",\"title\":\"Red\"},{\"const\":\"g\",\"title\":\"Green\"},"
        "{\"const\":\"b\",\"title\":\"Blue\"}],\"default\":\"g\"},"
        "\"news\":{\"type\":\"boolean\",\"title\":\"Newsletter\",\"default\":false},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"x\",\"y\",\"z\"]}}"
        "},\"required\":[\"name\",\"email\"]}";
    ASK_ONCE(call, "profile",
             mcp_call_elicit(call, "profile", "Tell us about you", json_loads(schema, 0, NULL),
                             MCP_INPUT_NEEDED));
    return answer_json(call, mcp_call_input(call, "profile"));
}

static int visit(mcp_call_t *call, void *user)
{
    ASK_ONCE(call, "visit",
             mcp_call_elicit_url(call, "visit", "Sign in to continue",
                                 "https://example.com/login?session=42", MCP_INPUT_NEEDED));
    const char *action =
        json_string_value(json_object_get(mcp_call_input(call, "visit"), "action"));
    return mcp_call_add_text(call, action ? action : "?");
}

static int think(mcp_call_t *call, void *user)
{
    ASK_ONCE(call, "think",
             mcp_call_sample(call, "think",
                             json_pack("{s:[{s:s, s:{s:s, s:s}}], s:i}", "messages", "role",
                                       "user", "content", "type", "text", "text",
                                       "What is 6 times 7?", "maxTokens", 10),
                             MCP_INPUT_NEEDED));
    const json_t *reply = mcp_call_input(call, "think");
    const char *text =
        json_string_value(json_object_get(json_object_get(reply, "content"), "text"));
    return mcp_call_add_textf(call, "the model said: %s", text ? text : "?");
}

static int where(mcp_call_t *call, void *user)
{
    ASK_ONCE(call, "roots", mcp_call_list_roots(call, "roots", MCP_INPUT_NEEDED));
    return answer_json(call, json_object_get(mcp_call_input(call, "roots"), "roots"));
}

static int chatty(mcp_call_t *call, void *user)
{
    mcp_call_log(call, "info", "chatty", json_string("an informative line"));
    mcp_call_log(call, "warning", "chatty", json_pack("{s:i}", "bad", 1));
    return mcp_call_add_text(call, "ok");
}

static int fail(mcp_call_t *call, void *user)
{
    return mcp_call_tool_error(call, "it went wrong on purpose");
}

static int slow(mcp_call_t *call, void *user)
{
    int64_t ms = 1000;
    mcp_call_arg_int(call, "ms", &ms);
    if (mcp_call_sleep(call, ms) != MCP_OK)
        return MCP_ECANCELED;
    return mcp_call_add_text(call, "slept");
}

static int job(mcp_call_t *call, void *user)
{
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK && rc != MCP_EUNSUPPORTED)
        return rc;
    const json_t *answer = mcp_call_input(call, "proceed");
    if (!answer) {
        int64_t ms = 0;
        mcp_call_arg_int(call, "ms", &ms);
        if (mcp_call_sleep(call, ms) != MCP_OK)
            return MCP_ECANCELED;
        rc = mcp_call_elicit(call, "proceed", "Proceed?",
                             json_loads("{\"type\":\"object\",\"properties\":"
                                        "{\"go\":{\"type\":\"boolean\"}},\"required\":[\"go\"]}",
                                        0, NULL),
                             MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    const json_t *go = json_object_get(json_object_get(answer, "content"), "go");
    if (json_is_false(go))
        return mcp_call_tool_error(call, "job declined");
    return mcp_call_add_textf(call, "job done: go=%s", json_is_true(go) ? "true" : "false");
}

static int broken_job(mcp_call_t *call, void *user)
{
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK && rc != MCP_EUNSUPPORTED)
        return rc;
    return mcp_call_fail(call, MCP_INTERNAL_ERROR, "the job broke");
}

static int crash(mcp_call_t *call, void *user)
{
    fprintf(stderr, "cli_test_server: crashing on purpose\n");
    fflush(stderr);
    _Exit(3);
}

static int read_blob(mcp_call_t *call, const char *uri, void *user)
{
    unsigned char bytes[256];
    for (int i = 0; i < 256; i++)
        bytes[i] = (unsigned char)i;
    return mcp_call_add_resource_blob(call, uri, "application/octet-stream", bytes, sizeof bytes);
}

static int read_two(mcp_call_t *call, const char *uri, void *user)
{
    int rc = mcp_call_add_resource_text(call, "data://two#1", "text/plain", "first");
    return rc ? rc : mcp_call_add_resource_text(call, "data://two#2", "text/plain", "second");
}

int main(int argc, char **argv)
{
    bool http = argc > 1 && strcmp(argv[1], "--http") == 0;
    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){
        .name = "cli-test-server", .version = "1.0.0"}, &err);
    static const struct {
        const char *name;
        mcp_tool_fn fn;
        const char *schema;
        mcp_task_support_t tasks;
    } tools[] = {
        {"profile", profile, NULL, MCP_TASKS_NONE},
        {"visit", visit, NULL, MCP_TASKS_NONE},
        {"think", think, NULL, MCP_TASKS_NONE},
        {"where", where, NULL, MCP_TASKS_NONE},
        {"chatty", chatty, NULL, MCP_TASKS_NONE},
        {"fail", fail, NULL, MCP_TASKS_NONE},
        {"slow", slow,
         "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}}}",
         MCP_TASKS_NONE},
        {"job", job, "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}}}",
         MCP_TASKS_OPTIONAL},
        {"broken_job", broken_job, NULL, MCP_TASKS_OPTIONAL},
        {"crash", crash, NULL, MCP_TASKS_NONE},
    };
    for (size_t i = 0; srv && i < sizeof tools / sizeof tools[0]; i++)
        if (mcp_server_add_tool(srv, &(mcp_tool_t){.name = tools[i].name,
                                                   .input_schema = tools[i].schema,
                                                   .tasks = tools[i].tasks,
                                                   .handler = tools[i].fn}, &err) != MCP_OK)
            break;
    if (srv && !err.message[0])
        mcp_server_add_resource(srv, &(mcp_resource_t){
            .uri = "data://blob", .name = "blob", .handler = read_blob}, &err);
    if (srv && !err.message[0])
        mcp_server_add_resource(srv, &(mcp_resource_t){
            .uri = "data://two", .name = "two", .handler = read_two}, &err);
    if (!srv || err.message[0]) {
        fprintf(stderr, "cli_test_server: %s\n", err.message);
        mcp_server_free(srv);
        return 1;
    }
    int rc = http ? serve_http_until_signal(srv, "cli_test_server")
                  : mcp_server_run_stdio(srv, NULL);
    mcp_server_free(srv);
    return rc == MCP_OK ? 0 : 1;
}
