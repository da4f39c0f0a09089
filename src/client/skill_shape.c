/*
 * Reading the skill entries a server sends (the Skills extension,
 * SEP-2640): the entries of skills/list and the one of skills/get.
 *
 * An entry is the host's promise of what a skill's files hold: the host
 * verifies every file it fetches against it (skills.c). So this is the one
 * place that decides whether an entry is well formed, and what it decides
 * is what verification relies on: a manifest that names each file once,
 * the SKILL.md among them, and nothing outside the skill's directory.
 * Pure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client/client_internal.h"
#include "skill_md.h"

#define SKILL_MD_SUFFIX "/SKILL.md"
#define DIGEST_PREFIX "sha256:"
#define DIGEST_HEX_LEN 64

/* URIs are cut to this many bytes in messages, which hold 256. */
#define URI_SHOWN 96

/* The value of a string without NUL bytes, or NULL. A peer's JSON may
 * carry "\u0000", and a uri or name cut short at one would be compared as
 * another. */
static const char *plain_string(const json_t *value)
{
    const char *s = json_string_value(value);
    return s && strlen(s) == json_string_length(value) ? s : NULL;
}

/* MCP_EPROTO: "invalid skill entry <uri>: <what>" (the uri when known). */
static int invalid(mcp_error_t *err, const char *uri, const char *fmt, ...) MCP_PRINTF(3, 4);

static int invalid(mcp_error_t *err, const char *uri, const char *fmt, ...)
{
    char what[MCP_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!uri)
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "invalid skill entry: %s", what);
    return mcp_error_set(err, MCP_EPROTO, 0, NULL, "invalid skill entry %.*s: %s", URI_SHOWN,
                         uri, what);
}

