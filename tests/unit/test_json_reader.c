/*
 * Tests for src/protocol/json_reader.c: json_read must accept and reject
 * what json_loadb(JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY)
 * does, build the same trees and report the same errors. Every rule has
 * rows in the tables below, each checked against jansson; the exact trees
 * and errors are also pinned independently of it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/json_reader.h"
#include "protocol/json_writer.h"

#include "nested_json.h"

#define FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY)

/* A string literal and its length, so that tables can hold NUL bytes. */
#define RAW(s) s, sizeof(s) - 1

typedef struct text_case {
    const char *name;
    const char *bytes;
    size_t len;
} text_case_t;

#define CASE(name, text) {name, RAW(text)}

/* Reads `c` both ways; both must accept and build the same tree, down to
 * member order and the sign of zero (the compact text shows both). */
static void check_accepted(const text_case_t *c)
{
    json_error_t err;
    json_t *ours = json_read(c->bytes, c->len, &err);
    json_t *theirs = json_loadb(c->bytes, c->len, FLAGS, NULL);
    if (!ours)
        fail_msg("%s: rejected: %s", c->name, err.text);
    if (!theirs)
        fail_msg("%s: jansson rejects it: the table is wrong", c->name);
    if (!json_equal(ours, theirs))
        fail_msg("%s: the trees differ", c->name);
    char *ours_text = json_write(ours, JSON_WRITE_COMPACT, NULL);
    char *theirs_text = json_write(theirs, JSON_WRITE_COMPACT, NULL);
    assert_non_null(ours_text);
    assert_non_null(theirs_text);
    assert_string_equal(ours_text, theirs_text);
    free(ours_text);
    free(theirs_text);
    json_decref(ours);
    json_decref(theirs);
}

/* Reads `c` both ways; both must reject it with the same error. */
static void check_rejected(const text_case_t *c)
{
    json_error_t ours_err, theirs_err;
    json_t *ours = json_read(c->bytes, c->len, &ours_err);
    json_t *theirs = json_loadb(c->bytes, c->len, FLAGS, &theirs_err);
    if (ours)
        fail_msg("%s: accepted", c->name);
    if (theirs)
        fail_msg("%s: jansson accepts it: the table is wrong", c->name);
    if (strcmp(ours_err.text, theirs_err.text) != 0 ||
        json_error_code(&ours_err) != json_error_code(&theirs_err) ||
        ours_err.line != theirs_err.line || ours_err.column != theirs_err.column ||
        ours_err.position != theirs_err.position)
        fail_msg("%s: error %d:%d@%d \"%s\" (code %d), jansson's %d:%d@%d \"%s\" (code %d)",
                 c->name, ours_err.line, ours_err.column, ours_err.position, ours_err.text,
                 json_error_code(&ours_err), theirs_err.line, theirs_err.column,
                 theirs_err.position, theirs_err.text, json_error_code(&theirs_err));
    assert_string_equal(ours_err.source, "<buffer>");
}

/* ---------------------------------------------------------------------- */
/* Accepted and rejected, against jansson                                  */
/* ---------------------------------------------------------------------- */

static const text_case_t accepted[] = {
    /* Any value at the top, surrounded by the four whitespace characters. */
    CASE("object", "{\"a\":1}"),
    CASE("array", "[1,\"two\",3.0,true,false,null,{},[]]"),
    CASE("top-level integer", "1"),
    CASE("top-level string", "\"s\""),
    CASE("top-level null", "null"),
    CASE("top-level true", "true"),
    CASE("top-level false", "false"),
    CASE("whitespace everywhere", " \t\n\r{ \t\n\r\"a\" \t\n\r: \t\n\r[ 1 , 2 ] \t\n\r} \t\n\r"),
    CASE("MCP request",
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
         "\"arguments\":{\"text\":\"hello\"},\"_meta\":{\"io.modelcontextprotocol/"
         "protocolVersion\":\"2026-07-28\"}}}"),
    CASE("member order kept", "{\"b\":1,\"a\":2,\"c\":3}"),
    CASE("same key in different objects", "{\"a\":{\"a\":1},\"b\":{\"a\":2}}"),
    CASE("empty key", "{\"\":1}"),
    /* Keys the duplicate check compares without jansson (eight plain ones)
     * and with it (the ninth on, or after an escaped key). */
    CASE("keys of one length", "{\"ab\":1,\"ba\":2,\"aa\":3,\"bb\":4}"),
    CASE("a key and its prefix", "{\"a\":1,\"ab\":2,\"\":3,\"abc\":4}"),
    CASE("nine keys",
         "{\"1\":1,\"2\":2,\"3\":3,\"4\":4,\"5\":5,\"6\":6,\"7\":7,\"8\":8,\"9\":9}"),
    CASE("an escaped key among plain ones", "{\"a\":1,\"\\u0062\":2,\"c\":3}"),
    /* Strings */
    CASE("empty string", "\"\""),
    CASE("DEL is not a control character", "\"\x7f\""),
    CASE("every simple escape", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""),
    CASE("\\u escapes, both cases", "\"\\u00e9\\u00E9\\u20ac\""),
    CASE("surrogate pair", "\"\\ud83d\\ude00\""),
    CASE("surrogate pair, upper case", "\"\\uD83D\\uDE00\""),
    CASE("highest pair", "\"\\udbff\\udfff\""),
    CASE("\\u0000 in a value", "\"a\\u0000b\""),
    CASE("\\u0000 in a nested value", "{\"k\":[\"\\u0000\"]}"),
    CASE("escaped key", "{\"k\\u00e9y\":\"v\\u00e9\"}"),
    CASE("UTF-8 U+0080", "\"\xc2\x80\""),
    CASE("UTF-8 U+07FF", "\"\xdf\xbf\""),
    CASE("UTF-8 U+0800", "\"\xe0\xa0\x80\""),
    CASE("UTF-8 U+D7FF", "\"\xed\x9f\xbf\""),
    CASE("UTF-8 U+E000", "\"\xee\x80\x80\""),
    CASE("UTF-8 U+FFFF", "\"\xef\xbf\xbf\""),
    CASE("UTF-8 U+10000", "\"\xf0\x90\x80\x80\""),
    CASE("UTF-8 U+10FFFF", "\"\xf4\x8f\xbf\xbf\""),
    CASE("UTF-8 in a key", "{\"h\xc3\xa9\":1}"),
    /* Numbers */
    CASE("zero", "0"),
    CASE("minus zero integer", "-0"),
    CASE("minus zero real", "-0.0"),
    CASE("integers", "[1,-1,10,1234567890]"),
    CASE("int64 max", "9223372036854775807"),
    CASE("int64 min", "-9223372036854775808"),
    CASE("fraction", "[1.5,-1.5,0.0,0.25]"),
    CASE("exponents", "[1e5,1E5,1e+5,1e-5,0e0,1.5e-3,-2E+2]"),
    CASE("largest double", "1.7976931348623157e308"),
    CASE("smallest subnormal", "4.9e-324"),
    CASE("underflow to zero", "[1e-400,-1e-400]"),
    CASE("many digits", "123456789012345678901234567890.123456789e-10"),
    CASE("number before a delimiter", "[1,2]"),
};

