/*
 * private_key_jwt (src/client/oauth/oauth_jwt.h): the PKCS#8 key reader,
 * table-driven over good keys and every way a key can be wrong; the PEM
 * wrapper; ES256 signatures and client assertions, verified with OpenSSL
 * (an implementation independent of the Nettle that signs).
 */
#define _GNU_SOURCE /* asprintf */
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

#include "client/oauth/oauth_jwt.h"
#include "protocol/base64.h"
#include "openssl_check.h"
#include "test_keys.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The scalar of TEST_KEY_P256_PEM. */
#define KEY_D "8f0af9330379e8a1fa85b062b0ffc2c14af308f2435d1aa7a540116d80f23785"

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex) / 2;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        unsigned byte;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &byte), 1);
        out[i] = (uint8_t)byte;
    }
    return n;
}

/* ------------------------------------------------------------------------
 * PKCS#8
 * ------------------------------------------------------------------------ */

/* The prefixes shared by the cases: PrivateKeyInfo version 0 with
 * id-ecPublicKey on prime256v1, then the ECPrivateKey OCTET STRING. */
#define ALG_P256 "301306072a8648ce3d020106082a8648ce3d030107"
#define EC_MIN "0427302502010104" "20" KEY_D

typedef struct {
    const char *name;
    const char *der_hex;
    int rc;
    const char *message; /* a part of the refusal */
} pkcs8_case_t;

static const pkcs8_case_t pkcs8_cases[] = {
    /* What OpenSSL writes: the ECPrivateKey carries the public key. */
    {"openssl", "308187020100" ALG_P256 "046d306b02010104" "20" KEY_D
                "a14403420004" "23e975da66fbd27de066e0f0e3304ceff6c241c7ef89069f1a917cf7f4bd74cf"
                "f029a4f0b1eda93b4e2b47efd60b42d2ae3f85671c4d6c2e81bc797e9ac68033",
     MCP_OK, NULL},
    {"minimal", "3041020100" ALG_P256 EC_MIN, MCP_OK, NULL},
    {"curve in the parameters too", "304d020100" ALG_P256 "0433303102010104" "20" KEY_D
                                    "a00a06082a8648ce3d030107", MCP_OK, NULL},
    {"PKCS#8 v2 with its public key", "308185020101" ALG_P256 EC_MIN
                                      "8142000423e975da66fbd27de066e0f0e3304ceff6c241c7ef89069f1a"
                                      "917cf7f4bd74cff029a4f0b1eda93b4e2b47efd60b42d2ae3f85671c4d"
                                      "6c2e81bc797e9ac68033", MCP_OK, NULL},
    {"with empty attributes", "3043020100" ALG_P256 EC_MIN "a000", MCP_OK, NULL},
    {"largest scalar", "3041020100" ALG_P256 "0427302502010104" "20"
                       "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632550",
     MCP_OK, NULL},

    {"RSA key", "303b020100300d06092a864886f70d0101010500" EC_MIN, MCP_EINVAL, "RSA"},
    {"Ed25519 key", "302e020100300506032b6570042204" "20" KEY_D, MCP_EINVAL, "not an EC key"},
    {"P-384 curve", "303e020100301006072a8648ce3d020106052b81040022" EC_MIN, MCP_EINVAL,
     "another curve"},
    {"P-384 in the parameters", "304a020100" ALG_P256 "0430302e02010104" "20" KEY_D
                                "a00706052b81040022", MCP_EINVAL, "parameters"},
    {"PKCS#8 v3", "3041020102" ALG_P256 EC_MIN, MCP_EINVAL, "unknown version"},
    {"ECPrivateKey v2", "3041020100" ALG_P256 "0427302502010204" "20" KEY_D, MCP_EINVAL,
     "unknown version"},
    {"31-byte scalar", "3040020100" ALG_P256 "04263024020101041f"
                        "0af9330379e8a1fa85b062b0ffc2c14af308f2435d1aa7a540116d80f23785", MCP_EINVAL,
     "32 bytes"},
    {"zero scalar", "3041020100" ALG_P256 "0427302502010104" "20"
                    "0000000000000000000000000000000000000000000000000000000000000000",
     MCP_EINVAL, "range"},
    {"scalar = the order", "3041020100" ALG_P256 "0427302502010104" "20"
                           "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551",
     MCP_EINVAL, "range"},
    {"public key in a v1 PKCS#8", "308185020100" ALG_P256 EC_MIN
                                  "8142000423e975da66fbd27de066e0f0e3304ceff6c241c7ef89069f1a"
                                  "917cf7f4bd74cff029a4f0b1eda93b4e2b47efd60b42d2ae3f85671c4d"
                                  "6c2e81bc797e9ac68033", MCP_EINVAL, "unexpected"},
    {"extra field in the EC key", "3043020100" ALG_P256 "0429302702010104" "20" KEY_D "0500",
     MCP_EINVAL, "unexpected"},
    {"bytes after the EC key", "3042020100" ALG_P256 "0428302502010104" "20" KEY_D "00",
     MCP_EINVAL, "well-formed"},
    {"bytes after the key", "3041020100" ALG_P256 EC_MIN "00", MCP_EINVAL, "PKCS#8 DER"},
    {"truncated", "3041020100" ALG_P256 "0427302502010104" "20" "8f0af933", MCP_EINVAL,
     "PKCS#8 DER"},
    {"non-minimal length", "308141020100" ALG_P256 EC_MIN, MCP_EINVAL, "PKCS#8 DER"},
    {"indefinite length", "3080020100" ALG_P256 EC_MIN "0000", MCP_EINVAL, "PKCS#8 DER"},
    {"not a SEQUENCE", "0441020100" ALG_P256 EC_MIN, MCP_EINVAL, "PKCS#8 DER"},
    {"empty", "", MCP_EINVAL, "PKCS#8 DER"},
};

