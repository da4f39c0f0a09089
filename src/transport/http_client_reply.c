/*
 * Reading the answer to one POST: a JSON document, an event stream of
 * JSON-RPC messages, or an HTTP error with whatever body came with it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/http_client_reply.h"

/* What the event callback returns to stop the decoder once the response is
 * in (errors are negative MCP_E* codes). */
#define RESPONSE_FOUND 1

static bool is_2xx(int status)
{
    return status >= 200 && status <= 299;
}

/* Compares the media type of a Content-Type value, ignoring case and any
 * parameters ("text/event-stream; charset=utf-8"). */
static bool media_type_is(const char *content_type, const char *type)
{
    if (!content_type)
        return false;
    while (*content_type == ' ' || *content_type == '\t')
        content_type++;
    size_t n = strlen(type);
    if (strncasecmp(content_type, type, n) != 0)
        return false;
    char after = content_type[n];
    return after == '\0' || after == ';' || after == ' ' || after == '\t';
}

/* JSON whitespace only (or nothing): an event that carries no message. */
static bool is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return false;
    }
    return true;
}

static int set_why(http_reply_t *r, int rc, const char *fmt, ...) MCP_PRINTF(3, 4);

static int set_why(http_reply_t *r, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    return rc;
}

/* A failure that decides the outcome before the body is over. */
#define FAIL(r, rc, ...) \
    ((r)->failure = set_why((r), (rc), __VA_ARGS__), (r)->state = HTTP_REPLY_STOPPED)

/* Is `msg` the response to the request? An error without an id counts:
 * the server could not read the id, and a POST carries only one request. */
static bool is_the_response(const http_reply_t *r, const mcp_message_t *msg)
{
    if (msg->kind != MCP_MSG_RESULT && msg->kind != MCP_MSG_ERROR)
        return false;
    if (!msg->id)
        return msg->kind == MCP_MSG_ERROR;
    return r->request_id && json_equal(msg->id, r->request_id);
}

static int on_event(void *user, const mcp_sse_event_t *ev);

int http_reply_init(http_reply_t *r, const json_t *request_id, const http_reply_limits_t *limits,
                    const http_reply_events_t *events)
{
    memset(r, 0, sizeof *r);
    if (limits)
        r->limits = *limits;
    if (!r->limits.max_body_bytes)
        r->limits.max_body_bytes = HTTP_REPLY_DEFAULT_MAX_BODY;
    if (!r->limits.max_event_bytes)
        r->limits.max_event_bytes = HTTP_REPLY_DEFAULT_MAX_EVENT;
    if (!r->limits.max_error_body_bytes)
        r->limits.max_error_body_bytes = HTTP_REPLY_DEFAULT_MAX_ERROR_BODY;
    if (events)
        r->events = *events;
    /* Bounded, so that growing a buffer to a limit cannot overflow. */
    size_t *bounds[] = {&r->limits.max_body_bytes, &r->limits.max_event_bytes,
                        &r->limits.max_error_body_bytes};
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        if (*bounds[i] > SIZE_MAX / 4)
            *bounds[i] = SIZE_MAX / 4;
    }
    r->state = HTTP_REPLY_READING;
    r->retry_ms = -1;
    mcp_sse_decoder_init(&r->sse, r->limits.max_event_bytes, on_event, r);
    /* A copy, so that the caller may change or drop its request. */
    if (request_id && !(r->request_id = json_copy((json_t *)request_id)))
        return MCP_ENOMEM;
    return MCP_OK;
}

void http_reply_begin(http_reply_t *r, int status, const char *content_type)
{
    if (r->started)
        return;
    r->started = true;
    r->status = status;
    if (content_type && !(r->content_type = strdup(content_type))) {
        FAIL(r, MCP_ENOMEM, "out of memory");
        return;
    }
    if (is_2xx(status) && !r->request_id) {
        r->body_kind = HTTP_REPLY_BODY_IGNORED;
    } else if (is_2xx(status) && media_type_is(content_type, "text/event-stream")) {
        r->body_kind = HTTP_REPLY_BODY_EVENTS;
    } else {
        r->body_kind = HTTP_REPLY_BODY_BUFFERED;
    }
}

/* ------------------------------------------------------------------------
 * Event streams
 * ------------------------------------------------------------------------ */

