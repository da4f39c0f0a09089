/*
 * The client's ES256 private key (oauth_jwt.h): PEM (RFC 7468) around a
 * PKCS#8 PrivateKeyInfo (RFC 5208, RFC 5958) around an ECPrivateKey (RFC
 * 5915). The key file is the application's, but it may be anything a
 * user points at: everything is read strictly, and every refusal says
 * what was found instead.
 *
 *   PrivateKeyInfo ::= SEQUENCE {
 *       version             INTEGER (0 | 1),
 *       algorithm           SEQUENCE { OID id-ecPublicKey, OID prime256v1 },
 *       privateKey          OCTET STRING (an ECPrivateKey),
 *       attributes      [0] IMPLICIT SET OPTIONAL,
 *       publicKey       [1] IMPLICIT BIT STRING OPTIONAL }   -- version 1 only
 *   ECPrivateKey ::= SEQUENCE {
 *       version             INTEGER (1),
 *       privateKey          OCTET STRING (32 bytes),
 *       parameters      [0] EXPLICIT OID OPTIONAL,
 *       publicKey       [1] EXPLICIT BIT STRING OPTIONAL }
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "client/oauth/oauth_jwt.h"
#include "protocol/base64.h"

/* ---- DER (X.690 §10): one element at a time ---- */

enum {
    TAG_INTEGER = 0x02,
    TAG_BIT_STRING = 0x03,
    TAG_OCTET_STRING = 0x04,
    TAG_OID = 0x06,
    TAG_SEQUENCE = 0x30,
    TAG_CONTEXT_0 = 0xa0,      /* [0], constructed */
    TAG_CONTEXT_1 = 0xa1,      /* [1], constructed */
    TAG_CONTEXT_1_PRIM = 0x81, /* [1] IMPLICIT BIT STRING */
};

/* Bytes still to read. */
typedef struct {
    const uint8_t *p;
    size_t n;
} der_t;

/*
 * Reads the next element's tag and content into *content, and moves past
 * it. Only one-byte tags (all a key uses), and lengths in DER's one form:
 * short below 128, else the fewest bytes (at most two: a key is small)
 * with no leading zero. False when malformed or out of bytes.
 */
static bool der_read(der_t *in, uint8_t *tag, der_t *content)
{
    if (in->n < 2 || (in->p[0] & 0x1f) == 0x1f)
        return false;
    *tag = in->p[0];
    size_t len = in->p[1], header = 2;
    if (len == 0x81) {
        if (in->n < 3 || in->p[2] < 0x80)
            return false;
        len = in->p[2];
        header = 3;
    } else if (len == 0x82) {
        if (in->n < 4 || in->p[2] == 0)
            return false;
        len = (size_t)in->p[2] << 8 | in->p[3];
        header = 4;
    } else if (len > 0x7f) {
        return false; /* indefinite (BER), or longer than a key can be */
    }
    if (in->n - header < len)
        return false;
    content->p = in->p + header;
    content->n = len;
    in->p += header + len;
    in->n -= header + len;
    return true;
}

/* Reads the next element, which must have tag `want`. */
static bool der_expect(der_t *in, uint8_t want, der_t *content)
{
    uint8_t tag;
    der_t saved = *in;
    if (der_read(in, &tag, content) && tag == want)
        return true;
    *in = saved;
    return false;
}

/* Whether the next element has tag `tag` (without reading it). */
static bool der_next_is(const der_t *in, uint8_t tag)
{
    return in->n > 0 && in->p[0] == tag;
}

static bool der_equals(der_t v, const uint8_t *bytes, size_t n)
{
    return v.n == n && memcmp(v.p, bytes, n) == 0;
}

/* ---- The key ---- */

/* The OIDs' DER contents. */
static const uint8_t OID_EC_PUBLIC_KEY[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01};
static const uint8_t OID_P256[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
static const uint8_t OID_RSA[] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01};
/* The order n of P-256's group: a private key is in [1, n-1]. */
static const uint8_t P256_ORDER[OAUTH_ES256_KEY_SIZE] = {
    0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51};

