/*
 * The grants by assertion (mcp/oauth.h): the JWT bearer grant of workload
 * identity federation, and Enterprise-Managed Authorization (a token
 * exchange at the enterprise IdP for an ID-JAG, then the JWT bearer
 * grant), against a small authorization server and IdP in process
 * (libmicrohttpd). Each keeps the last request it was sent and answers
 * as the test says. The tests check what went over the wire, and that a
 * refusal reaches the caller with the server's words, once: no retry, no
 * other grant.
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
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <microhttpd.h>

#include "mcp/mcp.h"
#include "oauth_fixture.h"
#include "test_clock.h"

#define SERVER_PATH "/mcp"
#define JWT_BEARER "urn:ietf:params:oauth:grant-type:jwt-bearer"
#define ID_JAG "urn:ietf:params:oauth:token-type:id-jag"
#define ID_JAG_ANSWER \
    "{\"access_token\":\"the-id-jag\",\"issued_token_type\":\"" ID_JAG "\",\"token_type\":\"N_A\"}"

/* ---- the authorization server and the IdP ---- */

/* What one endpoint was sent last, and how often; and what it answers
 * (NULL: its usual success). */
typedef struct endpoint {
    int requests;
    char form[4096];
    char authorization[512];
    unsigned status;
    const char *answer;
} endpoint_t;

typedef struct as {
    oauth_fixture_t *http;
    /* The authorization server's issuer, and the IdP's origin. */
    char origin[OAUTH_FIXTURE_ORIGIN_MAX];
    const char *extra; /* more authorization server metadata members */
    int expires_in;    /* of the access tokens it issues */
    pthread_mutex_t lock;
    endpoint_t token, idp;
} as_t;

/* Keeps a request to `e` and answers it: as the test said, else with an
 * ID-JAG (the IdP) or a new access token (the authorization server). */
static enum MHD_Result post(as_t *as, endpoint_t *e, struct MHD_Connection *conn,
                            const char *body)
{
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    char doc[512];
    pthread_mutex_lock(&as->lock);
    int n = ++e->requests;
    snprintf(e->form, sizeof e->form, "%s", body);
    snprintf(e->authorization, sizeof e->authorization, "%s", auth ? auth : "");
    unsigned status = e->answer ? e->status : 200;
    if (e->answer)
        snprintf(doc, sizeof doc, "%s", e->answer);
    else if (e == &as->idp)
        snprintf(doc, sizeof doc, "%s", ID_JAG_ANSWER);
    else
        snprintf(doc, sizeof doc,
                 "{\"access_token\":\"at-%d\",\"token_type\":\"Bearer\",\"expires_in\":%d}", n,
                 as->expires_in ? as->expires_in : 3600);
    pthread_mutex_unlock(&as->lock);
    return oauth_fixture_answer(conn, status, doc);
}

static enum MHD_Result route(void *user, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *body)
{
    as_t *as = user;
    if (strcmp(url, "/.well-known/oauth-protected-resource" SERVER_PATH) == 0)
        return oauth_fixture_answer_resource_metadata(conn, as->origin, SERVER_PATH, as->origin,
                                                      NULL);
    if (strcmp(url, "/.well-known/oauth-authorization-server") == 0)
        return oauth_fixture_answer_as_metadata(conn, as->origin, as->extra);
    if (strcmp(url, "/token") == 0 && strcmp(method, "POST") == 0)
        return post(as, &as->token, conn, body);
    if (strcmp(url, "/idp/token") == 0 && strcmp(method, "POST") == 0)
        return post(as, &as->idp, conn, body);
    return oauth_fixture_answer(conn, 404, "{}");
}

static as_t *as_start(const char *extra)
{
    as_t *as = calloc(1, sizeof *as);
    assert_non_null(as);
    as->extra = extra;
    pthread_mutex_init(&as->lock, NULL);
    as->http = oauth_fixture_start(route, as, as->origin);
    return as;
}

static void as_stop(as_t *as)
{
    oauth_fixture_stop(as->http);
    pthread_mutex_destroy(&as->lock);
    free(as);
}

