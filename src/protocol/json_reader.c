/*
 * Reading JSON text into jansson values (json_reader.h).
 *
 * The shape follows jansson's own loader, so that the same error wins when
 * a text has several: a lexer turns the bytes into tokens, one at a time,
 * and a recursive-descent parser asks for the next token and builds the
 * tree. A lexical error (bad UTF-8, a bad escape, an integer too big) is
 * recorded when the lexer meets it and the parser then stops at the token
 * it left invalid; the first error recorded is the one reported.
 *
 * Speed comes from working on the buffer directly: a string without
 * escapes is handed to jansson straight from the input, string bodies are
 * checked eight bytes at a time, the punctuation the parser expects is
 * taken without the full lexer, and line and column are only counted when
 * an error is reported.
 */
#include <errno.h>
#include <langinfo.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/common.h"
#include "protocol/hex.h"
#include "protocol/json_reader.h"
#include "protocol/utf8.h"

/* Tokens other than punctuation, which is its own character ('{', ':' ...). */
enum {
    TOKEN_EOF = 0,
    TOKEN_INVALID = 256,
    TOKEN_STRING,
    TOKEN_INTEGER,
    TOKEN_REAL,
    TOKEN_TRUE,
    TOKEN_FALSE,
    TOKEN_NULL
};

/* The largest json_int_t (jansson_config.h picks long long or long). */
#if JSON_INTEGER_IS_LONG_LONG
#define INTEGER_MAX LLONG_MAX
#else
#define INTEGER_MAX LONG_MAX
#endif

/* Decoded strings up to this size need no allocation. */
#define INLINE_SCRATCH 256

struct reader {
    const char *start, *end; /* the text */
    const char *p;           /* the next byte to read */
    const char *token_start; /* the first byte of the current token */
    int token;

    /* The value of the current token. A string points into the text when
     * it has no escapes, else into `scratch`, which the next string reuses. */
    const char *string;
    size_t string_len;
    bool string_in_scratch;
    bool string_has_nul;
    json_int_t integer;
    double real;

    char *scratch; /* inline_scratch, or allocated when that is too small */
    size_t scratch_cap;
    char inline_scratch[INLINE_SCRATCH];

    bool out_of_range_is_null; /* json_read_in_range: such numbers read as null */
    int max_nesting; /* the caller's limit on arrays and objects */
    bool too_deep;   /* ... which the text went over */
    json_read_memo_t *memo; /* NULL: none */
    const char *memo_parent; /* where the memo's parent object starts */
    bool failed;
    json_error_t *err;
};

/* ---------------------------------------------------------------------- */
/* Memory                                                                  */
/* ---------------------------------------------------------------------- */

/* Temporaries come from jansson's allocator, as its loader's do: an
 * application that routes jansson's memory (json_set_alloc_funcs) routes
 * the reader's too. */
static void *allocate(size_t n)
{
    json_malloc_t jansson_malloc;
    json_get_alloc_funcs(&jansson_malloc, NULL);
    return jansson_malloc(n);
}

static void release(void *p)
{
    if (!p)
        return;
    json_free_t jansson_free;
    json_get_alloc_funcs(NULL, &jansson_free);
    jansson_free(p);
}

/* ---------------------------------------------------------------------- */
/* Errors                                                                  */
/* ---------------------------------------------------------------------- */

static void fail(struct reader *r, const char *at, enum json_error_code code, const char *fmt,
                 ...) MCP_PRINTF(4, 5);

/*
 * Records the first error: `at` is where reading stopped, the text from the
 * start of the token to `at` is quoted as context when it is short, and
 * line and column are counted up to `at` (columns in characters, as
 * jansson counts them).
 */
