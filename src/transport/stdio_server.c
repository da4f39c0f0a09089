/*
 * The stdio transport of the server: newline-delimited JSON-RPC on
 * stdin/stdout (digest section 5).
 *
 * One thread reads lines and submits each to the core, which runs a quick
 * handler right on it ("The reader", below) and others on worker threads,
 * so responses may leave out of order. Every outgoing message is one
 * compact line written under a mutex, so lines never interleave. Nothing
 * else is ever written to stdout.
 *
 * A sequential client sends its next request a few microseconds after our
 * answer reaches it. So that the reader does not have to be woken from
 * sleep for it (costly on a VM, see spin.h), the reader waits actively for
 * a short while before it sleeps, and again after each answer: the writer
 * notes every response, and kicks the reader out of poll() if it was
 * sleeping there.
 *
 * The writer outlives the run: a handler that ignores cancellation may still
 * answer after mcp_server_run_stdio() returned, so the writer is
 * reference-counted (one reference per request in flight) and drops
 * messages once the run is over.
 *
 * A client that stops reading our output fills the pipe. A plain blocking
 * write() would then hold its thread, and every thread behind the write
 * lock, for good: the reader among them (it answers the lists itself),
 * so that even the end of input went unseen and the run never ended. So
 * writes never block in write(): a pipe is written through a non-blocking
 * open file description of its own, a socket with MSG_DONTWAIT, and a
 * full one is waited for in poll(), beside the events that end the wait:
 * the end of input or mcp_server_stop_stdio() start the grace period
 * (shutdown_grace_ms), after which the write gives up, and the end of the
 * run gives up at once.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mcp/server_core.h"
#include "protocol/id_scan.h"
#include "server/server_internal.h"
#include "clock.h"
#include "lend.h"
#include "spin.h"

#define DEFAULT_MAX_LINE ((size_t)16 * 1024 * 1024)
#define DEFAULT_GRACE_MS 5000
#define READ_CHUNK 65536
/* After cancelling, how long to wait for handlers to notice. */
#define CANCEL_WAIT_MS 2000

/* How out_fd is written without blocking (see the top of the file). */
typedef enum {
    OUT_PIPE_REOPENED, /* a pipe, through its own O_NONBLOCK description */
    OUT_SOCKET,        /* send(MSG_DONTWAIT) */
    OUT_POLLED,        /* a pipe that could not be reopened: poll, then at
                        * most PIPE_BUF bytes, which a pipe with room for
                        * any takes without blocking */
    OUT_PLAIN,         /* a file or terminal: write() returns */
} out_mode_t;

typedef struct stdio_writer {
    mcp_sink_t sink;        /* must stay first: the core hands us back this */
    atomic_int refs;
    pthread_mutex_t write_lock; /* serialises writes, so lines never interleave */
    pthread_mutex_t lock;   /* guards the fields below it */
    pthread_cond_t idle;    /* signalled when inflight drops */
    int fd;                 /* what we write to (out_fd, or our reopening of it) */
    int own_fd;             /* our reopening of out_fd, closed with us; -1: none */
    out_mode_t mode;
    int watch_fds[2];       /* in_fd and the stop eventfd: a write stuck on a
                             * full pipe watches them for the end of the run */
    int abort_fd;           /* eventfd, signalled when the run is over */
    int grace_ms;           /* shutdown_grace_ms */
    bool open;              /* false once the run ended or writing failed */
    bool broken;            /* a write failed (the reader gave up on us) */
    size_t inflight;        /* submitted messages not yet released */
    bool answered;          /* a response went out since the reader last looked */
    bool reader_asleep;     /* the reader sleeps in poll(); kick it on a response */
    int kick_fd;            /* eventfd that wakes the reader; -1 without spinning */
} stdio_writer_t;

static void writer_unref(stdio_writer_t *w)
{
    if (atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&w->write_lock);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->idle);
    if (w->kick_fd >= 0)
        close(w->kick_fd);
    if (w->abort_fd >= 0)
        close(w->abort_fd);
    if (w->own_fd >= 0)
        close(w->own_fd);
    free(w);
}

