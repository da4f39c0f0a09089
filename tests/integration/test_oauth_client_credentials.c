/*
 * The client credentials grant (mcp/oauth.h, the extension
 * io.modelcontextprotocol/oauth-client-credentials) against a small
 * authorization server in process (libmicrohttpd): it publishes the
 * resource's and its own metadata, as each test sets them, and issues a
 * token to whoever asks, keeping what was asked. The tests check what
 * went over the wire: the Basic header, the form, and the client
 * assertion, whose ES256 signature OpenSSL verifies on its own.
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
#include <time.h>

#include <cmocka.h>
#include <jansson.h>
#include <microhttpd.h>

#include "mcp/mcp.h"
#include "oauth_fixture.h"
#include "openssl_check.h"
#include "test_clock.h"
#include "test_keys.h"

#define CLIENT_ID "svc-client"
#define CLIENT_SECRET "s3cr:et"
#define SERVER_PATH "/mcp"

/* ---- the authorization server ---- */

typedef struct as {
    oauth_fixture_t *http;
    char origin[OAUTH_FIXTURE_ORIGIN_MAX]; /* its issuer */
    const char *extra;   /* more metadata members, e.g. "\"grant_types_supported\":[...]" */
    long long expires_in; /* of the tokens it issues (0: 3600) */
    pthread_mutex_t lock;
    int token_requests;
    char form[4096];          /* the last token request's body */
    char authorization[512];  /* and its Authorization header, or "" */
} as_t;

static enum MHD_Result route(void *user, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *body)
{
    as_t *as = user;
    if (strcmp(url, "/.well-known/oauth-protected-resource" SERVER_PATH) == 0)
        return oauth_fixture_answer_resource_metadata(conn, as->origin, SERVER_PATH, as->origin,
                                                      "\"scopes_supported\":[\"tools\"]");
    /* No authorization endpoint and no PKCE: client credentials needs
     * neither. */
    if (strcmp(url, "/.well-known/oauth-authorization-server") == 0)
        return oauth_fixture_answer_as_metadata(conn, as->origin, as->extra);
    if (strcmp(url, "/token") == 0 && strcmp(method, "POST") == 0) {
        const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        pthread_mutex_lock(&as->lock);
        int n = ++as->token_requests;
        snprintf(as->form, sizeof as->form, "%s", body);
        snprintf(as->authorization, sizeof as->authorization, "%s", auth ? auth : "");
        pthread_mutex_unlock(&as->lock);
        char doc[256];
        snprintf(doc, sizeof doc,
                 "{\"access_token\":\"cc-token-%d\",\"token_type\":\"Bearer\","
                 "\"expires_in\":%lld}",
                 n, as->expires_in ? as->expires_in : 3600);
        return oauth_fixture_answer(conn, 200, doc);
    }
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

/* ---- helpers ---- */

static void expect_form(const as_t *as, const char *name, const char *want)
{
    char *got = oauth_fixture_form_get(as->form, name);
    if (!want && got)
        fail_msg("the token request carries %s=%s: %s", name, got, as->form);
    if (want && (!got || strcmp(got, want) != 0))
        fail_msg("the token request's %s is %s, not %s: %s", name, got ? got : "missing", want,
                 as->form);
    free(got);
}

static char *server_url(const as_t *as)
{
    char *url = NULL;
    assert_true(asprintf(&url, "%s" SERVER_PATH, as->origin) > 0);
    return url;
}

/* Answers the MCP server's first challenge; the token, malloc'd. */
static char *token_for_challenge(mcp_oauth_t *o, const as_t *as, const char *scope, int want_rc)
{
    char *url = server_url(as), *challenge = NULL, *token = NULL;
    assert_true(asprintf(&challenge, "Bearer scope=\"%s\"", scope) > 0);
    int rc = mcp_oauth_token(o, url, challenge, &token);
    if (rc != want_rc) {
        mcp_error_t err = {0};
        mcp_oauth_last_error(o, &err);
        fail_msg("mcp_oauth_token: %d, want %d (%s)", rc, want_rc, err.message);
    }
    free(url);
    free(challenge);
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

/* ---- client secrets ---- */

static void test_client_secret_basic(void **state)
{
    (void)state;
    as_t *as = as_start("\"grant_types_supported\":[\"client_credentials\"],"
                        "\"token_endpoint_auth_methods_supported\":[\"client_secret_basic\"]");
    mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                                 .client_id = CLIENT_ID,
                                                 .client_secret = CLIENT_SECRET,
                                                 .timeout_ms = 5000});
    char *token = token_for_challenge(o, as, "tools", MCP_OK);
    assert_string_equal(token, "cc-token-1");
    free(token);
    assert_int_equal(as->token_requests, 1);
    expect_form(as, "grant_type", "client_credentials");
    expect_form(as, "scope", "tools");
    char *resource = server_url(as);
    expect_form(as, "resource", resource);
    free(resource);
    expect_form(as, "client_secret", NULL);
    expect_form(as, "code_verifier", NULL);
    /* RFC 6749 §2.3.1: id and secret form-encoded, then Base64. */
    char *encoded = NULL;
    assert_true(asprintf(&encoded, "Basic %s", "c3ZjLWNsaWVudDpzM2NyJTNBZXQ=") > 0);
    assert_string_equal(as->authorization, encoded);
    free(encoded);

