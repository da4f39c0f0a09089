/*
 * Registries of tools, resources, resource templates and prompts.
 *
 * Each registry is an array of entries sorted by key, so listing order is
 * deterministic and stable, lookups are binary searches, and a page cursor
 * can simply name the last key returned: a cursor stays valid however the
 * registry changes between pages. Entries are immutable and
 * reference-counted; removing one while a request uses it is safe.
 */
#include <stdlib.h>
#include <string.h>

#include "server/server_internal.h"
#include "protocol/hex.h"
#include "protocol/uri_template.h"

/* ------------------------------------------------------------------------
 * Entries
 * ------------------------------------------------------------------------ */

void entry_ref(entry_t *e)
{
    atomic_fetch_add(&e->refs, 1);
}

void entry_unref(entry_t *e)
{
    if (!e || atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    free(e->key);
    free(atomic_load_explicit(&e->def_text, memory_order_relaxed));
    json_decref(e->def);
    json_decref(e->required_caps);
    mcp_param_headers_clear(&e->param_headers);
    json_decref(e->required_args);
    mcp_uri_template_free(e->tpl);
    if (e->release)
        e->release(e->user);
    free(e);
}

entry_t *entry_new(entry_kind_t kind, const char *key, json_t *def_new, void *user)
{
    entry_t *e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key))) {
        free(e);
        json_decref(def_new);
        return NULL;
    }
    atomic_init(&e->refs, 1);
    atomic_init(&e->lend_again_ms, 0);
    atomic_init(&e->long_runs, 0);
    atomic_init(&e->def_text, NULL);
    e->kind = kind;
    e->def = def_new;
    e->user = user;
    return e;
}

/* ------------------------------------------------------------------------
 * Sorted arrays
 * ------------------------------------------------------------------------ */

void registry_init(registry_t *r)
{
    memset(r, 0, sizeof *r);
}

void registry_clear(registry_t *r)
{
    for (size_t i = 0; i < r->count; i++)
        entry_unref(r->items[i]);
    free(r->items);
    memset(r, 0, sizeof *r);
}

