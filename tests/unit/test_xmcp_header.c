/*
 * x-mcp-header annotations: the spec's rules (streamable-http "Schema
 * Extension"), the conformance suite's valid and invalid tools
 * (http-custom-headers, http-invalid-tool-headers), and the walk over every
 * JSON Schema keyword that holds subschemas.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/xmcp_header.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Writes the collected headers as "Name=path.to.prop Name2=..." so that a
 * table row can state the expected result in one string. */
static void describe(const mcp_param_headers_t *h, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < h->count; i++) {
        n += (size_t)snprintf(buf + n, size - n, "%s%s=", i ? " " : "", h->items[i].name);
        for (size_t k = 0; k < h->items[i].depth; k++)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", k ? "." : "", h->items[i].path[k]);
    }
}

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!j)
        fail_msg("bad test JSON (%s): %s", e.text, text);
    return j;
}

/* Schemas whose annotations are all valid, and what they collect, in
 * schema order. */
static const struct {
    const char *schema;
    const char *collected;
} VALID[] = {
    /* The spec's execute_sql example. */
    {"{\"type\":\"object\",\"properties\":{"
     "\"region\":{\"type\":\"string\",\"description\":\"d\",\"x-mcp-header\":\"Region\"},"
     "\"query\":{\"type\":\"string\"}},\"required\":[\"region\",\"query\"]}",
     "Region=region"},
    /* The conformance client scenario's test_custom_headers tool. */
    {"{\"type\":\"object\",\"properties\":{"
     "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
     "\"priority\":{\"type\":\"integer\",\"x-mcp-header\":\"Priority\"},"
     "\"verbose\":{\"type\":\"boolean\",\"x-mcp-header\":\"Verbose\"},"
     "\"debug\":{\"type\":\"boolean\",\"x-mcp-header\":\"Debug\"},"
     "\"empty_val\":{\"type\":\"string\",\"x-mcp-header\":\"EmptyVal\"},"
     "\"method_val\":{\"type\":\"string\",\"x-mcp-header\":\"Method\"},"
     "\"float_val\":{\"type\":\"number\"},"
     "\"non_ascii_val\":{\"type\":\"string\",\"x-mcp-header\":\"NonAscii\"},"
     "\"whitespace_val\":{\"type\":\"string\",\"x-mcp-header\":\"Whitespace\"},"
     "\"leading_space_val\":{\"type\":\"string\",\"x-mcp-header\":\"LeadingSpace\"},"
     "\"trailing_space_val\":{\"type\":\"string\",\"x-mcp-header\":\"TrailingSpace\"},"
     "\"internal_space_val\":{\"type\":\"string\",\"x-mcp-header\":\"InternalSpace\"},"
     "\"control_char_val\":{\"type\":\"string\",\"x-mcp-header\":\"ControlChar\"},"
     "\"crlf_val\":{\"type\":\"string\",\"x-mcp-header\":\"CrLf\"},"
     "\"tab_val\":{\"type\":\"string\",\"x-mcp-header\":\"Tab\"},"
     "\"query\":{\"type\":\"string\"}},\"required\":[\"region\",\"priority\",\"query\"]}",
     "Region=region Priority=priority Verbose=verbose Debug=debug EmptyVal=empty_val "
     "Method=method_val NonAscii=non_ascii_val Whitespace=whitespace_val "
     "LeadingSpace=leading_space_val TrailingSpace=trailing_space_val "
     "InternalSpace=internal_space_val ControlChar=control_char_val CrLf=crlf_val Tab=tab_val"},
    /* Nested objects are fine while every step is "properties". */
    {"{\"type\":\"object\",\"properties\":{\"options\":{\"type\":\"object\",\"properties\":{"
     "\"limit\":{\"type\":\"integer\",\"x-mcp-header\":\"Limit\"}}},"
     "\"confirm\":{\"type\":\"boolean\",\"x-mcp-header\":\"Confirm\"}}}",
     "Limit=options.limit Confirm=confirm"},
    /* No annotations at all. */
    {"{\"type\":\"object\"}", ""},
    {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}", ""},
    {"{}", ""},
    {"true", ""},
    {"{\"properties\":{\"a\":true,\"b\":false}}", ""},
    /* A property NAMED x-mcp-header is a property, not an annotation... */
    {"{\"properties\":{\"x-mcp-header\":{\"type\":\"object\"}}}", ""},
    /* ...and may itself be annotated. */
    {"{\"properties\":{\"x-mcp-header\":{\"type\":\"string\",\"x-mcp-header\":\"X\"}}}",
     "X=x-mcp-header"},
    /* So are names under other schema maps. */
    {"{\"$defs\":{\"x-mcp-header\":{\"type\":\"object\"}},"
     "\"patternProperties\":{\"x-mcp-header\":{}},\"dependentSchemas\":{\"x-mcp-header\":{}}}",
     ""},
    /* Data keywords hold data: an x-mcp-header member there is not an annotation. */
    {"{\"properties\":{\"a\":{\"type\":\"object\","
     "\"default\":{\"x-mcp-header\":\"A\"},\"const\":{\"x-mcp-header\":\"B\"},"
     "\"enum\":[{\"x-mcp-header\":\"C\"}],\"examples\":[{\"x-mcp-header\":\"D\"}]}}}",
     ""},
    /* So do unknown keywords and non-schema keywords. */
    {"{\"properties\":{\"a\":{\"type\":\"string\",\"x-vendor\":{\"x-mcp-header\":\"A\"},"
     "\"required\":[\"x-mcp-header\"],\"$comment\":\"x-mcp-header\"}}}",
     ""},
    /* draft-07 "dependencies" may hold a name array, which is not a schema. */
    {"{\"dependencies\":{\"a\":[\"x-mcp-header\"]}}", ""},
    /* Nullable parameters: a null value just sends no header. */
    {"{\"properties\":{\"a\":{\"type\":[\"string\",\"null\"],\"x-mcp-header\":\"A\"},"
     "\"b\":{\"type\":[\"null\",\"integer\"],\"x-mcp-header\":\"B\"},"
     "\"c\":{\"type\":[\"boolean\"],\"x-mcp-header\":\"C\"},"
     "\"d\":{\"type\":[\"string\",\"integer\"],\"x-mcp-header\":\"D\"}}}",
     "A=a B=b C=c D=d"},
    /* Every tchar is allowed. */
    {"{\"properties\":{\"a\":{\"type\":\"string\","
     "\"x-mcp-header\":\"!#$%&'*+-.^_`|~09azAZ\"}}}",
     "!#$%&'*+-.^_`|~09azAZ=a"},
    /* Names differing only in non-letters are distinct. */
    {"{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A-1\"},"
     "\"b\":{\"type\":\"string\",\"x-mcp-header\":\"A_1\"}}}",
     "A-1=a A_1=b"},
};

