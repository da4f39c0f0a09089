/*
 * A host signing in to a server whose configuration says "oauth", end to
 * end and in process: libmcp's HTTP server admits one bearer token and
 * challenges with a resource_metadata URL; a small authorization server
 * (libmicrohttpd) publishes the metadata, registers clients and issues
 * that token for a code; the user's part is a callback that approves at
 * once. A second host, given what the first one saved, does not ask the
 * user again. A host given "grant": "enterprise" in its configuration
 * gets its token from the user's ID token in a file, exchanged at an IdP
 * (on the same fixture) for an ID-JAG, with no user asked.
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <microhttpd.h>

#include "mcp/mcp.h"
#include "oauth_fixture.h"

#define TOKEN "granted-token"
#define CODE "the-code"
#define ID_TOKEN "the-users-id-token"
#define ID_JAG "the-id-jag"
#define JWT_BEARER "urn:ietf:params:oauth:grant-type:jwt-bearer"
#define IDP_BASIC "Basic aWRwLWNsaWVudDppZHAtc2VjcmV0" /* idp-client:idp-secret */

/* ---- the authorization server ---- */

typedef struct as {
    oauth_fixture_t *http;
    char issuer[OAUTH_FIXTURE_ORIGIN_MAX];
    char resource[64];
    pthread_mutex_t lock;
    int registrations, token_requests;
    char last_token_form[2048];
    bool dpop;             /* offer DPoP-bound tokens (ES256 proofs) */
    int proofs_received;   /* token requests that carried a DPoP proof */
    int idp_requests;      /* token exchanges at the IdP (/idp/token) */
} as_t;

/* The IdP: an ID-JAG for the user's ID token, to the confidential client
 * "idp-client" only. */
static enum MHD_Result idp_exchange(as_t *as, struct MHD_Connection *conn, const char *body)
{
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    char *subject = oauth_fixture_form_get(body, "subject_token");
    bool good = auth && strcmp(auth, IDP_BASIC) == 0 && subject && strcmp(subject, ID_TOKEN) == 0;
    free(subject);
    pthread_mutex_lock(&as->lock);
    as->idp_requests++;
    pthread_mutex_unlock(&as->lock);
    return good ? oauth_fixture_answer(conn, 200,
                                       "{\"access_token\":\"" ID_JAG "\",\"issued_token_type\":"
                                       "\"urn:ietf:params:oauth:token-type:id-jag\","
                                       "\"token_type\":\"N_A\"}")
                : oauth_fixture_answer(conn, 400, "{\"error\":\"invalid_grant\"}");
}

/* The JWT bearer grant with the IdP's ID-JAG, for "mcp-client". */
static bool good_id_jag_grant(const char *body)
{
    char *type = oauth_fixture_form_get(body, "grant_type");
    char *assertion = oauth_fixture_form_get(body, "assertion");
    char *client = oauth_fixture_form_get(body, "client_id");
    bool good = type && strcmp(type, JWT_BEARER) == 0 && assertion &&
                strcmp(assertion, ID_JAG) == 0 && client && strcmp(client, "mcp-client") == 0;
    free(type);
    free(assertion);
    free(client);
    return good;
}

