/*
 * mcp TARGET call TOOL [KEY=VALUE ...] [--args JSON] [--detach]
 *
 * The tool's input schema (from tools/list) types the KEY=VALUE words and
 * says which arguments are required, so that a mistake is caught with a
 * clear message before anything runs. A call the server makes a task of
 * is followed to its end, or with --detach left running: its id is then
 * the output, for mcp TARGET task ID later.
 */
#include <stdio.h>
#include <string.h>

#include "args_typing.h"
#include "cli.h"
#include "failure.h"
#include "json_out.h"
#include "output.h"
#include "progress.h"
#include "term.h"

/* The tool called `name` from tools/list (new reference). NULL with
 * *status CLI_EXIT_OK when the list cannot be had (the words are then
 * typed without a schema), or with the failure's status when the server
 * has no such tool. */
static json_t *find_tool(cli_session_t *s, const char *name, int *status)
{
    json_t *tools = NULL;
    mcp_error_t err = {0};
    *status = CLI_EXIT_OK;
    if (mcp_client_list_tools_all(s->client, &s->request, &tools, &err) != MCP_OK) {
        mcp_error_clear(&err);
        return NULL;
    }
    json_t *found = NULL;
    char names[1024];
    size_t used = 0, i;
    const json_t *tool;
    names[0] = '\0';
    json_array_foreach(tools, i, tool) {
        const char *tool_name = json_string_value(json_object_get(tool, "name"));
        if (tool_name && strcmp(tool_name, name) == 0)
            found = json_incref((json_t *)tool);
        int n = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                         tool_name ? tool_name : "?");
        if (n > 0 && (size_t)n < sizeof names - used)
            used += (size_t)n;
    }
    json_decref(tools);
    if (!found)
        *status = cli_fail(s->opt, CLI_EXIT_PROTOCOL, NULL,
                           "the server has no tool \"%s\" (it has: %s)", name,
                           used ? names : "none");
    return found;
}

static json_t *base_arguments(cli_session_t *s, int *status)
{
    *status = CLI_EXIT_OK;
    if (!s->opt->args_json)
        return NULL;
    json_error_t jerr;
    json_t *base = json_loads(s->opt->args_json, 0, &jerr);
    if (!json_is_object(base)) {
        *status = cli_fail(s->opt, CLI_EXIT_USAGE, NULL, "--args: %s",
                           base ? "expected a JSON object" : jerr.text);
        json_decref(base);
        return NULL;
    }
    return base;
}

/* The id on stdout, for scripts; what became of the call on stderr. A
 * server mcp started over stdio ends when mcp does, and its tasks too. */
static void print_detached(const cli_session_t *s, const char *task_id, const char *status)
{
    printf("%s\n", task_id);
    fflush(stdout);
    if (s->transport == MCP_TRANSPORT_STDIO)
        term_notef("the call became task %s (%s), which ends with the server when mcp exits",
                   task_id, status ? status : "?");
    else
        term_notef("the call runs on as task %s (%s); follow it with: task %s [--wait|--cancel]",
                   task_id, status ? status : "?", task_id);
}

int cmd_call(cli_session_t *s)
{
    const char *name = s->opt->words.v[0];
    int status;
    json_t *base = base_arguments(s, &status);
    if (status != CLI_EXIT_OK)
        return status;
    json_t *tool = find_tool(s, name, &status);
    json_t *args = NULL;
    char why[1024] = "";
    if (status == CLI_EXIT_OK &&
        !args_tool_arguments(json_object_get(tool, "inputSchema"), base, s->opt->words.v + 1,
                             s->opt->words.n - 1, &args, why, sizeof why))
        status = cli_fail(s->opt, CLI_EXIT_USAGE, NULL, "%s: %s", name, why);
    json_decref(base);
    json_decref(tool);
    if (status != CLI_EXIT_OK)
        return status;

    mcp_request_options_t opts = progress_options(&s->request);
    opts.keep_task = s->opt->detach;
    json_t *result = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_call_tool(s->client, name, args, &opts, &result, &err);
    progress_done();
    json_decref(args);
    if (rc != MCP_OK) {
        char what[300];
        snprintf(what, sizeof what, "tools/call %s", name);
        status = cli_fail_call(s->opt, what, rc, &err);
        mcp_error_clear(&err);
        return status;
    }
    const char *task_id = json_string_value(json_object_get(result, "taskId"));
    if (s->opt->json)
        json_out_print(result);
    else if (task_id && s->opt->detach)
        print_detached(s, task_id, json_string_value(json_object_get(result, "status")));
    else
        out_tool_result(name, NULL, result);
    status = json_is_true(json_object_get(result, "isError")) ? CLI_EXIT_TOOL_ERROR : CLI_EXIT_OK;
    json_decref(result);
    return status;
}
