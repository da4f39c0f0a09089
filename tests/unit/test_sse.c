/* The SSE codec (src/protocol/sse.h): WHATWG event stream parsing under
 * every chunking, memory limits, and the encoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/sse.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define S(lit) lit, sizeof(lit) - 1 /* a literal with its length (it may hold NULs) */

/* ------------------------------------------------------------------------
 * A transcript of the dispatched events, one per line:
 *   <type>|<data>|<last event id>|<retry>
 * with \n, \r, \0 and | in data escaped, so tables can spell it out.
 * ------------------------------------------------------------------------ */

typedef struct transcript {
    char text[8192];
    size_t len;
    int stop_after; /* > 0: the callback returns 42 after this many events */
    int events;
} transcript_t;

static void add(transcript_t *t, const char *s, size_t n)
{
    assert_true(t->len + n < sizeof t->text);
    memcpy(t->text + t->len, s, n);
    t->len += n;
    t->text[t->len] = '\0';
}

static void add_escaped(transcript_t *t, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '\n': add(t, "\\n", 2); break;
        case '\r': add(t, "\\r", 2); break;
        case '\0': add(t, "\\0", 2); break;
        case '|': add(t, "\\|", 2); break;
        case '\\': add(t, "\\\\", 2); break;
        default: add(t, s + i, 1);
        }
    }
}

static int record(void *user, const mcp_sse_event_t *ev)
{
    transcript_t *t = user;
    char retry[32];
    /* The data is handed out NUL-terminated. */
    assert_int_equal(ev->data[ev->data_len], '\0');
    add_escaped(t, ev->type, strlen(ev->type));
    add(t, "|", 1);
    add_escaped(t, ev->data, ev->data_len);
    add(t, "|", 1);
    add_escaped(t, ev->last_event_id, strlen(ev->last_event_id));
    snprintf(retry, sizeof retry, "|%lld\n", (long long)ev->retry_ms);
    add(t, retry, strlen(retry));
    t->events++;
    return t->stop_after > 0 && t->events >= t->stop_after ? 42 : 0;
}

/* The outcome of decoding one stream. */
typedef struct decoded {
    transcript_t t;
    int feed_rc;   /* the first non-zero feed result, or 0 */
    int finish_rc;
} decoded_t;

/*
 * Decodes `input` cut at the `n_cuts` offsets in `cuts` (ascending), so
 * the stream arrives in n_cuts + 1 chunks.
 */
static void decode_cut(const char *input, size_t len, const size_t *cuts, size_t n_cuts,
                       size_t max_event_bytes, decoded_t *out)
{
    memset(out, 0, sizeof *out);
    mcp_sse_decoder_t dec;
    mcp_sse_decoder_init(&dec, max_event_bytes, record, &out->t);
    size_t at = 0;
    for (size_t i = 0; i <= n_cuts; i++) {
        size_t next = i < n_cuts ? cuts[i] : len;
        int rc = mcp_sse_decoder_feed(&dec, input + at, next - at);
        if (rc != 0 && out->feed_rc == 0)
            out->feed_rc = rc;
        at = next;
    }
    out->finish_rc = mcp_sse_decoder_finish(&dec);
    mcp_sse_decoder_free(&dec);
}

static void decode_whole(const char *input, size_t len, size_t max, decoded_t *out)
{
    decode_cut(input, len, NULL, 0, max, out);
}

/* Every way of cutting the stream into two and three chunks, and one byte
 * at a time, gives the same events and results as one chunk. */
