/*
 * mcp TARGET skills | skill NAME [FILE]: the server's skills (the Skills
 * extension), and one skill's files, each verified against the skill's
 * manifest before a byte of it is shown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "failure.h"
#include "json_out.h"
#include "output.h"
#include "term.h"

static const char *str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

static json_t *all_skills(cli_session_t *s, int *status)
{
    json_t *skills = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_list_skills_all(s->client, &s->request, &skills, &err);
    *status = rc == MCP_OK ? CLI_EXIT_OK : cli_fail_call(s->opt, "skills/list", rc, &err);
    mcp_error_clear(&err);
    return skills;
}

/* "3 files, 12.5 KiB", or "files listed on request" for a dynamic skill. */
static void describe_files(const json_t *skill, char *buf, size_t cap)
{
    const json_t *files = json_object_get(skill, "resources");
    if (!json_is_array(files)) {
        snprintf(buf, cap, "dynamic");
        return;
    }
    size_t total = 0;
    size_t i;
    const json_t *f;
    json_array_foreach(files, i, f)
        total += (size_t)json_integer_value(json_object_get(f, "size"));
    char size[32];
    snprintf(buf, cap, "%zu file%s, %s", json_array_size(files),
             json_array_size(files) == 1 ? "" : "s", out_size(total, size, sizeof size));
}

int cmd_skills(cli_session_t *s)
{
    int status;
    json_t *skills = all_skills(s, &status);
    if (!skills)
        return status;
    if (s->opt->json) {
        json_t *doc = json_pack("{s:o}", "skills", skills);
        json_out_print(doc);
        json_decref(doc);
        return CLI_EXIT_OK;
    }
    out_table_t *t = out_table_new(3, (const char *[]){"NAME", "FILES", "DESCRIPTION"});
    size_t i;
    const json_t *skill;
    json_array_foreach(skills, i, skill) {
        const json_t *fm = json_object_get(skill, "frontmatter");
        char files[64];
        describe_files(skill, files, sizeof files);
        out_table_add(t, (const char *[]){str(fm, "name"), files, str(fm, "description")});
    }
    out_table_print(t, "(no skills)");
    out_table_free(t);
    json_decref(skills);
    return CLI_EXIT_OK;
}

/* The entry of the skill called `name` (or whose SKILL.md is `name`), a
 * new reference; NULL with *status set when there is none. */
static json_t *find_skill(cli_session_t *s, const char *name, int *status)
{
    json_t *skills = all_skills(s, status);
    if (!skills)
        return NULL;
    json_t *found = NULL;
    size_t i;
    json_t *skill;
    json_array_foreach(skills, i, skill) {
        if (strcmp(str(skill, "uri"), name) == 0 ||
            strcmp(str(json_object_get(skill, "frontmatter"), "name"), name) == 0) {
            found = json_incref(skill);
            break;
        }
    }
    json_decref(skills);
    if (!found)
        *status = cli_fail(s->opt, CLI_EXIT_USAGE, NULL,
                           "the server has no skill %s (mcp TARGET skills lists them)", name);
    return found;
}

/* FILE as the skill names it: a full URI, or a path inside the skill
 * ("references/FORMS.md"). Returns a malloc'd URI. */
static char *file_uri(const json_t *skill, const char *file)
{
    if (strstr(file, "://"))
        return strdup(file);
    const char *md = str(skill, "uri");
    size_t dir = strlen(md) - strlen("SKILL.md"); /* keeps the '/' */
    char *uri = malloc(dir + strlen(file) + 1);
    if (uri) {
        memcpy(uri, md, dir);
        strcpy(uri + dir, file);
    }
    return uri;
}

int cmd_skill(cli_session_t *s)
{
    int status;
    json_t *skill = find_skill(s, s->opt->words.v[0], &status);
    if (!skill)
        return status;
    char *uri = s->opt->words.n > 1 ? file_uri(skill, s->opt->words.v[1])
                                     : strdup(str(skill, "uri"));
    char *content = NULL;
    size_t len = 0;
    bool verified = false;
    mcp_error_t err = {0};
    int rc = uri ? mcp_client_read_skill_file(s->client, skill, uri, &s->request, &content,
                                              &len, &verified, &err)
                 : MCP_ENOMEM;
    if (rc == MCP_ENOTFOUND) {
        status = cli_fail(s->opt, CLI_EXIT_USAGE, NULL, "%s is not a file of skill %s", uri,
                          s->opt->words.v[0]);
    } else if (rc != MCP_OK) {
        char what[1100];
        snprintf(what, sizeof what, "reading %s", uri ? uri : s->opt->words.v[0]);
        status = cli_fail_call(s->opt, what, rc, &err);
    } else if (s->opt->json) {
        json_t *text = json_stringn(content, len);
        json_t *doc = json_pack("{s:s, s:b, s:o?}", "uri", uri, "verified", verified,
                                "text", text);
        json_out_print(doc);
        json_decref(doc);
        status = CLI_EXIT_OK;
    } else {
        if (!verified)
            term_notef("%s publishes no manifest: %s is not verified",
                        s->opt->words.v[0], uri);
        fwrite(content, 1, len, stdout);
        status = CLI_EXIT_OK;
    }
    mcp_error_clear(&err);
    free(content);
    free(uri);
    json_decref(skill);
    return status;
}
