/* Tests for src/protocol/jsonrpc.c: parsing, classification, limits, builders. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/errors.h"
#include "mcp/jsonrpc.h"
#include "protocol/json_writer.h"
#include "protocol/jsonrpc_internal.h"

#include "nested_json.h"

/* A string literal and its length, so that tables can hold raw bytes and NULs. */
#define RAW(s) s, sizeof(s) - 1

/* Parses JSON text that the test itself supplies (any value allowed). */
static json_t *json_from(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
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

/* Dumps msg (stealing it), compares with the exact expected text. */
static void assert_dumps_to(json_t *msg_new, const char *expected)
{
    assert_non_null(msg_new);
    size_t len = 0;
    char *text = mcp_json_dump(msg_new, &len);
    assert_non_null(text);
    assert_string_equal(text, expected);
    assert_int_equal(len, strlen(expected));
    free(text);
    json_decref(msg_new);
}

/* ---------------------------------------------------------------------- */
/* Parsing: one table for every accept / -32700 / -32600 rule              */
/* ---------------------------------------------------------------------- */

typedef struct parse_case {
    const char *name;
    const char *bytes;
    size_t len;
    int code;            /* 0 = accepted; else the JSON-RPC error code */
    mcp_msg_kind_t kind; /* when accepted */
    const char *id;      /* expected out->id as JSON text; NULL = no id */
} parse_case_t;

#define OK(name, text, kind, id) {name, RAW(text), 0, kind, id}
#define PARSE_ERR(name, text) {name, RAW(text), MCP_PARSE_ERROR, MCP_MSG_INVALID, NULL}
#define INVALID(name, text, id) {name, RAW(text), MCP_INVALID_REQUEST, MCP_MSG_INVALID, id}

static const parse_case_t parse_cases[] = {
    /* Requests */
    OK("request, integer id", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
       MCP_MSG_REQUEST, "1"),
    OK("request, string id, params",
       "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}",
       MCP_MSG_REQUEST, "\"abc\""),
    OK("request, id 0", "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"m\"}", MCP_MSG_REQUEST, "0"),
    OK("request, negative id", "{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"m\"}",
       MCP_MSG_REQUEST, "-7"),
    OK("request, int64 max id",
       "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"m\"}", MCP_MSG_REQUEST,
       "9223372036854775807"),
    OK("request, empty string id", "{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"m\"}",
       MCP_MSG_REQUEST, "\"\""),
    OK("request, string id with NUL", "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"m\"}",
       MCP_MSG_REQUEST, "\"a\\u0000b\""),
    OK("request, empty params", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{}}",
       MCP_MSG_REQUEST, "1"),
    OK("request, unknown members ignored",
       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"extra\":[1,{}],\"x\":null}",
       MCP_MSG_REQUEST, "1"),
    OK("request, any member order", "{\"method\":\"m\",\"id\":1,\"jsonrpc\":\"2.0\"}",
       MCP_MSG_REQUEST, "1"),
    OK("request, surrounding whitespace and CRLF",
       " \t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} \r\n", MCP_MSG_REQUEST, "1"),
    OK("request, \\u0000 inside a params string",
       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"x\\u0000y\"}}",
       MCP_MSG_REQUEST, "1"),
    OK("request, UTF-8 in params",
       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"h\xc3\xa9 \xf0\x9f\x98\x80\"}}",
       MCP_MSG_REQUEST, "1"),
    /* Notifications */
    OK("notification", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}",
       MCP_MSG_NOTIFICATION, NULL),
    OK("notification, params",
       "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}",
       MCP_MSG_NOTIFICATION, NULL),
    /* Results */
    OK("result, integer id", "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}", MCP_MSG_RESULT, "5"),
    OK("result, string id",
       "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"result\":{\"resultType\":\"complete\"}}",
       MCP_MSG_RESULT, "\"r-1\""),
    /* Errors */
    OK("error, integer id",
       "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}",
       MCP_MSG_ERROR, "1"),
    OK("error, string id, data",
       "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32022,\"message\":\"m\",\"data\":[1]}}",
       MCP_MSG_ERROR, "\"x\""),
    OK("error, null id",
       "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}",
       MCP_MSG_ERROR, NULL),
    OK("error, no id", "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"\"}}",
       MCP_MSG_ERROR, NULL),

    /* -32700: not exactly one JSON value */
    PARSE_ERR("empty input", ""),
    PARSE_ERR("only whitespace", " \r\n"),
    PARSE_ERR("truncated object", "{\"jsonrpc\":\"2.0\""),
    PARSE_ERR("not JSON", "hello"),
    PARSE_ERR("trailing garbage", "{\"jsonrpc\":\"2.0\",\"method\":\"m\"} x"),
    PARSE_ERR("two values", "{}{}"),
    PARSE_ERR("two messages on one line",
              "{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}"),
    PARSE_ERR("trailing NUL byte", "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\0"),
    PARSE_ERR("bad UTF-8: C3 28", "{\"jsonrpc\":\"2.0\",\"method\":\"\xc3\x28\"}"),
    PARSE_ERR("bad UTF-8: FF", "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}"),
    PARSE_ERR("bad UTF-8: truncated sequence", "{\"jsonrpc\":\"2.0\",\"method\":\"\xe2\x82\"}"),
    PARSE_ERR("bad UTF-8: overlong", "{\"jsonrpc\":\"2.0\",\"method\":\"\xc0\xaf\"}"),
    PARSE_ERR("bad UTF-8: encoded surrogate", "{\"jsonrpc\":\"2.0\",\"method\":\"\xed\xa0\x80\"}"),
    PARSE_ERR("bad UTF-8 in a key", "{\"\xff\":1}"),
    PARSE_ERR("lone surrogate escape", "{\"jsonrpc\":\"2.0\",\"method\":\"\\ud800\"}"),
    PARSE_ERR("UTF-8 BOM", "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"method\":\"m\"}"),
    PARSE_ERR("raw newline in a string", "{\"jsonrpc\":\"2.0\",\"method\":\"a\nb\"}"),
    PARSE_ERR("raw control character in a string", "{\"jsonrpc\":\"2.0\",\"method\":\"a\x01\"}"),
    PARSE_ERR("duplicate method (smuggling)",
              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"}"),
    PARSE_ERR("duplicate id", "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"m\"}"),
    PARSE_ERR("duplicate key in params",
              "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":{\"b\":1,\"b\":1}}}"),
    PARSE_ERR("\\u0000 in a key", "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\\u0000\":1}}"),
    PARSE_ERR("NaN", "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"n\":NaN}}"),
    PARSE_ERR("leading zero", "{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"m\"}"),
    PARSE_ERR("trailing comma", "{\"jsonrpc\":\"2.0\",\"method\":\"m\",}"),
    PARSE_ERR("single quotes", "{'jsonrpc':'2.0','method':'m'}"),
    PARSE_ERR("comment", "{\"jsonrpc\":\"2.0\",\"method\":\"m\"} // hi"),

    /* -32600: JSON, but not one MCP JSON-RPC message */
    /* Numbers beyond 64-bit integers and doubles are valid JSON that this
     * side cannot hold: -32600, with the id when it is not the number. */
    INVALID("integer overflow in the id",
            "{\"jsonrpc\":\"2.0\",\"id\":9223372036854775808,\"method\":\"m\"}", NULL),
    INVALID("integer overflow in params",
            "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"n\":-99999999999999999999}}",
            NULL),
    INVALID("integer overflow in params, id kept",
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"m\",\"params\":{\"n\":18446744073709551616}}",
            "7"),
    INVALID("real overflow, id kept",
            "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"n\":[1e400]},\"id\":\"r\"}",
            "\"r\""),
    INVALID("real overflow in a result, id kept",
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"n\":-1e999}}", "3"),
    INVALID("overflow and a batch", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"x\":1e400}]",
            NULL),
    INVALID("batch", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}]", NULL),
    INVALID("empty batch", "[]", NULL),
    INVALID("number", "1", NULL),
    INVALID("string", "\"x\"", NULL),
    INVALID("null", "null", NULL),
    INVALID("true", "true", NULL),
    INVALID("empty object", "{}", NULL),
    INVALID("jsonrpc missing", "{\"id\":1,\"method\":\"m\"}", "1"),
    INVALID("jsonrpc 1.0", "{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"m\"}", "7"),
    INVALID("jsonrpc as a number", "{\"jsonrpc\":2.0,\"id\":1,\"method\":\"m\"}", "1"),
    INVALID("jsonrpc with a trailing space", "{\"jsonrpc\":\"2.0 \",\"method\":\"m\"}", NULL),
    INVALID("jsonrpc with a NUL", "{\"jsonrpc\":\"2.0\\u0000\",\"method\":\"m\"}", NULL),
    INVALID("request id null", "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}", NULL),
    INVALID("request id real", "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}", NULL),
    INVALID("request id integral real", "{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"m\"}", NULL),
    INVALID("request id bool", "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}", NULL),
    INVALID("request id object", "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}", NULL),
    INVALID("request id array", "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"m\"}", NULL),
    INVALID("method a number", "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":1}", "\"s\""),
    INVALID("method null", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":null}", "2"),
    INVALID("method with NUL", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"a\\u0000b\"}", "3"),
    INVALID("notification method with NUL", "{\"jsonrpc\":\"2.0\",\"method\":\"m\\u0000\"}",
            NULL),
    INVALID("params empty array (positional)",
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"m\",\"params\":[]}", "4"),
    INVALID("params array", "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[1]}", NULL),
    INVALID("params string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":\"x\"}",
            "1"),
    INVALID("params null", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":null}", "1"),
    INVALID("params number", "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":1}", NULL),
    INVALID("method and result", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"result\":{}}",
            "1"),
    INVALID("method and error",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"error\":{\"code\":1,\"message\":\"\"}}",
            "1"),
    INVALID("result and error",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,\"message\":\"\"}}",
            "1"),
    INVALID("id only", "{\"jsonrpc\":\"2.0\",\"id\":1}", "1"),
    INVALID("jsonrpc only", "{\"jsonrpc\":\"2.0\"}", NULL),
    INVALID("params only", "{\"jsonrpc\":\"2.0\",\"params\":{}}", NULL),
    INVALID("result without id", "{\"jsonrpc\":\"2.0\",\"result\":{}}", NULL),
    INVALID("result with null id", "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}", NULL),
    INVALID("result with real id", "{\"jsonrpc\":\"2.0\",\"id\":2.5,\"result\":{}}", NULL),
    INVALID("result a number", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1}", "1"),
    INVALID("result an array", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[]}", "1"),
    INVALID("result null", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}", "1"),
    INVALID("error a string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"boom\"}", "1"),
    INVALID("error without code", "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"message\":\"m\"}}",
            "1"),
    INVALID("error code a string",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"1\",\"message\":\"m\"}}", "1"),
    INVALID("error code a real",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32600.0,\"message\":\"m\"}}", "1"),
    INVALID("error without message", "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1}}", "1"),
    INVALID("error message a number",
            "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":1,\"message\":2}}", NULL),
    INVALID("error with a bool id",
            "{\"jsonrpc\":\"2.0\",\"id\":false,\"error\":{\"code\":1,\"message\":\"m\"}}", NULL),
};

