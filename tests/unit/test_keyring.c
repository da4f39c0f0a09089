/* The requestState keyring: ids, rotation order, and loading keys from
 * text, files and the environment. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, setenv, strdup */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcp/request_state.h"
#include "server/keyring.h"

/* The 32 bytes 0x00..0x1f (base64 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
 * and 0xff 0xfe ... 0xe0, whose encodings use '+' '/' resp. '-' '_'. */
#define KEY_A_STD "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define KEY_A_URL "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
#define KEY_B_STD "//79/Pv6+fj39vX08/Lx8O/u7ezr6uno5+bl5OPi4eA="
#define KEY_B_URL "__79_Pv6-fj39vX08_Lx8O_u7ezr6uno5-bl5OPi4eA"

static void key_a(uint8_t k[32])
{
    for (int i = 0; i < 32; i++)
        k[i] = (uint8_t)i;
}

static void key_b(uint8_t k[32])
{
    for (int i = 0; i < 32; i++)
        k[i] = (uint8_t)(0xff - i);
}

static const mcp_state_key_t *find(const mcp_keyring_t *ring, const char *id)
{
    return mcp_keyring_find(ring, (const uint8_t *)id, strlen(id));
}

static void assert_key(const mcp_keyring_t *ring, const char *id, void (*expected)(uint8_t *))
{
    const mcp_state_key_t *key = find(ring, id);
    assert_non_null(key);
    uint8_t want[32];
    expected(want);
    assert_memory_equal(key->bytes, want, 32);
}

/* ---- adding keys ----------------------------------------------------------- */

static void test_key_id_rules(void **state)
{
    (void)state;
    static const struct {
        const char *id;
        int valid;
    } cases[] = {
        {"0", 1},
        {"k1", 1},
        {"2026-07.key_A", 1},
        {"abcdefghijklmnopqrstuvwxyz012345", 1}, /* 32 characters */
        {"abcdefghijklmnopqrstuvwxyz0123456", 0}, /* 33 */
        {"", 0},
        {"a b", 0},
        {"a/b", 0},
        {"a+b", 0},
        {"a=b", 0},
        {"k\xc3\xa9", 0},
        {"a\tb", 0},
    };
    uint8_t key[32];
    key_a(key);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_keyring_t *ring = mcp_keyring_new();
        assert_int_equal(mcp_keyring_id_is_valid(cases[i].id), cases[i].valid);
        assert_int_equal(mcp_keyring_add(ring, cases[i].id, key),
                         cases[i].valid ? MCP_OK : MCP_EINVAL);
        assert_int_equal(mcp_keyring_count(ring), cases[i].valid ? 1 : 0);
        mcp_keyring_free(ring);
    }
}

static void test_add_rejects_duplicates_and_null(void **state)
{
    (void)state;
    uint8_t a[32], b[32];
    key_a(a);
    key_b(b);
    mcp_keyring_t *ring = mcp_keyring_new();
    assert_int_equal(mcp_keyring_add(ring, "k1", a), MCP_OK);
    assert_int_equal(mcp_keyring_add(ring, "k1", b), MCP_EEXIST);
    assert_int_equal(mcp_keyring_add(ring, NULL, b), MCP_EINVAL);
    assert_int_equal(mcp_keyring_add(ring, "k2", NULL), MCP_EINVAL);
    assert_int_equal(mcp_keyring_add(NULL, "k2", b), MCP_EINVAL);
    assert_int_equal(mcp_keyring_count(ring), 1);
    assert_key(ring, "k1", key_a);
    assert_int_equal(mcp_keyring_count(NULL), 0);
    mcp_keyring_free(ring);
    mcp_keyring_free(NULL);
}

