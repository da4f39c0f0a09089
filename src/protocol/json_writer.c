/* Compact and canonical serialisation of jansson values (json_writer.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/canonical_json.h"
#include "protocol/json_writer.h"

/* As deep as jansson parses; deeper trees (only a program can build them)
 * are refused rather than allowed to exhaust the stack. */
#define MAX_DEPTH 2048

/* ---- output buffer ---------------------------------------------------- */

struct out {
    char *data;
    size_t len, cap;
    bool failed; /* allocation failed or a value cannot be written */
    json_write_mode_t mode;
    const json_splice_t *splice; /* a value written already, or NULL */
};

/* Makes room for `n` more bytes and the terminating NUL; false (and the
 * output failed) when it cannot. */
static bool reserve(struct out *o, size_t n)
{
    if (o->failed)
        return false;
    if (o->cap - o->len > n)
        return true;
    /* 512 holds a typical response whole; glibc serves requests under
     * 1 KiB from its small bins, without consolidating free chunks. */
    size_t cap = o->cap ? o->cap : 512;
    while (cap - o->len <= n) {
        if (cap > SIZE_MAX / 2) {
            o->failed = true;
            return false;
        }
        cap *= 2;
    }
    char *grown = realloc(o->data, cap);
    if (!grown) {
        o->failed = true;
        return false;
    }
    o->data = grown;
    o->cap = cap;
    return true;
}

static void put(struct out *o, const char *s, size_t n)
{
    if (!reserve(o, n))
        return;
    memcpy(o->data + o->len, s, n);
    o->len += n;
    o->data[o->len] = '\0';
}

static __attribute__((noinline)) void put_char_slowly(struct out *o, char c)
{
    put(o, &c, 1);
}

/* The punctuation of every value: inline, the growing out of line. */
static inline void put_char(struct out *o, char c)
{
    if (!o->failed && o->cap - o->len > 1) {
        o->data[o->len++] = c;
        o->data[o->len] = '\0';
        return;
    }
    put_char_slowly(o, c);
}

/* ---- strings: JSON.stringify escaping -------------------------------- */

/* Which bytes need an escape: control characters, '"' and '\\'. */
static bool needs_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

/* How many bytes at the start of s[0..len) need no escape. Eight at a
 * time: a list of a thousand tools is mostly short strings, and looking
 * at them byte by byte was a third of writing it (perf). A word's bytes
 * below 0x20, or equal to '"' or '\\', are found with the usual bit
 * tricks: (x - 0x01..) & ~x & 0x80.. has a byte's high bit set where x
 * had a zero byte (and maybe spurious ones above a real one, which only
 * stop the word being skipped). */
static size_t clean_prefix(const char *s, size_t len)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        uint64_t control = (x - ones * 0x20) & ~x;
        uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
        uint64_t hits = control | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash);
        if (hits & highs)
            break;
    }
    while (i < len && !needs_escape((unsigned char)s[i]))
        i++;
    return i;
}

static void put_string(struct out *o, const char *s, size_t len)
{
    static const char HEX[] = "0123456789abcdef";
    size_t plain = 0; /* start of the run of bytes that need no escape */
    /* Most strings need no escape: one copy between the quotes. */
    size_t clean = clean_prefix(s, len);
    if (clean == len && len < SIZE_MAX / 2 && reserve(o, len + 2)) {
        char *d = o->data + o->len;
        d[0] = '"';
        memcpy(d + 1, s, len);
        d[len + 1] = '"';
        d[len + 2] = '\0';
        o->len += len + 2;
        return;
    }
    /* Room for the rest at once, and an escape in eight bytes (a newline
     * a line, say): a long text then grows the buffer once, instead of
     * doubling it a dozen times, copying it and touching fresh pages
     * each time. More escapes than that grow it as usual. */
    if (len - clean < SIZE_MAX / 4)
        reserve(o, len - clean + (len - clean) / 8 + 2);
    put_char(o, '"');
    for (size_t i = clean; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!needs_escape(c))
            continue;
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
            memcpy(unicode, "\\u00", 4);
            unicode[4] = HEX[c >> 4];
            unicode[5] = HEX[c & 15];
            unicode[6] = '\0';
            escape = unicode;
        }
        put(o, s + plain, i - plain);
        put(o, escape, strlen(escape));
        plain = i + 1;
    }
    put(o, s + plain, len - plain);
    put_char(o, '"');
}

/* ---- numbers ----------------------------------------------------------- */

/* Writes the decimal digits of `value`, and its sign, so that they end
 * just before `end` (at most 20 bytes); returns where they start.
 * snprintf() took ~650 instructions for the id of every response. */
static char *format_int64(int64_t value, char *end)
{
    /* The magnitude as unsigned, so INT64_MIN needs no special case. */
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    char *p = end;
    do {
        *--p = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0)
        *--p = '-';
    return p;
}

static void put_number(struct out *o, const json_t *v)
{
    char number[40];
    if (o->mode == JSON_WRITE_COMPACT && json_is_integer(v)) {
        char *end = number + sizeof number;
        char *start = format_int64((int64_t)json_integer_value(v), end);
        put(o, start, (size_t)(end - start));
        return;
    }
    /* Canonical: every number is a double (I-JSON). Compact reals: the
     * shortest digits that read back as the same double. */
    int n = mcp_format_es_number(json_number_value(v), number, sizeof number - 2);
    if (n > 0 && o->mode == JSON_WRITE_COMPACT && !strpbrk(number, ".e")) {
        memcpy(number + n, ".0", 3); /* still a real when read back */
        n += 2;
    }
    if (n < 0)
        o->failed = true;
    else
        put(o, number, (size_t)n);
}

