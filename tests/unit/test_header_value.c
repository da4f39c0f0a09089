/*
 * Mcp-Name / Mcp-Param-{Name} values: the digest's section 4.6 table, the
 * SEP-2243 conformance cases (client encoding of test_custom_headers, server
 * Base64 and whitespace checks) and the numeric comparison.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/header_value.h"

/* A text and the header value it must travel as. Every row is checked in
 * both directions: encode(text) == header and decode(header) == text. */
static const struct {
    const char *text;
    const char *header;
} ENCODINGS[] = {
    /* Digest section 4.6 table (the spec's "Encoding examples"). */
    {"us-west1", "us-west1"},
    {"Hello, \xe4\xb8\x96\xe7\x95\x8c", "=?base64?SGVsbG8sIOS4lueVjA==?="},
    {" padded ", "=?base64?IHBhZGRlZCA=?="},
    {"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
    {"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
    /* The conformance client scenario's arguments. */
    {"", ""},
    {"test-method", "test-method"},
    {"us west 1", "us west 1"},
    {"SELECT * FROM users", "SELECT * FROM users"},
    {" us-west1", "=?base64?IHVzLXdlc3Qx?="},
    {"us-west1 ", "=?base64?dXMtd2VzdDEg?="},
    {"line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="},
    {"\tindented", "=?base64?CWluZGVudGVk?="},
    /* Every control character is encoded, interior TAB and DEL included. */
    {"a\tb", "=?base64?YQli?="},
    {"\x7f", "=?base64?fw==?="},
    /* Non-ASCII of every UTF-8 length. */
    {"caf\xc3\xa9", "=?base64?Y2Fmw6k=?="},
    {"\xf0\x9f\x98\x80", "=?base64?8J+YgA==?="},
    /* Only exact lowercase markers at both ends make a sentinel... */
    {"=?BASE64?abc?=", "=?BASE64?abc?="},
    {"=?base64?abc", "=?base64?abc"},
    {"abc?=", "abc?="},
    /* ...but the encoder also protects a value whose markers overlap. */
    {"=?base64?=", "=?base64?PT9iYXNlNjQ/PQ==?="},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void test_encode_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(ENCODINGS); i++) {
        char *out = NULL;
        assert_int_equal(mcp_header_value_encode(ENCODINGS[i].text, strlen(ENCODINGS[i].text),
                                                 &out),
                         MCP_OK);
        assert_string_equal(out, ENCODINGS[i].header);
        free(out);
    }
}

static void test_decode_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(ENCODINGS); i++) {
        char *out = NULL;
        size_t len = 0;
        const char *h = ENCODINGS[i].header;
        assert_int_equal(mcp_header_value_decode(h, strlen(h), &out, &len), MCP_OK);
        assert_int_equal(len, strlen(ENCODINGS[i].text));
        assert_string_equal(out, ENCODINGS[i].text);
        free(out);
    }
}

/* A header value as received and what decoding must give: the text, or
 * NULL for a rejection (MCP_EINVAL, -32020 on the wire). */
static const struct {
    const char *header;
    const char *decoded;
} RECEIVED[] = {
    /* Optional whitespace around a value is not part of it (RFC 9110 5.5;
     * the conformance case sends "  name  "). */
    {"  get_weather  ", "get_weather"},
    {"\tget_weather\t", "get_weather"},
    {"   ", ""},
    {"  =?base64?SGVsbG8=?=  ", "Hello"},
    /* SEP-2243 server cases. */
    {"=?base64?SGVsbG8=?=", "Hello"},
    {"=?base64?SGVsbG8?=", NULL},     /* invalid padding */
    {"=?base64?SGVs!!!bG8=?=", NULL}, /* invalid characters */
    {"SGVsbG8=", "SGVsbG8="},         /* no prefix: literal */
    {"=?base64?SGVsbG8=", "=?base64?SGVsbG8="}, /* no suffix: literal */
    {"=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="}, /* markers are case-sensitive */
    {"=?Base64?SGVsbG8=?=", "=?Base64?SGVsbG8=?="},
    {"TOOLS/LIST", "TOOLS/LIST"},     /* values keep their case */
    /* Sentinel payloads. */
    {"=?base64?" "?=", ""}, /* split: "??=" would be a trigraph */
    {"=?base64?=", "=?base64?="},     /* overlapping markers: literal */
    {"=?base64? SGVsbG8=?=", NULL},   /* whitespace inside the payload */
    {"=?base64?SGVs bG8=?=", NULL},
    {"=?base64?SGVsbG9=?=", NULL},    /* non-zero unused bits */
    {"=?base64?SGVsbG8-?=", NULL},    /* base64url alphabet */
    {"=?base64?AA==?=", NULL},        /* decodes to NUL */
    {"=?base64?/w==?=", NULL},        /* decodes to byte FF, not UTF-8 */
    {"=?base64?7aCA?=", NULL},        /* decodes to a UTF-8 surrogate */
    {"=?base64?wK8=?=", NULL},        /* decodes to an overlong form */
    /* Plain values: visible ASCII with interior SP/HTAB only. */
    {"us west 1", "us west 1"},
    {"a\tb", "a\tb"},
    {"a\rb", NULL},
    {"a\nb", NULL},
    {"a\x01" "b", NULL},
    {"a\x7f" "b", NULL},
    {"caf\xc3\xa9", NULL},            /* raw non-ASCII must come as Base64 */
    {"\x80", NULL},
};

