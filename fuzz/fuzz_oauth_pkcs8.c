/*
 * The client's private key file (src/client/oauth/oauth_pkcs8.c): bytes
 * read as PKCS#8 DER, and as PEM text. A key read is a P-256 scalar in
 * [1, n-1], and the same DER wrapped in PEM reads as the same key; a key
 * refused says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/oauth/oauth_jwt.h"
#include "protocol/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t P256_ORDER[OAUTH_ES256_KEY_SIZE] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};

/* Wraps DER in PEM, as a key file has it. */
static char *as_pem(const uint8_t *der, size_t size)
{
    static const char begin[] = "-----BEGIN PRIVATE KEY-----\n";
    static const char end[] = "\n-----END PRIVATE KEY-----\n";
    char *pem = malloc(strlen(begin) + mcp_base64_encoded_len(size) + strlen(end) + 1);
    if (!pem)
        abort();
    strcpy(pem, begin);
    size_t n = mcp_base64_encode(der, size, pem + strlen(begin));
    strcpy(pem + strlen(begin) + n, end);
    return pem;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t key[OAUTH_ES256_KEY_SIZE], again[OAUTH_ES256_KEY_SIZE];
    static const uint8_t zero[OAUTH_ES256_KEY_SIZE] = {0};
    mcp_error_t err = {0};

    int rc = oauth_es256_key_from_pkcs8(data, size, key, &err);
    if (rc == MCP_OK) {
        if (memcmp(key, zero, sizeof key) == 0 || memcmp(key, P256_ORDER, sizeof key) >= 0)
            abort();
        char *pem = as_pem(data, size);
        if (oauth_es256_key_from_pem(pem, again, &err) != MCP_OK ||
            memcmp(key, again, sizeof key) != 0)
            abort();
        free(pem);
    } else if (rc != MCP_EINVAL || err.message[0] == '\0') {
        abort();
    }

    /* The same bytes as PEM text. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    mcp_error_clear(&err);
    rc = oauth_es256_key_from_pem(text, key, &err);
    if (rc == MCP_OK ? memcmp(key, zero, sizeof key) == 0 : err.message[0] == '\0')
        abort();
    free(text);
    return 0;
}
