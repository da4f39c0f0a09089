/*
 * client_skill_read() and its companions (src/client/skill_shape.c): which
 * skill entries a server may send, as a table. Each refused row names the
 * words its message must carry, so that a row refused for another reason
 * than the rule it tests fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/client_internal.h"

#define URI "skill://pdf-processing/SKILL.md"
#define DIR "skill://pdf-processing/"
#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define FM "\"frontmatter\":{\"name\":\"pdf-processing\",\"description\":\"Fill PDF forms\"}"
#define FILE_AT(uri) "{\"uri\":\"" uri "\",\"digest\":\"" DIGEST "\",\"size\":12}"
#define MD FILE_AT(URI)
#define FORMS FILE_AT(DIR "references/FORMS.md")
/* An entry for URI with frontmatter FM and the given resources. */
#define ENTRY(resources) "{\"uri\":\"" URI "\"," FM ",\"resources\":" resources "}"
/* An entry at `uri` whose name is `name`. */
#define NAMED(uri, name) "{\"uri\":\"" uri "\",\"frontmatter\":{\"name\":\"" name "\"," \
                         "\"description\":\"d\"},\"resources\":\"dynamic\"}"
/* An entry whose one file has the members `members`. */
#define ONE_FILE(members) ENTRY("[" MD ",{\"uri\":\"" DIR "a.txt\"," members "}]")

