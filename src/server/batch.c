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
 *
 * No member's answer may be lost, even out of memory: the array keeps,
 * from the start, room for an out-of-memory error to every request of the
 * batch, written in place of an answer for which it cannot grow.
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
    char *answers;       /* "[r1,r2" so far (len 0: none yet) */
    size_t len, cap;
    size_t reserved;     /* of cap - len, kept for unanswered requests */
    json_t *messages;    /* the batch's array: members' ids point into it */
} batch_t;

/* The answer to a request of the batch when its own cannot be kept. */
#define OOM_ANSWER_HEAD "{\"jsonrpc\":\"2.0\",\"id\":"
#define OOM_ANSWER_TAIL ",\"error\":{\"code\":-32603,\"message\":\"Internal error: out of memory\"}}"

typedef struct batch_member {
    mcp_sink_t sink;  /* first: the core hands this back */
    batch_t *batch;
    const json_t *id; /* the request's (in the batch's array), or NULL */
    size_t reserve;   /* room kept for its out-of-memory answer */
    bool answered;
} batch_member_t;

/* The room an answer to `message` is owed: its separator and its
 * out-of-memory answer. 0 for a message that gets no answer. */
static size_t reserve_for(const json_t *message)
{
    const json_t *id = json_object_get(message, "id");
    if (!json_object_get(message, "method") || (!json_is_string(id) && !json_is_integer(id)))
        return 0;
    return 1 + strlen(OOM_ANSWER_HEAD) + json_dumpb(id, NULL, 0, JSON_ENCODE_ANY) +
           strlen(OOM_ANSWER_TAIL);
}

/* Appends one answer to the array, lock held, giving up the `reserve`
 * bytes kept for it: `text`, or when the array cannot grow for it (or
 * text is NULL), the out-of-memory answer to `id`, which always fits.
 * Keeps cap >= len + reserved + 2 (the closing ']' and a NUL). */
static void add_answer_locked(batch_t *b, const char *text, size_t len, const json_t *id,
                              size_t reserve)
{
    b->reserved -= reserve;
    size_t need = b->len + 1 + len + b->reserved + 2;
    if (text && need > b->cap) {
        size_t cap = b->cap * 2 > need ? b->cap * 2 : need;
        char *grown = realloc(b->answers, cap);
        if (grown) {
            b->answers = grown;
            b->cap = cap;
        } else {
            text = NULL;
        }
    }
    if (!text && reserve == 0)
        return; /* only a request with an id reserves (reserve_for) */
    char *at = b->answers + b->len;
    *at++ = b->len == 0 ? '[' : ',';
    if (text) {
        memcpy(at, text, len);
    } else {
        len = strlen(OOM_ANSWER_HEAD);
        memcpy(at, OOM_ANSWER_HEAD, len);
        len += json_dumpb(id, at + len, reserve, JSON_ENCODE_ANY);
        memcpy(at + len, OOM_ANSWER_TAIL, strlen(OOM_ANSWER_TAIL));
        len += strlen(OOM_ANSWER_TAIL);
    }
    b->len += 1 + len;
}

/* A member's final answer, as text, or (text NULL) its out-of-memory
 * one. */
static void add_answer(batch_member_t *m, const char *text, size_t len)
{
    batch_t *b = m->batch;
    pthread_mutex_lock(&b->lock);
    if (!m->answered) {
        m->answered = true;
        add_answer_locked(b, text, len, m->id, m->reserve);
    }
    pthread_mutex_unlock(&b->lock);
}

/* An answer of the core's. One to a message it could not parse (out of
 * memory) carries no id; the batch knows it. */
static void add_answer_json(batch_member_t *m, const json_t *msg)
{
    json_t *with_id = NULL;
    const json_t *id = json_object_get(msg, "id");
    if (m->id && (!id || json_is_null(id)) && (with_id = json_copy((json_t *)msg)) &&
        json_object_set(with_id, "id", (json_t *)m->id) == 0)
        msg = with_id;
    size_t len = 0;
    char *text = mcp_json_dump(msg, &len);
    add_answer(m, text, len);
    free(text);
    json_decref(with_id);
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
                if (!array) /* out of memory: one error beats none */
                    array = response_out_of_memory(NULL);
                if (array)
                    parent->send(parent, MCP_OUT_RESPONSE, array, 200);
                json_decref(array);
            }
        }
    }
    parent->release(parent);
    pthread_mutex_destroy(&b->lock);
    json_decref(b->messages);
    free(b->answers);
    free(b);
}

