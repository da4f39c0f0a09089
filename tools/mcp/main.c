/*
 * mcp: the command-line client of libmcp.
 *
 * Reads the command line, connects to the server it names, runs the
 * command and exits with a status that tells what happened (cli.h). See
 * mcp --help and mcp(1).
 */
#include <signal.h>
#include <stdio.h>

#include "args.h"
#include "cli.h"
#include "failure.h"
#include "help.h"
#include "progress.h"
#include "signals.h"
#include "target.h"
#include "term.h"

static int run(const cli_options_t *opt)
{
    cli_session_t s;
    int status = target_open(&s, opt);
    if (status == CLI_EXIT_OK)
        status = opt->command->run(&s);
    progress_done();
    /* A connection that broke after it was made: what the server last said
     * explains it (a failed connect says so in its own message). */
    target_close(&s, status == CLI_EXIT_CONNECTION && s.connected && !s.connection_intact);
    /* Whatever broke after Ctrl-C broke because of it. */
    if (status != CLI_EXIT_OK && signals_interrupted())
        status = CLI_EXIT_INTERRUPTED;
    return status;
}

int main(int argc, char **argv)
{
    term_init();
    /* A reader that went away (mcp ... | head) ends the output, not mcp:
     * writes fail instead, and the connection is closed properly. */
    signal(SIGPIPE, SIG_IGN);
    if (!signals_start()) {
        term_errorf("cannot set up signal handling");
        return CLI_EXIT_CONNECTION;
    }
    cli_options_t opt;
    int status = args_parse(argc, argv, &opt);
    if (status == CLI_EXIT_OK && opt.version)
        help_print_version();
    else if (status == CLI_EXIT_OK && opt.help && opt.command)
        help_print_command(opt.command);
    else if (status == CLI_EXIT_OK && opt.help)
        help_print();
    else if (status == CLI_EXIT_OK)
        status = run(&opt);
    cli_options_free(&opt);
    return status;
}
