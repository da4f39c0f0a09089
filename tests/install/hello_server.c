/* Built against an installed libmcp-server by tests/install/run.sh: an echo
 * tool served over stdio, for hello_client to call. A server that never
 * serves HTTP must not have loaded libmicrohttpd: the call fails if it
 * has. */
#include <mcp/mcp.h>

#include "mapped.h"

static int echo(mcp_call_t *call, void *user)
{
    (void)user;
    const char *text = mcp_call_arg_string(call, "text");
    if (!text)
        return mcp_call_tool_error(call, "text is required");
    if (mapped("libmicrohttpd"))
        return mcp_call_fail(call, MCP_INTERNAL_ERROR, "a stdio server mapped libmicrohttpd");
    return mcp_call_add_text(call, text);
}

int main(void)
{
    mcp_server_t *srv =
        mcp_server_new(&(mcp_server_options_t){.name = "hello", .version = "1.0.0"}, NULL);
    if (!srv || mcp_server_add_tool(srv,
                                    &(mcp_tool_t){.name = "echo",
                                                  .input_schema = "{\"type\":\"object\"}",
                                                  .handler = echo},
                                    NULL) != MCP_OK)
        return 1;
    int rc = mcp_server_run_stdio(srv, NULL);
    mcp_server_free(srv);
    return rc == MCP_OK ? 0 : 1;
}