static void fail(struct reader *r, const char *at, enum json_error_code code, const char *fmt,
                 ...)
{
    if (r->failed)
        return;
    r->failed = true;
    json_error_t *err = r->err;
    if (!err)
        return;

    char text[JSON_ERROR_TEXT_LENGTH - 1]; /* the last byte of err->text holds the code */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    size_t used = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;

    /* jansson keeps the token's text as a C string and quotes it only when
     * it is at most 20 bytes; without one the error is at the end. */
    size_t token_len = (size_t)(at - r->token_start);
    int shown = (int)strnlen(r->token_start, token_len);
    if (shown > 0) {
        if (token_len <= 20)
            snprintf(text + used, sizeof text - used, " near '%.*s'", shown, r->token_start);
    } else {
        if (code == json_error_invalid_syntax)
            code = json_error_premature_end_of_input;
        if (code != json_error_invalid_utf8)
            snprintf(text + used, sizeof text - used, " near end of file");
    }
    memcpy(err->text, text, strlen(text) + 1);
    err->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)code;

    int line = 1, column = 0;
    for (const char *q = r->start; q < at; q++) {
        if (*q == '\n') {
            line++;
            column = 0;
        } else if (((unsigned char)*q & 0xC0) != 0x80) {
            column++; /* not a UTF-8 continuation byte */
        }
    }
    err->line = line;
    err->column = column;
    err->position = (int)(at - r->start);
    snprintf(err->source, sizeof err->source, "%s", "<buffer>");
}

/* An error at the end of the current token, where the parser stands. */
static void fail_here(struct reader *r, enum json_error_code code, const char *message)
{
    fail(r, r->p, code, "%s", message);
}

static void fail_out_of_memory(struct reader *r)
{
    fail_here(r, json_error_out_of_memory, "out of memory");
}

/* ---------------------------------------------------------------------- */
/* UTF-8                                                                   */
/* ---------------------------------------------------------------------- */

static void fail_utf8(struct reader *r, const char *at)
{
    fail(r, at, json_error_invalid_utf8, "unable to decode byte 0x%x", (unsigned char)*at);
}

/*
 * jansson decodes every byte it reads, also the one that tells it a number
 * or a word has ended: an invalid sequence there fails as such. True (and
 * the error recorded) when the byte at `p` starts one.
 */
static bool fails_to_decode(struct reader *r, const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    if (p == r->end || *u < 0x80 || mcp_utf8_sequence_length(u, (const unsigned char *)r->end))
        return false;
    fail_utf8(r, p);
    return true;
}

/* Encodes a code point (at most U+10FFFF, not a surrogate); returns its length. */
static size_t utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ---------------------------------------------------------------------- */
/* Strings                                                                 */
/* ---------------------------------------------------------------------- */

/* Bytes a string may contain as they are: printable ASCII but '"' and '\'.
 * Control characters, the two specials and every byte of a multi-byte
 * sequence stop the fast loop. */
static const unsigned char PLAIN[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20: '"' */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50: '\' */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x70 */
    /* 0x80 to 0xFF: all 0 */
};

/*
 * True when none of the eight bytes at `p` stops the plain loop: tested all
 * at once, as most string bytes are plain. Subtracting 1 from a byte that
 * is 0 (after XOR with '"' or '\\'), or 0x20 from one below 0x20, sets its
 * high bit; bytes of 0x80 and above have it already. A borrow can only
 * spread from a byte that is a stop itself, so the answer is exact.
 */
static bool eight_plain(const unsigned char *p)
{
    const uint64_t ones = 0x0101010101010101u, high_bits = 0x8080808080808080u;
    uint64_t x;
    memcpy(&x, p, sizeof x);
    uint64_t stops = (x ^ ones * '"') - ones;
    stops |= (x ^ ones * '\\') - ones;
    stops |= x - ones * 0x20;
    stops |= x;
    return (stops & high_bits) == 0;
}

/* The four hex digits at `p` as a number; -1 if one is missing or not hex,
 * with *stop at the first bad one (or `end`). */
static long hex4(const unsigned char *p, const unsigned char *end, const unsigned char **stop)
{
    long value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = i < end - p ? mcp_hex_digit(p[i]) : -1;
        if (digit < 0) {
            *stop = p + i;
            return -1;
        }
        value = value << 4 | digit;
    }
    return value;
}

static bool is_high_surrogate(long unit)
{
    return unit >= 0xD800 && unit <= 0xDBFF;
}

static bool is_low_surrogate(long unit)
{
    return unit >= 0xDC00 && unit <= 0xDFFF;
}