/* Sets what an endpoint answers next (NULL: its usual success). */
static void will_answer(as_t *as, endpoint_t *e, unsigned status, const char *json)
{
    pthread_mutex_lock(&as->lock);
    e->status = status;
    e->answer = json;
    pthread_mutex_unlock(&as->lock);
}

/* ---- the application's assertions ---- */

typedef struct assertions {
    int calls;
    int fail_with;        /* a negative code to give up with, or 0 */
    const char *prefix;   /* the assertions are "<prefix>-<call>" */
    char audience[128];   /* the last call's, or "(null)" */
} assertions_t;

static int next_assertion(void *user, const char *audience, char **assertion_out)
{
    assertions_t *a = user;
    a->calls++;
    snprintf(a->audience, sizeof a->audience, "%s", audience ? audience : "(null)");
    if (a->fail_with)
        return a->fail_with;
    return asprintf(assertion_out, "%s-%d", a->prefix, a->calls) > 0 ? MCP_OK : MCP_ENOMEM;
}

/* ---- helpers ---- */

/* The request's form must have exactly these parameters: name, value
 * pairs, NULL-terminated. */
static void expect_exact_form(const endpoint_t *e, ...)
{
    va_list ap;
    va_start(ap, e);
    size_t count = 0;
    for (const char *name; (name = va_arg(ap, const char *)); count++) {
        const char *want = va_arg(ap, const char *);
        char *got = oauth_fixture_form_get(e->form, name);
        if (!got || strcmp(got, want) != 0)
            fail_msg("%s is %s, not %s: %s", name, got ? got : "missing", want, e->form);
        free(got);
    }
    va_end(ap);
    size_t params = e->form[0] ? 1 : 0;
    for (const char *p = e->form; (p = strchr(p, '&')); p++)
        params++;
    if (params != count)
        fail_msg("%zu parameters, not %zu: %s", params, count, e->form);
}

static char *server_url(const as_t *as)
{
    char *url = NULL;
    assert_true(asprintf(&url, "%s" SERVER_PATH, as->origin) > 0);
    return url;
}

/* Answers the MCP server's challenge (asking for `scope`, or none); the
 * token, malloc'd. On a failure, *message says why. */
static char *answer_challenge(mcp_oauth_t *o, const as_t *as, const char *scope, int want_rc,
                              char message[MCP_ERROR_MESSAGE_MAX])
{
    char *url = server_url(as), *challenge = NULL, *token = NULL;
    if (scope)
        assert_true(asprintf(&challenge, "Bearer scope=\"%s\"", scope) > 0);
    else
        assert_non_null(challenge = strdup("Bearer"));
    int rc = mcp_oauth_token(o, url, challenge, &token);
    mcp_error_t err = {0};
    assert_int_equal(mcp_oauth_last_error(o, &err), rc);
    if (rc != want_rc)
        fail_msg("mcp_oauth_token: %d, want %d (%s)", rc, want_rc, err.message);
    if (message)
        snprintf(message, MCP_ERROR_MESSAGE_MAX, "%s", err.message);
    mcp_error_clear(&err);
    free(url);
    free(challenge);
    return token;
}

/* The held token, without a challenge: renewed if it expired. */
static char *held_token(mcp_oauth_t *o, const as_t *as, int want_rc)
{
    char *url = server_url(as), *token = NULL;
    int rc = mcp_oauth_token(o, url, NULL, &token);
    if (rc != want_rc) {
        mcp_error_t err = {0};
        mcp_oauth_last_error(o, &err);
        fail_msg("mcp_oauth_token: %d, want %d (%s)", rc, want_rc, err.message);
    }
    free(url);
    return token;
}

static mcp_oauth_t *make(const mcp_oauth_options_t *options)
{
    mcp_error_t err = {0};
    mcp_oauth_t *o = mcp_oauth_new(options, &err);
    if (!o)
        fail_msg("mcp_oauth_new: %s", err.message);
    return o;
}

static void expect_says(const char *message, const char *words)
{
    if (!strstr(message, words))
        fail_msg("\"%s\" does not say \"%s\"", message, words);
}

/* ---- workload identity federation ---- */

