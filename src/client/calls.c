/*
 * The public call functions: each builds its method's params and hands
 * them to client_call() (driver.c), which does the rest.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "mcp/errors.h"
#include "protocol/utf8.h"

/* Checks the common arguments of every call. */
#define CHECK_CALL(c, result_out, err)                                                   \
    do {                                                                                 \
        if (result_out)                                                                  \
            *(result_out) = NULL;                                                        \
        if (!(c) || !(result_out))                                                       \
            return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client and result_out are required"); \
    } while (0)

static json_t *cursor_params(const char *cursor)
{
    return cursor ? json_pack("{s:s}", "cursor", cursor) : json_object();
}

int client_list_page(mcp_client_t *c, const char *method, const char *cursor,
                     const mcp_request_options_t *opts, json_t **result_out, mcp_error_t *err)
{
    CHECK_CALL(c, result_out, err);
    json_t *params = cursor_params(cursor);
    if (!params)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory (or cursor not UTF-8)");
    int rc = client_call(c, method, params, opts, result_out, err);
    json_decref(params);
    return rc;
}

/* Is this the failure of a page asked for with a cursor that the server
 * no longer takes? -32602 is what an invalid cursor SHOULD get (digest
 * 2.8); on a request whose only parameter is the cursor nothing else can
 * be invalid. */
static bool cursor_refused(int rc, const char *cursor, const mcp_error_t *why)
{
    return rc == MCP_ERPC && cursor && why->code == MCP_INVALID_PARAMS;
}

/* Drops every cached page of `method`: after an invalid cursor no page of
 * the old walk can be trusted to belong with a new one. */
static void drop_pages(mcp_client_t *c, const char *method)
{
    pthread_mutex_lock(&c->lock);
    client_cache_invalidate_method(c->cache, method);
    pthread_mutex_unlock(&c->lock);
}

/*
 * Follows nextCursor from the first page to the last. Each page is cached
 * on its own (digest 6), so a cached first page may name a cursor of a
 * server that has since been redeployed or expired its cursors: when a
 * page asked for with a cursor is refused with -32602, the method's
 * pages are dropped and the walk starts again, once, from a first page
 * fetched anew (digest 6: "invalid cursor -> drop all pages and
 * restart"). A second refusal is the server's answer.
 */
int client_list_all_checked(mcp_client_t *c, const char *method, const char *key,
                            client_page_check_fn check, const mcp_request_options_t *opts,
                            json_t **items_out, mcp_error_t *err)
{
    CHECK_CALL(c, items_out, err);
    json_t *items = json_array();
    json_t *seen = json_object(); /* cursors already followed */
    char *cursor = NULL;
    mcp_request_options_t fresh = opts ? *opts : (mcp_request_options_t){0};
    bool restarted = false;
    mcp_error_t why = {0};
    int rc = items && seen ? MCP_OK : mcp_error_set(&why, MCP_ENOMEM, 0, NULL, "out of memory");
    size_t pages = 0;
    while (rc == MCP_OK) {
        json_t *page = NULL;
        /* A server that hands out new cursors for ever would hold the call
         * (and grow the list) for ever: no real list is this long. */
        if (pages++ == CLIENT_MAX_LIST_PAGES) {
            rc = mcp_error_set(&why, MCP_ELIMIT, 0, NULL,
                               "%s: the server is still paging after %d pages", method,
                               CLIENT_MAX_LIST_PAGES);
            break;
        }
        rc = client_list_page(c, method, cursor, restarted ? &fresh : opts, &page, &why);
        if (cursor_refused(rc, cursor, &why) && !restarted) {
            client_log(c, MCP_LOG_INFO, "%s refused the cursor \"%s\" (%s); listing again "
                                        "from the first page", method, cursor, why.message);
            drop_pages(c, method);
            restarted = true;
            fresh.bypass_cache = true;
            json_array_clear(items);
            json_object_clear(seen);
            free(cursor);
            cursor = NULL;
            pages = 0;
            mcp_error_clear(&why);
            rc = MCP_OK;
            continue;
        }
        if (rc == MCP_OK && check)
            rc = check(page, &why);
        if (rc != MCP_OK) {
            json_decref(page);
            break;
        }
        json_t *list = json_object_get(page, key);
        if (!json_is_array(list) || json_array_extend(items, list) != 0)
            rc = mcp_error_set(&why, MCP_EPROTO, 0, NULL, "%s result has no %s array", method,
                               key);
        /* An empty string is a valid cursor; only absence ends the list. */
        const char *next = json_string_value(json_object_get(page, "nextCursor"));
        free(cursor);
        cursor = next ? strdup(next) : NULL;
        json_decref(page);
        if (rc != MCP_OK || !next)
            break;
        if (!cursor)
            rc = mcp_error_set(&why, MCP_ENOMEM, 0, NULL, "out of memory");
        else if (json_object_get(seen, cursor))
            rc = mcp_error_set(&why, MCP_EPROTO, 0, NULL, "%s repeats the cursor \"%s\"",
                               method, cursor);
        else
            json_object_set_new(seen, cursor, json_true());
    }
    free(cursor);
    json_decref(seen);
    if (rc != MCP_OK) {
        json_decref(items);
        if (err)
            mcp_error_move(err, &why);
    } else {
        *items_out = items;
    }
    mcp_error_clear(&why);
    return rc;
}

int client_list_all(mcp_client_t *c, const char *method, const char *key,
                    const mcp_request_options_t *opts, json_t **items_out, mcp_error_t *err)
{
    return client_list_all_checked(c, method, key, NULL, opts, items_out, err);
}

int mcp_client_discover(mcp_client_t *client, const mcp_request_options_t *opts,
                        json_t **result_out, mcp_error_t *err)
{
    CHECK_CALL(client, result_out, err);
    return client_call(client, "server/discover", NULL, opts, result_out, err);
}

int mcp_client_list_tools(mcp_client_t *client, const char *cursor,
                          const mcp_request_options_t *opts, json_t **result_out,
                          mcp_error_t *err)
{
    return client_list_page(client, "tools/list", cursor, opts, result_out, err);
}

int mcp_client_list_tools_all(mcp_client_t *client, const mcp_request_options_t *opts,
                              json_t **tools_out, mcp_error_t *err)
{
    return client_list_all(client, "tools/list", "tools", opts, tools_out, err);
}

int mcp_client_list_resources(mcp_client_t *client, const char *cursor,
                              const mcp_request_options_t *opts, json_t **result_out,
                              mcp_error_t *err)
{
    return client_list_page(client, "resources/list", cursor, opts, result_out, err);
}

int mcp_client_list_resources_all(mcp_client_t *client, const mcp_request_options_t *opts,
                                  json_t **resources_out, mcp_error_t *err)
{
    return client_list_all(client, "resources/list", "resources", opts, resources_out, err);
}

int mcp_client_list_resource_templates(mcp_client_t *client, const char *cursor,
                                       const mcp_request_options_t *opts, json_t **result_out,
                                       mcp_error_t *err)
{
    return client_list_page(client, "resources/templates/list", cursor, opts, result_out, err);
}

int mcp_client_list_resource_templates_all(mcp_client_t *client,
                                           const mcp_request_options_t *opts,
                                           json_t **templates_out, mcp_error_t *err)
{
    return client_list_all(client, "resources/templates/list", "resourceTemplates", opts,
                           templates_out, err);
}

int mcp_client_list_prompts(mcp_client_t *client, const char *cursor,
                            const mcp_request_options_t *opts, json_t **result_out,
                            mcp_error_t *err)
{
    return client_list_page(client, "prompts/list", cursor, opts, result_out, err);
}

int mcp_client_list_prompts_all(mcp_client_t *client, const mcp_request_options_t *opts,
                                json_t **prompts_out, mcp_error_t *err)
{
    return client_list_all(client, "prompts/list", "prompts", opts, prompts_out, err);
}

/* {"<name_key>": name, "arguments": arguments?} */
/* Why params holding `a` and `b` (either may be NULL) could not be built:
 * json_pack() fails for text that is not UTF-8, the caller's mistake, and
 * when out of memory, which is not. */
static int params_failure(mcp_error_t *err, const char *a, const char *b, const char *what)
{
    if ((a && !mcp_utf8_valid(a, strlen(a))) || (b && !mcp_utf8_valid(b, strlen(b))))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "%s not UTF-8", what);
    return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
}

