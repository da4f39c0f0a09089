/*
 * bench_client: drives a server with the libmcp client and measures round
 * trips. One JSON object on stdout, the numbers the runner tabulates.
 *
 *   bench_client [options] --http URL
 *   bench_client [options] -- COMMAND [ARGS...]      (a stdio server)
 *
 *   --calls N        measured calls (default 10000)
 *   --warmup N       calls before measuring (default N/10, at most 1000)
 *   --inflight K     calls in flight at once, from K threads (default 1)
 *   --op OP          echo (tools/call echo, default), echo_inline (the
 *                    same tool registered run_inline), confirm (tools/call
 *                    of a tool that asks for input first: two rounds),
 *                    list (tools/list), read (resources/read bench://big)
 *   --era E          modern (default) or auto
 *   --connects R     instead of calls: R times connect + first call +
 *                    close, timed (a stdio connect includes starting the
 *                    server process)
 *   --spin-us U      the client's spin_us option (default 0: libmcp's
 *                    default active wait; -1: none)
 *
 * Output: {"calls":N,"seconds":S,"calls_per_s":X,"p50_us":A,"p99_us":B,
 * "client_rss_kb":R} or, with --connects, {"connects":R,"p50_us":A,
 * "p99_us":B,"mean_us":M}. Exits non-zero when any call fails.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mcp/client.h>
#include <mcp/mcp.h>

#include "bench_util.h"

typedef enum op { OP_ECHO, OP_ECHO_INLINE, OP_CONFIRM, OP_LIST, OP_READ } op_t;

typedef struct config {
    long calls, warmup, inflight, connects;
    int spin_us;              /* mcp_client_options_t.spin_us */
    op_t op;
    mcp_client_era_t era;
    const char *url;          /* HTTP, or NULL */
    const char *const *argv;  /* stdio server command, or NULL */
} config_t;

/* The client says yes to every confirmation. */
static int accept_all(void *user, const json_t *params, json_t **result_out)
{
    *result_out = json_pack("{s:s, s:{s:b}}", "action", "accept", "content", "confirm", 1);
    return *result_out ? 0 : -1;
}

static mcp_client_t *connect_client(const config_t *cfg, mcp_error_t *err)
{
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){
        .name = "libmcp-bench", .version = MCP_LIB_VERSION, .era = cfg->era,
        .elicit = accept_all, .spin_us = cfg->spin_us}, err);
    if (!c)
        return NULL;
    int rc = cfg->url ? mcp_client_connect_http(c, &(mcp_http_target_t){.url = cfg->url}, err)
                      : mcp_client_connect_stdio(c, &(mcp_stdio_target_t){.argv = cfg->argv},
                                                 err);
    if (rc != MCP_OK) {
        mcp_client_free(c);
        return NULL;
    }
    return c;
}

/* One operation; the result is checked just enough to catch a wrong one. */
static int run_op(mcp_client_t *c, op_t op, json_t *echo_args, mcp_error_t *err)
{
    static const mcp_request_options_t fresh = {.bypass_cache = true};
    json_t *result = NULL;
    int rc;
    switch (op) {
    case OP_ECHO:
        rc = mcp_client_call_tool(c, "echo", echo_args, NULL, &result, err);
        break;
    case OP_ECHO_INLINE:
        rc = mcp_client_call_tool(c, "echo_inline", echo_args, NULL, &result, err);
        break;
    case OP_CONFIRM:
        rc = mcp_client_call_tool(c, "confirm", NULL, NULL, &result, err);
        break;
    case OP_LIST:
        rc = mcp_client_list_tools(c, NULL, &fresh, &result, err);
        break;
    default:
        rc = mcp_client_read_resource(c, "bench://big", &fresh, &result, err);
        break;
    }
    if (rc == MCP_OK && json_is_true(json_object_get(result, "isError")))
        rc = MCP_EPROTO;
    json_decref(result);
    return rc;
}

typedef struct worker {
    pthread_t thread;
    const config_t *cfg;
    mcp_client_t *client;
    long first, count;     /* this worker's slice of `lat` */
    double *lat;           /* microseconds per call */
    atomic_int *failures;
} worker_t;

static void *work(void *arg)
{
    worker_t *w = arg;
    json_t *args = json_pack("{s:s}", "text", "hello");
    for (long i = 0; i < w->count; i++) {
        mcp_error_t err = {0};
        double t0 = bench_now_us();
        if (run_op(w->client, w->cfg->op, args, &err) != MCP_OK) {
            if (atomic_fetch_add(w->failures, 1) == 0)
                fprintf(stderr, "bench_client: call failed: %s\n",
                        err.message);
            mcp_error_clear(&err);
        }
        w->lat[w->first + i] = bench_now_us() - t0;
    }
    json_decref(args);
    return NULL;
}

/* Runs `calls` operations from `inflight` threads; latencies in lat. */
static double run_batch(const config_t *cfg, mcp_client_t *c, long calls, double *lat,
                        atomic_int *failures)
{
    long k = cfg->inflight;
    worker_t *w = calloc((size_t)k, sizeof *w);
    double t0 = bench_now_us();
    for (long i = 0; i < k; i++) {
        w[i] = (worker_t){.cfg = cfg, .client = c, .lat = lat, .failures = failures,
                          .first = calls * i / k, .count = calls * (i + 1) / k - calls * i / k};
        pthread_create(&w[i].thread, NULL, work, &w[i]);
    }
    for (long i = 0; i < k; i++)
        pthread_join(w[i].thread, NULL);
    double seconds = (bench_now_us() - t0) / 1e6;
    free(w);
    return seconds;
}

