/* Tests for src/protocol/error.c and src/protocol/errors.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/errors.h"

static json_t *json_from(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j)
        fail_msg("bad JSON in the test itself: %s: %s", text, jerr.text);
    return j;
}

static void assert_json_equals(const json_t *actual, const char *expected_text)
{
    json_t *expected = json_from(expected_text);
    if (!json_equal(actual, expected)) {
        char *got = actual ? json_dumps(actual, JSON_ENCODE_ANY) : NULL;
        print_error("expected %s\n     got %s\n", expected_text, got ? got : "(NULL)");
        free(got);
        json_decref(expected);
        fail();
    }
    json_decref(expected);
}

/* mcp_error_to_json(err) is exactly expected_text. */
static void assert_error_json(const mcp_error_t *err, const char *expected_text)
{
    json_t *j = mcp_error_to_json(err);
    assert_non_null(j);
    assert_json_equals(j, expected_text);
    json_decref(j);
}

/* ---------------------------------------------------------------------- */
/* Return codes and code names                                             */
/* ---------------------------------------------------------------------- */

static void test_strerror(void **state)
{
    (void)state;
    static const int codes[] = {MCP_OK,       MCP_EINVAL,      MCP_ENOMEM,     MCP_EPROTO,
                                MCP_ERPC,     MCP_EIO,         MCP_ETIMEDOUT,  MCP_ECANCELED,
                                MCP_ECLOSED,  MCP_ENOTFOUND,   MCP_EEXIST,     MCP_EUNSUPPORTED,
                                MCP_EAUTH,    MCP_ELIMIT,      MCP_ESTATE};
    size_t n = sizeof codes / sizeof codes[0];
    /* Every code has its own description. */
    for (size_t i = 0; i < n; i++) {
        const char *s = mcp_strerror(codes[i]);
        assert_non_null(s);
        assert_string_not_equal(s, "unknown error");
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(s, mcp_strerror(codes[j]));
    }
    assert_string_equal(mcp_strerror(MCP_OK), "success");
    assert_string_equal(mcp_strerror(MCP_ENOMEM), "out of memory");
    assert_string_equal(mcp_strerror(MCP_ETIMEDOUT), "timed out");

    static const int unknown[] = {1, -15, -1000, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        assert_string_equal(mcp_strerror(unknown[i]), "unknown error");
}

static void test_lib_version(void **state)
{
    (void)state;
    assert_string_equal(mcp_lib_version(), MCP_LIB_VERSION);
}

static const struct {
    int code;
    const char *name;
} code_names[] = {
    {MCP_PARSE_ERROR, "Parse error"},
    {MCP_INVALID_REQUEST, "Invalid Request"},
    {MCP_METHOD_NOT_FOUND, "Method not found"},
    {MCP_INVALID_PARAMS, "Invalid params"},
    {MCP_INTERNAL_ERROR, "Internal error"},
    {MCP_HEADER_MISMATCH, "Header mismatch"},
    {MCP_MISSING_CLIENT_CAPABILITY, "Missing required client capability"},
    {MCP_UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version"},
    {MCP_LEGACY_RESOURCE_NOT_FOUND, "Resource not found"},
    {MCP_LEGACY_URL_ELICITATION_REQUIRED, "URL elicitation required"},
    /* The implementation-defined server range, both ends. */
    {-32000, "Server error"},
    {-32001, "Server error"},
    {-32050, "Server error"},
    {-32099, "Server error"},
    /* Everything else. */
    {-31999, "Error"},
    {-32100, "Error"},
    {-32768, "Error"},
    {0, "Error"},
    {1, "Error"},
    {INT_MIN, "Error"},
};

static void test_code_names(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof code_names / sizeof code_names[0]; i++)
        assert_string_equal(mcp_error_code_name(code_names[i].code), code_names[i].name);
}

static void test_code_is_modern(void **state)
{
    (void)state;
    assert_true(mcp_error_code_is_modern(-32020));
    assert_true(mcp_error_code_is_modern(-32021));
    assert_true(mcp_error_code_is_modern(-32022));
    static const int legacy[] = {-32019, -32023, -32001, -32002, -32003, -32004,
                                 -32042, -32600, -32601, -32602, -32603, 0};
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++)
        assert_false(mcp_error_code_is_modern(legacy[i]));
}