    /* Held, and answered without asking again. */
    char *url = server_url(as);
    assert_int_equal(mcp_oauth_token(o, url, NULL, &token), MCP_OK);
    assert_string_equal(token, "cc-token-1");
    free(token);
    assert_int_equal(as->token_requests, 1);
    free(url);
    mcp_oauth_free(o);
    as_stop(as);
}

static void test_client_secret_post(void **state)
{
    (void)state;
    as_t *as = as_start("\"grant_types_supported\":[\"client_credentials\"],"
                        "\"token_endpoint_auth_methods_supported\":[\"client_secret_post\"]");
    mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                                 .client_id = CLIENT_ID,
                                                 .client_secret = CLIENT_SECRET,
                                                 .timeout_ms = 5000});
    free(token_for_challenge(o, as, "tools", MCP_OK));
    expect_form(as, "grant_type", "client_credentials");
    expect_form(as, "client_id", CLIENT_ID);
    expect_form(as, "client_secret", CLIENT_SECRET);
    assert_string_equal(as->authorization, "");
    mcp_oauth_free(o);
    as_stop(as);
}

/* ---- private_key_jwt ---- */

/* A base64url segment of a JWS, decoded (malloc'd, NUL-terminated). */
static unsigned char *unbase64url(const char *text, size_t len, size_t *out_len)
{
    unsigned char *out = openssl_unbase64url(text, len, out_len);
    assert_non_null(out);
    return out;
}

/* Checks a client assertion as an authorization server does: the ES256
 * signature with the client's public key (OpenSSL), and the claims.
 * Returns its jti (malloc'd). */
static char *verify_assertion(const char *jwt, const char *audience)
{
    const char *dot1 = strchr(jwt, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    assert_non_null(dot2);
    size_t n;
    unsigned char *header = unbase64url(jwt, (size_t)(dot1 - jwt), &n);
    json_t *h = json_loads((const char *)header, 0, NULL);
    assert_non_null(h);
    assert_string_equal(json_string_value(json_object_get(h, "alg")), "ES256");
    json_decref(h);
    free(header);

    unsigned char *sig = unbase64url(dot2 + 1, strlen(dot2 + 1), &n);
    assert_int_equal(n, 64);
    assert_true(openssl_es256_verifies_pem(TEST_KEY_P256_PEM, jwt, (size_t)(dot2 - jwt), sig));
    free(sig);

    unsigned char *payload = unbase64url(dot1 + 1, (size_t)(dot2 - dot1 - 1), &n);
    json_t *claims = json_loads((const char *)payload, 0, NULL);
    assert_non_null(claims);
    free(payload);
    assert_string_equal(json_string_value(json_object_get(claims, "iss")), CLIENT_ID);
    assert_string_equal(json_string_value(json_object_get(claims, "sub")), CLIENT_ID);
    assert_string_equal(json_string_value(json_object_get(claims, "aud")), audience);
    json_int_t now = (json_int_t)time(NULL);
    json_int_t iat = json_integer_value(json_object_get(claims, "iat"));
    json_int_t exp = json_integer_value(json_object_get(claims, "exp"));
    assert_true(iat <= now + 5 && iat >= now - 60);
    assert_true(exp > now && exp <= now + 3600);
    char *jti = strdup(json_string_value(json_object_get(claims, "jti")));
    json_decref(claims);
    return jti;
}

static void test_private_key_jwt(void **state)
{
    (void)state;
    as_t *as = as_start("\"grant_types_supported\":[\"client_credentials\"],"
                        "\"token_endpoint_auth_methods_supported\":[\"private_key_jwt\"],"
                        "\"token_endpoint_auth_signing_alg_values_supported\":[\"ES256\"]");
    as->expires_in = 1; /* let expire below */
    mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                                 .client_id = CLIENT_ID,
                                                 .private_key_pem = TEST_KEY_P256_PEM,
                                                 .signing_algorithm = "ES256",
                                                 .timeout_ms = 5000});
    char *token = token_for_challenge(o, as, "tools", MCP_OK);
    assert_string_equal(token, "cc-token-1");
    free(token);
    expect_form(as, "grant_type", "client_credentials");
    expect_form(as, "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
    expect_form(as, "client_secret", NULL);
    assert_string_equal(as->authorization, "");
    char *assertion = oauth_fixture_form_get(as->form, "client_assertion");
    assert_non_null(assertion);
    char *jti = verify_assertion(assertion, as->origin);
    free(assertion);

    /* Expired: a new grant (there is no refresh token), with a new
     * assertion, for the scope granted. */
    sleep_ms(1100); /* past the token's whole lifetime */
    char *url = server_url(as);
    assert_int_equal(mcp_oauth_token(o, url, NULL, &token), MCP_OK);
    assert_string_equal(token, "cc-token-2");
    free(token);
    expect_form(as, "grant_type", "client_credentials");
    expect_form(as, "scope", "tools");
    assertion = oauth_fixture_form_get(as->form, "client_assertion");
    char *jti2 = verify_assertion(assertion, as->origin);
    assert_string_not_equal(jti, jti2);
    free(assertion);
    free(jti);
    free(jti2);
    free(url);
    mcp_oauth_free(o);
    as_stop(as);
}

