/*
 * URI templates (RFC 6570): the RFC's expansion examples, value types and
 * encoding, malformed templates, and matching URIs back to variables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/uri_template.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static json_t *load_json(const char *text)
{
    json_error_t error;
    json_t *value = json_loads(text, JSON_DECODE_ANY, &error);
    if (!value)
        fail_msg("bad JSON in the test table: %s (%s)", text, error.text);
    return value;
}

static mcp_uri_template_t *parse_ok(const char *text)
{
    mcp_error_t err = {0};
    mcp_uri_template_t *tpl = mcp_uri_template_new(text, &err);
    if (!tpl)
        fail_msg("template %s: %s", text, err.message);
    mcp_error_clear(&err);
    return tpl;
}

/* Expands `text` with `vars` and compares with `expected`. */
static void expect_expansion(const char *text, const json_t *vars, const char *expected)
{
    mcp_uri_template_t *tpl = parse_ok(text);
    mcp_error_t err = {0};
    char *uri = NULL;
    int rc = mcp_uri_template_expand(tpl, vars, &uri, &err);
    if (rc != MCP_OK)
        fail_msg("expand %s: %d %s", text, rc, err.message);
    if (strcmp(uri, expected) != 0)
        fail_msg("expand %s: got \"%s\", want \"%s\"", text, uri, expected);
    free(uri);
    mcp_uri_template_free(tpl);
}

/* ------------------------------------------------------------------------
 * Expansion: RFC 6570 examples
 * ------------------------------------------------------------------------ */

/* The variables of RFC 6570 sections 1.2 and 3.2 (undef is left out, which
 * is what undefined means). */
static const char RFC_VARIABLES[] =
    "{\"count\": [\"one\", \"two\", \"three\"],"
    " \"dom\": [\"example\", \"com\"],"
    " \"dub\": \"me/too\","
    " \"hello\": \"Hello World!\","
    " \"half\": \"50%\","
    " \"var\": \"value\","
    " \"who\": \"fred\","
    " \"base\": \"http://example.com/home/\","
    " \"path\": \"/foo/bar\","
    " \"list\": [\"red\", \"green\", \"blue\"],"
    " \"keys\": {\"semi\": \";\", \"dot\": \".\", \"comma\": \",\"},"
    " \"v\": \"6\", \"x\": \"1024\", \"y\": \"768\","
    " \"empty\": \"\","
    " \"empty_keys\": {}}";

struct expansion_case {
    const char *template_text;
    const char *expected;
};

/* Section 1.2, levels 1 to 3. */
static const struct expansion_case RFC_LEVELS_1_TO_3[] = {
    /* Level 1: simple string expansion */
    {"{var}", "value"},
    {"{hello}", "Hello%20World%21"},
    /* Level 2: reserved and fragment expansion */
    {"{+var}", "value"},
    {"{+hello}", "Hello%20World!"},
    {"{+path}/here", "/foo/bar/here"},
    {"here?ref={+path}", "here?ref=/foo/bar"},
    {"X{#var}", "X#value"},
    {"X{#hello}", "X#Hello%20World!"},
    /* Level 3: multiple variables and the remaining operators */
    {"map?{x,y}", "map?1024,768"},
    {"{x,hello,y}", "1024,Hello%20World%21,768"},
    {"{+x,hello,y}", "1024,Hello%20World!,768"},
    {"{+path,x}/here", "/foo/bar,1024/here"},
    {"{#x,hello,y}", "#1024,Hello%20World!,768"},
    {"{#path,x}/here", "#/foo/bar,1024/here"},
    {"X{.var}", "X.value"},
    {"X{.x,y}", "X.1024.768"},
    {"{/var}", "/value"},
    {"{/var,x}/here", "/value/1024/here"},
    {"{;x,y}", ";x=1024;y=768"},
    {"{;x,y,empty}", ";x=1024;y=768;empty"},
    {"{?x,y}", "?x=1024&y=768"},
    {"{?x,y,empty}", "?x=1024&y=768&empty="},
    {"?fixed=yes{&x}", "?fixed=yes&x=1024"},
    {"{&x,y,empty}", "&x=1024&y=768&empty="},
};

/* Section 3.2, every operator with lists, associative arrays, prefixes and
 * undefined values (level 4). */