static enum MHD_Result route(void *user, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *body)
{
    as_t *as = user;
    if (strcmp(url, "/prm") == 0)
        return oauth_fixture_answer_resource_metadata(conn, as->resource, "", as->issuer, NULL);
    if (strcmp(url, "/.well-known/oauth-authorization-server") == 0) {
        char extra[1024];
        snprintf(extra, sizeof extra,
                 "\"authorization_endpoint\":\"%s/authorize\","
                 "\"registration_endpoint\":\"%s/register\","
                 "\"code_challenge_methods_supported\":[\"S256\"],"
                 "\"authorization_response_iss_parameter_supported\":true,"
                 "\"grant_types_supported\":[\"authorization_code\",\"" JWT_BEARER "\"]%s",
                 as->issuer, as->issuer,
                 as->dpop ? ",\"dpop_signing_alg_values_supported\":[\"ES256\"]" : "");
        return oauth_fixture_answer_as_metadata(conn, as->issuer, extra);
    }
    if (strcmp(url, "/register") == 0 && strcmp(method, "POST") == 0) {
        pthread_mutex_lock(&as->lock);
        as->registrations++;
        pthread_mutex_unlock(&as->lock);
        return oauth_fixture_answer(conn, 201, "{\"client_id\":\"host-client\"}");
    }
    if (strcmp(url, "/token") == 0 && strcmp(method, "POST") == 0) {
        bool proof = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "DPoP") != NULL;
        pthread_mutex_lock(&as->lock);
        as->token_requests++;
        as->proofs_received += proof;
        snprintf(as->last_token_form, sizeof as->last_token_form, "%s", body);
        pthread_mutex_unlock(&as->lock);
        bool good = (strstr(body, "code=" CODE) && strstr(body, "code_verifier=") &&
                     strstr(body, "client_id=host-client")) ||
                    good_id_jag_grant(body);
        bool bound = as->dpop && proof;
        return good ? oauth_fixture_answer(conn, 200,
                                           bound ? "{\"access_token\":\"" TOKEN "\",\"token_type\":"
                                                   "\"DPoP\",\"expires_in\":3600}"
                                                 : "{\"access_token\":\"" TOKEN "\",\"token_type\":"
                                                   "\"Bearer\",\"expires_in\":3600}")
                    : oauth_fixture_answer(conn, 400, "{\"error\":\"invalid_grant\"}");
    }
    if (strcmp(url, "/idp/token") == 0 && strcmp(method, "POST") == 0)
        return idp_exchange(as, conn, body);
    return oauth_fixture_answer(conn, 404, "{}");
}

static void as_start(as_t *as)
{
    pthread_mutex_init(&as->lock, NULL);
    as->http = oauth_fixture_start(route, as, as->issuer);
}

/* ---- the MCP server: admits TOKEN only ---- */

static char challenge[160];
static atomic_int dpop_admitted; /* requests admitted with a DPoP token and proof */

static int check_token(void *user, const mcp_headers_t *headers, char **principal,
                       char **www_authenticate)
{
    const char *auth = mcp_headers_get(headers, "Authorization");
    if (auth && strcmp(auth, "Bearer " TOKEN) == 0)
        return 0;
    if (auth && strcmp(auth, "DPoP " TOKEN) == 0 && mcp_headers_get(headers, "DPoP")) {
        atomic_fetch_add(&dpop_admitted, 1);
        return 0;
    }
    *www_authenticate = strdup(challenge);
    return 401;
}

static int echo(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, "ok");
}

/* ---- the user: approves at once ---- */

static int approvals;

/* Sends the user back as the authorization server would: to the redirect
 * URI with the code, the state and the issuer. */
static int approve(void *user, const char *url, char **redirect_out)
{
    as_t *as = user;
    approvals++;
    const char *state = strstr(url, "state=");
    assert_non_null(state);
    state += strlen("state=");
    int len = (int)strcspn(state, "&");
    assert_true(strstr(url, "code_challenge_method=S256") != NULL);
    return asprintf(redirect_out, "http://127.0.0.1:9/cb?code=" CODE "&state=%.*s&iss=%s", len,
                    state, as->issuer) < 0
               ? MCP_ENOMEM
               : 0;
}

static mcp_host_t *host_for_oauth(as_t *as, const char *url, const char *oauth)
{
    mcp_error_t err = {0};
    mcp_host_t *host = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "host-test", .version = "1", .era = MCP_CLIENT_ERA_MODERN},
        .oauth_redirect_uri = "http://127.0.0.1:9/cb",
        .oauth_authorize = approve,
        .oauth_authorize_user = as}, &err);
    assert_non_null(host);
    char doc[256];
    snprintf(doc, sizeof doc, "{\"mcpServers\": {\"p\": {\"url\": \"%s\", \"oauth\": %s}}}", url,
             oauth);
    assert_int_equal(mcp_host_load_config(host, doc, strlen(doc), &err), MCP_OK);
    return host;
}

static mcp_host_t *host_for(as_t *as, const char *url)
{
    return host_for_oauth(as, url, "true");
}

/* The MCP server that admits TOKEN only, with its challenge naming the
 * authorization server's resource metadata; its URL into url[64]. */
