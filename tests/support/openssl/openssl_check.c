/* ES256 and base64url by OpenSSL, for the tests; see openssl_check.h. */
#include "openssl_check.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

unsigned char *openssl_unbase64url(const char *text, size_t len, size_t *out_len)
{
    char *std = malloc(len + 4);
    assert_non_null(std);
    size_t n = 0;
    for (; n < len; n++)
        std[n] = text[n] == '-' ? '+' : text[n] == '_' ? '/' : text[n];
    while (n % 4)
        std[n++] = '=';
    unsigned char *out = malloc(n + 1);
    assert_non_null(out);
    int got = EVP_DecodeBlock(out, (const unsigned char *)std, (int)n);
    free(std);
    if (got < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the padding's zero bytes too. */
    size_t pad = len % 4 == 2 ? 2 : len % 4 == 3 ? 1 : 0;
    *out_len = (size_t)got - pad;
    out[*out_len] = '\0';
    return out;
}

/* Whether OpenSSL verifies `sig` (r || s) over `msg` with `key`. */
static bool verifies(EVP_PKEY *key, const void *msg, size_t len, const uint8_t sig[64])
{
    ECDSA_SIG *ecdsa = ECDSA_SIG_new();
    assert_true(ECDSA_SIG_set0(ecdsa, BN_bin2bn(sig, 32, NULL), BN_bin2bn(sig + 32, 32, NULL)));
    unsigned char *der = NULL;
    int der_len = i2d_ECDSA_SIG(ecdsa, &der);
    assert_true(der_len > 0);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, key), 1);
    int ok = EVP_DigestVerify(ctx, der, (size_t)der_len, msg, len);
    EVP_MD_CTX_free(ctx);
    OPENSSL_free(der);
    ECDSA_SIG_free(ecdsa);
    return ok == 1;
}

bool openssl_es256_verifies_pem(const char *private_key_pem, const void *msg, size_t len,
                                const uint8_t sig[64])
{
    BIO *bio = BIO_new_mem_buf(private_key_pem, -1);
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    assert_non_null(key);
    bool ok = verifies(key, msg, len, sig);
    EVP_PKEY_free(key);
    return ok;
}

/* One coordinate of a JWK, decoded into `out`. */
static void jwk_coordinate(const json_t *jwk, const char *name, uint8_t out[32])
{
    const char *text = json_string_value(json_object_get(jwk, name));
    assert_non_null(text);
    size_t n = 0;
    unsigned char *bytes = openssl_unbase64url(text, strlen(text), &n);
    assert_non_null(bytes);
    assert_int_equal(n, 32);
    memcpy(out, bytes, 32);
    free(bytes);
}

bool openssl_es256_verifies_jwk(const json_t *jwk, const void *msg, size_t len,
                                const uint8_t sig[64])
{
    uint8_t point[65] = {0x04}; /* uncompressed: 04 || x || y */
    jwk_coordinate(jwk, "x", point + 1);
    jwk_coordinate(jwk, "y", point + 33);

    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    assert_true(OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0));
    assert_true(OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point));
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *kctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    EVP_PKEY *key = NULL;
    assert_int_equal(EVP_PKEY_fromdata_init(kctx), 1);
    assert_int_equal(EVP_PKEY_fromdata(kctx, &key, EVP_PKEY_PUBLIC_KEY, params), 1);
    bool ok = verifies(key, msg, len, sig);
    EVP_PKEY_free(key);
    EVP_PKEY_CTX_free(kctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    return ok;
}