/* Picks how to write `fd` without blocking; may open w->own_fd. */
static void writer_choose_mode(stdio_writer_t *w, int fd)
{
    w->fd = fd;
    w->own_fd = -1;
    w->mode = OUT_PLAIN;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return;
    if (S_ISSOCK(st.st_mode)) {
        w->mode = OUT_SOCKET;
    } else if (S_ISFIFO(st.st_mode)) {
        /* O_NONBLOCK on out_fd itself would change the description the
         * application (and whoever shares it) writes with; a new
         * description of the same pipe has a flag of its own. */
        char path[32];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        int own = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (own >= 0) {
            w->own_fd = w->fd = own;
            w->mode = OUT_PIPE_REOPENED;
        } else {
            w->mode = OUT_POLLED;
        }
    }
}

/* Waits until the output may take more (true), or gives up (false): at
 * once when the run is over, and grace_ms after the end of input or a stop
 * was first seen here. */
static bool wait_writable(stdio_writer_t *w, int64_t *give_up_ms)
{
    for (;;) {
        struct pollfd fds[4] = {
            {.fd = w->fd, .events = POLLOUT},
            {.fd = w->abort_fd, .events = POLLIN},
            /* input ended: POLLHUP (a pipe), POLLRDHUP (a socket) */
            {.fd = w->watch_fds[0], .events = POLLRDHUP},
            {.fd = w->watch_fds[1], .events = POLLIN},
        };
        int timeout = -1;
        if (*give_up_ms >= 0) {
            int64_t left = *give_up_ms - mcp_clock_ms();
            if (left <= 0)
                return false;
            timeout = left > INT_MAX ? INT_MAX : (int)left;
        }
        int ready = poll(fds, 4, timeout);
        if (ready < 0 && errno != EINTR)
            return false;
        if (ready <= 0)
            continue;
        if (fds[0].revents & POLLOUT)
            return true;
        if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL) || fds[1].revents)
            return false;
        if (*give_up_ms < 0 && (fds[2].revents || fds[3].revents))
            *give_up_ms = mcp_clock_ms() + w->grace_ms;
        if (fds[2].revents & POLLNVAL)
            w->watch_fds[0] = -1; /* closed under us: nothing more to learn */
        if (fds[3].revents & POLLNVAL)
            w->watch_fds[1] = -1;
        if (*give_up_ms >= 0) {
            /* Stop listening to what started the grace period: both stay
             * ready, and poll() would return at once until it ends. */
            w->watch_fds[0] = w->watch_fds[1] = -1;
        }
    }
}

