/*
 * Fuzzes URI templates. The input is a template, a newline, and a URI: the
 * template is parsed; the URI is matched against it; the template is
 * expanded with the matched variables and with a fixed set of values of
 * every kind. A URI built from matched variables must match again (the
 * round trip of expansion and matching), except where the trip is lossy:
 * prefix modifiers (matching does not enforce them), values holding '%'
 * ({+x} passes "%41" through, and matching then decodes it), and variables
 * used twice (the new URI may split differently, and the variable then
 * disagrees with itself).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/uri_template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Values of every kind expansion handles, under the names seeds use. */
static json_t *fixed_variables(void)
{
    static json_t *vars;
    if (!vars)
        vars = json_loads("{\"a\": \"x y\", \"b\": [\"1\", \"/\", null],"
                          " \"c\": {\"k\": \"v\", \"e\": \"\"},"
                          " \"x\": \"1024\", \"y\": 768, \"var\": \"value\", \"e\": \"\","
                          " \"list\": [\"red\", \"green\"], \"keys\": {\"semi\": \";\"},"
                          " \"t\": true, \"r\": 2.5, \"u\": \"\\u00e9\\u20ac\", \"n\": null,"
                          " \"bad\": [[1]], \"id\": \"123\", \"path\": \"/foo/bar\"}",
                          0, NULL);
    return vars;
}

/* Whether the template may hold a prefix modifier ":N". */
static bool has_prefix_modifier(const char *text)
{
    for (const char *colon = strchr(text, ':'); colon; colon = strchr(colon + 1, ':'))
        if (colon[1] >= '1' && colon[1] <= '9')
            return true;
    return false;
}

/* Whether a variable name occurs twice in the (well-formed) template. */
static bool has_repeated_variable(const char *text)
{
    enum { MAX_NAMES = 256 };
    const char *names[MAX_NAMES];
    size_t lengths[MAX_NAMES], n = 0;

    for (const char *s = strchr(text, '{'); s; s = strchr(s, '{')) {
        s++;
        if (strchr("+#./;?&", *s))
            s++;
        while (*s != '}') {
            size_t len = strcspn(s, ":*,}");
            if (n == MAX_NAMES)
                return true; /* too many to tell: treat as repeated */
            for (size_t i = 0; i < n; i++)
                if (lengths[i] == len && memcmp(names[i], s, len) == 0)
                    return true;
            names[n] = s;
            lengths[n++] = len;
            s += strcspn(s, ",}");
            if (*s == ',')
                s++;
        }
    }
    return false;
}

static bool has_percent_value(const json_t *vars)
{
    const char *name;
    const json_t *value;
    json_object_foreach((json_t *)vars, name, value)
        if (memchr(json_string_value(value), '%', json_string_length(value)))
            return true;
    return false;
}

static void check_round_trip(const mcp_uri_template_t *tpl, const json_t *vars)
{
    char *uri = NULL;
    const char *text = mcp_uri_template_text(tpl);
    if (has_prefix_modifier(text) || has_repeated_variable(text) || has_percent_value(vars) ||
        mcp_uri_template_expand(tpl, vars, &uri, NULL) != MCP_OK)
        return;
    json_t *again = NULL;
    int rc = mcp_uri_template_match(tpl, uri, strlen(uri), &again);
    if (rc != MCP_OK && rc != MCP_ELIMIT && rc != MCP_ENOMEM)
        abort(); /* an expansion of the template that does not match it */
    json_decref(again);
    free(uri);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *newline = memchr(data, '\n', size);
    size_t text_len = newline ? (size_t)(newline - data) : size;
    const char *uri = newline ? (const char *)newline + 1 : "";
    size_t uri_len = newline ? size - text_len - 1 : 0;

    char *text = malloc(text_len + 1);
    if (!text)
        return 0;
    memcpy(text, data, text_len);
    text[text_len] = '\0';

    mcp_error_t err = {0};
    mcp_uri_template_t *tpl = mcp_uri_template_new(text, &err);
    mcp_error_clear(&err);
    free(text);
    if (!tpl)
        return 0;

    json_t *vars = NULL;
    if (mcp_uri_template_match(tpl, uri, uri_len, &vars) == MCP_OK) {
        check_round_trip(tpl, vars);
        json_decref(vars);
    }

    char *expanded = NULL;
    if (mcp_uri_template_expand(tpl, fixed_variables(), &expanded, &err) == MCP_OK)
        free(expanded);
    mcp_error_clear(&err);

    mcp_uri_template_free(tpl);
    return 0;
}
