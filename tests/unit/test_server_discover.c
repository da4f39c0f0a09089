/*
 * Server core, the methods it answers without user code: server/discover,
 * the four list methods with pagination, and what happens before any
 * method runs (parsing, the validation ladder, methods that are not
 * served) -- with the HTTP status the core hands the sink each time.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/request.h"
#include "mcp/server_core.h"
#include "mcp/version.h"

#include "capture_sink.h"
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

static mcp_server_t *new_server(const mcp_server_options_t *extra)
{
    mcp_server_options_t opts = extra ? *extra : (mcp_server_options_t){0};
    opts.name = "test-server";
    opts.version = "1.2.3";
    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(&opts, &err);
    if (!srv)
        fail_msg("mcp_server_new: %s", err.message);
    return srv;
}

static int tool_ok(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, "ok");
}

static int resource_ok(mcp_call_t *call, const char *uri, void *user)
{
    return mcp_call_add_resource_text(call, uri, "text/plain", "ok");
}

static int prompt_ok(mcp_call_t *call, void *user)
{
    return mcp_call_add_message(call, "user", mcp_content_text("ok"));
}

static int complete_nothing(mcp_call_t *call, mcp_completion_ref_kind_t kind, const char *name,
                            const char *argument, const char *value, const json_t *context,
                            void *user)
{
    return MCP_OK;
}

static void add_tool(mcp_server_t *srv, const char *name)
{
    mcp_error_t err = {0};
    if (mcp_server_add_tool(srv, &(mcp_tool_t){.name = name, .handler = tool_ok}, &err) != MCP_OK)
        fail_msg("add_tool %s: %s", name, err.message);
}

static void add_resource(mcp_server_t *srv, const char *uri)
{
    assert_int_equal(mcp_server_add_resource(srv, &(mcp_resource_t){.uri = uri, .name = uri,
                                                                     .handler = resource_ok},
                                             NULL),
                     MCP_OK);
}

static void add_template(mcp_server_t *srv, const char *tpl)
{
    assert_int_equal(
        mcp_server_add_resource_template(
            srv, &(mcp_resource_template_t){.uri_template = tpl, .name = tpl, .handler = resource_ok},
            NULL),
        MCP_OK);
}

static void add_prompt(mcp_server_t *srv, const char *name)
{
    assert_int_equal(
        mcp_server_add_prompt(srv, &(mcp_prompt_t){.name = name, .handler = prompt_ok}, NULL),
        MCP_OK);
}

/* A server offering one of everything. */
static mcp_server_t *full_server_with(mcp_legacy_mode_t legacy)
{
    mcp_server_t *srv = new_server(&(mcp_server_options_t){.legacy = legacy});
    add_tool(srv, "echo");
    add_resource(srv, "test://a");
    add_template(srv, "test://t/{x}");
    add_prompt(srv, "greet");
    mcp_server_set_completion(srv, complete_nothing, NULL);
    return srv;
}

static mcp_server_t *full_server(void)
{
    return full_server_with(MCP_LEGACY_SESSIONS);
}

static json_t *discover(mcp_server_t *srv)
{
    json_t *response = serve(srv, modern_request(1, "server/discover", NULL), NULL);
    expect_complete(response);
    return response;
}

static const json_t *capabilities_of(const json_t *response)
{
    return json_object_get(json_object_get(response, "result"), "capabilities");
}

/* ------------------------------------------------------------------ */
/* server/discover                                                     */
/* ------------------------------------------------------------------ */

