/*
 * The mcp command's typing of text by JSON Schema (tools/mcp/
 * schema_value.c) and its KEY=VALUE arguments (args_typing.c), as tables:
 * schema and text in, JSON value or refusal out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "args_typing.h"
#include "schema_value.h"

typedef struct typing_case {
    const char *schema; /* JSON, or NULL for none */
    const char *text;
    const char *value;  /* the JSON expected, or NULL when refused */
    const char *why;    /* when refused: part of the reason */
} typing_case_t;

static const typing_case_t typing[] = {
    /* The type decides. */
    {"{\"type\":\"string\"}", "42", "\"42\"", NULL},
    {"{\"type\":\"string\"}", "", "\"\"", NULL},
    {"{\"type\":\"integer\"}", "42", "42", NULL},
    {"{\"type\":\"integer\"}", "-7", "-7", NULL},
    {"{\"type\":\"integer\"}", "4.5", NULL, "expected an integer"},
    {"{\"type\":\"integer\"}", "1e3", NULL, "expected an integer"},
    {"{\"type\":\"integer\"}", "0x10", NULL, "expected an integer"},
    {"{\"type\":\"integer\"}", "99999999999999999999", NULL, "expected an integer"},
    {"{\"type\":\"number\"}", "4.5", "4.5", NULL},
    {"{\"type\":\"number\"}", "4", "4", NULL},
    {"{\"type\":\"number\"}", "nan", NULL, "expected a number"},
    {"{\"type\":\"number\"}", "inf", NULL, "expected a number"},
    {"{\"type\":\"boolean\"}", "true", "true", NULL},
    {"{\"type\":\"boolean\"}", "Yes", "true", NULL},
    {"{\"type\":\"boolean\"}", "n", "false", NULL},
    {"{\"type\":\"boolean\"}", "off", "false", NULL},
    {"{\"type\":\"boolean\"}", "maybe", NULL, "expected true or false"},
    {"{\"type\":\"null\"}", "null", "null", NULL},
    {"{\"type\":\"object\"}", "{\"a\":1}", "{\"a\":1}", NULL},
    {"{\"type\":\"object\"}", "[1]", NULL, "expected"},
    {"{\"type\":\"array\"}", "[1,\"a\"]", "[1,\"a\"]", NULL},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\"}}", "a, b,c", "[\"a\",\"b\",\"c\"]", NULL},
    {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", "1,2", "[1,2]", NULL},
    {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", "1,x", NULL, "expected"},
    {"{\"type\":\"array\",\"items\":{\"type\":\"string\"}}", "", "[]", NULL},
    /* Several types: the first that takes the text, null first. */
    {"{\"type\":[\"integer\",\"string\"]}", "5", "5", NULL},
    {"{\"type\":[\"integer\",\"string\"]}", "five", "\"five\"", NULL},
    {"{\"type\":[\"string\",\"null\"]}", "null", "null", NULL},
    /* No type: any JSON literal, else a string. */
    {NULL, "5", "5", NULL},
    {NULL, "true", "true", NULL},
    {NULL, "yes", "\"yes\"", NULL},
    {NULL, "007", "\"007\"", NULL},
    {NULL, "{\"a\":[1]}", "{\"a\":[1]}", NULL},
    {"{\"description\":\"anything\"}", "hi", "\"hi\"", NULL},
    /* Choices. */
    {"{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}", "b", "\"b\"", NULL},
    {"{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}", "c", NULL, "must be one of: a, b"},
    {"{\"enum\":[1,2]}", "2", "2", NULL},
    {"{\"enum\":[1,2]}", "3", NULL, "must be one of: 1, 2"},
    {"{\"type\":\"string\",\"oneOf\":[{\"const\":\"r\",\"title\":\"Red\"},{\"const\":\"g\"}]}", "g",
     "\"g\"", NULL},
    {"{\"type\":\"string\",\"oneOf\":[{\"const\":\"r\",\"title\":\"Red\"},{\"const\":\"g\"}]}",
     "Red", NULL, "must be one of: r, g"},
    {"{\"const\":\"only\"}", "only", "\"only\"", NULL},
    {"{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]}}", "y,x", "[\"y\",\"x\"]", NULL},
    {"{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]}}", "x,q", NULL, "expected"},
    /* Bounds. */
    {"{\"type\":\"integer\",\"minimum\":0,\"maximum\":60}", "60", "60", NULL},
    {"{\"type\":\"integer\",\"minimum\":0,\"maximum\":60}", "61", NULL, "must be at most 60"},
    {"{\"type\":\"integer\",\"minimum\":0}", "-1", NULL, "must be at least 0"},
    {"{\"type\":\"number\",\"exclusiveMinimum\":0}", "0", NULL, "must be more than 0"},
    {"{\"type\":\"number\",\"exclusiveMaximum\":1}", "0.5", "0.5", NULL},
    {"{\"type\":\"string\",\"minLength\":2}", "\xc3\xa9\xc3\xa9", "\"\xc3\xa9\xc3\xa9\"", NULL},
    {"{\"type\":\"string\",\"minLength\":3}", "\xc3\xa9\xc3\xa9", NULL, "at least 3 characters"},
    {"{\"type\":\"string\",\"maxLength\":1}", "ab", NULL, "at most 1 characters"},
    {"{\"type\":\"array\",\"minItems\":2}", "[1]", NULL, "needs at least 2 items"},
    {"{\"type\":\"array\",\"maxItems\":1,\"items\":{\"type\":\"string\"}}", "a,b", NULL,
     "takes at most 1 items"},
    /* Formats. */
    {"{\"type\":\"string\",\"format\":\"email\"}", "a@b.example", "\"a@b.example\"", NULL},
    {"{\"type\":\"string\",\"format\":\"email\"}", "a.b.example", NULL, "an email address"},
    {"{\"type\":\"string\",\"format\":\"email\"}", "a@b@c", NULL, "an email address"},
    {"{\"type\":\"string\",\"format\":\"uri\"}", "https://x/y", "\"https://x/y\"", NULL},
    {"{\"type\":\"string\",\"format\":\"uri\"}", "no scheme", NULL, "a URI"},
    {"{\"type\":\"string\",\"format\":\"date\"}", "2026-07-28", "\"2026-07-28\"", NULL},
    {"{\"type\":\"string\",\"format\":\"date\"}", "2026-13-01", NULL, "a date"},
    {"{\"type\":\"string\",\"format\":\"date-time\"}", "2026-07-28T10:00:00Z",
     "\"2026-07-28T10:00:00Z\"", NULL},
    {"{\"type\":\"string\",\"format\":\"date-time\"}", "2026-07-28", NULL, "a date and time"},
    {"{\"type\":\"string\",\"format\":\"hostname\"}", "anything", "\"anything\"", NULL},
};

static void test_schema_typing(void **state)
{
    for (size_t i = 0; i < sizeof typing / sizeof typing[0]; i++) {
        const typing_case_t *c = &typing[i];
        json_t *schema = c->schema ? json_loads(c->schema, 0, NULL) : NULL;
        assert_true(!c->schema || schema);
        json_t *value = NULL;
        char why[512] = "";
        bool ok = schema_value_parse(schema, c->text, &value, why, sizeof why);
        if (c->value) {
            json_t *expected = json_loads(c->value, JSON_DECODE_ANY, NULL);
            if (!ok || !json_equal(value, expected))
                fail_msg("case %zu (%s, \"%s\"): got %s (%s)", i, c->schema, c->text,
                         ok ? json_dumps(value, JSON_ENCODE_ANY) : "a refusal", why);
            json_decref(expected);
        } else {
            if (ok)
                fail_msg("case %zu (%s, \"%s\"): accepted, expected a refusal", i, c->schema,
                         c->text);
            if (!strstr(why, c->why))
                fail_msg("case %zu: \"%s\" does not say \"%s\"", i, why, c->why);
            assert_null(value);
        }
        json_decref(value);
        json_decref(schema);
    }
}

static void test_schema_descriptions(void **state)
{
    static const struct {
        const char *schema, *type_name, *description;
    } cases[] = {
        {"{\"type\":\"string\"}", "string", "a string"},
        {"{\"type\":\"integer\",\"minimum\":0,\"maximum\":60}", "integer",
         "an integer from 0 to 60"},
        {"{\"type\":\"number\",\"minimum\":1}", "number", "a number of at least 1"},
        {"{\"type\":\"boolean\"}", "boolean", "true or false"},
        {"{\"type\":[\"string\",\"null\"]}", "null|string", "null|string"},
        {"{\"type\":\"array\",\"items\":{\"type\":\"string\"}}", "string[]", "string[]"},
        {"{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}", "string", "one of: a, b"},
        {"{\"type\":\"array\",\"items\":{\"enum\":[\"x\",\"y\"]}}", "string[]", "any of: x, y"},
        {"{\"type\":\"string\",\"format\":\"email\"}", "string", "an email address"},
        {"{}", "any", "any value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *schema = json_loads(cases[i].schema, 0, NULL);
        char buf[256];
        assert_string_equal(schema_value_type_name(schema, buf, sizeof buf), cases[i].type_name);
        assert_string_equal(schema_value_describe(schema, buf, sizeof buf), cases[i].description);
        json_decref(schema);
    }
}

static void test_choices(void **state)
{
    json_t *schema = json_loads("{\"type\":\"string\",\"oneOf\":[{\"const\":\"r\",\"title\":"
                                "\"Red\"},{\"const\":\"g\",\"title\":\"Green\"}]}",
                                0, NULL);
    json_t *choices = schema_value_choices(schema);
    assert_int_equal(json_array_size(choices), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(choices, 1), "value")),
                        "g");
    assert_string_equal(json_string_value(json_object_get(json_array_get(choices, 1), "title")),
                        "Green");
    json_decref(choices);
    json_decref(schema);

    /* A legacy enum with enumNames. */
    schema = json_loads("{\"type\":\"string\",\"enum\":[\"a\"],\"enumNames\":[\"Alpha\"]}", 0, NULL);
    choices = schema_value_choices(schema);
    assert_string_equal(json_string_value(json_object_get(json_array_get(choices, 0), "title")),
                        "Alpha");
    json_decref(choices);
    json_decref(schema);

    /* Not a choice. */
    schema = json_loads("{\"type\":\"string\"}", 0, NULL);
    assert_null(schema_value_choices(schema));
    json_decref(schema);
    schema = json_loads("{\"oneOf\":[{\"type\":\"string\"},{\"const\":1}]}", 0, NULL);
    assert_null(schema_value_choices(schema));
    json_decref(schema);
}