static int bad_key(mcp_error_t *err, const char *what)
{
    return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the private key is %s", what);
}

/* An INTEGER whose DER content is the single byte `value`. */
static bool der_small_integer(der_t *in, uint8_t value)
{
    der_t v;
    return der_expect(in, TAG_INTEGER, &v) && v.n == 1 && v.p[0] == value;
}

/* A BIT STRING's content is well-formed: a count of unused bits (0-7,
 * and 0 when empty) before the bits. */
static bool der_bit_string_ok(der_t v)
{
    return v.n >= 1 && v.p[0] <= 7 && (v.n > 1 || v.p[0] == 0);
}

/* The ECPrivateKey inside the PKCS#8 OCTET STRING. */
static int read_ec_private_key(der_t in, uint8_t key[OAUTH_ES256_KEY_SIZE], mcp_error_t *err)
{
    der_t seq, d, field;
    if (!der_expect(&in, TAG_SEQUENCE, &seq) || in.n != 0)
        return bad_key(err, "not a well-formed EC private key (RFC 5915)");
    if (!der_small_integer(&seq, 1))
        return bad_key(err, "an EC private key of an unknown version");
    if (!der_expect(&seq, TAG_OCTET_STRING, &d) || d.n != OAUTH_ES256_KEY_SIZE)
        return bad_key(err, "not a P-256 key: its private part is not 32 bytes");
    if (der_next_is(&seq, TAG_CONTEXT_0)) {
        der_t oid;
        if (!der_expect(&seq, TAG_CONTEXT_0, &field) || !der_expect(&field, TAG_OID, &oid) ||
            field.n != 0 || !der_equals(oid, OID_P256, sizeof OID_P256))
            return bad_key(err, "an EC key whose parameters are not the P-256 curve");
    }
    if (der_next_is(&seq, TAG_CONTEXT_1)) {
        der_t bits;
        if (!der_expect(&seq, TAG_CONTEXT_1, &field) ||
            !der_expect(&field, TAG_BIT_STRING, &bits) || field.n != 0 ||
            !der_bit_string_ok(bits))
            return bad_key(err, "an EC key with a malformed public key");
    }
    if (seq.n != 0)
        return bad_key(err, "an EC private key with unexpected fields");

    /* 1 <= d <= n-1: big-endian byte strings of one length compare as
     * numbers under memcmp. */
    static const uint8_t zero[OAUTH_ES256_KEY_SIZE] = {0};
    if (memcmp(d.p, zero, sizeof zero) == 0 || memcmp(d.p, P256_ORDER, sizeof P256_ORDER) >= 0)
        return bad_key(err, "out of the P-256 range");
    memcpy(key, d.p, OAUTH_ES256_KEY_SIZE);
    return MCP_OK;
}

