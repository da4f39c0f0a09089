/*
 * oauth_fixture: the in-process HTTP servers of the OAuth tests (an
 * authorization server, an IdP, a protected resource), on libmicrohttpd.
 *
 *     static enum MHD_Result route(void *user, struct MHD_Connection *conn,
 *                                  const char *url, const char *method, const char *body)
 *     {
 *         if (strcmp(url, "/.well-known/oauth-authorization-server") == 0)
 *             return oauth_fixture_answer_as_metadata(conn, origin, NULL);
 *         return oauth_fixture_answer(conn, 404, "{}");
 *     }
 *
 *     char origin[OAUTH_FIXTURE_ORIGIN_MAX];
 *     oauth_fixture_t *http = oauth_fixture_start(route, user, origin);
 *     ...
 *     oauth_fixture_stop(http);
 *
 * The fixture owns the sockets and the request bodies; what a server
 * remembers of its requests, and how it answers, stays with the test,
 * which is what it checks. Routes run on libmicrohttpd's thread: state
 * they share with the test needs the test's own lock.
 */
#ifndef MCP_TEST_OAUTH_FIXTURE_H
#define MCP_TEST_OAUTH_FIXTURE_H

#include <microhttpd.h>

/* Room for "http://127.0.0.1:<port>" and its NUL. */
#define OAUTH_FIXTURE_ORIGIN_MAX 64

/* The most of a request body a route is given (longer bodies are cut). */
#define OAUTH_FIXTURE_BODY_MAX 4095

typedef struct oauth_fixture oauth_fixture_t;

/* Answers one request, once its body has arrived: `body` is the whole
 * body, NUL-terminated ("" when there is none), valid during the call.
 * Returns what MHD_queue_response() returned. */
typedef enum MHD_Result (*oauth_fixture_route_fn)(void *user, struct MHD_Connection *conn,
                                                  const char *url, const char *method,
                                                  const char *body);

/* Starts a server on 127.0.0.1, on a port of the system's choosing, that
 * gives every request to `route` with `user`, and writes its origin
 * ("http://127.0.0.1:<port>", no trailing slash) to `origin`. A cmocka
 * assertion fails if it cannot start. Stop it with oauth_fixture_stop(). */
oauth_fixture_t *oauth_fixture_start(oauth_fixture_route_fn route, void *user,
                                     char origin[OAUTH_FIXTURE_ORIGIN_MAX]);

/* Stops the server (waiting for the request in progress, if any) and frees
 * it. NULL is a no-op. */
void oauth_fixture_stop(oauth_fixture_t *fixture);

/* Queues a JSON answer: `status`, Content-Type application/json, and the
 * headers WWW-Authenticate and DPoP-Nonce when given (non-NULL). `json` is
 * copied. */
enum MHD_Result oauth_fixture_reply(struct MHD_Connection *conn, unsigned status,
                                    const char *json, const char *www_authenticate,
                                    const char *dpop_nonce);

/* oauth_fixture_reply() without the extra headers. */
enum MHD_Result oauth_fixture_answer(struct MHD_Connection *conn, unsigned status,
                                     const char *json);

/* Answers 200 with protected resource metadata (RFC 9728):
 * {"resource":"<origin><path>","authorization_servers":["<issuer>"],<extra>}.
 * `extra` is more members, as JSON text without braces, or NULL. */
enum MHD_Result oauth_fixture_answer_resource_metadata(struct MHD_Connection *conn,
                                                       const char *origin, const char *path,
                                                       const char *issuer, const char *extra);

/* Answers 200 with authorization server metadata (RFC 8414):
 * {"issuer":<issuer>,"token_endpoint":"<issuer>/token",<extra>}: `extra`
 * as above, or NULL. */
enum MHD_Result oauth_fixture_answer_as_metadata(struct MHD_Connection *conn,
                                                 const char *issuer, const char *extra);

/* The value of `name` in an application/x-www-form-urlencoded body,
 * decoded (%XX and '+'), malloc'd; NULL when the body has no such
 * parameter. */
char *oauth_fixture_form_get(const char *form, const char *name);

#endif
