/*
 * DPoP-bound tokens (mcp/oauth.h, RFC 9449) at the token endpoint of a
 * small authorization server in process (libmicrohttpd), with the client
 * credentials grant: no user needed. The server keeps every DPoP proof it
 * is sent, asks for a nonce when told to, and answers a DPoP token. The
 * tests check the proofs as an authorization server does, with OpenSSL
 * (signature against the JWK the proof carries, typ, htm, htu, jti), the
 * nonce retry, and that the proofs mcp_oauth_proof() makes for the MCP
 * server use the same key and hash the token.
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
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "mcp/mcp.h"
#include "oauth_fixture.h"
#include "openssl_check.h"

#define SERVER_PATH "/mcp"
#define MAX_PROOFS 8

/* ---- JWS pieces, decoded with OpenSSL ---- */

/* Segment `n` of a compact JWS as JSON, or NULL. */
static json_t *jws_json(const char *jws, int n)
{
    const char *start = jws;
    for (int i = 0; i < n && start; i++)
        start = strchr(start, '.') ? strchr(start, '.') + 1 : NULL;
    if (!start)
        return NULL;
    size_t len = strcspn(start, "."), out_len = 0;
    unsigned char *text = openssl_unbase64url(start, len, &out_len);
    json_t *doc = text ? json_loads((const char *)text, 0, NULL) : NULL;
    free(text);
    return doc;
}

/* Whether the ES256 signature of a compact JWS verifies with the P-256
 * public key of `jwk`. */
static bool signature_verifies(const char *jws, const json_t *jwk)
{
    const char *dot2 = strrchr(jws, '.');
    size_t sl = 0;
    unsigned char *sig = openssl_unbase64url(dot2 + 1, strlen(dot2 + 1), &sl);
    assert_non_null(sig);
    assert_int_equal(sl, 64);
    bool ok = openssl_es256_verifies_jwk(jwk, jws, (size_t)(dot2 - jws), sig);
    free(sig);
    return ok;
}

/* ---- the authorization server ---- */

typedef struct as {
    oauth_fixture_t *http;
    char origin[OAUTH_FIXTURE_ORIGIN_MAX]; /* its issuer */
    bool offers_dpop;       /* dpop_signing_alg_values_supported: ["ES256"] */
    const char *token_type; /* what it answers */
    /* The nonce it asks proofs to carry (NULL: none); a rotating server
     * asks for a new one every time. */
    const char *nonce;
    bool rotating;
    pthread_mutex_t lock;
    int token_requests;
    char *proofs[MAX_PROOFS]; /* each request's DPoP header, or NULL */
} as_t;

/* Whether a proof carries the nonce `want`. */
static bool proof_has_nonce(const char *proof, const char *want)
{
    json_t *claims = proof ? jws_json(proof, 1) : NULL;
    const char *nonce = json_string_value(json_object_get(claims, "nonce"));
    bool has = nonce && strcmp(nonce, want) == 0;
    json_decref(claims);
    return has;
}

static enum MHD_Result route(void *user, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *body)
{
    as_t *as = user;
    (void)body; /* the form is not looked at */
    if (strcmp(url, "/.well-known/oauth-protected-resource" SERVER_PATH) == 0)
        return oauth_fixture_answer_resource_metadata(conn, as->origin, SERVER_PATH, as->origin,
                                                      NULL);
    if (strcmp(url, "/.well-known/oauth-authorization-server") == 0)
        return oauth_fixture_answer_as_metadata(
            conn, as->origin,
            as->offers_dpop ? "\"grant_types_supported\":[\"client_credentials\"],"
                              "\"dpop_signing_alg_values_supported\":[\"ES256\"]"
                            : "\"grant_types_supported\":[\"client_credentials\"]");
    if (strcmp(url, "/token") == 0 && strcmp(method, "POST") == 0) {
        const char *proof = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "DPoP");
        pthread_mutex_lock(&as->lock);
        int n = as->token_requests++;
        if (n < MAX_PROOFS)
            as->proofs[n] = proof ? strdup(proof) : NULL;
        char nonce[32] = "";
        if (as->nonce)
            snprintf(nonce, sizeof nonce, "%s%s%d", as->nonce, as->rotating ? "-" : "",
                     as->rotating ? n : 0);
        if (!as->rotating && as->nonce)
            snprintf(nonce, sizeof nonce, "%s", as->nonce);
        pthread_mutex_unlock(&as->lock);
        if (nonce[0] && !proof_has_nonce(proof, nonce))
            return oauth_fixture_reply(conn, 400,
                                       "{\"error\":\"use_dpop_nonce\",\"error_description\":"
                                       "\"a nonce, please\"}",
                                       NULL, nonce);
        char doc[256];
        snprintf(doc, sizeof doc,
                 "{\"access_token\":\"bound-token-%d\",\"token_type\":\"%s\","
                 "\"expires_in\":3600}",
                 n, as->token_type);
        return oauth_fixture_reply(conn, 200, doc, NULL, nonce[0] ? nonce : NULL);
    }
    return oauth_fixture_answer(conn, 404, "{}");
}

