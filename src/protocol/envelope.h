/*
 * The members of a request's _meta that libmcp reads, found in one pass
 * (internal to libmcp).
 *
 * A lookup in a jansson object hashes its key, and the envelope's keys are
 * 30-odd bytes ("io.modelcontextprotocol/clientCapabilities"): the ladder
 * and the server used to look each one up several times per request. One
 * walk over _meta (a handful of members) finds them all. Object keys are
 * unique (the reader rejects duplicates), so the walk finds what lookups
 * would.
 */
#ifndef MCP_PROTOCOL_ENVELOPE_H
#define MCP_PROTOCOL_ENVELOPE_H

#include <jansson.h>

typedef struct mcp_envelope {
    const json_t *meta;                /* params._meta, whatever its type; NULL when absent */
    const json_t *protocol_version;    /* each member, whatever its type, or NULL */
    const json_t *client_capabilities;
    const json_t *client_info;
    const json_t *log_level;
    const json_t *progress_token;
} mcp_envelope_t;

/* Fills *out from `params` (a request's params, or NULL); the pointers
 * borrow from it. Pure and thread-safe. */
void mcp_envelope_read(const json_t *params, mcp_envelope_t *out);

#endif /* MCP_PROTOCOL_ENVELOPE_H */
