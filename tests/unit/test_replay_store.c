/* Replay stores: the in-memory default (expiry, capacity, the quota of a
 * principal, threads, its identity), the wrapper over custom ops and the
 * reference count that lets codecs share a store. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/request_state.h"
#include "server/replay_store.h"

static void make_id(uint8_t id[16], uint32_t n)
{
    memset(id, 0x5a, 16);
    memcpy(id, &n, sizeof n);
}

static int redeem_as(mcp_replay_store_t *s, const char *principal, uint32_t n, int64_t expires,
                     int64_t now)
{
    uint8_t id[16], who[MCP_PRINCIPAL_HASH_BYTES];
    make_id(id, n);
    mcp_replay_principal_hash(principal, who);
    return mcp_replay_store_redeem(s, id, who, expires, now);
}

/* Id `n`, redeemed by a principal of its own: the quota never applies. */
static int redeem(mcp_replay_store_t *s, uint32_t n, int64_t expires, int64_t now)
{
    uint8_t id[16], who[MCP_PRINCIPAL_HASH_BYTES] = {0};
    make_id(id, n);
    memcpy(who, &n, sizeof n);
    return mcp_replay_store_redeem(s, id, who, expires, now);
}

static void test_second_redeem_is_a_replay(void **state)
{
    (void)state;
    mcp_replay_store_t *s = mcp_replay_store_memory_new(0);
    assert_int_equal(redeem(s, 1, 1000, 0), MCP_OK);
    assert_int_equal(redeem(s, 2, 1000, 0), MCP_OK);
    assert_int_equal(redeem(s, 1, 1000, 10), MCP_EEXIST);
    assert_int_equal(redeem(s, 2, 1000, 999), MCP_EEXIST);
    mcp_replay_store_free(s);
    mcp_replay_store_free(NULL);
}

static void test_ids_are_forgotten_when_they_expire(void **state)
{
    (void)state;
    mcp_replay_store_t *s = mcp_replay_store_memory_new(0);
    assert_int_equal(redeem(s, 1, 1000, 0), MCP_OK);
    assert_int_equal(redeem(s, 1, 1000, 999), MCP_EEXIST);
    /* At its expiry instant the state is dead; the store may forget it. */
    assert_int_equal(redeem(s, 1, 1000, 1000), MCP_OK);
    /* An id that is already dead is not remembered at all. */
    assert_int_equal(redeem(s, 1, 1000, 1000), MCP_OK);
    assert_int_equal(redeem(s, 3, 500, 600), MCP_OK);
    assert_int_equal(redeem(s, 3, 500, 600), MCP_OK);
    mcp_replay_store_free(s);
}

static void test_a_full_store_refuses_rather_than_forgets(void **state)
{
    (void)state;
    mcp_replay_store_t *s = mcp_replay_store_memory_new(3);
    assert_int_equal(redeem(s, 1, 100, 0), MCP_OK);
    assert_int_equal(redeem(s, 2, 300, 0), MCP_OK);
    assert_int_equal(redeem(s, 3, 200, 0), MCP_OK);
    assert_int_equal(redeem(s, 4, 300, 50), MCP_ELIMIT);
    /* The live ids are all still known. */
    assert_int_equal(redeem(s, 1, 100, 50), MCP_EEXIST);
    assert_int_equal(redeem(s, 2, 300, 50), MCP_EEXIST);
    assert_int_equal(redeem(s, 3, 200, 50), MCP_EEXIST);
    /* Once id 1 expires there is room for one more, and only one. */
    assert_int_equal(redeem(s, 4, 300, 100), MCP_OK);
    assert_int_equal(redeem(s, 5, 300, 100), MCP_ELIMIT);
    assert_int_equal(redeem(s, 5, 300, 200), MCP_OK);
    assert_int_equal(redeem(s, 2, 300, 200), MCP_EEXIST);
    mcp_replay_store_free(s);
}

static void test_default_capacity_is_100000(void **state)
{
    (void)state;
    mcp_replay_store_t *s = mcp_replay_store_memory_new(0);
    for (uint32_t i = 0; i < 100000; i++)
        assert_int_equal(redeem(s, i, 1000, 0), MCP_OK);
    assert_int_equal(redeem(s, 100000, 1000, 0), MCP_ELIMIT);
    assert_int_equal(redeem(s, 99999, 1000, 0), MCP_EEXIST);
    assert_int_equal(redeem(s, 100000, 2000, 1000), MCP_OK); /* all others expired */
    mcp_replay_store_free(s);
}