static as_t *as_start(bool offers_dpop, const char *token_type, const char *nonce)
{
    as_t *as = calloc(1, sizeof *as);
    assert_non_null(as);
    as->offers_dpop = offers_dpop;
    as->token_type = token_type;
    as->nonce = nonce;
    pthread_mutex_init(&as->lock, NULL);
    as->http = oauth_fixture_start(route, as, as->origin);
    return as;
}

static void as_stop(as_t *as)
{
    oauth_fixture_stop(as->http);
    for (int i = 0; i < MAX_PROOFS; i++)
        free(as->proofs[i]);
    pthread_mutex_destroy(&as->lock);
    free(as);
}

/* ---- helpers ---- */

static mcp_oauth_t *make(bool dpop)
{
    mcp_error_t err = {0};
    mcp_oauth_t *o = mcp_oauth_new(&(mcp_oauth_options_t){.grant = MCP_OAUTH_CLIENT_CREDENTIALS,
                                                          .client_id = "svc",
                                                          .client_secret = "s3cret",
                                                          .dpop = dpop, .timeout_ms = 5000},
                                   &err);
    if (!o)
        fail_msg("mcp_oauth_new: %s", err.message);
    return o;
}

/* Answers the MCP server's challenge (a DPoP one, as a server taking
 * DPoP tokens sends); the token, malloc'd, or NULL with `want_rc`. */
static char *token_for(mcp_oauth_t *o, const as_t *as, const char *challenge, int want_rc)
{
    char *url = NULL, *token = NULL;
    assert_true(asprintf(&url, "%s" SERVER_PATH, as->origin) > 0);
    int rc = mcp_oauth_token(o, url, challenge, &token);
    if (rc != want_rc) {
        mcp_error_t err = {0};
        mcp_oauth_last_error(o, &err);
        fail_msg("mcp_oauth_token: %d, want %d (%s)", rc, want_rc, err.message);
    }
    free(url);
    return token;
}

/* Checks a token request's proof as an authorization server does (RFC
 * 9449 §4.3): its header, signature, htm and htu, a fresh iat, a jti, no
 * ath; and the nonce it carries (NULL: none). Returns its JWK (new
 * reference) and stores its jti in jti_out (malloc'd). */
static json_t *check_token_proof(const as_t *as, const char *proof, const char *nonce,
                                 char **jti_out)
{
    assert_non_null(proof);
    json_t *header = jws_json(proof, 0), *claims = jws_json(proof, 1);
    assert_non_null(header);
    assert_non_null(claims);
    assert_string_equal(json_string_value(json_object_get(header, "typ")), "dpop+jwt");
    assert_string_equal(json_string_value(json_object_get(header, "alg")), "ES256");
    json_t *jwk = json_incref(json_object_get(header, "jwk"));
    assert_null(json_object_get(jwk, "d"));
    assert_true(signature_verifies(proof, jwk));
    char *token_endpoint = NULL;
    assert_true(asprintf(&token_endpoint, "%s/token", as->origin) > 0);
    assert_string_equal(json_string_value(json_object_get(claims, "htm")), "POST");
    assert_string_equal(json_string_value(json_object_get(claims, "htu")), token_endpoint);
    json_int_t iat = json_integer_value(json_object_get(claims, "iat"));
    json_int_t now = (json_int_t)time(NULL);
    assert_true(iat >= now - 60 && iat <= now + 5);
    assert_null(json_object_get(claims, "ath"));
    const char *got_nonce = json_string_value(json_object_get(claims, "nonce"));
    if (!nonce != !got_nonce || (nonce && strcmp(nonce, got_nonce) != 0))
        fail_msg("the proof's nonce is %s, not %s", got_nonce ? got_nonce : "missing",
                 nonce ? nonce : "none");
    *jti_out = strdup(json_string_value(json_object_get(claims, "jti")));
    free(token_endpoint);
    json_decref(header);
    json_decref(claims);
    return jwk;
}

/* ---- the tests ---- */

/* The first token request carries a proof; asked for a nonce, the client
 * sends a new proof with it; the token is DPoP. The proofs for the MCP
 * server are signed with the same key and bind the token (ath). A later
 * grant carries the kept nonce at once. */
