/*
 * SKILL.md frontmatter: the fences, the YAML 1.2 core schema as the npm
 * `yaml` package reads it (each expectation below was checked against
 * yaml 2.9 by hand), the refusals and limits, equality of two
 * frontmatters, and skill names.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "skill_md.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static json_t *load_json(const char *text)
{
    json_error_t error;
    json_t *value = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &error);
    if (!value)
        fail_msg("bad JSON in the test table: %s (%s)", text, error.text);
    return value;
}

/* ------------------------------------------------------------------------
 * libyaml is loaded on first use
 * ------------------------------------------------------------------------ */

/* Runs first: nothing before it has parsed YAML. */
static void test_libyaml_is_loaded_when_a_frontmatter_is_first_parsed(void **state)
{
    (void)state;
    assert_null(dlopen(MCP_YAML_SONAME, RTLD_NOW | RTLD_NOLOAD));

    json_t *fm = NULL;
    mcp_error_t err = {0};
    const char no_fence[] = "name: x\n";
    assert_int_equal(mcp_skill_md_frontmatter(no_fence, strlen(no_fence), &fm, NULL, &err),
                     MCP_EINVAL);
    mcp_error_clear(&err);
    assert_null(dlopen(MCP_YAML_SONAME, RTLD_NOW | RTLD_NOLOAD)); /* fences need no YAML */

    const char skill[] = "---\nname: x\n---\n";
    assert_int_equal(mcp_skill_md_frontmatter(skill, strlen(skill), &fm, NULL, &err), MCP_OK);
    json_decref(fm);
    void *lib = dlopen(MCP_YAML_SONAME, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(lib);
    dlclose(lib); /* drops the reference RTLD_NOLOAD took */
}

/* ------------------------------------------------------------------------
 * Accepted SKILL.md texts
 * ------------------------------------------------------------------------ */

struct parse_case {
    const char *what;
    const char *text;
    const char *expected; /* JSON */
    size_t body_offset;
};

static const struct parse_case FENCES[] = {
    {"plain fences", "---\nname: x\n---\nbody", "{\"name\": \"x\"}", 16},
    {"byte order mark", "\xEF\xBB\xBF---\nname: x\n---\nbody", "{\"name\": \"x\"}", 19},
    {"CRLF line ends", "---\r\nname: x\r\nd: y\r\n---\r\nbody", "{\"name\": \"x\", \"d\": \"y\"}",
     25},
    {"blanks after the closing fence", "---\nname: x\n---  \t\nbody", "{\"name\": \"x\"}", 19},
    /* The suite's regex has no blanks after the opening fence; the header
     * allows them on both, as people write them. */
    {"blanks after the opening fence", "--- \t\nname: x\n---\nbody", "{\"name\": \"x\"}", 18},
    {"closing fence ends the text", "---\nname: x\n---", "{\"name\": \"x\"}", 15},
    {"closing fence with blanks ends the text", "---\nname: x\n--- ", "{\"name\": \"x\"}", 16},
    {"the first closing fence wins", "---\nname: x\n---\n---\nbody", "{\"name\": \"x\"}", 16},
    {"body starting with a blank line", "---\nname: x\n---\n\nbody", "{\"name\": \"x\"}", 16},
    /* The line end of the opening fence cannot end the YAML, so the second
     * "---" is the YAML's own document start, as the suite's regex reads it. */
    {"explicit document start", "---\n---\nname: x\n---\nbody", "{\"name\": \"x\"}", 20},
    {"document end marker", "---\nname: x\n...\n---\n", "{\"name\": \"x\"}", 20},
    {"comments", "---\n# about\nname: x # the name\n---\n", "{\"name\": \"x\"}", 35},
};

/* Scalars, each as the value of `v` in "---\nv: <scalar>\n---\n". */
struct scalar_case {
    const char *yaml;
    const char *expected; /* JSON */
};

static const struct scalar_case SCALARS[] = {
    /* null */
    {"", "null"},
    {"~", "null"},
    {"null", "null"},
    {"Null", "null"},
    {"NULL", "null"},
    {"nULL", "\"nULL\""},
    /* booleans, and the YAML 1.1 ones that 1.2 reads as strings */
    {"true", "true"},
    {"True", "true"},
    {"TRUE", "true"},
    {"false", "false"},
    {"False", "false"},
    {"FALSE", "false"},
    {"tRUE", "\"tRUE\""},
    {"yes", "\"yes\""},
    {"No", "\"No\""},
    {"on", "\"on\""},
    {"OFF", "\"OFF\""},
    {"y", "\"y\""},
    /* integers */
    {"0", "0"},
    {"12", "12"},
    {"+12", "12"},
    {"-12", "-12"},
    {"-0", "0"},
    {"012", "12"},
    {"00", "0"},
    {"0o17", "15"},
    {"0x1F", "31"},
    {"0xff", "255"},
    {"9223372036854775807", "9223372036854775807"},
    {"-9223372036854775808", "-9223372036854775808"},
    {"0x7FFFFFFFFFFFFFFF", "9223372036854775807"},
    {"0o777777777777777777777", "9223372036854775807"},
    /* not integers */
    {"0O17", "\"0O17\""},
    {"0X1F", "\"0X1F\""},
    {"-0x1", "\"-0x1\""},
    {"+0o7", "\"+0o7\""},
    {"0o8", "\"0o8\""},
    {"0x", "\"0x\""},
    {"0xg", "\"0xg\""},
    {"1_000", "\"1_000\""},
    {"0b101", "\"0b101\""},
    {"1,000", "\"1,000\""},
    /* floats */
    {"1.5", "1.5"},
    {"-1.5", "-1.5"},
    {".5", "0.5"},
    {"-.5", "-0.5"},
    {"1.", "1.0"},
    {"1.0", "1.0"},
    {"0.1", "0.1"},
    {"1e5", "100000.0"},
    {"1E+5", "100000.0"},
    {"+.5e-3", "0.0005"},
    {"2.5e-300", "2.5e-300"},
    {"1e-400", "0.0"},
    {"123456789012345678901234567890.0", "1.2345678901234568e+29"},
    /* not floats */
    {"1e", "\"1e\""},
    {"e5", "\"e5\""},
    {".", "\".\""},
    {"+", "\"+\""},
    {"1.5.2", "\"1.5.2\""},
    {"1e5.0", "\"1e5.0\""},
    {".Nan", "\".Nan\""},
    {"inf", "\"inf\""},
    /* other plain text */
    {"2024-01-01", "\"2024-01-01\""},
    {"12:30", "\"12:30\""},
    {"hello world", "\"hello world\""},
    {"Extract, fill, and assemble PDFs", "\"Extract, fill, and assemble PDFs\""},
    {"a:b", "\"a:b\""},
    /* quoted scalars are strings, whatever they hold */
    {"'12'", "\"12\""},
    {"\"true\"", "\"true\""},
    {"'null'", "\"null\""},
    {"''", "\"\""},
    {"\"\"", "\"\""},
    {"'it''s'", "\"it's\""},
    {"\"tab\\there\"", "\"tab\\there\""},
    {"\"\\u00e9\\U0001F600\"", "\"\\u00e9\\ud83d\\ude00\""},
    {"\"a\\0b\"", "\"a\\u0000b\""},
    {"caf\xC3\xA9", "\"caf\\u00e9\""},
    /* core tags */
    {"!!str 12", "\"12\""},
    {"!!str", "\"\""},
    {"!!int \"12\"", "12"},
    {"!!int 0x10", "16"},
    {"!!float 1", "1.0"}, /* YAML 1.2's !!float; the `yaml` package leaves "1" a string */
    {"!!float '1.5'", "1.5"},
    {"!!bool true", "true"},
    {"!!null ~", "null"},
    {"!!null ''", "null"},
    {"! 12", "\"12\""},
    {"!<tag:yaml.org,2002:str> 12", "\"12\""},
    {"!!seq [1]", "[1]"},
    {"!!map {a: 1}", "{\"a\": 1}"},
};

/* Block scalars and collections: whole frontmatters. */
static const struct parse_case STRUCTURES[] = {
    {"literal block", "---\nv: |\n  x\n   y\nw: 1\n---\n", "{\"v\": \"x\\n y\\n\", \"w\": 1}", 27},
    {"literal block, strip", "---\nv: |-\n  x\n  y\n---\n", "{\"v\": \"x\\ny\"}", 22},
    {"literal block, keep", "---\nv: |+\n  x\n\nw: 1\n---\n", "{\"v\": \"x\\n\\n\", \"w\": 1}", 24},
    {"literal block at the end keeps one line end",
     "---\nv: |+\n  x\n\n---\n", "{\"v\": \"x\\n\"}", 19},
    {"folded block", "---\nv: >\n  folded\n  text\n\n  para\n---\n",
     "{\"v\": \"folded text\\npara\\n\"}", 37},
    /* The line end before the closing fence is not part of the YAML by
     * the suite's regex, yet the `yaml` package ends a block scalar on the
     * last line with a line end, as if it were. */
    {"literal block on the last line",
     "---\nname: x\ndescription: |\n  Line one.\n  Line two.\n---\nbody",
     "{\"name\": \"x\", \"description\": \"Line one.\\nLine two.\\n\"}", 55},
    {"literal block on the last line, CRLF",
     "---\r\nname: x\r\ndescription: |\r\n  Line one.\r\n  Line two.\r\n---\r\nbody",
     "{\"name\": \"x\", \"description\": \"Line one.\\nLine two.\\n\"}", 61},
    {"literal block ending the text", "---\nv: |\n  x\n---", "{\"v\": \"x\\n\"}", 16},
    {"folded block, keep, on the last line", "---\nv: >+\n  x\n---\n", "{\"v\": \"x\\n\"}",
     18},
    {"literal block, strip, on the last line", "---\nv: |-\n  x\n---\n", "{\"v\": \"x\"}",
     18},
    {"literal block, then blank lines", "---\nv: |\n  x\n\n\n---\n", "{\"v\": \"x\\n\"}", 19},
    {"plain scalar over two lines", "---\nv: a\n  b\n---\n", "{\"v\": \"a b\"}", 17},
    {"quoted scalar over two lines", "---\nv: \"a\n  b\"\n---\n", "{\"v\": \"a b\"}", 19},
    {"folded block, strip, more indented line", "---\nv: >-\n  one\n   two\n  three\n---\n",
     "{\"v\": \"one\\n two\\nthree\"}", 35},
    {"flow sequence", "---\nv: [1, b, {c: d}, []]\n---\n",
     "{\"v\": [1, \"b\", {\"c\": \"d\"}, []]}", 30},
    {"block sequence", "---\nv:\n  - 1\n  - - 2\n    - 3\n  - k: v\n---\n",
     "{\"v\": [1, [2, 3], {\"k\": \"v\"}]}", 42},
    {"flow mapping at the top", "---\n{a: 1, b: [x, y], c: {}}\n---\n",
     "{\"a\": 1, \"b\": [\"x\", \"y\"], \"c\": {}}", 33},
    {"nested metadata",
     "---\nname: pdf-processing\ndescription: Extract PDFs\nmetadata:\n"
     "  author: example-org\n  version: \"1.0\"\n  tags: [pdf, forms]\n  nested:\n    deep: true\n"
     "---\n",
     "{\"name\": \"pdf-processing\", \"description\": \"Extract PDFs\", \"metadata\": "
     "{\"author\": \"example-org\", \"version\": \"1.0\", \"tags\": [\"pdf\", \"forms\"], "
     "\"nested\": {\"deep\": true}}}",
     150},
    /* Keys become the JavaScript object keys the `yaml` package makes. */
    {"numeric keys", "---\n1: a\n0x10: b\n1.5: c\n1e21: d\n-0.0: e\n---\n",
     "{\"1\": \"a\", \"16\": \"b\", \"1.5\": \"c\", \"1e+21\": \"d\", \"0\": \"e\"}", 44},
    {"null and boolean keys", "---\n~: a\ntrue: b\n---\n", "{\"\": \"a\", \"true\": \"b\"}", 21},
    {"quoted keys", "---\n'1.0': a\n\"x y\": b\n---\n", "{\"1.0\": \"a\", \"x y\": \"b\"}", 26},
    {"complex key syntax, scalar keys", "---\n? |\n  x\n: y\n? a\n? b\n: c\n---\n",
     "{\"x\\n\": \"y\", \"a\": null, \"b\": \"c\"}", 32},
};

static void expect_parse(const char *what, const char *text, size_t len, const char *expected,
                         size_t body_offset)
{
    json_t *want = load_json(expected), *got = NULL;
    size_t offset = SIZE_MAX;
    mcp_error_t err = {0};
    int rc = mcp_skill_md_frontmatter(text, len, &got, &offset, &err);
    if (rc != MCP_OK)
        fail_msg("%s: refused (%d): %s", what, rc, err.message);
    /* json_equal() is strict about types: 1 and 1.0 differ. */
    if (!json_equal(got, want)) {
        char *dump = json_dumps(got, JSON_ENCODE_ANY | JSON_SORT_KEYS);
        fail_msg("%s: got %s, want %s", what, dump, expected);
    }
    if (offset != body_offset)
        fail_msg("%s: body at %zu, want %zu", what, offset, body_offset);
    json_decref(got);
    json_decref(want);
}

static void run_parse_cases(const struct parse_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        expect_parse(cases[i].what, cases[i].text, strlen(cases[i].text), cases[i].expected,
                     cases[i].body_offset);
}

static void test_fences(void **state)
{
    (void)state;
    run_parse_cases(FENCES, COUNT(FENCES));
}

static void test_scalars_follow_the_core_schema(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(SCALARS); i++) {
        char text[256], expected[256];
        int n = snprintf(text, sizeof text, "---\nv: %s\n---\n", SCALARS[i].yaml);
        snprintf(expected, sizeof expected, "{\"v\": %s}", SCALARS[i].expected);
        expect_parse(SCALARS[i].yaml, text, (size_t)n, expected, (size_t)n);
    }
}

