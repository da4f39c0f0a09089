/*
 * The hang-up watcher: an epoll set of parked sockets, each registered for
 * EPOLLRDHUP (the peer closed or shut down its side) as a one-shot event.
 *
 * Most connections are parked for a few dozen microseconds, while a quick
 * handler runs on a worker; adding each to the epoll set and taking it out
 * again cost two system calls per request (about 8% of the throughput of
 * a trivial tool). So a registration is armed -- added to the set -- only
 * once it has waited ARM_DELAY_MS; one removed before that never reaches
 * the kernel. The thread arms what is due each time it wakes, and wakes
 * at the earliest due time while registrations wait; with none waiting it
 * sleeps until the next add kicks it. A peer that hung up before its
 * socket was armed is reported as soon as it is: epoll reports a condition
 * that holds when the socket is added.
 *
 * Events carry a registration id, not a pointer: an event may be read just
 * as its registration is removed on another thread, and the id is looked
 * up under the lock, so a stale event finds nothing instead of freed
 * memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "transport/http_endpoint.h"
#include "transport/http_watch.h"

/* How long a registration waits before its socket joins the epoll set. */
#define ARM_DELAY_MS 10

#define STOP_ID 0 /* the event id of the stop eventfd */
#define KICK_ID 1 /* the event id of the kick eventfd */
#define MAX_EVENTS 32

typedef struct registration {
    uint64_t id;
    int fd;
    void *user;
    bool armed;     /* in the epoll set */
    int64_t due_ms; /* when to arm it (mcp_clock_ms) */
    struct registration *next;
} registration_t;

struct http_watch {
    http_watch_hooks_t hooks;
    int epfd;
    int stop_fd;
    int kick_fd;
    pthread_t thread;
    pthread_mutex_t lock; /* guards everything below */
    registration_t *regs;
    uint64_t next_id;
    bool sleeping; /* the thread waits without a timeout: an add must kick it */
};

/* Unlinks the registration `id` (and its epoll entry); NULL when absent.
 * Lock held. */
static registration_t *take_locked(http_watch_t *w, uint64_t id)
{
    for (registration_t **p = &w->regs; *p; p = &(*p)->next) {
        if ((*p)->id == id) {
            registration_t *r = *p;
            *p = r->next;
            if (r->armed)
                epoll_ctl(w->epfd, EPOLL_CTL_DEL, r->fd, NULL);
            return r;
        }
    }
    return NULL;
}

/* Arms the registrations that are due. Returns how long the thread may
 * sleep before the next one is (milliseconds; -1: none waits, so until an
 * add kicks it). Lock held. */
static int arm_due_locked(http_watch_t *w)
{
    int64_t now = mcp_clock_ms();
    int64_t next = -1;
    for (registration_t **p = &w->regs; *p;) {
        registration_t *r = *p;
        if (r->armed) {
            p = &r->next;
            continue;
        }
        if (r->due_ms > now) {
            if (next < 0 || r->due_ms - now < next)
                next = r->due_ms - now;
            p = &r->next;
            continue;
        }
        struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT, .data.u64 = r->id};
        if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, r->fd, &ev) == 0) {
            r->armed = true;
            p = &r->next;
        } else {
            /* Not a socket that can be watched: the registration simply
             * never fires, as an add that fails would have said. */
            *p = r->next;
            w->hooks.unref(r->user);
            free(r);
        }
    }
    w->sleeping = next < 0;
    return (int)next;
}

static void *watch_main(void *arg)
{
    http_watch_t *w = arg;
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        pthread_mutex_lock(&w->lock);
        int timeout_ms = arm_due_locked(w);
        pthread_mutex_unlock(&w->lock);
        int n = epoll_wait(w->epfd, events, MAX_EVENTS, timeout_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return NULL;
        for (int i = 0; i < n; i++) {
            if (events[i].data.u64 == STOP_ID)
                return NULL;
            if (events[i].data.u64 == KICK_ID) {
                uint64_t kicks;
                ssize_t got = read(w->kick_fd, &kicks, sizeof kicks);
                (void)got; /* nonblocking: nothing to read is fine too */
                continue;
            }
            pthread_mutex_lock(&w->lock);
            registration_t *r = take_locked(w, events[i].data.u64);
            pthread_mutex_unlock(&w->lock);
            if (!r)
                continue; /* removed meanwhile */
            w->hooks.hangup(r->user);
            w->hooks.unref(r->user);
            free(r);
        }
    }
}

http_watch_t *http_watch_new(const http_watch_hooks_t *hooks)
{
    http_watch_t *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->hooks = *hooks;
    w->next_id = KICK_ID + 1;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    w->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event stop = {.events = EPOLLIN, .data.u64 = STOP_ID};
    struct epoll_event kick = {.events = EPOLLIN, .data.u64 = KICK_ID};
    if (w->epfd < 0 || w->stop_fd < 0 || w->kick_fd < 0 ||
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->stop_fd, &stop) < 0 ||
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->kick_fd, &kick) < 0)
        goto fail;
    pthread_mutex_init(&w->lock, NULL);
    sigset_t saved;
    http_signals_block(&saved);
    int rc = pthread_create(&w->thread, NULL, watch_main, w);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&w->lock);
        goto fail;
    }
    return w;
fail:
    if (w->epfd >= 0)
        close(w->epfd);
    if (w->stop_fd >= 0)
        close(w->stop_fd);
    if (w->kick_fd >= 0)
        close(w->kick_fd);
    free(w);
    return NULL;
}

void http_watch_free(http_watch_t *w)
{
    if (!w)
        return;
    uint64_t one = 1;
    ssize_t written = write(w->stop_fd, &one, sizeof one);
    (void)written; /* an eventfd write of 8 bytes cannot fail short of overflow */
    pthread_join(w->thread, NULL);
    while (w->regs) {
        registration_t *r = w->regs;
        w->regs = r->next;
        w->hooks.unref(r->user);
        free(r);
    }
    pthread_mutex_destroy(&w->lock);
    close(w->epfd);
    close(w->stop_fd);
    close(w->kick_fd);
    free(w);
}

uint64_t http_watch_add(http_watch_t *w, int fd, void *user)
{
    registration_t *r = malloc(sizeof *r);
    if (!r)
        return 0;
    r->fd = fd;
    r->user = user;
    r->armed = false;
    r->due_ms = mcp_clock_ms() + ARM_DELAY_MS;
    pthread_mutex_lock(&w->lock);
    uint64_t id = r->id = w->next_id++;
    w->hooks.ref(user);
    r->next = w->regs;
    w->regs = r;
    bool kick = w->sleeping;
    w->sleeping = false;
    pthread_mutex_unlock(&w->lock);
    if (kick) {
        uint64_t one = 1;
        ssize_t written = write(w->kick_fd, &one, sizeof one);
        (void)written; /* the counter of an eventfd does not overflow from this */
    }
    return id; /* the registration may have fired and gone already */
}

void http_watch_remove(http_watch_t *w, uint64_t id)
{
    if (id == 0)
        return;
    pthread_mutex_lock(&w->lock);
    registration_t *r = take_locked(w, id);
    pthread_mutex_unlock(&w->lock);
    if (r) {
        w->hooks.unref(r->user);
        free(r);
    }
}
