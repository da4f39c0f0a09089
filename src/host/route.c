/*
 * Calls by aggregated name (a skill's files: by the skill's entry, which
 * names its server): find the server, take a reference on its connection
 * (so that a reconnect meanwhile cannot free the client under the call),
 * make the call with the host's progress callback, and, when the call
 * failed on the transport, ask the server's supervisor to check the
 * connection.
 */
#include <string.h>

#include "host/host_internal.h"
#include "protocol/uri_template.h"

/* The published connection of the server called `name` (`len` bytes), with
 * a reference for the caller. */
static int route_to(mcp_host_t *h, const char *name, size_t len, host_conn_t **conn_out,
                    mcp_error_t *err)
{
    int rc = MCP_OK;
    pthread_mutex_lock(&h->lock);
    host_server_t *s = host_find_locked(h, name, len);
    if (!s)
        rc = mcp_error_set(err, MCP_ENOTFOUND, 0, NULL, "there is no server \"%.*s\"", (int)len,
                           name);
    else if (s->state != MCP_HOST_READY || !s->conn)
        rc = mcp_error_set(err, MCP_ESTATE, 0, NULL, "server \"%s\" is not ready (%s)",
                           s->config.name,
                           s->state == MCP_HOST_FAILED && s->error ? s->error : "connecting");
    else
        host_conn_ref_locked(*conn_out = s->conn);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* The connection of the server an aggregated name starts with, and the
 * server's own name (*own, inside `aggregated`). */
static int route_by_name(mcp_host_t *h, const char *aggregated, host_conn_t **conn_out,
                         const char **own, mcp_error_t *err)
{
    const char *sep = strstr(aggregated, h->separator);
    if (!sep || !sep[h->separator_len])
        return mcp_error_set(err, MCP_ENOTFOUND, 0, NULL,
                             "\"%s\" is not an aggregated name (\"<server>%s<name>\")",
                             aggregated, h->separator);
    *own = sep + h->separator_len;
    return route_to(h, aggregated, (size_t)(sep - aggregated), conn_out, err);
}

/* Ends a routed call: a transport failure gets the connection checked. */
static int finish(host_conn_t *conn, int rc)
{
    if (rc == MCP_EIO || rc == MCP_ECLOSED || rc == MCP_ETIMEDOUT)
        host_conn_flag(conn, CONN_CHECK);
    host_conn_release(conn);
    return rc;
}

int mcp_host_call_tool(mcp_host_t *host, const char *aggregated, const json_t *arguments,
                       const mcp_request_options_t *opts, json_t **result_out, mcp_error_t *err)
{
    if (result_out)
        *result_out = NULL;
    if (!host || !aggregated || !result_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "host, name and result_out are required");
    host_conn_t *conn = NULL;
    const char *tool = NULL;
    int rc = route_by_name(host, aggregated, &conn, &tool, err);
    if (rc != MCP_OK)
        return rc;
    mcp_request_options_t o = host_conn_request_options(conn, opts);
    return finish(conn, mcp_client_call_tool(conn->client, tool, arguments, &o, result_out, err));
}

int mcp_host_get_prompt(mcp_host_t *host, const char *aggregated, const json_t *arguments,
                        const mcp_request_options_t *opts, json_t **result_out, mcp_error_t *err)
{
    if (result_out)
        *result_out = NULL;
    if (!host || !aggregated || !result_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "host, name and result_out are required");
    host_conn_t *conn = NULL;
    const char *prompt = NULL;
    int rc = route_by_name(host, aggregated, &conn, &prompt, err);
    if (rc != MCP_OK)
        return rc;
    mcp_request_options_t o = host_conn_request_options(conn, opts);
    return finish(conn,
                  mcp_client_get_prompt(conn->client, prompt, arguments, &o, result_out, err));
}

/* Does one of the templates (an array of ResourceTemplate) match `uri`? */
static bool template_matches(const json_t *templates, const char *uri)
{
    size_t i;
    json_t *t;
    json_array_foreach(templates, i, t) {
        mcp_uri_template_t *tpl =
            mcp_uri_template_new(json_string_value(json_object_get(t, "uriTemplate")), NULL);
        json_t *vars = NULL;
        bool match = tpl && mcp_uri_template_match(tpl, uri, strlen(uri), &vars) == MCP_OK;
        json_decref(vars);
        mcp_uri_template_free(tpl);
        if (match)
            return true;
    }
    return false;
}

static bool lists_uri(const json_t *resources, const char *uri)
{
    size_t i;
    json_t *r;
    json_array_foreach(resources, i, r) {
        const char *u = json_string_value(json_object_get(r, "uri"));
        if (u && strcmp(u, uri) == 0)
            return true;
    }
    return false;
}

/* The first ready server that lists `uri`, else the first with a template
 * that matches it: its connection, with a reference for the caller. */
static int route_by_uri(mcp_host_t *h, const char *uri, host_conn_t **conn_out, mcp_error_t *err)
{
    host_server_t *found = NULL;
    pthread_mutex_lock(&h->lock);
    for (host_server_t *s = h->servers; !found && s; s = s->next)
        if (s->state == MCP_HOST_READY && s->conn && lists_uri(s->lists.resources, uri))
            found = s;
    for (host_server_t *s = h->servers; !found && s; s = s->next)
        if (s->state == MCP_HOST_READY && s->conn && template_matches(s->lists.templates, uri))
            found = s;
    if (found)
        host_conn_ref_locked(*conn_out = found->conn);
    pthread_mutex_unlock(&h->lock);
    return found ? MCP_OK
                 : mcp_error_set(err, MCP_ENOTFOUND, 0, NULL,
                                 "no ready server lists \"%s\" or a template that matches it",
                                 uri);
}

int mcp_host_read_resource(mcp_host_t *host, const char *server, const char *uri,
                           const mcp_request_options_t *opts, json_t **result_out,
                           mcp_error_t *err)
{
    if (result_out)
        *result_out = NULL;
    if (!host || !uri || !result_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "host, uri and result_out are required");
    host_conn_t *conn;
    int rc = server ? route_to(host, server, strlen(server), &conn, err)
                    : route_by_uri(host, uri, &conn, err);
    if (rc != MCP_OK)
        return rc;
    mcp_request_options_t o = host_conn_request_options(conn, opts);
    return finish(conn, mcp_client_read_resource(conn->client, uri, &o, result_out, err));
}

int mcp_host_read_skill_file(mcp_host_t *host, const json_t *skill, const char *file_uri,
                             const mcp_request_options_t *opts, char **content_out,
                             size_t *len_out, bool *verified_out, mcp_error_t *err)
{
    if (content_out)
        *content_out = NULL;
    if (len_out)
        *len_out = 0;
    if (verified_out)
        *verified_out = false;
    if (!host || !skill || !file_uri || !content_out || !len_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "host, skill, file_uri, content_out and len_out are required");
    const json_t *server =
        json_object_get(json_object_get(skill, "_meta"), HOST_META_SERVER);
    if (!json_is_string(server))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "the skill entry names no server (_meta \"" HOST_META_SERVER
                             "\"): not an entry of mcp_host_skills()");
    host_conn_t *conn;
    int rc = route_to(host, json_string_value(server), json_string_length(server), &conn, err);
    if (rc != MCP_OK)
        return rc;
    /* The entry goes to the client with the host's decoration: the client
     * reads only its uri, frontmatter and resources, and a _meta is no
     * part of what a file is verified against. */
    mcp_request_options_t o = host_conn_request_options(conn, opts);
    return finish(conn, mcp_client_read_skill_file(conn->client, skill, file_uri, &o,
                                                   content_out, len_out, verified_out, err));
}