/* ---------------------------------------------------------------------- */
/* mcp_error_t                                                             */
/* ---------------------------------------------------------------------- */

static void test_set(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    assert_int_equal(mcp_error_set(&err, MCP_EINVAL, MCP_INVALID_PARAMS, json_integer(1),
                                   "bad %s #%d", "uri", 3),
                     MCP_EINVAL);
    assert_int_equal(err.rc, MCP_EINVAL);
    assert_int_equal(err.code, MCP_INVALID_PARAMS);
    assert_string_equal(err.message, "bad uri #3");
    assert_json_equals(err.data, "1");

    /* Setting again releases the old data (LeakSanitizer checks). */
    assert_int_equal(mcp_error_set(&err, MCP_EIO, 0, NULL, "io"), MCP_EIO);
    assert_int_equal(err.rc, MCP_EIO);
    assert_int_equal(err.code, 0);
    assert_null(err.data);
    mcp_error_clear(&err);

    /* No err: the rc comes back and the data is released. */
    assert_int_equal(mcp_error_set(NULL, MCP_ELIMIT, 1, json_object(), "x"), MCP_ELIMIT);
}

static void test_set_default_message(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, MCP_METHOD_NOT_FOUND, NULL, NULL);
    assert_string_equal(err.message, "Method not found");
    mcp_error_set(&err, MCP_ETIMEDOUT, 0, NULL, NULL);
    assert_string_equal(err.message, mcp_strerror(MCP_ETIMEDOUT));
    mcp_error_clear(&err);
}

static void test_set_truncates(void **state)
{
    (void)state;
    char long_text[400];
    memset(long_text, 'a', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, 1, NULL, "%s", long_text);
    assert_int_equal(strlen(err.message), MCP_ERROR_MESSAGE_MAX - 1);
    mcp_error_clear(&err);
}

/* A character cut by truncation is dropped whole, so the message stays valid
 * UTF-8 and survives mcp_error_to_json(). */
static void test_set_truncates_utf8(void **state)
{
    (void)state;
    static const struct {
        size_t prefix;    /* ASCII bytes before the character */
        const char *utf8; /* the character */
        size_t kept;      /* expected message length */
    } cases[] = {
        {MCP_ERROR_MESSAGE_MAX - 2, "\xc3\xa9", MCP_ERROR_MESSAGE_MAX - 2},         /* cut 1/2 */
        {MCP_ERROR_MESSAGE_MAX - 3, "\xc3\xa9", MCP_ERROR_MESSAGE_MAX - 1},         /* fits */
        {MCP_ERROR_MESSAGE_MAX - 2, "\xe2\x82\xac", MCP_ERROR_MESSAGE_MAX - 2},     /* cut 1/3 */
        {MCP_ERROR_MESSAGE_MAX - 3, "\xe2\x82\xac", MCP_ERROR_MESSAGE_MAX - 3},     /* cut 2/3 */
        {MCP_ERROR_MESSAGE_MAX - 4, "\xe2\x82\xac", MCP_ERROR_MESSAGE_MAX - 1},     /* fits */
        {MCP_ERROR_MESSAGE_MAX - 2, "\xf0\x9f\x98\x80", MCP_ERROR_MESSAGE_MAX - 2}, /* cut 1/4 */
        {MCP_ERROR_MESSAGE_MAX - 4, "\xf0\x9f\x98\x80", MCP_ERROR_MESSAGE_MAX - 4}, /* cut 3/4 */
        {MCP_ERROR_MESSAGE_MAX - 5, "\xf0\x9f\x98\x80", MCP_ERROR_MESSAGE_MAX - 1}, /* fits */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[MCP_ERROR_MESSAGE_MAX + 16];
        memset(text, 'a', cases[i].prefix);
        strcpy(text + cases[i].prefix, cases[i].utf8);
        strcat(text, "tail");

        mcp_error_t err = {0};
        mcp_error_set(&err, MCP_EINVAL, 1, NULL, "%s", text);
        assert_int_equal(strlen(err.message), cases[i].kept);
        json_t *j = mcp_error_to_json(&err);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "message")), err.message);
        json_decref(j);
        mcp_error_clear(&err);
    }
}

/* Arguments may point into the error being set: its message (to prefix
 * context) or its data. */
