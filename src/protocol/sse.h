/*
 * Server-Sent Events codec (internal).
 *
 * Streamable HTTP answers a POST either with one JSON document or with a
 * text/event-stream whose events each carry one JSON-RPC message in their
 * data (digest section 4.3); the legacy GET stream uses the same format.
 *
 * The decoder follows the WHATWG HTML "event stream interpretation" rules
 * and is incremental: bytes may arrive in chunks cut anywhere, even inside a
 * CRLF or a UTF-8 BOM. It works on bytes: field values are passed through
 * unchanged (no UTF-8 decoding or validation; the JSON parser that reads
 * the data does that). Memory per event is bounded by a limit the caller
 * chooses, so a hostile peer cannot make it grow without bound.
 *
 * The encoder writes events in the same format; anything it writes decodes
 * back to what was given (with CR and CRLF line breaks in data read back
 * as LF, as the format requires).
 *
 * Pure code: no I/O, no globals. A decoder is used by one thread at a time;
 * distinct decoders are independent. The encoder functions are thread-safe.
 */
#ifndef MCP_PROTOCOL_SSE_H
#define MCP_PROTOCOL_SSE_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * One dispatched event. Every pointer is owned by the decoder and valid only
 * during the callback.
 */
typedef struct mcp_sse_event {
    /* The "event" field, or "message" when the event named none. */
    const char *type;
    /* The "data" lines joined with "\n" (no trailing newline); data_len
     * bytes followed by a NUL. The data itself may contain NUL bytes. */
    const char *data;
    size_t data_len;
    /* The last event ID of the stream ("" when none was ever set): the value
     * to send as Last-Event-ID when resuming after this event. */
    const char *last_event_id;
    /* The reconnection time in milliseconds from the last valid "retry"
     * field, or -1 when the stream sent none. */
    int64_t retry_ms;
} mcp_sse_event_t;

/*
 * Called for each dispatched event, with the `user` pointer given to
 * mcp_sse_decoder_init(). Return 0 to go on; any other value stops decoding
 * and becomes the return value of the mcp_sse_decoder_feed() call.
 */
typedef int (*mcp_sse_event_fn)(void *user, const mcp_sse_event_t *event);

/* A growable byte buffer, private to the decoder. */
typedef struct mcp_sse_buffer {
    char *bytes;
    size_t len;
    size_t cap;
} mcp_sse_buffer_t;

/*
 * Decoder state. Treat every field as private: use the functions below.
 * Lives wherever the caller wants (stack, inside a connection struct).
 */
typedef struct mcp_sse_decoder {
    size_t max_event_bytes;
    mcp_sse_event_fn on_event;
    void *user;
    mcp_sse_buffer_t line;          /* the current line while it spans chunks */
    mcp_sse_buffer_t data;          /* the data buffer of the event being read */
    mcp_sse_buffer_t type;          /* the event type buffer */
    mcp_sse_buffer_t id;            /* an "id" value not yet committed */
    mcp_sse_buffer_t last_event_id; /* the ID committed by the last blank line */
    int64_t retry_ms;
    unsigned bom_seen;              /* bytes of a leading BOM matched so far */
    bool at_stream_start;           /* the BOM may still come */
    bool after_cr;                  /* a CR ended the last line: skip one LF */
    bool id_pending;                /* `id` holds a value to commit */
    int stopped;                    /* non-zero: why decoding stopped */
} mcp_sse_decoder_t;

/*
 * Prepares *dec for a new stream. `max_event_bytes` bounds the memory one
 * event may hold: its data and event type so far plus the line being read
 * (SIZE_MAX for no bound). `on_event` (required) receives each event with
 * `user`. Never fails; release the decoder with mcp_sse_decoder_free().
 */
void mcp_sse_decoder_init(mcp_sse_decoder_t *dec, size_t max_event_bytes,
                          mcp_sse_event_fn on_event, void *user);

/*
 * Decodes `len` bytes of the stream (`buf` may be NULL when len is 0),
 * calling the event callback for every event completed by them.
 * Returns MCP_OK; MCP_ELIMIT when an event outgrows max_event_bytes;
 * MCP_ENOMEM when a buffer cannot grow; or the non-zero value a callback
 * returned. After a failure the rest of `buf` is not decoded and every
 * further call returns the same value until mcp_sse_decoder_finish().
 */
int mcp_sse_decoder_feed(mcp_sse_decoder_t *dec, const void *buf, size_t len);

/*
 * Ends the current stream: an event without its terminating blank line is
 * discarded (it is never dispatched), and the decoder is ready for a new
 * stream, for example after a reconnection. The last event ID and the
 * reconnection time are kept, so events of the next stream that carry no
 * "id" inherit the ID. Returns how the stream ended: the value that
 * stopped decoding when a feed failed or a callback stopped it; otherwise
 * MCP_EPROTO when a partial line or undispatched data was discarded (a
 * truncated stream); otherwise MCP_OK.
 */
int mcp_sse_decoder_finish(mcp_sse_decoder_t *dec);

/* The last event ID committed by a dispatch ("" when none); valid until the
 * next call on the decoder. */
const char *mcp_sse_decoder_last_event_id(const mcp_sse_decoder_t *dec);

/* The reconnection time from the last valid "retry" field, -1 when none. */
int64_t mcp_sse_decoder_retry_ms(const mcp_sse_decoder_t *dec);

/* Releases the decoder's buffers. NULL-safe; *dec may be initialised again. */
void mcp_sse_decoder_free(mcp_sse_decoder_t *dec);

/*
 * Formats one event into a new buffer: "event: <type>\n" when `type` is
 * neither NULL nor "", "id: <id>\n" when `id` is not NULL (an empty id
 * resets the peer's last event ID), one "data: <line>\n" per line of the
 * `data_len` bytes at `data` (lines split at LF, CR or CRLF; empty data is
 * one empty line), then the blank line that dispatches the event.
 * On success stores a malloc'd, NUL-terminated buffer in *out (free it with
 * free()) and its length without the NUL in *out_len (if not NULL).
 * Returns MCP_OK, MCP_EINVAL when `type` or `id` contains CR or LF (they
 * would break the framing) or `data` is NULL with data_len > 0, or
 * MCP_ENOMEM.
 */
int mcp_sse_format_event(const char *type, const char *id, const char *data, size_t data_len,
                         char **out, size_t *out_len);

/*
 * Formats a comment, ": <text>\n" per line of `text` (NULL counts as ""):
 * decoders ignore it, which makes it the keep-alive of long-lived streams.
 * Ownership and return values as for mcp_sse_format_event() (never
 * MCP_EINVAL).
 */
int mcp_sse_format_comment(const char *text, char **out, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* MCP_PROTOCOL_SSE_H */