/* One write() of what `mode` allows; as write() returns. */
static ssize_t write_some(stdio_writer_t *w, const char *buf, size_t len)
{
    switch (w->mode) {
    case OUT_SOCKET:
        return send(w->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    case OUT_POLLED:
        return write(w->fd, buf, len < PIPE_BUF ? len : PIPE_BUF);
    case OUT_PIPE_REOPENED:
    case OUT_PLAIN:
        break;
    }
    return write(w->fd, buf, len);
}

/* Writes all of buf (write_lock held), without letting a closed pipe kill
 * the process with SIGPIPE (the library must not change the application's
 * signal dispositions, so the signal is blocked in this thread and any
 * pending one is consumed). False when the output failed or the write gave
 * up (see wait_writable). */
static bool write_all(stdio_writer_t *w, const char *buf, size_t len)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    bool ok = true;
    int64_t give_up_ms = -1;
    int watch_in = w->watch_fds[0], watch_stop = w->watch_fds[1];
    /* OUT_POLLED must know there is room before each write. */
    bool room = w->mode != OUT_POLLED;
    while (len > 0) {
        if (!room && !(room = wait_writable(w, &give_up_ms))) {
            ok = false;
            errno = ETIMEDOUT;
            break;
        }
        ssize_t n = write_some(w, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            room = false;
            continue;
        }
        if (n <= 0) {
            ok = false;
            break;
        }
        buf += n;
        len -= (size_t)n;
        room = w->mode != OUT_POLLED;
    }
    w->watch_fds[0] = watch_in; /* wait_writable may have dropped them */
    w->watch_fds[1] = watch_stop;
    if (!ok && errno == EPIPE && !sigismember(&old, SIGPIPE)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ok;
}

/* Writes `line` (len + 1 bytes, its newline included; taken). */
static int writer_send_line(stdio_writer_t *w, mcp_out_kind_t kind, char *line, size_t len);

static int writer_send(mcp_sink_t *sink, mcp_out_kind_t kind, const json_t *msg, int status)
{
    (void)status;
    stdio_writer_t *w = (stdio_writer_t *)sink;
    if (kind == MCP_OUT_ACCEPTED || !msg)
        return 0;
    size_t len;
    char *line = mcp_json_dump(msg, &len);
    if (!line)
        return 0; /* nothing sendable; the request is not the peer's fault */
    line[len] = '\n'; /* mcp_json_dump leaves room for the terminator we replace */
    return writer_send_line(w, kind, line, len);
}

static int writer_send_text(mcp_sink_t *sink, mcp_out_kind_t kind, const char *text, size_t len,
                            int status)
{
    (void)status;
    char *line = malloc(len + 1);
    if (!line)
        return 0; /* as writer_send when the text cannot be made */
    memcpy(line, text, len);
    line[len] = '\n';
    return writer_send_line((stdio_writer_t *)sink, kind, line, len);
}

static int writer_send_line(stdio_writer_t *w, mcp_out_kind_t kind, char *line, size_t len)
{
    /* The write happens outside `lock`, which the reader takes on every
     * turn: a slow client slows the writers, never the reader. */
    pthread_mutex_lock(&w->write_lock);
    pthread_mutex_lock(&w->lock);
    bool open = w->open;
    pthread_mutex_unlock(&w->lock);
    bool written = open && write_all(w, line, len + 1);
    pthread_mutex_unlock(&w->write_lock);

    pthread_mutex_lock(&w->lock);
    int rc = 0;
    if (!open) {
        rc = -1;
    } else if (!written) {
        w->open = false;
        w->broken = true;
        rc = -1;
    } else if (kind == MCP_OUT_RESPONSE && w->kick_fd >= 0) {
        w->answered = true;
        if (w->reader_asleep) {
            w->reader_asleep = false;
            uint64_t one = 1;
            ssize_t k = write(w->kick_fd, &one, sizeof one);
            (void)k; /* only fails when the count is already non-zero */
        }
    }
    pthread_mutex_unlock(&w->lock);
    free(line);
    return rc;
}

static void writer_release(mcp_sink_t *sink)
{
    stdio_writer_t *w = (stdio_writer_t *)sink;
    pthread_mutex_lock(&w->lock);
    w->inflight--;
    pthread_cond_broadcast(&w->idle);
    pthread_mutex_unlock(&w->lock);
    writer_unref(w);
}

/* The connection's outbound sink (messages of no request: a legacy
 * session's list_changed and resources/updated notifications): writes
 * through the writer without counting as work in flight. */
typedef struct stdio_outbound {
    mcp_sink_t sink;
    stdio_writer_t *w;
} stdio_outbound_t;

static int outbound_send(mcp_sink_t *sink, mcp_out_kind_t kind, const json_t *msg, int status)
{
    return writer_send(&((stdio_outbound_t *)sink)->w->sink, kind, msg, status);
}

static void outbound_release(mcp_sink_t *sink)
{
    stdio_outbound_t *o = (stdio_outbound_t *)sink;
    writer_unref(o->w);
    free(o);
}

static mcp_sink_t *outbound_new(stdio_writer_t *w)
{
    stdio_outbound_t *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->sink.send = outbound_send;
    o->sink.release = outbound_release;
    atomic_fetch_add(&w->refs, 1);
    o->w = w;
    return &o->sink;
}

/* Waits until nothing is in flight or `ms` pass; true when idle. */
static bool writer_wait_idle(stdio_writer_t *w, int ms)
{
    struct timespec deadline = mcp_clock_deadline(ms);
    pthread_mutex_lock(&w->lock);
    int rc = 0;
    while (w->inflight > 0 && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->idle, &w->lock, &deadline);
    bool idle = w->inflight == 0;
    pthread_mutex_unlock(&w->lock);
    return idle;
}

/* spin_us > 0: the reader waits actively for input (wait_for_input), and
 * needs a kick_fd for the answers that go out while it sleeps. */
static stdio_writer_t *writer_new(int fd, int spin_us, int in_fd, int stop_fd, int grace_ms)
{
    stdio_writer_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->kick_fd = spin_us > 0 ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
    w->abort_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (w->abort_fd < 0) {
        if (w->kick_fd >= 0)
            close(w->kick_fd);
        free(w);
        return NULL;
    }
    w->sink.send = writer_send;
    w->sink.send_text = writer_send_text;
    w->sink.release = writer_release;
    atomic_init(&w->refs, 1);
    pthread_mutex_init(&w->write_lock, NULL);
    pthread_mutex_init(&w->lock, NULL);
    mcp_clock_cond_init(&w->idle);
    writer_choose_mode(w, fd);
    w->watch_fds[0] = in_fd;
    w->watch_fds[1] = stop_fd;
    w->grace_ms = grace_ms;
    w->open = true;
    return w;
}

/* The error line for input that never became a message (too long), once
 * its line has ended: it names the request's id when the scan of the
 * line found one, so that the client's call fails at once instead of at
 * its timeout; else (a notification, or no well-formed request) none. */
static void answer_oversized(stdio_writer_t *w, size_t max_line, const mcp_id_scan_t *line)
{
    mcp_error_t err = {0};
    mcp_error_set(&err, MCP_ELIMIT, MCP_INVALID_REQUEST, NULL,
                  "Invalid Request: message longer than %zu bytes", max_line);
    json_t *id = mcp_id_scan_request_id(line);
    json_t *response = mcp_jsonrpc_error_from(id, &err);
    json_decref(id);
    writer_send(&w->sink, MCP_OUT_RESPONSE, response, 400);
    json_decref(response);
    mcp_error_clear(&err);
}

/* An over-long line starts: its first `len` bytes, the scan's start. */
static void begin_oversized(mcp_id_scan_t *line, const char *bytes, size_t len)
{
    mcp_id_scan_init(line);
    mcp_id_scan_feed(line, bytes, len);
}

static void submit_line(mcp_server_t *srv, mcp_conn_t *conn, stdio_writer_t *w,
                        const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return; /* blank lines are not messages */
    mcp_request_context_t ctx = {.transport = MCP_TRANSPORT_STDIO};
    atomic_fetch_add(&w->refs, 1);
    pthread_mutex_lock(&w->lock);
    w->inflight++;
    pthread_mutex_unlock(&w->lock);
    if (mcp_server_submit(srv, conn, line, len, &ctx, &w->sink, NULL) != MCP_OK)
        writer_release(&w->sink); /* not taken: undo the accounting */
}

/*
 * Waits until stdin or the stop descriptor (fds[0], fds[1]) is ready;
 * fds[2] is set up here. It first waits actively for up to spin_us, then
 * sleeps in poll(), from which a response kicks it to wait actively again:
 * a sequential client's next request follows its answer closely. Returns
 * what poll() returned.
 */
static int wait_for_input(stdio_writer_t *w, struct pollfd fds[3], int spin_us)
{
    if (w->kick_fd < 0)
        return poll(fds, 2, -1);
    fds[2] = (struct pollfd){.fd = w->kick_fd, .events = POLLIN};
    bool spin = true;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        spin = spin || w->answered;
        w->answered = false;
        w->reader_asleep = !spin;
        pthread_mutex_unlock(&w->lock);
        if (spin) {
            spin = false;
            int ready = mcp_spin_poll(fds, 2, spin_us);
            if (ready != 0)
                return ready;
            continue; /* sleep, unless another answer went out meanwhile */
        }
        int ready = poll(fds, 3, -1);
        pthread_mutex_lock(&w->lock);
        w->reader_asleep = false;
        pthread_mutex_unlock(&w->lock);
        if (ready <= 0 || !fds[2].revents)
            return ready;
        uint64_t kicks;
        ssize_t drained = read(w->kick_fd, &kicks, sizeof kicks);
        (void)drained; /* non-blocking; nothing to read is fine */
        if (fds[0].revents || fds[1].revents)
            return ready;
    }
}

