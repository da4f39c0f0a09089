/* A recording mcp_sink_t for server core tests; see capture_sink.h. */
#define _GNU_SOURCE

#include "capture_sink.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cmocka.h>

#include "mcp/jsonrpc.h"
#include "test_clock.h"

/* Records the first breach of the sink contract (lock held). */
static void breach(capture_sink_t *cap, const char *what)
{
    if (!cap->breach[0])
        snprintf(cap->breach, sizeof cap->breach, "%s", what);
}

/* Records one message; send() and send_event() both come here. */
static int record(capture_sink_t *cap, mcp_out_kind_t kind, const json_t *msg, int http_status,
                  const char *event_id, const char *text, size_t text_len)
{
    pthread_mutex_lock(&cap->lock);
    if (cap->releases > 0)
        breach(cap, "send() after release()");
    if (cap->count > 0 && (cap->items[cap->count - 1].kind == MCP_OUT_RESPONSE ||
                           cap->items[cap->count - 1].kind == MCP_OUT_ACCEPTED))
        breach(cap, "send() after the response");
    if ((kind == MCP_OUT_ACCEPTED) != (msg == NULL))
        breach(cap, "MCP_OUT_ACCEPTED must come without a message, the others with one");
    if (cap->count == cap->cap) {
        size_t grown = cap->cap ? cap->cap * 2 : 8;
        capture_item_t *items = realloc(cap->items, grown * sizeof *items);
        if (!items) {
            pthread_mutex_unlock(&cap->lock);
            return -1;
        }
        cap->items = items;
        cap->cap = grown;
    }
    int index = (int)cap->count;
    cap->items[cap->count++] = (capture_item_t){.kind = kind,
                                                .status = http_status,
                                                .msg = msg ? json_deep_copy(msg) : NULL,
                                                .event_id = event_id ? strdup(event_id) : NULL,
                                                .text = text ? strndup(text, text_len) : NULL,
                                                .text_len = text_len};
    pthread_cond_broadcast(&cap->changed);
    int rc = cap->fail_from >= 0 && index >= cap->fail_from ? -1 : 0;
    pthread_mutex_unlock(&cap->lock);
    return rc;
}

static int capture_send(mcp_sink_t *sink, mcp_out_kind_t kind, const json_t *msg,
                        int http_status)
{
    return record((capture_sink_t *)sink, kind, msg, http_status, NULL, NULL, 0);
}

static int capture_send_event(mcp_sink_t *sink, const json_t *msg, const char *event_id)
{
    capture_sink_t *cap = (capture_sink_t *)sink;
    if (!msg || !event_id) {
        pthread_mutex_lock(&cap->lock);
        breach(cap, "send_event() without a message or an event id");
        pthread_mutex_unlock(&cap->lock);
    }
    return record(cap, MCP_OUT_NOTIFICATION, msg, 0, event_id, NULL, 0);
}

static int capture_send_text(mcp_sink_t *sink, mcp_out_kind_t kind, const char *text,
                             size_t len, int http_status)
{
    capture_sink_t *cap = (capture_sink_t *)sink;
    json_error_t jerr;
    json_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!msg) {
        pthread_mutex_lock(&cap->lock);
        breach(cap, "send_text() with bytes that are not one JSON value");
        pthread_mutex_unlock(&cap->lock);
        return -1;
    }
    int rc = record(cap, kind, msg, http_status, NULL, text, len);
    json_decref(msg);
    return rc;
}

void capture_take_text(capture_sink_t *cap)
{
    cap->sink.send_text = capture_send_text;
}

static void capture_set_header(mcp_sink_t *sink, const char *name, const char *value)
{
    capture_sink_t *cap = (capture_sink_t *)sink;
    pthread_mutex_lock(&cap->lock);
    if (cap->count > 0)
        breach(cap, "set_header() after a send()");
    snprintf(cap->header_name, sizeof cap->header_name, "%s", name ? name : "");
    snprintf(cap->header_value, sizeof cap->header_value, "%s", value ? value : "");
    pthread_mutex_unlock(&cap->lock);
}

static void capture_release(mcp_sink_t *sink)
{
    capture_sink_t *cap = (capture_sink_t *)sink;
    pthread_mutex_lock(&cap->lock);
    if (cap->releases > 0)
        breach(cap, "release() called twice");
    cap->releases++;
    pthread_cond_broadcast(&cap->changed);
    pthread_mutex_unlock(&cap->lock);
}

void capture_init(capture_sink_t *cap)
{
    memset(cap, 0, sizeof *cap);
    cap->sink.send = capture_send;
    cap->sink.release = capture_release;
    cap->sink.set_header = capture_set_header;
    cap->sink.send_event = capture_send_event;
    cap->fail_from = -1;
    pthread_mutex_init(&cap->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&cap->changed, &attr);
    pthread_condattr_destroy(&attr);
}

static void drop_items(capture_sink_t *cap)
{
    for (size_t i = 0; i < cap->count; i++) {
        json_decref(cap->items[i].msg);
        free(cap->items[i].event_id);
        free(cap->items[i].text);
    }
    free(cap->items);
    cap->items = NULL;
    cap->count = cap->cap = 0;
}