static void test_discover_result(void **state)
{
    mcp_server_t *srv = new_server(
        &(mcp_server_options_t){.instructions = "Use echo.", .title = "Test", .description = "d"});
    int status = 0;
    json_t *response = serve(srv, modern_request(1, "server/discover", NULL), &status);
    const json_t *result = expect_complete(response);
    assert_int_equal(status, 200);

    /* supportedVersions: exactly the modern versions this build speaks. */
    size_t n;
    const char *const *modern = mcp_protocol_versions_modern(&n);
    const json_t *versions = json_object_get(result, "supportedVersions");
    assert_int_equal(json_array_size(versions), n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(json_string_value(json_array_get(versions, i)), modern[i]);
    assert_string_equal(json_string_value(json_array_get(versions, 0)), "2026-07-28");

    assert_string_equal(json_string_value(json_object_get(result, "instructions")), "Use echo.");
    assert_int_equal(json_integer_value(json_object_get(result, "ttlMs")), 60000);
    assert_string_equal(json_string_value(json_object_get(result, "cacheScope")), "private");

    const json_t *info =
        json_object_get(json_object_get(result, "_meta"), MCP_META_SERVER_INFO);
    assert_string_equal(json_string_value(json_object_get(info, "name")), "test-server");
    assert_string_equal(json_string_value(json_object_get(info, "version")), "1.2.3");
    assert_string_equal(json_string_value(json_object_get(info, "title")), "Test");
    assert_string_equal(json_string_value(json_object_get(info, "description")), "d");
    /* Identity lives only in _meta since 2026-07-28. */
    assert_null(json_object_get(result, "serverInfo"));
    json_decref(response);
    mcp_server_free(srv);
}

static void test_discover_without_instructions(void **state)
{
    mcp_server_t *srv = new_server(NULL);
    json_t *response = discover(srv);
    assert_null(json_object_get(json_object_get(response, "result"), "instructions"));
    json_decref(response);
    mcp_server_free(srv);
}

/* Capabilities are derived from what is registered, now. */
static void test_discover_capabilities_follow_registry(void **state)
{
    mcp_server_t *srv = new_server(NULL);
    json_t *response = discover(srv);
    const json_t *caps = capabilities_of(response);
    assert_null(json_object_get(caps, "tools"));
    assert_null(json_object_get(caps, "resources"));
    assert_null(json_object_get(caps, "prompts"));
    assert_null(json_object_get(caps, "completions"));
    json_decref(response);

    add_tool(srv, "echo");
    response = discover(srv);
    assert_true(json_is_object(json_object_get(capabilities_of(response), "tools")));
    assert_null(json_object_get(capabilities_of(response), "resources"));
    json_decref(response);

    /* A template alone makes the server offer resources. */
    add_template(srv, "test://t/{x}");
    response = discover(srv);
    assert_true(json_is_object(json_object_get(capabilities_of(response), "resources")));
    json_decref(response);

    add_prompt(srv, "greet");
    mcp_server_set_completion(srv, complete_nothing, NULL);
    response = discover(srv);
    caps = capabilities_of(response);
    assert_true(json_is_object(json_object_get(caps, "prompts")));
    assert_true(json_is_object(json_object_get(caps, "completions")));
    json_decref(response);

    /* Taking things away takes the capability away. */
    assert_int_equal(mcp_server_remove_tool(srv, "echo"), MCP_OK);
    assert_int_equal(mcp_server_remove_resource_template(srv, "test://t/{x}"), MCP_OK);
    assert_int_equal(mcp_server_remove_prompt(srv, "greet"), MCP_OK);
    mcp_server_set_completion(srv, NULL, NULL);
    response = discover(srv);
    caps = capabilities_of(response);
    assert_null(json_object_get(caps, "tools"));
    assert_null(json_object_get(caps, "resources"));
    assert_null(json_object_get(caps, "prompts"));
    assert_null(json_object_get(caps, "completions"));
    json_decref(response);
    mcp_server_free(srv);
}

static void test_cache_hint_options(void **state)
{
    struct {
        int64_t ttl;
        const char *scope;
        int64_t want_ttl;
        const char *want_scope;
    } rows[] = {
        {0, NULL, 60000, "private"},
        {5000, "public", 5000, "public"},
        {MCP_CACHE_TTL_NONE, "private", 0, "private"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_server_t *srv = new_server(
            &(mcp_server_options_t){.cache_ttl_ms = rows[i].ttl, .cache_scope = rows[i].scope});
        add_tool(srv, "echo");
        const char *methods[] = {"server/discover", "tools/list"};
        for (size_t m = 0; m < 2; m++) {
            json_t *response = serve(srv, modern_request(1, methods[m], NULL), NULL);
            const json_t *result = expect_complete(response);
            assert_int_equal(json_integer_value(json_object_get(result, "ttlMs")),
                             rows[i].want_ttl);
            assert_string_equal(json_string_value(json_object_get(result, "cacheScope")),
                                rows[i].want_scope);
            json_decref(response);
        }
        mcp_server_free(srv);
    }
    assert_null(mcp_server_new(&(mcp_server_options_t){.name = "n", .version = "1",
                                                       .cache_scope = "shared"},
                               NULL));
}

static void test_omit_server_info(void **state)
{
    mcp_server_t *srv = new_server(&(mcp_server_options_t){.omit_server_info_meta = true});
    json_t *response = discover(srv);
    assert_null(json_object_get(json_object_get(response, "result"), "_meta"));
    json_decref(response);
    mcp_server_free(srv);
}

/* The options' extensions are advertised as given; without any, and
 * without task tools, there is no "extensions" member at all. */
static void test_discover_extensions_option(void **state)
{
    mcp_server_t *srv = new_server(NULL);
    json_t *response = discover(srv);
    assert_null(json_object_get(capabilities_of(response), "extensions"));
    json_decref(response);
    mcp_server_free(srv);

    srv = new_server(&(mcp_server_options_t){
        .extensions = "{\"" MCP_EXTENSION_OAUTH_CLIENT_CREDENTIALS "\":{},\"x.example/e\":{\"v\":1}}"});
    response = discover(srv);
    json_t *want = json_pack("{s:{}, s:{s:i}}", MCP_EXTENSION_OAUTH_CLIENT_CREDENTIALS,
                             "x.example/e", "v", 1);
    assert_true(json_equal(json_object_get(capabilities_of(response), "extensions"), want));
    json_decref(want);
    json_decref(response);
    mcp_server_free(srv);

    static const char *const bad[] = {"[]", "{\"x\":1}", "{\"\":{}}", "{\"a\":{},\"a\":{}}", "{"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_t err = {0};
        assert_null(mcp_server_new(
            &(mcp_server_options_t){.name = "n", .version = "1", .extensions = bad[i]}, &err));
        assert_int_equal(err.rc, MCP_EINVAL);
        assert_int_equal(err.code, 0); /* a local mistake: no JSON-RPC error */
        mcp_error_clear(&err);
    }
}

static void test_server_new_checks_options(void **state)
{
    mcp_error_t err = {0};
    assert_null(mcp_server_new(NULL, &err));
    assert_null(mcp_server_new(&(mcp_server_options_t){.name = "n"}, &err));
    assert_null(mcp_server_new(&(mcp_server_options_t){.version = "1"}, &err));
    assert_null(
        mcp_server_new(&(mcp_server_options_t){.name = "n", .version = "1", .icons = "{}"}, &err));
    assert_int_equal(err.rc, MCP_EINVAL);
    assert_int_equal(err.code, 0);
    mcp_error_clear(&err);
    assert_null(mcp_server_new(
        &(mcp_server_options_t){.name = "n", .version = "1", .state_ttl_ms = -1}, &err));
    assert_int_equal(err.rc, MCP_EINVAL);
    assert_non_null(strstr(err.message, "state_ttl_ms"));
    mcp_error_clear(&err);

    mcp_server_t *srv = mcp_server_new(
        &(mcp_server_options_t){.name = "n", .version = "1",
                                .icons = "[{\"src\":\"https://example.com/i.png\"}]",
                                .website_url = "https://example.com"},
        &err);
    assert_non_null(srv);
    json_t *response = discover(srv);
    const json_t *info = json_object_get(
        json_object_get(json_object_get(response, "result"), "_meta"), MCP_META_SERVER_INFO);
    assert_int_equal(json_array_size(json_object_get(info, "icons")), 1);
    assert_string_equal(json_string_value(json_object_get(info, "websiteUrl")),
                        "https://example.com");
    json_decref(response);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Methods that are not served                                         */
/* ------------------------------------------------------------------ */

static json_t *request_for(const char *method)
{
    json_t *params = json_object();
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        json_object_set_new(params, "name", json_string("echo"));
    if (strcmp(method, "resources/read") == 0)
        json_object_set_new(params, "uri", json_string("test://a"));
    if (strcmp(method, "completion/complete") == 0)
        json_object_set_new(params, "ref",
                            json_pack("{s:s, s:s}", "type", "ref/prompt", "name", "greet"));
    return modern_request(3, method, params);
}

/* Over HTTP (with the headers rung 1 wants): the answer and its status. */
static json_t *serve_http(mcp_server_t *srv, json_t *request_new, int *status)
{
    modern_http_headers_t h;
    modern_http_headers_init(&h, request_new);
    mcp_request_context_t ctx = modern_http_context(&h, NULL);
    json_t *response = serve_with(srv, NULL, &ctx, request_new, status);
    modern_http_headers_cleanup(&h);
    return response;
}

static void test_unregistered_features_are_not_found(void **state)
{
    const char *methods[] = {"tools/list", "tools/call", "resources/list",
                             "resources/templates/list", "resources/read", "prompts/list",
                             "prompts/get", "completion/complete", "subscriptions/listen"};
    mcp_server_t *srv = new_server(NULL);
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        int status = 0;
        json_t *response = serve(srv, request_for(methods[i]), &status);
        expect_error(response, MCP_METHOD_NOT_FOUND);
        assert_int_equal(status, 404);
        json_decref(response);

        response = serve_http(srv, request_for(methods[i]), &status);
        expect_error(response, MCP_METHOD_NOT_FOUND);
        assert_int_equal(status, 404);
        json_decref(response);
    }
    mcp_server_free(srv);
}

/* Methods the 2026-07-28 revision removed, and ones that never existed,
 * are -32601 on the modern path even on a server that offers everything. */
static void test_removed_methods_are_not_found(void **state)
{
    const char *methods[] = {"initialize", "ping", "logging/setLevel", "resources/subscribe",
                             "resources/unsubscribe", "tasks/list", "no/such/method",
                             "tools/List"};
    mcp_server_t *srv = full_server();
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        int status = 0;
        json_t *response = serve(srv, modern_request(9, methods[i], NULL), &status);
        const json_t *error = expect_error(response, MCP_METHOD_NOT_FOUND);
        assert_null(json_object_get(error, "data"));
        assert_int_equal(json_integer_value(json_object_get(response, "id")), 9);
        assert_int_equal(status, 404);
        json_decref(response);
    }
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Lists and pagination                                                */
/* ------------------------------------------------------------------ */

typedef struct list_kind {
    const char *method;
    const char *member; /* the array in the result */
    const char *key;    /* what identifies an item */
    void (*add)(mcp_server_t *srv, const char *key);
    int (*remove)(mcp_server_t *srv, const char *key);
    const char *format; /* printf format building key i */
} list_kind_t;

static const list_kind_t kinds[] = {
    {"tools/list", "tools", "name", add_tool, mcp_server_remove_tool, "tool_%02d"},
    {"prompts/list", "prompts", "name", add_prompt, mcp_server_remove_prompt, "prompt_%02d"},
    {"resources/list", "resources", "uri", add_resource, mcp_server_remove_resource,
     "test://r/%02d"},
    {"resources/templates/list", "resourceTemplates", "uriTemplate", add_template,
     mcp_server_remove_resource_template, "test://t%02d/{x}"},
};

/* One page: the request with an optional cursor, the result checked. */
static json_t *list_page(mcp_server_t *srv, const list_kind_t *k, const char *cursor)
{
    json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL;
    json_t *response = serve(srv, modern_request(5, k->method, params), NULL);
    const json_t *result = expect_complete(response);
    assert_true(json_is_array(json_object_get(result, k->member)));
    /* Each page is cacheable on its own (digest 6). */
    assert_true(json_is_integer(json_object_get(result, "ttlMs")));
    assert_string_equal(json_string_value(json_object_get(result, "cacheScope")), "private");
    assert_non_null(json_object_get(json_object_get(result, "_meta"), MCP_META_SERVER_INFO));
    return response;
}

/* Follows nextCursor to the end; returns every key in order (new array). */
static json_t *list_all(mcp_server_t *srv, const list_kind_t *k, size_t *pages)
{
    json_t *keys = json_array();
    char *cursor = NULL;
    *pages = 0;
    do {
        json_t *response = list_page(srv, k, cursor);
        const json_t *result = json_object_get(response, "result");
        free(cursor);
        cursor = NULL;
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(result, k->member), i, item)
            json_array_append(keys, json_object_get(item, k->key));
        const json_t *next = json_object_get(result, "nextCursor");
        if (next)
            cursor = strdup(json_string_value(next));
        json_decref(response);
        (*pages)++;
        assert_true(*pages < 100);
    } while (cursor);
    return keys;
}

/* Registers keys 0..n-1 in a scrambled order: n-1, 0, n-2, 1, ... */
static void add_scrambled(mcp_server_t *srv, const list_kind_t *k, int n)
{
    for (int j = 0; j < n; j++) {
        char key[64];
        snprintf(key, sizeof key, k->format, j % 2 ? j / 2 : n - 1 - j / 2);
        k->add(srv, key);
    }
}

static void test_lists_are_sorted_and_complete(void **state)
{
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
        const list_kind_t *k = &kinds[ki];
        mcp_server_t *srv = new_server(NULL);
        add_scrambled(srv, k, 5);
        json_t *response = list_page(srv, k, NULL);
        const json_t *items = json_object_get(json_object_get(response, "result"), k->member);
        assert_int_equal(json_array_size(items), 5);
        for (int i = 0; i < 5; i++) {
            char key[64];
            snprintf(key, sizeof key, k->format, i);
            assert_string_equal(json_string_value(json_object_get(json_array_get(items, i), k->key)),
                                key);
        }
        /* Everything fit: no cursor. */
        assert_null(json_object_get(json_object_get(response, "result"), "nextCursor"));
        json_decref(response);
        mcp_server_free(srv);
    }
}