static void test_newest_key_is_the_last_added(void **state)
{
    (void)state;
    uint8_t k[32] = {0};
    mcp_keyring_t *ring = mcp_keyring_new();
    assert_null(mcp_keyring_newest(ring));
    char id[8];
    for (int i = 0; i < 20; i++) { /* past the initial capacity */
        snprintf(id, sizeof id, "k%d", i);
        k[0] = (uint8_t)i;
        assert_int_equal(mcp_keyring_add(ring, id, k), MCP_OK);
        assert_string_equal(mcp_keyring_newest(ring)->id, id);
        assert_int_equal(mcp_keyring_newest(ring)->bytes[0], i);
    }
    assert_int_equal(mcp_keyring_count(ring), 20);
    assert_int_equal(find(ring, "k7")->bytes[0], 7);
    assert_null(find(ring, "k"));
    assert_null(find(ring, "k77"));
    mcp_keyring_free(ring);
}

static void test_generate(void **state)
{
    (void)state;
    mcp_keyring_t *ring = mcp_keyring_new();
    assert_int_equal(mcp_keyring_generate(ring, "g1"), MCP_OK);
    assert_int_equal(mcp_keyring_generate(ring, "g2"), MCP_OK);
    assert_int_equal(mcp_keyring_generate(ring, "g2"), MCP_EEXIST);
    assert_int_equal(mcp_keyring_generate(ring, "bad id"), MCP_EINVAL);
    assert_int_equal(mcp_keyring_count(ring), 2);
    assert_memory_not_equal(find(ring, "g1")->bytes, find(ring, "g2")->bytes, 32);
    mcp_keyring_free(ring);
}

/* ---- text ------------------------------------------------------------------ */

static void test_load_text_accepts_every_encoding(void **state)
{
    (void)state;
    const char *text = "# rotation order: oldest first\n"
                       "\n"
                       "std-padded " KEY_A_STD "\n"
                       "std-bare   " KEY_A_URL "\n" /* same bytes, no '+' '/' in it */
                       "  url-bare\t" KEY_B_URL "  \r\n"
                       "url-padded " KEY_B_URL "=\n"
                       "std-b " KEY_B_STD "\n"
                       "   # an indented comment\n"
                       "last " KEY_A_STD; /* no final newline */
    mcp_keyring_t *ring = mcp_keyring_new();
    mcp_error_t err = {0};
    assert_int_equal(mcp_keyring_load_text(ring, text, &err), MCP_OK);
    assert_int_equal(mcp_keyring_count(ring), 6);
    assert_key(ring, "std-padded", key_a);
    assert_key(ring, "std-bare", key_a);
    assert_key(ring, "url-bare", key_b);
    assert_key(ring, "url-padded", key_b);
    assert_key(ring, "std-b", key_b);
    assert_key(ring, "last", key_a);
    assert_string_equal(mcp_keyring_newest(ring)->id, "last");
    mcp_keyring_free(ring);
}

static void test_load_text_single_bare_key_gets_id_zero(void **state)
{
    (void)state;
    static const char *const texts[] = {KEY_A_STD, KEY_A_URL "\n", "# the key\n  " KEY_A_STD
                                                                   " \n\n"};
    for (size_t i = 0; i < 3; i++) {
        mcp_keyring_t *ring = mcp_keyring_new();
        assert_int_equal(mcp_keyring_load_text(ring, texts[i], NULL), MCP_OK);
        assert_int_equal(mcp_keyring_count(ring), 1);
        assert_key(ring, "0", key_a);
        mcp_keyring_free(ring);
    }
}

/* Each bad text fails naming its line, and adds nothing even when earlier
 * lines were good. */
