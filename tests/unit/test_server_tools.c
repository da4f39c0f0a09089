/*
 * Server core, tools: registration, tools/list definitions, and tools/call
 * with every kind of result a handler can build (content blocks of each
 * type, structuredContent, isError results, JSON-RPC errors), the errors
 * the core raises itself (unknown tool, malformed params, a missing client
 * capability), and what a handler can read about its request.
 */
#define _GNU_SOURCE

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
        mcp_server_new(&(mcp_server_options_t){.name = "tools-test", .version = "1"}, NULL);
    assert_non_null(srv);
    return srv;
}

static void add(mcp_server_t *srv, const mcp_tool_t *tool)
{
    mcp_error_t err = {0};
    if (mcp_server_add_tool(srv, tool, &err) != MCP_OK)
        fail_msg("add_tool %s: %s", tool->name, err.message);
}

static json_t *call_request(json_int_t id, const char *name, json_t *arguments_new)
{
    json_t *params = json_pack("{s:s}", "name", name);
    if (arguments_new)
        json_object_set_new(params, "arguments", arguments_new);
    return modern_request(id, "tools/call", params);
}

/* Calls a tool over stdio; returns the response. */
static json_t *call(mcp_server_t *srv, const char *name, json_t *arguments_new, int *status)
{
    return serve(srv, call_request(1, name, arguments_new), status);
}

static const json_t *content_of(const json_t *response)
{
    return json_object_get(expect_complete(response), "content");
}

static const char *text_at(const json_t *response, size_t i)
{
    return json_string_value(json_object_get(json_array_get(content_of(response), i), "text"));
}

/* ------------------------------------------------------------------ */
/* Content of every kind                                               */
/* ------------------------------------------------------------------ */

static const unsigned char pixels[] = {0x89, 'P', 'N', 'G', 0, 1, 2, 0xff};

static int all_content(mcp_call_t *call, void *user)
{
    int rc = 0;
    rc |= mcp_call_add_text(call, "plain");
    rc |= mcp_call_add_textf(call, "%d apples", 3);
    rc |= mcp_call_add_content(call, mcp_content_image(pixels, sizeof pixels, "image/png"));
    rc |= mcp_call_add_content(call, mcp_content_audio(pixels, sizeof pixels, "audio/wav"));
    rc |= mcp_call_add_content(
        call, mcp_content_resource_link("file:///tmp/a.txt", "a.txt", "text/plain"));
    rc |= mcp_call_add_content(call,
                               mcp_content_embedded_text("test://doc", "text/markdown", "# Doc"));
    rc |= mcp_call_add_content(
        call, mcp_content_embedded_blob("test://bin", "application/octet-stream", pixels,
                                        sizeof pixels));
    /* A block with annotations, built by hand. */
    json_t *annotated = mcp_content_text("for the user");
    json_object_set_new(annotated, "annotations",
                        json_pack("{s:[s], s:f}", "audience", "user", "priority", 0.5));
    rc |= mcp_call_add_content(call, annotated);
    return rc;
}

static void test_content_of_every_kind(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "all", .handler = all_content});
    int status = 0;
    json_t *response = call(srv, "all", NULL, &status);
    assert_int_equal(status, 200);
    const json_t *content = content_of(response);
    assert_int_equal(json_array_size(content), 8);

    const char *types[] = {"text", "text", "image", "audio", "resource_link", "resource",
                           "resource", "text"};
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(content, i), "type")),
                            types[i]);
    assert_string_equal(text_at(response, 0), "plain");
    assert_string_equal(text_at(response, 1), "3 apples");

    const json_t *image = json_array_get(content, 2);
    const char *data = json_string_value(json_object_get(image, "data"));
    size_t len = 0;
    unsigned char *decoded = mcp_base64_from_string(data, strlen(data), &len);
    assert_int_equal(len, sizeof pixels);
    assert_memory_equal(decoded, pixels, sizeof pixels);
    free(decoded);
    assert_string_equal(json_string_value(json_object_get(image, "mimeType")), "image/png");

    const json_t *embedded = json_object_get(json_array_get(content, 5), "resource");
    assert_string_equal(json_string_value(json_object_get(embedded, "uri")), "test://doc");
    assert_string_equal(json_string_value(json_object_get(embedded, "text")), "# Doc");
    assert_non_null(json_object_get(json_object_get(json_array_get(content, 6), "resource"),
                                    "blob"));
    assert_null(json_object_get(expect_complete(response), "isError"));
    /* Tool results are not cacheable. */
    assert_null(json_object_get(expect_complete(response), "ttlMs"));
    json_decref(response);
    mcp_server_free(srv);
}

