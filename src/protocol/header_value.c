/*
 * Values of Mcp-Name and Mcp-Param-{Name} (digest section 4.6): the plain
 * form, the "=?base64?...?=" sentinel form, and comparison with the body.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/header_value.h"
#include "protocol/base64.h"

#define SENTINEL_PREFIX "=?base64?"
#define SENTINEL_SUFFIX "?="
#define PREFIX_LEN (sizeof SENTINEL_PREFIX - 1)
#define SUFFIX_LEN (sizeof SENTINEL_SUFFIX - 1)

/* Is s[0..len) well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF) without a NUL byte? */
static bool is_utf8_without_nul(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t extra;
        unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            extra = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            extra = 2;
            if (c == 0xE0)
                lo = 0xA0; /* overlong below U+0800 */
            else if (c == 0xED)
                hi = 0x9F; /* surrogates U+D800..U+DFFF */
        } else if (c >= 0xF0 && c <= 0xF4) {
            extra = 3;
            if (c == 0xF0)
                lo = 0x90; /* overlong below U+10000 */
            else if (c == 0xF4)
                hi = 0x8F; /* above U+10FFFF */
        } else {
            return false; /* continuation byte, C0/C1 overlong lead, F5..FF */
        }
        if (len - i <= extra || s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k <= extra; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF)
                return false;
        i += extra + 1;
    }
    return true;
}

static bool is_optional_whitespace(char c)
{
    return c == ' ' || c == '\t';
}

/* Does the text look like the sentinel form? Used by the encoder: even an
 * overlapping "=?base64?=" is encoded, so that no decoder can misread it. */
static bool looks_like_sentinel(const char *s, size_t len)
{
    return len >= PREFIX_LEN && memcmp(s, SENTINEL_PREFIX, PREFIX_LEN) == 0 &&
           memcmp(s + len - SUFFIX_LEN, SENTINEL_SUFFIX, SUFFIX_LEN) == 0;
}

/* Can the text travel as a plain header value? Visible ASCII and interior
 * spaces only: a TAB is a control character and must be encoded. */
static bool is_plain_safe(const char *s, size_t len)
{
    if (len > 0 && (s[0] == ' ' || s[len - 1] == ' '))
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7E)
            return false;
    return !looks_like_sentinel(s, len);
}

static char *copy_bytes(const char *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

int mcp_header_value_encode(const char *text, size_t len, char **out)
{
    *out = NULL;
    if (!text || !is_utf8_without_nul((const unsigned char *)text, len))
        return MCP_EINVAL;
    if (is_plain_safe(text, len)) {
        *out = copy_bytes(text, len);
        return *out ? MCP_OK : MCP_ENOMEM;
    }
    /* The encoded form takes about 4/3 of len plus the markers: bounding len
     * keeps that size from overflowing. */
    if (len > SIZE_MAX / 2)
        return MCP_ENOMEM;
    size_t b64 = mcp_base64_encoded_len(len);
    char *value = malloc(PREFIX_LEN + b64 + SUFFIX_LEN + 1);
    if (!value)
        return MCP_ENOMEM;
    memcpy(value, SENTINEL_PREFIX, PREFIX_LEN);
    mcp_base64_encode(text, len, value + PREFIX_LEN);
    memcpy(value + PREFIX_LEN + b64, SENTINEL_SUFFIX, SUFFIX_LEN + 1);
    *out = value;
    return MCP_OK;
}

/* An integral real within the header's integer range, as that integer.
 * JSON Schema's "integer" admits 42.0, and some encoders write it so. */
static bool integral_real(const json_t *value, json_int_t *n)
{
    double d = json_real_value(value);
    if (!(d >= -(double)MCP_HEADER_INT_MAX && d <= (double)MCP_HEADER_INT_MAX) ||
        d != (double)(json_int_t)d)
        return false;
    *n = (json_int_t)d;
    return true;
}

int mcp_header_value_from_json(const json_t *value, char **out)
{
    char digits[24];
    json_int_t n;
    *out = NULL;
    if (!value)
        return MCP_EINVAL;
    switch (json_typeof(value)) {
    case JSON_STRING:
        return mcp_header_value_encode(json_string_value(value), json_string_length(value), out);
    case JSON_TRUE:
        *out = copy_bytes("true", 4);
        break;
    case JSON_FALSE:
        *out = copy_bytes("false", 5);
        break;
    case JSON_INTEGER:
        n = json_integer_value(value);
        if (n < -MCP_HEADER_INT_MAX || n > MCP_HEADER_INT_MAX)
            return MCP_EINVAL;
        *out = copy_bytes(digits, (size_t)snprintf(digits, sizeof digits, "%" JSON_INTEGER_FORMAT, n));
        break;
    case JSON_REAL:
        if (!integral_real(value, &n))
            return MCP_EINVAL;
        *out = copy_bytes(digits, (size_t)snprintf(digits, sizeof digits, "%" JSON_INTEGER_FORMAT, n));
        break;
    default:
        return MCP_EINVAL; /* NULL, null, object, array */
    }
    return *out ? MCP_OK : MCP_ENOMEM;
}

/* The sentinel payload, Base64-decoded into a new UTF-8 string. */
static int decode_sentinel(const char *payload, size_t len, char **out, size_t *out_len)
{
    size_t n;
    unsigned char *bytes = malloc(mcp_base64_decoded_max(len) + 1);
    if (!bytes)
        return MCP_ENOMEM;
    if (mcp_base64_decode(payload, len, bytes, &n) != MCP_OK ||
        !is_utf8_without_nul(bytes, n)) {
        free(bytes);
        return MCP_EINVAL;
    }
    bytes[n] = '\0';
    *out = (char *)bytes;
    *out_len = n;
    return MCP_OK;
}

int mcp_header_value_decode(const char *value, size_t len, char **out, size_t *out_len)
{
    *out = NULL;
    if (!value)
        return MCP_EINVAL;
    /* Optional whitespace around a field value is not part of it (RFC 9110
     * section 5.5). */
    while (len > 0 && is_optional_whitespace(value[0]))
        value++, len--;
    while (len > 0 && is_optional_whitespace(value[len - 1]))
        len--;

    size_t n = len;
    int rc;
    /* The markers must not overlap: "=?base64?=" is a literal. */
    if (len >= PREFIX_LEN + SUFFIX_LEN && looks_like_sentinel(value, len)) {
        rc = decode_sentinel(value + PREFIX_LEN, len - PREFIX_LEN - SUFFIX_LEN, out, &n);
    } else {
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)value[i];
            if ((c < 0x20 && c != '\t') || c > 0x7E)
                return MCP_EINVAL;
        }
        *out = copy_bytes(value, len);
        rc = *out ? MCP_OK : MCP_ENOMEM;
    }
    if (rc == MCP_OK && out_len)
        *out_len = n;
    return rc;
}