#define WIF_METADATA                                 \
    "\"grant_types_supported\":[\"" JWT_BEARER "\"]," \
    "\"token_endpoint_auth_methods_supported\":[\"none\"]"

static mcp_oauth_t *workload(assertions_t *a)
{
    return make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_JWT_BEARER, .client_id = "wl",
                                       .assertion = next_assertion, .assertion_user = a,
                                       .timeout_ms = 5000});
}

static void test_jwt_bearer_grant(void **state)
{
    (void)state;
    as_t *as = as_start(WIF_METADATA);
    as->expires_in = 1; /* let expire below */
    assertions_t a = {.prefix = "workload-jwt"};
    mcp_oauth_t *o = workload(&a);
    char *token = answer_challenge(o, as, "tools", MCP_OK, NULL);
    assert_string_equal(token, "at-1");
    free(token);
    char *resource = server_url(as);
    expect_exact_form(&as->token, "grant_type", JWT_BEARER, "assertion", "workload-jwt-1",
                      "scope", "tools", "resource", resource, "client_id", "wl", NULL);
    assert_string_equal(as->token.authorization, "");
    /* The workload's token is asked for the authorization server. */
    assert_string_equal(a.audience, as->origin);

    /* Expired: a new grant, with a fresh assertion, for the scope granted. */
    sleep_ms(1100); /* past the token's whole lifetime */
    token = held_token(o, as, MCP_OK);
    assert_string_equal(token, "at-2");
    free(token);
    assert_int_equal(a.calls, 2);
    expect_exact_form(&as->token, "grant_type", JWT_BEARER, "assertion", "workload-jwt-2",
                      "scope", "tools", "resource", resource, "client_id", "wl", NULL);
    free(resource);
    mcp_oauth_free(o);
    as_stop(as);
}

/* A workload with neither client id nor scope sends the assertion alone. */
static void test_jwt_bearer_grant_alone(void **state)
{
    (void)state;
    as_t *as = as_start(WIF_METADATA);
    assertions_t a = {.prefix = "workload-jwt"};
    mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_JWT_BEARER,
                                                 .assertion = next_assertion,
                                                 .assertion_user = &a, .timeout_ms = 5000});
    free(answer_challenge(o, as, NULL, MCP_OK, NULL));
    char *resource = server_url(as);
    expect_exact_form(&as->token, "grant_type", JWT_BEARER, "assertion", "workload-jwt-1",
                      "resource", resource, NULL);
    free(resource);
    mcp_oauth_free(o);
    as_stop(as);
}

/* The token in a file, as platforms mount it (mcp_oauth_assertion_from_file):
 * read at each grant, so the rotated token goes with the next one. */
static void test_jwt_bearer_assertion_from_file(void **state)
{
    (void)state;
    char path[] = "/tmp/mcp-wif-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "  token-one\n", 12), 12);
    close(fd);
    as_t *as = as_start(WIF_METADATA);
    as->expires_in = 1;
    mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_JWT_BEARER,
                                                 .assertion = mcp_oauth_assertion_from_file,
                                                 .assertion_user = path, .timeout_ms = 5000});
    free(answer_challenge(o, as, NULL, MCP_OK, NULL));
    char *resource = server_url(as);
    expect_exact_form(&as->token, "grant_type", JWT_BEARER, "assertion", "token-one", "resource",
                      resource, NULL);
    /* The platform rotates the token; the renewal presents the new one. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("token-two\n", f);
    fclose(f);
    sleep_ms(1100); /* past the token's whole lifetime */
    free(held_token(o, as, MCP_OK));
    expect_exact_form(&as->token, "grant_type", JWT_BEARER, "assertion", "token-two", "resource",
                      resource, NULL);
    /* Gone: the renewal fails with the callback's code, and says so. */
    unlink(path);
    sleep_ms(1100);
    free(held_token(o, as, MCP_EIO));
    free(resource);
    mcp_oauth_free(o);
    as_stop(as);
}

/* SEP-1933: invalid_grant, invalid_scope and unauthorized_client end the
 * attempt, with the server's words; the assertion is not presented again
 * and no other grant is tried. */