static int on_event(void *user, const mcp_sse_event_t *ev)
{
    http_reply_t *r = user;
    /* Where a legacy client resumes the stream, should it break (a priming
     * event with an ID and no data counts too). */
    r->retry_ms = ev->retry_ms;
    if (ev->last_event_id[0] && (!r->last_event_id || strcmp(r->last_event_id, ev->last_event_id) != 0)) {
        free(r->last_event_id);
        r->last_event_id = strdup(ev->last_event_id);
    }
    /* The spec names no event types; "message" is the default one, and
     * other types are meant for other listeners. */
    if (strcmp(ev->type, "message") != 0 || is_blank(ev->data, ev->data_len))
        return MCP_OK;

    mcp_message_t msg;
    mcp_error_t err = {0};
    mcp_parse_limits_t limits = {.max_bytes = r->limits.max_event_bytes};
    int rc = mcp_jsonrpc_parse(ev->data, ev->data_len, &limits, &msg, &err);
    if (rc != MCP_OK) {
        if (rc == MCP_ENOMEM)
            FAIL(r, MCP_ENOMEM, "out of memory");
        else
            FAIL(r, MCP_EPROTO, "the server sent an event that is not a JSON-RPC message: %s",
                 err.message);
        mcp_error_clear(&err);
        mcp_message_clear(&msg);
        return r->failure;
    }

    if (msg.kind == MCP_MSG_NOTIFICATION) {
        if (r->events.on_notification)
            r->events.on_notification(r->events.user, msg.root);
    } else if (is_the_response(r, &msg)) {
        r->response = json_incref(msg.root);
        rc = RESPONSE_FOUND;
    } else if (r->events.on_other) {
        r->events.on_other(r->events.user, msg.root);
    }
    mcp_message_clear(&msg);
    return rc;
}

static http_reply_state_t feed_events(http_reply_t *r, const char *bytes, size_t len)
{
    int rc = mcp_sse_decoder_feed(&r->sse, bytes, len);
    if (rc == RESPONSE_FOUND)
        r->state = HTTP_REPLY_ANSWERED;
    else if (rc == MCP_ELIMIT)
        FAIL(r, MCP_ELIMIT, "an event of the stream exceeds %zu bytes", r->limits.max_event_bytes);
    else if (rc == MCP_ENOMEM)
        FAIL(r, MCP_ENOMEM, "out of memory");
    /* Any other code came from on_event, which already failed the reply. */
    return r->state;
}

/* ------------------------------------------------------------------------
 * Whole documents
 * ------------------------------------------------------------------------ */

