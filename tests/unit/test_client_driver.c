/*
 * The client core against a scripted transport: connecting, the MRTR
 * driver, version and Mcp-Param retries, result types, the cache, timeouts,
 * cancellation, progress, logs and listen (and a listen callback that
 * falls behind: at most MCP_LISTEN_MAX_PENDING events wait for it).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "client/client_internal.h"
#include "client_fake_transport.h"
#include "mcp/mcp.h"

/* ------------------------------------------------------------------------
 * A scriptable server
 * ------------------------------------------------------------------------ */

typedef struct server {
    json_t *(*tools_call)(struct server *s, fake_transport_t *ft, const json_t *req);
    json_t *tools;          /* tools/list result's tools */
    json_int_t ttl;         /* ttlMs of cacheable results */
    int calls;              /* tools/call seen */
    int mismatches;         /* -32020 about Mcp-Param to send first */
    int version_refusals;   /* -32022 to send first */
    bool hang;              /* leave tools/call in flight */
    bool listen_ack;        /* acknowledge subscriptions/listen */
    mcp_client_t *changes;  /* tools/list: the list changes (this client is
                               told so) while the answer is on its way */
    const char *list_type;  /* tools/list's resultType (NULL: "complete") */
} server_t;

static json_t *respond(void *user, fake_transport_t *ft, const json_t *req)
{
    server_t *s = user;
    const char *m = fake_method(req);
    if (s->version_refusals > 0 && strcmp(m, "server/discover") != 0) {
        s->version_refusals--;
        return fake_error(req, -32022, "Unsupported protocol version",
                          json_pack("{s:[s], s:s}", "supported", "2026-07-28", "requested",
                                    "2027-03-01"));
    }
    if (strcmp(m, "server/discover") == 0)
        return fake_result(req, fake_discover_result());
    if (strcmp(m, "tools/list") == 0 && s->changes)
        client_invalidate_for(s->changes, "notifications/tools/list_changed", NULL);
    if (strcmp(m, "tools/list") == 0)
        return fake_result(req, json_pack("{s:s, s:o, s:I, s:s}", "resultType",
                                          s->list_type ? s->list_type : "complete",
                                          "tools", s->tools ? json_incref(s->tools) : json_array(),
                                          "ttlMs",
                                          s->ttl, "cacheScope", "private"));
    if (strcmp(m, "resources/read") == 0)
        return fake_result(req, json_pack("{s:s, s:[{s:s, s:s}], s:I, s:s}", "resultType",
                                          "complete", "contents", "uri", "x:/a", "text", "A",
                                          "ttlMs", s->ttl, "cacheScope", "private"));
    if (strcmp(m, "subscriptions/listen") == 0) {
        if (!s->listen_ack)
            return fake_error(req, -32601, "Method not found", NULL);
        json_t *ack = json_pack("{s:s, s:s, s:{s:{s:I}, s:O}}", "jsonrpc", "2.0", "method",
                                "notifications/subscriptions/acknowledged", "params", "_meta",
                                "io.modelcontextprotocol/subscriptionId", fake_id(req),
                                "notifications",
                                json_object_get(fake_params(req), "notifications"));
        fake_emit(ft, fake_id(req), ack);
        json_decref(ack);
        return NULL;
    }
    if (strcmp(m, "tools/call") == 0) {
        s->calls++;
        if (s->hang)
            return NULL;
        if (s->mismatches > 0) {
            s->mismatches--;
            return fake_error(req, -32020, "Header mismatch",
                              json_pack("{s:{s:s, s:n, s:s}}", "mismatch", "header",
                                        "Mcp-Param-Region", "received", "expected", "x"));
        }
        if (s->tools_call)
            return s->tools_call(s, ft, req);
        return fake_result(req, json_pack("{s:s, s:[]}", "resultType", "complete", "content"));
    }
    return fake_error(req, -32601, "Method not found", NULL);
}

typedef struct fixture {
    server_t server;
    fake_transport_t *ft;
    mcp_client_t *c;
    int warnings;
} fixture_t;

static void count_warnings(void *user, mcp_log_level_t level, const char *msg)
{
    if (level == MCP_LOG_WARNING)
        ((fixture_t *)user)->warnings++;
}

static int elicit_accept(void *user, const json_t *params, json_t **out)
{
    (*(int *)user)++;
    *out = json_pack("{s:s, s:{s:b}}", "action", "accept", "content", "ok", 1);
    return 0;
}

static int elicit_calls;

static void connect_fixture(fixture_t *f, mcp_transport_kind_t kind, mcp_client_options_t *o)
{
    mcp_client_options_t defaults = {.name = "test", .version = "1", .log = count_warnings,
                                     .log_user = f, .elicit = elicit_accept,
                                     .elicit_user = &elicit_calls};
    if (!o)
        o = &defaults;
    f->c = mcp_client_new(o, NULL);
    assert_non_null(f->c);
    f->ft = fake_transport_new(f->c, respond, &f->server);
    mcp_error_t err = {0};
    assert_int_equal(client_connect_transport(f->c, fake_transport_base(f->ft), kind, &err),
                     MCP_OK);
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->server.ttl = 60000;
    elicit_calls = 0;
    connect_fixture(f, MCP_TRANSPORT_STDIO, NULL);
    *state = f;
    return 0;
}

static int setup_http(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->server.ttl = 60000;
    f->server.tools = json_pack("[{s:s, s:{s:s, s:{s:{s:s, s:s}}}}]", "name", "weather",
                                "inputSchema", "type", "object", "properties", "region", "type",
                                "string", "x-mcp-header", "Region");
    elicit_calls = 0;
    connect_fixture(f, MCP_TRANSPORT_HTTP, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->c);
    json_decref(f->server.tools);
    free(f);
    return 0;
}

static json_t *request_at(fixture_t *f, size_t i)
{
    json_t *all = fake_requests(f->ft);
    json_t *r = json_incref(json_array_get(all, i));
    json_decref(all);
    return r;
}

static size_t n_requests(fixture_t *f)
{
    json_t *all = fake_requests(f->ft);
    size_t n = json_array_size(all);
    json_decref(all);
    return n;
}

static size_t count_method(fixture_t *f, const char *method)
{
    json_t *all = fake_requests(f->ft);
    size_t i, n = 0;
    json_t *r;
    json_array_foreach(all, i, r)
        n += strcmp(fake_method(r), method) == 0;
    json_decref(all);
    return n;
}

/* ------------------------------------------------------------------------
 * Connecting
 * ------------------------------------------------------------------------ */