/* ------------------------------------------------------------------------
 * KEY=VALUE
 * ------------------------------------------------------------------------ */

static void test_split(void **state)
{
    static const struct {
        const char *word, *key, *value;
        bool raw, ok;
    } cases[] = {
        {"a=1", "a", "1", false, true},
        {"a=", "a", "", false, true},
        {"a==b", "a", "=b", false, true},
        {"a:=[1]", "a", "[1]", true, true},
        {"url=http://x/?a=b", "url", "http://x/?a=b", false, true},
        {":=1", ":", "1", false, true}, /* a key of ":" */
        {"=1", NULL, NULL, false, false},
        {"novalue", NULL, NULL, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char key[64];
        const char *value = NULL;
        bool raw = false;
        bool ok = args_split(cases[i].word, key, sizeof key, &value, &raw);
        assert_int_equal(ok, cases[i].ok);
        if (!ok)
            continue;
        assert_string_equal(key, cases[i].key);
        assert_string_equal(value, cases[i].value);
        assert_int_equal(raw, cases[i].raw);
    }
}

static void test_tool_arguments(void **state)
{
    static const char schema_text[] =
        "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"},"
        "\"s\":{\"type\":\"string\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
        "\"required\":[\"n\"]}";
    static const struct {
        const char *base;
        const char *words[4];
        const char *args; /* expected, or NULL */
        const char *why;
    } cases[] = {
        {NULL, {"n=1"}, "{\"n\":1}", NULL},
        {NULL, {"n=1", "s=1"}, "{\"n\":1,\"s\":\"1\"}", NULL},
        {NULL, {"n:=2", "s:=null"}, "{\"n\":2,\"s\":null}", NULL},
        {NULL, {"n=1", "tags=a", "tags=b,c"}, "{\"n\":1,\"tags\":[\"a\",\"b\",\"c\"]}", NULL},
        {"{\"n\":5,\"s\":\"x\"}", {"s=y"}, "{\"n\":5,\"s\":\"y\"}", NULL},
        {"{\"n\":5}", {NULL}, "{\"n\":5}", NULL},
        {NULL, {"s=x"}, NULL, "missing argument \"n\" (an integer)"},
        {NULL, {"n=1", "n=2"}, NULL, "argument \"n\" is given twice"},
        {NULL, {"n=1", "z=2"}, NULL, "the tool has no argument \"z\" (it takes: n, s, tags)"},
        {NULL, {"n=one"}, NULL, "argument \"n\": expected an integer, got \"one\""},
        {NULL, {"n"}, NULL, "expected KEY=VALUE"},
    };
    json_t *schema = json_loads(schema_text, 0, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = 0;
        while (n < 4 && cases[i].words[n])
            n++;
        json_t *base = cases[i].base ? json_loads(cases[i].base, 0, NULL) : NULL;
        json_t *args = NULL;
        char why[512] = "";
        bool ok = args_tool_arguments(schema, base, cases[i].words, n, &args, why, sizeof why);
        if (cases[i].args) {
            json_t *expected = json_loads(cases[i].args, 0, NULL);
            if (!ok || !json_equal(args, expected))
                fail_msg("case %zu: %s", i, ok ? json_dumps(args, 0) : why);
            json_decref(expected);
        } else {
            assert_false(ok);
            if (!strstr(why, cases[i].why))
                fail_msg("case %zu: \"%s\" does not say \"%s\"", i, why, cases[i].why);
        }
        json_decref(args);
        json_decref(base);
    }
    json_decref(schema);

    /* additionalProperties lets other keys through, typed by inference. */
    schema = json_loads("{\"type\":\"object\",\"properties\":{},\"additionalProperties\":true}", 0,
                        NULL);
    json_t *args = NULL;
    char why[256];
    assert_true(args_tool_arguments(schema, NULL, (const char *const[]){"x=3", "y=hi"}, 2, &args,
                                    why, sizeof why));
    assert_int_equal(json_integer_value(json_object_get(args, "x")), 3);
    assert_string_equal(json_string_value(json_object_get(args, "y")), "hi");
    json_decref(args);
    json_decref(schema);
}

