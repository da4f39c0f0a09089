/*
 * Server core, the Skills extension (io.modelcontextprotocol/skills,
 * SEP-2640): skills read from directories (mcp_server_add_skill,
 * mcp_server_add_skills) and served through skills/list, skills/get,
 * resources/read and resources/directory/read. Covered: what a skill
 * holds (dot-files and symbolic links left out), the entry (frontmatter,
 * a complete manifest with digests computed here independently), paging,
 * the advertisement, text and binary files, which files resources/list
 * shows, directory listings, the errors of every method, the checks and
 * limits of loading, all-or-nothing loading of a root, removal, the
 * snapshot a skill is, and legacy clients.
 */
#define _GNU_SOURCE /* mkdtemp, symlink */

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <nettle/sha2.h>

#include "mcp/errors.h"
#include "mcp/server_core.h"

#include "capture_sink.h"
#include "legacy_request.h"
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

#define EXTENSION "io.modelcontextprotocol/skills"

static const char pdf_skill_md[] =
    "---\n"
    "name: pdf-processing\n"
    "description: Extract, fill, and assemble PDF documents\n"
    "license: MIT\n"
    "metadata:\n"
    "  version: 2\n"
    "  tags: [pdf, forms]\n"
    "---\n"
    "\n"
    "Use references/FORMS.md for forms.\n";
static const char forms_md[] = "# Forms\n\nFill them in.\n";
static const char fill_py[] = "print('fill')\n";
static const unsigned char logo[] = {0x89, 'P', 'N', 'G', 0x00, 0xff, 0x10, 0x00};

static const char alpha_skill_md[] = "---\nname: alpha\ndescription: The first skill\n---\nA.\n";

/* ------------------------------------------------------------------ */
/* A directory of skills on disk                                       */
/* ------------------------------------------------------------------ */

typedef struct tree {
    char root[64];
} tree_t;

static void write_file(const char *root, const char *rel, const void *bytes, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    /* Make the parent directories. */
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

static void write_text(const char *root, const char *rel, const char *text)
{
    write_file(root, rel, text, strlen(text));
}

/* root/pdf-processing: SKILL.md, references/FORMS.md, scripts/fill.py,
 * assets/logo.png (binary), a dot-file, a dot-directory, a symbolic link
 * and a FIFO (all four left out); root/alpha: SKILL.md; root/notes: no
 * SKILL.md (not a skill). */
static void make_tree(tree_t *t)
{
    snprintf(t->root, sizeof t->root, "/tmp/mcp-skills-XXXXXX");
    assert_non_null(mkdtemp(t->root));
    write_text(t->root, "pdf-processing/SKILL.md", pdf_skill_md);
    write_text(t->root, "pdf-processing/references/FORMS.md", forms_md);
    write_text(t->root, "pdf-processing/scripts/fill.py", fill_py);
    write_file(t->root, "pdf-processing/assets/logo.png", logo, sizeof logo);
    write_text(t->root, "pdf-processing/.secret", "not part of the skill\n");
    write_text(t->root, "pdf-processing/.git/config", "not part of the skill\n");
    char target[256], link[256];
    snprintf(target, sizeof target, "%s/pdf-processing/references/FORMS.md", t->root);
    snprintf(link, sizeof link, "%s/pdf-processing/linked.md", t->root);
    assert_int_equal(symlink(target, link), 0);
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/pdf-processing/pipe", t->root);
    assert_int_equal(mkfifo(fifo, 0600), 0); /* not a regular file: left out, never opened */
    write_text(t->root, "alpha/SKILL.md", alpha_skill_md);
    write_text(t->root, "notes/README.md", "no skill here\n");
}

static void remove_tree(tree_t *t)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
    assert_int_equal(system(cmd), 0);
}

static char *path_in(const tree_t *t, const char *rel)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", t->root, rel);
    return path;
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */
/* ------------------------------------------------------------------ */

static mcp_server_t *new_server(size_t page_size)
{
    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "skills-test", .version = "1", .page_size = page_size},
        NULL);
    assert_non_null(srv);
    return srv;
}

static json_int_t next_id = 1;

