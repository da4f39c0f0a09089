/*
 * Reading a skill directory into memory (skills.h).
 *
 * Everything a server will ever say about a skill is settled here, once:
 * the bytes of each file, their SHA-256 digests and sizes, the frontmatter,
 * the entry, the directory listings. Serving then only copies what was
 * read, so a file that changes on disk afterwards cannot make the server
 * send bytes that differ from the digest it published.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "mcp/server.h"
#include "protocol/hex.h"
#include "server/skills.h"
#include "skill_md.h"

#define SKILL_MD "SKILL.md"
#define MAX_DEPTH 32 /* directories below the skill's own */

/* ------------------------------------------------------------------------
 * Finding the files
 * ------------------------------------------------------------------------ */

typedef struct file_list {
    char **paths; /* relative to the skill directory, '/'-separated */
    size_t count, cap;
    size_t bytes; /* sum of their sizes, as stat(2) saw them */
} file_list_t;

static void file_list_clear(file_list_t *list)
{
    for (size_t i = 0; i < list->count; i++)
        free(list->paths[i]);
    free(list->paths);
    memset(list, 0, sizeof *list);
}

static int file_list_add(file_list_t *list, const char *path, off_t size, mcp_error_t *err)
{
    if (list->count == MCP_SKILL_MAX_FILES)
        return mcp_error_set(err, MCP_ELIMIT, MCP_INVALID_PARAMS, NULL,
                             "more than %d files", MCP_SKILL_MAX_FILES);
    if ((size_t)size > MCP_SKILL_MAX_BYTES - list->bytes)
        return mcp_error_set(err, MCP_ELIMIT, MCP_INVALID_PARAMS, NULL,
                             "more than %d bytes of files", MCP_SKILL_MAX_BYTES);
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        char **paths = realloc(list->paths, cap * sizeof *paths);
        if (!paths)
            return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
        list->paths = paths;
        list->cap = cap;
    }
    if (!(list->paths[list->count] = strdup(path)))
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    list->count++;
    list->bytes += (size_t)size;
    return MCP_OK;
}

/* Joins a directory and a name ("" + name is the name). */
static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    size_t at = a;
    if (a > 0)
        p[at++] = '/';
    memcpy(p + at, name, b + 1);
    return p;
}

/* Collects the regular files under `root`/`rel`: dot-names are passed
 * over, symbolic links are not followed (lstat). */
