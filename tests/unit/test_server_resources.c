/*
 * Server core, resources: resources/list and resources/templates/list
 * definitions, resources/read of static resources and through templates
 * (variables, precedence), cache hints, and "not found" in each of its
 * forms (-32602 with the uri in data, never empty contents).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/errors.h"
#include "mcp/request.h"
#include "mcp/server_core.h"

#include "capture_sink.h"
#include "modern_request.h"
#include "schema_check.h"
#include "server_expect.h"

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

static mcp_server_t *new_server(void)
{
    mcp_server_t *srv =
        mcp_server_new(&(mcp_server_options_t){.name = "res-test", .version = "1"}, NULL);
    assert_non_null(srv);
    return srv;
}

/* Answers with one text content naming the handler (`user`) and the URI. */
static int read_named(mcp_call_t *call, const char *uri, void *user)
{
    char text[512];
    snprintf(text, sizeof text, "%s:%s", (const char *)user, uri);
    return mcp_call_add_resource_text(call, uri, "text/plain", text);
}

static void add_resource(mcp_server_t *srv, const mcp_resource_t *res)
{
    mcp_error_t err = {0};
    if (mcp_server_add_resource(srv, res, &err) != MCP_OK)
        fail_msg("add_resource %s: %s", res->uri, err.message);
}

static void add_template(mcp_server_t *srv, const char *tpl, const char *who)
{
    mcp_error_t err = {0};
    if (mcp_server_add_resource_template(
            srv,
            &(mcp_resource_template_t){.uri_template = tpl, .name = who, .handler = read_named,
                                       .user = (void *)who},
            &err) != MCP_OK)
        fail_msg("add_resource_template %s: %s", tpl, err.message);
}

static json_t *read_request(const char *uri)
{
    return modern_request(1, "resources/read", json_pack("{s:s}", "uri", uri));
}

static json_t *read_uri(mcp_server_t *srv, const char *uri, int *status)
{
    return serve(srv, read_request(uri), status);
}

/* The text of the only content of a read. */
static const char *read_text(const json_t *response)
{
    const json_t *contents = json_object_get(expect_complete(response), "contents");
    assert_int_equal(json_array_size(contents), 1);
    return json_string_value(json_object_get(json_array_get(contents, 0), "text"));
}

static void expect_not_found(const json_t *response, const char *uri)
{
    const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
    assert_string_equal(json_string_value(json_object_get(json_object_get(error, "data"), "uri")),
                        uri);
}

/* ------------------------------------------------------------------ */
/* Lists                                                               */
/* ------------------------------------------------------------------ */

