/*
 * The command line -> cli_options_t.
 */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "args_typing.h"
#include "failure.h"

bool cli_strings_push(cli_strings_t *list, const char *s)
{
    if (list->n == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 8;
        const char **grown = realloc(list->v, cap * sizeof *grown);
        if (!grown)
            return false;
        list->v = grown;
        list->cap = cap;
    }
    list->v[list->n++] = s;
    return true;
}

void cli_strings_free(cli_strings_t *list)
{
    free(list->v);
    memset(list, 0, sizeof *list);
}

void cli_options_free(cli_options_t *opt)
{
    cli_strings_t *lists[] = {&opt->words, &opt->headers,   &opt->answers,
                              &opt->roots, &opt->subscribe, &opt->listen_task_ids};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        cli_strings_free(lists[i]);
}

/* ------------------------------------------------------------------------
 * The options
 * ------------------------------------------------------------------------ */

typedef enum option_id {
    O_CONFIG, O_ERA, O_JSON, O_HEADER, O_TOKEN, O_TOKEN_ENV, O_OAUTH, O_TIMEOUT, O_LOG_LEVEL,
    O_VERBOSE, O_INSECURE, O_ANSWER, O_YES, O_DECLINE, O_SAMPLE_COMMAND, O_ROOT, O_ARGS,
    O_TOOLS, O_PROMPTS, O_RESOURCES, O_SUBSCRIBE, O_TASK, O_COUNT, O_DETACH, O_WAIT, O_CANCEL,
    O_HELP, O_VERSION
} option_id_t;

typedef struct option_spec {
    const char *name;   /* long name, without "--" */
    char letter;        /* short name, or 0 */
    bool takes_value;
    unsigned only_for;  /* CLI_OPT_* of the commands that take it; 0: all */
    option_id_t id;
} option_spec_t;

static const option_spec_t specs[] = {
    {"config", 'c', true, 0, O_CONFIG},
    {"era", 0, true, 0, O_ERA},
    {"json", 'j', false, 0, O_JSON},
    {"header", 'H', true, 0, O_HEADER},
    {"token", 0, true, 0, O_TOKEN},
    {"token-env", 0, true, 0, O_TOKEN_ENV},
    {"oauth", 0, false, 0, O_OAUTH},
    {"timeout", 't', true, 0, O_TIMEOUT},
    {"log-level", 0, true, 0, O_LOG_LEVEL},
    {"verbose", 'v', false, 0, O_VERBOSE},
    {"insecure", 'k', false, 0, O_INSECURE},
    {"answer", 'a', true, 0, O_ANSWER},
    {"yes", 'y', false, 0, O_YES},
    {"decline", 0, false, 0, O_DECLINE},
    {"sample-command", 0, true, 0, O_SAMPLE_COMMAND},
    {"root", 0, true, 0, O_ROOT},
    {"args", 0, true, CLI_OPT_ARGS, O_ARGS},
    {"tools", 0, false, CLI_OPT_LISTEN, O_TOOLS},
    {"prompts", 0, false, CLI_OPT_LISTEN, O_PROMPTS},
    {"resources", 0, false, CLI_OPT_LISTEN, O_RESOURCES},
    {"subscribe", 0, true, CLI_OPT_LISTEN, O_SUBSCRIBE},
    {"task", 0, true, CLI_OPT_LISTEN, O_TASK},
    {"count", 0, true, CLI_OPT_LISTEN, O_COUNT},
    {"detach", 0, false, CLI_OPT_DETACH, O_DETACH},
    {"wait", 0, false, CLI_OPT_TASK, O_WAIT},
    {"cancel", 0, false, CLI_OPT_TASK, O_CANCEL},
    {"help", 'h', false, 0, O_HELP},
    {"version", 'V', false, 0, O_VERSION},
};

#define N_SPECS (sizeof specs / sizeof specs[0])

static const option_spec_t *find_long(const char *name, size_t len)
{
    for (size_t i = 0; i < N_SPECS; i++)
        if (strlen(specs[i].name) == len && strncmp(specs[i].name, name, len) == 0)
            return &specs[i];
    return NULL;
}

static const option_spec_t *find_short(char letter)
{
    for (size_t i = 0; i < N_SPECS; i++)
        if (specs[i].letter == letter)
            return &specs[i];
    return NULL;
}

static const char *const log_levels[] = {"debug",    "info",  "notice", "warning",
                                         "error",    "critical", "alert", "emergency"};

static bool push(cli_strings_t *list, const char *s)
{
    if (cli_strings_push(list, s))
        return true;
    cli_usage_error("out of memory");
    return false;
}

/* Stores one option, marking it in `used` (checked against the command
 * once it is known). */
