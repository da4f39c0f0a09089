/*
 * The stdio transport of the client (digest section 5): the server is a
 * child process speaking newline-delimited JSON-RPC on its stdin/stdout.
 *
 * Threads: one I/O thread per transport polls the server's stdout and
 * stderr (and a wake-up pipe). Each stdout line is routed by the message
 * channel (message_channel.h, which also keeps the exchanges) to the
 * exchange it belongs to; each stderr line goes to on_stderr. Writers
 * (start, cancel, notify) write whole lines under `write_lock`, with a
 * deadline (the call's, capped by write_timeout_ms), which bounds the
 * wait for the lock too, so a server that stops reading cannot hold a
 * call past its timeout; a line the deadline cut short is made invalid
 * before the next one goes out (write_line), so the server never runs
 * half a message nor glues the next one to it.
 *
 * When the server exits unexpectedly every exchange fails with MCP_ECLOSED;
 * with `restart` the I/O thread starts a new server (with backoff when it
 * keeps dying) and tells the core (on_restarted), which initializes it when
 * the session is legacy; modern listen streams, whose exchanges failed
 * with the rest, are re-opened by their supervisors.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/transport.h"
#include "mcp/jsonrpc.h"
#include "transport/child_process.h"
#include "protocol/id_scan.h"
#include "transport/message_channel.h"
#include "clock.h"

extern char **environ;

#define MAX_LINE MCP_DEFAULT_MAX_MESSAGE_BYTES
#define MAX_STDERR_LINE 8192
#define READ_CHUNK 65536
#define STOP_GRACE_MS 2000
#define DEFAULT_WRITE_TIMEOUT_MS 30000
/* Ends a line cut short by a write timeout: a control byte is invalid
 * anywhere in JSON text (inside a string, between tokens, after the
 * value), so the server rejects the line whatever part of it went out. */
static const char POISON[] = "\x01\n";
#define POISON_LEN (sizeof POISON - 1)
/* Restart policy: a server that dies within QUICK_DEATH_MS of starting is
 * restarted after a growing delay, and given up after MAX_QUICK_DEATHS. */
#define QUICK_DEATH_MS 1000
#define MAX_QUICK_DEATHS 5
#define RESTART_FIRST_DELAY_MS 100

typedef enum state { RUNNING, RESTARTING, CLOSING, CLOSED } state_t;

/* Bytes read from a pipe, not yet split into lines. */
typedef struct line_buffer {
    char *data;
    size_t len, cap;
    bool discarding;                /* inside a line that is dropped */
    /* stdout: a dropped line is scanned for the id it answers, so that its
     * call fails with lost_rc at once rather than wait for its timeout. */
    bool scanning;
    int lost_rc;
    mcp_id_scan_t scan;
} line_buffer_t;

typedef struct stdio_transport {
    client_transport_t base;        /* must stay first */
    char **argv;
    char **envp;
    char *cwd;
    mcp_stderr_fn on_stderr;
    void *stderr_user;
    bool restart;
    bool own_group;                 /* mcp_stdio_target_t.own_process_group */

    message_channel_t channel;      /* takes exchanges while state is RUNNING */
    /* Guards state, started_ms and the child but its in_fd. Taken before
     * the channel's lock and write_lock, never after them. */
    pthread_mutex_t lock;
    state_t state;
    child_process_t child;          /* in_fd: write_lock; a new child: both */
    int64_t started_ms;             /* when the current child started */

    pthread_mutex_t write_lock;     /* one line at a time; guards child.in_fd */
    int64_t write_timeout_ms;
    /* The bytes of POISON still owed to the current child's stdin after
     * a line was cut short (0: none). Guarded by write_lock. */
    size_t poison_left;
    /* Reading the server's stdout: the I/O thread, or a call waiting for
     * its answer (op_assist), one at a time. Guards `out` and `out_chunk`.
     * Taken before `lock`, never while holding it. */
    pthread_mutex_t read_lock;
    line_buffer_t out;              /* stdout bytes not yet a whole line */
    char *out_chunk;                /* READ_CHUNK bytes to read into */
    int wake[2];                    /* close() wakes the I/O thread */
    pthread_t io_thread;
    bool has_io_thread;
} stdio_transport_t;



