/*
 * libmcp's own HTTP/1.1 engine (see http_server_engine.h for why it
 * exists): event threads on epoll carrying the endpoint, which decides
 * everything about a request. This file only frames requests and moves
 * bytes.
 *
 * Threads. Each event loop owns an epoll set and the connections dealt
 * to it; the listening socket is in every set (EPOLLEXCLUSIVE: one loop
 * wakes per connection). A loop reads, frames the request
 * (protocol/http1.c), and hands it to the endpoint. The answer comes back
 * through the responder callbacks on whichever thread produced it -- a
 * worker, the timeout thread, or the loop's own -- and that thread writes
 * it to the socket directly, so an answer costs no hand-off back to the
 * loop. Only what the loop must do itself is posted to it: reading a
 * request that arrived, pipelined, while the previous one was answered.
 *
 * A loop is served by one thread at a time, but not always the same one:
 * the loop lends its thread to the handler of the request it reads
 * (lend.h), and when that handler blocks, a watchdog moves the loop to a
 * new thread and the lent one ends with the handler ("Lending", below).
 * So what a loop keeps between events lives in loop_t, not on a stack.
 *
 * One connection, as its loop sees it:
 *
 *   READ_HEAD     bytes gathered until the head is complete; parsed,
 *                 then mcp_http_begin()
 *   READ_BODY     Content-Length bytes, passed to mcp_http_body()
 *   READ_CHUNKED  the same, decoded from the chunked coding
 *   READ_DONE     mcp_http_end() called; the answer is on its way. Bytes
 *                 that arrive meanwhile are kept (within a bound) for the
 *                 next request; end of file means the client left, and
 *                 cancels the request.
 *
 * The request is over when it is read and answered, whichever comes last;
 * then the connection reads its next head, or lingers and closes: after
 * "Connection: close", HTTP/1.0 without keep-alive, a refusal whose body
 * is not worth reading, and any framing error. Lingering sends the answer,
 * then FIN, and drops what the client still sends until it closes too (or
 * LINGER_MS pass), so that the answer is not destroyed by a reset.
 *
 * Output is bounded as input is. Between requests, a connection whose
 * answers wait unsent beyond MAX_QUEUED_OUTPUT serves no further request
 * until EPOLLOUT has drained them below it (on_writable()); its input
 * waits, in its buffer and then in the socket, whose closed window stops
 * the client. A stream is cut past MAX_PENDING_OUTPUT. Output that does
 * not move for the idle timeout closes the connection, however much the
 * client sends meanwhile.
 *
 * Locks. conn->lock guards what the loop and the responder share (the
 * socket, the output, the request state). Responder callbacks run with
 * the exchange lock held and then take conn->lock; so the loop never
 * calls into the endpoint (begin, body, end, cancel) holding conn->lock.
 * Only the loop closes the socket, under conn->lock, so that a writer
 * never writes to a descriptor number already reused; a writer that wants
 * the connection gone shuts the socket down instead, and the loop closes
 * it when it sees the hang-up.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "lend.h"
#include "log.h"
#include "mcp/jsonrpc.h"
#include "protocol/http1.h"
#include "spin.h"
#include "transport/http_endpoint.h"
#include "transport/http_server_engine.h"

/* A connection's input buffer starts this big, and grows for a long head
 * (up to max_header_bytes) or for pipelined requests (up to twice that). */
#define INPUT_BLOCK 4096
/* Each loop reads into a buffer of its own first (see on_readable()). */
#define SCRATCH_BYTES (64 * 1024)
/* Headers per request; more is refused with 431. */
#define MAX_HEADERS 100
/* A refused request's body is read and dropped, to keep the connection,
 * when it announces at most this much; a larger or chunked one closes it. */
#define DISCARD_MAX (64 * 1024)
/* Unsent bytes a stream may hold: a stream whose client stops reading is
 * dropped beyond this, rather than buffered without bound. */
#define MAX_PENDING_OUTPUT ((size_t)8 * 1024 * 1024)
/* A connection whose answers wait unsent beyond this (the socket full)
 * serves no further request until its client has read them down below
 * it: a client that pipelines requests and never reads would otherwise
 * have the server buffer every answer. Its input waits meanwhile, in the
 * connection (within its bound) and then in the socket, whose full
 * window stops the client. */
#define MAX_QUEUED_OUTPUT ((size_t)64 * 1024)
/* A whole answer's body at least this long goes to the socket from the
 * caller's buffer, with the head before it in one sendmsg; only what the
 * socket does not take is copied into the connection's output. Below it,
 * head and body are copied together and go out in one send. */
#define DIRECT_BODY_MIN ((size_t)64 * 1024)
#define LINGER_MS 2000
/* A loop that has had work waiting for this long, without once running
 * out of it, yields its CPU (see loop_main()). */
#define BUSY_YIELD_US 500
#define MAX_EVENTS 64
#define ACCEPT_BATCH 16
/* A loop that cannot accept for want of descriptors (or memory) leaves
 * the listening socket out of its epoll set for this long. The pending
 * connection keeps the socket readable, so a wait would return it at
 * once, and the loop would spin, starving the connections it serves,
 * until a descriptor frees up. New clients wait in the backlog meanwhile
 * (nginx pauses accepting likewise). */
#define ACCEPT_PAUSE_MS 250

typedef enum read_state { READ_HEAD, READ_BODY, READ_CHUNKED, READ_DONE } read_state_t;

typedef struct epoll_engine epoll_engine_t;
typedef struct loop loop_t;

typedef struct conn {
    atomic_int refs; /* the loop's, the responder's, a posting's */
    loop_t *loop;
    struct conn *prev, *next; /* in loop->conns (loop thread only) */
    struct conn *posted_next; /* in loop->posted (under loop->post_lock) */
    bool posted;
    bool adopting; /* accepted by another loop: posted to its own to join it */

    /* Input: the loop's alone. */
    char *in;
    size_t in_len, in_cap;
    size_t head_scan; /* where mcp_http1_head_end() stopped looking */
    uint64_t body_left;
    mcp_http1_chunked_t chunked;
    bool expect_continue;
    bool in_begin; /* inside mcp_http_begin(): an answer now is a refusal */
    bool refusal_closes;

    pthread_mutex_t lock; /* guards everything below */
    int fd;               /* -1 once closed */
    read_state_t rstate;
    mcp_http_exchange_t *x; /* the request's handle, until released */
    bool responder_live;    /* the responder may still call (holds a ref) */
    bool answered;          /* finish() came for the current request */
    bool in_end;            /* the loop is inside mcp_http_end() */
    bool pending_input;     /* bytes wait in `in` (or the socket) for the loop */
    bool http10;
    bool head_method; /* HEAD: headers only */
    bool close_after; /* linger and close once this answer is out */
    bool lingering;   /* answered, closing: input is dropped */
    bool shut_wr;     /* FIN sent */
    bool chunked_out; /* the answer is a chunked stream */
    bool streaming;
    char *out; /* answer bytes not yet sent: out[out_off..out_len) */
    size_t out_len, out_off, out_cap;
    bool out_stalled; /* the socket was full at the last flush */
    /* Over MAX_QUEUED_OUTPUT between requests: input is not served (nor
     * read, once its buffer is full) until EPOLLOUT drains the output. */
    bool out_full;
    /* While out_stalled: when output last moved (or first stalled). Only
     * output counts: a client that keeps sending but does not read is
     * timed out all the same. */
    int64_t stalled_ms;
    /* Last input progress, for the idle timeout of a request being read.
     * Timeouts here are counted in seconds, on the coarse clock (it is
     * read for every request). */
    _Atomic int64_t active_ms;
    /* The request being read: when its first byte came (0: none yet) and
     * how many bytes came since, for the minimum rate (sweep()). */
    _Atomic int64_t request_started_ms;
    _Atomic uint64_t request_bytes;
    int64_t linger_until;
} conn_t;

