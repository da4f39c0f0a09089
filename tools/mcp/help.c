/*
 * Help texts. mcp(1) says the same at length.
 */
#include "help.h"

#include <stdio.h>

#include <mcp/version.h>

#include "term.h"

static void heading(const char *text)
{
    printf("%s%s%s\n", term_sgr(stdout, TERM_BOLD), text, term_sgr(stdout, TERM_RESET));
}

void help_print(void)
{
    heading("mcp - talk to any MCP server, over stdio or HTTP");
    printf("\n");
    heading("Usage:");
    printf("  mcp [OPTIONS] TARGET COMMAND [ARGS...]\n"
           "  mcp [OPTIONS] COMMAND [ARGS...] -- SERVER-COMMAND [SERVER-ARGS...]\n"
           "\n"
           "TARGET is the URL of a Streamable HTTP endpoint (http://, https://) or the\n"
           "name of a server in the configuration file; after -- comes the command line\n"
           "of a server to run over stdio.\n\n");
    heading("Commands:");
    for (size_t i = 0; cli_commands[i]; i++)
        printf("  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
    printf("\n");
    heading("Options:");
    printf("  -c, --config FILE         servers by name, in the \"mcpServers\" JSON format\n"
           "                            (default $MCP_CONFIG, ~/.config/mcp/servers.json)\n"
           "      --era auto|modern|legacy\n"
           "                            protocol era (default auto: probe, then fall back)\n"
           "  -j, --json                machine-readable output on stdout\n"
           "  -H, --header 'NAME: VALUE'\n"
           "                            add an HTTP header (repeatable)\n"
           "      --token TOKEN         send Authorization: Bearer TOKEN (HTTP)\n"
           "      --token-env VAR       ... with the token taken from variable VAR\n"
           "      --oauth               sign in with OAuth when the server asks (HTTP):\n"
           "                            open the address shown, paste where it lands;\n"
           "                            kept in ~/.local/state/mcp/oauth.json\n"
           "  -t, --timeout SECONDS     how long to wait for each answer (default 60);\n"
           "                            for listen, how long to listen\n"
           "      --log-level LEVEL     ask for server logs at LEVEL and above (debug,\n"
           "                            info, notice, warning, error, ...), shown on stderr\n"
           "  -v, --verbose             show every message on the wire on stderr\n"
           "  -k, --insecure            do not verify TLS certificates\n"
           "  -h, --help                this help; mcp COMMAND --help for one command\n"
           "  -V, --version             the version of mcp and the protocols it speaks\n"
           "\n");
    heading("When the server asks:");
    printf("  -a, --answer KEY=VALUE    the answer to form field KEY (repeatable)\n"
           "  -y, --yes                 accept: defaults for other fields, yes to yes/no\n"
           "      --decline             decline every question\n"
           "      --sample-command CMD  answer sampling requests with CMD: request JSON on\n"
           "                            its stdin, CreateMessageResult JSON on its stdout\n"
           "      --root PATH           offer the directory PATH as a root (repeatable)\n"
           "Otherwise questions are asked at the terminal, field by field.\n\n");
    heading("Exit status:");
    printf("  0 success             1 the tool reported an error   2 usage error\n"
           "  3 the server answered with an error (or broke the protocol), or a\n"
           "    library the request needs is missing here (libcurl, libyaml, Nettle)\n"
           "  4 connection failed, was lost, or timed out; authorization was refused\n"
           "    or failed; out of memory                          130 interrupted\n\n");
    heading("Examples:");
    printf("  mcp http://localhost:8080/mcp tools\n"
           "  mcp call add a=2 b=40 -- ./notes_server\n"
           "  mcp notes listen --subscribe notes://index\n"
           "  mcp --json everything info\n"
           "\n"
           "See mcp(1) for more.\n");
}

void help_print_command(const cli_command_t *cmd)
{
    heading("Usage:");
    printf("  mcp [OPTIONS] TARGET %s %s\n", cmd->name, cmd->synopsis);
    printf("  mcp [OPTIONS] %s %s -- SERVER-COMMAND [SERVER-ARGS...]\n\n", cmd->name,
           cmd->synopsis);
    printf("%s\n", cmd->help);
    printf("Options for every command: mcp --help.\n");
}

void help_print_version(void)
{
    size_t n;
    const char *const *versions = mcp_protocol_versions(&n);
    printf("mcp (libmcp) %s\nprotocol versions:", mcp_lib_version());
    for (size_t i = 0; i < n; i++)
        printf(" %s", versions[i]);
    printf("\n");
}
