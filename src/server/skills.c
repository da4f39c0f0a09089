/*
 * The Skills extension (io.modelcontextprotocol/skills, SEP-2640), server
 * side: the skills a server was given, their files as resources, and the
 * extension's methods skills/list, skills/get and resources/directory/read.
 *
 * The loaded skills are an array sorted by name, guarded by the server's
 * registry lock: adding or removing a skill changes that array and the
 * resource registry under one write lock, so no reader ever sees a skill
 * whose files are not readable, or files of a skill that is gone. A skill
 * itself is immutable (skill_load.c); the methods take a reference under
 * the read lock and build their answers from it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/server_internal.h"

/* Files larger than this are read on a worker, not on the receiving
 * thread: copying (and base64-encoding) megabytes is not quick. */
#define INLINE_READ_MAX (64 * 1024)

/* ------------------------------------------------------------------------
 * The list of skills (callers hold srv->lock)
 * ------------------------------------------------------------------------ */

/* Index of the first skill whose name is >= name (> when `after`). */
static size_t skill_bound(const skill_list_t *list, const char *name, bool after)
{
    size_t lo = 0, hi = list->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(list->items[mid]->name, name);
        if (c < 0 || (after && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static skill_t *skill_find_locked(const skill_list_t *list, const char *name)
{
    size_t at = skill_bound(list, name, false);
    return at < list->count && strcmp(list->items[at]->name, name) == 0 ? list->items[at] : NULL;
}

void skill_list_clear(skill_list_t *list)
{
    for (size_t i = 0; i < list->count; i++)
        skill_unref(list->items[i]);
    free(list->items);
    memset(list, 0, sizeof *list);
}

bool skills_offered(mcp_server_t *srv)
{
    pthread_rwlock_rdlock(&srv->lock);
    bool any = srv->skills.count > 0;
    pthread_rwlock_unlock(&srv->lock);
    return any;
}

/* ------------------------------------------------------------------------
 * Serving the files
 * ------------------------------------------------------------------------ */

static int read_skill_file(mcp_call_t *call, const char *uri, void *user)
{
    (void)uri; /* the entry's own uri: a static resource matches exactly */
    const skill_file_t *f = user;
    if (f->text)
        return mcp_call_add_resource_text(call, f->uri, f->mime, (const char *)f->bytes);
    return mcp_call_add_resource_blob(call, f->uri, f->mime, f->bytes, f->len);
}

static void release_skill_file(void *user)
{
    skill_unref(((skill_file_t *)user)->skill);
}

/* One resource entry per file; the SKILL.md is listed, the others are
 * found through the skill's manifest. */
static entry_t *file_entry(skill_file_t *f, bool listed)
{
    entry_t *e = entry_new(ENTRY_RESOURCE, f->uri, json_incref(f->def), f);
    if (!e)
        return NULL;
    skill_ref(f->skill);
    e->release = release_skill_file;
    e->fn.resource = read_skill_file;
    e->run_inline = f->len <= INLINE_READ_MAX;
    e->unlisted = !listed;
    return e;
}

/* Removes the resources of files[0..n) (srv->lock held for writing). */
static void unregister_files_locked(mcp_server_t *srv, const skill_t *skill, size_t n)
{
    for (size_t i = 0; i < n; i++)
        registry_delete_locked(srv, ENTRY_RESOURCE, skill->files[i].uri);
}

/* ------------------------------------------------------------------------
 * Public API
 * ------------------------------------------------------------------------ */

/* Serves a loaded skill: its files and its place in the list, all or
 * nothing, under one write lock. Takes the caller's reference on success. */
static int serve_skill(mcp_server_t *srv, skill_t *skill, mcp_error_t *err)
{
    int rc = MCP_OK;
    size_t registered = 0;
    const char *clash = NULL;
    pthread_rwlock_wrlock(&srv->lock);
    skill_list_t *list = &srv->skills;
    if (skill_find_locked(list, skill->name)) {
        rc = MCP_EEXIST;
    } else if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 8;
        skill_t **items = realloc(list->items, cap * sizeof *items);
        if (items) {
            list->items = items;
            list->cap = cap;
        } else {
            rc = MCP_ENOMEM;
        }
    }
    for (; rc == MCP_OK && registered < skill->n_files; registered++) {
        skill_file_t *f = &skill->files[registered];
        entry_t *e = file_entry(f, registered == 0);
        rc = e ? registry_insert_locked(srv, e) : MCP_ENOMEM;
        if (rc != MCP_OK) {
            clash = f->uri;
            entry_unref(e);
            break;
        }
    }
    if (rc == MCP_OK) {
        size_t at = skill_bound(list, skill->name, false);
        memmove(&list->items[at + 1], &list->items[at], (list->count - at) * sizeof *list->items);
        list->items[at] = skill;
        list->count++;
    } else {
        unregister_files_locked(srv, skill, registered);
    }
    pthread_rwlock_unlock(&srv->lock);

    if (rc == MCP_OK) {
        server_publish(srv, SERVER_EVENT_RESOURCES_CHANGED, NULL);
        return MCP_OK;
    }
    if (rc == MCP_EEXIST && !clash)
        return mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL, "a skill named %s is served",
                             skill->name);
    if (rc == MCP_EEXIST)
        return mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL,
                             "skill %s: a resource %s is registered already", skill->name, clash);
    return mcp_error_set(err, rc, MCP_INTERNAL_ERROR, NULL, "out of memory");
}

