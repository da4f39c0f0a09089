/*
 * The Skills extension end to end: libmcp's client against libmcp's
 * server over Streamable HTTP, with a skill read from a directory written
 * here. The entries the client checks are the ones the server built; every
 * file of the manifest, text and binary, comes back verified and equal to
 * what is on disk. And the checks bite against a real server: a skill
 * entry from one server does not vouch for files a second server serves
 * changed (same size, other bytes: the digest; other size: the size), nor
 * for a SKILL.md whose frontmatter the entry states differently.
 */
#define _GNU_SOURCE /* mkdtemp */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "mcp/mcp.h"

static const char skill_md[] = "---\n"
                               "name: unit-conversion\n"
                               "description: Convert between metric and imperial units\n"
                               "metadata:\n"
                               "  precision: 3\n"
                               "---\n"
                               "See tables/lengths.csv.\n";
static const char lengths[] = "inch,cm\n1,2.54\n";
static const unsigned char icon[] = {0x00, 0x01, 0xfe, 0xff, 'i', 'c', 'o', 0x00};

typedef struct served {
    char dir[64];
    mcp_server_t *srv;
    mcp_http_server_t *http;
    mcp_client_t *client;
} served_t;

static void write_file(const char *dir, const char *rel, const void *bytes, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdir(path, 0755);
    *slash = '/';
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

/* The skill on disk with `csv` as tables/lengths.csv, served over HTTP,
 * and a client connected to it. */
static void serve(served_t *s, const char *csv)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/mcp-skill-e2e-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    write_file(s->dir, "SKILL.md", skill_md, strlen(skill_md));
    write_file(s->dir, "tables/lengths.csv", csv, strlen(csv));
    write_file(s->dir, "icon.bin", icon, sizeof icon);

    mcp_error_t err = {0};
    s->srv = mcp_server_new(&(mcp_server_options_t){.name = "skills-e2e", .version = "1"}, &err);
    assert_non_null(s->srv);
    if (mcp_server_add_skill(s->srv, s->dir, &err) != MCP_OK)
        fail_msg("add_skill: %s", err.message);
    assert_int_equal(mcp_http_server_start(s->srv, &(mcp_http_options_t){0}, &s->http, &err),
                     MCP_OK);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", (unsigned)mcp_http_server_port(s->http));
    s->client = mcp_client_new(&(mcp_client_options_t){.name = "skills-e2e", .version = "1"},
                               &err);
    assert_non_null(s->client);
    if (mcp_client_connect_http(s->client, &(mcp_http_target_t){.url = url}, &err) != MCP_OK)
        fail_msg("connect: %s", err.message);
}

