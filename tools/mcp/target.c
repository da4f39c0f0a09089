/*
 * Connecting to the server the command line names.
 */
#include "target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mcp/host.h>
#include <mcp/oauth.h>

#include "diagnostics.h"
#include "elicit.h"
#include "elicit_tty.h"
#include "failure.h"
#include "oauth_store.h"
#include "roots.h"
#include "sample.h"
#include "server_stderr.h"
#include "signals.h"
#include "term.h"

struct target_state {
    mcp_server_config_t config; /* a configured server (libmcp's host parser) */
    /* The options in force: the command line's, else the configuration's. */
    mcp_client_era_t era;
    int64_t timeout_ms;         /* 0: the default */
    server_stderr_t *stderr_lines;
    elicit_policy_t policy;
    json_t *roots;              /* ListRootsResult for --root, or NULL */
    const char **headers;       /* the HTTP headers, NULL-terminated */
    mcp_oauth_t *oauth;         /* --oauth: the token source */
    char *oauth_url;            /* ... for this server (oauth_store.h) */
};

static bool is_url(const char *s)
{
    return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

/* Where the server is: stdio argv (and env, cwd) or a URL (and headers). */
typedef struct place {
    const char *const *argv;
    const char *const *env;
    const char *cwd;
    const char *url;
    const char *const *config_headers;
} place_t;

/* Warnings about the configuration file (unknown keys) go to stderr. */
static void warn_config(void *user, mcp_log_level_t level, const char *msg)
{
    (void)user;
    (void)level;
    fprintf(stderr, "mcp: warning: %s\n", msg);
}

static int resolve(const cli_options_t *opt, struct target_state *st, place_t *where)
{
    memset(where, 0, sizeof *where);
    if (opt->server_argv) {
        where->argv = (const char *const *)opt->server_argv;
        return CLI_EXIT_OK;
    }
    if (is_url(opt->target)) {
        where->url = opt->target;
        return CLI_EXIT_OK;
    }
    /* The same file format and the same parser as libmcp's host. */
    char *path = opt->config_path ? strdup(opt->config_path) : mcp_server_configs_default_path();
    if (!path)
        return cli_fail(opt, CLI_EXIT_USAGE, NULL,
                        "no configuration file: give --config FILE (no home directory is known)");
    mcp_error_t err = {0};
    int found = mcp_server_configs_load_one(path, opt->target, &st->config, warn_config,
                                            (void *)opt, &err);
    free(path);
    if (found == MCP_EINVAL) {
        int rc = cli_fail(opt, CLI_EXIT_USAGE, NULL, "%s", err.message);
        mcp_error_clear(&err);
        return rc;
    }
    if (found != MCP_OK) {
        const char *hint = strchr(opt->target, '/') || strchr(opt->target, ' ')
                               ? " (to run a server command, put it after --)"
                               : "";
        int rc = cli_fail(opt, CLI_EXIT_USAGE, NULL,
                          "\"%s\" is not a URL, nor a configured server: %s%s", opt->target,
                          err.message, hint);
        mcp_error_clear(&err);
        return rc;
    }
    if (!opt->era_set && st->config.era != MCP_CLIENT_ERA_AUTO)
        st->era = st->config.era;
    if (!(opt->timeout_s > 0))
        st->timeout_ms = st->config.timeout_ms;
    where->argv = (const char *const *)st->config.argv;
    where->env = (const char *const *)st->config.env;
    where->cwd = st->config.cwd;
    where->url = st->config.url;
    where->config_headers = (const char *const *)st->config.headers;
    return CLI_EXIT_OK;
}

/* The headers of the configuration, then those of --header. */
static int gather_headers(const cli_options_t *opt, const place_t *where,
                          struct target_state *st)
{
    size_t n = 0;
    while (where->config_headers && where->config_headers[n])
        n++;
    st->headers = calloc(n + opt->headers.n + 1, sizeof *st->headers);
    if (!st->headers)
        return cli_fail(opt, CLI_EXIT_CONNECTION, NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        st->headers[i] = where->config_headers[i];
    for (size_t i = 0; i < opt->headers.n; i++)
        st->headers[n + i] = opt->headers.v[i];
    return CLI_EXIT_OK;
}

static mcp_client_t *new_client(const cli_options_t *opt, struct target_state *st)
{
    mcp_error_t err = {0};
    /* From the configuration, only the extensions it implies (its era and
     * timeout are in st already, under the command line's). */
    mcp_client_options_t implied = {0};
    mcp_server_config_client_options(&st->config, &implied);
    mcp_client_t *client = mcp_client_new(&(mcp_client_options_t){
        .name = "mcp",
        .version = MCP_LIB_VERSION,
        .title = "mcp, the libmcp command-line client",
        .era = st->era,
        .timeout_ms = st->timeout_ms,
        .log_level = opt->log_level,
        /* Long tools may answer with a task: the client follows it, so a
         * command sees the result as from any call (Ctrl-C cancels it). */
        .tasks = true,
        .extensions = implied.extensions,
        .elicit = elicit_answer,
        .elicit_modes = MCP_ELICIT_FORM | MCP_ELICIT_URL,
        .elicit_user = &st->policy,
        .sample = opt->sample_command ? sample_with_command : NULL,
        .sample_user = (void *)opt->sample_command,
        .roots = st->roots ? roots_list : NULL,
        .roots_user = st->roots,
        .on_log = diagnostics_server_log,
        .log = opt->verbose ? diagnostics_library_log : NULL,
        .trace = opt->verbose ? diagnostics_trace : NULL,
    }, &err);
    if (!client)
        cli_fail(opt, CLI_EXIT_USAGE, NULL, "%s", err.message);
    mcp_error_clear(&err);
    return client;
}

/* The bearer token of --token or --token-env, else of the configuration,
 * or NULL. */
static int token_of(const cli_options_t *opt, const struct target_state *st, const char **token)
{
    *token = opt->token ? opt->token : st->config.token;
    if (opt->token_env) {
        *token = getenv(opt->token_env);
        if (!*token || !**token)
            return cli_fail(opt, CLI_EXIT_USAGE, NULL,
                            "--token-env %s: the variable is not set", opt->token_env);
    }
    return CLI_EXIT_OK;
}

/* --oauth: the user signs in at the terminal (elicit_tty.c). */
static int authorize_at_terminal(void *user, const char *url, char **redirect_out)
{
    (void)user;
    if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO)) {
        /* What an earlier sign-in kept serves scripts; a new one needs a
         * person. */
        term_notef("signing in needs a terminal (stdin and stderr): run the command at one "
                   "once, and later runs reuse the sign-in");
        return MCP_EAUTH;
    }
    int answered = tty_authorize(url, redirect_out);
    return answered > 0 ? 0 : answered == 0 ? MCP_EAUTH : MCP_ECANCELED;
}