struct loop {
    epoll_engine_t *engine;
    int epfd;
    int wake_fd; /* eventfd: posted connections, or stop */
    bool started;
    conn_t *conns; /* loop thread only (and close(), after the join) */
    /* Closed connections, freed after the batch of events that may still
     * name them (loop thread only). */
    conn_t *closed;
    char *scratch;  /* input of the connection being read, when it has none */
    int64_t now;    /* mcp_clock_coarse_ms() after the last wake-up */
    /* Accepting paused (ACCEPT_PAUSE_MS) until then; 0: not paused. */
    int64_t accept_paused_until;
    /* The batch of events being served, and the next to serve. They are
     * the loop's, not its thread's: a thread that takes the loop over
     * from one lent to a slow handler serves the rest of the batch. */
    struct epoll_event events[MAX_EVENTS];
    int n_events, next_event;

    /* Lending (see "Lending" below). */
    mcp_lender_t lender;        /* offered to the server on the loop's thread */
    conn_t *ending;             /* inside mcp_http_end() for this connection */
    _Atomic uint64_t lend;      /* the lend word (lend.h) */
    mcp_lend_watch_t watch;     /* the serving thread, as the watchdog sees it */
    uint64_t watched;           /* the watchdog's: the lend it took the loop from */

    pthread_mutex_t post_lock;
    conn_t *posted;
    bool stop;
};

struct epoll_engine {
    mcp_log_fn log; /* the server's */
    void *log_user;
    mcp_http_endpoint_t *ep;
    int listen_fd;
    size_t max_head;
    int64_t idle_ms;
    int spin_us;
    unsigned limit;
    atomic_uint n_conns;
    atomic_uint next_loop; /* the loop the next connection goes to */
    atomic_bool stopping;
    /* accept() is failing for want of resources: logged once per episode,
     * which ends at the next connection accepted. */
    atomic_bool accept_starved;
    unsigned n_loops;
    loop_t *loops;

    /* The threads that run loops, the first ones and those that took
     * a loop over, count themselves out here as they end. */
    pthread_mutex_t threads_lock;
    pthread_cond_t threads_gone;
    unsigned live_threads;
    /* The watchdog that takes a loop over from a slow handler. It sleeps
     * while no loop lends its thread (a lending loop wakes it). */
    mcp_lend_watchdog_t watchdog;
};

/* The loop whose thread this is (NULL on other threads, and on a thread
 * whose loop moved on while it ran a handler). */
static _Thread_local loop_t *current_loop;
/* This thread runs a handler for its loop (lend_begin()): the lend word it
 * set, and the connection it holds. */
static _Thread_local uint64_t lent_word;
static _Thread_local conn_t *lent_conn;
static _Thread_local bool lent_parked; /* lent_conn's input was taken off the scratch buffer */
/* Set on a thread lent to a handler when its loop moved to another thread
 * meanwhile: everything on its stack unwinds without touching the loop's
 * state, and the thread ends. */
static _Thread_local bool lent_away;

/* May this thread serve what its loop must do itself (the input of a
 * connection that is between requests)? Not while it runs a handler: the
 * loop may move on, and would not know. */
static bool serving_loop(const loop_t *loop)
{
    return current_loop == loop && !lent_conn;
}

/* ------------------------------------------------------------------------
 * Connections
 * ------------------------------------------------------------------------ */

static void conn_ref(conn_t *c)
{
    atomic_fetch_add(&c->refs, 1);
}

static void conn_unref(conn_t *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    free(c->in);
    free(c->out);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Sends what is pending (c->lock held). False when the socket failed: it
 * is shut down, and the loop will close it. Once an answer that closes
 * the connection is out, sends FIN and starts lingering. */
static bool flush_locked(conn_t *c)
{
    size_t sent_before = c->out_off;
    while (c->fd >= 0 && c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* EPOLLOUT will say when to go on. The idle timeout counts
             * from the last bytes that moved (or from when the output
             * first stalled), not from every write that found it full. */
            if (c->out_off != sent_before || !c->out_stalled)
                c->stalled_ms = mcp_clock_coarse_ms();
            c->out_stalled = true;
            return true;
        } else {
            shutdown(c->fd, SHUT_RDWR);
            return false;
        }
    }
    if (c->fd < 0)
        return false;
    /* All out: an idle connection keeps no output buffer. */
    c->out_stalled = false;
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_off = c->out_cap = 0;
    if (c->lingering && c->answered && !c->shut_wr) {
        shutdown(c->fd, SHUT_WR);
        c->shut_wr = true;
        c->linger_until = mcp_clock_coarse_ms() + LINGER_MS;
    }
    return true;
}

/* Room for `len` more bytes of pending output (c->lock held). False
 * when out of memory, or when the client of a stream lets more than
 * MAX_PENDING_OUTPUT pile up. (A whole answer is as large as it is: its
 * handler made it, and its client is timed out if it stops reading; no
 * other is made for it before it is read down to MAX_QUEUED_OUTPUT.) */
static bool reserve_locked(conn_t *c, size_t len)
{
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_len = c->out_off = 0;
    if (c->out_len + len <= c->out_cap)
        return true;
    if (c->streaming && c->out_len - c->out_off + len > MAX_PENDING_OUTPUT)
        return false;
    if (c->out_off > 0) { /* drop what is sent before growing */
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    size_t cap = c->out_cap ? c->out_cap : 256;
    while (cap < c->out_len + len)
        cap *= 2;
    char *grown = realloc(c->out, cap);
    if (!grown)
        return false;
    c->out = grown;
    c->out_cap = cap;
    return true;
}

/* Appends to the pending output (c->lock held). */
static bool append_locked(conn_t *c, const char *data, size_t len)
{
    if (!reserve_locked(c, len))
        return false;
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
    return true;
}

/*
 * Sends what is pending (the head) and then `data` with sendmsg, without
 * copying `data` first, until the socket takes no more (c->lock held);
 * what it did not take is appended to the pending output, for
 * flush_locked and EPOLLOUT to finish as usual. False when the
 * connection failed (shut down) or out of memory.
 */
static bool send_direct_locked(conn_t *c, const char *data, size_t len)
{
    size_t sent = 0; /* of data */
    bool moved = false;
    while (c->fd >= 0 && sent < len) {
        size_t pending = c->out_len - c->out_off;
        struct iovec iov[2];
        int n = 0;
        if (pending)
            iov[n++] = (struct iovec){c->out + c->out_off, pending};
        iov[n++] = (struct iovec){(char *)data + sent, len - sent};
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            size_t from_pending = (size_t)w < pending ? (size_t)w : pending;
            c->out_off += from_pending;
            sent += (size_t)w - from_pending;
            moved = true;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break; /* flush_locked meets it again and waits for EPOLLOUT */
        } else {
            shutdown(c->fd, SHUT_RDWR);
            return false;
        }
    }
    if (c->fd < 0)
        return false;
    if (moved) /* progress, which the flush that follows may not make */
        c->stalled_ms = mcp_clock_coarse_ms();
    return append_locked(c, data + sent, len - sent);
}

/* Hands a connection to its loop, to read what waits for it. */
static void post(conn_t *c)
{
    loop_t *loop = c->loop;
    pthread_mutex_lock(&loop->post_lock);
    bool first = !loop->posted;
    if (!c->posted) {
        c->posted = true;
        conn_ref(c);
        c->posted_next = loop->posted;
        loop->posted = c;
    }
    pthread_mutex_unlock(&loop->post_lock);
    if (first) {
        uint64_t one = 1;
        ssize_t n = write(loop->wake_fd, &one, sizeof one);
        (void)n; /* a full counter already wakes the loop */
    }
}

/* The request is read and answered (c->lock held): the connection moves
 * on to the next one. Returns the handle to release (without the lock). */