static int bench_calls(const config_t *cfg)
{
    mcp_error_t err = {0};
    mcp_client_t *c = connect_client(cfg, &err);
    if (!c) {
        fprintf(stderr, "bench_client: cannot connect: %s\n", err.message);
        mcp_error_clear(&err);
        return 1;
    }
    atomic_int failures;
    atomic_init(&failures, 0);
    double *lat = calloc((size_t)(cfg->calls > cfg->warmup ? cfg->calls : cfg->warmup) + 1,
                         sizeof *lat);
    if (cfg->warmup > 0)
        run_batch(cfg, c, cfg->warmup, lat, &failures);
    double seconds = run_batch(cfg, c, cfg->calls, lat, &failures);
    long rss = bench_rss_kb(0);
    bench_sort(lat, (size_t)cfg->calls);
    printf("{\"calls\":%ld,\"seconds\":%.4f,\"calls_per_s\":%.1f,\"p50_us\":%.1f,"
           "\"p99_us\":%.1f,\"client_rss_kb\":%ld}\n",
           cfg->calls, seconds, cfg->calls / seconds, bench_percentile(lat, cfg->calls, 50),
           bench_percentile(lat, cfg->calls, 99), rss);
    free(lat);
    mcp_client_free(c);
    return atomic_load(&failures) ? 1 : 0;
}

static int bench_connects(const config_t *cfg)
{
    double *lat = calloc((size_t)cfg->connects + 1, sizeof *lat);
    json_t *args = json_pack("{s:s}", "text", "hello");
    int failed = 0;
    double total = 0;
    for (long i = 0; i < cfg->connects && !failed; i++) {
        mcp_error_t err = {0};
        double t0 = bench_now_us();
        mcp_client_t *c = connect_client(cfg, &err);
        if (!c || run_op(c, OP_ECHO, args, &err) != MCP_OK) {
            fprintf(stderr, "bench_client: connect failed: %s\n",
                    err.message);
            failed = 1;
        }
        lat[i] = bench_now_us() - t0;
        total += lat[i];
        mcp_client_free(c); /* not timed: stopping a stdio server waits for it */
        mcp_error_clear(&err);
    }
    bench_sort(lat, (size_t)cfg->connects);
    printf("{\"connects\":%ld,\"p50_us\":%.1f,\"p99_us\":%.1f,\"mean_us\":%.1f}\n",
           cfg->connects, bench_percentile(lat, cfg->connects, 50),
           bench_percentile(lat, cfg->connects, 99), total / (double)cfg->connects);
    json_decref(args);
    free(lat);
    return failed;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_client [--calls N] [--warmup N] [--inflight K] "
                    "[--op echo|echo_inline|confirm|list|read] [--era modern|auto] [--connects R] "
                    "[--spin-us U] "
                    "(--http URL | -- COMMAND [ARGS...])\n");
    return 2;
}

int main(int argc, char **argv)
{
    config_t cfg = {.calls = 10000, .warmup = -1, .inflight = 1, .op = OP_ECHO,
                    .era = MCP_CLIENT_ERA_MODERN};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            cfg.argv = (const char *const *)argv + i + 1;
            break;
        }
        if (!v)
            return usage();
        i++;
        if (strcmp(a, "--calls") == 0)
            cfg.calls = atol(v);
        else if (strcmp(a, "--warmup") == 0)
            cfg.warmup = atol(v);
        else if (strcmp(a, "--inflight") == 0)
            cfg.inflight = atol(v);
        else if (strcmp(a, "--connects") == 0)
            cfg.connects = atol(v);
        else if (strcmp(a, "--spin-us") == 0)
            cfg.spin_us = atoi(v);
        else if (strcmp(a, "--http") == 0)
            cfg.url = v;
        else if (strcmp(a, "--era") == 0 && strcmp(v, "auto") == 0)
            cfg.era = MCP_CLIENT_ERA_AUTO;
        else if (strcmp(a, "--era") == 0 && strcmp(v, "modern") == 0)
            cfg.era = MCP_CLIENT_ERA_MODERN;
        else if (strcmp(a, "--op") == 0 && strcmp(v, "echo") == 0)
            cfg.op = OP_ECHO;
        else if (strcmp(a, "--op") == 0 && strcmp(v, "echo_inline") == 0)
            cfg.op = OP_ECHO_INLINE;
        else if (strcmp(a, "--op") == 0 && strcmp(v, "confirm") == 0)
            cfg.op = OP_CONFIRM;
        else if (strcmp(a, "--op") == 0 && strcmp(v, "list") == 0)
            cfg.op = OP_LIST;
        else if (strcmp(a, "--op") == 0 && strcmp(v, "read") == 0)
            cfg.op = OP_READ;
        else
            return usage();
    }
    if ((!cfg.url) == (!cfg.argv || !cfg.argv[0]) || cfg.calls < 1 || cfg.inflight < 1)
        return usage();
    if (cfg.warmup < 0)
        cfg.warmup = cfg.calls / 10 < 1000 ? cfg.calls / 10 : 1000;
    return cfg.connects > 0 ? bench_connects(&cfg) : bench_calls(&cfg);
}
