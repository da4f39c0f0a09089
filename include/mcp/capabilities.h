/*
 * Client capabilities (the ClientCapabilities type of the 2026-07-28
 * schema; Basic > Patterns > Multi Round-Trip Requests for what a server
 * may ask of a client that declared them).
 *
 * A client advertises only what it can actually do: the builder derives the
 * ClientCapabilities object from which handler callbacks the user set. The
 * server side uses mcp_client_caps_allow() to decide whether it may send an
 * input request (MRTR) to a client that declared a given set.
 *
 * All functions are pure and thread-safe.
 *
 * For transport authors and other advanced use: a program written against
 * mcp/server.h, mcp/client.h or mcp/host.h never needs to call these
 * functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_CAPABILITIES_H
#define MCP_CAPABILITIES_H

#include "mcp/common.h"
#include "mcp/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a client can do, as set by its callbacks and options. */
typedef struct mcp_client_caps_spec {
    mcp_era_t era;          /* MCP_ERA_MODERN (default when UNKNOWN) or MCP_ERA_LEGACY */
    bool sampling;          /* a sampling callback is set */
    bool sampling_tools;    /* ... and it handles `tools` / `toolChoice` */
    bool sampling_context;  /* ... and it honours includeContext (deprecated) */
    bool elicitation_form;  /* an elicitation callback handles form mode */
    bool elicitation_url;   /* an elicitation callback handles url mode */
    bool roots;             /* a roots callback is set */
    bool roots_list_changed;/* legacy only: will send notifications/roots/list_changed */
    const json_t *extensions; /* modern only: {"<extension id>": {...}} (borrowed), or NULL */
} mcp_client_caps_spec_t;

/*
 * Builds the ClientCapabilities object for `spec` (new reference, NULL on
 * allocation failure). Nothing set gives {}. Keys appear only for callbacks
 * that are set: "sampling" ({"tools":{}}, {"context":{}} when flagged),
 * "elicitation" ({"form":{}} and/or {"url":{}}), "roots" ({} on the modern
 * era; {"listChanged":true} on the legacy era when roots_list_changed),
 * "extensions" (modern only, when a non-empty object; deep-copied). The
 * "tasks" capability of the legacy era is never advertised. A NULL spec
 * counts as nothing set; sub-flags (sampling_tools, roots_list_changed, ...)
 * without their main flag are ignored.
 */
MCP_API json_t *mcp_client_capabilities_build(const mcp_client_caps_spec_t *spec);

/*
 * Server side: may an input request (`method` with `params`, both borrowed)
 * be sent to a client whose declared capabilities are `caps` (borrowed;
 * NULL or a non-object means {})?
 *
 *   elicitation/create : caps.elicitation present; mode "url" needs
 *                        elicitation.url; form mode (mode absent or "form")
 *                        needs elicitation.form, or an elicitation object
 *                        with neither form nor url (`{}` means form). Any
 *                        other mode value is never allowed.
 *   sampling/createMessage : caps.sampling; `tools` or `toolChoice` in params
 *                        (other than null) need sampling.tools;
 *                        includeContext other than absent, null or "none"
 *                        needs sampling.context.
 *   roots/list         : caps.roots.
 *   anything else      : not an input request, never allowed.
 *
 * A capability counts as declared only when its value is an object (as
 * mcp_client_caps_cover() reads it). Returns true when allowed. When
 * `required_out` is not NULL it always receives a value: when not allowed,
 * the ClientCapabilities object this request needs (new reference), e.g.
 * {"elicitation":{"url":{}}} or {"sampling":{"tools":{},"context":{}}} --
 * the value for data.requiredCapabilities of a -32021 error; NULL when
 * allowed, when no capability could allow the request, or on allocation
 * failure.
 */
MCP_API bool mcp_client_caps_allow(const json_t *caps, const char *method, const json_t *params,
                                   json_t **required_out);

/*
 * Does `caps` (borrowed; NULL or a non-object means {}) cover every
 * capability named in `required` (a ClientCapabilities object, borrowed;
 * NULL or a non-object requires nothing)? A required object value is
 * covered by an object value under the same key in caps that recursively
 * covers each of its keys; any other required value (e.g. a flag set to
 * true) must be equal to caps' value. An "elicitation" object at the top
 * level of `caps` with neither "form" nor "url" counts as {"form":{}} (the
 * spec's reading of `{}`). Returns true when covered.
 * When `missing_out` is not NULL it always receives a value: when not
 * covered, the uncovered part of `required` (new reference), e.g.
 * {"sampling":{"tools":{}}} for required {"sampling":{"tools":{}},
 * "roots":{}} against caps {"sampling":{},"roots":{}}; NULL when covered or
 * on allocation failure.
 */
MCP_API bool mcp_client_caps_cover(const json_t *caps, const json_t *required,
                                   json_t **missing_out);

#ifdef __cplusplus
}
#endif
#endif /* MCP_CAPABILITIES_H */
