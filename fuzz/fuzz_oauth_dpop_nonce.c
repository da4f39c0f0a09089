/*
 * DPoP-Nonce values from the wire (RFC 9449 §8.1, §9): a value the client
 * takes is a nonce (1 to OAUTH_DPOP_MAX_NONCE NQCHARs), and a proof built
 * with it carries exactly it; a value it refuses makes no proof.
 */
#define _GNU_SOURCE /* strdup */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client/oauth/oauth_dpop.h"
#include "protocol/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_nqchar(unsigned char c)
{
    return c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e);
}

/* The nonce claim of a proof. */
static char *nonce_claim(const char *proof)
{
    const char *claims = strchr(proof, '.') + 1;
    size_t len = strcspn(claims, ".");
    unsigned char *text = malloc(mcp_base64_decoded_max(len) + 1);
    size_t n = 0;
    if (!text || mcp_base64url_decode(claims, len, text, &n) != 0)
        abort();
    json_t *doc = json_loadb((const char *)text, n, 0, NULL);
    const char *nonce = json_string_value(json_object_get(doc, "nonce"));
    char *copy = nonce ? strdup(nonce) : NULL;
    json_decref(doc);
    free(text);
    return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static oauth_dpop_key_t key;
    static bool have_key;
    if (!have_key) {
        if (oauth_dpop_key_new(&key, NULL) != MCP_OK)
            return 0; /* no libhogweed here: nothing to check */
        have_key = true;
    }
    char *value = malloc(size + 1);
    if (!value)
        abort();
    memcpy(value, data, size);
    value[size] = '\0';

    /* A C string: the value ends at a NUL, as the header's copy does. */
    size_t len = strlen(value);
    bool valid = oauth_dpop_nonce_valid(value);
    bool expected = len > 0 && len <= OAUTH_DPOP_MAX_NONCE;
    for (size_t i = 0; expected && i < len; i++)
        expected = is_nqchar((unsigned char)value[i]);
    if (valid != expected)
        abort();

    char *proof = NULL;
    int rc = oauth_dpop_proof(&key, "POST", "https://as.example/token", NULL, value, 1, &proof,
                              NULL);
    if (valid) {
        char *carried = rc == MCP_OK ? nonce_claim(proof) : NULL;
        if (rc != MCP_OK || !carried || strcmp(carried, value) != 0)
            abort();
        free(carried);
    } else if (rc != MCP_EINVAL || proof) {
        abort();
    }
    free(proof);
    free(value);
    return 0;
}