/* The server's stop eventfd, made on first use; -1 when none can be made. */
static int stop_fd_of(mcp_server_t *srv)
{
    int fd = atomic_load(&srv->stdio_stop_fd);
    if (fd >= 0)
        return fd;
    int made = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (made < 0)
        return -1;
    int expected = -1;
    if (atomic_compare_exchange_strong(&srv->stdio_stop_fd, &expected, made))
        return made;
    close(made); /* another run made it first */
    return expected;
}

/* ------------------------------------------------------------------------
 * The reader, and lending its thread to handlers (lend.h)
 *
 * A run reads its input on a thread of its own while the caller of
 * mcp_server_run_stdio() waits for the input to end. The reader lends its
 * thread to the handlers of the requests it reads: a quick handler runs
 * right there and answers with no worker to wake, which takes a
 * sequential client's call from about two thread hand-offs to none
 * (docs/benchmarks.md). A watchdog looks every MCP_LEND_BUDGET_US while a
 * handler holds the reader; when the handler holds it too long
 * (mcp_lend_overdue()), a new thread takes the reading over, from the next
 * line, and the lent thread ends once its handler returns. So a slow or
 * blocking handler holds up the lines behind it for a millisecond or two,
 * once: the server then sends that handler's calls to the pool for a
 * while (methods.c).
 *
 * The caller's own thread is never lent, so the run ends as it always
 * did, even while a handler that ignores cancellation runs on; its reader
 * thread lives on, counted in srv->stdio_threads, and mcp_server_free()
 * waits for it as it waits for the pool.
 * ------------------------------------------------------------------------ */

