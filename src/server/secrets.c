/* Secret bytes from getrandom(2), compared by Nettle, wiped by libc (see
 * secrets.h). */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <nettle/memops.h>

#include "mcp/common.h"
#include "server/secrets.h"

int mcp_secret_random(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        /* Reads of up to 256 bytes are never short once the pool is
         * seeded, but a signal may interrupt a longer one: keep going. */
        ssize_t got = getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return MCP_EIO;
        }
        p += got;
        n -= (size_t)got;
    }
    return MCP_OK;
}

bool mcp_secret_equal(const void *a, const void *b, size_t n)
{
    return memeql_sec(a, b, n) != 0;
}

void mcp_secret_wipe(void *p, size_t n)
{
    explicit_bzero(p, n);
}