/* One principal cannot take the store from the others: beyond its share it
 * is refused (never by forgetting an id), and regains room as its ids
 * expire. */
static void test_a_principal_holds_at_most_its_share(void **state)
{
    (void)state;
    mcp_replay_store_t *s = mcp_replay_store_memory_new_with(
        &(mcp_replay_store_memory_options_t){.max_entries = 10, .max_per_principal = 3});
    assert_int_equal(redeem_as(s, "mallory", 1, 100, 0), MCP_OK);
    assert_int_equal(redeem_as(s, "mallory", 2, 200, 0), MCP_OK);
    assert_int_equal(redeem_as(s, "mallory", 3, 200, 0), MCP_OK);
    assert_int_equal(redeem_as(s, "mallory", 4, 200, 0), MCP_ELIMIT);
    /* Its replays are still replays, and the others have room. */
    assert_int_equal(redeem_as(s, "mallory", 2, 200, 10), MCP_EEXIST);
    assert_int_equal(redeem_as(s, "alice", 5, 200, 10), MCP_OK);
    assert_int_equal(redeem_as(s, NULL, 6, 200, 10), MCP_OK);
    /* The refused id was not spent: it goes in once id 1 expires. */
    assert_int_equal(redeem_as(s, "mallory", 4, 200, 100), MCP_OK);
    assert_int_equal(redeem_as(s, "mallory", 4, 200, 100), MCP_EEXIST);
    assert_int_equal(redeem_as(s, "mallory", 7, 300, 100), MCP_ELIMIT);
    /* All of them expired: a full share again. */
    for (uint32_t i = 10; i < 13; i++)
        assert_int_equal(redeem_as(s, "mallory", i, 900, 200), MCP_OK);
    assert_int_equal(redeem_as(s, "mallory", 13, 900, 200), MCP_ELIMIT);
    mcp_replay_store_free(s);
}

/* By default a principal may hold a tenth of the store; clients without
 * authentication, who cannot be told apart, are bounded by the store's
 * size alone. */
static void test_default_share_is_a_tenth(void **state)
{
    (void)state;
    mcp_replay_store_t *s = mcp_replay_store_memory_new(100);
    for (uint32_t i = 0; i < 10; i++)
        assert_int_equal(redeem_as(s, "", i, 1000, 0), MCP_OK); /* "" is a principal */
    assert_int_equal(redeem_as(s, "", 10, 1000, 0), MCP_ELIMIT);
    for (uint32_t i = 10; i < 40; i++)
        assert_int_equal(redeem_as(s, NULL, i, 1000, 0), MCP_OK);
    for (uint32_t i = 40; i < 50; i++)
        assert_int_equal(redeem_as(s, "bob", i, 1000, 0), MCP_OK);
    assert_int_equal(redeem_as(s, "bob", 50, 1000, 0), MCP_ELIMIT);
    mcp_replay_store_free(s);

    /* A tiny store still lets everyone have one; a share as large as the
     * store is no quota. */
    s = mcp_replay_store_memory_new(3);
    assert_int_equal(redeem_as(s, "a", 1, 1000, 0), MCP_OK);
    assert_int_equal(redeem_as(s, "a", 2, 1000, 0), MCP_ELIMIT);
    mcp_replay_store_free(s);
    s = mcp_replay_store_memory_new_with(
        &(mcp_replay_store_memory_options_t){.max_entries = 3, .max_per_principal = 3});
    for (uint32_t i = 0; i < 3; i++)
        assert_int_equal(redeem_as(s, NULL, i, 1000, 0), MCP_OK);
    assert_int_equal(redeem_as(s, NULL, 3, 1000, 0), MCP_ELIMIT);
    mcp_replay_store_free(s);
    mcp_replay_store_free(mcp_replay_store_memory_new_with(NULL));
}

/* Many principals come and go: each one's count follows its ids (the
 * owners table grows and empties with them). */
