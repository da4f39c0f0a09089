/*
 * mcp, the command-line client: what the parts of the program share.
 *
 *   main.c          parses the command line, connects, runs the command
 *   args.c          the command line -> cli_options_t
 *   help.c          mcp --help, mcp COMMAND --help, mcp --version
 *   commands.c      the table of commands
 *   cmd_*.c         one file per command (or family of commands)
 *   config.c        the mcpServers configuration file
 *   target.c        connecting to a URL, a command or a configured server
 *   diagnostics.c   server logs, the wire trace (--verbose), libmcp's own
 *   server_stderr.c what a stdio server writes on its stderr
 *   failure.c       turning failures into messages and exit codes
 *   term.c          the terminal: colour, width, the stderr status line
 *   output.c        human output: tables, content blocks, fields
 *   json_out.c      --json output
 *   schema_value.c  typing a word of text by a JSON Schema
 *   args_typing.c   KEY=VALUE words -> tool and prompt arguments
 *   elicit.c        answering elicitation requests (flags or the terminal)
 *   elicit_tty.c    asking the person at the terminal, field by field
 *   sample.c        answering sampling requests with --sample-command
 *   roots.c         the roots offered with --root
 *   progress.c      progress notifications -> a progress bar
 *   signals.c       Ctrl-C: cancel what runs, then stop
 *
 * mcp uses only the public API of libmcp (the headers in include/mcp): it links the
 * shared library, whose other symbols are hidden.
 */
#ifndef MCP_CLI_H
#define MCP_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <mcp/client.h>

/* Exit statuses (mcp(1), EXIT STATUS). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_TOOL_ERROR = 1,    /* the tool ran and reported an error (isError) */
    CLI_EXIT_USAGE = 2,         /* bad command line, arguments or configuration file */
    CLI_EXIT_PROTOCOL = 3,      /* the server answered with an error, or broke the protocol;
                                 * or not supported (MCP_EUNSUPPORTED), here or there */
    CLI_EXIT_CONNECTION = 4,    /* no connection, connection lost, or no answer in time;
                                 * authorization refused or failed; out of memory */
    CLI_EXIT_INTERRUPTED = 130  /* interrupted (Ctrl-C, SIGTERM) */
};

/* A growable list of borrowed strings (argv words). */
typedef struct cli_strings {
    const char **v;
    size_t n, cap;
} cli_strings_t;

/* Appends s; false when out of memory. */
bool cli_strings_push(cli_strings_t *list, const char *s);
void cli_strings_free(cli_strings_t *list);

typedef struct cli_command cli_command_t;

/* Everything the command line says. Strings are borrowed from argv. */
typedef struct cli_options {
    /* The server: a URL or a configured name, or a command after "--". */
    const char *target;
    char *const *server_argv;      /* after "--"; NULL-terminated, or NULL */
    const char *config_path;       /* --config, or NULL for the default */

    const cli_command_t *command;
    cli_strings_t words;           /* the command's positional arguments */

    /* How to talk. */
    mcp_client_era_t era;
    bool era_set;                  /* --era was given */
    bool json;
    bool verbose;
    cli_strings_t headers;         /* --header "Name: value" */
    const char *token;
    const char *token_env;
    bool oauth;                    /* --oauth: sign in at the terminal */
    double timeout_s;              /* 0: the default */
    const char *log_level;
    bool insecure;

    /* Answers to the server's questions. */
    cli_strings_t answers;         /* --answer KEY=VALUE */
    bool yes;
    bool decline;
    const char *sample_command;
    cli_strings_t roots;           /* --root PATH */

    /* Options of single commands. */
    const char *args_json;         /* call --args */
    bool listen_tools, listen_prompts, listen_resources;
    cli_strings_t subscribe;       /* listen --subscribe URI */
    cli_strings_t listen_task_ids; /* listen --task ID */
    long count;                    /* listen --count N (0: no limit) */
    bool detach;                   /* call --detach: a task is not followed */
    bool task_wait;                /* task --wait */
    bool task_cancel;              /* task --cancel */

    bool help;
    bool version;
} cli_options_t;

void cli_options_free(cli_options_t *opt);

/* A connected session, handed to a command. */
typedef struct cli_session {
    const cli_options_t *opt;
    mcp_client_t *client;
    mcp_transport_kind_t transport;
    /* What was connected to, for `info`: the URL, or the command line. */
    json_t *target_json;           /* a string (URL) or an array (argv) */
    bool connected;                /* target_open() succeeded */
    /* Set by a command that fails with CLI_EXIT_CONNECTION on a
     * connection that still works (listen: --timeout passed before
     * --count was reached): the server's stderr does not explain such a
     * failure, and is not shown as if the connection had broken. */
    bool connection_intact;
    /* Per-request options every request uses (Ctrl-C cancels). */
    mcp_request_options_t request;
    /* What target.c keeps for the connection's callbacks. */
    struct target_state *state;
} cli_session_t;

/* Command-specific options (cli_command_t.options). */
enum {
    CLI_OPT_ARGS = 1u << 0,     /* --args */
    CLI_OPT_LISTEN = 1u << 1,   /* --tools --prompts --resources --subscribe --task --count */
    CLI_OPT_DETACH = 1u << 2,   /* --detach */
    CLI_OPT_TASK = 1u << 3      /* --wait --cancel */
};

struct cli_command {
    const char *name;
    const char *synopsis;  /* the arguments, after "mcp TARGET name " */
    const char *summary;   /* one line for mcp --help */
    const char *help;      /* the body of mcp NAME --help */
    size_t min_words;      /* positional arguments */
    size_t max_words;      /* SIZE_MAX: any number */
    unsigned options;      /* CLI_OPT_* it accepts */
    /* Runs the command; returns an exit status. */
    int (*run)(cli_session_t *s);
};

/* The commands, in the order mcp --help lists them; NULL-terminated. */
extern const cli_command_t *const cli_commands[];

/* The command called `name`, or NULL. */
const cli_command_t *cli_command_find(const char *name);

/* The commands (one file each, or one per family). */
int cmd_info(cli_session_t *s);
int cmd_tools(cli_session_t *s);
int cmd_resources(cli_session_t *s);
int cmd_templates(cli_session_t *s);
int cmd_prompts(cli_session_t *s);
int cmd_call(cli_session_t *s);
int cmd_read(cli_session_t *s);
int cmd_prompt(cli_session_t *s);
int cmd_complete(cli_session_t *s);
int cmd_listen(cli_session_t *s);
int cmd_ping(cli_session_t *s);
int cmd_skills(cli_session_t *s);
int cmd_skill(cli_session_t *s);
int cmd_task(cli_session_t *s);

#endif /* MCP_CLI_H */