static void test_jwt_bearer_refusals_reach_the_caller_once(void **state)
{
    (void)state;
    static const struct {
        const char *answer;
        const char *says;
    } refusals[] = {
        {"{\"error\":\"invalid_grant\",\"error_description\":\"JWT assertion is expired\"}",
         "invalid_grant (JWT assertion is expired)"},
        {"{\"error\":\"invalid_scope\",\"error_description\":\"not for this grant\"}",
         "invalid_scope (not for this grant)"},
        {"{\"error\":\"unauthorized_client\"}", "unauthorized_client"},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        as_t *as = as_start(WIF_METADATA);
        will_answer(as, &as->token, 400, refusals[i].answer);
        assertions_t a = {.prefix = "workload-jwt"};
        mcp_oauth_t *o = workload(&a);
        char message[MCP_ERROR_MESSAGE_MAX];
        assert_null(answer_challenge(o, as, "tools", MCP_EAUTH, message));
        expect_says(message, refusals[i].says);
        assert_int_equal(as->token.requests, 1);
        assert_int_equal(a.calls, 1);
        /* Nothing is held, and nothing is asked without a challenge. */
        assert_null(held_token(o, as, MCP_OK));
        assert_int_equal(as->token.requests, 1);
        mcp_oauth_free(o);
        as_stop(as);
    }
}

/* A renewal refused is the caller's to see at once, not a token-less
 * request whose challenge would present an assertion again. */
static void test_jwt_bearer_renewal_refused(void **state)
{
    (void)state;
    as_t *as = as_start(WIF_METADATA);
    as->expires_in = 1;
    assertions_t a = {.prefix = "workload-jwt"};
    mcp_oauth_t *o = workload(&a);
    free(answer_challenge(o, as, "tools", MCP_OK, NULL));
    will_answer(as, &as->token, 400, "{\"error\":\"invalid_grant\"}");
    sleep_ms(1100); /* past the token's whole lifetime */
    assert_null(held_token(o, as, MCP_EAUTH));
    assert_int_equal(as->token.requests, 2);
    mcp_error_t err = {0};
    assert_int_equal(mcp_oauth_last_error(o, &err), MCP_EAUTH);
    expect_says(err.message, "invalid_grant");
    mcp_oauth_free(o);
    as_stop(as);
}

/* No request at all: a server without the grant, or an application
 * without an assertion. */
static void test_jwt_bearer_not_attempted(void **state)
{
    (void)state;
    as_t *as = as_start("\"grant_types_supported\":[\"client_credentials\"]");
    assertions_t a = {.prefix = "workload-jwt"};
    mcp_oauth_t *o = workload(&a);
    char message[MCP_ERROR_MESSAGE_MAX];
    assert_null(answer_challenge(o, as, "tools", MCP_EUNSUPPORTED, message));
    expect_says(message, "JWT bearer grant");
    assert_int_equal(a.calls, 0);
    mcp_oauth_free(o);
    as_stop(as);

    as = as_start(WIF_METADATA);
    a = (assertions_t){.prefix = "workload-jwt", .fail_with = MCP_EIO};
    o = workload(&a);
    assert_null(answer_challenge(o, as, "tools", MCP_EIO, message));
    expect_says(message, "workload JWT");
    assert_int_equal(as->token.requests, 0);
    mcp_oauth_free(o);
    as_stop(as);
}

/* With the authorization server pinned, a resource naming another gets
 * neither the workload's JWT nor the enterprise's ID-JAG: the
 * application is not even asked for an assertion, and neither the IdP
 * nor the token endpoint hears of it. */