/* ------------------------------------------------------------------------
 * URIs
 * ------------------------------------------------------------------------ */

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* RFC 3986 section 3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ). */
static bool is_scheme(const char *s, size_t n)
{
    if (n == 0 || !is_alpha(s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_alpha(s[i]) && !(s[i] >= '0' && s[i] <= '9') && !strchr("+-.", s[i]))
            return false;
    return true;
}

/*
 * Splits the uri of a skill's SKILL.md, "<scheme>://<path>/<name>/SKILL.md":
 * *dir_len is the length of its directory (up to the "/" before SKILL.md),
 * *name_at where the directory's last segment, the skill name, starts.
 * False when the uri has not that form.
 */
static bool split_skill_uri(const char *uri, size_t *dir_len, size_t *name_at)
{
    size_t len = strlen(uri), suffix = strlen(SKILL_MD_SUFFIX);
    const char *authority = strstr(uri, "://");
    if (!authority || !is_scheme(uri, (size_t)(authority - uri)) || len < suffix ||
        strcmp(uri + len - suffix, SKILL_MD_SUFFIX) != 0)
        return false;
    size_t dir = len - suffix, start = dir;
    size_t path = (size_t)(authority - uri) + 3;
    if (dir < path)
        return false; /* "x://SKILL.md": the suffix overlaps the "://" */
    while (start > path && uri[start - 1] != '/')
        start--;
    *dir_len = dir;
    *name_at = start;
    return true;
}

/* Is s[0, n) a dot segment, "." or "..", each dot plain or as %2E? Once
 * resolved it names the directory itself or its parent. */
static bool is_dot_segment(const char *s, size_t n)
{
    size_t dots = 0, i = 0;
    while (i < n) {
        if (s[i] == '.')
            i++;
        else if (s[i] == '%' && n - i >= 3 && s[i + 1] == '2' &&
                 (s[i + 2] == 'e' || s[i + 2] == 'E'))
            i += 3;
        else
            return false;
        dots++;
    }
    return dots == 1 || dots == 2;
}

bool client_skill_contains(const client_skill_t *skill, const char *uri)
{
    if (strcmp(uri, skill->uri) == 0)
        return true;
    if (strncmp(uri, skill->uri, skill->dir_len) != 0 || uri[skill->dir_len] != '/')
        return false;
    /* A path below the directory whose every segment names something: an
     * empty or dot segment would resolve to another file, perhaps outside
     * the skill. The path ends where a query or fragment begins. */
    const char *path = uri + skill->dir_len + 1;
    size_t len = strcspn(path, "?#");
    for (size_t at = 0;; at++) {
        size_t n = strcspn(path + at, "/?#");
        if (n == 0 || is_dot_segment(path + at, n))
            return false;
        at += n;
        if (at == len)
            return true;
    }
}

/* ------------------------------------------------------------------------
 * The entry
 * ------------------------------------------------------------------------ */

/* "sha256:" and 64 lowercase hex digits: the one spelling of a digest, so
 * that verification compares strings. */
static bool is_digest(const char *digest)
{
    size_t prefix = strlen(DIGEST_PREFIX);
    if (strncmp(digest, DIGEST_PREFIX, prefix) != 0)
        return false;
    const char *hex = digest + prefix;
    for (size_t i = 0; i < DIGEST_HEX_LEN; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
            return false;
    return hex[DIGEST_HEX_LEN] == '\0';
}

/* One {uri, digest, size} of the manifest; `seen` holds the uris before it. */
static int read_file_entry(const client_skill_t *skill, size_t index, const json_t *file,
                           json_t *seen, bool *is_skill_md, mcp_error_t *err)
{
    if (!json_is_object(file))
        return invalid(err, skill->uri, "resources[%zu] is not an object", index);
    const char *uri = plain_string(json_object_get(file, "uri"));
    if (!uri)
        return invalid(err, skill->uri, "resources[%zu] has no uri string", index);
    if (!client_skill_contains(skill, uri))
        return invalid(err, skill->uri, "resources lists %.*s, outside the skill's directory",
                       URI_SHOWN, uri);
    const char *digest = plain_string(json_object_get(file, "digest"));
    if (!digest || !is_digest(digest))
        return invalid(err, skill->uri, "the digest of %.*s is not \"sha256:<64 lowercase hex>\"",
                       URI_SHOWN, uri);
    const json_t *size = json_object_get(file, "size");
    if (!json_is_integer(size) || json_integer_value(size) < 0)
        return invalid(err, skill->uri, "the size of %.*s is not an integer >= 0", URI_SHOWN,
                       uri);
    if (json_object_get(seen, uri))
        return invalid(err, skill->uri, "resources lists %.*s twice", URI_SHOWN, uri);
    if (json_object_set_new(seen, uri, json_true()) != 0)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    *is_skill_md = *is_skill_md || strcmp(uri, skill->uri) == 0;
    return MCP_OK;
}

/* The manifest must list every file once, the SKILL.md included. */
static int read_manifest(const client_skill_t *skill, mcp_error_t *err)
{
    json_t *seen = json_object();
    if (!seen)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    bool has_skill_md = false;
    int rc = MCP_OK;
    size_t i;
    const json_t *file;
    json_array_foreach(skill->files, i, file) {
        if ((rc = read_file_entry(skill, i, file, seen, &has_skill_md, err)) != MCP_OK)
            break;
    }
    json_decref(seen);
    if (rc == MCP_OK && !has_skill_md)
        rc = invalid(err, skill->uri, "resources does not list the SKILL.md itself");
    return rc;
}

static int read_frontmatter(const json_t *entry, client_skill_t *out, size_t name_at,
                            mcp_error_t *err)
{
    out->frontmatter = json_object_get(entry, "frontmatter");
    if (!json_is_object(out->frontmatter))
        return invalid(err, out->uri, "frontmatter is missing or not an object");
    out->name = plain_string(json_object_get(out->frontmatter, "name"));
    if (!out->name)
        return invalid(err, out->uri, "frontmatter.name is missing or not a string");
    if (!mcp_skill_name_valid(out->name))
        return invalid(err, out->uri, "frontmatter.name \"%.64s\" is not a valid skill name",
                       out->name);
    size_t segment = out->dir_len - name_at;
    if (strlen(out->name) != segment || memcmp(out->name, out->uri + name_at, segment) != 0)
        return invalid(err, out->uri, "the uri does not end in the skill's name \"%s\"",
                       out->name);
    const json_t *description = json_object_get(out->frontmatter, "description");
    if (!json_is_string(description) || json_string_length(description) == 0)
        return invalid(err, out->uri, "frontmatter.description is missing or empty");
    return MCP_OK;
}

int client_skill_read(const json_t *entry, client_skill_t *out, mcp_error_t *err)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(entry))
        return invalid(err, NULL, "not an object");
    out->uri = plain_string(json_object_get(entry, "uri"));
    if (!out->uri)
        return invalid(err, NULL, "uri is missing or not a string");
    size_t name_at;
    if (!split_skill_uri(out->uri, &out->dir_len, &name_at))
        return invalid(err, out->uri, "the uri is not <scheme>://.../<name>/SKILL.md");

    int rc = read_frontmatter(entry, out, name_at, err);
    if (rc != MCP_OK)
        return rc;

    const json_t *resources = json_object_get(entry, "resources");
    if (json_is_array(resources)) {
        out->files = resources;
        return read_manifest(out, err);
    }
    const char *form = json_string_value(resources);
    if (!form || strcmp(form, "dynamic") != 0)
        return invalid(err, out->uri, "resources is neither an array nor \"dynamic\"");
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Results and files
 * ------------------------------------------------------------------------ */

int client_skill_list_read(const json_t *result, mcp_error_t *err)
{
    const json_t *skills = json_object_get(result, "skills");
    if (!json_is_array(skills))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "skills/list result has no skills array");
    const json_t *cursor = json_object_get(result, "nextCursor");
    if (cursor && !json_is_string(cursor))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL,
                             "skills/list result: nextCursor is not a string");
    size_t i;
    const json_t *entry;
    json_array_foreach(skills, i, entry) {
        client_skill_t skill;
        int rc = client_skill_read(entry, &skill, err);
        if (rc != MCP_OK)
            return rc;
    }
    return MCP_OK;
}

int client_skill_get_read(const json_t *result, const char *uri, const json_t **entry_out,
                          mcp_error_t *err)
{
    *entry_out = NULL;
    const json_t *entry = json_object_get(result, "skill");
    if (!json_is_object(entry))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "skills/get result has no skill object");
    client_skill_t skill;
    int rc = client_skill_read(entry, &skill, err);
    if (rc != MCP_OK)
        return rc;
    if (strcmp(skill.uri, uri) != 0)
        return mcp_error_set(err, MCP_EPROTO, 0, NULL,
                             "skills/get of %.*s answered with the skill %.*s", URI_SHOWN, uri,
                             URI_SHOWN, skill.uri);
    *entry_out = entry;
    return MCP_OK;
}

bool client_skill_file(const client_skill_t *skill, const char *uri, client_skill_file_t *out)
{
    memset(out, 0, sizeof *out);
    if (!skill->files) {
        out->uri = uri;
        return client_skill_contains(skill, uri);
    }
    size_t i;
    const json_t *file;
    json_array_foreach(skill->files, i, file) {
        const char *listed = json_string_value(json_object_get(file, "uri"));
        if (strcmp(listed, uri) == 0) {
            out->uri = listed;
            out->digest = json_string_value(json_object_get(file, "digest"));
            out->size = json_integer_value(json_object_get(file, "size"));
            return true;
        }
    }
    return false;
}