/* The extension's methods have no schema of the base protocol to check
 * their answers against (the tests below check their shape); the answers
 * to every other method are checked against it. */
static bool is_extension_method(const char *method)
{
    return strncmp(method, "skills/", 7) == 0 || strcmp(method, "resources/directory/read") == 0;
}

static json_t *call(mcp_server_t *srv, const char *method, json_t *params_new)
{
    json_t *request = modern_request(next_id++, method, params_new);
    if (!is_extension_method(method)) {
        json_t *response = serve(srv, request, NULL);
        assert_non_null(response);
        return response;
    }
    mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO};
    capture_sink_t cap;
    capture_init(&cap);
    capture_roundtrip(srv, NULL, request, &ctx, &cap);
    json_decref(request);
    assert_int_equal(capture_count(&cap), 1);
    json_t *response = json_incref((json_t *)capture_response(&cap, NULL));
    capture_cleanup(&cap);
    assert_non_null(response);
    assert_string_equal(json_string_value(json_object_get(response, "jsonrpc")), "2.0");
    if (json_object_get(response, "error"))
        MCP_ASSERT_SCHEMA_DEFINITION_VALID(json_object_get(response, "error"), "Error",
                                           MODERN_VERSION);
    return response;
}

/* The result of a method that must succeed (new reference). */
static json_t *result(mcp_server_t *srv, const char *method, json_t *params_new)
{
    json_t *response = call(srv, method, params_new);
    json_t *r = json_incref((json_t *)expect_complete(response));
    json_decref(response);
    return r;
}

static void expect_invalid_params(mcp_server_t *srv, const char *method, json_t *params_new)
{
    json_t *response = call(srv, method, params_new);
    expect_error(response, MCP_INVALID_PARAMS);
    json_decref(response);
}

static json_t *uri_params(const char *uri)
{
    return json_pack("{s:s}", "uri", uri);
}

static void digest_of(const void *bytes, size_t len, char out[7 + 64 + 1])
{
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, len, bytes);
    sha256_digest(&ctx, sizeof d, d);
    strcpy(out, "sha256:");
    for (size_t i = 0; i < sizeof d; i++)
        sprintf(out + 7 + 2 * i, "%02x", d[i]);
}

/* The manifest entry of `uri` in `entry`, asserted to appear once. */
static const json_t *manifest_item(const json_t *entry, const char *uri)
{
    const json_t *found = NULL;
    size_t i;
    const json_t *item;
    json_array_foreach(json_object_get(entry, "resources"), i, item) {
        if (strcmp(json_string_value(json_object_get(item, "uri")), uri) == 0) {
            assert_null(found);
            found = item;
        }
    }
    return found;
}

