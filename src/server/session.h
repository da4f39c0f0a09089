/*
 * Legacy sessions: what a legacy client told the server in initialize, and
 * the server-to-client channel of that client.
 *
 * A session has two halves:
 *   - a record that can live anywhere: protocol version, client
 *     capabilities and info, log level, resource subscriptions. It goes
 *     through a session store (the seam below); the default keeps it in
 *     memory, and a store shared by several instances removes the need for
 *     sticky routing: any instance can serve the session's requests;
 *   - live state that belongs to one process: the stream of server messages
 *     (stdio: the connection's output; HTTP: the GET stream) with a bounded
 *     buffer for Last-Event-ID resumption.
 */
#ifndef MCP_SERVER_SESSION_H
#define MCP_SERVER_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "mcp/server_core.h"

/* ------------------------------------------------------------------------
 * The store seam
 * ------------------------------------------------------------------------ */

typedef struct session_store session_store_t;

struct session_store {
    /* Stores (creates or replaces) the record of session `id` (borrowed),
     * to expire at `expires_ms` (Unix epoch ms). 0 or a negative MCP_E*. */
    int (*save)(session_store_t *store, const char *id, const json_t *record,
                int64_t expires_ms);
    /* The record of `id` (new reference), or NULL when unknown or expired
     * at `now_ms`. */
    json_t *(*load)(session_store_t *store, const char *id, int64_t now_ms);
    /* Forgets `id`. */
    void (*remove)(session_store_t *store, const char *id);
    void (*free)(session_store_t *store);
};

/* The in-memory default (thread-safe, expired records swept on use). */
session_store_t *session_store_memory_new(void);

/* ------------------------------------------------------------------------
 * Sessions
 * ------------------------------------------------------------------------ */

typedef struct mcp_session mcp_session_t;

struct mcp_session {
    atomic_int refs;
    struct mcp_server *srv;
    char *id;                 /* HTTP sessions; NULL on stdio and stateless */
    /* HTTP sessions: the authenticated principal that initialized it (NULL:
     * none). Only the same principal may use the session: the id alone is
     * a bearer secret that can leak (logs, proxies). Set before the
     * session is shared, never changed. */
    char *principal;

    pthread_mutex_t lock;     /* guards everything below */
    char *protocol_version;
    json_t *client_caps;      /* ClientCapabilities of initialize */
    json_t *client_info;      /* or NULL */
    int log_level;            /* 0..7 after logging/setLevel, -1 before */
    json_t *subscriptions;    /* URIs of resources/subscribe */
    int64_t expires_ms;       /* HTTP: when it expires unless used (wall clock) */
    bool ended;

    /* The stream of server messages: a connection's outbound sink (stdio)
     * or a GET stream's exchange (HTTP). */
    mcp_sink_t *outbound;
    struct mcp_exchange *stream;
    /* Recent stream messages, for resumption: a ring of serialised
     * messages with increasing sequence numbers (the SSE event ids). It
     * grows as messages come, up to ring_limit (session_replay_events):
     * most sessions never get a server message, and 10,000 sessions with
     * a full-size ring each would hold 40 MB of empty slots. */
    struct replay_event { uint64_t seq; json_t *msg; } *ring;
    size_t ring_cap, ring_limit, ring_start, ring_count;
    uint64_t next_seq;

    /* HTTP sessions: tracks the session's requests in flight, so that a
     * notifications/cancelled can find them (stdio uses its connection). */
    mcp_conn_t *conn;

    struct mcp_session *prev, *next; /* the server's live sessions */
    struct mcp_session *index_next;  /* the next in its bucket of the live index */
};

/* A session for a stdio connection or a stateless request (no id), from
 * an initialize request's params (borrowed). */
/* Sets the session's principal (copied; NULL: none) before it is shared.
 * MCP_OK or MCP_ENOMEM. */
int session_set_principal(mcp_session_t *s, const char *principal);
/* May `principal` use session `s`? (The one that initialized it only.) */
bool session_principal_may_use(const mcp_session_t *s, const char *principal);
mcp_session_t *session_new(struct mcp_server *srv, const char *id, const json_t *init_params);
void session_ref(mcp_session_t *s);
void session_unref(mcp_session_t *s);

/* The session record, for the store. */
json_t *session_record(mcp_session_t *s);
/* A live session rebuilt from a stored record. */
mcp_session_t *session_from_record(struct mcp_server *srv, const char *id, const json_t *record);

/* Sends a message that belongs to no request on the session's stream (or
 * buffers it for resumption when no stream is attached). Steals msg_new. */
void session_push(mcp_session_t *s, json_t *msg_new);

/* Ends the session: its stream closes. */
void session_end(mcp_session_t *s);

/* Mints a session id: 32 random bytes as hex (visible ASCII). */
int session_mint_id(char out[65]);

#endif /* MCP_SERVER_SESSION_H */