static void test_connect_discovers(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(mcp_client_era(f->c), MCP_ERA_MODERN);
    assert_string_equal(mcp_client_protocol_version(f->c), "2026-07-28");
    assert_string_equal(json_string_value(json_object_get(mcp_client_server_info(f->c), "name")),
                        "fake");
    json_t *first = request_at(f, 0);
    assert_string_equal(fake_method(first), "server/discover");
    json_decref(first);
    assert_int_equal(fake_outstanding(f->ft), 0);
}

static json_t *respond_bad_discover(void *user, fake_transport_t *ft, const json_t *req)
{
    return fake_result(req, json_pack("{s:s, s:[s], s:{}}", "resultType", "complete",
                                      "supportedVersions", (const char *)user, "capabilities"));
}

/* A DiscoverResult without supportedVersions. */
static json_t *respond_malformed_discover(void *user, fake_transport_t *ft, const json_t *req)
{
    return fake_result(req, json_pack("{s:s, s:{}}", "resultType", "complete", "capabilities"));
}

/* Refuses server/discover for ever with -32022, naming a version the
 * client speaks: a server that does not mean it. */
static json_t *respond_refusing_discover(void *user, fake_transport_t *ft, const json_t *req)
{
    (*(int *)user)++;
    return fake_error(req, -32022, "Unsupported protocol version",
                      json_pack("{s:[s], s:s}", "supported", "2026-07-28", "requested",
                                "2026-07-28"));
}

static void test_connect_failures(void **state)
{
    static const struct {
        const char *versions;
        int rc;
    } cases[] = {{"2099-01-01", MCP_EUNSUPPORTED}, {"2025-11-25", MCP_EUNSUPPORTED}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"},
                                         NULL);
        fake_transport_t *ft =
            fake_transport_new(c, respond_bad_discover, (void *)cases[i].versions);
        mcp_error_t err = {0};
        assert_int_equal(client_connect_transport(c, fake_transport_base(ft), MCP_TRANSPORT_STDIO,
                                                  &err),
                         cases[i].rc);
        assert_int_equal(mcp_client_era(c), MCP_ERA_UNKNOWN);
        json_t *r = NULL;
        assert_int_equal(mcp_client_discover(c, NULL, &r, &err), MCP_ESTATE);
        mcp_error_clear(&err);
        mcp_client_free(c);
    }
    /* A malformed DiscoverResult, and a server that keeps refusing the
     * version it names: connecting fails, after a bounded number of probes. */
    {
        mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"},
                                         NULL);
        fake_transport_t *ft = fake_transport_new(c, respond_malformed_discover, NULL);
        mcp_error_t err = {0};
        assert_int_equal(client_connect_transport(c, fake_transport_base(ft), MCP_TRANSPORT_STDIO,
                                                  &err),
                         MCP_EPROTO);
        assert_non_null(strstr(err.message, "malformed"));
        assert_int_equal(mcp_client_era(c), MCP_ERA_UNKNOWN);
        mcp_error_clear(&err);
        mcp_client_free(c);

        int probes = 0;
        c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"}, NULL);
        ft = fake_transport_new(c, respond_refusing_discover, &probes);
        assert_int_equal(client_connect_transport(c, fake_transport_base(ft), MCP_TRANSPORT_STDIO,
                                                  &err),
                         MCP_EPROTO);
        assert_non_null(strstr(err.message, "keeps refusing"));
        assert_true(probes >= 2 && probes <= 4);
        assert_int_equal(mcp_client_era(c), MCP_ERA_UNKNOWN);
        mcp_error_clear(&err);
        mcp_client_free(c);
    }
    /* A server that exits during the probe, with no restart to try the
     * legacy handshake on a new process: closed. */
    {
        mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"},
                                         NULL);
        mcp_error_t err = {0};
        assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
                             .argv = (const char *const[]){"true", NULL}}, &err),
                         MCP_ECLOSED);
        assert_int_equal(mcp_client_era(c), MCP_ERA_UNKNOWN);
        mcp_error_clear(&err);
        mcp_client_free(c);
    }
    /* The legacy era skips the probe: a server that exits at once fails
     * the initialize handshake. */
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "t", .version = "1", .era = MCP_CLIENT_ERA_LEGACY}, NULL);
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
                         .argv = (const char *const[]){"true", NULL}}, NULL),
                     MCP_ECLOSED);
    assert_int_equal(mcp_client_era(c), MCP_ERA_UNKNOWN);
    mcp_client_free(c);
}

static void test_options_validated(void **state)
{
    mcp_error_t err = {0};
    assert_null(mcp_client_new(&(mcp_client_options_t){.name = "x"}, &err));
    assert_null(mcp_client_new(&(mcp_client_options_t){.name = "x", .version = "1",
                                                       .log_level = "loud"}, &err));
    assert_null(mcp_client_new(&(mcp_client_options_t){.name = "x", .version = "1",
                                                       .protocol_version = "2025-11-25"}, &err));
    assert_null(mcp_client_new(&(mcp_client_options_t){.name = "x", .version = "1",
                                                       .elicit_modes = 8}, &err));
    assert_int_equal(err.rc, MCP_EINVAL); /* what a constructor's NULL meant */
    assert_int_equal(err.code, 0);
    mcp_error_clear(&err);
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "x", .version = "1", .protocol_version = "2026-07-28"}, &err);
    assert_non_null(c);
    mcp_client_free(c);
}

/* ------------------------------------------------------------------------
 * Result types and MRTR
 * ------------------------------------------------------------------------ */

static json_t *call_returns(server_t *s, fake_transport_t *ft, const json_t *req);
static json_t *scripted_result;

static json_t *call_returns(server_t *s, fake_transport_t *ft, const json_t *req)
{
    return fake_result(req, json_deep_copy(scripted_result));
}