/* Index of the first entry whose key is >= key (or > key when `after`). */
static size_t lower_bound(const registry_t *r, const char *key, bool after)
{
    size_t lo = 0, hi = r->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->items[mid]->key, key);
        if (c < 0 || (after && c == 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const server_event_kind_t change_event[ENTRY_KIND_COUNT] = {
    [ENTRY_TOOL] = SERVER_EVENT_TOOLS_CHANGED,
    [ENTRY_RESOURCE] = SERVER_EVENT_RESOURCES_CHANGED,
    [ENTRY_TEMPLATE] = SERVER_EVENT_RESOURCES_CHANGED,
    [ENTRY_PROMPT] = SERVER_EVENT_PROMPTS_CHANGED,
};

int registry_insert_locked(mcp_server_t *srv, entry_t *e)
{
    registry_t *r = &srv->reg[e->kind];
    size_t at = lower_bound(r, e->key, false);
    if (at < r->count && strcmp(r->items[at]->key, e->key) == 0)
        return MCP_EEXIST;
    if (r->count == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        entry_t **items = realloc(r->items, cap * sizeof *items);
        if (!items)
            return MCP_ENOMEM;
        r->items = items;
        r->cap = cap;
    }
    memmove(&r->items[at + 1], &r->items[at], (r->count - at) * sizeof *r->items);
    r->items[at] = e;
    r->count++;
    e->seq = srv->next_seq++;
    return MCP_OK;
}

int registry_add(mcp_server_t *srv, entry_t *e)
{
    /* Once unlocked, `e` belongs to the registry: another thread may remove
     * and free it before we publish, so keep what we need. */
    entry_kind_t kind = e->kind;
    pthread_rwlock_wrlock(&srv->lock);
    int rc = registry_insert_locked(srv, e);
    pthread_rwlock_unlock(&srv->lock);
    if (rc == MCP_OK)
        server_publish(srv, change_event[kind], NULL);
    return rc;
}

int registry_delete_locked(mcp_server_t *srv, entry_kind_t kind, const char *key)
{
    registry_t *r = &srv->reg[kind];
    size_t at = lower_bound(r, key, false);
    if (at == r->count || strcmp(r->items[at]->key, key) != 0)
        return MCP_ENOTFOUND;
    entry_t *e = r->items[at];
    memmove(&r->items[at], &r->items[at + 1], (r->count - at - 1) * sizeof *r->items);
    r->count--;
    /* Entries do not call back into the server when freed (a release hook
     * only drops references), so this is safe under the lock. */
    entry_unref(e);
    return MCP_OK;
}

int registry_remove(mcp_server_t *srv, entry_kind_t kind, const char *key)
{
    if (!srv || !key)
        return MCP_EINVAL;
    pthread_rwlock_wrlock(&srv->lock);
    int rc = registry_delete_locked(srv, kind, key);
    pthread_rwlock_unlock(&srv->lock);
    if (rc == MCP_OK)
        server_publish(srv, change_event[kind], NULL);
    return rc;
}

bool registry_resource_known(mcp_server_t *srv, const char *uri)
{
    /* The pointer is only compared after the unref, never followed. */
    entry_t *e = registry_find(srv, ENTRY_RESOURCE, uri);
    bool out_of_memory;
    if (!e)
        e = registry_match_template(srv, uri, NULL, &out_of_memory);
    entry_unref(e);
    return e != NULL;
}

entry_t *registry_find(mcp_server_t *srv, entry_kind_t kind, const char *key)
{
    if (!key)
        return NULL;
    registry_t *r = &srv->reg[kind];
    entry_t *found = NULL;
    pthread_rwlock_rdlock(&srv->lock);
    size_t at = lower_bound(r, key, false);
    if (at < r->count && strcmp(r->items[at]->key, key) == 0) {
        found = r->items[at];
        entry_ref(found);
    }
    pthread_rwlock_unlock(&srv->lock);
    return found;
}

entry_t *registry_match_template(mcp_server_t *srv, const char *uri, json_t **vars_out,
                                 bool *out_of_memory)
{
    registry_t *r = &srv->reg[ENTRY_TEMPLATE];
    entry_t *best = NULL;
    json_t *best_vars = NULL;
    *out_of_memory = false;
    pthread_rwlock_rdlock(&srv->lock);
    for (size_t i = 0; i < r->count && !*out_of_memory; i++) {
        entry_t *e = r->items[i];
        if (best && e->seq > best->seq)
            continue; /* an earlier registration already matched */
        json_t *vars = NULL;
        int rc = mcp_uri_template_match(e->tpl, uri, strlen(uri), &vars);
        if (rc == MCP_OK) {
            json_decref(best_vars);
            best = e;
            best_vars = vars;
        }
        /* A template that could not be tried may be the one that matches:
         * no answer ("not found" included) would be right. */
        *out_of_memory = rc == MCP_ENOMEM;
    }
    if (*out_of_memory) {
        best = NULL;
        json_decref(best_vars);
        best_vars = NULL;
    }
    if (best)
        entry_ref(best);
    pthread_rwlock_unlock(&srv->lock);
    if (vars_out)
        *vars_out = best_vars;
    else
        json_decref(best_vars);
    return best;
}

bool registry_has(mcp_server_t *srv, entry_kind_t kind)
{
    pthread_rwlock_rdlock(&srv->lock);
    bool has = srv->reg[kind].count > 0;
    pthread_rwlock_unlock(&srv->lock);
    return has;
}

/* Cursors are "k" + the hex of the last key returned: opaque to clients,
 * trivially validated, and valid across registry changes. */
char *registry_cursor_encode(const char *key)
{
    size_t n = strlen(key);
    char *c = malloc(2 * n + 2);
    if (!c)
        return NULL;
    c[0] = 'k';
    mcp_hex_encode(key, n, c + 1);
    c[2 * n + 1] = '\0';
    return c;
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

static char *cursor_decode(const char *cursor)
{
    size_t n = strlen(cursor);
    if (n < 3 || cursor[0] != 'k' || (n - 1) % 2 != 0)
        return NULL;
    char *key = malloc((n - 1) / 2 + 1);
    if (!key)
        return NULL;
    size_t k = 0;
    for (size_t i = 1; i < n; i += 2) {
        int hi = hex_value(cursor[i]), lo = hex_value(cursor[i + 1]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(key);
            return NULL;
        }
        key[k++] = (char)(hi << 4 | lo);
    }
    key[k] = '\0';
    return key;
}

bool registry_cursor_param(const json_t *params, char **after_out, mcp_error_t *err)
{
    const json_t *cursor = json_object_get(params, "cursor");
    *after_out = NULL;
    if (!cursor)
        return true;
    if (!json_is_string(cursor)) {
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL, "cursor must be a string");
        return false;
    }
    if (!(*after_out = cursor_decode(json_string_value(cursor)))) {
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, json_pack("{s:O}", "cursor", cursor),
                      "Invalid cursor");
        return false;
    }
    return true;
}

/* The text of e->def, written the first time it is asked for (the def
 * never changes); NULL when out of memory. Two threads may both write it:
 * one keeps its text, the other frees its own. */
static const entry_text_t *entry_def_text(entry_t *e)
{
    entry_text_t *t = atomic_load_explicit(&e->def_text, memory_order_acquire);
    if (t)
        return t;
    size_t len = 0;
    char *text = json_write(e->def, JSON_WRITE_COMPACT, &len);
    t = text ? malloc(sizeof *t + len + 1) : NULL;
    if (t) {
        t->len = len;
        memcpy(t->text, text, len + 1);
    }
    free(text);
    if (!t)
        return NULL;
    entry_text_t *first = NULL;
    if (atomic_compare_exchange_strong_explicit(&e->def_text, &first, t, memory_order_acq_rel,
                                                memory_order_acquire))
        return t;
    free(t);
    return first;
}

void list_text_clear(list_text_t *text)
{
    for (size_t i = 0; i < text->n_held; i++)
        entry_unref(text->held[i]);
    free(text->held);
    free((json_text_t *)text->splice.items);
    memset(text, 0, sizeof *text);
}

void registry_page(mcp_server_t *srv, entry_kind_t kind, const char *after, json_t **items,
                   char **next_cursor, list_text_t *text)
{
    json_t *list = json_array();
    char *next = NULL;
    registry_t *r = &srv->reg[kind];
    bool texts = text != NULL;
    json_text_t *pieces = NULL;
    entry_t **held = NULL;
    size_t len = 0, n_held = 0;

    pthread_rwlock_rdlock(&srv->lock);
    size_t i = after ? lower_bound(r, after, true) : 0;
    size_t taken = 0;
    const entry_t *last = NULL;
    if (texts) {
        /* Room for a page's worth, or every entry from `after` on. */
        size_t most = r->count - i < srv->page_size ? r->count - i : srv->page_size;
        pieces = most ? malloc(most * sizeof *pieces) : NULL;
        held = most ? malloc(most * sizeof *held) : NULL;
        texts = most == 0 || (pieces && held);
    }
    for (; i < r->count; i++) {
        if (r->items[i]->unlisted)
            continue;
        if (taken == srv->page_size) {
            /* One more listed entry: the page ends with a cursor. */
            next = registry_cursor_encode(last->key);
            break;
        }
        /* The texts must say what the tree says. */
        if (json_array_append(list, r->items[i]->def) != 0)
            texts = false;
        const entry_text_t *t = texts ? entry_def_text(r->items[i]) : NULL;
        if (t) {
            pieces[n_held] = (json_text_t){t->text, t->len};
            held[n_held++] = r->items[i];
            entry_ref(r->items[i]);
            len += t->len;
        } else {
            texts = false;
        }
        last = r->items[i];
        taken++;
    }
    pthread_rwlock_unlock(&srv->lock);

    *items = list;
    *next_cursor = next;
    if (!text)
        return;
    /* The pieces are freed with the entries they came from, pasted or
     * not (the texts failed midway: out of memory). */
    *text = (list_text_t){.held = held, .n_held = n_held};
    text->splice.items = pieces;
    if (texts && list)
        text->splice = (json_splice_t){list, pieces, taken, len};
}

/* ------------------------------------------------------------------------
 * Building definitions from the registration structs
 * ------------------------------------------------------------------------ */

/* Parses optional JSON text `text` as a value of the given type and stores
 * it under `key` in `def`. */
static int set_json_field(json_t *def, const char *key, const char *text, json_type want,
                          const char *what, mcp_error_t *err)
{
    if (!text)
        return MCP_OK;
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!v)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "%s is not valid JSON: %s (line %d, column %d)", what, jerr.text,
                             jerr.line, jerr.column);
    if (json_typeof(v) != want) {
        json_decref(v);
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "%s must be a JSON %s",
                             what, want == JSON_ARRAY ? "array" : "object");
    }
    json_object_set_new(def, key, v);
    return MCP_OK;
}

