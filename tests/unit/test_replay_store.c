/* Replay stores: the in-memory default (expiry, capacity, threads) and the
 * wrapper over custom ops. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

static int redeem(mcp_replay_store_t *s, uint32_t n, int64_t expires, int64_t now)
{
    uint8_t id[16];
    make_id(id, n);
    return mcp_replay_store_redeem(s, id, expires, now);
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
    uint8_t id[16];
    make_id(id, 42);
    assert_int_equal(mcp_replay_store_redeem(s, id, 5000, 1234), MCP_OK);
    assert_int_equal(r->calls, 1);
    assert_memory_equal(r->last_id, id, 16);
    assert_int_equal(r->last_expires, 5000);
    assert_int_equal(r->last_now, 1234);
    r->answer = MCP_EEXIST;
    assert_int_equal(mcp_replay_store_redeem(s, id, 5000, 1234), MCP_EEXIST);
    r->answer = MCP_EIO;
    assert_int_equal(mcp_replay_store_redeem(s, id, 5000, 1234), MCP_EIO);
    /* Only 0 admits a state: a positive answer is a failure. */
    r->answer = 1;
    assert_true(mcp_replay_store_redeem(s, id, 5000, 1234) < 0);
    mcp_replay_store_free(s);
    assert_int_equal(freed, 1);
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
        cmocka_unit_test(test_expiry_order_is_independent_of_insertion_order),
        cmocka_unit_test(test_concurrent_redeems_admit_each_id_once),
        cmocka_unit_test(test_custom_store_gets_the_arguments_and_is_freed),
        cmocka_unit_test(test_custom_store_without_redeem_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
