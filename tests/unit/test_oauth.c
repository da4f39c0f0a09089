/*
 * mcp_oauth_t without an authorization server: what it refuses to be made
 * with, what it answers before any challenge, the errors of a flow that
 * cannot go far, what it keeps between runs, and DPoP-bound tokens. (The
 * flows themselves run against the conformance suite's authorization
 * servers: tests/conformance, client-*.)
 */
#define _GNU_SOURCE /* asprintf */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <microhttpd.h>

#include "mcp/mcp.h"
#include "protocol/base64.h"
#include "test_keys.h"

static int never_called(void *user, const char *url, char **redirect_out)
{
    (void)user;
    (void)url;
    (void)redirect_out;
    fail_msg("the authorize callback must not run");
    return MCP_EAUTH;
}

static mcp_oauth_t *make(void)
{
    mcp_error_t err = {0};
    mcp_oauth_t *o = mcp_oauth_new(&(mcp_oauth_options_t){.redirect_uri = "http://127.0.0.1:9/cb",
                                                          .authorize = never_called,
                                                          .timeout_ms = 2000},
                                   &err);
    assert_non_null(o);
    return o;
}

static void test_new_refuses_bad_options(void **state)
{
    (void)state;
    static const mcp_oauth_options_t bad[] = {
        {.authorize = never_called},                          /* no redirect_uri */
        {.redirect_uri = "http://127.0.0.1:9/cb"},            /* no authorize */
        {.redirect_uri = "http://127.0.0.1:9/cb", .authorize = never_called,
         .application_type = "desktop"},                      /* not native or web */
        {.redirect_uri = "http://127.0.0.1:9/cb", .authorize = never_called,
         .client_secret = "s"},                               /* a secret without an id */
        {.redirect_uri = "http://127.0.0.1:9/cb", .authorize = never_called, .client_id = "c",
         .private_key_pem = TEST_KEY_P256_PEM},               /* a key for a user's grant */
        {.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_secret = "s"}, /* no client id */
        {.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c"},     /* no credential */
        {.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c", .client_secret = "s",
         .private_key_pem = TEST_KEY_P256_PEM},               /* both */
        {.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c",
         .private_key_pem = TEST_KEY_P256_PEM,
         .signing_algorithm = "RS256"},                       /* only ES256 */
        {.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c", .client_secret = "s",
         .signing_algorithm = "ES256"},                       /* an algorithm without a key */
        {.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c",
         .private_key_pem = "-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"},
        {.grant = (mcp_oauth_grant_t)7, .client_id = "c", .client_secret = "s"},
        {.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c", .client_secret = "s",
         .issuer = "as.example"},                              /* a pin that is no URL */
        {.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c", .client_secret = "s",
         .issuer = "http://as.example"},                       /* nor https */
        {.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c", .client_secret = "s",
         .issuer = "https://as.example/?tenant=1"},            /* no issuer has a query */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_t err = {0};
        assert_null(mcp_oauth_new(&bad[i], &err));
        assert_true(err.message[0] != '\0');
    }
    mcp_error_t err = {0};
    assert_null(mcp_oauth_new(NULL, &err));
    mcp_oauth_free(NULL);

    /* Client credentials need no redirect URI and no user. */
    mcp_oauth_t *o = mcp_oauth_new(&(mcp_oauth_options_t){.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                                          .client_id = "c",
                                                          .private_key_pem = TEST_KEY_P256_PEM},
                                   &err);
    assert_non_null(o);
    mcp_oauth_free(o);
    o = mcp_oauth_new(&(mcp_oauth_options_t){.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                             .client_id = "c", .client_secret = "s"},
                      &err);
    assert_non_null(o);
    mcp_oauth_free(o);
}

static int no_assertion(void *user, const char *audience, char **assertion_out)
{
    (void)user;
    (void)audience;
    (void)assertion_out;
    fail_msg("the assertion callback must not run");
    return MCP_EAUTH;
}

/* The grants by assertion: each option they need, and none they do not
 * use, each refusal saying which. */
static void test_new_checks_assertion_grant_options(void **state)
{
    (void)state;
    static const char IDP[] = "https://idp.example/token";
    static const struct {
        mcp_oauth_options_t options;
        const char *says;
    } bad[] = {
        {{.grant = MCP_OAUTH_JWT_BEARER}, "assertion callback"},
        {{.grant = MCP_OAUTH_JWT_BEARER, .assertion = no_assertion, .client_id = "c",
          .private_key_pem = TEST_KEY_P256_PEM},
         "private key"},
        {{.grant = MCP_OAUTH_JWT_BEARER, .assertion = no_assertion, .idp_token_endpoint = IDP}, "IdP options"},
        {{.grant = MCP_OAUTH_JWT_BEARER, .assertion = no_assertion, .client_secret = "s"}, "client id"},
        {{.grant = MCP_OAUTH_ENTERPRISE, .client_id = "c", .idp_token_endpoint = IDP, .idp_client_id = "i"},
         "assertion callback"},
        {{.grant = MCP_OAUTH_ENTERPRISE, .assertion = no_assertion, .idp_token_endpoint = IDP,
          .idp_client_id = "i"},
         "client's id at the authorization server"},
        {{.grant = MCP_OAUTH_ENTERPRISE, .assertion = no_assertion, .client_id = "c", .idp_client_id = "i"},
         "IdP's token endpoint"},
        {{.grant = MCP_OAUTH_ENTERPRISE, .assertion = no_assertion, .client_id = "c", .idp_token_endpoint = IDP,
          .idp_client_secret = "s"},
         "client's id there"},
        {{.grant = MCP_OAUTH_ENTERPRISE, .assertion = no_assertion, .client_id = "c", .idp_token_endpoint = IDP,
          .idp_client_id = "i", .signing_algorithm = "ES256"},
         "private key"},
        {{.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c", .client_secret = "s",
          .assertion = no_assertion},
         "assertion callback"},
        {{.grant = MCP_OAUTH_CLIENT_CREDENTIALS, .client_id = "c", .client_secret = "s",
          .idp_client_id = "i"},
         "IdP options"},
        {{.redirect_uri = "http://127.0.0.1:9/cb", .authorize = never_called,
          .idp_token_endpoint = IDP},
         "IdP options"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_t err = {0};
        if (mcp_oauth_new(&bad[i].options, &err))
            fail_msg("case %zu: made", i);
        if (!strstr(err.message, bad[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.message, bad[i].says);
        mcp_error_clear(&err);
    }

    /* A workload may go without a client id (RFC 7523 §3.1), or be a
     * confidential client; the enterprise's IdP client may be public. */
    static const mcp_oauth_options_t good[] = {
        {.grant = MCP_OAUTH_JWT_BEARER, .assertion = no_assertion},
        {.grant = MCP_OAUTH_JWT_BEARER, .assertion = no_assertion, .client_id = "c", .client_secret = "s"},
        {.grant = MCP_OAUTH_ENTERPRISE, .assertion = no_assertion, .client_id = "c", .client_secret = "s",
         .idp_token_endpoint = IDP, .idp_client_id = "i"},
        {.grant = MCP_OAUTH_ENTERPRISE, .assertion = no_assertion, .client_id = "c", .idp_token_endpoint = IDP,
         .idp_client_id = "i", .idp_client_secret = "t"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        mcp_error_t err = {0};
        mcp_oauth_t *o = mcp_oauth_new(&good[i], &err);
        if (!o)
            fail_msg("case %zu: %s", i, err.message);
        mcp_oauth_free(o);
    }
}

/* Before any challenge there is no token: the server says what it wants. */
static void test_no_token_before_a_challenge(void **state)
{
    (void)state;
    mcp_oauth_t *o = make();
    char *token = (char *)"unchanged";
    assert_int_equal(mcp_oauth_token(o, "http://127.0.0.1:9/mcp", NULL, &token), MCP_OK);
    assert_null(token);
    assert_int_equal(mcp_oauth_token(NULL, "http://x/mcp", NULL, &token), MCP_EINVAL);
    mcp_oauth_free(o);
}

/* A challenge that is not Bearer, or not a challenge at all, fails the
 * request with MCP_EAUTH and says why. */
static void test_challenge_not_answerable(void **state)
{
    (void)state;
    static const struct {
        const char *challenge, *why;
    } cases[] = {
        {"Basic realm=\"x\"", "not Bearer"},
        {"Bearer scope=\"unterminated", "malformed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_oauth_t *o = make();
        char *token = NULL;
        assert_int_equal(mcp_oauth_token(o, "http://127.0.0.1:9/mcp", cases[i].challenge, &token),
                         MCP_EAUTH);
        assert_null(token);
        mcp_error_t err = {0};
        assert_int_equal(mcp_oauth_last_error(o, &err), MCP_EAUTH);
        if (!strstr(err.message, cases[i].why))
            fail_msg("\"%s\": %s", cases[i].challenge, err.message);
        mcp_error_clear(&err);
        mcp_oauth_free(o);
    }
}

/* A server that publishes no metadata at all is authorized as 2025-03-26
 * did: its origin as authorization server, with the default endpoints.
 * Here nothing answers there (port 9, discard, on loopback refuses
 * connections), so registering at the default /register fails, and the
 * user is never sent anywhere. */
static void test_no_metadata_falls_back_to_defaults(void **state)
{
    (void)state;
    mcp_oauth_t *o = make();
    char *token = NULL;
    int rc = mcp_oauth_token(o, "http://127.0.0.1:9/mcp",
                             "Bearer resource_metadata=\"http://127.0.0.1:9/prm\"", &token);
    assert_int_equal(rc, MCP_EIO);
    assert_null(token);
    mcp_error_t err = {0};
    mcp_oauth_last_error(o, &err);
    if (!strstr(err.message, "http://127.0.0.1:9/register"))
        fail_msg("%s", err.message);
    mcp_error_clear(&err);
    mcp_oauth_free(o);
}

/* ---- a resource and an authorization server that publish metadata only ---- */

typedef struct metadata_server {
    struct MHD_Daemon *daemon;
    unsigned port;
    char *prm, *as_meta; /* the two documents */
} metadata_server_t;

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **req_cls)
{
    metadata_server_t *m = cls;
    const char *body = strcmp(url, "/.well-known/oauth-protected-resource/mcp") == 0 ? m->prm
                       : strcmp(url, "/.well-known/oauth-authorization-server") == 0
                           ? m->as_meta
                           : NULL;
    struct MHD_Response *r = MHD_create_response_from_buffer(
        body ? strlen(body) : 0, (void *)(body ? body : ""), MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(conn, body ? 200 : 404, r);
    MHD_destroy_response(r);
    return rc;
}

/* Serves the metadata of a resource at /mcp whose authorization server is
 * this same address, with `token_endpoint` as its token endpoint. */
static void metadata_start(metadata_server_t *m, const char *token_endpoint)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    m->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, serve, m,
                                 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_END);
    assert_non_null(m->daemon);
    m->port = MHD_get_daemon_info(m->daemon, MHD_DAEMON_INFO_BIND_PORT)->port;
    unsigned p = m->port;
    assert_true(asprintf(&m->prm,
                         "{\"resource\":\"http://127.0.0.1:%u/mcp\","
                         "\"authorization_servers\":[\"http://127.0.0.1:%u\"]}",
                         p, p) > 0);
    assert_true(asprintf(&m->as_meta,
                         "{\"issuer\":\"http://127.0.0.1:%u\","
                         "\"authorization_endpoint\":\"http://127.0.0.1:%u/authorize\","
                         "\"token_endpoint\":\"%s\","
                         "\"code_challenge_methods_supported\":[\"S256\"]}",
                         p, p, token_endpoint) > 0);
}

static void metadata_stop(metadata_server_t *m)
{
    MHD_stop_daemon(m->daemon);
    free(m->prm);
    free(m->as_meta);
}

static int user_gives_up(void *user, const char *url, char **redirect_out)
{
    (void)url;
    (void)redirect_out;
    ++*(int *)user;
    return MCP_ECANCELED;
}

/* A sign-in against an authorization server whose token endpoint is
 * `token_endpoint`, by a user who gives up when asked: what
 * mcp_oauth_token() returned, how often the user was asked, and the
 * token source's last error in *err. */
static int sign_in_at(const char *token_endpoint, bool insecure, int *authorizations,
                      mcp_error_t *err)
{
    metadata_server_t m = {0};
    metadata_start(&m, token_endpoint);
    char url[64], challenge[160];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/mcp", m.port);
    snprintf(challenge, sizeof challenge,
             "Bearer resource_metadata=\"http://127.0.0.1:%u/.well-known/"
             "oauth-protected-resource/mcp\"",
             m.port);
    *authorizations = 0;
    mcp_oauth_t *o = mcp_oauth_new(&(mcp_oauth_options_t){
        .redirect_uri = "http://127.0.0.1:9/cb", .authorize = user_gives_up,
        .authorize_user = authorizations, .client_id = "pre-registered",
        .insecure = insecure}, err);
    assert_non_null(o);
    char *token = NULL;
    int rc = mcp_oauth_token(o, url, challenge, &token);
    assert_null(token);
    mcp_oauth_last_error(o, err);
    mcp_oauth_free(o);
    metadata_stop(&m);
    return rc;
}

/* Credentials never travel over plain HTTP beyond this machine: an
 * authorization server with such an endpoint is refused before the user
 * is sent anywhere -- unless `insecure` says otherwise. */
static void test_plain_http_endpoint_refused(void **state)
{
    (void)state;
    for (int insecure = 0; insecure <= 1; insecure++) {
        int authorizations;
        mcp_error_t err = {0};
        /* TEST-NET-1: never reached */
        int rc = sign_in_at("http://192.0.2.1/token", insecure, &authorizations, &err);
        if (!insecure) {
            assert_int_equal(rc, MCP_EAUTH);
            assert_int_equal(authorizations, 0);
            if (!strstr(err.message, "plain HTTP") || !strstr(err.message, "192.0.2.1"))
                fail_msg("%s", err.message);
        } else {
            assert_int_equal(rc, MCP_ECANCELED); /* the user was asked, and gave up */
            assert_int_equal(authorizations, 1);
        }
        mcp_error_clear(&err);
    }

    /* Credentials (user@) before the host make a URL whose host only a
     * careless reading takes for this machine's: refused, even when
     * `insecure` allows plain HTTP. */
    for (int insecure = 0; insecure <= 1; insecure++) {
        int authorizations;
        mcp_error_t err = {0};
        assert_int_equal(sign_in_at("http://127.0.0.1:80@192.0.2.1/token", insecure,
                                    &authorizations, &err),
                         MCP_EAUTH);
        assert_int_equal(authorizations, 0);
        if (!strstr(err.message, "@192.0.2.1"))
            fail_msg("%s", err.message);
        mcp_error_clear(&err);
    }
}

/* ---- keeping the state between runs ---- */

static json_t *saved_state(const char *server_url, const char *access, json_int_t expires_in)
{
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:[s]}, "
                            "s:{s:s, s:s}, s:{s:s, s:s}}",
                            "format", "libmcp-oauth-1", "server_url", server_url, "resource",
                            server_url, "issuer", "http://127.0.0.1:9",
                            "authorization_server", "issuer", "http://127.0.0.1:9",
                            "authorization_endpoint", "http://127.0.0.1:9/authorize",
                            "token_endpoint", "http://127.0.0.1:9/token",
                            "code_challenge_methods_supported", "S256",
                            "registration", "client_id", "registered-id", "client_secret", "s3cret",
                            "tokens", "access_token", access, "scope", "mcp:read");
    assert_non_null(doc);
    json_object_set_new(json_object_get(doc, "tokens"), "expires_at",
                        json_integer((json_int_t)time(NULL) + expires_in));
    return doc;
}

static char *held_for(mcp_oauth_t *o, const char *url)
{
    char *token = NULL;
    assert_int_equal(mcp_oauth_token(o, url, NULL, &token), MCP_OK);
    return token;
}

/* Restored state answers at once, for its server only; saved again, it
 * says the same. */
static void test_save_and_restore(void **state)
{
    (void)state;
    mcp_oauth_t *o = make();
    assert_null(mcp_oauth_save(o)); /* nothing held yet */
    json_t *doc = saved_state("http://127.0.0.1:9/mcp", "tok-A", 3600);
    mcp_error_t err = {0};
    assert_int_equal(mcp_oauth_restore(o, doc, &err), MCP_OK);
    char *token = held_for(o, "http://127.0.0.1:9/mcp");
    assert_string_equal(token, "tok-A");
    free(token);
    assert_null(held_for(o, "http://127.0.0.1:9/other"));

    json_t *again = mcp_oauth_save(o);
    assert_non_null(again);
    assert_string_equal(json_string_value(json_object_get(again, "format")), "libmcp-oauth-1");
    const json_t *reg = json_object_get(again, "registration");
    assert_string_equal(json_string_value(json_object_get(reg, "client_id")), "registered-id");
    assert_string_equal(json_string_value(json_object_get(reg, "client_secret")), "s3cret");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(again, "tokens"), "access_token")),
        "tok-A");
    json_int_t expires =
        json_integer_value(json_object_get(json_object_get(again, "tokens"), "expires_at"));
    json_int_t want =
        json_integer_value(json_object_get(json_object_get(doc, "tokens"), "expires_at"));
    assert_true(expires >= want - 2 && expires <= want + 1);
    assert_true(json_equal(json_object_get(again, "authorization_server"),
                           json_object_get(doc, "authorization_server")));
    json_decref(again);
    json_decref(doc);
    mcp_oauth_free(o);
}

