/*
 * SKILL.md frontmatter from arbitrary bytes: whatever parses is a JSON
 * object that equals its own deep copy and survives the trip a server's
 * skill entry makes to a client (dumped as JSON, loaded again); whatever
 * does not parse says why.
 */
#include <stdint.h>
#include <stdlib.h>

#include "skill_md.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *fm = NULL;
    size_t body = SIZE_MAX;
    mcp_error_t err = {0};
    int rc = mcp_skill_md_frontmatter((const char *)data, size, &fm, &body, &err);
    if (rc != MCP_OK) {
        if (fm || body != SIZE_MAX || err.message[0] == '\0' ||
            (rc != MCP_EINVAL && rc != MCP_ENOMEM))
            abort();
        json_t *message = json_string(err.message); /* it quotes the input: still UTF-8? */
        if (!message)
            abort();
        json_decref(message);
        mcp_error_clear(&err);
        return 0;
    }
    if (!json_is_object(fm) || body > size)
        abort();

    json_t *copy = json_deep_copy(fm);
    if (!copy || !mcp_skill_md_frontmatter_equal(fm, copy) ||
        !mcp_skill_md_frontmatter_equal(copy, fm))
        abort();

    char *wire = json_dumps(fm, JSON_COMPACT);
    json_t *received = wire ? json_loads(wire, JSON_ALLOW_NUL, NULL) : NULL;
    if (!received || !mcp_skill_md_frontmatter_equal(fm, received))
        abort();

    json_decref(received);
    free(wire);
    json_decref(copy);
    json_decref(fm);
    return 0;
}
