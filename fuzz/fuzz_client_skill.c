/*
 * Fuzzes what the client reads of the Skills extension: a skills/list
 * result (client_skill_list_read, client_skill_read), and a resources/read
 * result checked against a fixed skill entry (client_skill_file_verify),
 * and checks that what they accept is what the client relies on.
 *
 * Input: [flags][JSON...]
 *   flags bit 0    0: the JSON is a ListSkillsResult
 *                  1: the JSON is a ReadResourceResult for a file of the
 *                     fixed skill below
 *   flags bit 1    the fixed skill's resources are "dynamic"
 *   flags bits 2-3 the file read: SKILL.md, FORMS.md, logo.bin, or a file
 *                  the manifest does not list
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"

#define DIR "skill://pdf-processing/"
#define SKILL_MD "---\nname: pdf-processing\n" \
                 "description: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n"
#define FORMS "Supporting content.\n"

/* The fixed skill, with the true digests of its files. */
static const char manifest[] =
    "{\"uri\":\"" DIR "SKILL.md\","
    "\"frontmatter\":{\"name\":\"pdf-processing\","
    "\"description\":\"Extract, fill, and assemble PDF documents\"},"
    "\"resources\":["
    "{\"uri\":\"" DIR "SKILL.md\",\"size\":97,\"digest\":"
    "\"sha256:a6d5f1f48af94923633d597c756194482fe5d48f74e49eb54bc9ee7c4902d5ba\"},"
    "{\"uri\":\"" DIR "references/FORMS.md\",\"size\":20,\"digest\":"
    "\"sha256:8548b03927f40d7dc404fa49636c29e6b73df011d0764d69a6fc4f8ae06c6a12\"},"
    "{\"uri\":\"" DIR "assets/logo.bin\",\"size\":4,\"digest\":"
    "\"sha256:3d1f57c984978ef98a18378c8166c1cb8ede02c03eeb6aee7e2f121dfeee3e56\"}]}";

static const struct {
    const char *uri;
    const char *bytes; /* what its digest stands for */
    size_t len;
} files[] = {
    {DIR "SKILL.md", SKILL_MD, sizeof SKILL_MD - 1},
    {DIR "references/FORMS.md", FORMS, sizeof FORMS - 1},
    {DIR "assets/logo.bin", "\x00\x01\x02\xff", 4},
    {DIR "scripts/run.sh", NULL, 0},
};

/* Every entry of an accepted page is well formed, and every file its
 * manifest lists is found where verification will look for it. */
static void check_page(const json_t *page)
{
    size_t i;
    const json_t *entry;
    json_array_foreach(json_object_get(page, "skills"), i, entry) {
        client_skill_t skill;
        if (client_skill_read(entry, &skill, NULL) != MCP_OK)
            abort();
        client_skill_file_t file;
        if (!client_skill_file(&skill, skill.uri, &file) || strcmp(file.uri, skill.uri) != 0)
            abort();
        /* ".../<name>/SKILL.md" */
        size_t n = strlen(skill.name);
        if (strcmp(skill.uri + skill.dir_len, "/SKILL.md") != 0 || n >= skill.dir_len ||
            memcmp(skill.uri + skill.dir_len - n, skill.name, n) != 0 ||
            skill.uri[skill.dir_len - n - 1] != '/')
            abort();
        size_t j;
        const json_t *listed;
        json_array_foreach(skill.files, j, listed) {
            const char *uri = json_string_value(json_object_get(listed, "uri"));
            if (!client_skill_contains(&skill, uri) || !client_skill_file(&skill, uri, &file) ||
                strlen(file.digest) != 71 || file.size < 0)
                abort();
        }
    }
}

static void read_file(const json_t *result, bool dynamic, size_t which)
{
    json_t *entry = json_loads(manifest, 0, NULL);
    if (!entry)
        abort();
    if (dynamic)
        json_object_set_new(entry, "resources", json_string("dynamic"));
    client_skill_t skill;
    if (client_skill_read(entry, &skill, NULL) != MCP_OK)
        abort();
    client_skill_file_t file;
    bool known = client_skill_file(&skill, files[which].uri, &file);
    if (known != (dynamic || files[which].bytes != NULL))
        abort();
    if (known) {
        char *bytes = (char *)entry; /* must be reset */
        size_t len = 1;
        mcp_error_t err = {0};
        int rc = client_skill_file_verify(&skill, &file, result, &bytes, &len, &err);
        if (rc == MCP_OK) {
            if (bytes[len] != '\0')
                abort();
            /* A manifest admits the listed bytes and no others. */
            if (!dynamic &&
                (len != files[which].len || memcmp(bytes, files[which].bytes, len) != 0))
                abort();
        } else if (bytes || len || rc != MCP_EPROTO || err.message[0] == '\0') {
            abort();
        }
        free(bytes);
        mcp_error_clear(&err);
    }
    json_decref(entry);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    json_t *json = json_loadb((const char *)data + 1, size - 1,
                              JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
    if (data[0] & 1) {
        read_file(json, data[0] & 2, (data[0] >> 2) & 3);
    } else {
        mcp_error_t err = {0};
        int rc = client_skill_list_read(json, &err);
        if (rc == MCP_OK)
            check_page(json);
        else if (rc != MCP_EPROTO || err.message[0] == '\0')
            abort();
        mcp_error_clear(&err);
    }
    json_decref(json);
    return 0;
}