/* ------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------ */

/* Writes all of buf to a non-blocking fd by `deadline` (mcp_clock_ms()),
 * adding what went out to *written, without letting a closed pipe kill
 * the process with SIGPIPE: the signal is blocked in this thread and a
 * pending one consumed (the library must not touch the application's
 * signal dispositions). */
static int write_all(int fd, const char *buf, size_t len, int64_t deadline, size_t *written)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    int rc = MCP_OK;
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            *written += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int64_t left = deadline - mcp_clock_ms();
            struct pollfd p = {fd, POLLOUT, 0};
            if (left <= 0) {
                rc = MCP_ETIMEDOUT;
                break;
            }
            poll(&p, 1, (int)(left > 1000 ? 1000 : left));
            continue;
        }
        rc = n < 0 && errno == EPIPE ? MCP_ECLOSED : MCP_EIO;
        if (n < 0 && errno == EPIPE && !sigismember(&old, SIGPIPE)) {
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe_set, NULL, &zero);
        }
        break;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/*
 * Writes one whole line to the child's stdin, under write_lock, by
 * `deadline`: first whatever a line cut short still owes (POISON), then
 * `line`. A line cut short now owes POISON in turn, so the stream stays
 * in step: the next message starts on a line of its own. *cut_at is how
 * much of `line` went out when it was cut short, else 0.
 */
static int write_line(stdio_transport_t *t, const char *line, size_t len, int64_t deadline,
                      size_t *cut_at)
{
    *cut_at = 0;
    int fd = t->child.in_fd;
    if (t->poison_left > 0) {
        size_t sent = 0;
        int rc = write_all(fd, POISON + (POISON_LEN - t->poison_left), t->poison_left, deadline,
                           &sent);
        t->poison_left -= sent;
        if (rc != MCP_OK)
            return rc; /* nothing of `line` went out */
    }
    size_t sent = 0;
    int rc = write_all(fd, line, len, deadline, &sent);
    if (rc == MCP_ETIMEDOUT && sent > 0) {
        t->poison_left = POISON_LEN;
        *cut_at = sent;
    }
    return rc;
}

/* Takes `lock` by `deadline` (mcp_clock_ms()); false when it passed.
 * pthread_mutex_timedlock() counts on the wall clock, so the time left
 * is moved onto it: a wall clock stepped meanwhile only stretches or
 * shortens this one wait. (pthread_mutex_clocklock() would count on the
 * monotonic clock, but ThreadSanitizer does not see it take the lock.) */
static bool lock_by(pthread_mutex_t *lock, int64_t deadline)
{
    if (pthread_mutex_trylock(lock) == 0)
        return true;
    int64_t left = deadline - mcp_clock_ms();
    if (left <= 0)
        return false;
    struct timespec until = mcp_clock_wall_deadline(left);
    return pthread_mutex_timedlock(lock, &until) == 0;
}

/* Sends `msg` as one line by `deadline_ms` (mcp_clock_ms(); 0: none),
 * and within write_timeout_ms in any case. The wait for another writer's
 * line counts against the same deadline: a call that times out waiting
 * for its turn has written nothing. */
static int write_message(void *transport, const json_t *msg, int64_t deadline_ms)
{
    stdio_transport_t *t = transport;
    int64_t started = mcp_clock_ms();
    int64_t deadline = started + t->write_timeout_ms;
    if (deadline_ms > 0 && deadline_ms < deadline)
        deadline = deadline_ms;
    size_t len = 0;
    char *line = mcp_json_dump(msg, &len);
    if (!line)
        return MCP_ENOMEM;
    client_trace_text(&t->base, MCP_TRACE_SENT, line, len);
    line[len] = '\n'; /* replaces the NUL: the dump is written with its newline */
    size_t cut_at = 0;
    if (!lock_by(&t->write_lock, deadline)) {
        free(line);
        client_transport_log(&t->base, MCP_LOG_WARNING,
                             "a message waited %lld ms for the server to read the one before "
                             "it; not sent",
                             (long long)(mcp_clock_ms() - started));
        return MCP_ETIMEDOUT;
    }
    int rc = t->child.in_fd >= 0 ? write_line(t, line, len + 1, deadline, &cut_at)
                                 : MCP_ECLOSED;
    pthread_mutex_unlock(&t->write_lock);
    free(line);
    if (cut_at > 0)
        client_transport_log(&t->base, MCP_LOG_WARNING,
                             "the server took %zu bytes of a %zu-byte message in %lld ms; "
                             "the rest is dropped and the line marked invalid",
                             cut_at, len + 1, (long long)(mcp_clock_ms() - started));
    return rc;
}