/*
 * A bad escape: jansson reads the byte after the backslash (or the \u
 * digit that is not one) and fails just after it. A byte that starts an
 * invalid UTF-8 sequence fails its decoding first.
 */
static void fail_escape(struct reader *r, const unsigned char *bad)
{
    const char *at = (const char *)bad;
    if (at == r->end)
        fail(r, at, json_error_invalid_syntax, "invalid escape");
    else if (!fails_to_decode(r, at))
        fail(r, at + 1, json_error_invalid_syntax, "invalid escape");
}

static bool reserve_scratch(struct reader *r, size_t n)
{
    if (n <= r->scratch_cap)
        return true;
    char *grown = allocate(n);
    if (!grown)
        return false;
    if (r->scratch != r->inline_scratch)
        release(r->scratch);
    r->scratch = grown;
    r->scratch_cap = n;
    return true;
}

/*
 * Decodes the body of a string already checked by scan_string(), escapes
 * and surrogate pairs well-formed, into the scratch buffer. The result is
 * never longer than the text: "\n" becomes one byte, "\uXXXX" at most
 * three, a pair of them four.
 */
static bool decode_escapes(struct reader *r, const char *from, const char *to)
{
    if (!reserve_scratch(r, (size_t)(to - from))) {
        fail_out_of_memory(r);
        return false;
    }
    char *out = r->scratch;
    while (from < to) {
        const char *backslash = memchr(from, '\\', (size_t)(to - from));
        size_t plain = (size_t)((backslash ? backslash : to) - from);
        memcpy(out, from, plain);
        out += plain;
        from += plain;
        if (!backslash)
            break;
        char escape = from[1];
        from += 2;
        switch (escape) {
        case 'b': *out++ = '\b'; break;
        case 'f': *out++ = '\f'; break;
        case 'n': *out++ = '\n'; break;
        case 'r': *out++ = '\r'; break;
        case 't': *out++ = '\t'; break;
        case 'u': {
            const unsigned char *digits = (const unsigned char *)from, *unused;
            uint32_t cp = (uint32_t)hex4(digits, digits + 4, &unused);
            from += 4;
            if (is_high_surrogate(cp)) {
                uint32_t low = (uint32_t)hex4(digits + 6, digits + 10, &unused);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                from += 6;
            }
            out += utf8_encode(cp, out);
            break;
        }
        default: *out++ = escape; break; /* '"', '\\' and '/' */
        }
    }
    r->string = r->scratch;
    r->string_len = (size_t)(out - r->scratch);
    r->string_in_scratch = true;
    return true;
}

/*
 * Scans the string token at r->p, its opening quote. Like jansson, it first
 * checks the raw text up to the closing quote (control characters, escapes,
 * UTF-8) and only then the pairing of escaped surrogates: a lone surrogate
 * is reported after the closing quote, and only if nothing else is wrong.
 */
static void scan_string(struct reader *r)
{
    const unsigned char *end = (const unsigned char *)r->end;
    const char *body = r->p + 1;
    const unsigned char *p = (const unsigned char *)body;
    bool escaped = false;
    long bad_unit = -1, bad_next = -1; /* the first unpaired surrogate */

    r->string_has_nul = false;
    for (;;) {
        while (end - p >= 8 && eight_plain(p))
            p += 8;
        while (p < end && PLAIN[*p])
            p++;
        if (p == end) {
            fail(r, r->end, json_error_premature_end_of_input, "premature end of input");
            return;
        }
        if (*p == '"')
            break;
        if (*p == '\\') {
            const unsigned char *e = p + 1, *stop;
            escaped = true;
            switch (e < end ? *e : '\0') {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p = e + 1;
                continue;
            case 'u':
                break;
            default:
                fail_escape(r, e);
                return;
            }
            long unit = hex4(e + 1, end, &stop);
            if (unit < 0) {
                fail_escape(r, stop);
                return;
            }
            p = e + 5;
            if (unit == 0)
                r->string_has_nul = true;
            if (is_high_surrogate(unit)) {
                long next = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2, end, &stop)
                                                                        : -1;
                if (is_low_surrogate(next)) {
                    p += 6;
                } else if (bad_unit < 0) {
                    bad_unit = unit;
                    bad_next = next; /* -1 when no \u escape follows */
                }
            } else if (is_low_surrogate(unit) && bad_unit < 0) {
                bad_unit = unit;
            }
            continue;
        }
        if (*p < 0x20) {
            if (*p == '\n')
                fail(r, (const char *)p, json_error_invalid_syntax, "unexpected newline");
            else
                fail(r, (const char *)p, json_error_invalid_syntax, "control character 0x%x",
                     *p);
            return;
        }
        size_t length = mcp_utf8_sequence_length(p, end);
        if (!length) {
            fail_utf8(r, (const char *)p);
            return;
        }
        p += length;
    }

    const char *quote = (const char *)p;
    r->p = quote + 1;
    if (bad_unit >= 0) {
        if (bad_next >= 0)
            fail(r, r->p, json_error_invalid_syntax, "invalid Unicode '\\u%04lX\\u%04lX'",
                 bad_unit, bad_next);
        else
            fail(r, r->p, json_error_invalid_syntax, "invalid Unicode '\\u%04lX'", bad_unit);
        return;
    }
    if (escaped) {
        if (!decode_escapes(r, body, quote))
            return;
    } else {
        r->string = body;
        r->string_len = (size_t)(quote - body);
        r->string_in_scratch = false;
    }
    r->token = TOKEN_STRING;
}