/* The array's first room: every reservation, its brackets and a NUL, and
 * some for the answers. NULL, with b freed, when out of memory. */
static batch_t *reserved_room(batch_t *b)
{
    b->cap = b->reserved + 2 + 256;
    b->answers = malloc(b->cap);
    if (!b->answers) {
        free(b);
        return NULL;
    }
    return b;
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
    batch_member_t *m = (batch_member_t *)sink;
    batch_t *b = m->batch;
    if (kind == MCP_OUT_ACCEPTED)
        return 0; /* a notification or a response of the client's: no answer */
    if (kind == MCP_OUT_RESPONSE) {
        add_answer_json(m, msg);
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
    add_answer((batch_member_t *)sink, text, len);
    return 0;
}

/* A member released unanswered gives up the room kept for its answer. */
static void member_release(mcp_sink_t *sink)
{
    batch_member_t *m = (batch_member_t *)sink;
    batch_t *b = m->batch;
    pthread_mutex_lock(&b->lock);
    if (!m->answered)
        b->reserved -= m->reserve;
    pthread_mutex_unlock(&b->lock);
    batch_put(b);
    free(m);
}

/* An error answer (`code`, "<its name>: why") to a member that is not
 * served; none to a notification or a response. */
static void refuse_member(batch_member_t *m, int code, const char *why)
{
    if (m->reserve == 0)
        return;
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_EINVAL, code, NULL, "%s: %s", mcp_error_code_name(code), why);
    json_t *answer = mcp_jsonrpc_error_from(m->id, &err);
    if (answer)
        add_answer_json(m, answer);
    else
        add_answer(m, NULL, 0);
    json_decref(answer);
    mcp_error_clear(&err);
}

/* refuse_member() for a message that has no member sink. */
static void refuse_message(batch_t *b, const json_t *message, int code, const char *why)
{
    batch_member_t m = {.batch = b, .id = json_object_get(message, "id"),
                        .reserve = reserve_for(message)};
    refuse_member(&m, code, why);
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
    if (!array && json_error_code(&jerr) == json_error_out_of_memory) {
        sink_answer(sink, response_out_of_memory(NULL), 500);
        return MCP_OK;
    }
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
    for (size_t i = 0; b && i < n; i++)
        b->reserved += reserve_for(json_array_get(array, i));
    b = b ? reserved_room(b) : NULL;
    if (!b) {
        json_decref(array);
        return MCP_ENOMEM;
    }
    b->parent = sink;
    b->holds = 1; /* ours, until every member is submitted */
    b->messages = array;
    pthread_mutex_init(&b->lock, NULL);

    for (size_t i = 0; i < n; i++) {
        const json_t *message = json_array_get(array, i);
        const char *why = json_is_object(message) ? unbatchable(message) : NULL;
        if (why) {
            refuse_message(b, message, MCP_INVALID_REQUEST, why);
            continue;
        }
        size_t text_len;
        char *text = mcp_json_dump(message, &text_len);
        batch_member_t *m = text ? calloc(1, sizeof *m) : NULL;
        if (!m) {
            free(text);
            refuse_message(b, message, MCP_INTERNAL_ERROR, "out of memory");
            continue;
        }
        m->sink.send = member_send;
        m->sink.send_text = member_send_text;
        m->sink.release = member_release;
        m->batch = b;
        m->id = json_object_get(message, "id");
        m->reserve = reserve_for(message);
        pthread_mutex_lock(&b->lock);
        b->holds++;
        pthread_mutex_unlock(&b->lock);
        /* A message that is itself an array is refused by the reader of
         * single messages: batches do not nest. */
        if (server_submit_one(srv, conn, text, text_len, ctx, &m->sink, NULL) != MCP_OK) {
            refuse_member(m, MCP_INTERNAL_ERROR, "the server is shutting down");
            member_release(&m->sink);
        }
        free(text);
    }
    batch_put(b);
    return MCP_OK;
}