static void test_valid_schemas(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(VALID); i++) {
        json_t *schema = parse(VALID[i].schema);
        mcp_param_headers_t h;
        mcp_error_t err = {0};
        int rc = mcp_xmcp_headers_collect(schema, &h, &err);
        if (rc != MCP_OK)
            fail_msg("row %zu rejected: %s", i, err.message);
        char got[1024];
        describe(&h, got, sizeof got);
        if (strcmp(got, VALID[i].collected) != 0)
            fail_msg("row %zu collected \"%s\", expected \"%s\"", i, got, VALID[i].collected);
        mcp_param_headers_clear(&h);
        assert_null(h.items);
        assert_int_equal(h.count, 0);
        json_decref(schema);
    }
}

/* Schemas with a broken annotation, and a fragment the message must have:
 * where the annotation is, then why it is refused. */
static const struct {
    const char *schema;
    const char *where;
    const char *why;
} INVALID[] = {
    /* http-invalid-tool-headers, tool by tool. */
    {"{\"properties\":{\"value\":{\"type\":\"string\",\"x-mcp-header\":\"\"}}}",
     "/properties/value", "non-empty HTTP token"},
    {"{\"properties\":{\"data\":{\"type\":\"object\",\"x-mcp-header\":\"Data\"}}}",
     "/properties/data", "\"type\""},
    {"{\"properties\":{\"items\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
     "\"x-mcp-header\":\"Items\"}}}",
     "/properties/items", "\"type\""},
    {"{\"properties\":{\"nil\":{\"type\":\"null\",\"x-mcp-header\":\"Nil\"}}}",
     "/properties/nil", "\"type\""},
    {"{\"properties\":{\"field1\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
     "\"field2\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}}}",
     "/properties/field1 and /properties/field2", "same header"},
    {"{\"properties\":{\"field1\":{\"type\":\"string\",\"x-mcp-header\":\"MyField\"},"
     "\"field2\":{\"type\":\"string\",\"x-mcp-header\":\"myfield\"}}}",
     "/properties/field1 and /properties/field2", "\"MyField\" and \"myfield\""},
    {"{\"properties\":{\"value\":{\"type\":\"string\",\"x-mcp-header\":\"My Region\"}}}",
     "/properties/value", "HTTP token"},
    {"{\"properties\":{\"value\":{\"type\":\"string\",\"x-mcp-header\":\"Region:Primary\"}}}",
     "/properties/value", "HTTP token"},
    {"{\"properties\":{\"value\":{\"type\":\"string\",\"x-mcp-header\":\"R\\u00e9gion\"}}}",
     "/properties/value", "HTTP token"},
    {"{\"properties\":{\"value\":{\"type\":\"string\",\"x-mcp-header\":\"Region\\t1\"}}}",
     "/properties/value", "HTTP token"},
    /* More of the value rules. */
    {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"A\\r\\nB\"}}}",
     "/properties/v", "HTTP token"},
    {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"Re\\u0000gion\"}}}",
     "/properties/v", "HTTP token"},
    {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":\"a\\\"b\"}}}",
     "/properties/v", "HTTP token"},
    {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":42}}}",
     "/properties/v", "HTTP token"},
    {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":null}}}",
     "/properties/v", "HTTP token"},
    {"{\"properties\":{\"v\":{\"type\":\"string\",\"x-mcp-header\":[\"A\"]}}}",
     "/properties/v", "HTTP token"},
    /* Unique across nesting levels too. */
    {"{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Id\"},"
     "\"o\":{\"properties\":{\"b\":{\"type\":\"string\",\"x-mcp-header\":\"ID\"}}}}}",
     "/properties/a and /properties/o/properties/b", "same header"},
    /* Type rules: number is not allowed; a type must be stated. */
    {"{\"properties\":{\"v\":{\"type\":\"number\",\"x-mcp-header\":\"V\"}}}",
     "/properties/v", "\"type\""},
    {"{\"properties\":{\"v\":{\"x-mcp-header\":\"V\"}}}", "/properties/v", "\"type\""},
    {"{\"properties\":{\"v\":{\"$ref\":\"#/$defs/S\",\"x-mcp-header\":\"V\"}},"
     "\"$defs\":{\"S\":{\"type\":\"string\"}}}",
     "/properties/v", "\"type\""},
    {"{\"properties\":{\"v\":{\"enum\":[\"a\",\"b\"],\"x-mcp-header\":\"V\"}}}",
     "/properties/v", "\"type\""},
    {"{\"properties\":{\"v\":{\"type\":[\"null\"],\"x-mcp-header\":\"V\"}}}",
     "/properties/v", "\"type\""},
    {"{\"properties\":{\"v\":{\"type\":[],\"x-mcp-header\":\"V\"}}}", "/properties/v",
     "\"type\""},
    {"{\"properties\":{\"v\":{\"type\":[\"string\",\"number\"],\"x-mcp-header\":\"V\"}}}",
     "/properties/v", "\"type\""},
    {"{\"properties\":{\"v\":{\"type\":[\"string\",\"object\"],\"x-mcp-header\":\"V\"}}}",
     "/properties/v", "\"type\""},
    {"{\"properties\":{\"v\":{\"type\":[\"string\",7],\"x-mcp-header\":\"V\"}}}",
     "/properties/v", "\"type\""},
    {"{\"properties\":{\"v\":{\"type\":\"String\",\"x-mcp-header\":\"V\"}}}",
     "/properties/v", "\"type\""},
    /* The root is not a property. */
    {"{\"type\":\"object\",\"x-mcp-header\":\"Root\"}", "/", "root schema"},
    /* Reachable only through "properties": every other subschema keyword breaks the chain. */
    {"{\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
     "\"x-mcp-header\":\"A\"}}}}",
     "/properties/a/items", "reachable"},
    {"{\"properties\":{\"a\":{\"items\":[{\"type\":\"string\",\"x-mcp-header\":\"A\"}]}}}",
     "/properties/a/items/0", "reachable"},
    {"{\"properties\":{\"a\":{\"prefixItems\":[{},{\"type\":\"string\",\"x-mcp-header\":\"A\"}]}}}",
     "/properties/a/prefixItems/1", "reachable"},
    {"{\"properties\":{\"a\":{\"additionalItems\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
     "/properties/a/additionalItems", "reachable"},
    {"{\"properties\":{\"a\":{\"unevaluatedItems\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
     "/properties/a/unevaluatedItems", "reachable"},
    {"{\"properties\":{\"a\":{\"contains\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
     "/properties/a/contains", "reachable"},
    {"{\"additionalProperties\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}",
     "/additionalProperties", "reachable"},
    {"{\"unevaluatedProperties\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}",
     "/unevaluatedProperties", "reachable"},
    {"{\"patternProperties\":{\"^r\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}",
     "/patternProperties/^r", "reachable"},
    {"{\"propertyNames\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}", "/propertyNames",
     "reachable"},
    {"{\"$defs\":{\"S\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}", "/$defs/S",
     "reachable"},
    {"{\"definitions\":{\"S\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}",
     "/definitions/S", "reachable"},
    {"{\"dependentSchemas\":{\"a\":{\"properties\":{\"b\":{\"type\":\"string\","
     "\"x-mcp-header\":\"B\"}}}}}",
     "/dependentSchemas/a/properties/b", "reachable"},
    {"{\"dependencies\":{\"a\":{\"properties\":{\"b\":{\"type\":\"string\","
     "\"x-mcp-header\":\"B\"}}}}}",
     "/dependencies/a/properties/b", "reachable"},
    {"{\"allOf\":[{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}]}",
     "/allOf/0/properties/a", "reachable"},
    {"{\"anyOf\":[{},{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}]}",
     "/anyOf/1/properties/a", "reachable"},
    {"{\"oneOf\":[{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}]}",
     "/oneOf/0/properties/a", "reachable"},
    {"{\"not\":{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
     "/not/properties/a", "reachable"},
    {"{\"if\":{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
     "/if/properties/a", "reachable"},
    {"{\"then\":{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
     "/then/properties/a", "reachable"},
    {"{\"else\":{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
     "/else/properties/a", "reachable"},
    {"{\"properties\":{\"a\":{\"type\":\"string\",\"contentSchema\":{\"type\":\"string\","
     "\"x-mcp-header\":\"A\"}}}}",
     "/properties/a/contentSchema", "reachable"},
    /* Once broken, the chain stays broken, however many "properties" follow. */
    {"{\"properties\":{\"list\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
     "\"properties\":{\"id\":{\"type\":\"string\",\"x-mcp-header\":\"Id\"}}}}}}",
     "/properties/list/items/properties/id", "reachable"},
    {"{\"properties\":{\"o\":{\"anyOf\":[{\"properties\":{\"x\":{\"properties\":{"
     "\"y\":{\"type\":\"string\",\"x-mcp-header\":\"Y\"}}}}}]}}}",
     "/properties/o/anyOf/0/properties/x/properties/y", "reachable"},
    /* A valid annotation does not excuse an invalid one elsewhere. */
    {"{\"properties\":{\"ok\":{\"type\":\"string\",\"x-mcp-header\":\"Ok\"},"
     "\"l\":{\"items\":{\"type\":\"string\",\"x-mcp-header\":\"Bad\"}}}}",
     "/properties/l/items", "reachable"},
    /* Locations are JSON Pointers: '~' and '/' in names are escaped. */
    {"{\"properties\":{\"a/b~c\":{\"type\":\"object\",\"x-mcp-header\":\"A\"}}}",
     "/properties/a~1b~0c", "\"type\""},
};