/* What mcp_oauth_save() does not write is refused, and changes nothing. */
static void test_restore_refuses_malformed(void **state)
{
    (void)state;
    mcp_oauth_t *o = make();
    json_t *good = saved_state("http://127.0.0.1:9/mcp", "tok-A", 3600);
    assert_int_equal(mcp_oauth_restore(o, good, NULL), MCP_OK);
    static const char *const breakage[] = {
        "{\"format\":\"libmcp-oauth-0\"}",           /* another format */
        "{\"format\":null}",                          /* no format */
        "{\"server_url\":7}",                         /* not a string */
        "{\"authorization_server\":[]}",              /* not an object */
        "{\"tokens\":\"tok\"}",                       /* not an object */
        "{\"tokens\":{\"expires_at\":\"soon\"}}",     /* not a number */
        "{\"registration\":{\"client_secret\":\"s\"}}", /* no client id */
        /* Renewal posts to the token endpoint without discovery first:
         * there must be one, and it must be one discovery would take. */
        "{\"authorization_server\":{\"issuer\":\"http://127.0.0.1:9\"}}",
        "{\"authorization_server\":{\"issuer\":\"http://127.0.0.1:9\",\"token_endpoint\":7}}",
        "{\"authorization_server\":{\"issuer\":\"http://127.0.0.1:9\","
        "\"token_endpoint\":\"http://192.0.2.1/token\"}}",
        "{\"authorization_server\":{\"issuer\":\"http://127.0.0.1:9\","
        "\"token_endpoint\":\"http://127.0.0.1:9/token\","
        "\"registration_endpoint\":\"http://192.0.2.1/register\"}}",
    };
    for (size_t i = 0; i < sizeof breakage / sizeof breakage[0]; i++) {
        json_t *bad = json_deep_copy(good);
        json_t *patch = json_loads(breakage[i], 0, NULL);
        assert_non_null(patch);
        json_object_update(bad, patch);
        mcp_error_t err = {0};
        if (mcp_oauth_restore(o, bad, &err) != MCP_EINVAL)
            fail_msg("%s was restored", breakage[i]);
        mcp_error_clear(&err);
        json_decref(patch);
        json_decref(bad);
    }
    assert_int_equal(mcp_oauth_restore(o, NULL, NULL), MCP_EINVAL);
    char *token = held_for(o, "http://127.0.0.1:9/mcp");
    assert_string_equal(token, "tok-A"); /* untouched */
    free(token);
    json_decref(good);
    mcp_oauth_free(o);
}