static mcp_http_exchange_t *next_request_locked(conn_t *c)
{
    /* Inside mcp_http_end() the loop still uses the handle: it releases
     * it itself when end() returns. */
    mcp_http_exchange_t *x = c->in_end ? NULL : c->x;
    if (x)
        c->x = NULL;
    if (!c->lingering) {
        c->rstate = READ_HEAD;
        c->answered = false;
        atomic_store_explicit(&c->active_ms, mcp_clock_coarse_ms(), memory_order_relaxed);
        atomic_store_explicit(&c->request_started_ms, 0, memory_order_relaxed);
        atomic_store_explicit(&c->request_bytes, 0, memory_order_relaxed);
        if (c->pending_input && !serving_loop(c->loop))
            post(c);
    }
    return x;
}

/* ------------------------------------------------------------------------
 * The responder: the endpoint's answer, written by whoever has it
 * ------------------------------------------------------------------------ */

static const char *reason_phrase(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return ""; /* the reason phrase may be empty (RFC 9112 section 4) */
    }
}

/* "Date: <IMF-fixdate>\r\n" for now, formatted once a second per thread
 * (an origin server with a clock must send it: RFC 9110 section 6.6.1).
 * Not strftime(): its day and month names follow the program's locale. */
static const char *date_line(void)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    static _Thread_local char line[96];
    static _Thread_local time_t of = -1;
    time_t now = time(NULL);
    struct tm tm;
    if (now != of && gmtime_r(&now, &tm)) {
        snprintf(line, sizeof line, "Date: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n",
                 days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12], tm.tm_year + 1900,
                 tm.tm_hour, tm.tm_min, tm.tm_sec);
        of = now;
    }
    return line;
}

/* Writes `v` in decimal just before `end`; returns where it starts. (The
 * answer's head is written for every request: no printf here.) */
