/*
 * What the client remembers of the tools it has seen in tools/list: their
 * x-mcp-header annotations (digest section 4.6), which tools/call mirrors
 * into Mcp-Param-* headers (a tool with invalid annotations is dropped
 * from tools/list), and, from legacy servers, execution.taskSupport,
 * which says whether a call may or must be a task (legacy/tasks.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"

struct client_tool {
    client_tool_t *next;
    char *name;
    mcp_param_headers_t headers;
    client_task_support_t task_support;
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

static const client_tool_t *find(const client_tools_t *tools, const char *name)
{
    for (const client_tool_t *t = tools->head; t; t = t->next)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

const mcp_param_headers_t *client_tools_find(const client_tools_t *tools, const char *name)
{
    const client_tool_t *t = find(tools, name);
    return t ? &t->headers : NULL;
}

client_task_support_t client_tools_task_support(const client_tools_t *tools, const char *name)
{
    const client_tool_t *t = find(tools, name);
    return t ? t->task_support : CLIENT_TASK_SUPPORT_UNKNOWN;
}

/* execution.taskSupport of a tool (borrowed); absent means forbidden. */
static client_task_support_t task_support_of(const json_t *tool)
{
    const char *s =
        json_string_value(json_object_get(json_object_get(tool, "execution"), "taskSupport"));
    if (s && strcmp(s, "required") == 0)
        return CLIENT_TASK_SUPPORT_REQUIRED;
    if (s && strcmp(s, "optional") == 0)
        return CLIENT_TASK_SUPPORT_OPTIONAL;
    return CLIENT_TASK_SUPPORT_FORBIDDEN;
}

/* Records (or replaces) tool `name`; takes the headers. */
static int remember(client_tools_t *tools, const char *name, mcp_param_headers_t *headers,
                    client_task_support_t task_support)
{
    for (client_tool_t *t = tools->head; t; t = t->next)
        if (strcmp(t->name, name) == 0) {
            mcp_param_headers_clear(&t->headers);
            t->headers = *headers;
            t->task_support = task_support;
            return MCP_OK;
        }
    client_tool_t *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name))) {
        free(t);
        mcp_param_headers_clear(headers);
        return MCP_ENOMEM;
    }
    t->headers = *headers;
    t->task_support = task_support;
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
        if ((rc = remember(tools, name, &headers, task_support_of(tool))) != MCP_OK)
            return rc;
        i++;
    }
    return MCP_OK;
}