/* A saved expiry at either end of the integers: the earliest is expired
 * (the token forgotten, there being no refresh token), the latest held;
 * neither overflows on the way (UBSan would stop the test). */
static void test_restore_extreme_expiry(void **state)
{
    (void)state;
    static const struct {
        json_int_t at;
        bool held;
    } cases[] = {{INT64_MIN, false}, {INT64_MIN + 1, false}, {INT64_MAX, true}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_oauth_t *o = make();
        json_t *doc = saved_state("http://127.0.0.1:9/mcp", "tok-A", 0);
        json_object_set_new(json_object_get(doc, "tokens"), "expires_at",
                            json_integer(cases[i].at));
        assert_int_equal(mcp_oauth_restore(o, doc, NULL), MCP_OK);
        char *token = held_for(o, "http://127.0.0.1:9/mcp");
        if (cases[i].held != (token != NULL))
            fail_msg("case %zu: token %s", i, token ? token : "(none)");
        free(token);
        json_decref(doc);
        mcp_oauth_free(o);
    }
}

/* State whose authorization server lacks a token endpoint, with an
 * expired token, a refresh token and DPoP on, would be renewed at once:
 * it is refused with a message that says why, and nothing is taken (so
 * the next request goes without a token, and the user signs in again). */
static void test_restore_without_token_endpoint(void **state)
{
    (void)state;
    mcp_oauth_t *o = mcp_oauth_new(&(mcp_oauth_options_t){.redirect_uri = "http://127.0.0.1:9/cb",
                                                          .authorize = never_called,
                                                          .timeout_ms = 2000, .dpop = true},
                                   NULL);
    assert_non_null(o);
    json_t *doc = saved_state("http://127.0.0.1:9/mcp", "tok-old", -60);
    json_t *meta = json_object_get(doc, "authorization_server");
    json_object_del(meta, "token_endpoint");
    json_object_set_new(meta, "dpop_signing_alg_values_supported", json_pack("[s]", "ES256"));
    json_object_set_new(json_object_get(doc, "tokens"), "refresh_token", json_string("ref"));
    mcp_error_t err = {0};
    assert_int_equal(mcp_oauth_restore(o, doc, &err), MCP_EINVAL);
    if (!strstr(err.message, "token endpoint"))
        fail_msg("%s", err.message);
    mcp_error_clear(&err);
    assert_null(held_for(o, "http://127.0.0.1:9/mcp"));
    assert_null(mcp_oauth_save(o));
    json_decref(doc);
    mcp_oauth_free(o);
}