static int bad_blocks(mcp_call_t *call, void *user)
{
    /* Not objects, or nothing at all: refused, and nothing is added. */
    HANDLER_CHECK(call, mcp_call_add_content(call, json_string("text")) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_add_content(call, NULL) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_add_text(call, NULL) == MCP_EINVAL);
    return mcp_call_add_text(call, "only this");
}

static void test_bad_content_is_refused(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "bad", .handler = bad_blocks});
    json_t *response = call(srv, "bad", NULL, NULL);
    assert_int_equal(json_array_size(content_of(response)), 1);
    json_decref(response);
    mcp_server_free(srv);
}

static int adds_nothing(mcp_call_t *call, void *user)
{
    return MCP_OK;
}

/* content is required in a CallToolResult: a tool that added none still
 * answers an empty array, never an absent member. */
static void test_no_content_is_an_empty_array(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "quiet", .handler = adds_nothing});
    json_t *response = call(srv, "quiet", NULL, NULL);
    const json_t *content = content_of(response);
    assert_true(json_is_array(content));
    assert_int_equal(json_array_size(content), 0);
    json_decref(response);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* structuredContent                                                   */
/* ------------------------------------------------------------------ */

static int structured(mcp_call_t *call, void *user)
{
    const char *shape = mcp_call_arg_string(call, "shape");
    if (strcmp(shape, "object") == 0)
        return mcp_call_set_structured(call, json_pack("{s:i}", "sum", 3));
    if (strcmp(shape, "array") == 0)
        return mcp_call_set_structured(call, json_pack("[i, s]", 1, "two"));
    if (strcmp(shape, "replaced") == 0) {
        mcp_call_set_structured(call, json_pack("{s:i}", "sum", 1));
        return mcp_call_set_structured(call, json_pack("{s:i}", "sum", 2));
    }
    /* "own": the handler writes its own text. */
    mcp_call_add_text(call, "the sum is 3");
    return mcp_call_set_structured(call, json_pack("{s:i}", "sum", 3));
}

static void test_structured_content(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){
                 .name = "sum", .handler = structured,
                 .output_schema = "{\"type\":\"object\",\"properties\":{\"sum\":"
                                  "{\"type\":\"integer\"}},\"required\":[\"sum\"]}"});
    struct {
        const char *shape;
        const char *structured; /* expected, as JSON text */
        const char *text;       /* the one text block */
    } rows[] = {
        {"object", "{\"sum\":3}", "{\"sum\":3}"},
        {"array", "[1,\"two\"]", "[1,\"two\"]"},
        {"replaced", "{\"sum\":2}", "{\"sum\":2}"},
        {"own", "{\"sum\":3}", "the sum is 3"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *response = call(srv, "sum", json_pack("{s:s}", "shape", rows[i].shape), NULL);
        const json_t *result = expect_complete(response);
        json_t *want = json_loads(rows[i].structured, 0, NULL);
        assert_true(json_equal(json_object_get(result, "structuredContent"), want));
        json_decref(want);
        /* Exactly one text block: the serialisation, unless the handler
         * wrote its own (spec: SHOULD also return it as text). */
        assert_int_equal(json_array_size(json_object_get(result, "content")), 1);
        assert_string_equal(text_at(response, 0), rows[i].text);
        json_decref(response);
    }

    /* The outputSchema is listed with the tool. */
    json_t *response = serve(srv, modern_request(2, "tools/list", NULL), NULL);
    const json_t *tool = json_array_get(json_object_get(expect_complete(response), "tools"), 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(tool, "outputSchema"), "type")),
        "object");
    json_decref(response);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* isError results and JSON-RPC errors                                 */
/* ------------------------------------------------------------------ */

static int tool_error(mcp_call_t *call, void *user)
{
    return mcp_call_tool_error(call, "no such city: %s", mcp_call_arg_string(call, "city"));
}

static void test_tool_error_result(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "weather", .handler = tool_error});
    int status = 0;
    json_t *response = call(srv, "weather", json_pack("{s:s}", "city", "Atlantis"), &status);
    const json_t *result = expect_complete(response);
    assert_true(json_is_true(json_object_get(result, "isError")));
    assert_string_equal(text_at(response, 0), "no such city: Atlantis");
    assert_int_equal(status, 200);
    json_decref(response);
    mcp_server_free(srv);
}

