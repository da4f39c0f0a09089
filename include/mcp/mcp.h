/* libmcp umbrella header: include this one. */
#ifndef MCP_MCP_H
#define MCP_MCP_H

#include "mcp/protocol.h"
#include "mcp/request_state.h"
#include "mcp/server.h"
#include "mcp/server_core.h"
#include "mcp/server_http.h"
#include "mcp/client.h"
#include "mcp/host.h"
#include "mcp/oauth.h"

#endif /* MCP_MCP_H */