/* An expired token without a refresh token is forgotten: the server
 * will challenge, and the user signs in again. */
static void test_restored_expired_token_dropped(void **state)
{
    (void)state;
    mcp_oauth_t *o = make();
    json_t *doc = saved_state("http://127.0.0.1:9/mcp", "tok-old", -60);
    assert_int_equal(mcp_oauth_restore(o, doc, NULL), MCP_OK);
    assert_null(held_for(o, "http://127.0.0.1:9/mcp"));
    json_decref(doc);
    mcp_oauth_free(o);
}

/* ---- DPoP-bound tokens (RFC 9449) ---- */

/* A P-256 key made by OpenSSL: its scalar and its public x, base64url. */
#define DPOP_D "jwr5MwN56KH6hbBisP_CwUrzCPJDXRqnpUARbYDyN4U"
#define DPOP_X "I-l12mb70n3gZuDw4zBM7_bCQcfviQafGpF89_S9dM8"
/* base64url(SHA-256("tok-A")) */
#define ATH_TOK_A "cXh2tJzRFVwvncJHx0OLC6ggZqbqca5aBp9Qa7Usf44"

static json_t *dpop_state(const char *type, const char *key)
{
    json_t *doc = saved_state("http://127.0.0.1:9/mcp", "tok-A", 3600);
    json_t *tokens = json_object_get(doc, "tokens");
    if (type)
        json_object_set_new(tokens, "token_type", json_string(type));
    if (key)
        json_object_set_new(tokens, "dpop_key", json_string(key));
    return doc;
}