/* ---------------------------------------------------------------------- */
/* Numbers and words                                                       */
/* ---------------------------------------------------------------------- */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int mcp_real_from_text(const char *s, size_t n, double *out)
{
    const char *radix = nl_langinfo(RADIXCHAR);
    size_t radix_len = strlen(radix);
    char small[64], *text = small;
    size_t size = n + radix_len; /* the '.' gives way to the radix; + NUL */
    if (size > sizeof small && !(text = malloc(size)))
        return MCP_ENOMEM;
    char *t = text;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.') {
            memcpy(t, radix, radix_len);
            t += radix_len;
        } else {
            *t++ = s[i];
        }
    }
    *t = '\0';

    errno = 0;
    double value = strtod(text, NULL);
    bool overflow = errno == ERANGE && (value == HUGE_VAL || value == -HUGE_VAL);
    if (text != small)
        free(text);
    if (overflow)
        return MCP_ELIMIT;
    *out = value;
    return MCP_OK;
}

/* Reads the real number text [s, s + n) as the current token: a real,
 * or null when it overflows and the read asked for that. */
static void convert_real(struct reader *r, const char *s, size_t n)
{
    int rc = mcp_real_from_text(s, n, &r->real);
    if (rc == MCP_OK)
        r->token = TOKEN_REAL;
    else if (rc == MCP_ENOMEM)
        fail_out_of_memory(r);
    else if (r->out_of_range_is_null)
        r->token = TOKEN_NULL;
    else
        fail_here(r, json_error_numeric_overflow, "real number overflow");
}

/*
 * Scans the number token at r->p ('-' or a digit) by the RFC 8259 grammar.
 * On a malformed number the token is invalid and ends where jansson stops
 * reading: after the last byte that still fits the grammar.
 */
static void scan_number(struct reader *r)
{
    const char *s = r->p, *p = s, *end = r->end;
    bool negative = *p == '-';
    if (negative)
        p++;

    /* The integer part, converted on the way: jansson reads it as a
     * json_int_t (strtoll) when no fraction or exponent follows. The
     * magnitude of the most negative value is one more than the maximum. */
    uint64_t limit = (uint64_t)INTEGER_MAX + negative, magnitude = 0;
    bool too_big = false, is_real = false;
    if (p < end && *p == '0') {
        p++;
        if (p < end && is_digit(*p))
            goto malformed; /* no leading zeros */
    } else if (p < end && is_digit(*p)) {
        do {
            unsigned digit = (unsigned)(*p++ - '0');
            if (magnitude > (limit - digit) / 10)
                too_big = true;
            else
                magnitude = magnitude * 10 + digit;
        } while (p < end && is_digit(*p));
    } else {
        goto malformed;
    }

    if (p < end && *p == '.') {
        p++;
        if (p == end || !is_digit(*p))
            goto malformed;
        while (p < end && is_digit(*p))
            p++;
        is_real = true;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !is_digit(*p))
            goto malformed;
        while (p < end && is_digit(*p))
            p++;
        is_real = true;
    }

    if (fails_to_decode(r, p))
        return;
    r->p = p;
    if (is_real) {
        convert_real(r, s, (size_t)(p - s));
    } else if (too_big && r->out_of_range_is_null) {
        r->token = TOKEN_NULL;
    } else if (too_big) {
        fail_here(r, json_error_numeric_overflow,
                  negative ? "too big negative integer" : "too big integer");
    } else {
        /* Negated one less than the magnitude, which always fits. */
        r->integer = negative && magnitude ? -(json_int_t)(magnitude - 1) - 1
                                           : (json_int_t)magnitude;
        r->token = TOKEN_INTEGER;
    }
    return;