static void test_block_scalars_collections_and_keys(void **state)
{
    (void)state;
    run_parse_cases(STRUCTURES, COUNT(STRUCTURES));
}

/* The text need not end with a NUL, and nothing after `len` is read. */
static void test_the_text_ends_at_len(void **state)
{
    (void)state;
    const char text[] = "---\nname: x\n---\nname: y\n---\n";
    expect_parse("cut after the closing fence", text, 15, "{\"name\": \"x\"}", 15);

    char *exact = malloc(15);
    memcpy(exact, text, 15);
    expect_parse("no NUL after the text", exact, 15, "{\"name\": \"x\"}", 15);
    free(exact);

    json_t *fm = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_skill_md_frontmatter(text, 12, &fm, NULL, &err), MCP_EINVAL);
    assert_null(fm);
    mcp_error_clear(&err);
}

/* ------------------------------------------------------------------------
 * Refused texts
 * ------------------------------------------------------------------------ */

struct refusal_case {
    const char *what;
    const char *text;
    const char *message; /* a part of the error message */
};

static const struct refusal_case REFUSALS[] = {
    /* fences */
    {"no frontmatter", "name: x\n---\n", "does not begin"},
    {"a blank line before the fence", "\n---\nname: x\n---\n", "does not begin"},
    {"four dashes open", "----\nname: x\n---\n", "does not begin"},
    {"text after the opening dashes", "--- name: x\n---\n", "does not begin"},
    {"only the opening fence", "---", "does not begin"},
    {"no closing fence", "---\nname: x\n", "no closing"},
    {"four dashes do not close", "---\nname: x\n----\n", "no closing"},
    {"an indented fence does not close", "---\nname: x\n ---\n", "no closing"},
    {"empty frontmatter", "---\n---\n", "no closing"},
    {"blank frontmatter", "---\n\n---\n", "empty"},
    {"comment-only frontmatter", "---\n# nothing\n---\n", "empty"},
    /* not a mapping */
    {"a sequence", "---\n- a\n- b\n---\n", "line 2, column 1: the frontmatter is a sequence"},
    {"a scalar", "---\njust text\n---\n", "is a scalar"},
    {"a number", "---\n42\n---\n", "is a scalar"},
    {"a null document", "---\n~\n---\n", "is a scalar"},
    /* syntax, and where */
    {"bad indentation", "---\nname: x\n  bad: y\n---\n", "line 3, column 6:"},
    {"unclosed flow sequence", "---\na: [1, 2\nb: 3\n---\n", "line "},
    {"a second document", "---\na: 1\n--- {b: 2}\n---\n", "line 3, column 1: a second YAML"},
    {"a bare second document", "---\na: 1\n...\nb: 2\n---\n", "line 4, column 1:"},
    {"a control character", "---\na: x\x01y\n---\n", "line 2, column 5: control characters"},
    {"a NUL byte", "---\na: x\n---\n", NULL}, /* built in the test: the NUL replaces the x */
    /* keys */
    {"a duplicate key", "---\na: 1\nb: 2\na: 3\n---\n",
     "line 4, column 1: the key \"a\" appears twice"},
    {"a duplicate nested key", "---\nm:\n  k: 1\n  k: 2\n---\n", "line 4, column 3"},
    {"keys equal once read", "---\n1: a\n'1': b\n---\n", "\"1\" appears twice"},
    {"keys equal as numbers", "---\n1: a\n1.0: b\n---\n", "\"1\" appears twice"},
    {"a sequence key", "---\n? [a]\n: b\n---\n", "a key is a sequence"},
    {"a mapping key", "---\n{a: 1}: b\n---\n", "a key is a mapping"},
    {"a NUL in a key", "---\n\"a\\0\": 1\n---\n", "NUL"},
    /* anchors and aliases */
    {"an anchor and an alias", "---\na: &x 1\nb: *x\n---\n", "line 2, column 4: the anchor &x"},
    {"an anchor on a sequence", "---\na: &list [1]\n---\n", "anchor &list"},
    {"an anchor on a key", "---\n&k a: 1\n---\n", "anchor &k"},
    {"an alias alone", "---\na: *x\n---\n", "alias *x"},
    /* tags */
    {"a local tag", "---\na: !foo x\n---\n", "!foo is not one of the YAML core"},
    {"!!binary", "---\na: !!binary aGk=\n---\n", "tag:yaml.org,2002:binary"},
    {"!!timestamp", "---\na: !!timestamp 2020-01-01\n---\n", "tag:yaml.org,2002:timestamp"},
    {"!!set", "---\na: !!set {x}\n---\n", "does not fit a mapping"},
    {"!!int on a float", "---\na: !!int 1.0\n---\n", "is not what its tag"},
    {"!!bool on yes", "---\na: !!bool yes\n---\n", "is not what its tag"},
    {"!!null on a word", "---\na: !!null nothing\n---\n", "is not what its tag"},
    {"!!float on a word", "---\na: !!float one\n---\n", "is not what its tag"},
    {"!!map on a sequence", "---\na: !!map [1]\n---\n", "does not fit a sequence"},
    {"!!str on a mapping", "---\na: !!str {b: 1}\n---\n", "does not fit a mapping"},
    /* values JSON cannot carry */
    {".inf", "---\na: .inf\n---\n", "no infinities"},
    {"-.Inf", "---\na: -.Inf\n---\n", "no infinities"},
    {"+.INF", "---\na: +.INF\n---\n", "no infinities"},
    {".nan", "---\na: .nan\n---\n", "no infinities"},
    {".NaN", "---\na: .NaN\n---\n", "no infinities"},
    {".NAN", "---\na: .NAN\n---\n", "no infinities"},
    {"!!float .inf", "---\na: !!float .inf\n---\n", "no infinities"},
    {"a float too large", "---\na: 1e400\n---\n", "too large"},
    {"a negative float too large", "---\na: -1.5e309\n---\n", "too large"},
    {"int64 max + 1", "---\na: 9223372036854775808\n---\n", "does not fit in 64 bits"},
    {"int64 min - 1", "---\na: -9223372036854775809\n---\n", "does not fit in 64 bits"},
    {"hex beyond int64", "---\na: 0x8000000000000000\n---\n", "does not fit in 64 bits"},
    {"octal beyond int64", "---\na: 0o1000000000000000000000\n---\n", "does not fit in 64 bits"},
    {"an integer beyond any int", "---\na: 123456789012345678901234567890\n---\n",
     "does not fit in 64 bits"},
    {"a key beyond int64", "---\n99999999999999999999: a\n---\n", "does not fit in 64 bits"},
    /* UTF-8 */
    {"a stray continuation byte", "---\na: \x80\n---\n", "line 2, column 4: the text is not UTF-8"},
    {"a bad second byte", "---\na: \xC3\x28\n---\n", "not UTF-8"},
    {"an overlong form", "---\na: \xC0\xAF\n---\n", "not UTF-8"},
    {"an overlong three-byte form", "---\na: \xE0\x80\xAF\n---\n", "not UTF-8"},
    {"a surrogate", "---\na: \xED\xA0\x80\n---\n", "not UTF-8"},
    {"beyond U+10FFFF", "---\na: \xF4\x90\x80\x80\n---\n", "not UTF-8"},
    {"a truncated sequence", "---\na: \xE2\x82\n---\n", "not UTF-8"},
    {"after a multibyte character", "---\nn: caf\xC3\xA9 \xFF\n---\n", "line 2, column 9"},
};

