/* Secret bytes compared by Nettle, wiped by libc (see secrets.h). */
#include <string.h>

#include <nettle/memops.h>

#include "mcp/common.h"
#include "server/secrets.h"

bool mcp_secret_equal(const void *a, const void *b, size_t n)
{
    return memeql_sec(a, b, n) != 0;
}

void mcp_secret_wipe(void *p, size_t n)
{
    explicit_bzero(p, n);
}