/* ---- token lifetimes ---- */

/* expires_in is the server's number: the largest a JSON integer holds
 * neither overflows (UBSan would stop the test) nor wraps into a token
 * already expired; the token is held, not asked for again. */
static void test_huge_expires_in(void **state)
{
    (void)state;
    as_t *as = as_start("\"grant_types_supported\":[\"client_credentials\"]");
    as->expires_in = 9223372036854775807LL;
    mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                                 .client_id = CLIENT_ID,
                                                 .client_secret = CLIENT_SECRET,
                                                 .timeout_ms = 5000});
    free(token_for_challenge(o, as, "tools", MCP_OK));
    char *url = server_url(as), *token = NULL;
    assert_int_equal(mcp_oauth_token(o, url, NULL, &token), MCP_OK);
    assert_string_equal(token, "cc-token-1");
    assert_int_equal(as->token_requests, 1);
    free(token);
    free(url);
    /* Saved, its expiry is within ten years (and a number). */
    json_t *saved = mcp_oauth_save(o);
    json_int_t at = json_integer_value(json_object_get(json_object_get(saved, "tokens"),
                                                       "expires_at"));
    json_int_t now = (json_int_t)time(NULL);
    assert_true(at > now && at <= now + 10LL * 365 * 24 * 3600 + 1);
    json_decref(saved);
    mcp_oauth_free(o);
    as_stop(as);
}

/* A token that lives 30 s or less is not expired on arrival (which
 * would ask for a new one at every request): it is held for half its
 * lifetime, and renewed once that has passed. */
static void test_short_lived_token_held(void **state)
{
    (void)state;
    static const long long lifetimes[] = {30, 10, 1};
    for (size_t i = 0; i < sizeof lifetimes / sizeof lifetimes[0]; i++) {
        as_t *as = as_start("\"grant_types_supported\":[\"client_credentials\"]");
        as->expires_in = lifetimes[i];
        mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                                     .client_id = CLIENT_ID,
                                                     .client_secret = CLIENT_SECRET,
                                                     .timeout_ms = 5000});
        free(token_for_challenge(o, as, "tools", MCP_OK));
        char *url = server_url(as), *token = NULL;
        if (lifetimes[i] > 1) { /* (a 1 s token's half second is too short to rely on) */
            assert_int_equal(mcp_oauth_token(o, url, NULL, &token), MCP_OK);
            if (strcmp(token, "cc-token-1") != 0 || as->token_requests != 1)
                fail_msg("a %lld s token: %s after %d requests", lifetimes[i], token,
                         as->token_requests);
            free(token);
        } else {
            sleep_ms(600); /* past half of its second */
            assert_int_equal(mcp_oauth_token(o, url, NULL, &token), MCP_OK);
            assert_string_equal(token, "cc-token-2");
            free(token);
        }
        free(url);
        mcp_oauth_free(o);
        as_stop(as);
    }
}

/* ---- the authorization server pinned ---- */

/* The client's secret is the pinned authorization server's: a resource
 * naming another (here the fixture, standing for a rogue one) fails the
 * sign-in before any token request, saying which server was named and
 * which was expected. Pinned to the server named, all goes as before; its
 * saved state is refused by a client pinned elsewhere. */