static const text_case_t rejected[] = {
    /* Not exactly one value */
    CASE("empty", ""),
    CASE("only whitespace", " \t\r\n"),
    CASE("form feed is not whitespace", "\f1"),
    CASE("vertical tab is not whitespace", "\v1"),
    CASE("no-break space is not whitespace", "\xc2\xa0" "1"),
    CASE("byte order mark", "\xef\xbb\xbf{}"),
    CASE("trailing token", "{} x"),
    CASE("two values", "{}{}"),
    CASE("two numbers", "1 2"),
    CASE("extra closer", "[]]"),
    CASE("trailing NUL byte", "{}\0"),
    CASE("NUL byte", "\0"),
    CASE("comment", "{} // c"),
    /* Structure */
    CASE("unclosed array", "[1,2"),
    CASE("unclosed array after comma", "[1,"),
    CASE("lone bracket", "["),
    CASE("unclosed object", "{\"a\":1"),
    CASE("object without value", "{\"a\":"),
    CASE("object with key only", "{\"a\"}"),
    CASE("missing colon", "{\"a\" 1}"),
    CASE("non-string key", "{1:2}"),
    CASE("single-quoted key", "{'a':1}"),
    CASE("trailing comma in array", "[1,]"),
    CASE("trailing comma in object", "{\"a\":1,}"),
    CASE("missing comma", "[1 2]"),
    CASE("missing member comma", "{\"a\":1 \"b\":2}"),
    CASE("lone comma", ","),
    CASE("lone colon", ":"),
    CASE("lone closer", "}"),
    CASE("unknown character", "#"),
    CASE("non-ASCII character", "\xc3\xa9"),
    /* Literals */
    CASE("capitalised literal", "True"),
    CASE("short literal", "nul"),
    CASE("long literal", "truex"),
    CASE("literal then digit", "true1"),
    CASE("NaN", "NaN"),
    CASE("Infinity", "-Infinity"),
    /* Duplicate keys, compared after decoding */
    CASE("duplicate key", "{\"a\":1,\"a\":1}"),
    CASE("duplicate key, nested", "{\"o\":{\"b\":1,\"c\":2,\"b\":3}}"),
    CASE("duplicate key, escaped", "{\"a\":1,\"\\u0061\":2}"),
    CASE("duplicate key, UTF-8 and escaped", "{\"\xc3\xa9\":1,\"\\u00e9\":2}"),
    CASE("duplicate key, eighth",
         "{\"1\":1,\"2\":2,\"3\":3,\"4\":4,\"5\":5,\"6\":6,\"7\":7,\"1\":8}"),
    CASE("duplicate key, ninth",
         "{\"1\":1,\"2\":2,\"3\":3,\"4\":4,\"5\":5,\"6\":6,\"7\":7,\"8\":8,\"8\":9}"),
    CASE("duplicate key, tenth of the first",
         "{\"1\":1,\"2\":2,\"3\":3,\"4\":4,\"5\":5,\"6\":6,\"7\":7,\"8\":8,\"9\":9,\"1\":0}"),
    CASE("duplicate key, tenth of the ninth",
         "{\"1\":1,\"2\":2,\"3\":3,\"4\":4,\"5\":5,\"6\":6,\"7\":7,\"8\":8,\"9\":9,\"9\":0}"),
    CASE("duplicate key, after an escaped one", "{\"\\u0061\":1,\"b\":2,\"b\":3}"),
    CASE("duplicate key, of an escaped one", "{\"\\u0062\":1,\"a\":2,\"b\":3}"),
    CASE("duplicate key, plain then escaped then plain", "{\"a\":1,\"\\u0062\":2,\"a\":3}"),
    CASE("duplicate key, long", "{\"aaaaaaaaaaaaaaaaaaaaaaaaaa\":1,\"aaaaaaaaaaaaaaaaaaaaaaaaaa\":2}"),
    /* Strings */
    CASE("unterminated string", "\"abc"),
    CASE("raw newline", "\"a\nb\""),
    CASE("raw tab", "\"a\tb\""),
    CASE("raw 0x01", "\"\x01\""),
    CASE("raw 0x1f", "\"\x1f\""),
    CASE("raw NUL", "\"a\0b\""),
    CASE("unknown escape", "\"\\x\""),
    CASE("escaped single quote", "\"\\'\""),
    CASE("upper-case U escape", "\"\\U0041\""),
    CASE("escape at the end", "\"\\"),
    CASE("short \\u escape", "\"\\u12\""),
    CASE("\\u escape cut by the end", "\"\\u12"),
    CASE("non-hex \\u digit", "\"\\u12g4\""),
    CASE("escape of a non-ASCII character", "\"\\\xc3\xa9\""),
    CASE("escape of an invalid byte", "\"\\\xff\""),
    CASE("lone high surrogate", "\"\\ud800\""),
    CASE("lone low surrogate", "\"\\udc00\""),
    CASE("high surrogate then text", "\"\\ud800x\""),
    CASE("high surrogate then a BMP escape", "\"\\ud800\\u0041\""),
    CASE("two high surrogates", "\"\\ud800\\ud800\""),
    CASE("reversed pair", "\"\\udc00\\ud800\""),
    CASE("high surrogate then escaped backslash", "\"\\ud800\\\\udc00\""),
    CASE("lone surrogate then a raw control character", "\"\\ud800 \x01\""),
    CASE("\\u0000 in a key", "{\"a\\u0000\":1}"),
    CASE("\\u0000 in a nested key", "[{\"\\u0000\":1}]"),
    /* UTF-8 */
    CASE("invalid byte FF", "\"\xff\""),
    CASE("invalid byte F5", "\"\xf5\x80\x80\x80\""),
    CASE("lone continuation byte", "\"\x80\""),
    CASE("bad continuation", "\"\xc3\x28\""),
    CASE("overlong C0", "\"\xc0\xaf\""),
    CASE("overlong C1", "\"\xc1\xbf\""),
    CASE("overlong 3 bytes", "\"\xe0\x9f\xbf\""),
    CASE("overlong 4 bytes", "\"\xf0\x8f\xbf\xbf\""),
    CASE("encoded high surrogate", "\"\xed\xa0\x80\""),
    CASE("encoded low surrogate", "\"\xed\xbf\xbf\""),
    CASE("above U+10FFFF", "\"\xf4\x90\x80\x80\""),
    CASE("truncated 2 bytes", "\"\xc3\""),
    CASE("truncated 3 bytes", "\"\xe2\x82\""),
    CASE("truncated 4 bytes", "\"\xf0\x9f\x98\""),
    CASE("truncated by the end", "\"\xe2\x82"),
    CASE("invalid UTF-8 in a key", "{\"\xff\":1}"),
    CASE("invalid UTF-8 after a number", "1\xff"),
    CASE("invalid UTF-8 after a literal", "true\xff"),
    CASE("invalid UTF-8 after a minus", "-\xff"),
    CASE("invalid UTF-8 outside strings", "[\xff]"),
    CASE("column counts characters", "\"h\xc3\xa9\xe2\x82\xac\x01\""),
    /* Numbers */
    CASE("leading zero", "01"),
    CASE("negative leading zero", "-01"),
    CASE("double zero", "00"),
    CASE("plus sign", "+1"),
    CASE("no integer part", ".5"),
    CASE("no fraction digits", "5."),
    CASE("no fraction digits, exponent", "1.e5"),
    CASE("lone minus", "-"),
    CASE("minus dot", "-.5"),
    CASE("minus space", "- 1"),
    CASE("no exponent digits", "1e"),
    CASE("signed exponent without digits", "1e+"),
    CASE("hexadecimal", "0x10"),
    CASE("digit separator", "1_000"),
    CASE("integer overflow", "9223372036854775808"),
    CASE("negative integer overflow", "-9223372036854775809"),
    CASE("long integer overflow", "[123456789012345678901234567890]"),
    CASE("real overflow", "1e309"),
    CASE("negative real overflow", "-1.8e308"),
    CASE("real overflow in an object", "{\"n\":1e400}"),
    /* Error positions across lines */
    CASE("duplicate on the second line", "{\"jsonrpc\":\"2.0\",\n \"jsonrpc\":\"2.0\"}"),
    CASE("error after a multi-byte line", "[\"\xc3\xa9\xc3\xa9\",\n\"x\" x]"),
};

