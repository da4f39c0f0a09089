/* Builders of 2026-07-28 requests and their HTTP headers; see modern_request.h. */
#define _GNU_SOURCE

#include "modern_request.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "mcp/header_value.h"
#include "mcp/request.h"

static json_t *default_meta(void)
{
    return json_pack("{s:s, s:{}, s:{s:s, s:s}}", MCP_META_PROTOCOL_VERSION, MODERN_VERSION,
                     MCP_META_CLIENT_CAPABILITIES, MCP_META_CLIENT_INFO, "name", "libmcp-tests",
                     "version", "1.0.0");
}

static json_t *build(json_t *id_new, const char *method, json_t *params_new)
{
    json_t *params = params_new ? params_new : json_object();
    assert_true(json_is_object(params));
    if (!json_object_get(params, "_meta"))
        json_object_set_new(params, "_meta", default_meta());
    json_t *req = json_pack("{s:s, s:o, s:s, s:o}", "jsonrpc", "2.0", "id", id_new, "method",
                            method, "params", params);
    assert_non_null(req);
    return req;
}

json_t *modern_request(json_int_t id, const char *method, json_t *params_new)
{
    return build(json_integer(id), method, params_new);
}

json_t *modern_request_sid(const char *id, const char *method, json_t *params_new)
{
    return build(json_string(id), method, params_new);
}

json_t *modern_meta(json_t *request)
{
    json_t *meta = json_object_get(json_object_get(request, "params"), "_meta");
    assert_non_null(meta);
    return meta;
}

void modern_set_capabilities(json_t *request, const char *caps)
{
    json_t *parsed = json_loads(caps, 0, NULL);
    assert_true(json_is_object(parsed));
    json_object_set_new(modern_meta(request), MCP_META_CLIENT_CAPABILITIES, parsed);
}

json_t *modern_retry(const json_t *request, json_int_t id, json_t *input_responses_new,
                     const char *request_state)
{
    json_t *retry = json_deep_copy(request);
    json_t *params = json_object_get(retry, "params");
    json_object_set_new(retry, "id", json_integer(id));
    if (input_responses_new)
        json_object_set_new(params, "inputResponses", input_responses_new);
    if (request_state)
        json_object_set_new(params, "requestState", json_string(request_state));
    return retry;
}

json_t *modern_cancel_notification(const json_t *id)
{
    return json_pack("{s:s, s:s, s:{s:O}}", "jsonrpc", "2.0", "method",
                     "notifications/cancelled", "params", "requestId", id);
}

static const char *keep(modern_http_headers_t *h, char *s)
{
    assert_non_null(s);
    assert_true(h->n_owned < sizeof h->owned / sizeof h->owned[0]);
    h->owned[h->n_owned++] = s;
    return s;
}

void modern_http_headers_add(modern_http_headers_t *h, const char *name, const char *value)
{
    assert_true(h->list.count < MODERN_HTTP_MAX_HEADERS);
    h->items[h->list.count].name = keep(h, strdup(name));
    h->items[h->list.count].value = keep(h, strdup(value));
    h->list.count++;
}

void modern_http_headers_remove(modern_http_headers_t *h, const char *name)
{
    size_t kept = 0;
    for (size_t i = 0; i < h->list.count; i++)
        if (strcasecmp(h->items[i].name, name) != 0)
            h->items[kept++] = h->items[i];
    h->list.count = kept;
}

void modern_http_headers_init(modern_http_headers_t *h, const json_t *request)
{
    memset(h, 0, sizeof *h);
    h->list.items = h->items;
    const json_t *params = json_object_get(request, "params");
    const char *method = json_string_value(json_object_get(request, "method"));
    const char *version = json_string_value(
        json_object_get(json_object_get(params, "_meta"), MCP_META_PROTOCOL_VERSION));
    assert_non_null(method);
    modern_http_headers_add(h, MCP_HEADER_PROTOCOL_VERSION, version ? version : MODERN_VERSION);
    modern_http_headers_add(h, MCP_HEADER_METHOD, method);
    const char *param = mcp_method_name_param(method);
    const char *name = param ? json_string_value(json_object_get(params, param)) : NULL;
    if (name) {
        char *encoded = NULL;
        assert_int_equal(mcp_header_value_encode(name, strlen(name), &encoded), MCP_OK);
        modern_http_headers_add(h, MCP_HEADER_NAME, encoded);
        free(encoded);
    }
}

void modern_http_headers_cleanup(modern_http_headers_t *h)
{
    for (size_t i = 0; i < h->n_owned; i++)
        free(h->owned[i]);
    memset(h, 0, sizeof *h);
}

mcp_request_context_t modern_http_context(const modern_http_headers_t *h, const char *principal)
{
    return (mcp_request_context_t){
        .transport = MCP_TRANSPORT_HTTP, .headers = &h->list, .principal = principal};
}
