/*
 * Failures: messages and exit statuses.
 */
#include "failure.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <mcp/errors.h>

#include "json_out.h"
#include "signals.h"
#include "term.h"

int cli_status_for(int rc)
{
    switch (rc) {
    case MCP_OK:
        return CLI_EXIT_OK;
    case MCP_EINVAL:
        return CLI_EXIT_USAGE;
    case MCP_EIO:
    case MCP_ECLOSED:
    case MCP_ETIMEDOUT:
    case MCP_EAUTH:
    case MCP_ENOMEM:
        return CLI_EXIT_CONNECTION;
    case MCP_ECANCELED: /* by Ctrl-C, or by the server (a task it cancelled) */
        return signals_interrupted() ? CLI_EXIT_INTERRUPTED : CLI_EXIT_PROTOCOL;
    default: /* MCP_ERPC, MCP_EPROTO, MCP_EUNSUPPORTED, ... */
        return CLI_EXIT_PROTOCOL;
    }
}

static const char *kind_of(int status)
{
    switch (status) {
    case CLI_EXIT_TOOL_ERROR:
        return "tool";
    case CLI_EXIT_USAGE:
        return "usage";
    case CLI_EXIT_PROTOCOL:
        return "protocol";
    case CLI_EXIT_CONNECTION:
        return "connection";
    case CLI_EXIT_INTERRUPTED:
        return "interrupted";
    default:
        return "other";
    }
}

/* --json was asked for: set before the rest of the command line is read,
 * so that even a usage error gives scripts their document. */
static bool usage_json;

void cli_usage_json(bool on)
{
    usage_json = on;
}

/* {"error": {...}} on stdout: one compact line for listen, whose output
 * is JSON Lines, else indented like every other document. */
static void print_error_document(const cli_options_t *opt, int status, const mcp_error_t *rpc,
                                 const char *message)
{
    json_t *text = json_string(message);
    if (!text) {
        /* Not UTF-8 (it quotes a word of the command line): the document
         * still goes out, with '?' for every byte beyond ASCII. */
        char ascii[1024];
        snprintf(ascii, sizeof ascii, "%s", message);
        for (char *c = ascii; *c; c++)
            if ((unsigned char)*c >= 0x80)
                *c = '?';
        text = json_string(ascii);
    }
    json_t *error = json_pack("{s:i, s:s, s:o*}", "status", status, "kind", kind_of(status),
                              "message", text);
    if (error && rpc && rpc->code != 0) {
        json_object_set_new(error, "code", json_integer(rpc->code));
        if (rpc->data)
            json_object_set(error, "data", rpc->data);
    }
    json_t *doc = json_pack("{s:o*}", "error", error);
    if (opt && opt->command && strcmp(opt->command->name, "listen") == 0)
        json_out_line(doc);
    else
        json_out_print(doc);
    json_decref(doc);
}

static int vfail(const cli_options_t *opt, int status, const mcp_error_t *rpc, const char *fmt,
                 va_list ap) MCP_PRINTF(4, 0);
static int vfail(const cli_options_t *opt, int status, const mcp_error_t *rpc, const char *fmt,
                 va_list ap)
{
    char message[1024];
    vsnprintf(message, sizeof message, fmt, ap);
    term_errorf("%s", message);
    if (opt && opt->json)
        print_error_document(opt, status, rpc, message);
    return status;
}

int cli_fail(const cli_options_t *opt, int status, const mcp_error_t *rpc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(opt, status, rpc, fmt, ap);
    va_end(ap);
    return status;
}

/* What to do when the server needs a capability mcp declares only on
 * request (-32021 names them in data.requiredCapabilities; a legacy
 * server, which cannot send -32021, names them with -32602). */
static const char *capability_hint(const mcp_error_t *err)
{
    if (!err || (err->code != MCP_MISSING_CLIENT_CAPABILITY && err->code != MCP_INVALID_PARAMS))
        return "";
    const json_t *needed = json_object_get(err->data, "requiredCapabilities");
    if (json_object_get(needed, "sampling"))
        return "; to answer sampling requests, pass --sample-command CMD";
    if (json_object_get(needed, "roots"))
        return "; to offer roots, pass --root PATH";
    return "";
}

int cli_fail_call(const cli_options_t *opt, const char *what, int rc, const mcp_error_t *err)
{
    int status = cli_status_for(rc);
    const char *detail = err && err->message[0] ? err->message : mcp_strerror(rc);
    if (status == CLI_EXIT_INTERRUPTED)
        return cli_fail(opt, status, NULL, "%s: interrupted", what);
    if (rc == MCP_ERPC)
        return cli_fail(opt, status, err, "%s: the server answered with an error: %s (%d)%s",
                        what, detail, err ? err->code : 0, capability_hint(err));
    if (rc == MCP_ETIMEDOUT)
        return cli_fail(opt, status, NULL, "%s: %s (see --timeout)", what,
                        err && err->message[0] ? err->message : "no answer in time");
    if (rc == MCP_EAUTH)
        return cli_fail(opt, status, NULL,
                        "%s: the server requires authorization (%s); see --token and --oauth",
                        what, detail);
    return cli_fail(opt, status, NULL, "%s: %s", what, detail);
}

int cli_usage_error(const char *fmt, ...)
{
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    term_stderr_lock();
    fprintf(stderr, "mcp: %s\nTry 'mcp --help' for more information.\n", message);
    term_stderr_unlock();
    if (usage_json)
        print_error_document(NULL, CLI_EXIT_USAGE, NULL, message);
    return CLI_EXIT_USAGE;
}
