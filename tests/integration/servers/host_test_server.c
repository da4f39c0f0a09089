/*
 * A stdio MCP server for the host tests, whose lists change on request.
 *
 *   host_test_server [LABEL] [--skills DIR]
 *
 * Every answer names the server's label (LABEL, "test" by default), so a
 * test can tell two instances apart. With --skills it serves the skills
 * under DIR (mcp_server_add_skills), and so declares the Skills extension.
 *
 * Tools:
 *   echo {text}          answers "<label>: <text>"
 *   add_tool {name}      registers a tool `name` answering "<name> of <label>"
 *                        (a tools list_changed event for listeners)
 *   remove_tool {name}   unregisters it
 *   pid                  answers the server's process id, so a test can kill it
 *   sleep {ms}           answers "<label> slept" after `ms` milliseconds
 *   add_skill {dir}      serves the skill in directory `dir` (a resources
 *                        list_changed event for listeners)
 *   remove_skill {name}  stops serving it
 * Resources: test://<label> (answers the label), and the template
 * test://<label>/item/{id} (answers "item <id>").
 * Prompts: greet {who}.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mcp/mcp.h>

static const char *label = "test";
static mcp_server_t *server;

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_textf(call, "%s: %s", label, text ? text : "");
}

static int added_tool(mcp_call_t *call, void *user)
{
    return mcp_call_add_textf(call, "%s of %s", (const char *)user, label);
}

/* Names of added tools live as long as the process: a handler's user
 * pointer must outlive the tool. */
static int add_tool(mcp_call_t *call, void *user)
{
    const char *name = mcp_call_arg_string(call, "name");
    char *kept = name ? strdup(name) : NULL;
    if (!kept)
        return mcp_call_tool_error(call, "name is required");
    mcp_error_t err = {0};
    int rc = mcp_server_add_tool(server, &(mcp_tool_t){
        .name = kept, .description = "Added while the server runs",
        .handler = added_tool, .user = kept}, &err);
    rc = rc == MCP_OK ? mcp_call_add_textf(call, "added %s", kept)
                      : mcp_call_tool_error(call, "cannot add %s: %s", kept, err.message);
    mcp_error_clear(&err);
    return rc;
}

static int remove_tool(mcp_call_t *call, void *user)
{
    const char *name = mcp_call_arg_string(call, "name");
    if (!name || mcp_server_remove_tool(server, name) != MCP_OK)
        return mcp_call_tool_error(call, "no tool %s", name ? name : "(null)");
    return mcp_call_add_textf(call, "removed %s", name);
}

static int pid(mcp_call_t *call, void *user)
{
    return mcp_call_add_textf(call, "%ld", (long)getpid());
}

static int sleep_tool(mcp_call_t *call, void *user)
{
    int64_t ms = 0;
    mcp_call_arg_int(call, "ms", &ms);
    if (mcp_call_sleep(call, ms) != MCP_OK)
        return MCP_ECANCELED;
    return mcp_call_add_textf(call, "%s slept", label);
}

static int add_skill(mcp_call_t *call, void *user)
{
    const char *dir = mcp_call_arg_string(call, "dir");
    mcp_error_t err = {0};
    int rc = dir ? mcp_server_add_skill(server, dir, &err) : MCP_EINVAL;
    rc = rc == MCP_OK ? mcp_call_add_textf(call, "added the skill in %s", dir)
                      : mcp_call_tool_error(call, "cannot add a skill: %s",
                                            dir ? err.message : "dir is required");
    mcp_error_clear(&err);
    return rc;
}

static int remove_skill(mcp_call_t *call, void *user)
{
    const char *name = mcp_call_arg_string(call, "name");
    if (!name || mcp_server_remove_skill(server, name) != MCP_OK)
        return mcp_call_tool_error(call, "no skill %s", name ? name : "(null)");
    return mcp_call_add_textf(call, "removed the skill %s", name);
}

static int read_label(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, "text/plain", label);
}

static int read_item(mcp_call_t *call, const char *uri, void *user)
{
    char text[128];
    snprintf(text, sizeof text, "item %s", mcp_call_uri_var(call, "id"));
    return mcp_call_add_resource_text(call, uri, "text/plain", text);
}

static int greet(mcp_call_t *call, void *user)
{
    const char *who = mcp_call_arg_string(call, "who");
    return mcp_call_add_message(call, "user",
                                mcp_content_textf("%s greets %s", label, who ? who : "you"));
}

static int setup(const char *skills, mcp_error_t *err)
{
    char uri[256], tpl[256];
    snprintf(uri, sizeof uri, "test://%s", label);
    snprintf(tpl, sizeof tpl, "test://%s/item/{id}", label);
    static const char *const name_schema =
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
        "\"required\":[\"name\"]}";
    static const char *const dir_schema =
        "{\"type\":\"object\",\"properties\":{\"dir\":{\"type\":\"string\"}},"
        "\"required\":[\"dir\"]}";
    static const mcp_prompt_arg_t who[] = {{.name = "who"}};
    int rc;
    if ((rc = mcp_server_add_tool(server, &(mcp_tool_t){
             .name = "echo",
             .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}",
             .handler = echo}, err)) ||
        (rc = mcp_server_add_tool(server, &(mcp_tool_t){
             .name = "add_tool", .input_schema = name_schema, .handler = add_tool}, err)) ||
        (rc = mcp_server_add_tool(server, &(mcp_tool_t){
             .name = "remove_tool", .input_schema = name_schema, .handler = remove_tool}, err)) ||
        (rc = mcp_server_add_tool(server, &(mcp_tool_t){.name = "pid", .handler = pid}, err)) ||
        (rc = mcp_server_add_tool(server, &(mcp_tool_t){
             .name = "sleep",
             .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}}}",
             .handler = sleep_tool}, err)) ||
        (rc = mcp_server_add_tool(server, &(mcp_tool_t){
             .name = "add_skill", .input_schema = dir_schema, .handler = add_skill}, err)) ||
        (rc = mcp_server_add_tool(server, &(mcp_tool_t){
             .name = "remove_skill", .input_schema = name_schema, .handler = remove_skill},
             err)) ||
        (skills && (rc = mcp_server_add_skills(server, skills, NULL, err))) ||
        (rc = mcp_server_add_resource(server, &(mcp_resource_t){
             .uri = uri, .name = "label", .handler = read_label}, err)) ||
        (rc = mcp_server_add_resource_template(server, &(mcp_resource_template_t){
             .uri_template = tpl, .name = "item", .handler = read_item}, err)))
        return rc;
    return mcp_server_add_prompt(server, &(mcp_prompt_t){
        .name = "greet", .args = who, .n_args = 1, .handler = greet}, err);
}

int main(int argc, char **argv)
{
    const char *skills = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--skills") == 0 && i + 1 < argc)
            skills = argv[++i];
        else
            label = argv[i];
    }
    mcp_error_t err = {0};
    server = mcp_server_new(&(mcp_server_options_t){.name = "host-test-server", .version = "1.0"},
                            &err);
    if (!server || setup(skills, &err) != MCP_OK) {
        fprintf(stderr, "host_test_server: %s\n", err.message);
        mcp_error_clear(&err);
        mcp_server_free(server);
        return 1;
    }
    int rc = mcp_server_run_stdio(server, NULL);
    mcp_server_free(server);
    return rc == MCP_OK ? 0 : 1;
}
