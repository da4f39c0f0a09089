/*
 * The endpoint's HTTP-level rules as tables: Accept negotiation,
 * Content-Type, path matching, Content-Length, and the Host / Origin
 * guards against DNS rebinding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "transport/http_rules.h"

/* Headers with one named header of each given value (NULL ends). */
static mcp_headers_t headers_of(mcp_header_t *items, const char *name, const char *const *values)
{
    size_t n = 0;
    for (; values[n]; n++)
        items[n] = (mcp_header_t){name, values[n]};
    return (mcp_headers_t){items, n};
}

static void test_accept(void **state)
{
    static const struct {
        const char *values[3];
        bool json, sse;
    } rows[] = {
        {{NULL}, true, true}, /* no Accept: anything goes */
        {{""}, true, true},
        {{"application/json, text/event-stream"}, true, true},
        {{"application/json"}, true, false},
        {{"text/event-stream"}, false, true},
        {{"APPLICATION/JSON"}, true, false},
        {{"*/*"}, true, true},
        {{"application/*"}, true, false},
        {{"text/*"}, false, true},
        {{"image/png"}, false, false},
        {{"text/html, image/png"}, false, false},
        {{"application/json;q=0"}, false, false},
        {{"application/json;q=0.0, text/event-stream"}, false, true},
        {{"application/json ; q=0.5"}, true, false},
        {{"application/json;q=1.000"}, true, false},
        {{"application/json;q=1.5"}, false, false},  /* malformed q: element skipped */
        {{"application/json;q=0.0001"}, false, false},
        {{"*/*;q=0, application/json"}, true, false},
        {{"application/json;q=0, */*"}, false, true}, /* the specific range wins */
        {{"application/*;q=0, application/json"}, true, false},
        {{"application/json;charset=\"utf-8,x\", image/png"}, true, false},
        {{"application/json;level"}, false, false},   /* parameter without value */
        {{"*/json"}, false, false},
        {{"application", "text/event-stream"}, false, true},
        {{"application/json", "text/event-stream"}, true, true}, /* repeats form one list */
        {{" , ,application/json"}, true, false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_header_t items[3];
        mcp_headers_t h = headers_of(items, "Accept", rows[i].values);
        http_accept_t a;
        http_accept_read(&h, &a);
        print_message("Accept %s | %s\n", rows[i].values[0] ? rows[i].values[0] : "(none)",
                      rows[i].values[1] ? rows[i].values[1] : "");
        assert_int_equal(a.json, rows[i].json);
        assert_int_equal(a.sse, rows[i].sse);
    }
    /* The header name is case-insensitive. */
    mcp_header_t item = {"aCcEpT", "image/png"};
    http_accept_t a;
    http_accept_read(&(mcp_headers_t){&item, 1}, &a);
    assert_false(a.json || a.sse);
}

static void test_content_type(void **state)
{
    static const struct {
        const char *values[3];
        bool json;
    } rows[] = {
        {{"application/json"}, true},
        {{"Application/JSON"}, true},
        {{"  application/json  "}, true},
        {{"application/json; charset=utf-8"}, true},
        {{"application/json ;charset=utf-8"}, true},
        {{NULL}, false},
        {{""}, false},
        {{"text/plain"}, false},
        {{"application/json-seq"}, false},
        {{"application/jsonx"}, false},
        {{"application/vnd.api+json"}, false},
        {{"application/json", "application/json"}, false}, /* ambiguous */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_header_t items[3];
        mcp_headers_t h = headers_of(items, "Content-Type", rows[i].values);
        assert_int_equal(http_content_type_is_json(&h), rows[i].json);
    }
}

static void test_path(void **state)
{
    assert_true(http_path_matches("/mcp", "/mcp"));
    assert_true(http_path_matches("/mcp?x=1", "/mcp"));
    assert_true(http_path_matches("/mcp#f", "/mcp"));
    assert_false(http_path_matches("/mcp/", "/mcp"));
    assert_false(http_path_matches("/MCP", "/mcp"));
    assert_false(http_path_matches("/mc", "/mcp"));
    assert_false(http_path_matches("/mcpx", "/mcp"));
    assert_false(http_path_matches("", "/mcp"));
    assert_false(http_path_matches(NULL, "/mcp"));
    assert_true(http_path_matches("/", "/"));
}

static void test_content_length(void **state)
{
    static const struct {
        const char *values[3];
        bool ok;
        uint64_t n;
    } rows[] = {
        {{"0"}, true, 0},
        {{"4096"}, true, 4096},
        {{" 12 "}, true, 12},
        {{"18446744073709551615"}, true, UINT64_MAX},
        {{"18446744073709551616"}, false, 0},
        {{"99999999999999999999999"}, false, 0},
        {{NULL}, false, 0},
        {{""}, false, 0},
        {{"-1"}, false, 0},
        {{"1e3"}, false, 0},
        {{"12 34"}, false, 0},
        {{"5", "5"}, false, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_header_t items[3];
        mcp_headers_t h = headers_of(items, "Content-Length", rows[i].values);
        uint64_t n = 7;
        assert_int_equal(http_content_length(&h, &n), rows[i].ok);
        if (rows[i].ok)
            assert_true(n == rows[i].n);
    }
}

static const char *const ALLOWED_HOSTS[] = {"mcp.example.com", "api.example.com:8443", NULL};
static const char *const ANY[] = {"*", NULL};

static void test_host(void **state)
{
    static const struct {
        const char *values[3];
        const char *const *allowed;
        bool ok;
    } rows[] = {
        /* The loopback names the conformance suite accepts. */
        {{"localhost"}, NULL, true},
        {{"localhost:3000"}, NULL, true},
        {{"LOCALHOST:3000"}, NULL, true},
        {{"127.0.0.1"}, NULL, true},
        {{"127.0.0.1:65535"}, NULL, true},
        {{"[::1]"}, NULL, true},
        {{"[::1]:8080"}, NULL, true},
        {{NULL}, NULL, true}, /* no browser sends a request without Host */
        /* And what they reject. */
        {{"evil.example.com"}, NULL, false},
        {{"evil.example.com:80"}, NULL, false},
        {{"localhost.evil.example.com"}, NULL, false},
        {{"127.0.0.1.nip.io"}, NULL, false},
        {{"localhost:"}, NULL, false},
        {{"localhost:123456"}, NULL, false},
        {{"localhost:80x"}, NULL, false},
        {{"[::1"}, NULL, false},
        {{"::1"}, NULL, false},
        {{""}, NULL, false},
        {{"localhost", "evil.example.com"}, NULL, false},
        {{"localhost", "localhost"}, NULL, false}, /* two Hosts: refused */
        /* Allow-lists. */
        {{"mcp.example.com"}, ALLOWED_HOSTS, true},
        {{"MCP.example.com:443"}, ALLOWED_HOSTS, true},
        {{"api.example.com:8443"}, ALLOWED_HOSTS, true},
        {{"api.example.com"}, ALLOWED_HOSTS, false},
        {{"api.example.com:443"}, ALLOWED_HOSTS, false},
        {{"example.com"}, ALLOWED_HOSTS, false},
        {{"localhost:1"}, ALLOWED_HOSTS, true},
        {{"anything.at.all:1"}, ANY, true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_header_t items[3];
        mcp_headers_t h = headers_of(items, "Host", rows[i].values);
        print_message("Host %s\n", rows[i].values[0] ? rows[i].values[0] : "(none)");
        assert_int_equal(http_host_allowed(&h, rows[i].allowed), rows[i].ok);
    }
    assert_true(http_host_is_loopback(" localhost:1 "));
    assert_false(http_host_is_loopback("example.com"));
}

static const char *const ALLOWED_ORIGINS[] = {"https://app.example", NULL};

static void test_origin(void **state)
{
    static const struct {
        const char *values[3];
        const char *const *allowed;
        bool ok;
    } rows[] = {
        {{NULL}, NULL, true}, /* not a browser */
        {{"http://localhost"}, NULL, true},
        {{"http://localhost:5173"}, NULL, true},
        {{"https://127.0.0.1:8443"}, NULL, true},
        {{"http://[::1]:1"}, NULL, true},
        {{"HTTP://LOCALHOST"}, NULL, true},
        {{"http://evil.example.com"}, NULL, false},
        {{"http://localhost.evil.example.com"}, NULL, false},
        {{"http://localhost/path"}, NULL, false},
        {{"ftp://localhost"}, NULL, false},
        {{"localhost"}, NULL, false},
        {{"null"}, NULL, false},
        {{""}, NULL, false},
        {{"http://localhost", "http://localhost"}, NULL, false},
        {{"https://app.example"}, ALLOWED_ORIGINS, true},
        {{"HTTPS://APP.EXAMPLE"}, ALLOWED_ORIGINS, true},
        {{"https://app.example:443"}, ALLOWED_ORIGINS, false},
        {{"http://app.example"}, ALLOWED_ORIGINS, false},
        {{"https://evil.example"}, ANY, true},
        {{"null"}, ANY, true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mcp_header_t items[3];
        mcp_headers_t h = headers_of(items, "Origin", rows[i].values);
        print_message("Origin %s\n", rows[i].values[0] ? rows[i].values[0] : "(none)");
        assert_int_equal(http_origin_allowed(&h, rows[i].allowed), rows[i].ok);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept),        cmocka_unit_test(test_content_type),
        cmocka_unit_test(test_path),          cmocka_unit_test(test_content_length),
        cmocka_unit_test(test_host),          cmocka_unit_test(test_origin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
