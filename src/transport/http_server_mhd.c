/*
 * The libmicrohttpd engine of the built-in HTTP server (chosen for TLS;
 * see http_server_engine.h), carrying the endpoint (http_exchange.c),
 * which decides everything about a request. This file only moves bytes
 * and parks connections.
 *
 * Threads: libmicrohttpd's event threads (an epoll thread pool) call the
 * access handler, the content reader and the completion callback; they
 * never run handlers. A request waiting for its handler is parked: its
 * connection is suspended, costing no thread, and its socket is given to
 * the hang-up watcher (http_watch.c) so that a client that leaves is seen
 * at once. The endpoint's answer arrives on a worker thread (or the
 * timeout thread), is buffered here, and resumes the connection.
 *
 * One request's life, as libmicrohttpd calls us:
 *
 *   first call      headers: mcp_http_begin(); a refusal is queued at once
 *   upload calls    mcp_http_body()
 *   final call      mcp_http_end(); queue the answer if it is there (or
 *                   comes within moments: await_answer()), else suspend
 *                   (parked) until the responder resumes us, and
 *                   libmicrohttpd calls again
 *   content reader  an event stream: hand out buffered events; suspend
 *                   when there are none yet
 *   completed       libmicrohttpd is done; cancel the exchange if it may
 *                   still be running (client gone, timeout, shutdown)
 *
 * A connection is suspended only by its own event thread and resumed only
 * by whoever clears `suspended` under the request lock: so it is resumed
 * exactly once per suspension and never after it is gone. Stopping the
 * daemon with a suspended connection is forbidden, hence `closing` and the
 * final sweep in engine_close().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "protocol/headers_internal.h"
#include "protocol/http1.h"
#include "server/server_internal.h"
#include "server/worker_pool.h"
#include "transport/http_endpoint.h"
#include "transport/http_server_engine.h"
#include "transport/http_watch.h"
#include "transport/mhd_api.h"
#include "spin.h"
#include "zalloc.h"

/* libmicrohttpd's per-connection memory pool holds the request head, the
 * read buffer and the write buffer. It is sized from the largest head we
 * accept (plus room for libmicrohttpd's bookkeeping and our response
 * head), because it is what every connection costs: libmicrohttpd lends
 * half of it to the read buffer, and zeroes what it takes back, so that
 * much stays resident as long as the connection lives -- a listen stream
 * for hours. Bodies never need it: they pass through in chunks to the
 * endpoint's own buffer. */
#define POOL_MARGIN 1024
/* The buffer libmicrohttpd allocates for each streamed response. HTTP/1.1
 * streams are chunked and read into the connection's write buffer instead,
 * so only HTTP/1.0 clients read through this one: keep it small. */
#define STREAM_BLOCK 1024
/* Unsent bytes a stream may hold here: libmicrohttpd takes its events
 * only as fast as the socket does, so a stream whose client stops reading
 * is dropped beyond this rather than buffered until the connection times
 * out (as the built-in engine does). */
#define MAX_PENDING_STREAM ((size_t)8 * 1024 * 1024)

typedef struct mhd_engine {
    const mcp_mhd_api_t *mhd; /* libmicrohttpd, loaded by the first server */
    mcp_server_t *srv;
    mcp_http_endpoint_t *ep;
    struct MHD_Daemon *daemon;
    http_watch_t *watch;
    char *tls_cert; /* PEM text, kept while the daemon runs */
    char *tls_key;

    int spin_us;          /* an event thread's active wait (spin.h), resolved */
    atomic_bool stopping; /* refuse new requests */
    atomic_bool closing;  /* no more suspending: everything is being closed */
    pthread_mutex_t lock; /* guards `reqs` */
    struct http_req *reqs;
} mhd_engine_t;

/* One request, from its first access-handler call to its completion. */
typedef struct http_req {
    atomic_int refs; /* libmicrohttpd's; the responder's; a stream's; the watcher's */
    mhd_engine_t *http;
    struct MHD_Connection *conn;
    mcp_http_exchange_t *x; /* our handle; NULL once answered at begin */
    bool ended;             /* mcp_http_end() was called (event thread only) */
    bool queued;            /* a response was queued (event thread only) */

    pthread_mutex_t lock; /* guards everything below */
    /* The answer, as the responder delivers it. */
    int status;
    mcp_header_t *headers; /* one block, see copy_answer_headers() */
    size_t n_headers;
    bool started, streaming, finished, complete;
    bool movable; /* next_step_locked() would no longer park: the answer
                     finished or began streaming. Also read without the
                     lock, by await_answer() */
    bool responder_live; /* the exchange may still call us (holds a ref) */
    char *buf;           /* body bytes not yet handed to libmicrohttpd */
    size_t len, off, cap;
    /* The connection. */
    bool suspended; /* parked by us */
    bool gone;      /* the client hung up, or the server is closing */
    uint64_t watch_id;

    struct http_req *prev, *next; /* in http->reqs */
} http_req_t;