static const struct {
    const char *rule;
    const char *json;
    const char *why;      /* NULL: accepted; else words of the message */
    size_t dir_len;       /* accepted: the directory's length */
    size_t files;         /* accepted: manifest entries (0: dynamic) */
} cases[] = {
    /* Accepted */
    {"the SKILL.md alone", ENTRY("[" MD "]"), NULL, sizeof DIR - 2, 1},
    {"a file below the directory", ENTRY("[" MD "," FORMS "]"), NULL, sizeof DIR - 2, 2},
    {"the SKILL.md need not come first", ENTRY("[" FORMS "," MD "]"), NULL, sizeof DIR - 2, 2},
    {"deep paths", ENTRY("[" MD "," FILE_AT(DIR "a/b/c.txt") "]"), NULL, sizeof DIR - 2, 2},
    {"a query is not part of the path", ENTRY("[" MD "," FILE_AT(DIR "a.txt?v=../x") "]"),
     NULL, sizeof DIR - 2, 2},
    {"dots inside a segment", ENTRY("[" MD "," FILE_AT(DIR "..a/b.../.c") "]"), NULL,
     sizeof DIR - 2, 2},
    {"size 0", ENTRY("[" MD ",{\"uri\":\"" DIR "e\",\"digest\":\"" DIGEST "\",\"size\":0}]"),
     NULL, sizeof DIR - 2, 2},
    {"dynamic", ENTRY("\"dynamic\""), NULL, sizeof DIR - 2, 0},
    {"the name in a deeper path", NAMED("skill://acme/tools/pdf/SKILL.md", "pdf"), NULL,
     sizeof "skill://acme/tools/pdf" - 1, 0},
    {"another scheme", NAMED("https://example.com/skills/pdf/SKILL.md", "pdf"), NULL,
     sizeof "https://example.com/skills/pdf" - 1, 0},
    {"scheme characters", NAMED("x+y.z-1://pdf/SKILL.md", "pdf"), NULL,
     sizeof "x+y.z-1://pdf" - 1, 0},
    {"more frontmatter, and other members",
     "{\"uri\":\"" URI "\",\"frontmatter\":{\"name\":\"pdf-processing\",\"description\":\"d\","
     "\"license\":\"MIT\",\"metadata\":{\"v\":1}},\"resources\":\"dynamic\",\"_meta\":{}}",
     NULL, sizeof DIR - 2, 0},
    {"a 64-character name",
     NAMED("skill://a234567890123456789012345678901234567890123456789012345678901234/SKILL.md",
           "a234567890123456789012345678901234567890123456789012345678901234"),
     NULL, sizeof "skill://a234567890123456789012345678901234567890123456789012345678901234" - 1,
     0},

    /* The entry and its uri */
    {"not an object", "[]", "not an object", 0, 0},
    {"no uri", "{" FM ",\"resources\":\"dynamic\"}", "uri is missing", 0, 0},
    {"a uri that is not a string", "{\"uri\":7," FM ",\"resources\":\"dynamic\"}",
     "uri is missing", 0, 0},
    {"a uri with a NUL byte",
     "{\"uri\":\"skill://pdf-processing/SKILL.md\\u0000x\"," FM ",\"resources\":\"dynamic\"}",
     "uri is missing", 0, 0},
    {"not a SKILL.md", NAMED("skill://pdf-processing/README.md", "pdf-processing"),
     "not <scheme>", 0, 0},
    {"skill.md in lower case", NAMED("skill://pdf-processing/skill.md", "pdf-processing"),
     "not <scheme>", 0, 0},
    {"no scheme", NAMED("pdf-processing/SKILL.md", "pdf-processing"), "not <scheme>", 0, 0},
    {"an empty scheme", NAMED("://pdf-processing/SKILL.md", "pdf-processing"), "not <scheme>",
     0, 0},
    {"a scheme starting with a digit", NAMED("1x://pdf-processing/SKILL.md", "pdf-processing"),
     "not <scheme>", 0, 0},
    {"no path before SKILL.md", NAMED("skill://SKILL.md", "pdf-processing"), "not <scheme>", 0,
     0},

    /* The frontmatter and the name */
    {"no frontmatter", "{\"uri\":\"" URI "\",\"resources\":\"dynamic\"}",
     "frontmatter is missing", 0, 0},
    {"a frontmatter that is not an object",
     "{\"uri\":\"" URI "\",\"frontmatter\":\"name: x\",\"resources\":\"dynamic\"}",
     "frontmatter is missing", 0, 0},
    {"no name",
     "{\"uri\":\"" URI "\",\"frontmatter\":{\"description\":\"d\"},\"resources\":\"dynamic\"}",
     "frontmatter.name is missing", 0, 0},
    {"a name that is not a string",
     "{\"uri\":\"" URI "\",\"frontmatter\":{\"name\":1,\"description\":\"d\"},"
     "\"resources\":\"dynamic\"}",
     "frontmatter.name is missing", 0, 0},
    {"a name with a NUL byte",
     "{\"uri\":\"" URI "\",\"frontmatter\":{\"name\":\"pdf-processing\\u0000\","
     "\"description\":\"d\"},\"resources\":\"dynamic\"}",
     "frontmatter.name is missing", 0, 0},
    {"upper case in the name", NAMED("skill://PDF/SKILL.md", "PDF"), "not a valid skill name",
     0, 0},
    {"two hyphens in a row", NAMED("skill://a--b/SKILL.md", "a--b"), "not a valid skill name",
     0, 0},
    {"a leading hyphen", NAMED("skill://-a/SKILL.md", "-a"), "not a valid skill name", 0, 0},
    {"an underscore", NAMED("skill://a_b/SKILL.md", "a_b"), "not a valid skill name", 0, 0},
    {"a 65-character name",
     NAMED("skill://a2345678901234567890123456789012345678901234567890123456789012345/SKILL.md",
           "a2345678901234567890123456789012345678901234567890123456789012345"),
     "not a valid skill name", 0, 0},
    {"a name other than the uri's", NAMED(URI, "pdf"), "does not end in the skill's name", 0,
     0},
    {"a name that only prefixes the segment", NAMED("skill://pdf-processing/SKILL.md", "pdf-p"),
     "does not end in the skill's name", 0, 0},
    {"the name in the authority, another segment last",
     NAMED("skill://pdf-processing/docs/SKILL.md", "pdf-processing"),
     "does not end in the skill's name", 0, 0},
    {"an empty last segment", NAMED("skill://pdf-processing//SKILL.md", "pdf-processing"),
     "does not end in the skill's name", 0, 0},
    {"no description",
     "{\"uri\":\"" URI "\",\"frontmatter\":{\"name\":\"pdf-processing\"},"
     "\"resources\":\"dynamic\"}",
     "description is missing", 0, 0},
    {"a description that is not a string",
     "{\"uri\":\"" URI "\",\"frontmatter\":{\"name\":\"pdf-processing\",\"description\":[]},"
     "\"resources\":\"dynamic\"}",
     "description is missing", 0, 0},
    {"an empty description",
     "{\"uri\":\"" URI "\",\"frontmatter\":{\"name\":\"pdf-processing\",\"description\":\"\"},"
     "\"resources\":\"dynamic\"}",
     "description is missing", 0, 0},

    /* resources: its form */
    {"no resources", "{\"uri\":\"" URI "\"," FM "}", "neither an array nor \"dynamic\"", 0, 0},
    {"resources null", ENTRY("null"), "neither an array nor \"dynamic\"", 0, 0},
    {"resources \"Dynamic\"", ENTRY("\"Dynamic\""), "neither an array nor \"dynamic\"", 0, 0},
    {"resources \"static\"", ENTRY("\"static\""), "neither an array nor \"dynamic\"", 0, 0},
    {"resources an object", ENTRY("{}"), "neither an array nor \"dynamic\"", 0, 0},
    {"resources a number", ENTRY("5"), "neither an array nor \"dynamic\"", 0, 0},

    /* resources: complete, each file once, inside the skill */
    {"an empty manifest", ENTRY("[]"), "does not list the SKILL.md", 0, 0},
    {"no SKILL.md entry", ENTRY("[" FORMS "]"), "does not list the SKILL.md", 0, 0},
    {"the SKILL.md twice", ENTRY("[" MD "," MD "]"), "lists " URI " twice", 0, 0},
    {"a file twice", ENTRY("[" FORMS "," MD "," FORMS "]"), "FORMS.md twice", 0, 0},
    {"a file of another skill", ENTRY("[" MD "," FILE_AT("skill://other/a.md") "]"),
     "outside the skill's directory", 0, 0},
    {"a directory that only shares a prefix",
     ENTRY("[" MD "," FILE_AT("skill://pdf-processing-evil/a.md") "]"),
     "outside the skill's directory", 0, 0},
    {"the directory itself", ENTRY("[" MD "," FILE_AT(DIR) "]"),
     "outside the skill's directory", 0, 0},
    {"the directory without its slash", ENTRY("[" MD "," FILE_AT("skill://pdf-processing") "]"),
     "outside the skill's directory", 0, 0},
    {"a directory below", ENTRY("[" MD "," FILE_AT(DIR "references/") "]"),
     "outside the skill's directory", 0, 0},
    {"..", ENTRY("[" MD "," FILE_AT(DIR "../other/SKILL.md") "]"),
     "outside the skill's directory", 0, 0},
    {".. deeper", ENTRY("[" MD "," FILE_AT(DIR "a/../../b") "]"),
     "outside the skill's directory", 0, 0},
    {".. percent-encoded", ENTRY("[" MD "," FILE_AT(DIR "%2e%2E/other/x") "]"),
     "outside the skill's directory", 0, 0},
    {".. half encoded", ENTRY("[" MD "," FILE_AT(DIR ".%2e/x") "]"),
     "outside the skill's directory", 0, 0},
    {".", ENTRY("[" MD "," FILE_AT(DIR "./x") "]"), "outside the skill's directory", 0, 0},
    {"an empty segment", ENTRY("[" MD "," FILE_AT(DIR "a//b") "]"),
     "outside the skill's directory", 0, 0},
    {"an empty path before a query", ENTRY("[" MD "," FILE_AT(DIR "?x") "]"),
     "outside the skill's directory", 0, 0},

    /* resources: each {uri, digest, size} */
    {"a file that is not an object", ENTRY("[" MD ",\"" DIR "a.txt\"]"),
     "resources[1] is not an object", 0, 0},
    {"a file without a uri", ENTRY("[" MD ",{\"digest\":\"" DIGEST "\",\"size\":1}]"),
     "resources[1] has no uri", 0, 0},
    {"a file uri that is not a string", ENTRY("[{\"uri\":[],\"digest\":\"" DIGEST "\","
                                              "\"size\":1}," MD "]"),
     "resources[0] has no uri", 0, 0},
    {"no digest", ONE_FILE("\"size\":1"), "digest of " DIR "a.txt", 0, 0},
    {"a digest that is not a string", ONE_FILE("\"digest\":5,\"size\":1"), "digest of", 0, 0},
    {"upper-case hex",
     ONE_FILE("\"digest\":\"sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789"
              "abcdef\",\"size\":1"),
     "digest of", 0, 0},
    {"another algorithm's prefix",
     ONE_FILE("\"digest\":\"sha512:0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
              "abcdef\",\"size\":1"),
     "digest of", 0, 0},
    {"the prefix in upper case",
     ONE_FILE("\"digest\":\"SHA256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
              "abcdef\",\"size\":1"),
     "digest of", 0, 0},
    {"no prefix",
     ONE_FILE("\"digest\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
              "\"size\":1"),
     "digest of", 0, 0},
    {"63 hex digits",
     ONE_FILE("\"digest\":\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
              "abcde\",\"size\":1"),
     "digest of", 0, 0},
    {"65 hex digits",
     ONE_FILE("\"digest\":\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
              "abcdef0\",\"size\":1"),
     "digest of", 0, 0},
    {"a letter beyond f",
     ONE_FILE("\"digest\":\"sha256:g123456789abcdef0123456789abcdef0123456789abcdef0123456789"
              "abcdef\",\"size\":1"),
     "digest of", 0, 0},
    {"base64 instead of hex",
     ONE_FILE("\"digest\":\"sha256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\",\"size\":1"),
     "digest of", 0, 0},
    {"no size", ONE_FILE("\"digest\":\"" DIGEST "\""), "size of " DIR "a.txt", 0, 0},
    {"a negative size", ONE_FILE("\"digest\":\"" DIGEST "\",\"size\":-1"), "size of", 0, 0},
    {"a size with a fraction", ONE_FILE("\"digest\":\"" DIGEST "\",\"size\":1.5"), "size of", 0,
     0},
    {"a size written as a real", ONE_FILE("\"digest\":\"" DIGEST "\",\"size\":12.0"), "size of",
     0, 0},
    {"a size as a string", ONE_FILE("\"digest\":\"" DIGEST "\",\"size\":\"12\""), "size of", 0,
     0},
    {"a size that is a boolean", ONE_FILE("\"digest\":\"" DIGEST "\",\"size\":true"), "size of",
     0, 0},
};