static void unserve(served_t *s)
{
    mcp_client_free(s->client);
    mcp_http_server_stop(s->http);
    mcp_server_free(s->srv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    assert_int_equal(system(cmd), 0);
}

static json_t *the_skill(served_t *s)
{
    json_t *skills = NULL;
    mcp_error_t err = {0};
    if (mcp_client_list_skills_all(s->client, NULL, &skills, &err) != MCP_OK)
        fail_msg("skills/list: %s", err.message);
    assert_int_equal(json_array_size(skills), 1);
    json_t *skill = json_incref(json_array_get(skills, 0));
    json_decref(skills);
    return skill;
}

/* Reads `uri` of `skill`; the rc, with the message in *err. */
static int read_file(served_t *s, const json_t *skill, const char *uri, char **content,
                     size_t *len, mcp_error_t *err)
{
    bool verified = false;
    *content = NULL;
    int rc = mcp_client_read_skill_file(s->client, skill, uri, NULL, content, len, &verified, err);
    if (rc == MCP_OK)
        assert_true(verified);
    return rc;
}

static void test_every_file_verified(void **state)
{
    (void)state;
    served_t s;
    serve(&s, lengths);
    json_t *skill = the_skill(&s);
    assert_string_equal(json_string_value(json_object_get(skill, "uri")),
                        "skill://unit-conversion/SKILL.md");
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_object_get(skill, "frontmatter"), "metadata"),
                         "precision")),
                     3);

    json_t *got = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_get_skill(s.client, "skill://unit-conversion/SKILL.md", NULL,
                                          &got, &err),
                     MCP_OK);
    assert_true(json_equal(got, skill));
    json_decref(got);

    static const struct {
        const char *uri;
        const void *bytes;
        size_t len;
    } files[] = {
        {"skill://unit-conversion/SKILL.md", skill_md, sizeof skill_md - 1},
        {"skill://unit-conversion/tables/lengths.csv", lengths, sizeof lengths - 1},
        {"skill://unit-conversion/icon.bin", icon, sizeof icon},
    };
    assert_int_equal(json_array_size(json_object_get(skill, "resources")), 3);
    for (size_t i = 0; i < 3; i++) {
        char *content;
        size_t len;
        if (read_file(&s, skill, files[i].uri, &content, &len, &err) != MCP_OK)
            fail_msg("%s: %s", files[i].uri, err.message);
        assert_int_equal(len, files[i].len);
        assert_memory_equal(content, files[i].bytes, len);
        free(content);
    }

    /* Not a file of the skill. */
    char *content;
    size_t len;
    assert_int_equal(read_file(&s, skill, "skill://unit-conversion/other.md", &content, &len,
                               &err),
                     MCP_ENOTFOUND);
    mcp_error_clear(&err);

    /* The skill's directories, as the server lists them. */
    json_t *dir = NULL;
    assert_int_equal(mcp_client_read_directory(s.client, "skill://unit-conversion", NULL, NULL,
                                               &dir, &err),
                     MCP_OK);
    const json_t *children = json_object_get(dir, "resources");
    assert_int_equal(json_array_size(children), 3); /* SKILL.md, icon.bin, tables */
    const json_t *tables = json_array_get(children, 2);
    assert_string_equal(json_string_value(json_object_get(tables, "uri")),
                        "skill://unit-conversion/tables");
    assert_string_equal(json_string_value(json_object_get(tables, "mimeType")), "inode/directory");
    json_decref(dir);
    assert_int_equal(mcp_client_read_directory(s.client, "skill://unit-conversion/icon.bin", NULL,
                                               NULL, &dir, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32602);
    mcp_error_clear(&err);

    json_decref(skill);
    unserve(&s);
}

static void test_changed_files_are_refused(void **state)
{
    (void)state;
    served_t a, b, c;
    serve(&a, lengths);
    serve(&b, "inch,cm\n1,2.55\n");    /* same size, other bytes */
    serve(&c, "inch,cm\n1,2.54\n2,5.08\n"); /* longer */
    json_t *skill = the_skill(&a);
    char *content;
    size_t len;
    mcp_error_t err = {0};

    assert_int_equal(read_file(&b, skill, "skill://unit-conversion/tables/lengths.csv", &content,
                               &len, &err),
                     MCP_EPROTO);
    assert_null(content);
    assert_non_null(strstr(err.message, "digest"));
    mcp_error_clear(&err);

    assert_int_equal(read_file(&c, skill, "skill://unit-conversion/tables/lengths.csv", &content,
                               &len, &err),
                     MCP_EPROTO);
    assert_null(content);
    assert_non_null(strstr(err.message, "size"));
    mcp_error_clear(&err);

    /* The entry says another description than the SKILL.md: the digest
     * and size hold, the frontmatter does not. */
    json_object_set_new(json_object_get(skill, "frontmatter"), "description",
                        json_string("Convert currencies"));
    assert_int_equal(read_file(&a, skill, "skill://unit-conversion/SKILL.md", &content, &len,
                               &err),
                     MCP_EPROTO);
    assert_null(content);
    assert_non_null(strstr(err.message, "description"));
    mcp_error_clear(&err);

    json_decref(skill);
    unserve(&a);
    unserve(&b);
    unserve(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_file_verified),
        cmocka_unit_test(test_changed_files_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
