/* Random bytes from getrandom(2) (random.h). */
#include <errno.h>
#include <sys/random.h>

#include "mcp/common.h"
#include "random.h"

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