static void test_many_principals(void **state)
{
    (void)state;
    mcp_replay_store_t *s = mcp_replay_store_memory_new_with(
        &(mcp_replay_store_memory_options_t){.max_entries = 4000, .max_per_principal = 2});
    char who[32];
    for (uint32_t i = 0; i < 3000; i++) {
        snprintf(who, sizeof who, "user-%u", i % 1000);
        assert_int_equal(redeem_as(s, who, i, 101 + i % 1000, 0), i < 2000 ? MCP_OK : MCP_ELIMIT);
    }
    /* Users 0..499 had their ids expire: two more each; the rest none. */
    for (uint32_t i = 0; i < 1000; i++) {
        snprintf(who, sizeof who, "user-%u", i);
        int want = i < 500 ? MCP_OK : MCP_ELIMIT;
        assert_int_equal(redeem_as(s, who, 10000 + i, 5000, 600), want);
        assert_int_equal(redeem_as(s, who, 20000 + i, 5000, 600), want);
    }
    mcp_replay_store_free(s);
}

static void test_principal_hash(void **state)
{
    (void)state;
    uint8_t none[MCP_PRINCIPAL_HASH_BYTES], empty[MCP_PRINCIPAL_HASH_BYTES];
    uint8_t a[MCP_PRINCIPAL_HASH_BYTES], a2[MCP_PRINCIPAL_HASH_BYTES], b[MCP_PRINCIPAL_HASH_BYTES];
    mcp_replay_principal_hash(NULL, none);
    mcp_replay_principal_hash("", empty);
    mcp_replay_principal_hash("a", a);
    mcp_replay_principal_hash("a", a2);
    mcp_replay_principal_hash("b", b);
    assert_memory_equal(a, a2, sizeof a);
    assert_memory_not_equal(none, empty, sizeof a);
    assert_memory_not_equal(a, b, sizeof a);
    assert_memory_not_equal(a, empty, sizeof a);
}

/* Many ids with shuffled expiries: exactly those whose time has come are
 * forgotten, whatever the insertion order (the heap and the hash agree). */
static void test_expiry_order_is_independent_of_insertion_order(void **state)
{
    (void)state;
    enum { N = 5000 };
    static int64_t expiry[N];
    for (uint32_t i = 0; i < N; i++)
        expiry[i] = 1 + (int64_t)((uint64_t)i * 2654435761u % N); /* a permutation of 1..N */
    mcp_replay_store_t *s = mcp_replay_store_memory_new(N);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(redeem(s, i, expiry[i], 0), MCP_OK);
    for (int64_t now = 0; now <= N; now += 997) {
        for (uint32_t i = 0; i < N; i++) {
            int want = expiry[i] <= now ? MCP_OK : MCP_EEXIST;
            assert_int_equal(redeem(s, i, expiry[i], now), want);
        }
    }
    mcp_replay_store_free(s);
}

typedef struct race {
    mcp_replay_store_t *store;
    int won;
} race_t;

static void *race_thread(void *arg)
{
    race_t *r = arg;
    for (uint32_t i = 0; i < 2000; i++)
        if (redeem(r->store, i, 1000, 0) == MCP_OK)
            r->won++;
    return NULL;
}

/* Several threads redeeming the same ids: each id is won exactly once. */
static void test_concurrent_redeems_admit_each_id_once(void **state)
{
    (void)state;
    enum { THREADS = 4 };
    mcp_replay_store_t *store = mcp_replay_store_memory_new(0);
    race_t races[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        races[t] = (race_t){store, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, race_thread, &races[t]), 0);
    }
    int total = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        total += races[t].won;
    }
    assert_int_equal(total, 2000);
    mcp_replay_store_free(store);
}

/* ---- custom ops ------------------------------------------------------------- */

typedef struct recorder {
    int calls;
    uint8_t last_id[16];
    int64_t last_expires, last_now;
    int answer;
    int *freed;
} recorder_t;

static int recorder_redeem(void *ctx, const uint8_t id[16], int64_t expires_ms, int64_t now_ms)
{
    recorder_t *r = ctx;
    r->calls++;
    memcpy(r->last_id, id, 16);
    r->last_expires = expires_ms;
    r->last_now = now_ms;
    return r->answer;
}

static void recorder_free(void *ctx)
{
    recorder_t *r = ctx;
    (*r->freed)++;
    free(r);
}

static const mcp_replay_store_ops_t RECORDER_OPS = {recorder_redeem, recorder_free};