static void test_result_types(void **state)
{
    fixture_t *f = *state;
    f->server.tools_call = call_returns;
    static const struct {
        const char *result;
        int rc;
    } cases[] = {
        {"{\"content\":[]}", MCP_OK},                                  /* absent: complete */
        {"{\"resultType\":\"complete\",\"content\":[]}", MCP_OK},
        {"{\"resultType\":\"task\",\"content\":[]}", MCP_EPROTO},      /* not advertised */
        {"{\"resultType\":7,\"content\":[]}", MCP_EPROTO},
        {"{\"resultType\":\"input_required\"}", MCP_EPROTO},           /* neither member */
        {"{\"resultType\":\"input_required\",\"requestState\":5}", MCP_EPROTO},
        {"{\"resultType\":\"input_required\",\"inputRequests\":[]}", MCP_EPROTO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scripted_result = json_loads(cases[i].result, 0, NULL);
        json_t *r = NULL;
        mcp_error_t err = {0};
        int rc = mcp_client_call_tool(f->c, "t", NULL, NULL, &r, &err);
        assert_int_equal(rc, cases[i].rc);
        if (rc == MCP_OK)
            assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
        else
            assert_null(r);
        json_decref(r);
        json_decref(scripted_result);
        mcp_error_clear(&err);
    }
}

/* A resultType of an extension is taken only when the application says it
 * handles it; then the result comes back as it came, and is not cached. */
static void test_extension_result_types(void **state)
{
    fixture_t *f = *state;
    static const char *const core[] = {"complete", NULL};
    static const char *const empty[] = {"", NULL};
    mcp_error_t err = {0};
    assert_null(mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1",
                                                       .extension_result_types = core},
                               &err));
    assert_non_null(strstr(err.message, "core"));
    mcp_error_clear(&err);
    assert_null(mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1",
                                                       .extension_result_types = empty},
                               NULL));

    mcp_client_free(f->c);
    const char *types[] = {"x-partial", NULL};
    mcp_client_options_t o = {.name = "t", .version = "1", .extension_result_types = types};
    connect_fixture(f, MCP_TRANSPORT_STDIO, &o);
    types[0] = "changed after mcp_client_new"; /* the client keeps its own copy */
    f->server.tools_call = call_returns;
    json_t *r = NULL;
    scripted_result = json_pack("{s:s, s:i}", "resultType", "x-partial", "done", 40);
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, NULL, &r, NULL), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "x-partial");
    assert_int_equal(json_integer_value(json_object_get(r, "done")), 40);
    json_decref(r);
    json_decref(scripted_result);
    scripted_result = json_pack("{s:s}", "resultType", "x-other");
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, NULL, &r, NULL), MCP_EPROTO);
    assert_null(r);
    json_decref(scripted_result);

    /* Not cached, even by a cacheable method with a ttl. */
    f->server.tools_call = NULL;
    f->server.list_type = "x-partial";
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
        assert_string_equal(json_string_value(json_object_get(r, "resultType")), "x-partial");
        json_decref(r);
    }
    assert_int_equal(count_method(f, "tools/list"), 2);
}

static json_t *two_rounds(server_t *s, fake_transport_t *ft, const json_t *req)
{
    json_t *p = fake_params(req);
    json_t *responses = json_object_get(p, "inputResponses");
    const char *state = json_string_value(json_object_get(p, "requestState"));
    if (!responses)
        return fake_result(req, json_pack("{s:s, s:{s:{s:s, s:{s:s, s:s, s:{s:s}}}}, s:s}",
                                          "resultType", "input_required", "inputRequests", "q1",
                                          "method", "elicitation/create", "params", "mode", "form",
                                          "message", "first?", "requestedSchema", "type",
                                          "object", "requestState", "state-1 \u00e9/+="));
    if (state && strcmp(state, "state-1 \u00e9/+=") == 0)
        return fake_result(req, json_pack("{s:s, s:{s:{s:s, s:{s:s, s:{s:s}}}}}", "resultType",
                                          "input_required", "inputRequests", "q2", "method",
                                          "elicitation/create", "params", "message", "second?",
                                          "requestedSchema", "type", "object"));
    return fake_result(req, json_pack("{s:s, s:[{s:s, s:s}]}", "resultType", "complete",
                                      "content", "type", "text", "text", "done"));
}

static void test_mrtr_rounds(void **state)
{
    fixture_t *f = *state;
    f->server.tools_call = two_rounds;
    json_t *args = json_pack("{s:i}", "n", 1), *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "t", args, NULL, &r, &err), MCP_OK);
    assert_int_equal(elicit_calls, 2);
    assert_int_equal(f->server.calls, 3);
    json_decref(r);

    json_t *first = request_at(f, 1), *second = request_at(f, 2), *third = request_at(f, 3);
    /* Each retry: a new id, the original params, the latest answers and the
     * verbatim requestState -- or none when none was given. */
    assert_true(fake_id(first) != fake_id(second) && fake_id(second) != fake_id(third));
    json_t *p2 = fake_params(second), *p3 = fake_params(third);
    assert_true(json_equal(json_object_get(p2, "arguments"), args));
    assert_true(json_equal(json_object_get(p3, "arguments"), args));
    assert_string_equal(json_string_value(json_object_get(p2, "requestState")),
                        "state-1 \u00e9/+=");
    assert_null(json_object_get(p3, "requestState"));
    assert_non_null(json_object_get(json_object_get(p2, "inputResponses"), "q1"));
    assert_null(json_object_get(json_object_get(p3, "inputResponses"), "q1"));
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(p3, "inputResponses"), "q2"),
                            "action")),
                        "accept");
    assert_non_null(json_object_get(json_object_get(p3, "_meta"),
                                    "io.modelcontextprotocol/protocolVersion"));
    json_decref(first);
    json_decref(second);
    json_decref(third);
    json_decref(args);
}

static json_t *forever_input(server_t *s, fake_transport_t *ft, const json_t *req)
{
    return fake_result(req, json_pack("{s:s, s:s}", "resultType", "input_required",
                                      "requestState", "again"));
}

static void test_mrtr_round_limit(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->c);
    f->c = NULL;
    mcp_client_options_t o = {.name = "t", .version = "1", .max_input_rounds = 3};
    connect_fixture(f, MCP_TRANSPORT_STDIO, &o);
    f->server.tools_call = forever_input;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, NULL, &r, &err), MCP_ELIMIT);
    assert_int_equal(f->server.calls, 4); /* the call and three retries */
    mcp_error_clear(&err);
}

static json_t *ask_sampling(server_t *s, fake_transport_t *ft, const json_t *req)
{
    return fake_result(req, json_pack("{s:s, s:{s:{s:s, s:{s:[], s:i}}}}", "resultType",
                                      "input_required", "inputRequests", "s", "method",
                                      "sampling/createMessage", "params", "messages", "maxTokens",
                                      10));
}

static void test_mrtr_undeclared_sampling_abandons(void **state)
{
    fixture_t *f = *state;
    f->server.tools_call = ask_sampling;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, NULL, &r, &err), MCP_EPROTO);
    assert_non_null(strstr(err.message, "sampling/createMessage"));
    assert_int_equal(f->server.calls, 1); /* never retried with an invented answer */
    mcp_error_clear(&err);
}

static json_t *input_for_list(void *user, fake_transport_t *ft, const json_t *req)
{
    if (strcmp(fake_method(req), "server/discover") == 0)
        return fake_result(req, fake_discover_result());
    return fake_result(req, json_pack("{s:s, s:s}", "resultType", "input_required",
                                      "requestState", "x"));
}

