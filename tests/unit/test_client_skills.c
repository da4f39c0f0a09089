/*
 * The client side of the Skills extension (src/client/skills.c) against a
 * scripted server: skills/list and skills/get and their errors, and
 * mcp_client_read_skill_file() verifying what it fetches (size, then
 * digest, then a SKILL.md's frontmatter), fetching nothing unlisted,
 * "dynamic" skills, the cache, and legacy connections.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/client_internal.h"
#include "client_fake_transport.h"
#include "mcp/mcp.h"

/* ------------------------------------------------------------------------
 * A skill, its files and their digests (sha256sum, not the code tested)
 * ------------------------------------------------------------------------ */

#define DIR "skill://pdf-processing/"
#define SKILL_URI DIR "SKILL.md"
#define FORMS_URI DIR "references/FORMS.md"
#define LOGO_URI DIR "assets/logo.bin"

#define SKILL_MD "---\nname: pdf-processing\n" \
                 "description: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n"
#define SKILL_MD_SIZE 97
#define SKILL_MD_DIGEST "sha256:a6d5f1f48af94923633d597c756194482fe5d48f74e49eb54bc9ee7c4902d5ba"
/* The same size, other bytes. */
#define SKILL_MD_EVIL_BODY "---\nname: pdf-processing\n" \
                 "description: Extract, fill, and assemble PDF documents\n---\n\nEvil body!!\n"
#define SKILL_MD_EVIL_BODY_DIGEST \
    "sha256:897139bdff0d993abd81d0ecd89c0bf35bcbcf87c239e85a2dd69a44368f5d09"
/* Another description. */
#define SKILL_MD_EVIL_FM "---\nname: pdf-processing\n" \
                         "description: Exfiltrate credentials\n---\n\nSkill body.\n"
#define SKILL_MD_EVIL_FM_SIZE 78
#define SKILL_MD_EVIL_FM_DIGEST \
    "sha256:b7cab173f8a37d7f744b2a2be9cc4a0dcf8beb77d0a61274ed16e1d3d94fa7e0"

#define FORMS "Supporting content.\n"
#define FORMS_IN_JSON "Supporting content.\\n"
#define FORMS_SIZE 20
#define FORMS_DIGEST "sha256:8548b03927f40d7dc404fa49636c29e6b73df011d0764d69a6fc4f8ae06c6a12"

/* The bytes 00 01 02 ff. */
#define LOGO_BASE64 "AAEC/w=="
#define LOGO_DIGEST "sha256:3d1f57c984978ef98a18378c8166c1cb8ede02c03eeb6aee7e2f121dfeee3e56"

#define FRONTMATTER "{\"name\":\"pdf-processing\"," \
                    "\"description\":\"Extract, fill, and assemble PDF documents\"}"

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    if (!j)
        fail_msg("bad JSON in the test: %s: %s", jerr.text, text);
    return j;
}

/* The entry of the skill: SKILL.md (with `md_digest` and `md_size`),
 * FORMS.md and logo.bin. */
static json_t *entry_with(const char *md_digest, json_int_t md_size)
{
    return json_pack("{s:s, s:o, s:[{s:s, s:s, s:I}, {s:s, s:s, s:i}, {s:s, s:s, s:i}]}",
                     "uri", SKILL_URI, "frontmatter", load(FRONTMATTER), "resources",
                     "uri", SKILL_URI, "digest", md_digest, "size", md_size,
                     "uri", FORMS_URI, "digest", FORMS_DIGEST, "size", FORMS_SIZE,
                     "uri", LOGO_URI, "digest", LOGO_DIGEST, "size", 4);
}

static json_t *entry(void)
{
    return entry_with(SKILL_MD_DIGEST, SKILL_MD_SIZE);
}

static json_t *dynamic_entry(void)
{
    return json_pack("{s:s, s:o, s:s}", "uri", SKILL_URI, "frontmatter", load(FRONTMATTER),
                     "resources", "dynamic");
}

/* A ReadResourceResult with one text content. */
static json_t *text_result(const char *uri, const char *text)
{
    return json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType",
                     "text/markdown", "text", text);
}

/* ------------------------------------------------------------------------
 * The server: answers from a table
 * ------------------------------------------------------------------------ */

/*
 * `answers` maps what a request asks to its result, or to {"$error":
 * code} for an error: "skills/list" (the first page), "skills/list@<cursor>",
 * "skills/get@<uri>", "resources/read@<uri>". Anything else is -32601.
 * A legacy server refuses the probe and answers initialize.
 */
typedef struct server {
    json_t *answers;
    bool legacy;
} server_t;