static void expect_chunking_invariant(const char *name, const char *input, size_t len,
                                      size_t max, const decoded_t *whole)
{
    static decoded_t cut; /* large; static keeps it off the stack */
    for (size_t i = 0; i <= len; i++) {
        for (size_t j = i; j <= len; j++) {
            size_t cuts[2] = {i, j};
            decode_cut(input, len, cuts, 2, max, &cut);
            if (strcmp(cut.t.text, whole->t.text) != 0 || cut.feed_rc != whole->feed_rc ||
                cut.finish_rc != whole->finish_rc)
                fail_msg("%s: cut at %zu and %zu gives\n%s(rc %d/%d), whole gives\n%s(rc %d/%d)",
                         name, i, j, cut.t.text, cut.feed_rc, cut.finish_rc, whole->t.text,
                         whole->feed_rc, whole->finish_rc);
        }
    }
    size_t bytes[512];
    assert_true(len <= COUNT(bytes));
    for (size_t i = 0; i < len; i++)
        bytes[i] = i + 1;
    decode_cut(input, len, bytes, len ? len - 1 : 0, max, &cut);
    if (strcmp(cut.t.text, whole->t.text) != 0 || cut.feed_rc != whole->feed_rc ||
        cut.finish_rc != whole->finish_rc)
        fail_msg("%s: byte by byte gives\n%s", name, cut.t.text);
}

/* ------------------------------------------------------------------------
 * Decoding rules
 * ------------------------------------------------------------------------ */

typedef struct decode_row {
    const char *name;
    const char *input;
    size_t len;
    const char *events; /* the transcript */
    int finish_rc;
} decode_row_t;

#define ROW(name, input, events, finish) {name, S(input), events, finish}