malformed:
    if (!fails_to_decode(r, p))
        r->p = p;
}

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A run of letters: true, false, null or an invalid token, as a whole. */
static void scan_word(struct reader *r)
{
    const char *s = r->p, *p = s;
    while (p < r->end && is_alpha(*p))
        p++;
    if (fails_to_decode(r, p))
        return;
    r->p = p;
    size_t n = (size_t)(p - s);
    if (n == 4 && memcmp(s, "true", 4) == 0)
        r->token = TOKEN_TRUE;
    else if (n == 5 && memcmp(s, "false", 5) == 0)
        r->token = TOKEN_FALSE;
    else if (n == 4 && memcmp(s, "null", 4) == 0)
        r->token = TOKEN_NULL;
}

/* ---------------------------------------------------------------------- */
/* The lexer                                                               */
/* ---------------------------------------------------------------------- */

static const char *skip_whitespace(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* Reads the next token into r->token (and its value), skipping whitespace. */
static void scan(struct reader *r)
{
    const char *p = skip_whitespace(r->p, r->end), *end = r->end;
    r->p = r->token_start = p;
    r->token = TOKEN_INVALID; /* until a scanner says otherwise */
    if (p == end) {
        r->token = TOKEN_EOF;
        return;
    }

    char c = *p;
    switch (c) {
    case '{':
    case '}':
    case '[':
    case ']':
    case ':':
    case ',':
        r->p = p + 1;
        r->token = c;
        return;
    case '"':
        scan_string(r);
        return;
    case '-':
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        scan_number(r);
        return;
    default:
        break;
    }
    if (is_alpha(c)) {
        scan_word(r);
        return;
    }
    /* Any other character is an invalid token, read whole. */
    if ((unsigned char)c < 0x80) {
        r->p = p + 1;
        return;
    }
    size_t length = mcp_utf8_sequence_length((const unsigned char *)p, (const unsigned char *)end);
    if (length)
        r->p = p + length;
    else
        fail_utf8(r, p);
}

/*
 * scan() where the parser expects punctuation (after a key or a value):
 * the usual case, ':' ',' '}' or ']', is taken on the spot, anything else
 * goes through the full lexer.
 */
static void scan_punctuation(struct reader *r)
{
    const char *p = skip_whitespace(r->p, r->end);
    if (p < r->end && (*p == ',' || *p == ':' || *p == '}' || *p == ']')) {
        r->token_start = p;
        r->p = p + 1;
        r->token = *p;
        return;
    }
    scan(r);
}

/* ---------------------------------------------------------------------- */
/* The parser                                                              */
/* ---------------------------------------------------------------------- */

static json_t *parse_value(struct reader *r, int depth);

/* Keeps `value_new` or, when a constructor failed, records it. */
static json_t *built(struct reader *r, json_t *value_new)
{
    if (!value_new)
        fail_out_of_memory(r);
    return value_new;
}

/*
 * The keys of the object being read, while they are few and all point into
 * the text: comparing a new key with them is cheaper than asking the
 * object, which hashes the key (and setting it hashes it again). Once a key
 * cannot be kept here, the object itself is asked.
 */
#define FEW_KEYS 8
struct seen_keys {
    size_t count;
    bool ask_object;
    struct {
        const char *text;
        size_t len;
    } keys[FEW_KEYS];
};

static bool key_seen(const struct seen_keys *seen, const json_t *object, const char *key,
                     size_t len)
{
    if (seen->ask_object)
        return json_object_getn(object, key, len) != NULL;
    for (size_t i = 0; i < seen->count; i++)
        if (seen->keys[i].len == len && memcmp(seen->keys[i].text, key, len) == 0)
            return true;
    return false;
}

/* `in_text`: the key points into the text, so it outlives the object. */
static void key_add(struct seen_keys *seen, const char *key, size_t len, bool in_text)
{
    if (!in_text || seen->count == FEW_KEYS) {
        seen->ask_object = true;
        return;
    }
    seen->keys[seen->count].text = key;
    seen->keys[seen->count].len = len;
    seen->count++;
}

/* ---- the memo (json_reader.h) ---------------------------------------- */

/* Does `key` name the value the memo is about, in the object starting at
 * `object`, `depth` levels deep? Before the members of the outermost
 * object are read, notes where the memo's parent object starts. */
static bool remembered(struct reader *r, const char *object, int depth, const char *key,
                       size_t key_len)
{
    const json_read_memo_t *m = r->memo;
    if (!m)
        return false;
    if (depth == 1 && strlen(m->parent_key) == key_len &&
        memcmp(m->parent_key, key, key_len) == 0 && r->token == '{')
        r->memo_parent = r->token_start;
    return depth == 2 && object == r->memo_parent && strlen(m->key) == key_len &&
           memcmp(m->key, key, key_len) == 0;
}

/* The value that starts with the current token, `depth` levels deep: the
 * remembered one when the text is the same, else read and remembered. */
static json_t *memo_value(struct reader *r, int depth)
{
    json_read_memo_t *m = r->memo;
    const char *start = r->token_start;
    if (m->value && m->max_nesting == r->max_nesting && m->len <= (size_t)(r->end - start) &&
        memcmp(start, m->text, m->len) == 0) {
        /* A value's text ends where the value does ('}', ']', '"', a
         * literal's last letter) except for a number, which the next byte
         * could continue: only containers and strings are remembered. */
        r->p = start + m->len;
        return json_incref(m->value);
    }
    json_t *value = parse_value(r, depth);
    size_t len = (size_t)(r->p - start);
    if (!value || !(json_is_object(value) || json_is_array(value) || json_is_string(value)) ||
        len > JSON_READ_MEMO_MAX_TEXT)
        return value;
    char *text = malloc(len);
    if (!text)
        return value; /* not remembered; the read goes on */
    memcpy(text, start, len);
    json_read_memo_clear(m);
    m->text = text;
    m->len = len;
    m->value = json_incref(value);
    m->max_nesting = r->max_nesting;
    return value;
}

void json_read_memo_clear(json_read_memo_t *memo)
{
    if (!memo)
        return;
    free(memo->text);
    json_decref(memo->value);
    memo->text = NULL;
    memo->len = 0;
    memo->value = NULL;
}

static json_t *parse_object(struct reader *r, int depth)
{
    const char *start = r->token_start; /* its '{' */
    json_t *object = built(r, json_object());
    if (!object)
        return NULL;
    struct seen_keys seen;
    seen.count = 0;
    seen.ask_object = false;
    scan(r);
    if (r->token == '}')
        return object;

    for (;;) {
        if (r->token != TOKEN_STRING) {
            fail_here(r, json_error_invalid_syntax, "string or '}' expected");
            goto error;
        }
        if (r->string_has_nul) {
            fail_here(r, json_error_null_byte_in_key, "NUL byte in object key not supported");
            goto error;
        }
        if (key_seen(&seen, object, r->string, r->string_len)) {
            fail_here(r, json_error_duplicate_key, "duplicate object key");
            goto error;
        }
        /* A decoded key lives in the scratch buffer, which the value's
         * strings may reuse: it needs a copy of its own until it is set. */
        size_t key_len = r->string_len;
        char *key_copy = NULL;
        const char *key = r->string;
        bool key_in_text = !r->string_in_scratch;
        if (!key_in_text) {
            key_copy = allocate(key_len); /* an escape decodes to at least a byte */
            if (!key_copy) {
                fail_out_of_memory(r);
                goto error;
            }
            memcpy(key_copy, key, key_len);
            key = key_copy;
        }

        scan_punctuation(r);
        if (r->token != ':') {
            fail_here(r, json_error_invalid_syntax, "':' expected");
            release(key_copy);
            goto error;
        }
        scan(r);
        json_t *value = remembered(r, start, depth, key, key_len)
                            ? memo_value(r, depth + 1)
                            : parse_value(r, depth + 1);
        int rc = value ? json_object_setn_new_nocheck(object, key, key_len, value) : -1;
        release(key_copy);
        if (rc != 0) {
            if (value)
                fail_out_of_memory(r);
            goto error;
        }
        key_add(&seen, key, key_len, key_in_text);

        scan_punctuation(r);
        if (r->token != ',')
            break;
        scan(r);
    }
    if (r->token != '}') {
        fail_here(r, json_error_invalid_syntax, "'}' expected");
        goto error;
    }
    return object;

error:
    json_decref(object);
    return NULL;
}

static json_t *parse_array(struct reader *r, int depth)
{
    json_t *array = built(r, json_array());
    if (!array)
        return NULL;
    scan(r);
    if (r->token == ']')
        return array;

    /* As jansson: the end of the text after '[' or ',' is "']' expected",
     * not a missing value. */
    while (r->token != TOKEN_EOF) {
        json_t *item = parse_value(r, depth + 1);
        if (!item)
            goto error;
        if (json_array_append_new(array, item) != 0) {
            fail_out_of_memory(r);
            goto error;
        }
        scan_punctuation(r);
        if (r->token != ',')
            break;
        scan(r);
    }
    if (r->token != ']') {
        fail_here(r, json_error_invalid_syntax, "']' expected");
        goto error;
    }
    return array;

error:
    json_decref(array);
    return NULL;
}

/* Builds the value that starts with the current token, `depth` levels deep
 * (the outermost value is at depth 1). */
static json_t *parse_value(struct reader *r, int depth)
{
    /* The caller's limit goes first: at a limit of exactly
     * JSON_PARSER_MAX_DEPTH, an array one deeper is the caller's to report. */
    if ((r->token == '{' || r->token == '[') && depth > r->max_nesting) {
        r->too_deep = true;
        fail_here(r, json_error_stack_overflow, "nesting limit reached");
        return NULL;
    }
    if (depth > JSON_PARSER_MAX_DEPTH) {
        fail_here(r, json_error_stack_overflow, "maximum parsing depth reached");
        return NULL;
    }
    switch (r->token) {
    case TOKEN_STRING:
        return built(r, json_stringn_nocheck(r->string, r->string_len));
    case TOKEN_INTEGER:
        return built(r, json_integer(r->integer));
    case TOKEN_REAL:
        return built(r, json_real(r->real));
    case TOKEN_TRUE:
        return json_true();
    case TOKEN_FALSE:
        return json_false();
    case TOKEN_NULL:
        return json_null();
    case '{':
        return parse_object(r, depth);
    case '[':
        return parse_array(r, depth);
    case TOKEN_INVALID:
        fail_here(r, json_error_invalid_syntax, "invalid token");
        return NULL;
    default:
        fail_here(r, json_error_invalid_syntax, "unexpected token");
        return NULL;
    }
}

json_t *json_read(const char *buf, size_t len, json_error_t *err)
{
    bool too_deep;
    return json_read_nested(buf, len, INT_MAX, &too_deep, err);
}

json_t *json_read_nested(const char *buf, size_t len, int max_nesting, bool *too_deep,
                         json_error_t *err)
{
    return json_read_memo(buf, len, max_nesting, too_deep, err, NULL);
}

static json_t *read_text(const char *buf, size_t len, int max_nesting, bool *too_deep,
                         json_error_t *err, json_read_memo_t *memo, bool out_of_range_is_null);

json_t *json_read_memo(const char *buf, size_t len, int max_nesting, bool *too_deep,
                       json_error_t *err, json_read_memo_t *memo)
{
    return read_text(buf, len, max_nesting, too_deep, err, memo, false);
}

json_t *json_read_out_of_range_as_null(const char *buf, size_t len, int max_nesting,
                                       bool *too_deep, json_error_t *err)
{
    return read_text(buf, len, max_nesting, too_deep, err, NULL, true);
}

/* The member of `members` named by the key the reader stands on, or NULL. */
static json_read_member_t *wanted_member(const struct reader *r, json_read_member_t *members,
                                         size_t n)
{
    if (r->string_has_nul)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strlen(members[i].key) == r->string_len &&
            memcmp(members[i].key, r->string, r->string_len) == 0)
            return &members[i];
    return NULL;
}