static char *decimal_before(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

static bool append_text_locked(conn_t *c, const char *text)
{
    return append_locked(c, text, strlen(text));
}

/* Writes the status line and headers into the output (c->lock held). */
static bool append_head_locked(conn_t *c, int status, const mcp_header_t *headers, size_t n,
                               int64_t length)
{
    char number[24];
    char *end = number + sizeof number;
    const char *code = decimal_before(end, (uint64_t)status);
    bool ok = append_text_locked(c, c->http10 ? "HTTP/1.0 " : "HTTP/1.1 ") &&
              append_locked(c, code, (size_t)(end - code)) && append_locked(c, " ", 1) &&
              append_text_locked(c, reason_phrase(status)) && append_locked(c, "\r\n", 2) &&
              append_text_locked(c, date_line());
    for (size_t i = 0; ok && i < n; i++) {
        ok = append_text_locked(c, headers[i].name) && append_locked(c, ": ", 2) &&
             append_text_locked(c, headers[i].value) && append_locked(c, "\r\n", 2);
    }
    /* 1xx and 204 answers have no body and no Content-Length (RFC 9110
     * section 8.6). */
    if (length >= 0 && status >= 200 && status != 204) {
        const char *digits = decimal_before(end, (uint64_t)length);
        ok = ok && append_text_locked(c, "Content-Length: ") &&
             append_locked(c, digits, (size_t)(end - digits)) && append_locked(c, "\r\n", 2);
    } else if (c->chunked_out) {
        ok = ok && append_text_locked(c, "Transfer-Encoding: chunked\r\n");
    }
    if (c->close_after)
        ok = ok && append_text_locked(c, "Connection: close\r\n");
    else if (c->http10)
        ok = ok && append_text_locked(c, "Connection: keep-alive\r\n");
    return ok && append_locked(c, "\r\n", 2);
}

static int on_start(void *user, int status, const mcp_header_t *headers, size_t n_headers,
                    int64_t content_length)
{
    conn_t *c = user;
    pthread_mutex_lock(&c->lock);
    int rc = -1;
    if (c->fd >= 0) {
        if (c->in_begin && c->refusal_closes)
            c->close_after = true; /* refused: its body will not be read */
        c->streaming = content_length < 0;
        if (c->streaming && c->http10)
            c->close_after = true; /* no chunked coding: the end is the close */
        c->chunked_out = c->streaming && !c->http10;
        if (c->close_after)
            c->lingering = true;
        /* Room for the whole answer at once: it is written with one send
         * (a long body is sent from where it is: send_direct_locked). */
        size_t body = content_length > 0 ? (size_t)content_length : 0;
        size_t need = 192 + (body < DIRECT_BODY_MIN ? body : 0);
        for (size_t i = 0; i < n_headers; i++)
            need += strlen(headers[i].name) + strlen(headers[i].value) + 4;
        if (reserve_locked(c, need) &&
            append_head_locked(c, status, headers, n_headers, content_length)) {
            rc = 0;
            /* A stream's client waits for its headers; a whole answer goes
             * out with its body, in one send. */
            if (c->streaming && !flush_locked(c))
                rc = -1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static int on_write(void *user, const char *data, size_t len)
{
    conn_t *c = user;
    pthread_mutex_lock(&c->lock);
    int rc = -1;
    if (c->fd >= 0) {
        bool ok = true;
        if (c->head_method) {
            /* HEAD: the headers said how long; the body is not sent. */
        } else if (c->chunked_out) {
            char size[24];
            int n = snprintf(size, sizeof size, "%zx\r\n", len);
            ok = append_locked(c, size, (size_t)n) && append_locked(c, data, len) &&
                 append_locked(c, "\r\n", 2);
        } else if (!c->streaming && len >= DIRECT_BODY_MIN) {
            ok = send_direct_locked(c, data, len);
        } else {
            ok = append_locked(c, data, len);
        }
        if (ok && (!c->streaming || flush_locked(c)))
            rc = 0;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static void on_finish(void *user, bool complete)
{
    conn_t *c = user;
    mcp_http_exchange_t *release = NULL;
    pthread_mutex_lock(&c->lock);
    c->answered = true;
    if (c->fd >= 0) {
        if (!complete) {
            /* Abandoned mid-answer: only closing tells the client. */
            shutdown(c->fd, SHUT_RDWR);
        } else if ((!c->chunked_out || c->head_method || append_locked(c, "0\r\n\r\n", 5)) &&
                   flush_locked(c) && c->rstate == READ_DONE) {
            release = next_request_locked(c);
        }
        /* Answered before its body was read (a refusal): the loop reads
         * and drops the rest, then moves on (body_complete()). */
    }
    bool was_live = c->responder_live;
    c->responder_live = false;
    pthread_mutex_unlock(&c->lock);
    /* Safe inside the callback: the endpoint holds its own reference to
     * the exchange while it calls us. */
    mcp_http_exchange_release(release);
    if (was_live)
        conn_unref(c); /* never the last: the loop's is dropped only on close */
}

/* ------------------------------------------------------------------------
 * Closing
 * ------------------------------------------------------------------------ */

/* After a cancel, the endpoint calls the responder no more: drop its
 * reference, unless finish() did. */
static void responder_forget(conn_t *c)
{
    pthread_mutex_lock(&c->lock);
    bool live = c->responder_live;
    c->responder_live = false;
    pthread_mutex_unlock(&c->lock);
    if (live)
        conn_unref(c);
}

/* Closes a connection and forgets it (its loop's thread, or close() after
 * the join). A request still in flight is cancelled: its client is gone. */
static void conn_close(conn_t *c)
{
    loop_t *loop = c->loop;
    pthread_mutex_lock(&c->lock);
    int fd = c->fd;
    c->fd = -1;
    mcp_http_exchange_t *x = c->x;
    c->x = NULL;
    bool live = c->responder_live;
    pthread_mutex_unlock(&c->lock);
    if (c->in == loop->scratch) {
        c->in = NULL;
        c->in_len = c->in_cap = 0;
    }
    if (fd >= 0) {
        /* Out of the epoll set first: close() takes it out only with the
         * last reference to the socket, and an event for a connection
         * freed at the end of this round must never come. */
        epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
        close(fd);
    }
    if (x) {
        if (live)
            mcp_http_exchange_cancel(x); /* waits out a callback in progress */
        mcp_http_exchange_release(x);
    }
    responder_forget(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        loop->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    atomic_fetch_sub(&loop->engine->n_conns, 1);
    c->prev = NULL;
    c->next = loop->closed; /* the loop's reference goes with it */
    loop->closed = c;
}

static void free_closed(loop_t *loop)
{
    while (loop->closed) {
        conn_t *c = loop->closed;
        loop->closed = c->next;
        conn_unref(c);
    }
}

/* Answers a request the engine refuses itself (a framing error) with a
 * JSON-RPC error without id, as the endpoint does, and closes. */
static void refuse(conn_t *c, int status, const char *why)
{
    json_t *error = mcp_jsonrpc_error(NULL, MCP_INVALID_REQUEST, why, NULL);
    size_t len = 0;
    char *body = mcp_json_dump(error, &len);
    json_decref(error);
    static const mcp_header_t type = {"Content-Type", "application/json"};
    pthread_mutex_lock(&c->lock);
    c->close_after = c->lingering = true;
    c->answered = true;
    c->rstate = READ_DONE;
    if (body && append_head_locked(c, status, &type, 1, (int64_t)len) &&
        append_locked(c, body, len))
        flush_locked(c);
    else if (c->fd >= 0)
        shutdown(c->fd, SHUT_RDWR);
    pthread_mutex_unlock(&c->lock);
    free(body);
}

/* ------------------------------------------------------------------------
 * Reading requests (the loop's thread)
 * ------------------------------------------------------------------------ */

static void consume(conn_t *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}

/* The request's body is all read: to the endpoint, or (refused) done.
 * The handler may run in here, on this thread (lend.h); if the loop moved
 * to another thread meanwhile, lent_away is set on return, and the
 * connection is posted to the loop, which serves what comes next. */
static void body_complete(conn_t *c)
{
    pthread_mutex_lock(&c->lock);
    c->rstate = READ_DONE;
    bool answered = c->answered;
    mcp_http_exchange_t *x = c->x;
    mcp_http_exchange_t *release = answered ? next_request_locked(c) : NULL;
    c->in_end = !answered;
    pthread_mutex_unlock(&c->lock);
    if (answered) {
        mcp_http_exchange_release(release);
        return;
    }
    loop_t *loop = c->loop;
    loop->ending = c; /* for lend_begin() */
    mcp_http_end(x);  /* may answer (and move on) right here */
    if (!lent_away)
        loop->ending = NULL;
    pthread_mutex_lock(&c->lock);
    c->in_end = false;
    release = NULL;
    /* Answered while end() ran (here, or already moved on to the next
     * request by a fast worker): finish() left the handle to us. */
    if (c->x == x && (c->answered || c->rstate == READ_HEAD)) {
        release = x;
        c->x = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    mcp_http_exchange_release(release);
    if (lent_away) {
        /* The socket may hold more (this thread read it last, and its
         * edge will not come again), and so may the input buffer: the
         * loop's new thread reads and serves them. */
        post(c);
        conn_unref(c); /* lend_begin()'s */
    }
}

/* Passes body bytes on; over the limit, the endpoint answers 413 at once
 * and the connection closes after it (the rest of the body is dropped). */
static void body_bytes(conn_t *c, const char *data, size_t len)
{
    pthread_mutex_lock(&c->lock);
    mcp_http_exchange_t *x = c->answered ? NULL : c->x;
    pthread_mutex_unlock(&c->lock);
    if (!x || len == 0 || mcp_http_body(x, data, len) != MCP_ELIMIT)
        return;
    pthread_mutex_lock(&c->lock);
    c->close_after = c->lingering = true;
    c->rstate = READ_DONE;
    c->in_end = true;
    pthread_mutex_unlock(&c->lock);
    mcp_http_end(x);
    pthread_mutex_lock(&c->lock);
    c->in_end = false;
    pthread_mutex_unlock(&c->lock);
    /* The handle is released on close (the answer, 413, ends in linger). */
}

/* A head over the limit: 414 when its request line alone does not end
 * within it (the target is what is long: RFC 9112 section 3), else 431;
 * 400 when the limit holds nothing but empty lines (RFC 9112 section 2.2
 * allows a few before a request, not a flood). */
static void refuse_large_head(conn_t *c, size_t max_head)
{
    size_t start = 0, len = c->in_len < max_head ? c->in_len : max_head;
    while (start < len && (c->in[start] == '\r' || c->in[start] == '\n'))
        start++; /* empty lines before the request line */
    if (start == len)
        refuse(c, 400, "no request line");
    else if (!memchr(c->in + start, '\n', len - start))
        refuse(c, 414, "request target too long");
    else
        refuse(c, 431, "request head too large");
}

/* Starts the request whose head is in[0..head_len). False when the
 * connection is closed or closing. */
static bool start_request(conn_t *c, size_t head_len)
{
    epoll_engine_t *engine = c->loop->engine;
    mcp_header_t headers[MAX_HEADERS];
    mcp_http1_head_t head;
    int status = mcp_http1_parse_head(c->in, head_len, headers, MAX_HEADERS, &head);
    if (status != 0) {
        refuse(c, status, status == 431 ? "too many header fields"
                          : status == 501 ? "unsupported transfer coding"
                          : status == 505 ? "unsupported HTTP version"
                          : status == 417 ? "unsupported expectation"
                                          : "malformed HTTP request");
        return false;
    }
    if (atomic_load(&engine->stopping)) {
        conn_close(c);
        return false;
    }
    pthread_mutex_lock(&c->lock);
    c->http10 = head.minor_version == 0;
    c->close_after = !head.keep_alive;
    c->lingering = c->shut_wr = false;
    c->head_method = strcmp(head.method, "HEAD") == 0;
    c->streaming = c->chunked_out = false;
    c->answered = false;
    c->pending_input = false;
    c->responder_live = true;
    conn_ref(c); /* the responder's */
    if (head.chunked) {
        c->rstate = READ_CHUNKED;
        memset(&c->chunked, 0, sizeof c->chunked);
    } else if (head.content_length > 0) {
        c->rstate = READ_BODY;
        c->body_left = (uint64_t)head.content_length;
    } else {
        c->rstate = READ_DONE;
    }
    pthread_mutex_unlock(&c->lock);
    c->expect_continue = head.expect_continue && c->rstate != READ_DONE;
    /* A refused request's body is dropped to keep the connection, unless
     * it is large, chunked, or may never come (a client that expected 100
     * and got the refusal instead may not send it). */
    c->refusal_closes =
        head.chunked || head.content_length > DISCARD_MAX || head.expect_continue;

    mcp_http_request_t request = {
        .method = head.method, .path = head.target, .headers = {headers, head.n_headers}};
    mcp_http_responder_t responder = {on_start, on_write, on_finish, c};
    mcp_http_exchange_t *x = NULL;
    c->in_begin = true;
    int rc = mcp_http_begin(engine->ep, &request, &responder, &x);
    c->in_begin = false;
    consume(c, head_len); /* the head's strings were borrowed until now */
    c->head_scan = 0;
    if (rc != MCP_OK) {
        conn_close(c); /* out of memory: the responder was never called */
        return false;
    }
    pthread_mutex_lock(&c->lock);
    c->x = x;
    bool closing = c->lingering;
    bool go_on = !closing && x && c->expect_continue && c->in_len == 0 && !c->answered;
    if (go_on) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        if (append_locked(c, cont, sizeof cont - 1))
            flush_locked(c);
    }
    bool no_body = c->rstate == READ_DONE;
    pthread_mutex_unlock(&c->lock);
    if (closing)
        return false;
    if (no_body)
        body_complete(c);
    return !lent_away;
}

/* A chunked body that breaks its coding: the request is cancelled and
 * refused with 400, unless it was answered already (then the connection
 * just closes). False when the connection was closed. */
static bool body_framing_error(conn_t *c)
{
    pthread_mutex_lock(&c->lock);
    bool answered = c->answered;
    mcp_http_exchange_t *x = c->x;
    pthread_mutex_unlock(&c->lock);
    if (answered) {
        conn_close(c);
        return false;
    }
    mcp_http_exchange_cancel(x); /* no callback runs after this */
    responder_forget(c);
    refuse(c, 400, "malformed chunked body");
    return true;
}

/* Frames what the buffer holds, as far as it goes. False when the
 * connection was closed, or when the loop moved to another thread while
 * a handler ran on this one (lent_away): then the caller returns at once. */
static bool serve_input(conn_t *c)
{
    epoll_engine_t *engine = c->loop->engine;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        read_state_t state = c->rstate;
        bool lingering = c->lingering;
        /* Answered, but the thread that ended the request is still inside
         * mcp_http_end() (a handler lent its thread, and the loop moved
         * on): the next request waits until it is out, and posts us. */
        bool ending = c->in_end;
        c->pending_input = c->in_len > 0 && (state == READ_DONE || ending) && !lingering;
        /* Between requests, with answers piled up unsent: the next waits
         * for on_writable(). (The answers are in order: each request's
         * output is appended only after the one before it.) */
        c->out_full = state == READ_HEAD && c->out_len - c->out_off > MAX_QUEUED_OUTPUT;
        bool full = c->out_full;
        pthread_mutex_unlock(&c->lock);
        if (lingering) {
            c->in_len = 0; /* closing: whatever comes is dropped */
            return true;
        }
        if (full || ending)
            return true;
        switch (state) {
        case READ_HEAD: {
            if (c->in_len == 0)
                return true;
            size_t end = mcp_http1_head_end(c->in, c->in_len, c->head_scan, &c->head_scan);
            if ((end == 0 && c->in_len > engine->max_head) || end > engine->max_head) {
                refuse_large_head(c, engine->max_head);
                return true;
            }
            if (end == 0)
                return true;
            if (!start_request(c, end))
                return !lent_away && c->fd >= 0;
            break;
        }
        case READ_BODY: {
            if (c->in_len == 0)
                return true;
            size_t n = c->in_len < c->body_left ? c->in_len : (size_t)c->body_left;
            body_bytes(c, c->in, n);
            consume(c, n);
            c->body_left -= n;
            if (c->body_left == 0) {
                body_complete(c);
                if (lent_away)
                    return false;
            }
            break;
        }
        case READ_CHUNKED: {
            if (c->in_len == 0)
                return true;
            size_t data_len = 0;
            bool done = false;
            long used = mcp_http1_chunked_feed(&c->chunked, c->in, c->in_len, &data_len, &done);
            if (used < 0)
                return body_framing_error(c);
            body_bytes(c, c->in, data_len);
            consume(c, (size_t)used);
            if (!done)
                return true; /* everything was consumed */
            body_complete(c);
            if (lent_away)
                return false;
            break;
        }
        case READ_DONE:
            return true; /* kept for when the answer is out */
        }
    }
}

/* Moves the input into a buffer of the connection's own of `cap` bytes
 * (from the loop's, or to grow). False when out of memory. */
static bool own_input(conn_t *c, size_t cap)
{
    char *mine = c->in == c->loop->scratch ? malloc(cap) : realloc(c->in, cap);
    if (!mine)
        return false;
    if (c->in == c->loop->scratch)
        memcpy(mine, c->in, c->in_len);
    c->in = mine;
    c->in_cap = cap;
    return true;
}

/* Room to read into; 0 when the connection should not read now (it holds
 * as much unserved input as it may). */
static size_t input_room(conn_t *c)
{
    size_t limit = c->loop->engine->max_head * 2 + INPUT_BLOCK;
    if (c->in_len >= limit)
        return 0;
    if (c->in_cap - c->in_len < 512) {
        size_t cap = c->in_cap * 2 > INPUT_BLOCK ? c->in_cap * 2 : INPUT_BLOCK;
        if (!own_input(c, cap < limit ? cap : limit))
            return c->in_cap - c->in_len;
    }
    size_t room = c->in_cap - c->in_len;
    return room < limit - c->in_len ? room : limit - c->in_len;
}

/* Reads what the socket has and serves it. `hung_up`: the event said the
 * peer closed, so read on to the end of file even after a short read.
 *
 * A connection with nothing buffered reads into its loop's scratch buffer:
 * a request that arrives whole is served from there and costs the
 * connection no buffer at all. Only bytes left over (a head cut short, a
 * pipelined request) are copied into one of its own. */
static void on_readable(conn_t *c, bool hung_up)
{
    loop_t *loop = c->loop;
    if (!c->in) {
        c->in = loop->scratch;
        c->in_cap = SCRATCH_BYTES;
    }
    for (;;) {
        if (c->fd < 0)
            return; /* conn_close() gave the scratch buffer back */
        size_t room = input_room(c);
        if (room == 0) {
            /* Full of requests not yet served: the loop is posted when
             * the answer is out (or is called by on_writable() when the
             * output has drained), and reads the rest then -- unless it
             * is out already, and the buffer can be served now. */
            pthread_mutex_lock(&c->lock);
            bool waiting = (c->rstate == READ_DONE || c->out_full || c->in_end) && !c->lingering;
            c->pending_input = waiting;
            pthread_mutex_unlock(&c->lock);
            if (waiting && hung_up) {
                /* Not reading, the end of file is never met: the event
                 * says the client left, and its request is cancelled as
                 * at an end of file (below). The edge does not come
                 * again. */
                conn_close(c);
                return;
            }
            if (waiting)
                break;
            if (!serve_input(c))
                return;
            continue;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, room, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            atomic_store_explicit(&c->active_ms, loop->now, memory_order_relaxed);
            if (atomic_load_explicit(&c->request_started_ms, memory_order_relaxed) == 0)
                atomic_store_explicit(&c->request_started_ms, loop->now, memory_order_relaxed);
            atomic_fetch_add_explicit(&c->request_bytes, (uint64_t)n, memory_order_relaxed);
            if (!serve_input(c))
                return;
            if ((size_t)n < room && !hung_up)
                break; /* drained: the next bytes bring a new edge */
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            /* The client left (or the socket failed). An end of input with
             * a request in flight cancels it even if the client only shut
             * down its sending side: a socket closed whole cannot be told
             * from a half-closed one until a write fails, and closing the
             * connection is how an HTTP client cancels a request (digest
             * 4.7), which must not wait for the handler to finish. */
            conn_close(c);
            return;
        }
    }
    if (c->in_len == 0) {
        /* An idle connection keeps no input buffer. */
        if (c->in != loop->scratch)
            free(c->in);
        c->in = NULL;
        c->in_cap = 0;
    } else if (c->in == loop->scratch && !own_input(c, c->in_len > INPUT_BLOCK ? c->in_len
                                                                               : INPUT_BLOCK)) {
        conn_close(c);
    }
}

static void on_writable(conn_t *c)
{
    pthread_mutex_lock(&c->lock);
    bool resume = flush_locked(c) && c->out_full && c->out_len - c->out_off <= MAX_QUEUED_OUTPUT;
    if (resume) {
        /* Read down: serve what waits. Its time waiting was the
         * client's reading, not its sending: the request clocks start
         * over, as for any next request (next_request_locked()). */
        c->out_full = false;
        atomic_store_explicit(&c->active_ms, mcp_clock_coarse_ms(), memory_order_relaxed);
        atomic_store_explicit(&c->request_started_ms, 0, memory_order_relaxed);
        atomic_store_explicit(&c->request_bytes, 0, memory_order_relaxed);
    }
    pthread_mutex_unlock(&c->lock);
    if (resume && serve_input(c))
        on_readable(c, false); /* what the socket holds brings no new edge */
}

/* ------------------------------------------------------------------------
 * Lending the loop's thread to a handler (lend.h)
 *
 * While a request is being ended (body_complete()), the loop offers its
 * thread to the server, which runs a quick handler right there instead of
 * waking a worker for it. The loop's lend word says that its thread is
 * lent, and since when. The watchdog looks every MCP_LEND_BUDGET_US and
 * takes the loop from a handler lent longer: a new thread takes the word
 * back (mcp_lend_settle(), for that lend's sequence number) and goes
 * on serving the loop, starting with the rest of the batch. The lent
 * thread learns it when the handler returns (lend_end() finds the word
 * changed), unwinds without touching the loop, posting the connection to
 * it, and ends.
 *
 * What makes that safe: while lent, the thread touches only what a worker
 * may touch (connections under their locks, posting). The connection's
 * input is moved off the loop's scratch buffer before the handler runs,
 * and the connection and its exchange are held by references of their own
 * (mcp_http_end() holds the exchange's).
 * ------------------------------------------------------------------------ */

static loop_t *lender_loop(mcp_lender_t *self)
{
    return (loop_t *)(void *)((char *)self - offsetof(loop_t, lender));
}

static bool lend_begin(mcp_lender_t *self)
{
    loop_t *loop = lender_loop(self);
    conn_t *c = loop->ending;
    if (!c || current_loop != loop || lent_conn ||
        atomic_load_explicit(&loop->engine->stopping, memory_order_relaxed))
        return false;
    /* The scratch buffer stays with the loop: leftover input (pipelined
     * requests) gets a buffer of the connection's own. */
    lent_parked = false;
    if (c->in == loop->scratch) {
        if (c->in_len == 0) {
            c->in = NULL;
            c->in_cap = 0;
            lent_parked = true;
        } else if (!own_input(c, c->in_len > INPUT_BLOCK ? c->in_len : INPUT_BLOCK)) {
            return false;
        }
    }
    conn_ref(c);
    lent_conn = c;
    lent_word = mcp_lend_begin(&loop->lend, &loop->watch, &loop->engine->watchdog);
    return true;
}

static bool lend_end(mcp_lender_t *self)
{
    loop_t *loop = lender_loop(self);
    conn_t *c = lent_conn;
    lent_conn = NULL;
    if (mcp_lend_settle(&loop->lend, lent_word)) {
        if (lent_parked && !c->in) {
            c->in = loop->scratch;
            c->in_cap = SCRATCH_BYTES;
        }
        conn_unref(c); /* never the last: the loop holds one */
        return true;
    }
    /* The loop is another thread's now. body_complete() posts the
     * connection to it and drops the reference. */
    lent_away = true;
    current_loop = NULL;
    mcp_thread_lender = NULL;
    return false;
}

/* The last thing a loop's thread does: loops_stop() waits for this. */
static void loop_thread_done(epoll_engine_t *engine)
{
    pthread_mutex_lock(&engine->threads_lock);
    if (--engine->live_threads == 0)
        pthread_cond_broadcast(&engine->threads_gone);
    pthread_mutex_unlock(&engine->threads_lock);
}

/* Counts a thread that runs (or may take over) a loop; false when none
 * could be started. */
static bool start_loop_thread(epoll_engine_t *engine, void *(*main_fn)(void *), void *arg)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_mutex_lock(&engine->threads_lock);
    engine->live_threads++;
    pthread_mutex_unlock(&engine->threads_lock);
    pthread_t tid;
    bool ok = pthread_create(&tid, &attr, main_fn, arg) == 0;
    pthread_attr_destroy(&attr);
    if (!ok)
        loop_thread_done(engine); /* counted out again */
    return ok;
}

static void run_loop(loop_t *loop, bool resumed);

typedef struct takeover {
    loop_t *loop;
    uint64_t word; /* the lend to end */
} takeover_t;

static void *take_over_main(void *arg)
{
    takeover_t t = *(takeover_t *)arg;
    free(arg);
    epoll_engine_t *engine = t.loop->engine;
    /* The handler may have returned while this thread started: then the
     * loop is still its thread's, and this one has nothing to do. */
    if (mcp_lend_settle(&t.loop->lend, t.word))
        run_loop(t.loop, true);
    loop_thread_done(engine);
    return NULL;
}

/* Moves the loop to a new thread (the watchdog's). */
static void take_over(loop_t *loop, uint64_t word)
{
    takeover_t *t = malloc(sizeof *t);
    if (!t)
        return; /* tried again at the next look */
    *t = (takeover_t){loop, word};
    if (start_loop_thread(loop->engine, take_over_main, t))
        loop->watched = word;
    else
        free(t);
}

/* Should the watchdog take the loop from its lent thread (lend.h)? */
static bool lent_too_long(loop_t *loop, uint64_t word, int64_t now)
{
    return word != loop->watched && mcp_lend_overdue(&loop->watch, word, now);
}

/* The watchdog's look at every loop (lend.h). */
static uint64_t watch_loops(void *arg, int64_t now)
{
    epoll_engine_t *engine = arg;
    uint64_t sum = 0;
    for (unsigned i = 0; i < engine->n_loops; i++) {
        loop_t *loop = &engine->loops[i];
        uint64_t word = atomic_load(&loop->lend);
        sum += word;
        if (lent_too_long(loop, word, now))
            take_over(loop, word);
    }
    return sum;
}

static bool any_lent(void *arg)
{
    epoll_engine_t *engine = arg;
    for (unsigned i = 0; i < engine->n_loops; i++)
        if (atomic_load(&engine->loops[i].lend) & MCP_LEND_LENT)
            return true;
    return false;
}

/* ------------------------------------------------------------------------
 * The loop
 * ------------------------------------------------------------------------ */

/* Puts a new connection in its loop's epoll set and list (its loop's
 * thread). On failure it is closed and dropped. */
static void adopt(conn_t *c)
{
    loop_t *loop = c->loop;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};
    if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        close(c->fd);
        c->fd = -1;
        atomic_fetch_sub(&loop->engine->n_conns, 1);
        conn_unref(c); /* the loop's */
        return;
    }
    c->next = loop->conns;
    if (loop->conns)
        loop->conns->prev = c;
    loop->conns = c;
}

/* Out of descriptors or memory: stop polling the listening socket for a
 * while (see ACCEPT_PAUSE_MS); the connections open are served on. */
static void pause_accepting(loop_t *loop, int err)
{
    epoll_engine_t *engine = loop->engine;
    epoll_ctl(loop->epfd, EPOLL_CTL_DEL, engine->listen_fd, NULL);
    loop->accept_paused_until = loop->now + ACCEPT_PAUSE_MS;
    if (!atomic_exchange(&engine->accept_starved, true))
        mcp_logf(engine->log, engine->log_user, MCP_LOG_WARNING,
                 "HTTP: cannot accept connections (%s, %u open); new clients wait, "
                 "retried every %d ms",
                 strerror(err), atomic_load(&engine->n_conns), ACCEPT_PAUSE_MS);
}

static void resume_accepting(loop_t *loop)
{
    epoll_engine_t *engine = loop->engine;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = engine};
    loop->accept_paused_until = 0;
    if (atomic_load(&engine->stopping))
        return;
    epoll_ctl(loop->epfd, EPOLL_CTL_ADD, engine->listen_fd, &ev);
    /* engine_stop_accepting() may have taken it out of every set just
     * before: out again. (epoll_ctl() calls on one set are ordered.) */
    if (atomic_load(&engine->stopping))
        epoll_ctl(loop->epfd, EPOLL_CTL_DEL, engine->listen_fd, NULL);
}

static void accept_connections(loop_t *loop)
{
    epoll_engine_t *engine = loop->engine;
    for (int i = 0; i < ACCEPT_BATCH; i++) {
        int fd = accept4(engine->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                pause_accepting(loop, errno);
            return; /* EAGAIN, or a connection that failed before we took it */
        }
        if (atomic_load_explicit(&engine->accept_starved, memory_order_relaxed) &&
            atomic_exchange(&engine->accept_starved, false))
            mcp_logf(engine->log, engine->log_user, MCP_LOG_INFO,
                     "HTTP: accepting connections again");
        if (atomic_load(&engine->stopping)) {
            close(fd);
            continue;
        }
        if (atomic_fetch_add(&engine->n_conns, 1) >= engine->limit) {
            atomic_fetch_sub(&engine->n_conns, 1);
            close(fd); /* over the limit: refused by closing, as libmicrohttpd does */
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_t *c = calloc(1, sizeof *c);
        if (!c) {
            atomic_fetch_sub(&engine->n_conns, 1);
            close(fd);
            continue;
        }
        atomic_init(&c->refs, 1); /* its loop's */
        c->fd = fd;
        atomic_init(&c->active_ms, loop->now);
        pthread_mutex_init(&c->lock, NULL);
        /* Connections go to the loops in turn, whichever loop accepted
         * them: a burst of connections accepted by one loop would
         * otherwise all stay on it, and inline handlers, which run on
         * the loop, would share one CPU while the other idles. */
        c->loop = &engine->loops[atomic_fetch_add(&engine->next_loop, 1) % engine->n_loops];
        if (c->loop == loop) {
            adopt(c);
        } else {
            c->adopting = true;
            post(c);
        }
    }
}

/* Connections handed to this loop by other threads: new ones accepted
 * elsewhere, and ones with input waiting since their answer went out. */
static bool serve_posted(loop_t *loop)
{
    uint64_t count;
    ssize_t n = read(loop->wake_fd, &count, sizeof count);
    (void)n;
    pthread_mutex_lock(&loop->post_lock);
    conn_t *list = loop->posted;
    loop->posted = NULL;
    bool stop = loop->stop;
    for (conn_t *c = list; c; c = c->posted_next)
        c->posted = false;
    pthread_mutex_unlock(&loop->post_lock);
    while (list) {
        conn_t *c = list;
        list = c->posted_next;
        if (c->adopting) {
            c->adopting = false;
            adopt(c); /* then read what may have come already */
        }
        if (c->fd >= 0 && serve_input(c))
            on_readable(c, false);
        conn_unref(c); /* the posting's */
        if (lent_away) {
            /* The rest is the loop's new thread's to serve, and so is a
             * stop this wake-up brought. */
            while (list) {
                c = list;
                list = c->posted_next;
                post(c);
                conn_unref(c);
            }
            uint64_t one = 1;
            n = write(loop->wake_fd, &one, sizeof one);
            (void)n;
            return false;
        }
    }
    return !stop;
}

/* A request must come at least this fast, on average, once the idle
 * timeout has passed since its first byte (as Apache's mod_reqtimeout
 * does): a client that trickles a byte now and then, which the idle
 * timeout alone never catches, cannot hold a connection for long. */
#define MIN_REQUEST_BYTES_PER_S 500

/* Closes connections idle too long, or reading a request too slowly, and
 * lingering ones whose time is up. */
static void sweep(loop_t *loop)
{
    int64_t now = loop->now;
    int64_t idle_ms = loop->engine->idle_ms;
    conn_t *next;
    for (conn_t *c = loop->conns; c; c = next) {
        next = c->next;
        pthread_mutex_lock(&c->lock);
        /* Reading a request, or an answer that does not move: idle.
         * Waiting for a handler, or a stream between events: not idle
         * (the endpoint's timeouts and keep-alives look after those);
         * nor waiting to serve a request until answers are read (then
         * only the output's clock counts). */
        bool stuck_output = c->out_stalled;
        bool reading = c->rstate != READ_DONE && !c->lingering && !c->out_full;
        int64_t started = atomic_load_explicit(&c->request_started_ms, memory_order_relaxed);
        uint64_t bytes = atomic_load_explicit(&c->request_bytes, memory_order_relaxed);
        bool too_slow = reading && started > 0 &&
                        now - started >=
                            idle_ms + (int64_t)(bytes * 1000 / MIN_REQUEST_BYTES_PER_S);
        bool expired = (c->shut_wr && now >= c->linger_until) ||
                       (stuck_output && now - c->stalled_ms >= idle_ms) ||
                       (reading && now - c->active_ms >= idle_ms) || too_slow;
        pthread_mutex_unlock(&c->lock);
        if (expired)
            conn_close(c);
    }
}

/* Waits for the loop's next batch of events (`busy_since`: when the loop
 * last ran out of work, for the yield below). */
static void wait_for_events(loop_t *loop, int64_t *busy_since)
{
    /* With connections open, the next request usually comes within
     * microseconds of an answer: wait for it actively first, since
     * sleeping and being woken costs tens of them on a VM (spin.h).
     * Spinning is what keeps a loop from sleeping between the
     * requests of a busy client; measured on a 2-vCPU VM, it raised
     * HTTP tools/call at 16 connections by about 30%
     * (docs/benchmarks.md). */
    int n = loop->conns ? mcp_spin_epoll(loop->epfd, loop->events, MAX_EVENTS,
                                         loop->engine->spin_us)
                        : 0;
    if (n == 0) {
        int timeout = loop->conns ? 1000 : -1;
        if (loop->accept_paused_until) {
            int64_t left = loop->accept_paused_until - mcp_clock_coarse_ms();
            timeout = left <= 0 ? 0 : left < 1000 ? (int)left : 1000;
        }
        n = epoll_wait(loop->epfd, loop->events, MAX_EVENTS, timeout);
        *busy_since = mcp_clock_us(); /* it ran out of work: yielded or slept */
    } else if (mcp_clock_us() - *busy_since >= BUSY_YIELD_US) {
        /* Busy for a while without a break: let a thread waiting for
         * this CPU (the other loop, a worker, a client on the same
         * machine) run now, rather than when the scheduler's slice
         * ends, milliseconds later. Until then every answer this loop
         * owes waits, and the slowest of them make the tail: with
         * handlers run inline at 16 and 64 connections on a 2-vCPU
         * VM, this took p99 from ~4 ms to ~1.3 ms, at the same rate
         * (docs/benchmarks.md). A yield with no one waiting returns
         * at once. */
        sched_yield();
        *busy_since = mcp_clock_us();
    }
    loop->n_events = n > 0 ? n : 0;
    loop->next_event = 0;
    loop->now = mcp_clock_coarse_ms();
}

/* Serves the loop on this thread until it stops, or until the loop moves
 * to another thread while this one runs a handler (lent_away). `resumed`:
 * this thread took the loop over, and serves the rest of the batch first. */
static void run_loop(loop_t *loop, bool resumed)
{
    current_loop = loop;
    mcp_thread_lender = &loop->lender;
    mcp_lend_watch_serve(&loop->watch);
    int64_t next_sweep = mcp_clock_coarse_ms() + 1000;
    int64_t busy_since = mcp_clock_us();
    if (resumed) {
        loop->ending = NULL;
        loop->now = mcp_clock_coarse_ms();
    }
    for (;; resumed = false) {
        if (!resumed)
            wait_for_events(loop, &busy_since);
        while (loop->next_event < loop->n_events) {
            struct epoll_event *ev = &loop->events[loop->next_event++];
            void *p = ev->data.ptr;
            if (p == loop) {
                bool go_on = serve_posted(loop);
                if (lent_away)
                    return;
                if (!go_on) {
                    free_closed(loop);
                    return;
                }
            } else if (p == loop->engine) {
                accept_connections(loop);
            } else {
                conn_t *c = p;
                uint32_t events = ev->events;
                if (c->fd < 0)
                    continue; /* closed by an earlier event of this batch */
                if (events & EPOLLOUT) {
                    on_writable(c); /* which may serve input, and close */
                    if (lent_away)
                        return;
                }
                if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && c->fd >= 0)
                    on_readable(c, events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR));
                if (lent_away)
                    return;
            }
        }
        if (loop->now >= next_sweep) {
            sweep(loop);
            next_sweep = loop->now + 1000;
        }
        if (loop->accept_paused_until && loop->now >= loop->accept_paused_until)
            resume_accepting(loop);
        free_closed(loop);
    }
}

static void *loop_main(void *arg)
{
    loop_t *loop = arg;
    run_loop(loop, false);
    loop_thread_done(loop->engine);
    return NULL;
}

/* ------------------------------------------------------------------------
 * Start and stop
 * ------------------------------------------------------------------------ */

/* The listening socket, or a negative MCP_E* code (and *err filled). */
static int open_listener(const http_engine_config_t *cfg, uint16_t *port, mcp_error_t *err)
{
    int fd = socket(cfg->ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);
    if (fd < 0)
        return mcp_error_set(err, MCP_EIO, MCP_INTERNAL_ERROR, NULL, "socket: %s",
                             strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (cfg->ipv6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)&cfg->addr, cfg->addr_len) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        return mcp_error_set(err, MCP_EIO, MCP_INTERNAL_ERROR, NULL,
                             "cannot listen on %s port %u: %s", cfg->bind_text,
                             (unsigned)cfg->port, strerror(e));
    }
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    getsockname(fd, (struct sockaddr *)&bound, &len);
    *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                              : ((struct sockaddr_in *)&bound)->sin_port);
    return fd;
}

