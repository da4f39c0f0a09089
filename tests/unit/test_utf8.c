/*
 * UTF-8 well-formedness (protocol/utf8.h): RFC 3629's boundaries -- the
 * first and last code point of each length, overlong forms, surrogates,
 * past U+10FFFF, sequences cut short or broken -- in every position of an
 * ASCII run, so that the eight-bytes-at-a-time path meets each of them at
 * every alignment; and the content builders that use it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/content.h"
#include "protocol/utf8.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
    const char *bytes;
    size_t len;
    bool valid;
    const char *what;
} sample_t;

#define S(lit, ok, what) {lit, sizeof(lit) - 1, ok, what}

static const sample_t SAMPLES[] = {
    S("", true, "empty"),
    S("plain ascii", true, "ASCII"),
    S("a\0b", true, "U+0000 inside"),
    S("\x7f", true, "U+007F"),
    S("\xc2\x80", true, "U+0080, the first two-byte"),
    S("\xdf\xbf", true, "U+07FF, the last two-byte"),
    S("\xe0\xa0\x80", true, "U+0800, the first three-byte"),
    S("\xed\x9f\xbf", true, "U+D7FF, before the surrogates"),
    S("\xee\x80\x80", true, "U+E000, after the surrogates"),
    S("\xef\xbf\xbf", true, "U+FFFF"),
    S("\xf0\x90\x80\x80", true, "U+10000, the first four-byte"),
    S("\xf4\x8f\xbf\xbf", true, "U+10FFFF, the last"),
    S("h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80", true, "mixed"),
    S("\x80", false, "a lone continuation byte"),
    S("\xbf", false, "another"),
    S("\xc0\x80", false, "overlong U+0000"),
    S("\xc1\xbf", false, "overlong U+007F"),
    S("\xe0\x9f\xbf", false, "overlong U+07FF"),
    S("\xf0\x8f\xbf\xbf", false, "overlong U+FFFF"),
    S("\xed\xa0\x80", false, "U+D800, a surrogate"),
    S("\xed\xbf\xbf", false, "U+DFFF, a surrogate"),
    S("\xf4\x90\x80\x80", false, "U+110000"),
    S("\xf5\x80\x80\x80", false, "lead 0xF5"),
    S("\xff", false, "0xFF"),
    S("\xc2", false, "two-byte cut short"),
    S("\xe2\x82", false, "three-byte cut short"),
    S("\xf0\x9f\x98", false, "four-byte cut short"),
    S("\xc2\x41", false, "a two-byte lead before ASCII"),
    S("\xe2\x28\xa1", false, "a broken second byte"),
    S("\xe2\x82\x28", false, "a broken third byte"),
    S("\xf0\x9f\x98\x28", false, "a broken fourth byte"),
};

/* Each sample alone, then inside ASCII at every offset from 0 to 17 and
 * followed by 0 to 17 ASCII bytes: the verdict is the sample's. */
static void test_samples_at_every_alignment(void **state)
{
    (void)state;
    char buf[64];
    for (size_t i = 0; i < COUNT(SAMPLES); i++) {
        const sample_t *s = &SAMPLES[i];
        if (mcp_utf8_valid(s->bytes, s->len) != s->valid)
            fail_msg("%s: expected %s", s->what, s->valid ? "valid" : "invalid");
        for (size_t before = 0; before < 18; before++) {
            for (size_t after = 0; after < 18; after++) {
                memset(buf, 'x', sizeof buf);
                memcpy(buf + before, s->bytes, s->len);
                if (mcp_utf8_valid(buf, before + s->len + after) != s->valid)
                    fail_msg("%s after %zu and before %zu ASCII bytes: expected %s", s->what,
                             before, after, s->valid ? "valid" : "invalid");
            }
        }
    }
}

/* A sequence is judged on the bytes given, not on what follows them. */
static void test_length_bounds_the_check(void **state)
{
    (void)state;
    const char *euro = "\xe2\x82\xac";
    assert_true(mcp_utf8_valid(euro, 3));
    assert_false(mcp_utf8_valid(euro, 2));
    assert_true(mcp_utf8_valid(euro, 0));
    const unsigned char *p = (const unsigned char *)euro;
    assert_int_equal(mcp_utf8_sequence_length(p, p + 3), 3);
    assert_int_equal(mcp_utf8_sequence_length(p, p + 2), 0);
}

/* The builders refuse text that is not UTF-8 (NULL), in every member that
 * takes the caller's text, and keep what is. */
static void test_builders_check_text(void **state)
{
    (void)state;
    const char *bad = "caf\xe9"; /* Latin-1, not UTF-8 */
    const char *good = "caf\xc3\xa9";
    json_t *v = mcp_content_text(good);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "text")), good);
    assert_string_equal(json_string_value(json_object_get(v, "type")), "text");
    json_decref(v);
    assert_null(mcp_content_text(bad));
    assert_null(mcp_content_text(NULL));
    assert_null(mcp_resource_text("file:///a", "text/plain", bad));
    assert_null(mcp_resource_text(bad, "text/plain", good));
    assert_null(mcp_resource_text("file:///a", bad, good));
    assert_null(mcp_content_resource_link(bad, "name", NULL));
    assert_null(mcp_content_resource_link("file:///a", bad, NULL));
    assert_null(mcp_resource_blob(bad, NULL, "x", 1));
    assert_null(mcp_content_image("x", 1, bad));
    assert_null(mcp_content_embedded_text("file:///a", NULL, bad));

    v = mcp_resource_text("file:///a", "text/plain", good);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "text")), good);
    assert_string_equal(json_string_value(json_object_get(v, "mimeType")), "text/plain");
    json_decref(v);
    v = mcp_content_embedded_blob("file:///b", "application/octet-stream", "\xff\x00", 2);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "type")), "resource");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(v, "resource"), "blob")), "/wA=");
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_at_every_alignment),
        cmocka_unit_test(test_length_bounds_the_check),
        cmocka_unit_test(test_builders_check_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
