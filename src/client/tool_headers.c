/*
 * The x-mcp-header annotations of the tools the client has seen (digest
 * section 4.6): tools/call mirrors annotated arguments into Mcp-Param-*
 * headers, and a tool with invalid annotations is dropped from tools/list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"

struct client_tool {
    client_tool_t *next;
    char *name;
    mcp_param_headers_t headers;
};

static void tool_free(client_tool_t *t)
{
    free(t->name);
    mcp_param_headers_clear(&t->headers);
    free(t);
}

void client_tools_clear(client_tools_t *tools)
{
    for (client_tool_t *t = tools->head, *next; t; t = next) {
        next = t->next;
        tool_free(t);
    }
    tools->head = NULL;
    tools->complete = false;
    tools->generation++;
}

const mcp_param_headers_t *client_tools_find(const client_tools_t *tools, const char *name)
{
    for (const client_tool_t *t = tools->head; t; t = t->next)
        if (strcmp(t->name, name) == 0)
            return &t->headers;
    return NULL;
}

/* Records (or replaces) tool `name`; takes the headers. */
static int remember(client_tools_t *tools, const char *name, mcp_param_headers_t *headers)
{
    for (client_tool_t *t = tools->head; t; t = t->next)
        if (strcmp(t->name, name) == 0) {
            mcp_param_headers_clear(&t->headers);
            t->headers = *headers;
            return MCP_OK;
        }
    client_tool_t *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name))) {
        free(t);
        mcp_param_headers_clear(headers);
        return MCP_ENOMEM;
    }
    t->headers = *headers;
    t->next = tools->head;
    tools->head = t;
    return MCP_OK;
}

void client_tools_merge(client_tools_t *to, client_tools_t *from)
{
    while (from->head) {
        client_tool_t *t = from->head;
        from->head = t->next;
        client_tool_t **p = &to->head;
        while (*p && strcmp((*p)->name, t->name) != 0)
            p = &(*p)->next;
        if (*p) {
            t->next = (*p)->next;
            tool_free(*p);
        } else {
            t->next = NULL;
        }
        *p = t;
    }
}

static void warn_dropped(mcp_log_fn log, void *log_user, const char *name, const char *why)
{
    if (!log)
        return;
    char msg[512];
    snprintf(msg, sizeof msg, "dropping tool \"%s\" from tools/list: %s", name, why);
    log(log_user, MCP_LOG_WARNING, msg);
}

int client_tools_accept_page(client_tools_t *tools, json_t *result, mcp_log_fn log,
                             void *log_user)
{
    json_t *list = json_object_get(result, "tools");
    if (!json_is_array(list))
        return MCP_OK;
    for (size_t i = 0; i < json_array_size(list);) {
        json_t *tool = json_array_get(list, i);
        const char *name = json_string_value(json_object_get(tool, "name"));
        if (!name) {
            warn_dropped(log, log_user, "(unnamed)", "a tool needs a string name");
            json_array_remove(list, i);
            continue;
        }
        mcp_param_headers_t headers = {0};
        mcp_error_t err = {0};
        int rc = mcp_xmcp_headers_collect(json_object_get(tool, "inputSchema"), &headers, &err);
        if (rc == MCP_ENOMEM) {
            mcp_error_clear(&err);
            return rc;
        }
        if (rc != MCP_OK) {
            warn_dropped(log, log_user, name, err.message);
            mcp_error_clear(&err);
            json_array_remove(list, i);
            continue;
        }
        if ((rc = remember(tools, name, &headers)) != MCP_OK)
            return rc;
        i++;
    }
    return MCP_OK;
}
