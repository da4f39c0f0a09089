/*
 * What the client puts on the wire: the request with its _meta, the HTTP
 * hints, client capabilities built from the callbacks, and the answers and
 * retry params of MRTR rounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/client_internal.h"
#include "client_fake_transport.h"
#include "mcp/mcp.h"
#include "schema_check.h"

static json_t *meta_of(const json_t *request)
{
    return json_object_get(json_object_get(request, "params"), "_meta");
}

/* ------------------------------------------------------------------------
 * Requests
 * ------------------------------------------------------------------------ */

static void test_request_meta(void **state)
{
    json_t *caps = json_pack("{s:{s:{}}}", "elicitation", "form");
    json_t *info = json_pack("{s:s, s:s}", "name", "c", "version", "1");
    client_meta_t meta = {"2026-07-28", caps, info, NULL};
    json_t *params = json_pack("{s:s, s:{s:s}, s:{s:s, s:s}}", "name", "echo", "arguments", "text",
                               "hi", "_meta", "traceparent", "00-abc",
                               "io.modelcontextprotocol/protocolVersion", "1999-01-01");

    json_t *req = client_request_build(7, "tools/call", params, &meta, false);
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(req, "CallToolRequest", "2026-07-28");
    assert_int_equal(json_integer_value(json_object_get(req, "id")), 7);
    json_t *m = meta_of(req);
    assert_string_equal(json_string_value(json_object_get(m, MCP_META_PROTOCOL_VERSION)),
                        "2026-07-28"); /* the reserved key is ours */
    assert_true(json_equal(json_object_get(m, MCP_META_CLIENT_CAPABILITIES), caps));
    assert_true(json_equal(json_object_get(m, MCP_META_CLIENT_INFO), info));
    assert_string_equal(json_string_value(json_object_get(m, "traceparent")), "00-abc");
    assert_null(json_object_get(m, MCP_META_LOG_LEVEL));
    assert_null(json_object_get(m, "progressToken"));
    /* The caller's params are not modified. */
    assert_string_equal(json_string_value(json_object_get(json_object_get(params, "_meta"),
                                                          MCP_META_PROTOCOL_VERSION)),
                        "1999-01-01");
    json_decref(req);

    /* With progress and a log level; a request without params still has
     * params with _meta. */
    meta.log_level = "warning";
    meta.client_info = NULL;
    req = client_request_build(9, "tools/list", NULL, &meta, true);
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(req, "ListToolsRequest", "2026-07-28");
    m = meta_of(req);
    assert_int_equal(json_integer_value(json_object_get(m, "progressToken")), 9);
    assert_string_equal(json_string_value(json_object_get(m, MCP_META_LOG_LEVEL)), "warning");
    assert_null(json_object_get(m, MCP_META_CLIENT_INFO));
    json_decref(req);

    req = client_request_build(1, "server/discover", NULL, &meta, false);
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(req, "DiscoverRequest", "2026-07-28");
    json_decref(req);
    json_decref(params);
    json_decref(caps);
    json_decref(info);
}

/* ------------------------------------------------------------------------
 * Hints
 * ------------------------------------------------------------------------ */

