/*
 * The legacy client (2025-11-25, 2025-06-18, 2025-03-26), behind the same
 * public calls as the modern one (DESIGN.md section 2: legacy code lives
 * here and nowhere else).
 *
 *   session.c   the initialize handshake, its version negotiation, a
 *               re-initialize after the server forgot the session (HTTP
 *               404), the GET stream, the end of the session
 *   requests.c  what a request looks like on the legacy wire (no _meta
 *               envelope, no Mcp-* headers), ping and logging/setLevel
 *   inbound.c   what the server sends outside our requests: its requests
 *               (answered through the same callbacks as MRTR input) and
 *               its notifications (log, list_changed, resources/updated)
 *   listen.c    mcp_client_listen() mapped onto resources/subscribe
 *   tasks.c     tools/call as a task of the experimental 2025-11-25 tasks
 */
#ifndef MCP_CLIENT_LEGACY_H
#define MCP_CLIENT_LEGACY_H

#include "client/client_internal.h"

typedef struct client_legacy client_legacy_t;

/* ------------------------------------------------------------------------
 * session.c
 * ------------------------------------------------------------------------ */

/*
 * The initialize handshake over the client's transport: initialize with
 * the preferred legacy version and the legacy capabilities, a check of the
 * version the server answers, notifications/initialized, then (HTTP) the
 * GET stream and (with a log level) logging/setLevel. On success the
 * client's era is LEGACY. *wire (may be NULL) receives what the
 * initialize POST got back, so that the caller can tell an endpoint that
 * does not speak Streamable HTTP at all.
 */
int client_legacy_connect(mcp_client_t *c, client_wire_t *wire, mcp_error_t *err);

/* The session generation a request was sent in (see reinitialize). */
uint64_t client_legacy_generation(mcp_client_t *c);

/*
 * The server answered 404 to a request of session `generation`: it forgot
 * the session. Unless another thread already did, forgets it and runs the
 * handshake again (without the session id). Returns MCP_OK when the
 * request may be sent again.
 */
int client_legacy_reinitialize(mcp_client_t *c, uint64_t generation, mcp_error_t *err);

/*
 * The transport restarted the (stdio) server: the new process must be
 * initialized. Marks the session stale, so that calls wait
 * (client_legacy_await_session), and has the keeper thread run the
 * handshake, then logging/setLevel and resources/subscribe for the open
 * subscriptions. Called on the transport's thread with c->lock held (so
 * that close cannot free the session meanwhile); it only starts the work.
 * False when it cannot (closing, or no thread).
 */
bool client_legacy_restarted(mcp_client_t *c);

/* Before a legacy request: waits while a restarted server is being
 * initialized, within the call's timeout and cancellation. */
int client_legacy_await_session(mcp_client_t *c, const client_call_opts_t *o, mcp_error_t *err);

/* Ends the legacy side of the connection before the transport closes: the
 * keeper of a restarted server, the GET stream, the threads answering
 * server requests, the session (DELETE). From then on a server request
 * that arrives is refused. NULL-safe for modern clients. */
void client_legacy_close(mcp_client_t *c);

/* Frees c->legacy (closed) once the transport is closed: until then its
 * reader thread may still hand messages to it. NULL-safe. */
void client_legacy_free(mcp_client_t *c);

/* ------------------------------------------------------------------------
 * requests.c
 * ------------------------------------------------------------------------ */

/*
 * The JSON-RPC request `method` with id `id` as legacy servers expect it:
 * a copy of `params` (borrowed, may be NULL) without the modern _meta
 * keys, plus _meta.progressToken = id when `progress`. NULL on allocation
 * failure.
 */
json_t *client_legacy_request_build(json_int_t id, const char *method, const json_t *params,
                                    bool progress);

/* The MCP-Protocol-Version header a legacy request carries after
 * initialization: the negotiated version from 2025-06-18 on, none for
 * 2025-03-26 (which had no such header). */
const char *client_legacy_header_version(const char *version);

/* Methods that exist only on the modern era (server/discover,
 * subscriptions/listen): a legacy server would not know them. */
bool client_legacy_method_unknown(const char *method);

/* ------------------------------------------------------------------------
 * inbound.c
 * ------------------------------------------------------------------------ */