static void assert_manifest_item(const json_t *entry, const char *uri, const void *bytes,
                                 size_t len)
{
    const json_t *item = manifest_item(entry, uri);
    if (!item)
        fail_msg("%s is not in the manifest", uri);
    char digest[7 + 64 + 1];
    digest_of(bytes, len, digest);
    assert_string_equal(json_string_value(json_object_get(item, "digest")), digest);
    assert_int_equal(json_integer_value(json_object_get(item, "size")), len);
    assert_int_equal(json_object_size(item), 3);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

static void test_entry_and_manifest(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(0);
    size_t added = 99;
    mcp_error_t err = {0};
    assert_int_equal(mcp_server_add_skills(srv, t.root, &added, &err), MCP_OK);
    assert_int_equal(added, 2);

    json_t *list = result(srv, "skills/list", NULL);
    const json_t *skills = json_object_get(list, "skills");
    assert_int_equal(json_array_size(skills), 2);
    assert_null(json_object_get(list, "nextCursor"));
    /* Cacheable, as every list of the base protocol. */
    assert_true(json_is_integer(json_object_get(list, "ttlMs")));
    assert_string_equal(json_string_value(json_object_get(list, "cacheScope")), "private");

    /* By name: alpha first. */
    const json_t *alpha = json_array_get(skills, 0);
    const json_t *pdf = json_array_get(skills, 1);
    assert_string_equal(json_string_value(json_object_get(alpha, "uri")),
                        "skill://alpha/SKILL.md");
    assert_string_equal(json_string_value(json_object_get(pdf, "uri")),
                        "skill://pdf-processing/SKILL.md");
    assert_int_equal(json_object_size(pdf), 3);

    /* The frontmatter, rendered as JSON with its types. */
    json_t *expected = json_loads("{\"name\":\"pdf-processing\",\"description\":\"Extract, fill, "
                                  "and assemble PDF documents\",\"license\":\"MIT\","
                                  "\"metadata\":{\"version\":2,\"tags\":[\"pdf\",\"forms\"]}}",
                                  0, NULL);
    assert_true(json_equal(json_object_get(pdf, "frontmatter"), expected));
    json_decref(expected);

    /* The manifest: SKILL.md first, every file once, nothing else. */
    const json_t *manifest = json_object_get(pdf, "resources");
    assert_int_equal(json_array_size(manifest), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(manifest, 0), "uri")),
                        "skill://pdf-processing/SKILL.md");
    assert_manifest_item(pdf, "skill://pdf-processing/SKILL.md", pdf_skill_md,
                         strlen(pdf_skill_md));
    assert_manifest_item(pdf, "skill://pdf-processing/references/FORMS.md", forms_md,
                         strlen(forms_md));
    assert_manifest_item(pdf, "skill://pdf-processing/scripts/fill.py", fill_py,
                         strlen(fill_py));
    assert_manifest_item(pdf, "skill://pdf-processing/assets/logo.png", logo, sizeof logo);
    json_decref(list);

    mcp_server_free(srv);
    remove_tree(&t);
}

static void test_advertised_only_with_skills(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(0);

    /* No skill yet: nothing advertised, the methods do not exist. */
    json_t *discover = result(srv, "server/discover", NULL);
    assert_null(json_object_get(json_object_get(json_object_get(discover, "capabilities"),
                                                "extensions"),
                                EXTENSION));
    json_decref(discover);
    const char *methods[] = {"skills/list", "skills/get", "resources/directory/read"};
    for (size_t i = 0; i < 3; i++) {
        json_t *response = call(srv, methods[i], uri_params("skill://alpha/SKILL.md"));
        expect_error(response, MCP_METHOD_NOT_FOUND);
        json_decref(response);
    }

    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "alpha"), NULL), MCP_OK);
    discover = result(srv, "server/discover", NULL);
    const json_t *caps = json_object_get(discover, "capabilities");
    const json_t *settings = json_object_get(json_object_get(caps, "extensions"), EXTENSION);
    assert_true(json_is_object(settings));
    assert_true(json_is_true(json_object_get(settings, "directoryRead")));
    /* Skill files are resources: the capability comes with them. */
    assert_true(json_is_object(json_object_get(caps, "resources")));
    json_decref(discover);

    /* Removed again: gone from the advertisement too. */
    assert_int_equal(mcp_server_remove_skill(srv, "alpha"), MCP_OK);
    json_t *response = call(srv, "skills/list", NULL);
    expect_error(response, MCP_METHOD_NOT_FOUND);
    json_decref(response);
    assert_int_equal(mcp_server_remove_skill(srv, "alpha"), MCP_ENOTFOUND);

    mcp_server_free(srv);
    remove_tree(&t);
}