static void expect_refusal(const char *what, const char *text, size_t len, int want_rc,
                           const char *message)
{
    json_t *fm = (json_t *)&fm; /* must be reset to NULL */
    size_t offset = 12345;
    mcp_error_t err = {0};
    int rc = mcp_skill_md_frontmatter(text, len, &fm, &offset, &err);
    if (rc != want_rc)
        fail_msg("%s: rc %d, want %d (%s)", what, rc, want_rc, err.message);
    if (fm)
        fail_msg("%s: a frontmatter came back with the error", what);
    if (offset != 12345)
        fail_msg("%s: the body offset was written on failure", what);
    if (message && !strstr(err.message, message))
        fail_msg("%s: message \"%s\" lacks \"%s\"", what, err.message, message);
    mcp_error_clear(&err);
}

static void test_refusals(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(REFUSALS); i++) {
        const struct refusal_case *c = &REFUSALS[i];
        if (c->message) {
            expect_refusal(c->what, c->text, strlen(c->text), MCP_EINVAL, c->message);
            continue;
        }
        /* A NUL byte inside the frontmatter (libyaml refuses it as a
         * control character). */
        char text[64];
        size_t len = strlen(c->text);
        memcpy(text, c->text, len);
        *strchr(text, 'x') = '\0';
        expect_refusal(c->what, text, len, MCP_EINVAL, "line 2, column 4:");
    }
}