/* The JSON of segment `n` (0: header, 1: claims) of a compact JWS. */
static json_t *jws_segment(const char *jws, int n)
{
    const char *start = jws;
    for (int i = 0; i < n; i++)
        start = strchr(start, '.') + 1;
    size_t len = strcspn(start, ".");
    unsigned char buf[2048];
    size_t out = 0;
    assert_true(mcp_base64_decoded_max(len) <= sizeof buf);
    assert_int_equal(mcp_base64url_decode(start, len, buf, &out), MCP_OK);
    json_t *doc = json_loadb((const char *)buf, out, 0, NULL);
    assert_non_null(doc);
    return doc;
}

/* A restored DPoP token is proved with the key saved with it; saved
 * again, the key and the type come back. A Bearer token has no proof. */
static void test_dpop_token_restored_with_its_key(void **state)
{
    (void)state;
    mcp_oauth_t *o = make();
    json_t *doc = dpop_state("DPoP", DPOP_D);
    mcp_error_t err = {0};
    assert_int_equal(mcp_oauth_restore(o, doc, &err), MCP_OK);

    char *proof = NULL;
    assert_int_equal(mcp_oauth_proof(o, "POST", "http://127.0.0.1:9/mcp?q=1", "tok-A", "n-1",
                                     &proof),
                     MCP_OK);
    assert_non_null(proof);
    json_t *header = jws_segment(proof, 0), *claims = jws_segment(proof, 1);
    assert_string_equal(json_string_value(json_object_get(header, "typ")), "dpop+jwt");
    assert_string_equal(json_string_value(json_object_get(json_object_get(header, "jwk"), "x")),
                        DPOP_X);
    assert_string_equal(json_string_value(json_object_get(claims, "htu")),
                        "http://127.0.0.1:9/mcp");
    assert_string_equal(json_string_value(json_object_get(claims, "htm")), "POST");
    assert_string_equal(json_string_value(json_object_get(claims, "ath")), ATH_TOK_A);
    assert_string_equal(json_string_value(json_object_get(claims, "nonce")), "n-1");
    json_decref(header);
    json_decref(claims);
    free(proof);

    /* A malformed nonce is left out, not sent. */
    assert_int_equal(mcp_oauth_proof(o, "GET", "http://127.0.0.1:9/mcp", "tok-A", "a b", &proof),
                     MCP_OK);
    claims = jws_segment(proof, 1);
    assert_null(json_object_get(claims, "nonce"));
    json_decref(claims);
    free(proof);

    json_t *again = mcp_oauth_save(o);
    const json_t *tokens = json_object_get(again, "tokens");
    assert_string_equal(json_string_value(json_object_get(tokens, "dpop_key")), DPOP_D);
    assert_string_equal(json_string_value(json_object_get(tokens, "token_type")), "DPoP");
    json_decref(again);
    json_decref(doc);

    /* Restored as a Bearer token: no proof, "Authorization: Bearer". */
    doc = saved_state("http://127.0.0.1:9/mcp", "tok-B", 3600);
    assert_int_equal(mcp_oauth_restore(o, doc, &err), MCP_OK);
    proof = (char *)"untouched";
    assert_int_equal(mcp_oauth_proof(o, "POST", "http://127.0.0.1:9/mcp", "tok-B", NULL, &proof),
                     MCP_OK);
    assert_null(proof);
    json_decref(doc);
    assert_int_equal(mcp_oauth_proof(o, "POST", NULL, "tok-B", NULL, &proof), MCP_EINVAL);
    mcp_oauth_free(o);
}