static void test_issuer_pin(void **state)
{
    (void)state;
    static const char ELSEWHERE[] = "https://as.example";
    as_t *as = as_start("\"grant_types_supported\":[\"client_credentials\"]");
    mcp_oauth_options_t options = {.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                   .client_id = CLIENT_ID,
                                   .client_secret = CLIENT_SECRET,
                                   .issuer = ELSEWHERE,
                                   .timeout_ms = 5000};
    mcp_oauth_t *o = make(&options);
    assert_null(token_for_challenge(o, as, "tools", MCP_EAUTH));
    assert_int_equal(as->token_requests, 0);
    mcp_error_t err = {0};
    assert_int_equal(mcp_oauth_last_error(o, &err), MCP_EAUTH);
    if (!strstr(err.message, ELSEWHERE) || !strstr(err.message, as->origin))
        fail_msg("%s", err.message);
    mcp_error_clear(&err);
    mcp_oauth_free(o);

    options.issuer = as->origin;
    o = make(&options);
    char *token = token_for_challenge(o, as, "tools", MCP_OK);
    assert_string_equal(token, "cc-token-1");
    free(token);
    json_t *saved = mcp_oauth_save(o);
    assert_non_null(saved);
    mcp_oauth_free(o);

    options.issuer = ELSEWHERE;
    o = make(&options);
    assert_int_equal(mcp_oauth_restore(o, saved, &err), MCP_EINVAL);
    if (!strstr(err.message, ELSEWHERE))
        fail_msg("%s", err.message);
    mcp_error_clear(&err);
    assert_null(mcp_oauth_save(o)); /* nothing taken */
    mcp_oauth_free(o);
    json_decref(saved);
    assert_int_equal(as->token_requests, 1);
    as_stop(as);
}

/* ---- refusals ---- */

static void test_server_without_the_grant_or_method(void **state)
{
    (void)state;
    static const struct {
        const char *metadata;
        bool key;
        const char *message;
    } cases[] = {
        {"\"grant_types_supported\":[\"authorization_code\"]", false, "client credentials"},
        {NULL, false, "client credentials"}, /* RFC 8414: authorization_code, implicit */
        {"\"grant_types_supported\":[\"client_credentials\"],"
         "\"token_endpoint_auth_methods_supported\":[\"private_key_jwt\"]",
         false, "client secret"},
        {"\"grant_types_supported\":[\"client_credentials\"],"
         "\"token_endpoint_auth_methods_supported\":[\"client_secret_basic\"]",
         true, "private_key_jwt"},
        {"\"grant_types_supported\":[\"client_credentials\"],"
         "\"token_endpoint_auth_methods_supported\":[\"private_key_jwt\"],"
         "\"token_endpoint_auth_signing_alg_values_supported\":[\"RS256\"]",
         true, "ES256"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        as_t *as = as_start(cases[i].metadata);
        mcp_oauth_options_t options = {.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                       .client_id = CLIENT_ID,
                                       .timeout_ms = 5000};
        if (cases[i].key)
            options.private_key_pem = TEST_KEY_P256_PEM;
        else
            options.client_secret = CLIENT_SECRET;
        mcp_oauth_t *o = make(&options);
        assert_null(token_for_challenge(o, as, "tools", MCP_EUNSUPPORTED));
        mcp_error_t err = {0};
        assert_int_equal(mcp_oauth_last_error(o, &err), MCP_EUNSUPPORTED);
        if (!strstr(err.message, cases[i].message))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.message, cases[i].message);
        assert_int_equal(as->token_requests, 0);
        mcp_oauth_free(o);
        as_stop(as);
    }
}

/* ---- keeping it ---- */

static void test_save_and_restore(void **state)
{
    (void)state;
    as_t *as = as_start("\"grant_types_supported\":[\"client_credentials\"]");
    mcp_oauth_options_t options = {.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                   .client_id = CLIENT_ID,
                                   .client_secret = CLIENT_SECRET,
                                   .timeout_ms = 5000};
    mcp_oauth_t *o = make(&options);
    free(token_for_challenge(o, as, "tools", MCP_OK));
    json_t *saved = mcp_oauth_save(o);
    assert_non_null(saved);
    char *dump = json_dumps(saved, 0);
    assert_null(strstr(dump, CLIENT_SECRET)); /* the secret stays the application's */
    free(dump);
    mcp_oauth_free(o);

    mcp_oauth_t *next = make(&options);
    mcp_error_t err = {0};
    assert_int_equal(mcp_oauth_restore(next, saved, &err), MCP_OK);
    char *url = server_url(as), *token = NULL;
    assert_int_equal(mcp_oauth_token(next, url, NULL, &token), MCP_OK);
    assert_string_equal(token, "cc-token-1");
    assert_int_equal(as->token_requests, 1);
    free(token);
    free(url);
    json_decref(saved);
    mcp_oauth_free(next);
    as_stop(as);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_secret_basic),
        cmocka_unit_test(test_client_secret_post),
        cmocka_unit_test(test_private_key_jwt),
        cmocka_unit_test(test_huge_expires_in),
        cmocka_unit_test(test_short_lived_token_held),
        cmocka_unit_test(test_issuer_pin),
        cmocka_unit_test(test_server_without_the_grant_or_method),
        cmocka_unit_test(test_save_and_restore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