static void test_entries(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_error_t jerr;
        json_t *entry = json_loads(cases[i].json, JSON_ALLOW_NUL, &jerr);
        if (!entry)
            fail_msg("row \"%s\": bad JSON: %s", cases[i].rule, jerr.text);
        client_skill_t skill;
        mcp_error_t err = {0};
        int rc = client_skill_read(entry, &skill, &err);
        if (!cases[i].why) {
            if (rc != MCP_OK)
                fail_msg("row \"%s\": refused: %s", cases[i].rule, err.message);
            if (skill.uri != json_string_value(json_object_get(entry, "uri")) ||
                skill.frontmatter != json_object_get(entry, "frontmatter") ||
                strcmp(skill.name, json_string_value(json_object_get(skill.frontmatter,
                                                                     "name"))) != 0 ||
                skill.dir_len != cases[i].dir_len ||
                (cases[i].files ? json_array_size(skill.files) != cases[i].files
                                : skill.files != NULL))
                fail_msg("row \"%s\": read wrong", cases[i].rule);
        } else {
            if (rc != MCP_EPROTO)
                fail_msg("row \"%s\": rc %d, expected MCP_EPROTO", cases[i].rule, rc);
            if (!strstr(err.message, cases[i].why))
                fail_msg("row \"%s\": message \"%s\" does not say \"%s\"", cases[i].rule,
                         err.message, cases[i].why);
        }
        mcp_error_clear(&err);
        json_decref(entry);
    }
}