/* A DPoP token without its key, or a key that is none, is refused. */
static void test_dpop_state_refuses_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *type, *key;
    } bad[] = {
        {"DPoP", NULL},                                            /* the key is missing */
        {"MAC", DPOP_D},                                           /* another token type */
        {"DPoP", "jwr5MwN56KH6hbBisP_CwUrzCPJDXRqnpUARbYDyN4"},    /* 31 bytes and a bit */
        {"DPoP", DPOP_D "AAAA"},                                   /* 35 bytes */
        {"DPoP", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},    /* zero: out of range */
        {"DPoP", "jwr5MwN56KH6hbBisP_CwUrzCPJDXRqnpUARbYDyN4+"},   /* not base64url */
    };
    mcp_oauth_t *o = make();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *doc = dpop_state(bad[i].type, bad[i].key);
        mcp_error_t err = {0};
        if (mcp_oauth_restore(o, doc, &err) != MCP_EINVAL)
            fail_msg("case %zu was restored", i);
        mcp_error_clear(&err);
        json_decref(doc);
    }
    assert_null(mcp_oauth_save(o)); /* nothing was taken */
    mcp_oauth_free(o);
}

/* A resource server's use_dpop_nonce challenge keeps a DPoP token (the
 * next proof carries the nonce); it is no reason to sign in again. For a
 * Bearer token it is a refusal like any other: the flow runs (and, with
 * no authorization server here, fails). */
