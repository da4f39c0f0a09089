/*
 * Header lookups (src/protocol/headers.c): names match ignoring ASCII case
 * and nothing else, the first of repeated headers is the value, every
 * repeat is counted, and the one-pass lookup agrees with get and count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/headers.h"
#include "protocol/headers_internal.h"

/* Two names and whether they are the same header name. */
static const struct {
    const char *a, *b;
    bool same;
} NAMES[] = {
    {"Host", "Host", true},
    {"host", "HOST", true},
    {"mcp-protocol-version", "MCP-Protocol-Version", true},
    {"Content-Type", "content-TYPE", true},
    {"", "", true},
    {"Host", "Hos", false},           /* a prefix is not the name */
    {"Hos", "Host", false},
    {"Content-Type", "Content-Length", false},
    {"Mcp-Name", "Mcp-Method", false},
    /* Only letters fold: these pairs differ in bit 0x20 alone too. */
    {"X@", "X`", false},
    {"X[", "X{", false},
    {"X]", "X}", false},
    {"X^", "X~", false},
    {"X-1", "X-\x11", false},
    {"X\x7f", "X_", false},
    /* Bytes above ASCII are compared as they are. */
    {"X\xc4", "X\xe4", false},
    {"X\xc4", "X\xc4", true},
};

static void test_name_matching(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++) {
        bool got = mcp_header_name_is(NAMES[i].a, NAMES[i].b);
        bool back = mcp_header_name_is(NAMES[i].b, NAMES[i].a);
        if (got != NAMES[i].same || back != NAMES[i].same)
            fail_msg("\"%s\" vs \"%s\": %d/%d, expected %d", NAMES[i].a, NAMES[i].b, got, back,
                     NAMES[i].same);
        mcp_header_t item = {NAMES[i].a, "v"};
        mcp_headers_t one = {&item, 1};
        assert_int_equal(mcp_headers_count(&one, NAMES[i].b), NAMES[i].same ? 1 : 0);
        assert_true((mcp_headers_get(&one, NAMES[i].b) != NULL) == NAMES[i].same);
    }
}

static const mcp_header_t ITEMS[] = {
    {"Host", "localhost:3000"},
    {NULL, "a hole in the list"},
    {"accept", "application/json"},
    {"Mcp-Name", NULL},
    {"ACCEPT", "text/event-stream"},
    {"Content-Length", " 12 "},
    {"Accept", ""},
};
static const mcp_headers_t HEADERS = {ITEMS, sizeof ITEMS / sizeof ITEMS[0]};

static void test_get_and_count(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *first; /* NULL: absent */
        size_t count;
    } rows[] = {
        {"Host", "localhost:3000", 1},
        {"Accept", "application/json", 3}, /* the first, whatever its case */
        {"mcp-name", "", 1},               /* a NULL value reads as "" */
        {"content-length", " 12 ", 1},     /* raw, not trimmed */
        {"Origin", NULL, 0},
        {"", NULL, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *got = mcp_headers_get(&HEADERS, rows[i].name);
        size_t count = 99;
        const char *looked_up = mcp_headers_lookup(&HEADERS, rows[i].name, &count);
        if (rows[i].first) {
            assert_non_null(got);
            assert_string_equal(got, rows[i].first);
        } else {
            assert_null(got);
        }
        assert_ptr_equal(looked_up, got); /* the same header, not a copy */
        assert_int_equal(count, rows[i].count);
        assert_int_equal(mcp_headers_count(&HEADERS, rows[i].name), rows[i].count);
    }
}

/* No list, an empty list or no name: nothing is found, nothing crashes. */
static void test_nothing_to_find(void **state)
{
    (void)state;
    size_t count = 99;
    assert_null(mcp_headers_get(NULL, "Host"));
    assert_null(mcp_headers_get(&HEADERS, NULL));
    assert_int_equal(mcp_headers_count(NULL, "Host"), 0);
    assert_int_equal(mcp_headers_count(&HEADERS, NULL), 0);
    assert_null(mcp_headers_lookup(NULL, "Host", &count));
    assert_int_equal(count, 0);
    count = 99;
    assert_null(mcp_headers_lookup(&HEADERS, NULL, &count));
    assert_int_equal(count, 0);
    count = 99;
    assert_null(mcp_headers_lookup(&(mcp_headers_t){NULL, 0}, "Host", &count));
    assert_int_equal(count, 0);
}

static void test_trim(void **state)
{
    (void)state;
    static const struct {
        const char *raw, *trimmed;
    } rows[] = {
        {" \t 12 \t", "12"}, {"a b", "a b"}, {"", ""}, {" \t ", ""}, {"\n1\n", "\n1\n"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *start;
        size_t len;
        mcp_header_trim(rows[i].raw, &start, &len);
        assert_int_equal(len, strlen(rows[i].trimmed));
        assert_memory_equal(start, rows[i].trimmed, len);
    }
    const char *start;
    size_t len = 99;
    mcp_header_trim(NULL, &start, &len);
    assert_int_equal(len, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_matching),
        cmocka_unit_test(test_get_and_count),
        cmocka_unit_test(test_nothing_to_find),
        cmocka_unit_test(test_trim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