static void test_input_required_only_where_allowed(void **state)
{
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"}, NULL);
    fake_transport_t *ft = fake_transport_connect(c, input_for_list, NULL);
    assert_non_null(ft);
    json_t *r = NULL;
    assert_int_equal(mcp_client_list_tools(c, NULL, NULL, &r, NULL), MCP_EPROTO);
    assert_int_equal(mcp_client_list_prompts(c, NULL, NULL, &r, NULL), MCP_EPROTO);
    /* resources/read may ask: the rounds run (up to the limit). */
    assert_int_equal(mcp_client_read_resource(c, "x:/a", NULL, &r, NULL), MCP_ELIMIT);
    mcp_client_free(c);
}

/* ------------------------------------------------------------------------
 * Version and header retries
 * ------------------------------------------------------------------------ */

static void test_unsupported_version_retried_once(void **state)
{
    fixture_t *f = *state;
    /* Pretend the client prefers a newer modern version it also speaks. */
    f->c->versions[0] = "2027-03-01";
    f->c->versions[1] = "2026-07-28";
    f->c->n_versions = 2;
    f->c->version = "2027-03-01";
    f->server.version_refusals = 1;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, NULL, &r, &err), MCP_OK);
    json_decref(r);
    json_t *refused = request_at(f, 1), *retried = request_at(f, 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(fake_params(refused),
                                                                          "_meta"),
                                                          MCP_META_PROTOCOL_VERSION)),
                        "2027-03-01");
    assert_string_equal(json_string_value(json_object_get(json_object_get(fake_params(retried),
                                                                          "_meta"),
                                                          MCP_META_PROTOCOL_VERSION)),
                        "2026-07-28");
    assert_string_equal(mcp_client_protocol_version(f->c), "2026-07-28");
    json_decref(refused);
    json_decref(retried);

    /* Refused although the server lists the version: retried once with it
     * (the refusal may not recur)... */
    f->server.version_refusals = 1;
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, NULL, &r, &err), MCP_OK);
    json_decref(r);
    assert_int_equal(n_requests(f), 5);
    retried = request_at(f, 4);
    assert_string_equal(json_string_value(json_object_get(json_object_get(fake_params(retried),
                                                                          "_meta"),
                                                          MCP_META_PROTOCOL_VERSION)),
                        "2026-07-28");
    json_decref(retried);

    /* ...but only once: refused again, the error surfaces. */
    f->server.version_refusals = 2;
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, NULL, &r, &err), MCP_ERPC);
    assert_int_equal(err.code, -32022);
    assert_int_equal(n_requests(f), 7);
    mcp_error_clear(&err);
}

/* A refusal that lists no version the client speaks is final. */
static void test_unsupported_version_without_mutual_version(void **state)
{
    fixture_t *f = *state;
    f->server.version_refusals = 1;
    f->c->versions[0] = "2027-03-01";
    f->c->n_versions = 1;
    f->c->version = "2027-03-01";
    json_t *r = NULL;
    mcp_error_t err = {0};
    size_t before = n_requests(f);
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, NULL, &r, &err), MCP_ERPC);
    assert_int_equal(err.code, -32022);
    assert_int_equal(n_requests(f), before + 1);
    mcp_error_clear(&err);
}

static void test_param_headers_and_mismatch_retry(void **state)
{
    fixture_t *f = *state;
    json_t *args = json_pack("{s:s}", "region", "Zürich"), *r = NULL;
    mcp_error_t err = {0};
    f->server.mismatches = 1;
    assert_int_equal(mcp_client_call_tool(f->c, "weather", args, NULL, &r, &err), MCP_OK);
    json_decref(r);
    /* discover, tools/list (learn the tool), call (-32020), tools/list, call */
    assert_int_equal(n_requests(f), 5);
    assert_int_equal(count_method(f, "tools/list"), 2);
    json_t *hints = fake_hints(f->ft);
    json_t *h = json_array_get(hints, 4);
    assert_string_equal(json_string_value(json_object_get(h, "method")), "tools/call");
    assert_string_equal(json_string_value(json_object_get(h, "name")), "weather");
    assert_string_equal(json_string_value(json_object_get(json_object_get(h, "params"), "Region")),
                        "=?base64?WsO8cmljaA==?=");
    json_decref(hints);

    /* A second mismatch in a row is not retried again. */
    f->server.mismatches = 2;
    assert_int_equal(mcp_client_call_tool(f->c, "weather", args, NULL, &r, &err), MCP_ERPC);
    assert_int_equal(err.code, -32020);
    f->server.mismatches = 0;

    /* The tool list is complete: an unknown tool does not refetch it. */
    size_t before = count_method(f, "tools/list");
    assert_int_equal(mcp_client_call_tool(f->c, "other", NULL, NULL, &r, &err), MCP_OK);
    json_decref(r);
    assert_int_equal(count_method(f, "tools/list"), before);
    json_decref(args);
    mcp_error_clear(&err);
}

static void test_stdio_does_not_fetch_annotations(void **state)
{
    fixture_t *f = *state;
    json_t *r = NULL;
    assert_int_equal(mcp_client_call_tool(f->c, "weather", NULL, NULL, &r, NULL), MCP_OK);
    json_decref(r);
    assert_int_equal(count_method(f, "tools/list"), 0);
}

static void test_invalid_annotations_dropped(void **state)
{
    fixture_t *f = *state;
    f->server.tools = json_pack(
        "[{s:s, s:{s:s}}, {s:s, s:{s:s, s:{s:{s:s, s:s}}}}, {s:i}]", "name", "good",
        "inputSchema", "type", "object", "name", "bad", "inputSchema", "type", "object",
        "properties", "n", "type", "number", "x-mcp-header", "N", "name", 3);
    json_t *r = NULL;
    assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
    json_t *tools = json_object_get(r, "tools");
    assert_int_equal(json_array_size(tools), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")),
                        "good");
    assert_int_equal(f->warnings, 2);
    json_decref(r);
}

/*
 * A page of 50,000 tools, one in ten without a name: checked and merged in
 * time linear in the page -- counted in names compared, not timed -- the
 * dropped ones logged a few at a time, the others kept in their order. A
 * second listing of the same tools replaces every one of them, at the
 * same cost.
 */
