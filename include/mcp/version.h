/*
 * Protocol revisions and eras (2026-07-28 specification, Basic >
 * Versioning).
 *
 * "Modern" revisions (2026-07-28 and later) carry version and capabilities
 * in every request's _meta; "legacy" revisions (2025-11-25 and earlier) use
 * the initialize handshake. All functions are pure and thread-safe.
 *
 * For transport authors and other advanced use: apart from
 * mcp_protocol_versions(), which says what this build speaks, a program
 * written against mcp/server.h, mcp/client.h or mcp/host.h never needs to
 * call these functions, since the libraries apply these rules themselves.
 */
#ifndef MCP_VERSION_H
#define MCP_VERSION_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MCP_PROTOCOL_2026_07_28 "2026-07-28"
#define MCP_PROTOCOL_2025_11_25 "2025-11-25"
#define MCP_PROTOCOL_2025_06_18 "2025-06-18"
#define MCP_PROTOCOL_2025_03_26 "2025-03-26"
#define MCP_PROTOCOL_LATEST MCP_PROTOCOL_2026_07_28
#define MCP_PROTOCOL_LATEST_LEGACY MCP_PROTOCOL_2025_11_25

typedef enum mcp_era {
    MCP_ERA_UNKNOWN = 0, /* not a YYYY-MM-DD calendar date */
    MCP_ERA_LEGACY,      /* a date before 2026-07-28 */
    MCP_ERA_MODERN       /* 2026-07-28 or a later date */
} mcp_era_t;

/*
 * The revisions this SDK speaks, newest first: 2026-07-28, 2025-11-25,
 * 2025-06-18, 2025-03-26. Stores the count in *n (if n is not NULL) and
 * returns a static array.
 */
MCP_API const char *const *mcp_protocol_versions(size_t *n);

/* The modern subset of mcp_protocol_versions(), newest first. */
MCP_API const char *const *mcp_protocol_versions_modern(size_t *n);

/* The legacy subset of mcp_protocol_versions(), newest first. */
MCP_API const char *const *mcp_protocol_versions_legacy(size_t *n);

/*
 * The era of a version string: MODERN for a valid calendar date
 * YYYY-MM-DD on or after 2026-07-28, LEGACY for an earlier valid date,
 * UNKNOWN for anything else (NULL, wrong shape, month 13, Feb 30, ...).
 */
MCP_API mcp_era_t mcp_version_era(const char *version);

/* True when `version` is one of mcp_protocol_versions(). */
MCP_API bool mcp_version_is_supported(const char *version);

/*
 * Version choice: the first entry of `client_pref` (in the client's order of
 * preference) that `server_supported` also lists. Returns a pointer to that
 * entry of client_pref, or NULL when there is no common version. NULL
 * entries in either list are skipped.
 */
MCP_API const char *mcp_version_pick(const char *const *server_supported, size_t n_server,
                                     const char *const *client_pref, size_t n_client);

/* Same as mcp_version_pick, with the server's list given as a JSON array of
 * strings (borrowed; non-string entries are ignored). */
MCP_API const char *mcp_version_pick_json(const json_t *server_supported,
                                          const char *const *client_pref, size_t n_client);

#ifdef __cplusplus
}
#endif
#endif /* MCP_VERSION_H */