static void test_accepted(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
        check_accepted(&accepted[i]);
}

static void test_rejected(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++)
        check_rejected(&rejected[i]);
}

/* ---------------------------------------------------------------------- */
/* Nesting depth: jansson counts every value, scalars included            */
/* ---------------------------------------------------------------------- */

static void check_depth(size_t levels, const char *inner, bool ok)
{
    size_t len;
    char *text = nested_arrays(levels, inner, &len);
    text_case_t c = {"nested arrays", text, len};
    print_message("%zu levels around \"%s\"\n", levels, inner);
    if (ok) {
        check_accepted(&c);
    } else {
        check_rejected(&c);
        json_error_t err;
        assert_null(json_read(text, len, &err));
        assert_int_equal(json_error_code(&err), json_error_stack_overflow);
    }
    free(text);
}

static void test_depth_limit(void **state)
{
    (void)state;
    check_depth(JSON_PARSER_MAX_DEPTH, "", true);
    check_depth(JSON_PARSER_MAX_DEPTH - 1, "1", true);
    check_depth(JSON_PARSER_MAX_DEPTH + 1, "", false);
    check_depth(JSON_PARSER_MAX_DEPTH, "1", false);
    check_depth(JSON_PARSER_MAX_DEPTH, "{}", false);
    check_depth(JSON_PARSER_MAX_DEPTH, "\"s\"", false);
}

