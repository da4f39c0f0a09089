/* Protocol revisions, eras and version choice (include/mcp/version.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/version.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *era_name(mcp_era_t era)
{
    switch (era) {
    case MCP_ERA_LEGACY: return "legacy";
    case MCP_ERA_MODERN: return "modern";
    default: return "unknown";
    }
}

static void test_era_of_version(void **state)
{
    (void)state;
    static const struct {
        const char *version;
        mcp_era_t era;
    } rows[] = {
        /* the boundary */
        {"2026-07-28", MCP_ERA_MODERN},
        {"2026-07-27", MCP_ERA_LEGACY},
        {"2026-07-29", MCP_ERA_MODERN},
        {"2026-06-30", MCP_ERA_LEGACY},
        {"2026-08-01", MCP_ERA_MODERN},
        {"2025-12-31", MCP_ERA_LEGACY},
        {"2027-01-01", MCP_ERA_MODERN},
        /* known revisions */
        {"2025-11-25", MCP_ERA_LEGACY},
        {"2025-06-18", MCP_ERA_LEGACY},
        {"2025-03-26", MCP_ERA_LEGACY},
        {"2024-11-05", MCP_ERA_LEGACY},
        /* the ends of the format */
        {"0000-01-01", MCP_ERA_LEGACY},
        {"9999-12-31", MCP_ERA_MODERN},
        /* month lengths */
        {"2026-01-31", MCP_ERA_LEGACY},
        {"2026-08-31", MCP_ERA_MODERN},
        {"2026-09-30", MCP_ERA_MODERN},
        {"2026-09-31", MCP_ERA_UNKNOWN},
        {"2026-04-31", MCP_ERA_UNKNOWN},
        {"2026-06-31", MCP_ERA_UNKNOWN},
        {"2026-11-31", MCP_ERA_UNKNOWN},
        {"2026-12-31", MCP_ERA_MODERN},
        {"2026-12-32", MCP_ERA_UNKNOWN},
        {"2026-07-32", MCP_ERA_UNKNOWN},
        {"2026-07-00", MCP_ERA_UNKNOWN},
        {"2026-00-10", MCP_ERA_UNKNOWN},
        {"2026-13-01", MCP_ERA_UNKNOWN},
        {"2026-99-99", MCP_ERA_UNKNOWN},
        /* leap years: every 4th, not every 100th, but every 400th */
        {"2026-02-28", MCP_ERA_LEGACY},
        {"2026-02-29", MCP_ERA_UNKNOWN},
        {"2028-02-29", MCP_ERA_MODERN},
        {"2028-02-30", MCP_ERA_UNKNOWN},
        {"2024-02-29", MCP_ERA_LEGACY},
        {"2100-02-29", MCP_ERA_UNKNOWN},
        {"1900-02-29", MCP_ERA_UNKNOWN},
        {"2000-02-29", MCP_ERA_LEGACY},
        {"2400-02-29", MCP_ERA_MODERN},
        /* wrong shape */
        {NULL, MCP_ERA_UNKNOWN},
        {"", MCP_ERA_UNKNOWN},
        {"2026-7-28", MCP_ERA_UNKNOWN},
        {"2026-07-2", MCP_ERA_UNKNOWN},
        {"26-07-28", MCP_ERA_UNKNOWN},
        {"20260728", MCP_ERA_UNKNOWN},
        {"2026/07/28", MCP_ERA_UNKNOWN},
        {"2026-07-28 ", MCP_ERA_UNKNOWN},
        {" 2026-07-28", MCP_ERA_UNKNOWN},
        {"2026-07-28T00:00:00Z", MCP_ERA_UNKNOWN},
        {"2026-07-280", MCP_ERA_UNKNOWN},
        {"+2026-07-28", MCP_ERA_UNKNOWN},
        {"2026-0a-28", MCP_ERA_UNKNOWN},
        {"2026--7-28", MCP_ERA_UNKNOWN},
        {"abcd-ef-gh", MCP_ERA_UNKNOWN},
        {"latest", MCP_ERA_UNKNOWN},
        {"\xd9\xa2\xd9\xa0\xd9\xa2\xd9\xa6-07-28", MCP_ERA_UNKNOWN}, /* Arabic-Indic digits */
    };
    for (size_t i = 0; i < COUNT(rows); i++) {
        mcp_era_t got = mcp_version_era(rows[i].version);
        if (got != rows[i].era)
            fail_msg("era of \"%s\": got %s, want %s", rows[i].version ? rows[i].version : "(null)",
                     era_name(got), era_name(rows[i].era));
    }
}