static const struct expansion_case RFC_SECTION_3[] = {
    /* 3.2.1 variable expansion */
    {"{count}", "one,two,three"},
    {"{count*}", "one,two,three"},
    {"{/count}", "/one,two,three"},
    {"{/count*}", "/one/two/three"},
    {"{;count}", ";count=one,two,three"},
    {"{;count*}", ";count=one;count=two;count=three"},
    {"{?count}", "?count=one,two,three"},
    {"{?count*}", "?count=one&count=two&count=three"},
    {"{&count*}", "&count=one&count=two&count=three"},
    /* 3.2.2 simple string expansion */
    {"{var}", "value"},
    {"{hello}", "Hello%20World%21"},
    {"{half}", "50%25"},
    {"O{empty}X", "OX"},
    {"O{undef}X", "OX"},
    {"{x,y}", "1024,768"},
    {"{x,hello,y}", "1024,Hello%20World%21,768"},
    {"?{x,empty}", "?1024,"},
    {"?{x,undef}", "?1024"},
    {"?{undef,y}", "?768"},
    {"{var:3}", "val"},
    {"{var:30}", "value"},
    {"{list}", "red,green,blue"},
    {"{list*}", "red,green,blue"},
    {"{keys}", "semi,%3B,dot,.,comma,%2C"},
    {"{keys*}", "semi=%3B,dot=.,comma=%2C"},
    /* 3.2.3 reserved expansion */
    {"{+var}", "value"},
    {"{+hello}", "Hello%20World!"},
    {"{+half}", "50%25"},
    {"{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"},
    {"{+base}index", "http://example.com/home/index"},
    {"O{+empty}X", "OX"},
    {"O{+undef}X", "OX"},
    {"{+path}/here", "/foo/bar/here"},
    {"here?ref={+path}", "here?ref=/foo/bar"},
    {"up{+path}{var}/here", "up/foo/barvalue/here"},
    {"{+x,hello,y}", "1024,Hello%20World!,768"},
    {"{+path,x}/here", "/foo/bar,1024/here"},
    {"{+path:6}/here", "/foo/b/here"},
    {"{+list}", "red,green,blue"},
    {"{+list*}", "red,green,blue"},
    {"{+keys}", "semi,;,dot,.,comma,,"},
    {"{+keys*}", "semi=;,dot=.,comma=,"},
    /* 3.2.4 fragment expansion */
    {"{#var}", "#value"},
    {"{#hello}", "#Hello%20World!"},
    {"{#half}", "#50%25"},
    {"foo{#empty}", "foo#"},
    {"foo{#undef}", "foo"},
    {"{#x,hello,y}", "#1024,Hello%20World!,768"},
    {"{#path,x}/here", "#/foo/bar,1024/here"},
    {"{#path:6}/here", "#/foo/b/here"},
    {"{#list}", "#red,green,blue"},
    {"{#list*}", "#red,green,blue"},
    {"{#keys}", "#semi,;,dot,.,comma,,"},
    {"{#keys*}", "#semi=;,dot=.,comma=,"},
    /* 3.2.5 label expansion */
    {"{.who}", ".fred"},
    {"{.who,who}", ".fred.fred"},
    {"{.half,who}", ".50%25.fred"},
    {"www{.dom*}", "www.example.com"},
    {"X{.var}", "X.value"},
    {"X{.empty}", "X."},
    {"X{.undef}", "X"},
    {"X{.var:3}", "X.val"},
    {"X{.list}", "X.red,green,blue"},
    {"X{.list*}", "X.red.green.blue"},
    {"X{.keys}", "X.semi,%3B,dot,.,comma,%2C"},
    {"X{.keys*}", "X.semi=%3B.dot=..comma=%2C"},
    {"X{.empty_keys}", "X"},
    {"X{.empty_keys*}", "X"},
    /* 3.2.6 path segment expansion */
    {"{/who}", "/fred"},
    {"{/who,who}", "/fred/fred"},
    {"{/half,who}", "/50%25/fred"},
    {"{/who,dub}", "/fred/me%2Ftoo"},
    {"{/var}", "/value"},
    {"{/var,empty}", "/value/"},
    {"{/var,undef}", "/value"},
    {"{/var,x}/here", "/value/1024/here"},
    {"{/var:1,var}", "/v/value"},
    {"{/list}", "/red,green,blue"},
    {"{/list*}", "/red/green/blue"},
    {"{/list*,path:4}", "/red/green/blue/%2Ffoo"},
    {"{/keys}", "/semi,%3B,dot,.,comma,%2C"},
    {"{/keys*}", "/semi=%3B/dot=./comma=%2C"},
    /* 3.2.7 path-style parameter expansion */
    {"{;who}", ";who=fred"},
    {"{;half}", ";half=50%25"},
    {"{;empty}", ";empty"},
    {"{;v,empty,who}", ";v=6;empty;who=fred"},
    {"{;v,bar,who}", ";v=6;who=fred"},
    {"{;x,y}", ";x=1024;y=768"},
    {"{;x,y,empty}", ";x=1024;y=768;empty"},
    {"{;x,y,undef}", ";x=1024;y=768"},
    {"{;hello:5}", ";hello=Hello"},
    {"{;list}", ";list=red,green,blue"},
    {"{;list*}", ";list=red;list=green;list=blue"},
    {"{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"},
    {"{;keys*}", ";semi=%3B;dot=.;comma=%2C"},
    /* 3.2.8 form-style query expansion */
    {"{?who}", "?who=fred"},
    {"{?half}", "?half=50%25"},
    {"{?x,y}", "?x=1024&y=768"},
    {"{?x,y,empty}", "?x=1024&y=768&empty="},
    {"{?x,y,undef}", "?x=1024&y=768"},
    {"{?var:3}", "?var=val"},
    {"{?list}", "?list=red,green,blue"},
    {"{?list*}", "?list=red&list=green&list=blue"},
    {"{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"},
    {"{?keys*}", "?semi=%3B&dot=.&comma=%2C"},
    /* 3.2.9 form-style query continuation */
    {"{&who}", "&who=fred"},
    {"{&half}", "&half=50%25"},
    {"?fixed=yes{&x}", "?fixed=yes&x=1024"},
    {"{&x,y,empty}", "&x=1024&y=768&empty="},
    {"{&x,y,undef}", "&x=1024&y=768"},
    {"{&var:3}", "&var=val"},
    {"{&list}", "&list=red,green,blue"},
    {"{&list*}", "&list=red&list=green&list=blue"},
    {"{&keys}", "&keys=semi,%3B,dot,.,comma,%2C"},
    {"{&keys*}", "&semi=%3B&dot=.&comma=%2C"},
};