typedef struct stdio_run {
    atomic_int refs; /* the caller's, and one per reader thread */
    mcp_server_t *srv;
    mcp_conn_t *conn;
    stdio_writer_t *w;
    int in_fd, stop_fd, spin_us;
    size_t max_line;
    size_t buf_limit; /* the most the buffer ever needs: a line, its newline and a byte */

    /* The reader's, whichever thread reads: buf[line_start, len) is input
     * not served yet, and no line ends before `scan`. */
    char *buf;
    size_t cap, len, line_start, scan;
    bool discarding;         /* inside an over-long line, skipping to its end */
    mcp_id_scan_t oversized; /* that line, scanned for its id as it goes by */
    bool at_eof;             /* the input ended, its last line submitted */
    bool stopped;            /* ended by mcp_server_stop_stdio(), not by EOF */
    int rc;

    mcp_lender_t lender;
    _Atomic uint64_t lend; /* the lend word (lend.h) */
    mcp_lend_watch_t watch;
    uint64_t watched; /* the watchdog's: the lend it took the reading from */
    /* Started by the first lend (the reader's), stopped by the caller once
     * the reading is over. */
    mcp_lend_watchdog_t watchdog;

    pthread_mutex_t lock;
    pthread_cond_t finished_cond;
    bool finished; /* the reading is over: at_eof, stopped and rc say how */
} stdio_run_t;

/* The run this thread reads for: NULL on other threads, and on a reader
 * whose reading moved to another thread while it ran a handler. */
static _Thread_local stdio_run_t *current_run;
/* The lend word this thread set when it was lent; 0 while not lent. */
static _Thread_local uint64_t lent_word;
/* The reading moved on while this thread ran a handler: it unwinds
 * without touching the run's input, and ends. */
static _Thread_local bool lent_away;

static void run_unref(stdio_run_t *r)
{
    if (atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    mcp_lend_watchdog_destroy(&r->watchdog);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->finished_cond);
    free(r->buf);
    free(r);
}

static stdio_run_t *run_of(mcp_lender_t *self)
{
    return (stdio_run_t *)(void *)((char *)self - offsetof(stdio_run_t, lender));
}

static bool lend_begin(mcp_lender_t *self)
{
    stdio_run_t *r = run_of(self);
    if (current_run != r || lent_word)
        return false;
    if (!r->watchdog.started && !mcp_lend_watchdog_start(&r->watchdog))
        return false; /* no watchdog, no lending: the pool */
    lent_word = mcp_lend_begin(&r->lend, &r->watch, &r->watchdog);
    return true;
}

static bool lend_end(mcp_lender_t *self)
{
    stdio_run_t *r = run_of(self);
    uint64_t word = lent_word;
    lent_word = 0;
    if (mcp_lend_settle(&r->lend, word))
        return true;
    lent_away = true; /* another thread reads now */
    current_run = NULL;
    mcp_thread_lender = NULL;
    return false;
}