static mcp_server_t *protected_server_start(as_t *as, mcp_http_server_t **http, char url[64])
{
    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){.name = "p", .version = "1"}, &err);
    assert_non_null(srv);
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){.name = "echo", .handler = echo}, &err),
                     MCP_OK);
    assert_int_equal(mcp_http_server_start(srv,
                                           &(mcp_http_options_t){.endpoint = {.auth = check_token}},
                                           http, &err),
                     MCP_OK);
    snprintf(url, 64, "http://127.0.0.1:%u/mcp", (unsigned)mcp_http_server_port(*http));
    snprintf(as->resource, sizeof as->resource, "%s", url);
    snprintf(challenge, sizeof challenge, "Bearer resource_metadata=\"%s/prm\"", as->issuer);
    return srv;
}

/* Stops what protected_server_start and as_start started. */
static void protected_server_stop(as_t *as, mcp_http_server_t *http, mcp_server_t *srv)
{
    mcp_http_server_stop(http);
    mcp_server_free(srv);
    oauth_fixture_stop(as->http);
    pthread_mutex_destroy(&as->lock);
}

static void test_host_signs_in_once(void **state)
{
    (void)state;
    as_t as = {0};
    as_start(&as);
    mcp_error_t err = {0};
    mcp_http_server_t *http = NULL;
    char url[64];
    mcp_server_t *srv = protected_server_start(&as, &http, url);

    /* The first host: the user is asked once, and the tools are there. */
    mcp_host_t *host = host_for(&as, url);
    assert_int_equal(mcp_host_connect(host, 10000), 1);
    assert_int_equal(approvals, 1);
    assert_int_equal(as.registrations, 1);
    assert_int_equal(as.token_requests, 1);
    assert_non_null(strstr(as.last_token_form, "resource="));
    json_t *tools = mcp_host_tools(host);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 0), "name")),
                        "p__echo");
    json_decref(tools);
    mcp_oauth_t *oauth = mcp_host_server_oauth(host, "p");
    assert_non_null(oauth);
    assert_null(mcp_host_server_oauth(host, "nobody"));
    json_t *saved = mcp_oauth_save(oauth);
    assert_non_null(saved);
    mcp_host_free(host);

    /* The second host, given what the first kept, asks nobody. */
    host = host_for(&as, url);
    assert_int_equal(mcp_oauth_restore(mcp_host_server_oauth(host, "p"), saved, &err), MCP_OK);
    assert_int_equal(mcp_host_connect(host, 10000), 1);
    assert_int_equal(approvals, 1);
    assert_int_equal(as.token_requests, 1);
    mcp_host_free(host);

    json_decref(saved);
    protected_server_stop(&as, http, srv);
}

/* "dpop": true in the config, and an authorization server that offers
 * DPoP: the token is bound (a proof at the token endpoint) and every MCP
 * request carries it as "DPoP" with a proof. The same server without
 * "dpop" in the config gets plain Bearer requests. */
static void test_host_dpop_when_configured(void **state)
{
    (void)state;
    as_t as = {.dpop = true};
    as_start(&as);
    mcp_http_server_t *http = NULL;
    char url[64];
    mcp_server_t *srv = protected_server_start(&as, &http, url);

    atomic_store(&dpop_admitted, 0);
    mcp_host_t *host = host_for_oauth(&as, url, "{\"dpop\": true}");
    assert_int_equal(mcp_host_connect(host, 10000), 1);
    assert_int_equal(as.token_requests, 1);
    assert_int_equal(as.proofs_received, 1);
    assert_true(atomic_load(&dpop_admitted) >= 1); /* discover, tools/list... */
    mcp_host_free(host);

    atomic_store(&dpop_admitted, 0);
    host = host_for(&as, url);
    assert_int_equal(mcp_host_connect(host, 10000), 1);
    assert_int_equal(as.token_requests, 2);
    assert_int_equal(as.proofs_received, 1); /* no proof: a Bearer token */
    assert_int_equal(atomic_load(&dpop_admitted), 0);
    mcp_host_free(host);

    protected_server_stop(&as, http, srv);
}

/* A host of no user sign-in (no oauth_authorize) given servers.json text
 * with "grant": "enterprise": the ID token file's content is exchanged at
 * the IdP, the ID-JAG granted, and the tool called. The same with the ID
 * token file gone: the server fails, saying why, before the IdP is asked. */
