/*
 * mcp TARGET ping: is the server there, and how fast does it answer?
 *
 * ping exists only in the legacy protocol; 2026-07-28 removed it. A
 * modern server is asked server/discover instead (bypassing the cache),
 * the cheapest request it must answer.
 */
#include <stdio.h>
#include <time.h>

#include "cli.h"
#include "failure.h"
#include "json_out.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

int cmd_ping(cli_session_t *s)
{
    bool legacy = mcp_client_era(s->client) == MCP_ERA_LEGACY;
    const char *method = legacy ? "ping" : "server/discover";
    mcp_request_options_t opts = s->request;
    opts.bypass_cache = true;
    json_t *result = NULL;
    mcp_error_t err = {0};
    double start = now_ms();
    int rc = legacy ? mcp_client_request(s->client, "ping", NULL, &opts, &result, &err)
                    : mcp_client_discover(s->client, &opts, &result, &err);
    double took = now_ms() - start;
    json_decref(result);
    if (rc != MCP_OK) {
        int status = cli_fail_call(s->opt, method, rc, &err);
        mcp_error_clear(&err);
        return status;
    }
    if (s->opt->json) {
        json_t *doc = json_pack("{s:s, s:f}", "method", method, "milliseconds", took);
        json_out_print(doc);
        json_decref(doc);
    } else {
        printf("%s answered %s in %.1f ms\n",
               json_string_value(json_object_get(mcp_client_server_info(s->client), "name"))
                   ? json_string_value(json_object_get(mcp_client_server_info(s->client), "name"))
                   : "the server",
               method, took);
    }
    return CLI_EXIT_OK;
}