/* The token source of --oauth (or of a configured server's "oauth"), with
 * what an earlier command kept (oauth_store.h). A loopback redirect URI,
 * as native apps use: nothing listens there; the user brings the address
 * back. */
static int make_oauth(const cli_options_t *opt, struct target_state *st, const char *url)
{
    mcp_oauth_options_t options = {
        .redirect_uri = "http://127.0.0.1:8976/callback",
        .authorize = authorize_at_terminal,
        .client_name = "mcp (libmcp command-line client)",
        .timeout_ms = st->timeout_ms,
        .insecure = opt->insecure,
    };
    mcp_server_config_oauth_options(&st->config, &options); /* the config outlives st->oauth */
    mcp_error_t err = {0};
    st->oauth = mcp_oauth_new(&options, &err);
    int status = st->oauth ? CLI_EXIT_OK
                           : cli_fail(opt, CLI_EXIT_USAGE, NULL, "--oauth: %s", err.message);
    mcp_error_clear(&err);
    if (st->oauth && !(st->oauth_url = strdup(url)))
        return cli_fail(opt, CLI_EXIT_CONNECTION, NULL, "out of memory");
    if (st->oauth)
        oauth_store_load(st->oauth, url);
    return status;
}

static int connect_http(cli_session_t *s, const place_t *where)
{
    const cli_options_t *opt = s->opt;
    const char *token;
    int status = token_of(opt, s->state, &token);
    if (status == CLI_EXIT_OK)
        status = gather_headers(opt, where, s->state);
    if (status == CLI_EXIT_OK && (opt->oauth || s->state->config.oauth))
        status = make_oauth(opt, s->state, where->url);
    if (status != CLI_EXIT_OK)
        return status;
    s->transport = MCP_TRANSPORT_HTTP;
    s->target_json = json_string(where->url);
    mcp_error_t err = {0};
    int rc = mcp_client_connect_http(s->client, &(mcp_http_target_t){
        .url = where->url,
        .headers = s->state->headers,
        .bearer_token = token,
        .token = s->state->oauth ? mcp_oauth_token : NULL,
        .token_user = s->state->oauth,
        .token_proof = s->state->oauth && s->state->config.oauth_dpop ? mcp_oauth_proof : NULL,
        .connect_timeout_ms = s->state->timeout_ms,
        .insecure = opt->insecure,
    }, &err);
    if (rc != MCP_OK) {
        char what[1100];
        snprintf(what, sizeof what, "cannot connect to %s", where->url);
        /* Why the sign-in failed says more than the refusal it caused. */
        if (s->state->oauth && rc == MCP_EAUTH && mcp_oauth_last_error(s->state->oauth, NULL))
            mcp_oauth_last_error(s->state->oauth, &err);
        status = cli_fail_call(opt, what, rc, &err);
    }
    mcp_error_clear(&err);
    return status;
}