/* The last thing a reader thread does. */
static void reader_done(stdio_run_t *r)
{
    mcp_server_t *srv = r->srv;
    run_unref(r);
    pthread_mutex_lock(&srv->pool_lock);
    if (--srv->stdio_threads == 0)
        pthread_cond_broadcast(&srv->stdio_threads_gone);
    pthread_mutex_unlock(&srv->pool_lock);
}

/* Starts a reader thread, counted in the server and holding the run;
 * false when none could be started. */
static bool start_reader(stdio_run_t *r, void *(*main_fn)(void *), void *arg)
{
    atomic_fetch_add(&r->refs, 1);
    pthread_mutex_lock(&r->srv->pool_lock);
    r->srv->stdio_threads++;
    pthread_mutex_unlock(&r->srv->pool_lock);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t tid;
    bool ok = pthread_create(&tid, &attr, main_fn, arg) == 0;
    pthread_attr_destroy(&attr);
    if (!ok)
        reader_done(r);
    return ok;
}

/*
 * Serves the lines of the input read so far, from `scan` on, and keeps
 * the start of the next line. False when the reading moved to another
 * thread while this one ran a handler. The next reader goes on from the
 * line after the one whose handler took long; the lent thread does not
 * touch the buffer again (the server has read its line by the time a
 * handler runs).
 */
static bool serve_lines(stdio_run_t *r)
{
    char *nl;
    while ((nl = memchr(r->buf + r->scan, '\n', r->len - r->scan)) != NULL) {
        size_t start = r->line_start, end = (size_t)(nl - r->buf);
        r->line_start = r->scan = end + 1;
        if (r->discarding) {
            /* The tail of an over-long line ends here. */
            mcp_id_scan_feed(&r->oversized, r->buf + start, end - start);
            answer_oversized(r->w, r->max_line, &r->oversized);
            r->discarding = false;
        } else if (end - start > r->max_line) {
            begin_oversized(&r->oversized, r->buf + start, end - start);
            answer_oversized(r->w, r->max_line, &r->oversized);
        } else {
            submit_line(r->srv, r->conn, r->w, r->buf + start, end - start);
            if (lent_away)
                return false;
        }
    }
    if (r->discarding) {
        /* Still inside the over-long line: scan what we have, keep none of it. */
        mcp_id_scan_feed(&r->oversized, r->buf + r->line_start, r->len - r->line_start);
        r->len = 0;
    } else {
        r->len -= r->line_start;
        memmove(r->buf, r->buf + r->line_start, r->len);
        if (r->len > r->max_line) {
            begin_oversized(&r->oversized, r->buf, r->len);
            r->discarding = true;
            r->len = 0;
        }
    }
    r->line_start = 0;
    r->scan = r->len;
    if (r->cap > READ_CHUNK && r->len <= READ_CHUNK / 2) {
        /* A long line grew the buffer (up to max_line, 16 MiB by
         * default); give that back once what is left fits the usual
         * size, rather than hold it for the rest of the run. */
        char *smaller = realloc(r->buf, READ_CHUNK);
        if (smaller) {
            r->buf = smaller;
            r->cap = READ_CHUNK;
        }
    }
    return true;
}

/* The input ended: a last line without its newline is still a message.
 * False when the reading moved to another thread meanwhile. */
static bool serve_last_line(stdio_run_t *r)
{
    r->at_eof = true;
    if (r->discarding) {
        answer_oversized(r->w, r->max_line, &r->oversized);
    } else if (r->len > 0) {
        size_t len = r->len;
        r->len = 0;
        submit_line(r->srv, r->conn, r->w, r->buf, len);
    }
    return !lent_away;
}

static void finish_reading(stdio_run_t *r)
{
    pthread_mutex_lock(&r->lock);
    r->finished = true;
    pthread_cond_broadcast(&r->finished_cond);
    pthread_mutex_unlock(&r->lock);
}

/* Reads and serves the input until it ends, a stop comes or reading
 * fails, then tells the caller; or until the reading moves to another
 * thread, which then goes on where this one was (a batch half served, or
 * the input's end). */
