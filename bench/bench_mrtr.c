/*
 * bench_mrtr: what one input round costs the server in cryptography:
 * sealing requestState (AES-256-GCM over the round's payload, bound to the
 * method and the SHA-256 of the canonical params) and opening it again on
 * the retry. The payload and params are the ones the server seals for the
 * benchmark's `confirm` tool.
 *
 *   bench_mrtr [--rounds N]       (default 100000)
 *
 * Output: {"rounds":N,"seal_ns":A,"open_ns":B,"state_bytes":L}
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/mcp.h>
#include <mcp/request_state.h>

#include "bench_util.h"

int main(int argc, char **argv)
{
    long rounds = 100000;
    if (argc == 3 && strcmp(argv[1], "--rounds") == 0)
        rounds = atol(argv[2]);
    if (rounds < 1) {
        fprintf(stderr, "usage: bench_mrtr [--rounds N]\n");
        return 2;
    }
    mcp_error_t err = {0};
    mcp_keyring_t *ring = mcp_keyring_new();
    mcp_codec_t *codec = NULL;
    if (ring && mcp_keyring_generate(ring, "bench") == MCP_OK)
        codec = mcp_codec_aead_new(ring, NULL, &err);
    else
        mcp_keyring_free(ring);
    if (!codec) {
        fprintf(stderr, "bench_mrtr: no codec: %s\n", err.message);
        return 1;
    }
    json_t *params = json_pack(
        "{s:s, s:{}, s:{s:s, s:{s:s, s:s}, s:{}}}", "name", "confirm", "arguments", "_meta",
        "io.modelcontextprotocol/protocolVersion", "2026-07-28",
        "io.modelcontextprotocol/clientInfo", "name", "libmcp-bench", "version", "0.1.0",
        "io.modelcontextprotocol/clientCapabilities");
    json_t *payload = json_pack("{s:i, s:{s:s}}", "r", 1, "k", "confirm", "elicitation/create");
    mcp_state_binding_t binding = {.method = "tools/call", .params = params};

    int failed = 0;
    size_t state_bytes = 0;
    double seal_us = 0, open_us = 0;
    for (long i = 0; i < rounds && !failed; i++) {
        char *state = NULL;
        json_t *opened = NULL;
        double t0 = bench_now_us();
        failed |= mcp_codec_seal(codec, payload, &binding, &state, &err) != MCP_OK;
        double t1 = bench_now_us();
        failed |= !state || mcp_codec_open(codec, state, &binding, &opened, &err) != MCP_OK;
        double t2 = bench_now_us();
        seal_us += t1 - t0;
        open_us += t2 - t1;
        if (state)
            state_bytes = strlen(state);
        json_decref(opened);
        free(state);
    }
    if (failed)
        fprintf(stderr, "bench_mrtr: %s\n", err.message);
    else
        printf("{\"rounds\":%ld,\"seal_ns\":%.0f,\"open_ns\":%.0f,\"state_bytes\":%zu}\n", rounds,
               seal_us * 1e3 / (double)rounds, open_us * 1e3 / (double)rounds, state_bytes);
    mcp_error_clear(&err);
    json_decref(payload);
    json_decref(params);
    mcp_codec_free(codec);
    return failed;
}