static void run_expansion_table(const struct expansion_case *cases, size_t n)
{
    json_t *vars = load_json(RFC_VARIABLES);
    for (size_t i = 0; i < n; i++)
        expect_expansion(cases[i].template_text, vars, cases[i].expected);
    json_decref(vars);
}

static void test_expands_rfc_levels_1_to_3(void **state)
{
    run_expansion_table(RFC_LEVELS_1_TO_3, COUNT(RFC_LEVELS_1_TO_3));
}

static void test_expands_rfc_section_3_examples(void **state)
{
    run_expansion_table(RFC_SECTION_3, COUNT(RFC_SECTION_3));
}

/* ------------------------------------------------------------------------
 * Expansion: value types, encoding, errors
 * ------------------------------------------------------------------------ */

static void test_expands_numbers_and_booleans(void **state)
{
    json_t *vars = load_json("{\"n\": 42, \"neg\": -7, \"r\": 1.5, \"third\": 0.1,"
                             " \"big\": 1e300, \"t\": true, \"f\": false, \"nothing\": null,"
                             " \"mixed\": [1, \"a b\", null, false]}");
    expect_expansion("{n}/{neg}/{r}/{third}", vars, "42/-7/1.5/0.1");
    expect_expansion("{big}", vars, "1e%2B300");
    expect_expansion("{?t,f,nothing}", vars, "?t=true&f=false");
    expect_expansion("{mixed}", vars, "1,a%20b,false");
    expect_expansion("{n:1}", vars, "4");
    json_decref(vars);
}

static void test_expansion_encodes_by_operator(void **state)
{
    json_t *vars = load_json("{\"s\": \"a/b?c#d e%zz%41\", \"u\": \"\xC3\xA9\xE2\x82\xAC!\","
                             " \"one_empty\": [\"\"], \"gap\": [null, null],"
                             " \"holey\": {\"a\": null, \"b\": \"1\"}}");
    /* Simple: everything but unreserved is encoded, '%' included. */
    expect_expansion("{s}", vars, "a%2Fb%3Fc%23d%20e%25zz%2541");
    /* Reserved: reserved characters and existing pct-triples pass. */
    expect_expansion("{+s}", vars, "a/b?c#d%20e%25zz%41");
    /* UTF-8 is encoded byte by byte; prefixes count characters. */
    expect_expansion("{u}", vars, "%C3%A9%E2%82%AC%21");
    expect_expansion("{u:2}", vars, "%C3%A9%E2%82%AC");
    /* Non-ASCII literal text is encoded too. */
    expect_expansion("caf\xC3\xA9/{s:1}", vars, "caf%C3%A9/a");
    /* Empty composite values, and null members. */
    expect_expansion("{;one_empty}", vars, ";one_empty");
    expect_expansion("{?one_empty}", vars, "?one_empty=");
    expect_expansion("X{.gap}", vars, "X");
    expect_expansion("{?holey*}", vars, "?b=1");
    /* No variables at all. */
    expect_expansion("a{b}c{?d}", NULL, "ac");
    expect_expansion("", vars, "");
    json_decref(vars);
}

