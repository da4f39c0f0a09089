/*
 * bench_mhd_fixed: the ceiling of the HTTP stack on this machine. A bare
 * libmicrohttpd program configured like libmcp's server (epoll, a pool of
 * event threads, loopback) that reads each POST body whole and answers a
 * fixed JSON body of the size of libmcp's echo answer. No MCP at all: what
 * libmcp adds over this is the cost of being an MCP server.
 *
 *   bench_mhd_fixed [PORT] [--threads T] [--spread]
 *
 * By default the event threads share the listening socket, as
 * libmicrohttpd's thread pool does, and whichever thread wins the race for
 * a connection keeps it: a burst of 16 connections may all land on one
 * thread or be split between them, run by run. --spread places them as
 * libmcp's server does instead: the program accepts them itself and hands
 * them to the threads in turn (one libmicrohttpd daemon per thread, fed
 * with MHD_add_connection), so every run has the same layout.
 *
 * Prints its URL as the first line of stdout; serves until SIGINT/SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

/* What libmcp answers to the benchmark's echo call, byte for byte in size. */
static const char BODY[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
    "\"hello\"}],\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/"
    "serverInfo\":{\"name\":\"libmcp-bench\",\"version\":\"0.1.0\"}}}}";

static struct MHD_Response *fixed;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    static int marker;
    if (!*req_cls) { /* headers only: read the body first */
        *req_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size > 0) { /* a body chunk: consumed */
        *upload_data_size = 0;
        return MHD_YES;
    }
    return MHD_queue_response(conn, MHD_HTTP_OK, fixed);
}

/* --spread: one daemon per event thread, no listening socket of its own. */
#define MAX_THREADS 64
static struct MHD_Daemon *spread_daemons[MAX_THREADS];
static unsigned spread_count;
static int spread_listener = -1;
static atomic_bool spread_stopping; /* set before the listener is shut down */

static struct MHD_Daemon *start_daemon(unsigned threads, const struct sockaddr_in *addr)
{
    if (!addr) /* fed by the accepting thread */
        return MHD_start_daemon(
            MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
            0, NULL, NULL, on_request, NULL,
            MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
            MHD_OPTION_END);
    return MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, on_request, NULL,
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
        MHD_OPTION_END);
}

/* Accepts connections and hands them to the daemons in turn, as libmcp's
 * engine hands them to its event threads. */
static void *accept_in_turn(void *arg)
{
    (void)arg;
    for (unsigned next = 0; !atomic_load(&spread_stopping); next = (next + 1) % spread_count) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof peer;
        int fd = accept(spread_listener, (struct sockaddr *)&peer, &len);
        if (fd < 0)
            continue; /* a connection that failed first, or the end (shutdown below) */
        /* The daemon owns fd from here, and closes it if it cannot take it. */
        (void)MHD_add_connection(spread_daemons[next], fd, (struct sockaddr *)&peer, len);
    }
    return NULL;
}

/* The listening socket of --spread, bound like the daemon's would be. */
static int open_listener(const struct sockaddr_in *addr, unsigned *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in bound;
    socklen_t len = sizeof bound;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (const struct sockaddr *)addr, sizeof *addr) != 0 || listen(fd, SOMAXCONN) != 0 ||
        getsockname(fd, (struct sockaddr *)&bound, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(bound.sin_port);
    return fd;
}

int main(int argc, char **argv)
{
    unsigned port = 0, threads = 2;
    bool spread = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (unsigned)atoi(argv[++i]);
        else if (strcmp(argv[i], "--spread") == 0)
            spread = true;
        else
            port = (unsigned)atoi(argv[i]);
    }
    if (threads == 0 || threads > MAX_THREADS) {
        fprintf(stderr, "bench_mhd_fixed: --threads takes 1 to %d\n", MAX_THREADS);
        return 2;
    }
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    fixed = MHD_create_response_from_buffer(sizeof BODY - 1, (void *)BODY,
                                            MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(fixed, "Content-Type", "application/json");

    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = NULL;
    pthread_t acceptor;
    if (spread) {
        spread_listener = open_listener(&addr, &port);
        for (spread_count = 0; spread_listener >= 0 && spread_count < threads; spread_count++)
            if (!(spread_daemons[spread_count] = start_daemon(1, NULL)))
                break;
        if (spread_listener < 0 || spread_count < threads ||
            pthread_create(&acceptor, NULL, accept_in_turn, NULL) != 0) {
            fprintf(stderr, "bench_mhd_fixed: cannot listen on port %u\n", port);
            return 1;
        }
    } else {
        d = start_daemon(threads, &addr);
        const union MHD_DaemonInfo *info = d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
        if (!d) {
            fprintf(stderr, "bench_mhd_fixed: cannot listen on port %u\n", port);
            return 1;
        }
        if (info)
            port = info->port;
    }
    printf("http://127.0.0.1:%u/mcp\n", port);
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    if (spread) { /* shutdown() wakes accept(), which then fails: the thread ends */
        atomic_store(&spread_stopping, true);
        shutdown(spread_listener, SHUT_RDWR);
        pthread_join(acceptor, NULL);
        close(spread_listener);
    }
    if (d)
        MHD_stop_daemon(d);
    for (unsigned i = 0; i < spread_count; i++)
        MHD_stop_daemon(spread_daemons[i]);
    MHD_destroy_response(fixed);
    return 0;
}