static void test_large_tools_page_linear(void **state)
{
    fixture_t *f = *state;
    const size_t n = 50000, named = n - n / 10;
    f->server.tools = json_array();
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        json_array_append_new(f->server.tools,
                              i % 10 == 9 ? json_object() : json_pack("{s:s}", "name", name));
    }
    json_t *r = NULL;
    assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
    json_t *tools = json_object_get(r, "tools");
    assert_int_equal(json_array_size(tools), named);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 9), "name")),
                        "t10");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(tools, named - 1), "name")), "t49998");
    json_decref(r);
    assert_int_equal(f->warnings, 8 + 1); /* eight by name, then how many more */

    pthread_mutex_lock(&f->c->lock);
    assert_int_equal(f->c->tools.count, named);
    uint64_t first = f->c->tools.comparisons;
    assert_non_null(client_tools_find(&f->c->tools, "t49998"));
    assert_null(client_tools_find(&f->c->tools, "t9"));
    pthread_mutex_unlock(&f->c->lock);
    /* About 0.7 per tool at a load factor of at most 1; a list scanned
     * for each tool would take some 10^9. */
    assert_true(first <= n);

    assert_int_equal(mcp_client_list_tools(f->c, NULL, &(mcp_request_options_t){
                                                        .bypass_cache = true},
                                           &r, NULL),
                     MCP_OK);
    json_decref(r);
    pthread_mutex_lock(&f->c->lock);
    assert_int_equal(f->c->tools.count, named);
    uint64_t second = f->c->tools.comparisons;
    pthread_mutex_unlock(&f->c->lock);
    assert_true(second - first <= 3 * n); /* about 1.7 per tool */
}

/* ------------------------------------------------------------------------
 * The cache
 * ------------------------------------------------------------------------ */

static void test_cache_reuse_and_bypass(void **state)
{
    fixture_t *f = *state;
    json_t *r = NULL;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
        json_object_set_new(r, "tools", json_string("caller may modify its copy"));
        json_decref(r);
    }
    assert_int_equal(count_method(f, "tools/list"), 1);
    assert_int_equal(mcp_client_list_tools(f->c, "", NULL, &r, NULL), MCP_OK); /* another page */
    json_decref(r);
    assert_int_equal(count_method(f, "tools/list"), 2);
    assert_int_equal(mcp_client_list_tools(f->c, NULL, &(mcp_request_options_t){
                                               .bypass_cache = true}, &r, NULL),
                     MCP_OK);
    json_decref(r);
    assert_int_equal(count_method(f, "tools/list"), 3);

    assert_int_equal(mcp_client_read_resource(f->c, "x:/a", NULL, &r, NULL), MCP_OK);
    json_decref(r);
    assert_int_equal(mcp_client_read_resource(f->c, "x:/a", NULL, &r, NULL), MCP_OK);
    json_decref(r);
    assert_int_equal(count_method(f, "resources/read"), 1);
}

static void test_cache_ttl_zero_and_disabled(void **state)
{
    fixture_t *f = *state;
    f->server.ttl = 0;
    json_t *r = NULL;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
        json_decref(r);
    }
    assert_int_equal(count_method(f, "tools/list"), 2);

    mcp_client_free(f->c);
    f->server.ttl = 60000;
    mcp_client_options_t o = {.name = "t", .version = "1", .disable_cache = true};
    connect_fixture(f, MCP_TRANSPORT_STDIO, &o);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
        json_decref(r);
    }
    assert_int_equal(count_method(f, "tools/list"), 2);
}

/* A list_changed that arrives while tools/list is on the wire: the answer
 * may predate the change, so it is returned but neither cached nor taken as
 * the tools the client knows. */
static void test_answer_older_than_a_change_not_kept(void **state)
{
    fixture_t *f = *state;
    json_t *r = NULL;
    f->server.changes = f->c;
    assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
    assert_string_equal(json_string_value(json_object_get(json_array_get(
                            json_object_get(r, "tools"), 0), "name")),
                        "weather");
    json_decref(r);
    pthread_mutex_lock(&f->c->lock);
    assert_null(client_tools_find(&f->c->tools, "weather"));
    pthread_mutex_unlock(&f->c->lock);

    f->server.changes = NULL;
    assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
    json_decref(r);
    assert_int_equal(count_method(f, "tools/list"), 2);
    pthread_mutex_lock(&f->c->lock);
    assert_non_null(client_tools_find(&f->c->tools, "weather"));
    pthread_mutex_unlock(&f->c->lock);
    /* Without a change in between, the second answer is kept. */
    assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
    json_decref(r);
    assert_int_equal(count_method(f, "tools/list"), 2);
}

/* ------------------------------------------------------------------------
 * Timeouts, cancellation, closing, progress, logs
 * ------------------------------------------------------------------------ */

static void test_timeout_cancels_the_exchange(void **state)
{
    fixture_t *f = *state;
    f->server.hang = true;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, &(mcp_request_options_t){
                                              .timeout_ms = 50}, &r, &err),
                     MCP_ETIMEDOUT);
    json_t *cancels = fake_cancels(f->ft);
    assert_int_equal(json_array_size(cancels), 1);
    assert_true(json_is_true(json_object_get(json_array_get(cancels, 0), "notify")));
    json_decref(cancels);
    assert_int_equal(fake_outstanding(f->ft), 0);
    mcp_error_clear(&err);
}

typedef struct late_answer {
    fixture_t *f;
    int delay_ms;
} late_answer_t;

/* Answers the one tools/call in flight, delay_ms after it was sent. */
static void *answer_late(void *arg)
{
    late_answer_t *a = arg;
    struct timespec tick = {0, 100 * 1000L};
    while (fake_outstanding(a->f->ft) == 0)
        nanosleep(&tick, NULL);
    json_t *all = fake_requests(a->f->ft);
    json_int_t id = fake_id(json_array_get(all, json_array_size(all) - 1));
    json_decref(all);
    struct timespec pause = {a->delay_ms / 1000, (long)(a->delay_ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
    json_t *response = json_pack("{s:s, s:I, s:{s:s, s:[{s:s, s:s}]}}", "jsonrpc", "2.0", "id",
                                 id, "result", "resultType", "complete", "content", "type",
                                 "text", "text", "late");
    assert_true(fake_finish(a->f->ft, id, response, MCP_OK));
    return NULL;
}

/* However long the caller waits actively for its answer (never, the
 * default, the longest), an answer that comes while it does, or after it
 * went to sleep, is the call's result, and a timeout shorter than the
 * active wait still ends the call in time. */
static void test_answers_whatever_the_active_wait(void **state)
{
    (void)state;
    static const int SPINS[] = {-1, 0, 10000};
    static const int DELAYS_MS[] = {0, 2, 40};
    for (size_t i = 0; i < sizeof SPINS / sizeof SPINS[0]; i++) {
        fixture_t f = {0};
        mcp_client_options_t o = {.name = "test", .version = "1", .spin_us = SPINS[i]};
        connect_fixture(&f, MCP_TRANSPORT_STDIO, &o);
        f.server.hang = true;
        for (size_t d = 0; d < sizeof DELAYS_MS / sizeof DELAYS_MS[0]; d++) {
            late_answer_t a = {&f, DELAYS_MS[d]};
            pthread_t th;
            assert_int_equal(pthread_create(&th, NULL, answer_late, &a), 0);
            json_t *r = NULL;
            mcp_error_t err = {0};
            assert_int_equal(mcp_client_call_tool(f.c, "t", NULL, NULL, &r, &err), MCP_OK);
            pthread_join(th, NULL);
            const json_t *block = json_array_get(json_object_get(r, "content"), 0);
            assert_string_equal(json_string_value(json_object_get(block, "text")), "late");
            json_decref(r);
            mcp_error_clear(&err);
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        json_t *r = NULL;
        assert_int_equal(mcp_client_call_tool(f.c, "t", NULL,
                                              &(mcp_request_options_t){.timeout_ms = 1}, &r,
                                              NULL),
                         MCP_ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        /* The active wait is at most 10 ms; the timeout fires after it. */
        assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 5000);
        assert_int_equal(fake_outstanding(f.ft), 0);
        mcp_client_free(f.c);
    }
}

static void *cancel_soon(void *arg)
{
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    mcp_cancel_trigger(arg);
    return NULL;
}

static void test_cancel_from_another_thread(void **state)
{
    fixture_t *f = *state;
    f->server.hang = true;
    mcp_cancel_t *cancel = mcp_cancel_new();
    pthread_t th;
    pthread_create(&th, NULL, cancel_soon, cancel);
    json_t *r = NULL;
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, &(mcp_request_options_t){
                                              .cancel = cancel, .timeout_ms = -1}, &r, NULL),
                     MCP_ECANCELED);
    pthread_join(th, NULL);
    mcp_cancel_free(cancel);
    assert_int_equal(fake_outstanding(f->ft), 0);
}

static json_t *closes(server_t *s, fake_transport_t *ft, const json_t *req)
{
    fake_finish(ft, fake_id(req), NULL, MCP_ECLOSED);
    return NULL;
}

static void test_closed_under_a_call(void **state)
{
    fixture_t *f = *state;
    f->server.tools_call = closes;
    json_t *r = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, NULL, &r, &err), MCP_ECLOSED);
    mcp_error_clear(&err);
}

