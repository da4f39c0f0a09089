/*
 * Skills (the extension io.modelcontextprotocol/skills) through a host,
 * over five servers:
 *
 *   skilled   servers/host_test_server --skills examples/conformance-server/skills
 *             (modern; serves pdf-processing, adds and removes skills on request)
 *   plain     servers/host_test_server without skills (modern, no extension)
 *   old       servers/legacy_stdio_server, legacy, whose capabilities claim
 *             the extension all the same
 *   mangled   the same skills as `skilled`, but its answers pass through sed,
 *             which empties every "description": its skills listing is
 *             malformed (the client refuses it)
 *   broken    a command that does not exist: never ready
 *
 * mcp_host_skills() lists exactly the skills of `skilled`, each the
 * server's entry plus the host's _meta, and asks no other server (a
 * malformed listing costs `mangled` its skills, not its tools);
 * mcp_host_read_skill_file() routes an entry to its server and hands out
 * only verified bytes, refusing entries that name no server, an unknown
 * one or one that is not ready; a skill added or removed on the server
 * shows in the view once its resources list_changed arrives.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host_harness.h"

#define SKILLS_DIR MCP_SOURCE_DIR "/examples/conformance-server/skills"
#define PDF_SKILL_MD "skill://pdf-processing/SKILL.md"
#define PDF_FORMS "skill://pdf-processing/references/FORMS.md"

/* Every "description" of the server's JSON lines, emptied (sed -u: line
 * by line, as stdio frames messages). */
#define MANGLE "sed -u 's/\"description\": *\"[^\"]*\"/\"description\":\"\"/g'"

/* The skill the tests add while the host runs, written to a temporary
 * directory. */
static const char second_skill_md[] =
    "---\n"
    "name: release-notes\n"
    "description: Write release notes from a list of changes.\n"
    "---\n"
    "\n"
    "# Release notes\n"
    "\n"
    "Group the changes by kind, newest first.\n";

typedef struct fixture {
    recorder_t rec;
    mcp_host_t *host;
    char second_dir[64];   /* the added skill's directory ("" before setup made it) */
    char second_md[96];    /* its SKILL.md */
} fixture_t;

static fixture_t fx;

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

/* The whole file at `path` (malloc'd, NUL-terminated), its length in *len;
 * fails the test when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&buf, &size);
    assert_non_null(mem);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, mem);
    fclose(f);
    fclose(mem);
    *len = size;
    return buf;
}

/* The entry of the skill whose SKILL.md is `uri` in a view (borrowed from
 * `skills`), or NULL. */
static json_t *find_skill(json_t *skills, const char *uri)
{
    size_t i;
    json_t *e;
    json_array_foreach(skills, i, e) {
        const char *u = json_string_value(json_object_get(e, "uri"));
        if (u && strcmp(u, uri) == 0)
            return e;
    }
    return NULL;
}

static bool view_has_skill(const char *uri)
{
    json_t *skills = mcp_host_skills(fx.host);
    bool found = find_skill(skills, uri) != NULL;
    json_decref(skills);
    return found;
}

static const char *meta_server(const json_t *entry)
{
    return json_string_value(
        json_object_get(json_object_get(entry, "_meta"), "io.libmcp/server"));
}

/* mcp_host_read_skill_file, expected to succeed with verified bytes equal
 * to the file at `path`. */
static void assert_reads_file(const json_t *skill, const char *uri, const char *path)
{
    size_t want_len;
    char *want = slurp(path, &want_len);
    char *content = NULL;
    size_t len = 0;
    bool verified = false;
    mcp_error_t err = {0};
    int rc = mcp_host_read_skill_file(fx.host, skill, uri, NULL, &content, &len, &verified,
                                      &err);
    if (rc != MCP_OK)
        fail_msg("reading %s: %s (%s)", uri, mcp_strerror(rc), err.message);
    assert_true(verified);
    assert_int_equal(len, want_len);
    assert_memory_equal(content, want, len);
    assert_int_equal(content[len], '\0');
    free(content);
    free(want);
    mcp_error_clear(&err);
}