/* ------------------------------------------------------------------------
 * The operations
 * ------------------------------------------------------------------------ */

/* Waits until every thread that might be reading the old stdout is done
 * (state no longer RUNNING, `lock` not held): see op_assist. */
static void readers_gone(stdio_transport_t *t)
{
    pthread_mutex_lock(&t->read_lock);
    pthread_mutex_unlock(&t->read_lock);
}

static int op_start(client_transport_t *base, const json_t *request,
                    const client_http_hints_t *hints, const client_exchange_events_t *ev,
                    void *user, client_exchange_t **out)
{
    return message_channel_start(&((stdio_transport_t *)base)->channel, request,
                                 hints ? hints->deadline_ms : 0, ev, user, out);
}

static void op_cancel(client_transport_t *base, client_exchange_t *ex, bool notify_peer)
{
    message_channel_cancel(&((stdio_transport_t *)base)->channel, ex, notify_peer);
}

static void op_release(client_transport_t *base, client_exchange_t *ex)
{
    message_channel_release(&((stdio_transport_t *)base)->channel, ex);
}

static int op_notify(client_transport_t *base, const json_t *notification,
                     const client_http_hints_t *hints)
{
    stdio_transport_t *t = (stdio_transport_t *)base;
    pthread_mutex_lock(&t->lock);
    bool running = t->state == RUNNING;
    pthread_mutex_unlock(&t->lock);
    return running ? write_message(t, notification, 0) : MCP_ECLOSED;
}

static void wake_io_thread(stdio_transport_t *t)
{
    char b = 1;
    ssize_t n;
    do
        n = write(t->wake[1], &b, 1);
    while (n < 0 && errno == EINTR);
}

static void op_close(client_transport_t *base)
{
    stdio_transport_t *t = (stdio_transport_t *)base;
    pthread_mutex_lock(&t->lock);
    state_t was = t->state;
    if (was == CLOSING) {
        pthread_mutex_unlock(&t->lock);
        return;
    }
    t->state = CLOSING;
    pid_t pid = t->child.pid;
    stdio_router_t pending;
    message_channel_shut(&t->channel, &pending);
    pthread_mutex_unlock(&t->lock);

    message_channel_fail(&t->channel, &pending, MCP_ECLOSED, "the connection was closed");
    /* While RESTARTING the I/O thread owns the child; it sees CLOSING and
     * stops whatever it started. Otherwise the child is ours to stop (the
     * I/O thread meanwhile drains its output until EOF). */
    if (was == RUNNING) {
        pthread_mutex_lock(&t->write_lock);
        int in_fd = t->child.in_fd;
        t->child.in_fd = -1;
        pthread_mutex_unlock(&t->write_lock);
        /* Its stdout and stderr are the I/O thread's until it exits. */
        child_process_t stopping = {pid, in_fd, -1, -1, t->own_group};
        child_stop(&stopping, STOP_GRACE_MS);
        pthread_mutex_lock(&t->lock);
        t->child.pid = 0;
        pthread_mutex_unlock(&t->lock);
    }
    wake_io_thread(t);
    if (t->has_io_thread)
        pthread_join(t->io_thread, NULL);
    t->has_io_thread = false;
    /* The process is stopped by now; this closes what the I/O thread read
     * from (calls waiting actively stopped reading it when the state left
     * RUNNING). A writer racing with close() may still look at in_fd. */
    readers_gone(t);
    pthread_mutex_lock(&t->write_lock);
    child_stop(&t->child, STOP_GRACE_MS);
    pthread_mutex_unlock(&t->write_lock);
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static void op_free(client_transport_t *base)
{
    stdio_transport_t *t = (stdio_transport_t *)base;
    if (!t)
        return;
    message_channel_destroy(&t->channel);
    free_strv(t->argv);
    free_strv(t->envp);
    free(t->cwd);
    if (t->wake[0] >= 0)
        close(t->wake[0]);
    if (t->wake[1] >= 0)
        close(t->wake[1]);
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->write_lock);
    pthread_mutex_destroy(&t->read_lock);
    free(t->out.data);
    free(t->out_chunk);
    free(t);
}

