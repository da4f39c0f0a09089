/*
 * host_example: one program talking to several MCP servers at once, as an
 * agent or an IDE plugin does (README, "Talking to many servers").
 *
 * The host starts two copies of notes_server over stdio, "notes" and
 * "drafts", connects both concurrently, and shows their tools as one list
 * whose names say which server each belongs to ("notes__echo"). A call by
 * such a name goes to that server: a note added to "drafts" is not in
 * "notes", since each server is its own process.
 *
 *     host_example [path/to/notes_server]
 *
 * Exits 0 when every step worked, 1 otherwise (a tool that reported a
 * failure, isError, included).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/host.h>

/* Servers connect, fail and reconnect on the host's threads; this is where
 * an application learns why one is not ready. */
static void server_state(void *user, const char *server, mcp_host_server_state_t state,
                         const char *error)
{
    (void)user;
    if (state == MCP_HOST_FAILED)
        fprintf(stderr, "host_example: server %s failed: %s\n", server, error);
}

/* The aggregated lists changed (a server became ready, or its tools
 * changed): an application would fetch mcp_host_tools() again here, or
 * tell the model its tools changed. */
static void lists_changed(void *user)
{
    (void)user;
}

/* Calls a tool by its aggregated name, printing its text; 1 when the call
 * failed or the tool reported a failure (isError: the call succeeded but
 * the tool did not), else 0. */
static int call_tool(mcp_host_t *host, const char *tool, json_t *args_new)
{
    mcp_error_t err = {0};
    json_t *result = NULL;
    int rc = mcp_host_call_tool(host, tool, args_new, NULL, &result, &err);
    json_decref(args_new);
    if (rc != MCP_OK) {
        fprintf(stderr, "host_example: %s: %s\n", tool, err.message);
        mcp_error_clear(&err);
        return 1;
    }
    bool failed = json_is_true(json_object_get(result, "isError"));
    const char *text =
        json_string_value(json_object_get(json_array_get(json_object_get(result, "content"), 0),
                                          "text"));
    fprintf(failed ? stderr : stdout, "%s%s: %s\n", failed ? "host_example: tool failed: " : "",
            tool, text ? text : "(no text)");
    json_decref(result);
    return failed;
}

/* Prints the index of notes of `server` (NULL: whichever ready server
 * lists the resource first). */
static int print_index(mcp_host_t *host, const char *server)
{
    mcp_error_t err = {0};
    json_t *result = NULL;
    if (mcp_host_read_resource(host, server, "notes://index", NULL, &result, &err) != MCP_OK) {
        fprintf(stderr, "host_example: notes://index of %s: %s\n", server, err.message);
        mcp_error_clear(&err);
        return 1;
    }
    json_t *contents = json_array_get(json_object_get(result, "contents"), 0);
    printf("notes://index of %s: %s\n", server ? server : "the first server",
           json_string_value(json_object_get(contents, "text")));
    json_decref(result);
    return 0;
}

int main(int argc, char **argv)
{
    const char *server = argc > 1 ? argv[1] : "./notes_server";
    mcp_error_t err = {0};

    mcp_host_t *host = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "host-example", .version = "1.0"},
        .callbacks = {.changed = lists_changed, .server_state = server_state}}, &err);
    if (!host) {
        fprintf(stderr, "host_example: %s\n", err.message);
        return 1;
    }

    /* The "mcpServers" document of desktop MCP clients. It usually lives
     * in a file (mcp_host_load_config_file); here it is built in memory
     * because the path of notes_server is only known now. */
    json_t *config = json_pack("{s:{s:{s:s}, s:{s:s}}}", "mcpServers", "notes", "command",
                               server, "drafts", "command", server);
    char *text = json_dumps(config, JSON_COMPACT);
    json_decref(config);
    int rc = text ? mcp_host_load_config(host, text, strlen(text), &err) : MCP_ENOMEM;
    free(text);
    if (rc != MCP_OK) {
        fprintf(stderr, "host_example: bad configuration: %s\n", err.message);
        mcp_error_clear(&err);
        mcp_host_free(host);
        return 1;
    }

    /* Unlike most calls, this one returns a count: how many servers are
     * ready. Servers that are not are retried in the background, so a
     * real application could carry on with fewer. */
    int ready = mcp_host_connect(host, 10000);
    int status = 1;
    if (ready != 2) {
        fprintf(stderr, "host_example: %d of 2 servers ready\n", ready);
        goto out;
    }

    json_t *tools = mcp_host_tools(host);
    size_t i;
    json_t *tool;
    json_array_foreach(tools, i, tool)
        printf("tool %s\n", json_string_value(json_object_get(tool, "name")));
    json_decref(tools);

    if (call_tool(host, "notes__echo", json_pack("{s:s}", "text", "hello from the host")) ||
        call_tool(host, "drafts__add_note",
                  json_pack("{s:s, s:s}", "name", "plan", "text", "one host, two servers")) ||
        print_index(host, "drafts") || print_index(host, NULL))
        goto out;
    status = 0;

out:
    mcp_host_free(host); /* disconnects every server and stops their processes */
    return status;
}