static int apply(cli_options_t *opt, const option_spec_t *spec, const char *value, bool *used)
{
    used[spec - specs] = true;
    char *end;
    switch (spec->id) {
    case O_CONFIG:
        opt->config_path = value;
        break;
    case O_ERA:
        if (strcmp(value, "auto") == 0)
            opt->era = MCP_CLIENT_ERA_AUTO;
        else if (strcmp(value, "modern") == 0)
            opt->era = MCP_CLIENT_ERA_MODERN;
        else if (strcmp(value, "legacy") == 0)
            opt->era = MCP_CLIENT_ERA_LEGACY;
        else
            return cli_usage_error("--era takes auto, modern or legacy, not \"%s\"", value);
        opt->era_set = true;
        break;
    case O_JSON:
        opt->json = true;
        break;
    case O_HEADER: {
        const char *colon = strchr(value, ':');
        if (!colon || colon == value)
            return cli_usage_error("--header takes \"Name: value\", not \"%s\"", value);
        if (!push(&opt->headers, value))
            return CLI_EXIT_USAGE;
        break;
    }
    case O_TOKEN:
        opt->token = value;
        break;
    case O_TOKEN_ENV:
        opt->token_env = value;
        break;
    case O_OAUTH:
        opt->oauth = true;
        break;
    case O_TIMEOUT:
        errno = 0;
        opt->timeout_s = strtod(value, &end);
        if (errno || end == value || *end || !(opt->timeout_s > 0) || !isfinite(opt->timeout_s) ||
            opt->timeout_s > 1e9)
            return cli_usage_error("--timeout takes a number of seconds above 0, not \"%s\"",
                                   value);
        break;
    case O_LOG_LEVEL: {
        bool known = false;
        for (size_t i = 0; i < sizeof log_levels / sizeof log_levels[0]; i++)
            known = known || strcmp(log_levels[i], value) == 0;
        if (!known)
            return cli_usage_error("--log-level takes debug, info, notice, warning, error, "
                                   "critical, alert or emergency, not \"%s\"",
                                   value);
        opt->log_level = value;
        break;
    }
    case O_VERBOSE:
        opt->verbose = true;
        break;
    case O_INSECURE:
        opt->insecure = true;
        break;
    case O_ANSWER: {
        char key[256];
        const char *v;
        bool raw;
        if (!args_split(value, key, sizeof key, &v, &raw))
            return cli_usage_error("--answer takes KEY=VALUE, not \"%s\"", value);
        if (!push(&opt->answers, value))
            return CLI_EXIT_USAGE;
        break;
    }
    case O_YES:
        opt->yes = true;
        break;
    case O_DECLINE:
        opt->decline = true;
        break;
    case O_SAMPLE_COMMAND:
        opt->sample_command = value;
        break;
    case O_ROOT:
        if (!push(&opt->roots, value))
            return CLI_EXIT_USAGE;
        break;
    case O_ARGS:
        opt->args_json = value;
        break;
    case O_TOOLS:
        opt->listen_tools = true;
        break;
    case O_PROMPTS:
        opt->listen_prompts = true;
        break;
    case O_RESOURCES:
        opt->listen_resources = true;
        break;
    case O_SUBSCRIBE:
        if (!push(&opt->subscribe, value))
            return CLI_EXIT_USAGE;
        break;
    case O_TASK:
        if (!push(&opt->listen_task_ids, value))
            return CLI_EXIT_USAGE;
        break;
    case O_DETACH:
        opt->detach = true;
        break;
    case O_WAIT:
        opt->task_wait = true;
        break;
    case O_CANCEL:
        opt->task_cancel = true;
        break;
    case O_COUNT:
        errno = 0;
        opt->count = strtol(value, &end, 10);
        if (errno || end == value || *end || opt->count < 1)
            return cli_usage_error("--count takes a number of events above 0, not \"%s\"", value);
        break;
    case O_HELP:
        opt->help = true;
        break;
    case O_VERSION:
        opt->version = true;
        break;
    }
    return CLI_EXIT_OK;
}

/* Reads the option in argv[*i] (and its value, which may be the next
 * word). */
static int take_option(int argc, char **argv, int *i, cli_options_t *opt, bool *used)
{
    const char *word = argv[*i];
    const option_spec_t *spec;
    const char *value = NULL;
    if (word[1] == '-') {
        const char *name = word + 2;
        const char *eq = strchr(name, '=');
        spec = find_long(name, eq ? (size_t)(eq - name) : strlen(name));
        if (!spec)
            return cli_usage_error("unknown option \"%s\"", word);
        if (eq && !spec->takes_value)
            return cli_usage_error("--%s takes no value", spec->name);
        value = eq ? eq + 1 : NULL;
    } else {
        spec = find_short(word[1]);
        if (!spec)
            return cli_usage_error("unknown option \"-%c\"", word[1]);
        if (word[2] && spec->takes_value) {
            value = word + 2;
        } else if (word[2]) {
            /* Flags may be grouped: -vy. */
            for (const char *c = word + 1; *c; c++) {
                const option_spec_t *flag = find_short(*c);
                if (!flag || flag->takes_value)
                    return cli_usage_error("\"%s\": -%c cannot be grouped with other options",
                                           word, *c);
                int rc = apply(opt, flag, NULL, used);
                if (rc != CLI_EXIT_OK)
                    return rc;
            }
            return CLI_EXIT_OK;
        }
    }
    if (spec->takes_value && !value) {
        if (*i + 1 >= argc)
            return cli_usage_error("--%s needs a value", spec->name);
        value = argv[++*i];
    }
    return apply(opt, spec, value, used);
}