static void test_paging(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(1);
    assert_int_equal(mcp_server_add_skills(srv, t.root, NULL, NULL), MCP_OK);

    json_t *first = result(srv, "skills/list", NULL);
    assert_int_equal(json_array_size(json_object_get(first, "skills")), 1);
    const char *cursor = json_string_value(json_object_get(first, "nextCursor"));
    assert_non_null(cursor);
    json_t *second = result(srv, "skills/list", json_pack("{s:s}", "cursor", cursor));
    const json_t *skills = json_object_get(second, "skills");
    assert_int_equal(json_array_size(skills), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(skills, 0), "uri")),
                        "skill://pdf-processing/SKILL.md");
    assert_null(json_object_get(second, "nextCursor"));
    json_decref(first);
    json_decref(second);

    expect_invalid_params(srv, "skills/list", json_pack("{s:s}", "cursor", "not ours"));
    expect_invalid_params(srv, "skills/list", json_pack("{s:i}", "cursor", 3));

    /* The root of pdf-processing has four children: one per page. */
    const char *want[] = {"skill://pdf-processing/SKILL.md", "skill://pdf-processing/assets",
                          "skill://pdf-processing/references", "skill://pdf-processing/scripts"};
    char *next = NULL;
    for (size_t i = 0; i < 4; i++) {
        json_t *params = uri_params("skill://pdf-processing");
        if (next)
            json_object_set_new(params, "cursor", json_string(next));
        free(next);
        next = NULL;
        json_t *page = result(srv, "resources/directory/read", params);
        const json_t *children = json_object_get(page, "resources");
        assert_int_equal(json_array_size(children), 1);
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(children, 0), "uri")), want[i]);
        const json_t *c = json_object_get(page, "nextCursor");
        if (i < 3)
            next = strdup(json_string_value(c));
        else
            assert_null(c);
        json_decref(page);
    }

    mcp_server_free(srv);
    remove_tree(&t);
}

static void test_get(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(0);
    assert_int_equal(mcp_server_add_skills(srv, t.root, NULL, NULL), MCP_OK);

    json_t *list = result(srv, "skills/list", NULL);
    json_t *got = result(srv, "skills/get", uri_params("skill://pdf-processing/SKILL.md"));
    /* The entry, as listed; cacheable, and no cursor: one entry is no list. */
    assert_true(json_equal(json_object_get(got, "skill"),
                           json_array_get(json_object_get(list, "skills"), 1)));
    assert_null(json_object_get(got, "nextCursor"));
    assert_true(json_is_integer(json_object_get(got, "ttlMs")));
    assert_non_null(json_object_get(got, "cacheScope"));
    json_decref(got);
    json_decref(list);

    /* Anything but a served skill's SKILL.md is -32602. */
    const char *unknown[] = {"skill://nope/SKILL.md", "skill://pdf-processing/references/FORMS.md",
                             "skill://pdf-processing", "file:///etc/passwd", ""};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        expect_invalid_params(srv, "skills/get", uri_params(unknown[i]));
    expect_invalid_params(srv, "skills/get", json_object());
    expect_invalid_params(srv, "skills/get", json_pack("{s:i}", "uri", 1));

    mcp_server_free(srv);
    remove_tree(&t);
}

static const json_t *only_content(const json_t *read_result)
{
    const json_t *contents = json_object_get(read_result, "contents");
    assert_int_equal(json_array_size(contents), 1);
    return json_array_get(contents, 0);
}