static void test_token_request_proofs_and_nonce(void **state)
{
    (void)state;
    as_t *as = as_start(true, "DPoP", "as-nonce");
    mcp_oauth_t *o = make(true);
    char *token = token_for(o, as, "DPoP resource_metadata=\"x\"", MCP_OK);
    assert_string_equal(token, "bound-token-1");
    assert_int_equal(as->token_requests, 2);
    char *jti1 = NULL, *jti2 = NULL, *jti3 = NULL;
    json_t *jwk1 = check_token_proof(as, as->proofs[0], NULL, &jti1);
    json_t *jwk2 = check_token_proof(as, as->proofs[1], "as-nonce", &jti2);
    assert_true(json_equal(jwk1, jwk2));
    assert_string_not_equal(jti1, jti2);

    /* The proof of an MCP request: same key, the token's hash, the
     * resource server's nonce, the URL without its query. */
    char *url = NULL, *proof = NULL;
    assert_true(asprintf(&url, "%s" SERVER_PATH "?x=1", as->origin) > 0);
    assert_int_equal(mcp_oauth_proof(o, "POST", url, token, "rs-nonce", &proof), MCP_OK);
    assert_non_null(proof);
    json_t *header = jws_json(proof, 0), *claims = jws_json(proof, 1);
    assert_true(json_equal(json_object_get(header, "jwk"), jwk1));
    assert_true(signature_verifies(proof, jwk1));
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)token, strlen(token), digest);
    unsigned char std[64];
    int n = EVP_EncodeBlock(std, digest, sizeof digest);
    std[n - 1] = '\0'; /* one '=' of padding */
    for (unsigned char *c = std; *c; c++)
        *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
    assert_string_equal(json_string_value(json_object_get(claims, "ath")), (char *)std);
    assert_string_equal(json_string_value(json_object_get(claims, "nonce")), "rs-nonce");
    url[strcspn(url, "?")] = '\0';
    assert_string_equal(json_string_value(json_object_get(claims, "htu")), url);
    json_decref(header);
    json_decref(claims);
    free(proof);

    /* Refused by the MCP server: a new grant, whose first proof carries
     * the nonce already. */
    free(token);
    token = token_for(o, as, "DPoP error=\"invalid_token\"", MCP_OK);
    assert_string_equal(token, "bound-token-2");
    assert_int_equal(as->token_requests, 3);
    json_t *jwk3 = check_token_proof(as, as->proofs[2], "as-nonce", &jti3);
    assert_true(json_equal(jwk1, jwk3));

    json_decref(jwk1);
    json_decref(jwk2);
    json_decref(jwk3);
    free(jti1);
    free(jti2);
    free(jti3);
    free(url);
    free(token);
    mcp_oauth_free(o);
    as_stop(as);
}

/* A server that wants a new nonce again after the retry is not tried a
 * third time. */
static void test_one_nonce_retry(void **state)
{
    (void)state;
    as_t *as = as_start(true, "DPoP", "turn");
    as->rotating = true;
    mcp_oauth_t *o = make(true);
    assert_null(token_for(o, as, "Bearer resource_metadata=\"x\"", MCP_EAUTH));
    assert_int_equal(as->token_requests, 2);
    char *jti = NULL;
    json_decref(check_token_proof(as, as->proofs[1], "turn-0", &jti));
    free(jti);
    mcp_oauth_free(o);
    as_stop(as);
}

/* Without DPoP in the server's metadata (or without the option), no proof
 * goes and the token is a Bearer token, proved by nothing. */
static void test_bearer_without_server_support(void **state)
{
    (void)state;
    const bool offers[] = {false, true};
    const bool wants[] = {true, false};
    for (int i = 0; i < 2; i++) {
        as_t *as = as_start(offers[i], "Bearer", NULL);
        mcp_oauth_t *o = make(wants[i]);
        char *token = token_for(o, as, "Bearer resource_metadata=\"x\"", MCP_OK);
        assert_int_equal(as->token_requests, 1);
        assert_null(as->proofs[0]);
        char *proof = (char *)"untouched";
        assert_int_equal(mcp_oauth_proof(o, "POST", "http://127.0.0.1/mcp", token, NULL, &proof),
                         MCP_OK);
        assert_null(proof);
        free(token);
        mcp_oauth_free(o);
        as_stop(as);
    }
}

/* A DPoP token nobody asked for (no proof went) is refused; a Bearer
 * token answered to a proof is taken as a Bearer token. */
static void test_token_type_must_match(void **state)
{
    (void)state;
    as_t *as = as_start(false, "DPoP", NULL);
    mcp_oauth_t *o = make(true);
    assert_null(token_for(o, as, "Bearer resource_metadata=\"x\"", MCP_EAUTH));
    mcp_oauth_free(o);
    as_stop(as);

    as = as_start(true, "Bearer", NULL);
    o = make(true);
    char *token = token_for(o, as, "Bearer resource_metadata=\"x\"", MCP_OK);
    assert_non_null(as->proofs[0]);
    char *proof = (char *)"untouched";
    assert_int_equal(mcp_oauth_proof(o, "POST", "http://127.0.0.1/mcp", token, NULL, &proof),
                     MCP_OK);
    assert_null(proof);
    free(token);
    mcp_oauth_free(o);
    as_stop(as);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_request_proofs_and_nonce),
        cmocka_unit_test(test_one_nonce_retry),
        cmocka_unit_test(test_bearer_without_server_support),
        cmocka_unit_test(test_token_type_must_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