/*
 * A finite decimal number in its normal form: value = (-1)^negative *
 * digits * 10^exponent, with `digits` free of leading and trailing zeros
 * (empty for zero). Two numbers are equal exactly when their normal forms
 * are, so comparison needs no floating point and loses no precision.
 */
struct decimal {
    bool negative;
    char digits[24]; /* more significant digits than any json_int_t has */
    size_t ndigits;
    long long exponent;
};

/* Exponents beyond this cannot bring any mantissa back to a json_int_t;
 * clamping keeps the arithmetic from overflowing without changing answers. */
#define EXPONENT_CLAMP 1000000000LL

/* Parses [+-]digits[.digits][(e|E)[+-]digits] with at least one mantissa
 * digit. False for anything else, and for numbers with more significant
 * digits than `digits` holds (they equal no json_int_t). */
static bool parse_decimal(const char *s, size_t len, struct decimal *d)
{
    size_t i = 0, mantissa_digits = 0;
    long long fraction_digits = 0, zeros = 0; /* zeros seen but not yet kept */
    bool point = false;
    memset(d, 0, sizeof *d);
    if (i < len && (s[i] == '+' || s[i] == '-'))
        d->negative = s[i++] == '-';
    for (; i < len; i++) {
        if (s[i] == '.' && !point) {
            point = true;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            break;
        mantissa_digits++;
        fraction_digits += point;
        if (s[i] == '0') {
            zeros += d->ndigits > 0; /* leading zeros are dropped */
            continue;
        }
        /* A non-zero digit: the zeros before it were interior, keep them. */
        if (d->ndigits + (size_t)zeros + 1 > sizeof d->digits)
            return false;
        memset(d->digits + d->ndigits, '0', (size_t)zeros);
        d->ndigits += (size_t)zeros;
        d->digits[d->ndigits++] = s[i];
        zeros = 0;
    }
    if (mantissa_digits == 0)
        return false;
    long long exponent = 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        bool negative = false;
        size_t exp_digits = 0;
        if (++i < len && (s[i] == '+' || s[i] == '-'))
            negative = s[i++] == '-';
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, exp_digits++)
            if (exponent < EXPONENT_CLAMP)
                exponent = exponent * 10 + (s[i] - '0');
        if (exp_digits == 0)
            return false;
        if (negative)
            exponent = -exponent;
    }
    if (i != len)
        return false;
    if (d->ndigits == 0) {
        d->negative = false; /* -0 equals 0 */
        return true;
    }
    /* The trailing zeros left in `zeros` each multiply by ten. */
    d->exponent = exponent + zeros - fraction_digits;
    return true;
}

static bool decimal_equals_integer(const struct decimal *d, json_int_t n)
{
    char text[32];
    struct decimal e;
    int len = snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, n);
    return parse_decimal(text, (size_t)len, &e) && d->negative == e.negative &&
           d->ndigits == e.ndigits && d->exponent == e.exponent &&
           memcmp(d->digits, e.digits, d->ndigits) == 0;
}

bool mcp_header_value_matches(const char *decoded, size_t decoded_len, const json_t *body_value)
{
    struct decimal d;
    json_int_t n;
    if (!decoded || !body_value)
        return false;
    switch (json_typeof(body_value)) {
    case JSON_STRING:
        return json_string_length(body_value) == decoded_len &&
               memcmp(json_string_value(body_value), decoded, decoded_len) == 0;
    case JSON_TRUE:
        return decoded_len == 4 && memcmp(decoded, "true", 4) == 0;
    case JSON_FALSE:
        return decoded_len == 5 && memcmp(decoded, "false", 5) == 0;
    case JSON_INTEGER:
        return parse_decimal(decoded, decoded_len, &d) &&
               decimal_equals_integer(&d, json_integer_value(body_value));
    case JSON_REAL:
        return integral_real(body_value, &n) && parse_decimal(decoded, decoded_len, &d) &&
               decimal_equals_integer(&d, n);
    default:
        return false;
    }
}