static void test_files_are_resources(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(0);
    assert_int_equal(mcp_server_add_skills(srv, t.root, NULL, NULL), MCP_OK);

    json_t *r = result(srv, "resources/read", uri_params("skill://pdf-processing/SKILL.md"));
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(r, "ReadResourceResult", MODERN_VERSION);
    const json_t *c = only_content(r);
    assert_string_equal(json_string_value(json_object_get(c, "uri")),
                        "skill://pdf-processing/SKILL.md");
    assert_string_equal(json_string_value(json_object_get(c, "mimeType")), "text/markdown");
    assert_string_equal(json_string_value(json_object_get(c, "text")), pdf_skill_md);
    json_decref(r);

    r = result(srv, "resources/read", uri_params("skill://pdf-processing/scripts/fill.py"));
    assert_string_equal(json_string_value(json_object_get(only_content(r), "text")), fill_py);
    assert_string_equal(json_string_value(json_object_get(only_content(r), "mimeType")),
                        "text/x-python");
    json_decref(r);

    /* Binary: a blob of exactly its bytes. */
    r = result(srv, "resources/read", uri_params("skill://pdf-processing/assets/logo.png"));
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(r, "ReadResourceResult", MODERN_VERSION);
    c = only_content(r);
    assert_null(json_object_get(c, "text"));
    assert_string_equal(json_string_value(json_object_get(c, "mimeType")), "image/png");
    assert_string_equal(json_string_value(json_object_get(c, "blob")), "iVBORwD/EAA=");
    json_decref(r);

    /* Left out of the skill: dot-files, dot-directories, links. */
    const char *absent[] = {"skill://pdf-processing/.secret", "skill://pdf-processing/.git/config",
                            "skill://pdf-processing/linked.md", "skill://pdf-processing/pipe",
                            "skill://notes/README.md"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        expect_invalid_params(srv, "resources/read", uri_params(absent[i]));

    /* resources/list shows each SKILL.md, named and described by its
     * frontmatter, and no other file. */
    json_t *list = result(srv, "resources/list", NULL);
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(list, "ListResourcesResult", MODERN_VERSION);
    const json_t *resources = json_object_get(list, "resources");
    assert_int_equal(json_array_size(resources), 2);
    const json_t *md = json_array_get(resources, 1);
    assert_string_equal(json_string_value(json_object_get(md, "uri")),
                        "skill://pdf-processing/SKILL.md");
    assert_string_equal(json_string_value(json_object_get(md, "name")), "pdf-processing");
    assert_string_equal(json_string_value(json_object_get(md, "description")),
                        "Extract, fill, and assemble PDF documents");
    assert_string_equal(json_string_value(json_object_get(md, "mimeType")), "text/markdown");
    assert_int_equal(json_integer_value(json_object_get(md, "size")), strlen(pdf_skill_md));
    json_decref(list);

    mcp_server_free(srv);
    remove_tree(&t);
}

static void test_unlisted_files_do_not_break_paging(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    /* One resource per page: the skill's unlisted files sort between the
     * two SKILL.md entries and must neither show nor end a page early. */
    mcp_server_t *srv = new_server(1);
    assert_int_equal(mcp_server_add_skills(srv, t.root, NULL, NULL), MCP_OK);
    const char *want[] = {"skill://alpha/SKILL.md", "skill://pdf-processing/SKILL.md"};
    json_t *page = result(srv, "resources/list", NULL);
    for (size_t i = 0; i < 2; i++) {
        const json_t *resources = json_object_get(page, "resources");
        assert_int_equal(json_array_size(resources), 1);
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(resources, 0), "uri")), want[i]);
        const char *cursor = json_string_value(json_object_get(page, "nextCursor"));
        json_t *next = NULL;
        if (i == 0) {
            assert_non_null(cursor);
            next = result(srv, "resources/list", json_pack("{s:s}", "cursor", cursor));
        } else {
            assert_null(cursor);
        }
        json_decref(page);
        page = next;
    }
    mcp_server_free(srv);
    remove_tree(&t);
}

static void test_directories(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(0);
    assert_int_equal(mcp_server_add_skills(srv, t.root, NULL, NULL), MCP_OK);

    json_t *root = result(srv, "resources/directory/read", uri_params("skill://pdf-processing"));
    const json_t *children = json_object_get(root, "resources");
    assert_int_equal(json_array_size(children), 4);
    const json_t *refs = json_array_get(children, 2);
    assert_string_equal(json_string_value(json_object_get(refs, "uri")),
                        "skill://pdf-processing/references");
    assert_string_equal(json_string_value(json_object_get(refs, "name")), "references");
    assert_string_equal(json_string_value(json_object_get(refs, "mimeType")), "inode/directory");
    const json_t *md = json_array_get(children, 0);
    assert_string_equal(json_string_value(json_object_get(md, "mimeType")), "text/markdown");
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(md, "Resource", MODERN_VERSION);
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(refs, "Resource", MODERN_VERSION);
    json_decref(root);

    /* A subdirectory, with or without a trailing slash. */
    const char *sub[] = {"skill://pdf-processing/references", "skill://pdf-processing/references/"};
    for (size_t i = 0; i < 2; i++) {
        json_t *r = result(srv, "resources/directory/read", uri_params(sub[i]));
        children = json_object_get(r, "resources");
        assert_int_equal(json_array_size(children), 1);
        const json_t *forms = json_array_get(children, 0);
        assert_string_equal(json_string_value(json_object_get(forms, "uri")),
                            "skill://pdf-processing/references/FORMS.md");
        assert_string_equal(json_string_value(json_object_get(forms, "name")), "FORMS.md");
        assert_int_equal(json_integer_value(json_object_get(forms, "size")), strlen(forms_md));
        json_decref(r);
    }

    /* Files, unknown skills and other schemes are not directories. */
    const char *not_dirs[] = {"skill://pdf-processing/SKILL.md",
                              "skill://pdf-processing/references/FORMS.md",
                              "skill://pdf-processing/nothing", "skill://nope",
                              "skill://", "file:///tmp"};
    for (size_t i = 0; i < sizeof not_dirs / sizeof not_dirs[0]; i++)
        expect_invalid_params(srv, "resources/directory/read", uri_params(not_dirs[i]));
    expect_invalid_params(srv, "resources/directory/read", json_object());

    mcp_server_free(srv);
    remove_tree(&t);
}