static void test_resource_definitions(void **state)
{
    mcp_server_t *srv = new_server();
    add_resource(srv, &(mcp_resource_t){
                          .uri = "test://full", .name = "full", .title = "Full",
                          .description = "All fields", .mime_type = "text/plain", .size = 1234,
                          .annotations = "{\"audience\":[\"user\"],\"priority\":1}",
                          .icons = "[{\"src\":\"https://example.com/r.png\"}]",
                          .meta = "{\"com.example/r\":true}", .handler = read_named,
                          .user = "full"});
    add_resource(srv, &(mcp_resource_t){.uri = "test://bare", .name = "bare",
                                        .handler = read_named, .user = "bare"});
    json_t *response = serve(srv, modern_request(1, "resources/list", NULL), NULL);
    const json_t *list = json_object_get(expect_complete(response), "resources");
    json_t *want = json_loads(
        "[{\"uri\":\"test://bare\",\"name\":\"bare\"},"
        "{\"uri\":\"test://full\",\"name\":\"full\",\"title\":\"Full\","
        "\"description\":\"All fields\",\"mimeType\":\"text/plain\",\"size\":1234,"
        "\"annotations\":{\"audience\":[\"user\"],\"priority\":1},"
        "\"icons\":[{\"src\":\"https://example.com/r.png\"}],\"_meta\":{\"com.example/r\":true}}]",
        0, NULL);
    if (!json_equal(list, want))
        fail_msg("listed %s", json_dumps(list, JSON_COMPACT));
    json_decref(want);
    json_decref(response);

    /* Templates are listed by their own method, not with the resources. */
    add_template(srv, "test://t/{x}", "t");
    response = serve(srv, modern_request(2, "resources/templates/list", NULL), NULL);
    const json_t *templates = json_object_get(expect_complete(response), "resourceTemplates");
    want = json_loads("[{\"uriTemplate\":\"test://t/{x}\",\"name\":\"t\"}]", 0, NULL);
    assert_true(json_equal(templates, want));
    json_decref(want);
    json_decref(response);
    response = serve(srv, modern_request(3, "resources/list", NULL), NULL);
    assert_int_equal(json_array_size(json_object_get(expect_complete(response), "resources")), 2);
    json_decref(response);

    /* Only templates: resources/list still answers, with an empty list. */
    mcp_server_remove_resource(srv, "test://full");
    mcp_server_remove_resource(srv, "test://bare");
    response = serve(srv, modern_request(4, "resources/list", NULL), NULL);
    assert_int_equal(json_array_size(json_object_get(expect_complete(response), "resources")), 0);
    json_decref(response);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

static const unsigned char bytes[] = {0, 1, 2, 250, 251, 252};

static int read_many(mcp_call_t *call, const char *uri, void *user)
{
    HANDLER_CHECK(call, strcmp(mcp_call_method(call), "resources/read") == 0);
    HANDLER_CHECK(call, strcmp(mcp_call_target(call), uri) == 0);
    int rc = mcp_call_add_resource_text(call, uri, NULL, "text part");
    rc |= mcp_call_add_resource_blob(call, uri, "application/octet-stream", bytes, sizeof bytes);
    /* Hand-built contents may carry _meta; they must name a uri. */
    json_t *custom = mcp_resource_text("test://many#part", "text/plain", "custom");
    json_object_set_new(custom, "_meta", json_pack("{s:i}", "com.example/n", 1));
    rc |= mcp_call_add_resource_contents(call, custom);
    HANDLER_CHECK(call, mcp_call_add_resource_contents(call, json_pack("{s:s}", "text", "x")) ==
                            MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_add_resource_contents(call, NULL) == MCP_EINVAL);
    return rc;
}

static void test_read_text_blob_and_several_contents(void **state)
{
    mcp_server_t *srv = new_server();
    add_resource(srv, &(mcp_resource_t){.uri = "test://many", .name = "many",
                                        .handler = read_many});
    int status = 0;
    json_t *response = read_uri(srv, "test://many", &status);
    const json_t *result = expect_complete(response);
    assert_int_equal(status, 200);
    const json_t *contents = json_object_get(result, "contents");
    assert_int_equal(json_array_size(contents), 3);
    const json_t *text = json_array_get(contents, 0);
    assert_string_equal(json_string_value(json_object_get(text, "text")), "text part");
    assert_null(json_object_get(text, "mimeType"));
    const json_t *blob = json_array_get(contents, 1);
    const char *b64 = json_string_value(json_object_get(blob, "blob"));
    size_t len = 0;
    unsigned char *decoded = mcp_base64_from_string(b64, strlen(b64), &len);
    assert_int_equal(len, sizeof bytes);
    assert_memory_equal(decoded, bytes, sizeof bytes);
    free(decoded);
    assert_non_null(json_object_get(json_array_get(contents, 2), "_meta"));

    /* resources/read is cacheable: the server's default hints. */
    assert_int_equal(json_integer_value(json_object_get(result, "ttlMs")), 60000);
    assert_string_equal(json_string_value(json_object_get(result, "cacheScope")), "private");
    assert_non_null(json_object_get(json_object_get(result, "_meta"), MCP_META_SERVER_INFO));
    json_decref(response);
    mcp_server_free(srv);
}

static int read_with_cache(mcp_call_t *call, const char *uri, void *user)
{
    HANDLER_CHECK(call, mcp_call_set_cache(call, -1, "public") == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_set_cache(call, 10, "shared") == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_set_cache(call, 10, NULL) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_set_cache(call, 0, "public") == MCP_OK);
    return mcp_call_add_resource_text(call, uri, NULL, "fresh");
}

static void test_handler_cache_hints(void **state)
{
    mcp_server_t *srv = new_server();
    add_resource(srv, &(mcp_resource_t){.uri = "test://live", .name = "live",
                                        .handler = read_with_cache});
    json_t *response = read_uri(srv, "test://live", NULL);
    const json_t *result = expect_complete(response);
    assert_int_equal(json_integer_value(json_object_get(result, "ttlMs")), 0);
    assert_string_equal(json_string_value(json_object_get(result, "cacheScope")), "public");
    json_decref(response);
    mcp_server_free(srv);
}

static int read_vars(mcp_call_t *call, const char *uri, void *user)
{
    json_t *vars = json_pack("{s:s?, s:s?, s:s?}", "id", mcp_call_uri_var(call, "id"), "slug",
                             mcp_call_uri_var(call, "slug"), "none",
                             mcp_call_uri_var(call, "none"));
    char *text = json_dumps(vars, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(vars);
    int rc = mcp_call_add_resource_text(call, uri, "application/json", text);
    free(text);
    return rc;
}

static void test_template_variables(void **state)
{
    mcp_server_t *srv = new_server();
    assert_int_equal(mcp_server_add_resource_template(
                         srv,
                         &(mcp_resource_template_t){
                             .uri_template = "test://users/{id}/posts/{slug}", .name = "post",
                             .mime_type = "application/json", .handler = read_vars},
                         NULL),
                     MCP_OK);
    json_t *response = read_uri(srv, "test://users/42/posts/hello%20world", NULL);
    assert_string_equal(read_text(response), "{\"id\":\"42\",\"none\":null,\"slug\":\"hello world\"}");
    json_decref(response);

    /* {var} never spans a '/'. */
    response = read_uri(srv, "test://users/4/2/posts/x", NULL);
    expect_not_found(response, "test://users/4/2/posts/x");
    json_decref(response);
    mcp_server_free(srv);
}

/* When several templates match, the one registered first wins, whatever
 * the order the list is sorted in; a static resource beats any template. */
static void test_template_precedence(void **state)
{
    /* "test://x/{b}" sorts before "test://{a}/item" ('x' < '{'). */
    for (int first = 0; first < 2; first++) {
        mcp_server_t *srv = new_server();
        if (first == 0) {
            add_template(srv, "test://{a}/item", "by-item");
            add_template(srv, "test://x/{b}", "by-x");
        } else {
            add_template(srv, "test://x/{b}", "by-x");
            add_template(srv, "test://{a}/item", "by-item");
        }
        json_t *response = read_uri(srv, "test://x/item", NULL);
        assert_string_equal(read_text(response),
                            first == 0 ? "by-item:test://x/item" : "by-x:test://x/item");
        json_decref(response);

        add_resource(srv, &(mcp_resource_t){.uri = "test://x/item", .name = "static",
                                            .handler = read_named, .user = "static"});
        response = read_uri(srv, "test://x/item", NULL);
        assert_string_equal(read_text(response), "static:test://x/item");
        json_decref(response);

        /* Removing the winner hands the URI to the next template. */
        mcp_server_remove_resource(srv, "test://x/item");
        mcp_server_remove_resource_template(srv, first == 0 ? "test://{a}/item" : "test://x/{b}");
        response = read_uri(srv, "test://x/item", NULL);
        assert_string_equal(read_text(response),
                            first == 0 ? "by-x:test://x/item" : "by-item:test://x/item");
        json_decref(response);
        mcp_server_free(srv);
    }
}

/* ------------------------------------------------------------------ */
/* Not found                                                           */
/* ------------------------------------------------------------------ */

static int read_maybe(mcp_call_t *call, const char *uri, void *user)
{
    const char *x = mcp_call_uri_var(call, "x");
    if (strcmp(x, "missing") == 0)
        return mcp_call_resource_not_found(call);
    if (strcmp(x, "empty") == 0)
        return MCP_OK; /* no contents at all */
    return mcp_call_add_resource_text(call, uri, NULL, x);
}

static void test_not_found(void **state)
{
    mcp_server_t *srv = new_server();
    assert_int_equal(mcp_server_add_resource_template(
                         srv,
                         &(mcp_resource_template_t){.uri_template = "test://maybe/{x}",
                                                    .name = "maybe", .handler = read_maybe},
                         NULL),
                     MCP_OK);
    const char *uris[] = {"test://nothing/here", "test://maybe/missing", "test://maybe/empty"};
    for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
        for (int http = 0; http < 2; http++) {
            json_t *request = read_request(uris[i]);
            modern_http_headers_t h;
            modern_http_headers_init(&h, request);
            mcp_request_context_t ctx = modern_http_context(&h, NULL);
            int status = 0;
            json_t *response = serve_with(srv, NULL, http ? &ctx : NULL, request, &status);
            expect_not_found(response, uris[i]);
            assert_int_equal(status, 200);
            json_decref(response);
            modern_http_headers_cleanup(&h);
        }
    }
    json_t *response = read_uri(srv, "test://maybe/there", NULL);
    assert_string_equal(read_text(response), "there");
    json_decref(response);
    mcp_server_free(srv);
}

static void test_malformed_read_params(void **state)
{
    mcp_server_t *srv = new_server();
    add_template(srv, "test://{x}", "any");
    const char *params[] = {"{}", "{\"uri\":1}", "{\"uri\":null}", "{\"uri\":[\"test://a\"]}"};
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        json_t *response =
            serve(srv, modern_request(1, "resources/read", json_loads(params[i], 0, NULL)), NULL);
        expect_error(response, MCP_INVALID_PARAMS);
        json_decref(response);
    }
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */

static void test_registration_errors(void **state)
{
    mcp_server_t *srv = new_server();
    const mcp_resource_t bad[] = {
        {.name = "no uri", .handler = read_named},
        {.uri = "", .name = "empty uri", .handler = read_named},
        {.uri = "test://a", .handler = read_named},
        {.uri = "test://a", .name = "no handler"},
        {.uri = "test://a", .name = "a", .annotations = "[]", .handler = read_named},
        {.uri = "test://a", .name = "a", .icons = "{}", .handler = read_named},
        {.uri = "test://a", .name = "a", .meta = "nope", .handler = read_named},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_t err = {0};
        if (mcp_server_add_resource(srv, &bad[i], &err) != MCP_EINVAL)
            fail_msg("resource row %zu was accepted", i);
        mcp_error_clear(&err);
    }
    const mcp_resource_template_t bad_tpl[] = {
        {.uri_template = "test://{", .name = "t", .handler = read_named},
        {.uri_template = "test://{x", .name = "t", .handler = read_named},
        {.uri_template = "test://{x}", .handler = read_named},
        {.uri_template = "test://{x}", .name = "t"},
        {.name = "t", .handler = read_named},
    };
    for (size_t i = 0; i < sizeof bad_tpl / sizeof bad_tpl[0]; i++) {
        mcp_error_t err = {0};
        if (mcp_server_add_resource_template(srv, &bad_tpl[i], &err) != MCP_EINVAL)
            fail_msg("template row %zu was accepted", i);
        mcp_error_clear(&err);
    }
    json_t *response = serve(srv, modern_request(1, "resources/list", NULL), NULL);
    expect_error(response, MCP_METHOD_NOT_FOUND);
    json_decref(response);

    add_resource(srv, &(mcp_resource_t){.uri = "test://a", .name = "a", .handler = read_named,
                                        .user = "a"});
    assert_int_equal(mcp_server_add_resource(srv,
                                             &(mcp_resource_t){.uri = "test://a", .name = "again",
                                                               .handler = read_named},
                                             NULL),
                     MCP_EEXIST);
    add_template(srv, "test://t/{x}", "t");
    assert_int_equal(mcp_server_add_resource_template(
                         srv,
                         &(mcp_resource_template_t){.uri_template = "test://t/{x}", .name = "t",
                                                    .handler = read_named},
                         NULL),
                     MCP_EEXIST);
    assert_int_equal(mcp_server_remove_resource(srv, "test://zzz"), MCP_ENOTFOUND);
    assert_int_equal(mcp_server_remove_resource_template(srv, "test://zzz/{x}"), MCP_ENOTFOUND);

    assert_int_equal(mcp_server_remove_resource(srv, "test://a"), MCP_OK);
    response = read_uri(srv, "test://a", NULL);
    expect_not_found(response, "test://a");
    json_decref(response);
    mcp_server_free(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resource_definitions),
        cmocka_unit_test(test_read_text_blob_and_several_contents),
        cmocka_unit_test(test_handler_cache_hints),
        cmocka_unit_test(test_template_variables),
        cmocka_unit_test(test_template_precedence),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_malformed_read_params),
        cmocka_unit_test(test_registration_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
