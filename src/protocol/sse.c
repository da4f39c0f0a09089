/*
 * Server-Sent Events: an incremental decoder following the WHATWG HTML
 * "event stream interpretation" rules, and the matching encoder.
 */
#include <stdlib.h>
#include <string.h>

#include "protocol/sse.h"

static const unsigned char utf8_bom[3] = {0xEF, 0xBB, 0xBF};

/* ------------------------------------------------------------------------
 * Buffers. Each one keeps a NUL after its bytes, so the decoder can hand
 * them out as C strings without copying.
 * ------------------------------------------------------------------------ */

static int buffer_reserve(mcp_sse_buffer_t *b, size_t extra)
{
    if (extra > SIZE_MAX - 1 - b->len)
        return MCP_ENOMEM;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return MCP_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *bytes = realloc(b->bytes, cap);
    if (!bytes)
        return MCP_ENOMEM;
    b->bytes = bytes;
    b->cap = cap;
    return MCP_OK;
}

/* Appends n bytes; the caller has reserved room for them. */
static void buffer_put(mcp_sse_buffer_t *b, const char *s, size_t n)
{
    if (n)
        memcpy(b->bytes + b->len, s, n);
    b->len += n;
    b->bytes[b->len] = '\0';
}

static int buffer_append(mcp_sse_buffer_t *b, const char *s, size_t n)
{
    int rc = buffer_reserve(b, n);
    if (rc == MCP_OK)
        buffer_put(b, s, n);
    return rc;
}

static int buffer_set(mcp_sse_buffer_t *b, const char *s, size_t n)
{
    b->len = 0;
    return buffer_append(b, s, n);
}

static const char *buffer_str(const mcp_sse_buffer_t *b)
{
    return b->bytes ? b->bytes : "";
}

static void buffer_free(mcp_sse_buffer_t *b)
{
    free(b->bytes);
    memset(b, 0, sizeof *b);
}

/* The first CR or LF in [p, end), or NULL. */
static const char *find_line_end(const char *p, const char *end)
{
    for (; p < end; p++)
        if (*p == '\n' || *p == '\r')
            return p;
    return NULL;
}

/* ------------------------------------------------------------------------
 * Decoder
 * ------------------------------------------------------------------------ */

void mcp_sse_decoder_init(mcp_sse_decoder_t *dec, size_t max_event_bytes,
                          mcp_sse_event_fn on_event, void *user)
{
    memset(dec, 0, sizeof *dec);
    dec->max_event_bytes = max_event_bytes;
    dec->on_event = on_event;
    dec->user = user;
    dec->retry_ms = -1;
    dec->at_stream_start = true;
}

void mcp_sse_decoder_free(mcp_sse_decoder_t *dec)
{
    if (!dec)
        return;
    buffer_free(&dec->line);
    buffer_free(&dec->data);
    buffer_free(&dec->type);
    buffer_free(&dec->id);
    buffer_free(&dec->last_event_id);
}

const char *mcp_sse_decoder_last_event_id(const mcp_sse_decoder_t *dec)
{
    return buffer_str(&dec->last_event_id);
}

int64_t mcp_sse_decoder_retry_ms(const mcp_sse_decoder_t *dec)
{
    return dec->retry_ms;
}

/*
 * The memory bound: the event's data and type so far plus a line of
 * line_len bytes. Checking every line is enough, because a field's value
 * is never longer than its line.
 */
static bool line_fits(const mcp_sse_decoder_t *dec, size_t line_len)
{
    size_t held = dec->data.len + dec->type.len;
    return line_len <= dec->max_event_bytes && held <= dec->max_event_bytes - line_len;
}

/* Blank line: commit the ID, then hand the event out if it has data. */
static int dispatch(mcp_sse_decoder_t *dec)
{
    if (dec->id_pending) {
        /* Swapping instead of copying: the committed ID is now the
         * pending one, and what was committed is no longer needed. */
        mcp_sse_buffer_t committed = dec->last_event_id;
        dec->last_event_id = dec->id;
        dec->id = committed;
        dec->id_pending = false;
    }
    if (dec->data.len == 0) {
        dec->type.len = 0;
        return MCP_OK;
    }
    /* Every data line appended a LF; the last one is not part of the data. */
    dec->data.bytes[--dec->data.len] = '\0';

    mcp_sse_event_t event = {
        .type = dec->type.len ? dec->type.bytes : "message",
        .data = dec->data.bytes,
        .data_len = dec->data.len,
        .last_event_id = buffer_str(&dec->last_event_id),
        .retry_ms = dec->retry_ms,
    };
    int rc = dec->on_event(dec->user, &event);
    dec->data.len = 0;
    dec->type.len = 0;
    return rc;
}