/* At the limit, a lexical error in the scalar that is one too deep wins, as
 * jansson reads a token before it counts it. */
static void test_depth_limit_error_order(void **state)
{
    (void)state;
    static const char *const inner[] = {"\"\\ud800\"", "\"\xff\"", "99999999999999999999",
                                        "1\xff", "-x", "tru", "\xff"};
    for (size_t i = 0; i < sizeof inner / sizeof inner[0]; i++) {
        size_t len;
        char *text = nested_arrays(JSON_PARSER_MAX_DEPTH, inner[i], &len);
        check_rejected(&(text_case_t){"scalar at the depth limit", text, len});
        free(text);
    }
}

/* ---------------------------------------------------------------------- */
/* json_read_nested: the caller's limit on arrays and objects              */
/* ---------------------------------------------------------------------- */

static void test_nesting_limit(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *text;
        int max_nesting;
        enum { ACCEPTED, TOO_DEEP, AS_JSON_READ } outcome;
        int position; /* TOO_DEEP: just after the bracket too many */
    } rows[] = {
        {"at the limit", "[[{}]]", 3, ACCEPTED, 0},
        {"one past it", "[[{}]]", 2, TOO_DEEP, 3},
        {"scalars do not count", "[[1,\"s\",null]]", 2, ACCEPTED, 0},
        {"brackets in strings do not count", "[\"[[{{\"]", 1, ACCEPTED, 0},
        {"wide, not deep", "[[],{},[[]],{\"a\":[]}]", 3, ACCEPTED, 0},
        {"a member of an object", "{\"a\":{\"b\":[]},\"c\":1}", 2, TOO_DEEP, 11},
        {"limit 0: no container at all", "[]", 0, TOO_DEEP, 1},
        {"limit 0: a scalar", "7", 0, ACCEPTED, 0},
        {"a syntax error before the deep part", "[1 2,[[[]]]]", 2, AS_JSON_READ, 0},
        {"a lexical error before the deep part", "[\"\\x\",[[[]]]]", 2, AS_JSON_READ, 0},
        {"a duplicate key before the deep part", "{\"a\":1,\"a\":[[[]]]}", 1, AS_JSON_READ, 0},
        {"too deep before a syntax error", "[[[ 1 2", 2, TOO_DEEP, 3},
        {"too deep before trailing bytes", "[[[]]] x", 2, TOO_DEEP, 3},
        {"trailing bytes before the deep part", "[] [[[]]]", 1, AS_JSON_READ, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *text = rows[i].text;
        size_t len = strlen(text);
        json_error_t err, plain_err;
        bool too_deep = !(rows[i].outcome == TOO_DEEP);
        print_message("%s\n", rows[i].name);
        json_t *got = json_read_nested(text, len, rows[i].max_nesting, &too_deep, &err);
        json_t *plain = json_read(text, len, &plain_err);
        assert_int_equal(too_deep, rows[i].outcome == TOO_DEEP);
        switch (rows[i].outcome) {
        case ACCEPTED:
            assert_non_null(got);
            assert_true(json_equal(got, plain));
            break;
        case TOO_DEEP:
            assert_null(got);
            assert_int_equal(json_error_code(&err), json_error_stack_overflow);
            assert_int_equal(err.position, rows[i].position);
            assert_string_equal(err.source, "<buffer>");
            break;
        case AS_JSON_READ:
            assert_null(got);
            assert_null(plain);
            assert_int_equal(json_error_code(&err), json_error_code(&plain_err));
            assert_string_equal(err.text, plain_err.text);
            assert_int_equal(err.position, plain_err.position);
            break;
        }
        json_decref(got);
        json_decref(plain);
    }

    /* At the reader's own limit the caller's comes first for a container,
     * and the reader's for a scalar, whatever the caller's limit. */
    size_t len;
    char *text = nested_arrays(JSON_PARSER_MAX_DEPTH, "[]", &len);
    bool too_deep = false;
    json_error_t err;
    assert_null(json_read_nested(text, len, JSON_PARSER_MAX_DEPTH, &too_deep, &err));
    assert_true(too_deep);
    free(text);
    text = nested_arrays(JSON_PARSER_MAX_DEPTH, "1", &len);
    assert_null(json_read_nested(text, len, JSON_PARSER_MAX_DEPTH, &too_deep, &err));
    assert_false(too_deep);
    assert_int_equal(json_error_code(&err), json_error_stack_overflow);
    assert_null(json_read_nested(text, len, INT_MAX, &too_deep, NULL));
    assert_false(too_deep);
    free(text);

    /* No buffer: json_read's error, not too deep. */
    too_deep = true;
    assert_null(json_read_nested(NULL, 0, 5, &too_deep, &err));
    assert_false(too_deep);
    assert_int_equal(json_error_code(&err), json_error_invalid_argument);
}

/* ---------------------------------------------------------------------- */
/* The one difference: a NUL byte after a number or a literal              */
/* ---------------------------------------------------------------------- */