/* A message quotes a long key in part, cut between two characters. */
static void test_messages_quote_whole_characters(void **state)
{
    (void)state;
    char text[512], *p = text + sprintf(text, "---\n");
    for (int line = 0; line < 2; line++) {
        for (int i = 0; i < 30; i++)
            p += sprintf(p, "\xC3\xA9"); /* é: 60 bytes, so the cut at 40 falls on a boundary */
        p += sprintf(p, "x\xE2\x82\xAC: %d\n", line); /* then x and a 3-byte € across byte 40 */
    }
    sprintf(p, "---\n");
    /* The 40 bytes are 20 é; the message quotes exactly them. */
    json_t *fm = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_skill_md_frontmatter(text, strlen(text), &fm, NULL, &err), MCP_EINVAL);
    char want[128];
    p = want + sprintf(want, "the key \"");
    for (int i = 0; i < 20; i++)
        p += sprintf(p, "\xC3\xA9");
    sprintf(p, "\" appears twice");
    assert_non_null(strstr(err.message, want));
    mcp_error_clear(&err);

    /* 39 ASCII bytes, then a 2-byte character across byte 40: cut before it. */
    char odd[128], x39[40];
    memset(x39, 'x', 39);
    x39[39] = '\0';
    sprintf(odd, "---\na: !!int %s\xC3\xA9\n---\n", x39);
    assert_int_equal(mcp_skill_md_frontmatter(odd, strlen(odd), &fm, NULL, &err), MCP_EINVAL);
    json_t *message = json_string(err.message); /* refuses a message that is not UTF-8 */
    assert_non_null(message);
    sprintf(want, "\"%s\" is not", x39);
    assert_non_null(strstr(err.message, want));
    json_decref(message);
    mcp_error_clear(&err);
}

