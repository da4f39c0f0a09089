/* Built against an installed libmcp by tests/install/run.sh. */
#include <stdio.h>
#include <stdlib.h>

#include <mcp/mcp.h>

int main(void)
{
    size_t n = 0;
    const char *const *versions = mcp_protocol_versions(&n);
    json_t *caps = mcp_client_capabilities_build(&(mcp_client_caps_spec_t){.roots = true});
    char *text = mcp_json_dump(caps, NULL);
    printf("hello from libmcp %s: %zu protocol versions, newest %s, caps %s\n",
           mcp_lib_version(), n, versions[0], text ? text : "?");
    free(text);
    json_decref(caps);
    return n > 0 ? 0 : 1;
}