static void check_parse_case(const parse_case_t *c)
{
    mcp_message_t msg;
    mcp_error_t err = {0};
    print_message("case: %s\n", c->name);
    int rc = mcp_jsonrpc_parse(c->bytes, c->len, NULL, &msg, &err);

    if (c->code == 0) {
        if (rc != MCP_OK)
            fail_msg("%s: rejected with %d %s", c->name, err.code, err.message);
        assert_int_equal(msg.kind, c->kind);
        assert_true(json_is_object(msg.root));
        json_t *root = msg.root;
        switch (c->kind) {
        case MCP_MSG_REQUEST:
        case MCP_MSG_NOTIFICATION:
            assert_string_equal(msg.method,
                                json_string_value(json_object_get(root, "method")));
            assert_ptr_equal(msg.params, json_object_get(root, "params"));
            assert_null(msg.result);
            assert_null(msg.error);
            break;
        case MCP_MSG_RESULT:
            assert_ptr_equal(msg.result, json_object_get(root, "result"));
            assert_null(msg.method);
            assert_null(msg.error);
            break;
        case MCP_MSG_ERROR:
            assert_ptr_equal(msg.error, json_object_get(root, "error"));
            assert_null(msg.method);
            assert_null(msg.result);
            break;
        default:
            fail();
        }
    } else {
        if (rc == MCP_OK)
            fail_msg("%s: accepted, expected %d", c->name, c->code);
        assert_int_equal(rc, MCP_EINVAL);
        assert_int_equal(err.code, c->code);
        assert_true(err.message[0] != '\0');
        assert_int_equal(msg.kind, MCP_MSG_INVALID);
        assert_null(msg.method);
        assert_null(msg.params);
        assert_null(msg.result);
        assert_null(msg.error);
        /* The root is kept exactly when an id was read, for the response. */
        if (c->id)
            assert_non_null(msg.root);
        else
            assert_null(msg.root);
        if (c->code == MCP_PARSE_ERROR) {
            assert_true(json_is_integer(json_object_get(err.data, "line")));
            assert_true(json_is_integer(json_object_get(err.data, "column")));
            assert_true(json_is_integer(json_object_get(err.data, "position")));
        } else {
            assert_null(err.data);
        }
    }

    if (c->id)
        assert_json_equals(msg.id, c->id);
    else
        assert_null(msg.id);

    mcp_message_clear(&msg);
    assert_null(msg.root);
    mcp_error_clear(&err);
}