static void expect_expand_error(const char *text, const char *vars_json, const char *needle)
{
    mcp_uri_template_t *tpl = parse_ok(text);
    json_t *vars = load_json(vars_json);
    mcp_error_t err = {0};
    char *uri = (char *)"untouched";
    assert_int_equal(mcp_uri_template_expand(tpl, vars, &uri, &err), MCP_EINVAL);
    assert_null(uri);
    if (!strstr(err.message, needle))
        fail_msg("expand %s with %s: message \"%s\" lacks \"%s\"", text, vars_json, err.message,
                 needle);
    mcp_error_clear(&err);
    json_decref(vars);
    mcp_uri_template_free(tpl);
}

static void test_expansion_rejects_unusable_values(void **state)
{
    expect_expand_error("{x}", "{\"x\": [[1]]}", "'x'");
    expect_expand_error("{x*}", "{\"x\": {\"k\": {}}}", "members");
    expect_expand_error("{x:2}", "{\"x\": [\"ab\"]}", "prefix");
    expect_expand_error("{x}", "[1]", "object");
}

/* ------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------ */

static void test_accepts_well_formed_templates(void **state)
{
    static const char *const good[] = {
        "",
        "plain:text/with?query=1&x#frag",
        "{x}",
        "{x.y_z9}",
        "{%41b}",
        "{x:1}{y:9999}{z*}",
        "{a,b*,c:3}",
        "{+a}{#b}{.c}{/d}{;e}{?f}{&g}",
        "caf\xC3\xA9/\xF0\x9F\x98\x80/{x}",
        "a%20b{x}%2F",
        "test://template/{id}/data",
    };
    for (size_t i = 0; i < COUNT(good); i++) {
        mcp_uri_template_t *tpl = parse_ok(good[i]);
        assert_string_equal(mcp_uri_template_text(tpl), good[i]);
        mcp_uri_template_free(tpl);
    }
}

struct malformed_case {
    const char *template_text;
    const char *message; /* a fragment of the expected message */
};

static void test_rejects_malformed_templates(void **state)
{
    static const struct malformed_case bad[] = {
        {"{", "unterminated expression at offset 0"},
        {"a{x", "unterminated expression at offset 1"},
        {"a{x,", "unterminated expression at offset 1"},
        {"a{x:3", "unterminated expression at offset 1"},
        {"}", "'}' without a matching '{' at offset 0"},
        {"a}b{x}", "'}' without a matching '{' at offset 1"},
        {"{}", "empty expression at offset 0"},
        {"{x}{}", "empty expression at offset 3"},
        {"{=x}", "operator reserved for future extensions at offset 1"},
        {"{,x}", "operator reserved"},
        {"{!x}", "operator reserved"},
        {"{@x}", "operator reserved"},
        {"{|x}", "operator reserved"},
        {"{+}", "invalid variable name at offset 2"},
        {"{x,}", "invalid variable name at offset 3"},
        {"{x-y}", "expected ',' or '}' after a variable at offset 2"},
        {"{x y}", "expected ',' or '}'"},
        {"{{x}}", "invalid variable name at offset 1"},
        {"{.}", "invalid variable name"},
        {"{x.}", "invalid variable name at offset 2"},
        {"{x..y}", "invalid variable name at offset 2"},
        {"{.x}{..y}", "invalid variable name at offset 6"},
        {"{%4}", "invalid variable name"},
        {"{x:}", "prefix length must be 1-9999 at offset 3"},
        {"{x:0}", "prefix length must be 1-9999"},
        {"{x:10000}", "prefix length must be 1-9999"},
        {"{x:1a}", "expected ',' or '}'"},
        {"{x*:3}", "expected ',' or '}'"},
        {"{x:3*}", "expected ',' or '}'"},
        {"a b", "character not allowed in a URI template at offset 1"},
        {"a<b", "character not allowed"},
        {"a\"b", "character not allowed"},
        {"a'b", "character not allowed"},
        {"a^b", "character not allowed"},
        {"a|b", "character not allowed"},
        {"a\\b", "character not allowed"},
        {"a`b", "character not allowed"},
        {"a\tb", "character not allowed"},
        {"a\x7F", "character not allowed"},
        {"%", "'%' not followed by two hex digits at offset 0"},
        {"a%2", "'%' not followed by two hex digits"},
        {"a%zz", "'%' not followed by two hex digits"},
        {"\xFF", "invalid UTF-8 at offset 0"},
        {"ab\xC3", "invalid UTF-8 at offset 2"},
        {"\xC0\xAF", "invalid UTF-8"},       /* overlong '/' */
        {"\xED\xA0\x80", "invalid UTF-8"},   /* a surrogate */
        {"\xF4\x90\x80\x80", "invalid UTF-8"}, /* above U+10FFFF */
    };
    for (size_t i = 0; i < COUNT(bad); i++) {
        mcp_error_t err = {0};
        mcp_uri_template_t *tpl = mcp_uri_template_new(bad[i].template_text, &err);
        if (tpl)
            fail_msg("template \"%s\" was accepted", bad[i].template_text);
        if (!strstr(err.message, bad[i].message))
            fail_msg("template \"%s\": message \"%s\" lacks \"%s\"", bad[i].template_text,
                     err.message, bad[i].message);
        assert_int_equal(err.code, 0);
        mcp_error_clear(&err);
    }

    mcp_error_t err = {0};
    assert_null(mcp_uri_template_new(NULL, &err));
    assert_non_null(strstr(err.message, "invalid URI template"));
    mcp_error_clear(&err);
    assert_null(mcp_uri_template_new("{", NULL)); /* err is optional */
    mcp_uri_template_free(NULL);
}