static json_t *respond(void *user, fake_transport_t *ft, const json_t *req)
{
    (void)ft;
    server_t *s = user;
    const char *m = fake_method(req);
    json_t *params = fake_params(req);
    if (strcmp(m, "server/discover") == 0)
        return s->legacy ? fake_error(req, -32601, "Method not found", NULL)
                         : fake_result(req, fake_discover_result());
    if (strcmp(m, "initialize") == 0)
        return fake_result(req, json_pack("{s:s, s:{s:{}}, s:{s:s, s:s}}", "protocolVersion",
                                          "2025-11-25", "capabilities", "resources",
                                          "serverInfo", "name", "old", "version", "1"));
    const char *arg = json_string_value(json_object_get(params, "cursor"));
    if (!arg)
        arg = json_string_value(json_object_get(params, "uri"));
    char key[512];
    snprintf(key, sizeof key, "%s%s%s", m, arg ? "@" : "", arg ? arg : "");
    json_t *answer = json_object_get(s->answers, key);
    if (!answer)
        return fake_error(req, -32601, "Method not found", NULL);
    const json_t *code = json_object_get(answer, "$error");
    if (code)
        return fake_error(req, (int)json_integer_value(code), "refused", NULL);
    return fake_result(req, json_deep_copy(answer));
}

typedef struct fixture {
    server_t server;
    fake_transport_t *ft;
    mcp_client_t *c;
} fixture_t;

static void connect_client(fixture_t *f)
{
    f->c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"}, NULL);
    assert_non_null(f->c);
    f->ft = fake_transport_connect(f->c, respond, &f->server);
    assert_non_null(f->ft);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->server.answers = json_object();
    connect_client(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->c);
    json_decref(f->server.answers);
    free(f);
    return 0;
}

static void answer(fixture_t *f, const char *key, json_t *result_new)
{
    json_object_set_new(f->server.answers, key, result_new);
}

static void serve(fixture_t *f, const char *uri, json_t *result_new)
{
    char key[512];
    snprintf(key, sizeof key, "resources/read@%s", uri);
    answer(f, key, result_new);
}

static size_t sent(fixture_t *f)
{
    json_t *all = fake_requests(f->ft);
    size_t n = json_array_size(all);
    json_decref(all);
    return n;
}

/* The hints of the last request. */
static json_t *last_hints(fixture_t *f)
{
    json_t *hints = fake_hints(f->ft);
    json_t *last = json_incref(json_array_get(hints, json_array_size(hints) - 1));
    json_decref(hints);
    return last;
}

/* ------------------------------------------------------------------------
 * skills/list
 * ------------------------------------------------------------------------ */

static void test_list(void **state)
{
    fixture_t *f = *state;
    answer(f, "skills/list", json_pack("{s:[o], s:s}", "skills", entry(), "nextCursor", "c1"));
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_skills(f->c, NULL, NULL, &r, &err), MCP_OK);
    json_t *expected = json_pack("{s:[o], s:s, s:s}", "skills", entry(), "nextCursor", "c1",
                                 "resultType", "complete");
    assert_true(json_equal(r, expected));
    json_decref(expected);
    json_decref(r);

    json_t *lists = fake_requests_of(f->ft, "skills/list");
    assert_int_equal(json_array_size(lists), 1);
    assert_null(json_object_get(fake_params(json_array_get(lists, 0)), "cursor"));
    json_decref(lists);
    json_t *hints = last_hints(f);
    assert_string_equal(json_string_value(json_object_get(hints, "method")), "skills/list");
    assert_null(json_object_get(hints, "name"));
    json_decref(hints);

    /* The next page, after the cursor. */
    answer(f, "skills/list@c1", json_pack("{s:[]}", "skills"));
    assert_int_equal(mcp_client_list_skills(f->c, "c1", NULL, &r, &err), MCP_OK);
    assert_int_equal(json_array_size(json_object_get(r, "skills")), 0);
    json_decref(r);
    lists = fake_requests_of(f->ft, "skills/list");
    assert_string_equal(json_string_value(json_object_get(fake_params(json_array_get(lists, 1)),
                                                          "cursor")),
                        "c1");
    json_decref(lists);
    /* Listing reads no file. */
    assert_int_equal(fake_count(f->ft, "resources/read"), 0);
}