static void read_input(stdio_run_t *r)
{
    current_run = r;
    mcp_thread_lender = &r->lender;
    mcp_lend_watch_serve(&r->watch);
    if (!r->at_eof && !serve_lines(r))
        return;
    while (!r->at_eof) {
        struct pollfd fds[3] = {{.fd = r->in_fd, .events = POLLIN},
                                {.fd = r->stop_fd, .events = POLLIN}};
        if (wait_for_input(r->w, fds, r->spin_us) < 0) {
            if (errno == EINTR)
                continue;
            r->rc = MCP_EIO;
            break;
        }
        if (fds[1].revents) {
            r->stopped = true; /* mcp_server_stop_stdio(): the client is still there */
            break;
        }
        pthread_mutex_lock(&r->w->lock);
        bool broken = r->w->broken;
        pthread_mutex_unlock(&r->w->lock);
        if (broken) {
            r->rc = MCP_EIO; /* the client stopped reading our output */
            break;
        }
        if (r->len == r->cap) {
            size_t grown = r->cap > r->buf_limit / 2 ? r->buf_limit : r->cap * 2;
            char *bigger = grown > r->cap ? realloc(r->buf, grown) : NULL;
            if (!bigger) {
                /* Only reachable at the line limit (the buffer holds
                 * only the line's start): start discarding. */
                begin_oversized(&r->oversized, r->buf, r->len);
                r->discarding = true;
                r->len = r->scan = 0;
                continue;
            }
            r->buf = bigger;
            r->cap = grown;
        }
        ssize_t n = read(r->in_fd, r->buf + r->len, r->cap - r->len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            r->rc = MCP_EIO;
            break;
        }
        if (n == 0) {
            /* EOF: the client closed our stdin. */
            if (!serve_last_line(r))
                return;
            break;
        }
        r->len += (size_t)n;
        if (!serve_lines(r))
            return;
    }
    current_run = NULL;
    mcp_thread_lender = NULL;
    finish_reading(r);
}

static void *reader_main(void *arg)
{
    stdio_run_t *r = arg;
    read_input(r);
    reader_done(r);
    return NULL;
}

typedef struct takeover {
    stdio_run_t *r;
    uint64_t word; /* the lend to end */
} takeover_t;

static void *take_over_main(void *arg)
{
    takeover_t t = *(takeover_t *)arg;
    free(arg);
    /* The handler may have returned while this thread started: then the
     * reading is still its thread's, and this one has nothing to do. */
    if (mcp_lend_settle(&t.r->lend, t.word))
        read_input(t.r);
    reader_done(t.r);
    return NULL;
}

/* Gives the reading to a new thread (the watchdog's). */
static void take_over(stdio_run_t *r, uint64_t word)
{
    takeover_t *t = malloc(sizeof *t);
    if (!t)
        return; /* tried again at the next look */
    *t = (takeover_t){r, word};
    if (start_reader(r, take_over_main, t))
        r->watched = word;
    else
        free(t);
}

/* The watchdog's look (lend.h). */
static uint64_t watch_reader(void *arg, int64_t now)
{
    stdio_run_t *r = arg;
    uint64_t word = atomic_load(&r->lend);
    if (word != r->watched && mcp_lend_overdue(&r->watch, word, now))
        take_over(r, word);
    return word;
}

static bool reader_lent(void *arg)
{
    stdio_run_t *r = arg;
    return atomic_load(&r->lend) & MCP_LEND_LENT;
}

/* ------------------------------------------------------------------------
 * The run
 * ------------------------------------------------------------------------ */

static stdio_run_t *run_new(mcp_server_t *srv, mcp_conn_t *conn, stdio_writer_t *w, int in_fd,
                            int stop_fd, size_t max_line, int spin_us)
{
    stdio_run_t *r = calloc(1, sizeof *r);
    char *buf = malloc(READ_CHUNK);
    if (!r || !buf) {
        free(r);
        free(buf);
        return NULL;
    }
    atomic_init(&r->refs, 1);
    r->srv = srv;
    r->conn = conn;
    r->w = w;
    r->in_fd = in_fd;
    r->stop_fd = stop_fd;
    r->spin_us = spin_us;
    r->max_line = max_line;
    /* Computed so that a max_line near SIZE_MAX (no limit) cannot wrap
     * around to a tiny buffer. */
    r->buf_limit = max_line > SIZE_MAX - 2 ? SIZE_MAX : max_line + 2;
    r->buf = buf;
    r->cap = READ_CHUNK;
    r->lender = (mcp_lender_t){lend_begin, lend_end};
    atomic_init(&r->lend, 0);
    mcp_lend_watch_init(&r->watch);
    mcp_lend_watchdog_init(&r->watchdog, watch_reader, reader_lent, r);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->finished_cond, NULL);
    r->rc = MCP_OK;
    return r;
}