/* ------------------------------------------------------------------------
 * The whole line
 * ------------------------------------------------------------------------ */

/* Checks what only makes sense together, once everything is read. `used`
 * marks the options seen (by their index in specs). */
static int check_combinations(const cli_options_t *opt, const bool *used)
{
    const cli_command_t *cmd = opt->command;
    for (size_t i = 0; i < N_SPECS; i++)
        if (used[i] && specs[i].only_for && !(specs[i].only_for & cmd->options))
            return cli_usage_error("%s does not take --%s (see mcp %s --help)", cmd->name,
                                   specs[i].name, cmd->name);
    if (opt->words.n < cmd->min_words || opt->words.n > cmd->max_words)
        return cli_usage_error("usage: mcp TARGET %s %s", cmd->name, cmd->synopsis);
    if (opt->yes && opt->decline)
        return cli_usage_error("--yes and --decline contradict each other");
    if (opt->task_wait && opt->task_cancel)
        return cli_usage_error("--wait and --cancel contradict each other");
    if (opt->token && opt->token_env)
        return cli_usage_error("give --token or --token-env, not both");
    if (opt->oauth && (opt->token || opt->token_env))
        return cli_usage_error("--oauth gets its own token: no --token or --token-env with it");
    return CLI_EXIT_OK;
}

int args_parse(int argc, char **argv, cli_options_t *opt)
{
    memset(opt, 0, sizeof *opt);
    int end = argc; /* where "--" is, if anywhere */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0) {
            end = i;
            opt->server_argv = argv + i + 1;
            break;
        }
    /* --json first, so that a mistake anywhere else still gets its
     * document (a value that happens to read "--json" is one too). */
    for (int i = 1; i < end; i++)
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "-j") == 0)
            cli_usage_json(true);
    if (opt->server_argv && !opt->server_argv[0])
        return cli_usage_error("\"--\" must be followed by the server's command line");

    cli_strings_t positional = {0};
    bool used[N_SPECS] = {false};
    int rc = CLI_EXIT_OK;
    for (int i = 1; rc == CLI_EXIT_OK && i < end; i++) {
        if (argv[i][0] == '-' && argv[i][1])
            rc = take_option(end, argv, &i, opt, used);
        else if (!cli_strings_push(&positional, argv[i]))
            rc = cli_usage_error("out of memory");
    }
    if (rc != CLI_EXIT_OK) {
        cli_strings_free(&positional);
        return rc;
    }

    /* mcp TARGET COMMAND WORDS... or mcp COMMAND WORDS... -- SERVER...;
     * "mcp help [COMMAND]" and "mcp COMMAND --help" need no target. */
    size_t first = 0;
    if (positional.n > 0 && strcmp(positional.v[0], "help") == 0 && !opt->server_argv) {
        opt->help = true;
        first = 1;
    } else if (!opt->server_argv && positional.n > 0 &&
               !(opt->help && cli_command_find(positional.v[0]))) {
        opt->target = positional.v[first++];
    }
    const char *name = first < positional.n ? positional.v[first++] : NULL;
    opt->command = name ? cli_command_find(name) : NULL;
    for (size_t i = first; i < positional.n; i++)
        if (!cli_strings_push(&opt->words, positional.v[i]))
            rc = cli_usage_error("out of memory");
    cli_strings_free(&positional);
    if (rc == CLI_EXIT_OK && opt->help && name && !opt->command)
        return cli_usage_error("unknown command \"%s\"", name);
    if (rc != CLI_EXIT_OK || opt->help || opt->version)
        return rc;

    if (!name && opt->server_argv)
        return cli_usage_error("no command given before \"--\"");
    if (!name && !opt->target)
        return cli_usage_error("no server and no command given");
    if (!name && cli_command_find(opt->target))
        return cli_usage_error("%s: no server given: put a URL or a configured server name "
                               "before the command, or the server's command line after --",
                               opt->target);
    if (!name)
        return cli_usage_error("no command given after \"%s\"", opt->target);
    if (!opt->command && opt->server_argv && opt->words.n > 0 &&
        cli_command_find(opt->words.v[0]))
        return cli_usage_error("give either a TARGET or a server command line after \"--\", "
                               "not both");
    if (!opt->command)
        return cli_usage_error("unknown command \"%s\"", name);
    return check_combinations(opt, used);
}