static void test_version_lists(void **state)
{
    (void)state;
    size_t n_all = 0, n_modern = 0, n_legacy = 0;
    const char *const *all = mcp_protocol_versions(&n_all);
    const char *const *modern = mcp_protocol_versions_modern(&n_modern);
    const char *const *legacy = mcp_protocol_versions_legacy(&n_legacy);

    static const char *const want_all[] = {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"};
    assert_int_equal(n_all, COUNT(want_all));
    for (size_t i = 0; i < n_all; i++)
        assert_string_equal(all[i], want_all[i]);

    assert_int_equal(n_modern, 1);
    assert_string_equal(modern[0], MCP_PROTOCOL_LATEST);
    assert_int_equal(n_legacy, 3);
    assert_string_equal(legacy[0], MCP_PROTOCOL_LATEST_LEGACY);
    assert_string_equal(legacy[1], MCP_PROTOCOL_2025_06_18);
    assert_string_equal(legacy[2], MCP_PROTOCOL_2025_03_26);

    /* The subsets partition the full list, each in its era. */
    assert_int_equal(n_modern + n_legacy, n_all);
    for (size_t i = 0; i < n_modern; i++)
        assert_int_equal(mcp_version_era(modern[i]), MCP_ERA_MODERN);
    for (size_t i = 0; i < n_legacy; i++)
        assert_int_equal(mcp_version_era(legacy[i]), MCP_ERA_LEGACY);

    /* The count is optional. */
    assert_ptr_equal(mcp_protocol_versions(NULL), all);
    assert_ptr_equal(mcp_protocol_versions_modern(NULL), modern);
    assert_ptr_equal(mcp_protocol_versions_legacy(NULL), legacy);
}

static void test_version_is_supported(void **state)
{
    (void)state;
    static const struct {
        const char *version;
        bool supported;
    } rows[] = {
        {"2026-07-28", true},  {"2025-11-25", true},  {"2025-06-18", true},
        {"2025-03-26", true},  {"2024-11-05", false}, {"2027-01-01", false},
        {"2026-07-28 ", false}, {"2026-07-2", false}, {"", false},
        {NULL, false},
    };
    for (size_t i = 0; i < COUNT(rows); i++)
        if (mcp_version_is_supported(rows[i].version) != rows[i].supported)
            fail_msg("is_supported(\"%s\") should be %d",
                     rows[i].version ? rows[i].version : "(null)", rows[i].supported);
}

/* Up to four entries; NULL entries are real NULL elements of the list. */
typedef struct version_list {
    size_t n;
    const char *v[4];
} version_list_t;

static void test_version_pick(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        version_list_t server;
        version_list_t client;
        int want; /* index into client.v, or -1 for no common version */
    } rows[] = {
        {"single common", {1, {"2026-07-28"}}, {1, {"2026-07-28"}}, 0},
        {"client order wins over server order",
         {2, {"2025-11-25", "2026-07-28"}}, {2, {"2026-07-28", "2025-11-25"}}, 0},
        {"client prefers legacy", {2, {"2026-07-28", "2025-11-25"}},
         {2, {"2025-11-25", "2026-07-28"}}, 0},
        {"first common, not first overall", {1, {"2025-06-18"}},
         {3, {"2026-07-28", "2025-11-25", "2025-06-18"}}, 2},
        {"no common version", {1, {"2099-01-01"}}, {2, {"2026-07-28", "2025-11-25"}}, -1},
        {"empty server list", {0, {NULL}}, {1, {"2026-07-28"}}, -1},
        {"empty client list", {1, {"2026-07-28"}}, {0, {NULL}}, -1},
        {"NULL client entries skipped", {1, {"2025-11-25"}}, {3, {NULL, "2025-11-25", NULL}}, 1},
        {"NULL server entries skipped", {3, {NULL, "2025-11-25", NULL}}, {1, {"2025-11-25"}}, 0},
        {"only NULLs", {1, {NULL}}, {1, {NULL}}, -1},
        {"exact match only", {1, {"2026-07-28 "}}, {1, {"2026-07-28"}}, -1},
        {"n bounds the server list", {1, {"2025-11-25", "2026-07-28"}}, {1, {"2026-07-28"}}, -1},
        {"n bounds the client list", {2, {"2026-07-28", "2025-11-25"}},
         {1, {"2025-11-25", "2026-07-28"}}, 0},
    };
    for (size_t i = 0; i < COUNT(rows); i++) {
        const char *got = mcp_version_pick(rows[i].server.v, rows[i].server.n, rows[i].client.v,
                                           rows[i].client.n);
        const char *want = rows[i].want < 0 ? NULL : rows[i].client.v[rows[i].want];
        if (got != want) /* a pointer into the client's list, not just equal text */
            fail_msg("%s: got %s, want %s", rows[i].name, got ? got : "(null)",
                     want ? want : "(null)");
    }
    /* NULL lists */
    static const char *const one[] = {"2026-07-28"};
    assert_null(mcp_version_pick(NULL, 1, one, 1));
    assert_null(mcp_version_pick(one, 1, NULL, 1));
}