static void test_pagination_walks_every_item_once(void **state)
{
    const size_t page_sizes[] = {1, 2, 3, 7};
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
        for (size_t p = 0; p < sizeof page_sizes / sizeof page_sizes[0]; p++) {
            const list_kind_t *k = &kinds[ki];
            mcp_server_t *srv = new_server(&(mcp_server_options_t){.page_size = page_sizes[p]});
            add_scrambled(srv, k, 7);
            size_t pages;
            json_t *keys = list_all(srv, k, &pages);
            assert_int_equal(json_array_size(keys), 7);
            assert_int_equal(pages, (7 + page_sizes[p] - 1) / page_sizes[p]);
            for (int i = 0; i < 7; i++) {
                char key[64];
                snprintf(key, sizeof key, k->format, i);
                assert_string_equal(json_string_value(json_array_get(keys, i)), key);
            }
            json_decref(keys);
            mcp_server_free(srv);
        }
    }
}

/* The default page size is 100. */
static void test_default_page_size(void **state)
{
    mcp_server_t *srv = new_server(NULL);
    add_scrambled(srv, &kinds[0], 100);
    add_tool(srv, "zz_extra");
    size_t pages;
    json_t *keys = list_all(srv, &kinds[0], &pages);
    assert_int_equal(json_array_size(keys), 101);
    assert_int_equal(pages, 2);
    json_decref(keys);
    mcp_server_free(srv);
}