/* Reads the members of the object whose '{' the reader just passed;
 * false at the first thing json_read_members() does not take. */
static bool read_wanted_members(struct reader *r, json_read_member_t *members, size_t n)
{
    const char *object = r->token_start;
    scan(r);
    if (r->token == '}')
        return true;
    for (;;) {
        if (r->token != TOKEN_STRING)
            return false;
        json_read_member_t *m = wanted_member(r, members, n);
        if (!m || m->present)
            return false;
        m->present = true;
        /* The key is one of the caller's, so the scratch buffer may be
         * reused by the value. */
        const char *key = m->key;
        size_t key_len = r->string_len;
        scan_punctuation(r);
        if (r->token != ':')
            return false;
        scan(r);
        if (m->equals) {
            if (r->token != TOKEN_STRING || r->string_in_scratch ||
                r->string_len != strlen(m->equals) ||
                memcmp(r->string, m->equals, r->string_len) != 0)
                return false;
        } else {
            /* Not remembered at this depth; notes where the memo's parent
             * object starts when this is it. */
            remembered(r, object, 1, key, key_len);
            m->value = parse_value(r, 2);
            if (!m->value)
                return false;
        }
        scan_punctuation(r);
        if (r->token != ',')
            break;
        scan(r);
    }
    return r->token == '}';
}