static void test_hints_name(void **state)
{
    static const struct {
        const char *method;
        const char *params;
        const char *name;
    } cases[] = {
        {"tools/call", "{\"name\":\"echo\"}", "echo"},
        {"prompts/get", "{\"name\":\"p\"}", "p"},
        {"resources/read", "{\"uri\":\"file:///x y\"}", "file:///x y"},
        {"tools/list", "{\"name\":\"no\"}", NULL},
        {"completion/complete", "{}", NULL},
        {"server/discover", "{}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *p = json_loads(cases[i].params, 0, NULL);
        client_hints_t h;
        assert_int_equal(client_hints_build(&h, "2026-07-28", cases[i].method, p, NULL), MCP_OK);
        assert_string_equal(h.h.protocol_version, "2026-07-28");
        assert_string_equal(h.h.method, cases[i].method);
        if (cases[i].name)
            assert_string_equal(h.h.name, cases[i].name);
        else
            assert_null(h.h.name);
        assert_int_equal(h.h.n_params, 0);
        assert_false(h.h.long_lived);
        client_hints_clear(&h);
        json_decref(p);
    }
    client_hints_t h;
    assert_int_equal(client_hints_build(&h, "2026-07-28", "subscriptions/listen", NULL, NULL),
                     MCP_OK);
    assert_true(h.h.long_lived);
    client_hints_clear(&h);
}

static void test_hints_param_headers(void **state)
{
    json_t *schema = json_loads(
        "{\"type\":\"object\",\"properties\":{"
        "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
        "\"count\":{\"type\":\"integer\",\"x-mcp-header\":\"Count\"},"
        "\"flag\":{\"type\":\"boolean\",\"x-mcp-header\":\"Flag\"},"
        "\"gone\":{\"type\":\"string\",\"x-mcp-header\":\"Gone\"},"
        "\"nil\":{\"type\":[\"string\",\"null\"],\"x-mcp-header\":\"Nil\"},"
        "\"wrong\":{\"type\":\"integer\",\"x-mcp-header\":\"Wrong\"},"
        "\"deep\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\","
        "\"x-mcp-header\":\"Deep\"}}}}}",
        0, NULL);
    mcp_param_headers_t annotations = {0};
    assert_int_equal(mcp_xmcp_headers_collect(schema, &annotations, NULL), MCP_OK);
    json_t *params = json_loads(
        "{\"name\":\"t\",\"arguments\":{\"region\":\" padded \",\"count\":-7,\"flag\":true,"
        "\"nil\":null,\"wrong\":1.5,\"deep\":{\"id\":\"Hello, 世界\"}}}",
        0, NULL);
    client_hints_t h;
    assert_int_equal(client_hints_build(&h, "2026-07-28", "tools/call", params, &annotations),
                     MCP_OK);
    static const char *const expect[][2] = {{"Region", "=?base64?IHBhZGRlZCA=?="},
                                            {"Count", "-7"},
                                            {"Flag", "true"},
                                            {"Deep", "=?base64?SGVsbG8sIOS4lueVjA==?="}};
    assert_int_equal(h.h.n_params, 4); /* absent, null and unencodable left out */
    for (size_t i = 0; i < 4; i++) {
        bool found = false;
        for (size_t j = 0; j < h.h.n_params; j++)
            if (strcmp(h.h.params[j].name, expect[i][0]) == 0) {
                assert_string_equal(h.h.params[j].value, expect[i][1]);
                found = true;
            }
        assert_true(found);
    }
    client_hints_clear(&h);
    /* Only tools/call mirrors arguments. */
    assert_int_equal(client_hints_build(&h, "2026-07-28", "prompts/get", params, &annotations),
                     MCP_OK);
    assert_int_equal(h.h.n_params, 0);
    client_hints_clear(&h);
    mcp_param_headers_clear(&annotations);
    json_decref(params);
    json_decref(schema);
}

/* ------------------------------------------------------------------------
 * Capabilities from the callbacks that are set
 * ------------------------------------------------------------------------ */

static int elicit(void *u, const json_t *p, json_t **out) { return -1; }
static int sample(void *u, const json_t *p, json_t **out) { return -1; }
static int roots(void *u, json_t **out) { return -1; }

static json_t *discover_only(void *user, fake_transport_t *ft, const json_t *req)
{
    return fake_result(req, fake_discover_result());
}

/* The capabilities the client sends, read off its first request. */
static json_t *sent_capabilities(const mcp_client_options_t *o)
{
    mcp_client_t *c = mcp_client_new(o, NULL);
    assert_non_null(c);
    fake_transport_t *ft = fake_transport_connect(c, discover_only, NULL);
    assert_non_null(ft);
    json_t *reqs = fake_requests(ft);
    json_t *first = json_array_get(reqs, 0);
    MCP_ASSERT_SCHEMA_DEFINITION_VALID(first, "DiscoverRequest", "2026-07-28");
    json_t *caps = json_incref(json_object_get(meta_of(first), MCP_META_CLIENT_CAPABILITIES));
    json_t *info = json_object_get(meta_of(first), MCP_META_CLIENT_INFO);
    assert_string_equal(json_string_value(json_object_get(info, "name")), o->name);
    json_decref(reqs);
    mcp_client_free(c);
    return caps;
}

static void test_capabilities_from_callbacks(void **state)
{
    static const struct {
        mcp_client_options_t o;
        const char *caps;
    } cases[] = {
        {{.name = "c", .version = "1"}, "{}"},
        {{.name = "c", .version = "1", .elicit = elicit}, "{\"elicitation\":{\"form\":{}}}"},
        {{.name = "c", .version = "1", .elicit = elicit, .elicit_modes = MCP_ELICIT_URL},
         "{\"elicitation\":{\"url\":{}}}"},
        {{.name = "c", .version = "1", .elicit = elicit,
          .elicit_modes = MCP_ELICIT_URL | MCP_ELICIT_FORM},
         "{\"elicitation\":{\"form\":{},\"url\":{}}}"},
        {{.name = "c", .version = "1", .elicit_modes = MCP_ELICIT_URL}, "{}"},
        {{.name = "c", .version = "1", .sample = sample}, "{\"sampling\":{}}"},
        {{.name = "c", .version = "1", .sample = sample, .sample_tools = true},
         "{\"sampling\":{\"tools\":{}}}"},
        {{.name = "c", .version = "1", .sample_tools = true}, "{}"},
        {{.name = "c", .version = "1", .roots = roots}, "{\"roots\":{}}"},
        {{.name = "c", .version = "1", .roots = roots, .sample = sample, .elicit = elicit},
         "{\"roots\":{},\"sampling\":{},\"elicitation\":{\"form\":{}}}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *caps = sent_capabilities(&cases[i].o);
        json_t *expect = json_loads(cases[i].caps, 0, NULL);
        if (!json_equal(caps, expect)) {
            char *got = json_dumps(caps, JSON_COMPACT);
            fail_msg("case %zu: got %s, want %s", i, got, cases[i].caps);
        }
        json_decref(caps);
        json_decref(expect);
    }
}

/* ------------------------------------------------------------------------
 * MRTR answers and retry params
 * ------------------------------------------------------------------------ */

typedef struct answers {
    int rc;
    json_t *result;
    int calls;
} answers_t;

static int answer(answers_t *a, json_t **out)
{
    a->calls++;
    *out = a->result ? json_deep_copy(a->result) : NULL;
    return a->rc;
}
static int a_elicit(void *u, const json_t *p, json_t **out) { return answer(u, out); }
static int a_sample(void *u, const json_t *p, json_t **out) { return answer(u, out); }
static int a_roots(void *u, json_t **out) { return answer(u, out); }

static const char *action_of(const json_t *responses, const char *key)
{
    return json_string_value(json_object_get(json_object_get(responses, key), "action"));
}

static void test_answers(void **state)
{
    answers_t a = {0, NULL, 0};
    json_t *caps_form = json_loads("{\"elicitation\":{\"form\":{}}}", 0, NULL);
    client_input_handlers_t h = {caps_form, a_elicit, &a, NULL, NULL, NULL, NULL};
    json_t *form = json_loads("{\"q\":{\"method\":\"elicitation/create\",\"params\":"
                              "{\"message\":\"m\",\"requestedSchema\":{\"type\":\"object\"}}}}",
                              0, NULL);
    json_t *url = json_loads("{\"q\":{\"method\":\"elicitation/create\",\"params\":"
                             "{\"mode\":\"url\",\"message\":\"m\",\"url\":\"https://x\"}}}",
                             0, NULL);
    json_t *responses = NULL;
    mcp_error_t err = {0};

    a.result = json_pack("{s:s, s:{s:s}}", "action", "accept", "content", "name", "n");
    assert_int_equal(client_answer_inputs(&h, form, &responses, &err), MCP_OK);
    assert_string_equal(action_of(responses, "q"), "accept");
    json_decref(responses);

    /* A negative return is a cancel, never an invented answer. */
    a.rc = -1;
    assert_int_equal(client_answer_inputs(&h, form, &responses, &err), MCP_OK);
    assert_string_equal(action_of(responses, "q"), "cancel");
    assert_null(json_object_get(json_object_get(responses, "q"), "content"));
    json_decref(responses);

    /* A mode the client did not declare is declined without asking. */
    a.calls = 0;
    assert_int_equal(client_answer_inputs(&h, url, &responses, &err), MCP_OK);
    assert_string_equal(action_of(responses, "q"), "decline");
    assert_int_equal(a.calls, 0);
    json_decref(responses);

    /* So is any elicitation when no callback is set. */
    client_input_handlers_t none = {json_object(), NULL, NULL, NULL, NULL, NULL, NULL};
    assert_int_equal(client_answer_inputs(&none, form, &responses, &err), MCP_OK);
    assert_string_equal(action_of(responses, "q"), "decline");
    json_decref(responses);

    /* A callback that returns 0 without an object is a programming error. */
    a.rc = 0;
    json_decref(a.result);
    a.result = NULL;
    assert_int_equal(client_answer_inputs(&h, form, &responses, &err), MCP_EINVAL);
    assert_null(responses);

    json_decref((json_t *)none.capabilities);
    json_decref(caps_form);
    json_decref(form);
    json_decref(url);
    mcp_error_clear(&err);
}

static void test_sampling_and_roots(void **state)
{
    answers_t a = {0, NULL, 0};
    json_t *caps = json_loads("{\"sampling\":{},\"roots\":{}}", 0, NULL);
    client_input_handlers_t h = {caps, NULL, NULL, a_sample, &a, a_roots, &a};
    json_t *sampling = json_loads("{\"s\":{\"method\":\"sampling/createMessage\",\"params\":"
                                  "{\"messages\":[],\"maxTokens\":5}}}",
                                  0, NULL);
    json_t *with_tools = json_loads("{\"s\":{\"method\":\"sampling/createMessage\",\"params\":"
                                    "{\"messages\":[],\"maxTokens\":5,\"tools\":[]}}}",
                                    0, NULL);
    json_t *roots_req = json_loads("{\"r\":{\"method\":\"roots/list\"}}", 0, NULL);
    json_t *unknown = json_loads("{\"x\":{\"method\":\"ping\"}}", 0, NULL);
    json_t *malformed = json_loads("{\"x\":{\"params\":{}}}", 0, NULL);
    json_t *responses = NULL;
    mcp_error_t err = {0};

    a.result = json_pack("{s:s, s:{s:s, s:s}, s:s}", "role", "assistant", "content", "type",
                         "text", "text", "hi", "model", "m");
    assert_int_equal(client_answer_inputs(&h, sampling, &responses, &err), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(json_object_get(responses, "s"),
                                                          "model")),
                        "m");
    json_decref(responses);
    /* tools need sampling.tools, which was not declared: abandoned. */
    assert_int_equal(client_answer_inputs(&h, with_tools, &responses, &err), MCP_EPROTO);
    /* The callback refusing abandons the call with its code. */
    a.rc = MCP_ECANCELED;
    assert_int_equal(client_answer_inputs(&h, sampling, &responses, &err), MCP_ECANCELED);
    assert_int_equal(client_answer_inputs(&h, roots_req, &responses, &err), MCP_ECANCELED);
    a.rc = 0;
    json_decref(a.result);
    a.result = json_pack("{s:[{s:s}]}", "roots", "uri", "file:///w");
    assert_int_equal(client_answer_inputs(&h, roots_req, &responses, &err), MCP_OK);
    json_decref(responses);
    /* Not declared at all: never answered. */
    client_input_handlers_t bare = {json_object(), NULL, NULL, NULL, NULL, NULL, NULL};
    assert_int_equal(client_answer_inputs(&bare, sampling, &responses, &err), MCP_EPROTO);
    assert_int_equal(client_answer_inputs(&bare, roots_req, &responses, &err), MCP_EPROTO);
    assert_int_equal(client_answer_inputs(&h, unknown, &responses, &err), MCP_EPROTO);
    assert_int_equal(client_answer_inputs(&h, malformed, &responses, &err), MCP_EPROTO);
    assert_null(responses);

    json_decref((json_t *)bare.capabilities);
    json_decref(a.result);
    json_decref(caps);
    json_decref(sampling);
    json_decref(with_tools);
    json_decref(roots_req);
    json_decref(unknown);
    json_decref(malformed);
    mcp_error_clear(&err);
}

static void test_retry_params(void **state)
{
    json_t *base = json_pack("{s:s, s:{s:i}, s:{s:{}}, s:s}", "name", "t", "arguments", "n", 1,
                             "inputResponses", "old", "requestState", "old");
    json_t *responses = json_pack("{s:{s:s}}", "k", "action", "accept");
    json_t *rs = json_string("opaque\u00e9 state/+==");
    json_t *p = client_retry_params(base, responses, rs);
    assert_string_equal(json_string_value(json_object_get(p, "name")), "t");
    assert_true(json_equal(json_object_get(p, "inputResponses"), responses));
    assert_true(json_equal(json_object_get(p, "requestState"), rs));
    json_decref(p);
    /* No requestState given: none sent (and the previous round's dropped). */
    p = client_retry_params(base, responses, NULL);
    assert_null(json_object_get(p, "requestState"));
    json_decref(p);
    p = client_retry_params(base, NULL, rs);
    assert_null(json_object_get(p, "inputResponses"));
    json_decref(p);
    json_decref(base);
    json_decref(responses);
    json_decref(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_meta),
        cmocka_unit_test(test_hints_name),
        cmocka_unit_test(test_hints_param_headers),
        cmocka_unit_test(test_capabilities_from_callbacks),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_sampling_and_roots),
        cmocka_unit_test(test_retry_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
