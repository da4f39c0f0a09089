/*
 * mcp TARGET tools | resources | templates | prompts: the server's lists,
 * every page of them.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "failure.h"
#include "json_out.h"
#include "output.h"
#include "schema_value.h"

typedef int (*list_fn)(mcp_client_t *client, const mcp_request_options_t *opts,
                       json_t **items_out, mcp_error_t *err);

/* Fetches a list; in --json mode prints {key: items} and returns NULL
 * with *status set. */
static json_t *fetch(cli_session_t *s, list_fn fn, const char *method, const char *key,
                     int *status)
{
    json_t *items = NULL;
    mcp_error_t err = {0};
    int rc = fn(s->client, &s->request, &items, &err);
    *status = rc == MCP_OK ? CLI_EXIT_OK : cli_fail_call(s->opt, method, rc, &err);
    mcp_error_clear(&err);
    if (rc == MCP_OK && s->opt->json) {
        json_t *doc = json_pack("{s:o}", key, items);
        json_out_print(doc);
        json_decref(doc);
        return NULL;
    }
    return items;
}

static const char *str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* "a:number b:number [c:string]" from an input schema. */
static void tool_arguments(const json_t *schema, char *buf, size_t cap)
{
    const json_t *required = json_object_get(schema, "required");
    size_t used = 0;
    buf[0] = '\0';
    const char *name;
    const json_t *property;
    json_object_foreach(json_object_get(schema, "properties"), name, property) {
        bool needed = false;
        size_t i;
        const json_t *r;
        json_array_foreach(required, i, r)
            needed = needed || (json_is_string(r) && strcmp(json_string_value(r), name) == 0);
        char type[64];
        int n = snprintf(buf + used, cap - used, "%s%s%s:%s%s", used ? " " : "",
                         needed ? "" : "[", name,
                         schema_value_type_name(property, type, sizeof type), needed ? "" : "]");
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    }
}

int cmd_tools(cli_session_t *s)
{
    int status;
    json_t *tools = fetch(s, mcp_client_list_tools_all, "tools/list", "tools", &status);
    if (!tools)
        return status;
    out_table_t *t = out_table_new(3, (const char *[]){"NAME", "ARGUMENTS", "DESCRIPTION"});
    size_t i;
    const json_t *tool;
    json_array_foreach(tools, i, tool) {
        char args[1024];
        tool_arguments(json_object_get(tool, "inputSchema"), args, sizeof args);
        out_table_add(t, (const char *[]){str(tool, "name"), args, str(tool, "description")});
    }
    out_table_print(t, "(no tools)");
    out_table_free(t);
    json_decref(tools);
    return CLI_EXIT_OK;
}

/* Resources and templates share a table. */
static int resource_table(cli_session_t *s, list_fn fn, const char *method, const char *key,
                          const char *uri_key, const char *uri_title, const char *empty)
{
    int status;
    json_t *items = fetch(s, fn, method, key, &status);
    if (!items)
        return status;
    out_table_t *t = out_table_new(4, (const char *[]){uri_title, "NAME", "TYPE", "DESCRIPTION"});
    size_t i;
    const json_t *item;
    json_array_foreach(items, i, item) {
        const char *name = str(item, "title") ? str(item, "title") : str(item, "name");
        out_table_add(t, (const char *[]){str(item, uri_key), name, str(item, "mimeType"),
                                          str(item, "description")});
    }
    out_table_print(t, empty);
    out_table_free(t);
    json_decref(items);
    return CLI_EXIT_OK;
}

int cmd_resources(cli_session_t *s)
{
    return resource_table(s, mcp_client_list_resources_all, "resources/list", "resources", "uri",
                          "URI", "(no resources)");
}

int cmd_templates(cli_session_t *s)
{
    return resource_table(s, mcp_client_list_resource_templates_all, "resources/templates/list",
                          "resourceTemplates", "uriTemplate", "URI TEMPLATE",
                          "(no resource templates)");
}

int cmd_prompts(cli_session_t *s)
{
    int status;
    json_t *prompts = fetch(s, mcp_client_list_prompts_all, "prompts/list", "prompts", &status);
    if (!prompts)
        return status;
    out_table_t *t = out_table_new(3, (const char *[]){"NAME", "ARGUMENTS", "DESCRIPTION"});
    size_t i;
    const json_t *prompt;
    json_array_foreach(prompts, i, prompt) {
        char args[1024];
        size_t used = 0, j;
        const json_t *arg;
        args[0] = '\0';
        json_array_foreach(json_object_get(prompt, "arguments"), j, arg) {
            bool needed = json_is_true(json_object_get(arg, "required"));
            const char *name = str(arg, "name");
            int n = snprintf(args + used, sizeof args - used, "%s%s%s%s", used ? " " : "",
                             needed ? "" : "[", name ? name : "?", needed ? "" : "]");
            if (n < 0 || (size_t)n >= sizeof args - used)
                break;
            used += (size_t)n;
        }
        out_table_add(t, (const char *[]){str(prompt, "name"), args, str(prompt, "description")});
    }
    out_table_print(t, "(no prompts)");
    out_table_free(t);
    json_decref(prompts);
    return CLI_EXIT_OK;
}