static void test_nul_after_token(void **state)
{
    (void)state;
    static const text_case_t cases[] = {
        CASE("after an integer", "1\0"),
        CASE("after a real, in an array", "[1.5\0]"),
        CASE("after a literal", "true\0"),
        CASE("after null, before a comma", "[null\0,1]"),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const text_case_t *c = &cases[i];
        json_error_t err;
        assert_null(json_read(c->bytes, c->len, &err));
        assert_int_not_equal(json_error_code(&err), json_error_out_of_memory);
        /* json_reader.h documents this jansson quirk: if jansson loses it,
         * the documentation must change. */
        json_t *theirs = json_loadb(c->bytes, c->len, FLAGS, NULL);
        assert_non_null(theirs);
        json_decref(theirs);
    }
}

/* ---------------------------------------------------------------------- */
/* Exact trees, independently of jansson                                   */
/* ---------------------------------------------------------------------- */

static json_t *read_ok(const char *bytes, size_t len)
{
    json_error_t err;
    json_t *value = json_read(bytes, len, &err);
    if (!value)
        fail_msg("rejected: %s", err.text);
    return value;
}

static void assert_string_value(const char *text, size_t text_len, const char *expected,
                                size_t expected_len)
{
    json_t *s = read_ok(text, text_len);
    assert_true(json_is_string(s));
    assert_int_equal(json_string_length(s), expected_len);
    assert_memory_equal(json_string_value(s), expected, expected_len);
    json_decref(s);
}

static void test_exact_strings(void **state)
{
    (void)state;
    assert_string_value(RAW("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""), RAW("\"\\/\b\f\n\r\t"));
    assert_string_value(RAW("\"\\u0041\\u00e9\\u20AC\""), RAW("A\xc3\xa9\xe2\x82\xac"));
    assert_string_value(RAW("\"\\ud83d\\ude00\""), RAW("\xf0\x9f\x98\x80"));
    assert_string_value(RAW("\"\\udbff\\udfff\""), RAW("\xf4\x8f\xbf\xbf"));
    assert_string_value(RAW("\"a\\u0000b\""), RAW("a\0b"));
    assert_string_value(RAW("\"h\xc3\xa9 \xf0\x9f\x98\x80\""), RAW("h\xc3\xa9 \xf0\x9f\x98\x80"));
    assert_string_value(RAW("\"plain\\n\""), RAW("plain\n"));
}

/* Strings longer than the reader's inline scratch buffer. */
static void test_long_escaped_strings(void **state)
{
    (void)state;
    enum { N = 1000 };
    char text[3 * N + 16], expected[N];
    size_t n = 0;
    text[n++] = '{';
    text[n++] = '"';
    for (int i = 0; i < N / 2; i++) {
        memcpy(text + n, "\\n", 2); /* a long escaped key ... */
        n += 2;
    }
    memcpy(text + n, "\":\"", 3);
    n += 3;
    for (int i = 0; i < N; i++) {
        memcpy(text + n, "\\t", 2); /* ... whose value reuses the scratch buffer */
        n += 2;
    }
    memcpy(text + n, "\"}", 2);
    n += 2;

    json_t *object = read_ok(text, n);
    memset(expected, '\n', N / 2);
    json_t *value = json_object_getn(object, expected, N / 2);
    assert_non_null(value);
    memset(expected, '\t', N);
    assert_int_equal(json_string_length(value), N);
    assert_memory_equal(json_string_value(value), expected, N);
    json_decref(object);

    check_accepted(&(text_case_t){"long escaped strings", text, n});
}

static void test_exact_numbers(void **state)
{
    (void)state;
    json_t *v = read_ok(RAW("[-0,-0.0,9223372036854775807,-9223372036854775808,1.0,10,1E2,"
                            "1e-400,0.1,4.9e-324]"));
    assert_true(json_is_integer(json_array_get(v, 0)));
    assert_int_equal(json_integer_value(json_array_get(v, 0)), 0);
    assert_true(json_is_real(json_array_get(v, 1)));
    assert_true(signbit(json_real_value(json_array_get(v, 1))));
    assert_true(json_integer_value(json_array_get(v, 2)) == INT64_MAX);
    assert_true(json_integer_value(json_array_get(v, 3)) == INT64_MIN);
    assert_true(json_is_real(json_array_get(v, 4)));
    assert_true(json_real_value(json_array_get(v, 4)) == 1.0);
    assert_true(json_is_integer(json_array_get(v, 5)));
    assert_true(json_is_real(json_array_get(v, 6)));
    assert_true(json_real_value(json_array_get(v, 6)) == 100.0);
    assert_true(json_real_value(json_array_get(v, 7)) == 0.0);
    assert_true(json_real_value(json_array_get(v, 8)) == 0.1);
    assert_true(json_real_value(json_array_get(v, 9)) == 4.9e-324);
    json_decref(v);

    /* A real longer than the reader's stack buffer for strtod. */
    char text[200];
    memcpy(text, "0.", 2);
    memset(text + 2, '0', 150);
    memcpy(text + 152, "125e153", 7);
    v = read_ok(text, 159);
    assert_true(json_real_value(v) == 125.0);
    json_decref(v);
}