/* on_closed: the end of an established connection is reported once; an end
 * while connecting is connect's business. */
typedef struct closings {
    atomic_int count;  /* written last: `why` is complete once it is read */
    char why[128];
} closings_t;

static void on_closed(void *user, int rc, const char *why)
{
    closings_t *c = user;
    assert_int_equal(rc, MCP_ECLOSED);
    snprintf(c->why, sizeof c->why, "%s", why);
    atomic_fetch_add(&c->count, 1);
}

static void transport_ends(fake_transport_t *ft, const char *why)
{
    client_transport_t *t = fake_transport_base(ft);
    t->hooks.on_closed(t->hooks.user, MCP_ECLOSED, why);
}

/* Answers server/discover after the transport reported its end, or with
 * an error (a failed connect) when `user` says so. */
static json_t *respond_ending(void *user, fake_transport_t *ft, const json_t *req)
{
    transport_ends(ft, "ended while connecting");
    if (user)
        return fake_error(req, -32021, "missing capabilities", NULL);
    return fake_result(req, fake_discover_result());
}

static void test_on_closed(void **state)
{
    closings_t closings = {0};
    mcp_client_options_t o = {.name = "t", .version = "1", .on_closed = on_closed,
                              .on_closed_user = &closings};

    /* After connecting: once. */
    mcp_client_t *c = mcp_client_new(&o, NULL);
    server_t server = {0};
    fake_transport_t *ft = fake_transport_new(c, respond, &server);
    assert_int_equal(client_connect_transport(c, fake_transport_base(ft), MCP_TRANSPORT_STDIO,
                                              NULL), MCP_OK);
    assert_int_equal(closings.count, 0);
    transport_ends(ft, "the server exited (signal 9)");
    transport_ends(ft, "again");
    assert_int_equal(closings.count, 1);
    assert_string_equal(closings.why, "the server exited (signal 9)");
    mcp_client_free(c);
    assert_int_equal(closings.count, 1);

    /* While connecting: reported when connect succeeds (the connection it
     * made is already gone)... */
    closings = (closings_t){0};
    c = mcp_client_new(&o, NULL);
    ft = fake_transport_new(c, respond_ending, NULL);
    assert_int_equal(client_connect_transport(c, fake_transport_base(ft), MCP_TRANSPORT_STDIO,
                                              NULL), MCP_OK);
    assert_int_equal(closings.count, 1);
    assert_string_equal(closings.why, "the connection ended as it was made");
    mcp_client_free(c);

    /* ... and not at all when connect fails: its error says it. */
    closings = (closings_t){0};
    c = mcp_client_new(&o, NULL);
    ft = fake_transport_new(c, respond_ending, "fail");
    assert_int_not_equal(client_connect_transport(c, fake_transport_base(ft), MCP_TRANSPORT_STDIO,
                                                  NULL), MCP_OK);
    assert_int_equal(closings.count, 0);
    mcp_client_free(c);

    /* A real (legacy) stdio server that exits after connecting. */
    closings = (closings_t){0};
    c = mcp_client_new(&o, NULL);
    assert_int_equal(mcp_client_connect_stdio(c, &(mcp_stdio_target_t){
                         .argv = (const char *const[]){"sh", "-c",
                                                        "read line; echo '{\"jsonrpc\":\"2.0\","
                                                        "\"id\":1,\"error\":{\"code\":-32601,"
                                                        "\"message\":\"no\"}}'; read line; "
                                                        "echo '{\"jsonrpc\":\"2.0\",\"id\":2,"
                                                        "\"result\":{\"protocolVersion\":"
                                                        "\"2025-11-25\",\"capabilities\":{},"
                                                        "\"serverInfo\":{\"name\":\"sh\","
                                                        "\"version\":\"1\"}}}'; read line; "
                                                        "sleep 0.3; exit 3", NULL}}, NULL),
                     MCP_OK);
    for (int i = 0; i < 500 && closings.count == 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(closings.count, 1);
    if (!strstr(closings.why, "exit"))
        fail_msg("why: %s", closings.why);
    mcp_client_free(c);
    assert_int_equal(closings.count, 1);
}

typedef struct heard {
    int progress;
    double last;
    int logs;
    char level[16];
} heard_t;

static heard_t heard;

static void on_progress(void *user, double p, double total, const char *message)
{
    heard.progress++;
    heard.last = p;
}

static void on_log(void *user, const char *level, const char *logger, const json_t *data)
{
    heard.logs++;
    snprintf(heard.level, sizeof heard.level, "%s", level);
}

static json_t *with_progress(server_t *s, fake_transport_t *ft, const json_t *req)
{
    json_t *token = json_object_get(json_object_get(fake_params(req), "_meta"), "progressToken");
    assert_int_equal(json_integer_value(token), fake_id(req));
    for (int i = 1; i <= 3; i++) {
        json_t *n = json_pack("{s:s, s:s, s:{s:O, s:i, s:i}}", "jsonrpc", "2.0", "method",
                              "notifications/progress", "params", "progressToken", token,
                              "progress", i, "total", 3);
        fake_emit(ft, fake_id(req), n);
        json_decref(n);
    }
    json_t *log = json_pack("{s:s, s:s, s:{s:s, s:s}}", "jsonrpc", "2.0", "method",
                            "notifications/message", "params", "level", "info", "data", "x");
    fake_emit(ft, fake_id(req), log);
    fake_unrouted(ft, log);
    json_decref(log);
    return fake_result(req, json_pack("{s:s, s:[]}", "resultType", "complete", "content"));
}

static void test_progress_and_logs(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->c);
    mcp_client_options_t o = {.name = "t", .version = "1", .on_log = on_log,
                              .log_level = "info"};
    connect_fixture(f, MCP_TRANSPORT_STDIO, &o);
    f->server.tools_call = with_progress;
    memset(&heard, 0, sizeof heard);
    json_t *r = NULL;
    assert_int_equal(mcp_client_call_tool(f->c, "t", NULL, &(mcp_request_options_t){
                                              .progress = on_progress}, &r, NULL),
                     MCP_OK);
    json_decref(r);
    assert_int_equal(heard.progress, 3);
    assert_true(heard.last == 3.0);
    assert_int_equal(heard.logs, 2); /* on the request's stream and unrouted */
    assert_string_equal(heard.level, "info");
    json_t *call = request_at(f, 1);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(fake_params(call), "_meta"), MCP_META_LOG_LEVEL)),
                        "info");
    json_decref(call);
}

