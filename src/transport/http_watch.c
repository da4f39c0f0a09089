/*
 * The hang-up watcher: an epoll set of parked sockets, each registered for
 * EPOLLRDHUP (the peer closed or shut down its side) as a one-shot event.
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

#include "transport/http_endpoint.h"
#include "transport/http_watch.h"

#define STOP_ID 0 /* the event id of the stop eventfd */
#define MAX_EVENTS 32

typedef struct registration {
    uint64_t id;
    int fd;
    void *user;
    struct registration *next;
} registration_t;

struct http_watch {
    http_watch_hooks_t hooks;
    int epfd;
    int stop_fd;
    pthread_t thread;
    pthread_mutex_t lock; /* guards `regs` and `next_id` */
    registration_t *regs;
    uint64_t next_id;
};

/* Unlinks the registration `id` (and its epoll entry); NULL when absent.
 * Lock held. */
static registration_t *take_locked(http_watch_t *w, uint64_t id)
{
    for (registration_t **p = &w->regs; *p; p = &(*p)->next) {
        if ((*p)->id == id) {
            registration_t *r = *p;
            *p = r->next;
            epoll_ctl(w->epfd, EPOLL_CTL_DEL, r->fd, NULL);
            return r;
        }
    }
    return NULL;
}

static void *watch_main(void *arg)
{
    http_watch_t *w = arg;
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(w->epfd, events, MAX_EVENTS, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return NULL;
        for (int i = 0; i < n; i++) {
            if (events[i].data.u64 == STOP_ID)
                return NULL;
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
    w->next_id = STOP_ID + 1;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event stop = {.events = EPOLLIN, .data.u64 = STOP_ID};
    if (w->epfd < 0 || w->stop_fd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->stop_fd, &stop) < 0)
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
    free(w);
}

uint64_t http_watch_add(http_watch_t *w, int fd, void *user)
{
    registration_t *r = malloc(sizeof *r);
    if (!r)
        return 0;
    r->fd = fd;
    r->user = user;
    pthread_mutex_lock(&w->lock);
    uint64_t id = r->id = w->next_id++;
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT, .data.u64 = r->id};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        pthread_mutex_unlock(&w->lock);
        free(r);
        return 0;
    }
    w->hooks.ref(user);
    r->next = w->regs;
    w->regs = r;
    pthread_mutex_unlock(&w->lock);
    return id; /* not r->id: the registration may have fired and gone already */
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