static bool field_is(const char *name, size_t len, const char *field)
{
    return strlen(field) == len && memcmp(name, field, len) == 0;
}

/* "retry" is honoured only when it is all ASCII digits (and fits). */
static void set_retry(mcp_sse_decoder_t *dec, const char *value, size_t len)
{
    if (len == 0)
        return;
    int64_t ms = 0;
    for (size_t i = 0; i < len; i++) {
        if (value[i] < '0' || value[i] > '9')
            return;
        int digit = value[i] - '0';
        if (ms > (INT64_MAX - digit) / 10)
            return;
        ms = ms * 10 + digit;
    }
    dec->retry_ms = ms;
}

static int process_field(mcp_sse_decoder_t *dec, const char *name, size_t name_len,
                         const char *value, size_t value_len)
{
    if (field_is(name, name_len, "data")) {
        int rc = buffer_reserve(&dec->data, value_len + 1);
        if (rc == MCP_OK) {
            buffer_put(&dec->data, value, value_len);
            buffer_put(&dec->data, "\n", 1);
        }
        return rc;
    }
    if (field_is(name, name_len, "event"))
        return buffer_set(&dec->type, value, value_len);
    if (field_is(name, name_len, "id")) {
        /* An ID with a NUL could never be sent back in Last-Event-ID. */
        if (memchr(value, '\0', value_len))
            return MCP_OK;
        dec->id_pending = true;
        return buffer_set(&dec->id, value, value_len);
    }
    if (field_is(name, name_len, "retry"))
        set_retry(dec, value, value_len);
    return MCP_OK; /* unknown fields are ignored */
}

static int process_line(mcp_sse_decoder_t *dec, const char *line, size_t len)
{
    if (len == 0)
        return dispatch(dec);
    if (line[0] == ':')
        return MCP_OK; /* a comment, typically a keep-alive */

    const char *colon = memchr(line, ':', len);
    if (!colon)
        return process_field(dec, line, len, line + len, 0);

    size_t name_len = (size_t)(colon - line);
    const char *value = colon + 1;
    size_t value_len = len - name_len - 1;
    if (value_len > 0 && value[0] == ' ') {
        value++;
        value_len--;
    }
    return process_field(dec, line, name_len, value, value_len);
}

/* Keeps the start of a line whose end has not arrived yet. */
static int hold_partial_line(mcp_sse_decoder_t *dec, const char *s, size_t n)
{
    if (n > SIZE_MAX - dec->line.len || !line_fits(dec, dec->line.len + n))
        return MCP_ELIMIT;
    return buffer_append(&dec->line, s, n);
}

/* A line ends with the n bytes at s: process it, joined to any held start. */
static int end_line(mcp_sse_decoder_t *dec, const char *s, size_t n)
{
    if (dec->line.len == 0) {
        /* The common case: the whole line is in this chunk, no copy. */
        if (!line_fits(dec, n))
            return MCP_ELIMIT;
        return process_line(dec, s, n);
    }
    int rc = hold_partial_line(dec, s, n);
    if (rc != MCP_OK)
        return rc;
    rc = process_line(dec, dec->line.bytes, dec->line.len);
    dec->line.len = 0;
    return rc;
}

/*
 * Skips a UTF-8 BOM at the start of the stream, even one split across
 * chunks. When the stream turns out not to start with a BOM, the bytes that
 * looked like one are the start of the first line.
 */
static int skip_bom(mcp_sse_decoder_t *dec, const char **p, const char *end)
{
    while (dec->at_stream_start && *p < end) {
        if ((unsigned char)**p != utf8_bom[dec->bom_seen]) {
            size_t matched = dec->bom_seen;
            dec->at_stream_start = false;
            dec->bom_seen = 0;
            return matched ? hold_partial_line(dec, (const char *)utf8_bom, matched) : MCP_OK;
        }
        (*p)++;
        if (++dec->bom_seen == sizeof utf8_bom) {
            dec->at_stream_start = false;
            dec->bom_seen = 0;
        }
    }
    return MCP_OK;
}

static int stop(mcp_sse_decoder_t *dec, int rc)
{
    dec->stopped = rc;
    return rc;
}

int mcp_sse_decoder_feed(mcp_sse_decoder_t *dec, const void *buf, size_t len)
{
    if (dec->stopped)
        return dec->stopped;
    if (len == 0)
        return MCP_OK;

    const char *p = buf;
    const char *end = p + len;
    int rc = skip_bom(dec, &p, end);
    if (rc != MCP_OK)
        return stop(dec, rc);

    while (p < end) {
        if (dec->after_cr) {
            /* CRLF is one line end, even when a chunk ends between them. */
            dec->after_cr = false;
            if (*p == '\n') {
                p++;
                continue;
            }
        }
        const char *eol = find_line_end(p, end);
        if (!eol) {
            rc = hold_partial_line(dec, p, (size_t)(end - p));
            return rc == MCP_OK ? MCP_OK : stop(dec, rc);
        }
        rc = end_line(dec, p, (size_t)(eol - p));
        if (rc != MCP_OK)
            return stop(dec, rc);
        dec->after_cr = *eol == '\r';
        p = eol + 1;
    }
    return MCP_OK;
}