static void test_parse_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++)
        check_parse_case(&parse_cases[i]);
}

/* The position in err->data is jansson's, passed through unchanged. */
static void test_parse_error_position(void **state)
{
    (void)state;
    static const char text[] = "{\"jsonrpc\":\"2.0\",\n \"jsonrpc\":\"2.0\"}";
    mcp_message_t msg;
    mcp_error_t err = {0};
    assert_int_equal(mcp_jsonrpc_parse(text, strlen(text), NULL, &msg, &err), MCP_EINVAL);
    assert_int_equal(err.code, MCP_PARSE_ERROR);
    assert_json_equals(err.data, "{\"line\":2,\"column\":10,\"position\":28}");
    assert_non_null(strstr(err.message, "duplicate"));
    mcp_message_clear(&msg);
    mcp_error_clear(&err);
}

/* Answers with the code of a parse under `limits`; 0 when accepted. */
static int parse_code(const char *buf, size_t len, const mcp_parse_limits_t *limits)
{
    mcp_message_t msg;
    mcp_error_t err = {0};
    int rc = mcp_jsonrpc_parse(buf, len, limits, &msg, &err);
    int code = rc == MCP_OK ? 0 : err.code;
    if (rc != MCP_OK)
        assert_int_equal(rc, MCP_EINVAL);
    mcp_message_clear(&msg);
    mcp_error_clear(&err);
    return code;
}

static void test_parse_size_limit(void **state)
{
    (void)state;
    static const char text[] = "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}";
    size_t n = strlen(text);
    mcp_parse_limits_t at = {.max_bytes = n}, under = {.max_bytes = n - 1};
    assert_int_equal(parse_code(text, n, &at), 0);
    assert_int_equal(parse_code(text, n, &under), MCP_INVALID_REQUEST);
    /* Size is checked first: even bytes that are not JSON get -32600. */
    assert_int_equal(parse_code("xxxx", 4, &(mcp_parse_limits_t){.max_bytes = 3}),
                     MCP_INVALID_REQUEST);
}

/* The default limit, with trailing whitespace as filler: exactly the limit is
 * accepted, one more byte is not. */
static void test_parse_default_size_limit(void **state)
{
    (void)state;
    static const char text[] = "{\"jsonrpc\":\"2.0\",\"method\":\"m\"}";
    size_t max = MCP_DEFAULT_MAX_MESSAGE_BYTES;
    char *buf = malloc(max + 1);
    assert_non_null(buf);
    memset(buf, ' ', max + 1);
    memcpy(buf, text, strlen(text));
    assert_int_equal(parse_code(buf, max, NULL), 0);
    assert_int_equal(parse_code(buf, max + 1, NULL), MCP_INVALID_REQUEST);
    /* Zero and negative limits mean the defaults. */
    assert_int_equal(parse_code(buf, max, &(mcp_parse_limits_t){0}), 0);
    assert_int_equal(parse_code(buf, max + 1, &(mcp_parse_limits_t){0}), MCP_INVALID_REQUEST);
    free(buf);
}

/* A request whose params hold `depth - 1` nested objects, so the message as a
 * whole nests exactly `depth` deep. Returns a malloc'd string. */
static char *nested_request(int depth)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":";
    size_t cap = sizeof head + (size_t)depth * 6 + 2;
    char *s = malloc(cap);
    assert_non_null(s);
    strcpy(s, head);
    for (int i = 1; i < depth - 1; i++)
        strcat(s, "{\"a\":");
    strcat(s, "{}");
    for (int i = 1; i < depth - 1; i++)
        strcat(s, "}");
    strcat(s, "}");
    return s;
}