static void test_a_skill_is_a_snapshot(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(0);
    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "pdf-processing"), NULL), MCP_OK);
    /* Changed on disk after it was added: served as it was. */
    write_text(t.root, "pdf-processing/references/FORMS.md", "tampered\n");
    json_t *r = result(srv, "resources/read",
                       uri_params("skill://pdf-processing/references/FORMS.md"));
    assert_string_equal(json_string_value(json_object_get(only_content(r), "text")), forms_md);
    json_decref(r);
    /* Removed, its files are gone (and with them the only resources);
     * added again, the change is served. */
    assert_int_equal(mcp_server_remove_skill(srv, "pdf-processing"), MCP_OK);
    json_t *response = call(srv, "resources/read",
                            uri_params("skill://pdf-processing/references/FORMS.md"));
    expect_error(response, MCP_METHOD_NOT_FOUND);
    json_decref(response);
    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "pdf-processing"), NULL), MCP_OK);
    r = result(srv, "resources/read", uri_params("skill://pdf-processing/references/FORMS.md"));
    assert_string_equal(json_string_value(json_object_get(only_content(r), "text")), "tampered\n");
    json_decref(r);
    mcp_server_free(srv);
    remove_tree(&t);
}

/* mcp_server_add_skill on a directory holding `skill_md`. */
static int add_with_skill_md(const char *skill_md, mcp_error_t *err)
{
    tree_t t;
    snprintf(t.root, sizeof t.root, "/tmp/mcp-skills-XXXXXX");
    assert_non_null(mkdtemp(t.root));
    if (skill_md)
        write_text(t.root, "s/SKILL.md", skill_md);
    else
        write_text(t.root, "s/README.md", "no SKILL.md\n");
    mcp_server_t *srv = new_server(0);
    int rc = mcp_server_add_skill(srv, path_in(&t, "s"), err);
    mcp_server_free(srv);
    remove_tree(&t);
    return rc;
}