static void test_invalid_schemas(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(INVALID); i++) {
        json_t *schema = parse(INVALID[i].schema);
        mcp_param_headers_t h = {(mcp_param_header_t *)&h, 99};
        mcp_error_t err = {0};
        if (mcp_xmcp_headers_collect(schema, &h, &err) != MCP_EINVAL)
            fail_msg("row %zu accepted: %s", i, INVALID[i].schema);
        assert_int_equal(err.code, MCP_INVALID_PARAMS);
        if (!strstr(err.message, INVALID[i].where) || !strstr(err.message, INVALID[i].why))
            fail_msg("row %zu: message \"%s\" lacks \"%s\" or \"%s\"", i, err.message,
                     INVALID[i].where, INVALID[i].why);
        assert_null(h.items);
        assert_int_equal(h.count, 0);
        mcp_error_clear(&err);
        json_decref(schema);
    }
}

/* A property name with NUL (jansson's parser refuses one, but a program
 * can build it) could not be found again in the arguments. */
static void test_property_name_with_nul(void **state)
{
    (void)state;
    json_t *props = json_object();
    json_object_setn_new(props, "a\0b", 3,
                         json_pack("{s:s, s:s}", "type", "string", "x-mcp-header", "A"));
    json_t *schema = json_pack("{s:o}", "properties", props);
    mcp_param_headers_t h;
    mcp_error_t err = {0};
    assert_int_equal(mcp_xmcp_headers_collect(schema, &h, &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "/properties/a?b"));
    assert_non_null(strstr(err.message, "NUL"));
    json_decref(schema);
}