static void test_exact_objects(void **state)
{
    (void)state;
    json_t *v = read_ok(RAW("{\"b\":1,\"a\":[true,false,null],\"k\\u00e9y\":\"v\\u00e9\"}"));
    assert_int_equal(json_object_size(v), 3);
    void *it = json_object_iter(v);
    assert_string_equal(json_object_iter_key(it), "b");
    it = json_object_iter_next(v, it);
    assert_string_equal(json_object_iter_key(it), "a");
    it = json_object_iter_next(v, it);
    assert_string_equal(json_object_iter_key(it), "k\xc3\xa9y");
    assert_string_equal(json_string_value(json_object_iter_value(it)), "v\xc3\xa9");
    json_t *a = json_object_get(v, "a");
    assert_int_equal(json_array_size(a), 3);
    assert_true(json_is_true(json_array_get(a, 0)));
    assert_true(json_is_false(json_array_get(a, 1)));
    assert_true(json_is_null(json_array_get(a, 2)));
    json_decref(v);
}

/* ---------------------------------------------------------------------- */
/* Exact errors, independently of jansson                                  */
/* ---------------------------------------------------------------------- */

typedef struct error_case {
    const char *bytes;
    size_t len;
    int line, column, position;
    enum json_error_code code;
    const char *text;
} error_case_t;

static const error_case_t errors[] = {
    {RAW("{\"jsonrpc\":\"2.0\",\n \"jsonrpc\":\"2.0\"}"), 2, 10, 28, json_error_duplicate_key,
     "duplicate object key near '\"jsonrpc\"'"},
    {RAW(""), 1, 0, 0, json_error_premature_end_of_input, "unexpected token near end of file"},
    {RAW("[1,2"), 1, 4, 4, json_error_premature_end_of_input, "']' expected near end of file"},
    {RAW("{\"a\" 1}"), 1, 6, 6, json_error_invalid_syntax, "':' expected near '1'"},
    {RAW("{} x"), 1, 4, 4, json_error_end_of_input_expected, "end of file expected near 'x'"},
    {RAW("\"h\xc3\xa9\x01\""), 1, 3, 4, json_error_invalid_syntax,
     "control character 0x1 near '\"h\xc3\xa9'"},
    {RAW("\"a\nb\""), 1, 2, 2, json_error_invalid_syntax, "unexpected newline near '\"a'"},
    {RAW("[\xff]"), 1, 1, 1, json_error_invalid_utf8, "unable to decode byte 0xff"},
    {RAW("\"\\ud800\" "), 1, 8, 8, json_error_invalid_syntax,
     "invalid Unicode '\\uD800' near '\"\\ud800\"'"},
    {RAW("\"\\ud800\\u0041\""), 1, 14, 14, json_error_invalid_syntax,
     "invalid Unicode '\\uD800\\u0041' near '\"\\ud800\\u0041\"'"},
    {RAW("\"\\q\""), 1, 3, 3, json_error_invalid_syntax, "invalid escape near '\"\\q'"},
    {RAW("9223372036854775808"), 1, 19, 19, json_error_numeric_overflow,
     "too big integer near '9223372036854775808'"},
    {RAW("-9223372036854775809"), 1, 20, 20, json_error_numeric_overflow,
     "too big negative integer near '-9223372036854775809'"},
    {RAW("[1e400]"), 1, 6, 6, json_error_numeric_overflow, "real number overflow near '1e400'"},
    {RAW("1.x"), 1, 2, 2, json_error_invalid_syntax, "invalid token near '1.'"},
    {RAW("{\"a\\u0000\":1}"), 1, 10, 10, json_error_null_byte_in_key,
     "NUL byte in object key not supported near '\"a\\u0000\"'"},
    /* Tokens longer than 20 bytes are not quoted. */
    {RAW("\"aaaaaaaaaaaaaaaaaaaaaaaaa"), 1, 26, 26, json_error_premature_end_of_input,
     "premature end of input"},
};

static void test_exact_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        const error_case_t *c = &errors[i];
        json_error_t err;
        print_message("case: %s\n", c->text);
        assert_null(json_read(c->bytes, c->len, &err));
        assert_string_equal(err.text, c->text);
        assert_int_equal(json_error_code(&err), c->code);
        assert_int_equal(err.line, c->line);
        assert_int_equal(err.column, c->column);
        assert_int_equal(err.position, c->position);
        check_rejected(&(text_case_t){c->text, c->bytes, c->len});
    }
}

static void test_null_buffer_and_error(void **state)
{
    (void)state;
    json_error_t ours, theirs;
    assert_null(json_read(NULL, 0, &ours));
    assert_null(json_loadb(NULL, 0, FLAGS, &theirs));
    assert_int_equal(json_error_code(&ours), json_error_invalid_argument);
    assert_string_equal(ours.text, theirs.text);
    assert_int_equal(ours.line, theirs.line);
    assert_int_equal(ours.column, theirs.column);
    assert_int_equal(ours.position, theirs.position);
    assert_null(json_read(NULL, 0, NULL));

    /* err is optional, also for errors found deep inside. */
    assert_null(json_read(RAW("{\"a\":[1,{\"b\":\"\\ud800\"}]}"), NULL));
    json_t *v = json_read(RAW("[1]"), NULL);
    assert_non_null(v);
    json_decref(v);
}

/* The text is not NUL-terminated: nothing past `len` is read (ASan sees
 * every text in a buffer of exactly its size). */
static void test_reads_only_len_bytes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool prefixes_incomplete; /* "-1" is a number, "tr" is nothing */
    } cases[] = {{"1", false},      {"-1.5e3", false}, {"true", true},
                 {"\"abc\"", true}, {"[1,2]", true},   {"{\"a\":1}", true}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = strlen(cases[i].text);
        char *exact = malloc(len);
        assert_non_null(exact);
        memcpy(exact, cases[i].text, len);
        json_decref(read_ok(exact, len));
        for (size_t n = 0; n < len && cases[i].prefixes_incomplete; n++)
            assert_null(json_read(exact, n, NULL));
        free(exact);
    }
}

