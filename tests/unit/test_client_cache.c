/* The client's result cache: keys, freshness, scopes, invalidation, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/cache.h"

static json_t *result_with(const char *ttl_json, const char *scope)
{
    json_t *r = json_pack("{s:s, s:[]}", "resultType", "complete", "tools");
    if (ttl_json)
        json_object_set_new(r, "ttlMs", json_loads(ttl_json, JSON_DECODE_ANY, NULL));
    if (scope)
        json_object_set_new(r, "cacheScope", json_string(scope));
    return r;
}

static void test_key(void **state)
{
    json_t *a = json_pack("{s:s, s:{s:s}}", "cursor", "c1", "_meta", "x", "y");
    json_t *b = json_pack("{s:s}", "cursor", "c1");
    json_t *c = json_pack("{s:s}", "cursor", "c2");
    json_t *d = json_pack("{s:s, s:s}", "requestState", "s", "cursor", "c1");
    char *ka = client_cache_key("tools/list", a), *kb = client_cache_key("tools/list", b);
    char *kc = client_cache_key("tools/list", c), *kd = client_cache_key("tools/list", d);
    char *ke = client_cache_key("prompts/list", b), *kn = client_cache_key("tools/list", NULL);
    json_t *empty = json_object();
    char *k0 = client_cache_key("tools/list", empty);
    json_decref(empty);
    assert_string_equal(ka, kb);   /* _meta does not affect the result */
    assert_string_equal(kb, kd);   /* nor MRTR members */
    assert_string_not_equal(kb, kc);
    assert_string_not_equal(kb, ke);
    assert_string_equal(kn, "tools/list\n{}");
    assert_string_equal(kb, "tools/list\n{\"cursor\":\"c1\"}");
    assert_string_equal(k0, kn); /* no params and {} are the same request */
    free(k0);
    /* Member order is irrelevant (canonical JSON). */
    json_t *x = json_loads("{\"uri\":\"u\",\"z\":1}", 0, NULL);
    json_t *y = json_loads("{\"z\":1,\"uri\":\"u\"}", 0, NULL);
    char *kx = client_cache_key("resources/read", x), *ky = client_cache_key("resources/read", y);
    assert_string_equal(kx, ky);
    free(ka), free(kb), free(kc), free(kd), free(ke), free(kn), free(kx), free(ky);
    json_decref(a), json_decref(b), json_decref(c), json_decref(d), json_decref(x),
        json_decref(y);
}

static void test_ttl_table(void **state)
{
    static const struct {
        const char *ttl;
        int64_t expect;
    } cases[] = {{NULL, 0}, {"0", 0}, {"-5", 0}, {"1.5", 0}, {"\"10\"", 0},
                 {"null", 0}, {"1", 1}, {"60000", 60000}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = result_with(cases[i].ttl, "private");
        assert_int_equal(client_cache_ttl(r), cases[i].expect);
        json_decref(r);
    }
}

static void test_freshness(void **state)
{
    client_cache_t *c = client_cache_new(8);
    json_t *r = result_with("100", "private");
    client_cache_put(c, "k", "tools/list", NULL, 1, r, 1000);
    json_t *hit = client_cache_get(c, "k", 1, 1099);
    assert_non_null(hit);
    assert_true(json_equal(hit, r));
    assert_ptr_not_equal(hit, r); /* a copy the caller may change */
    json_decref(hit);
    assert_null(client_cache_get(c, "k", 1, 1100)); /* now == received + ttl: stale */
    assert_null(client_cache_get(c, "other", 1, 1000));
    json_decref(r);

    /* ttl 0, absent or negative: never stored. */
    const char *zero[] = {"0", NULL, "-1"};
    for (size_t i = 0; i < 3; i++) {
        json_t *z = result_with(zero[i], "public");
        client_cache_put(c, "z", "tools/list", NULL, 1, z, 1000);
        assert_null(client_cache_get(c, "z", 1, 1000));
        json_decref(z);
    }
    client_cache_free(c);
}

