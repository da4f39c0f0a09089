/*
 * bench_pipe_ceiling: the ceiling of stdio round trips on this machine.
 * The stdio counterpart of bench_mhd_fixed: no MCP, no JSON, only what any
 * stdio client and server must pay for one call -- a write, the wake-up of
 * the other process, a read, and the same back.
 *
 * It starts itself again as a child "server" (fork + exec, as a client
 * starts a real stdio MCP server) whose stdin and stdout are two pipes. The
 * parent sends one request line at a time -- byte for byte the tools/call
 * echo line bench_client sends -- and waits for the answer; the child
 * answers every line it reads with a fixed line of the size and shape of
 * libmcp's echo result. Sequential only: there the wake-ups, not the work,
 * set the pace.
 *
 * Where the scheduler places the two processes decides the result: on one
 * CPU a round trip is two context switches; on two, each message wakes the
 * other CPU, and an idle virtual CPU wakes slowly. Left alone, the
 * scheduler picks either, run by run, so --cpus can pin the choice.
 *
 * With --spin-us, both sides first wait actively for their next line, as
 * libmcp's stdio client and server do by default (src/spin.h: polite,
 * yielding polls), so that libmcp's rows compare with a ceiling that waits
 * the same way.
 *
 *   bench_pipe_ceiling [--calls N] [--warmup N] [--cpus any|one|two] [--spin-us U]
 *
 *   --calls N     measured round trips (default 10000)
 *   --warmup N    round trips before measuring (default N/10, at most 1000)
 *   --cpus any    the scheduler places both processes (default), as it
 *                 does a real client and server
 *          one    both pinned to the first CPU this process may use
 *          two    the parent on the first, the child on the second
 *   --spin-us U   wait actively up to U µs before each blocking read
 *                 (default 0: block at once)
 *
 * Output, the format of bench_client: {"calls":N,"seconds":S,
 * "calls_per_s":X,"p50_us":A,"p99_us":B,"request_bytes":Q,
 * "response_bytes":R}. Exits non-zero when the child fails or a round trip
 * breaks off.
 */
#define _GNU_SOURCE /* sched_setaffinity, cpu_set_t */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "spin.h"

/* --spin-us: how long each side waits actively before a blocking read. */
static int spin_us;

/* What bench_client (libmcp 0.1.0) writes for one echo call, captured from
 * its pipe; a real client's id counts up, this one stays put. */
static const char REQUEST[] =
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
    "\"arguments\":{\"text\":\"hello\"},\"_meta\":{\"io.modelcontextprotocol/"
    "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":"
    "{\"elicitation\":{\"form\":{}}},\"io.modelcontextprotocol/clientInfo\":{\"name\":"
    "\"libmcp-bench\",\"version\":\"0.1.0\"}}}}\n";

/* And what libmcp's bench_server answers to it. */
static const char RESPONSE[] =
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
    "\"hello\"}],\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/"
    "serverInfo\":{\"name\":\"libmcp-bench\",\"version\":\"0.1.0\"}}}}\n";

/* Writes all of buf, across short writes and signals; 0 or -1. */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One read of what fd has; its length, 0 at end of file, -1 on error. */
static ssize_t read_some(int fd, char *buf, size_t size)
{
    ssize_t n;
    struct pollfd ready = {.fd = fd, .events = POLLIN};
    mcp_spin_poll(&ready, 1, spin_us); /* whatever it says, read() decides */
    do
        n = read(fd, buf, size);
    while (n < 0 && errno == EINTR);
    return n;
}

/* How many lines end in buf. A line split across reads ends in a later
 * one and is counted there, so partial lines need no keeping: finding the
 * newlines is the least any line reader does. */
static long line_ends(const char *buf, size_t len)
{
    long ends = 0;
    for (const char *p = buf, *end = buf + len; (p = memchr(p, '\n', (size_t)(end - p))); p++)
        ends++;
    return ends;
}

/* The child: one answer for every request line, until stdin closes. */
static int serve(void)
{
    char buf[64 * 1024];
    ssize_t n;
    while ((n = read_some(STDIN_FILENO, buf, sizeof buf)) > 0)
        for (long lines = line_ends(buf, (size_t)n); lines > 0; lines--)
            if (write_all(STDOUT_FILENO, RESPONSE, sizeof RESPONSE - 1) != 0)
                return 1;
    return n == 0 ? 0 : 1;
}

/* The n-th (0-based) CPU this process may run on, or -1. */
static int allowed_cpu(int n)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &set) && n-- == 0)
            return cpu;
    return -1;
}

static int pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

typedef struct server {
    pid_t pid;
    int to, from; /* the child's stdin and stdout, our ends */
} server_t;