static void test_cursor_survives_registry_changes(void **state)
{
    mcp_server_t *srv = new_server(&(mcp_server_options_t){.page_size = 2});
    add_scrambled(srv, &kinds[0], 6); /* tool_00 .. tool_05 */
    json_t *first = list_page(srv, &kinds[0], NULL);
    char *cursor = strdup(
        json_string_value(json_object_get(json_object_get(first, "result"), "nextCursor")));
    json_decref(first);

    /* Between pages: the last item returned goes away, a new one appears
     * before the cursor and one after it. */
    assert_int_equal(mcp_server_remove_tool(srv, "tool_01"), MCP_OK);
    add_tool(srv, "tool_00a");
    add_tool(srv, "tool_02a");

    json_t *second = list_page(srv, &kinds[0], cursor);
    const json_t *items = json_object_get(json_object_get(second, "result"), "tools");
    assert_int_equal(json_array_size(items), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 0), "name")),
                        "tool_02");
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 1), "name")),
                        "tool_02a");
    json_decref(second);
    free(cursor);
    mcp_server_free(srv);
}

static void test_invalid_cursor(void **state)
{
    const char *bad[] = {"", "k", "x6162", "k6", "kzz", "k0061", "k6G", "k6162 ", "K6162"};
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
        mcp_server_t *srv = new_server(NULL);
        add_scrambled(srv, &kinds[ki], 3);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            int status = 0;
            json_t *response = serve(
                srv, modern_request(1, kinds[ki].method, json_pack("{s:s}", "cursor", bad[i])),
                &status);
            expect_error(response, MCP_INVALID_PARAMS);
            /* Raised by the method, not the ladder: the status of a result. */
            assert_int_equal(status, 200);
            json_decref(response);
        }
        /* A cursor must be a string. */
        json_t *response = serve(
            srv, modern_request(1, kinds[ki].method, json_pack("{s:i}", "cursor", 1)), NULL);
        expect_error(response, MCP_INVALID_PARAMS);
        json_decref(response);
        mcp_server_free(srv);
    }
}