static ssize_t read_stdout_once(stdio_transport_t *t, int fd);

/*
 * A call waiting actively for its answer reads the server's stdout itself
 * while no other thread does: its answer then needs no hand-off from the
 * I/O thread, whose wake-up costs tens of microseconds on a VM. The state
 * is checked with read_lock held, so server_ended() and close(), which
 * take read_lock once after leaving RUNNING, never close the descriptor
 * under a read. The end of the stream is left to the I/O thread.
 */
static void op_assist(client_transport_t *base)
{
    stdio_transport_t *t = (stdio_transport_t *)base;
    if (pthread_mutex_trylock(&t->read_lock) != 0)
        return; /* the I/O thread (or another call) is reading */
    pthread_mutex_lock(&t->lock);
    int fd = t->state == RUNNING ? t->child.out_fd : -1;
    pthread_mutex_unlock(&t->lock);
    if (fd >= 0)
        (void)read_stdout_once(t, fd);
    pthread_mutex_unlock(&t->read_lock);
}

static const client_transport_ops_t stdio_ops = {
    .start = op_start,
    .cancel = op_cancel,
    .release = op_release,
    .notify = op_notify,
    .close = op_close,
    .free = op_free,
    .assist = op_assist,
};

/* ------------------------------------------------------------------------
 * The I/O thread
 * ------------------------------------------------------------------------ */

static void handle_line(stdio_transport_t *t, const char *line, size_t len)
{
    if (len == 0)
        return;
    mcp_error_t why = {0};
    if (!message_channel_receive(&t->channel, line, len, &why))
        client_transport_log(&t->base, MCP_LOG_DEBUG, "dropped a line from the server: %s",
                             why.message);
    mcp_error_clear(&why);
}

static void handle_stderr_line(stdio_transport_t *t, const char *line, size_t len)
{
    (void)len;
    if (t->on_stderr)
        t->on_stderr(t->stderr_user, line);
}

/* Makes room for `need` bytes; false on allocation failure. */
static bool reserve(line_buffer_t *b, size_t need)
{
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown)
        return false;
    b->data = grown;
    b->cap = cap;
    return true;
}

/* From here the current line is dropped (rc says why). A line of
 * messages (`scan`) still goes through the id scan: the bytes kept so far
 * and `rest`, the bytes of this read that belong to it. */
static void begin_discard(line_buffer_t *b, bool scan, int rc, const char *rest, size_t len)
{
    b->discarding = true;
    b->scanning = scan;
    b->lost_rc = rc;
    if (!scan)
        return;
    mcp_id_scan_init(&b->scan);
    mcp_id_scan_feed(&b->scan, b->data, b->len);
    mcp_id_scan_feed(&b->scan, rest, len);
}

/* A dropped line of messages ended: if it was the answer to a call in
 * flight, that call fails now. */
static void lost_line(stdio_transport_t *t, line_buffer_t *b, size_t max)
{
    json_t *id = mcp_id_scan_response_id(&b->scan);
    if (!id)
        return;
    char why[128];
    if (b->lost_rc == MCP_ELIMIT)
        snprintf(why, sizeof why, "the server's answer exceeds %zu bytes", max);
    else
        snprintf(why, sizeof why, "out of memory reading the server's answer");
    message_channel_lost(&t->channel, id, b->lost_rc, why);
    json_decref(id);
}

/*
 * Appends bytes to `b` and hands every complete line (NUL-terminated, a
 * trailing CR stripped) to `fn`. A line longer than `max` is either dropped
 * whole (`drop_long`: half a JSON-RPC message is no message; the call it
 * answers fails, see lost_line) or delivered in pieces (stderr text).
 */