static void test_version_pick_json(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *server_json; /* parsed with \u0000 allowed */
        version_list_t client;
        int want;
    } rows[] = {
        {"common version", "[\"2026-07-28\"]", {2, {"2025-11-25", "2026-07-28"}}, 1},
        {"client order", "[\"2025-11-25\",\"2026-07-28\"]", {2, {"2026-07-28", "2025-11-25"}}, 0},
        {"non-strings ignored", "[1, null, {\"v\":\"2026-07-28\"}, [\"2026-07-28\"], \"2025-11-25\"]",
         {2, {"2026-07-28", "2025-11-25"}}, 1},
        {"only non-strings", "[1, true, null]", {1, {"2026-07-28"}}, -1},
        {"empty array", "[]", {1, {"2026-07-28"}}, -1},
        {"embedded NUL is not a match", "[\"2026-07-28\\u0000x\"]", {1, {"2026-07-28"}}, -1},
        {"prefix is not a match", "[\"2026-07-2\"]", {1, {"2026-07-28"}}, -1},
        {"NULL client entries skipped", "[\"2026-07-28\"]", {2, {NULL, "2026-07-28"}}, 1},
        {"not an array", "{\"supported\":[\"2026-07-28\"]}", {1, {"2026-07-28"}}, -1},
        {"a string, not an array", "\"2026-07-28\"", {1, {"2026-07-28"}}, -1},
    };
    for (size_t i = 0; i < COUNT(rows); i++) {
        json_error_t err;
        json_t *server = json_loads(rows[i].server_json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
        if (!server)
            fail_msg("%s: bad test JSON: %s", rows[i].name, err.text);
        const char *got = mcp_version_pick_json(server, rows[i].client.v, rows[i].client.n);
        const char *want = rows[i].want < 0 ? NULL : rows[i].client.v[rows[i].want];
        json_decref(server);
        if (got != want)
            fail_msg("%s: got %s, want %s", rows[i].name, got ? got : "(null)",
                     want ? want : "(null)");
    }
    static const char *const one[] = {"2026-07-28"};
    assert_null(mcp_version_pick_json(NULL, one, 1));
    json_t *arr = json_pack("[s]", "2026-07-28");
    assert_null(mcp_version_pick_json(arr, NULL, 1));
    json_decref(arr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_era_of_version),
        cmocka_unit_test(test_version_lists),
        cmocka_unit_test(test_version_is_supported),
        cmocka_unit_test(test_version_pick),
        cmocka_unit_test(test_version_pick_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