/* ------------------------------------------------------------------------
 * Matching
 * ------------------------------------------------------------------------ */

struct match_case {
    const char *template_text;
    const char *uri;
    const char *vars; /* JSON object of the variables, or NULL: no match */
};

static void expect_match(const char *text, const char *uri, size_t uri_len, const char *vars_json)
{
    mcp_uri_template_t *tpl = parse_ok(text);
    json_t *got = (json_t *)"untouched";
    int rc = mcp_uri_template_match(tpl, uri, uri_len, &got);
    if (!vars_json) {
        if (rc != MCP_ENOTFOUND)
            fail_msg("%s should not match %s (rc %d)", text, uri, rc);
        assert_null(got);
    } else {
        if (rc != MCP_OK)
            fail_msg("%s should match %s (rc %d)", text, uri, rc);
        json_t *want = load_json(vars_json);
        if (!json_equal(got, want)) {
            char *dump = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
            fail_msg("%s on %s: got %s, want %s", text, uri, dump, vars_json);
        }
        json_decref(want);
    }
    json_decref(got);
    mcp_uri_template_free(tpl);
}

static void run_match_table(const struct match_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_match(cases[i].template_text, cases[i].uri, strlen(cases[i].uri), cases[i].vars);
}

static void test_matches_simple_variables(void **state)
{
    static const struct match_case cases[] = {
        {"test://template/{id}/data", "test://template/123/data", "{\"id\": \"123\"}"},
        {"test://template/{id}/data", "test://template/a%20b%2Fc/data", "{\"id\": \"a b/c\"}"},
        {"test://template/{id}/data", "test://template/a-b.c_d~e/data", "{\"id\": \"a-b.c_d~e\"}"},
        /* A simple variable never spans a reserved character. */
        {"test://template/{id}/data", "test://template/1/2/data", NULL},
        {"test://template/{id}/data", "test://template/a:b/data", NULL},
        {"test://template/{id}/data", "test://template/a?b/data", NULL},
        {"test://template/{id}/data", "test://template/a,b/data", NULL},
        /* ...nor matches nothing, nor tolerates a change in the literals. */
        {"test://template/{id}/data", "test://template//data", NULL},
        {"test://template/{id}/data", "test://template/123/data/", NULL},
        {"test://template/{id}/data", "test://template/123/dat", NULL},
        {"test://template/{id}/data", "TEST://template/123/data", NULL},
        {"test://template/{id}/data", "", NULL},
        /* Raw non-ASCII is taken as unreserved (IRIs); decoded values must
         * be UTF-8 without NUL. */
        {"docs://{name}", "docs://caf\xC3\xA9", "{\"name\": \"caf\xC3\xA9\"}"},
        {"docs://{name}", "docs://caf%C3%A9", "{\"name\": \"caf\xC3\xA9\"}"},
        {"docs://{name}", "docs://%FF", NULL},
        /* A span never ends inside an encoded UTF-8 character. */
        {"{y}{+z}", "%C3%A9/x", "{\"y\": \"\xC3\xA9\", \"z\": \"/x\"}"},
        {"{y}{+z}", "\xC3\xA9/x", "{\"y\": \"\xC3\xA9\", \"z\": \"/x\"}"},
        {"{y}{/z}{+w}", "%C3%A9%A9", NULL},
        {"{y}%A9", "%C3%A9", NULL},
        {"{y}%A9", "a%A9", "{\"y\": \"a\"}"},
        {"docs://{name}", "docs://a%00b", NULL},
        {"docs://{name}", "docs://a%2", NULL},
        {"docs://{name}", "docs://a%zz", NULL},
        /* Non-ASCII literal text matches raw or as its encoded form. */
        {"caf\xC3\xA9/{x}", "caf\xC3\xA9/1", "{\"x\": \"1\"}"},
        {"caf\xC3\xA9/{x}", "caf%C3%A9/1", "{\"x\": \"1\"}"},
        {"caf\xC3\xA9/{x}", "caf%c3%a9/1", "{\"x\": \"1\"}"},
        {"caf\xC3\xA9/{x}", "cafe/1", NULL},
        /* Several variables in one expression. */
        {"{x,y}", "1,2", "{\"x\": \"1\", \"y\": \"2\"}"},
        {"{x,y}", "1,", "{\"x\": \"1\", \"y\": \"\"}"},
        {"{x,y}", "1", "{\"x\": \"1\"}"},
        {"{x,y}", "1,2,3", NULL},
        {"{list*}", "red,green,blue", "{\"list\": \"red,green,blue\"}"},
        /* A variable used twice must agree with itself. */
        {"X{x}Y{x}", "X1Y1", "{\"x\": \"1\"}"},
        {"X{x}Y{x}", "X1Y2", NULL},
        /* A template without expressions matches only itself. */
        {"", "", "{}"},
        {"fixed://uri", "fixed://uri", "{}"},
        {"fixed://uri", "fixed://uri2", NULL},
    };
    run_match_table(cases, COUNT(cases));
}