static void engine_free(epoll_engine_t *engine)
{
    for (unsigned i = 0; i < engine->n_loops; i++) {
        loop_t *loop = &engine->loops[i];
        if (loop->epfd >= 0)
            close(loop->epfd);
        if (loop->wake_fd >= 0)
            close(loop->wake_fd);
        pthread_mutex_destroy(&loop->post_lock);
        free(loop->scratch);
    }
    if (engine->listen_fd >= 0)
        close(engine->listen_fd);
    pthread_mutex_destroy(&engine->threads_lock);
    pthread_cond_destroy(&engine->threads_gone);
    mcp_lend_watchdog_destroy(&engine->watchdog);
    free(engine->loops);
    free(engine);
}

/* Stops the watchdog first, so that no loop moves from here on, then
 * every loop, and waits for all of their threads: those that serve a loop
 * and those that still run a handler their loop was taken from. */
static void loops_stop(epoll_engine_t *engine)
{
    mcp_lend_watchdog_stop(&engine->watchdog);
    for (unsigned i = 0; i < engine->n_loops; i++) {
        loop_t *loop = &engine->loops[i];
        if (!loop->started)
            continue;
        pthread_mutex_lock(&loop->post_lock);
        loop->stop = true;
        pthread_mutex_unlock(&loop->post_lock);
        uint64_t one = 1;
        ssize_t n = write(loop->wake_fd, &one, sizeof one);
        (void)n;
        loop->started = false;
    }
    pthread_mutex_lock(&engine->threads_lock);
    while (engine->live_threads > 0)
        pthread_cond_wait(&engine->threads_gone, &engine->threads_lock);
    pthread_mutex_unlock(&engine->threads_lock);
}