static void test_received_values(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(RECEIVED); i++) {
        char *out = (char *)"untouched";
        size_t len = 12345;
        const char *h = RECEIVED[i].header;
        int rc = mcp_header_value_decode(h, strlen(h), &out, &len);
        if (!RECEIVED[i].decoded) {
            if (rc != MCP_EINVAL)
                fail_msg("accepted \"%s\"", h);
            assert_null(out);
            continue;
        }
        if (rc != MCP_OK)
            fail_msg("rejected \"%s\"", h);
        assert_int_equal(len, strlen(RECEIVED[i].decoded));
        assert_string_equal(out, RECEIVED[i].decoded);
        free(out);
    }
}

/* The length decides, not a NUL: a NUL inside a value is a control byte. */
static void test_decode_uses_length(void **state)
{
    (void)state;
    char *out = NULL;
    assert_int_equal(mcp_header_value_decode("a\0b", 3, &out, NULL), MCP_EINVAL);
    assert_int_equal(mcp_header_value_decode("abcdef", 3, &out, NULL), MCP_OK);
    assert_string_equal(out, "abc");
    free(out);
    assert_int_equal(mcp_header_value_decode(NULL, 0, &out, NULL), MCP_EINVAL);
}

static void test_encode_rejects_invalid_utf8(void **state)
{
    (void)state;
    static const char *const BAD[] = {
        "\xff", "\xc3", "caf\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
        "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", "\x80", "\xe4\xb8",
    };
    for (size_t i = 0; i < COUNT(BAD); i++) {
        char *out = (char *)"untouched";
        if (mcp_header_value_encode(BAD[i], strlen(BAD[i]), &out) != MCP_EINVAL)
            fail_msg("encoded invalid UTF-8 row %zu", i);
        assert_null(out);
    }
    char *out = NULL;
    assert_int_equal(mcp_header_value_encode("a\0b", 3, &out), MCP_EINVAL);
    assert_int_equal(mcp_header_value_encode(NULL, 0, &out), MCP_EINVAL);
}