static void test_pkcs8_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(pkcs8_cases); i++) {
        const pkcs8_case_t *c = &pkcs8_cases[i];
        uint8_t der[512], key[OAUTH_ES256_KEY_SIZE], want[OAUTH_ES256_KEY_SIZE];
        size_t len = unhex(c->der_hex, der, sizeof der);
        mcp_error_t err = {0};
        memset(key, 0xee, sizeof key);
        int rc = oauth_es256_key_from_pkcs8(der, len, key, &err);
        if (rc != c->rc)
            fail_msg("%s: rc %d, want %d (%s)", c->name, rc, c->rc, err.message);
        if (rc == MCP_OK) {
            const char *d = strstr(c->name, "largest")
                                ? "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632550"
                                : KEY_D;
            unhex(d, want, sizeof want);
            assert_memory_equal(key, want, sizeof want);
        } else if (!strstr(err.message, c->message)) {
            fail_msg("%s: \"%s\" does not say \"%s\"", c->name, err.message, c->message);
        }
    }
    mcp_error_t err = {0};
    uint8_t key[OAUTH_ES256_KEY_SIZE];
    assert_int_equal(oauth_es256_key_from_pkcs8(NULL, 10, key, &err), MCP_EINVAL);
}

/* ------------------------------------------------------------------------
 * PEM
 * ------------------------------------------------------------------------ */

static void test_pem(void **state)
{
    (void)state;
    uint8_t key[OAUTH_ES256_KEY_SIZE], want[OAUTH_ES256_KEY_SIZE];
    unhex(KEY_D, want, sizeof want);
    mcp_error_t err = {0};

    assert_int_equal(oauth_es256_key_from_pem(TEST_KEY_P256_PEM, key, &err), MCP_OK);
    assert_memory_equal(key, want, sizeof want);

    /* CRLF lines, text around the block, and the base64 in one line. */
    char *crlf = NULL;
    assert_true(asprintf(&crlf, "my key\r\n%s", TEST_KEY_P256_PEM) > 0);
    for (char *p = strchr(crlf + 8, '\n'); p; p = strchr(p + 1, '\n'))
        *p = ' ';
    memset(key, 0, sizeof key);
    assert_int_equal(oauth_es256_key_from_pem(crlf, key, &err), MCP_OK);
    assert_memory_equal(key, want, sizeof want);
    free(crlf);

    static const struct {
        const char *pem;
        const char *message;
    } bad[] = {
        {"", "not PEM"},
        {"-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n", "not PEM"},
        {"-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n", "not PEM"},
        {"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n", "SEC1"},
        {"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIH\n-----END ENCRYPTED PRIVATE KEY-----\n",
         "encrypted"},
        {"-----BEGIN PRIVATE KEY-----\nMIG*AgEA\n-----END PRIVATE KEY-----\n", "base64"},
        {"-----BEGIN PRIVATE KEY-----\nMIGHAgEA\n-----END PRIVATE KEY-----\n", "PKCS#8"},
        /* Cut short, as a file copied in part. */
        {"-----BEGIN PRIVATE KEY-----\nMIICeAIBADANBgkqhkiG9w0BAQEFAASCAmIwggJeAgEAAoGBAN/e\n"
         "-----END PRIVATE KEY-----\n", "PKCS#8 DER"},
        /* The rsaEncryption algorithm. */
        {"-----BEGIN PRIVATE KEY-----\nMDsCAQAwDQYJKoZIhvcNAQEBBQAEJzAlAgEBBCCPCvkzA3noofqFsGKw/8LB"
         "SvMI8kNdGqelQBFtgPI3hQ==\n-----END PRIVATE KEY-----\n", "RSA"},
    };
    for (size_t i = 0; i < COUNT(bad); i++) {
        mcp_error_clear(&err);
        assert_int_equal(oauth_es256_key_from_pem(bad[i].pem, key, &err), MCP_EINVAL);
        if (!strstr(err.message, bad[i].message))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.message, bad[i].message);
    }
    assert_int_equal(oauth_es256_key_from_pem(NULL, key, &err), MCP_EINVAL);
}

