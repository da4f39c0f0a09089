/*
 * subscriptions/listen over real stdio (digest section 2.10), with
 * examples/notes_server as a child process: every subscription shares the
 * child's stdout and is told apart by its id; add_note updates the
 * resources the streams subscribed to (the notes they name, through the
 * note://{name} template, and the index); notifications/cancelled naming a listen id
 * ends that stream only, and the id may then be used again; EOF ends the
 * rest without a word and the child exits cleanly (it runs under the
 * build's sanitizers, so a leak fails it). Every message is checked
 * against the schema.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/request.h"

#include "modern_request.h"
#include "schema_check.h"
#include "stdio_child.h"

#define REVISION "2026-07-28"
#define LISTEN "subscriptions/listen"
#define ACK "notifications/subscriptions/acknowledged"
#define UPDATED "notifications/resources/updated"
#define PATIENCE_MS 20000
#define QUIET_MS 300 /* how long to watch for a message that must not come */

#ifdef NOTES_SERVER

static json_t *listen_request(json_t *id_new, const char *filter)
{
    json_t *parsed = json_loads(filter, 0, NULL);
    assert_non_null(parsed);
    json_t *request = modern_request(0, LISTEN, json_pack("{s:o}", "notifications", parsed));
    json_object_set_new(request, "id", id_new);
    return request;
}

/* Opens a stream: the acknowledgement is the next line, tagged with the id,
 * honouring the whole filter (notes_server offers everything). */
static void open_stream(stdio_child_t *child, const json_t *id, const char *filter)
{
    json_t *request = listen_request(json_incref((json_t *)id), filter);
    stdio_child_send(child, request);
    json_decref(request);
    json_t *ack = stdio_child_read(child, PATIENCE_MS);
    assert_non_null(ack);
    MCP_ASSERT_SCHEMA_VALID(ack, NULL, REVISION);
    assert_string_equal(json_string_value(json_object_get(ack, "method")), ACK);
    const json_t *params = json_object_get(ack, "params");
    const json_t *tag = json_object_get(json_object_get(params, "_meta"), MCP_META_SUBSCRIPTION_ID);
    assert_non_null(tag);
    assert_int_equal(json_typeof(tag), json_typeof(id));
    assert_true(json_equal(tag, id));
    json_t *asked = json_loads(filter, 0, NULL);
    assert_true(json_equal(json_object_get(params, "notifications"), asked));
    json_decref(asked);
    json_decref(ack);
}

/* What came for one stream. */
typedef struct heard {
    const json_t *id;
    json_t *uris; /* the URIs of its resources/updated notifications */
} heard_t;

/* Calls add_note (request id `call_id`) and sorts every message that comes
 * with it into `streams`; a message for no stream fails. Waits QUIET_MS
 * after the response for late stragglers. */
static void add_note(stdio_child_t *child, json_int_t call_id, const char *name,
                     heard_t *streams, size_t n)
{
    json_t *call = modern_request(
        call_id, "tools/call",
        json_pack("{s:s, s:{s:s, s:s}}", "name", "add_note", "arguments", "name", name, "text",
                  "remember"));
    stdio_child_send(child, call);
    json_decref(call);
    for (size_t i = 0; i < n; i++)
        json_array_clear(streams[i].uris);
    bool answered = false;
    for (;;) {
        json_t *msg = stdio_child_read(child, answered ? QUIET_MS : PATIENCE_MS);
        if (!msg) {
            assert_true(answered);
            return;
        }
        if (json_object_get(msg, "id")) {
            MCP_ASSERT_SCHEMA_VALID(msg, "tools/call", REVISION);
            assert_int_equal(json_integer_value(json_object_get(msg, "id")), call_id);
            assert_non_null(json_object_get(msg, "result"));
            answered = true;
            json_decref(msg);
            continue;
        }
        MCP_ASSERT_SCHEMA_VALID(msg, NULL, REVISION);
        assert_string_equal(json_string_value(json_object_get(msg, "method")), UPDATED);
        const json_t *params = json_object_get(msg, "params");
        const json_t *tag =
            json_object_get(json_object_get(params, "_meta"), MCP_META_SUBSCRIPTION_ID);
        size_t i = 0;
        while (i < n && !(json_equal(tag, streams[i].id) &&
                          json_typeof(tag) == json_typeof(streams[i].id)))
            i++;
        if (i == n) {
            char *text = json_dumps(msg, JSON_COMPACT);
            fail_msg("a message for no open stream: %s", text);
        }
        json_array_append(streams[i].uris, json_object_get(params, "uri"));
        json_decref(msg);
    }
}

