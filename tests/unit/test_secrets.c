/* Secret bytes: random draws, constant-time comparison, wiping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/common.h"
#include "server/secrets.h"

/* Two 32-byte draws that collide, or a draw left all zero, would mean the
 * buffer was not filled (the chance by luck is 2^-256). A draw longer than
 * one getrandom(2) page also comes back whole. */
static void test_random_fills_every_byte(void **state)
{
    (void)state;
    uint8_t a[32] = {0}, b[32] = {0}, zero[32] = {0};
    assert_int_equal(mcp_secret_random(a, sizeof a), MCP_OK);
    assert_int_equal(mcp_secret_random(b, sizeof b), MCP_OK);
    assert_memory_not_equal(a, zero, sizeof a);
    assert_memory_not_equal(a, b, sizeof a);

    static uint8_t big[1 << 20];
    assert_int_equal(mcp_secret_random(big, sizeof big), MCP_OK);
    /* Every 32-byte stretch, the last one included, was written. */
    for (size_t at = 0; at + sizeof zero <= sizeof big; at += sizeof zero)
        assert_memory_not_equal(big + at, zero, sizeof zero);
    assert_int_equal(mcp_secret_random(big, 0), MCP_OK);
}

static void test_equal_sees_a_difference_anywhere(void **state)
{
    (void)state;
    uint8_t a[16], b[16];
    memset(a, 0x5a, sizeof a);
    memcpy(b, a, sizeof b);
    assert_true(mcp_secret_equal(a, b, sizeof a));
    assert_true(mcp_secret_equal(a, b, 0));
    for (size_t i = 0; i < sizeof a; i++) {
        b[i] ^= 0x01;
        assert_false(mcp_secret_equal(a, b, sizeof a));
        b[i] ^= 0x01;
    }
    b[sizeof b - 1] ^= 0x80;
    assert_false(mcp_secret_equal(a, b, sizeof a));
    assert_true(mcp_secret_equal(a, b, sizeof a - 1));
}

static void test_wipe_zeroes(void **state)
{
    (void)state;
    uint8_t key[40], zero[40] = {0};
    memset(key, 0xff, sizeof key);
    mcp_secret_wipe(key + 4, 32);
    assert_memory_equal(key + 4, zero, 32);
    assert_int_equal(key[3], 0xff);
    assert_int_equal(key[36], 0xff);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_fills_every_byte),
        cmocka_unit_test(test_equal_sees_a_difference_anywhere),
        cmocka_unit_test(test_wipe_zeroes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