static void test_set_from_itself(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, MCP_INVALID_PARAMS, json_pack("{s:s}", "k", "from data"),
                  "inner problem");
    mcp_error_set(&err, MCP_EINVAL, err.code, json_incref(err.data), "outer: %s", err.message);
    assert_string_equal(err.message, "outer: inner problem");
    assert_json_equals(err.data, "{\"k\":\"from data\"}");

    mcp_error_set(&err, MCP_EINVAL, 1, NULL, "%s",
                  json_string_value(json_object_get(err.data, "k")));
    assert_string_equal(err.message, "from data");
    assert_null(err.data);
    mcp_error_clear(&err);
}

static void test_clear(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, 5, json_array(), "x");
    mcp_error_clear(&err);
    assert_int_equal(err.code, 0);
    assert_string_equal(err.message, "");
    assert_null(err.data);
    mcp_error_clear(&err); /* twice is fine */
    mcp_error_clear(NULL);
}

static void test_move(void **state)
{
    (void)state;
    mcp_error_t a = {0}, b = {0};
    mcp_error_set(&a, MCP_EINVAL, 7, json_string("a-data"), "from a");
    mcp_error_set(&b, MCP_EINVAL, 8, json_string("b-data"), "old b");
    mcp_error_move(&b, &a);
    assert_int_equal(b.code, 7);
    assert_string_equal(b.message, "from a");
    assert_json_equals(b.data, "\"a-data\"");
    assert_int_equal(a.code, 0);
    assert_string_equal(a.message, "");
    assert_null(a.data);

    /* Moving onto itself keeps the error. */
    mcp_error_move(&b, &b);
    assert_int_equal(b.code, 7);
    assert_json_equals(b.data, "\"a-data\"");
    mcp_error_clear(&b);
}

static void test_to_json(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL, "Unknown tool: x");
    assert_error_json(&err, "{\"code\":-32602,\"message\":\"Unknown tool: x\"}");

    mcp_error_set(&err, MCP_EINVAL, -1, json_pack("{s:i}", "n", 1), "with data");
    assert_error_json(&err, "{\"code\":-1,\"message\":\"with data\",\"data\":{\"n\":1}}");

    /* Code 0 is a local failure: rendered as an internal error. */
    mcp_error_set(&err, MCP_EIO, 0, NULL, "connection reset");
    assert_error_json(&err, "{\"code\":-32603,\"message\":\"connection reset\"}");

    /* An empty message uses the code's name. */
    mcp_error_set(&err, MCP_EINVAL, MCP_METHOD_NOT_FOUND, NULL, "%s", "");
    assert_error_json(&err, "{\"code\":-32601,\"message\":\"Method not found\"}");

    /* A message that is not UTF-8 falls back to the code's name. */
    mcp_error_set(&err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL, "bad \xff byte");
    assert_error_json(&err, "{\"code\":-32602,\"message\":\"Invalid params\"}");
    mcp_error_clear(&err);

    mcp_error_t zero = {0};
    assert_error_json(&zero, "{\"code\":-32603,\"message\":\"Internal error\"}");
}

static void test_from_json(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    json_t *obj = json_from("{\"code\":-32601,\"message\":\"nope\"}");
    assert_int_equal(mcp_error_from_json(&err, obj), MCP_OK);
    assert_int_equal(err.code, -32601);
    assert_string_equal(err.message, "nope");
    assert_null(err.data);
    json_decref(obj);

    /* data is shared, not copied; an older data is released. */
    mcp_error_set(&err, MCP_EINVAL, 1, json_object(), "old");
    obj = json_from("{\"code\":-2147483648,\"message\":\"m\",\"data\":{\"x\":[1]}}");
    json_t *data = json_object_get(obj, "data");
    assert_int_equal(mcp_error_from_json(&err, obj), MCP_OK);
    assert_int_equal(err.code, INT32_MIN);
    assert_ptr_equal(err.data, data);
    assert_int_equal(data->refcount, 2);
    json_decref(obj);
    assert_json_equals(err.data, "{\"x\":[1]}");
    mcp_error_clear(&err);

    /* Round trip through mcp_error_to_json. */
    mcp_error_set(&err, MCP_EINVAL, MCP_HEADER_MISMATCH, json_pack("{s:n}", "z"), "h");
    obj = mcp_error_to_json(&err);
    mcp_error_t back = {0};
    assert_int_equal(mcp_error_from_json(&back, obj), MCP_OK);
    assert_int_equal(back.code, err.code);
    assert_string_equal(back.message, err.message);
    assert_true(json_equal(back.data, err.data));
    json_decref(obj);
    mcp_error_clear(&back);
    mcp_error_clear(&err);
}

