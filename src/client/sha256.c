/*
 * SHA-256 from Nettle, loaded on first use (sha256.h). The members of the
 * table take their types from Nettle's own declarations, so the table
 * matches the headers built against.
 */
#include <nettle/sha2.h>

#include "client/sha256.h"
#include "lazy_library.h"

static struct {
    __typeof__(nettle_sha256_init) *init;
    __typeof__(nettle_sha256_update) *update;
    __typeof__(nettle_sha256_digest) *digest;
} sha256;
static mcp_lazy_once_t sha256_loaded = MCP_LAZY_ONCE_INIT;

static void sha256_load(void)
{
    const mcp_lazy_symbol_t symbols[] = {
        {"nettle_sha256_init", &sha256.init},
        {"nettle_sha256_update", &sha256.update},
        {"nettle_sha256_digest", &sha256.digest},
    };
    sha256_loaded.rc = mcp_lazy_open(MCP_NETTLE_SONAME, "SHA-256 (OAuth, skill digests)",
                                     symbols, sizeof symbols / sizeof symbols[0],
                                     &sha256_loaded.err);
}

int client_sha256(const void *msg, size_t len, uint8_t digest[CLIENT_SHA256_SIZE],
                  mcp_error_t *err)
{
    int rc = mcp_lazy_once(&sha256_loaded, sha256_load, err);
    if (rc != MCP_OK)
        return rc;
    struct sha256_ctx ctx;
    sha256.init(&ctx);
    sha256.update(&ctx, len, msg);
    sha256.digest(&ctx, CLIENT_SHA256_SIZE, digest);
    return MCP_OK;
}
