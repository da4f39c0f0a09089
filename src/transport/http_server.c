/*
 * The built-in HTTP server: options, the endpoint, and the engine that
 * carries it (see http_server_engine.h for the two engines and why).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/server_internal.h"
#include "transport/http_endpoint.h"
#include "thread_state.h"
#include "transport/http_server_engine.h"

#define MAX_DEFAULT_THREADS 16
/* libmicrohttpd's threads only move bytes (handlers run on the pool). */
#define MHD_DEFAULT_THREADS 2
#define DEFAULT_CONNECTION_LIMIT 1024
/* Descriptors the default connection limit leaves to everything else
 * (the listener, event fds, what handlers open). */
#define DESCRIPTORS_KEPT 64
#define DEFAULT_CONNECTION_TIMEOUT_S 30
#define DEFAULT_GRACE_MS 5000
#define DEFAULT_MAX_HEADER_BYTES 8192
#define MAX_TLS_FILE ((off_t)1024 * 1024)

/*
 * Event threads when the options leave it to us: one fewer than the CPUs
 * this process may run on, at least one and at most MAX_DEFAULT_THREADS.
 * Handlers run on the event threads (lend.h), so an event thread computes
 * what a worker used to; the CPU left over is for everything else: the
 * threads that take over from blocked handlers, the application's own,
 * and on a small machine whatever shares it. On a 2-vCPU VM with the load
 * generator beside it, two event threads made three busy threads on two
 * CPUs, and whichever waited for a CPU held its connections for a
 * scheduler tick: p99 at 16 connections was 3.9 ms with two threads and
 * 0.3 ms with one, at the same throughput (docs/benchmarks.md).
 */
static unsigned default_threads(void)
{
    unsigned spare = (unsigned)mcp_cpus_usable() - 1;
    return spare < 1 ? 1 : spare > MAX_DEFAULT_THREADS ? MAX_DEFAULT_THREADS : spare;
}

struct mcp_http_server {
    mcp_http_endpoint_t *ep;
    const http_engine_ops_t *engine_ops;
    void *engine;
    uint16_t port;
    int grace_ms;
};

/* Reads a whole (small) file into a NUL-terminated buffer. */
static char *read_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size <= MAX_TLS_FILE &&
        (text = malloc((size_t)st.st_size + 1)) != NULL) {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got == (size_t)st.st_size) {
            text[got] = '\0';
        } else {
            free(text);
            text = NULL;
        }
    }
    close(fd);
    return text;
}

/* Fills the address of `cfg` from a numeric address or "localhost". */
static bool parse_bind_address(const char *text, uint16_t port, http_engine_config_t *cfg,
                               bool *loopback)
{
    memset(&cfg->addr, 0, sizeof cfg->addr);
    if (strcmp(text, "localhost") == 0)
        text = "127.0.0.1";
    struct sockaddr_in *v4 = (struct sockaddr_in *)&cfg->addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&cfg->addr;
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        cfg->addr_len = sizeof *v4;
        cfg->ipv6 = false;
        *loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
        return true;
    }
    if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        cfg->addr_len = sizeof *v6;
        cfg->ipv6 = true;
        *loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
        return true;
    }
    return false;
}

/* Stores in *engine the engine the options ask for. Returns MCP_OK, or
 * MCP_EUNSUPPORTED / MCP_EINVAL (and *err set) when none can serve them. */
static int pick_engine(const mcp_http_options_t *o, const http_engine_ops_t **engine,
                       mcp_error_t *err)
{
    bool tls = o->tls_cert_file != NULL;
    switch (o->engine) {
    case MCP_HTTP_ENGINE_DEFAULT:
        *engine = tls ? &http_engine_mhd : &http_engine_epoll;
        return MCP_OK;
    case MCP_HTTP_ENGINE_BUILTIN:
        *engine = &http_engine_epoll;
        if (!tls)
            return MCP_OK;
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the built-in HTTP engine does not do TLS; use "
                             "MCP_HTTP_ENGINE_LIBMICROHTTPD (or the default)");
    case MCP_HTTP_ENGINE_LIBMICROHTTPD:
        *engine = &http_engine_mhd;
        return MCP_OK;
    }
    return mcp_error_set(err, MCP_EINVAL, 0, NULL, "unknown HTTP engine %d",
                         (int)o->engine);
}

/* The default connection limit: 1024, or fewer when the process may open
 * fewer descriptors. Connections up to the limit must never find them all
 * taken: accept() failing for want of one leaves clients waiting, and
 * handlers that open files fail. */