static int named_call(mcp_client_t *c, const char *method, const char *name,
                      const json_t *arguments, const mcp_request_options_t *opts,
                      json_t **result_out, mcp_error_t *err)
{
    CHECK_CALL(c, result_out, err);
    if (!name)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "%s needs a name", method);
    if (arguments && !json_is_object(arguments))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "arguments must be an object");
    json_t *params = json_pack("{s:s}", "name", name);
    if (params && arguments && json_object_set(params, "arguments", (json_t *)arguments) != 0) {
        json_decref(params);
        params = NULL;
    }
    if (!params)
        return params_failure(err, name, NULL, "the name is");
    int rc = client_call(c, method, params, opts, result_out, err);
    json_decref(params);
    return rc;
}

int mcp_client_call_tool(mcp_client_t *client, const char *name, const json_t *arguments,
                         const mcp_request_options_t *opts, json_t **result_out,
                         mcp_error_t *err)
{
    return named_call(client, "tools/call", name, arguments, opts, result_out, err);
}

int mcp_client_get_prompt(mcp_client_t *client, const char *name, const json_t *arguments,
                          const mcp_request_options_t *opts, json_t **result_out,
                          mcp_error_t *err)
{
    return named_call(client, "prompts/get", name, arguments, opts, result_out, err);
}