static void test_from_json_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "[]",
        "\"error\"",
        "{}",
        "{\"message\":\"m\"}",
        "{\"code\":\"-32600\",\"message\":\"m\"}",
        "{\"code\":-32600.0,\"message\":\"m\"}",
        "{\"code\":null,\"message\":\"m\"}",
        "{\"code\":-32600}",
        "{\"code\":-32600,\"message\":7}",
        "{\"code\":-32600,\"message\":null}",
        "{\"code\":2147483648,\"message\":\"m\"}",
        "{\"code\":-2147483649,\"message\":\"m\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *obj = json_from(bad[i]);
        mcp_error_t err = {0};
        print_message("case: %s\n", bad[i]);
        assert_int_equal(mcp_error_from_json(&err, obj), MCP_EPROTO);
        /* err describes the problem. */
        assert_int_equal(err.code, MCP_INTERNAL_ERROR);
        assert_true(err.message[0] != '\0');
        mcp_error_clear(&err);
        json_decref(obj);
    }
    mcp_error_t err = {0};
    assert_int_equal(mcp_error_from_json(&err, NULL), MCP_EPROTO);
    assert_int_equal(mcp_error_from_json(NULL, NULL), MCP_EPROTO);
    mcp_error_clear(&err);
}

/* ---------------------------------------------------------------------- */
/* Builders of the MCP errors with structured data                         */
/* ---------------------------------------------------------------------- */

static void test_header_mismatch(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    json_t *expected = json_string("bar");
    assert_int_equal(mcp_error_header_mismatch(&err, "Mcp-Name", "foo", expected, NULL),
                     MCP_EINVAL);
    assert_int_equal(expected->refcount, 1); /* borrowed */
    json_decref(expected);
    assert_error_json(&err, "{\"code\":-32020,"
                            "\"message\":\"Header mismatch: Mcp-Name does not match the request body\","
                            "\"data\":{\"mismatch\":{\"header\":\"Mcp-Name\",\"received\":\"foo\","
                            "\"expected\":\"bar\"}}}");

    /* A missing header is received:null; the body's value keeps its type. */
    expected = json_integer(42);
    mcp_error_header_mismatch(&err, "Mcp-Param-Count", NULL, expected, NULL);
    json_decref(expected);
    assert_string_equal(err.message, "Header mismatch: Mcp-Param-Count is missing");
    assert_json_equals(err.data, "{\"mismatch\":{\"header\":\"Mcp-Param-Count\","
                                 "\"received\":null,\"expected\":42}}");

    /* No body value: expected:null. A detail replaces the generated sentence. */
    mcp_error_header_mismatch(&err, "MCP-Protocol-Version", "2026-07-28", NULL, "no _meta");
    assert_string_equal(err.message, "Header mismatch: no _meta");
    assert_json_equals(err.data, "{\"mismatch\":{\"header\":\"MCP-Protocol-Version\","
                                 "\"received\":\"2026-07-28\",\"expected\":null}}");

    /* A raw header value that is not UTF-8 cannot be echoed. */
    mcp_error_header_mismatch(&err, "Mcp-Name", "\xff\xfe", NULL, "bad bytes");
    assert_json_equals(err.data, "{\"mismatch\":{\"header\":\"Mcp-Name\","
                                 "\"received\":\"(not valid UTF-8)\",\"expected\":null}}");
    assert_int_equal(err.code, MCP_HEADER_MISMATCH);
    mcp_error_clear(&err);

    assert_int_equal(mcp_error_header_mismatch(NULL, "Mcp-Name", "a", NULL, NULL), MCP_EINVAL);
}