static int collect(const char *root, const char *rel, int depth, file_list_t *list,
                   mcp_error_t *err)
{
    if (depth > MAX_DEPTH)
        return mcp_error_set(err, MCP_ELIMIT, MCP_INVALID_PARAMS, NULL,
                             "directories nested deeper than %d levels", MAX_DEPTH);
    char *abs = rel[0] ? path_join(root, rel) : strdup(root);
    if (!abs)
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    DIR *d = opendir(abs);
    if (!d) {
        int e = errno;
        int rc = mcp_error_set(err, e == ENOENT || e == ENOTDIR ? MCP_EINVAL : MCP_EIO,
                               MCP_INVALID_PARAMS, NULL, "cannot read directory %s: %s", abs,
                               strerror(e));
        free(abs);
        return rc;
    }
    int rc = MCP_OK;
    struct dirent *de;
    while (rc == MCP_OK && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char *child_abs = path_join(abs, de->d_name);
        char *child_rel = path_join(rel, de->d_name);
        struct stat st;
        if (!child_abs || !child_rel) {
            rc = mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
        } else if (lstat(child_abs, &st) != 0) {
            rc = mcp_error_set(err, MCP_EIO, MCP_INVALID_PARAMS, NULL, "cannot stat %s: %s",
                               child_abs, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = collect(root, child_rel, depth + 1, list, err);
        } else if (S_ISREG(st.st_mode)) {
            rc = file_list_add(list, child_rel, st.st_size, err);
        }
        free(child_abs);
        free(child_rel);
    }
    closedir(d);
    free(abs);
    return rc;
}

/* SKILL.md first, then by path: the manifest's order. */
static int path_order(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    bool xs = strcmp(x, SKILL_MD) == 0, ys = strcmp(y, SKILL_MD) == 0;
    if (xs != ys)
        return xs ? -1 : 1;
    return strcmp(x, y);
}

/* ------------------------------------------------------------------------
 * One file
 * ------------------------------------------------------------------------ */

static int read_file(const char *path, size_t limit, unsigned char **bytes_out, size_t *len_out,
                     mcp_error_t *err)
{
    /* It was a regular file when listed; if it was swapped for a FIFO or
     * a device since, O_NONBLOCK keeps open() from waiting on it and the
     * fstat() below refuses it. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return mcp_error_set(err, MCP_EIO, MCP_INVALID_PARAMS, NULL, "cannot open %s: %s",
                             path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return mcp_error_set(err, MCP_EIO, MCP_INVALID_PARAMS, NULL,
                             "%s is no longer a regular file", path);
    }
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap + 1);
    int rc = buf ? MCP_OK : mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                                          "out of memory");
    while (rc == MCP_OK) {
        if (len == cap) {
            unsigned char *bigger = realloc(buf, cap * 2 + 1);
            if (!bigger) {
                rc = mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = mcp_error_set(err, MCP_EIO, MCP_INVALID_PARAMS, NULL, "cannot read %s: %s",
                               path, strerror(errno));
        } else if (n == 0) {
            break;
        } else if ((size_t)n > limit - len) {
            /* It grew since it was counted. */
            rc = mcp_error_set(err, MCP_ELIMIT, MCP_INVALID_PARAMS, NULL,
                               "more than %d bytes of files", MCP_SKILL_MAX_BYTES);
        } else {
            len += (size_t)n;
        }
    }
    close(fd);
    if (rc != MCP_OK) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *bytes_out = buf;
    *len_out = len;
    return MCP_OK;
}

/* A MIME type from the file name's extension; unknown extensions are
 * text/plain when the bytes are text, else application/octet-stream. */
static const char *mime_of(const char *path, bool text)
{
    static const struct {
        const char *ext;
        const char *mime;
    } types[] = {
        {".md", "text/markdown"},   {".markdown", "text/markdown"},
        {".txt", "text/plain"},     {".py", "text/x-python"},
        {".sh", "text/x-shellscript"}, {".js", "text/javascript"},
        {".mjs", "text/javascript"}, {".ts", "text/x-typescript"},
        {".html", "text/html"},     {".htm", "text/html"},
        {".css", "text/css"},       {".csv", "text/csv"},
        {".json", "application/json"}, {".yaml", "application/yaml"},
        {".yml", "application/yaml"}, {".xml", "application/xml"},
        {".toml", "application/toml"}, {".svg", "image/svg+xml"},
        {".png", "image/png"},      {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},    {".gif", "image/gif"},
        {".webp", "image/webp"},    {".pdf", "application/pdf"},
        {".zip", "application/zip"},
    };
    const char *base = strrchr(path, '/');
    const char *dot = strrchr(base ? base + 1 : path, '.');
    if (dot) {
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcasecmp(dot, types[i].ext) == 0)
                return types[i].mime;
    }
    return text ? "text/plain" : "application/octet-stream";
}

/* Is it text a resources/read may carry as "text": UTF-8, no NUL? */
static bool is_text(const unsigned char *bytes, size_t len)
{
    if (memchr(bytes, '\0', len))
        return false;
    json_t *s = json_stringn((const char *)bytes, len); /* NULL unless valid UTF-8 */
    bool ok = s != NULL;
    json_decref(s);
    return ok;
}

/* A path as a URI path: each segment percent-encoded, except the
 * characters RFC 3986 allows in a segment as they are. */
static char *uri_of(const char *name, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(path);
    char *uri = malloc(strlen("skill://") + strlen(name) + 1 + 3 * n + 1);
    if (!uri)
        return NULL;
    char *o = uri + sprintf(uri, "skill://%s/", name);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~!$&'()*+,;=:@/", c)) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
    return uri;
}