static int connect_stdio(cli_session_t *s, const place_t *where)
{
    const cli_options_t *opt = s->opt;
    if (opt->headers.n || opt->token || opt->token_env || opt->oauth || opt->insecure)
        return cli_fail(opt, CLI_EXIT_USAGE, NULL,
                        "--header, --token, --token-env, --oauth and --insecure are for HTTP "
                        "servers; this one runs over stdio");
    s->transport = MCP_TRANSPORT_STDIO;
    s->target_json = json_array();
    for (size_t i = 0; where->argv[i]; i++)
        json_array_append_new(s->target_json, json_string(where->argv[i]));
    if (!(s->state->stderr_lines = server_stderr_new(opt->verbose)))
        return cli_fail(opt, CLI_EXIT_CONNECTION, NULL, "out of memory");
    mcp_error_t err = {0};
    int rc = mcp_client_connect_stdio(s->client, &(mcp_stdio_target_t){
        .argv = where->argv,
        .env = where->env,
        .cwd = where->cwd,
        .on_stderr = server_stderr_line,
        .stderr_user = s->state->stderr_lines,
        /* A terminal's Ctrl-C must reach mcp only: mcp cancels the call
         * on the wire, then stops the server (signals.c). In mcp's group
         * the server would die of it first, before the cancellation. */
        .own_process_group = true,
    }, &err);
    int status = CLI_EXIT_OK;
    if (rc != MCP_OK) {
        char what[1100];
        snprintf(what, sizeof what, "cannot connect to the server %s", where->argv[0]);
        status = cli_fail_call(opt, what, rc, &err);
    }
    mcp_error_clear(&err);
    return status;
}

int target_open(cli_session_t *s, const cli_options_t *opt)
{
    memset(s, 0, sizeof *s);
    s->opt = opt;
    s->request.cancel = signals_cancel();
    struct target_state *st = s->state = calloc(1, sizeof *s->state);
    if (!st)
        return cli_fail(opt, CLI_EXIT_CONNECTION, NULL, "out of memory");
    st->policy = (elicit_policy_t){
        .answers = opt->answers.v,
        .n_answers = opt->answers.n,
        .yes = opt->yes,
        .decline = opt->decline,
        .interactive = isatty(STDIN_FILENO) && isatty(STDERR_FILENO),
    };
    st->era = opt->era;
    st->timeout_ms = opt->timeout_s > 0 ? (int64_t)(opt->timeout_s * 1000.0) : 0;
    char why[1024];
    if (opt->roots.n && !(st->roots = roots_result(opt->roots.v, opt->roots.n, why, sizeof why)))
        return cli_fail(opt, CLI_EXIT_USAGE, NULL, "%s", why);

    place_t where;
    int status = resolve(opt, st, &where);
    if (status != CLI_EXIT_OK)
        return status;
    if (!(s->client = new_client(opt, st)))
        return CLI_EXIT_USAGE;
    status = where.url ? connect_http(s, &where) : connect_stdio(s, &where);
    s->connected = status == CLI_EXIT_OK;
    return status;
}

void target_close(cli_session_t *s, bool show_server_stderr)
{
    /* The client first: it stops the server and reads its output to the
     * end, so that its last words are in. */
    mcp_client_free(s->client);
    s->client = NULL;
    struct target_state *st = s->state;
    if (st && st->oauth)
        oauth_store_save(st->oauth, st->oauth_url); /* for the next command */
    if (st) {
        if (show_server_stderr)
            server_stderr_show(st->stderr_lines);
        mcp_server_config_clear(&st->config);
        server_stderr_free(st->stderr_lines);
        json_decref(st->roots);
        free(st->headers);
        mcp_oauth_free(st->oauth);
        free(st->oauth_url);
        free(st);
    }
    json_decref(s->target_json);
    memset(s, 0, sizeof *s);
}