static void test_use_dpop_nonce_keeps_the_token(void **state)
{
    (void)state;
    static const char challenge[] = "DPoP error=\"use_dpop_nonce\", "
                                    "error_description=\"Resource server requires nonce\"";
    int asked = 0;
    mcp_oauth_t *o = mcp_oauth_new(&(mcp_oauth_options_t){.redirect_uri = "http://127.0.0.1:9/cb",
                                                          .authorize = user_gives_up,
                                                          .authorize_user = &asked,
                                                          .timeout_ms = 2000},
                                   NULL);
    assert_non_null(o);
    json_t *doc = dpop_state("DPoP", DPOP_D);
    assert_int_equal(mcp_oauth_restore(o, doc, NULL), MCP_OK);
    char *token = NULL;
    assert_int_equal(mcp_oauth_token(o, "http://127.0.0.1:9/mcp", challenge, &token), MCP_OK);
    assert_string_equal(token, "tok-A");
    free(token);
    assert_int_equal(asked, 0);
    json_decref(doc);

    /* The token is this server's: another server asking for a nonce gets
     * the flow (the user gives up), not the token. */
    token = NULL;
    assert_int_equal(mcp_oauth_token(o, "http://127.0.0.1:9/other", challenge, &token),
                     MCP_ECANCELED);
    assert_null(token);
    assert_int_equal(asked, 1);
    mcp_oauth_free(o);

    asked = 0;
    o = mcp_oauth_new(&(mcp_oauth_options_t){.redirect_uri = "http://127.0.0.1:9/cb",
                                             .authorize = user_gives_up,
                                             .authorize_user = &asked, .timeout_ms = 2000},
                      NULL);
    assert_non_null(o);
    doc = saved_state("http://127.0.0.1:9/mcp", "tok-B", 3600);
    assert_int_equal(mcp_oauth_restore(o, doc, NULL), MCP_OK);
    assert_int_equal(mcp_oauth_token(o, "http://127.0.0.1:9/mcp", challenge, &token),
                     MCP_ECANCELED);
    assert_null(token);
    assert_int_equal(asked, 1);
    json_decref(doc);
    mcp_oauth_free(o);
}

