/*
 * The codec wrapper's layout, shared by codec.c and the AES-256-GCM codec,
 * which recognises its own ops to open a state without spending it yet
 * (see mcp_codec_open_deferred in aead_codec.h).
 */
#ifndef MCP_SERVER_CODEC_INTERNAL_H
#define MCP_SERVER_CODEC_INTERNAL_H

#include "mcp/request_state.h"

struct mcp_codec {
    mcp_codec_ops_t ops;
    void *ctx;
};

#endif /* MCP_SERVER_CODEC_INTERNAL_H */
