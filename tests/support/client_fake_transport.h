/*
 * A scripted client transport (src/client/transport.h) for unit tests of
 * the client core: every request the core starts is recorded with its
 * hints and handed to a responder, which answers it at once (a response
 * message, optionally after notifications) or leaves it hanging until the
 * core cancels it or the test finishes it.
 */
#ifndef MCP_TEST_CLIENT_FAKE_TRANSPORT_H
#define MCP_TEST_CLIENT_FAKE_TRANSPORT_H

#include "client/client_internal.h"
#include "client/transport.h"

typedef struct fake_transport fake_transport_t;

/* Answers `request` (borrowed): a response message (new reference), or
 * NULL to leave it in flight. May call fake_emit() for the request first. */
typedef json_t *(*fake_responder_fn)(void *user, fake_transport_t *ft, const json_t *request);

/* A transport for `client`: made with client_transport_hooks(client), as
 * the real constructors are. */
fake_transport_t *fake_transport_new(mcp_client_t *client, fake_responder_fn responder,
                                     void *user);
/* The transport to hand to client_connect_transport() (which takes it). */
client_transport_t *fake_transport_base(fake_transport_t *ft);
/* fake_transport_new() handed to client_connect_transport() as a stdio
 * transport: the transport, or NULL when connecting failed. */
fake_transport_t *fake_transport_connect(mcp_client_t *client, fake_responder_fn responder,
                                         void *user);

/* Delivers a notification (borrowed) to the exchange of request `id`.
 * Returns false when no such exchange is in flight. */
bool fake_emit(fake_transport_t *ft, json_int_t id, const json_t *msg);
/* Ends the exchange of request `id` with `response_new` (stolen), or with
 * `rc` when response_new is NULL. */
bool fake_finish(fake_transport_t *ft, json_int_t id, json_t *response_new, int rc);
/* Delivers a message (borrowed) to on_unrouted. */
void fake_unrouted(fake_transport_t *ft, const json_t *msg);

/* What the core did. Each returns a new reference to a JSON array:
 * the requests, in order; the hints of each request
 * ({"version","method","name"?,"params":{name:value}}); the ids it cancelled
 * ({"id", "notify"}); the messages it sent with notify() (notifications,
 * and legacy answers to the server's requests), in order. */
json_t *fake_requests(fake_transport_t *ft);
json_t *fake_hints(fake_transport_t *ft);
json_t *fake_cancels(fake_transport_t *ft);
json_t *fake_notes(fake_transport_t *ft);
/* The requests of `method` only, in order (new reference), and how many. */
json_t *fake_requests_of(fake_transport_t *ft, const char *method);
size_t fake_count(fake_transport_t *ft, const char *method);
/* Number of exchanges started and not yet released. */
size_t fake_outstanding(fake_transport_t *ft);

/* A DiscoverResult for 2026-07-28 (new reference). */
json_t *fake_discover_result(void);
/* {"jsonrpc":"2.0","id":<id of request>,"result":result_new} */
json_t *fake_result(const json_t *request, json_t *result_new);
/* {"jsonrpc":"2.0","id":<id of request>,"error":{code,message,data_new?}} */
json_t *fake_error(const json_t *request, int code, const char *message, json_t *data_new);
/* The request's method / params / id. */
const char *fake_method(const json_t *request);
json_t *fake_params(const json_t *request);
json_int_t fake_id(const json_t *request);

#endif /* MCP_TEST_CLIENT_FAKE_TRANSPORT_H */
