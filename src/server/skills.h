/*
 * skills.h - the skills a server serves (the extension
 * io.modelcontextprotocol/skills, SEP-2640), inside the server.
 *
 * skill_load.c reads a skill directory into a skill_t: every file's bytes,
 * digest and MIME type, the SKILL.md frontmatter, the skill entry that
 * skills/list and skills/get send, and the listing of each directory that
 * resources/directory/read sends. A skill_t never changes after it is
 * loaded, so any thread may read it without a lock while it holds a
 * reference. skills.c keeps the loaded skills (sorted by name, under the
 * server's registry lock), registers their files as resources and answers
 * the extension's methods.
 */
#ifndef MCP_SERVER_SKILLS_H
#define MCP_SERVER_SKILLS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "mcp/common.h"
#include "mcp/request.h" /* MCP_EXTENSION_SKILLS */

#define SKILL_DIRECTORY_MIME "inode/directory"

typedef struct skill skill_t;

typedef struct skill_file {
    skill_t *skill;       /* the skill that owns this file */
    char *uri;            /* skill://<name>/<path, percent-encoded> */
    const char *mime;     /* static string */
    unsigned char *bytes; /* NUL-terminated, `len` bytes before the NUL */
    size_t len;
    bool text;            /* UTF-8 without NUL bytes: sent as text, else as a blob */
    json_t *def;          /* its Resource object (uri, name, mimeType, size, ...) */
} skill_file_t;

struct skill {
    atomic_int refs;
    char *name;         /* frontmatter name */
    char *uri;          /* skill://<name>/SKILL.md */
    char *dir_uri;      /* skill://<name> */
    json_t *entry;      /* {"uri", "frontmatter", "resources"} */
    json_t *dirs;       /* directory uri -> array of its children's Resource objects */
    skill_file_t *files;
    size_t n_files;     /* files[0] is the SKILL.md */
};

/*
 * Reads the skill in directory `dir` (see mcp_server_add_skill for what
 * a skill holds and the errors). On success *skill_out holds one
 * reference.
 */
int skill_load(const char *dir, skill_t **skill_out, mcp_error_t *err);

/* The skills a server serves, sorted by name (each holding a reference). */
typedef struct skill_list {
    skill_t **items;
    size_t count, cap;
} skill_list_t;

void skill_list_clear(skill_list_t *list);

void skill_ref(skill_t *skill);
void skill_unref(skill_t *skill);

#endif /* MCP_SERVER_SKILLS_H */
