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

#include <arpa/inet.h>
#include <netinet/in.h>
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
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "mcp/mcp.h"

#define CLIENT_ID "svc-client"
#define CLIENT_SECRET "s3cr:et"
#define SERVER_PATH "/mcp"

/* A P-256 key made with `openssl genpkey -algorithm EC -pkeyopt
 * ec_paramgen_curve:P-256`. */
static const char KEY_PEM[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjwr5MwN56KH6hbBi\n"
    "sP/CwUrzCPJDXRqnpUARbYDyN4WhRANCAAQj6XXaZvvSfeBm4PDjMEzv9sJBx++J\n"
    "Bp8akXz39L10z/AppPCx7ak7TitH79YLQtKuP4VnHE1sLoG8eX6axoAz\n"
    "-----END PRIVATE KEY-----\n";

/* ---- the authorization server ---- */

typedef struct as {
    struct MHD_Daemon *daemon;
    char origin[64];     /* its issuer */
    const char *extra;   /* more metadata members, e.g. "\"grant_types_supported\":[...]" */
    int expires_in;      /* of the tokens it issues */
    pthread_mutex_t lock;
    int token_requests;
    char form[4096];          /* the last token request's body */
    char authorization[512];  /* and its Authorization header, or "" */
} as_t;

typedef struct upload {
    char body[4096];
    size_t len;
} upload_t;

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *json)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *data,
                             size_t *data_size, void **req_cls)
{
    as_t *as = cls;
    upload_t *up = *req_cls;
    (void)version;
    if (!up) {
        *req_cls = calloc(1, sizeof *up);
        return MHD_YES;
    }
    if (*data_size) {
        size_t room = sizeof up->body - 1 - up->len;
        size_t n = *data_size < room ? *data_size : room;
        memcpy(up->body + up->len, data, n);
        up->len += n;
        *data_size = 0;
        return MHD_YES;
    }
    char doc[2048];
    if (strcmp(url, "/.well-known/oauth-protected-resource" SERVER_PATH) == 0) {
        snprintf(doc, sizeof doc,
                 "{\"resource\":\"%s" SERVER_PATH "\",\"authorization_servers\":[\"%s\"],"
                 "\"scopes_supported\":[\"tools\"]}",
                 as->origin, as->origin);
        return answer(conn, 200, doc);
    }
    if (strcmp(url, "/.well-known/oauth-authorization-server") == 0) {
        /* No authorization endpoint and no PKCE: client credentials needs
         * neither. */
        snprintf(doc, sizeof doc, "{\"issuer\":\"%s\",\"token_endpoint\":\"%s/token\"%s%s}",
                 as->origin, as->origin, as->extra ? "," : "", as->extra ? as->extra : "");
        return answer(conn, 200, doc);
    }
    if (strcmp(url, "/token") == 0 && strcmp(method, "POST") == 0) {
        const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        pthread_mutex_lock(&as->lock);
        int n = ++as->token_requests;
        snprintf(as->form, sizeof as->form, "%s", up->body);
        snprintf(as->authorization, sizeof as->authorization, "%s", auth ? auth : "");
        pthread_mutex_unlock(&as->lock);
        snprintf(doc, sizeof doc,
                 "{\"access_token\":\"cc-token-%d\",\"token_type\":\"Bearer\","
                 "\"expires_in\":%d}",
                 n, as->expires_in ? as->expires_in : 3600);
        return answer(conn, 200, doc);
    }
    return answer(conn, 404, "{}");
}

static void request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)conn;
    (void)why;
    free(*req_cls);
    *req_cls = NULL;
}

static as_t *as_start(const char *extra)
{
    as_t *as = calloc(1, sizeof *as);
    assert_non_null(as);
    as->extra = extra;
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pthread_mutex_init(&as->lock, NULL);
    as->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, serve, as,
                                  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                  MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL,
                                  MHD_OPTION_END);
    assert_non_null(as->daemon);
    snprintf(as->origin, sizeof as->origin, "http://127.0.0.1:%u",
             MHD_get_daemon_info(as->daemon, MHD_DAEMON_INFO_BIND_PORT)->port);
    return as;
}

