/*
 * Header values from the wire (Mcp-Name, Mcp-Param-*): whatever decodes
 * must survive encode -> decode unchanged and match itself as a body value.
 * The strict Base64 decoders are fuzzed on the same bytes: a text they
 * accept is the one text that encodes its bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/header_value.h"
#include "protocol/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_base64_is_canonical(const char *text, size_t len)
{
    unsigned char *bytes = malloc(mcp_base64_decoded_max(len) + 1);
    char *again = malloc(len + 1);
    size_t n;
    if (!bytes || !again)
        abort();
    if (mcp_base64_decode(text, len, bytes, &n) == MCP_OK &&
        (mcp_base64_encode(bytes, n, again) != len || memcmp(again, text, len) != 0))
        abort();
    if (mcp_base64url_decode(text, len, bytes, &n) == MCP_OK &&
        (mcp_base64url_encode(bytes, n, again) != len || memcmp(again, text, len) != 0))
        abort();
    free(bytes);
    free(again);
}

/* A decoded value that spells a json_int_t in plain decimal must equal it. */
static void check_integer(const char *decoded, size_t len)
{
    size_t sign = len > 0 && decoded[0] == '-';
    if (len - sign == 0 || len - sign > 18)
        return;
    for (size_t i = sign; i < len; i++)
        if (decoded[i] < '0' || decoded[i] > '9')
            return;
    json_t *body = json_integer(strtoll(decoded, NULL, 10));
    if (!body || !mcp_header_value_matches(decoded, len, body))
        abort();
    json_decref(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *value = (const char *)data;
    char *decoded = NULL, *header = NULL, *again = NULL;
    size_t len = 0, len2 = 0;

    check_base64_is_canonical(value, size);
    if (mcp_header_value_decode(value, size, &decoded, &len) != MCP_OK)
        return 0;
    if (strlen(decoded) != len)
        abort(); /* decoded values never contain NUL */

    /* What a server decodes, a client can send again, to the same effect. */
    if (mcp_header_value_encode(decoded, len, &header) != MCP_OK)
        abort();
    if (mcp_header_value_decode(header, strlen(header), &again, &len2) != MCP_OK)
        abort();
    if (len2 != len || memcmp(again, decoded, len) != 0)
        abort();

    json_t *body = json_stringn(decoded, len);
    if (!body || !mcp_header_value_matches(decoded, len, body))
        abort();
    json_decref(body);
    check_integer(decoded, len);

    free(decoded);
    free(header);
    free(again);
    return 0;
}