/* ------------------------------------------------------------------------
 * subscriptions/listen
 * ------------------------------------------------------------------------ */

typedef struct listen_log {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int events;
    int ended;
    int end_rc;
} listen_log_t;

static void on_event(void *user, const char *method, const json_t *params)
{
    listen_log_t *l = user;
    pthread_mutex_lock(&l->lock);
    l->events++;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

static void on_end(void *user, int rc)
{
    listen_log_t *l = user;
    pthread_mutex_lock(&l->lock);
    l->ended++;
    l->end_rc = rc;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

static void wait_until(listen_log_t *l, int *field, int value)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    pthread_mutex_lock(&l->lock);
    while (*field < value && pthread_cond_timedwait(&l->cond, &l->lock, &deadline) == 0)
        ;
    pthread_mutex_unlock(&l->lock);
}

static json_int_t last_listen_id(fixture_t *f)
{
    json_t *all = fake_requests(f->ft);
    json_int_t id = 0;
    size_t i;
    json_t *r;
    json_array_foreach(all, i, r)
        if (strcmp(fake_method(r), "subscriptions/listen") == 0)
            id = fake_id(r);
    json_decref(all);
    return id;
}

static json_t *event(const char *method, json_int_t sub_id)
{
    return json_pack("{s:s, s:s, s:{s:{s:I}}}", "jsonrpc", "2.0", "method", method, "params",
                     "_meta", "io.modelcontextprotocol/subscriptionId", sub_id);
}

static void test_listen_lifecycle(void **state)
{
    fixture_t *f = *state;
    f->server.listen_ack = true;
    listen_log_t l = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
    mcp_subscription_t *sub = NULL;
    json_t *honoured = NULL, *r = NULL;
    assert_int_equal(mcp_client_listen(f->c, &(mcp_listen_filter_t){.tools_list_changed = true},
                                       on_event, &l, &(mcp_listen_options_t){.on_end = on_end},
                                       &sub, &honoured, NULL),
                     MCP_OK);
    assert_true(json_is_true(json_object_get(honoured, "toolsListChanged")));
    json_decref(honoured);
    json_t *hints = fake_hints(f->ft);
    assert_true(json_is_true(json_object_get(json_array_get(hints, json_array_size(hints) - 1),
                                             "long_lived")));
    json_decref(hints);

    /* A list_changed event reaches the callback and drops cached pages. */
    assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
    json_decref(r);
    json_t *ev = event("notifications/tools/list_changed", last_listen_id(f));
    assert_true(fake_emit(f->ft, last_listen_id(f), ev));
    json_decref(ev);
    wait_until(&l, &l.events, 1); /* delivered on the subscription's thread */
    assert_int_equal(l.events, 1);
    assert_int_equal(mcp_client_list_tools(f->c, NULL, NULL, &r, NULL), MCP_OK);
    json_decref(r);
    assert_int_equal(count_method(f, "tools/list"), 2);

    /* The stream breaks: the subscription re-opens it (a new listen). */
    json_int_t first = last_listen_id(f);
    assert_true(fake_finish(f->ft, first, NULL, MCP_ECLOSED));
    for (int i = 0; i < 500 && last_listen_id(f) == first; i++)
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    json_int_t second = last_listen_id(f);
    assert_true(second != first);
    assert_int_equal(l.ended, 0);

    /* The server ends it gracefully with the listen result. */
    json_t *done = json_pack("{s:s, s:I, s:{s:s, s:{s:I}}}", "jsonrpc", "2.0", "id", second,
                             "result", "resultType", "complete", "_meta",
                             "io.modelcontextprotocol/subscriptionId", second);
    for (int i = 0; i < 500 && !fake_finish(f->ft, second, json_incref(done), MCP_OK); i++)
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
    json_decref(done);
    wait_until(&l, &l.ended, 1);
    assert_int_equal(l.ended, 1);
    assert_int_equal(l.end_rc, MCP_OK);
    mcp_subscription_close(sub);
    assert_int_equal(fake_outstanding(f->ft), 0);
}

static void test_listen_close_and_server_cancel(void **state)
{
    fixture_t *f = *state;
    f->server.listen_ack = true;
    listen_log_t l = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
    mcp_subscription_t *sub = NULL;
    const char *uris[] = {"x:/a"};
    mcp_listen_filter_t filter = {.resource_uris = uris, .n_resource_uris = 1};

    /* Closed by the client: cancelled with notifications/cancelled. */
    assert_int_equal(mcp_client_listen(f->c, &filter, on_event, &l, NULL, &sub, NULL, NULL),
                     MCP_OK);
    json_t *req = request_at(f, n_requests(f) - 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(
                            json_object_get(fake_params(req), "notifications"),
                            "resourceSubscriptions"), 0)),
                        "x:/a");
    json_decref(req);
    mcp_subscription_close(sub);
    json_t *cancels = fake_cancels(f->ft);
    assert_true(json_is_true(json_object_get(json_array_get(cancels, 0), "notify")));
    json_decref(cancels);
    assert_int_equal(fake_outstanding(f->ft), 0);

    /* Ended by a server-sent notifications/cancelled: graceful, and the
     * server is not told back. */
    assert_int_equal(mcp_client_listen(f->c, &filter, on_event, &l,
                                       &(mcp_listen_options_t){.on_end = on_end}, &sub, NULL,
                                       NULL),
                     MCP_OK);
    json_int_t id = last_listen_id(f);
    json_t *n = json_pack("{s:s, s:s, s:{s:I}}", "jsonrpc", "2.0", "method",
                          "notifications/cancelled", "params", "requestId", id);
    fake_emit(f->ft, id, n);
    json_decref(n);
    wait_until(&l, &l.ended, 1);
    assert_int_equal(l.end_rc, MCP_OK);
    cancels = fake_cancels(f->ft);
    assert_false(json_is_true(json_object_get(json_array_get(cancels, 1), "notify")));
    json_decref(cancels);
    mcp_subscription_close(sub);

    /* A broken stream with re-opening disabled ends the subscription. */
    l.ended = 0;
    assert_int_equal(mcp_client_listen(f->c, &filter, on_event, &l,
                                       &(mcp_listen_options_t){.on_end = on_end,
                                                               .no_reopen = true},
                                       &sub, NULL, NULL),
                     MCP_OK);
    fake_finish(f->ft, last_listen_id(f), NULL, MCP_EIO);
    wait_until(&l, &l.ended, 1);
    assert_int_equal(l.end_rc, MCP_EIO);
    mcp_subscription_close(sub);
    assert_int_equal(l.events, 0);
}