/* ---------------------------------------------------------------------- */
/* Locale                                                                  */
/* ---------------------------------------------------------------------- */

/*
 * Reals read the same whatever the decimal point of the locale: ',' (de_DE)
 * or the two-byte U+066B (ps_AF, where jansson's loader fails an assertion,
 * so it is not compared there). Each locale is tried only if installed.
 */
static void test_locale_decimal_point(void **state)
{
    (void)state;
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                        "fr_FR.utf8",  "ps_AF.UTF-8", "ps_AF.utf8"};
    int tried = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!setlocale(LC_NUMERIC, names[i]))
            continue;
        const char *point = localeconv()->decimal_point;
        if (strcmp(point, ".") == 0)
            continue;
        print_message("locale %s, decimal point \"%s\"\n", names[i], point);
        tried++;

        json_t *v = read_ok(RAW("[1.5,-2.25e1,0.1,1e2]"));
        assert_true(json_real_value(json_array_get(v, 0)) == 1.5);
        assert_true(json_real_value(json_array_get(v, 1)) == -22.5);
        assert_true(json_real_value(json_array_get(v, 2)) == 0.1);
        assert_true(json_real_value(json_array_get(v, 3)) == 100.0);
        json_decref(v);
        /* The locale's point is still no decimal point in JSON. */
        assert_null(json_read(RAW("1,5"), NULL));
        if (strlen(point) == 1)
            check_accepted(&(text_case_t)CASE("reals under another decimal point",
                                              "[1.5,-2.25e1,0.1]"));
    }
    setlocale(LC_NUMERIC, "C");
    if (!tried) {
        print_message("no locale with another decimal point is installed: skipped\n");
        skip();
    }
}

/* ---------------------------------------------------------------------- */
/* Allocation failure                                                      */
/* ---------------------------------------------------------------------- */

/* jansson's allocator, failing once `allocations_left` reaches 0 (-1: never). */
static long allocations_left = -1;

static void *failing_malloc(size_t size)
{
    if (allocations_left == 0)
        return NULL;
    if (allocations_left > 0)
        allocations_left--;
    return malloc(size);
}

/* Every allocation json_read makes fails once in turn: each failure is
 * reported as out of memory, and nothing leaks. The text needs the
 * constructors, the scratch buffer, a copied key and a long real. */
static void test_out_of_memory(void **state)
{
    (void)state;
    char text[1024];
    int n = snprintf(text, sizeof text, "{\"k\\u00e9y\":[1,2.5,\"s\",true,{\"%0300d\\n\":0.%0100d1}]}",
                     0, 0);
    assert_true(n > 0 && (size_t)n < sizeof text);

    json_set_alloc_funcs(failing_malloc, free);
    for (long budget = 0;; budget++) {
        allocations_left = budget;
        json_error_t err;
        json_t *v = json_read(text, (size_t)n, &err);
        if (v) {
            json_decref(v);
            if (allocations_left > 0)
                break; /* every allocation succeeded: all failure points seen */
        } else {
            assert_int_equal(json_error_code(&err), json_error_out_of_memory);
        }
    }
    allocations_left = -1;
    json_set_alloc_funcs(malloc, free);
}


/* ---- the memo (json_read_memo) ----------------------------------------- */

#define META "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"," \
             "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}"

static json_t *read_memo(const char *text, json_read_memo_t *memo, int max_nesting,
                         json_error_t *err)
{
    bool too_deep;
    return json_read_memo(text, strlen(text), max_nesting, &too_deep, err, memo);
}

/* The value at outer.params._meta of a message. */
static json_t *meta_of(json_t *msg)
{
    return json_object_get(json_object_get(msg, "params"), "_meta");
}

static void test_memo_shares_the_same_bytes(void **state)
{
    (void)state;
    json_read_memo_t memo = {.parent_key = "params", .key = "_meta"};
    const char *first = "{\"id\":1,\"params\":{\"name\":\"a\",\"_meta\":" META "}}";
    const char *second = "{\"id\":2,\"params\":{\"_meta\":" META ",\"name\":\"b\"}}";
    json_t *a = read_memo(first, &memo, 64, NULL);
    json_t *b = read_memo(second, &memo, 64, NULL);
    assert_non_null(a);
    assert_non_null(b);
    /* One value, held by both messages and the memo. */
    assert_ptr_equal(meta_of(a), meta_of(b));
    assert_int_equal(meta_of(a)->refcount, 3);
    /* Each message is what json_read builds. */
    json_t *plain = json_read(second, strlen(second), NULL);
    assert_true(json_equal(plain, b));
    assert_ptr_not_equal(meta_of(plain), meta_of(b));
    json_decref(plain);
    json_decref(a);
    json_decref(b);
    json_read_memo_clear(&memo);
    assert_null(memo.value);
    assert_null(memo.text);
}