static void feed(stdio_transport_t *t, line_buffer_t *b, const char *data, size_t n, size_t max,
                 bool drop_long, void (*fn)(stdio_transport_t *, const char *, size_t))
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        size_t room = max - b->len;
        size_t copy = take < room ? take : room;
        bool scanned = false; /* this read's part of the line went through the scan */
        if (!b->discarding && copy > 0) {
            if (reserve(b, b->len + copy + 1)) {
                memcpy(b->data + b->len, data, copy);
                b->len += copy;
            } else {
                client_transport_log(&t->base, MCP_LOG_ERROR,
                                     "out of memory reading from the server; line dropped");
                begin_discard(b, drop_long, MCP_ENOMEM, data, take);
                scanned = true;
            }
        }
        if (b->discarding && b->scanning && !scanned) {
            mcp_id_scan_feed(&b->scan, data, take);
        } else if (take > room && !b->discarding) {
            if (drop_long) {
                client_transport_log(&t->base, MCP_LOG_WARNING,
                                     "the server wrote a line over %zu bytes; dropped", max);
                begin_discard(b, true, MCP_ELIMIT, data + copy, take - copy);
            } else {
                b->data[b->len] = '\0';
                fn(t, b->data, b->len);
                b->len = 0;
                data += copy;
                n -= copy;
                continue;
            }
        }
        if (!nl)
            return;
        if (!b->discarding && reserve(b, b->len + 1)) {
            size_t len = b->len;
            if (len > 0 && b->data[len - 1] == '\r')
                len--;
            b->data[len] = '\0';
            fn(t, b->data, len);
        }
        if (b->discarding && b->scanning)
            lost_line(t, b, max);
        b->len = 0;
        b->discarding = b->scanning = false;
        data = nl + 1;
        n -= take + 1;
    }
}

/* Sleeps up to ms, or until close() wakes us. Returns false when closing. */
static bool nap(stdio_transport_t *t, int ms)
{
    struct pollfd p = {t->wake[0], POLLIN, 0};
    poll(&p, 1, ms);
    pthread_mutex_lock(&t->lock);
    bool closing = t->state == CLOSING;
    pthread_mutex_unlock(&t->lock);
    return !closing;
}

/*
 * The server's stdout ended. Returns true when a new server is running (the
 * I/O thread goes on), false when the thread should exit.
 */
static bool server_ended(stdio_transport_t *t, int *quick_deaths)
{
    pthread_mutex_lock(&t->lock);
    if (t->state != RUNNING) {
        pthread_mutex_unlock(&t->lock); /* close() is stopping it */
        return false;
    }
    t->state = RESTARTING;
    stdio_router_t pending;
    message_channel_shut(&t->channel, &pending);
    bool quick = mcp_clock_ms() - t->started_ms < QUICK_DEATH_MS;
    pthread_mutex_unlock(&t->lock);
    readers_gone(t); /* no call reads the old stdout from here on */

    pthread_mutex_lock(&t->write_lock);
    child_process_t old = t->child;
    t->child.in_fd = -1;
    pthread_mutex_unlock(&t->write_lock);
    int status = child_stop(&old, STOP_GRACE_MS);
    pthread_mutex_lock(&t->lock);
    t->child.pid = 0;
    t->child.out_fd = t->child.err_fd = -1; /* in_fd is -1 already */
    pthread_mutex_unlock(&t->lock);

    char what[64], why[MCP_ERROR_MESSAGE_MAX + 64];
    child_describe_status(status, what, sizeof what);
    snprintf(why, sizeof why, "the server %s", what);
    client_transport_log(&t->base, MCP_LOG_WARNING, "%s", why);
    message_channel_fail(&t->channel, &pending, MCP_ECLOSED, why);

    *quick_deaths = quick ? *quick_deaths + 1 : 0;
    bool again = t->restart && *quick_deaths <= MAX_QUICK_DEATHS;
    if (again && *quick_deaths > 0)
        again = nap(t, RESTART_FIRST_DELAY_MS << (*quick_deaths - 1));
    child_process_t fresh = {0, -1, -1, -1, false};
    mcp_error_t err = {0};
    if (again && child_spawn(&fresh, (const char *const *)t->argv, t->envp, t->cwd,
                             t->own_group, &err) != MCP_OK) {
        client_transport_log(&t->base, MCP_LOG_ERROR, "cannot restart the server: %s", err.message);
        snprintf(why, sizeof why, "the server could not be restarted: %s", err.message);
        again = false;
    }
    mcp_error_clear(&err);

    pthread_mutex_lock(&t->lock);
    if (t->state == CLOSING) {
        pthread_mutex_unlock(&t->lock);
        child_stop(&fresh, STOP_GRACE_MS);
        return false;
    }
    if (again) {
        pthread_mutex_lock(&t->write_lock);
        t->child = fresh;
        t->poison_left = 0; /* a new stdin: nothing cut short on it */
        pthread_mutex_unlock(&t->write_lock);
        t->started_ms = mcp_clock_ms();
        t->state = RUNNING;
        message_channel_reopen(&t->channel);
    } else {
        t->state = CLOSED;
    }
    pthread_mutex_unlock(&t->lock);
    if (again) {
        client_transport_log(&t->base, MCP_LOG_INFO, "restarted the server");
        if (t->base.hooks.on_restarted)
            t->base.hooks.on_restarted(t->base.hooks.user);
        return true;
    }
    if (t->base.hooks.on_closed)
        t->base.hooks.on_closed(t->base.hooks.user, MCP_ECLOSED, why);
    return false;
}