static int set_string_field(json_t *def, const char *key, const char *value, const char *what,
                            mcp_error_t *err)
{
    if (!value)
        return MCP_OK;
    json_t *v = json_string(value);
    if (!v)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "%s is not valid UTF-8", what);
    json_object_set_new(def, key, v);
    return MCP_OK;
}

/* Tool names: 1-128 characters of [A-Za-z0-9_.-] (the spec's rule). */
static bool valid_tool_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

/* A tool that runs only as a task needs clients that declared the Tasks
 * extension: the request ladder then refuses the others with -32021
 * naming it (the spec's MUST), as for any required capability. */
static int require_tasks_extension(mcp_task_support_t tasks, json_t **required_caps)
{
    if (tasks != MCP_TASKS_REQUIRED)
        return MCP_OK;
    json_t *need = task_required_capabilities();
    if (!need)
        return MCP_ENOMEM;
    if (!*required_caps) {
        *required_caps = need;
        return MCP_OK;
    }
    int rc = json_object_update_recursive(*required_caps, need) == 0 ? MCP_OK : MCP_ENOMEM;
    json_decref(need);
    return rc;
}

/* Checks a complete Tool definition and registers it. Steals `def`. */
static int add_tool_def(mcp_server_t *srv, json_t *def, json_t *required_caps, mcp_tool_fn fn,
                        void *user, bool run_inline, mcp_task_support_t tasks, mcp_error_t *err)
{
    int rc = MCP_EINVAL;
    const char *name = json_string_value(json_object_get(def, "name"));
    json_t *schema = json_object_get(def, "inputSchema");
    json_t *output = json_object_get(def, "outputSchema");
    mcp_param_headers_t headers = {0};

    if (!fn) {
        mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL, "a tool needs a handler");
    } else if (!name || !valid_tool_name(name)) {
        mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL,
                      "tool name \"%s\" is not 1-128 characters of [A-Za-z0-9_.-]",
                      name ? name : "(missing)");
    } else if (!json_is_object(schema) ||
               !json_is_string(json_object_get(schema, "type")) ||
               strcmp(json_string_value(json_object_get(schema, "type")), "object") != 0) {
        mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL,
                      "tool %s: inputSchema must be an object schema with \"type\":\"object\"",
                      name);
    } else if (output && !json_is_object(output)) {
        mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL,
                      "tool %s: outputSchema must be a JSON object", name);
    } else if (required_caps && !json_is_object(required_caps)) {
        mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL,
                      "tool %s: required capabilities must be a JSON object", name);
    } else if (tasks != MCP_TASKS_NONE && tasks != MCP_TASKS_OPTIONAL &&
               tasks != MCP_TASKS_REQUIRED) {
        mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL, "tool %s: unknown task support %d",
                      name, (int)tasks);
    } else if (tasks != MCP_TASKS_NONE && run_inline) {
        mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL,
                      "tool %s: a tool whose calls may become tasks cannot run inline", name);
    } else if ((rc = require_tasks_extension(tasks, &required_caps)) != MCP_OK) {
        mcp_error_set(err, rc, MCP_INTERNAL_ERROR, NULL, "out of memory");
    } else if ((rc = mcp_xmcp_headers_collect(schema, &headers, err)) != MCP_OK) {
        /* err names the offending annotation */
    } else {
        rc = MCP_ENOMEM;
        entry_t *e = entry_new(ENTRY_TOOL, name, def, user);
        def = NULL;
        if (e) {
            e->fn.tool = fn;
            e->run_inline = run_inline;
            e->tasks = tasks;
            e->param_headers = headers; /* collected once, checked on every call */
            headers = (mcp_param_headers_t){0};
            e->required_caps = required_caps;
            required_caps = NULL;
            rc = registry_add(srv, e);
            if (rc == MCP_EEXIST)
                mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL, "a tool named %s exists",
                              name);
            if (rc == MCP_OK && tasks != MCP_TASKS_NONE)
                atomic_store(&srv->tasks_offered, true);
            if (rc != MCP_OK)
                entry_unref(e);
        }
    }
    mcp_param_headers_clear(&headers);
    json_decref(def);
    json_decref(required_caps);
    return rc;
}

