/*
 * RFC 8785 canonical JSON: the RFC's own examples (section 3.2.2 input,
 * section 3.2.3 sorting, Appendix B numbers) and the rules they stand for.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/canonical_json.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static double from_bits(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* RFC 8785 Appendix B, IEEE-754 bit patterns and their serialisation, then
 * powers of two where the nearest 16-digit decimal does not read back but
 * the one above it does (the shortest form is not printf's rounding). */
static const struct {
    uint64_t bits;
    const char *text;
} NUMBERS[] = {
    {0x0000000000000000, "0"},
    {0x8000000000000000, "0"}, /* minus zero */
    {0x0000000000000001, "5e-324"},
    {0x8000000000000001, "-5e-324"},
    {0x7fefffffffffffff, "1.7976931348623157e+308"},
    {0xffefffffffffffff, "-1.7976931348623157e+308"},
    {0x4340000000000000, "9007199254740992"},
    {0xc340000000000000, "-9007199254740992"},
    {0x4430000000000000, "295147905179352830000"},
    {0x44b52d02c7e14af5, "9.999999999999997e+22"},
    {0x44b52d02c7e14af6, "1e+23"},
    {0x44b52d02c7e14af7, "1.0000000000000001e+23"},
    {0x444b1ae4d6e2ef4e, "999999999999999700000"},
    {0x444b1ae4d6e2ef4f, "999999999999999900000"},
    {0x444b1ae4d6e2ef50, "1e+21"},
    {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
    {0x3eb0c6f7a0b5ed8d, "0.000001"},
    {0x41b3de4355555553, "333333333.3333332"},
    {0x41b3de4355555554, "333333333.33333325"},
    {0x41b3de4355555555, "333333333.3333333"},
    {0x41b3de4355555556, "333333333.3333334"},
    {0x41b3de4355555557, "333333333.33333343"},
    {0xbecbf647612f3696, "-0.0000033333333333333333"},
    {0x43143ff3c1cb0959, "1424953923781206.2"},
    /* 2^-1014 and 2^-697. */
    {0x0060000000000000, "7.120236347223045e-307"},
    {0x1480000000000000, "6.083493012144512e-210"},
};

static void test_rfc8785_numbers(void **state)
{
    (void)state;
    char buf[32];
    for (size_t i = 0; i < COUNT(NUMBERS); i++) {
        int n = mcp_format_es_number(from_bits(NUMBERS[i].bits), buf, sizeof buf);
        if (n < 0 || strcmp(buf, NUMBERS[i].text) != 0)
            fail_msg("%016llx: got \"%s\", expected \"%s\"", (unsigned long long)NUMBERS[i].bits,
                     n < 0 ? "(error)" : buf, NUMBERS[i].text);
        assert_int_equal(n, strlen(NUMBERS[i].text));
    }
}

/* Where ECMAScript switches between plain and exponent notation, and other
 * values whose digits a naive formatter gets wrong. */
static void test_number_layout(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *text;
    } ROWS[] = {
        {1, "1"},
        {-1, "-1"},
        {100, "100"},
        {1.5, "1.5"},
        {0.1, "0.1"},
        {-0.5, "-0.5"},
        {1.0 / 3, "0.3333333333333333"},
        {123456789012, "123456789012"},
        {1e20, "100000000000000000000"},
        {1e21, "1e+21"},
        {1.5e21, "1.5e+21"},
        {123e18, "123000000000000000000"},
        {1e30, "1e+30"},
        {0.000001, "0.000001"},
        {0.0000015, "0.0000015"},
        {1e-7, "1e-7"},
        {9.5e-7, "9.5e-7"},
        {1.23e-18, "1.23e-18"},
        {0.002, "0.002"},
        {4.5, "4.5"},
        {1e-27, "1e-27"},
        {9223372036854775807.0, "9223372036854776000"},
        {-9007199254740991, "-9007199254740991"},
    };
    char buf[32];
    for (size_t i = 0; i < COUNT(ROWS); i++) {
        assert_int_equal(mcp_format_es_number(ROWS[i].v, buf, sizeof buf), strlen(ROWS[i].text));
        assert_string_equal(buf, ROWS[i].text);
    }
}