/* ------------------------------------------------------------------------
 * Signatures, checked by OpenSSL
 * ------------------------------------------------------------------------ */

static void test_es256_signature(void **state)
{
    (void)state;
    uint8_t key[OAUTH_ES256_KEY_SIZE], sig[OAUTH_ES256_SIG_SIZE], again[OAUTH_ES256_SIG_SIZE];
    unhex(KEY_D, key, sizeof key);
    mcp_error_t err = {0};
    const char msg[] = "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0";
    assert_int_equal(oauth_es256_sign(key, msg, strlen(msg), sig, &err), MCP_OK);
    assert_true(openssl_es256_verifies_pem(TEST_KEY_P256_PEM, msg, strlen(msg), sig));
    /* Another message, or another signature's bytes, do not verify. */
    assert_false(openssl_es256_verifies_pem(TEST_KEY_P256_PEM, "other", 5, sig));
    sig[40] ^= 1;
    assert_false(openssl_es256_verifies_pem(TEST_KEY_P256_PEM, msg, strlen(msg), sig));
    /* A fresh nonce each time: the same message signs differently. */
    assert_int_equal(oauth_es256_sign(key, msg, strlen(msg), again, &err), MCP_OK);
    assert_memory_not_equal(sig, again, sizeof sig);
    assert_true(openssl_es256_verifies_pem(TEST_KEY_P256_PEM, msg, strlen(msg), again));
}

/* A base64url segment of a JWS, decoded as JSON. */
static json_t *segment_json(const char *text, size_t len)
{
    unsigned char buf[1024];
    size_t n = 0;
    assert_true(len < sizeof buf);
    assert_int_equal(mcp_base64url_decode(text, len, buf, &n), MCP_OK);
    json_t *doc = json_loadb((const char *)buf, n, 0, NULL);
    assert_non_null(doc);
    return doc;
}

static void test_client_assertion(void **state)
{
    (void)state;
    uint8_t key[OAUTH_ES256_KEY_SIZE];
    unhex(KEY_D, key, sizeof key);
    mcp_error_t err = {0};
    char *jwt = NULL, *other = NULL;
    assert_int_equal(oauth_client_assertion(key, "svc", "https://as.example", 1700000000, &jwt,
                                            &err),
                     MCP_OK);
    const char *dot1 = strchr(jwt, '.');
    assert_non_null(dot1);
    const char *dot2 = strchr(dot1 + 1, '.');
    assert_non_null(dot2);
    assert_null(strchr(dot2 + 1, '.'));

    json_t *header = segment_json(jwt, (size_t)(dot1 - jwt));
    assert_string_equal(json_string_value(json_object_get(header, "alg")), "ES256");
    assert_string_equal(json_string_value(json_object_get(header, "typ")), "JWT");
    json_decref(header);

    json_t *claims = segment_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    assert_string_equal(json_string_value(json_object_get(claims, "iss")), "svc");
    assert_string_equal(json_string_value(json_object_get(claims, "sub")), "svc");
    assert_string_equal(json_string_value(json_object_get(claims, "aud")), "https://as.example");
    assert_int_equal(json_integer_value(json_object_get(claims, "iat")), 1700000000);
    assert_int_equal(json_integer_value(json_object_get(claims, "exp")),
                     1700000000 + OAUTH_ASSERTION_LIFETIME_S);
    const char *jti = json_string_value(json_object_get(claims, "jti"));
    assert_non_null(jti);
    assert_true(strlen(jti) >= 16);

    uint8_t sig[OAUTH_ES256_SIG_SIZE + 4];
    size_t sig_len = 0;
    assert_int_equal(mcp_base64url_decode(dot2 + 1, strlen(dot2 + 1), sig, &sig_len), MCP_OK);
    assert_int_equal(sig_len, OAUTH_ES256_SIG_SIZE);
    assert_true(openssl_es256_verifies_pem(TEST_KEY_P256_PEM, jwt, (size_t)(dot2 - jwt), sig));

    /* Each assertion is unique (RFC 7523 §3: jti). */
    assert_int_equal(oauth_client_assertion(key, "svc", "https://as.example", 1700000000, &other,
                                            &err),
                     MCP_OK);
    json_t *claims2 = segment_json(strchr(other, '.') + 1,
                                   (size_t)(strrchr(other, '.') - strchr(other, '.') - 1));
    assert_string_not_equal(json_string_value(json_object_get(claims2, "jti")), jti);
    json_decref(claims2);
    json_decref(claims);
    free(jwt);
    free(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pkcs8_table),
        cmocka_unit_test(test_pem),
        cmocka_unit_test(test_es256_signature),
        cmocka_unit_test(test_client_assertion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
