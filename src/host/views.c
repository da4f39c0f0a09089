/*
 * The aggregated views: each ready server's tools, resources, templates,
 * prompts and skills, fetched by its supervisor and decorated with the
 * server's name (and, for tools and prompts, the aggregated name that
 * routes back to the server), then concatenated in the order the servers
 * were added.
 *
 * Aggregated names are "<server><separator><name>". A server's name never
 * contains the separator (mcp_host_add_server refuses it), so the first
 * separator in an aggregated name ends the server's name: two servers'
 * tools can never collide, even when the tools' own names contain it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host_internal.h"
#include "mcp/request.h" /* MCP_EXTENSION_SKILLS */

#define META_TOOL "io.libmcp/tool"
#define META_PROMPT "io.libmcp/prompt"

/* ------------------------------------------------------------------------
 * Fetching a server's lists
 * ------------------------------------------------------------------------ */

/* A copy of `entry` for the views (new reference), or NULL when it is not
 * an object (or, with `own_key`, has no string name). With `own_key` the
 * name becomes the aggregated one and the server's own name goes to
 * _meta[own_key]. */
static json_t *decorate(const json_t *entry, const char *server, const char *separator,
                        const char *own_key)
{
    const char *own = json_string_value(json_object_get(entry, "name"));
    if (!json_is_object(entry) || (own_key && !own))
        return NULL;
    json_t *copy = json_deep_copy(entry);
    json_t *meta = json_object_get(copy, "_meta");
    if (copy && !json_is_object(meta)) {
        meta = json_object();
        if (json_object_set_new(copy, "_meta", meta) != 0)
            meta = NULL;
    }
    bool ok = meta && json_object_set_new(meta, HOST_META_SERVER, json_string(server)) == 0;
    if (ok && own_key) {
        size_t len = strlen(server) + strlen(separator) + strlen(own) + 1;
        char *name = malloc(len);
        if (name)
            snprintf(name, len, "%s%s%s", server, separator, own);
        ok = name && json_object_set_new(meta, own_key, json_string(own)) == 0 &&
             json_object_set_new(copy, "name", json_string(name)) == 0;
        free(name);
    }
    if (!ok) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

typedef int (*list_all_fn)(mcp_client_t *client, const mcp_request_options_t *opts,
                           json_t **items_out, mcp_error_t *err);

/* Does the server's capabilities object have `capability`? */
static bool offers(host_conn_t *conn, const char *capability)
{
    return json_object_get(mcp_client_server_capabilities(conn->client), capability) != NULL;
}

/* Does the server declare the Skills extension? Extensions are a notion
 * of the modern protocol: whatever a legacy server's capabilities say, it
 * has no skills/list to ask. */
static bool offers_skills(host_conn_t *conn)
{
    const json_t *extensions =
        json_object_get(mcp_client_server_capabilities(conn->client), "extensions");
    return mcp_client_era(conn->client) == MCP_ERA_MODERN &&
           json_object_get(extensions, MCP_EXTENSION_SKILLS) != NULL;
}

/* mcp_client_list_skills_all, with a listing the client refuses as
 * malformed (MCP_EPROTO: one bad entry fails the page) counted as a
 * refusal: the server keeps its tools, and its skills view is empty. */
static int list_skills_all(mcp_client_t *client, const mcp_request_options_t *opts,
                           json_t **items_out, mcp_error_t *err)
{
    int rc = mcp_client_list_skills_all(client, opts, items_out, err);
    return rc == MCP_EPROTO ? MCP_ERPC : rc;
}

/* One list of the server, decorated, into *out (replacing it); asked for
 * only when the server `offered` it. */
static int fetch_one(host_conn_t *conn, bool offered, list_all_fn list_all, const char *what,
                     const char *own_key, json_t **out, mcp_error_t *err)
{
    mcp_host_t *h = conn->host;
    json_t *items = NULL, *decorated = json_array();
    if (!decorated)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    int rc = MCP_OK;
    if (offered) {
        mcp_error_t e = {0};
        rc = list_all(conn->client, &(mcp_request_options_t){.bypass_cache = true}, &items, &e);
        if (rc == MCP_ERPC) {
            /* The server refuses a list it claims: an empty one. */
            host_log(h, MCP_LOG_WARNING, "server \"%s\": listing its %s failed: %s",
                     conn->name, what, e.message);
            rc = MCP_OK;
        } else if (rc != MCP_OK && err) {
            mcp_error_move(err, &e);
        }
        mcp_error_clear(&e);
    }
    size_t i;
    json_t *entry;
    json_array_foreach(items, i, entry) {
        json_t *d = decorate(entry, conn->name, h->separator, own_key);
        if (d)
            json_array_append_new(decorated, d);
        else
            host_log(h, MCP_LOG_WARNING, "server \"%s\": left out one of its %s (malformed)",
                     conn->name, what);
    }
    json_decref(items);
    if (rc != MCP_OK) {
        json_decref(decorated);
        return rc;
    }
    json_decref(*out);
    *out = decorated;
    return MCP_OK;
}

int host_lists_fetch(host_conn_t *conn, unsigned which, host_lists_t *lists, mcp_error_t *err)
{
    int rc = MCP_OK;
    if (which & HOST_LIST_TOOLS)
        rc = fetch_one(conn, offers(conn, "tools"), mcp_client_list_tools_all, "tools",
                       META_TOOL, &lists->tools, err);
    if (rc == MCP_OK && (which & HOST_LIST_RESOURCES))
        rc = fetch_one(conn, offers(conn, "resources"), mcp_client_list_resources_all,
                       "resources", NULL, &lists->resources, err);
    if (rc == MCP_OK && (which & HOST_LIST_RESOURCES))
        rc = fetch_one(conn, offers(conn, "resources"), mcp_client_list_resource_templates_all,
                       "resource templates", NULL, &lists->templates, err);
    if (rc == MCP_OK && (which & HOST_LIST_RESOURCES))
        rc = fetch_one(conn, offers_skills(conn), list_skills_all, "skills", NULL,
                       &lists->skills, err);
    if (rc == MCP_OK && (which & HOST_LIST_PROMPTS))
        rc = fetch_one(conn, offers(conn, "prompts"), mcp_client_list_prompts_all, "prompts",
                       META_PROMPT, &lists->prompts, err);
    return rc;
}

host_lists_t host_lists_share(const host_lists_t *from)
{
    return (host_lists_t){json_incref(from->tools), json_incref(from->resources),
                          json_incref(from->templates), json_incref(from->prompts),
                          json_incref(from->skills)};
}

bool host_lists_equal(const host_lists_t *a, const host_lists_t *b)
{
    return json_equal(a->tools, b->tools) && json_equal(a->resources, b->resources) &&
           json_equal(a->templates, b->templates) && json_equal(a->prompts, b->prompts) &&
           json_equal(a->skills, b->skills);
}

void host_lists_clear(host_lists_t *lists)
{
    json_decref(lists->tools);
    json_decref(lists->resources);
    json_decref(lists->templates);
    json_decref(lists->prompts);
    json_decref(lists->skills);
    memset(lists, 0, sizeof *lists);
}

/* ------------------------------------------------------------------------
 * The aggregated views
 * ------------------------------------------------------------------------ */

typedef enum view {
    VIEW_TOOLS,
    VIEW_RESOURCES,
    VIEW_TEMPLATES,
    VIEW_PROMPTS,
    VIEW_SKILLS
} view_t;

static const json_t *list_of(const host_lists_t *lists, view_t view)
{
    switch (view) {
    case VIEW_TOOLS:
        return lists->tools;
    case VIEW_RESOURCES:
        return lists->resources;
    case VIEW_TEMPLATES:
        return lists->templates;
    case VIEW_PROMPTS:
        return lists->prompts;
    case VIEW_SKILLS:
        return lists->skills;
    }
    return NULL;
}

static json_t *aggregate(mcp_host_t *h, view_t view)
{
    if (!h)
        return NULL;
    json_t *all = json_array();
    bool ok = all != NULL;
    pthread_mutex_lock(&h->lock);
    for (host_server_t *s = h->servers; ok && s; s = s->next) {
        if (s->state != MCP_HOST_READY)
            continue;
        size_t i;
        json_t *entry;
        json_array_foreach(list_of(&s->lists, view), i, entry)
            ok = ok && json_array_append_new(all, json_deep_copy(entry)) == 0;
    }
    pthread_mutex_unlock(&h->lock);
    if (!ok) {
        json_decref(all);
        return NULL;
    }
    return all;
}

json_t *mcp_host_tools(mcp_host_t *host)
{
    return aggregate(host, VIEW_TOOLS);
}

json_t *mcp_host_resources(mcp_host_t *host)
{
    return aggregate(host, VIEW_RESOURCES);
}

json_t *mcp_host_resource_templates(mcp_host_t *host)
{
    return aggregate(host, VIEW_TEMPLATES);
}

json_t *mcp_host_prompts(mcp_host_t *host)
{
    return aggregate(host, VIEW_PROMPTS);
}

json_t *mcp_host_skills(mcp_host_t *host)
{
    return aggregate(host, VIEW_SKILLS);
}

int mcp_host_resolve_tool(mcp_host_t *host, const char *aggregated, char **server, char **tool)
{
    if (server)
        *server = NULL;
    if (tool)
        *tool = NULL;
    if (!host || !aggregated || !server || !tool)
        return MCP_EINVAL;
    const char *sep = strstr(aggregated, host->separator);
    if (!sep)
        return MCP_ENOTFOUND;
    int rc = MCP_ENOTFOUND;
    pthread_mutex_lock(&host->lock);
    host_server_t *s = host_find_locked(host, aggregated, (size_t)(sep - aggregated));
    size_t i;
    json_t *entry;
    if (s && s->state == MCP_HOST_READY)
        json_array_foreach(s->lists.tools, i, entry) {
            if (strcmp(json_string_value(json_object_get(entry, "name")), aggregated) != 0)
                continue;
            *server = strdup(s->config.name);
            *tool = strdup(json_string_value(
                json_object_get(json_object_get(entry, "_meta"), META_TOOL)));
            rc = *server && *tool ? MCP_OK : MCP_ENOMEM;
            break;
        }
    pthread_mutex_unlock(&host->lock);
    if (rc != MCP_OK) {
        free(*server);
        free(*tool);
        *server = *tool = NULL;
    }
    return rc;
}