/* ------------------------------------------------------------------------
 * Request objects
 * ------------------------------------------------------------------------ */

static void req_ref(void *arg)
{
    http_req_t *req = arg;
    atomic_fetch_add(&req->refs, 1);
}

static void req_unref(void *arg)
{
    http_req_t *req = arg;
    if (atomic_fetch_sub(&req->refs, 1) != 1)
        return;
    mhd_engine_t *http = req->http;
    pthread_mutex_lock(&http->lock);
    if (req->prev)
        req->prev->next = req->next;
    else
        http->reqs = req->next;
    if (req->next)
        req->next->prev = req->prev;
    pthread_mutex_unlock(&http->lock);
    mcp_http_exchange_release(req->x);
    free(req->headers);
    free(req->buf);
    pthread_mutex_destroy(&req->lock);
    free(req);
}

static http_req_t *req_new(mhd_engine_t *http, struct MHD_Connection *conn)
{
    http_req_t *req = mcp_zalloc(sizeof *req);
    if (!req)
        return NULL;
    atomic_init(&req->refs, 1);
    req->http = http;
    req->conn = conn;
    pthread_mutex_init(&req->lock, NULL);
    pthread_mutex_lock(&http->lock);
    req->next = http->reqs;
    if (http->reqs)
        http->reqs->prev = req;
    http->reqs = req;
    pthread_mutex_unlock(&http->lock);
    return req;
}

/* Resumes a parked connection (req->lock held): the event thread will call
 * the access handler or the content reader again. Dropping the watcher's
 * reference here is never the last one: a suspended connection's request
 * still holds libmicrohttpd's. */
static void wake_locked(http_req_t *req)
{
    if (!req->suspended)
        return;
    req->suspended = false;
    http_watch_remove(req->http->watch, req->watch_id);
    req->watch_id = 0;
    req->http->mhd->resume_connection(req->conn);
}

/* Parks the connection (req->lock held, on its event thread) until the
 * answer moves on. False when the server is closing: do not wait then. */
static bool park_locked(http_req_t *req)
{
    if (atomic_load(&req->http->closing))
        return false;
    req->http->mhd->suspend_connection(req->conn);
    req->suspended = true;
    const union MHD_ConnectionInfo *info =
        req->http->mhd->get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info)
        req->watch_id = http_watch_add(req->http->watch, info->connect_fd, req);
    return true;
}

/* ------------------------------------------------------------------------
 * The responder: what the endpoint answers, buffered for libmicrohttpd
 * ------------------------------------------------------------------------ */

static bool copy_answer_headers(http_req_t *req, const mcp_header_t *headers, size_t n)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(headers[i].name) + strlen(headers[i].value) + 2;
    req->headers = malloc(n * sizeof *req->headers + bytes + 1);
    if (!req->headers)
        return false;
    char *p = (char *)(req->headers + n);
    for (size_t i = 0; i < n; i++) {
        size_t a = strlen(headers[i].name) + 1, b = strlen(headers[i].value) + 1;
        req->headers[i].name = memcpy(p, headers[i].name, a);
        req->headers[i].value = memcpy(p + a, headers[i].value, b);
        p += a + b;
    }
    req->n_headers = n;
    return true;
}

static int on_start(void *user, int status, const mcp_header_t *headers, size_t n_headers,
                    int64_t content_length)
{
    http_req_t *req = user;
    pthread_mutex_lock(&req->lock);
    int rc = -1;
    if (!req->gone && copy_answer_headers(req, headers, n_headers)) {
        req->status = status;
        req->started = true;
        req->streaming = content_length < 0;
        if (req->streaming)
            __atomic_store_n(&req->movable, true, __ATOMIC_RELEASE);
        /* A whole body arrives in one write(): room for exactly that, so
         * a large answer is not copied over and over as the buffer grows. */
        if (content_length > 0 && !req->buf && (req->buf = malloc((size_t)content_length)))
            req->cap = (size_t)content_length;
        rc = 0;
    }
    pthread_mutex_unlock(&req->lock);
    return rc;
}