static void test_from_json(void **state)
{
    (void)state;
    static const struct {
        const char *json; /* parsed with JSON_DECODE_ANY | JSON_ALLOW_NUL */
        const char *header; /* NULL: MCP_EINVAL */
    } ROWS[] = {
        {"\"us-west1\"", "us-west1"},
        {"\"Hello, \\u4e16\\u754c\"", "=?base64?SGVsbG8sIOS4lueVjA==?="},
        {"\"\"", ""},
        {"42", "42"},
        {"-7", "-7"},
        {"0", "0"},
        {"9007199254740991", "9007199254740991"},
        {"-9007199254740991", "-9007199254740991"},
        {"9007199254740992", NULL},
        {"-9007199254740992", NULL},
        {"true", "true"},
        {"false", "false"},
        {"42.0", "42"},
        {"-0.0", "0"},
        {"42.5", NULL},
        {"1e300", NULL},
        {"null", NULL},
        {"{}", NULL},
        {"[]", NULL},
        {"\"a\\u0000b\"", NULL},
    };
    for (size_t i = 0; i < COUNT(ROWS); i++) {
        json_t *v = json_loads(ROWS[i].json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        char *out = (char *)"untouched";
        assert_non_null(v);
        int rc = mcp_header_value_from_json(v, &out);
        if (ROWS[i].header) {
            if (rc != MCP_OK)
                fail_msg("rejected %s", ROWS[i].json);
            assert_string_equal(out, ROWS[i].header);
            free(out);
        } else {
            if (rc != MCP_EINVAL)
                fail_msg("accepted %s", ROWS[i].json);
            assert_null(out);
        }
        json_decref(v);
    }
    char *out = NULL;
    assert_int_equal(mcp_header_value_from_json(NULL, &out), MCP_EINVAL);
}

/* Decoded header, body value (JSON), expected answer. */
static const struct {
    const char *header;
    const char *body;
    bool equal;
} MATCHES[] = {
    /* Strings: byte-exact. */
    {"Hello", "\"Hello\"", true},
    {"hello", "\"Hello\"", false},
    {"Hello ", "\"Hello\"", false},
    {"", "\"\"", true},
    {"a", "\"a\\u0000b\"", false},
    {"42", "\"42\"", true},
    {"42.0", "\"42\"", false},
    {"tools/list", "\"tools/list\"", true},
    {"TOOLS/LIST", "\"tools/list\"", false},
    /* Integers: numeric and exact (42 vs 42.0 from the spec's note). */
    {"42", "42", true},
    {"+42", "42", true},
    {"42.0", "42", true},
    {"42.", "42", true},
    {"42.000000000000000000000000000000000000000000", "42", true},
    {"4.2e1", "42", true},
    {"4.2E+1", "42", true},
    {".42e2", "42", true},
    {"420e-1", "42", true},
    {"0042", "42", true},
    {"4200E-2", "42", true},
    {"42.5", "42", false},
    {"43", "42", false},
    {"-42", "42", false},
    {"", "42", false},
    {"42a", "42", false},
    {"0x2A", "42", false},
    {"4 2", "42", false},
    {" 42", "42", false},
    {"4.2e", "42", false},
    {"e1", "42", false},
    {".", "0", false},
    {"+", "0", false},
    {"42..0", "42", false},
    {"Infinity", "42", false},
    {"NaN", "0", false},
    {"0", "0", true},
    {"-0", "0", true},
    {"0.000", "0", true},
    {"0e99999999999999999999", "0", true},
    {"1e99999999999999999999", "0", false},
    {"1e-99999999999999999999", "0", false},
    {"-7", "-7", true},
    {"7", "-7", false},
    {"100", "100", true},
    {"1e2", "100", true},
    {"10", "100", false},
    {"1000", "100", false},
    {"9007199254740991", "9007199254740991", true},
    {"9007199254740992", "9007199254740991", false},
    /* A double would round these to the body value; exact comparison does not. */
    {"9007199254740991.0000000001", "9007199254740991", false},
    {"42.00000000000000001", "42", false},
    {"9223372036854775807", "9223372036854775807", true},
    {"9223372036854775808", "9223372036854775807", false},
    {"-9223372036854775808", "-9223372036854775808", true},
    /* Integral reals count as integers; other reals never match. */
    {"42", "42.0", true},
    {"42.0", "42.0", true},
    {"42.5", "42.5", false},
    {"1e300", "1e300", false},
    /* Booleans: exactly true/false. */
    {"true", "true", true},
    {"false", "false", true},
    {"True", "true", false},
    {"1", "true", false},
    {"0", "false", false},
    {"false", "true", false},
    /* No other body type has a header form. */
    {"null", "null", false},
    {"", "null", false},
    {"{}", "{}", false},
    {"[]", "[]", false},
};

static void test_matches(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(MATCHES); i++) {
        json_t *body = json_loads(MATCHES[i].body, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        assert_non_null(body);
        bool got = mcp_header_value_matches(MATCHES[i].header, strlen(MATCHES[i].header), body);
        if (got != MATCHES[i].equal)
            fail_msg("header \"%s\" vs body %s: got %s", MATCHES[i].header, MATCHES[i].body,
                     got ? "equal" : "different");
        json_decref(body);
    }
    json_t *s = json_string("x");
    assert_false(mcp_header_value_matches("x", 1, NULL));
    assert_false(mcp_header_value_matches(NULL, 0, s));
    json_decref(s);
}

/* Whatever a client encodes, the server decodes to the same text and
 * finds equal to the body: for every single byte of ASCII, and a sample of
 * longer mixes. */
static void test_encode_decode_round_trip(void **state)
{
    (void)state;
    char text[8];
    for (int c = 1; c < 128; c++) {
        for (int shape = 0; shape < 3; shape++) {
            /* The byte alone, inside, and at both ends of a word. */
            int n = shape == 0   ? snprintf(text, sizeof text, "%c", c)
                    : shape == 1 ? snprintf(text, sizeof text, "a%cb", c)
                                 : snprintf(text, sizeof text, "%cab%c", c, c);
            char *header = NULL, *back = NULL;
            size_t len = 0;
            assert_int_equal(mcp_header_value_encode(text, (size_t)n, &header), MCP_OK);
            assert_int_equal(mcp_header_value_decode(header, strlen(header), &back, &len),
                             MCP_OK);
            assert_int_equal(len, (size_t)n);
            assert_memory_equal(back, text, (size_t)n);
            json_t *body = json_stringn(text, (size_t)n);
            assert_true(mcp_header_value_matches(back, len, body));
            json_decref(body);
            free(header);
            free(back);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_table),
        cmocka_unit_test(test_decode_table),
        cmocka_unit_test(test_received_values),
        cmocka_unit_test(test_decode_uses_length),
        cmocka_unit_test(test_encode_rejects_invalid_utf8),
        cmocka_unit_test(test_from_json),
        cmocka_unit_test(test_matches),
        cmocka_unit_test(test_encode_decode_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
