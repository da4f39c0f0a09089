/* libmcp umbrella header: include this one. */
#ifndef MCP_MCP_H
#define MCP_MCP_H

#include "mcp/protocol.h"

#endif /* MCP_MCP_H */
