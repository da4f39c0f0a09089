/*
 * The fixture's skills (the Skills extension, SEP-2640): the skill
 * directories under examples/conformance-server/skills, which the suite's
 * sep-2640-* scenarios find through skills/list. pdf-processing has a
 * subdirectory (references/), for resources/directory/read.
 */
#include "fixture.h"

int fixture_add_skills(mcp_server_t *srv, mcp_error_t *err)
{
    return mcp_server_add_skills(srv, CONFORMANCE_SKILLS_DIR, NULL, err);
}
