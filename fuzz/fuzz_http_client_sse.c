/*
 * Fuzzes how the HTTP client reads the answer to a POST
 * (src/transport/http_client_reply.h): event streams routed to
 * notifications and the response, JSON bodies, error bodies, limits.
 *
 * The body is read twice, in one piece and in fuzzer-chosen chunks; both
 * runs must agree on everything (outcome, response, the messages handed
 * out, the raw body), and the outcome must be coherent: a response only
 * with MCP_OK, and only the response to the request.
 *
 * Input: [status][content type][flags][chunk seed: 2 bytes][body...]
 *   flags bit 0-1: request id (integer 1, string "1", or none: a
 *                  notification); bit 2: small limits; bit 3: the
 *                  transfer failed at the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/http_client_reply.h"

static const int statuses[] = {200, 200, 200, 202, 400, 401, 403, 404, 405, 500, 0};
static const char *const content_types[] = {
    "text/event-stream", "application/json", "TEXT/EVENT-STREAM; charset=utf-8", NULL,
    "text/html", "text/event-streamx"};

/* Folds every message handed out into a 64-bit FNV-1a digest. */
typedef struct digest {
    uint64_t hash;
    size_t count;
} digest_t;

static void fold(digest_t *d, char tag, const json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!text)
        abort();
    d->hash = (d->hash ^ (unsigned char)tag) * 0x100000001b3ULL;
    for (const char *p = text; *p; p++)
        d->hash = (d->hash ^ (unsigned char)*p) * 0x100000001b3ULL;
    free(text);
    d->count++;
}

static void on_notification(void *user, const json_t *msg)
{
    if (!json_is_string(json_object_get(msg, "method")) || json_object_get(msg, "id"))
        abort();
    fold(user, 'n', msg);
}

static void on_other(void *user, const json_t *msg)
{
    fold(user, 'o', msg);
}

typedef struct run {
    digest_t seen;
    http_reply_state_t state;
    client_outcome_t out;
    http_reply_t reply;
} run_t;

/* Reads body[0..size) in chunks drawn from `seed` (0: one piece). */
static void read_answer(run_t *r, const json_t *id, const http_reply_limits_t *limits, int status,
                        const char *content_type, const uint8_t *body, size_t size,
                        uint32_t seed, int transfer_rc)
{
    memset(r, 0, sizeof *r);
    r->seen.hash = 0xcbf29ce484222325ULL;
    http_reply_events_t events = {on_notification, on_other, &r->seen};
    if (http_reply_init(&r->reply, id, limits, &events) != MCP_OK)
        abort();
    http_reply_begin(&r->reply, status, content_type);
    size_t at = 0;
    r->state = HTTP_REPLY_READING;
    while (at < size) {
        size_t n = size - at;
        if (seed) {
            seed = seed * 1103515245u + 12345u;
            n = 1 + (seed >> 16) % 17;
            if (n > size - at)
                n = size - at;
        }
        r->state = http_reply_feed(&r->reply, (const char *)body + at, n);
        at += n;
    }
    http_reply_finish(&r->reply, transfer_rc, "connection reset", &r->out);
}

static void check_coherent(const run_t *r, const json_t *id)
{
    const client_outcome_t *o = &r->out;
    if (o->response) {
        if (o->rc != MCP_OK)
            abort();
        const json_t *got = json_object_get(o->response, "id");
        if (json_is_null(got))
            got = NULL;
        bool is_error = json_object_get(o->response, "error") != NULL;
        if (got ? !(id && json_equal(got, id)) : !is_error)
            abort();
    } else if (o->rc == MCP_OK) {
        /* Only a notification succeeds without a response. */
        if (id || o->http_status < 200 || o->http_status > 299)
            abort();
    }
    if ((o->rc == MCP_OK) != (o->why == NULL))
        abort();
    if (o->body_len && !o->body)
        abort();
}

static bool same_outcome(const run_t *a, const run_t *b)
{
    const client_outcome_t *x = &a->out, *y = &b->out;
    if (x->rc != y->rc || x->http_status != y->http_status || a->state != b->state ||
        a->seen.hash != b->seen.hash || a->seen.count != b->seen.count ||
        x->body_len != y->body_len || (x->response == NULL) != (y->response == NULL))
        return false;
    if (x->body_len && memcmp(x->body, y->body, x->body_len) != 0)
        return false;
    if (x->response && !json_equal(x->response, y->response))
        return false;
    return (x->why == NULL) == (y->why == NULL) && (!x->why || strcmp(x->why, y->why) == 0);
}

static void release(run_t *r)
{
    json_decref(r->out.response);
    http_reply_free(&r->reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    int status = statuses[data[0] % (sizeof statuses / sizeof statuses[0])];
    const char *content_type = content_types[data[1] % (sizeof content_types /
                                                        sizeof content_types[0])];
    uint8_t flags = data[2];
    uint32_t seed = (uint32_t)data[3] << 8 | data[4];
    data += 5;
    size -= 5;

    json_t *id = NULL;
    switch (flags & 3) {
    case 0: id = json_integer(1); break;
    case 1: id = json_string("1"); break;
    default: break;
    }
    http_reply_limits_t small = {96, 96, 48};
    const http_reply_limits_t *limits = flags & 4 ? &small : NULL;
    int transfer_rc = flags & 8 ? MCP_EIO : MCP_OK;

    run_t whole, chunked;
    read_answer(&whole, id, limits, status, content_type, data, size, 0, transfer_rc);
    read_answer(&chunked, id, limits, status, content_type, data, size, seed | 1, transfer_rc);
    check_coherent(&whole, id);
    if (!same_outcome(&whole, &chunked))
        abort();
    release(&whole);
    release(&chunked);
    json_decref(id);
    return 0;
}
