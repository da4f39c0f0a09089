/*
 * The pure protocol core of libmcp: JSON-RPC, eras, _meta, errors, result
 * shaping, negotiation and HTTP header values. No I/O, clocks, threads or
 * global state; every function is thread-safe.
 *
 * Mostly for transport authors and other advanced use: of these headers a
 * server or client program needs only mcp/content.h (content builders)
 * and mcp/errors.h (error codes); the libraries apply the rest
 * themselves.
 */
#ifndef MCP_PROTOCOL_H
#define MCP_PROTOCOL_H

#include "mcp/common.h"
#include "mcp/errors.h"
#include "mcp/jsonrpc.h"
#include "mcp/version.h"
#include "mcp/headers.h"
#include "mcp/header_value.h"
#include "mcp/xmcp_header.h"
#include "mcp/capabilities.h"
#include "mcp/probe.h"
#include "mcp/request.h"
#include "mcp/result.h"
#include "mcp/canonical_json.h"
#include "mcp/legacy.h"
#include "mcp/content.h"

#endif /* MCP_PROTOCOL_H */