typedef struct failure {
    int code;          /* passed to mcp_call_fail(_data); 0: return rc without it */
    const char *data;  /* JSON text or NULL */
    int rc;            /* what the handler returns when code is 0 */
    int want_code;
    int want_status;
} failure_t;

static int failing(mcp_call_t *call, void *user)
{
    const failure_t *f = user;
    if (!f->code)
        return f->rc;
    if (f->data)
        return mcp_call_fail_data(call, f->code, json_loads(f->data, 0, NULL), "failed %s",
                                  "badly");
    return mcp_call_fail(call, f->code, "failed %s", "badly");
}

static void test_handler_errors(void **state)
{
    const failure_t rows[] = {
        {MCP_INVALID_PARAMS, NULL, 0, MCP_INVALID_PARAMS, 200},
        {MCP_INVALID_PARAMS, "{\"field\":\"city\"}", 0, MCP_INVALID_PARAMS, 200},
        {MCP_INTERNAL_ERROR, NULL, 0, MCP_INTERNAL_ERROR, 200},
        {-1, "[1,2]", 0, -1, 200},            /* an application code */
        {0, NULL, MCP_EIO, MCP_INTERNAL_ERROR, 200}, /* failed without saying why */
        {0, NULL, MCP_ENOMEM, MCP_INTERNAL_ERROR, 200},
    };
    mcp_server_t *srv = new_server();
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char name[16];
        snprintf(name, sizeof name, "fail%zu", i);
        add(srv, &(mcp_tool_t){.name = name, .handler = failing, .user = (void *)&rows[i]});

        json_t *request = call_request(7, name, NULL);
        modern_http_headers_t h;
        modern_http_headers_init(&h, request);
        mcp_request_context_t ctx = modern_http_context(&h, NULL);
        int status = 0;
        json_t *response = serve_with(srv, NULL, &ctx, request, &status);
        const json_t *error = expect_error(response, rows[i].want_code);
        assert_int_equal(json_integer_value(json_object_get(response, "id")), 7);
        assert_int_equal(status, rows[i].want_status);
        if (rows[i].code) {
            assert_string_equal(json_string_value(json_object_get(error, "message")),
                                "failed badly");
        }
        if (rows[i].data) {
            json_t *want = json_loads(rows[i].data, 0, NULL);
            assert_true(json_equal(json_object_get(error, "data"), want));
            json_decref(want);
        } else {
            assert_null(json_object_get(error, "data"));
        }
        json_decref(response);
        modern_http_headers_cleanup(&h);
    }
    mcp_server_free(srv);
}

static atomic_int echo_runs;

static int echo(mcp_call_t *call, void *user)
{
    atomic_fetch_add(&echo_runs, 1);
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "");
}

static void test_unknown_tool(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "echo", .handler = echo});
    for (int http = 0; http < 2; http++) {
        json_t *request = call_request(3, "nope", NULL);
        modern_http_headers_t h;
        modern_http_headers_init(&h, request);
        mcp_request_context_t ctx = modern_http_context(&h, NULL);
        int status = 0;
        json_t *response = serve_with(srv, NULL, http ? &ctx : NULL, request, &status);
        const json_t *error = expect_error(response, MCP_INVALID_PARAMS);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(error, "data"), "name")), "nope");
        assert_int_equal(status, 200);
        json_decref(response);
        modern_http_headers_cleanup(&h);
    }
    mcp_server_free(srv);
}

static void test_malformed_call_params(void **state)
{
    const char *params[] = {
        "{}",                                          /* no name */
        "{\"name\":7}",                                /* name not a string */
        "{\"name\":\"echo\",\"arguments\":[1]}",       /* arguments not an object */
        "{\"name\":\"echo\",\"arguments\":\"text\"}",
        "{\"name\":\"ec\\u0000ho\"}",                  /* embedded NUL */
    };
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "echo", .handler = echo});
    atomic_store(&echo_runs, 0);
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        json_t *p = json_loads(params[i], JSON_ALLOW_NUL, NULL);
        assert_non_null(p);
        json_t *response = serve(srv, modern_request(1, "tools/call", p), NULL);
        expect_error(response, MCP_INVALID_PARAMS);
        json_decref(response);
    }
    assert_int_equal(atomic_load(&echo_runs), 0);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* What a handler can read                                             */