/* mcp_host_read_skill_file, expected to fail with `want` and return
 * nothing; the message must contain `says`. */
static void assert_read_refused(const json_t *skill, const char *uri, int want, const char *says)
{
    char *content = (char *)"untouched";
    size_t len = 7;
    bool verified = true;
    mcp_error_t err = {0};
    int rc = mcp_host_read_skill_file(fx.host, skill, uri, NULL, &content, &len, &verified,
                                      &err);
    if (rc != want)
        fail_msg("reading %s: %s (%s), expected %s", uri, mcp_strerror(rc), err.message,
                 mcp_strerror(want));
    assert_null(content);
    assert_int_equal(len, 0);
    assert_false(verified);
    if (!strstr(err.message, says))
        fail_msg("the message \"%s\" does not say \"%s\"", err.message, says);
    mcp_error_clear(&err);
}

/* ------------------------------------------------------------------------
 * Setup
 * ------------------------------------------------------------------------ */

static void add_server(const char *name, char **argv)
{
    mcp_error_t err = {0};
    if (mcp_host_add_server(fx.host, &(mcp_server_config_t){.name = (char *)name, .argv = argv},
                            &err) != MCP_OK)
        fail_msg("%s: %s", name, err.message);
}

static int setup(void **state)
{
    recorder_init(&fx.rec);
    snprintf(fx.second_dir, sizeof fx.second_dir, "/tmp/libmcp-host-skill-XXXXXX");
    if (!mkdtemp(fx.second_dir)) {
        fx.second_dir[0] = '\0';
        return -1;
    }
    snprintf(fx.second_md, sizeof fx.second_md, "%s/SKILL.md", fx.second_dir);
    FILE *f = fopen(fx.second_md, "w");
    if (!f || fputs(second_skill_md, f) == EOF) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);

    fx.host = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "libmcp-host-test", .version = "1.0", .timeout_ms = 20000,
                   .log = on_library_log, .log_user = &fx.rec},
        .callbacks = {.changed = on_changed, .server_state = on_server_state, .user = &fx.rec},
        .retry_initial_ms = 100, .retry_max_ms = 2000}, NULL);
    assert_non_null(fx.host);
    add_server("skilled", (char *[]){HOST_TEST_SERVER, "skilled", "--skills", SKILLS_DIR, NULL});
    add_server("plain", (char *[]){HOST_TEST_SERVER, "plain", NULL});
    add_server("old", (char *[]){LEGACY_STDIO_SERVER, "error", "skills", NULL});
    add_server("mangled", (char *[]){"/bin/sh", "-c",
                                     "exec " HOST_TEST_SERVER " mangled --skills " SKILLS_DIR
                                     " | " MANGLE, NULL});
    add_server("broken", (char *[]){"/nonexistent/libmcp-server", NULL});
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    mcp_host_free(fx.host);
    if (fx.second_dir[0]) {
        unlink(fx.second_md);
        rmdir(fx.second_dir);
    }
    recorder_clear(&fx.rec);
    return 0;
}

/* ------------------------------------------------------------------------
 * The tests, in order: each builds on the host the previous ones used
 * ------------------------------------------------------------------------ */

static void test_all_connect(void **state)
{
    assert_int_equal(mcp_host_connect(fx.host, -1), 4);
    assert_true(has_state(fx.host, "skilled", MCP_HOST_READY));
    assert_true(has_state(fx.host, "plain", MCP_HOST_READY));
    assert_true(has_state(fx.host, "old", MCP_HOST_READY));
    assert_true(has_state(fx.host, "mangled", MCP_HOST_READY));
    assert_false(has_state(fx.host, "broken", MCP_HOST_READY));
    mcp_client_t *c = mcp_host_client_acquire(fx.host, "old");
    assert_non_null(c);
    assert_int_equal(mcp_client_era(c), MCP_ERA_LEGACY);
    /* It does claim the extension: the host must know better. */
    assert_non_null(json_object_get(
        json_object_get(mcp_client_server_capabilities(c), "extensions"),
        "io.modelcontextprotocol/skills"));
    mcp_host_client_release(fx.host, c);
}