static int engine_start(const http_engine_config_t *cfg, void **out, uint16_t *port,
                        mcp_error_t *err)
{
    epoll_engine_t *engine = calloc(1, sizeof *engine);
    loop_t *loops = calloc(cfg->threads, sizeof *loops);
    if (!engine || !loops) {
        free(engine);
        free(loops);
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    }
    engine->log = cfg->log;
    engine->log_user = cfg->log_user;
    engine->ep = cfg->ep;
    engine->max_head = cfg->max_header_bytes;
    engine->idle_ms = (int64_t)cfg->connection_timeout_s * 1000;
    engine->spin_us = cfg->spin_us;
    engine->limit = cfg->connection_limit;
    atomic_init(&engine->n_conns, 0);
    atomic_init(&engine->next_loop, 0);
    atomic_init(&engine->stopping, false);
    atomic_init(&engine->accept_starved, false);
    engine->loops = loops;
    engine->n_loops = cfg->threads;
    pthread_mutex_init(&engine->threads_lock, NULL);
    pthread_cond_init(&engine->threads_gone, NULL);
    mcp_lend_watchdog_init(&engine->watchdog, watch_loops, any_lent, engine);
    bool scratch = true;
    for (unsigned i = 0; i < cfg->threads; i++) {
        loops[i].engine = engine;
        loops[i].epfd = loops[i].wake_fd = -1;
        loops[i].lender = (mcp_lender_t){lend_begin, lend_end};
        atomic_init(&loops[i].lend, 0);
        mcp_lend_watch_init(&loops[i].watch);
        pthread_mutex_init(&loops[i].post_lock, NULL);
        scratch = scratch && (loops[i].scratch = malloc(SCRATCH_BYTES));
    }
    if (!scratch) {
        engine->listen_fd = -1;
        engine_free(engine);
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
    }
    int fd = open_listener(cfg, port, err);
    engine->listen_fd = fd;
    if (fd < 0) {
        engine_free(engine);
        return fd; /* the MCP_E* code */
    }
    int rc = MCP_OK;
    sigset_t saved;
    http_signals_block(&saved);
    /* Every loop is set up before any starts: the first to run may deal a
     * connection to any other, and wakes it through its eventfd. */
    for (unsigned i = 0; i < cfg->threads && rc == MCP_OK; i++) {
        loop_t *loop = &loops[i];
        struct epoll_event wake = {.events = EPOLLIN, .data.ptr = loop};
        struct epoll_event accept_ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = engine};
        if ((loop->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
            (loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
            epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wake_fd, &wake) != 0 ||
            epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &accept_ev) != 0)
            rc = mcp_error_set(err, MCP_EIO, MCP_INTERNAL_ERROR, NULL,
                               "cannot set up the HTTP event threads: %s", strerror(errno));
    }
    for (unsigned i = 0; i < cfg->threads && rc == MCP_OK; i++) {
        loop_t *loop = &loops[i];
        if (!start_loop_thread(engine, loop_main, loop))
            rc = mcp_error_set(err, MCP_EIO, MCP_INTERNAL_ERROR, NULL,
                               "cannot start the HTTP event threads");
        else
            loop->started = true;
    }
    if (rc == MCP_OK) {
        if (!mcp_lend_watchdog_start(&engine->watchdog))
            rc = mcp_error_set(err, MCP_EIO, MCP_INTERNAL_ERROR, NULL,
                               "cannot start the HTTP event threads");
    }
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc != MCP_OK) {
        loops_stop(engine);
        engine_free(engine);
        return rc;
    }
    *out = engine;
    return MCP_OK;
}