static void test_custom_store_gets_the_arguments_and_is_freed(void **state)
{
    (void)state;
    int freed = 0;
    recorder_t *r = calloc(1, sizeof *r);
    r->freed = &freed;
    mcp_replay_store_t *s = mcp_replay_store_new(&RECORDER_OPS, r);
    assert_non_null(s);
    uint8_t id[16], who[MCP_PRINCIPAL_HASH_BYTES] = {0};
    make_id(id, 42);
    assert_int_equal(mcp_replay_store_redeem(s, id, who, 5000, 1234), MCP_OK);
    assert_int_equal(r->calls, 1);
    assert_memory_equal(r->last_id, id, 16);
    assert_int_equal(r->last_expires, 5000);
    assert_int_equal(r->last_now, 1234);
    r->answer = MCP_EEXIST;
    assert_int_equal(mcp_replay_store_redeem(s, id, who, 5000, 1234), MCP_EEXIST);
    r->answer = MCP_EIO;
    assert_int_equal(mcp_replay_store_redeem(s, id, who, 5000, 1234), MCP_EIO);
    /* Only 0 admits a state: a positive answer is a failure. */
    r->answer = 1;
    assert_true(mcp_replay_store_redeem(s, id, who, 5000, 1234) < 0);
    /* It is taken to remember across restarts: no identity to bind to. */
    assert_null(mcp_replay_store_instance(s));
    mcp_replay_store_free(s);
    assert_int_equal(freed, 1);
}

/* A store shared by codecs lives until its last reference goes. */
static void test_references(void **state)
{
    (void)state;
    int freed = 0;
    recorder_t *r = calloc(1, sizeof *r);
    r->freed = &freed;
    mcp_replay_store_t *s = mcp_replay_store_new(&RECORDER_OPS, r);
    assert_ptr_equal(mcp_replay_store_ref(s), s);
    assert_ptr_equal(mcp_replay_store_ref(s), s);
    mcp_replay_store_free(s);
    mcp_replay_store_free(s);
    assert_int_equal(freed, 0);
    uint8_t id[16], who[MCP_PRINCIPAL_HASH_BYTES] = {0};
    make_id(id, 1);
    assert_int_equal(mcp_replay_store_redeem(s, id, who, 5000, 0), MCP_OK);
    mcp_replay_store_free(s);
    assert_int_equal(freed, 1);
    assert_null(mcp_replay_store_ref(NULL));
}

/* Each in-memory store has a random identity of its own, the one its
 * states are bound to. */
static void test_memory_stores_have_their_own_identity(void **state)
{
    (void)state;
    mcp_replay_store_t *a = mcp_replay_store_memory_new(0), *b = mcp_replay_store_memory_new(0);
    const uint8_t *ia = mcp_replay_store_instance(a), *ib = mcp_replay_store_instance(b);
    assert_non_null(ia);
    assert_non_null(ib);
    assert_memory_not_equal(ia, ib, MCP_REPLAY_INSTANCE_BYTES);
    mcp_replay_store_t *again = mcp_replay_store_ref(a);
    assert_ptr_equal(mcp_replay_store_instance(again), ia);
    mcp_replay_store_free(again);
    mcp_replay_store_free(a);
    mcp_replay_store_free(b);
    assert_null(mcp_replay_store_instance(NULL));
}

static void test_custom_store_without_redeem_is_refused(void **state)
{
    (void)state;
    int freed = 0;
    recorder_t *r = calloc(1, sizeof *r);
    r->freed = &freed;
    const mcp_replay_store_ops_t no_redeem = {NULL, recorder_free};
    assert_null(mcp_replay_store_new(&no_redeem, r));
    assert_int_equal(freed, 1); /* the context was owned even on failure */
    assert_null(mcp_replay_store_new(NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_redeem_is_a_replay),
        cmocka_unit_test(test_ids_are_forgotten_when_they_expire),
        cmocka_unit_test(test_a_full_store_refuses_rather_than_forgets),
        cmocka_unit_test(test_default_capacity_is_100000),
        cmocka_unit_test(test_a_principal_holds_at_most_its_share),
        cmocka_unit_test(test_default_share_is_a_tenth),
        cmocka_unit_test(test_many_principals),
        cmocka_unit_test(test_principal_hash),
        cmocka_unit_test(test_expiry_order_is_independent_of_insertion_order),
        cmocka_unit_test(test_concurrent_redeems_admit_each_id_once),
        cmocka_unit_test(test_custom_store_gets_the_arguments_and_is_freed),
        cmocka_unit_test(test_custom_store_without_redeem_is_refused),
        cmocka_unit_test(test_references),
        cmocka_unit_test(test_memory_stores_have_their_own_identity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