int mcp_server_add_skill(mcp_server_t *srv, const char *dir, mcp_error_t *err)
{
    if (!srv || !dir)
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                             "a skill needs a server and a directory");
    skill_t *skill = NULL;
    int rc = skill_load(dir, &skill, err);
    if (rc == MCP_OK && (rc = serve_skill(srv, skill, err)) != MCP_OK)
        skill_unref(skill);
    return rc;
}

int mcp_server_remove_skill(mcp_server_t *srv, const char *name)
{
    if (!srv || !name)
        return MCP_EINVAL;
    pthread_rwlock_wrlock(&srv->lock);
    skill_list_t *list = &srv->skills;
    skill_t *skill = skill_find_locked(list, name);
    if (skill) {
        size_t at = skill_bound(list, name, false);
        memmove(&list->items[at], &list->items[at + 1],
                (list->count - at - 1) * sizeof *list->items);
        list->count--;
        unregister_files_locked(srv, skill, skill->n_files);
    }
    pthread_rwlock_unlock(&srv->lock);
    if (!skill)
        return MCP_ENOTFOUND;
    skill_unref(skill);
    server_publish(srv, SERVER_EVENT_RESOURCES_CHANGED, NULL);
    return MCP_OK;
}

static int name_order(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of the subdirectories of `root` that hold a SKILL.md, sorted;
 * *names_out is a NULL-terminated array. */
static int skill_dirs(const char *root, char ***names_out, size_t *n_out, mcp_error_t *err)
{
    DIR *d = opendir(root);
    if (!d)
        return mcp_error_set(err, MCP_EIO, MCP_INVALID_PARAMS, NULL,
                             "cannot read directory %s: %s", root, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = MCP_OK;
    struct dirent *de;
    while (rc == MCP_OK && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s/SKILL.md", root, de->d_name) >= (int)sizeof path ||
            stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n + 1 >= cap) {
            cap = cap ? cap * 2 : 16;
            char **bigger = realloc(names, cap * sizeof *names);
            if (!bigger) {
                rc = MCP_ENOMEM;
                break;
            }
            names = bigger;
        }
        if (!(names[n] = strdup(de->d_name)))
            rc = MCP_ENOMEM;
        else
            n++;
    }
    closedir(d);
    if (rc != MCP_OK) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return mcp_error_set(err, rc, MCP_INTERNAL_ERROR, NULL, "out of memory");
    }
    if (n > 0)
        qsort(names, n, sizeof *names, name_order);
    *names_out = names;
    *n_out = n;
    return MCP_OK;
}

int mcp_server_add_skills(mcp_server_t *srv, const char *root, size_t *added_out,
                          mcp_error_t *err)
{
    if (added_out)
        *added_out = 0;
    if (!srv || !root)
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                             "skills need a server and a directory");
    char **names = NULL;
    size_t n = 0;
    int rc = skill_dirs(root, &names, &n, err);
    if (rc != MCP_OK)
        return rc;
    /* The skills added, by name, to take back if a later one fails. */
    char **added = calloc(n ? n : 1, sizeof *added);
    size_t n_added = 0;
    if (!added)
        rc = mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    for (size_t i = 0; rc == MCP_OK && i < n; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
        skill_t *skill = NULL;
        rc = skill_load(dir, &skill, err);
        if (rc == MCP_OK && !(added[n_added] = strdup(skill->name)))
            rc = mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
        if (rc == MCP_OK && (rc = serve_skill(srv, skill, err)) != MCP_OK)
            free(added[n_added]);
        if (rc == MCP_OK) {
            n_added++;
        } else {
            skill_unref(skill);
            if (err) {
                /* Name the directory the reason belongs to. */
                char why[sizeof err->message];
                snprintf(why, sizeof why, "%s", err->message);
                mcp_error_set(err, rc, err->code, NULL, "%s: %s", dir, why);
            }
        }
    }
    for (size_t i = 0; i < n_added; i++) {
        if (rc != MCP_OK)
            mcp_server_remove_skill(srv, added[i]);
        free(added[i]);
    }
    free(added);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc == MCP_OK && added_out)
        *added_out = n_added;
    return rc;
}

/* ------------------------------------------------------------------------
 * The methods
 * ------------------------------------------------------------------------ */