static void test_load_text_rejects_bad_lines(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *message; /* a substring of the error */
    } cases[] = {
        {"k1 " KEY_A_STD "\nk2 " KEY_A_STD " extra\n", "line 2: expected"},
        {"k1 " KEY_A_STD "\nk2 AAEC\n", "line 2: the key is not 32 bytes"},
        {"k1 " KEY_A_STD "\nk2 " KEY_A_URL "AA\n", "line 2: the key is not"},    /* 33 bytes */
        {"k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==\n", "line 1: the key is"}, /* 31 */
        {"k1 " KEY_A_STD "==\n", "line 1: the key is"},
        {"k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh!\n", "line 1: the key is"},
        {"k1 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9\n", "line 1: the key is"}, /* bits */
        {"\n\n# c\nk/1 " KEY_A_STD "\n", "line 4: a key id may hold only"},
        {"abcdefghijklmnopqrstuvwxyz0123456 " KEY_A_STD, "line 1: the key id is longer"},
        {"k1 " KEY_A_STD "\nk1 " KEY_B_STD "\n", "line 2: duplicate key id \"k1\""},
        {KEY_A_STD "\nk2 " KEY_B_STD "\n", "line 1: a key without an id"},
        {"k2 " KEY_B_STD "\n" KEY_A_STD "\n", "line 2: a key without an id"},
        {KEY_A_STD "\n" KEY_B_STD "\n", "line 2: duplicate key id \"0\""},
        {"", "holds no key"},
        {"# only a comment\n\n", "holds no key"},
        /* Placeholders: 32 zero bytes, 32 bytes of 0xff. */
        {"k1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", "line 1: the key is one byte"},
        {"k1 " KEY_A_STD "\nk2 __________________________________________8\n",
         "line 2: the key is one byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t k[32] = {0};
        mcp_keyring_t *ring = mcp_keyring_new();
        assert_int_equal(mcp_keyring_add(ring, "existing", k), MCP_OK);
        mcp_error_t err = {0};
        print_message("case %zu\n", i);
        assert_int_equal(mcp_keyring_load_text(ring, cases[i].text, &err), MCP_EINVAL);
        assert_non_null(strstr(err.message, cases[i].message));
        /* A message may name the line, never echo the key. */
        assert_null(strstr(err.message, "AAECAwQF"));
        assert_null(strstr(err.message, "79_Pv6"));
        assert_int_equal(mcp_keyring_count(ring), 1);
        mcp_error_clear(&err);
        mcp_keyring_free(ring);
    }
}

static void test_load_text_rejects_ids_already_in_the_ring(void **state)
{
    (void)state;
    uint8_t b[32];
    key_b(b);
    mcp_keyring_t *ring = mcp_keyring_new();
    assert_int_equal(mcp_keyring_add(ring, "k1", b), MCP_OK);
    mcp_error_t err = {0};
    assert_int_equal(mcp_keyring_load_text(ring, "k0 " KEY_A_STD "\nk1 " KEY_A_STD, &err),
                     MCP_EINVAL);
    assert_non_null(strstr(err.message, "line 2: key id \"k1\" is already in the keyring"));
    assert_int_equal(mcp_keyring_count(ring), 1);
    assert_key(ring, "k1", key_b);
    /* Appending new ids to a ring works and keeps the order. */
    assert_int_equal(mcp_keyring_load_text(ring, "k2 " KEY_A_STD "\nk3 " KEY_A_URL, &err),
                     MCP_OK);
    assert_int_equal(mcp_keyring_count(ring), 3);
    assert_string_equal(mcp_keyring_newest(ring)->id, "k3");
    assert_int_equal(mcp_keyring_load_text(NULL, "x", &err), MCP_EINVAL);
    assert_int_equal(mcp_keyring_load_text(ring, NULL, &err), MCP_EINVAL);
    mcp_error_clear(&err);
    mcp_keyring_free(ring);
}

/* ---- files and the environment --------------------------------------------- */

