/* In-process HTTP servers for the OAuth tests; see oauth_fixture.h. */
#include "oauth_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

struct oauth_fixture {
    struct MHD_Daemon *daemon;
    oauth_fixture_route_fn route;
    void *user;
};

/* A request's body as it arrives. */
typedef struct upload {
    char body[OAUTH_FIXTURE_BODY_MAX + 1];
    size_t len;
} upload_t;

/* libmicrohttpd calls this once for the headers, once per piece of body,
 * and once at the end: only then is the route asked. */
static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *data,
                             size_t *data_size, void **req_cls)
{
    oauth_fixture_t *fixture = cls;
    upload_t *up = *req_cls;
    (void)version;
    if (!up) {
        up = calloc(1, sizeof *up);
        if (!up)
            return MHD_NO;
        *req_cls = up;
        return MHD_YES;
    }
    if (*data_size) {
        size_t room = sizeof up->body - 1 - up->len;
        size_t n = *data_size < room ? *data_size : room;
        memcpy(up->body + up->len, data, n);
        up->len += n;
        *data_size = 0;
        return MHD_YES;
    }
    return fixture->route(fixture->user, conn, url, method, up->body);
}

static void request_done(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode why)
{
    (void)cls;
    (void)conn;
    (void)why;
    free(*req_cls);
    *req_cls = NULL;
}

oauth_fixture_t *oauth_fixture_start(oauth_fixture_route_fn route, void *user,
                                     char origin[OAUTH_FIXTURE_ORIGIN_MAX])
{
    oauth_fixture_t *fixture = calloc(1, sizeof *fixture);
    assert_non_null(fixture);
    fixture->route = route;
    fixture->user = user;
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fixture->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, serve,
                                       fixture, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                       MHD_OPTION_NOTIFY_COMPLETED, request_done, NULL,
                                       MHD_OPTION_END);
    assert_non_null(fixture->daemon);
    snprintf(origin, OAUTH_FIXTURE_ORIGIN_MAX, "http://127.0.0.1:%u",
             MHD_get_daemon_info(fixture->daemon, MHD_DAEMON_INFO_BIND_PORT)->port);
    return fixture;
}

void oauth_fixture_stop(oauth_fixture_t *fixture)
{
    if (!fixture)
        return;
    MHD_stop_daemon(fixture->daemon);
    free(fixture);
}

enum MHD_Result oauth_fixture_reply(struct MHD_Connection *conn, unsigned status,
                                    const char *json, const char *www_authenticate,
                                    const char *dpop_nonce)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (www_authenticate)
        MHD_add_response_header(r, "WWW-Authenticate", www_authenticate);
    if (dpop_nonce)
        MHD_add_response_header(r, "DPoP-Nonce", dpop_nonce);
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result oauth_fixture_answer(struct MHD_Connection *conn, unsigned status,
                                     const char *json)
{
    return oauth_fixture_reply(conn, status, json, NULL, NULL);
}

enum MHD_Result oauth_fixture_answer_resource_metadata(struct MHD_Connection *conn,
                                                       const char *origin, const char *path,
                                                       const char *issuer, const char *extra)
{
    char doc[2048];
    snprintf(doc, sizeof doc,
             "{\"resource\":\"%s%s\",\"authorization_servers\":[\"%s\"]%s%s}", origin, path,
             issuer, extra ? "," : "", extra ? extra : "");
    return oauth_fixture_answer(conn, 200, doc);
}

enum MHD_Result oauth_fixture_answer_as_metadata(struct MHD_Connection *conn,
                                                 const char *issuer, const char *extra)
{
    char doc[2048];
    snprintf(doc, sizeof doc, "{\"issuer\":\"%s\",\"token_endpoint\":\"%s/token\"%s%s}", issuer,
             issuer, extra ? "," : "", extra ? extra : "");
    return oauth_fixture_answer(conn, 200, doc);
}

char *oauth_fixture_form_get(const char *form, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = form; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, name, len) != 0 || p[len] != '=')
            continue;
        const char *v = p + len + 1;
        size_t n = strcspn(v, "&");
        char *out = malloc(n + 1), *o = out;
        if (!out)
            return NULL;
        for (size_t i = 0; i < n; i++) {
            unsigned byte;
            if (v[i] == '%' && i + 2 < n + 1 && sscanf(v + i + 1, "%2x", &byte) == 1) {
                *o++ = (char)byte;
                i += 2;
            } else {
                *o++ = v[i] == '+' ? ' ' : v[i];
            }
        }
        *o = '\0';
        return out;
    }
    return NULL;
}
