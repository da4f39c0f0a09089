/*
 * The HTTP client's side of DPoP (mcp_http_target_t.token_proof, RFC
 * 9449 §7 and §9) against a small MCP server in process (libmicrohttpd)
 * that admits "Authorization: DPoP tok" with a proof carrying its nonce,
 * and answers anything else with a 401 challenge (and a DPoP-Nonce when
 * a nonce is missing). The token and proof callbacks are fakes: the
 * proofs are readable strings, so the test sees what the transport asked
 * for (method, URL, token, nonce) and what went over the wire.
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <microhttpd.h>

#include "mcp/mcp.h"
#include "oauth_fixture.h"

#define TOKEN "tok"

/* ---- the MCP server ---- */

typedef struct server {
    oauth_fixture_t *http;
    char url[OAUTH_FIXTURE_ORIGIN_MAX + 8]; /* its origin and "/mcp" */
    bool rotating; /* a new nonce for every request: never satisfied */
    pthread_mutex_t lock;
    int requests, refused;
    char nonce[32];           /* the nonce it wants now */
    char last_auth[128];      /* the last Authorization header, or "" */
    char last_dpop[256];      /* the last DPoP header, or "" */
} server_t;

/* The JSON-RPC answer: a DiscoverResult for the probe, an empty tool list
 * for tools/list. */
static char *rpc_answer(const char *body)
{
    json_t *msg = json_loads(body, 0, NULL);
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *result =
        method && strcmp(method, "server/discover") == 0
            ? json_pack("{s:s, s:[s], s:{s:{}}, s:{s:{s:s, s:s}}}", "resultType", "complete",
                        "supportedVersions", "2026-07-28", "capabilities", "tools", "_meta",
                        "io.modelcontextprotocol/serverInfo", "name", "dpop-test", "version",
                        "1.0.0")
            : json_pack("{s:s, s:[]}", "resultType", "complete", "tools");
    json_t *answer = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
                               json_object_get(msg, "id"), "result", result);
    char *text = json_dumps(answer, JSON_COMPACT);
    json_decref(answer);
    json_decref(msg);
    return text;
}

static enum MHD_Result route(void *user, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *body)
{
    server_t *s = user;
    (void)url;
    if (strcmp(method, "POST") != 0)
        return oauth_fixture_answer(conn, 405, "{}");
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    const char *dpop = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "DPoP");
    pthread_mutex_lock(&s->lock);
    s->requests++;
    snprintf(s->last_auth, sizeof s->last_auth, "%s", auth ? auth : "");
    snprintf(s->last_dpop, sizeof s->last_dpop, "%s", dpop ? dpop : "");
    bool authorized = auth && strcmp(auth, "DPoP " TOKEN) == 0;
    /* The fake proofs end with "nonce=<nonce>". */
    const char *given = dpop ? strstr(dpop, "nonce=") : NULL;
    bool nonce_ok = given && strcmp(given + 6, s->nonce) == 0 && !s->rotating;
    char nonce[32];
    if (authorized && !nonce_ok && s->rotating)
        snprintf(s->nonce, sizeof s->nonce, "n%d", s->requests);
    snprintf(nonce, sizeof nonce, "%s", s->nonce);
    if (!authorized || !nonce_ok)
        s->refused++;
    pthread_mutex_unlock(&s->lock);
    if (!authorized)
        return oauth_fixture_reply(conn, 401, "{}",
                                   "DPoP resource_metadata=\"http://127.0.0.1/prm\"", NULL);
    if (!nonce_ok)
        return oauth_fixture_reply(conn, 401, "{\"error\":\"use_dpop_nonce\"}",
                                   "DPoP error=\"use_dpop_nonce\", error_description=\"nonce\"",
                                   nonce);
    char *answer = rpc_answer(body);
    enum MHD_Result rc = oauth_fixture_answer(conn, 200, answer);
    free(answer);
    return rc;
}

/* ---- the fake token source ---- */

typedef struct source {
    bool bearer;            /* the proof callback answers no proof */
    int token_calls, proof_calls;
    char challenges[4][128]; /* what the token callback was given */
    char last_method[16], last_url[96], last_token[16], last_nonce[32];
} source_t;

/* No token until challenged; then TOKEN. */
static int fake_token(void *user, const char *url, const char *challenge, char **token_out)
{
    source_t *src = user;
    (void)url;
    int n = src->token_calls++;
    if (n < 4)
        snprintf(src->challenges[n], sizeof src->challenges[n], "%s",
                 challenge ? challenge : "(none)");
    *token_out = challenge ? strdup(TOKEN) : NULL;
    return MCP_OK;
}

