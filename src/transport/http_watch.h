/*
 * Hang-up detection for parked connections (internal).
 *
 * libmicrohttpd does not look at a suspended connection, so a client that
 * closes it while its request waits for a handler would go unnoticed until
 * the next write (deps.md section 2.3: seconds later, or never for a
 * silent handler). The watcher is one thread with its own epoll set: a
 * connection parked for more than a few milliseconds has its socket added
 * with EPOLLRDHUP, and when the peer hangs up the owner hears of it within
 * about ten milliseconds of the park, or at once after that.
 *
 * A registration fires at most once: the hook receives the watched object
 * with the reference the registration held, then that reference is
 * dropped. Thread-safe.
 */
#ifndef MCP_TRANSPORT_HTTP_WATCH_H
#define MCP_TRANSPORT_HTTP_WATCH_H

#include <stdint.h>

typedef struct http_watch http_watch_t;

typedef struct http_watch_hooks {
    /* The peer of a watched socket hung up. Runs on the watcher thread. */
    void (*hangup)(void *user);
    /* Keep the watched object alive while it is registered. */
    void (*ref)(void *user);
    void (*unref)(void *user);
} http_watch_hooks_t;

/* Starts a watcher; NULL when its thread, epoll set or eventfd cannot be
 * created. `hooks` is copied. */
http_watch_t *http_watch_new(const http_watch_hooks_t *hooks);

/* Stops the thread, drops every registration (unref), frees. NULL-safe. */
void http_watch_free(http_watch_t *w);

/* Watches `fd` for a hang-up on behalf of `user` (referenced), starting a
 * few milliseconds from now. Returns the registration's id, never 0; 0
 * when out of memory. A socket the kernel refuses to watch is dropped
 * (unref) when its turn comes, and never fires. */
uint64_t http_watch_add(http_watch_t *w, int fd, void *user);

/* Ends a registration (unref) unless it fired already; an id of 0 is
 * ignored. Safe from any thread, the hangup hook included. */
void http_watch_remove(http_watch_t *w, uint64_t id);

#endif /* MCP_TRANSPORT_HTTP_WATCH_H */
