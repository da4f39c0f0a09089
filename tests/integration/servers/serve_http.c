/*
 * The HTTP mode of the test servers (serve_http.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "serve_http.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>

int serve_http_until_signal(mcp_server_t *srv, const char *program)
{
    /* Blocked before any thread starts, so that only sigwait() gets them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    mcp_error_t err = {0};
    mcp_http_server_t *http;
    int rc = mcp_http_server_start(srv, &(mcp_http_options_t){0}, &http, &err);
    if (rc != MCP_OK) {
        fprintf(stderr, "%s: %s\n", program, err.message);
        mcp_error_clear(&err);
        return rc;
    }
    fprintf(stderr, "%s: serving http://127.0.0.1:%u/mcp\n", program,
            (unsigned)mcp_http_server_port(http));
    int sig;
    sigwait(&stop, &sig);
    mcp_http_server_stop(http);
    return MCP_OK;
}