/* skills/list: a page of entries in name order; an entry is never split. */
static json_t *list_skills(mcp_server_t *srv, const json_t *params, mcp_error_t *err)
{
    char *after;
    if (!registry_cursor_param(params, &after, err))
        return NULL;
    json_t *skills = json_array();
    char *next = NULL;
    pthread_rwlock_rdlock(&srv->lock);
    const skill_list_t *list = &srv->skills;
    size_t i = after ? skill_bound(list, after, true) : 0;
    size_t end = list->count - i > srv->page_size ? i + srv->page_size : list->count;
    for (; i < end; i++)
        json_array_append(skills, list->items[i]->entry);
    if (end < list->count && end > 0)
        next = registry_cursor_encode(list->items[end - 1]->name);
    pthread_rwlock_unlock(&srv->lock);
    free(after);

    json_t *result = json_pack("{s:o}", "skills", skills);
    if (result && next)
        json_object_set_new(result, "nextCursor", json_string(next));
    free(next);
    return result;
}

/* The name of the skill a skill:// URI points into (its authority), copied
 * into `name`; false for any other URI. */
static bool skill_name_of(const char *uri, char *name, size_t size)
{
    static const char scheme[] = "skill://";
    if (strncmp(uri, scheme, sizeof scheme - 1) != 0)
        return false;
    const char *start = uri + sizeof scheme - 1;
    size_t n = strcspn(start, "/");
    if (n == 0 || n >= size)
        return false;
    memcpy(name, start, n);
    name[n] = '\0';
    return true;
}

/* The served skill `uri` points into, with a reference; NULL when none. */
static skill_t *skill_of_uri(mcp_server_t *srv, const char *uri)
{
    char name[128];
    if (!skill_name_of(uri, name, sizeof name))
        return NULL;
    pthread_rwlock_rdlock(&srv->lock);
    skill_t *skill = skill_find_locked(&srv->skills, name);
    if (skill)
        skill_ref(skill);
    pthread_rwlock_unlock(&srv->lock);
    return skill;
}

/* skills/get: the entry of the skill whose SKILL.md is `uri`. */
static json_t *get_skill(mcp_server_t *srv, const json_t *params, mcp_error_t *err)
{
    const char *uri = method_string_param(params, "uri", err);
    if (!uri)
        return NULL;
    skill_t *skill = skill_of_uri(srv, uri);
    json_t *result = NULL;
    if (skill && strcmp(skill->uri, uri) == 0)
        result = json_pack("{s:O}", "skill", skill->entry);
    else
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                      "Unknown skill: %s", uri);
    skill_unref(skill);
    return result;
}

/* resources/directory/read: the children of a directory of a skill. */
static json_t *read_directory(mcp_server_t *srv, const json_t *params, mcp_error_t *err)
{
    const char *uri = method_string_param(params, "uri", err);
    char *after = NULL;
    if (!uri || !registry_cursor_param(params, &after, err))
        return NULL;
    /* "skill://name/dir/" names the directory "skill://name/dir". */
    char *dir = strdup(uri);
    size_t n = dir ? strlen(dir) : 0;
    if (n > 0 && dir[n - 1] == '/')
        dir[n - 1] = '\0';
    skill_t *skill = dir ? skill_of_uri(srv, dir) : NULL;
    const json_t *children = skill ? json_object_get(skill->dirs, dir) : NULL;
    json_t *result = NULL;
    if (!children) {
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, json_pack("{s:s}", "uri", uri),
                      "Not a directory of a skill: %s", uri);
    } else {
        /* The children never change: a cursor names the last uri given. */
        json_t *page = json_array();
        size_t i = 0, count = json_array_size(children);
        if (after) {
            while (i < count && strcmp(json_string_value(json_object_get(
                                           json_array_get(children, i), "uri")),
                                       after) != 0)
                i++;
            i = i < count ? i + 1 : count;
        }
        size_t end = count - i > srv->page_size ? i + srv->page_size : count;
        for (; i < end; i++)
            json_array_append(page, json_array_get(children, i));
        result = json_pack("{s:o}", "resources", page);
        if (result && end < count && end > 0) {
            char *next = registry_cursor_encode(
                json_string_value(json_object_get(json_array_get(children, end - 1), "uri")));
            json_object_set_new(result, "nextCursor", json_string(next));
            free(next);
        }
    }
    skill_unref(skill);
    free(dir);
    free(after);
    return result;
}

json_t *skills_method(mcp_server_t *srv, method_id_t method, const json_t *params,
                      mcp_error_t *err)
{
    switch (method) {
    case METHOD_SKILLS_LIST:
        return list_skills(srv, params, err);
    case METHOD_SKILLS_GET:
        return get_skill(srv, params, err);
    case METHOD_RESOURCES_DIRECTORY_READ:
        return read_directory(srv, params, err);
    default:
        mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL, "not a skills method");
        return NULL;
    }
}

json_t *skills_extension_settings(void)
{
    return json_pack("{s:b}", "directoryRead", 1);
}
