/*
 * bench_memory: the resident memory of an HTTP MCP server process, from
 * outside (/proc/PID/status), at four moments:
 *
 *   idle        started, nothing asked yet (also its anonymous part:
 *               RSS less the pages of shared libraries)
 *   warm        after the first --warm calls (pools and buffers exist)
 *   calls       after --calls tools/call echo in all (default 100000):
 *               "calls" minus "warm" is growth, which should be none
 *   streams     with --streams subscriptions/listen streams open (default
 *               1000), each acknowledged: their cost per stream
 *
 *   bench_memory [--calls N] [--warm N] [--streams S] -- SERVER [ARGS...]
 *
 * SERVER must print its URL (http://127.0.0.1:PORT/...) as its first line
 * of stdout. The load is plain HTTP/1.1 over keep-alive sockets written by
 * hand, so that the probe costs the server nothing a real client would not.
 *
 * Output: {"idle_kb":..,"idle_anon_kb":..,"warm_kb":..,"calls_kb":..,"streams_kb":..,
 *          "calls":N,"streams":S,"per_stream_bytes":B}
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define LOAD_THREADS 4
#define ENVELOPE                                                                             \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                  \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"bench_memory\",\"version\":\"1\"},"   \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"

static const char ECHO_BODY[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
    "\"arguments\":{\"text\":\"hello\"}," ENVELOPE "}}";
static const char LISTEN_BODY[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"subscriptions/listen\",\"params\":{"
    "\"notifications\":{\"toolsListChanged\":true}," ENVELOPE "}}";

static uint16_t port;

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    if (fd >= 0 && (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
                    connect(fd, (struct sockaddr *)&a, sizeof a) != 0)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int send_request(int fd, const char *method, const char *name, const char *body)
{
    char req[2048];
    int n = snprintf(req, sizeof req,
                     "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
                     "Content-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\n"
                     "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: %s\r\n%s%s%s"
                     "Content-Length: %zu\r\n\r\n%s",
                     (unsigned)port, method, name ? "Mcp-Name: " : "", name ? name : "",
                     name ? "\r\n" : "", strlen(body), body);
    for (int off = 0; off < n;) {
        ssize_t w = write(fd, req + off, (size_t)(n - off));
        if (w <= 0)
            return -1;
        off += (int)w;
    }
    return 0;
}

/* Reads one response, with a Content-Length body or a chunked one (small
 * enough to fit the buffer); 0 when it is a 200. */