static char *write_temp(const void *bytes, size_t n)
{
    char *path = strdup("/tmp/libmcp-keyring-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, bytes, n), (ssize_t)n);
    close(fd);
    return path;
}

static void test_load_file(void **state)
{
    (void)state;
    const char good[] = "old " KEY_A_STD "\nnew " KEY_B_URL "\n";
    char *path = write_temp(good, sizeof good - 1);
    mcp_keyring_t *ring = mcp_keyring_new();
    mcp_error_t err = {0};
    assert_int_equal(mcp_keyring_load_file(ring, path, &err), MCP_OK);
    assert_int_equal(mcp_keyring_count(ring), 2);
    assert_key(ring, "new", key_b);
    unlink(path);
    free(path);

    assert_int_equal(mcp_keyring_load_file(ring, "/nonexistent/keyring", &err), MCP_EIO);
    assert_non_null(strstr(err.message, "/nonexistent/keyring"));

    const char with_nul[] = "k3 " KEY_A_STD "\n\0k4 " KEY_B_STD "\n";
    path = write_temp(with_nul, sizeof with_nul - 1);
    assert_int_equal(mcp_keyring_load_file(ring, path, &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "NUL"));
    unlink(path);
    free(path);

    const char bad[] = "k3 " KEY_A_STD "\nk4 nope\n";
    path = write_temp(bad, sizeof bad - 1);
    assert_int_equal(mcp_keyring_load_file(ring, path, &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "line 2"));
    unlink(path);
    free(path);

    /* Keys others may read (or write) are refused, as ssh refuses them. */
    const char fine[] = "k5 " KEY_A_STD "\n";
    path = write_temp(fine, sizeof fine - 1);
    static const mode_t open_modes[] = {0644, 0640, 0602, 0610};
    for (size_t i = 0; i < sizeof open_modes / sizeof open_modes[0]; i++) {
        assert_int_equal(chmod(path, open_modes[i]), 0);
        assert_int_equal(mcp_keyring_load_file(ring, path, &err), MCP_EINVAL);
        assert_non_null(strstr(err.message, "chmod 600"));
    }
    assert_int_equal(chmod(path, 0400), 0);
    assert_int_equal(mcp_keyring_load_file(ring, path, &err), MCP_OK);
    assert_int_equal(mcp_keyring_count(ring), 3);
    unlink(path);
    free(path);

    assert_int_equal(mcp_keyring_count(ring), 3);
    mcp_error_clear(&err);
    mcp_keyring_free(ring);
}

static void test_load_env(void **state)
{
    (void)state;
    mcp_keyring_t *ring = mcp_keyring_new();
    mcp_error_t err = {0};
    unsetenv("LIBMCP_TEST_KEYRING");
    assert_int_equal(mcp_keyring_load_env(ring, "LIBMCP_TEST_KEYRING", &err), MCP_ENOTFOUND);
    setenv("LIBMCP_TEST_KEYRING", "", 1);
    assert_int_equal(mcp_keyring_load_env(ring, "LIBMCP_TEST_KEYRING", &err), MCP_ENOTFOUND);
    setenv("LIBMCP_TEST_KEYRING", "bad", 1);
    assert_int_equal(mcp_keyring_load_env(ring, "LIBMCP_TEST_KEYRING", &err), MCP_EINVAL);
    setenv("LIBMCP_TEST_KEYRING", KEY_B_STD, 1);
    assert_int_equal(mcp_keyring_load_env(ring, "LIBMCP_TEST_KEYRING", &err), MCP_OK);
    assert_int_equal(mcp_keyring_count(ring), 1);
    assert_key(ring, "0", key_b);
    unsetenv("LIBMCP_TEST_KEYRING");
    mcp_error_clear(&err);
    mcp_keyring_free(ring);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_id_rules),
        cmocka_unit_test(test_add_rejects_duplicates_and_null),
        cmocka_unit_test(test_newest_key_is_the_last_added),
        cmocka_unit_test(test_generate),
        cmocka_unit_test(test_load_text_accepts_every_encoding),
        cmocka_unit_test(test_load_text_single_bare_key_gets_id_zero),
        cmocka_unit_test(test_load_text_rejects_bad_lines),
        cmocka_unit_test(test_load_text_rejects_ids_already_in_the_ring),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_load_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