/* ------------------------------------------------------------------------
 * Limits
 * ------------------------------------------------------------------------ */

/* "---\na: " + `depth - 1` nested flow sequences + "\n---\n": `depth`
 * levels, counting the top mapping. */
static char *nested(size_t depth)
{
    size_t inner = depth - 1;
    char *text = malloc(16 + 2 * inner);
    char *p = text + sprintf(text, "---\na: ");
    memset(p, '[', inner);
    memset(p + inner, ']', inner);
    strcpy(p + 2 * inner, "\n---\n");
    return text;
}

static void test_depth_limit(void **state)
{
    (void)state;
    json_t *fm = NULL;
    mcp_error_t err = {0};
    char *ok = nested(MCP_SKILL_MD_MAX_DEPTH);
    assert_int_equal(mcp_skill_md_frontmatter(ok, strlen(ok), &fm, NULL, &err), MCP_OK);
    json_t *v = json_object_get(fm, "a");
    for (int level = 2; level < MCP_SKILL_MD_MAX_DEPTH; level++)
        v = json_array_get(v, 0);
    assert_true(json_is_array(v) && json_array_size(v) == 0);
    json_decref(fm);
    free(ok);

    char *deep = nested(MCP_SKILL_MD_MAX_DEPTH + 1);
    expect_refusal("one level too deep", deep, strlen(deep), MCP_EINVAL,
                   "more than 32 mappings and sequences nested");
    free(deep);

    /* Refused as soon as the limit is crossed, not after reading it all. */
    char *very_deep = nested(20000);
    expect_refusal("very deep", very_deep, strlen(very_deep), MCP_EINVAL, "line 2, column 35:");
    free(very_deep);

    /* Block mappings count the same. */
    char block[4096], *p = block + sprintf(block, "---\n");
    for (int level = 0; level < MCP_SKILL_MD_MAX_DEPTH; level++)
        p += sprintf(p, "%*sk:\n", level, "");
    p += sprintf(p, "%*sk: 1\n---\n", MCP_SKILL_MD_MAX_DEPTH, "");
    expect_refusal("block mappings too deep", block, strlen(block), MCP_EINVAL, "nested");
}

