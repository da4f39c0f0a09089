/*
 * A server for the client's end-to-end tests: what examples/notes_server
 * does not show, made observable.
 *
 *   client_test_server            over stdio
 *   client_test_server --http     over HTTP on a free port of 127.0.0.1; the
 *                                 URL goes to stderr; SIGTERM/SIGINT stop it
 *
 * Tools:
 *   survey     two input rounds: asks for a name, then (with the name kept
 *              in requestState) for a confirmation; answers "Saved the
 *              survey of <name>." or "Discarded the survey of <name>."
 *   reads      how many times counter://value was read: {"reads": n}
 *   bump       changes counter://value and tells its subscribers
 *   add_tool   registers one more tool (tools list_changed)
 * Resources:
 *   counter://value   a number, cacheable for a minute; every read counts,
 *                     so a test sees which reads reached the server
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mcp/mcp.h>

#include "serve_http.h"

#define COUNTER_URI "counter://value"

static mcp_server_t *server;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long value, reads, added;

static json_t *one_field_form(const char *field, const char *type)
{
    return json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties", field, "type",
                     type, "required", field);
}

static int survey(mcp_call_t *call, void *user)
{
    const json_t *state = mcp_call_state(call);
    if (!state) {
        /* Round 1: who is it? */
        const json_t *answer = mcp_call_input(call, "name");
        if (!answer) {
            int rc = mcp_call_elicit(call, "name", "Your name?", one_field_form("name", "string"),
                                     MCP_INPUT_NEEDED);
            return rc < 0 ? rc : MCP_INPUT_REQUIRED;
        }
        const char *name =
            json_string_value(json_object_get(json_object_get(answer, "content"), "name"));
        if (!name)
            return mcp_call_add_text(call, "No name, no survey.");
        /* Round 2: the name travels sealed in requestState. */
        char question[200];
        snprintf(question, sizeof question, "Save the survey of %s?", name);
        mcp_call_set_state(call, json_pack("{s:s}", "name", name));
        int rc = mcp_call_elicit(call, "confirm", question, one_field_form("confirm", "boolean"),
                                 MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    const char *name = json_string_value(json_object_get(state, "name"));
    const json_t *answer = mcp_call_input(call, "confirm");
    bool yes = json_is_true(json_object_get(json_object_get(answer, "content"), "confirm"));
    return mcp_call_add_textf(call, "%s the survey of %s.", yes ? "Saved" : "Discarded",
                              name ? name : "?");
}

static int reads_tool(mcp_call_t *call, void *user)
{
    pthread_mutex_lock(&lock);
    long n = reads;
    pthread_mutex_unlock(&lock);
    return mcp_call_set_structured(call, json_pack("{s:i}", "reads", (int)n));
}

static int bump(mcp_call_t *call, void *user)
{
    pthread_mutex_lock(&lock);
    long now = ++value;
    pthread_mutex_unlock(&lock);
    mcp_server_notify_resource_updated(server, COUNTER_URI);
    return mcp_call_add_textf(call, "%ld", now);
}

static int added_tool(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, "added");
}

static int add_tool(mcp_call_t *call, void *user)
{
    pthread_mutex_lock(&lock);
    long n = ++added;
    pthread_mutex_unlock(&lock);
    char name[64];
    snprintf(name, sizeof name, "added_%ld", n);
    mcp_error_t err = {0};
    int rc = mcp_server_add_tool(server, &(mcp_tool_t){
        .name = name, .description = "An added tool",
        .input_schema = "{\"type\":\"object\"}", .handler = added_tool}, &err);
    if (rc != MCP_OK) {
        rc = mcp_call_tool_error(call, "%s", err.message);
        mcp_error_clear(&err);
        return rc;
    }
    return mcp_call_add_textf(call, "added %s", name);
}

static int read_counter(mcp_call_t *call, const char *uri, void *user)
{
    pthread_mutex_lock(&lock);
    reads++;
    long now = value;
    pthread_mutex_unlock(&lock);
    char text[32];
    snprintf(text, sizeof text, "%ld", now);
    mcp_call_set_cache(call, 60000, "private");
    return mcp_call_add_resource_text(call, uri, "text/plain", text);
}

static int add_everything(mcp_error_t *err)
{
    static const struct {
        const char *name, *description;
        mcp_tool_fn handler;
    } tools[] = {
        {"survey", "Two questions, two rounds", survey},
        {"reads", "How many reads of " COUNTER_URI " reached the server", reads_tool},
        {"bump", "Change " COUNTER_URI, bump},
        {"add_tool", "Register one more tool", add_tool},
    };
    int rc = MCP_OK;
    for (size_t i = 0; i < sizeof tools / sizeof tools[0] && rc == MCP_OK; i++)
        rc = mcp_server_add_tool(server, &(mcp_tool_t){
            .name = tools[i].name, .description = tools[i].description,
            .input_schema = "{\"type\":\"object\"}", .handler = tools[i].handler}, err);
    if (rc == MCP_OK)
        rc = mcp_server_add_resource(server, &(mcp_resource_t){
            .uri = COUNTER_URI, .name = "counter", .mime_type = "text/plain",
            .handler = read_counter}, err);
    return rc;
}

int main(int argc, char **argv)
{
    mcp_error_t err = {0};
    server = mcp_server_new(&(mcp_server_options_t){
        .name = "client-test-server", .version = "1.0", .log = mcp_log_stderr}, &err);
    if (!server || add_everything(&err) != MCP_OK) {
        fprintf(stderr, "client_test_server: %s\n", err.message);
        mcp_error_clear(&err);
        mcp_server_free(server);
        return 1;
    }
    int rc = argc > 1 && strcmp(argv[1], "--http") == 0
                 ? serve_http_until_signal(server, "client_test_server")
                 : mcp_server_run_stdio(server, NULL);
    mcp_server_free(server);
    return rc == MCP_OK ? 0 : 1;
}