static void digest_text(const unsigned char *bytes, size_t len, char out[7 + 64 + 1])
{
    struct sha256_ctx ctx;
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_init(&ctx);
    sha256_update(&ctx, len, bytes);
    sha256_digest(&ctx, sizeof d, d);
    memcpy(out, "sha256:", 7);
    mcp_hex_encode(d, sizeof d, out + 7);
    out[7 + 64] = '\0';
}

/* ------------------------------------------------------------------------
 * The skill
 * ------------------------------------------------------------------------ */

void skill_ref(skill_t *skill)
{
    atomic_fetch_add(&skill->refs, 1);
}

void skill_unref(skill_t *skill)
{
    if (!skill || atomic_fetch_sub(&skill->refs, 1) != 1)
        return;
    for (size_t i = 0; i < skill->n_files; i++) {
        free(skill->files[i].uri);
        free(skill->files[i].bytes);
        json_decref(skill->files[i].def);
    }
    free(skill->files);
    free(skill->name);
    free(skill->uri);
    free(skill->dir_uri);
    json_decref(skill->entry);
    json_decref(skill->dirs);
    free(skill);
}

/* The frontmatter of files[0], checked for what a skill must say. */
static int read_frontmatter(skill_t *skill, json_t **frontmatter_out, mcp_error_t *err)
{
    const skill_file_t *md = &skill->files[0];
    json_t *fm = NULL;
    int rc = mcp_skill_md_frontmatter((const char *)md->bytes, md->len, &fm, NULL, err);
    if (rc != MCP_OK)
        return rc;
    const char *name = json_string_value(json_object_get(fm, "name"));
    if (!name || !mcp_skill_name_valid(name)) {
        rc = mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                           "SKILL.md: name must be 1-64 lowercase letters, digits and single "
                           "hyphens, not at either end (got %s%s%s)",
                           name ? "\"" : "", name ? name : "none", name ? "\"" : "");
    } else if (json_string_length(json_object_get(fm, "description")) == 0) {
        /* A string, and not empty: hosts refuse an entry without one. */
        rc = mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                           "SKILL.md: the frontmatter needs a description (a non-empty string)");
    } else if (!(skill->name = strdup(name))) {
        rc = mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    }
    if (rc != MCP_OK)
        json_decref(fm);
    else
        *frontmatter_out = fm;
    return rc;
}

/* The Resource object of a file, as resources/list and directory listings
 * show it. */
static json_t *file_def(const skill_file_t *file, const char *path, const json_t *frontmatter)
{
    const char *base = strrchr(path, '/');
    json_t *def = json_pack("{s:s, s:s, s:s, s:I}", "uri", file->uri, "name",
                            base ? base + 1 : path, "mimeType", file->mime, "size",
                            (json_int_t)file->len);
    if (def && frontmatter) {
        /* The SKILL.md is named and described by its frontmatter. */
        json_object_set(def, "name", json_object_get(frontmatter, "name"));
        json_object_set(def, "description", json_object_get(frontmatter, "description"));
    }
    return def;
}

/* Appends `child` (borrowed) to the listing of the directory `dir_uri`. */
static int list_child(json_t *dirs, const char *dir_uri, json_t *child)
{
    json_t *children = json_object_get(dirs, dir_uri);
    if (!children) {
        children = json_array();
        if (!children || json_object_set_new(dirs, dir_uri, children) != 0)
            return MCP_ENOMEM;
    }
    return json_array_append(children, child) == 0 ? MCP_OK : MCP_ENOMEM;
}

/*
 * Lists the file at `path` in its directory, and each directory on the way
 * in its parent (once: a directory is listed when its first file is).
 */
static int list_in_dirs(skill_t *skill, const char *path, const json_t *def)
{
    char *uri = uri_of(skill->name, path);
    if (!uri)
        return MCP_ENOMEM;
    int rc = MCP_OK;
    json_t *child = json_incref((json_t *)def);
    /* Walk up: "a/b/c.md" is a child of skill://n/a/b, which is a child
     * of skill://n/a, which is a child of skill://n. */
    for (;;) {
        char *slash = strrchr(uri + strlen("skill://"), '/');
        *slash = '\0';
        bool dir_known = json_object_get(skill->dirs, uri) != NULL;
        if ((rc = list_child(skill->dirs, uri, child)) != MCP_OK || dir_known ||
            strcmp(uri, skill->dir_uri) == 0)
            break;
        /* `uri` is a new directory: it becomes a child of its parent. */
        const char *base = strrchr(uri, '/') + 1;
        json_decref(child);
        child = json_pack("{s:s, s:s, s:s}", "uri", uri, "name", base, "mimeType",
                          SKILL_DIRECTORY_MIME);
        if (!child) {
            rc = MCP_ENOMEM;
            break;
        }
    }
    json_decref(child);
    free(uri);
    return rc;
}