/* The rejection does not need an error object. */
static void test_error_is_optional(void **state)
{
    (void)state;
    json_t *schema = parse("{\"properties\":{\"v\":{\"type\":\"number\",\"x-mcp-header\":\"V\"}}}");
    mcp_param_headers_t h;
    assert_int_equal(mcp_xmcp_headers_collect(schema, &h, NULL), MCP_EINVAL);
    assert_int_equal(h.count, 0);
    json_decref(schema);
}

/* A chain of `levels` nested properties, the innermost one annotated. */
static json_t *nested_schema(size_t levels)
{
    json_t *schema = json_pack("{s:s, s:s}", "type", "string", "x-mcp-header", "Deep");
    for (size_t i = 0; i < levels - 1; i++)
        schema = json_pack("{s:{s:o}}", "properties", "p", schema);
    return json_pack("{s:{s:o}}", "properties", "p", schema);
}

static void test_depth_is_bounded(void **state)
{
    (void)state;
    mcp_param_headers_t h;
    mcp_error_t err = {0};

    json_t *schema = nested_schema(64);
    assert_int_equal(mcp_xmcp_headers_collect(schema, &h, &err), MCP_OK);
    assert_int_equal(h.count, 1);
    assert_int_equal(h.items[0].depth, 64);
    mcp_param_headers_clear(&h);
    json_decref(schema);

    schema = nested_schema(65);
    assert_int_equal(mcp_xmcp_headers_collect(schema, &h, &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "deeper"));
    json_decref(schema);

    /* Deep nesting is refused even without an annotation in sight: one
     * could hide below the limit. */
    schema = json_object();
    for (int i = 0; i < 200; i++)
        schema = json_pack("{s:[o]}", "allOf", schema);
    assert_int_equal(mcp_xmcp_headers_collect(schema, &h, &err), MCP_EINVAL);
    json_decref(schema);
    mcp_error_clear(&err);
}