/* Reads what the server's stderr still holds, without waiting: its last
 * words (why it exited) are often there when the connection ends. */
static void drain_stderr(stdio_transport_t *t, line_buffer_t *err, char *chunk)
{
    pthread_mutex_lock(&t->lock);
    int err_fd = t->child.err_fd;
    pthread_mutex_unlock(&t->lock);
    struct pollfd p = {err_fd, POLLIN, 0};
    while (err_fd >= 0 && poll(&p, 1, 0) > 0) {
        ssize_t n = read(err_fd, chunk, READ_CHUNK);
        if (n <= 0)
            break;
        feed(t, err, chunk, (size_t)n, MAX_STDERR_LINE, false, handle_stderr_line);
    }
    if (err->len > 0) { /* a last line without its newline */
        err->data[err->len] = '\0';
        handle_stderr_line(t, err->data, err->len);
        err->len = 0;
    }
}

/* One non-blocking read of stdout, its lines routed (read_lock held).
 * Returns what read() returned: 0 at the end, -1 with EAGAIN when another
 * thread took what was there. */
static ssize_t read_stdout_once(stdio_transport_t *t, int fd)
{
    ssize_t n = read(fd, t->out_chunk, READ_CHUNK);
    if (n > 0)
        feed(t, &t->out, t->out_chunk, (size_t)n, MAX_LINE, true, handle_line);
    return n;
}