bool json_read_members(const char *buf, size_t len, int max_nesting, json_read_memo_t *memo,
                       json_read_member_t *members, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        members[i].value = NULL;
        members[i].present = false;
    }
    if (!buf || max_nesting < 1)
        return false;
    json_error_t ignored;
    struct reader r = {.start = buf, .end = buf + len, .p = buf, .token_start = buf,
                       .max_nesting = max_nesting, .err = &ignored, .memo = memo};
    r.scratch = r.inline_scratch;
    r.scratch_cap = sizeof r.inline_scratch;

    scan(&r);
    bool ok = r.token == '{' && read_wanted_members(&r, members, n);
    if (ok) {
        scan(&r);
        ok = r.token == TOKEN_EOF;
    }
    if (r.scratch != r.inline_scratch)
        release(r.scratch);
    if (!ok) {
        for (size_t i = 0; i < n; i++) {
            json_decref(members[i].value);
            members[i].value = NULL;
            members[i].present = false;
        }
    }
    return ok;
}

static json_t *read_text(const char *buf, size_t len, int max_nesting, bool *too_deep,
                         json_error_t *err, json_read_memo_t *memo, bool out_of_range_is_null)
{
    *too_deep = false;
    if (!buf) {
        /* What jansson answers: no position, since there is no text. */
        if (err) {
            memset(err, 0, sizeof *err);
            err->line = err->column = -1;
            snprintf(err->source, sizeof err->source, "%s", "<buffer>");
            snprintf(err->text, JSON_ERROR_TEXT_LENGTH - 1, "%s", "wrong arguments");
            err->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_invalid_argument;
        }
        return NULL;
    }
    struct reader r = {.start = buf, .end = buf + len, .p = buf, .token_start = buf,
                       .max_nesting = max_nesting, .err = err, .memo = memo,
                       .out_of_range_is_null = out_of_range_is_null};
    r.scratch = r.inline_scratch;
    r.scratch_cap = sizeof r.inline_scratch;

    scan(&r);
    json_t *root = parse_value(&r, 1);
    if (root) {
        scan(&r);
        if (r.token != TOKEN_EOF) {
            fail_here(&r, json_error_end_of_input_expected, "end of file expected");
            json_decref(root);
            root = NULL;
        }
    }
    if (r.scratch != r.inline_scratch)
        release(r.scratch);
    *too_deep = r.too_deep;
    return root;
}