static void test_view_lists_only_the_skilled_server(void **state)
{
    json_t *skills = mcp_host_skills(fx.host);
    assert_non_null(skills);
    assert_int_equal(json_array_size(skills), 1);
    const json_t *entry = json_array_get(skills, 0);
    assert_string_equal(json_string_value(json_object_get(entry, "uri")), PDF_SKILL_MD);
    assert_string_equal(meta_server(entry), "skilled");

    /* The server's own entry, decorated and otherwise untouched. */
    mcp_client_t *c = mcp_host_client_acquire(fx.host, "skilled");
    assert_non_null(c);
    json_t *own = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_skills_all(c, NULL, &own, &err), MCP_OK);
    mcp_host_client_release(fx.host, c);
    assert_int_equal(json_array_size(own), 1);
    json_t *expect = json_deep_copy(json_array_get(own, 0));
    json_t *meta = json_object_get(expect, "_meta");
    if (!meta)
        json_object_set_new(expect, "_meta", meta = json_object());
    json_object_set_new(meta, "io.libmcp/server", json_string("skilled"));
    assert_true(json_equal(expect, entry));
    json_decref(expect);
    json_decref(own);
    json_decref(skills);

    /* The others were not asked: a server asked for a list it does not
     * have refuses it, and the host logs the refusal -- as it did for the
     * legacy server's resources, which its capabilities promise, and for
     * the malformed skills of `mangled`. */
    assert_true(logged_count(&fx.rec, "server \"old\": listing its resources failed") >= 1);
    assert_int_equal(logged_count(&fx.rec, "server \"plain\": listing its skills"), 0);
    assert_int_equal(logged_count(&fx.rec, "server \"old\": listing its skills"), 0);
    assert_true(logged_count(&fx.rec, "server \"mangled\": listing its skills failed: "
                                      "invalid skill entry") >= 1);
    /* Which cost `mangled` its skills, not its tools. */
    assert_true(lists_name(mcp_host_tools(fx.host), "name", "mangled__echo"));
}

static void test_read_verified_files(void **state)
{
    json_t *skills = mcp_host_skills(fx.host);
    const json_t *pdf = find_skill(skills, PDF_SKILL_MD);
    assert_non_null(pdf);
    assert_reads_file(pdf, PDF_SKILL_MD, SKILLS_DIR "/pdf-processing/SKILL.md");
    assert_reads_file(pdf, PDF_FORMS, SKILLS_DIR "/pdf-processing/references/FORMS.md");

    /* The bytes are checked against the entry: one that lists another
     * size for FORMS.md gets nothing. */
    json_t *tampered = json_deep_copy(pdf);
    size_t i;
    json_t *file;
    json_array_foreach(json_object_get(tampered, "resources"), i, file)
        if (strcmp(json_string_value(json_object_get(file, "uri")), PDF_FORMS) == 0)
            json_object_set_new(file, "size",
                                json_integer(json_integer_value(json_object_get(file, "size")) + 1));
    assert_read_refused(tampered, PDF_FORMS, MCP_EPROTO, "size mismatch");
    json_decref(tampered);

    /* A file the entry does not list is not fetched. */
    assert_read_refused(pdf, "skill://pdf-processing/secret.md", MCP_ENOTFOUND,
                        "is not a file of the skill");
    json_decref(skills);
}

