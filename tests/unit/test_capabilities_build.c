/* mcp_client_capabilities_build (include/mcp/capabilities.h): the exact
 * ClientCapabilities object for each combination of callbacks, per era. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/capabilities.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Flags of a spec, so one table row reads on one line. */
enum {
    SAMPLING = 1 << 0,
    SAMPLING_TOOLS = 1 << 1,
    SAMPLING_CONTEXT = 1 << 2,
    FORM = 1 << 3,
    URL = 1 << 4,
    ROOTS = 1 << 5,
    ROOTS_LIST_CHANGED = 1 << 6,
    EXTENSIONS = 1 << 7,       /* {"io.example/ext":{"level":2}} */
    EMPTY_EXTENSIONS = 1 << 8, /* {} */
    ARRAY_EXTENSIONS = 1 << 9, /* ["io.example/ext"]: not an object */
};

static const char extensions_json[] = "{\"io.example/ext\":{\"level\":2}}";

/* Builds and returns the compact JSON text (malloc'd) for the flags. */
static char *build(unsigned flags, mcp_era_t era)
{
    json_t *extensions = NULL;
    if (flags & EXTENSIONS)
        extensions = json_loads(extensions_json, 0, NULL);
    else if (flags & EMPTY_EXTENSIONS)
        extensions = json_object();
    else if (flags & ARRAY_EXTENSIONS)
        extensions = json_pack("[s]", "io.example/ext");

    mcp_client_caps_spec_t spec = {
        .era = era,
        .sampling = flags & SAMPLING,
        .sampling_tools = flags & SAMPLING_TOOLS,
        .sampling_context = flags & SAMPLING_CONTEXT,
        .elicitation_form = flags & FORM,
        .elicitation_url = flags & URL,
        .roots = flags & ROOTS,
        .roots_list_changed = flags & ROOTS_LIST_CHANGED,
        .extensions = extensions,
    };
    json_t *caps = mcp_client_capabilities_build(&spec);
    assert_non_null(caps);
    assert_true(json_is_object(caps));
    char *text = json_dumps(caps, JSON_COMPACT);
    json_decref(caps);
    json_decref(extensions);
    return text;
}

