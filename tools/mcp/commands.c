/*
 * The commands: names, synopses and help texts. Each command's code is in
 * its cmd_*.c file.
 */
#include <stdint.h>
#include <string.h>

#include "cli.h"

static const cli_command_t info = {
    "info", "", "show the server: era, protocol version, identity, capabilities",
    "Shows what mcp learned when it connected: the era (modern or legacy), the\n"
    "negotiated protocol version, the server's name and version, its capabilities\n"
    "and its instructions.\n",
    0, 0, 0, cmd_info};

static const cli_command_t tools = {
    "tools", "", "list the tools",
    "Lists the server's tools (all pages): name, arguments and description.\n"
    "Arguments are shown as name:type; optional ones in [brackets].\n",
    0, 0, 0, cmd_tools};

static const cli_command_t call = {
    "call", "TOOL [KEY=VALUE ...] [--args JSON] [--detach]", "call a tool",
    "Calls TOOL. Each KEY=VALUE sets an argument, typed by the tool's input schema:\n"
    "  count=5 is the integer 5 when count is an integer, the string \"5\" when a\n"
    "  string; flag=yes is true for a boolean; tags=a,b is [\"a\",\"b\"] for an array.\n"
    "KEY:=JSON sets an argument to a JSON value as it is (opts:='{\"a\":1}').\n"
    "--args JSON gives the arguments as one object; KEY=VALUE words add to it.\n"
    "\n"
    "Prints the result's content (text as it is, other blocks described), or the\n"
    "structured content when there is no other. Progress is shown on stderr.\n"
    "When the tool reports an error (isError), its content goes to stderr and the\n"
    "exit status is 1. If the server asks a question meanwhile, see --answer,\n"
    "--yes and --decline.\n"
    "\n"
    "A server may make a task of a long call (the Tasks extension): mcp follows\n"
    "it to its end, and Ctrl-C cancels it. With --detach the task is left\n"
    "running and its id printed, for mcp TARGET task ID later.\n",
    1, SIZE_MAX, CLI_OPT_ARGS | CLI_OPT_DETACH, cmd_call};

static const cli_command_t resources = {
    "resources", "", "list the resources",
    "Lists the server's resources (all pages): URI, name, MIME type, description.\n",
    0, 0, 0, cmd_resources};

static const cli_command_t templates = {
    "templates", "", "list the resource templates",
    "Lists the server's resource templates (all pages): URI template, name,\n"
    "MIME type, description. Read a resource of a template with read URI.\n",
    0, 0, 0, cmd_templates};

static const cli_command_t read_cmd = {
    "read", "URI", "read a resource",
    "Reads the resource at URI and prints its text. Binary contents are written\n"
    "as they are when stdout is not a terminal (mcp T read URI > file), and\n"
    "described otherwise.\n",
    1, 1, 0, cmd_read};

static const cli_command_t prompts = {
    "prompts", "", "list the prompts",
    "Lists the server's prompts (all pages): name, arguments, description.\n",
    0, 0, 0, cmd_prompts};

static const cli_command_t prompt = {
    "prompt", "NAME [KEY=VALUE ...]", "get a prompt",
    "Gets the prompt NAME with the given arguments (strings) and prints its\n"
    "messages.\n",
    1, SIZE_MAX, 0, cmd_prompt};

static const cli_command_t complete = {
    "complete", "prompt NAME | resource URI-TEMPLATE  ARG[=PARTIAL] [KEY=VALUE ...]",
    "complete an argument of a prompt or resource template",
    "Asks the server for completions of argument ARG of a prompt or of a\n"
    "resource template, given what was typed so far (PARTIAL, may be empty).\n"
    "Further KEY=VALUE words give arguments already chosen (context).\n"
    "Prints one value per line.\n"
    "\n"
    "  mcp T complete prompt summarize_notes style=b\n"
    "  mcp T complete resource 'note://{name}' name=\n",
    3, SIZE_MAX, 0, cmd_complete};

static const cli_command_t listen = {
    "listen",
    "[--tools] [--prompts] [--resources] [--subscribe URI ...] [--task ID ...] [--count N]",
    "wait for change notifications",
    "Subscribes to the server's notifications and prints each as it comes:\n"
    "  --tools, --prompts, --resources   changes to those lists\n"
    "  --subscribe URI                   updates of the resource URI (repeatable)\n"
    "  --task ID                         the status of the task ID (repeatable)\n"
    "Without any of these: changes to all three lists.\n"
    "Runs until Ctrl-C, until N notifications came (--count N), or until\n"
    "--timeout SECONDS passed (then the exit status is 4 if --count was not\n"
    "reached). On a modern server this is subscriptions/listen; on a legacy one,\n"
    "resources/subscribe and the server's own notifications.\n",
    0, 0, CLI_OPT_LISTEN, cmd_listen};

static const cli_command_t skills = {
    "skills", "", "list the skills",
    "Lists the server's skills (the Skills extension): name, files and\n"
    "description. With --json, every entry as the server gave it: the\n"
    "frontmatter and the manifest of files with their digests.\n",
    0, 0, 0, cmd_skills};

static const cli_command_t skill = {
    "skill", "NAME [FILE]", "print a skill's SKILL.md, or one of its files",
    "Prints the SKILL.md of the skill NAME (its name, or the URI of its\n"
    "SKILL.md), or its file FILE (a path inside the skill, such as\n"
    "references/FORMS.md, or the file's URI). Only what the skill's manifest\n"
    "vouches for is printed: the file's size and SHA-256 digest must match,\n"
    "and a SKILL.md's frontmatter must be the one the server listed, else\n"
    "the exit status is 3 and nothing is printed. Nothing of a skill is\n"
    "fetched but the file asked for.\n",
    1, 2, 0, cmd_skill};

static const cli_command_t task = {
    "task", "ID [--wait | --cancel]", "show, follow or cancel a task",
    "Shows the task ID (the Tasks extension; call --detach prints such ids):\n"
    "its status and, once it completed, its result as call prints it.\n"
    "  --wait     follow it to its end, answering its questions as call does,\n"
    "             and print its result; Ctrl-C stops waiting, not the task\n"
    "  --cancel   ask the server to cancel it, then show its status\n"
    "Exit status: 0 while it works or waits for input and once it completed,\n"
    "1 when its result is a tool error, 3 when it failed or was cancelled.\n",
    1, 1, CLI_OPT_TASK, cmd_task};

static const cli_command_t ping = {
    "ping", "", "check that the server answers",
    "Sends ping (legacy servers) and shows how long the answer took. Modern\n"
    "servers have no ping; for them mcp sends server/discover instead.\n",
    0, 0, 0, cmd_ping};

const cli_command_t *const cli_commands[] = {
    &info, &tools, &call, &resources, &templates, &read_cmd, &prompts, &prompt, &complete,
    &task, &skills, &skill, &listen, &ping, NULL};

const cli_command_t *cli_command_find(const char *name)
{
    for (size_t i = 0; name && cli_commands[i]; i++)
        if (strcmp(cli_commands[i]->name, name) == 0)
            return cli_commands[i];
    return NULL;
}