/* "---\na: xxx...\n---\n" whose YAML is `yaml_len` bytes. */
static char *sized(size_t yaml_len)
{
    char *text = malloc(yaml_len + 16);
    memcpy(text, "---\na: ", 7);
    memset(text + 7, 'x', yaml_len - 3);
    strcpy(text + 4 + yaml_len, "\n---\n");
    return text;
}

static void test_size_limit(void **state)
{
    (void)state;
    json_t *fm = NULL;
    mcp_error_t err = {0};
    char *ok = sized(MCP_SKILL_MD_MAX_FRONTMATTER);
    assert_int_equal(mcp_skill_md_frontmatter(ok, strlen(ok), &fm, NULL, &err), MCP_OK);
    assert_int_equal(json_string_length(json_object_get(fm, "a")),
                     MCP_SKILL_MD_MAX_FRONTMATTER - 3);
    json_decref(fm);
    free(ok);

    char *big = sized(MCP_SKILL_MD_MAX_FRONTMATTER + 1);
    expect_refusal("one byte too many", big, strlen(big), MCP_EINVAL, "65537 bytes");
    free(big);
}

static void test_arguments(void **state)
{
    (void)state;
    json_t *fm = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_skill_md_frontmatter(NULL, 0, &fm, NULL, &err), MCP_EINVAL);
    mcp_error_clear(&err);
    assert_int_equal(mcp_skill_md_frontmatter("---\na: 1\n---\n", 12, NULL, NULL, &err),
                     MCP_EINVAL);
    mcp_error_clear(&err);
    /* err is optional */
    assert_int_equal(mcp_skill_md_frontmatter("x", 1, &fm, NULL, NULL), MCP_EINVAL);
}

