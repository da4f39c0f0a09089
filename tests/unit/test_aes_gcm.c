/* AES-256-GCM over raw bytes: known answers from the GCM specification
 * (McGrew and Viega, test cases 13 to 16, the AES-256 ones) and tampering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/common.h"
#include "server/aes_gcm.h"

typedef struct gcm_vector {
    const char *name, *key, *nonce, *aad, *plain, *cipher, *tag;
} gcm_vector_t;

#define K15 "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
#define P15                                                                      \
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"           \
    "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
#define C15                                                                      \
    "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"           \
    "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad"

static const gcm_vector_t VECTORS[] = {
    {"case 13: empty", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
    {"case 14: one zero block",
     "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "00000000000000000000000000000000",
     "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
    {"case 15: four blocks", K15, "cafebabefacedbaddecaf888", "", P15, C15,
     "b094dac5d93471bdec1a502270e3cc6c"},
    /* 60 bytes of plaintext and 20 of AAD: both end in a partial block. */
    {"case 16: partial blocks and AAD", K15, "cafebabefacedbaddecaf888",
     "feedfacedeadbeeffeedfacedeadbeefabaddad2",
     "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
     "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
};

static size_t unhex(const char *hex, uint8_t *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

typedef struct decoded {
    uint8_t key[32], nonce[12], aad[64], plain[64], cipher[64], tag[16];
    size_t aad_len, plain_len;
} decoded_t;

static decoded_t decode(const gcm_vector_t *v)
{
    decoded_t d;
    memset(&d, 0, sizeof d);
    assert_int_equal(unhex(v->key, d.key), 32);
    assert_int_equal(unhex(v->nonce, d.nonce), 12);
    d.aad_len = unhex(v->aad, d.aad);
    d.plain_len = unhex(v->plain, d.plain);
    assert_int_equal(unhex(v->cipher, d.cipher), d.plain_len);
    assert_int_equal(unhex(v->tag, d.tag), 16);
    return d;
}

static void test_seal_matches_the_spec_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof VECTORS / sizeof VECTORS[0]; i++) {
        decoded_t d = decode(&VECTORS[i]);
        uint8_t cipher[64], tag[16];
        print_message("%s\n", VECTORS[i].name);
        assert_int_equal(mcp_aes256gcm_seal(d.key, d.nonce, d.aad, d.aad_len, d.plain,
                                            d.plain_len, cipher, tag),
                         MCP_OK);
        if (d.plain_len)
            assert_memory_equal(cipher, d.cipher, d.plain_len);
        assert_memory_equal(tag, d.tag, 16);
    }
}

static void test_open_matches_the_spec_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof VECTORS / sizeof VECTORS[0]; i++) {
        decoded_t d = decode(&VECTORS[i]);
        uint8_t plain[64] = {0};
        assert_int_equal(mcp_aes256gcm_open(d.key, d.nonce, d.aad, d.aad_len, d.cipher,
                                            d.plain_len, d.tag, plain),
                         MCP_OK);
        if (d.plain_len)
            assert_memory_equal(plain, d.plain, d.plain_len);
    }
}

static void test_seal_in_place(void **state)
{
    (void)state;
    decoded_t d = decode(&VECTORS[3]);
    uint8_t buf[64], tag[16];
    memcpy(buf, d.plain, d.plain_len);
    assert_int_equal(
        mcp_aes256gcm_seal(d.key, d.nonce, d.aad, d.aad_len, buf, d.plain_len, buf, tag),
        MCP_OK);
    assert_memory_equal(buf, d.cipher, d.plain_len);
    assert_memory_equal(tag, d.tag, 16);
}

/* Every single-bit change of key, nonce, AAD, ciphertext or tag must fail
 * authentication and leave no plaintext behind. */
static void test_any_bit_flip_fails_and_wipes(void **state)
{
    (void)state;
    decoded_t good = decode(&VECTORS[3]);
    struct {
        uint8_t *bytes;
        size_t len;
    } fields[5];
    decoded_t d;
    for (int f = 0; f < 5; f++) {
        d = good;
        fields[0].bytes = d.key, fields[0].len = 32;
        fields[1].bytes = d.nonce, fields[1].len = 12;
        fields[2].bytes = d.aad, fields[2].len = d.aad_len;
        fields[3].bytes = d.cipher, fields[3].len = d.plain_len;
        fields[4].bytes = d.tag, fields[4].len = 16;
        for (size_t bit = 0; bit < fields[f].len * 8; bit++) {
            uint8_t plain[64];
            memset(plain, 0xEE, sizeof plain);
            fields[f].bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            assert_int_equal(mcp_aes256gcm_open(d.key, d.nonce, d.aad, d.aad_len, d.cipher,
                                                d.plain_len, d.tag, plain),
                             MCP_EINVAL);
            for (size_t i = 0; i < d.plain_len; i++)
                assert_int_equal(plain[i], 0);
            fields[f].bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
    }
}

static void test_missing_aad_fails(void **state)
{
    (void)state;
    decoded_t d = decode(&VECTORS[3]);
    uint8_t plain[64];
    assert_int_equal(mcp_aes256gcm_open(d.key, d.nonce, NULL, 0, d.cipher, d.plain_len, d.tag,
                                        plain),
                     MCP_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seal_matches_the_spec_vectors),
        cmocka_unit_test(test_open_matches_the_spec_vectors),
        cmocka_unit_test(test_seal_in_place),
        cmocka_unit_test(test_any_bit_flip_fails_and_wipes),
        cmocka_unit_test(test_missing_aad_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