/* One bad entry fails the page; a result without skills too. */
static void test_list_refused(void **state)
{
    fixture_t *f = *state;
    json_t *bad = entry();
    json_object_set_new(json_array_get(json_object_get(bad, "resources"), 1), "digest",
                        json_string("sha256:ABC"));
    answer(f, "skills/list", json_pack("{s:[o, o]}", "skills", dynamic_entry(), bad));
    json_t *r = (json_t *)f; /* must be reset */
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_skills(f->c, NULL, NULL, &r, &err), MCP_EPROTO);
    assert_null(r);
    assert_non_null(strstr(err.message, "digest of " FORMS_URI));

    answer(f, "skills/list", json_pack("{s:[]}", "tools"));
    assert_int_equal(mcp_client_list_skills(f->c, NULL, NULL, &r, &err), MCP_EPROTO);
    assert_null(r);
    assert_non_null(strstr(err.message, "no skills array"));

    /* A server without skills. */
    json_object_del(f->server.answers, "skills/list");
    assert_int_equal(mcp_client_list_skills(f->c, NULL, NULL, &r, &err), MCP_ERPC);
    assert_int_equal(err.code, -32601);
    mcp_error_clear(&err);
}

static void test_list_all(void **state)
{
    fixture_t *f = *state;
    json_t *other = json_pack("{s:s, s:{s:s, s:s}, s:s}", "uri", "skill://forms/SKILL.md",
                              "frontmatter", "name", "forms", "description", "Forms",
                              "resources", "dynamic");
    answer(f, "skills/list", json_pack("{s:[o], s:s}", "skills", entry(), "nextCursor", "c1"));
    answer(f, "skills/list@c1", json_pack("{s:[O]}", "skills", other));
    json_t *skills = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_skills_all(f->c, NULL, &skills, &err), MCP_OK);
    json_t *expected = json_pack("[o, O]", entry(), other);
    assert_true(json_equal(skills, expected));
    json_decref(expected);
    json_decref(skills);

    /* A bad entry on a later page fails the whole listing. */
    json_object_set_new(other, "resources", json_string("none"));
    answer(f, "skills/list@c1", json_pack("{s:[O]}", "skills", other));
    skills = (json_t *)f;
    assert_int_equal(mcp_client_list_skills_all(f->c, NULL, &skills, &err), MCP_EPROTO);
    assert_null(skills);
    assert_non_null(strstr(err.message, "skill://forms/SKILL.md"));
    mcp_error_clear(&err);
    json_decref(other);
    assert_int_equal(fake_count(f->ft, "resources/read"), 0);
}

/* skills/list is cached while its ttlMs says; a change of the server's
 * resources (how skills change) drops it. */
static void test_list_cached(void **state)
{
    fixture_t *f = *state;
    answer(f, "skills/list", json_pack("{s:[], s:i, s:s}", "skills", "ttlMs", 60000,
                                       "cacheScope", "private"));
    json_t *r = NULL;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mcp_client_list_skills(f->c, NULL, NULL, &r, NULL), MCP_OK);
        json_decref(r);
    }
    assert_int_equal(fake_count(f->ft, "skills/list"), 1);
    client_invalidate_for(f->c, "notifications/resources/list_changed", NULL);
    assert_int_equal(mcp_client_list_skills(f->c, NULL, NULL, &r, NULL), MCP_OK);
    json_decref(r);
    assert_int_equal(fake_count(f->ft, "skills/list"), 2);
}

/* ------------------------------------------------------------------------
 * skills/get
 * ------------------------------------------------------------------------ */

static void test_get(void **state)
{
    fixture_t *f = *state;
    answer(f, "skills/get@" SKILL_URI,
           json_pack("{s:o, s:i, s:s}", "skill", entry(), "ttlMs", 0, "cacheScope", "private"));
    json_t *skill = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_get_skill(f->c, SKILL_URI, NULL, &skill, &err), MCP_OK);
    json_t *expected = entry();
    assert_true(json_equal(skill, expected)); /* the entry, not the result around it */
    json_decref(expected);
    json_decref(skill);
    json_t *gets = fake_requests_of(f->ft, "skills/get");
    assert_string_equal(json_string_value(json_object_get(fake_params(json_array_get(gets, 0)),
                                                          "uri")),
                        SKILL_URI);
    json_decref(gets);
    json_t *hints = last_hints(f);
    assert_string_equal(json_string_value(json_object_get(hints, "method")), "skills/get");
    json_decref(hints);
    assert_int_equal(fake_count(f->ft, "resources/read"), 0);
}