static void test_what_a_skill_needs(void **state)
{
    (void)state;
    static const struct {
        const char *skill_md;
        const char *why; /* part of the message */
    } bad[] = {
        {NULL, "SKILL.md"},
        {"no frontmatter\n", ""},
        {"---\ndescription: d\n---\n", "name"},
        {"---\nname: Bad_Name\ndescription: d\n---\n", "name"},
        {"---\nname: -dash\ndescription: d\n---\n", "name"},
        {"---\nname: 42\ndescription: d\n---\n", "name"},
        {"---\nname: ok\n---\n", "description"},
        {"---\nname: ok\ndescription: [a]\n---\n", "description"},
        {"---\nname: ok\ndescription: \"\"\n---\n", "description"},
        {"---\nname: ok\ndescription:\n---\n", "description"},
        {"---\nname: ok\ndescription: d\nname: again\n---\n", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_t err = {0};
        int rc = add_with_skill_md(bad[i].skill_md, &err);
        if (rc != MCP_EINVAL)
            fail_msg("case %zu: rc %d (%s)", i, rc, err.message);
        if (!strstr(err.message, bad[i].why))
            fail_msg("case %zu: message \"%s\" does not mention %s", i, err.message,
                     bad[i].why);
        mcp_error_clear(&err);
    }
    assert_int_equal(add_with_skill_md("---\nname: ok\ndescription: d\n---\n", NULL), MCP_OK);

    mcp_server_t *srv = new_server(0);
    assert_int_equal(mcp_server_add_skill(srv, "/nonexistent/skill", NULL), MCP_EINVAL);
    assert_int_equal(mcp_server_add_skill(srv, NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_server_add_skills(srv, "/nonexistent", NULL, NULL), MCP_EIO);
    mcp_server_free(srv);
}

static void test_limits(void **state)
{
    (void)state;
    tree_t t;
    snprintf(t.root, sizeof t.root, "/tmp/mcp-skills-XXXXXX");
    assert_non_null(mkdtemp(t.root));
    write_text(t.root, "many/SKILL.md", "---\nname: many\ndescription: d\n---\n");
    for (int i = 1; i < MCP_SKILL_MAX_FILES; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "many/f%03d.txt", i);
        write_text(t.root, rel, "x");
    }
    mcp_server_t *srv = new_server(0);
    /* 512 files: the limit, allowed. */
    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "many"), NULL), MCP_OK);
    assert_int_equal(mcp_server_remove_skill(srv, "many"), MCP_OK);
    write_text(t.root, "many/one-too-many.txt", "x");
    mcp_error_t err = {0};
    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "many"), &err), MCP_ELIMIT);
    assert_non_null(strstr(err.message, "512"));
    mcp_error_clear(&err);

    /* More than 16 MiB in all (a sparse file: no need to write them). */
    write_text(t.root, "big/SKILL.md", "---\nname: big\ndescription: d\n---\n");
    write_text(t.root, "big/huge.bin", "");
    assert_int_equal(truncate(path_in(&t, "big/huge.bin"), MCP_SKILL_MAX_BYTES), 0);
    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "big"), &err), MCP_ELIMIT);
    mcp_error_clear(&err);
    mcp_server_free(srv);
    remove_tree(&t);
}

static int read_mine(mcp_call_t *call, const char *uri, void *user)
{
    (void)user;
    return mcp_call_add_resource_text(call, uri, "text/plain", "the application's");
}

static void test_names_and_clashes(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(0);
    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "alpha"), NULL), MCP_OK);
    /* The same name from another directory. */
    write_text(t.root, "other/SKILL.md", alpha_skill_md);
    mcp_error_t err = {0};
    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "other"), &err), MCP_EEXIST);
    assert_non_null(strstr(err.message, "alpha"));
    mcp_error_clear(&err);
    mcp_server_free(srv);

    /* A resource of the application holds one of the skill's URIs: the
     * skill is refused whole, and the application's resource stays. */
    srv = new_server(0);
    static const mcp_resource_t mine = {.uri = "skill://pdf-processing/scripts/fill.py",
                                        .name = "mine",
                                        .handler = read_mine};
    assert_int_equal(mcp_server_add_resource(srv, &mine, NULL), MCP_OK);
    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "pdf-processing"), &err), MCP_EEXIST);
    assert_non_null(strstr(err.message, "fill.py"));
    mcp_error_clear(&err);
    expect_invalid_params(srv, "resources/read", uri_params("skill://pdf-processing/SKILL.md"));
    json_t *list = result(srv, "resources/list", NULL);
    assert_int_equal(json_array_size(json_object_get(list, "resources")), 1);
    json_decref(list);
    mcp_server_free(srv);
    remove_tree(&t);
}

static void test_add_skills_is_all_or_nothing(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    /* "zeta" sorts after the good ones and is broken. */
    write_text(t.root, "zeta/SKILL.md", "---\nname: zeta\n---\n");
    mcp_server_t *srv = new_server(0);
    size_t added = 7;
    mcp_error_t err = {0};
    assert_int_equal(mcp_server_add_skills(srv, t.root, &added, &err), MCP_EINVAL);
    assert_int_equal(added, 0);
    assert_non_null(strstr(err.message, "zeta"));
    mcp_error_clear(&err);
    /* Nothing of the good skills stays: no skill, no resource at all. */
    const char *methods[] = {"skills/list", "resources/read"};
    for (size_t i = 0; i < 2; i++) {
        json_t *response = call(srv, methods[i], uri_params("skill://alpha/SKILL.md"));
        expect_error(response, MCP_METHOD_NOT_FOUND);
        json_decref(response);
    }
    mcp_server_free(srv);
    remove_tree(&t);
}

