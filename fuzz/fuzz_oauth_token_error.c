/*
 * Token endpoint error answers (RFC 6749 §5.2) from the wire, as
 * oauth_token_error() turns them into message text: any bytes are read
 * within their length, and what comes out is a non-empty line of the
 * characters RFC 6749 allows, no longer than the answer allows.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/oauth/oauth_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so that reading past `size` is caught. */
    char *body = malloc(size ? size : 1);
    if (!body)
        abort();
    memcpy(body, data, size);
    char *text = NULL;
    int rc = oauth_token_error(size ? body : NULL, size, &text);
    if (rc == MCP_OK) {
        size_t len = text ? strlen(text) : 0;
        /* "error (description)": the code is at most the body, the
         * description at most 300 characters. */
        if (len == 0 || len > size + 300 + 3)
            abort();
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)text[i];
            if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
                abort();
        }
    } else if (rc != MCP_ENOTFOUND || text) {
        abort();
    }
    free(text);
    free(body);
    return 0;
}
