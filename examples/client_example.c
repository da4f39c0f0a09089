/*
 * client_example: a small MCP client to copy from.
 *
 * It starts notes_server over stdio, lists its tools, calls echo and add,
 * reads a resource and prints what came back.
 *
 *     client_example [path/to/notes_server]
 */
#include <stdio.h>
#include <stdlib.h>

#include <mcp/client.h>
#include <mcp/mcp.h>

/* Prints the text blocks of a CallToolResult. */
static void print_text(const char *label, const json_t *result)
{
    size_t i;
    json_t *block;
    json_array_foreach(json_object_get(result, "content"), i, block) {
        const char *text = json_string_value(json_object_get(block, "text"));
        if (text)
            printf("%s: %s\n", label, text);
    }
}

/* Reports a failure and clears the error (it may hold a JSON data member). */
static int fail(const char *what, mcp_error_t *err)
{
    fprintf(stderr, "client_example: %s: %s\n", what, err->message);
    mcp_error_clear(err);
    return 1;
}

int main(int argc, char **argv)
{
    const char *server = argc > 1 ? argv[1] : "./notes_server";
    mcp_error_t err = {0};
    int status = 1;

    mcp_client_t *client = mcp_client_new(&(mcp_client_options_t){
        .name = "client-example", .version = "1.0", .log = mcp_log_stderr}, &err);
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

    /* Two calls: plain text back, then structured content. */
    json_t *result = NULL;
    json_t *args = json_pack("{s:s}", "text", "hello from C");
    int rc = mcp_client_call_tool(client, "echo", args, NULL, &result, &err);
    json_decref(args);
    if (rc != MCP_OK) {
        fail("echo", &err);
        goto out;
    }
    print_text("echo", result);
    json_decref(result);

    args = json_pack("{s:i, s:f}", "a", 2, "b", 40.5);
    rc = mcp_client_call_tool(client, "add", args, NULL, &result, &err);
    json_decref(args);
    if (rc != MCP_OK) {
        fail("add", &err);
        goto out;
    }
    printf("add: sum = %g\n",
           json_number_value(json_object_get(json_object_get(result, "structuredContent"), "sum")));
    json_decref(result);

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
