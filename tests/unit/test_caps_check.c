/* Server-side client-capability checks: mcp_client_caps_allow and
 * mcp_client_caps_cover. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/capabilities.h"

static json_t *parse_or_null(const char *text)
{
    if (!text)
        return NULL;
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, jerr.text);
    return j;
}

/* Fails unless `actual` equals `expected_text` (both NULL counts as equal). */
static void expect_json_or_null(const json_t *actual, const char *expected_text,
                                const char *label)
{
    json_t *expected = parse_or_null(expected_text);
    bool same = (!actual && !expected) ||
                (actual && expected && json_equal((json_t *)actual, expected));
    if (!same) {
        char *got = actual ? json_dumps(actual, JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
        print_error("%s:\n  got  %s\n  want %s\n", label, got ? got : "NULL",
                    expected_text ? expected_text : "NULL");
        free(got);
        json_decref(expected);
        fail();
    }
    json_decref(expected);
}

/* ------------------------------------------------------------------ */
/* mcp_client_caps_allow                                               */
/* ------------------------------------------------------------------ */

struct allow_row {
    const char *caps;     /* declared ClientCapabilities, NULL for none */
    const char *method;
    const char *params;   /* NULL: no params */
    bool allowed;
    const char *required; /* expected required_out, NULL when none */
};

#define EL "elicitation/create"
#define SA "sampling/createMessage"
#define FORM_PARAMS \
    "{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}"
#define URL_PARAMS "{\"mode\":\"url\",\"message\":\"m\",\"url\":\"https://example.com\"}"
#define MSG "\"messages\":[],\"maxTokens\":10"

static const struct allow_row allow_rows[] = {
    /* elicitation, form mode (mode absent or "form") */
    {"{}", EL, FORM_PARAMS, false, "{\"elicitation\":{\"form\":{}}}"},
    {NULL, EL, FORM_PARAMS, false, "{\"elicitation\":{\"form\":{}}}"},
    {"[]", EL, FORM_PARAMS, false, "{\"elicitation\":{\"form\":{}}}"},
    {"{\"elicitation\":{}}", EL, FORM_PARAMS, true, NULL},
    {"{\"elicitation\":{}}", EL, NULL, true, NULL},
    {"{\"elicitation\":{}}", EL, "{\"mode\":\"form\",\"message\":\"m\"}", true, NULL},
    {"{\"elicitation\":{\"form\":{}}}", EL, FORM_PARAMS, true, NULL},
    {"{\"elicitation\":{\"form\":{},\"url\":{}}}", EL, FORM_PARAMS, true, NULL},
    {"{\"elicitation\":{\"url\":{}}}", EL, FORM_PARAMS, false, "{\"elicitation\":{\"form\":{}}}"},
    {"{\"elicitation\":{\"url\":{}}}", EL, "{\"mode\":\"form\"}", false,
     "{\"elicitation\":{\"form\":{}}}"},
    {"{\"elicitation\":true}", EL, FORM_PARAMS, false, "{\"elicitation\":{\"form\":{}}}"},
    {"{\"sampling\":{},\"roots\":{}}", EL, FORM_PARAMS, false, "{\"elicitation\":{\"form\":{}}}"},
    /* elicitation, url mode */
    {"{\"elicitation\":{\"url\":{}}}", EL, URL_PARAMS, true, NULL},
    {"{\"elicitation\":{\"form\":{},\"url\":{}}}", EL, URL_PARAMS, true, NULL},
    {"{\"elicitation\":{}}", EL, URL_PARAMS, false, "{\"elicitation\":{\"url\":{}}}"},
    {"{\"elicitation\":{\"form\":{}}}", EL, URL_PARAMS, false, "{\"elicitation\":{\"url\":{}}}"},
    {"{}", EL, URL_PARAMS, false, "{\"elicitation\":{\"url\":{}}}"},
    /* elicitation, modes no capability can allow */
    {"{\"elicitation\":{\"form\":{},\"url\":{}}}", EL, "{\"mode\":\"URL\"}", false, NULL},
    {"{\"elicitation\":{\"form\":{},\"url\":{}}}", EL, "{\"mode\":\"voice\"}", false, NULL},
    {"{\"elicitation\":{\"form\":{},\"url\":{}}}", EL, "{\"mode\":1}", false, NULL},
    {"{\"elicitation\":{\"form\":{},\"url\":{}}}", EL, "{\"mode\":null}", false, NULL},

    /* sampling */
    {"{}", SA, "{" MSG "}", false, "{\"sampling\":{}}"},
    {"{\"sampling\":{}}", SA, "{" MSG "}", true, NULL},
    {"{\"sampling\":{}}", SA, NULL, true, NULL},
    {"{\"sampling\":{}}", SA, "{" MSG ",\"tools\":[]}", false, "{\"sampling\":{\"tools\":{}}}"},
    {"{\"sampling\":{}}", SA, "{" MSG ",\"toolChoice\":{\"mode\":\"auto\"}}", false,
     "{\"sampling\":{\"tools\":{}}}"},
    {"{\"sampling\":{}}", SA, "{" MSG ",\"tools\":null,\"toolChoice\":null}", true, NULL},
    {"{\"sampling\":{\"tools\":{}}}", SA, "{" MSG ",\"tools\":[],\"toolChoice\":{}}", true, NULL},
    {"{\"sampling\":{\"context\":{}}}", SA, "{" MSG ",\"tools\":[]}", false,
     "{\"sampling\":{\"tools\":{}}}"},
    {"{\"sampling\":{}}", SA, "{" MSG ",\"includeContext\":\"none\"}", true, NULL},
    {"{\"sampling\":{}}", SA, "{" MSG ",\"includeContext\":\"thisServer\"}", false,
     "{\"sampling\":{\"context\":{}}}"},
    {"{\"sampling\":{}}", SA, "{" MSG ",\"includeContext\":\"allServers\"}", false,
     "{\"sampling\":{\"context\":{}}}"},
    {"{\"sampling\":{}}", SA, "{" MSG ",\"includeContext\":\"None\"}", false,
     "{\"sampling\":{\"context\":{}}}"},
    {"{\"sampling\":{\"context\":{}}}", SA, "{" MSG ",\"includeContext\":\"allServers\"}", true,
     NULL},
    {"{\"sampling\":{\"tools\":{}}}", SA,
     "{" MSG ",\"tools\":[],\"includeContext\":\"thisServer\"}", false,
     "{\"sampling\":{\"tools\":{},\"context\":{}}}"},
    {"{\"sampling\":{\"tools\":{},\"context\":{}}}", SA,
     "{" MSG ",\"tools\":[],\"includeContext\":\"thisServer\"}", true, NULL},
    {"{\"sampling\":true}", SA, "{" MSG "}", false, "{\"sampling\":{}}"},

    /* roots */
    {"{}", "roots/list", NULL, false, "{\"roots\":{}}"},
    {"{\"roots\":{}}", "roots/list", NULL, true, NULL},
    {"{\"roots\":{\"listChanged\":true}}", "roots/list", "{}", true, NULL},
    {"{\"elicitation\":{},\"sampling\":{}}", "roots/list", NULL, false, "{\"roots\":{}}"},

    /* not input requests: never allowed, nothing required */
    {"{\"elicitation\":{},\"sampling\":{},\"roots\":{}}", "ping", NULL, false, NULL},
    {"{\"elicitation\":{},\"sampling\":{},\"roots\":{}}", "tools/call", "{}", false, NULL},
    {"{\"elicitation\":{},\"sampling\":{},\"roots\":{}}", "Roots/List", NULL, false, NULL},
    {"{\"elicitation\":{},\"sampling\":{},\"roots\":{}}", NULL, NULL, false, NULL},
};

static void test_caps_allow_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof allow_rows / sizeof allow_rows[0]; i++) {
        const struct allow_row *row = &allow_rows[i];
        char label[512];
        snprintf(label, sizeof label, "row %zu: caps %s, %s %s", i, row->caps ? row->caps : "NULL",
                 row->method ? row->method : "NULL", row->params ? row->params : "NULL");
        json_t *caps = parse_or_null(row->caps);
        json_t *params = parse_or_null(row->params);

        /* required_out is always written, NULL when nothing is required. */
        json_t *sentinel = json_object();
        json_t *required = sentinel;
        bool allowed = mcp_client_caps_allow(caps, row->method, params, &required);
        if (allowed != row->allowed)
            fail_msg("%s: allowed %d, want %d", label, allowed, row->allowed);
        assert_ptr_not_equal(required, sentinel);
        json_decref(sentinel);
        expect_json_or_null(required, row->required, label);
        json_decref(required);

        /* required_out is optional. */
        if (mcp_client_caps_allow(caps, row->method, params, NULL) != row->allowed)
            fail_msg("%s: answer differs without required_out", label);

        json_decref(caps);
        json_decref(params);
    }
}