static void test_build_table(void **state)
{
    (void)state;
    static const struct {
        unsigned flags;
        const char *modern; /* expected on MCP_ERA_MODERN (and UNKNOWN) */
        const char *legacy; /* expected on MCP_ERA_LEGACY */
    } rows[] = {
        {0, "{}", "{}"},
        /* sampling and its sub-capabilities */
        {SAMPLING, "{\"sampling\":{}}", "{\"sampling\":{}}"},
        {SAMPLING | SAMPLING_TOOLS, "{\"sampling\":{\"tools\":{}}}", "{\"sampling\":{\"tools\":{}}}"},
        {SAMPLING | SAMPLING_CONTEXT, "{\"sampling\":{\"context\":{}}}",
         "{\"sampling\":{\"context\":{}}}"},
        {SAMPLING | SAMPLING_TOOLS | SAMPLING_CONTEXT, "{\"sampling\":{\"tools\":{},\"context\":{}}}",
         "{\"sampling\":{\"tools\":{},\"context\":{}}}"},
        {SAMPLING_TOOLS | SAMPLING_CONTEXT, "{}", "{}"}, /* no callback, no capability */
        /* elicitation modes */
        {FORM, "{\"elicitation\":{\"form\":{}}}", "{\"elicitation\":{\"form\":{}}}"},
        {URL, "{\"elicitation\":{\"url\":{}}}", "{\"elicitation\":{\"url\":{}}}"},
        {FORM | URL, "{\"elicitation\":{\"form\":{},\"url\":{}}}",
         "{\"elicitation\":{\"form\":{},\"url\":{}}}"},
        /* roots: listChanged exists only on the legacy era */
        {ROOTS, "{\"roots\":{}}", "{\"roots\":{}}"},
        {ROOTS | ROOTS_LIST_CHANGED, "{\"roots\":{}}", "{\"roots\":{\"listChanged\":true}}"},
        {ROOTS_LIST_CHANGED, "{}", "{}"},
        /* extensions: modern only, and only a non-empty object */
        {EXTENSIONS, "{\"extensions\":{\"io.example/ext\":{\"level\":2}}}", "{}"},
        {EMPTY_EXTENSIONS, "{}", "{}"},
        {ARRAY_EXTENSIONS, "{}", "{}"},
        {ROOTS | EXTENSIONS, "{\"roots\":{},\"extensions\":{\"io.example/ext\":{\"level\":2}}}",
         "{\"roots\":{}}"},
        /* everything, in schema order */
        {SAMPLING | SAMPLING_TOOLS | SAMPLING_CONTEXT | FORM | URL | ROOTS | ROOTS_LIST_CHANGED |
             EXTENSIONS,
         "{\"roots\":{},\"sampling\":{\"tools\":{},\"context\":{}},"
         "\"elicitation\":{\"form\":{},\"url\":{}},"
         "\"extensions\":{\"io.example/ext\":{\"level\":2}}}",
         "{\"roots\":{\"listChanged\":true},\"sampling\":{\"tools\":{},\"context\":{}},"
         "\"elicitation\":{\"form\":{},\"url\":{}}}"},
        {SAMPLING | URL | ROOTS, "{\"roots\":{},\"sampling\":{},\"elicitation\":{\"url\":{}}}",
         "{\"roots\":{},\"sampling\":{},\"elicitation\":{\"url\":{}}}"},
    };
    static const struct {
        mcp_era_t era;
        const char *name;
    } eras[] = {
        {MCP_ERA_MODERN, "modern"},
        {MCP_ERA_UNKNOWN, "unknown (defaults to modern)"},
        {MCP_ERA_LEGACY, "legacy"},
    };
    for (size_t i = 0; i < COUNT(rows); i++) {
        for (size_t e = 0; e < COUNT(eras); e++) {
            const char *want = eras[e].era == MCP_ERA_LEGACY ? rows[i].legacy : rows[i].modern;
            char *got = build(rows[i].flags, eras[e].era);
            char msg[512];
            bool ok = strcmp(got, want) == 0;
            snprintf(msg, sizeof msg, "flags 0x%x, era %s: got %s, want %s", rows[i].flags,
                     eras[e].name, got, want);
            free(got);
            if (!ok)
                fail_msg("%s", msg);
        }
    }
}

/* The legacy "tasks" capability is never advertised, whatever is set. */
static void test_never_tasks_or_experimental(void **state)
{
    (void)state;
    for (unsigned flags = 0; flags < (1u << 8); flags++) {
        for (int legacy = 0; legacy <= 1; legacy++) {
            char *got = build(flags, legacy ? MCP_ERA_LEGACY : MCP_ERA_MODERN);
            bool bad = strstr(got, "tasks") || strstr(got, "experimental");
            free(got);
            assert_false(bad);
        }
    }
}

static void test_null_spec_gives_empty_object(void **state)
{
    (void)state;
    json_t *caps = mcp_client_capabilities_build(NULL);
    assert_true(json_is_object(caps));
    assert_int_equal(json_object_size(caps), 0);
    json_decref(caps);
}

/* The result owns a copy of the extensions: later changes to the caller's
 * object do not leak into it, and releasing it leaves the caller's intact. */
static void test_extensions_are_copied(void **state)
{
    (void)state;
    json_t *ext = json_loads(extensions_json, 0, NULL);
    mcp_client_caps_spec_t spec = {.era = MCP_ERA_MODERN, .extensions = ext};
    json_t *caps = mcp_client_capabilities_build(&spec);
    json_t *copied = json_object_get(caps, "extensions");
    assert_non_null(copied);
    assert_ptr_not_equal(copied, ext);
    assert_true(json_equal(copied, ext));
    assert_int_equal(ext->refcount, 1);

    json_object_set_new(ext, "io.example/other", json_object());
    assert_null(json_object_get(copied, "io.example/other"));

    json_decref(caps);
    assert_non_null(json_object_get(ext, "io.example/ext"));
    json_decref(ext);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_table),
        cmocka_unit_test(test_never_tasks_or_experimental),
        cmocka_unit_test(test_null_spec_gives_empty_object),
        cmocka_unit_test(test_extensions_are_copied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