static void test_value_lookup(void **state)
{
    (void)state;
    json_t *schema = parse("{\"properties\":{\"region\":{\"type\":\"string\",\"x-mcp-header\":\"R\"},"
                           "\"options\":{\"properties\":{\"limit\":{\"type\":\"integer\","
                           "\"x-mcp-header\":\"L\"}}}}}");
    mcp_param_headers_t h;
    assert_int_equal(mcp_xmcp_headers_collect(schema, &h, NULL), MCP_OK);
    assert_int_equal(h.count, 2);
    const mcp_param_header_t *region = &h.items[0], *limit = &h.items[1];

    static const struct {
        const char *arguments;
        const char *region; /* expected value as JSON, NULL for none */
        const char *limit;
    } ROWS[] = {
        {"{\"region\":\"us\",\"options\":{\"limit\":5}}", "\"us\"", "5"},
        {"{\"region\":false,\"options\":{\"limit\":0}}", "false", "0"},
        {"{\"region\":null,\"options\":{\"limit\":null}}", NULL, NULL},
        {"{}", NULL, NULL},
        {"{\"options\":5}", NULL, NULL},
        {"{\"options\":null}", NULL, NULL},
        {"{\"options\":[{\"limit\":5}]}", NULL, NULL},
        {"{\"limit\":5,\"Region\":\"us\"}", NULL, NULL},
        {"[]", NULL, NULL},
        {"\"region\"", NULL, NULL},
    };
    for (size_t i = 0; i < COUNT(ROWS); i++) {
        json_t *args = parse(ROWS[i].arguments);
        json_t *want_r = ROWS[i].region ? parse(ROWS[i].region) : NULL;
        json_t *want_l = ROWS[i].limit ? parse(ROWS[i].limit) : NULL;
        json_t *got_r = mcp_param_header_value(region, args);
        json_t *got_l = mcp_param_header_value(limit, args);
        if (!(want_r ? got_r && json_equal(got_r, want_r) : !got_r) ||
            !(want_l ? got_l && json_equal(got_l, want_l) : !got_l))
            fail_msg("row %zu: wrong value for %s", i, ROWS[i].arguments);
        json_decref(want_r);
        json_decref(want_l);
        json_decref(args);
    }
    assert_null(mcp_param_header_value(region, NULL));
    assert_null(mcp_param_header_value(NULL, schema));
    mcp_param_headers_clear(&h);
    mcp_param_headers_clear(&h); /* idempotent */
    mcp_param_headers_clear(NULL);
    json_decref(schema);
}

static void test_http_token(void **state)
{
    (void)state;
    static const char *const TOKENS[] = {"Region", "a", "0", "!#$%&'*+-.^_`|~", "X-Custom.1"};
    static const char *const NOT_TOKENS[] = {"",      "a b",  "a:b", "a\tb", "a\r\nb", "R\xc3\xa9gion",
                                             "(a)",   "a,b",  "a;b", "a=b",  "\"a\"",  "a/b",
                                             "[a]",   "{a}",  "a?",  "a@b",  "a\\b",   "\x7f"};
    for (size_t i = 0; i < COUNT(TOKENS); i++)
        assert_true(mcp_is_http_token(TOKENS[i]));
    for (size_t i = 0; i < COUNT(NOT_TOKENS); i++)
        if (mcp_is_http_token(NOT_TOKENS[i]))
            fail_msg("\"%s\" taken for a token", NOT_TOKENS[i]);
    assert_false(mcp_is_http_token(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_schemas),
        cmocka_unit_test(test_invalid_schemas),
        cmocka_unit_test(test_property_name_with_nul),
        cmocka_unit_test(test_error_is_optional),
        cmocka_unit_test(test_depth_is_bounded),
        cmocka_unit_test(test_value_lookup),
        cmocka_unit_test(test_http_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
