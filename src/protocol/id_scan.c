/*
 * The id of a JSON-RPC response too large to keep (see id_scan.h).
 *
 * A state machine over the bytes of one top-level object. Its members'
 * names are read while short enough to be "id" or "method"; the value of
 * "id" is kept, every other value skipped: a string up to its closing
 * quote, an array or object up to its closing bracket (counting brackets
 * outside strings), anything else up to the next delimiter.
 */
#include "protocol/id_scan.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    S_START,        /* before the opening brace */
    S_KEY_OR_END,   /* after the opening brace: a member or the end */
    S_KEY,          /* after a comma: a member */
    S_IN_KEY,       /* inside a member name */
    S_COLON,        /* after a member name */
    S_VALUE,        /* after the colon */
    S_ID_STRING,    /* inside the string value of "id" */
    S_ID_NUMBER,    /* inside the number value of "id" */
    S_SKIP_STRING,  /* inside a string value skipped */
    S_SKIP_NESTED,  /* inside an array or object value skipped */
    S_SKIP_SCALAR,  /* inside a number or literal value skipped */
    S_AFTER_VALUE,  /* after a value: a comma or the end */
    S_DONE,         /* after the closing brace */
    S_INVALID       /* not a well-formed object: no id to tell */
};

enum { M_OTHER, M_ID, M_METHOD };

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A byte that ends a number or literal. */
static bool ends_scalar(char c)
{
    return is_space(c) || c == ',' || c == '}' || c == ']';
}

void mcp_id_scan_init(mcp_id_scan_t *s)
{
    memset(s, 0, sizeof *s);
    s->state = S_START;
}

/* The member whose name was just read. */
static int member_of(mcp_id_scan_t *s)
{
    if (s->key_escaped)
        s->unsure = true; /* it may spell "id" or "method" */
    if (s->key_escaped || s->key_len > sizeof s->key)
        return M_OTHER;
    if (s->key_len == 2 && memcmp(s->key, "id", 2) == 0)
        return M_ID;
    if (s->key_len == 6 && memcmp(s->key, "method", 6) == 0)
        return M_METHOD;
    return M_OTHER;
}

/* The first byte of a value (not white space). */
static int begin_value(mcp_id_scan_t *s, char c)
{
    if (s->member == M_METHOD)
        s->has_method = true;
    if (s->member == M_ID) {
        s->ids++;
        s->id_len = 0;
        s->id_usable = true;
        if (c == '"') {
            s->id_string = true;
            return S_ID_STRING;
        }
        s->id_string = false;
        if (c == '-' || (c >= '0' && c <= '9')) {
            s->id[s->id_len++] = c;
            return S_ID_NUMBER;
        }
        s->id_usable = false; /* null, true, an object...: no id to route by */
    }
    switch (c) {
    case '"':
        return S_SKIP_STRING;
    case '{':
    case '[':
        s->depth = 1;
        s->in_string = false;
        return S_SKIP_NESTED;
    case ',':
    case '}':
    case ']':
    case ':':
        return S_INVALID;
    default:
        return S_SKIP_SCALAR;
    }
}

/* A byte after a value (or the byte that ended a scalar). */
static int after_value(char c)
{
    if (is_space(c))
        return S_AFTER_VALUE;
    if (c == ',')
        return S_KEY;
    if (c == '}')
        return S_DONE;
    return S_INVALID;
}