static void as_stop(as_t *as)
{
    MHD_stop_daemon(as->daemon);
    pthread_mutex_destroy(&as->lock);
    free(as);
}

/* ---- helpers ---- */

/* The value of `name` in a form body, decoded (malloc'd), or NULL. */
static char *form_get(const char *form, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = form; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, name, len) != 0 || p[len] != '=')
            continue;
        const char *v = p + len + 1;
        size_t n = strcspn(v, "&");
        char *out = malloc(n + 1), *o = out;
        for (size_t i = 0; i < n; i++) {
            unsigned byte;
            if (v[i] == '%' && i + 2 < n + 1 && sscanf(v + i + 1, "%2x", &byte) == 1) {
                *o++ = (char)byte;
                i += 2;
            } else {
                *o++ = v[i] == '+' ? ' ' : v[i];
            }
        }
        *o = '\0';
        return out;
    }
    return NULL;
}

static void expect_form(const as_t *as, const char *name, const char *want)
{
    char *got = form_get(as->form, name);
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
    char *std = malloc(len + 4);
    size_t n = 0;
    for (; n < len; n++)
        std[n] = text[n] == '-' ? '+' : text[n] == '_' ? '/' : text[n];
    while (n % 4)
        std[n++] = '=';
    unsigned char *out = malloc(n + 1);
    int got = EVP_DecodeBlock(out, (const unsigned char *)std, (int)n);
    assert_true(got >= 0);
    size_t pad = len % 4 == 2 ? 2 : len % 4 == 3 ? 1 : 0;
    *out_len = (size_t)got - pad;
    out[*out_len] = '\0';
    free(std);
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
    BIO *bio = BIO_new_mem_buf(KEY_PEM, -1);
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    assert_non_null(key);
    ECDSA_SIG *ecdsa = ECDSA_SIG_new();
    assert_true(ECDSA_SIG_set0(ecdsa, BN_bin2bn(sig, 32, NULL), BN_bin2bn(sig + 32, 32, NULL)));
    unsigned char *der = NULL;
    int der_len = i2d_ECDSA_SIG(ecdsa, &der);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
    assert_int_equal(EVP_DigestVerify(ctx, der, (size_t)der_len, (const unsigned char *)jwt,
                                      (size_t)(dot2 - jwt)),
                     1);
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    ECDSA_SIG_free(ecdsa);
    EVP_PKEY_free(key);
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
    as->expires_in = 1; /* expired at once (the client renews 30 s early) */
    mcp_oauth_t *o = make(&(mcp_oauth_options_t){.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                                 .client_id = CLIENT_ID,
                                                 .private_key_pem = KEY_PEM,
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
    char *assertion = form_get(as->form, "client_assertion");
    assert_non_null(assertion);
    char *jti = verify_assertion(assertion, as->origin);
    free(assertion);

    /* Expired: a new grant (there is no refresh token), with a new
     * assertion, for the scope granted. */
    char *url = server_url(as);
    assert_int_equal(mcp_oauth_token(o, url, NULL, &token), MCP_OK);
    assert_string_equal(token, "cc-token-2");
    free(token);
    expect_form(as, "grant_type", "client_credentials");
    expect_form(as, "scope", "tools");
    assertion = form_get(as->form, "client_assertion");
    char *jti2 = verify_assertion(assertion, as->origin);
    assert_string_not_equal(jti, jti2);
    free(assertion);
    free(jti);
    free(jti2);
    free(url);
    mcp_oauth_free(o);
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
            options.private_key_pem = KEY_PEM;
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
        cmocka_unit_test(test_server_without_the_grant_or_method),
        cmocka_unit_test(test_save_and_restore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
