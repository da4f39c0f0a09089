/*
 * RFC 8785 JSON Canonicalization Scheme over jansson values.
 *
 * ECMAScript number formatting lives here; string escaping and member
 * order are the JSON writer's canonical mode (json_writer.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/canonical_json.h"
#include "protocol/json_writer.h"

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

char *mcp_json_canonical(const json_t *value, size_t *len)
{
    return value ? json_write(value, JSON_WRITE_CANONICAL, len) : NULL;
}