void capture_cleanup(capture_sink_t *cap)
{
    drop_items(cap);
    pthread_mutex_destroy(&cap->lock);
    pthread_cond_destroy(&cap->changed);
}

void capture_reset(capture_sink_t *cap)
{
    pthread_mutex_lock(&cap->lock);
    drop_items(cap);
    cap->releases = 0;
    cap->header_name[0] = cap->header_value[0] = '\0';
    cap->breach[0] = '\0';
    cap->fail_from = -1;
    pthread_mutex_unlock(&cap->lock);
}

static struct timespec deadline_in(int ms)
{
    return time_in(CLOCK_MONOTONIC, ms);
}

/* Waits (lock held) until done(cap) or the deadline. */
static bool wait_until(capture_sink_t *cap, bool (*done)(capture_sink_t *, size_t), size_t arg,
                       int timeout_ms)
{
    struct timespec deadline = deadline_in(timeout_ms);
    pthread_mutex_lock(&cap->lock);
    int rc = 0;
    while (!done(cap, arg) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&cap->changed, &cap->lock, &deadline);
    bool ok = done(cap, arg);
    pthread_mutex_unlock(&cap->lock);
    return ok;
}

static bool is_released(capture_sink_t *cap, size_t unused)
{
    return cap->releases > 0;
}

static bool has_count(capture_sink_t *cap, size_t n)
{
    return cap->count >= n;
}

bool capture_wait_released(capture_sink_t *cap, int timeout_ms)
{
    return wait_until(cap, is_released, 0, timeout_ms);
}

bool capture_wait_count(capture_sink_t *cap, size_t n, int timeout_ms)
{
    return wait_until(cap, has_count, n, timeout_ms);
}

size_t capture_count(capture_sink_t *cap)
{
    pthread_mutex_lock(&cap->lock);
    size_t n = cap->count;
    pthread_mutex_unlock(&cap->lock);
    return n;
}

bool capture_released(capture_sink_t *cap)
{
    pthread_mutex_lock(&cap->lock);
    bool released = cap->releases > 0;
    pthread_mutex_unlock(&cap->lock);
    return released;
}

capture_item_t capture_item(capture_sink_t *cap, size_t i)
{
    pthread_mutex_lock(&cap->lock);
    assert_true(i < cap->count);
    capture_item_t item = cap->items[i];
    pthread_mutex_unlock(&cap->lock);
    return item;
}

const json_t *capture_response(capture_sink_t *cap, int *status)
{
    const json_t *response = NULL;
    pthread_mutex_lock(&cap->lock);
    for (size_t i = 0; i < cap->count; i++) {
        if (cap->items[i].kind == MCP_OUT_RESPONSE) {
            response = cap->items[i].msg;
            if (status)
                *status = cap->items[i].status;
        }
    }
    pthread_mutex_unlock(&cap->lock);
    return response;
}

size_t capture_notification_count(capture_sink_t *cap)
{
    size_t n = 0;
    pthread_mutex_lock(&cap->lock);
    for (size_t i = 0; i < cap->count; i++)
        n += cap->items[i].kind == MCP_OUT_NOTIFICATION;
    pthread_mutex_unlock(&cap->lock);
    return n;
}

bool capture_header(capture_sink_t *cap, const char *name, char *out, size_t out_size)
{
    pthread_mutex_lock(&cap->lock);
    bool found = cap->header_name[0] && strcasecmp(cap->header_name, name) == 0;
    if (found && out_size > 0)
        snprintf(out, out_size, "%s", cap->header_value);
    pthread_mutex_unlock(&cap->lock);
    return found;
}

void capture_assert_done(capture_sink_t *cap)
{
    pthread_mutex_lock(&cap->lock);
    int releases = cap->releases;
    char why[sizeof cap->breach];
    memcpy(why, cap->breach, sizeof why);
    pthread_mutex_unlock(&cap->lock);
    if (why[0])
        fail_msg("sink contract breached: %s", why);
    assert_int_equal(releases, 1);
}

int capture_submit(mcp_server_t *srv, mcp_conn_t *conn, const json_t *msg,
                   const mcp_request_context_t *ctx, capture_sink_t *cap,
                   mcp_exchange_t **exchange_out)
{
    mcp_request_context_t stdio = {.transport = MCP_TRANSPORT_STDIO};
    size_t len = 0;
    char *text = mcp_json_dump(msg, &len);
    assert_non_null(text);
    int rc = mcp_server_submit(srv, conn, text, len, ctx ? ctx : &stdio, &cap->sink,
                               exchange_out);
    free(text);
    return rc;
}

const json_t *capture_roundtrip(mcp_server_t *srv, mcp_conn_t *conn, const json_t *msg,
                                const mcp_request_context_t *ctx, capture_sink_t *cap)
{
    assert_int_equal(capture_submit(srv, conn, msg, ctx, cap, NULL), MCP_OK);
    if (!capture_wait_released(cap, CAPTURE_PATIENCE_MS))
        fail_msg("the core did not release the sink within %d ms", CAPTURE_PATIENCE_MS);
    capture_assert_done(cap);
    return capture_response(cap, NULL);
}