/* ------------------------------------------------------------------ */

static int report_arguments(mcp_call_t *call, void *user)
{
    int64_t i = 0;
    double d = 0;
    bool b = false;
    json_t *seen = json_object();
    json_object_set_new(seen, "count", json_integer(json_object_size(mcp_call_arguments(call))));
    json_object_set_new(seen, "s", mcp_call_arg_string(call, "s")
                                       ? json_string(mcp_call_arg_string(call, "s"))
                                       : json_null());
    json_object_set_new(seen, "s_from_int", json_boolean(mcp_call_arg_string(call, "i") != NULL));
    json_object_set_new(seen, "i", mcp_call_arg_int(call, "i", &i) ? json_integer(i) : json_null());
    json_object_set_new(seen, "i_from_real", json_boolean(mcp_call_arg_int(call, "d", &i)));
    json_object_set_new(seen, "d", mcp_call_arg_number(call, "d", &d) ? json_real(d) : json_null());
    json_object_set_new(seen, "d_from_int",
                        mcp_call_arg_number(call, "i", &d) ? json_real(d) : json_null());
    json_object_set_new(seen, "b", mcp_call_arg_bool(call, "b", &b) ? json_boolean(b) : json_null());
    json_object_set_new(seen, "b_from_string", json_boolean(mcp_call_arg_bool(call, "s", &b)));
    json_object_set_new(seen, "missing", json_boolean(mcp_call_arg(call, "missing") != NULL));
    json_object_set_new(seen, "null_name", json_boolean(mcp_call_arg(call, NULL) != NULL));
    return mcp_call_set_structured(call, seen);
}

static void test_reading_arguments(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "args", .handler = report_arguments});
    json_t *response = call(srv, "args",
                            json_pack("{s:s, s:i, s:f, s:b, s:n}", "s", "text", "i", 42, "d", 2.5,
                                      "b", 1, "nil"),
                            NULL);
    json_t *want = json_loads(
        "{\"count\":5,\"s\":\"text\",\"s_from_int\":false,\"i\":42,\"i_from_real\":false,"
        "\"d\":2.5,\"d_from_int\":42.0,\"b\":true,\"b_from_string\":false,\"missing\":false,"
        "\"null_name\":false}",
        0, NULL);
    const json_t *got = json_object_get(expect_complete(response), "structuredContent");
    if (!json_equal(got, want))
        fail_msg("arguments read as %s", json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS));
    json_decref(want);
    json_decref(response);

    /* No arguments at all: an empty object, never NULL. */
    response = call(srv, "args", NULL, NULL);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(expect_complete(response), "structuredContent"), "count")),
                     0);
    json_decref(response);
    mcp_server_free(srv);
}

static int report_request(mcp_call_t *call, void *user)
{
    const char *principal = mcp_call_principal(call);
    json_t *seen = json_pack(
        "{s:s, s:s, s:s, s:O, s:O?, s:s?, s:i, s:b, s:b}", "method", mcp_call_method(call),
        "target", mcp_call_target(call), "version", mcp_call_protocol_version(call),
        "caps", mcp_call_client_capabilities(call), "info", mcp_call_client_info(call),
        "principal", principal, "era", (int)mcp_call_era(call), "cancelled",
        mcp_call_cancelled(call), "params_name",
        json_object_get(mcp_call_params(call), "name") != NULL);
    return mcp_call_set_structured(call, seen);
}

