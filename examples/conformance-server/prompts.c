/*
 * Prompts (prompts-list, prompts-get-simple, -with-args,
 * -embedded-resource, -with-image) and completion (completion-complete):
 * suggestions for the prompts' arguments and the template's {id}, by
 * prefix.
 */
#include <string.h>

#include "fixture.h"

/* ------------------------------------------------------------------------
 * Prompts
 * ------------------------------------------------------------------------ */

static int simple_prompt(mcp_call_t *call, void *user)
{
    return mcp_call_add_message(call, "user",
                                mcp_content_text("This is a simple prompt for testing."));
}

/* arg1 and arg2 are declared required: libmcp refuses a prompts/get
 * without them (-32602) before this runs. */
static int prompt_with_arguments(mcp_call_t *call, void *user)
{
    return mcp_call_add_message(call, "user",
                                mcp_content_textf("Prompt with arguments: arg1='%s', arg2='%s'",
                                                  mcp_call_arg_string(call, "arg1"),
                                                  mcp_call_arg_string(call, "arg2")));
}

static int prompt_with_embedded_resource(mcp_call_t *call, void *user)
{
    int rc = mcp_call_add_message(
        call, "user",
        mcp_content_embedded_text(mcp_call_arg_string(call, "resourceUri"), "text/plain",
                                  "Embedded resource content for testing."));
    if (rc == MCP_OK)
        rc = mcp_call_add_message(call, "user",
                                  mcp_content_text("Please process the embedded resource above."));
    return rc;
}

static int prompt_with_image(mcp_call_t *call, void *user)
{
    int rc = mcp_call_add_message(call, "user",
                                  mcp_content_image(fixture_png, fixture_png_len, "image/png"));
    if (rc == MCP_OK)
        rc = mcp_call_add_message(call, "user",
                                  mcp_content_text("Please analyze the image above."));
    return rc;
}

static const mcp_prompt_arg_t two_args[] = {
    {.name = "arg1", .description = "First test argument", .required = true},
    {.name = "arg2", .description = "Second test argument", .required = true},
};

static const mcp_prompt_arg_t resource_arg[] = {
    {.name = "resourceUri", .description = "URI of the resource to embed", .required = true},
};

static const mcp_prompt_t prompts[] = {
    {.name = "test_simple_prompt", .title = "Simple Test Prompt",
     .description = "A prompt without arguments", .handler = simple_prompt},
    {.name = "test_prompt_with_arguments", .title = "Prompt With Arguments",
     .description = "A prompt with two required arguments", .args = two_args, .n_args = 2,
     .handler = prompt_with_arguments},
    {.name = "test_prompt_with_embedded_resource", .title = "Prompt With Embedded Resource",
     .description = "A prompt that embeds a resource", .args = resource_arg, .n_args = 1,
     .handler = prompt_with_embedded_resource},
    {.name = "test_prompt_with_image", .title = "Prompt With Image",
     .description = "A prompt that includes an image", .handler = prompt_with_image},
};

/* ------------------------------------------------------------------------
 * Completion
 * ------------------------------------------------------------------------ */

/* What to suggest for one argument of one prompt or template. */
static const struct suggestions {
    mcp_completion_ref_kind_t kind;
    const char *ref;
    const char *argument;
    const char *values[4];
} suggestion_table[] = {
    {MCP_REF_PROMPT, "test_prompt_with_arguments", "arg1", {"hello", "paris", "park", "party"}},
    {MCP_REF_PROMPT, "test_prompt_with_arguments", "arg2", {"world", "word", "work"}},
    {MCP_REF_PROMPT, "test_prompt_with_embedded_resource", "resourceUri",
     {"test://static-text", "test://static-binary", "test://watched-resource"}},
    {MCP_REF_RESOURCE, "test://template/{id}/data", "id", {"1", "12", "123"}},
};

static int complete(mcp_call_t *call, mcp_completion_ref_kind_t kind, const char *ref,
                    const char *argument, const char *value, const json_t *context, void *user)
{
    size_t prefix = strlen(value);
    int64_t n = 0;
    for (size_t i = 0; i < sizeof suggestion_table / sizeof suggestion_table[0]; i++) {
        const struct suggestions *s = &suggestion_table[i];
        if (s->kind != kind || strcmp(s->ref, ref) != 0 || strcmp(s->argument, argument) != 0)
            continue;
        for (size_t j = 0; j < sizeof s->values / sizeof s->values[0] && s->values[j]; j++) {
            if (strncmp(s->values[j], value, prefix) != 0)
                continue;
            int rc = mcp_call_add_completion(call, s->values[j]);
            if (rc != MCP_OK)
                return rc;
            n++;
        }
    }
    return mcp_call_set_completion_total(call, n, false);
}

int fixture_add_prompts(mcp_server_t *srv, mcp_error_t *err)
{
    for (size_t i = 0; i < sizeof prompts / sizeof prompts[0]; i++) {
        int rc = mcp_server_add_prompt(srv, &prompts[i], err);
        if (rc != MCP_OK)
            return rc;
    }
    return mcp_server_set_completion(srv, complete, NULL);
}
