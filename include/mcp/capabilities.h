/*
 * Client capabilities (digest sections 1.2, 2.2.1, 3.2, 10.1).
 *
 * A client advertises only what it can actually do: the builder derives the
 * ClientCapabilities object from which handler callbacks the user set. The
 * server side uses mcp_client_caps_allow() to decide whether it may send an
 * input request (MRTR) to a client that declared a given set.
 *
 * All functions are pure and thread-safe.
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
 * NULL means {})?
 *
 *   elicitation/create : caps.elicitation present; mode "url" needs
 *                        elicitation.url; form mode (mode absent or "form")
 *                        needs elicitation.form, or an elicitation object
 *                        with neither form nor url (`{}` means form).
 *   sampling/createMessage : caps.sampling; `tools` or `toolChoice` in params
 *                        need sampling.tools; includeContext other than
 *                        "none" needs sampling.context.
 *   roots/list         : caps.roots.
 *   anything else      : not an input request, never allowed.
 *
 * Returns true when allowed. When not allowed and `required_out` is not
 * NULL, stores the ClientCapabilities object that would allow it (new
 * reference), e.g. {"elicitation":{"url":{}}} -- the value for
 * data.requiredCapabilities of a -32021 error.
 */
MCP_API bool mcp_client_caps_allow(const json_t *caps, const char *method, const json_t *params,
                                   json_t **required_out);

/*
 * Does `caps` (borrowed; NULL means {}) cover every capability named in
 * `required` (a ClientCapabilities object, borrowed)? A required key is
 * covered when caps has the same key and, for object values, recursively
 * covers each of the required object's keys; an "elicitation" object in
 * `caps` with neither "form" nor "url" counts as {"form":{}} (the spec's
 * reading of `{}`). Returns true when covered.
 * When not, and `missing_out` is not NULL, stores the uncovered part of
 * `required` (new reference).
 */
MCP_API bool mcp_client_caps_cover(const json_t *caps, const json_t *required,
                                   json_t **missing_out);

#ifdef __cplusplus
}
#endif
#endif /* MCP_CAPABILITIES_H */