static void test_reading_the_request(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "who", .handler = report_request});

    json_t *request = call_request(1, "who", NULL);
    modern_set_capabilities(request, "{\"elicitation\":{}}");
    modern_http_headers_t h;
    modern_http_headers_init(&h, request);
    mcp_request_context_t ctx = modern_http_context(&h, "alice");
    json_t *response = serve_with(srv, NULL, &ctx, request, NULL);
    const json_t *seen = json_object_get(expect_complete(response), "structuredContent");
    assert_string_equal(json_string_value(json_object_get(seen, "method")), "tools/call");
    assert_string_equal(json_string_value(json_object_get(seen, "target")), "who");
    assert_string_equal(json_string_value(json_object_get(seen, "version")), "2026-07-28");
    assert_non_null(json_object_get(json_object_get(seen, "caps"), "elicitation"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(seen, "info"), "name")),
        "libmcp-tests");
    assert_string_equal(json_string_value(json_object_get(seen, "principal")), "alice");
    assert_int_equal(json_integer_value(json_object_get(seen, "era")), MCP_ERA_MODERN);
    assert_false(json_is_true(json_object_get(seen, "cancelled")));
    assert_true(json_is_true(json_object_get(seen, "params_name")));
    json_decref(response);
    modern_http_headers_cleanup(&h);

    /* Without clientInfo and principal. */
    request = call_request(2, "who", NULL);
    json_object_del(modern_meta(request), MCP_META_CLIENT_INFO);
    response = serve(srv, request, NULL);
    seen = json_object_get(expect_complete(response), "structuredContent");
    assert_true(json_is_null(json_object_get(seen, "info")));
    assert_true(json_is_null(json_object_get(seen, "principal")));
    assert_int_equal(json_object_size(json_object_get(seen, "caps")), 0);
    json_decref(response);
    mcp_server_free(srv);
}

static int with_meta(mcp_call_t *call, void *user)
{
    HANDLER_CHECK(call, mcp_call_set_result_meta(call, "io.modelcontextprotocol/serverInfo",
                                                 json_string("forged")) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_set_result_meta(call, NULL, json_true()) == MCP_EINVAL);
    HANDLER_CHECK(call, mcp_call_set_result_meta(call, "com.example/trace",
                                                 json_string("t-1")) == MCP_OK);
    return mcp_call_add_text(call, "ok");
}

static void test_result_meta(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "meta", .handler = with_meta});
    json_t *response = call(srv, "meta", NULL, NULL);
    const json_t *meta = json_object_get(expect_complete(response), "_meta");
    assert_string_equal(json_string_value(json_object_get(meta, "com.example/trace")), "t-1");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(meta, MCP_META_SERVER_INFO), "name")),
        "tools-test");
    json_decref(response);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Client capabilities a tool requires                                 */
/* ------------------------------------------------------------------ */

static void test_required_capabilities(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "needs", .handler = echo,
                           .required_capabilities = "{\"sampling\":{}}"});
    atomic_store(&echo_runs, 0);
    for (int http = 0; http < 2; http++) {
        json_t *request = call_request(1, "needs", NULL);
        modern_set_capabilities(request, "{\"elicitation\":{}}");
        modern_http_headers_t h;
        modern_http_headers_init(&h, request);
        mcp_request_context_t ctx = modern_http_context(&h, NULL);
        int status = 0;
        json_t *response = serve_with(srv, NULL, http ? &ctx : NULL, request, &status);
        const json_t *error = expect_error(response, MCP_MISSING_CLIENT_CAPABILITY);
        const json_t *required =
            json_object_get(json_object_get(error, "data"), "requiredCapabilities");
        assert_true(json_is_object(required));
        assert_non_null(json_object_get(required, "sampling"));
        assert_int_equal(status, 400);
        json_decref(response);
        modern_http_headers_cleanup(&h);
    }
    assert_int_equal(atomic_load(&echo_runs), 0);

    json_t *request = call_request(2, "needs", NULL);
    modern_set_capabilities(request, "{\"sampling\":{}}");
    json_t *response = serve(srv, request, NULL);
    expect_complete(response);
    json_decref(response);
    assert_int_equal(atomic_load(&echo_runs), 1);
    mcp_server_free(srv);
}

/* x-mcp-header arguments must be mirrored in Mcp-Param-* headers on HTTP. */
static void test_param_headers(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "echo", .handler = echo,
                           .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":"
                                           "{\"type\":\"string\",\"x-mcp-header\":\"Text\"}}}"});
    struct {
        const char *header; /* value of Mcp-Param-Text, or NULL */
        int code, status;
    } rows[] = {{"hello", 0, 200}, {NULL, MCP_HEADER_MISMATCH, 400},
                {"other", MCP_HEADER_MISMATCH, 400}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        json_t *request = call_request(1, "echo", json_pack("{s:s}", "text", "hello"));
        modern_http_headers_t h;
        modern_http_headers_init(&h, request);
        if (rows[i].header)
            modern_http_headers_add(&h, "Mcp-Param-Text", rows[i].header);
        mcp_request_context_t ctx = modern_http_context(&h, NULL);
        int status = 0;
        json_t *response = serve_with(srv, NULL, &ctx, request, &status);
        if (rows[i].code)
            expect_error(response, rows[i].code);
        else
            assert_string_equal(text_at(response, 0), "hello");
        assert_int_equal(status, rows[i].status);
        json_decref(response);
        modern_http_headers_cleanup(&h);
    }
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */

