/*
 * RFC 8785 JSON Canonicalization Scheme over jansson values.
 *
 * Three parts: ECMAScript number formatting, JSON.stringify string
 * escaping, and object members ordered by the UTF-16 code units of their
 * names. The output goes into a growing buffer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/canonical_json.h"

/* As deep as jansson parses; deeper trees (only a program can build them)
 * have no canonical form here rather than exhausting the stack. */
#define MAX_DEPTH 2048

/* ---- ECMAScript Number::toString ------------------------------------- */

/*
 * The shortest decimal digits that read back as v (finite, > 0), and
 * their exponent: v = 0.DIGITS x 10^point. Tries 1 to 17 significant digits
 * (17 always round-trips a double). printf rounds v to the nearest p-digit
 * decimal; at a power of two the interval of decimals that read back as v
 * is lopsided (the gap below is half the gap above), so the nearest p-digit
 * decimal can miss it while the next one up lands inside: that neighbour is
 * tried too, as ECMAScript asks for the fewest digits first.
 */
static int shortest_digits(double v, char digits[18], int *point)
{
    char text[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(text, sizeof text, "%.*e", p - 1, v);
        double nearest = strtod(text, NULL);
        /* text is d[.ddd]e±x; take the digits, whatever the locale's point. */
        int k = 0;
        const char *s = text;
        for (; *s && *s != 'e'; s++)
            if (*s >= '0' && *s <= '9')
                digits[k++] = *s;
        digits[k] = '\0';
        int exponent = atoi(s + 1);
        if (nearest == v) {
            *point = exponent + 1;
            return k;
        }
        if (nearest > v)
            continue;
        /* The neighbour above: add one unit in the last digit. */
        char up[18];
        memcpy(up, digits, (size_t)k + 1);
        int i = k - 1;
        while (i >= 0 && up[i] == '9')
            up[i--] = '0';
        if (i < 0) {
            up[0] = '1'; /* 99..9 + 1 = 100..0: one more power of ten */
            exponent++;
        } else {
            up[i]++;
        }
        /* Integer mantissa, so that no decimal point (a locale matter) is needed. */
        snprintf(text, sizeof text, "%se%d", up, exponent - (k - 1));
        if (strtod(text, NULL) == v) {
            memcpy(digits, up, (size_t)k + 1);
            *point = exponent + 1;
            return k;
        }
    }
    return -1; /* unreachable for finite v */
}

int mcp_format_es_number(double v, char *buf, size_t size)
{
    char out[32], digits[18];
    int n, k;
    char *o = out;

    if (isnan(v) || isinf(v))
        return -1;
    if (v == 0) {
        o += sprintf(o, "0"); /* -0 too */
    } else {
        if (v < 0) {
            *o++ = '-';
            v = -v;
        }
        k = shortest_digits(v, digits, &n);
        if (k < 0)
            return -1;
        /* Trailing zeros are not significant: 1e21 is "1" with n = 22. */
        while (k > 1 && digits[k - 1] == '0')
            digits[--k] = '\0';
        if (k <= n && n <= 21) { /* integer: digits, then zeros */
            memcpy(o, digits, (size_t)k);
            o += k;
            memset(o, '0', (size_t)(n - k));
            o += n - k;
        } else if (0 < n && n <= 21) { /* point inside the digits */
            memcpy(o, digits, (size_t)n);
            o += n;
            *o++ = '.';
            memcpy(o, digits + n, (size_t)(k - n));
            o += k - n;
        } else if (-6 < n && n <= 0) { /* 0.000ddd */
            *o++ = '0';
            *o++ = '.';
            memset(o, '0', (size_t)-n);
            o += -n;
            memcpy(o, digits, (size_t)k);
            o += k;
        } else { /* d.ddde±x */
            *o++ = digits[0];
            if (k > 1) {
                *o++ = '.';
                memcpy(o, digits + 1, (size_t)(k - 1));
                o += k - 1;
            }
            o += sprintf(o, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
        }
    }
    *o = '\0';
    size_t len = (size_t)(o - out);
    if (len + 1 > size)
        return -1;
    memcpy(buf, out, len + 1);
    return (int)len;
}

/* ---- output buffer ---------------------------------------------------- */

struct out {
    char *data;
    size_t len, cap;
    bool failed; /* allocation failed or a value has no canonical form */
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->failed)
        return;
    if (o->cap - o->len <= n) {
        size_t cap = o->cap ? o->cap : 64;
        while (cap - o->len <= n) {
            if (cap > SIZE_MAX / 2) {
                o->failed = true;
                return;
            }
            cap *= 2;
        }
        char *grown = realloc(o->data, cap);
        if (!grown) {
            o->failed = true;
            return;
        }
        o->data = grown;
        o->cap = cap;
    }
    memcpy(o->data + o->len, s, n);
    o->len += n;
    o->data[o->len] = '\0';
}

