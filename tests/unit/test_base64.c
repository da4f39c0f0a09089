/* Base64 and base64url: RFC 4648 section 10 vectors and strict decoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/common.h"
#include "protocol/base64.h"

/* RFC 4648 section 10, plus base64url forms of the same inputs. */
static const struct {
    const char *plain;
    const char *standard;
    const char *url;
} RFC_VECTORS[] = {
    {"", "", ""},
    {"f", "Zg==", "Zg"},
    {"fo", "Zm8=", "Zm8"},
    {"foo", "Zm9v", "Zm9v"},
    {"foob", "Zm9vYg==", "Zm9vYg"},
    {"fooba", "Zm9vYmE=", "Zm9vYmE"},
    {"foobar", "Zm9vYmFy", "Zm9vYmFy"},
};

static void test_rfc4648_vectors_encode(void **state)
{
    (void)state;
    char out[32];
    for (size_t i = 0; i < sizeof RFC_VECTORS / sizeof RFC_VECTORS[0]; i++) {
        size_t n = strlen(RFC_VECTORS[i].plain);
        assert_int_equal(mcp_base64_encoded_len(n), strlen(RFC_VECTORS[i].standard));
        assert_int_equal(mcp_base64_encode(RFC_VECTORS[i].plain, n, out),
                         strlen(RFC_VECTORS[i].standard));
        assert_string_equal(out, RFC_VECTORS[i].standard);

        assert_int_equal(mcp_base64url_encoded_len(n), strlen(RFC_VECTORS[i].url));
        assert_int_equal(mcp_base64url_encode(RFC_VECTORS[i].plain, n, out),
                         strlen(RFC_VECTORS[i].url));
        assert_string_equal(out, RFC_VECTORS[i].url);
    }
}

static void test_rfc4648_vectors_decode(void **state)
{
    (void)state;
    unsigned char out[32];
    size_t len;
    for (size_t i = 0; i < sizeof RFC_VECTORS / sizeof RFC_VECTORS[0]; i++) {
        const char *std = RFC_VECTORS[i].standard, *url = RFC_VECTORS[i].url;
        size_t n = strlen(RFC_VECTORS[i].plain);

        len = 999;
        assert_true(mcp_base64_decoded_max(strlen(std)) >= n);
        assert_int_equal(mcp_base64_decode(std, strlen(std), out, &len), MCP_OK);
        assert_int_equal(len, n);
        assert_memory_equal(out, RFC_VECTORS[i].plain, n);

        len = 999;
        assert_int_equal(mcp_base64_decoded_max(strlen(url)), n);
        assert_int_equal(mcp_base64url_decode(url, strlen(url), out, &len), MCP_OK);
        assert_int_equal(len, n);
        assert_memory_equal(out, RFC_VECTORS[i].plain, n);
    }
}

/* The two characters where the alphabets differ: bytes fb ff bf encode to
 * "+/+/" in standard Base64 and "-_-_" in base64url. */
static void test_alphabets_differ_in_two_characters(void **state)
{
    (void)state;
    static const unsigned char bytes[] = {0xfb, 0xff, 0xbf};
    char out[8];
    unsigned char back[8];
    size_t len = 0;

    mcp_base64_encode(bytes, 3, out);
    assert_string_equal(out, "+/+/");
    mcp_base64url_encode(bytes, 3, out);
    assert_string_equal(out, "-_-_");

    assert_int_equal(mcp_base64_decode("+/+/", 4, back, &len), MCP_OK);
    assert_memory_equal(back, bytes, 3);
    assert_int_equal(mcp_base64url_decode("-_-_", 4, back, &len), MCP_OK);
    assert_memory_equal(back, bytes, 3);

    assert_int_equal(mcp_base64_decode("-_-_", 4, back, &len), MCP_EINVAL);
    assert_int_equal(mcp_base64url_decode("+/+/", 4, back, &len), MCP_EINVAL);
}