/* Cursors are opaque but not bound to one server object: one issued by a
 * server with small pages continues correctly on a server whose page size
 * is as large as it gets. */
static void test_cursor_with_unbounded_page_size(void **state)
{
    mcp_server_t *small = new_server(&(mcp_server_options_t){.page_size = 1});
    mcp_server_t *huge = new_server(&(mcp_server_options_t){.page_size = SIZE_MAX});
    add_scrambled(small, &kinds[0], 3);
    add_scrambled(huge, &kinds[0], 3);

    json_t *first = list_page(small, &kinds[0], NULL);
    const char *cursor =
        json_string_value(json_object_get(json_object_get(first, "result"), "nextCursor"));
    assert_non_null(cursor);

    json_t *rest = list_page(huge, &kinds[0], cursor);
    const json_t *result = json_object_get(rest, "result");
    const json_t *items = json_object_get(result, "tools");
    assert_int_equal(json_array_size(items), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(items, 0), "name")),
                        "tool_01");
    assert_null(json_object_get(result, "nextCursor"));
    json_decref(rest);
    json_decref(first);
    mcp_server_free(small);
    mcp_server_free(huge);
}

/* ------------------------------------------------------------------ */
/* Before any method runs: parsing and the validation ladder           */
/* ------------------------------------------------------------------ */