static void test_matches_reserved_and_fragment_variables(void **state)
{
    static const struct match_case cases[] = {
        {"file:///{+path}", "file:///home/user/notes.txt", "{\"path\": \"home/user/notes.txt\"}"},
        {"file:///{+path}", "file:///a%20b/c?d#e", "{\"path\": \"a b/c?d#e\"}"},
        {"file:///{+path}", "file:///", NULL},
        {"file:///{+path}", "file:///a b", NULL},
        {"file:///{+path}", "file:///a\"b", NULL},
        /* The shortest span that lets the rest match. */
        {"{+path}/meta", "a/meta/b/meta", "{\"path\": \"a/meta/b\"}"},
        {"file:///{+path}{?v}", "file:///a/b?v=1", "{\"path\": \"a/b\", \"v\": \"1\"}"},
        {"file:///{+path}{?v}", "file:///a/b", "{\"path\": \"a/b\"}"},
        {"file:///{+path}{?v}", "file:///a?x=1", "{\"path\": \"a?x=1\"}"},
        {"file:///{+path}{#frag}", "file:///a/b#top", "{\"path\": \"a/b\", \"frag\": \"top\"}"},
        {"{+a}/x/{b}", "1/x/2/x/3", "{\"a\": \"1/x/2\", \"b\": \"3\"}"},
        {"{+a}/x/{b}", "1/x/2/x/3/4", NULL},
        {"{+x,y}", "a,b,c", "{\"x\": \"a\", \"y\": \"b,c\"}"},
        {"page{#section}", "page#intro/part", "{\"section\": \"intro/part\"}"},
        {"page{#section}", "page#", "{\"section\": \"\"}"},
        {"page{#section}", "page", "{}"},
    };
    run_match_table(cases, COUNT(cases));
}

static void test_matches_label_and_path_segments(void **state)
{
    static const struct match_case cases[] = {
        {"/users{/id}", "/users/7", "{\"id\": \"7\"}"},
        {"/users{/id}", "/users", "{}"},
        {"/users{/id}", "/users/", "{\"id\": \"\"}"},
        {"/users{/id}", "/users/7/posts", NULL},
        {"/users{/id,tab}", "/users/7/posts", "{\"id\": \"7\", \"tab\": \"posts\"}"},
        {"/users{/id,tab}", "/users/7/posts/1", NULL},
        {"{/path*}", "/a/b/c", "{\"path\": \"a/b/c\"}"},
        {"{/path*}{?q}", "/a/b?q=1", "{\"path\": \"a/b\", \"q\": \"1\"}"},
        {"file{.ext}", "file.tar.gz", "{\"ext\": \"tar.gz\"}"},
        {"{name}{.ext}", "a.tar.gz", "{\"name\": \"a\", \"ext\": \"tar.gz\"}"},
        {"{name}{.ext}", "README", "{\"name\": \"README\"}"},
        {"{.x,y}", ".a.b.c", "{\"x\": \"a\", \"y\": \"b.c\"}"},
        {"{a}{b}", "abc", "{\"a\": \"a\", \"b\": \"bc\"}"},
    };
    run_match_table(cases, COUNT(cases));
}