static http_reply_state_t feed_buffer(http_reply_t *r, const char *bytes, size_t len)
{
    bool success = is_2xx(r->status);
    size_t cap = success ? r->limits.max_body_bytes : r->limits.max_error_body_bytes;
    bool cut = false;
    if (len > cap - r->body_len) {
        if (success) {
            r->body_len = 0; /* of no use, and would depend on the chunking */
            return FAIL(r, MCP_ELIMIT, "the response body exceeds %zu bytes", cap);
        }
        /* Of an error, the beginning is enough to tell what it is. */
        len = cap - r->body_len;
        cut = true;
    }
    if (r->body_len + len + 1 > r->body_cap) {
        size_t want = r->body_cap ? r->body_cap : 1024;
        while (want < r->body_len + len + 1)
            want *= 2;
        if (want > cap + 1)
            want = cap + 1;
        char *grown = realloc(r->body, want);
        if (!grown)
            return FAIL(r, MCP_ENOMEM, "out of memory");
        r->body = grown;
        r->body_cap = want;
    }
    memcpy(r->body + r->body_len, bytes, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
    if (cut)
        r->state = HTTP_REPLY_STOPPED;
    return r->state;
}

/* Parses the buffered body. Returns MCP_OK with the response taken when it
 * is the response to the request; otherwise a code with `why` set. */
static int take_buffered_response(http_reply_t *r, size_t max_bytes)
{
    if (r->body_len == 0)
        return set_why(r, MCP_EPROTO, "HTTP %d with an empty body", r->status);
    mcp_message_t msg;
    mcp_error_t err = {0};
    mcp_parse_limits_t limits = {.max_bytes = max_bytes};
    int rc = mcp_jsonrpc_parse(r->body, r->body_len, &limits, &msg, &err);
    if (rc == MCP_ENOMEM)
        rc = set_why(r, MCP_ENOMEM, "out of memory");
    else if (rc != MCP_OK)
        rc = set_why(r, MCP_EPROTO, "the body of HTTP %d is not a JSON-RPC message: %s",
                     r->status, err.message);
    else if (!is_the_response(r, &msg))
        rc = set_why(r, MCP_EPROTO, "the body of HTTP %d is not the response to the request",
                     r->status);
    else
        r->response = json_incref(msg.root);
    mcp_error_clear(&err);
    mcp_message_clear(&msg);
    return rc;
}

http_reply_state_t http_reply_feed(http_reply_t *r, const char *bytes, size_t len)
{
    if (!r->started)
        http_reply_begin(r, 0, NULL);
    if (r->state != HTTP_REPLY_READING || len == 0)
        return r->state;
    switch (r->body_kind) {
    case HTTP_REPLY_BODY_EVENTS:
        return feed_events(r, bytes, len);
    case HTTP_REPLY_BODY_BUFFERED:
        return feed_buffer(r, bytes, len);
    case HTTP_REPLY_BODY_IGNORED:
        break;
    }
    return r->state;
}

/* ------------------------------------------------------------------------
 * The outcome
 * ------------------------------------------------------------------------ */

static int decide(http_reply_t *r, int transfer_rc, const char *transfer_why)
{
    if (!transfer_why)
        transfer_why = "the connection failed";
    if (r->state == HTTP_REPLY_ANSWERED)
        return MCP_OK;
    if (r->failure)
        return r->failure;
    /* A transfer that failed is a network failure, or a deadline that
     * passed (MCP_ETIMEDOUT: an exchange with a timeout of its own). */
    int failed = transfer_rc == MCP_ETIMEDOUT ? MCP_ETIMEDOUT : MCP_EIO;
    if (r->status == 0)
        return set_why(r, failed, "%s", transfer_rc != MCP_OK ? transfer_why : "no HTTP response");
    /* Authorization first: it is never era evidence, whatever the body. */
    if (r->status == 401 || r->status == 403)
        return set_why(r, MCP_EAUTH, "HTTP %d: the server %s", r->status,
                       r->status == 401 ? "requires authorization" : "refused the authorization");
    if (!is_2xx(r->status)) {
        if (take_buffered_response(r, r->limits.max_error_body_bytes) == MCP_OK)
            return MCP_OK;
        return set_why(r, MCP_EIO, "HTTP %d", r->status);
    }
    if (transfer_rc != MCP_OK)
        return set_why(r, failed, "%s", transfer_why);

    switch (r->body_kind) {
    case HTTP_REPLY_BODY_IGNORED:
        return MCP_OK;
    case HTTP_REPLY_BODY_EVENTS:
        if (mcp_sse_decoder_finish(&r->sse) == MCP_EPROTO)
            return set_why(r, MCP_ECLOSED,
                           "the event stream ended in the middle of an event, before the response");
        return set_why(r, MCP_ECLOSED, "the event stream ended before the response");
    case HTTP_REPLY_BODY_BUFFERED:
        break;
    }
    return take_buffered_response(r, r->limits.max_body_bytes);
}

void http_reply_finish(http_reply_t *r, int transfer_rc, const char *transfer_why,
                       client_outcome_t *out)
{
    if (!r->started)
        http_reply_begin(r, 0, NULL);
    memset(out, 0, sizeof *out);
    out->rc = decide(r, transfer_rc, transfer_why);
    out->why = out->rc == MCP_OK ? NULL : r->why;
    out->response = r->response;
    r->response = NULL;
    out->http_status = r->status;
    out->content_type = r->content_type;
    out->last_event_id = r->last_event_id;
    out->retry_ms = r->retry_ms;
    if (r->body_kind == HTTP_REPLY_BODY_BUFFERED) {
        out->body = r->body;
        out->body_len = r->body_len;
    }
}

void http_reply_free(http_reply_t *r)
{
    if (!r)
        return;
    json_decref(r->request_id);
    json_decref(r->response);
    free(r->last_event_id);
    free(r->content_type);
    free(r->body);
    mcp_sse_decoder_free(&r->sse);
    memset(r, 0, sizeof *r);
}