int mcp_client_read_resource(mcp_client_t *client, const char *uri,
                             const mcp_request_options_t *opts, json_t **result_out,
                             mcp_error_t *err)
{
    CHECK_CALL(client, result_out, err);
    if (!uri)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the uri is missing");
    json_t *params = json_pack("{s:s}", "uri", uri);
    if (!params)
        return params_failure(err, uri, NULL, "the uri is");
    int rc = client_call(client, "resources/read", params, opts, result_out, err);
    json_decref(params);
    return rc;
}

int mcp_client_complete(mcp_client_t *client, const json_t *ref, const char *argument,
                        const char *value, const json_t *context,
                        const mcp_request_options_t *opts, json_t **result_out,
                        mcp_error_t *err)
{
    CHECK_CALL(client, result_out, err);
    if (!json_is_object(ref) || !argument || !value || (context && !json_is_object(context)))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "completion needs a ref object, an argument and a value");
    json_t *params = json_pack("{s:O, s:{s:s, s:s}}", "ref", ref, "argument", "name", argument,
                               "value", value);
    if (params && context &&
        json_object_set_new(params, "context", json_pack("{s:O}", "arguments", context)) != 0) {
        json_decref(params);
        params = NULL;
    }
    if (!params)
        return params_failure(err, argument, value, "argument or value");
    int rc = client_call(client, "completion/complete", params, opts, result_out, err);
    json_decref(params);
    return rc;
}

int mcp_client_request(mcp_client_t *client, const char *method, json_t *params_new,
                       const mcp_request_options_t *opts, json_t **result_out, mcp_error_t *err)
{
    if (result_out)
        *result_out = NULL;
    if (!client || !method || !result_out || (params_new && !json_is_object(params_new))) {
        json_decref(params_new);
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "client, method, result_out and object params are required");
    }
    int rc = client_call(client, method, params_new, opts, result_out, err);
    json_decref(params_new);
    return rc;
}
