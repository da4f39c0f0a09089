/*
 * lazy_library.h - a shared library opened the first time it is needed.
 *
 * The HTTP transports stand on big libraries: libmicrohttpd brings GnuTLS
 * and eight more, libcurl some thirty. Most MCP programs never speak HTTP
 * (a host spawns its servers over stdio), yet a program linked with them
 * maps them all at start: 2.5 MiB of resident pages for libmicrohttpd, 5.9
 * MiB for libcurl, and milliseconds of loading. So neither is linked;
 * each HTTP transport opens its library with dlopen() when it is first
 * created, through a table of the functions it calls (mhd_api.h,
 * curl_api.h). The libraries are still Debian's, found by the soname the
 * build was compiled against, and stay loaded until the process exits.
 */
#ifndef MCP_LAZY_LIBRARY_H
#define MCP_LAZY_LIBRARY_H

#include <pthread.h>
#include <stddef.h>

#include "mcp/common.h"

/* One function to look up: its exported name, and where its address goes
 * (a function pointer of the right type, passed as its address). */
typedef struct {
    const char *name;
    void *slot; /* e.g. &api.start_daemon */
} mcp_lazy_symbol_t;

/*
 * Opens `soname` (RTLD_NOW | RTLD_LOCAL) and fills every slot. On failure
 * nothing is filled and the library is closed again; returns
 * MCP_EUNSUPPORTED with a message naming the library (or the missing
 * function) and what needs it: `feature`, e.g. "the HTTP server".
 *
 * Not synchronised: callers load once, under pthread_once or their own
 * lock, and publish the filled table after it returns.
 */
int mcp_lazy_open(const char *soname, const char *feature, const mcp_lazy_symbol_t *symbols,
                  size_t n_symbols, mcp_error_t *err);

/* A library's loading, done once per process, and its answer for every
 * caller: `load` stores its result in `rc` (and `err`). */
typedef struct {
    pthread_once_t once;
    int rc;
    mcp_error_t err;
} mcp_lazy_once_t;

#define MCP_LAZY_ONCE_INIT {PTHREAD_ONCE_INIT, MCP_OK, {0}}

/* Runs `load` the first time (pthread_once), then returns its rc and, on
 * failure, copies its error into *err. Thread-safe. */
int mcp_lazy_once(mcp_lazy_once_t *state, void (*load)(void), mcp_error_t *err);

#endif /* MCP_LAZY_LIBRARY_H */