static void test_listen_refused(void **state)
{
    fixture_t *f = *state;
    mcp_subscription_t *sub = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_listen(f->c, &(mcp_listen_filter_t){.tools_list_changed = true},
                                       on_event, NULL, NULL, &sub, NULL, &err),
                     MCP_ERPC);
    assert_int_equal(err.code, -32601);
    assert_null(sub);
    mcp_error_clear(&err);
}

/* A callback that holds its first event until the test opens the gate,
 * and records the "n" of every event it gets. */
typedef struct slow_listener {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool open;
    int events;
    json_int_t seen[MCP_LISTEN_MAX_PENDING + 8];
} slow_listener_t;

static void on_slow_event(void *user, const char *method, const json_t *params)
{
    (void)method;
    slow_listener_t *s = user;
    pthread_mutex_lock(&s->lock);
    if (s->events < (int)(sizeof s->seen / sizeof s->seen[0]))
        s->seen[s->events] = json_integer_value(json_object_get(params, "n"));
    s->events++;
    pthread_cond_broadcast(&s->cond);
    while (!s->open)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

static void await_slow_events(slow_listener_t *s, int n)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&s->lock);
    while (s->events < n && pthread_cond_timedwait(&s->cond, &s->lock, &deadline) == 0)
        ;
    pthread_mutex_unlock(&s->lock);
}

static void emit_numbered(fixture_t *f, json_int_t listen_id, json_int_t n)
{
    json_t *ev = json_pack("{s:s, s:s, s:{s:{s:I}, s:I}}", "jsonrpc", "2.0", "method",
                           "notifications/tools/list_changed", "params", "_meta",
                           "io.modelcontextprotocol/subscriptionId", listen_id, "n", n);
    assert_true(fake_emit(f->ft, listen_id, ev));
    json_decref(ev);
}

/*
 * The server sends MCP_LISTEN_MAX_PENDING + 100 events while the callback
 * holds the first: the newest MCP_LISTEN_MAX_PENDING wait, the 100 oldest
 * are dropped, counted and reported with one warning; once the callback
 * returns it gets the ones that waited, in order.
 */
static void test_listen_slow_callback_drops_oldest(void **state)
{
    fixture_t *f = *state;
    f->server.listen_ack = true;
    slow_listener_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    mcp_subscription_t *sub = NULL;
    assert_int_equal(mcp_client_listen(f->c, &(mcp_listen_filter_t){.tools_list_changed = true},
                                       on_slow_event, s, NULL, &sub, NULL, NULL),
                     MCP_OK);
    json_int_t id = last_listen_id(f);
    emit_numbered(f, id, 0);
    await_slow_events(s, 1); /* the callback holds event 0 */
    const int extra = 100, total = MCP_LISTEN_MAX_PENDING + extra;
    int warnings_before = f->warnings;
    for (int n = 1; n <= total; n++)
        emit_numbered(f, id, n);
    uint64_t dropped = mcp_subscription_dropped(sub);
    int warnings = f->warnings - warnings_before;

    /* The gate opens before any check, so that a failing one does not
     * leave the callback holding the subscription's thread forever. */
    pthread_mutex_lock(&s->lock);
    s->open = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    assert_int_equal(dropped, extra);
    assert_int_equal(warnings, 1); /* once, not per event */
    await_slow_events(s, 1 + MCP_LISTEN_MAX_PENDING);
    pthread_mutex_lock(&s->lock);
    assert_int_equal(s->events, 1 + MCP_LISTEN_MAX_PENDING);
    for (int i = 1; i <= MCP_LISTEN_MAX_PENDING; i++)
        assert_int_equal(s->seen[i], extra + i);
    pthread_mutex_unlock(&s->lock);

    /* Caught up: the next event is queued and delivered as usual. */
    emit_numbered(f, id, total + 1);
    await_slow_events(s, 2 + MCP_LISTEN_MAX_PENDING);
    assert_int_equal(s->seen[1 + MCP_LISTEN_MAX_PENDING], total + 1);
    assert_int_equal(mcp_subscription_dropped(sub), extra);
    assert_int_equal(mcp_subscription_dropped(NULL), 0);
    mcp_subscription_close(sub);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_connect_discovers, setup, teardown),
        cmocka_unit_test(test_connect_failures),
        cmocka_unit_test(test_options_validated),
        cmocka_unit_test_setup_teardown(test_result_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extension_result_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mrtr_rounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mrtr_round_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mrtr_undeclared_sampling_abandons, setup, teardown),
        cmocka_unit_test(test_input_required_only_where_allowed),
        cmocka_unit_test_setup_teardown(test_unsupported_version_retried_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_version_without_mutual_version, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_param_headers_and_mismatch_retry, setup_http,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_stdio_does_not_fetch_annotations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_annotations_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_tools_page_linear, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_reuse_and_bypass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_ttl_zero_and_disabled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_answer_older_than_a_change_not_kept, setup_http,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_timeout_cancels_the_exchange, setup, teardown),
        cmocka_unit_test(test_answers_whatever_the_active_wait),
        cmocka_unit_test_setup_teardown(test_cancel_from_another_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closed_under_a_call, setup, teardown),
        cmocka_unit_test(test_on_closed),
        cmocka_unit_test_setup_teardown(test_progress_and_logs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_close_and_server_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_slow_callback_drops_oldest, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