/* ------------------------------------------------------------------------
 * Equality
 * ------------------------------------------------------------------------ */

struct equal_case {
    const char *a, *b; /* JSON */
    bool equal;
};

static const struct equal_case EQUALITY[] = {
    {"{\"a\": 1, \"b\": 2}", "{\"b\": 2, \"a\": 1}", true},
    {"{\"a\": 1}", "{\"a\": 1, \"b\": null}", false},
    {"{\"a\": 1}", "{\"b\": 1}", false},
    {"{}", "{}", true},
    {"1", "1.0", true},
    {"1.0", "1", true},
    {"1", "1.5", false},
    {"1", "2", false},
    {"0", "-0.0", true},
    {"0.5", "0.5", true},
    {"0.5", "0.25", false},
    {"9007199254740993", "9007199254740992.0", false}, /* differ beyond a double's precision */
    {"9223372036854775807", "9223372036854775808.0", false},
    {"-9223372036854775808", "-9223372036854775808.0", true},
    {"1", "\"1\"", false},
    {"null", "false", false},
    {"null", "null", true},
    {"true", "true", true},
    {"true", "false", false},
    {"false", "0", false},
    {"\"a\"", "\"a\"", true},
    {"\"\"", "\"\"", true},
    {"\"a\\u0000b\"", "\"a\\u0000c\"", false},
    {"\"a\\u0000b\"", "\"a\"", false},
    {"[1, 2]", "[1, 2]", true},
    {"[1, 2]", "[2, 1]", false},
    {"[1]", "[1, 1]", false},
    {"[1, {\"x\": 2}]", "[1.0, {\"x\": 2.0}]", true},
    {"{\"m\": {\"t\": [\"a\", {\"d\": true}]}}", "{\"m\": {\"t\": [\"a\", {\"d\": true}]}}", true},
    {"{\"m\": {\"t\": [\"a\", {\"d\": true}]}}", "{\"m\": {\"t\": [\"a\", {\"d\": false}]}}",
     false},
    {"[]", "{}", false},
};