int mcp_sse_decoder_finish(mcp_sse_decoder_t *dec)
{
    bool truncated = dec->line.len > 0 || dec->data.len > 0 || dec->bom_seen > 0;
    int rc = dec->stopped ? dec->stopped : truncated ? MCP_EPROTO : MCP_OK;
    dec->line.len = 0;
    dec->data.len = 0;
    dec->type.len = 0;
    dec->id_pending = false; /* an ID is committed only by a blank line */
    dec->bom_seen = 0;
    dec->at_stream_start = true;
    dec->after_cr = false;
    dec->stopped = 0;
    return rc;
}

/* ------------------------------------------------------------------------
 * Encoder. Each function runs twice: once with out == NULL to measure,
 * once to write into a buffer of the measured size.
 * ------------------------------------------------------------------------ */

typedef struct sse_writer {
    char *out; /* NULL while measuring */
    size_t len;
} sse_writer_t;

static void put(sse_writer_t *w, const char *s, size_t n)
{
    if (w->out && n)
        memcpy(w->out + w->len, s, n);
    w->len += n;
}

/* "<name>: <value>\n" -- a comment is the field with the empty name. */
static void put_field(sse_writer_t *w, const char *name, const char *value, size_t value_len)
{
    put(w, name, strlen(name));
    put(w, ": ", 2);
    put(w, value, value_len);
    put(w, "\n", 1);
}

/* One field line per line of text; LF, CR and CRLF all end a line, and a
 * final line break leaves an empty last line (so it survives decoding). */
static void put_field_lines(sse_writer_t *w, const char *name, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    for (;;) {
        const char *eol = find_line_end(p, end);
        if (!eol) {
            put_field(w, name, p, (size_t)(end - p));
            return;
        }
        put_field(w, name, p, (size_t)(eol - p));
        p = eol + 1;
        if (*eol == '\r' && p < end && *p == '\n')
            p++;
    }
}

static bool has_line_break(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* Lengths beyond this could overflow the size computation (each byte may
 * become a whole "data: \n" line); no real event comes near it. */
#define SSE_MAX_INPUT (SIZE_MAX / 16)

/* Measures with a NULL writer output, allocates, writes. */
typedef void (*sse_emit_fn)(sse_writer_t *w, const void *args);

static int format(sse_emit_fn emit, const void *args, char **out, size_t *out_len)
{
    sse_writer_t w = {NULL, 0};
    emit(&w, args);
    size_t size = w.len;
    w.out = malloc(size + 1);
    if (!w.out)
        return MCP_ENOMEM;
    w.len = 0;
    emit(&w, args);
    w.out[size] = '\0';
    *out = w.out;
    if (out_len)
        *out_len = size;
    return MCP_OK;
}

typedef struct event_args {
    const char *type, *id, *data;
    size_t data_len;
} event_args_t;

static void emit_event(sse_writer_t *w, const void *args)
{
    const event_args_t *a = args;
    if (a->type && a->type[0])
        put_field(w, "event", a->type, strlen(a->type));
    if (a->id)
        put_field(w, "id", a->id, strlen(a->id));
    put_field_lines(w, "data", a->data, a->data_len);
    put(w, "\n", 1);
}

int mcp_sse_format_event(const char *type, const char *id, const char *data, size_t data_len,
                         char **out, size_t *out_len)
{
    if ((type && has_line_break(type)) || (id && has_line_break(id)) || (!data && data_len))
        return MCP_EINVAL;
    if (data_len > SSE_MAX_INPUT || (type && strlen(type) > SSE_MAX_INPUT) ||
        (id && strlen(id) > SSE_MAX_INPUT))
        return MCP_ENOMEM;
    event_args_t args = {type, id, data ? data : "", data_len};
    return format(emit_event, &args, out, out_len);
}

static void emit_comment(sse_writer_t *w, const void *args)
{
    const char *text = args;
    put_field_lines(w, "", text, strlen(text));
}

int mcp_sse_format_comment(const char *text, char **out, size_t *out_len)
{
    text = text ? text : "";
    if (strlen(text) > SSE_MAX_INPUT)
        return MCP_ENOMEM;
    return format(emit_comment, text, out, out_len);
}