static void test_issuer_pin_keeps_assertions(void **state)
{
    (void)state;
    static const char ELSEWHERE[] = "https://as.example";
    as_t *as = as_start(WIF_METADATA);
    assertions_t a = {.prefix = "workload-jwt"};
    mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_JWT_BEARER,
                                                 .assertion = next_assertion,
                                                 .assertion_user = &a, .issuer = ELSEWHERE,
                                                 .timeout_ms = 5000});
    char message[MCP_ERROR_MESSAGE_MAX];
    assert_null(answer_challenge(o, as, "tools", MCP_EAUTH, message));
    expect_says(message, ELSEWHERE);
    assert_int_equal(a.calls, 0);
    assert_int_equal(as->token.requests, 0);
    mcp_oauth_free(o);
    as_stop(as);

    as = as_start("\"grant_types_supported\":[\"" JWT_BEARER "\"]");
    a = (assertions_t){.prefix = "id-token"};
    char *idp = NULL;
    assert_true(asprintf(&idp, "%s/idp/token", as->origin) > 0);
    o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_ENTERPRISE, .client_id = "mcp-client",
                                    .client_secret = "mcp-secret", .idp_token_endpoint = idp,
                                    .idp_client_id = "idp-client", .assertion = next_assertion,
                                    .assertion_user = &a, .issuer = ELSEWHERE,
                                    .timeout_ms = 5000});
    assert_null(answer_challenge(o, as, "tools", MCP_EAUTH, message));
    expect_says(message, ELSEWHERE);
    assert_int_equal(a.calls, 0);
    assert_int_equal(as->idp.requests, 0);
    assert_int_equal(as->token.requests, 0);
    mcp_oauth_free(o);
    free(idp);
    as_stop(as);
}

/* ---- Enterprise-Managed Authorization ---- */

#define ENTERPRISE_METADATA                          \
    "\"grant_types_supported\":[\"" JWT_BEARER "\"]," \
    "\"token_endpoint_auth_methods_supported\":[\"client_secret_basic\"]"

static mcp_oauth_t *enterprise(const as_t *as, assertions_t *a, const char *idp_secret,
                               char **idp_endpoint)
{
    assert_true(asprintf(idp_endpoint, "%s/idp/token", as->origin) > 0);
    return make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_ENTERPRISE,
                                       .client_id = "mcp-client", .client_secret = "mcp-secret",
                                       .idp_token_endpoint = *idp_endpoint,
                                       .idp_client_id = "idp-client",
                                       .idp_client_secret = idp_secret,
                                       .assertion = next_assertion, .assertion_user = a,
                                       .timeout_ms = 5000});
}

static void test_enterprise_grant(void **state)
{
    (void)state;
    as_t *as = as_start(ENTERPRISE_METADATA);
    assertions_t a = {.prefix = "id-token"};
    char *idp = NULL;
    mcp_oauth_t *o = enterprise(as, &a, NULL, &idp);
    char *token = answer_challenge(o, as, "tools", MCP_OK, NULL);
    assert_string_equal(token, "at-1");
    free(token);
    assert_string_equal(a.audience, "(null)");
    /* The ID token for an ID-JAG naming the authorization server and the
     * MCP server; a public client at the IdP names itself. */
    char *resource = server_url(as);
    expect_exact_form(&as->idp, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange",
                      "requested_token_type", ID_JAG, "audience", as->origin, "resource",
                      resource, "scope", "tools", "subject_token", "id-token-1",
                      "subject_token_type", "urn:ietf:params:oauth:token-type:id_token",
                      "client_id", "idp-client", NULL);
    assert_string_equal(as->idp.authorization, "");
    /* The ID-JAG in the JWT bearer grant, the client authenticated as the
     * server supports (Base64 of "mcp-client:mcp-secret"). */
    expect_exact_form(&as->token, "grant_type", JWT_BEARER, "assertion", "the-id-jag", "scope",
                      "tools", "resource", resource, NULL);
    assert_string_equal(as->token.authorization, "Basic bWNwLWNsaWVudDptY3Atc2VjcmV0");
    free(resource);
    mcp_oauth_free(o);
    free(idp);

    /* A confidential client at the IdP authenticates in a Basic header. */
    a = (assertions_t){.prefix = "id-token"};
    o = enterprise(as, &a, "idp-secret", &idp);
    free(answer_challenge(o, as, "tools", MCP_OK, NULL));
    assert_string_equal(as->idp.authorization, "Basic aWRwLWNsaWVudDppZHAtc2VjcmV0");
    assert_null(oauth_fixture_form_get(as->idp.form, "client_id"));
    mcp_oauth_free(o);
    free(idp);
    as_stop(as);
}