static int on_write(void *user, const char *data, size_t len)
{
    http_req_t *req = user;
    if (len == 0)
        return 0;
    pthread_mutex_lock(&req->lock);
    int rc = -1;
    if (!req->gone && !(req->streaming && req->len - req->off + len > MAX_PENDING_STREAM)) {
        if (req->off > 0) { /* drop what libmicrohttpd has taken already */
            memmove(req->buf, req->buf + req->off, req->len - req->off);
            req->len -= req->off;
            req->off = 0;
        }
        if (req->len + len > req->cap) {
            size_t cap = req->cap ? req->cap : 4096;
            while (cap < req->len + len)
                cap *= 2;
            char *grown = realloc(req->buf, cap);
            if (grown) {
                req->buf = grown;
                req->cap = cap;
            }
        }
        if (req->len + len <= req->cap) {
            memcpy(req->buf + req->len, data, len);
            req->len += len;
            rc = 0;
            /* The first event goes out now: libmicrohttpd sends the
             * headers only with the first body bytes. */
            if (req->streaming)
                wake_locked(req);
        }
    }
    pthread_mutex_unlock(&req->lock);
    return rc;
}

static void on_finish(void *user, bool complete)
{
    http_req_t *req = user;
    pthread_mutex_lock(&req->lock);
    req->finished = true;
    req->complete = complete;
    __atomic_store_n(&req->movable, true, __ATOMIC_RELEASE);
    req->responder_live = false;
    wake_locked(req);
    pthread_mutex_unlock(&req->lock);
    req_unref(req); /* the responder's reference */
}

/* After our own cancel, the exchange calls nobody: drop the responder's
 * reference if finish() did not. */
static void responder_forget(http_req_t *req)
{
    pthread_mutex_lock(&req->lock);
    bool live = req->responder_live;
    req->responder_live = false;
    pthread_mutex_unlock(&req->lock);
    if (live)
        req_unref(req);
}

/* ------------------------------------------------------------------------
 * libmicrohttpd callbacks
 * ------------------------------------------------------------------------ */

static ssize_t read_stream(void *cls, uint64_t pos, char *out, size_t max)
{
    http_req_t *req = cls;
    ssize_t n = 0;
    pthread_mutex_lock(&req->lock);
    if (req->len > req->off) {
        size_t avail = req->len - req->off;
        n = (ssize_t)(avail < max ? avail : max);
        memcpy(out, req->buf + req->off, (size_t)n);
        req->off += (size_t)n;
        if (req->off == req->len) {
            /* All handed out: an idle stream keeps no buffer. */
            free(req->buf);
            req->buf = NULL;
            req->len = req->off = req->cap = 0;
        }
    } else if (req->finished) {
        n = req->complete ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
    } else if (req->gone || !park_locked(req)) {
        n = MHD_CONTENT_READER_END_WITH_ERROR;
    }
    /* Parked: returning 0 without suspending would spin the event thread. */
    pthread_mutex_unlock(&req->lock);
    return n;
}

/*
 * Queues the answer the responder delivered. Called without the request
 * lock: libmicrohttpd takes its response lock in here, and holds it while
 * it calls read_stream(), which takes ours. What this reads no longer
 * changes once next_step_locked() said STEP_QUEUE: the status and headers
 * are set, and a body that is not a stream is complete. `last_chance`:
 * a failure closes the connection (so the body may be handed over).
 */
static enum MHD_Result queue_answer(http_req_t *req, bool last_chance)
{
    const mcp_mhd_api_t *mhd = req->http->mhd;
    struct MHD_Response *resp;
    if (req->streaming) {
        resp = mhd->create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, read_stream,
                                                  req, req_unref);
        if (resp)
            req_ref(req); /* the stream's, dropped when libmicrohttpd frees it */
    } else if (req->buf && req->off == 0 && last_chance) {
        /* The body is complete and nobody else reads it: hand it over
         * rather than copy it (libmicrohttpd frees it with free()). Not
         * when queueing may fail and be tried again later (mid-upload):
         * the response would take the body with it. */
        resp = mhd->create_response_from_buffer(req->len, req->buf, MHD_RESPMEM_MUST_FREE);
        if (resp) {
            req->buf = NULL;
            req->len = req->cap = 0;
        }
    } else {
        resp = mhd->create_response_from_buffer(req->len - req->off,
                                                req->buf ? req->buf + req->off : (char *)"",
                                                MHD_RESPMEM_MUST_COPY);
    }
    if (!resp)
        return MHD_NO;
    for (size_t i = 0; i < req->n_headers; i++)
        mhd->add_response_header(resp, req->headers[i].name, req->headers[i].value);
    enum MHD_Result rc = mhd->queue_response(req->conn, (unsigned)req->status, resp);
    mhd->destroy_response(resp);
    req->queued = rc == MHD_YES;
    return rc;
}