static void test_missing_capability(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    json_t *required = json_pack("{s:{}}", "sampling");
    assert_int_equal(mcp_error_missing_capability(&err, required), MCP_EINVAL);
    assert_ptr_equal(json_object_get(err.data, "requiredCapabilities"), required); /* stolen */
    assert_error_json(&err, "{\"code\":-32021,"
                            "\"message\":\"Server requires the sampling capability for this "
                            "request\",\"data\":{\"requiredCapabilities\":{\"sampling\":{}}}}");

    /* NULL: an empty object, still an object as the schema requires. */
    mcp_error_missing_capability(&err, NULL);
    assert_int_equal(err.code, MCP_MISSING_CLIENT_CAPABILITY);
    assert_json_equals(err.data, "{\"requiredCapabilities\":{}}");
    assert_string_equal(err.message,
                        "Server requires a client capability this request did not declare");
    mcp_error_clear(&err);

    assert_int_equal(mcp_error_missing_capability(NULL, json_object()), MCP_EINVAL);
}

static void test_unsupported_version(void **state)
{
    (void)state;
    static const char *const supported[] = {"2026-07-28", "2025-11-25"};
    mcp_error_t err = {0};
    assert_int_equal(mcp_error_unsupported_version(&err, "1900-01-01", supported, 2),
                     MCP_EINVAL);
    assert_error_json(&err, "{\"code\":-32022,\"message\":\"Unsupported protocol version\","
                            "\"data\":{\"supported\":[\"2026-07-28\",\"2025-11-25\"],"
                            "\"requested\":\"1900-01-01\"}}");

    /* Order is kept; n bounds the list; NULL requested is "". */
    static const char *const reversed[] = {"2025-11-25", "2026-07-28", "ignored"};
    mcp_error_unsupported_version(&err, NULL, reversed, 2);
    assert_json_equals(err.data,
                       "{\"supported\":[\"2025-11-25\",\"2026-07-28\"],\"requested\":\"\"}");

    mcp_error_unsupported_version(&err, "x", NULL, 0);
    assert_json_equals(err.data, "{\"supported\":[],\"requested\":\"x\"}");
    assert_int_equal(err.code, MCP_UNSUPPORTED_PROTOCOL_VERSION);
    mcp_error_clear(&err);

    assert_int_equal(mcp_error_unsupported_version(NULL, "x", supported, 2), MCP_EINVAL);
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

/* Whichever allocation fails, the builders still report their error (maybe
 * without data) and neither crash nor leak. */
static void test_out_of_memory(void **state)
{
    (void)state;
    static const char *const supported[] = {"2026-07-28", "2025-11-25"};
    json_set_alloc_funcs(failing_malloc, free);
    for (long n = 0;; n++) {
        /* Inputs are built with allocation still working. */
        allocations_left = -1;
        json_t *expected = json_string("bar");
        json_t *required = json_pack("{s:{}}", "elicitation");
        mcp_error_t err = {0};

        allocations_left = n;
        assert_int_equal(mcp_error_header_mismatch(&err, "Mcp-Name", "foo", expected, NULL),
                         MCP_EINVAL);
        assert_int_equal(err.code, MCP_HEADER_MISMATCH);
        assert_int_equal(mcp_error_missing_capability(&err, required), MCP_EINVAL);
        assert_int_equal(err.code, MCP_MISSING_CLIENT_CAPABILITY);
        assert_string_equal(err.message,
                            "Server requires the elicitation capability for this request");
        assert_int_equal(mcp_error_unsupported_version(&err, "1.0", supported, 2), MCP_EINVAL);
        assert_int_equal(err.code, MCP_UNSUPPORTED_PROTOCOL_VERSION);
        json_decref(mcp_error_to_json(&err));
        long left = allocations_left;

        allocations_left = -1;
        mcp_error_clear(&err);
        json_decref(expected);
        if (left > 0)
            break; /* every allocation succeeded: all failure points seen */
    }
    json_set_alloc_funcs(malloc, free);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_lib_version),
        cmocka_unit_test(test_code_names),
        cmocka_unit_test(test_code_is_modern),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_set_default_message),
        cmocka_unit_test(test_set_truncates),
        cmocka_unit_test(test_set_truncates_utf8),
        cmocka_unit_test(test_set_from_itself),
        cmocka_unit_test(test_clear),
        cmocka_unit_test(test_move),
        cmocka_unit_test(test_to_json),
        cmocka_unit_test(test_from_json),
        cmocka_unit_test(test_from_json_rejects),
        cmocka_unit_test(test_header_mismatch),
        cmocka_unit_test(test_missing_capability),
        cmocka_unit_test(test_unsupported_version),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
