/*
 * conformance_server: the fixture the official MCP conformance suite tests.
 *
 *   conformance_server [--port N]   Streamable HTTP on 127.0.0.1:N/mcp
 *                                   (N = 0, the default: a free port)
 *   conformance_server --stdio      newline-delimited JSON on stdin/stdout
 *   --legacy sessions|stateless|reject
 *                                   how legacy (initialize) clients are
 *                                   served (mcp_legacy_mode_t; default
 *                                   sessions)
 *
 * Over HTTP, the first line on stdout is the endpoint's URL, for scripts:
 *
 *     http://127.0.0.1:40517/mcp
 *
 * It serves until SIGINT or SIGTERM. Diagnostics go to stderr.
 */
#define _POSIX_C_SOURCE 200809L /* sigwait, sigaction */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/request_state.h>
#include <mcp/server_http.h>

#include "fixture.h"

static void usage(FILE *out)
{
    fputs("usage: conformance_server [--port N | --stdio] [--legacy MODE]\n"
          "  --port N       serve Streamable HTTP on 127.0.0.1:N/mcp (0: a free port; default)\n"
          "  --stdio        serve newline-delimited JSON on stdin/stdout\n"
          "  --legacy MODE  legacy clients: sessions (default), stateless or reject\n",
          out);
}

/* The legacy mode a --legacy argument names; false when it names none. */
static bool parse_legacy(const char *name, mcp_legacy_mode_t *mode)
{
    static const struct {
        const char *name;
        mcp_legacy_mode_t mode;
    } modes[] = {{"sessions", MCP_LEGACY_SESSIONS},
                 {"stateless", MCP_LEGACY_STATELESS},
                 {"reject", MCP_LEGACY_REJECT}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strcmp(modes[i].name, name) == 0) {
            *mode = modes[i].mode;
            return true;
        }
    }
    return false;
}

/* Parses the command line; false (after printing why) when it is wrong. */
static bool parse_args(int argc, char **argv, bool *use_stdio, uint16_t *port,
                       mcp_legacy_mode_t *legacy)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--stdio") == 0) {
            *use_stdio = true;
        } else if (strcmp(argv[i], "--legacy") == 0 && i + 1 < argc) {
            if (!parse_legacy(argv[++i], legacy)) {
                fprintf(stderr, "conformance_server: unknown legacy mode %s\n", argv[i]);
                return false;
            }
        } else if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || n < 0 || n > 65535) {
                fprintf(stderr, "conformance_server: bad port %s\n", argv[i]);
                return false;
            }
            *port = (uint16_t)n;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else {
            usage(stderr);
            return false;
        }
    }
    return true;
}

/* requestState is sealed with a key made for this run: states do not
 * outlive the process, which is all a test fixture needs. A deployment
 * loads a shared keyring instead (mcp_keyring_load_file/_env). */
static int set_fresh_codec(mcp_server_t *srv, mcp_error_t *err)
{
    mcp_keyring_t *ring = mcp_keyring_new();
    if (!ring)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    int rc = mcp_keyring_generate(ring, "fixture");
    if (rc != MCP_OK) {
        mcp_keyring_free(ring);
        return mcp_error_set(err, rc, 0, NULL, "cannot generate a requestState key");
    }
    /* On failure mcp_codec_aead_new() has filled *err (it took the ring).
     * mcp_error_t holds no MCP_E* code; with a ring that holds a key and
     * the default options, running out of memory is the only failure. */
    mcp_codec_t *codec = mcp_codec_aead_new(ring, NULL, err);
    if (!codec)
        return MCP_ENOMEM;
    rc = mcp_server_set_codec(srv, codec); /* takes the codec, even on failure */
    if (rc != MCP_OK)
        return mcp_error_set(err, rc, 0, NULL, "cannot install the requestState codec: %s",
                             mcp_strerror(rc));
    return MCP_OK;
}

static mcp_server_t *build_server(mcp_legacy_mode_t legacy, mcp_error_t *err)
{
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){
        .name = "libmcp-conformance-server", .version = MCP_LIB_VERSION,
        .title = "libmcp conformance fixture", .legacy = legacy, .log = mcp_log_stderr}, err);
    if (!srv)
        return NULL;
    if (set_fresh_codec(srv, err) != MCP_OK || fixture_add_tools(srv, err) != MCP_OK ||
        fixture_add_input_tools(srv, err) != MCP_OK || fixture_add_task_tools(srv, err) != MCP_OK ||
        fixture_add_resources(srv, err) != MCP_OK || fixture_add_prompts(srv, err) != MCP_OK ||
        fixture_add_list_changes(srv, err) != MCP_OK || fixture_add_skills(srv, err) != MCP_OK) {
        mcp_server_free(srv);
        return NULL;
    }
    return srv;
}

/* Serves HTTP until SIGINT or SIGTERM. The signals are blocked in every
 * thread (the mask is inherited by the threads libmcp starts) and taken
 * here with sigwait(), so no handler runs in a random thread. */
static int serve_http(mcp_server_t *srv, uint16_t port, const sigset_t *stop_signals)
{
    mcp_error_t err = {0};
    mcp_http_server_t *http = NULL;
    if (mcp_http_server_start(srv, &(mcp_http_options_t){.port = port}, &http, &err) != MCP_OK) {
        fprintf(stderr, "conformance_server: %s\n", err.message);
        mcp_error_clear(&err);
        return 1;
    }
    printf("http://127.0.0.1:%u/mcp\n", (unsigned)mcp_http_server_port(http));
    fflush(stdout);

    int sig;
    sigwait(stop_signals, &sig);
    mcp_http_server_stop(http);
    return 0;
}

int main(int argc, char **argv)
{
    bool use_stdio = false;
    uint16_t port = 0;
    mcp_legacy_mode_t legacy = MCP_LEGACY_SESSIONS;
    if (!parse_args(argc, argv, &use_stdio, &port, &legacy))
        return 2;

    /* A peer that hangs up must not kill the process on the next write. */
    signal(SIGPIPE, SIG_IGN);
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    if (!use_stdio)
        pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

    mcp_error_t err = {0};
    mcp_server_t *srv = build_server(legacy, &err);
    if (!srv) {
        fprintf(stderr, "conformance_server: %s\n", err.message);
        mcp_error_clear(&err);
        return 1;
    }
    int status = use_stdio ? (mcp_server_run_stdio(srv, NULL) == MCP_OK ? 0 : 1)
                           : serve_http(srv, port, &stop_signals);
    mcp_server_free(srv);
    return status;
}