static const decode_row_t decode_rows[] = {
    ROW("one event", "data: hello\n\n", "message|hello||-1\n", MCP_OK),
    ROW("nothing", "", "", MCP_OK),
    ROW("blank lines only", "\n\n\r\n\r", "", MCP_OK),
    /* line ends */
    ROW("CRLF", "data: a\r\n\r\n", "message|a||-1\n", MCP_OK),
    ROW("CR", "data: a\r\r", "message|a||-1\n", MCP_OK),
    ROW("mixed line ends", "event: x\r\ndata: 1\rdata: 2\n\r\n", "x|1\\n2||-1\n", MCP_OK),
    ROW("LF then CR is two line ends", "data: a\n\rdata: b\n\n", "message|a||-1\nmessage|b||-1\n",
        MCP_OK),
    ROW("CR CR LF: line end, blank line", "data: a\r\r\ndata: b\n\n",
        "message|a||-1\nmessage|b||-1\n", MCP_OK),
    ROW("CRLF LF: line end, blank line", "data: a\r\n\ndata: b\r\n\r\n",
        "message|a||-1\nmessage|b||-1\n", MCP_OK),
    /* byte order mark */
    ROW("BOM skipped", "\xEF\xBB\xBF" "data: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("BOM skipped once", "\xEF\xBB\xBF\xEF\xBB\xBF" "data: a\n\n", "", MCP_OK),
    ROW("BOM later is content", "data: a\n\n\xEF\xBB\xBF" "data: b\n\n", "message|a||-1\n", MCP_OK),
    ROW("BOM inside data kept", "data: \xEF\xBB\xBFx\n\n", "message|\xEF\xBB\xBFx||-1\n", MCP_OK),
    ROW("partial BOM is content", "\xEF\xBB" "data: a\n\ndata: b\n\n", "message|b||-1\n", MCP_OK),
    ROW("one BOM byte, own line", "\xEF\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("partial BOM then line end", "\xEF\xBB\r\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    /* comments */
    ROW("comments ignored", ": keep-alive\n\ndata: a\n: inside an event\ndata: b\n\n",
        "message|a\\nb||-1\n", MCP_OK),
    ROW("bare colon", ":\n:\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("comment with a field inside", ": data: x\n\n", "", MCP_OK),
    /* data */
    ROW("multi-line data", "data: a\ndata:\ndata: b\n\n", "message|a\\n\\nb||-1\n", MCP_OK),
    ROW("no space after colon", "data:a\n\n", "message|a||-1\n", MCP_OK),
    ROW("only one space stripped", "data:  a \n\n", "message| a ||-1\n", MCP_OK),
    ROW("tab not stripped", "data:\ta\n\n", "message|\ta||-1\n", MCP_OK),
    ROW("colons in the value", "data: a: b:c\n\n", "message|a: b:c||-1\n", MCP_OK),
    ROW("field without colon", "data\n\n", "message|||-1\n", MCP_OK),
    ROW("two empty data lines", "data\ndata\n\n", "message|\\n||-1\n", MCP_OK),
    ROW("empty data dispatches", "data:\n\n", "message|||-1\n", MCP_OK),
    ROW("data with NUL", "data: a\0b\n\n", "message|a\\0b||-1\n", MCP_OK),
    ROW("JSON payload", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
        "message|{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}||-1\n", MCP_OK),
    /* event type */
    ROW("no data, no event", "event: x\n\n", "", MCP_OK),
    ROW("type reset after empty event", "event: x\n\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("type reset after dispatch", "event: x\ndata: a\n\ndata: b\n\n",
        "x|a||-1\nmessage|b||-1\n", MCP_OK),
    ROW("event after data", "data: a\nevent: e\n\n", "e|a||-1\n", MCP_OK),
    ROW("last event field wins", "event: x\nevent: y\ndata: a\n\n", "y|a||-1\n", MCP_OK),
    ROW("empty event field", "event:\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("field names are case-sensitive", "Data: a\nEVENT: x\n\n", "", MCP_OK),
    ROW("unknown fields ignored", "foo: bar\ndata: a\nfoo\n\n", "message|a||-1\n", MCP_OK),
    ROW("field name with space", "data : a\n\n", "", MCP_OK),
    /* id */
    ROW("id kept for later events", "id: 1\ndata: a\n\ndata: b\n\n",
        "message|a|1|-1\nmessage|b|1|-1\n", MCP_OK),
    ROW("id with NUL ignored", "id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n",
        "message|a|1|-1\nmessage|b|1|-1\n", MCP_OK),
    ROW("empty id resets", "id: 1\ndata: a\n\nid\ndata: b\n\n", "message|a|1|-1\nmessage|b||-1\n",
        MCP_OK),
    ROW("id of an event without data", "id: 7\n\ndata: a\n\n", "message|a|7|-1\n", MCP_OK),
    ROW("id after data", "data: a\nid: 3\n\n", "message|a|3|-1\n", MCP_OK),
    ROW("id with spaces", "id:  x y\ndata: a\n\n", "message|a| x y|-1\n", MCP_OK),
    /* retry */
    ROW("retry", "retry: 1500\ndata: a\n\n", "message|a||1500\n", MCP_OK),
    ROW("retry zero", "retry: 0\ndata: a\n\n", "message|a||0\n", MCP_OK),
    ROW("retry applies at once", "retry: 10\n\ndata: a\n\nretry: 20\ndata: b\n\n",
        "message|a||10\nmessage|b||20\n", MCP_OK),
    ROW("retry not digits", "retry: 15x\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("retry negative", "retry: -1\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("retry empty", "retry:\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("retry with space inside", "retry: 1 0\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("retry too large", "retry: 99999999999999999999\ndata: a\n\n", "message|a||-1\n", MCP_OK),
    ROW("retry largest", "retry: 9223372036854775807\ndata: a\n\n",
        "message|a||9223372036854775807\n", MCP_OK),
    ROW("bad retry keeps the old one", "retry: 5\nretry: x\ndata: a\n\n", "message|a||5\n", MCP_OK),
    /* end of stream */
    ROW("incomplete event discarded", "data: a\n\ndata: b\n", "message|a||-1\n", MCP_EPROTO),
    ROW("unterminated line discarded", "data: a", "", MCP_EPROTO),
    ROW("partial BOM at the end", "\xEF\xBB", "", MCP_EPROTO),
    ROW("trailing comment is clean", "data: a\n\n: bye\n", "message|a||-1\n", MCP_OK),
    ROW("trailing fields without data are clean", "data: a\n\nevent: x\nid: 9\n",
        "message|a||-1\n", MCP_OK),
    ROW("trailing CR ends the stream cleanly", "data: a\r\r", "message|a||-1\n", MCP_OK),
    /* captures (notes/wire-ts2.md 6.3 and 7.4) */
    ROW("server-everything priming event",
        "id: 73f29b04\ndata: \n\nevent: message\nid: 39d03743\ndata: {\"result\":{},\"jsonrpc\":\"2.0\","
        "\"id\":1}\n\n",
        "message||73f29b04|-1\nmessage|{\"result\":{},\"jsonrpc\":\"2.0\",\"id\":1}|39d03743|-1\n",
        MCP_OK),
    ROW("ts2 notifications before the result",
        "event: message\ndata: {\"method\":\"notifications/progress\"}\n\nevent: message\ndata: "
        "{\"id\":4}\n\n",
        "message|{\"method\":\"notifications/progress\"}||-1\nmessage|{\"id\":4}||-1\n", MCP_OK),
};

static void test_decode_rules(void **state)
{
    (void)state;
    static decoded_t whole;
    for (size_t i = 0; i < COUNT(decode_rows); i++) {
        const decode_row_t *row = &decode_rows[i];
        decode_whole(row->input, row->len, SIZE_MAX, &whole);
        if (strcmp(whole.t.text, row->events) != 0 || whole.feed_rc != 0 ||
            whole.finish_rc != row->finish_rc)
            fail_msg("%s: got\n%s(feed %d, finish %d), want\n%s(finish %d)", row->name,
                     whole.t.text, whole.feed_rc, whole.finish_rc, row->events, row->finish_rc);
        expect_chunking_invariant(row->name, row->input, row->len, SIZE_MAX, &whole);
    }
}

/* ------------------------------------------------------------------------
 * The memory limit
 * ------------------------------------------------------------------------ */

typedef struct limit_row {
    const char *name;
    const char *input;
    size_t len;
    size_t max;
    const char *events; /* dispatched before the limit hit, if it did */
    int feed_rc;
} limit_row_t;

#define LIMIT(name, input, max, events, rc) {name, S(input), max, events, rc}

static const limit_row_t limit_rows[] = {
    LIMIT("line exactly at the limit", "data: 1234\n\n", 10, "message|1234||-1\n", MCP_OK),
    LIMIT("line over the limit", "data: 12345\n\n", 10, "", MCP_ELIMIT),
    LIMIT("data accumulates", "data: 12345\ndata: 12345\n\n", 17, "message|12345\\n12345||-1\n",
          MCP_OK),
    LIMIT("accumulated data over the limit", "data: 12345\ndata: 12345\n\n", 16, "", MCP_ELIMIT),
    LIMIT("event type counts", "event: abcde\ndata: 1234\n\n", 14, "", MCP_ELIMIT),
    LIMIT("event type within", "event: abcde\ndata: 1234\n\n", 15, "abcde|1234||-1\n", MCP_OK),
    LIMIT("each event starts afresh", "data: 1234\n\ndata: 1234\n\ndata: 1234\n\n", 10,
          "message|1234||-1\nmessage|1234||-1\nmessage|1234||-1\n", MCP_OK),
    LIMIT("events before the limit are delivered", "data: 1\n\ndata: 123456789012\n\ndata: 2\n\n",
          10, "message|1||-1\n", MCP_ELIMIT),
    LIMIT("comment lines count", ": 123456789\n", 10, "", MCP_ELIMIT),
    LIMIT("unterminated line", "data: 123456789", 10, "", MCP_ELIMIT),
    LIMIT("zero allows only blank lines", "\n\n", 0, "", MCP_OK),
    LIMIT("zero rejects any field", "data\n\n", 0, "", MCP_ELIMIT),
};

static void test_limits(void **state)
{
    (void)state;
    static decoded_t whole;
    for (size_t i = 0; i < COUNT(limit_rows); i++) {
        const limit_row_t *row = &limit_rows[i];
        decode_whole(row->input, row->len, row->max, &whole);
        if (strcmp(whole.t.text, row->events) != 0 || whole.feed_rc != row->feed_rc ||
            whole.finish_rc != row->feed_rc)
            fail_msg("%s: got\n%s(rc %d), want\n%s(rc %d)", row->name, whole.t.text,
                     whole.feed_rc, row->events, row->feed_rc);
        expect_chunking_invariant(row->name, row->input, row->len, row->max, &whole);
    }
}

/* A peer that never ends its line is stopped at the limit, not after it
 * has sent everything. */
static void test_limit_bounds_an_endless_line(void **state)
{
    (void)state;
    transcript_t t = {0};
    mcp_sse_decoder_t dec;
    mcp_sse_decoder_init(&dec, 1024, record, &t);
    char chunk[100];
    memset(chunk, 'x', sizeof chunk);
    int rc = MCP_OK;
    size_t fed = 0;
    while (rc == MCP_OK && fed < 1000000) {
        rc = mcp_sse_decoder_feed(&dec, chunk, sizeof chunk);
        fed += sizeof chunk;
    }
    assert_int_equal(rc, MCP_ELIMIT);
    assert_true(fed <= 1024 + sizeof chunk);
    assert_true(dec.line.cap <= 2048);
    mcp_sse_decoder_free(&dec);
}

/* After a failure the decoder refuses input until finish(), which makes it
 * usable again. */
static void test_errors_are_sticky_until_finish(void **state)
{
    (void)state;
    transcript_t t = {0};
    mcp_sse_decoder_t dec;
    mcp_sse_decoder_init(&dec, 8, record, &t);
    assert_int_equal(mcp_sse_decoder_feed(&dec, S("data: 123456\n\n")), MCP_ELIMIT);
    assert_int_equal(mcp_sse_decoder_feed(&dec, S("data: 1\n\n")), MCP_ELIMIT);
    assert_int_equal(t.events, 0);
    assert_int_equal(mcp_sse_decoder_finish(&dec), MCP_ELIMIT);
    assert_int_equal(mcp_sse_decoder_feed(&dec, S("data: 1\n\n")), MCP_OK);
    assert_string_equal(t.text, "message|1||-1\n");
    mcp_sse_decoder_free(&dec);
}

static void test_callback_stops_decoding(void **state)
{
    (void)state;
    transcript_t t = {.stop_after = 2};
    mcp_sse_decoder_t dec;
    mcp_sse_decoder_init(&dec, SIZE_MAX, record, &t);
    assert_int_equal(mcp_sse_decoder_feed(&dec, S("data: 1\n\ndata: 2\n\ndata: 3\n\n")), 42);
    assert_string_equal(t.text, "message|1||-1\nmessage|2||-1\n");
    assert_int_equal(mcp_sse_decoder_feed(&dec, S("data: 4\n\n")), 42);
    assert_int_equal(t.events, 2);

    assert_int_equal(mcp_sse_decoder_finish(&dec), 42);
    t.stop_after = 0;
    assert_int_equal(mcp_sse_decoder_feed(&dec, S("data: 5\n\n")), MCP_OK);
    assert_int_equal(t.events, 3);
    mcp_sse_decoder_free(&dec);
}

/* finish() ends one stream: the committed ID and the retry time carry over
 * to the next (a reconnection); a pending ID and the BOM state do not. */
static void test_finish_starts_a_new_stream(void **state)
{
    (void)state;
    transcript_t t = {0};
    mcp_sse_decoder_t dec;
    mcp_sse_decoder_init(&dec, SIZE_MAX, record, &t);
    assert_string_equal(mcp_sse_decoder_last_event_id(&dec), "");
    assert_int_equal(mcp_sse_decoder_retry_ms(&dec), -1);

    assert_int_equal(mcp_sse_decoder_feed(&dec, S("retry: 300\nid: 9\ndata: a\n\nid: 10\n")),
                     MCP_OK);
    assert_string_equal(mcp_sse_decoder_last_event_id(&dec), "9");
    assert_int_equal(mcp_sse_decoder_finish(&dec), MCP_OK);
    /* "id: 10" never reached a blank line: resuming must not skip event 10 */
    assert_string_equal(mcp_sse_decoder_last_event_id(&dec), "9");
    assert_int_equal(mcp_sse_decoder_retry_ms(&dec), 300);

    assert_int_equal(mcp_sse_decoder_feed(&dec, S("\xEF\xBB\xBF" "data: b\n\n")), MCP_OK);
    assert_string_equal(t.text, "message|a|9|300\nmessage|b|9|300\n");

    /* a blank line commits an ID even without data */
    assert_int_equal(mcp_sse_decoder_feed(&dec, S("id: 11\n\n")), MCP_OK);
    assert_string_equal(mcp_sse_decoder_last_event_id(&dec), "11");
    mcp_sse_decoder_free(&dec);
    mcp_sse_decoder_free(NULL);
}

static void test_feed_nothing(void **state)
{
    (void)state;
    transcript_t t = {0};
    mcp_sse_decoder_t dec;
    mcp_sse_decoder_init(&dec, SIZE_MAX, record, &t);
    assert_int_equal(mcp_sse_decoder_feed(&dec, NULL, 0), MCP_OK);
    assert_int_equal(mcp_sse_decoder_finish(&dec), MCP_OK);
    mcp_sse_decoder_free(&dec);
}

/* ------------------------------------------------------------------------
 * Encoder
 * ------------------------------------------------------------------------ */

typedef struct encode_row {
    const char *name;
    const char *type, *id, *data;
    size_t data_len;
    const char *wire;     /* expected output, or NULL when rc != MCP_OK */
    size_t wire_len;
    int rc;
    const char *decoded;  /* transcript of decoding the output */
} encode_row_t;

static const encode_row_t encode_rows[] = {
    {"data only", NULL, NULL, S("hello"), S("data: hello\n\n"), MCP_OK, "message|hello||-1\n"},
    {"all fields", "message", "1", S("a\nb"), S("event: message\nid: 1\ndata: a\ndata: b\n\n"), MCP_OK,
     "message|a\\nb|1|-1\n"},
    {"empty type omitted", "", NULL, S("x"), S("data: x\n\n"), MCP_OK, "message|x||-1\n"},
    {"custom type", "endpoint", NULL, S("/mcp?s=1"), S("event: endpoint\ndata: /mcp?s=1\n\n"), MCP_OK,
     "endpoint|/mcp?s=1||-1\n"},
    {"empty id is sent", NULL, "", S("x"), S("id: \ndata: x\n\n"), MCP_OK, "message|x||-1\n"},
    {"empty data", NULL, NULL, S(""), S("data: \n\n"), MCP_OK, "message|||-1\n"},
    {"NULL data", NULL, NULL, NULL, 0, S("data: \n\n"), MCP_OK, "message|||-1\n"},
    {"every line break", NULL, NULL, S("a\r\nb\rc\nd"), S("data: a\ndata: b\ndata: c\ndata: d\n\n"),
     MCP_OK, "message|a\\nb\\nc\\nd||-1\n"},
    {"trailing line break kept", NULL, NULL, S("a\n"), S("data: a\ndata: \n\n"), MCP_OK,
     "message|a\\n||-1\n"},
    {"only a line break", NULL, NULL, S("\r\n"), S("data: \ndata: \n\n"), MCP_OK,
     "message|\\n||-1\n"},
    {"CR CR", NULL, NULL, S("\r\r"), S("data: \ndata: \ndata: \n\n"), MCP_OK, "message|\\n\\n||-1\n"},
    {"leading space kept", NULL, NULL, S(" x"), S("data:  x\n\n"), MCP_OK, "message| x||-1\n"},
    {"field-like data", NULL, NULL, S("data: y\nid: 5\n"), S("data: data: y\ndata: id: 5\ndata: \n\n"),
     MCP_OK, "message|data: y\\nid: 5\\n||-1\n"},
    {"NUL in data", NULL, NULL, S("a\0b"), S("data: a\0b\n\n"), MCP_OK, "message|a\\0b||-1\n"},
    {"type with LF", "a\nb", NULL, S("x"), NULL, 0, MCP_EINVAL, NULL},
    {"type with CR", "a\r", NULL, S("x"), NULL, 0, MCP_EINVAL, NULL},
    {"id with LF", NULL, "1\n", S("x"), NULL, 0, MCP_EINVAL, NULL},
    {"id with CR", NULL, "\r1", S("x"), NULL, 0, MCP_EINVAL, NULL},
    {"NULL data with a length", NULL, NULL, NULL, 3, NULL, 0, MCP_EINVAL, NULL},
};

static void test_encode(void **state)
{
    (void)state;
    static decoded_t back;
    for (size_t i = 0; i < COUNT(encode_rows); i++) {
        const encode_row_t *row = &encode_rows[i];
        char *out = (char *)"untouched";
        size_t out_len = 12345;
        int rc = mcp_sse_format_event(row->type, row->id, row->data, row->data_len, &out, &out_len);
        if (rc != row->rc)
            fail_msg("%s: rc %d, want %d", row->name, rc, row->rc);
        if (rc != MCP_OK) {
            assert_string_equal(out, "untouched");
            assert_int_equal(out_len, 12345);
            continue;
        }
        if (out_len != row->wire_len || memcmp(out, row->wire, out_len) != 0 || out[out_len] != '\0')
            fail_msg("%s: wrong wire text: %s", row->name, out);
        decode_whole(out, out_len, SIZE_MAX, &back);
        if (strcmp(back.t.text, row->decoded) != 0 || back.feed_rc || back.finish_rc)
            fail_msg("%s: decodes to\n%s", row->name, back.t.text);
        free(out);
    }
    /* out_len is optional */
    char *out = NULL;
    assert_int_equal(mcp_sse_format_event(NULL, NULL, S("x"), &out, NULL), MCP_OK);
    assert_string_equal(out, "data: x\n\n");
    free(out);
}

static void test_encode_comment(void **state)
{
    (void)state;
    static const struct {
        const char *text, *wire;
    } rows[] = {
        {NULL, ": \n"},
        {"", ": \n"},
        {"keep-alive", ": keep-alive\n"},
        {"a\nb\r\nc", ": a\n: b\n: c\n"},
    };
    static decoded_t back;
    for (size_t i = 0; i < COUNT(rows); i++) {
        char *out = NULL;
        size_t len = 0;
        assert_int_equal(mcp_sse_format_comment(rows[i].text, &out, &len), MCP_OK);
        assert_string_equal(out, rows[i].wire);
        assert_int_equal(len, strlen(rows[i].wire));
        /* A comment between the lines of an event changes nothing. */
        char stream[128];
        int n = snprintf(stream, sizeof stream, "data: 1\n%sdata: 2\n\n%s", out, out);
        decode_whole(stream, (size_t)n, SIZE_MAX, &back);
        assert_string_equal(back.t.text, "message|1\\n2||-1\n");
        assert_int_equal(back.finish_rc, MCP_OK);
        free(out);
    }
}

/* Encoder output decodes back to what was encoded, chunked any way. */
static void test_round_trip_chunked(void **state)
{
    (void)state;
    static decoded_t whole;
    char *a = NULL, *b = NULL, *c = NULL;
    size_t la, lb, lc;
    assert_int_equal(mcp_sse_format_event("message", "e1", S("{\"a\":1}\r\n{\"b\":2}"), &a, &la),
                     MCP_OK);
    assert_int_equal(mcp_sse_format_comment("ping", &b, &lb), MCP_OK);
    assert_int_equal(mcp_sse_format_event(NULL, NULL, S("\n"), &c, &lc), MCP_OK);
    char stream[256];
    assert_true(la + lb + lc < sizeof stream);
    memcpy(stream, a, la);
    memcpy(stream + la, b, lb);
    memcpy(stream + la + lb, c, lc);
    size_t len = la + lb + lc;
    decode_whole(stream, len, SIZE_MAX, &whole);
    assert_string_equal(whole.t.text, "message|{\"a\":1}\\n{\"b\":2}|e1|-1\nmessage|\\n|e1|-1\n");
    expect_chunking_invariant("round trip", stream, len, SIZE_MAX, &whole);
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_rules),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_limit_bounds_an_endless_line),
        cmocka_unit_test(test_errors_are_sticky_until_finish),
        cmocka_unit_test(test_callback_stops_decoding),
        cmocka_unit_test(test_finish_starts_a_new_stream),
        cmocka_unit_test(test_feed_nothing),
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_encode_comment),
        cmocka_unit_test(test_round_trip_chunked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