static int step(mcp_id_scan_t *s, char c)
{
    switch (s->state) {
    case S_START:
        return is_space(c) ? S_START : c == '{' ? S_KEY_OR_END : S_INVALID;
    case S_KEY_OR_END:
    case S_KEY:
        if (is_space(c))
            return s->state;
        if (c == '}' && s->state == S_KEY_OR_END)
            return S_DONE;
        if (c != '"')
            return S_INVALID;
        s->key_len = 0;
        s->key_escaped = false;
        s->escaped = false;
        return S_IN_KEY;
    case S_IN_KEY:
        if (s->escaped) {
            s->escaped = false;
            return S_IN_KEY;
        }
        if (c == '\\') {
            s->escaped = s->key_escaped = true;
            return S_IN_KEY;
        }
        if (c == '"')
            return S_COLON;
        if (s->key_len < sizeof s->key)
            s->key[s->key_len] = c;
        if (s->key_len <= sizeof s->key)
            s->key_len++; /* one past the buffer: too long to matter */
        return S_IN_KEY;
    case S_COLON:
        if (is_space(c))
            return S_COLON;
        if (c != ':')
            return S_INVALID;
        s->member = member_of(s);
        return S_VALUE;
    case S_VALUE:
        return is_space(c) ? S_VALUE : begin_value(s, c);
    case S_ID_STRING:
        if (c == '"')
            return S_AFTER_VALUE;
        if (c == '\\' || (unsigned char)c < 0x20 || s->id_len == sizeof s->id) {
            /* Escapes are not decoded: such an id is skipped, not kept. */
            s->id_usable = false;
            s->escaped = c == '\\';
            return S_SKIP_STRING;
        }
        s->id[s->id_len++] = c;
        return S_ID_STRING;
    case S_ID_NUMBER:
        if (ends_scalar(c))
            return after_value(c);
        if (c < '0' || c > '9' || s->id_len == 20) /* a real, or past int64 */
            s->id_usable = false;
        else
            s->id[s->id_len++] = c;
        return S_ID_NUMBER;
    case S_SKIP_STRING:
        if (s->escaped)
            s->escaped = false;
        else if (c == '\\')
            s->escaped = true;
        else if (c == '"')
            return S_AFTER_VALUE;
        return S_SKIP_STRING;
    case S_SKIP_NESTED:
        if (s->in_string) {
            if (s->escaped)
                s->escaped = false;
            else if (c == '\\')
                s->escaped = true;
            else if (c == '"')
                s->in_string = false;
        } else if (c == '"') {
            s->in_string = true;
        } else if (c == '{' || c == '[') {
            s->depth++;
        } else if ((c == '}' || c == ']') && --s->depth == 0) {
            return S_AFTER_VALUE;
        }
        return S_SKIP_NESTED;
    case S_SKIP_SCALAR:
        return ends_scalar(c) ? after_value(c) : S_SKIP_SCALAR;
    case S_AFTER_VALUE:
        return after_value(c);
    case S_DONE:
        return is_space(c) ? S_DONE : S_INVALID;
    default:
        return S_INVALID;
    }
}

void mcp_id_scan_feed(mcp_id_scan_t *s, const char *data, size_t len)
{
    for (size_t i = 0; i < len && s->state != S_INVALID; i++)
        s->state = step(s, data[i]);
}

/* The integer of a JSON number's text: no leading zeros, within int64. */
static bool integer_of(const char *text, size_t len, long long *out)
{
    size_t digits = text[0] == '-' ? 1 : 0;
    if (len == digits || (text[digits] == '0' && len > digits + 1))
        return false;
    char buf[24];
    memcpy(buf, text, len);
    buf[len] = '\0';
    errno = 0;
    char *end;
    *out = strtoll(buf, &end, 10);
    return errno == 0 && *end == '\0';
}

/* The id of a well-formed object with one usable id, with or without a
 * "method" member as `request` says. */
static json_t *scanned_id(const mcp_id_scan_t *s, bool request)
{
    if (s->state != S_DONE || s->ids != 1 || !s->id_usable || s->has_method != request ||
        s->unsure)
        return NULL;
    if (s->id_string)
        return json_stringn(s->id, s->id_len); /* NULL unless UTF-8 */
    long long value;
    return integer_of(s->id, s->id_len, &value) ? json_integer(value) : NULL;
}

json_t *mcp_id_scan_response_id(const mcp_id_scan_t *s)
{
    return scanned_id(s, false);
}

json_t *mcp_id_scan_request_id(const mcp_id_scan_t *s)
{
    return scanned_id(s, true);
}