typedef enum next_step {
    STEP_QUEUE, /* the answer (or the start of its stream) is there */
    STEP_CLOSE, /* abandoned, or the client is gone: close the connection */
    STEP_WAIT   /* parked until the answer moves on */
} next_step_t;

/* What the connection does once the answer may be there (req->lock held). */
static next_step_t next_step_locked(http_req_t *req)
{
    if (req->finished && !req->complete)
        return STEP_CLOSE;
    if ((req->started && req->streaming) || req->finished)
        return STEP_QUEUE;
    if (req->gone || !park_locked(req))
        return STEP_CLOSE;
    return STEP_WAIT;
}

/*
 * Parking a connection costs libmicrohttpd two epoll_ctl() calls and a
 * wake-up of its event thread through a pipe, and then a second pass of
 * the access handler. When the handler's job went straight to a pool
 * thread that was waiting for work, its answer usually comes first: wait
 * for it actively, up to the server's spin budget (spin.h), before
 * parking. Not when the job was queued: this thread would then hold its
 * other connections for an answer still far off (waiting always lost
 * 10-25% of the requests at 64 connections; docs/benchmarks.md).
 */
static void await_answer(http_req_t *req)
{
    if (req->http->spin_us > 0 && mcp_pool_take_direct_handoff())
        mcp_spin_until(&req->movable, req->http->spin_us);
}

/* next_step_locked() and then, without the lock, what it decided. */
static enum MHD_Result take_next_step(http_req_t *req)
{
    pthread_mutex_lock(&req->lock);
    next_step_t step = next_step_locked(req);
    pthread_mutex_unlock(&req->lock);
    switch (step) {
    case STEP_QUEUE:
        return queue_answer(req, true);
    case STEP_CLOSE:
        return MHD_NO;
    case STEP_WAIT:
        break;
    }
    return MHD_YES;
}

/* The request headers as libmicrohttpd holds them (borrowed): in the
 * list itself while they are few, as they nearly always are. */
#define INLINE_HEADERS 16
typedef struct header_list {
    mcp_header_t *items; /* inline_items, or allocated */
    size_t count, cap;
    bool incomplete; /* out of memory: some headers are missing */
    mcp_header_t inline_items[INLINE_HEADERS];
} header_list_t;

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *name,
                                      const char *value)
{
    header_list_t *list = cls;
    if (list->count == list->cap) {
        size_t cap = list->cap * 2;
        mcp_header_t *grown = malloc(cap * sizeof *grown);
        if (!grown) {
            list->incomplete = true;
            return MHD_NO;
        }
        memcpy(grown, list->items, list->count * sizeof *grown);
        if (list->items != list->inline_items)
            free(list->items);
        list->items = grown;
        list->cap = cap;
    }
    list->items[list->count].name = name;
    list->items[list->count].value = value;
    list->count++;
    return MHD_YES;
}

/*
 * libmicrohttpd passes an absolute-form target ("http://host/mcp") on as
 * sent. RFC 9112 section 3.2.2 has a server accept it, with the target's
 * host standing for the Host header: as the built-in engine's reader does,
 * the endpoint gets the origin form as the path (in *path_copy when a "/"
 * had to be put before an empty path; the caller frees it) and the
 * authority as Host (in host[], replacing the header's value or added).
 * False when out of memory, or when the authority does not fit host[]
 * (the header list is then left incomplete, and the request refused).
 */
static bool adopt_absolute_form(const char **path, char **path_copy, char *host, size_t cap,
                                header_list_t *list)
{
    size_t len, at = mcp_http1_absolute_form(*path, strlen(*path), &len);
    if (!at)
        return true;
    if (len >= cap)
        return false;
    memcpy(host, *path + at, len);
    host[len] = '\0';
    const char *rest = *path + at + len;
    if (*rest == '/') {
        *path = rest;
    } else {
        if (asprintf(path_copy, "/%s", rest) < 0) {
            *path_copy = NULL;
            return false;
        }
        *path = *path_copy;
    }
    for (size_t i = 0; i < list->count; i++) {
        if (mcp_header_name_is(list->items[i].name, "Host")) {
            list->items[i].value = host;
            return true;
        }
    }
    return collect_header(list, MHD_HEADER_KIND, "Host", host) == MHD_YES;
}