static int fake_proof(void *user, const char *method, const char *url, const char *token,
                      const char *nonce, char **proof_out)
{
    source_t *src = user;
    src->proof_calls++;
    snprintf(src->last_method, sizeof src->last_method, "%s", method);
    snprintf(src->last_url, sizeof src->last_url, "%s", url);
    snprintf(src->last_token, sizeof src->last_token, "%s", token);
    snprintf(src->last_nonce, sizeof src->last_nonce, "%s", nonce ? nonce : "");
    if (src->bearer)
        return MCP_OK;
    return asprintf(proof_out, "proof-%d nonce=%s", src->proof_calls, nonce ? nonce : "") < 0
               ? MCP_ENOMEM
               : MCP_OK;
}

/* ---- fixture ---- */

typedef struct fixture {
    server_t server;
    source_t source;
    mcp_client_t *client;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    pthread_mutex_init(&f->server.lock, NULL);
    snprintf(f->server.nonce, sizeof f->server.nonce, "rs-1");
    char origin[OAUTH_FIXTURE_ORIGIN_MAX];
    f->server.http = oauth_fixture_start(route, &f->server, origin);
    snprintf(f->server.url, sizeof f->server.url, "%s/mcp", origin);
    mcp_error_t err = {0};
    f->client = mcp_client_new(&(mcp_client_options_t){.name = "dpop-test", .version = "1",
                                                       .era = MCP_CLIENT_ERA_MODERN},
                               &err);
    assert_non_null(f->client);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mcp_client_free(f->client);
    oauth_fixture_stop(f->server.http);
    pthread_mutex_destroy(&f->server.lock);
    free(f);
    return 0;
}

static int connect_to(fixture_t *f, mcp_error_t *err)
{
    return mcp_client_connect_http(f->client,
                                   &(mcp_http_target_t){.url = f->server.url,
                                                        .token = fake_token,
                                                        .token_proof = fake_proof,
                                                        .token_user = &f->source},
                                   err);
}

/* ---- the tests ---- */

/* Challenged, the client gets a token; refused for want of a nonce, it
 * sends the request a second time, its proof with the nonce; later
 * requests carry it from the start, each with a proof of its own. */
static void test_nonce_retry_after_a_new_token(void **state)
{
    fixture_t *f = *state;
    mcp_error_t err = {0};
    if (connect_to(f, &err) != MCP_OK)
        fail_msg("connect: %s", err.message);
    assert_int_equal(f->server.requests, 3);
    assert_int_equal(f->server.refused, 2);
    assert_string_equal(f->source.challenges[0], "(none)");
    assert_string_equal(f->source.challenges[1],
                        "DPoP resource_metadata=\"http://127.0.0.1/prm\"");
    assert_string_equal(f->source.challenges[2],
                        "DPoP error=\"use_dpop_nonce\", error_description=\"nonce\"");
    assert_string_equal(f->server.last_auth, "DPoP " TOKEN);
    assert_string_equal(f->server.last_dpop, "proof-2 nonce=rs-1");
    assert_string_equal(f->source.last_method, "POST");
    assert_string_equal(f->source.last_url, f->server.url);
    assert_string_equal(f->source.last_token, TOKEN);

    json_t *result = NULL;
    if (mcp_client_list_tools(f->client, NULL, NULL, &result, &err) != MCP_OK)
        fail_msg("tools/list: %s", err.message);
    json_decref(result);
    assert_int_equal(f->server.requests, 4);
    assert_int_equal(f->server.refused, 2);
    assert_string_equal(f->server.last_dpop, "proof-3 nonce=rs-1");
}

/* A server that never takes the nonce it asked for is not asked forever:
 * after the token's retry and the nonce's, the request fails. */
static void test_nonce_retried_once(void **state)
{
    fixture_t *f = *state;
    f->server.rotating = true;
    mcp_error_t err = {0};
    assert_int_equal(connect_to(f, &err), MCP_EAUTH);
    assert_int_equal(f->server.requests, 3);
    assert_int_equal(f->server.refused, 3);
}

/* No proof from the callback: a Bearer token, and no DPoP header. */
static void test_bearer_when_no_proof(void **state)
{
    fixture_t *f = *state;
    f->source.bearer = true;
    mcp_error_t err = {0};
    assert_int_equal(connect_to(f, &err), MCP_EAUTH);
    assert_string_equal(f->server.last_auth, "Bearer " TOKEN);
    assert_string_equal(f->server.last_dpop, "");
    /* A Bearer refusal is not a nonce request: one retry only. */
    assert_int_equal(f->server.requests, 2);
}

/* With a token source, the DPoP header is the transport's. */
static void test_dpop_header_reserved(void **state)
{
    fixture_t *f = *state;
    mcp_error_t err = {0};
    const char *const headers[] = {"DPoP: mine", NULL};
    assert_true(mcp_client_connect_http(f->client,
                                        &(mcp_http_target_t){.url = f->server.url,
                                                             .headers = headers,
                                                             .token = fake_token,
                                                             .token_user = &f->source},
                                        &err) < 0);
    if (!strstr(err.message, "extra header DPoP is set by the transport"))
        fail_msg("refused for another reason: %s", err.message);
    assert_int_equal(f->server.requests, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nonce_retry_after_a_new_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nonce_retried_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bearer_when_no_proof, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dpop_header_reserved, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