static void test_parse_depth_limit(void **state)
{
    (void)state;
    char *at = nested_request(MCP_DEFAULT_MAX_DEPTH);
    char *over = nested_request(MCP_DEFAULT_MAX_DEPTH + 1);
    assert_int_equal(mcp_json_depth(at, strlen(at), INT_MAX), MCP_DEFAULT_MAX_DEPTH);
    assert_int_equal(parse_code(at, strlen(at), NULL), 0);
    assert_int_equal(parse_code(over, strlen(over), NULL), MCP_INVALID_REQUEST);
    mcp_parse_limits_t wider = {.max_depth = MCP_DEFAULT_MAX_DEPTH + 1};
    assert_int_equal(parse_code(over, strlen(over), &wider), 0);
    /* A negative limit means the default. */
    mcp_parse_limits_t negative = {.max_depth = -1};
    assert_int_equal(parse_code(at, strlen(at), &negative), 0);
    assert_int_equal(parse_code(over, strlen(over), &negative), MCP_INVALID_REQUEST);
    free(at);
    free(over);

    mcp_parse_limits_t three = {.max_depth = 3};
    char *three_deep = nested_request(3), *four_deep = nested_request(4);
    assert_int_equal(parse_code(three_deep, strlen(three_deep), &three), 0);
    assert_int_equal(parse_code(four_deep, strlen(four_deep), &three), MCP_INVALID_REQUEST);
    free(three_deep);
    free(four_deep);

    /* Checked while parsing: too deep wins over invalid JSON after it... */
    assert_int_equal(parse_code(RAW("[[[[ not json"), &three), MCP_INVALID_REQUEST);
    assert_int_equal(parse_code(RAW("{\"a\":[[{}]],\"b\":[1,]}"), &three), MCP_INVALID_REQUEST);
    /* ...and invalid JSON before it wins over too deep. */
    assert_int_equal(parse_code(RAW("{\"a\" 1,\"b\":[[[[]]]]}"), &three), MCP_PARSE_ERROR);
    assert_int_equal(parse_code(RAW("[1,,[[[[]]]]]"), &three), MCP_PARSE_ERROR);
    assert_int_equal(parse_code(RAW("{} [[[[]]]]"), &three), MCP_PARSE_ERROR);
}

/* The limit's own error, exactly at the limit and one past it, and the
 * reader's error ("too deep" too) where the reader's limit of 2048 values,
 * scalars included, comes first. */