static void *io_main(void *arg)
{
    stdio_transport_t *t = arg;
    line_buffer_t err = {0};
    char *chunk = malloc(READ_CHUNK);
    int quick_deaths = 0;
    if (!chunk) {
        client_transport_log(&t->base, MCP_LOG_ERROR, "out of memory starting the stdio reader");
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&t->lock);
        int out_fd = t->child.out_fd, err_fd = t->child.err_fd;
        state_t state = t->state;
        pthread_mutex_unlock(&t->lock);
        if (state == CLOSING && out_fd < 0)
            break;
        struct pollfd p[3] = {{t->wake[0], POLLIN, 0}, {out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
        if (poll(p, 3, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents) {
            drain_stderr(t, &err, chunk); /* close() stopped the server */
            break;
        }
        if (p[2].revents) {
            ssize_t n = read(err_fd, chunk, READ_CHUNK);
            if (n > 0) {
                feed(t, &err, chunk, (size_t)n, MAX_STDERR_LINE, false, handle_stderr_line);
            } else if (n == 0 || errno != EINTR) {
                pthread_mutex_lock(&t->lock);
                t->child.err_fd = -1; /* stop polling it; closed when the child is stopped */
                pthread_mutex_unlock(&t->lock);
                close(err_fd);
                err.len = 0;
            }
        }
        if (p[1].revents) {
            pthread_mutex_lock(&t->read_lock);
            ssize_t n = read_stdout_once(t, out_fd);
            bool ended = n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
            if (ended) {
                t->out.len = 0;
                t->out.discarding = t->out.scanning = false;
            }
            pthread_mutex_unlock(&t->read_lock);
            if (ended) {
                drain_stderr(t, &err, chunk);
                if (!server_ended(t, &quick_deaths))
                    break;
            }
        }
    }
    free(chunk);
    free(err.data);
    return NULL;
}

/* ------------------------------------------------------------------------
 * Creating the transport
 * ------------------------------------------------------------------------ */

static char **copy_strv(const char *const *v, size_t extra)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    char **copy = calloc(n + extra + 1, sizeof *copy);
    for (size_t i = 0; copy && i < n; i++)
        if (!(copy[i] = strdup(v[i]))) {
            free_strv(copy);
            return NULL;
        }
    return copy;
}

/* The client's environment with the target's entries added (an entry for a
 * name the environment already has replaces it). */
static char **merge_env(const char *const *extra)
{
    size_t n_extra = 0;
    while (extra && extra[n_extra])
        n_extra++;
    char **env = copy_strv((const char *const *)environ, n_extra);
    if (!env)
        return NULL;
    size_t n = 0;
    while (env[n])
        n++;
    for (size_t i = 0; i < n_extra; i++) {
        const char *eq = strchr(extra[i], '=');
        size_t name_len = eq ? (size_t)(eq - extra[i]) : strlen(extra[i]);
        size_t j = 0;
        while (j < n && !(strncmp(env[j], extra[i], name_len) == 0 && env[j][name_len] == '='))
            j++;
        char *entry = strdup(extra[i]);
        if (!entry) {
            free_strv(env);
            return NULL;
        }
        if (j < n) {
            free(env[j]);
        } else {
            n++;
        }
        env[j] = entry;
    }
    return env;
}

int client_stdio_new(const mcp_stdio_target_t *target, const client_transport_hooks_t *hooks,
                     client_transport_t **out, mcp_error_t *err)
{
    *out = NULL;
    if (!target || !target->argv || !target->argv[0])
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the stdio target needs argv[0]");
    if (target->write_timeout_ms < 0)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "write_timeout_ms must not be negative");
    stdio_transport_t *t = calloc(1, sizeof *t);
    if (!t)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    t->base.ops = &stdio_ops;
    if (hooks)
        t->base.hooks = *hooks; /* before the I/O thread, which reads them, starts */
    t->wake[0] = t->wake[1] = -1;
    t->child = (child_process_t){0, -1, -1, -1, false};
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->write_lock, NULL);
    pthread_mutex_init(&t->read_lock, NULL);
    t->out_chunk = malloc(READ_CHUNK);
    message_channel_init(&t->channel, &t->base, write_message, t);
    t->on_stderr = target->on_stderr;
    t->stderr_user = target->stderr_user;
    t->restart = target->restart;
    t->write_timeout_ms =
        target->write_timeout_ms > 0 ? target->write_timeout_ms : DEFAULT_WRITE_TIMEOUT_MS;
    t->argv = copy_strv(target->argv, 0);
    t->envp = merge_env(target->env);
    t->cwd = target->cwd ? strdup(target->cwd) : NULL;
    if (!t->argv || !t->envp || (target->cwd && !t->cwd) || !t->out_chunk ||
        pipe2(t->wake, O_CLOEXEC) != 0) {
        op_free(&t->base);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    t->own_group = target->own_process_group;
    int rc = child_spawn(&t->child, (const char *const *)t->argv, t->envp, t->cwd, t->own_group,
                         err);
    if (rc != MCP_OK) {
        op_free(&t->base);
        return rc;
    }
    t->started_ms = mcp_clock_ms();
    t->state = RUNNING;
    if (pthread_create(&t->io_thread, NULL, io_main, t) != 0) {
        child_stop(&t->child, STOP_GRACE_MS);
        op_free(&t->base);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "cannot start the stdio reader thread");
    }
    t->has_io_thread = true;
    *out = &t->base;
    return MCP_OK;
}