/* The IdP's refusal, or a token that is not an ID-JAG, ends the attempt
 * before the authorization server is asked. */
static void test_enterprise_idp_refusals(void **state)
{
    (void)state;
    static const struct {
        unsigned status;
        const char *answer;
        int rc;
        const char *says;
    } cases[] = {
        {400, "{\"error\":\"access_denied\",\"error_description\":\"not by policy\"}", MCP_EAUTH,
         "access_denied (not by policy)"},
        {200,
         "{\"access_token\":\"x\",\"issued_token_type\":"
         "\"urn:ietf:params:oauth:token-type:access_token\",\"token_type\":\"Bearer\"}",
         MCP_EPROTO, "not an ID-JAG"},
        {200, "{\"access_token\":\"x\",\"token_type\":\"N_A\"}", MCP_EPROTO, "not an ID-JAG"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        as_t *as = as_start(ENTERPRISE_METADATA);
        will_answer(as, &as->idp, cases[i].status, cases[i].answer);
        assertions_t a = {.prefix = "id-token"};
        char *idp = NULL, message[MCP_ERROR_MESSAGE_MAX];
        mcp_oauth_t *o = enterprise(as, &a, NULL, &idp);
        assert_null(answer_challenge(o, as, "tools", cases[i].rc, message));
        expect_says(message, cases[i].says);
        assert_int_equal(as->idp.requests, 1);
        assert_int_equal(as->token.requests, 0);
        mcp_oauth_free(o);
        free(idp);
        as_stop(as);
    }
}

/* The authorization server's refusal of the ID-JAG reaches the caller,
 * once. */
static void test_enterprise_grant_refused(void **state)
{
    (void)state;
    as_t *as = as_start(ENTERPRISE_METADATA);
    will_answer(as, &as->token, 400,
                "{\"error\":\"invalid_grant\",\"error_description\":\"ID-JAG expired\"}");
    assertions_t a = {.prefix = "id-token"};
    char *idp = NULL, message[MCP_ERROR_MESSAGE_MAX];
    mcp_oauth_t *o = enterprise(as, &a, NULL, &idp);
    assert_null(answer_challenge(o, as, "tools", MCP_EAUTH, message));
    expect_says(message, "invalid_grant (ID-JAG expired)");
    assert_int_equal(as->idp.requests, 1);
    assert_int_equal(as->token.requests, 1);
    mcp_oauth_free(o);
    free(idp);
    as_stop(as);
}

/* The user's ID token does not cross a network in clear. */
static void test_enterprise_idp_over_plain_http(void **state)
{
    (void)state;
    as_t *as = as_start(ENTERPRISE_METADATA);
    assertions_t a = {.prefix = "id-token"};
    mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_ENTERPRISE,
                                                 .client_id = "mcp-client",
                                                 .idp_token_endpoint = "http://idp.example/token",
                                                 .idp_client_id = "idp-client",
                                                 .assertion = next_assertion,
                                                 .assertion_user = &a, .timeout_ms = 5000});
    char message[MCP_ERROR_MESSAGE_MAX];
    assert_null(answer_challenge(o, as, "tools", MCP_EAUTH, message));
    expect_says(message, "plain HTTP");
    assert_int_equal(a.calls, 0);
    mcp_oauth_free(o);
    as_stop(as);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jwt_bearer_grant),
        cmocka_unit_test(test_jwt_bearer_grant_alone),
        cmocka_unit_test(test_jwt_bearer_assertion_from_file),
        cmocka_unit_test(test_jwt_bearer_refusals_reach_the_caller_once),
        cmocka_unit_test(test_jwt_bearer_renewal_refused),
        cmocka_unit_test(test_issuer_pin_keeps_assertions),
        cmocka_unit_test(test_jwt_bearer_not_attempted),
        cmocka_unit_test(test_enterprise_grant),
        cmocka_unit_test(test_enterprise_idp_refusals),
        cmocka_unit_test(test_enterprise_grant_refused),
        cmocka_unit_test(test_enterprise_idp_over_plain_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
