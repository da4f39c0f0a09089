/*
 * JSON-RPC batches: an array of messages in one POST body or stdio line.
 *
 * 2025-03-26 servers MUST accept them; 2025-06-18 removed them and the
 * modern revision has none. So a batch is served only in a 2025-03-26
 * conversation (legacy_batch_allowed), and is otherwise refused as
 * before (-32600, from the JSON-RPC reader).
 *
 * Each message of the batch is submitted on its own, as if it had come
 * alone, to a member sink of the batch. The responses are gathered and
 * go out as one array when the last member is released (JSON-RPC 2.0:
 * in any order; none at all when the batch held only notifications and
 * responses, which HTTP answers 202). What else a handler sends
 * (progress, logs, a request for input) goes out at once, on the
 * transport's sink, one message at a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"
#include "mcp/request.h"
#include "protocol/json_reader.h"
#include "server/server_internal.h"

/* The most messages one batch may hold: each becomes an exchange, and a
 * body of tiny messages must not turn into a flood of them. */
#define BATCH_MAX_MESSAGES 256

typedef struct batch {
    mcp_sink_t *parent;  /* the transport's sink of the whole body */
    pthread_mutex_t lock;
    size_t holds;        /* members not yet released, plus the submitter */
    bool parent_gone;    /* the transport's sink failed: send nothing more */
    char *answers;       /* "[r1,r2" so far; NULL before the first */
    size_t len, cap;
} batch_t;

typedef struct batch_member {
    mcp_sink_t sink; /* first: the core hands this back */
    batch_t *batch;
} batch_member_t;

/* Appends one serialised response to the array (lock held). */
static void add_answer_locked(batch_t *b, const char *text, size_t len)
{
    size_t need = b->len + len + 3; /* separator, the closing ']' and NUL */
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need)
            cap *= 2;
        char *grown = realloc(b->answers, cap);
        if (!grown)
            return; /* the answer is lost; the others still go out */
        b->answers = grown;
        b->cap = cap;
    }
    char separator = b->len == 0 ? '[' : ',';
    b->answers[b->len++] = separator;
    memcpy(b->answers + b->len, text, len);
    b->len += len;
}

static void add_answer(batch_t *b, const char *text, size_t len)
{
    pthread_mutex_lock(&b->lock);
    add_answer_locked(b, text, len);
    pthread_mutex_unlock(&b->lock);
}

static void add_answer_json(batch_t *b, const json_t *msg)
{
    size_t len;
    char *text = mcp_json_dump(msg, &len);
    if (text)
        add_answer(b, text, len);
    free(text);
}

/* Sends the gathered answers (or 202 when there are none) and frees the
 * batch: after its last hold is dropped, so no member sends any more. */
static void batch_finish(batch_t *b)
{
    mcp_sink_t *parent = b->parent;
    if (!b->parent_gone) {
        if (b->len == 0) {
            parent->send(parent, MCP_OUT_ACCEPTED, NULL, 202);
        } else {
            b->answers[b->len++] = ']';
            b->answers[b->len] = '\0';
            if (parent->send_text) {
                parent->send_text(parent, MCP_OUT_RESPONSE, b->answers, b->len, 200);
            } else {
                json_t *array = json_loadb(b->answers, b->len, 0, NULL);
                if (array)
                    parent->send(parent, MCP_OUT_RESPONSE, array, 200);
                json_decref(array);
            }
        }
    }
    parent->release(parent);
    pthread_mutex_destroy(&b->lock);
    free(b->answers);
    free(b);
}

static void batch_put(batch_t *b)
{
    pthread_mutex_lock(&b->lock);
    bool last = --b->holds == 0;
    pthread_mutex_unlock(&b->lock);
    if (last)
        batch_finish(b);
}

static int member_send(mcp_sink_t *sink, mcp_out_kind_t kind, const json_t *msg, int status)
{
    batch_t *b = ((batch_member_t *)sink)->batch;
    if (kind == MCP_OUT_ACCEPTED)
        return 0; /* a notification or a response of the client's: no answer */
    if (kind == MCP_OUT_RESPONSE) {
        add_answer_json(b, msg);
        return 0;
    }
    /* Serialised with the other members', so that one transport sink is
     * never written from two threads at once. */
    pthread_mutex_lock(&b->lock);
    int rc = b->parent_gone ? -1 : b->parent->send(b->parent, kind, msg, status);
    if (rc < 0)
        b->parent_gone = true;
    pthread_mutex_unlock(&b->lock);
    return rc;
}

/* The core hands send_text() final responses only (mcp_sink_t). */
static int member_send_text(mcp_sink_t *sink, mcp_out_kind_t kind, const char *text, size_t len,
                            int status)
{
    (void)kind;
    (void)status;
    add_answer(((batch_member_t *)sink)->batch, text, len);
    return 0;
}