/* Submits raw bytes; returns the response (or NULL) and its status. */
static json_t *serve_bytes(mcp_server_t *srv, const char *bytes, mcp_transport_kind_t transport,
                           int *status, mcp_out_kind_t *last_kind)
{
    capture_sink_t cap;
    capture_init(&cap);
    mcp_request_context_t ctx = {.transport = transport};
    assert_int_equal(
        mcp_server_submit(srv, NULL, bytes, strlen(bytes), &ctx, &cap.sink, NULL), MCP_OK);
    assert_true(capture_wait_released(&cap, CAPTURE_PATIENCE_MS));
    capture_assert_done(&cap);
    expect_all_schema_valid(&cap, NULL);
    json_t *response = json_incref((json_t *)capture_response(&cap, NULL));
    *status = 0;
    *last_kind = MCP_OUT_NOTIFICATION;
    if (capture_count(&cap) > 0) {
        capture_item_t last = capture_item(&cap, capture_count(&cap) - 1);
        *status = last.status;
        *last_kind = last.kind;
    }
    capture_cleanup(&cap);
    return response;
}

static void test_unreadable_messages(void **state)
{
    struct {
        const char *bytes;
        int code;
        bool has_id;
    } rows[] = {
        {"{", MCP_PARSE_ERROR, false},
        {"not json", MCP_PARSE_ERROR, false},
        {"", MCP_PARSE_ERROR, false},
        {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}]", MCP_INVALID_REQUEST, false},
        {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"tools/list\"}", MCP_INVALID_REQUEST, true},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":[]}",
         MCP_INVALID_REQUEST, true},
        {"42", MCP_INVALID_REQUEST, false},
    };
    mcp_server_t *srv = full_server();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        for (int t = 0; t < 2; t++) {
            int status;
            mcp_out_kind_t kind;
            json_t *response = serve_bytes(srv, rows[i].bytes,
                                           t ? MCP_TRANSPORT_HTTP : MCP_TRANSPORT_STDIO, &status,
                                           &kind);
            expect_error(response, rows[i].code);
            assert_int_equal(json_object_get(response, "id") != NULL, rows[i].has_id);
            assert_int_equal(status, 400);
            json_decref(response);
        }
    }
    mcp_server_free(srv);
}

/* A response from the client answers nothing on a modern-only server. */
static void test_client_responses_are_refused(void **state)
{
    mcp_server_t *srv = full_server_with(MCP_LEGACY_REJECT);
    const char *messages[] = {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}"};
    for (size_t i = 0; i < 2; i++) {
        int status;
        mcp_out_kind_t kind;
        json_t *response = serve_bytes(srv, messages[i], MCP_TRANSPORT_HTTP, &status, &kind);
        assert_null(response);
        assert_int_equal(kind, MCP_OUT_ACCEPTED);
        assert_int_equal(status, 400);
    }
    mcp_server_free(srv);
}

/* Rung 2: the required _meta envelope (stdio, where there are no headers). */
static void test_envelope_faults(void **state)
{
    struct {
        const char *meta; /* JSON text of _meta */
        const char *key;  /* data.envelope.key */
    } rows[] = {
        {"{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}",
         MCP_META_CLIENT_CAPABILITIES},
        {"{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
         "\"io.modelcontextprotocol/clientCapabilities\":[]}",
         MCP_META_CLIENT_CAPABILITIES},
        {"{\"io.modelcontextprotocol/protocolVersion\":7,"
         "\"io.modelcontextprotocol/clientCapabilities\":{}}",
         MCP_META_PROTOCOL_VERSION},
        {"{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
         "\"io.modelcontextprotocol/clientCapabilities\":{},"
         "\"io.modelcontextprotocol/clientInfo\":\"me\"}",
         MCP_META_CLIENT_INFO},
        {"{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
         "\"io.modelcontextprotocol/clientCapabilities\":{},"
         "\"io.modelcontextprotocol/logLevel\":\"verbose\"}",
         MCP_META_LOG_LEVEL},
    };
    mcp_server_t *srv = full_server();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *params = json_pack("{s:o}", "_meta", json_loads(rows[i].meta, 0, NULL));
        int status = 0;
        json_t *response = serve(srv, modern_request(4, "tools/list", params), &status);
        const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(json_object_get(error, "data"), "envelope"), "key")),
                            rows[i].key);
        assert_int_equal(status, 400);
        json_decref(response);
    }
    mcp_server_free(srv);
}