/* mcp_oauth_assertion_from_file: the token, trimmed; what is not a small
 * regular file with something in it is refused. */
static void test_assertion_from_file(void **state)
{
    (void)state;
    char path[] = "/tmp/mcp-assertion-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "\n\t eyJ.a.b \r\n", 13), 13);
    close(fd);
    char *jwt = NULL;
    assert_int_equal(mcp_oauth_assertion_from_file(path, "https://as", &jwt), MCP_OK);
    assert_string_equal(jwt, "eyJ.a.b");
    free(jwt);
    FILE *f = fopen(path, "w");
    fputs(" \n", f);
    fclose(f);
    assert_int_equal(mcp_oauth_assertion_from_file(path, NULL, &jwt), MCP_EINVAL);
    assert_null(jwt);
    f = fopen(path, "w");
    fwrite("eyJ\0x", 1, 5, f);
    fclose(f);
    assert_int_equal(mcp_oauth_assertion_from_file(path, NULL, &jwt), MCP_EINVAL);
    unlink(path);
    assert_int_equal(mcp_oauth_assertion_from_file(path, NULL, &jwt), MCP_EIO);
    assert_int_equal(mcp_oauth_assertion_from_file("/tmp", NULL, &jwt), MCP_EIO);
    assert_int_equal(mcp_oauth_assertion_from_file(NULL, NULL, &jwt), MCP_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_refuses_bad_options),
        cmocka_unit_test(test_new_checks_assertion_grant_options),
        cmocka_unit_test(test_no_token_before_a_challenge),
        cmocka_unit_test(test_challenge_not_answerable),
        cmocka_unit_test(test_no_metadata_falls_back_to_defaults),
        cmocka_unit_test(test_plain_http_endpoint_refused),
        cmocka_unit_test(test_save_and_restore),
        cmocka_unit_test(test_restore_refuses_malformed),
        cmocka_unit_test(test_restored_expired_token_dropped),
        cmocka_unit_test(test_restore_without_token_endpoint),
        cmocka_unit_test(test_restore_extreme_expiry),
        cmocka_unit_test(test_dpop_token_restored_with_its_key),
        cmocka_unit_test(test_dpop_state_refuses_malformed),
        cmocka_unit_test(test_use_dpop_nonce_keeps_the_token),
        cmocka_unit_test(test_assertion_from_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