static unsigned default_connection_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= DEFAULT_CONNECTION_LIMIT + DESCRIPTORS_KEPT)
        return DEFAULT_CONNECTION_LIMIT;
    if (rl.rlim_cur > 2 * DESCRIPTORS_KEPT)
        return (unsigned)(rl.rlim_cur - DESCRIPTORS_KEPT);
    return rl.rlim_cur > 2 ? (unsigned)(rl.rlim_cur / 2) : 1; /* a tiny limit: half */
}

int mcp_http_server_start(mcp_server_t *srv, const mcp_http_options_t *opts,
                          mcp_http_server_t **out, mcp_error_t *err)
{
    static const mcp_http_options_t defaults = {0};
    const mcp_http_options_t *o = opts ? opts : &defaults;
    if (out)
        *out = NULL;
    if (!srv || !out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "mcp_http_server_start needs a server and an out pointer");
    http_engine_config_t cfg = {
        .srv = srv,
        .log = srv->log,
        .log_user = srv->log_user,
        .bind_text = o->bind_address ? o->bind_address : "127.0.0.1",
        .port = o->port,
        .spin_us = srv->spin_us, /* mcp_server_options_t.spin_us, resolved */
        .connection_limit = o->connection_limit ? o->connection_limit : default_connection_limit(),
        .connection_timeout_s =
            o->connection_timeout_s ? o->connection_timeout_s : DEFAULT_CONNECTION_TIMEOUT_S,
        .max_header_bytes = o->max_header_bytes ? o->max_header_bytes : DEFAULT_MAX_HEADER_BYTES,
    };
    bool loopback;
    if (!parse_bind_address(cfg.bind_text, o->port, &cfg, &loopback))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "bind_address must be a numeric IPv4/IPv6 address or localhost");
    if (!o->tls_cert_file != !o->tls_key_file)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "TLS needs both a certificate file and a key file");
    const http_engine_ops_t *engine;
    int picked = pick_engine(o, &engine, err);
    if (picked != MCP_OK)
        return picked;
    cfg.threads = o->threads                     ? o->threads
                  : engine == &http_engine_epoll ? default_threads()
                                                 : MHD_DEFAULT_THREADS;

    mcp_http_server_t *http = calloc(1, sizeof *http);
    if (!http)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    http->engine_ops = engine;
    http->grace_ms = o->shutdown_grace_ms ? o->shutdown_grace_ms : DEFAULT_GRACE_MS;

    int rc = MCP_OK;
    char *tls_cert = NULL, *tls_key = NULL;
    if (o->tls_cert_file &&
        (!(tls_cert = read_file(o->tls_cert_file)) || !(tls_key = read_file(o->tls_key_file)))) {
        rc = mcp_error_set(err, MCP_EIO, 0, NULL,
                           "cannot read the TLS %s file %s", tls_cert ? "key" : "certificate",
                           tls_cert ? o->tls_key_file : o->tls_cert_file);
        goto fail;
    }
    /* A server bound to loopback keeps the endpoint's loopback-only Host
     * default; elsewhere the names it is reached by are the user's to list. */
    if (!(http->ep = http_endpoint_new(srv, &o->endpoint, !loopback, err))) {
        rc = MCP_EINVAL;
        goto fail;
    }
    cfg.ep = http->ep;
    cfg.tls_cert = tls_cert;
    cfg.tls_key = tls_key;
    if ((rc = engine->start(&cfg, &http->engine, &http->port, err)) != MCP_OK)
        goto fail;
    /* The engine keeps its own copy of the TLS files while it runs. */
    free(tls_cert);
    free(tls_key);
    *out = http;
    return MCP_OK;
fail:
    free(tls_cert);
    free(tls_key);
    mcp_http_endpoint_free(http->ep);
    free(http);
    return rc;
}

uint16_t mcp_http_server_port(const mcp_http_server_t *http)
{
    return http ? http->port : 0;
}

void mcp_http_server_stop(mcp_http_server_t *http)
{
    if (!http)
        return;
    /* 1. No new connections or requests. */
    http->engine_ops->stop_accepting(http->engine);

    /* 2. Subscriptions end gracefully, with their listen result; requests
     * in flight may finish for a while... */
    http_endpoint_close_streams(http->ep);
    if (http->grace_ms > 0)
        mcp_http_endpoint_drain(http->ep, http->grace_ms);

    /* 3. ...then the rest are cancelled and their responses closed. */
    if (http->engine_ops->stop_waiting)
        http->engine_ops->stop_waiting(http->engine);
    mcp_http_endpoint_abort_all(http->ep);

    /* 4. Every connection closes; the engine's threads end. */
    http->engine_ops->close(http->engine);
    mcp_http_endpoint_free(http->ep);
    free(http);
}