/* Readers on other threads while the skill is removed and added again,
 * over and over: every answer is the file or "not found", never a torn
 * or freed one (ThreadSanitizer and ASan watch the rest). */
typedef struct reader {
    mcp_server_t *srv;
    atomic_bool stop;
    atomic_int served; /* reads that found the file */
    atomic_int torn;   /* reads that found something else */
} reader_t;

static void *read_forms(void *arg)
{
    reader_t *r = arg;
    while (!atomic_load(&r->stop)) {
        json_t *response = serve(
            r->srv,
            modern_request(1, "resources/read",
                           uri_params("skill://pdf-processing/references/FORMS.md")),
            NULL);
        const json_t *result = json_object_get(response, "result");
        if (result) {
            const json_t *c = json_array_get(json_object_get(result, "contents"), 0);
            const char *text = json_string_value(json_object_get(c, "text"));
            atomic_fetch_add(text && strcmp(text, forms_md) == 0 ? &r->served : &r->torn, 1);
        }
        json_decref(response);
    }
    return NULL;
}

static void test_remove_while_reading(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(0);
    /* A resource of its own keeps resources/read a served method. */
    static const mcp_resource_t mine = {.uri = "app://x", .name = "x", .handler = read_mine};
    assert_int_equal(mcp_server_add_resource(srv, &mine, NULL), MCP_OK);
    reader_t r = {.srv = srv};
    atomic_init(&r.stop, false);
    atomic_init(&r.served, 0);
    atomic_init(&r.torn, 0);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, read_forms, &r), 0);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "pdf-processing"), NULL), MCP_OK);
        assert_int_equal(mcp_server_remove_skill(srv, "pdf-processing"), MCP_OK);
    }
    assert_int_equal(mcp_server_add_skill(srv, path_in(&t, "pdf-processing"), NULL), MCP_OK);
    while (atomic_load(&r.served) == 0)
        sched_yield();
    atomic_store(&r.stop, true);
    pthread_join(thread, NULL);
    assert_int_equal(atomic_load(&r.torn), 0);
    mcp_server_free(srv);
    remove_tree(&t);
}

static void test_legacy_clients(void **state)
{
    (void)state;
    tree_t t;
    make_tree(&t);
    mcp_server_t *srv = new_server(0);
    assert_int_equal(mcp_server_add_skills(srv, t.root, NULL, NULL), MCP_OK);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    json_decref(legacy_serve(srv, conn, NULL, legacy_initialize(1, "2025-11-25", NULL), NULL));
    /* No extension in the legacy protocol: the methods are not there ... */
    json_t *response = legacy_serve(srv, conn, NULL, legacy_request(2, "skills/list", NULL), NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(response, "error"),
                                                        "code")),
                     MCP_METHOD_NOT_FOUND);
    json_decref(response);
    /* ... but the files are resources like any other. */
    response = legacy_serve(srv, conn, NULL,
                            legacy_request(3, "resources/read",
                                           uri_params("skill://alpha/SKILL.md")),
                            NULL);
    const json_t *r = expect_legacy_result(response);
    assert_string_equal(json_string_value(json_object_get(only_content(r), "text")),
                        alpha_skill_md);
    json_decref(response);
    mcp_conn_free(conn);
    mcp_server_free(srv);
    remove_tree(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry_and_manifest),
        cmocka_unit_test(test_advertised_only_with_skills),
        cmocka_unit_test(test_paging),
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_files_are_resources),
        cmocka_unit_test(test_unlisted_files_do_not_break_paging),
        cmocka_unit_test(test_directories),
        cmocka_unit_test(test_a_skill_is_a_snapshot),
        cmocka_unit_test(test_what_a_skill_needs),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_names_and_clashes),
        cmocka_unit_test(test_add_skills_is_all_or_nothing),
        cmocka_unit_test(test_remove_while_reading),
        cmocka_unit_test(test_legacy_clients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