/* Waits for the reading to end, then for the watchdog. */
static void run_wait(stdio_run_t *r)
{
    pthread_mutex_lock(&r->lock);
    while (!r->finished)
        pthread_cond_wait(&r->finished_cond, &r->lock);
    pthread_mutex_unlock(&r->lock);
    mcp_lend_watchdog_stop(&r->watchdog);
}

int mcp_server_run_stdio(mcp_server_t *srv, const mcp_stdio_options_t *opts)
{
    if (!srv)
        return MCP_EINVAL;
    int in_fd = opts && opts->in_fd > 0 ? opts->in_fd : 0;
    int out_fd = opts && opts->out_fd > 0 ? opts->out_fd : 1;
    size_t max_line = opts && opts->max_line ? opts->max_line : DEFAULT_MAX_LINE;
    int grace_ms = opts && opts->shutdown_grace_ms > 0 ? opts->shutdown_grace_ms
                                                       : DEFAULT_GRACE_MS;

    int stop_fd = stop_fd_of(srv);
    if (stop_fd < 0)
        return MCP_EIO;
    bool idle = false;
    if (!atomic_compare_exchange_strong(&srv->stdio_running, &idle, true))
        return MCP_ESTATE; /* already serving stdio */
    /* A stop that came after the last run ended is not for this one. */
    uint64_t stale;
    ssize_t drained = read(stop_fd, &stale, sizeof stale);
    (void)drained;
    int spin_us = srv->spin_us; /* mcp_server_options_t.spin_us, resolved */
    stdio_writer_t *w = writer_new(out_fd, spin_us, in_fd, stop_fd, grace_ms);
    mcp_conn_t *conn = mcp_conn_new(srv, MCP_TRANSPORT_STDIO);
    stdio_run_t *r = w && conn ? run_new(srv, conn, w, in_fd, stop_fd, max_line, spin_us) : NULL;
    bool stopped = false;
    int rc = MCP_OK;
    if (!r) {
        rc = MCP_ENOMEM;
        goto out;
    }
    mcp_conn_set_outbound(conn, outbound_new(w));
    if (!start_reader(r, reader_main, r)) {
        rc = MCP_ENOMEM;
        goto out;
    }
    run_wait(r);
    stopped = r->stopped;
    rc = r->rc;

    /* Listen streams end now: gracefully when the server stops (the client
     * still reads), silently at EOF (the client is gone). Other work in
     * flight may finish within the grace period, then is cancelled and the
     * handlers get a moment to notice. */
    conn_end_streams(conn, stopped);
    if (!writer_wait_idle(w, grace_ms)) {
        mcp_conn_cancel_all(conn);
        writer_wait_idle(w, CANCEL_WAIT_MS);
    }
out:
    if (w) {
        pthread_mutex_lock(&w->lock);
        w->open = false;
        if (w->broken && rc == MCP_OK)
            rc = MCP_EIO; /* answers were lost: the client stopped reading */
        pthread_mutex_unlock(&w->lock);
        /* A handler still answering (it ignored cancellation) must not
         * wait on a full pipe after the run: the application may close the
         * descriptors as soon as we return. */
        uint64_t one = 1;
        ssize_t k = write(w->abort_fd, &one, sizeof one);
        (void)k;
        writer_unref(w);
    }
    if (r)
        run_unref(r);
    mcp_conn_free(conn);
    atomic_store(&srv->stdio_running, false);
    return rc;
}

void mcp_server_stop_stdio(mcp_server_t *srv)
{
    if (!srv)
        return;
    int fd = atomic_load(&srv->stdio_stop_fd);
    if (fd >= 0 && atomic_load(&srv->stdio_running)) {
        uint64_t one = 1;
        ssize_t n = write(fd, &one, sizeof one); /* async-signal-safe */
        (void)n;
    }
}
