/*
 * mcp TARGET read URI: a resource's contents.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/content.h>

#include "cli.h"
#include "failure.h"
#include "json_out.h"
#include "output.h"
#include "progress.h"
#include "term.h"

/* Binary contents go out as they are, unless stdout is a terminal. False
 * for a blob that is not base64 (the server broke the protocol). */
static bool print_blob(const json_t *item, const char *uri, const char *mime)
{
    const char *b64 = json_string_value(json_object_get(item, "blob"));
    char size[32];
    if (term_is_tty(stdout)) {
        printf("%s[%s: %s, %s; redirect stdout to save it]%s\n", term_sgr(stdout, TERM_CYAN),
               uri, mime ? mime : "binary", out_size(out_base64_size(b64), size, sizeof size),
               term_sgr(stdout, TERM_RESET));
        return true;
    }
    size_t len = 0;
    void *bytes = b64 ? mcp_base64_from_string(b64, strlen(b64), &len) : NULL;
    bool ok = bytes != NULL;
    if (ok)
        fwrite(bytes, 1, len, stdout);
    free(bytes);
    return ok;
}

int cmd_read(cli_session_t *s)
{
    const char *uri = s->opt->words.v[0];
    mcp_request_options_t opts = progress_options(&s->request);
    json_t *result = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_read_resource(s->client, uri, &opts, &result, &err);
    progress_done();
    if (rc != MCP_OK) {
        char what[1100];
        snprintf(what, sizeof what, "resources/read %s", uri);
        int status = cli_fail_call(s->opt, what, rc, &err);
        mcp_error_clear(&err);
        return status;
    }
    if (s->opt->json) {
        json_out_print(result);
        json_decref(result);
        return CLI_EXIT_OK;
    }
    const json_t *contents = json_object_get(result, "contents");
    bool several = json_array_size(contents) > 1 && term_is_tty(stdout);
    size_t i;
    const json_t *item;
    int status = CLI_EXIT_OK;
    json_array_foreach(contents, i, item) {
        const char *item_uri = json_string_value(json_object_get(item, "uri"));
        const char *mime = json_string_value(json_object_get(item, "mimeType"));
        const char *text = json_string_value(json_object_get(item, "text"));
        if (several)
            printf("%s== %s%s%s%s ==%s\n", term_sgr(stdout, TERM_BOLD), item_uri ? item_uri : uri,
                   mime ? " (" : "", mime ? mime : "", mime ? ")" : "",
                   term_sgr(stdout, TERM_RESET));
        if (text)
            out_text(stdout, text);
        else if (!print_blob(item, item_uri ? item_uri : uri, mime))
            status = cli_fail(s->opt, CLI_EXIT_PROTOCOL, NULL, "%s: the blob is not valid base64",
                              item_uri ? item_uri : uri);
    }
    json_decref(result);
    return status;
}