static void test_parse_depth_errors(void **state)
{
    (void)state;
    static const struct {
        int max_depth;
        size_t levels;
        const char *inner;
        const char *message; /* NULL: accepted (then rejected as a batch) */
    } rows[] = {
        {3, 3, "", NULL},
        {3, 4, "", "The message nests deeper than the limit of 3"},
        {3, 3, "{}", "The message nests deeper than the limit of 3"},
        {3, 3, "1", NULL}, /* scalars do not count */
        {1, 1, "", NULL},
        {1, 2, "", "The message nests deeper than the limit of 1"},
        {2048, 2048, "", NULL},
        {2048, 2049, "", "The message nests deeper than the limit of 2048"},
        {2048, 2048, "1", "The message nests too deep: maximum parsing depth reached near '1'"},
        {2049, 2049, "", "The message nests too deep: maximum parsing depth reached near '['"},
        {5000, 3000, "", "The message nests too deep: maximum parsing depth reached near '['"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        size_t len;
        char *text = nested_arrays(rows[i].levels, rows[i].inner, &len);
        mcp_parse_limits_t limits = {.max_depth = rows[i].max_depth};
        mcp_message_t msg;
        mcp_error_t err = {0};
        assert_int_equal(mcp_jsonrpc_parse(text, len, &limits, &msg, &err), MCP_EINVAL);
        assert_int_equal(err.code, MCP_INVALID_REQUEST);
        if (rows[i].message) {
            assert_string_equal(err.message, rows[i].message);
        } else if (strstr(err.message, "deep")) {
            fail_msg("%zu levels around \"%s\", limit %d: %s", rows[i].levels, rows[i].inner,
                     rows[i].max_depth, err.message);
        }
        mcp_message_clear(&msg);
        mcp_error_clear(&err);
        free(text);
    }
}

/* Above jansson's own limit (2048) its error is still "too deep", -32600. */
static void test_parse_depth_beyond_jansson(void **state)
{
    (void)state;
    size_t n = 3000;
    char *buf = malloc(n);
    assert_non_null(buf);
    memset(buf, '[', n);
    mcp_parse_limits_t huge = {.max_depth = 5000};
    assert_int_equal(parse_code(buf, n, &huge), MCP_INVALID_REQUEST);
    free(buf);
}

/* Brackets inside strings never count, however the string is escaped. */
static void test_parse_depth_ignores_strings(void **state)
{
    (void)state;
    mcp_parse_limits_t two = {.max_depth = 2};
    assert_int_equal(
        parse_code(RAW("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":\"[[[{{{\"}}"), &two),
        0);
    assert_int_equal(
        parse_code(RAW("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":\"\\\"[[[{{{\"}}"),
                   &two),
        0);
    assert_int_equal(
        parse_code(RAW("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"[[[\":\"\\\\\"}}"),
                   &two),
        0);
}

static void test_parse_null_buffer(void **state)
{
    (void)state;
    mcp_message_t msg;
    mcp_error_t err = {0};
    assert_int_equal(mcp_jsonrpc_parse(NULL, 0, NULL, &msg, &err), MCP_EINVAL);
    assert_int_equal(err.code, MCP_PARSE_ERROR);
    mcp_message_clear(&msg);
    assert_int_equal(mcp_jsonrpc_parse(NULL, 5, NULL, &msg, &err), MCP_EINVAL);
    assert_int_equal(err.code, 0);
    assert_null(msg.root);
    mcp_message_clear(&msg);
    mcp_error_clear(&err);
}

/* err is optional: failures without it must neither crash nor leak. */
static void test_parse_without_error_out(void **state)
{
    (void)state;
    mcp_message_t msg;
    assert_int_equal(mcp_jsonrpc_parse(RAW("{\"a\":1,\"a\":2}"), NULL, &msg, NULL), MCP_EINVAL);
    mcp_message_clear(&msg);
    assert_int_equal(mcp_jsonrpc_parse(RAW("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}"), NULL,
                                       &msg, NULL),
                     MCP_EINVAL);
    assert_json_equals(msg.id, "1");
    mcp_message_clear(&msg);
    mcp_message_clear(NULL);
}

/* A stale *out from an earlier call is overwritten, not read. */
static void test_parse_overwrites_out(void **state)
{
    (void)state;
    mcp_message_t msg;
    memset(&msg, 0xA5, sizeof msg);
    assert_int_equal(mcp_jsonrpc_parse(RAW("[]"), NULL, &msg, NULL), MCP_EINVAL);
    assert_null(msg.root);
    assert_null(msg.id);
    mcp_message_clear(&msg);
}

/* ---------------------------------------------------------------------- */
/* mcp_jsonrpc_from_json                                                   */
/* ---------------------------------------------------------------------- */

/* Same answers as parsing, for every case that parses as JSON. */
static void test_from_json_matches_parse(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
        const parse_case_t *c = &parse_cases[i];
        if (c->code == MCP_PARSE_ERROR)
            continue;
        json_error_t jerr;
        json_t *root = json_loadb(c->bytes, c->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        if (!root && json_error_code(&jerr) == json_error_numeric_overflow)
            continue; /* valid JSON with a number no json_t can hold */
        assert_non_null(root);
        mcp_message_t msg;
        mcp_error_t err = {0};
        int rc = mcp_jsonrpc_from_json(root, &msg, &err);
        print_message("case: %s\n", c->name);
        assert_int_equal(rc, c->code ? MCP_EINVAL : MCP_OK);
        assert_int_equal(err.code, c->code);
        assert_int_equal(msg.kind, c->kind);
        if (c->id)
            assert_json_equals(msg.id, c->id);
        else
            assert_null(msg.id);
        if (msg.root)
            assert_ptr_equal(msg.root, root);
        mcp_message_clear(&msg);
        mcp_error_clear(&err);
        /* The caller's reference survives the message (true, false and
         * null are jansson singletons without a count). */
        if (!json_is_null(root) && !json_is_boolean(root))
            assert_int_equal(root->refcount, 1);
        json_decref(root);
    }
}

static void test_from_json_null(void **state)
{
    (void)state;
    mcp_message_t msg;
    mcp_error_t err = {0};
    assert_int_equal(mcp_jsonrpc_from_json(NULL, &msg, &err), MCP_EINVAL);
    assert_int_equal(err.code, MCP_INVALID_REQUEST);
    assert_null(msg.root);
    mcp_message_clear(&msg);
    mcp_error_clear(&err);
}

/* ---------------------------------------------------------------------- */
/* mcp_json_depth                                                          */
/* ---------------------------------------------------------------------- */

typedef struct depth_case {
    const char *bytes;
    size_t len;
    int max_depth;
    int expected;
} depth_case_t;

static const depth_case_t depth_cases[] = {
    {RAW(""), 10, 0},
    {RAW("1"), 10, 0},
    {RAW("\"x\""), 10, 0},
    {RAW("[]"), 10, 1},
    {RAW("{}"), 10, 1},
    {RAW("[[]]"), 10, 2},
    {RAW("[[],[],{}]"), 10, 2},
    {RAW("{\"a\":[{}]}"), 10, 3},
    {RAW("[\"[[[\"]"), 10, 1},                 /* brackets in a string */
    {RAW("[\"\\\"[[[\"]"), 10, 1},             /* escaped quote keeps the string open */
    {RAW("[\"\\\\\",[[]]]"), 10, 3},           /* escaped backslash, then the string ends */
    {RAW("[\"\\u005b\\u007b\"]"), 10, 1},      /* escaped brackets are still text */
    {RAW("{\"[{\":{\"}]\":[]}}"), 10, 3},      /* brackets in keys */
    {RAW("\"[[[ unterminated"), 10, 0},
    {RAW("]]]["), 10, 1},                      /* never below zero */
    {RAW("[][][]"), 10, 1},
    {RAW("[[[[["), 2, 3},                      /* stops early at max + 1 */
    {RAW("[[["), 3, 3},                        /* exactly the limit */
    {RAW("[[[[\0[[[["), 100, 8},               /* a raw NUL is just a byte */
    {RAW("[[["), 0, 1},
    {RAW("[[["), -5, 1},                       /* negative counts as 0 */
    {RAW("[[["), INT_MAX, 3},                  /* no overflow at the top */
};

static void test_depth_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof depth_cases / sizeof depth_cases[0]; i++) {
        const depth_case_t *c = &depth_cases[i];
        int got = mcp_json_depth(c->bytes, c->len, c->max_depth);
        if (got != c->expected)
            fail_msg("depth of %.*s (max %d): got %d, expected %d", (int)c->len, c->bytes,
                     c->max_depth, got, c->expected);
    }
    assert_int_equal(mcp_json_depth(NULL, 5, 10), 0);
    /* The length bounds the scan: the brackets after it are not read. */
    assert_int_equal(mcp_json_depth("[[[[", 2, 10), 2);
}

/* ---------------------------------------------------------------------- */
/* Builders and dump                                                       */
/* ---------------------------------------------------------------------- */

static void test_build_request(void **state)
{
    (void)state;
    json_t *one = json_integer(1), *sid = json_string("a-1");
    assert_dumps_to(mcp_jsonrpc_request(one, "tools/list", json_pack("{s:s}", "cursor", "c")),
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\","
                    "\"params\":{\"cursor\":\"c\"}}");
    assert_dumps_to(mcp_jsonrpc_request(sid, "server/discover", NULL),
                    "{\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"method\":\"server/discover\"}");
    /* The id is borrowed. */
    assert_int_equal(one->refcount, 1);
    assert_int_equal(sid->refcount, 1);

    /* Arguments that would not parse back: NULL, and params_new is freed
     * (LeakSanitizer checks). */
    json_t *real = json_real(1.0), *null = json_null();
    assert_null(mcp_jsonrpc_request(NULL, "m", json_object()));
    assert_null(mcp_jsonrpc_request(real, "m", json_object()));
    assert_null(mcp_jsonrpc_request(null, "m", NULL));
    assert_null(mcp_jsonrpc_request(one, NULL, json_object()));
    assert_null(mcp_jsonrpc_request(one, "m", json_array()));
    assert_null(mcp_jsonrpc_request(one, "bad \xff", json_object()));
    json_decref(real);
    json_decref(one);
    json_decref(sid);
}

static void test_build_notification(void **state)
{
    (void)state;
    assert_dumps_to(mcp_jsonrpc_notification("notifications/cancelled", NULL),
                    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}");
    assert_dumps_to(
        mcp_jsonrpc_notification("notifications/progress",
                                 json_pack("{s:s,s:i}", "progressToken", "t", "progress", 5)),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
        "\"params\":{\"progressToken\":\"t\",\"progress\":5}}");
    assert_null(mcp_jsonrpc_notification(NULL, json_object()));
    assert_null(mcp_jsonrpc_notification("m", json_string("x")));
    assert_null(mcp_jsonrpc_notification("\xc3\x28", NULL));
}

static void test_build_result(void **state)
{
    (void)state;
    json_t *id = json_integer(-3);
    assert_dumps_to(mcp_jsonrpc_result(id, json_pack("{s:s}", "resultType", "complete")),
                    "{\"jsonrpc\":\"2.0\",\"id\":-3,\"result\":{\"resultType\":\"complete\"}}");
    assert_null(mcp_jsonrpc_result(id, NULL));
    assert_null(mcp_jsonrpc_result(id, json_integer(1)));
    assert_null(mcp_jsonrpc_result(NULL, json_object()));
    assert_null(mcp_jsonrpc_result(json_null(), json_object()));
    assert_int_equal(id->refcount, 1);
    json_decref(id);
}

/* json_write_result writes what mcp_jsonrpc_result + mcp_json_dump write,
 * and refuses what the builder refuses. */
static void test_write_result(void **state)
{
    (void)state;
    json_t *ids[] = {json_integer(-3), json_integer(INT64_MAX), json_string("q\"\n\u00e9"),
                     json_stringn("a\0b", 3)};
    json_t *result = json_pack("{s:[{s:s,s:s}],s:s,s:{s:{s:s}},s:f,s:b,s:n}", "content", "type",
                               "text", "text", "h\u00e9llo \"\\ \t", "resultType", "complete",
                               "_meta", "io.modelcontextprotocol/serverInfo", "name", "x", "r",
                               2.0, "t", 1, "z");
    assert_non_null(result);
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        size_t direct_len, built_len;
        char *direct = json_write_result(ids[i], result, &direct_len);
        json_t *built = mcp_jsonrpc_result(ids[i], json_incref(result));
        char *text = mcp_json_dump(built, &built_len);
        assert_non_null(direct);
        assert_non_null(text);
        assert_int_equal(direct_len, built_len);
        assert_memory_equal(direct, text, built_len);
        assert_int_equal(direct[direct_len], '\0');
        free(direct);
        free(text);
        json_decref(built);
    }
    assert_null(json_write_result(NULL, result, NULL));
    json_t *null = json_null(), *real = json_real(1.0), *array = json_array();
    assert_null(json_write_result(null, result, NULL));
    assert_null(json_write_result(real, result, NULL));
    assert_null(json_write_result(ids[0], array, NULL));
    assert_null(json_write_result(ids[0], NULL, NULL));
    assert_int_equal(result->refcount, 1);
    json_decref(null);
    json_decref(real);
    json_decref(array);
    json_decref(result);
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        json_decref(ids[i]);
}

/* A result whose array's elements are pasted from their texts is written
 * byte for byte as the same result written from the tree; the array may
 * be empty, and a splice naming no node pastes nothing. */
static void test_write_result_spliced(void **state)
{
    (void)state;
    json_t *id = json_integer(9);
    for (int n = 0; n <= 3; n++) {
        json_t *items = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(items, json_pack("{s:s, s:{s:[i,f]}}", "name", "t\"\n\u00e9",
                                                   "inputSchema", "k", i, 0.5));
        json_t *result = json_pack("{s:O, s:s, s:s}", "tools", items, "nextCursor", "c",
                                   "resultType", "complete");
        json_text_t texts[3];
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            texts[i].text = json_write(json_array_get(items, (size_t)i), JSON_WRITE_COMPACT,
                                       &texts[i].len);
            assert_non_null(texts[i].text);
            total += texts[i].len;
        }
        json_splice_t splice = {items, texts, (size_t)n, total};
        size_t plain_len, spliced_len;
        char *plain = json_write_result(id, result, &plain_len);
        char *spliced = json_write_result_spliced(id, result, &splice, &spliced_len);
        assert_non_null(plain);
        assert_non_null(spliced);
        assert_int_equal(spliced_len, plain_len);
        assert_string_equal(spliced, plain);
        json_splice_t none = {0};
        char *unspliced = json_write_result_spliced(id, result, &none, NULL);
        assert_string_equal(unspliced, plain);
        free(unspliced);
        free(plain);
        free(spliced);
        for (int i = 0; i < n; i++)
            free((char *)texts[i].text);
        json_decref(result);
        json_decref(items);
    }
    json_decref(id);
}