static void test_matches_query_parameters_in_any_order(void **state)
{
    static const char tpl[] = "repo://{owner}/{repo}/issues{?state,label}";
    static const struct match_case cases[] = {
        {tpl, "repo://acme/rocket/issues", "{\"owner\": \"acme\", \"repo\": \"rocket\"}"},
        {tpl, "repo://acme/rocket/issues?state=open",
         "{\"owner\": \"acme\", \"repo\": \"rocket\", \"state\": \"open\"}"},
        {tpl, "repo://acme/rocket/issues?label=bug&state=closed",
         "{\"owner\": \"acme\", \"repo\": \"rocket\", \"state\": \"closed\", \"label\": \"bug\"}"},
        {tpl, "repo://acme/rocket/issues?label=a%26b%3Dc",
         "{\"owner\": \"acme\", \"repo\": \"rocket\", \"label\": \"a&b=c\"}"},
        {tpl, "repo://acme/rocket/issues?state=",
         "{\"owner\": \"acme\", \"repo\": \"rocket\", \"state\": \"\"}"},
        {tpl, "repo://acme/rocket/issues?state",
         "{\"owner\": \"acme\", \"repo\": \"rocket\", \"state\": \"\"}"},
        /* Unknown, repeated or malformed parameters do not match. */
        {tpl, "repo://acme/rocket/issues?sort=asc", NULL},
        {tpl, "repo://acme/rocket/issues?state=open&sort=asc", NULL},
        {tpl, "repo://acme/rocket/issues?state=a&state=b", NULL},
        {tpl, "repo://acme/rocket/issues?", NULL},
        {tpl, "repo://acme/rocket/issues?&state=a", NULL},
        {tpl, "repo://acme/rocket/issues?state=a&", NULL},
        {tpl, "repo://acme/rocket/issues?state=a=b", NULL},
        {tpl, "repo://acme/rocket/issues?state=a/b", NULL},
        {tpl, "repo://acme/rocket/issues&state=a", NULL},
        {tpl, "repo://acme/rocket/pulls", NULL},
        /* Continuations and path-style parameters. */
        {"?fixed=yes{&x,y}", "?fixed=yes&y=2&x=1", "{\"x\": \"1\", \"y\": \"2\"}"},
        {"{?a}{&b}", "?a=1&b=2", "{\"a\": \"1\", \"b\": \"2\"}"},
        {"{?a}{&b}", "&b=2", "{\"b\": \"2\"}"},
        {"{;x,y,empty}", ";y=768;x=1024;empty",
         "{\"x\": \"1024\", \"y\": \"768\", \"empty\": \"\"}"},
        {"{;x}", ";x=1;x=2", NULL},
        {"{;x}", ";", NULL},
    };
    run_match_table(cases, COUNT(cases));
}

/* Matching undoes the expansions of RFC 6570 section 1.2 (levels 1-3). */
static void test_matches_rfc_expansions_back(void **state)
{
    static const struct match_case cases[] = {
        {"{var}", "value", "{\"var\": \"value\"}"},
        {"{hello}", "Hello%20World%21", "{\"hello\": \"Hello World!\"}"},
        {"{+var}", "value", "{\"var\": \"value\"}"},
        {"{+hello}", "Hello%20World!", "{\"hello\": \"Hello World!\"}"},
        {"{+path}/here", "/foo/bar/here", "{\"path\": \"/foo/bar\"}"},
        {"here?ref={+path}", "here?ref=/foo/bar", "{\"path\": \"/foo/bar\"}"},
        {"X{#var}", "X#value", "{\"var\": \"value\"}"},
        {"X{#hello}", "X#Hello%20World!", "{\"hello\": \"Hello World!\"}"},
        {"map?{x,y}", "map?1024,768", "{\"x\": \"1024\", \"y\": \"768\"}"},
        {"{x,hello,y}", "1024,Hello%20World%21,768",
         "{\"x\": \"1024\", \"hello\": \"Hello World!\", \"y\": \"768\"}"},
        {"{+x,hello,y}", "1024,Hello%20World!,768",
         "{\"x\": \"1024\", \"hello\": \"Hello World!\", \"y\": \"768\"}"},
        {"{+path,x}/here", "/foo/bar,1024/here", "{\"path\": \"/foo/bar\", \"x\": \"1024\"}"},
        {"{#x,hello,y}", "#1024,Hello%20World!,768",
         "{\"x\": \"1024\", \"hello\": \"Hello World!\", \"y\": \"768\"}"},
        {"{#path,x}/here", "#/foo/bar,1024/here", "{\"path\": \"/foo/bar\", \"x\": \"1024\"}"},
        {"X{.var}", "X.value", "{\"var\": \"value\"}"},
        {"X{.x,y}", "X.1024.768", "{\"x\": \"1024\", \"y\": \"768\"}"},
        {"{/var}", "/value", "{\"var\": \"value\"}"},
        {"{/var,x}/here", "/value/1024/here", "{\"var\": \"value\", \"x\": \"1024\"}"},
        {"{;x,y}", ";x=1024;y=768", "{\"x\": \"1024\", \"y\": \"768\"}"},
        {"{;x,y,empty}", ";x=1024;y=768;empty",
         "{\"x\": \"1024\", \"y\": \"768\", \"empty\": \"\"}"},
        {"{?x,y}", "?x=1024&y=768", "{\"x\": \"1024\", \"y\": \"768\"}"},
        {"{?x,y,empty}", "?x=1024&y=768&empty=",
         "{\"x\": \"1024\", \"y\": \"768\", \"empty\": \"\"}"},
        {"?fixed=yes{&x}", "?fixed=yes&x=1024", "{\"x\": \"1024\"}"},
        {"{&x,y,empty}", "&x=1024&y=768&empty=",
         "{\"x\": \"1024\", \"y\": \"768\", \"empty\": \"\"}"},
    };
    run_match_table(cases, COUNT(cases));
}