static void test_scopes(void **state)
{
    client_cache_t *c = client_cache_new(8);
    json_t *priv = result_with("1000", "private"), *pub = result_with("1000", "public");
    json_t *none = result_with("1000", NULL);
    client_cache_put(c, "p", "tools/list", NULL, 1, priv, 0);
    client_cache_put(c, "q", "tools/list", NULL, 1, pub, 0);
    client_cache_put(c, "n", "tools/list", NULL, 1, none, 0);
    json_t *h;
    assert_non_null(h = client_cache_get(c, "p", 1, 1)), json_decref(h);
    assert_null(client_cache_get(c, "p", 2, 1));  /* private: another auth context */
    assert_non_null(h = client_cache_get(c, "q", 2, 1)), json_decref(h); /* public: anyone */
    assert_null(client_cache_get(c, "n", 2, 1));  /* no scope counts as private */
    /* A newer entry replaces the one in the same slot. */
    client_cache_put(c, "p", "tools/list", NULL, 1, pub, 5);
    assert_int_equal(client_cache_count(c), 4);   /* private p (ctx 1) and public p */
    /* The credentials changed to context 2: context 1's private entries
     * go, public ones stay. */
    client_cache_put(c, "p2", "tools/list", NULL, 2, priv, 5);
    client_cache_drop_private(c, 2);
    assert_int_equal(client_cache_count(c), 3);   /* public q and p, private p2 */
    assert_non_null(h = client_cache_get(c, "p", 2, 6)), json_decref(h); /* the public p */
    assert_non_null(h = client_cache_get(c, "p2", 2, 6)), json_decref(h);
    assert_null(client_cache_get(c, "n", 1, 6));
    json_decref(priv), json_decref(pub), json_decref(none);
    client_cache_free(c);
}

static void test_invalidation(void **state)
{
    client_cache_t *c = client_cache_new(16);
    json_t *r = result_with("1000", "private");
    client_cache_put(c, "t1", "tools/list", NULL, 1, r, 0);
    client_cache_put(c, "t2", "tools/list", NULL, 1, r, 0);
    client_cache_put(c, "p1", "prompts/list", NULL, 1, r, 0);
    client_cache_put(c, "r1", "resources/read", "file:///a", 1, r, 0);
    client_cache_put(c, "r2", "resources/read", "file:///a/b", 1, r, 0);
    client_cache_put(c, "r3", "resources/read", "file:///ab", 1, r, 0);
    client_cache_invalidate_method(c, "tools/list");
    assert_int_equal(client_cache_count(c), 4);
    json_t *h;
    assert_non_null(h = client_cache_get(c, "p1", 1, 1)), json_decref(h);
    /* An update of file:///a/b covers its parent, not a sibling prefix. */
    client_cache_invalidate_uri(c, "file:///a/b");
    assert_null(client_cache_get(c, "r1", 1, 1));
    assert_null(client_cache_get(c, "r2", 1, 1));
    assert_non_null(h = client_cache_get(c, "r3", 1, 1)), json_decref(h);
    json_decref(r);
    client_cache_free(c);
}

static void test_bounded(void **state)
{
    client_cache_t *c = client_cache_new(3);
    json_t *r = result_with("1000", "private"), *short_lived = result_with("10", "private");
    client_cache_put(c, "a", "tools/list", NULL, 1, short_lived, 0);
    client_cache_put(c, "b", "tools/list", NULL, 1, r, 0);
    client_cache_put(c, "c", "tools/list", NULL, 1, r, 0);
    client_cache_put(c, "d", "tools/list", NULL, 1, r, 20); /* evicts expired a */
    json_t *h;
    assert_non_null(h = client_cache_get(c, "b", 1, 21)), json_decref(h);
    client_cache_put(c, "e", "tools/list", NULL, 1, r, 21); /* evicts the oldest, b */
    assert_null(client_cache_get(c, "b", 1, 22));
    assert_non_null(h = client_cache_get(c, "c", 1, 22)), json_decref(h);
    assert_int_equal(client_cache_count(c), 3);
    json_decref(r), json_decref(short_lived);
    client_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),        cmocka_unit_test(test_ttl_table),
        cmocka_unit_test(test_freshness),  cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_invalidation), cmocka_unit_test(test_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