/* Strings are escaped wherever the byte to escape falls, whole words of
 * plain bytes before it or not (the writer looks at eight at a time):
 * compared with escaping one byte at a time, for each special byte at
 * each position of strings up to 24 bytes long. */
static void test_escapes_at_every_position(void **state)
{
    (void)state;
    static const char specials[] = {'"', '\\', '\x01', '\x1f', '\n', ' ', '\x7f', '!', '#', '[',
                                    ']', '\xc3'};
    for (size_t len = 1; len <= 24; len++) {
        for (size_t at = 0; at < len; at++) {
            for (size_t k = 0; k < sizeof specials; k++) {
                char raw[32];
                memset(raw, 'a', len);
                raw[at] = specials[k];
                if (specials[k] == '\xc3') { /* keep it UTF-8: \u00e9 */
                    if (at + 1 == len)
                        continue;
                    raw[at + 1] = '\xa9';
                }
                char expected[256];
                size_t e = 0;
                expected[e++] = '"';
                for (size_t i = 0; i < len; i++) {
                    unsigned char c = (unsigned char)raw[i];
                    if (c == '"' || c == '\\') {
                        expected[e++] = '\\';
                        expected[e++] = (char)c;
                    } else if (c == '\n') {
                        expected[e++] = '\\';
                        expected[e++] = 'n';
                    } else if (c < 0x20) {
                        e += (size_t)snprintf(expected + e, sizeof expected - e, "\\u%04x", c);
                    } else {
                        expected[e++] = (char)c;
                    }
                }
                expected[e++] = '"';
                expected[e] = '\0';
                json_t *v = json_stringn(raw, len);
                assert_non_null(v);
                char *text = json_write(v, JSON_WRITE_COMPACT, NULL);
                assert_non_null(text);
                assert_string_equal(text, expected);
                free(text);
                json_decref(v);
            }
        }
    }
}