static enum MHD_Result begin_request(mhd_engine_t *http, struct MHD_Connection *conn,
                                     const char *url, const char *method, void **req_cls)
{
    if (atomic_load(&http->stopping))
        return MHD_NO;
    http_req_t *req = req_new(http, conn);
    if (!req)
        return MHD_NO;
    *req_cls = req; /* libmicrohttpd's reference, dropped on completion */

    header_list_t list;
    list.items = list.inline_items;
    list.count = 0;
    list.cap = INLINE_HEADERS;
    list.incomplete = false;
    http->mhd->get_connection_values(conn, MHD_HEADER_KIND, collect_header, &list);
    char host[256], *path_copy = NULL;
    if (!list.incomplete && !adopt_absolute_form(&url, &path_copy, host, sizeof host, &list))
        list.incomplete = true;
    int rc = MCP_ENOMEM;
    /* Judged by some of its headers, a request could pass a check it
     * fails (a second Host, an Origin): without them all, it is closed. */
    if (!list.incomplete) {
        mcp_http_request_t request = {
            .method = method, .path = url, .headers = {list.items, list.count}};
        mcp_http_responder_t responder = {on_start, on_write, on_finish, req};
        req->responder_live = true;
        req_ref(req); /* the responder's */
        rc = mcp_http_begin(http->ep, &request, &responder, &req->x);
        if (rc != MCP_OK)
            responder_forget(req);
    }
    if (list.items != list.inline_items)
        free(list.items);
    free(path_copy);
    if (rc != MCP_OK)
        return MHD_NO;
    if (req->x)
        return MHD_YES; /* read the body */
    /* Refused at once: answer without reading the body (libmicrohttpd
     * then closes the connection, which suits a refusal). */
    return take_next_step(req);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    mhd_engine_t *http = cls;
    http_req_t *req = *req_cls;
    if (!req)
        return begin_request(http, conn, url, method, req_cls);

    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (req->ended || mcp_http_body(req->x, upload_data, n) != MCP_ELIMIT)
            return MHD_YES;
        /* Over the limit: answer 413 now rather than read the rest. If
         * libmicrohttpd cannot send it mid-upload, the rest is read and
         * dropped and the answer goes out at the end. */
        req->ended = true;
        mcp_http_end(req->x); /* answers 413 at once, unless aborted meanwhile */
        pthread_mutex_lock(&req->lock);
        bool ready = req->finished && req->complete;
        pthread_mutex_unlock(&req->lock);
        if (ready)
            queue_answer(req, false);
        return MHD_YES;
    }

    if (!req->ended) {
        req->ended = true;
        mcp_pool_take_direct_handoff(); /* forget an earlier submission's */
        mcp_http_end(req->x);           /* may answer right away */
        if (!req->queued)
            await_answer(req);
    }
    return req->queued ? MHD_YES : take_next_step(req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode why)
{
    http_req_t *req = *req_cls;
    if (!req)
        return;
    *req_cls = NULL;
    pthread_mutex_lock(&req->lock);
    bool running = req->responder_live;
    req->gone = true;
    pthread_mutex_unlock(&req->lock);
    if (running) {
        /* The client left, or the connection was closed under a request
         * still in flight: the handler must stop. */
        mcp_http_exchange_cancel(req->x);
        responder_forget(req);
    }
    req_unref(req);
}

/* The watcher saw the client hang up on a parked connection: resume it, so
 * that libmicrohttpd closes it and on_completed() cancels the request. */
static void on_hangup(void *user)
{
    http_req_t *req = user;
    pthread_mutex_lock(&req->lock);
    req->gone = true;
    req->watch_id = 0; /* the registration fired; it is gone */
    if (req->suspended) {
        req->suspended = false;
        req->http->mhd->resume_connection(req->conn);
    }
    pthread_mutex_unlock(&req->lock);
}

static void log_mhd(void *cls, const char *fmt, va_list ap) MCP_PRINTF(2, 0);

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    mhd_engine_t *http = cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    server_log(http->srv, MCP_LOG_DEBUG, "libmicrohttpd: %s", line);
}

/* ------------------------------------------------------------------------
 * Start and stop
 * ------------------------------------------------------------------------ */