/* Starts the child on `cpu` (-1: wherever the scheduler likes). */
static int start_server(server_t *s, int cpu)
{
    int in[2], out[2];
    if (pipe(in) != 0)
        return -1;
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    fflush(stdout);
    s->pid = fork();
    if (s->pid == 0) {
        if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
            (cpu >= 0 && pin_to(cpu) != 0))
            _exit(126);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        char spin[16];
        snprintf(spin, sizeof spin, "%d", spin_us);
        execl("/proc/self/exe", "bench_pipe_ceiling", "--serve", spin, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (s->pid < 0) {
        close(in[1]);
        close(out[0]);
        return -1;
    }
    s->to = in[1];
    s->from = out[0];
    return 0;
}

/* Closing the child's stdin asks it to stop; 0 when it exited cleanly. */
static int stop_server(server_t *s)
{
    close(s->to);
    close(s->from);
    int status;
    while (waitpid(s->pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* One request out, one answer line back; 0 or -1. */
static int round_trip(const server_t *s)
{
    char buf[4096];
    if (write_all(s->to, REQUEST, sizeof REQUEST - 1) != 0)
        return -1;
    long lines = 0;
    while (lines == 0) {
        ssize_t n = read_some(s->from, buf, sizeof buf);
        if (n <= 0)
            return -1;
        lines = line_ends(buf, (size_t)n);
    }
    return lines == 1 ? 0 : -1; /* more answers than asked: a broken child */
}

/* Runs `calls` round trips, each timed into lat; -1 when one breaks off. */
static int run_batch(const server_t *s, long calls, double *lat)
{
    for (long i = 0; i < calls; i++) {
        double t0 = bench_now_us();
        if (round_trip(s) != 0)
            return -1;
        lat[i] = bench_now_us() - t0;
    }
    return 0;
}

/* Pins this process as `cpus` asks; the child's CPU in *child_cpu. */
static int place(const char *cpus, int *child_cpu)
{
    *child_cpu = -1;
    if (strcmp(cpus, "any") == 0)
        return 0;
    int first = allowed_cpu(0), second = allowed_cpu(1);
    if (strcmp(cpus, "one") == 0 && first >= 0)
        *child_cpu = first;
    else if (strcmp(cpus, "two") == 0 && second >= 0)
        *child_cpu = second;
    else
        return -1;
    return pin_to(first);
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_pipe_ceiling [--calls N] [--warmup N] [--cpus any|one|two] "
                    "[--spin-us U]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--serve") == 0) {
        spin_us = atoi(argv[2]);
        return serve();
    }
    long calls = 10000, warmup = -1;
    const char *cpus = "any";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
            calls = atol(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc)
            warmup = atol(argv[++i]);
        else if (strcmp(argv[i], "--cpus") == 0 && i + 1 < argc)
            cpus = argv[++i];
        else if (strcmp(argv[i], "--spin-us") == 0 && i + 1 < argc)
            spin_us = atoi(argv[++i]);
        else
            return usage();
    }
    if (calls < 1 || (strcmp(cpus, "any") && strcmp(cpus, "one") && strcmp(cpus, "two")))
        return usage();
    if (warmup < 0)
        warmup = calls / 10 < 1000 ? calls / 10 : 1000;

    int child_cpu;
    if (place(cpus, &child_cpu) != 0) {
        fprintf(stderr, "bench_pipe_ceiling: cannot place the processes on --cpus %s\n", cpus);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN); /* a dead child shows as a failed write */
    double *lat = calloc((size_t)(calls > warmup ? calls : warmup), sizeof *lat);
    server_t s;
    if (!lat || start_server(&s, child_cpu) != 0) {
        fprintf(stderr, "bench_pipe_ceiling: cannot start the child: %s\n", strerror(errno));
        free(lat);
        return 1;
    }
    int failed = run_batch(&s, warmup, lat) != 0;
    double t0 = bench_now_us();
    failed = failed || run_batch(&s, calls, lat) != 0;
    double seconds = (bench_now_us() - t0) / 1e6;
    failed = stop_server(&s) != 0 || failed;
    if (failed) {
        fprintf(stderr, "bench_pipe_ceiling: a round trip broke off\n");
        free(lat);
        return 1;
    }
    bench_sort(lat, (size_t)calls);
    printf("{\"calls\":%ld,\"seconds\":%.4f,\"calls_per_s\":%.1f,\"p50_us\":%.1f,"
           "\"p99_us\":%.1f,\"request_bytes\":%zu,\"response_bytes\":%zu}\n",
           calls, seconds, calls / seconds, bench_percentile(lat, calls, 50),
           bench_percentile(lat, calls, 99), sizeof REQUEST - 1, sizeof RESPONSE - 1);
    free(lat);
    return 0;
}