/* Integers are written in decimal, the sign only when negative, down to
 * the extremes of int64. */
static void test_dump_integers(void **state)
{
    (void)state;
    static const struct {
        json_int_t value;
        const char *text;
    } cases[] = {
        {0, "0"}, {7, "7"}, {-7, "-7"}, {10, "10"}, {-10, "-10"}, {1234567890, "1234567890"},
        {INT64_MAX, "9223372036854775807"}, {INT64_MIN, "-9223372036854775808"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = json_integer(cases[i].value);
        size_t len;
        char *text = mcp_json_dump(v, &len);
        assert_non_null(text);
        assert_string_equal(text, cases[i].text);
        assert_int_equal(len, strlen(cases[i].text));
        free(text);
        json_decref(v);
    }
}

static void test_build_error(void **state)
{
    (void)state;
    json_t *id = json_string("q"), *null = json_null(), *real = json_real(2.0);
    assert_dumps_to(mcp_jsonrpc_error(id, MCP_METHOD_NOT_FOUND, "No such method", NULL),
                    "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"error\":{\"code\":-32601,"
                    "\"message\":\"No such method\"}}");
    /* NULL message: the code's name. Data is stolen. */
    assert_dumps_to(mcp_jsonrpc_error(id, MCP_INVALID_PARAMS, NULL, json_pack("{s:b}", "x", 1)),
                    "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"error\":{\"code\":-32602,"
                    "\"message\":\"Invalid params\",\"data\":{\"x\":true}}}");
    /* Unreadable id: the member is omitted, for NULL and JSON null alike. */
    assert_dumps_to(mcp_jsonrpc_error(NULL, MCP_PARSE_ERROR, NULL, NULL),
                    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}");
    assert_dumps_to(mcp_jsonrpc_error(null, MCP_INVALID_REQUEST, "bad", NULL),
                    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"bad\"}}");
    /* Rejected arguments free data_new. */
    assert_null(mcp_jsonrpc_error(real, 1, "m", json_object()));
    assert_null(mcp_jsonrpc_error(id, 1, "bad \xff", json_object()));
    assert_int_equal(id->refcount, 1);
    json_decref(id);
    json_decref(real);
}

static void test_build_error_from(void **state)
{
    (void)state;
    json_t *id = json_integer(9);
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, MCP_UNSUPPORTED_PROTOCOL_VERSION,
                  json_pack("{s:[s],s:s}", "supported", "2026-07-28", "requested", "1.0"),
                  "Unsupported protocol version");
    assert_dumps_to(mcp_jsonrpc_error_from(id, &err),
                    "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32022,"
                    "\"message\":\"Unsupported protocol version\","
                    "\"data\":{\"supported\":[\"2026-07-28\"],\"requested\":\"1.0\"}}}");
    /* The error keeps its data. */
    assert_non_null(err.data);
    mcp_error_clear(&err);

    /* Code 0 (a local failure) becomes -32603 with its message. */
    mcp_error_set(&err, MCP_EIO, 0, NULL, "disk on fire");
    assert_dumps_to(mcp_jsonrpc_error_from(id, &err),
                    "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32603,"
                    "\"message\":\"disk on fire\"}}");
    mcp_error_clear(&err);

    assert_dumps_to(mcp_jsonrpc_error_from(NULL, NULL),
                    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32603,\"message\":\"Internal error\"}}");
    json_decref(id);
}

static void test_dump(void **state)
{
    (void)state;
    /* Compact, one line, UTF-8 as is; control characters and NUL escaped. */
    json_t *msg = json_from("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":"
                            "{\"s\":\"h\xc3\xa9\\n\\u0000/\\t\",\"e\":\"\xf0\x9f\x98\x80\"}}");
    assert_dumps_to(msg, "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":"
                         "{\"s\":\"h\xc3\xa9\\n\\u0000/\\t\",\"e\":\"\xf0\x9f\x98\x80\"}}");

    size_t len = 123;
    assert_null(mcp_json_dump(NULL, &len));
    assert_int_equal(len, 0);
    assert_null(mcp_json_dump(NULL, NULL));

    /* Any value dumps, not only objects. */
    json_t *five = json_integer(5);
    char *text = mcp_json_dump(five, NULL);
    assert_string_equal(text, "5");
    free(text);
    json_decref(five);
}

/* Every accepted message survives dump + parse with the same kind and id. */
static void test_round_trip(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
        const parse_case_t *c = &parse_cases[i];
        if (c->code)
            continue;
        mcp_message_t a, b;
        assert_int_equal(mcp_jsonrpc_parse(c->bytes, c->len, NULL, &a, NULL), MCP_OK);
        size_t len;
        char *text = mcp_json_dump(a.root, &len);
        assert_non_null(text);
        assert_null(memchr(text, '\n', len));
        assert_int_equal(mcp_jsonrpc_parse(text, len, NULL, &b, NULL), MCP_OK);
        assert_int_equal(a.kind, b.kind);
        assert_true(json_equal(a.root, b.root));
        free(text);
        mcp_message_clear(&a);
        mcp_message_clear(&b);
    }
}