static void test_tool_definitions_are_listed(void **state)
{
    mcp_server_t *srv = new_server();
    add(srv, &(mcp_tool_t){.name = "full", .title = "Full", .description = "Everything",
                           .input_schema = "{\"type\":\"object\",\"additionalProperties\":false}",
                           .annotations = "{\"readOnlyHint\":true}",
                           .icons = "[{\"src\":\"https://example.com/i.png\"}]",
                           .meta = "{\"com.example/k\":1}",
                           .required_capabilities = "{\"roots\":{}}", .handler = echo});
    add(srv, &(mcp_tool_t){.name = "bare", .handler = echo});
    json_t *response = serve(srv, modern_request(1, "tools/list", NULL), NULL);
    const json_t *tools = json_object_get(expect_complete(response), "tools");
    const json_t *bare = json_array_get(tools, 0);
    const json_t *full = json_array_get(tools, 1);
    json_t *want_bare = json_loads("{\"name\":\"bare\",\"inputSchema\":{\"type\":\"object\"}}", 0,
                                   NULL);
    assert_true(json_equal(bare, want_bare));
    json_decref(want_bare);
    json_t *want_full = json_loads(
        "{\"name\":\"full\",\"title\":\"Full\",\"description\":\"Everything\","
        "\"inputSchema\":{\"type\":\"object\",\"additionalProperties\":false},"
        "\"annotations\":{\"readOnlyHint\":true},"
        "\"icons\":[{\"src\":\"https://example.com/i.png\"}],\"_meta\":{\"com.example/k\":1}}",
        0, NULL);
    assert_true(json_equal(full, want_full));
    json_decref(want_full);
    json_decref(response);
    mcp_server_free(srv);
}

static void test_registration_errors(void **state)
{
    char long_name[130];
    memset(long_name, 'a', 129);
    long_name[129] = '\0';
    const mcp_tool_t bad[] = {
        {.name = "", .handler = echo},
        {.name = "has space", .handler = echo},
        {.name = "slash/y", .handler = echo},
        {.name = long_name, .handler = echo},
        {.name = "nohandler"},
        {.name = "t", .handler = echo, .input_schema = "{"},
        {.name = "t", .handler = echo, .input_schema = "{\"type\":\"string\"}"},
        {.name = "t", .handler = echo, .input_schema = "{\"properties\":{}}"},
        {.name = "t", .handler = echo, .input_schema = "[]"},
        {.name = "t", .handler = echo, .output_schema = "[]"},
        {.name = "t", .handler = echo, .annotations = "[]"},
        {.name = "t", .handler = echo, .icons = "{}"},
        {.name = "t", .handler = echo, .meta = "1"},
        {.name = "t", .handler = echo, .required_capabilities = "[]"},
        {.name = "t", .handler = echo, .title = "\xff"},
        {.name = "t", .handler = echo,
         .input_schema = "{\"type\":\"object\",\"properties\":{\"o\":"
                         "{\"type\":\"object\",\"x-mcp-header\":\"O\"}}}"},
    };
    mcp_server_t *srv = new_server();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_t err = {0};
        if (mcp_server_add_tool(srv, &bad[i], &err) != MCP_EINVAL)
            fail_msg("row %zu was accepted", i);
        assert_true(err.message[0] != '\0');
        mcp_error_clear(&err);
    }
    assert_int_equal(mcp_server_add_tool(srv, NULL, NULL), MCP_EINVAL);
    /* Nothing got in. */
    json_t *response = serve(srv, modern_request(1, "tools/list", NULL), NULL);
    expect_error(response, MCP_METHOD_NOT_FOUND);
    json_decref(response);

    add(srv, &(mcp_tool_t){.name = long_name + 1, .handler = echo}); /* 128 chars is fine */
    add(srv, &(mcp_tool_t){.name = "A-z_0.9", .handler = echo});
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "A-z_0.9", .handler = echo},
                                         NULL),
                     MCP_EEXIST);
    assert_int_equal(mcp_server_remove_tool(srv, "absent"), MCP_ENOTFOUND);
    assert_int_equal(mcp_server_remove_tool(srv, NULL), MCP_EINVAL);
    assert_int_equal(mcp_server_remove_tool(srv, "A-z_0.9"), MCP_OK);
    assert_int_equal(mcp_server_remove_tool(srv, "A-z_0.9"), MCP_ENOTFOUND);
    mcp_server_free(srv);
}