static void test_memo_other_bytes_are_read(void **state)
{
    (void)state;
    json_read_memo_t memo = {.parent_key = "params", .key = "_meta"};
    json_t *a = read_memo("{\"params\":{\"_meta\":{\"progressToken\":1}}}", &memo, 64, NULL);
    /* Same value, other bytes (a space): read anew, and remembered. */
    json_t *b = read_memo("{\"params\":{\"_meta\":{\"progressToken\": 1}}}", &memo, 64, NULL);
    json_t *c = read_memo("{\"params\":{\"_meta\":{\"progressToken\":2}}}", &memo, 64, NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_ptr_not_equal(meta_of(a), meta_of(b));
    assert_true(json_equal(meta_of(a), meta_of(b)));
    assert_int_equal(json_integer_value(json_object_get(meta_of(c), "progressToken")), 2);
    assert_ptr_equal(memo.value, meta_of(c));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_read_memo_clear(&memo);
}

static void test_memo_only_its_member(void **state)
{
    (void)state;
    json_read_memo_t memo = {.parent_key = "params", .key = "_meta"};
    /* _meta elsewhere (the outermost object, result, deeper in params) and
     * params that is not in the outermost object are not the memo's. */
    static const char *const others[] = {
        "{\"_meta\":" META "}",
        "{\"result\":{\"_meta\":" META "}}",
        "{\"params\":{\"arguments\":{\"_meta\":" META "}}}",
        "[{\"params\":{\"_meta\":" META "}}]",
        "{\"x\":{\"params\":{\"_meta\":" META "}}}",
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        json_t *v = read_memo(others[i], &memo, 64, NULL);
        assert_non_null(v);
        assert_null(memo.value);
        json_decref(v);
    }
    /* A number is not remembered (the next byte could continue it). */
    json_t *n = read_memo("{\"params\":{\"_meta\":12}}", &memo, 64, NULL);
    assert_non_null(n);
    assert_null(memo.value);
    json_decref(n);
    /* A string is; the string value shared. */
    json_t *s1 = read_memo("{\"params\":{\"_meta\":\"m\"}}", &memo, 64, NULL);
    json_t *s2 = read_memo("{\"params\":{\"_meta\":\"m\"}}", &memo, 64, NULL);
    assert_ptr_equal(meta_of(s1), meta_of(s2));
    json_decref(s1);
    json_decref(s2);
    json_read_memo_clear(&memo);
}

static void test_memo_keeps_the_rules(void **state)
{
    (void)state;
    json_read_memo_t memo = {.parent_key = "params", .key = "_meta"};
    json_t *v = read_memo("{\"params\":{\"_meta\":" META "}}", &memo, 64, NULL);
    assert_non_null(v);
    json_decref(v);

    /* A duplicate key after the shared value is still one. */
    json_error_t err, plain_err;
    const char *dup = "{\"params\":{\"_meta\":" META ",\"_meta\":1}}";
    assert_null(read_memo(dup, &memo, 64, &err));
    assert_null(json_read(dup, strlen(dup), &plain_err));
    assert_int_equal(json_error_code(&err), json_error_duplicate_key);
    assert_int_equal(err.position, plain_err.position);

    /* What follows the value is read as ever: the same error, same place. */
    const char *bad = "{\"params\":{\"_meta\":" META "} x";
    assert_null(read_memo(bad, &memo, 64, &err));
    assert_null(json_read(bad, strlen(bad), &plain_err));
    assert_string_equal(err.text, plain_err.text);
    assert_int_equal(err.position, plain_err.position);
    assert_int_equal(err.column, plain_err.column);

    /* A value remembered under one nesting limit is not taken under a
     * lower one: the limit applies as if it were read. */
    bool too_deep;
    const char *text = "{\"params\":{\"_meta\":" META "}}";
    assert_null(json_read_memo(text, strlen(text), 3, &too_deep, &err, &memo));
    assert_true(too_deep);
    json_read_memo_clear(&memo);
}

/* json_read_out_of_range_as_null: such numbers read as null, in range
 * ones (the extremes included) as they are, and every other fault still
 * fails the read. */
static void test_out_of_range_as_null(void **state)
{
    (void)state;
    static const struct {
        const char *text, *expected; /* expected NULL: the read fails */
    } cases[] = {
        {"[9223372036854775808,-9223372036854775809,1e400,-1e999]", "[null,null,null,null]"},
        {"[9223372036854775807,-9223372036854775808,1e-400,1.5]",
         "[9223372036854775807,-9223372036854775808,0.0,1.5]"},
        {"{\"id\":7,\"n\":{\"m\":18446744073709551616}}", "{\"id\":7,\"n\":{\"m\":null}}"},
        {"[1e400,]", NULL},
        {"{\"a\":1e400,\"a\":1}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_error_t err;
        bool too_deep;
        json_t *v = json_read_out_of_range_as_null(cases[i].text, strlen(cases[i].text), 64,
                                                   &too_deep, &err);
        if (!cases[i].expected) {
            assert_null(v);
            continue;
        }
        assert_non_null(v);
        json_t *want = json_loads(cases[i].expected, 0, NULL);
        assert_true(json_equal(v, want));
        json_decref(want);
        json_decref(v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_rejected),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_depth_limit_error_order),
        cmocka_unit_test(test_nesting_limit),
        cmocka_unit_test(test_nul_after_token),
        cmocka_unit_test(test_exact_strings),
        cmocka_unit_test(test_long_escaped_strings),
        cmocka_unit_test(test_exact_numbers),
        cmocka_unit_test(test_exact_objects),
        cmocka_unit_test(test_exact_errors),
        cmocka_unit_test(test_null_buffer_and_error),
        cmocka_unit_test(test_reads_only_len_bytes),
        cmocka_unit_test(test_locale_decimal_point),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_memo_shares_the_same_bytes),
        cmocka_unit_test(test_memo_other_bytes_are_read),
        cmocka_unit_test(test_memo_only_its_member),
        cmocka_unit_test(test_memo_keeps_the_rules),
        cmocka_unit_test(test_out_of_range_as_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
