/*
 * client_example: a small MCP client to copy from.
 *
 * It starts notes_server over stdio, lists its tools, calls a few of them,
 * reads a resource, and deletes a note. Deleting asks the user to confirm:
 * the elicit callback below answers that question, yes with --yes and no
 * otherwise, so the program never waits for a person and runs in scripts.
 *
 *     client_example [--yes] [path/to/notes_server]
 *
 * Exits 0 when every step worked, 1 otherwise -- including when a tool ran
 * but reported a failure (isError), which is not an error of the call.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/client.h>

/* Library diagnostics, without the debug lines mcp_log_stderr would print. */
static void log_warnings(void *user, mcp_log_level_t level, const char *msg)
{
    (void)user;
    if (level >= MCP_LOG_WARNING)
        mcp_log_stderr(NULL, level, msg);
}

/*
 * Answers a server's question (elicitation). A real application would
 * show `message` and a form built from `requestedSchema`; here every
 * boolean field is answered true, and anything else is declined, because
 * inventing an answer is worse than refusing to give one.
 */
static int answer_question(void *user, const json_t *params, json_t **result_out)
{
    bool yes = *(const bool *)user;
    printf("question: %s -> %s\n", json_string_value(json_object_get(params, "message")),
           yes ? "yes" : "no");
    json_t *content = json_object();
    const char *field;
    json_t *schema;
    json_object_foreach(json_object_get(json_object_get(params, "requestedSchema"), "properties"),
                        field, schema) {
        const char *type = json_string_value(json_object_get(schema, "type"));
        if (!type || strcmp(type, "boolean") != 0)
            yes = false;
        json_object_set_new(content, field, json_true());
    }
    if (yes) {
        *result_out = json_pack("{s:s, s:o}", "action", "accept", "content", content);
    } else {
        json_decref(content);
        *result_out = json_pack("{s:s}", "action", "decline");
    }
    return *result_out ? 0 : MCP_ENOMEM;
}

/* Reports a failure and clears the error (it may hold a JSON data member). */
static int fail(const char *what, mcp_error_t *err)
{
    fprintf(stderr, "client_example: %s: %s\n", what, err->message);
    mcp_error_clear(err);
    return 1;
}

/*
 * Calls a tool and prints the text it sent back. A tool that ran but
 * failed answers with isError: true, and mcp_client_call_tool still
 * returns MCP_OK (the call itself worked): only the result tells. Returns
 * 0 for success; 1 for a failed call or a tool that reported a failure.
 * *result_out, when not NULL, receives the result (the caller frees it).
 */
static int call_tool(mcp_client_t *client, const char *tool, json_t *args_new,
                     json_t **result_out)
{
    mcp_error_t err = {0};
    json_t *result = NULL;
    int rc = mcp_client_call_tool(client, tool, args_new, NULL, &result, &err);
    json_decref(args_new);
    if (rc != MCP_OK)
        return fail(tool, &err);
    bool tool_failed = json_is_true(json_object_get(result, "isError"));
    size_t i;
    json_t *block;
    json_array_foreach(json_object_get(result, "content"), i, block) {
        const char *text = json_string_value(json_object_get(block, "text"));
        if (text)
            fprintf(tool_failed ? stderr : stdout, "%s%s: %s\n",
                    tool_failed ? "client_example: tool failed: " : "", tool, text);
    }
    if (result_out && !tool_failed)
        *result_out = result;
    else
        json_decref(result);
    return tool_failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    bool yes = argc > 1 && strcmp(argv[1], "--yes") == 0;
    const char *server = argc > 1 + yes ? argv[1 + yes] : "./notes_server";
    mcp_error_t err = {0};
    int status = 1;

    /* Setting elicit is what tells servers this client can answer
     * questions: without it, delete_note could not ask, and would fail. */
    mcp_client_t *client = mcp_client_new(&(mcp_client_options_t){
        .name = "client-example", .version = "1.0", .log = log_warnings,
        .elicit = answer_question, .elicit_user = &yes}, &err);
    if (!client)
        return fail("cannot create the client", &err);

    /* Start the server and connect (one server/discover on the way). */
    if (mcp_client_connect_stdio(client, &(mcp_stdio_target_t){
            .argv = (const char *const[]){server, NULL}}, &err) != MCP_OK) {
        fail("cannot connect", &err);
        goto out;
    }
    const json_t *info = mcp_client_server_info(client);
    printf("connected to %s %s (protocol %s)\n",
           json_string_value(json_object_get(info, "name")),
           json_string_value(json_object_get(info, "version")),
           mcp_client_protocol_version(client));

    /* Every tool, across all pages. */
    json_t *tools = NULL;
    if (mcp_client_list_tools_all(client, NULL, &tools, &err) != MCP_OK) {
        fail("tools/list", &err);
        goto out;
    }
    size_t i;
    json_t *tool;
    json_array_foreach(tools, i, tool)
        printf("tool %s: %s\n", json_string_value(json_object_get(tool, "name")),
               json_string_value(json_object_get(tool, "description")));
    json_decref(tools);

    /* Plain text back; then structured content, read from the result. */
    json_t *result = NULL;
    if (call_tool(client, "echo", json_pack("{s:s}", "text", "hello from C"), NULL) ||
        call_tool(client, "add", json_pack("{s:i, s:f}", "a", 2, "b", 40.5), &result))
        goto out;
    printf("add: sum = %g\n",
           json_number_value(json_object_get(json_object_get(result, "structuredContent"), "sum")));
    json_decref(result);

    /* A note to delete. The server asks before deleting it, and the call
     * returns once answer_question has answered and the server finished. */
    if (call_tool(client, "add_note", json_pack("{s:s, s:s}", "name", "todo", "text", "milk"),
                  NULL) ||
        call_tool(client, "delete_note", json_pack("{s:s}", "name", "todo"), NULL))
        goto out;

    /* A resource: its contents are text (or base64 blobs). */
    if (mcp_client_read_resource(client, "notes://index", NULL, &result, &err) != MCP_OK) {
        fail("resources/read", &err);
        goto out;
    }
    json_t *contents = json_array_get(json_object_get(result, "contents"), 0);
    printf("notes://index: %s\n", json_string_value(json_object_get(contents, "text")));
    json_decref(result);
    status = 0;

out:
    mcp_error_clear(&err);
    mcp_client_free(client); /* closes the server's stdin and waits for it */
    return status;
}