int mcp_server_add_tool(mcp_server_t *srv, const mcp_tool_t *tool, mcp_error_t *err)
{
    if (!srv || !tool || !tool->name)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "a tool needs a name");
    json_t *def = json_object();
    json_t *caps = NULL;
    int rc;
    if ((rc = set_string_field(def, "name", tool->name, "tool name", err)) ||
        (rc = set_string_field(def, "title", tool->title, "tool title", err)) ||
        (rc = set_string_field(def, "description", tool->description, "tool description",
                               err)))
        goto fail;
    if (tool->input_schema) {
        if ((rc = set_json_field(def, "inputSchema", tool->input_schema, JSON_OBJECT,
                                 "inputSchema", err)))
            goto fail;
    } else {
        json_object_set_new(def, "inputSchema", json_pack("{s:s}", "type", "object"));
    }
    if ((rc = set_json_field(def, "outputSchema", tool->output_schema, JSON_OBJECT,
                             "outputSchema", err)) ||
        (rc = set_json_field(def, "annotations", tool->annotations, JSON_OBJECT, "annotations",
                             err)) ||
        (rc = set_json_field(def, "icons", tool->icons, JSON_ARRAY, "icons", err)) ||
        (rc = set_json_field(def, "_meta", tool->meta, JSON_OBJECT, "meta", err)))
        goto fail;
    if (tool->required_capabilities) {
        json_t *holder = json_object();
        rc = set_json_field(holder, "c", tool->required_capabilities, JSON_OBJECT,
                            "required_capabilities", err);
        caps = json_incref(json_object_get(holder, "c"));
        json_decref(holder);
        if (rc)
            goto fail;
    }
    return add_tool_def(srv, def, caps, tool->handler, tool->user, tool->run_inline, tool->tasks,
                        err);