int oauth_es256_key_from_pkcs8(const uint8_t *der, size_t len,
                               uint8_t key[OAUTH_ES256_KEY_SIZE], mcp_error_t *err)
{
    der_t in = {der, der ? len : 0}, info, algorithm, algo_oid, curve, ec_key, field;
    if (!der_expect(&in, TAG_SEQUENCE, &info) || in.n != 0)
        return bad_key(err, "not PKCS#8 DER (a PrivateKeyInfo SEQUENCE)");
    der_t version;
    if (!der_expect(&info, TAG_INTEGER, &version) || version.n != 1 || version.p[0] > 1)
        return bad_key(err, "PKCS#8 of an unknown version");
    bool v2 = version.p[0] == 1; /* RFC 5958: it may carry the public key */
    if (!der_expect(&info, TAG_SEQUENCE, &algorithm) || !der_expect(&algorithm, TAG_OID, &algo_oid))
        return bad_key(err, "PKCS#8 without an algorithm");
    if (der_equals(algo_oid, OID_RSA, sizeof OID_RSA))
        return bad_key(err, "an RSA key: only EC P-256 keys (ES256) are supported");
    if (!der_equals(algo_oid, OID_EC_PUBLIC_KEY, sizeof OID_EC_PUBLIC_KEY))
        return bad_key(err, "not an EC key: only EC P-256 keys (ES256) are supported");
    if (!der_expect(&algorithm, TAG_OID, &curve) || algorithm.n != 0 ||
        !der_equals(curve, OID_P256, sizeof OID_P256))
        return bad_key(err, "an EC key on another curve than P-256 (ES256)");
    if (!der_expect(&info, TAG_OCTET_STRING, &ec_key))
        return bad_key(err, "PKCS#8 without its private key");
    if (der_next_is(&info, TAG_CONTEXT_0) && !der_expect(&info, TAG_CONTEXT_0, &field))
        return bad_key(err, "PKCS#8 with malformed attributes");
    if (v2 && der_next_is(&info, TAG_CONTEXT_1_PRIM) &&
        (!der_expect(&info, TAG_CONTEXT_1_PRIM, &field) || !der_bit_string_ok(field)))
        return bad_key(err, "PKCS#8 with a malformed public key");
    if (info.n != 0)
        return bad_key(err, "PKCS#8 with unexpected fields");
    return read_ec_private_key(ec_key, key, err);
}

/* ---- PEM ---- */

#define PEM_BEGIN "-----BEGIN "
#define PEM_LABEL "PRIVATE KEY-----"
#define PEM_END "-----END PRIVATE KEY-----"

int oauth_es256_key_from_pem(const char *pem, uint8_t key[OAUTH_ES256_KEY_SIZE],
                             mcp_error_t *err)
{
    if (!pem)
        return bad_key(err, "missing");
    const char *begin = NULL;
    for (const char *p = strstr(pem, PEM_BEGIN); p && !begin; p = strstr(p + 1, PEM_BEGIN)) {
        const char *label = p + strlen(PEM_BEGIN);
        if (strncmp(label, PEM_LABEL, strlen(PEM_LABEL)) == 0)
            begin = label + strlen(PEM_LABEL);
        else if (strncmp(label, "EC " PEM_LABEL, strlen("EC " PEM_LABEL)) == 0)
            return bad_key(err, "in SEC1 form (\"EC PRIVATE KEY\"): convert it to PKCS#8 with "
                                "`openssl pkcs8 -topk8 -nocrypt`");
        else if (strncmp(label, "ENCRYPTED " PEM_LABEL, strlen("ENCRYPTED " PEM_LABEL)) == 0)
            return bad_key(err, "encrypted: decrypt it to an unencrypted PKCS#8 \"PRIVATE KEY\" "
                                "with `openssl pkcs8 -topk8 -nocrypt`");
    }
    const char *end = begin ? strstr(begin, PEM_END) : NULL;
    if (!end)
        return bad_key(err, "not PEM (no \"-----BEGIN PRIVATE KEY-----\" block)");

    /* The base64 without the line breaks (RFC 7468 §2 lets a parser take
     * any whitespace), then strictly decoded. */
    size_t span = (size_t)(end - begin);
    char *text = malloc(span + 1);
    uint8_t *der = malloc(mcp_base64_decoded_max(span) + 1);
    int rc = MCP_OK;
    if (!text || !der) {
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    } else {
        size_t n = 0, der_len = 0;
        for (const char *p = begin; p < end; p++)
            if (!strchr(" \t\r\n", *p))
                text[n++] = *p;
        if (mcp_base64_decode(text, n, der, &der_len) != MCP_OK)
            rc = bad_key(err, "PEM whose base64 is malformed");
        else
            rc = oauth_es256_key_from_pkcs8(der, der_len, key, err);
        explicit_bzero(text, span + 1);
        explicit_bzero(der, mcp_base64_decoded_max(span) + 1);
    }
    free(text);
    free(der);
    return rc;
}
