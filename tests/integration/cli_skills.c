/*
 * mcp skills and mcp skill against the conformance fixture over stdio,
 * which serves examples/conformance-server/skills/pdf-processing: the
 * listing, the SKILL.md and another file by path and by URI (each
 * verified against the manifest before it is printed), and the errors of
 * an unknown skill or file. Verification failures need a server that
 * lies, which libmcp's does not: the client tests and the suite's
 * sep-2640-client-* scenarios cover them.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli_harness.h"

#ifndef CONFORMANCE_SERVER
/* Built without the examples: no fixture to ask. */
int main(void)
{
    return 77;
}
#else

static const char *const server[] = {CONFORMANCE_SERVER, "--stdio", NULL};
static cli_target_t target = {.server = server};

/* A file of the fixture's skill, as it is on disk (malloc'd). */
static char *fixture_file(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/pdf-processing/%s", CONFORMANCE_SKILLS_DIR, rel);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *text = calloc(1, 1 << 16);
    assert_non_null(text);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

static size_t count(const char *haystack, const char *needle)
{
    size_t n = 0;
    for (const char *at = haystack; (at = strstr(at, needle)) != NULL; at += strlen(needle))
        n++;
    return n;
}

static void test_list(void **state)
{
    (void)state;
    proc_result_t r;
    CLI(&r, &target, "skills");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "pdf-processing");
    assert_contains(r.out, "2 files");
    assert_contains(r.out, "Extract text from PDF files");
    proc_result_free(&r);

    CLI(&r, &target, "--json", "skills");
    assert_status(&r, EXIT_OK);
    assert_string_equal(jstr(r.json, "skills/0/uri"), "skill://pdf-processing/SKILL.md");
    assert_string_equal(jstr(r.json, "skills/0/frontmatter/license"), "Apache-2.0");
    assert_int_equal(strncmp(jstr(r.json, "skills/0/resources/0/digest"), "sha256:", 7), 0);
    proc_result_free(&r);
}

static void test_files(void **state)
{
    (void)state;
    char *md = fixture_file("SKILL.md");
    char *forms = fixture_file("references/FORMS.md");
    proc_result_t r;
    /* By name, and by the URI of its SKILL.md. */
    const char *names[] = {"pdf-processing", "skill://pdf-processing/SKILL.md"};
    for (size_t i = 0; i < 2; i++) {
        CLI(&r, &target, "-v", "skill", names[i]);
        assert_status(&r, EXIT_OK);
        assert_string_equal(r.out, md);
        /* Only the file asked for was fetched: one read, of SKILL.md. */
        assert_int_equal(count(r.err, "\"method\":\"resources/read\""), 1);
        proc_result_free(&r);
    }
    /* Another file, by its path in the skill and by its URI. */
    const char *files[] = {"references/FORMS.md", "skill://pdf-processing/references/FORMS.md"};
    for (size_t i = 0; i < 2; i++) {
        CLI(&r, &target, "skill", "pdf-processing", files[i]);
        assert_status(&r, EXIT_OK);
        assert_string_equal(r.out, forms);
        proc_result_free(&r);
    }
    CLI(&r, &target, "--json", "skill", "pdf-processing");
    assert_status(&r, EXIT_OK);
    assert_true(json_is_true(jpath(r.json, "verified")));
    assert_string_equal(jstr(r.json, "text"), md);
    proc_result_free(&r);
    free(md);
    free(forms);
}

static void test_errors(void **state)
{
    (void)state;
    proc_result_t r;
    CLI(&r, &target, "skill", "no-such-skill");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "no skill no-such-skill");
    proc_result_free(&r);

    /* Not in the manifest: refused before anything is asked. */
    CLI(&r, &target, "-v", "skill", "pdf-processing", "../../etc/passwd");
    assert_status(&r, EXIT_USAGE);
    assert_contains(r.err, "is not a file of skill pdf-processing");
    assert_not_contains(r.err, "\"method\":\"resources/read\"");
    assert_string_equal(r.out, "");
    proc_result_free(&r);
}

/* The example server, with the example skill (make demo shows it). */
static void test_notes_server_example(void **state)
{
    (void)state;
    static const char *const notes[] = {MCP_NOTES_SERVER, "--skills", EXAMPLE_SKILLS_DIR, NULL};
    const cli_target_t with_skills = {.server = notes};
    proc_result_t r;
    CLI(&r, &with_skills, "skills");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "note-taking");
    proc_result_free(&r);
    CLI(&r, &with_skills, "skill", "note-taking", "templates/meeting.md");
    assert_status(&r, EXIT_OK);
    assert_contains(r.out, "## Decided");
    proc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notes_server_example),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif /* CONFORMANCE_SERVER */