static void test_number_errors(void **state)
{
    (void)state;
    char buf[32];
    assert_int_equal(mcp_format_es_number(NAN, buf, sizeof buf), -1);
    assert_int_equal(mcp_format_es_number(INFINITY, buf, sizeof buf), -1);
    assert_int_equal(mcp_format_es_number(-INFINITY, buf, sizeof buf), -1);
    /* Too small a buffer is an error, not an overflow. */
    assert_int_equal(mcp_format_es_number(1000, buf, 4), -1);
    assert_int_equal(mcp_format_es_number(1000, buf, 5), 4);
    assert_string_equal(buf, "1000");
}

/* Parses `json` and checks its canonical form. */
static void expect_canonical(const char *json, const char *canonical)
{
    json_error_t e;
    json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!v)
        fail_msg("bad test JSON: %s", e.text);
    size_t len = 0;
    char *out = mcp_json_canonical(v, &len);
    assert_non_null(out);
    if (strcmp(out, canonical) != 0)
        fail_msg("canonical form of %s:\n  got      %s\n  expected %s", json, out, canonical);
    assert_int_equal(len, strlen(canonical));
    free(out);
    json_decref(v);
}

/* RFC 8785 section 3.2.2: the input with odd whitespace, escapes and
 * number forms, and its canonical output. */