static int build(skill_t *skill, const char *dir, file_list_t *list, mcp_error_t *err)
{
    skill->files = calloc(list->count, sizeof *skill->files);
    if (!skill->files)
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    size_t budget = MCP_SKILL_MAX_BYTES;
    for (size_t i = 0; i < list->count; i++) {
        skill_file_t *f = &skill->files[i];
        char *abs = path_join(dir, list->paths[i]);
        int rc = abs ? read_file(abs, budget, &f->bytes, &f->len, err)
                     : mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                                     "out of memory");
        free(abs);
        if (rc != MCP_OK)
            return rc;
        skill->n_files++;
        budget -= f->len;
        f->skill = skill;
        f->text = is_text(f->bytes, f->len);
        f->mime = mime_of(list->paths[i], f->text);
    }

    json_t *frontmatter = NULL;
    int rc = read_frontmatter(skill, &frontmatter, err);
    if (rc != MCP_OK)
        return rc;
    json_t *manifest = json_array();
    skill->dirs = json_object();
    skill->dir_uri = malloc(strlen("skill://") + strlen(skill->name) + 1);
    if (skill->dir_uri)
        sprintf(skill->dir_uri, "skill://%s", skill->name);
    rc = manifest && skill->dirs && skill->dir_uri ? MCP_OK : MCP_ENOMEM;
    for (size_t i = 0; rc == MCP_OK && i < skill->n_files; i++) {
        skill_file_t *f = &skill->files[i];
        char digest[7 + 64 + 1];
        digest_text(f->bytes, f->len, digest);
        if (!(f->uri = uri_of(skill->name, list->paths[i])) ||
            !(f->def = file_def(f, list->paths[i], i == 0 ? frontmatter : NULL)) ||
            json_array_append_new(manifest, json_pack("{s:s, s:s, s:I}", "uri", f->uri,
                                                      "digest", digest, "size",
                                                      (json_int_t)f->len)) != 0)
            rc = MCP_ENOMEM;
        else
            rc = list_in_dirs(skill, list->paths[i], f->def);
    }
    if (rc == MCP_OK && (skill->uri = strdup(skill->files[0].uri)) != NULL)
        skill->entry = json_pack("{s:s, s:O, s:O}", "uri", skill->uri, "frontmatter",
                                 frontmatter, "resources", manifest);
    json_decref(frontmatter);
    json_decref(manifest);
    if (rc == MCP_OK && !skill->entry)
        rc = MCP_ENOMEM;
    if (rc != MCP_OK)
        return mcp_error_set(err, rc, MCP_INTERNAL_ERROR, NULL, "out of memory");
    return MCP_OK;
}

int skill_load(const char *dir, skill_t **skill_out, mcp_error_t *err)
{
    file_list_t list = {0};
    int rc = collect(dir, "", 0, &list, err);
    if (rc == MCP_OK) {
        qsort(list.paths, list.count, sizeof *list.paths, path_order);
        if (list.count == 0 || strcmp(list.paths[0], SKILL_MD) != 0)
            rc = mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                               "%s has no " SKILL_MD, dir);
    }
    skill_t *skill = NULL;
    if (rc == MCP_OK && !(skill = calloc(1, sizeof *skill)))
        rc = mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    if (skill) {
        atomic_init(&skill->refs, 1);
        rc = build(skill, dir, &list, err);
    }
    file_list_clear(&list);
    if (rc != MCP_OK) {
        skill_unref(skill);
        return rc;
    }
    *skill_out = skill;
    return MCP_OK;
}