fail:
    json_decref(def);
    json_decref(caps);
    return rc;
}

int mcp_server_add_tool_json(mcp_server_t *srv, const json_t *tool, mcp_tool_fn handler,
                             void *user, mcp_error_t *err)
{
    if (!srv || !json_is_object(tool))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "a tool definition must be a JSON object");
    return add_tool_def(srv, json_deep_copy(tool), NULL, handler, user, false, MCP_TASKS_NONE,
                        err);
}

int mcp_server_remove_tool(mcp_server_t *srv, const char *name)
{
    return registry_remove(srv, ENTRY_TOOL, name);
}

/* The fields resources and templates share. */
static int set_resource_fields(json_t *def, const char *name, const char *title,
                               const char *description, const char *mime_type,
                               const char *annotations, const char *icons, const char *meta,
                               mcp_error_t *err)
{
    int rc;
    if (!name)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "a resource needs a name");
    if ((rc = set_string_field(def, "name", name, "resource name", err)) ||
        (rc = set_string_field(def, "title", title, "resource title", err)) ||
        (rc = set_string_field(def, "description", description, "resource description",
                               err)) ||
        (rc = set_string_field(def, "mimeType", mime_type, "resource mime type", err)) ||
        (rc = set_json_field(def, "annotations", annotations, JSON_OBJECT, "annotations",
                             err)) ||
        (rc = set_json_field(def, "icons", icons, JSON_ARRAY, "icons", err)) ||
        (rc = set_json_field(def, "_meta", meta, JSON_OBJECT, "meta", err)))
        return rc;
    return MCP_OK;
}

static int add_entry(mcp_server_t *srv, entry_t *e, const char *what, mcp_error_t *err)
{
    int rc = registry_add(srv, e);
    if (rc == MCP_EEXIST)
        mcp_error_set(err, rc, MCP_INVALID_PARAMS, NULL, "%s %s is already registered", what,
                      e->key);
    else if (rc != MCP_OK)
        mcp_error_set(err, rc, MCP_INTERNAL_ERROR, NULL, "out of memory");
    if (rc != MCP_OK)
        entry_unref(e);
    return rc;
}