static void test_prompt_arguments(void **state)
{
    json_t *declared = json_loads("[{\"name\":\"style\"},{\"name\":\"lang\",\"required\":true}]", 0,
                                  NULL);
    json_t *args = NULL;
    char why[256];
    assert_true(args_prompt_arguments(declared, (const char *const[]){"lang=42", "style=x=y"}, 2,
                                      &args, why, sizeof why));
    assert_string_equal(json_string_value(json_object_get(args, "lang")), "42"); /* strings */
    assert_string_equal(json_string_value(json_object_get(args, "style")), "x=y");
    json_decref(args);

    assert_false(args_prompt_arguments(declared, (const char *const[]){"style=a"}, 1, &args, why,
                                       sizeof why));
    assert_non_null(strstr(why, "missing argument \"lang\""));
    assert_false(args_prompt_arguments(declared, (const char *const[]){"lang=a", "tone=b"}, 2,
                                       &args, why, sizeof why));
    assert_non_null(strstr(why, "no argument \"tone\" (it takes: style, lang)"));
    assert_false(args_prompt_arguments(declared, (const char *const[]){"lang:=1"}, 1, &args, why,
                                       sizeof why));
    json_decref(declared);

    /* Undeclared (unknown list): anything goes. */
    assert_true(args_prompt_arguments(NULL, (const char *const[]){"k=v"}, 1, &args, why,
                                      sizeof why));
    json_decref(args);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_typing),
        cmocka_unit_test(test_schema_descriptions),
        cmocka_unit_test(test_choices),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_tool_arguments),
        cmocka_unit_test(test_prompt_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
