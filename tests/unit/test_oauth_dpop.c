/*
 * DPoP proofs (src/client/oauth/oauth_dpop.h): the key pair, the proof's
 * header and claims (htu without query and fragment, ath, nonce, a unique
 * jti), its signature verified with OpenSSL against the JWK the proof
 * carries (an implementation independent of the Nettle that signs), and
 * the nonce syntax, table-driven.
 */
#define _GNU_SOURCE /* strdup */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/sha.h>

#include "client/oauth/oauth_dpop.h"
#include "protocol/base64.h"
#include "openssl_check.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A key made by OpenSSL (`openssl genpkey -algorithm EC -pkeyopt
 * ec_paramgen_curve:P-256`): its scalar and the public point OpenSSL
 * wrote beside it. */
#define KEY_D "8f0af9330379e8a1fa85b062b0ffc2c14af308f2435d1aa7a540116d80f23785"
#define KEY_X "23e975da66fbd27de066e0f0e3304ceff6c241c7ef89069f1a917cf7f4bd74cf"
#define KEY_Y "f029a4f0b1eda93b4e2b47efd60b42d2ae3f85671c4d6c2e81bc797e9ac68033"

static void unhex(const char *hex, uint8_t *out, size_t n)
{
    assert_int_equal(strlen(hex), 2 * n);
    for (size_t i = 0; i < n; i++) {
        unsigned byte;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
        out[i] = (uint8_t)byte;
    }
}

static void known_key(oauth_dpop_key_t *key)
{
    uint8_t d[OAUTH_ES256_KEY_SIZE];
    unhex(KEY_D, d, sizeof d);
    mcp_error_t err = {0};
    assert_int_equal(oauth_dpop_key_from_private(key, d, &err), MCP_OK);
}

/* A base64url segment, decoded. */
static size_t segment_bytes(const char *text, size_t len, unsigned char *out, size_t cap)
{
    size_t n = 0;
    assert_true(mcp_base64_decoded_max(len) <= cap);
    assert_int_equal(mcp_base64url_decode(text, len, out, &n), MCP_OK);
    return n;
}

static json_t *segment_json(const char *text, size_t len)
{
    unsigned char buf[2048];
    size_t n = segment_bytes(text, len, buf, sizeof buf);
    json_t *doc = json_loadb((const char *)buf, n, 0, NULL);
    assert_non_null(doc);
    return doc;
}

typedef struct {
    json_t *header, *claims;
    uint8_t sig[OAUTH_ES256_SIG_SIZE];
    size_t signed_len; /* header.claims */
} proof_t;

static void split_proof(const char *jwt, proof_t *p)
{
    const char *dot1 = strchr(jwt, '.');
    assert_non_null(dot1);
    const char *dot2 = strchr(dot1 + 1, '.');
    assert_non_null(dot2);
    assert_null(strchr(dot2 + 1, '.'));
    p->header = segment_json(jwt, (size_t)(dot1 - jwt));
    p->claims = segment_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    unsigned char sig[OAUTH_ES256_SIG_SIZE + 8];
    assert_int_equal(segment_bytes(dot2 + 1, strlen(dot2 + 1), sig, sizeof sig),
                     OAUTH_ES256_SIG_SIZE);
    memcpy(p->sig, sig, OAUTH_ES256_SIG_SIZE);
    p->signed_len = (size_t)(dot2 - jwt);
}

static void free_proof(proof_t *p)
{
    json_decref(p->header);
    json_decref(p->claims);
}

/* The public key of a scalar is the one OpenSSL computed for it. */
static void test_public_key(void **state)
{
    (void)state;
    oauth_dpop_key_t key;
    known_key(&key);
    uint8_t x[32], y[32];
    unhex(KEY_X, x, sizeof x);
    unhex(KEY_Y, y, sizeof y);
    assert_memory_equal(key.x, x, sizeof x);
    assert_memory_equal(key.y, y, sizeof y);

    uint8_t zero[OAUTH_ES256_KEY_SIZE] = {0};
    mcp_error_t err = {0};
    assert_int_equal(oauth_dpop_key_from_private(&key, zero, &err), MCP_EINVAL);
}

/* New keys differ, and each signs proofs its own JWK verifies. */
static void test_new_keys(void **state)
{
    (void)state;
    oauth_dpop_key_t a, b;
    mcp_error_t err = {0};
    assert_int_equal(oauth_dpop_key_new(&a, &err), MCP_OK);
    assert_int_equal(oauth_dpop_key_new(&b, &err), MCP_OK);
    assert_memory_not_equal(a.d, b.d, sizeof a.d);
    assert_memory_not_equal(a.x, b.x, sizeof a.x);

    char *jwt = NULL;
    assert_int_equal(oauth_dpop_proof(&a, "POST", "https://as/token", NULL, NULL, 1, &jwt, &err),
                     MCP_OK);
    proof_t p;
    split_proof(jwt, &p);
    const json_t *jwk = json_object_get(p.header, "jwk");
    assert_true(openssl_es256_verifies_jwk(jwk, jwt, p.signed_len, p.sig));
    /* b's public key does not verify a's proof. */
    char *other = NULL;
    assert_int_equal(oauth_dpop_proof(&b, "POST", "https://as/token", NULL, NULL, 1, &other, &err),
                     MCP_OK);
    proof_t q;
    split_proof(other, &q);
    assert_false(
        openssl_es256_verifies_jwk(json_object_get(q.header, "jwk"), jwt, p.signed_len, p.sig));
    free_proof(&p);
    free_proof(&q);
    free(jwt);
    free(other);
}

/* The header: typ dpop+jwt, alg ES256, and the public key only. */
static void test_header(void **state)
{
    (void)state;
    oauth_dpop_key_t key;
    known_key(&key);
    mcp_error_t err = {0};
    char *jwt = NULL;
    assert_int_equal(oauth_dpop_proof(&key, "GET", "https://rs/mcp", "tok", NULL, 5, &jwt, &err),
                     MCP_OK);
    proof_t p;
    split_proof(jwt, &p);
    assert_string_equal(json_string_value(json_object_get(p.header, "typ")), "dpop+jwt");
    assert_string_equal(json_string_value(json_object_get(p.header, "alg")), "ES256");
    const json_t *jwk = json_object_get(p.header, "jwk");
    assert_string_equal(json_string_value(json_object_get(jwk, "kty")), "EC");
    assert_string_equal(json_string_value(json_object_get(jwk, "crv")), "P-256");
    assert_null(json_object_get(jwk, "d"));
    assert_int_equal(json_object_size(jwk), 4);
    assert_int_equal(json_object_size(p.header), 3);
    char x[64];
    mcp_base64url_encode(key.x, sizeof key.x, x);
    assert_string_equal(json_string_value(json_object_get(jwk, "x")), x);
    assert_true(openssl_es256_verifies_jwk(jwk, jwt, p.signed_len, p.sig));
    /* A changed byte of the signed part does not verify. */
    jwt[p.signed_len - 1] ^= 1;
    assert_false(openssl_es256_verifies_jwk(jwk, jwt, p.signed_len, p.sig));
    free_proof(&p);
    free(jwt);
}

typedef struct {
    const char *method, *url, *token, *nonce;
    const char *htu; /* expected */
} claims_case_t;

static const claims_case_t claims_cases[] = {
    {"POST", "https://as.example/token", NULL, NULL, "https://as.example/token"},
    {"POST", "http://localhost:3000/mcp", "eyJ.token.x", NULL, "http://localhost:3000/mcp"},
    {"GET", "https://rs.example/mcp?session=1", "t", NULL, "https://rs.example/mcp"},
    {"DELETE", "https://rs.example/mcp#frag", "t", "n-1", "https://rs.example/mcp"},
    {"POST", "https://rs.example/a/b?x=1#y", NULL, "conformance-as-dpop-nonce",
     "https://rs.example/a/b"},
};

/* htm, htu (no query, no fragment), iat, ath (RFC 9449 §4.1: the SHA-256
 * of the token, as OpenSSL computes it) and nonce, only when given; a
 * jti unique to each proof. */
static void test_claims_table(void **state)
{
    (void)state;
    oauth_dpop_key_t key;
    known_key(&key);
    char *last_jti = NULL;
    for (size_t i = 0; i < COUNT(claims_cases); i++) {
        const claims_case_t *c = &claims_cases[i];
        mcp_error_t err = {0};
        char *jwt = NULL;
        assert_int_equal(oauth_dpop_proof(&key, c->method, c->url, c->token, c->nonce,
                                          1700000000 + (int64_t)i, &jwt, &err),
                         MCP_OK);
        proof_t p;
        split_proof(jwt, &p);
        assert_string_equal(json_string_value(json_object_get(p.claims, "htm")), c->method);
        assert_string_equal(json_string_value(json_object_get(p.claims, "htu")), c->htu);
        assert_int_equal(json_integer_value(json_object_get(p.claims, "iat")),
                         1700000000 + (int64_t)i);
        const char *jti = json_string_value(json_object_get(p.claims, "jti"));
        assert_non_null(jti);
        assert_true(strlen(jti) >= 22);
        if (last_jti)
            assert_string_not_equal(jti, last_jti);
        free(last_jti);
        last_jti = strdup(jti);

        const json_t *ath = json_object_get(p.claims, "ath");
        if (c->token) {
            unsigned char digest[SHA256_DIGEST_LENGTH];
            SHA256((const unsigned char *)c->token, strlen(c->token), digest);
            char want[64];
            mcp_base64url_encode(digest, sizeof digest, want);
            assert_string_equal(json_string_value(ath), want);
        } else {
            assert_null(ath);
        }
        const json_t *nonce = json_object_get(p.claims, "nonce");
        if (c->nonce)
            assert_string_equal(json_string_value(nonce), c->nonce);
        else
            assert_null(nonce);
        assert_int_equal(json_object_size(p.claims), 4 + (c->token != NULL) + (c->nonce != NULL));
        assert_true(openssl_es256_verifies_jwk(json_object_get(p.header, "jwk"), jwt, p.signed_len,
                                         p.sig));
        free_proof(&p);
        free(jwt);
    }
    free(last_jti);
}

/* RFC 9449 §8.1: nonce = 1*NQCHAR (%x21 / %x23-5B / %x5D-7E). */
static void test_nonce_syntax(void **state)
{
    (void)state;
    static const struct {
        const char *nonce;
        bool valid;
    } cases[] = {
        {"eyJ7S_zG.eyJH0-Z.HX4w-7v", true},
        {"!#[]~", true},
        {"a", true},
        {"", false},
        {"with space", false},
        {"quote\"", false},
        {"back\\slash", false},
        {"tab\t", false},
        {"del\x7f", false},
        {"utf8\xc3\xa9", false},
    };
    for (size_t i = 0; i < COUNT(cases); i++)
        if (oauth_dpop_nonce_valid(cases[i].nonce) != cases[i].valid)
            fail_msg("case %zu (\"%s\"): expected %s", i, cases[i].nonce,
                     cases[i].valid ? "valid" : "invalid");
    assert_false(oauth_dpop_nonce_valid(NULL));
    char *long_nonce = malloc(OAUTH_DPOP_MAX_NONCE + 2);
    memset(long_nonce, 'n', OAUTH_DPOP_MAX_NONCE + 1);
    long_nonce[OAUTH_DPOP_MAX_NONCE] = '\0';
    assert_true(oauth_dpop_nonce_valid(long_nonce));
    long_nonce[OAUTH_DPOP_MAX_NONCE] = 'n';
    long_nonce[OAUTH_DPOP_MAX_NONCE + 1] = '\0';
    assert_false(oauth_dpop_nonce_valid(long_nonce));
    free(long_nonce);

    /* A proof never carries a malformed nonce. */
    oauth_dpop_key_t key;
    known_key(&key);
    mcp_error_t err = {0};
    char *jwt = NULL;
    assert_int_equal(oauth_dpop_proof(&key, "POST", "https://as/t", NULL, "a b", 1, &jwt, &err),
                     MCP_EINVAL);
    assert_null(jwt);
}

/* A proof names its request: without a URL or a method there is none to
 * make (a refused call, not a crash). */
static void test_proof_needs_its_request(void **state)
{
    (void)state;
    oauth_dpop_key_t key;
    known_key(&key);
    mcp_error_t err = {0};
    char *jwt = (char *)"unchanged";
    assert_int_equal(oauth_dpop_proof(&key, "POST", NULL, NULL, NULL, 1, &jwt, &err), MCP_EINVAL);
    assert_null(jwt);
    assert_non_null(strstr(err.message, "URL"));
    assert_int_equal(oauth_dpop_proof(&key, NULL, "https://as/t", "tok", NULL, 1, &jwt, &err),
                     MCP_EINVAL);
    assert_null(jwt);
    mcp_error_clear(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_public_key),   cmocka_unit_test(test_new_keys),
        cmocka_unit_test(test_header),       cmocka_unit_test(test_claims_table),
        cmocka_unit_test(test_nonce_syntax), cmocka_unit_test(test_proof_needs_its_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