/* What the builders make parses back as the kind they name. */
static void test_builders_parse_back(void **state)
{
    (void)state;
    json_t *id = json_integer(1);
    struct {
        json_t *msg;
        mcp_msg_kind_t kind;
    } built[] = {
        {mcp_jsonrpc_request(id, "m", json_object()), MCP_MSG_REQUEST},
        {mcp_jsonrpc_notification("m", NULL), MCP_MSG_NOTIFICATION},
        {mcp_jsonrpc_result(id, json_object()), MCP_MSG_RESULT},
        {mcp_jsonrpc_error(id, -1, "m", NULL), MCP_MSG_ERROR},
        {mcp_jsonrpc_error(NULL, -1, "m", NULL), MCP_MSG_ERROR},
    };
    for (size_t i = 0; i < sizeof built / sizeof built[0]; i++) {
        size_t len;
        char *text = mcp_json_dump(built[i].msg, &len);
        assert_non_null(text);
        mcp_message_t msg;
        assert_int_equal(mcp_jsonrpc_parse(text, len, NULL, &msg, NULL), MCP_OK);
        assert_int_equal(msg.kind, built[i].kind);
        mcp_message_clear(&msg);
        free(text);
        json_decref(built[i].msg);
    }
    json_decref(id);
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

/* Everything this module allocates, once. Must not crash or leak, whichever
 * allocation fails; results are either complete or absent. */
static void exercise_allocations(void)
{
    static const char text[] =
        "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"m\",\"params\":{\"a\":[1,\"s\"]}}";
    mcp_message_t msg;
    mcp_error_t err = {0};
    int rc = mcp_jsonrpc_parse(RAW(text), NULL, &msg, &err);
    assert_true(rc == MCP_OK || rc == MCP_ENOMEM || rc == MCP_EINVAL);
    if (rc == MCP_OK)
        free(mcp_json_dump(msg.root, NULL));
    mcp_message_clear(&msg);
    mcp_error_clear(&err);

    rc = mcp_jsonrpc_parse(RAW("{\"a\":1,\"a\":2}"), NULL, &msg, &err);
    assert_int_not_equal(rc, MCP_OK);
    mcp_message_clear(&msg);
    mcp_error_clear(&err);

    json_t *id = json_integer(1);
    json_decref(mcp_jsonrpc_request(id, "m", json_object()));
    json_decref(mcp_jsonrpc_notification("m", json_object()));
    json_decref(mcp_jsonrpc_result(id, json_object()));
    json_decref(mcp_jsonrpc_error(id, 1, "m", json_object()));
    mcp_error_set(&err, MCP_EINVAL, 1, json_object(), "m");
    json_decref(mcp_jsonrpc_error_from(id, &err));
    mcp_error_clear(&err);
    json_decref(id);
}

/* The server's reading (with a memo, a request's envelope read without
 * its tree) gives what the plain reading gives, message for message. */
static void test_memo_reading_matches_parse(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool quick; /* read without the outermost tree */
    } cases[] = {
        {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"e\","
         "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}", true},
        {"{\"params\":{},\"method\":\"m\",\"id\":\"s\\u0000\",\"jsonrpc\":\"2.0\"}", true},
        {" {\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"} ", true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\\u00e9\"}", true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"extra\":true}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"method\":\"n\"}", false},
        {"{\"jsonrpc\":\"2\\u002e0\",\"id\":1,\"method\":\"m\"}", false},
        {"{\"jsonrpc\":\"2.1\",\"id\":1,\"method\":\"m\"}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\\u0000\"}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[1]}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1}", false},
        {"{\"id\":1,\"method\":\"m\"}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":[[[[[1]]]]]}}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} x", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,\"method\":\"m\"}", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",}", false},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}]", false},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", false},
    };
    json_read_memo_t memo = {.parent_key = "params", .key = "_meta"};
    mcp_parse_limits_t limits = {.max_depth = 5};
    for (int round = 0; round < 2; round++) { /* the second with the memo full */
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const char *text = cases[i].text;
            mcp_message_t plain, read;
            mcp_error_t plain_err = {0}, read_err = {0};
            int plain_rc = mcp_jsonrpc_parse(text, strlen(text), &limits, &plain, &plain_err);
            int read_rc =
                jsonrpc_parse_memo(text, strlen(text), &limits, &read, &read_err, &memo);
            if (plain_rc != read_rc || plain_err.code != read_err.code ||
                strcmp(plain_err.message, read_err.message) != 0 || plain.kind != read.kind)
                fail_msg("%s: %d %d \"%s\" against %d %d \"%s\"", text, plain_rc,
                         plain_err.code, plain_err.message, read_rc, read_err.code,
                         read_err.message);
            assert_true(json_is_array(read.root) == cases[i].quick);
            assert_true((plain.id == NULL) == (read.id == NULL));
            assert_true(!plain.id || json_equal(plain.id, read.id));
            assert_true((plain.method == NULL) == (read.method == NULL));
            if (plain.method)
                assert_string_equal(plain.method, read.method);
            assert_true((plain.params == NULL) == (read.params == NULL));
            assert_true(!plain.params || json_equal(plain.params, read.params));
            mcp_message_clear(&plain);
            mcp_message_clear(&read);
            mcp_error_clear(&plain_err);
            mcp_error_clear(&read_err);
        }
    }
    json_read_memo_clear(&memo);
}

static void test_out_of_memory(void **state)
{
    (void)state;
    json_set_alloc_funcs(failing_malloc, free);
    for (long n = 0;; n++) {
        allocations_left = n;
        exercise_allocations();
        if (allocations_left > 0)
            break; /* every allocation succeeded: all failure points seen */
    }
    allocations_left = -1;
    json_set_alloc_funcs(malloc, free);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test(test_parse_error_position),
        cmocka_unit_test(test_parse_size_limit),
        cmocka_unit_test(test_parse_default_size_limit),
        cmocka_unit_test(test_parse_depth_limit),
        cmocka_unit_test(test_parse_depth_errors),
        cmocka_unit_test(test_parse_depth_beyond_jansson),
        cmocka_unit_test(test_parse_depth_ignores_strings),
        cmocka_unit_test(test_parse_null_buffer),
        cmocka_unit_test(test_parse_without_error_out),
        cmocka_unit_test(test_parse_overwrites_out),
        cmocka_unit_test(test_from_json_matches_parse),
        cmocka_unit_test(test_from_json_null),
        cmocka_unit_test(test_depth_table),
        cmocka_unit_test(test_build_request),
        cmocka_unit_test(test_build_notification),
        cmocka_unit_test(test_build_result),
        cmocka_unit_test(test_write_result),
        cmocka_unit_test(test_build_error),
        cmocka_unit_test(test_build_error_from),
        cmocka_unit_test(test_dump),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_dump_integers),
        cmocka_unit_test(test_write_result_spliced),
        cmocka_unit_test(test_escapes_at_every_position),
        cmocka_unit_test(test_builders_parse_back),
        cmocka_unit_test(test_memo_reading_matches_parse),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