/* ------------------------------------------------------------------------
 * The files of a skill
 * ------------------------------------------------------------------------ */

static json_t *load(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    return j;
}

static void test_files_of_a_manifest(void **state)
{
    (void)state;
    json_t *entry = load(ENTRY("[" MD "," FORMS "]"));
    client_skill_t skill;
    assert_int_equal(client_skill_read(entry, &skill, NULL), MCP_OK);
    client_skill_file_t file;
    assert_true(client_skill_file(&skill, DIR "references/FORMS.md", &file));
    assert_string_equal(file.uri, DIR "references/FORMS.md");
    assert_string_equal(file.digest, DIGEST);
    assert_int_equal(file.size, 12);
    assert_true(client_skill_file(&skill, URI, &file));
    assert_ptr_equal(file.uri, json_string_value(json_object_get(json_array_get(skill.files, 0),
                                                                 "uri")));
    /* Listed means listed, as an exact string: no other spelling, nor
     * another file of the directory. */
    static const char *const unlisted[] = {
        DIR "references/FORMS%2Emd", DIR "references/forms.md", DIR "references/FORMS.md/",
        DIR "references/./FORMS.md", DIR "other.md", "skill://other/SKILL.md", "",
    };
    for (size_t i = 0; i < sizeof unlisted / sizeof unlisted[0]; i++)
        assert_false(client_skill_file(&skill, unlisted[i], &file));
    json_decref(entry);
}