static void engine_free(mhd_engine_t *http)
{
    http_watch_free(http->watch);
    free(http->tls_cert);
    free(http->tls_key);
    pthread_mutex_destroy(&http->lock);
    free(http);
}

static int start_daemon(mhd_engine_t *http, const http_engine_config_t *cfg, uint16_t *port,
                        mcp_error_t *err)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    if (cfg->ipv6)
        flags |= MHD_USE_IPv6;
    if (http->tls_cert)
        flags |= MHD_USE_TLS;
    /* The options are variadic: every value is cast to the exact type. */
    struct MHD_OptionItem tls[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, http->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, http->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    sigset_t saved;
    http_signals_block(&saved);
    http->daemon = http->mhd->start_daemon(
        flags, 0, NULL, NULL, on_request, http,
        /* The logger first, or libmicrohttpd prints what comes before it. */
        MHD_OPTION_EXTERNAL_LOGGER, log_mhd, (void *)http,
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&cfg->addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cfg->threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)cfg->connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)cfg->connection_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(cfg->max_header_bytes + POOL_MARGIN),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)NULL,
        MHD_OPTION_ARRAY, http->tls_cert ? tls : tls + 2,
        MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (!http->daemon)
        return mcp_error_set(err, MCP_EIO, MCP_INTERNAL_ERROR, NULL,
                             "cannot listen on %s port %u (address in use, or TLS files "
                             "invalid)",
                             cfg->bind_text, (unsigned)cfg->port);
    const union MHD_DaemonInfo *info =
        http->mhd->get_daemon_info(http->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (info)
        *port = info->port;
    return MCP_OK;
}

static int engine_start(const http_engine_config_t *cfg, void **engine, uint16_t *port,
                        mcp_error_t *err)
{
    const mcp_mhd_api_t *mhd = mcp_mhd_api(err);
    if (!mhd)
        return MCP_EUNSUPPORTED;
    if (cfg->tls_cert && mhd->is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return mcp_error_set(err, MCP_EUNSUPPORTED, MCP_INTERNAL_ERROR, NULL,
                             "this libmicrohttpd was built without TLS");
    mhd_engine_t *http = calloc(1, sizeof *http);
    if (!http)
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    http->mhd = mhd;
    http->srv = cfg->srv;
    http->ep = cfg->ep;
    http->spin_us = cfg->spin_us;
    atomic_init(&http->stopping, false);
    atomic_init(&http->closing, false);
    pthread_mutex_init(&http->lock, NULL);
    static const http_watch_hooks_t hooks = {on_hangup, req_ref, req_unref};
    int rc;
    if (cfg->tls_cert &&
        (!(http->tls_cert = strdup(cfg->tls_cert)) || !(http->tls_key = strdup(cfg->tls_key)))) {
        rc = mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
        goto fail;
    }
    if (!(http->watch = http_watch_new(&hooks))) {
        rc = mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                           "cannot start the connection watcher");
        goto fail;
    }
    if ((rc = start_daemon(http, cfg, port, err)) != MCP_OK)
        goto fail;
    *engine = http;
    return MCP_OK;
fail:
    engine_free(http);
    return rc;
}

/* No new requests: begin_request() refuses them, closing their
 * connections. (Not MHD_quiesce_daemon(): on an epoll daemon with its own
 * threads it races with the event loop over removing the listen socket
 * from the epoll set, and libmicrohttpd 0.9.75 aborts the process when it
 * loses -- "Failed to remove listen FD from epoll set". The listen socket
 * closes with the daemon instead.) */
static void engine_stop_accepting(void *engine)
{
    mhd_engine_t *http = engine;
    atomic_store(&http->stopping, true);
}

/* Nothing parks any more from here on: the exchanges about to be aborted
 * resume their connections and close them. */
static void engine_stop_waiting(void *engine)
{
    mhd_engine_t *http = engine;
    atomic_store(&http->closing, true);
}

/* Every connection must be resumed before the daemon stops. */
static void engine_close(void *engine)
{
    mhd_engine_t *http = engine;
    pthread_mutex_lock(&http->lock);
    for (http_req_t *req = http->reqs; req; req = req->next) {
        pthread_mutex_lock(&req->lock);
        req->gone = true;
        wake_locked(req);
        pthread_mutex_unlock(&req->lock);
    }
    pthread_mutex_unlock(&http->lock);

    http->mhd->stop_daemon(http->daemon);
    engine_free(http);
}

const http_engine_ops_t http_engine_mhd = {engine_start, engine_stop_accepting,
                                           engine_stop_waiting, engine_close};