static void test_add_tool_json(void **state)
{
    mcp_server_t *srv = new_server();
    json_t *def = json_loads("{\"name\":\"j\",\"inputSchema\":{\"type\":\"object\"},"
                             "\"description\":\"from JSON\"}",
                             0, NULL);
    assert_int_equal(mcp_server_add_tool_json(srv, def, echo, NULL, NULL), MCP_OK);
    /* The definition was copied: changing ours changes nothing. */
    json_object_set_new(def, "description", json_string("changed"));
    json_t *response = serve(srv, modern_request(1, "tools/list", NULL), NULL);
    const json_t *tool = json_array_get(json_object_get(expect_complete(response), "tools"), 0);
    assert_string_equal(json_string_value(json_object_get(tool, "description")), "from JSON");
    json_decref(response);

    response = call(srv, "j", json_pack("{s:s}", "text", "hi"), NULL);
    assert_string_equal(text_at(response, 0), "hi");
    json_decref(response);

    json_object_set_new(def, "name", json_string("k"));
    assert_int_equal(mcp_server_add_tool_json(srv, def, NULL, NULL, NULL), MCP_EINVAL);
    json_object_del(def, "inputSchema");
    assert_int_equal(mcp_server_add_tool_json(srv, def, echo, NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_server_add_tool_json(srv, NULL, echo, NULL, NULL), MCP_EINVAL);
    json_decref(def);
    mcp_server_free(srv);
}

/* ------------------------------------------------------------------ */
/* The answer written as text is the answer written from the tree      */
/* ------------------------------------------------------------------ */

/* One handler per shape of result: which one the "shape" argument says. */
static int shaped(mcp_call_t *call, void *user)
{
    (void)user;
    const char *shape = mcp_call_arg_string(call, "shape");
    if (strcmp(shape, "empty") == 0)
        return MCP_OK;
    if (strcmp(shape, "text") == 0)
        return mcp_call_add_text(call, "line one\nline \"two\" \xc3\xa9\x01");
    if (strcmp(shape, "blocks") == 0) {
        int rc = mcp_call_add_text(call, "a");
        return rc ? rc : mcp_call_add_content(call, mcp_content_image(pixels, sizeof pixels,
                                                                       "image/png"));
    }
    if (strcmp(shape, "texts") == 0) {
        int rc = mcp_call_add_text(call, "first");
        return rc ? rc : mcp_call_add_textf(call, "second%c hidden", 0);
    }
    if (strcmp(shape, "textf") == 0)
        return mcp_call_add_textf(call, "only %d, then%c hidden", 1, 0);
    if (strcmp(shape, "error") == 0)
        return mcp_call_tool_error(call, "it went %s", "wrong");
    if (strcmp(shape, "text_error") == 0) {
        int rc = mcp_call_add_text(call, "partial output");
        return rc ? rc : mcp_call_tool_error(call, "then it went %s", "wrong");
    }
    if (strcmp(shape, "bad_utf8") == 0) {
        /* Refused, and the content stays as it was. */
        int rc = mcp_call_add_text(call, "kept");
        if (rc == MCP_OK && mcp_call_add_text(call, "\xc3(") != MCP_EINVAL)
            return mcp_call_fail(call, MCP_INTERNAL_ERROR, "invalid UTF-8 was accepted");
        return rc;
    }
    if (strcmp(shape, "structured") == 0) {
        int rc = mcp_call_add_text(call, "see structuredContent");
        return rc ? rc : mcp_call_set_structured(call, json_pack("{s:f,s:[i,n]}", "x", 1.5,
                                                                 "y", 7));
    }
    if (strcmp(shape, "structured_only") == 0)
        return mcp_call_set_structured(call, json_pack("{s:b}", "ok", 1));
    if (strcmp(shape, "meta") == 0) {
        int rc = mcp_call_add_text(call, "with meta");
        return rc ? rc : mcp_call_set_result_meta(call, "example.com/k", json_string("v"));
    }
    return mcp_call_fail(call, MCP_INVALID_PARAMS, "unknown shape %s", shape);
}

/* The bytes of the answer to tools/call `shaped` with `shape`, from a
 * sink that takes text (text_out) and from one that takes trees, written
 * by libmcp's writer (tree_out). */
static void answer_both_ways(mcp_server_t *srv, json_t *id, const char *shape, char **text_out,
                             char **tree_out)
{
    for (int with_text = 0; with_text < 2; with_text++) {
        json_t *params = json_pack("{s:s,s:{s:s}}", "name", "shaped", "arguments", "shape", shape);
        json_t *request = modern_request(0, "tools/call", params);
        json_object_set(request, "id", id);
        capture_sink_t cap;
        capture_init(&cap);
        if (with_text)
            capture_take_text(&cap);
        const json_t *response = capture_roundtrip(srv, NULL, request, NULL, &cap);
        assert_non_null(response);
        if (with_text) {
            capture_item_t item = capture_item(&cap, capture_count(&cap) - 1);
            assert_non_null(item.text);
            assert_int_equal(strlen(item.text), item.text_len);
            *text_out = strdup(item.text);
        } else {
            *tree_out = mcp_json_dump(response, NULL);
        }
        capture_cleanup(&cap);
        json_decref(request);
    }
}

static void test_text_answer_is_the_tree_answer(void **state)
{
    (void)state;
    static const char *const shapes[] = {"empty",      "text",       "texts",
                                         "textf",      "blocks",     "error",
                                         "text_error", "bad_utf8",   "structured",
                                         "structured_only", "meta"};
    json_t *ids[] = {json_integer(-9007199254740993LL), json_string("id \"quoted\"\n")};
    for (int omit = 0; omit < 2; omit++) {
        mcp_server_t *srv = mcp_server_new(
            &(mcp_server_options_t){.name = "tools-\"test\"", .version = "1",
                                    .title = "T\u00e9", .omit_server_info_meta = omit},
            NULL);
        assert_non_null(srv);
        add(srv, &(mcp_tool_t){.name = "shaped", .handler = shaped});
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
                char *text = NULL, *tree = NULL;
                answer_both_ways(srv, ids[i], shapes[s], &text, &tree);
                if (strcmp(text, tree) != 0)
                    fail_msg("shape %s, omit %d:\n text %s\n tree %s", shapes[s], omit, text,
                             tree);
                /* The shapes differ where they should. */
                assert_true((strstr(text, "\"isError\":true") != NULL) ==
                            (strstr(shapes[s], "error") != NULL));
                assert_null(strstr(text, "hidden"));
                if (strcmp(shapes[s], "texts") == 0)
                    assert_non_null(strstr(text, "\"content\":[{\"type\":\"text\",\"text\":"
                                                 "\"first\"},{\"type\":\"text\",\"text\":"
                                                 "\"second\"}]"));
                if (strcmp(shapes[s], "text_error") == 0 || strcmp(shapes[s], "bad_utf8") == 0)
                    assert_non_null(strstr(text, strcmp(shapes[s], "bad_utf8") == 0
                                                     ? "[{\"type\":\"text\",\"text\":\"kept\"}]"
                                                     : "\"text\":\"partial output\"},{"));
                assert_true((strstr(text, "serverInfo") != NULL) == !omit);
                assert_true(strstr(text, "\"resultType\":\"complete\"") != NULL);
                free(text);
                free(tree);
            }
        }
        mcp_server_free(srv);
    }
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        json_decref(ids[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_of_every_kind),
        cmocka_unit_test(test_bad_content_is_refused),
        cmocka_unit_test(test_no_content_is_an_empty_array),
        cmocka_unit_test(test_structured_content),
        cmocka_unit_test(test_tool_error_result),
        cmocka_unit_test(test_handler_errors),
        cmocka_unit_test(test_unknown_tool),
        cmocka_unit_test(test_malformed_call_params),
        cmocka_unit_test(test_reading_arguments),
        cmocka_unit_test(test_reading_the_request),
        cmocka_unit_test(test_result_meta),
        cmocka_unit_test(test_required_capabilities),
        cmocka_unit_test(test_param_headers),
        cmocka_unit_test(test_tool_definitions_are_listed),
        cmocka_unit_test(test_registration_errors),
        cmocka_unit_test(test_add_tool_json),
        cmocka_unit_test(test_text_answer_is_the_tree_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