static mcp_host_t *enterprise_host(const as_t *as, const char *url, const char *id_token_file)
{
    mcp_error_t err = {0};
    mcp_host_t *host = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "host-test", .version = "1", .era = MCP_CLIENT_ERA_MODERN}}, &err);
    assert_non_null(host);
    char doc[1024];
    snprintf(doc, sizeof doc,
             "{\"mcpServers\": {\"p\": {\"url\": \"%s\", \"oauth\": {"
             "\"grant\": \"enterprise\", \"clientId\": \"mcp-client\", "
             "\"assertionFile\": \"%s\", \"idpTokenEndpoint\": \"%s/idp/token\", "
             "\"idpClientId\": \"idp-client\", \"idpClientSecretEnv\": \"HOST_TEST_IDP_SECRET\"}}}}",
             url, id_token_file, as->issuer);
    assert_int_equal(mcp_host_load_config(host, doc, strlen(doc), &err), MCP_OK);
    return host;
}

static void test_host_enterprise_grant(void **state)
{
    (void)state;
    as_t as = {0};
    as_start(&as);
    mcp_http_server_t *http = NULL;
    char url[64];
    mcp_server_t *srv = protected_server_start(&as, &http, url);
    setenv("HOST_TEST_IDP_SECRET", "idp-secret", 1);
    char id_token_file[] = "/tmp/libmcp-host-id-token-XXXXXX";
    int fd = mkstemp(id_token_file);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, ID_TOKEN "\n", strlen(ID_TOKEN) + 1), (ssize_t)strlen(ID_TOKEN) + 1);
    close(fd);

    mcp_host_t *host = enterprise_host(&as, url, id_token_file);
    assert_int_equal(mcp_host_connect(host, 10000), 1);
    assert_int_equal(as.idp_requests, 1);
    assert_int_equal(as.token_requests, 1);
    assert_int_equal(as.registrations, 0);
    json_t *result = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_host_call_tool(host, "p__echo", NULL, NULL, &result, &err), MCP_OK);
    json_t *text = json_object_get(json_array_get(json_object_get(result, "content"), 0), "text");
    assert_string_equal(json_string_value(text), "ok");
    json_decref(result);
    mcp_host_free(host);

    /* No ID token: the sign-in's failure is the server's, and no
     * exchange is tried. */
    unlink(id_token_file);
    host = enterprise_host(&as, url, id_token_file);
    assert_int_equal(mcp_host_connect(host, 10000), 0);
    mcp_host_server_state_t st;
    char *why = NULL;
    assert_int_equal(mcp_host_server_state(host, "p", &st, &why), MCP_OK);
    assert_int_equal(st, MCP_HOST_FAILED);
    assert_non_null(why);
    if (!strstr(why, "no ID token") || !strstr(why, id_token_file) || !strstr(why, "missing"))
        fail_msg("\"%s\" does not say the ID token file %s is missing", why, id_token_file);
    free(why);
    assert_int_equal(as.idp_requests, 1);
    assert_int_equal(as.token_requests, 1);
    mcp_host_free(host);

    unsetenv("HOST_TEST_IDP_SECRET");
    protected_server_stop(&as, http, srv);
}

/* Without oauth_authorize the host cannot sign in: the server connects
 * without a token and is refused; with one but no redirect URI, the host
 * is refused. */
static void test_host_without_sign_in(void **state)
{
    (void)state;
    mcp_error_t err = {0};
    assert_null(mcp_host_new(&(mcp_host_options_t){.client = {.name = "h", .version = "1"},
                                                   .oauth_authorize = approve},
                             &err));
    assert_non_null(strstr(err.message, "oauth_redirect_uri"));
    mcp_error_clear(&err);
    mcp_host_t *host =
        mcp_host_new(&(mcp_host_options_t){.client = {.name = "h", .version = "1"}}, &err);
    const char *doc = "{\"mcpServers\": {\"p\": {\"url\": \"http://127.0.0.1:9/mcp\", "
                      "\"oauth\": true}, \"q\": {\"command\": \"true\"}}}";
    assert_int_equal(mcp_host_load_config(host, doc, strlen(doc), &err), MCP_OK);
    assert_null(mcp_host_server_oauth(host, "p"));
    assert_null(mcp_host_server_oauth(host, "q"));
    mcp_host_free(host);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_signs_in_once),
        cmocka_unit_test(test_host_dpop_when_configured),
        cmocka_unit_test(test_host_enterprise_grant),
        cmocka_unit_test(test_host_without_sign_in),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
