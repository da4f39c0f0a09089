/* Built against an installed libmcp-client by tests/install/run.sh: starts
 * the server named on its command line, calls its echo tool and prints the
 * text that came back -- unless it has loaded libcurl, which a client that
 * never speaks HTTP must not. */
#include <stdio.h>

#include <mcp/mcp.h>

#include "mapped.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    mcp_error_t err = {0};
    mcp_client_t *c =
        mcp_client_new(&(mcp_client_options_t){.name = "hello", .version = "1.0"}, &err);
    json_t *args = json_pack("{s:s}", "text", "hello across the libraries");
    json_t *result = NULL;
    int rc = c ? mcp_client_connect_stdio(
                     c, &(mcp_stdio_target_t){.argv = (const char *const[]){argv[1], NULL}},
                     &err)
               : MCP_ENOMEM;
    if (rc == MCP_OK)
        rc = mcp_client_call_tool(c, "echo", args, NULL, &result, &err);
    const char *text =
        json_string_value(json_object_get(json_array_get(json_object_get(result, "content"), 0),
                                          "text"));
    if (rc == MCP_OK && text && mapped("libcurl"))
        fprintf(stderr, "hello_client: a stdio client mapped libcurl\n");
    else if (rc == MCP_OK && text)
        printf("%s\n", text);
    else
        fprintf(stderr, "hello_client: %s\n", err.message);
    json_decref(result);
    json_decref(args);
    mcp_error_clear(&err);
    mcp_client_free(c);
    return rc == MCP_OK && text ? 0 : 1;
}
