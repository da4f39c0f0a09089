/*
 * mcp TARGET complete prompt NAME | resource URI-TEMPLATE  ARG[=PARTIAL] [KEY=VALUE ...]
 */
#include <stdio.h>
#include <string.h>

#include "args_typing.h"
#include "cli.h"
#include "failure.h"
#include "json_out.h"
#include "term.h"

int cmd_complete(cli_session_t *s)
{
    const char *const *w = s->opt->words.v;
    const char *kind = w[0];
    json_t *ref;
    if (strcmp(kind, "prompt") == 0)
        ref = json_pack("{s:s, s:s}", "type", "ref/prompt", "name", w[1]);
    else if (strcmp(kind, "resource") == 0)
        ref = json_pack("{s:s, s:s}", "type", "ref/resource", "uri", w[1]);
    else
        return cli_fail(s->opt, CLI_EXIT_USAGE, NULL,
                        "complete: expected \"prompt\" or \"resource\", not \"%s\"", kind);

    /* ARG or ARG=PARTIAL, then the context. */
    char argument[256];
    const char *partial = "";
    bool raw;
    if (!strchr(w[2], '=')) {
        snprintf(argument, sizeof argument, "%s", w[2]);
    } else if (!args_split(w[2], argument, sizeof argument, &partial, &raw) || raw) {
        json_decref(ref);
        return cli_fail(s->opt, CLI_EXIT_USAGE, NULL, "complete: expected ARG or ARG=PARTIAL, "
                                                      "not \"%s\"",
                        w[2]);
    }
    json_t *context = NULL;
    char why[1024] = "";
    if (s->opt->words.n > 3 &&
        !args_prompt_arguments(NULL, w + 3, s->opt->words.n - 3, &context, why, sizeof why)) {
        json_decref(ref);
        return cli_fail(s->opt, CLI_EXIT_USAGE, NULL, "complete: %s", why);
    }

    json_t *result = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_complete(s->client, ref, argument, partial, context, &s->request,
                                 &result, &err);
    json_decref(ref);
    json_decref(context);
    if (rc != MCP_OK) {
        int status = cli_fail_call(s->opt, "completion/complete", rc, &err);
        mcp_error_clear(&err);
        return status;
    }
    if (s->opt->json) {
        json_out_print(result);
    } else {
        const json_t *completion = json_object_get(result, "completion");
        size_t i;
        const json_t *value;
        json_array_foreach(json_object_get(completion, "values"), i, value)
            if (json_is_string(value))
                printf("%s\n", json_string_value(value));
        if (json_is_true(json_object_get(completion, "hasMore")))
            term_notef("the server has more values; type more of the argument");
    }
    json_decref(result);
    return CLI_EXIT_OK;
}