static void test_match_takes_an_explicit_length(void **state)
{
    /* The URI need not be NUL-terminated, and a NUL inside never matches. */
    expect_match("x://{id}", "x://12345", 6, "{\"id\": \"12\"}");
    expect_match("x://{id}", "x://1\0002", 7, NULL);
    expect_match("x://{+id}", "x://1\0002", 7, NULL);
}

/* A URI of n 'a's against a template of adjacent simple expressions and a
 * final 'z' that is never there. */
static int match_adjacent(int expressions, size_t n)
{
    char tpl_text[64] = "";
    for (int i = 0; i < expressions; i++)
        snprintf(tpl_text + strlen(tpl_text), sizeof tpl_text - strlen(tpl_text), "{v%d}", i);
    strcat(tpl_text, "z");
    char *uri = malloc(n);
    assert_non_null(uri);
    memset(uri, 'a', n);

    mcp_uri_template_t *tpl = parse_ok(tpl_text);
    json_t *vars = (json_t *)"untouched";
    int rc = mcp_uri_template_match(tpl, uri, n, &vars);
    assert_null(vars);
    mcp_uri_template_free(tpl);
    free(uri);
    return rc;
}

static void test_backtracking_is_bounded(void **state)
{
    /* Without remembering failures this costs ~n^3/6 steps, far beyond the
     * budget; with them, ~3n^2, well within it. */
    assert_int_equal(match_adjacent(3, 300), MCP_ENOTFOUND);
    /* Quadratic work beyond the linear budget is cut short. */
    assert_int_equal(match_adjacent(4, 3000), MCP_ELIMIT);
    /* A long URI against an ordinary template costs linear work. */
    size_t n = 1000000;
    char *uri = malloc(n + 1);
    assert_non_null(uri);
    memcpy(uri, "file:///", 8);
    memset(uri + 8, 'a', n - 8);
    uri[n] = '\0';
    expect_match("file:///{+path}/x", uri, n, NULL);
    mcp_uri_template_t *tpl = parse_ok("file:///{+path}");
    json_t *vars = NULL;
    assert_int_equal(mcp_uri_template_match(tpl, uri, n, &vars), MCP_OK);
    assert_int_equal(json_string_length(json_object_get(vars, "path")), n - 8);
    json_decref(vars);
    mcp_uri_template_free(tpl);
    free(uri);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expands_rfc_levels_1_to_3),
        cmocka_unit_test(test_expands_rfc_section_3_examples),
        cmocka_unit_test(test_expands_numbers_and_booleans),
        cmocka_unit_test(test_expansion_encodes_by_operator),
        cmocka_unit_test(test_expansion_rejects_unusable_values),
        cmocka_unit_test(test_accepts_well_formed_templates),
        cmocka_unit_test(test_rejects_malformed_templates),
        cmocka_unit_test(test_matches_simple_variables),
        cmocka_unit_test(test_matches_reserved_and_fragment_variables),
        cmocka_unit_test(test_matches_label_and_path_segments),
        cmocka_unit_test(test_matches_query_parameters_in_any_order),
        cmocka_unit_test(test_matches_rfc_expansions_back),
        cmocka_unit_test(test_match_takes_an_explicit_length),
        cmocka_unit_test(test_backtracking_is_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
