/*
 * Fuzzes the built-in HTTP engine (src/transport/http_server_epoll.c) over
 * a real socket: the bytes a client sends, cut into writes where the input
 * says, go to a running server, which frames them (heads, Content-Length
 * and chunked bodies, pipelined requests, Expect, HEAD, HTTP/1.0), answers
 * what it can and closes when the client has said all. Where
 * fuzz_http1 checks the framing rules one call at a time, this checks the
 * engine around them: its buffers (the loop's scratch, a connection's
 * own, growing and shrinking), its hand-offs between the event thread and
 * the workers, and its cancellations, under ASan and UBSan.
 *
 * Input: one byte, then the bytes to send.
 *   byte & 0x3f  size of each write (0: all at once)
 *   byte & 0x40  pause 200 µs after each of the first four writes, so
 *                that they arrive apart (and the run stays fast)
 * The harness then half-closes the connection and reads until the server
 * closes it: every answer must have been framed (the server reads on to
 * the end before it closes, so a refusal's bytes are all sent or lost
 * with a reset, never cut short of what it sent).
 */
#define _GNU_SOURCE /* nanosleep, SOCK_CLOEXEC */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int echo(mcp_call_t *call, void *user)
{
    (void)user;
    const char *text = mcp_call_arg_string(call, "text");
    return mcp_call_add_text(call, text ? text : "");
}

/* A server for the whole run: started by the first input, never stopped
 * (the process ends with the fuzzer). */
static uint16_t server_port(void)
{
    static uint16_t port;
    if (port)
        return port;
    mcp_server_t *srv =
        mcp_server_new(&(mcp_server_options_t){.name = "fuzz", .version = "1.0.0"}, NULL);
    if (!srv)
        abort();
    static const char schema[] = "{\"type\":\"object\"}";
    if (mcp_server_add_tool(srv, &(mcp_tool_t){.name = "echo", .input_schema = schema,
                                               .handler = echo}, NULL) != MCP_OK ||
        mcp_server_add_tool(srv, &(mcp_tool_t){.name = "echo_inline", .input_schema = schema,
                                               .handler = echo, .run_inline = true},
                            NULL) != MCP_OK)
        abort();
    static mcp_http_server_t *http; /* kept reachable: no leak report */
    if (mcp_http_server_start(srv, &(mcp_http_options_t){
                                       .engine = MCP_HTTP_ENGINE_BUILTIN,
                                       .max_header_bytes = 2048,
                                       .endpoint = {.max_body_bytes = 8192}},
                              &http, NULL) != MCP_OK)
        abort();
    port = mcp_http_server_port(http);
    return port;
}

static void pause_briefly(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}

/* A connect() a signal interrupted (libFuzzer's timer) goes on without
 * us: waits for it to finish. */
static bool connected_after_signal(int fd)
{
    if (errno != EINTR)
        return false;
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int error = 0;
    socklen_t len = sizeof error;
    while (poll(&p, 1, 5000) < 0)
        if (errno != EINTR)
            return false;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
        return false;
    errno = error;
    return error == 0;
}

/*
 * A new connection to the server. The client half-closes first, so each
 * connection leaves its client end in TIME_WAIT for a minute: at a
 * thousand runs a second one source address would run out of ports. So
 * the source address turns over 127.0.0.2 ... 127.0.0.254, giving each
 * its own ports.
 */
static int connect_to_server(void)
{
    static unsigned turn;
    for (int attempt = 0;; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            abort();
        struct sockaddr_in from = {.sin_family = AF_INET,
                                   .sin_addr.s_addr = htonl(0x7f000002u + turn++ % 253)};
        int one = 1;
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(server_port()),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (bind(fd, (struct sockaddr *)&from, sizeof from) == 0 &&
            (connect(fd, (struct sockaddr *)&to, sizeof to) == 0 || connected_after_signal(fd)))
            return fd;
        int why = errno;
        close(fd);
        if (why != EADDRNOTAVAIL || attempt == 100) {
            fprintf(stderr, "fuzz_http_engine: cannot connect: %s\n", strerror(why));
            abort();
        }
        pause_briefly();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = data[0] & 0x3f;
    bool pause = data[0] & 0x40;
    data++;
    size--;

    int fd = connect_to_server();
    int pauses = pause ? 4 : 0;
    for (size_t off = 0; off < size;) {
        size_t n = piece && piece < size - off ? piece : size - off;
        ssize_t sent = send(fd, data + off, n, MSG_NOSIGNAL);
        if (sent <= 0)
            break; /* the server closed (a refusal): the rest goes nowhere */
        off += (size_t)sent;
        if (pauses > 0 && off < size) {
            pauses--;
            pause_briefly();
        }
    }
    shutdown(fd, SHUT_WR);

    /* Read until the server closes: it must, promptly, once the client
     * has finished. */
    char buf[16384];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = poll(&p, 1, 5000);
        if (ready == 0)
            abort(); /* the server never closed the connection */
        if (ready < 0 && errno == EINTR)
            continue;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EINTR))
            break;
    }
    /* Reset rather than linger in TIME_WAIT: a run opens many thousands. */
    struct linger now = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
    close(fd);
    return 0;
}
