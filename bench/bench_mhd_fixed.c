/*
 * bench_mhd_fixed: the ceiling of the HTTP stack on this machine. A bare
 * libmicrohttpd program configured like libmcp's server (epoll, a pool of
 * event threads, loopback) that reads each POST body whole and answers a
 * fixed JSON body of the size of libmcp's echo answer. No MCP at all: what
 * libmcp adds over this is the cost of being an MCP server.
 *
 *   bench_mhd_fixed [PORT] [--threads T]
 *
 * Prints its URL as the first line of stdout; serves until SIGINT/SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    unsigned port = 0, threads = 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = (unsigned)atoi(argv[++i]);
        else
            port = (unsigned)atoi(argv[i]);
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
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, on_request, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)threads,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4096,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bench_mhd_fixed: cannot listen on port %u\n", port);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("http://127.0.0.1:%u/mcp\n", info ? (unsigned)info->port : port);
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    MHD_destroy_response(fixed);
    return 0;
}