/* ------------------------------------------------------------------ */
/* mcp_client_caps_cover                                               */
/* ------------------------------------------------------------------ */

struct cover_row {
    const char *caps;
    const char *required;
    bool covered;
    const char *missing; /* expected missing_out, NULL when covered */
};

static const struct cover_row cover_rows[] = {
    /* nothing required */
    {NULL, NULL, true, NULL},
    {NULL, "{}", true, NULL},
    {"{\"sampling\":{}}", "{}", true, NULL},
    {"{}", "[]", true, NULL},

    /* presence of top-level capabilities */
    {"{}", "{\"sampling\":{}}", false, "{\"sampling\":{}}"},
    {NULL, "{\"roots\":{}}", false, "{\"roots\":{}}"},
    {"[]", "{\"roots\":{}}", false, "{\"roots\":{}}"},
    {"{\"sampling\":{}}", "{\"sampling\":{}}", true, NULL},
    {"{\"sampling\":{},\"roots\":{}}", "{\"roots\":{}}", true, NULL},
    {"{\"roots\":{}}", "{\"sampling\":{},\"roots\":{}}", false, "{\"sampling\":{}}"},

    /* recursion into sub-capabilities */
    {"{\"sampling\":{\"tools\":{}}}", "{\"sampling\":{}}", true, NULL},
    {"{\"sampling\":{}}", "{\"sampling\":{\"tools\":{}}}", false, "{\"sampling\":{\"tools\":{}}}"},
    {"{\"sampling\":{\"tools\":{}},\"roots\":{}}",
     "{\"sampling\":{\"tools\":{},\"context\":{}},\"roots\":{},\"elicitation\":{\"url\":{}}}",
     false, "{\"sampling\":{\"context\":{}},\"elicitation\":{\"url\":{}}}"},
    {"{\"experimental\":{\"a\":{\"b\":{\"c\":{}}}}}", "{\"experimental\":{\"a\":{\"b\":{}}}}",
     true, NULL},
    {"{\"experimental\":{\"a\":{\"b\":{}}}}", "{\"experimental\":{\"a\":{\"b\":{\"c\":{}}}}}",
     false, "{\"experimental\":{\"a\":{\"b\":{\"c\":{}}}}}"},

    /* a declared value that is not an object covers no object */
    {"{\"sampling\":true}", "{\"sampling\":{}}", false, "{\"sampling\":{}}"},
    {"{\"sampling\":{\"tools\":1}}", "{\"sampling\":{\"tools\":{}}}", false,
     "{\"sampling\":{\"tools\":{}}}"},

    /* required scalars must be matched exactly */
    {"{\"roots\":{\"listChanged\":true}}", "{\"roots\":{\"listChanged\":true}}", true, NULL},
    {"{\"roots\":{\"listChanged\":false}}", "{\"roots\":{\"listChanged\":true}}", false,
     "{\"roots\":{\"listChanged\":true}}"},
    {"{\"roots\":{}}", "{\"roots\":{\"listChanged\":true}}", false,
     "{\"roots\":{\"listChanged\":true}}"},

    /* elicitation: {} means form */
    {"{\"elicitation\":{}}", "{\"elicitation\":{}}", true, NULL},
    {"{\"elicitation\":{}}", "{\"elicitation\":{\"form\":{}}}", true, NULL},
    {"{\"elicitation\":{}}", "{\"elicitation\":{\"url\":{}}}", false,
     "{\"elicitation\":{\"url\":{}}}"},
    {"{\"elicitation\":{}}", "{\"elicitation\":{\"form\":{},\"url\":{}}}", false,
     "{\"elicitation\":{\"url\":{}}}"},
    {"{\"elicitation\":{\"url\":{}}}", "{\"elicitation\":{\"form\":{}}}", false,
     "{\"elicitation\":{\"form\":{}}}"},
    {"{\"elicitation\":{\"url\":{}}}", "{\"elicitation\":{}}", true, NULL},
    {"{\"elicitation\":{\"form\":{}}}", "{\"elicitation\":{\"form\":{}}}", true, NULL},
    /* ... only at the top level of ClientCapabilities */
    {"{\"extensions\":{\"com.example/x\":{\"elicitation\":{}}}}",
     "{\"extensions\":{\"com.example/x\":{\"elicitation\":{\"form\":{}}}}}", false,
     "{\"extensions\":{\"com.example/x\":{\"elicitation\":{\"form\":{}}}}}"},

    /* extensions */
    {"{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}",
     "{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}", true, NULL},
    {"{\"extensions\":{\"io.modelcontextprotocol/tasks\":{}}}",
     "{\"extensions\":{\"com.example/x\":{}}}", false, "{\"extensions\":{\"com.example/x\":{}}}"},
};