/* New connections are accepted and closed at once; heads that arrive on
 * open ones close them. The listening socket stays open (and bound) until
 * close(): closing it while a loop may be accepting on it would let a
 * reused descriptor number be accepted on. */
static void engine_stop_accepting(void *arg)
{
    epoll_engine_t *engine = arg;
    atomic_store(&engine->stopping, true);
    for (unsigned i = 0; i < engine->n_loops; i++)
        epoll_ctl(engine->loops[i].epfd, EPOLL_CTL_DEL, engine->listen_fd, NULL);
}

static void engine_close(void *arg)
{
    epoll_engine_t *engine = arg;
    loops_stop(engine);
    /* The loops are gone: their connections are closed from here. Posted
     * ones hold a reference each, dropped here too. */
    for (unsigned i = 0; i < engine->n_loops; i++) {
        loop_t *loop = &engine->loops[i];
        while (loop->posted) {
            conn_t *c = loop->posted;
            loop->posted = c->posted_next;
            if (c->adopting) { /* accepted, never in a loop: no one else closes it */
                close(c->fd);
                atomic_fetch_sub(&engine->n_conns, 1);
                conn_unref(c);
            }
            conn_unref(c);
        }
        while (loop->conns)
            conn_close(loop->conns);
        free_closed(loop);
    }
    engine_free(engine);
}

const http_engine_ops_t http_engine_epoll = {engine_start, engine_stop_accepting, NULL,
                                             engine_close};
