/*
 * The conformance fixture: the tools, resources, prompts and completions
 * that the official MCP conformance suite calls by name.
 *
 * The suite (npm @modelcontextprotocol/conformance) ships scenarios but no
 * server; every SDK keeps one that registers exactly what the scenarios
 * name, with the outputs their descriptions spell out. This is libmcp's,
 * written only against the public headers, like any user's server.
 *
 *   tools.c        content, errors, progress, logging, headers, schemas
 *   input_tools.c  tools and a prompt that ask the client for input (MRTR)
 *   task_tools.c   tools whose calls become tasks (the Tasks extension)
 *   resources.c    test:// resources and the resource template
 *   prompts.c      prompts and completion
 *   list_changes.c hooks that change the tool and prompt lists at run time
 *   media.c        the tiny PNG and WAV the content scenarios carry
 *   main.c         options, the requestState key, HTTP and stdio
 */
#ifndef CONFORMANCE_FIXTURE_H
#define CONFORMANCE_FIXTURE_H

#include <stddef.h>

#include <mcp/content.h>
#include <mcp/server.h>

/* A 1x1 red PNG and a one-sample silent WAV (8 kHz, 16-bit mono). */
extern const unsigned char fixture_png[];
extern const size_t fixture_png_len;
extern const unsigned char fixture_wav[];
extern const size_t fixture_wav_len;

/* Each registers one part of the fixture on `srv`; MCP_OK or the failing
 * registration's code with *err filled. */
int fixture_add_tools(mcp_server_t *srv, mcp_error_t *err);
int fixture_add_input_tools(mcp_server_t *srv, mcp_error_t *err);
int fixture_add_task_tools(mcp_server_t *srv, mcp_error_t *err);
int fixture_add_resources(mcp_server_t *srv, mcp_error_t *err);
int fixture_add_prompts(mcp_server_t *srv, mcp_error_t *err);
int fixture_add_list_changes(mcp_server_t *srv, mcp_error_t *err);
int fixture_add_skills(mcp_server_t *srv, mcp_error_t *err);

/* JSON text to a value (new reference); the fixture's literals are valid. */
static inline json_t *fixture_json(const char *text)
{
    return json_loads(text, 0, NULL);
}

#endif /* CONFORMANCE_FIXTURE_H */
