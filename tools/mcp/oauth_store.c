/* mcp --oauth's store of signed-in state (oauth_store.h). */
#include "oauth_store.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "term.h"

char *oauth_store_path(void)
{
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char *path = NULL;
    if (state && state[0] == '/') {
        if (asprintf(&path, "%s/mcp/oauth.json", state) < 0)
            path = NULL;
        return path;
    }
    struct passwd pw, *found = NULL;
    char buf[4096];
    if ((!home || !home[0]) && getpwuid_r(getuid(), &pw, buf, sizeof buf, &found) == 0 && found)
        home = found->pw_dir;
    if (home && home[0] && asprintf(&path, "%s/.local/state/mcp/oauth.json", home) < 0)
        path = NULL;
    return path;
}

/* The whole store: an object, empty when there is no file yet; NULL when
 * the file is there but unusable. */
static json_t *read_store(const char *path)
{
    json_error_t error;
    json_t *store = json_load_file(path, JSON_REJECT_DUPLICATES, &error);
    if (!store && access(path, F_OK) != 0 && errno == ENOENT)
        return json_object();
    if (!json_is_object(store)) {
        term_notef("ignoring %s: %s", path, store ? "not a JSON object" : error.text);
        json_decref(store);
        return NULL;
    }
    return store;
}

void oauth_store_load(mcp_oauth_t *oauth, const char *url)
{
    char *path = oauth_store_path();
    json_t *store = path ? read_store(path) : NULL;
    const json_t *saved = json_object_get(store, url);
    mcp_error_t err = {0};
    if (saved && mcp_oauth_restore(oauth, saved, &err) != MCP_OK)
        term_notef("ignoring what %s keeps for %s: %s", path, url, err.message);
    mcp_error_clear(&err);
    json_decref(store);
    free(path);
}

/* mkdir -p of the directories above `path`, each 0700. */
static bool make_parents(const char *path)
{
    char *dir = strdup(path);
    bool ok = dir != NULL;
    for (char *slash = dir ? strchr(dir + 1, '/') : NULL; ok && slash;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        ok = mkdir(dir, 0700) == 0 || errno == EEXIST;
        *slash = '/';
    }
    free(dir);
    return ok;
}

/* Writes `store` to `path` whole: a private temporary file beside it,
 * renamed over it. */
static bool write_store(const char *path, const json_t *store)
{
    char *tmp = NULL;
    if (!make_parents(path) || asprintf(&tmp, "%s.XXXXXX", path) < 0)
        return false;
    int fd = mkstemp(tmp); /* 0600 */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f && json_dumpf(store, f, JSON_INDENT(2)) == 0 && fputc('\n', f) != EOF;
    if (f)
        ok = fclose(f) == 0 && ok;
    else if (fd >= 0)
        close(fd);
    if (ok)
        ok = rename(tmp, path) == 0;
    if (!ok && fd >= 0)
        unlink(tmp);
    free(tmp);
    return ok;
}

bool oauth_store_save(mcp_oauth_t *oauth, const char *url)
{
    char *path = oauth_store_path();
    json_t *store = path ? read_store(path) : NULL;
    json_t *saved = mcp_oauth_save(oauth);
    bool ok = store != NULL;
    if (ok && saved)
        ok = json_object_set(store, url, saved) == 0;
    else if (ok)
        json_object_del(store, url);
    ok = ok && write_store(path, store);
    if (!ok)
        term_notef("cannot keep the sign-in in %s: %s", path ? path : "(no home directory)",
                   strerror(errno));
    json_decref(saved);
    json_decref(store);
    free(path);
    return ok;
}
