/*
 * Fuzzes where the HTTP client sends a redirected request
 * (http_target_redirect in src/transport/http_client_target.c): a server's
 * Location value, resolved against the URL the request went to.
 *
 * Input: the URL the request went to, a newline, then the Location value.
 *
 * A URL it returns keeps the origin (resolving it again, from itself or
 * from the URL it came from, gives itself back), is an http(s) URL, and
 * holds no byte that would break a request line; what is refused is NULL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/http_client_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char base[] = "http://127.0.0.1:8080/mcp";
    static http_target_t target;
    static int loaded = -1;
    if (loaded < 0) {
        mcp_error_t err = {0};
        loaded = mcp_curl_load(&err) == MCP_OK;
        mcp_error_clear(&err);
        target.url = base;
    }
    if (!loaded)
        return 0;
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl || memchr(data, '\0', size))
        return 0;
    size_t from_len = (size_t)(nl - data);
    char *from = malloc(from_len + 1);
    char *location = malloc(size - from_len);
    if (!from || !location)
        abort();
    memcpy(from, data, from_len);
    from[from_len] = '\0';
    memcpy(location, nl + 1, size - from_len - 1);
    location[size - from_len - 1] = '\0';

    char *to = http_target_redirect(&target, from_len ? from : NULL, location);
    if (to) {
        if (strncmp(to, "http://", 7) != 0 && strncmp(to, "https://", 8) != 0)
            abort();
        for (const char *p = to; *p; p++)
            if ((unsigned char)*p <= ' ' || *p == 0x7f)
                abort();
        char *again = http_target_redirect(&target, to, to);
        char *back = http_target_redirect(&target, from_len ? from : NULL, to);
        if (!again || strcmp(again, to) != 0 || !back || strcmp(back, to) != 0)
            abort();
        free(again);
        free(back);
        free(to);
    }
    free(from);
    free(location);
    return 0;
}