static void test_rfc8785_example(void **state)
{
    (void)state;
    expect_canonical("{\n"
                     "  \"numbers\": [333333333.33333329, 1E30, 4.50,\n"
                     "              2e-3, 0.000000000000000000000000001],\n"
                     "  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n"
                     "  \"literals\": [null, true, false]\n"
                     "}",
                     "{\"literals\":[null,true,false],"
                     "\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
                     "\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

/* RFC 8785 section 3.2.3: members sorted by UTF-16 code units, so the
 * emoji (surrogates D83D DE00) sorts before U+FB33. */
static void test_rfc8785_sorting(void **state)
{
    (void)state;
    expect_canonical("{\"\\u20ac\": \"Euro Sign\", \"\\r\": \"Carriage Return\","
                     " \"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\", \"1\": \"One\","
                     " \"\\ud83d\\ude00\": \"Emoji: Grinning Face\", \"\\u0080\": \"Control\","
                     " \"\\u00f6\": \"Latin Small Letter O With Diaeresis\"}",
                     "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\","
                     "\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\","
                     "\"\xe2\x82\xac\":\"Euro Sign\","
                     "\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\","
                     "\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");
}

/* The boundaries of the one range where UTF-8 byte order and UTF-16 order
 * disagree, prefixes, and a NUL inside a name. */
static void test_member_order(void **state)
{
    (void)state;
    expect_canonical("{\"\\uffff\":1,\"\\ue000\":2,\"\\ud800\\udc00\":3,\"\\ud7ff\":4,"
                     "\"\\udbff\\udfff\":5,\"\\u0800\":6,\"~\":7}",
                     "{\"~\":7,\"\xe0\xa0\x80\":6,\"\xed\x9f\xbf\":4,\"\xf0\x90\x80\x80\":3,"
                     "\"\xf4\x8f\xbf\xbf\":5,\"\xee\x80\x80\":2,\"\xef\xbf\xbf\":1}");
    expect_canonical("{\"ab\":1,\"a\":2,\"\":3,\"b\":4,\"B\":5,\"aa\":6}",
                     "{\"\":3,\"B\":5,\"a\":2,\"aa\":6,\"ab\":1,\"b\":4}");
    /* Names differing only inside one character sort by the code point. */
    expect_canonical("{\"\\u00e9\":1,\"\\u00e8\":2,\"\\ud83d\\ude01\":3,\"\\ud83d\\ude00\":4}",
                     "{\"\xc3\xa8\":2,\"\xc3\xa9\":1,\"\xf0\x9f\x98\x80\":4,"
                     "\"\xf0\x9f\x98\x81\":3}");

    /* jansson's parser refuses NUL in names; a program can still build one. */
    json_t *o = json_object();
    json_object_setn_new(o, "a\0", 2, json_integer(1));
    json_object_set_new(o, "a", json_integer(2));
    json_object_set_new(o, "a\x01", json_integer(3));
    size_t len;
    char *out = mcp_json_canonical(o, &len);
    static const char expected[] = "{\"a\":2,\"a\\u0000\":1,\"a\\u0001\":3}";
    assert_int_equal(len, sizeof expected - 1);
    assert_memory_equal(out, expected, len);
    free(out);
    json_decref(o);
}

/* JSON.stringify escapes: the short forms, \u00xx in lowercase for other
 * controls, and nothing else (not '/', DEL, U+2028 or non-ASCII). */
static void test_string_escapes(void **state)
{
    (void)state;
    expect_canonical("\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u000e\\u001f\\u001F \\\" \\\\ \\/ "
                     "\\u007f \\u2028 \\u00e9 \\ud83d\\ude00\"",
                     "\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u000e\\u001f\\u001f \\\" \\\\ / "
                     "\x7f \xe2\x80\xa8 \xc3\xa9 \xf0\x9f\x98\x80\"");
    expect_canonical("\"\"", "\"\"");
    expect_canonical("\"plain text\"", "\"plain text\"");
}

/* Integers are IEEE-754 doubles under I-JSON, reals print without ".0". */
static void test_integers_and_reals(void **state)
{
    (void)state;
    expect_canonical("[0,-0,1,-1,42,1.0,42.0,-0.0,100,1e2,1E+2]",
                     "[0,0,1,-1,42,1,42,0,100,100,100]");
    expect_canonical("[9007199254740991,9007199254740992,9007199254740993]",
                     "[9007199254740991,9007199254740992,9007199254740992]");
    expect_canonical("[9223372036854775807,-9223372036854775808]",
                     "[9223372036854776000,-9223372036854776000]");
    expect_canonical("[123456789012345678901234567890.0, 0.1, 1e-7, 1e21]",
                     "[1.2345678901234568e+29,0.1,1e-7,1e+21]");
}

static void test_structure(void **state)
{
    (void)state;
    expect_canonical("{}", "{}");
    expect_canonical("[]", "[]");
    expect_canonical(" [ 3 , 1 , 2 ] ", "[3,1,2]"); /* arrays keep their order */
    expect_canonical("{\"b\":{\"d\":[{\"f\":1,\"e\":2}],\"c\":null},\"a\":[[],{}]}",
                     "{\"a\":[[],{}],\"b\":{\"c\":null,\"d\":[{\"e\":2,\"f\":1}]}}");
    expect_canonical("null", "null");
    expect_canonical("true", "true");
    expect_canonical("\"x\"", "\"x\"");
    expect_canonical("-1.5", "-1.5");

    json_t *v = json_pack("{s:i}", "a", 1);
    char *out = mcp_json_canonical(v, NULL); /* len is optional */
    assert_string_equal(out, "{\"a\":1}");
    free(out);
    json_decref(v);
    assert_null(mcp_json_canonical(NULL, NULL));
}

/* Nested deeper than jansson parses: no canonical form rather than a
 * blown stack. */
static void test_depth_limit(void **state)
{
    (void)state;
    json_t *v = json_array();
    for (int i = 0; i < 2048; i++)
        v = json_pack("[o]", v);
    char *out = mcp_json_canonical(v, NULL);
    assert_non_null(out);
    assert_int_equal(strlen(out), 2 * 2049);
    free(out);
    v = json_pack("[o]", v);
    assert_null(mcp_json_canonical(v, NULL));
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc8785_numbers),
        cmocka_unit_test(test_number_layout),
        cmocka_unit_test(test_number_errors),
        cmocka_unit_test(test_rfc8785_example),
        cmocka_unit_test(test_rfc8785_sorting),
        cmocka_unit_test(test_member_order),
        cmocka_unit_test(test_string_escapes),
        cmocka_unit_test(test_integers_and_reals),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_depth_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