static void test_equality(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(EQUALITY); i++) {
        json_t *a = load_json(EQUALITY[i].a), *b = load_json(EQUALITY[i].b);
        if (mcp_skill_md_frontmatter_equal(a, b) != EQUALITY[i].equal ||
            mcp_skill_md_frontmatter_equal(b, a) != EQUALITY[i].equal)
            fail_msg("%s vs %s: want %s", EQUALITY[i].a, EQUALITY[i].b,
                     EQUALITY[i].equal ? "equal" : "different");
        json_decref(a);
        json_decref(b);
    }
    json_t *null_value = json_null();
    assert_true(mcp_skill_md_frontmatter_equal(NULL, NULL));
    assert_false(mcp_skill_md_frontmatter_equal(NULL, null_value));
    assert_false(mcp_skill_md_frontmatter_equal(null_value, NULL));
}

/* A server's frontmatter, sent as JSON, equals the client's reading of the
 * same SKILL.md. */
static void test_a_parsed_frontmatter_equals_its_json(void **state)
{
    (void)state;
    const char text[] = "---\nname: x\nversion: 1.0\nn: 2\nm: {t: [a]}\n---\n";
    json_t *fm = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_skill_md_frontmatter(text, strlen(text), &fm, NULL, &err), MCP_OK);
    json_t *sent =
        load_json("{\"m\": {\"t\": [\"a\"]}, \"n\": 2.0, \"version\": 1, \"name\": \"x\"}");
    assert_true(mcp_skill_md_frontmatter_equal(fm, sent));
    json_object_set_new(sent, "name", json_string("y"));
    assert_false(mcp_skill_md_frontmatter_equal(fm, sent));
    json_decref(sent);
    json_decref(fm);
}

/* ------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------ */

static void test_names(void **state)
{
    (void)state;
    char max[66];
    memset(max, 'a', 64);
    max[64] = '\0';
    static const struct {
        const char *name;
        bool valid;
    } cases[] = {
        {"a", true},
        {"pdf-processing", true},
        {"a1-b2-c3", true},
        {"0", true},
        {"1-2", true},
        {"", false},
        {"-a", false},
        {"a-", false},
        {"-", false},
        {"a--b", false},
        {"Pdf", false},
        {"pdf_processing", false},
        {"pdf processing", false},
        {"pdf.processing", false},
        {"caf\xC3\xA9", false},
    };
    for (size_t i = 0; i < COUNT(cases); i++)
        if (mcp_skill_name_valid(cases[i].name) != cases[i].valid)
            fail_msg("\"%s\": want %s", cases[i].name, cases[i].valid ? "valid" : "invalid");

    assert_true(mcp_skill_name_valid(max)); /* 64 characters */
    max[63] = '-';
    assert_false(mcp_skill_name_valid(max));
    max[63] = 'a';
    max[64] = 'a';
    max[65] = '\0';
    assert_false(mcp_skill_name_valid(max)); /* 65 */
    assert_false(mcp_skill_name_valid(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_libyaml_is_loaded_when_a_frontmatter_is_first_parsed),
        cmocka_unit_test(test_fences),
        cmocka_unit_test(test_scalars_follow_the_core_schema),
        cmocka_unit_test(test_block_scalars_collections_and_keys),
        cmocka_unit_test(test_the_text_ends_at_len),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_messages_quote_whole_characters),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_equality),
        cmocka_unit_test(test_a_parsed_frontmatter_equals_its_json),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
