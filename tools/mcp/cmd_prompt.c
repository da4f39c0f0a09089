/*
 * mcp TARGET prompt NAME [KEY=VALUE ...]: a prompt's messages.
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

/* The declared arguments of prompt `name` (new reference; NULL when the
 * list cannot be had, and then any arguments go). *status is set when the
 * server has no such prompt. */
static json_t *declared_arguments(cli_session_t *s, const char *name, int *status)
{
    json_t *prompts = NULL;
    mcp_error_t err = {0};
    *status = CLI_EXIT_OK;
    if (mcp_client_list_prompts_all(s->client, &s->request, &prompts, &err) != MCP_OK) {
        mcp_error_clear(&err);
        return NULL;
    }
    json_t *declared = NULL;
    bool found = false;
    size_t i;
    const json_t *prompt;
    json_array_foreach(prompts, i, prompt) {
        const char *prompt_name = json_string_value(json_object_get(prompt, "name"));
        if (prompt_name && strcmp(prompt_name, name) == 0) {
            found = true;
            declared = json_object_get(prompt, "arguments");
            declared = declared ? json_incref(declared) : json_array();
        }
    }
    json_decref(prompts);
    if (!found)
        *status = cli_fail(s->opt, CLI_EXIT_PROTOCOL, NULL,
                           "the server has no prompt \"%s\" (see: mcp TARGET prompts)", name);
    return declared;
}

static void print_messages(const json_t *result)
{
    const char *description = json_string_value(json_object_get(result, "description"));
    if (description)
        printf("%s%s%s\n\n", term_sgr(stdout, TERM_DIM), description,
               term_sgr(stdout, TERM_RESET));
    size_t i;
    const json_t *message;
    json_array_foreach(json_object_get(result, "messages"), i, message) {
        const char *role = json_string_value(json_object_get(message, "role"));
        const json_t *content = json_object_get(message, "content");
        printf("%s%s%s:%s\n", i ? "\n" : "", term_sgr(stdout, TERM_BOLD), role ? role : "?",
               term_sgr(stdout, TERM_RESET));
        if (json_is_array(content)) {
            out_content(stdout, content);
        } else {
            json_t *one = json_pack("[O]", content);
            out_content(stdout, one);
            json_decref(one);
        }
    }
}

int cmd_prompt(cli_session_t *s)
{
    const char *name = s->opt->words.v[0];
    int status;
    json_t *declared = declared_arguments(s, name, &status);
    json_t *args = NULL;
    char why[1024] = "";
    if (status == CLI_EXIT_OK &&
        !args_prompt_arguments(declared, s->opt->words.v + 1, s->opt->words.n - 1, &args, why,
                               sizeof why))
        status = cli_fail(s->opt, CLI_EXIT_USAGE, NULL, "%s: %s", name, why);
    json_decref(declared);
    if (status != CLI_EXIT_OK)
        return status;

    mcp_request_options_t opts = progress_options(&s->request);
    json_t *result = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_get_prompt(s->client, name, args, &opts, &result, &err);
    progress_done();
    json_decref(args);
    if (rc != MCP_OK) {
        char what[300];
        snprintf(what, sizeof what, "prompts/get %s", name);
        status = cli_fail_call(s->opt, what, rc, &err);
        mcp_error_clear(&err);
        return status;
    }
    if (s->opt->json)
        json_out_print(result);
    else
        print_messages(result);
    json_decref(result);
    return CLI_EXIT_OK;
}