static void test_caps_cover_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cover_rows / sizeof cover_rows[0]; i++) {
        const struct cover_row *row = &cover_rows[i];
        char label[512];
        snprintf(label, sizeof label, "row %zu: caps %s, required %s", i,
                 row->caps ? row->caps : "NULL", row->required ? row->required : "NULL");
        json_t *caps = parse_or_null(row->caps);
        json_t *required = parse_or_null(row->required);
        json_t *required_before = required ? json_deep_copy(required) : NULL;
        json_t *caps_before = caps ? json_deep_copy(caps) : NULL;

        json_t *sentinel = json_object();
        json_t *missing = sentinel;
        bool covered = mcp_client_caps_cover(caps, required, &missing);
        if (covered != row->covered)
            fail_msg("%s: covered %d, want %d", label, covered, row->covered);
        assert_ptr_not_equal(missing, sentinel);
        json_decref(sentinel);
        expect_json_or_null(missing, row->missing, label);
        json_decref(missing);

        if (mcp_client_caps_cover(caps, required, NULL) != row->covered)
            fail_msg("%s: answer differs without missing_out", label);

        /* Inputs are borrowed and left as they were. */
        if (required && !json_equal(required, required_before))
            fail_msg("%s: required was modified", label);
        if (caps && !json_equal(caps, caps_before))
            fail_msg("%s: caps were modified", label);

        json_decref(caps);
        json_decref(caps_before);
        json_decref(required);
        json_decref(required_before);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps_allow_table),
        cmocka_unit_test(test_caps_cover_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