static int read_response(int fd)
{
    char buf[8192];
    size_t have = 0;
    char *end = NULL;
    while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
        ssize_t r = read(fd, buf + have, sizeof buf - have);
        if (r <= 0 || (have += (size_t)r) == sizeof buf)
            return -1;
    }
    if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
        return -1;
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (!cl) { /* chunked: up to the last chunk */
        while (!memmem(end, have - (size_t)(end - buf), "\r\n0\r\n\r\n", 7)) {
            ssize_t r = read(fd, buf + have, sizeof buf - have);
            if (r <= 0 || (have += (size_t)r) == sizeof buf)
                return -1;
        }
        return 0;
    }
    size_t body = (size_t)atol(cl + 17), head = (size_t)(end + 4 - buf);
    for (size_t got = have - head; got < body;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

typedef struct load {
    pthread_t thread;
    long calls;
    int failed;
} load_t;

static void *run_load(void *arg)
{
    load_t *l = arg;
    int fd = dial();
    for (long i = 0; i < l->calls && fd >= 0 && !l->failed; i++)
        l->failed = send_request(fd, "tools/call", "echo", ECHO_BODY) != 0 || read_response(fd) != 0;
    if (fd < 0)
        l->failed = 1;
    close(fd);
    return NULL;
}

static int make_calls(long calls)
{
    load_t l[LOAD_THREADS];
    int failed = 0;
    for (int i = 0; i < LOAD_THREADS; i++) {
        l[i] = (load_t){.calls = calls / LOAD_THREADS + (i < calls % LOAD_THREADS)};
        pthread_create(&l[i].thread, NULL, run_load, &l[i]);
    }
    for (int i = 0; i < LOAD_THREADS; i++) {
        pthread_join(l[i].thread, NULL);
        failed |= l[i].failed;
    }
    return failed;
}

/* Opens a listen stream and waits for its acknowledgement event. */
static int open_stream(void)
{
    int fd = dial();
    if (fd < 0 || send_request(fd, "subscriptions/listen", NULL, LISTEN_BODY) != 0) {
        close(fd);
        return -1;
    }
    char buf[4096];
    size_t have = 0;
    while (!memmem(buf, have, "acknowledged", 12)) {
        ssize_t r = read(fd, buf + have, sizeof buf - have);
        if (r <= 0 || (have += (size_t)r) == sizeof buf) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* The server's RSS once it has settled (freed memory may take a moment to
 * be handed back by worker threads). */
static long settled_rss(pid_t pid)
{
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    return bench_rss_kb(pid);
}

static pid_t start_server(char **argv)
{
    int out[2];
    if (pipe(out) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(out[1]);
    char line[256];
    size_t n = 0;
    while (n < sizeof line - 1 && read(out[0], line + n, 1) == 1 && line[n] != '\n')
        n++;
    line[n] = '\0';
    close(out[0]);
    const char *colon = strrchr(line, ':');
    port = colon ? (uint16_t)atoi(colon + 1) : 0;
    if (pid > 0 && !port) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

int main(int argc, char **argv)
{
    long calls = 100000, warm = 1000, streams = 1000;
    char **server = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            server = argv + i + 1;
            break;
        }
        if (i + 1 >= argc)
            break;
        if (strcmp(argv[i], "--calls") == 0)
            calls = atol(argv[++i]);
        else if (strcmp(argv[i], "--warm") == 0)
            warm = atol(argv[++i]);
        else if (strcmp(argv[i], "--streams") == 0)
            streams = atol(argv[++i]);
    }
    if (!server || !server[0] || calls < warm || warm < 0 || streams < 0) {
        fprintf(stderr, "usage: bench_memory [--calls N] [--warm N] [--streams S] -- SERVER "
                        "[ARGS...]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* Every stream is a socket on both ends. */
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < (rlim_t)streams + 64) {
        lim.rlim_cur = lim.rlim_max;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    pid_t pid = start_server(server);
    if (pid < 0) {
        fprintf(stderr, "bench_memory: the server did not print its URL\n");
        return 1;
    }
    int failed = 0;
    long idle = settled_rss(pid), idle_anon = bench_anon_kb(pid);
    failed |= make_calls(warm);
    long warm_kb = settled_rss(pid);
    failed |= make_calls(calls - warm);
    long calls_kb = settled_rss(pid);

    int *fds = calloc((size_t)streams + 1, sizeof *fds);
    long opened = 0;
    for (; opened < streams && !failed; opened++)
        if ((fds[opened] = open_stream()) < 0) {
            fprintf(stderr, "bench_memory: stream %ld did not open\n", opened);
            failed = 1;
        }
    long streams_kb = settled_rss(pid);
    for (long i = 0; i < opened; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    if (failed) {
        fprintf(stderr, "bench_memory: a request failed\n");
        return 1;
    }
    printf("{\"idle_kb\":%ld,\"idle_anon_kb\":%ld,\"warm_kb\":%ld,\"calls_kb\":%ld,\"streams_kb\":%ld,\"calls\":%ld,"
           "\"streams\":%ld,\"per_stream_bytes\":%.0f}\n",
           idle, idle_anon, warm_kb, calls_kb, streams_kb, calls, streams,
           streams ? (double)(streams_kb - calls_kb) * 1024.0 / (double)streams : 0.0);
    return 0;
}
