/*
 * Hooks that change the tool and prompt lists while the server runs, so
 * that server-stateless can watch notifications/tools/list_changed and
 * notifications/prompts/list_changed arrive on a subscriptions/listen
 * stream. Each call adds its dynamic entry, or removes it when present;
 * libmcp publishes the change to every listener whose filter asked for it.
 */
#include "fixture.h"

static int dynamic_tool(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, "This tool was added while the server was running.");
}

static int dynamic_prompt(mcp_call_t *call, void *user)
{
    json_t *text = mcp_content_text("This prompt was added while the server was running.");
    return mcp_call_add_message(call, "user", text);
}

static int trigger_tool_change(mcp_call_t *call, void *user)
{
    mcp_server_t *srv = user;
    if (mcp_server_remove_tool(srv, "test_dynamic_tool") == MCP_OK)
        return mcp_call_add_text(call, "Tool list changed: removed test_dynamic_tool");
    mcp_error_t err = {0};
    int rc = mcp_server_add_tool(srv, &(mcp_tool_t){
        .name = "test_dynamic_tool",
        .description = "Added and removed by test_trigger_tool_change",
        .handler = dynamic_tool}, &err);
    if (rc == MCP_OK)
        rc = mcp_call_add_text(call, "Tool list changed: added test_dynamic_tool");
    else
        rc = mcp_call_tool_error(call, "could not add test_dynamic_tool: %s", err.message);
    mcp_error_clear(&err);
    return rc;
}

static int trigger_prompt_change(mcp_call_t *call, void *user)
{
    mcp_server_t *srv = user;
    if (mcp_server_remove_prompt(srv, "test_dynamic_prompt") == MCP_OK)
        return mcp_call_add_text(call, "Prompt list changed: removed test_dynamic_prompt");
    mcp_error_t err = {0};
    int rc = mcp_server_add_prompt(srv, &(mcp_prompt_t){
        .name = "test_dynamic_prompt",
        .description = "Added and removed by test_trigger_prompt_change",
        .handler = dynamic_prompt}, &err);
    if (rc == MCP_OK)
        rc = mcp_call_add_text(call, "Prompt list changed: added test_dynamic_prompt");
    else
        rc = mcp_call_tool_error(call, "could not add test_dynamic_prompt: %s", err.message);
    mcp_error_clear(&err);
    return rc;
}

int fixture_add_list_changes(mcp_server_t *srv, mcp_error_t *err)
{
    int rc = mcp_server_add_tool(srv, &(mcp_tool_t){
        .name = "test_trigger_tool_change",
        .description = "Adds test_dynamic_tool, or removes it when present",
        .handler = trigger_tool_change, .user = srv}, err);
    if (rc != MCP_OK)
        return rc;
    return mcp_server_add_tool(srv, &(mcp_tool_t){
        .name = "test_trigger_prompt_change",
        .description = "Adds test_dynamic_prompt, or removes it when present",
        .handler = trigger_prompt_change, .user = srv}, err);
}