static void test_unsupported_version(void **state)
{
    mcp_server_t *srv = full_server();
    for (int http = 0; http < 2; http++) {
        json_t *request = modern_request(2, "tools/list", NULL);
        json_object_set_new(modern_meta(request), MCP_META_PROTOCOL_VERSION,
                            json_string("2099-01-01"));
        int status = 0;
        json_t *response =
            http ? serve_http(srv, request, &status) : serve(srv, request, &status);
        const json_t *error = expect_error(response, MCP_UNSUPPORTED_PROTOCOL_VERSION);
        const json_t *data = json_object_get(error, "data");
        assert_string_equal(json_string_value(json_object_get(data, "requested")), "2099-01-01");
        assert_string_equal(json_string_value(json_array_get(json_object_get(data, "supported"), 0)),
                            "2026-07-28");
        assert_int_equal(status, 400);
        json_decref(response);
    }
    mcp_server_free(srv);
}

/* A legacy request (no modern claim) is refused with -32022 naming the
 * versions this server speaks: the one diagnostic a legacy client can act
 * on (digest 1.5). */
static void test_legacy_requests_are_refused(void **state)
{
    mcp_server_t *srv = full_server_with(MCP_LEGACY_REJECT);
    const char *initialize = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                             "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                             "\"clientInfo\":{\"name\":\"old\",\"version\":\"1\"}}}";
    int status;
    mcp_out_kind_t kind;
    json_t *response = serve_bytes(srv, initialize, MCP_TRANSPORT_STDIO, &status, &kind);
    const json_t *error = expect_error(response, MCP_UNSUPPORTED_PROTOCOL_VERSION);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(error, "data"), "requested")),
        "2025-06-18");
    assert_int_equal(status, 400);
    json_decref(response);

    response = serve_bytes(srv, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
                           MCP_TRANSPORT_STDIO, &status, &kind);
    expect_error(response, MCP_UNSUPPORTED_PROTOCOL_VERSION);
    json_decref(response);
    mcp_server_free(srv);
}

/* Rung 1 over HTTP: the standard headers must agree with the body. */
static void test_http_header_rung(void **state)
{
    mcp_server_t *srv = full_server();
    struct {
        const char *method;
        const char *remove; /* header to drop, or NULL */
        const char *add_name, *add_value;
        int code, status;
    } rows[] = {
        {"tools/list", NULL, NULL, NULL, 0, 200},
        {"tools/call", NULL, NULL, NULL, 0, 200},
        {"tools/list", MCP_HEADER_PROTOCOL_VERSION, NULL, NULL, MCP_HEADER_MISMATCH, 400},
        {"tools/list", MCP_HEADER_METHOD, NULL, NULL, MCP_HEADER_MISMATCH, 400},
        {"tools/call", MCP_HEADER_NAME, NULL, NULL, MCP_HEADER_MISMATCH, 400},
        {"tools/list", MCP_HEADER_METHOD, MCP_HEADER_METHOD, "prompts/list", MCP_HEADER_MISMATCH,
         400},
        {"tools/call", MCP_HEADER_NAME, MCP_HEADER_NAME, "other", MCP_HEADER_MISMATCH, 400},
        {"tools/list", MCP_HEADER_PROTOCOL_VERSION, MCP_HEADER_PROTOCOL_VERSION, "2025-11-25",
         MCP_HEADER_MISMATCH, 400},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *request = request_for(rows[i].method);
        modern_http_headers_t h;
        modern_http_headers_init(&h, request);
        if (rows[i].remove)
            modern_http_headers_remove(&h, rows[i].remove);
        if (rows[i].add_name)
            modern_http_headers_add(&h, rows[i].add_name, rows[i].add_value);
        mcp_request_context_t ctx = modern_http_context(&h, NULL);
        int status = 0;
        json_t *response = serve_with(srv, NULL, &ctx, request, &status);
        if (rows[i].code)
            expect_error(response, rows[i].code);
        else
            expect_complete(response);
        assert_int_equal(status, rows[i].status);
        json_decref(response);
        modern_http_headers_cleanup(&h);
    }
    mcp_server_free(srv);
}

/* A modern header on a body without _meta is a broken modern request. */
static void test_http_modern_header_without_envelope(void **state)
{
    mcp_server_t *srv = full_server();
    json_t *request = json_pack("{s:s, s:i, s:s, s:{}}", "jsonrpc", "2.0", "id", 1, "method",
                                "tools/list", "params");
    modern_http_headers_t h;
    modern_http_headers_init(&h, request);
    mcp_request_context_t ctx = modern_http_context(&h, NULL);
    int status = 0;
    json_t *response = serve_with(srv, NULL, &ctx, request, &status);
    expect_error(response, MCP_INVALID_PARAMS);
    assert_int_equal(status, 400);
    json_decref(response);
    modern_http_headers_cleanup(&h);
    mcp_server_free(srv);
}