static void put_str(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

/* ---- strings: JSON.stringify escaping -------------------------------- */

static void put_string(struct out *o, const char *s, size_t len)
{
    static const char HEX[] = "0123456789abcdef";
    size_t plain = 0; /* start of the run of bytes that need no escape */
    put(o, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *escape = NULL;
        char unicode[7];
        switch (c) {
        case '\b': escape = "\\b"; break;
        case '\t': escape = "\\t"; break;
        case '\n': escape = "\\n"; break;
        case '\f': escape = "\\f"; break;
        case '\r': escape = "\\r"; break;
        case '"': escape = "\\\""; break;
        case '\\': escape = "\\\\"; break;
        default:
            if (c < 0x20) {
                memcpy(unicode, "\\u00", 4);
                unicode[4] = HEX[c >> 4];
                unicode[5] = HEX[c & 15];
                unicode[6] = '\0';
                escape = unicode;
            }
        }
        if (escape) {
            put(o, s + plain, i - plain);
            put_str(o, escape);
            plain = i + 1;
        }
    }
    put(o, s + plain, len - plain);
    put(o, "\"", 1);
}

/* ---- object members in UTF-16 order ---------------------------------- */

struct member {
    const char *key;
    size_t len;
    const json_t *value;
};

/*
 * UTF-8 bytes sort like code points, and so like UTF-16 code units, except
 * for one range: characters above U+FFFF are surrogate pairs D800..DFFF in
 * UTF-16, so they sort before U+E000..U+FFFF, while their UTF-8 lead bytes
 * F0..F4 sort after the lead bytes EE and EF of that range. Two keys first
 * differ at the same position within a character (their prefixes are
 * equal), so only differing lead bytes need this correction.
 */
static unsigned utf16_rank(unsigned char byte)
{
    return byte == 0xEE || byte == 0xEF ? byte + 0x10u : byte;
}

static int compare_members(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char cx = (unsigned char)x->key[i], cy = (unsigned char)y->key[i];
        if (cx != cy)
            return utf16_rank(cx) < utf16_rank(cy) ? -1 : 1;
    }
    return (x->len > y->len) - (x->len < y->len);
}

static void put_value(struct out *o, const json_t *v, int depth);

static void put_object(struct out *o, const json_t *obj, int depth)
{
    size_t n = json_object_size(obj), i = 0;
    struct member *members = n ? malloc(n * sizeof *members) : NULL;
    if (n && !members) {
        o->failed = true;
        return;
    }
    const char *key;
    size_t key_len;
    json_t *value;
    json_object_keylen_foreach((json_t *)obj, key, key_len, value) {
        members[i].key = key;
        members[i].len = key_len;
        members[i].value = value;
        i++;
    }
    if (n > 1)
        qsort(members, n, sizeof *members, compare_members);
    put(o, "{", 1);
    for (i = 0; i < n && !o->failed; i++) {
        if (i)
            put(o, ",", 1);
        put_string(o, members[i].key, members[i].len);
        put(o, ":", 1);
        put_value(o, members[i].value, depth + 1);
    }
    put(o, "}", 1);
    free(members);
}

static void put_value(struct out *o, const json_t *v, int depth)
{
    char number[32];
    size_t i;
    json_t *item;

    if (o->failed)
        return;
    if (depth > MAX_DEPTH) {
        o->failed = true;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(o, v, depth);
        break;
    case JSON_ARRAY:
        put(o, "[", 1);
        json_array_foreach(v, i, item) {
            if (i)
                put(o, ",", 1);
            put_value(o, item, depth + 1);
        }
        put(o, "]", 1);
        break;
    case JSON_STRING:
        put_string(o, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER: /* I-JSON: every number is an IEEE-754 double */
    case JSON_REAL: {
        int n = mcp_format_es_number(json_number_value(v), number, sizeof number);
        if (n < 0)
            o->failed = true;
        else
            put(o, number, (size_t)n);
        break;
    }
    case JSON_TRUE:
        put_str(o, "true");
        break;
    case JSON_FALSE:
        put_str(o, "false");
        break;
    case JSON_NULL:
        put_str(o, "null");
        break;
    }
}

char *mcp_json_canonical(const json_t *value, size_t *len)
{
    struct out o = {0};
    if (!value)
        return NULL;
    put_value(&o, value, 0);
    if (o.failed) {
        free(o.data);
        return NULL;
    }
    if (len)
        *len = o.len;
    return o.data;
}