static void test_get_refused(void **state)
{
    fixture_t *f = *state;
    json_t *skill = (json_t *)f;
    mcp_error_t err = {0};
    /* The entry of another skill. */
    answer(f, "skills/get@" SKILL_URI,
           json_pack("{s:{s:s, s:{s:s, s:s}, s:s}}", "skill", "uri", "skill://forms/SKILL.md",
                     "frontmatter", "name", "forms", "description", "Forms", "resources",
                     "dynamic"));
    assert_int_equal(mcp_client_get_skill(f->c, SKILL_URI, NULL, &skill, &err), MCP_EPROTO);
    assert_null(skill);
    assert_non_null(strstr(err.message, "answered with the skill skill://forms/SKILL.md"));
    /* A malformed entry. */
    json_t *bad = entry();
    json_object_del(bad, "resources");
    answer(f, "skills/get@" SKILL_URI, json_pack("{s:o}", "skill", bad));
    assert_int_equal(mcp_client_get_skill(f->c, SKILL_URI, NULL, &skill, &err), MCP_EPROTO);
    assert_non_null(strstr(err.message, "resources"));
    /* The server's errors: a skill it does not serve, no skills at all. */
    answer(f, "skills/get@" SKILL_URI, json_pack("{s:i}", "$error", -32602));
    assert_int_equal(mcp_client_get_skill(f->c, SKILL_URI, NULL, &skill, &err), MCP_ERPC);
    assert_int_equal(err.code, -32602);
    assert_int_equal(mcp_client_get_skill(f->c, "skill://x/SKILL.md", NULL, &skill, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32601);
    assert_null(skill);
    mcp_error_clear(&err);
}

/* ------------------------------------------------------------------------
 * Reading files
 * ------------------------------------------------------------------------ */

typedef struct read {
    int rc;
    char *bytes;
    size_t len;
    bool verified;
    mcp_error_t err;
} read_t;

static read_t read_file(fixture_t *f, const json_t *skill, const char *uri,
                        const mcp_request_options_t *opts)
{
    read_t r = {.bytes = (char *)f, .len = 99, .verified = true}; /* must be reset */
    r.rc = mcp_client_read_skill_file(f->c, skill, uri, opts, &r.bytes, &r.len, &r.verified,
                                      &r.err);
    if (r.rc != MCP_OK) {
        assert_null(r.bytes);
        assert_int_equal(r.len, 0);
        assert_false(r.verified);
    } else {
        assert_int_equal(r.bytes[r.len], '\0');
    }
    return r;
}

static void read_clear(read_t *r)
{
    free(r->bytes);
    mcp_error_clear(&r->err);
}

static void test_read_verified(void **state)
{
    fixture_t *f = *state;
    json_t *skill = entry();
    serve(f, SKILL_URI, text_result(SKILL_URI, SKILL_MD));
    serve(f, FORMS_URI, text_result(FORMS_URI, FORMS));
    serve(f, LOGO_URI, json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", LOGO_URI,
                                 "mimeType", "application/octet-stream", "blob", LOGO_BASE64));

    read_t r = read_file(f, skill, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    assert_int_equal(r.len, SKILL_MD_SIZE);
    assert_memory_equal(r.bytes, SKILL_MD, SKILL_MD_SIZE);
    assert_true(r.verified);
    read_clear(&r);
    /* Through resources/read, named for the HTTP headers. */
    json_t *reads = fake_requests_of(f->ft, "resources/read");
    assert_int_equal(json_array_size(reads), 1);
    assert_string_equal(json_string_value(json_object_get(fake_params(json_array_get(reads, 0)),
                                                          "uri")),
                        SKILL_URI);
    json_decref(reads);
    json_t *hints = last_hints(f);
    assert_string_equal(json_string_value(json_object_get(hints, "method")), "resources/read");
    assert_string_equal(json_string_value(json_object_get(hints, "name")), SKILL_URI);
    json_decref(hints);

    r = read_file(f, skill, FORMS_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    assert_int_equal(r.len, FORMS_SIZE);
    assert_string_equal(r.bytes, FORMS);
    assert_true(r.verified);
    read_clear(&r);

    /* A blob: its decoded bytes are verified and returned. */
    r = read_file(f, skill, LOGO_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    assert_int_equal(r.len, 4);
    assert_memory_equal(r.bytes, "\x00\x01\x02\xff", 4);
    assert_true(r.verified);
    read_clear(&r);

    /* verified_out is optional. */
    char *bytes = NULL;
    size_t len = 0;
    assert_int_equal(mcp_client_read_skill_file(f->c, skill, FORMS_URI, NULL, &bytes, &len,
                                                NULL, NULL),
                     MCP_OK);
    free(bytes);
    json_decref(skill);
}

/* A SKILL.md whose length is not the listed size fails as such, before
 * any digest is looked at (its digest is wrong too). Nothing more is
 * fetched: no cached copy was involved. */
static void test_read_size_mismatch(void **state)
{
    fixture_t *f = *state;
    json_t *skill = entry();
    serve(f, SKILL_URI, text_result(SKILL_URI, SKILL_MD "extra bytes the entry did not count\n"));
    read_t r = read_file(f, skill, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_EPROTO);
    assert_non_null(strstr(r.err.message, SKILL_URI));
    assert_non_null(strstr(r.err.message, "size mismatch"));
    assert_null(strstr(r.err.message, "digest"));
    read_clear(&r);
    /* A blob is measured decoded: 4 bytes, listed as 3. */
    json_t *files = json_object_get(skill, "resources");
    json_object_set_new(json_array_get(files, 2), "size", json_integer(3));
    serve(f, LOGO_URI, json_pack("{s:[{s:s, s:s}]}", "contents", "uri", LOGO_URI, "blob",
                                 LOGO_BASE64));
    r = read_file(f, skill, LOGO_URI, NULL);
    assert_int_equal(r.rc, MCP_EPROTO);
    assert_non_null(strstr(r.err.message, "size mismatch: 4 bytes"));
    read_clear(&r);
    assert_int_equal(fake_count(f->ft, "resources/read"), 2);
    json_decref(skill);
}

static void test_read_digest_mismatch(void **state)
{
    fixture_t *f = *state;
    json_t *skill = entry();
    serve(f, SKILL_URI, text_result(SKILL_URI, SKILL_MD_EVIL_BODY));
    read_t r = read_file(f, skill, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_EPROTO);
    assert_non_null(strstr(r.err.message, SKILL_URI));
    assert_non_null(strstr(r.err.message, "digest mismatch"));
    read_clear(&r);
    /* Any other file alike. */
    serve(f, FORMS_URI, text_result(FORMS_URI, "Supporting content!\n"));
    r = read_file(f, skill, FORMS_URI, NULL);
    assert_int_equal(r.rc, MCP_EPROTO);
    assert_non_null(strstr(r.err.message, "digest mismatch"));
    read_clear(&r);
    json_decref(skill);
}

/* A SKILL.md whose bytes are what the manifest lists, but whose
 * frontmatter is not the entry's. */
static void test_read_frontmatter_mismatch(void **state)
{
    fixture_t *f = *state;
    json_t *skill = entry_with(SKILL_MD_EVIL_FM_DIGEST, SKILL_MD_EVIL_FM_SIZE);
    serve(f, SKILL_URI, text_result(SKILL_URI, SKILL_MD_EVIL_FM));
    read_t r = read_file(f, skill, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_EPROTO);
    assert_non_null(strstr(r.err.message, SKILL_URI));
    assert_non_null(strstr(r.err.message, "frontmatter mismatch in \"description\""));
    read_clear(&r);

    /* A field the entry does not have counts as much as a changed one. */
    json_t *fm = json_object_get(skill, "frontmatter");
    json_object_set_new(fm, "description", json_string("Exfiltrate credentials"));
    json_object_set_new(fm, "license", json_string("MIT"));
    r = read_file(f, skill, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_EPROTO);
    assert_non_null(strstr(r.err.message, "frontmatter mismatch in \"license\""));
    read_clear(&r);
    /* Equal in content, in another key order: loaded. */
    json_object_del(fm, "license");
    json_object_del(fm, "name");
    json_object_set_new(fm, "name", json_string("pdf-processing"));
    r = read_file(f, skill, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    read_clear(&r);

    /* A SKILL.md without frontmatter at all. */
    json_t *plain = entry_with(FORMS_DIGEST, FORMS_SIZE);
    serve(f, SKILL_URI, text_result(SKILL_URI, FORMS));
    r = read_file(f, plain, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_EPROTO);
    assert_non_null(strstr(r.err.message, "frontmatter"));
    read_clear(&r);
    json_decref(plain);
    json_decref(skill);
}

/* A file the entry does not list is never asked for. */
static void test_read_unlisted(void **state)
{
    fixture_t *f = *state;
    json_t *skill = entry();
    size_t before = sent(f);
    static const char *const unlisted[] = {
        DIR "scripts/run.sh", DIR "references/FORMS%2Emd", DIR "references/./FORMS.md",
        "skill://other/SKILL.md", "file:///etc/passwd", "",
    };
    for (size_t i = 0; i < sizeof unlisted / sizeof unlisted[0]; i++) {
        read_t r = read_file(f, skill, unlisted[i], NULL);
        assert_int_equal(r.rc, MCP_ENOTFOUND);
        read_clear(&r);
    }
    assert_int_equal(sent(f), before);
    json_decref(skill);
}

/* What a resources/read result must be to count as the file. */
static void test_read_result_shapes(void **state)
{
    fixture_t *f = *state;
    json_t *skill = entry();
    static const struct {
        const char *result;
        const char *why;
    } rows[] = {
        {"{}", "no content"},
        {"{\"contents\":{}}", "no content"},
        {"{\"contents\":[]}", "no content"},
        {"{\"contents\":[{\"uri\":\"" FORMS_URI "\",\"text\":\"" FORMS_IN_JSON "\"},"
         "{\"uri\":\"" FORMS_URI "\",\"text\":\"" FORMS_IN_JSON "\"}]}",
         "several contents"},
        {"{\"contents\":[{\"uri\":\"" DIR "references/forms.md\",\"text\":\"" FORMS_IN_JSON "\"}]}",
         "another uri"},
        {"{\"contents\":[{\"text\":\"" FORMS_IN_JSON "\"}]}", "another uri"},
        {"{\"contents\":[{\"uri\":\"" FORMS_URI "\\u0000x\",\"text\":\"" FORMS_IN_JSON "\"}]}",
         "another uri"},
        {"{\"contents\":[5]}", "another uri"},
        {"{\"contents\":[{\"uri\":\"" FORMS_URI "\"}]}", "no text or blob"},
        {"{\"contents\":[{\"uri\":\"" FORMS_URI "\",\"text\":\"" FORMS_IN_JSON "\","
         "\"blob\":\"\"}]}",
         "no text or blob"},
        {"{\"contents\":[{\"uri\":\"" FORMS_URI "\",\"text\":7}]}", "no text or blob"},
        {"{\"contents\":[{\"uri\":\"" FORMS_URI "\",\"blob\":null}]}",
         "no text or blob"},
        {"{\"contents\":[{\"uri\":\"" FORMS_URI "\",\"blob\":\"U3VwcG9ydGluZyBjb250ZW50Lgo\"}]}",
         "not base64"},
        {"{\"contents\":[{\"uri\":\"" FORMS_URI "\",\"blob\":\"U3VwcG9y dGluZyBjb250ZW50Lgo=\"}]}",
         "not base64"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *result = json_loads(rows[i].result, JSON_ALLOW_NUL, NULL);
        assert_non_null(result);
        serve(f, FORMS_URI, result);
        read_t r = read_file(f, skill, FORMS_URI, NULL);
        if (r.rc != MCP_EPROTO || !strstr(r.err.message, rows[i].why))
            fail_msg("row %zu: rc %d, \"%s\"", i, r.rc, r.err.message);
        read_clear(&r);
    }
    /* The same bytes as a blob verify alike. */
    serve(f, FORMS_URI, load("{\"contents\":[{\"uri\":\"" FORMS_URI "\","
                             "\"blob\":\"U3VwcG9ydGluZyBjb250ZW50Lgo=\"}]}"));
    read_t r = read_file(f, skill, FORMS_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    assert_string_equal(r.bytes, FORMS);
    read_clear(&r);
    json_decref(skill);
}

/* Without a manifest nothing can be verified but the SKILL.md's
 * frontmatter; the files are those under the skill's directory. */
static void test_read_dynamic(void **state)
{
    fixture_t *f = *state;
    json_t *skill = dynamic_entry();
    serve(f, SKILL_URI, text_result(SKILL_URI, SKILL_MD));
    serve(f, DIR "scripts/run.sh", text_result(DIR "scripts/run.sh", "#!/bin/sh\n"));
    read_t r = read_file(f, skill, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    assert_string_equal(r.bytes, SKILL_MD);
    assert_false(r.verified);
    read_clear(&r);
    r = read_file(f, skill, DIR "scripts/run.sh", NULL);
    assert_int_equal(r.rc, MCP_OK);
    assert_string_equal(r.bytes, "#!/bin/sh\n");
    assert_false(r.verified);
    read_clear(&r);

    serve(f, SKILL_URI, text_result(SKILL_URI, SKILL_MD_EVIL_FM));
    r = read_file(f, skill, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_EPROTO);
    assert_non_null(strstr(r.err.message, "frontmatter mismatch"));
    read_clear(&r);

    size_t before = sent(f);
    r = read_file(f, skill, "skill://other/SKILL.md", NULL);
    assert_int_equal(r.rc, MCP_ENOTFOUND);
    read_clear(&r);
    r = read_file(f, skill, DIR "../other/x", NULL);
    assert_int_equal(r.rc, MCP_ENOTFOUND);
    read_clear(&r);
    assert_int_equal(sent(f), before);
    json_decref(skill);
}

/* A cached copy that fails verification may be older than the entry: it
 * is fetched once more from the server, and the fresh copy counts. */
static void test_read_stale_cache(void **state)
{
    fixture_t *f = *state;
    json_t *old_entry = entry_with(SKILL_MD_EVIL_BODY_DIGEST, SKILL_MD_SIZE);
    json_t *new_entry = entry();
    json_t *old = text_result(SKILL_URI, SKILL_MD_EVIL_BODY);
    json_object_set_new(old, "ttlMs", json_integer(60000));
    serve(f, SKILL_URI, old);
    read_t r = read_file(f, old_entry, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    read_clear(&r);
    /* Cached: read again without asking. */
    r = read_file(f, old_entry, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    read_clear(&r);
    assert_int_equal(fake_count(f->ft, "resources/read"), 1);

    /* The skill changed; the new entry does not match the cached copy. */
    json_t *fresh = text_result(SKILL_URI, SKILL_MD);
    json_object_set_new(fresh, "ttlMs", json_integer(60000));
    serve(f, SKILL_URI, fresh);
    r = read_file(f, new_entry, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    assert_string_equal(r.bytes, SKILL_MD);
    read_clear(&r);
    assert_int_equal(fake_count(f->ft, "resources/read"), 2);
    /* The fresh copy replaced the stale one in the cache. */
    r = read_file(f, new_entry, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_OK);
    read_clear(&r);
    assert_int_equal(fake_count(f->ft, "resources/read"), 2);

    /* A server that keeps sending what fails: asked once more, no more. */
    r = read_file(f, old_entry, SKILL_URI, NULL);
    assert_int_equal(r.rc, MCP_EPROTO);
    read_clear(&r);
    assert_int_equal(fake_count(f->ft, "resources/read"), 3);
    /* A caller that bypasses the cache gets one request. */
    serve(f, SKILL_URI, text_result(SKILL_URI, SKILL_MD_EVIL_BODY));
    r = read_file(f, new_entry, SKILL_URI, &(mcp_request_options_t){.bypass_cache = true});
    assert_int_equal(r.rc, MCP_EPROTO);
    read_clear(&r);
    assert_int_equal(fake_count(f->ft, "resources/read"), 4);
    json_decref(old_entry);
    json_decref(new_entry);
}

/* ------------------------------------------------------------------------
 * Arguments and eras
 * ------------------------------------------------------------------------ */

static void test_bad_arguments(void **state)
{
    fixture_t *f = *state;
    json_t *skill = entry();
    json_t *r = NULL;
    char *bytes = NULL;
    size_t len = 0;
    size_t before = sent(f);
    assert_int_equal(mcp_client_list_skills(NULL, NULL, NULL, &r, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_list_skills(f->c, NULL, NULL, NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_list_skills_all(NULL, NULL, &r, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_list_skills_all(f->c, NULL, NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_get_skill(f->c, NULL, NULL, &r, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_get_skill(NULL, SKILL_URI, NULL, &r, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_get_skill(f->c, SKILL_URI, NULL, NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_client_read_skill_file(NULL, skill, SKILL_URI, NULL, &bytes, &len,
                                                NULL, NULL),
                     MCP_EINVAL);
    assert_int_equal(mcp_client_read_skill_file(f->c, NULL, SKILL_URI, NULL, &bytes, &len, NULL,
                                                NULL),
                     MCP_EINVAL);
    assert_int_equal(mcp_client_read_skill_file(f->c, skill, NULL, NULL, &bytes, &len, NULL,
                                                NULL),
                     MCP_EINVAL);
    assert_int_equal(mcp_client_read_skill_file(f->c, skill, SKILL_URI, NULL, NULL, &len, NULL,
                                                NULL),
                     MCP_EINVAL);
    /* An entry the client would not have accepted is the caller's fault. */
    json_t *forged = entry();
    json_array_remove(json_object_get(forged, "resources"), 0);
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_read_skill_file(f->c, forged, FORMS_URI, NULL, &bytes, &len,
                                                NULL, &err),
                     MCP_EINVAL);
    assert_non_null(strstr(err.message, "does not list the SKILL.md"));
    mcp_error_clear(&err);
    assert_null(bytes);
    assert_int_equal(sent(f), before);
    json_decref(forged);
    json_decref(skill);
}

/* A legacy server has no way to offer the extension: nothing is sent. */
static void test_legacy(void **state)
{
    (void)state;
    fixture_t f = {.server = {.answers = json_object(), .legacy = true}};
    connect_client(&f);
    assert_int_equal(mcp_client_era(f.c), MCP_ERA_LEGACY);
    serve(&f, SKILL_URI, text_result(SKILL_URI, SKILL_MD));
    size_t before = sent(&f);
    json_t *skill = entry(), *r = NULL;
    char *bytes = NULL;
    size_t len = 0;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_skills(f.c, NULL, NULL, &r, &err), MCP_EUNSUPPORTED);
    assert_non_null(strstr(err.message, "legacy"));
    assert_int_equal(mcp_client_list_skills_all(f.c, NULL, &r, &err), MCP_EUNSUPPORTED);
    assert_int_equal(mcp_client_get_skill(f.c, SKILL_URI, NULL, &r, &err), MCP_EUNSUPPORTED);
    assert_int_equal(mcp_client_read_skill_file(f.c, skill, SKILL_URI, NULL, &bytes, &len, NULL,
                                                &err),
                     MCP_EUNSUPPORTED);
    assert_int_equal(mcp_client_read_directory(f.c, "skill://pdf-processing", NULL, NULL, &r,
                                               &err),
                     MCP_EUNSUPPORTED);
    assert_null(r);
    assert_null(bytes);
    assert_int_equal(sent(&f), before);
    mcp_error_clear(&err);
    json_decref(skill);
    mcp_client_free(f.c);
    json_decref(f.server.answers);
}

static void test_read_directory(void **state)
{
    fixture_t *f = *state;
    answer(f, "resources/directory/read@skill://pdf-processing",
           json_loads("{\"resources\":[{\"uri\":\"skill://pdf-processing/SKILL.md\","
                      "\"name\":\"SKILL.md\"},{\"uri\":\"skill://pdf-processing/references\","
                      "\"name\":\"references\",\"mimeType\":\"inode/directory\"}],"
                      "\"nextCursor\":\"c2\"}",
                      0, NULL));
    answer(f, "resources/directory/read@c2", json_pack("{s:[]}", "resources"));
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_read_directory(f->c, "skill://pdf-processing", NULL, NULL, &r,
                                               &err),
                     MCP_OK);
    assert_int_equal(json_array_size(json_object_get(r, "resources")), 2);
    assert_string_equal(json_string_value(json_object_get(r, "nextCursor")), "c2");
    json_decref(r);
    /* The cursor goes out with the uri. */
    assert_int_equal(mcp_client_read_directory(f->c, "skill://pdf-processing", "c2", NULL, &r,
                                               &err),
                     MCP_OK);
    json_t *reads = fake_requests_of(f->ft, "resources/directory/read");
    const json_t *params = fake_params(json_array_get(reads, 1));
    assert_string_equal(json_string_value(json_object_get(params, "uri")),
                        "skill://pdf-processing");
    assert_string_equal(json_string_value(json_object_get(params, "cursor")), "c2");
    json_decref(reads);
    json_decref(r);

    /* Results without the shape of a listing. */
    static const char *const bad[] = {
        "{}",
        "{\"resources\":{}}",
        "{\"resources\":[{\"name\":\"no uri\"}]}",
        "{\"resources\":[],\"nextCursor\":7}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char uri[64], key[128];
        snprintf(uri, sizeof uri, "skill://bad-%zu", i);
        snprintf(key, sizeof key, "resources/directory/read@%s", uri);
        answer(f, key, json_loads(bad[i], 0, NULL));
        r = NULL;
        assert_int_equal(mcp_client_read_directory(f->c, uri, NULL, NULL, &r, &err), MCP_EPROTO);
        assert_null(r);
        mcp_error_clear(&err);
    }
    /* Not a directory: the server's -32602. */
    answer(f, "resources/directory/read@skill://pdf-processing/SKILL.md",
           json_pack("{s:i}", "$error", -32602));
    assert_int_equal(mcp_client_read_directory(f->c, "skill://pdf-processing/SKILL.md", NULL,
                                               NULL, &r, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32602);
    mcp_error_clear(&err);
    assert_int_equal(mcp_client_read_directory(f->c, NULL, NULL, NULL, &r, &err), MCP_EINVAL);
    mcp_error_clear(&err);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_list),
        T(test_list_refused),
        T(test_list_all),
        T(test_list_cached),
        T(test_get),
        T(test_get_refused),
        T(test_read_verified),
        T(test_read_size_mismatch),
        T(test_read_digest_mismatch),
        T(test_read_frontmatter_mismatch),
        T(test_read_unlisted),
        T(test_read_result_shapes),
        T(test_read_dynamic),
        T(test_read_stale_cache),
        T(test_bad_arguments),
        T(test_read_directory),
        cmocka_unit_test(test_legacy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