static void test_entries_that_name_no_ready_server(void **state)
{
    json_t *skills = mcp_host_skills(fx.host);
    const json_t *pdf = find_skill(skills, PDF_SKILL_MD);
    assert_non_null(pdf);

    /* The server's own entry, without the host's decoration. */
    json_t *bare = json_deep_copy(pdf);
    json_object_del(bare, "_meta");
    assert_read_refused(bare, PDF_SKILL_MD, MCP_EINVAL, "names no server");
    /* A name that is not a string. */
    json_object_set_new(bare, "_meta", json_pack("{s:i}", "io.libmcp/server", 1));
    assert_read_refused(bare, PDF_SKILL_MD, MCP_EINVAL, "names no server");
    json_decref(bare);

    /* A server the host does not have, and one that is not ready. */
    json_t *moved = json_deep_copy(pdf);
    json_t *meta = json_object_get(moved, "_meta");
    json_object_set_new(meta, "io.libmcp/server", json_string("nobody"));
    assert_read_refused(moved, PDF_SKILL_MD, MCP_ENOTFOUND, "no server \"nobody\"");
    json_object_set_new(meta, "io.libmcp/server", json_string("broken"));
    assert_read_refused(moved, PDF_SKILL_MD, MCP_ESTATE, "not ready");
    json_decref(moved);

    /* NULL arguments. */
    char *content = NULL;
    size_t len = 0;
    assert_int_equal(mcp_host_read_skill_file(fx.host, NULL, PDF_SKILL_MD, NULL, &content, &len,
                                              NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_host_read_skill_file(fx.host, pdf, NULL, NULL, &content, &len, NULL,
                                              NULL), MCP_EINVAL);
    assert_int_equal(mcp_host_read_skill_file(NULL, pdf, PDF_SKILL_MD, NULL, &content, &len,
                                              NULL, NULL), MCP_EINVAL);
    assert_null(mcp_host_skills(NULL));
    json_decref(skills);
}

static void test_view_follows_the_server(void **state)
{
    static const char second[] = "skill://release-notes/SKILL.md";
    int changed = changed_count(&fx.rec);
    assert_false(view_has_skill(second));
    char args[160];
    snprintf(args, sizeof args, "{\"dir\": \"%s\"}", fx.second_dir);
    char expect[160];
    snprintf(expect, sizeof expect, "added the skill in %s", fx.second_dir);
    ASSERT_CALL_TEXT(fx.host, "skilled__add_skill", args, expect);
    WAIT_UNTIL(view_has_skill(second), 10000);
    assert_true(changed_count(&fx.rec) > changed);

    json_t *skills = mcp_host_skills(fx.host);
    assert_int_equal(json_array_size(skills), 2);
    const json_t *added = find_skill(skills, second);
    assert_string_equal(meta_server(added), "skilled");
    assert_reads_file(added, second, fx.second_md);
    assert_true(view_has_skill(PDF_SKILL_MD));

    /* And removed: the view drops it, and the server no longer serves the
     * files of an entry kept from before. (Without bypass_cache the read
     * could be answered by the client's copy of the earlier one, kept for
     * the ttlMs the server gave it: that is the caching contract, and the
     * copy still matches the entry.) */
    ASSERT_CALL_TEXT(fx.host, "skilled__remove_skill", "{\"name\": \"release-notes\"}",
                     "removed the skill release-notes");
    WAIT_UNTIL(!view_has_skill(second), 10000);
    assert_true(view_has_skill(PDF_SKILL_MD));
    char *content = NULL;
    size_t len = 0;
    mcp_error_t err = {0};
    assert_int_equal(mcp_host_read_skill_file(fx.host, added, second,
                                              &(mcp_request_options_t){.bypass_cache = true},
                                              &content, &len, NULL, &err), MCP_ERPC);
    assert_null(content);
    assert_non_null(strstr(err.message, "not found"));
    mcp_error_clear(&err);
    json_decref(skills);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_connect),
        cmocka_unit_test(test_view_lists_only_the_skilled_server),
        cmocka_unit_test(test_read_verified_files),
        cmocka_unit_test(test_entries_that_name_no_ready_server),
        cmocka_unit_test(test_view_follows_the_server),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