/* A message from the server outside our requests (borrowed): a request
 * that needs a callback is answered on a thread of its own (at most
 * CLIENT_LEGACY_MAX_ANSWERING at once), any other request (ping, an
 * unknown method) at once; notifications are delivered. */
void client_legacy_on_message(mcp_client_t *c, const json_t *msg);

/*
 * How many of the server's requests that need a callback (elicitation,
 * sampling, roots) are answered at once, each on a thread of its own. A
 * callback may wait for a person for minutes; a server that asks more
 * meanwhile (a flood, or a bug) must not make the client start a thread
 * per request, so the excess is answered at once with -32603 and a
 * message saying why: refused, never silently dropped.
 */
#define CLIENT_LEGACY_MAX_ANSWERING 16

/* A request of the server being answered (on a thread of its own). */
typedef struct client_inbound {
    struct client_inbound *next;
    mcp_client_t *client;
    json_t *request;
    bool cancelled;              /* the server withdrew it; under the session's lock */
} client_inbound_t;

/* Lists a request being answered and unlists it when its thread is done
 * (session.c). Entering fails with MCP_ECLOSED once closing and with
 * MCP_ELIMIT while CLIENT_LEGACY_MAX_ANSWERING are listed: then its thread
 * must not start. */
int client_legacy_inbound_enter(mcp_client_t *c, client_inbound_t *in);
void client_legacy_inbound_leave(mcp_client_t *c, client_inbound_t *in);

/* The server cancelled its request `request_id` (notifications/cancelled):
 * marks the listed request with that id. False when none is listed (it
 * was answered already, or never came). */
bool client_legacy_inbound_cancel(mcp_client_t *c, const json_t *request_id);

/* Has the server cancelled `in`? */
bool client_legacy_inbound_cancelled(mcp_client_t *c, const client_inbound_t *in);

/* Waits until every thread answering a server request has finished, and
 * lets no new one start (at close). */
void client_legacy_drain_inbound(mcp_client_t *c);

/* ------------------------------------------------------------------------
 * listen.c
 * ------------------------------------------------------------------------ */

/* The part of a subscription's filter ({"notifications": filter} in
 * `params`) the server's capabilities promise: listChanged of tools,
 * prompts and resources; resources.subscribe for the URIs (new
 * reference; NULL when out of memory). */
json_t *client_legacy_listen_honoured(mcp_client_t *c, const json_t *params);

/* resources/subscribe for each URI of an honoured filter; on a failure
 * the ones that went through are unsubscribed again. */
int client_legacy_listen_subscribe(mcp_client_t *c, const json_t *honoured, mcp_error_t *err);

/* Closes one: resources/unsubscribe for its URIs that none of `others`
 * (an array of {"notifications": filter}) still wants. Failures are
 * logged. */
void client_legacy_listen_close(mcp_client_t *c, const json_t *params, const json_t *others);

/* resources/subscribe again for the URIs of every open subscription (a
 * restarted server knows none of them), each URI once, with `opts`.
 * Failures are logged. */
void client_legacy_listen_renew(mcp_client_t *c, const mcp_request_options_t *opts);

/* Does a subscription with (honoured) `filter` want `method`/`params`? */
bool client_legacy_filter_matches(const json_t *filter, const char *method,
                                  const json_t *params);

/* ------------------------------------------------------------------------
 * tasks.c
 * ------------------------------------------------------------------------ */

/* Should this tools/call (params borrowed) be a task? Yes on a legacy
 * connection of a client with the option `tasks`, when the server takes
 * tasks for tools/call and listed the tool with execution.taskSupport
 * "optional" or "required"; tools/list is fetched (with `opts`' timeout
 * and cancel) when the tool is new to the client. */
bool client_legacy_task_wanted(mcp_client_t *c, const json_t *params,
                               const mcp_request_options_t *opts);

/* tools/call (params borrowed) as a task, followed to its end: *result_out
 * is the CallToolResult, as a direct call gives it; a failed task is
 * MCP_ERPC with its error, a cancelled one MCP_ECANCELED. */
int client_legacy_task_call(mcp_client_t *c, const json_t *params,
                            const mcp_request_options_t *opts, json_t **result_out,
                            mcp_error_t *err);

#endif /* MCP_CLIENT_LEGACY_H */