static void member_release(mcp_sink_t *sink)
{
    batch_member_t *m = (batch_member_t *)sink;
    batch_put(m->batch);
    free(m);
}

/* A -32600 answer for a message that cannot be part of a batch, with its
 * id when it has a usable one. */
static void refuse_member(batch_t *b, const json_t *message, const char *why)
{
    const json_t *id = json_object_get(message, "id");
    if (!json_is_string(id) && !json_is_integer(id))
        id = NULL;
    if (!json_object_get(message, "method"))
        return; /* a response of the client's is never answered */
    if (!id)
        return; /* nor is a notification */
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, MCP_INVALID_REQUEST, NULL, "Invalid Request: %s", why);
    json_t *answer = mcp_jsonrpc_error_from(id, &err);
    add_answer_json(b, answer);
    json_decref(answer);
    mcp_error_clear(&err);
}

/* Why `message` may not be served as part of a batch, or NULL. */
static const char *unbatchable(const json_t *message)
{
    const char *method = json_string_value(json_object_get(message, "method"));
    if (method && strcmp(method, "initialize") == 0)
        return "initialize must not be part of a batch"; /* 2025-03-26 */
    const json_t *meta = json_object_get(json_object_get(message, "params"), "_meta");
    if (json_object_get(meta, MCP_META_PROTOCOL_VERSION))
        return "a 2026-07-28 request cannot be part of a batch";
    return NULL;
}

/* The whole batch refused with one error, id null (JSON-RPC 2.0). */
static int refuse_batch(mcp_sink_t *sink, const char *why)
{
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, MCP_INVALID_REQUEST, NULL, "Invalid Request: %s", why);
    json_t *answer = mcp_jsonrpc_error_from(NULL, &err);
    sink->send(sink, MCP_OUT_RESPONSE, answer, 400);
    sink->release(sink);
    json_decref(answer);
    mcp_error_clear(&err);
    return MCP_OK;
}

bool server_looks_like_batch(const char *bytes, size_t len)
{
    size_t i = 0;
    while (i < len && (bytes[i] == ' ' || bytes[i] == '\t' || bytes[i] == '\r' ||
                       bytes[i] == '\n'))
        i++;
    return i < len && bytes[i] == '[';
}

int server_submit_batch(mcp_server_t *srv, mcp_conn_t *conn, const char *bytes, size_t len,
                        const mcp_request_context_t *ctx, mcp_sink_t *sink)
{
    json_error_t jerr;
    bool too_deep;
    json_t *array = json_read_nested(bytes, len, MCP_DEFAULT_MAX_DEPTH, &too_deep, &jerr);
    if (!json_is_array(array)) {
        /* Not JSON: the reader of single messages says what is wrong. */
        json_decref(array);
        return server_submit_one(srv, conn, bytes, len, ctx, sink, NULL);
    }
    size_t n = json_array_size(array);
    int rc = MCP_OK;
    if (n == 0 || n > BATCH_MAX_MESSAGES) {
        char why[96];
        if (n == 0)
            snprintf(why, sizeof why, "an empty batch");
        else
            snprintf(why, sizeof why, "a batch of %zu messages; at most %d are served", n,
                     BATCH_MAX_MESSAGES);
        rc = refuse_batch(sink, why);
        json_decref(array);
        return rc;
    }

    batch_t *b = calloc(1, sizeof *b);
    if (!b) {
        json_decref(array);
        return MCP_ENOMEM;
    }
    b->parent = sink;
    b->holds = 1; /* ours, until every member is submitted */
    pthread_mutex_init(&b->lock, NULL);

    for (size_t i = 0; i < n; i++) {
        const json_t *message = json_array_get(array, i);
        const char *why = json_is_object(message) ? unbatchable(message) : NULL;
        if (why) {
            refuse_member(b, message, why);
            continue;
        }
        size_t text_len;
        char *text = mcp_json_dump(message, &text_len);
        batch_member_t *m = text ? calloc(1, sizeof *m) : NULL;
        if (!m) {
            free(text);
            refuse_member(b, message, "out of memory");
            continue;
        }
        m->sink.send = member_send;
        m->sink.send_text = member_send_text;
        m->sink.release = member_release;
        m->batch = b;
        pthread_mutex_lock(&b->lock);
        b->holds++;
        pthread_mutex_unlock(&b->lock);
        /* A message that is itself an array is refused by the reader of
         * single messages: batches do not nest. */
        if (server_submit_one(srv, conn, text, text_len, ctx, &m->sink, NULL) != MCP_OK) {
            refuse_member(b, message, "the server is shutting down");
            member_release(&m->sink);
        }
        free(text);
    }
    json_decref(array);
    batch_put(b);
    return MCP_OK;
}
