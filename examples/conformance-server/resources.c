/*
 * test:// resources: a text one, a binary one, one a client may watch, and
 * the template test://template/{id}/data (resources-list, -read-text,
 * -read-binary, -templates-read, caching; legacy resources-subscribe).
 * A URI that names nothing is answered by libmcp itself (-32602 with
 * data.uri, sep-2164-resource-not-found).
 */
#include <stdlib.h>

#include "fixture.h"

static int read_static_text(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, "text/plain",
                                      "This is the content of the static text resource.");
}

static int read_static_binary(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_blob(call, uri, "image/png", fixture_png, fixture_png_len);
}

static int read_watched(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, "text/plain", "Watched resource content");
}

/* The template's {id} arrives percent-decoded through mcp_call_uri_var(). */
static int read_template(mcp_call_t *call, const char *uri, void *user)
{
    const char *id = mcp_call_uri_var(call, "id");
    json_t *doc = json_pack("{s:s, s:b, s:s+}", "id", id, "templateTest", 1, "data",
                            "Data for ID: ", id);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    int rc = text ? mcp_call_add_resource_text(call, uri, "application/json", text) : MCP_ENOMEM;
    free(text);
    return rc;
}

static const mcp_resource_t resources[] = {
    {.uri = "test://static-text", .name = "static-text", .title = "Static Text Resource",
     .description = "A static text resource", .mime_type = "text/plain",
     .handler = read_static_text},
    {.uri = "test://static-binary", .name = "static-binary", .title = "Static Binary Resource",
     .description = "A static binary resource (a PNG image)", .mime_type = "image/png",
     .handler = read_static_binary},
    {.uri = "test://watched-resource", .name = "watched-resource", .title = "Watched Resource",
     .description = "A resource clients may subscribe to", .mime_type = "text/plain",
     .handler = read_watched},
};

int fixture_add_resources(mcp_server_t *srv, mcp_error_t *err)
{
    for (size_t i = 0; i < sizeof resources / sizeof resources[0]; i++) {
        int rc = mcp_server_add_resource(srv, &resources[i], err);
        if (rc != MCP_OK)
            return rc;
    }
    return mcp_server_add_resource_template(srv, &(mcp_resource_template_t){
        .uri_template = "test://template/{id}/data", .name = "template",
        .title = "Resource Template", .description = "Data for one id",
        .mime_type = "application/json", .handler = read_template}, err);
}