/* Notifications are accepted (HTTP 202) and never answered. */
static void test_notifications_are_accepted(void **state)
{
    mcp_server_t *srv = full_server();
    json_t *note = json_pack("{s:s, s:s, s:{s:{s:s, s:{}}}}", "jsonrpc", "2.0", "method",
                             "notifications/whatever", "params", "_meta",
                             MCP_META_PROTOCOL_VERSION, "2026-07-28",
                             MCP_META_CLIENT_CAPABILITIES);
    modern_http_headers_t h;
    modern_http_headers_init(&h, note);
    mcp_request_context_t ctx = modern_http_context(&h, NULL);
    int status = 0;
    json_t *response = serve_with(srv, NULL, &ctx, json_incref(note), &status);
    assert_null(response);
    assert_int_equal(status, 202);

    /* A header that disagrees still refuses it, with an id-less error. */
    modern_http_headers_remove(&h, MCP_HEADER_METHOD);
    modern_http_headers_add(&h, MCP_HEADER_METHOD, "notifications/other");
    response = serve_with(srv, NULL, &ctx, json_incref(note), &status);
    expect_error(response, MCP_HEADER_MISMATCH);
    assert_null(json_object_get(response, "id"));
    assert_int_equal(status, 400);
    json_decref(response);

    /* On stdio a notification is never answered, good or bad. */
    response = serve(srv, json_incref(note), &status);
    assert_null(response);
    modern_http_headers_cleanup(&h);
    json_decref(note);
    mcp_server_free(srv);
}

/* String and integer ids are echoed exactly. */
static void test_ids_are_echoed(void **state)
{
    mcp_server_t *srv = full_server();
    json_t *response = serve(srv, modern_request_sid("abc-1", "tools/list", NULL), NULL);
    expect_complete(response);
    assert_string_equal(json_string_value(json_object_get(response, "id")), "abc-1");
    json_decref(response);
    response = serve(srv, modern_request(9007199254740991LL, "tools/list", NULL), NULL);
    assert_int_equal(json_integer_value(json_object_get(response, "id")), 9007199254740991LL);
    json_decref(response);
    mcp_server_free(srv);
}

static void test_submit_argument_checks(void **state)
{
    mcp_server_t *srv = full_server();
    capture_sink_t cap;
    capture_init(&cap);
    mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO};
    mcp_exchange_t *ex = (mcp_exchange_t *)&cap; /* must be reset to NULL */
    assert_int_equal(mcp_server_submit(NULL, NULL, "{}", 2, &ctx, &cap.sink, &ex), MCP_EINVAL);
    assert_null(ex);
    assert_int_equal(mcp_server_submit(srv, NULL, "{}", 2, NULL, &cap.sink, NULL), MCP_EINVAL);
    assert_int_equal(mcp_server_submit(srv, NULL, "{}", 2, &ctx, NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_server_submit(srv, NULL, NULL, 2, &ctx, &cap.sink, NULL), MCP_EINVAL);
    /* The sink was never taken. */
    assert_int_equal(capture_count(&cap), 0);
    assert_false(capture_released(&cap));
    capture_cleanup(&cap);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discover_result),
        cmocka_unit_test(test_discover_without_instructions),
        cmocka_unit_test(test_discover_capabilities_follow_registry),
        cmocka_unit_test(test_cache_hint_options),
        cmocka_unit_test(test_omit_server_info),
        cmocka_unit_test(test_discover_extensions_option),
        cmocka_unit_test(test_server_new_checks_options),
        cmocka_unit_test(test_unregistered_features_are_not_found),
        cmocka_unit_test(test_removed_methods_are_not_found),
        cmocka_unit_test(test_lists_are_sorted_and_complete),
        cmocka_unit_test(test_pagination_walks_every_item_once),
        cmocka_unit_test(test_default_page_size),
        cmocka_unit_test(test_cursor_survives_registry_changes),
        cmocka_unit_test(test_invalid_cursor),
        cmocka_unit_test(test_cursor_with_unbounded_page_size),
        cmocka_unit_test(test_unreadable_messages),
        cmocka_unit_test(test_client_responses_are_refused),
        cmocka_unit_test(test_envelope_faults),
        cmocka_unit_test(test_unsupported_version),
        cmocka_unit_test(test_legacy_requests_are_refused),
        cmocka_unit_test(test_http_header_rung),
        cmocka_unit_test(test_http_modern_header_without_envelope),
        cmocka_unit_test(test_notifications_are_accepted),
        cmocka_unit_test(test_ids_are_echoed),
        cmocka_unit_test(test_submit_argument_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
