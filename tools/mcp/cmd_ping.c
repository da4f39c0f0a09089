/*
 * mcp TARGET ping: is the server there, and how fast does it answer?
 *
 * ping exists only in the legacy protocol; 2026-07-28 removed it, and
 * mcp_client_ping() sends a modern server server/discover instead (past
 * the cache), the cheapest request it must answer.
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
    const char *method = mcp_client_era(s->client) == MCP_ERA_LEGACY ? "ping" : "server/discover";
    mcp_error_t err = {0};
    double start = now_ms();
    int rc = mcp_client_ping(s->client, &s->request, &err);
    double took = now_ms() - start;
    if (rc != MCP_OK) {
        int status = cli_fail_call(s->opt, method, rc, &err);
        mcp_error_clear(&err);
        return status;
    }
    if (s->opt->json) {
        json_t *doc = json_pack("{s:s, s:f}", "method", method, "milliseconds", took);
        json_out_print(doc);
        json_decref(doc);
        return CLI_EXIT_OK;
    }
    const char *name = json_string_value(json_object_get(mcp_client_server_info(s->client), "name"));
    printf("%s answered %s in %.1f ms\n", name ? name : "the server", method, took);
    return CLI_EXIT_OK;
}