int mcp_server_add_resource(mcp_server_t *srv, const mcp_resource_t *res, mcp_error_t *err)
{
    if (!srv || !res || !res->uri || !res->uri[0] || !res->handler)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "a resource needs a uri and a handler");
    json_t *def = json_object();
    int rc = set_string_field(def, "uri", res->uri, "resource uri", err);
    if (!rc)
        rc = set_resource_fields(def, res->name, res->title, res->description, res->mime_type,
                                 res->annotations, res->icons, res->meta, err);
    if (!rc && res->size > 0)
        json_object_set_new(def, "size", json_integer(res->size));
    if (rc) {
        json_decref(def);
        return rc;
    }
    entry_t *e = entry_new(ENTRY_RESOURCE, res->uri, def, res->user);
    if (!e)
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    e->fn.resource = res->handler;
    e->run_inline = res->run_inline;
    return add_entry(srv, e, "resource", err);
}

int mcp_server_remove_resource(mcp_server_t *srv, const char *uri)
{
    return registry_remove(srv, ENTRY_RESOURCE, uri);
}

int mcp_server_add_resource_template(mcp_server_t *srv, const mcp_resource_template_t *tpl,
                                     mcp_error_t *err)
{
    if (!srv || !tpl || !tpl->uri_template || !tpl->handler)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "a resource template needs a uri_template and a handler");
    struct mcp_uri_template *parsed = mcp_uri_template_new(tpl->uri_template, err);
    if (!parsed)
        return MCP_EINVAL;
    int rc;
    json_t *def = json_object();
    rc = set_string_field(def, "uriTemplate", tpl->uri_template, "uri template", err);
    if (!rc)
        rc = set_resource_fields(def, tpl->name, tpl->title, tpl->description, tpl->mime_type,
                                 tpl->annotations, tpl->icons, tpl->meta, err);
    if (rc) {
        json_decref(def);
        mcp_uri_template_free(parsed);
        return rc;
    }
    entry_t *e = entry_new(ENTRY_TEMPLATE, tpl->uri_template, def, tpl->user);
    if (!e) {
        mcp_uri_template_free(parsed);
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    }
    e->fn.resource = tpl->handler;
    e->run_inline = tpl->run_inline;
    e->tpl = parsed;
    return add_entry(srv, e, "resource template", err);
}

int mcp_server_remove_resource_template(mcp_server_t *srv, const char *uri_template)
{
    return registry_remove(srv, ENTRY_TEMPLATE, uri_template);
}

int mcp_server_add_prompt(mcp_server_t *srv, const mcp_prompt_t *prompt, mcp_error_t *err)
{
    if (!srv || !prompt || !prompt->name || !prompt->name[0] || !prompt->handler)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "a prompt needs a name and a handler");
    json_t *def = json_object();
    json_t *required = json_array();
    int rc;
    if ((rc = set_string_field(def, "name", prompt->name, "prompt name", err)) ||
        (rc = set_string_field(def, "title", prompt->title, "prompt title", err)) ||
        (rc = set_string_field(def, "description", prompt->description, "prompt description",
                               err)) ||
        (rc = set_json_field(def, "icons", prompt->icons, JSON_ARRAY, "icons", err)) ||
        (rc = set_json_field(def, "_meta", prompt->meta, JSON_OBJECT, "meta", err)))
        goto fail;
    if (prompt->n_args) {
        json_t *args = json_array();
        json_object_set_new(def, "arguments", args);
        for (size_t i = 0; i < prompt->n_args; i++) {
            const mcp_prompt_arg_t *a = &prompt->args[i];
            json_t *arg = json_object();
            json_array_append_new(args, arg);
            if (!a->name || !a->name[0]) {
                rc = mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                   "prompt %s: argument %zu has no name", prompt->name, i);
                goto fail;
            }
            if ((rc = set_string_field(arg, "name", a->name, "argument name", err)) ||
                (rc = set_string_field(arg, "title", a->title, "argument title", err)) ||
                (rc = set_string_field(arg, "description", a->description,
                                       "argument description", err)))
                goto fail;
            if (a->required) {
                json_object_set_new(arg, "required", json_true());
                json_array_append_new(required, json_string(a->name));
            }
        }
    }
    entry_t *e = entry_new(ENTRY_PROMPT, prompt->name, def, prompt->user);
    if (!e) {
        json_decref(required);
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    }
    e->fn.prompt = prompt->handler;
    e->run_inline = prompt->run_inline;
    e->required_args = required;
    return add_entry(srv, e, "prompt", err);
fail:
    json_decref(def);
    json_decref(required);
    return rc;
}

int mcp_server_remove_prompt(mcp_server_t *srv, const char *name)
{
    return registry_remove(srv, ENTRY_PROMPT, name);
}