/* Asserts a stream heard exactly the URIs in `want` (JSON array text). */
static void expect_heard(const heard_t *stream, const char *want)
{
    json_t *expected = json_loads(want, 0, NULL);
    if (!json_equal(stream->uris, expected)) {
        char *got = json_dumps(stream->uris, JSON_COMPACT);
        char *id = json_dumps(stream->id, JSON_ENCODE_ANY);
        fail_msg("stream %s heard %s, want %s", id, got, want);
    }
    json_decref(expected);
}

static void send_cancel(stdio_child_t *child, const json_t *id)
{
    json_t *note = modern_cancel_notification(id);
    stdio_child_send(child, note);
    json_decref(note);
}

/* Two streams on one stdout: each hears what it subscribed to, tagged with
 * its own id; cancelling one leaves the other; the id can listen again. */
static void test_streams_share_stdout(void **state)
{
    stdio_child_t child;
    stdio_child_start(&child, NOTES_SERVER, NULL, NULL);
    json_t *index_id = json_integer(1), *notes_id = json_string("notes");
    open_stream(&child, index_id, "{\"resourceSubscriptions\":[\"notes://index\"]}");
    open_stream(&child, notes_id,
                "{\"toolsListChanged\":true,\"resourceSubscriptions\":"
                "[\"note://todo\",\"note://second\",\"note://third\"]}");
    heard_t streams[2] = {{index_id, json_array()}, {notes_id, json_array()}};

    add_note(&child, 10, "todo", streams, 2);
    expect_heard(&streams[0], "[\"notes://index\"]");
    expect_heard(&streams[1], "[\"note://todo\"]");

    /* The index stream leaves: only the other hears the next note. */
    send_cancel(&child, index_id);
    add_note(&child, 11, "second", streams, 2);
    expect_heard(&streams[0], "[]");
    expect_heard(&streams[1], "[\"note://second\"]");

    /* Its id is free again: a new stream under it. */
    open_stream(&child, index_id, "{\"resourceSubscriptions\":[\"notes://index\"]}");
    add_note(&child, 12, "third", streams, 2);
    expect_heard(&streams[0], "[\"notes://index\"]");
    expect_heard(&streams[1], "[\"note://third\"]");

    /* EOF: the client is gone, its streams end without a word. */
    stdio_child_close_stdin(&child);
    assert_null(stdio_child_read(&child, PATIENCE_MS));
    assert_int_equal(stdio_child_wait(&child, PATIENCE_MS), 0);
    for (int i = 0; i < 2; i++)
        json_decref(streams[i].uris);
    json_decref(index_id);
    json_decref(notes_id);
}

/* Many streams on one stdout: one update reaches each subscribed stream
 * exactly once, integer and string ids alike, and no other. */
static void test_many_streams_one_update(void **state)
{
    enum { N = 40 };
    stdio_child_t child;
    stdio_child_start(&child, NOTES_SERVER, NULL, NULL);
    heard_t streams[N];
    for (int i = 0; i < N; i++) {
        streams[i].id = i % 2 ? json_integer(100 + i) : json_sprintf("s%d", i);
        streams[i].uris = json_array();
        /* Every third stream listens to tools only. */
        open_stream(&child, streams[i].id,
                    i % 3 ? "{\"resourceSubscriptions\":[\"notes://index\"]}"
                          : "{\"toolsListChanged\":true}");
    }
    add_note(&child, 1, "fan-out", streams, N);
    for (int i = 0; i < N; i++) {
        expect_heard(&streams[i], i % 3 ? "[\"notes://index\"]" : "[]");
        json_decref((json_t *)streams[i].id);
        json_decref(streams[i].uris);
    }
    stdio_child_close_stdin(&child);
    assert_int_equal(stdio_child_wait(&child, PATIENCE_MS), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streams_share_stdout),
        cmocka_unit_test(test_many_streams_one_update),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

int main(void)
{
    return 77; /* examples/notes_server is not built */
}

#endif