static void test_files_of_a_dynamic_skill(void **state)
{
    (void)state;
    json_t *entry = load(ENTRY("\"dynamic\""));
    client_skill_t skill;
    assert_int_equal(client_skill_read(entry, &skill, NULL), MCP_OK);
    static const struct {
        const char *uri;
        bool file;
    } rows[] = {
        {URI, true},
        {DIR "references/FORMS.md", true},
        {DIR "x", true},
        {DIR, false},
        {"skill://pdf-processing", false},
        {"skill://pdf-processing-evil/x", false},
        {DIR "../other/SKILL.md", false},
        {DIR "a//b", false},
        {"skill://other/SKILL.md", false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        client_skill_file_t file;
        if (client_skill_file(&skill, rows[i].uri, &file) != rows[i].file)
            fail_msg("%s", rows[i].uri);
        assert_int_equal(client_skill_contains(&skill, rows[i].uri), rows[i].file);
        if (rows[i].file) {
            assert_string_equal(file.uri, rows[i].uri);
            assert_null(file.digest);
        }
    }
    json_decref(entry);
}

/* ------------------------------------------------------------------------
 * The results around the entries
 * ------------------------------------------------------------------------ */

static void test_list_results(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *why; /* NULL: accepted */
    } rows[] = {
        {"{\"skills\":[]}", NULL},
        {"{\"skills\":[" ENTRY("\"dynamic\"") "," NAMED("skill://b/SKILL.md", "b") "],"
         "\"nextCursor\":\"\"}",
         NULL},
        {"{}", "no skills array"},
        {"{\"skills\":{}}", "no skills array"},
        {"{\"skills\":[],\"nextCursor\":null}", "nextCursor"},
        {"{\"skills\":[],\"nextCursor\":2}", "nextCursor"},
        /* One bad entry fails the page, wherever it is. */
        {"{\"skills\":[" ENTRY("\"dynamic\"") "," NAMED("skill://b/SKILL.md", "c") "]}",
         "skill://b/SKILL.md: the uri does not end"},
        {"{\"skills\":[5]}", "not an object"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *result = load(rows[i].json);
        mcp_error_t err = {0};
        int rc = client_skill_list_read(result, &err);
        if (rows[i].why ? rc != MCP_EPROTO || !strstr(err.message, rows[i].why) : rc != MCP_OK)
            fail_msg("row %zu: rc %d, \"%s\"", i, rc, err.message);
        mcp_error_clear(&err);
        json_decref(result);
    }
}

static void test_get_results(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *uri;
        const char *why; /* NULL: accepted */
    } rows[] = {
        {"{\"skill\":" ENTRY("\"dynamic\"") "}", URI, NULL},
        {"{\"skill\":" ENTRY("\"dynamic\"") ",\"ttlMs\":5,\"cacheScope\":\"public\"}", URI,
         NULL},
        {"{}", URI, "no skill object"},
        {"{\"skill\":[" ENTRY("\"dynamic\"") "]}", URI, "no skill object"},
        {"{\"skill\":" ENTRY("\"static\"") "}", URI, "neither an array"},
        /* The entry of another skill, however well formed. */
        {"{\"skill\":" NAMED("skill://b/SKILL.md", "b") "}", URI, "answered with the skill"},
        {"{\"skill\":" ENTRY("\"dynamic\"") "}", "skill://pdf-processing/SKILL.md/",
         "answered with the skill"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *result = load(rows[i].json);
        mcp_error_t err = {0};
        const json_t *entry = (const json_t *)result; /* must be reset */
        int rc = client_skill_get_read(result, rows[i].uri, &entry, &err);
        if (rows[i].why) {
            if (rc != MCP_EPROTO || !strstr(err.message, rows[i].why) || entry)
                fail_msg("row %zu: rc %d, \"%s\"", i, rc, err.message);
        } else {
            assert_int_equal(rc, MCP_OK);
            assert_ptr_equal(entry, json_object_get(result, "skill"));
        }
        mcp_error_clear(&err);
        json_decref(result);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries),
        cmocka_unit_test(test_files_of_a_manifest),
        cmocka_unit_test(test_files_of_a_dynamic_skill),
        cmocka_unit_test(test_list_results),
        cmocka_unit_test(test_get_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