/* Every byte value survives both codecs, at every tail length. */
static void test_all_bytes_round_trip(void **state)
{
    (void)state;
    unsigned char bytes[256], back[256];
    char text[400];
    size_t len;
    for (int i = 0; i < 256; i++)
        bytes[i] = (unsigned char)(255 - i);
    for (size_t n = 250; n <= 256; n++) {
        size_t t = mcp_base64_encode(bytes, n, text);
        assert_int_equal(mcp_base64_decode(text, t, back, &len), MCP_OK);
        assert_int_equal(len, n);
        assert_memory_equal(back, bytes, n);

        t = mcp_base64url_encode(bytes, n, text);
        assert_int_equal(mcp_base64url_decode(text, t, back, &len), MCP_OK);
        assert_int_equal(len, n);
        assert_memory_equal(back, bytes, n);
    }
}

static const char *const BAD_STANDARD[] = {
    "SGVsbG8",      /* the SEP-2243 "bad padding" vector: "Hello" without its '=' */
    "Zg=",          /* one '=' short */
    "Zg",           /* padding missing entirely */
    "Zm9vY",        /* not a whole group */
    "Z===",         /* a group of one character */
    "====",         /* padding only */
    "Zg==Zg==",     /* padding in the middle */
    "Zm=v",         /* '=' before a data character */
    "SGVs!!!bG8=",  /* the SEP-2243 "bad characters" vector */
    "Zm9v\n",       /* line break */
    "Zm9 v",        /* interior space */
    " Zm9v",        /* leading space */
    "Zm9-",         /* base64url character */
    "Zm9_",         /* base64url character */
    "Zh==",         /* 'h' leaves non-zero unused bits ("f" is "Zg==") */
    "Zm9=",         /* '9' leaves non-zero unused bits ("fo" is "Zm8=") */
};

static void test_standard_rejects_malformed(void **state)
{
    (void)state;
    unsigned char out[32];
    for (size_t i = 0; i < sizeof BAD_STANDARD / sizeof BAD_STANDARD[0]; i++) {
        size_t len = 12345;
        const char *t = BAD_STANDARD[i];
        if (mcp_base64_decode(t, strlen(t), out, &len) != MCP_EINVAL)
            fail_msg("accepted \"%s\"", t);
        assert_int_equal(len, 12345);
    }
}

static const char *const BAD_URL[] = {
    "Zg==",   /* padding is not part of the unpadded form */
    "Zg=",
    "Z",      /* one dangling character */
    "Zm9vY",  /* one dangling character after a whole group */
    "Zm9v+",  /* standard alphabet */
    "Zm9/",
    "Zm 9v",
    "Zh",     /* non-zero unused bits */
    "Zm9",    /* non-zero unused bits */
};

static void test_url_rejects_malformed(void **state)
{
    (void)state;
    unsigned char out[32];
    for (size_t i = 0; i < sizeof BAD_URL / sizeof BAD_URL[0]; i++) {
        size_t len = 12345;
        const char *t = BAD_URL[i];
        if (mcp_base64url_decode(t, strlen(t), out, &len) != MCP_EINVAL)
            fail_msg("accepted \"%s\"", t);
        assert_int_equal(len, 12345);
    }
}

/* An embedded NUL is not an alphabet character, even inside `len`. */
static void test_nul_inside_text_is_rejected(void **state)
{
    (void)state;
    unsigned char out[8];
    size_t len;
    assert_int_equal(mcp_base64_decode("Zm\0v", 4, out, &len), MCP_EINVAL);
    assert_int_equal(mcp_base64url_decode("Zm\0v", 4, out, &len), MCP_EINVAL);
}

static void test_decoded_max_bounds_every_length(void **state)
{
    (void)state;
    for (size_t n = 0; n < 64; n++) {
        assert_true(mcp_base64_decoded_max(mcp_base64_encoded_len(n)) >= n);
        assert_int_equal(mcp_base64_decoded_max(mcp_base64url_encoded_len(n)), n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_vectors_encode),
        cmocka_unit_test(test_rfc4648_vectors_decode),
        cmocka_unit_test(test_alphabets_differ_in_two_characters),
        cmocka_unit_test(test_all_bytes_round_trip),
        cmocka_unit_test(test_standard_rejects_malformed),
        cmocka_unit_test(test_url_rejects_malformed),
        cmocka_unit_test(test_nul_inside_text_is_rejected),
        cmocka_unit_test(test_decoded_max_bounds_every_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