/* ---- object members: insertion order, or UTF-16 order ---------------- */

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

static void put_member(struct out *o, bool first, const char *key, size_t len,
                       const json_t *value, int depth)
{
    if (!first)
        put_char(o, ',');
    put_string(o, key, len);
    put_char(o, ':');
    put_value(o, value, depth + 1);
}

static void put_object(struct out *o, const json_t *obj, int depth)
{
    const char *key;
    size_t key_len;
    json_t *value;
    put_char(o, '{');
    if (o->mode == JSON_WRITE_COMPACT) {
        /* The iterator itself rather than json_object_keylen_foreach,
         * which goes from key to iterator and back for every member. */
        bool first = true;
        for (void *it = json_object_iter((json_t *)obj); it;
             it = json_object_iter_next((json_t *)obj, it)) {
            put_member(o, first, json_object_iter_key(it), json_object_iter_key_len(it),
                       json_object_iter_value(it), depth);
            first = false;
        }
    } else {
        size_t n = json_object_size(obj), i = 0;
        struct member *members = n ? malloc(n * sizeof *members) : NULL;
        if (n && !members) {
            o->failed = true;
            return;
        }
        json_object_keylen_foreach((json_t *)obj, key, key_len, value) {
            members[i].key = key;
            members[i].len = key_len;
            members[i].value = value;
            i++;
        }
        if (n > 1)
            qsort(members, n, sizeof *members, compare_members);
        for (i = 0; i < n && !o->failed; i++)
            put_member(o, i == 0, members[i].key, members[i].len, members[i].value, depth);
        free(members);
    }
    put_char(o, '}');
}

static void put_value(struct out *o, const json_t *v, int depth)
{
    size_t i;
    json_t *item;

    if (o->failed)
        return;
    if (depth > MAX_DEPTH) {
        o->failed = true;
        return;
    }
    if (o->splice && v == o->splice->node) {
        put_char(o, '[');
        for (size_t k = 0; k < o->splice->n; k++) {
            if (k)
                put_char(o, ',');
            put(o, o->splice->items[k].text, o->splice->items[k].len);
        }
        put_char(o, ']');
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(o, v, depth);
        break;
    case JSON_ARRAY:
        put_char(o, '[');
        json_array_foreach(v, i, item) {
            if (i)
                put_char(o, ',');
            put_value(o, item, depth + 1);
        }
        put_char(o, ']');
        break;
    case JSON_STRING:
        put_string(o, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
    case JSON_REAL:
        put_number(o, v);
        break;
    case JSON_TRUE:
        put(o, "true", 4);
        break;
    case JSON_FALSE:
        put(o, "false", 5);
        break;
    case JSON_NULL:
        put(o, "null", 4);
        break;
    }
}

/* Hands over what `o` holds (NULL when anything failed). */
static char *finish(struct out *o, size_t *len)
{
    if (o->failed || !o->data) {
        free(o->data);
        return NULL;
    }
    if (len)
        *len = o->len;
    return o->data;
}

char *json_write_result(const json_t *id, const json_t *result, size_t *len)
{
    return json_write_result_spliced(id, result, NULL, len);
}

char *json_write_result_spliced(const json_t *id, const json_t *result,
                                const json_splice_t *splice, size_t *len)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    static const char member[] = ",\"result\":";
    if (!(json_is_string(id) || json_is_integer(id)) || !json_is_object(result))
        return NULL;
    struct out o = {.mode = JSON_WRITE_COMPACT, .splice = splice};
    /* A pasted text is most of the answer (a list page of a hundred
     * kilobytes): room for it at once, rather than doubling up to it,
     * copying as the buffer grows and touching fresh pages each time. */
    if (splice && splice->node && splice->len < SIZE_MAX / 4)
        reserve(&o, splice->len + splice->n + 1024);
    put(&o, head, sizeof head - 1);
    put_value(&o, id, 1);
    put(&o, member, sizeof member - 1);
    put_value(&o, result, 1);
    put_char(&o, '}');
    return finish(&o, len);
}

char *json_write_result_members(const json_t *id, const json_member_t *members, size_t n,
                                size_t *len)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    static const char member[] = ",\"result\":{";
    if (!(json_is_string(id) || json_is_integer(id)) || (n && !members))
        return NULL;
    struct out o = {.mode = JSON_WRITE_COMPACT};
    put(&o, head, sizeof head - 1);
    put_value(&o, id, 1);
    put(&o, member, sizeof member - 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            put_char(&o, ',');
        put_string(&o, members[i].key, strlen(members[i].key));
        put_char(&o, ':');
        const json_member_t *m = &members[i];
        if (m->value) {
            put_value(&o, m->value, 2);
            continue;
        }
        if (m->raw_len)
            put(&o, m->raw, m->raw_len);
        if (m->string)
            put_string(&o, m->string, m->string_len);
        if (m->raw_after_len)
            put(&o, m->raw_after, m->raw_after_len);
    }
    put(&o, "}}", 2);
    return finish(&o, len);
}

char *json_write(const json_t *value, json_write_mode_t mode, size_t *len)
{
    struct out o = {.mode = mode};
    if (!value)
        return NULL;
    put_value(&o, value, 0);
    return finish(&o, len);
}
