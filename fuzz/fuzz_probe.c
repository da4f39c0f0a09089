/*
 * Fuzzes era detection (mcp_classify_probe) with whatever a peer could
 * answer, and checks that every verdict is well formed.
 *
 * Input: [flags][content type][status: 2 bytes][body...]
 *   flags bit 0    transport (stdio / HTTP)
 *   flags bits 1-2 event (response, timeout, exited, network error)
 *   flags bit 3    hand the body over as a decoded message, not as bytes
 *   flags bits 4-5 the client's version list
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/probe.h"
#include "mcp/version.h"

static const char *const content_types[] = {
    NULL, "application/json", "text/event-stream", "text/event-stream; charset=utf-8",
    "text/plain", "TEXT/EVENT-STREAM",
};

static const char *const v_default[] = {"2026-07-28", "2025-11-25"};
static const char *const v_future[] = {"2027-01-01", "2026-07-28"};
static const char *const v_legacy[] = {"2025-11-25"};

static const struct {
    const char *const *v;
    size_t n;
} version_lists[] = {
    {v_default, 2},
    {v_future, 2},
    {v_legacy, 1},
    {NULL, 0},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool in_list(const char *version, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (version == list[i])
            return true;
    return false;
}

static void check(mcp_transport_kind_t transport, const mcp_probe_outcome_t *outcome,
                  const mcp_probe_verdict_t *v, const char *const *versions, size_t n)
{
    bool http = transport == MCP_TRANSPORT_HTTP;
    bool has_version = v->kind == MCP_VERDICT_MODERN || v->kind == MCP_VERDICT_MODERN_RETRY;

    if (v->kind > MCP_VERDICT_ERROR || !v->reason || !mcp_verdict_name(v->kind))
        abort();
    if (has_version != (v->version != NULL))
        abort();
    if (v->version && (!in_list(v->version, versions, n) ||
                       mcp_version_era(v->version) != MCP_ERA_MODERN))
        abort();
    if ((v->kind == MCP_VERDICT_MODERN) != (v->discover_result != NULL))
        abort();
    if (v->discover_result && !mcp_discover_result_valid(v->discover_result))
        abort();
    if ((v->kind == MCP_VERDICT_ERROR) != (v->error_kind != MCP_PROBE_ERR_NONE))
        abort();
    /* Transport-specific verdicts stay on their transport. */
    if (v->kind == MCP_VERDICT_AUTHORIZE &&
        (!http || (outcome->http_status != 401 && outcome->http_status != 403)))
        abort();
    if (v->kind == MCP_VERDICT_RECONNECT_LEGACY && http)
        abort();
    if (v->kind == MCP_VERDICT_RETRY && !http)
        abort();
    if (v->error_kind == MCP_PROBE_ERR_HTTP_STATUS && !http)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint8_t flags = data[0];
    mcp_transport_kind_t transport = (flags & 1) ? MCP_TRANSPORT_HTTP : MCP_TRANSPORT_STDIO;
    mcp_probe_outcome_t outcome = {
        .event = (mcp_probe_event_t)((flags >> 1) & 3),
        .content_type = content_types[data[1] % COUNT(content_types)],
        .http_status = ((int)data[2] << 8 | data[3]) % 700,
        .body = (const char *)data + 4,
        .body_len = size - 4,
    };
    json_t *message = NULL;
    if (flags & 8) {
        message = json_loadb(outcome.body, outcome.body_len, JSON_DECODE_ANY, NULL);
        outcome.message = message;
    }
    const char *const *versions = version_lists[(flags >> 4) & 3].v;
    size_t n = version_lists[(flags >> 4) & 3].n;

    mcp_probe_verdict_t verdict;
    mcp_classify_probe(transport, &outcome, versions, n, &verdict);
    check(transport, &outcome, &verdict, versions, n);
    json_decref(message);
    mcp_probe_verdict_clear(&verdict);
    return 0;
}
