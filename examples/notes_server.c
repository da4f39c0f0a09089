/*
 * notes_server: a small MCP server to copy from.
 *
 * It keeps notes in memory and shows every kind of thing a server offers:
 *   tools      echo (text), add (structured output), countdown (progress,
 *              cancellation), add_note (changes a resource), delete_note
 *              (asks the user to confirm first), export_notes (a task:
 *              the client gets a handle at once and asks for the result)
 *   resources  notes://index (a static resource that changes), and the
 *              template note://{name} (one per note)
 *   prompts    summarize_notes, with a `style` argument
 *   completion values for the prompt's style and for note names
 *   skills     with --skills DIR, the skills in DIR (examples/skills has
 *              one: note-taking), for skills/list and skills/get
 *
 * Run it over stdio:   notes_server [--skills DIR]
 * (an MCP client starts it and talks JSON-RPC on its stdin/stdout),
 * or over HTTP:        notes_server [--skills DIR] --http [PORT]
 * (it prints its URL on stderr; PORT 0 or none picks a free one; Ctrl-C
 * stops it).
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/mcp.h>

/* ------------------------------------------------------------------------
 * The notes, shared by all handlers (which run on several threads).
 * ------------------------------------------------------------------------ */

static pthread_mutex_t notes_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *notes; /* {"name": "text", ...} */
static mcp_server_t *server;

static char *note_text(const char *name)
{
    pthread_mutex_lock(&notes_lock);
    const char *text = json_string_value(json_object_get(notes, name));
    char *copy = text ? strdup(text) : NULL;
    pthread_mutex_unlock(&notes_lock);
    return copy;
}

/* ------------------------------------------------------------------------
 * Tools
 * ------------------------------------------------------------------------ */

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    if (!text)
        return mcp_call_tool_error(call, "text must be a string");
    return mcp_call_add_text(call, text);
}

static int add(mcp_call_t *call, void *user)
{
    double a, b;
    if (!mcp_call_arg_number(call, "a", &a) || !mcp_call_arg_number(call, "b", &b))
        return mcp_call_tool_error(call, "a and b must be numbers");
    /* Structured output matching the tool's outputSchema; the SDK adds its
     * JSON text as a text block for clients that only read content. */
    return mcp_call_set_structured(call, json_pack("{s:f}", "sum", a + b));
}

static int countdown(mcp_call_t *call, void *user)
{
    int64_t seconds = 3;
    mcp_call_arg_int(call, "seconds", &seconds);
    if (seconds < 0 || seconds > 60)
        return mcp_call_tool_error(call, "seconds must be between 0 and 60");
    for (int64_t i = 0; i < seconds; i++) {
        mcp_call_progress(call, (double)i, (double)seconds, "counting down");
        if (mcp_call_sleep(call, 1000) != MCP_OK)
            return MCP_ECANCELED; /* the client gave up; nothing more is sent */
    }
    mcp_call_progress(call, (double)seconds, (double)seconds, "done");
    return mcp_call_add_textf(call, "Lift-off after %lld seconds!", (long long)seconds);
}

/* A slow job, run as a task when the client allows it (the Tasks
 * extension): the call is answered at once with a task handle, and the
 * client polls for the outcome. For other clients it is a plain call. */
static int export_notes(mcp_call_t *call, void *user)
{
    int64_t seconds = 2;
    mcp_call_arg_int(call, "seconds", &seconds);
    if (seconds < 0 || seconds > 60)
        return mcp_call_tool_error(call, "seconds must be between 0 and 60");
    int rc = mcp_call_start_task(call);
    if (rc != MCP_OK && rc != MCP_EUNSUPPORTED)
        return rc;
    pthread_mutex_lock(&notes_lock);
    char *all = json_dumps(notes, JSON_INDENT(2) | JSON_SORT_KEYS);
    size_t count = json_object_size(notes);
    pthread_mutex_unlock(&notes_lock);
    if (!all)
        return MCP_ENOMEM;
    char message[64];
    snprintf(message, sizeof message, "bundling %zu notes", count);
    mcp_call_set_task_message(call, message); /* MCP_EINVAL when not a task */
    rc = mcp_call_sleep(call, seconds * 1000); /* the work, simulated */
    if (rc == MCP_OK)
        rc = mcp_call_add_textf(call, "%s", all);
    free(all);
    return rc == MCP_OK ? MCP_OK : MCP_ECANCELED;
}

static int add_note(mcp_call_t *call, void *user)
{
    const char *name = mcp_call_arg_string(call, "name");
    const char *text = mcp_call_arg_string(call, "text");
    if (!name || !text || !name[0])
        return mcp_call_tool_error(call, "name and text are required");
    pthread_mutex_lock(&notes_lock);
    json_object_set_new(notes, name, json_string(text));
    pthread_mutex_unlock(&notes_lock);
    /* Listeners subscribed to the index (or to this note) hear about it. */
    char uri[512];
    snprintf(uri, sizeof uri, "note://%s", name);
    mcp_server_notify_resource_updated(server, uri);
    mcp_server_notify_resource_updated(server, "notes://index");
    return mcp_call_add_textf(call, "Saved note \"%s\".", name);
}

/* Deleting asks the user first. On the first run the handler has no answer
 * yet, so it asks and returns MCP_INPUT_REQUIRED; the client shows the
 * question, and the handler runs again with the answer. An answer sent
 * with the first request answers no question of ours, and is not taken:
 * the confirmation counts only from round 1 on. */
static int delete_note(mcp_call_t *call, void *user)
{
    const char *name = mcp_call_arg_string(call, "name");
    if (!name)
        return mcp_call_tool_error(call, "name is required");

    const json_t *answer = mcp_call_round(call) > 0 ? mcp_call_input(call, "confirm") : NULL;
    if (!answer) {
        char question[300];
        snprintf(question, sizeof question, "Really delete the note \"%s\"?", name);
        json_t *schema = json_pack("{s:s, s:{s:{s:s, s:s}}, s:[s]}", "type", "object",
                                   "properties", "confirm", "type", "boolean", "title",
                                   "Delete it", "required", "confirm");
        int rc = mcp_call_elicit(call, "confirm", question, schema, MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    const char *action = json_string_value(json_object_get(answer, "action"));
    json_t *confirmed = json_object_get(json_object_get(answer, "content"), "confirm");
    if (!action || strcmp(action, "accept") != 0 || !json_is_true(confirmed))
        return mcp_call_add_textf(call, "Kept the note \"%s\".", name);

    pthread_mutex_lock(&notes_lock);
    int removed = json_object_del(notes, name) == 0;
    pthread_mutex_unlock(&notes_lock);
    if (!removed)
        return mcp_call_tool_error(call, "there is no note \"%s\"", name);
    mcp_server_notify_resource_updated(server, "notes://index");
    return mcp_call_add_textf(call, "Deleted the note \"%s\".", name);
}

/* ------------------------------------------------------------------------
 * Resources
 * ------------------------------------------------------------------------ */

static int read_index(mcp_call_t *call, const char *uri, void *user)
{
    pthread_mutex_lock(&notes_lock);
    json_t *names = json_array();
    const char *name;
    json_t *text;
    json_object_foreach(notes, name, text)
        json_array_append_new(names, json_string(name));
    pthread_mutex_unlock(&notes_lock);
    char *body = json_dumps(names, JSON_COMPACT);
    json_decref(names);
    int rc = mcp_call_add_resource_text(call, uri, "application/json", body ? body : "[]");
    free(body);
    return rc;
}

static int read_note(mcp_call_t *call, const char *uri, void *user)
{
    char *text = note_text(mcp_call_uri_var(call, "name"));
    if (!text)
        return mcp_call_resource_not_found(call);
    int rc = mcp_call_add_resource_text(call, uri, "text/plain", text);
    free(text);
    return rc;
}

/* ------------------------------------------------------------------------
 * Prompts and completion
 * ------------------------------------------------------------------------ */

static const char *const styles[] = {"brief", "detailed", "bullet points"};

static int summarize_notes(mcp_call_t *call, void *user)
{
    const char *style = mcp_call_arg_string(call, "style");
    pthread_mutex_lock(&notes_lock);
    char *all = json_dumps(notes, JSON_COMPACT);
    pthread_mutex_unlock(&notes_lock);
    mcp_call_set_description(call, "Summarize the notes");
    int rc = mcp_call_add_message(
        call, "user",
        mcp_content_textf("Summarize these notes (%s): %s", style ? style : "brief",
                          all ? all : "{}"));
    free(all);
    return rc;
}

static int complete(mcp_call_t *call, mcp_completion_ref_kind_t kind, const char *ref,
                    const char *argument, const char *value, const json_t *context, void *user)
{
    size_t n = strlen(value);
    if (kind == MCP_REF_PROMPT && strcmp(argument, "style") == 0) {
        for (size_t i = 0; i < sizeof styles / sizeof styles[0]; i++)
            if (strncmp(styles[i], value, n) == 0)
                mcp_call_add_completion(call, styles[i]);
    } else if (kind == MCP_REF_RESOURCE && strcmp(argument, "name") == 0) {
        pthread_mutex_lock(&notes_lock);
        const char *name;
        json_t *text;
        json_object_foreach(notes, name, text)
            if (strncmp(name, value, n) == 0)
                mcp_call_add_completion(call, name);
        pthread_mutex_unlock(&notes_lock);
    }
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Putting it together
 * ------------------------------------------------------------------------ */

static int add_everything(mcp_server_t *srv, mcp_error_t *err)
{
    int rc;
    if ((rc = mcp_server_add_tool(srv, &(mcp_tool_t){
             .name = "echo", .description = "Echo the text back",
             .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
                             "\"required\":[\"text\"]}",
             .annotations = "{\"readOnlyHint\":true}",
             .handler = echo}, err)))
        return rc;
    if ((rc = mcp_server_add_tool(srv, &(mcp_tool_t){
             .name = "add", .description = "Add two numbers",
             .input_schema = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
                             "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"]}",
             .output_schema = "{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"number\"}},"
                              "\"required\":[\"sum\"]}",
             .handler = add}, err)))
        return rc;
    if ((rc = mcp_server_add_tool(srv, &(mcp_tool_t){
             .name = "countdown", .description = "Count down, reporting progress every second",
             .input_schema = "{\"type\":\"object\",\"properties\":{\"seconds\":"
                             "{\"type\":\"integer\",\"minimum\":0,\"maximum\":60}}}",
             .handler = countdown}, err)))
        return rc;
    if ((rc = mcp_server_add_tool(srv, &(mcp_tool_t){
             .name = "add_note", .description = "Save a note",
             .input_schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                             "\"text\":{\"type\":\"string\"}},\"required\":[\"name\",\"text\"]}",
             .handler = add_note}, err)))
        return rc;
    if ((rc = mcp_server_add_tool(srv, &(mcp_tool_t){
             .name = "delete_note", .description = "Delete a note, after asking the user",
             .input_schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
                             "\"required\":[\"name\"]}",
             .annotations = "{\"destructiveHint\":true}",
             .handler = delete_note}, err)))
        return rc;
    if ((rc = mcp_server_add_tool(srv, &(mcp_tool_t){
             .name = "export_notes",
             .description = "Bundle every note into one JSON text (slow: runs as a task)",
             .input_schema = "{\"type\":\"object\",\"properties\":{\"seconds\":"
                             "{\"type\":\"integer\",\"minimum\":0,\"maximum\":60}}}",
             .annotations = "{\"readOnlyHint\":true}",
             .tasks = MCP_TASKS_OPTIONAL, .handler = export_notes}, err)))
        return rc;
    if ((rc = mcp_server_add_resource(srv, &(mcp_resource_t){
             .uri = "notes://index", .name = "index", .description = "The names of all notes",
             .mime_type = "application/json", .handler = read_index}, err)))
        return rc;
    if ((rc = mcp_server_add_resource_template(srv, &(mcp_resource_template_t){
             .uri_template = "note://{name}", .name = "note", .description = "One note",
             .mime_type = "text/plain", .handler = read_note}, err)))
        return rc;
    static const mcp_prompt_arg_t style_arg[] = {
        {.name = "style", .description = "brief, detailed or bullet points"}};
    if ((rc = mcp_server_add_prompt(srv, &(mcp_prompt_t){
             .name = "summarize_notes", .description = "Ask the model to summarize the notes",
             .args = style_arg, .n_args = 1, .handler = summarize_notes}, err)))
        return rc;
    return mcp_server_set_completion(srv, complete, NULL);
}

/* Serves over HTTP on 127.0.0.1 until SIGINT or SIGTERM. */
static int serve_http(uint16_t port)
{
    /* Blocked before any thread starts, so that only sigwait() gets them. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    mcp_error_t err = {0};
    mcp_http_server_t *http;
    int rc = mcp_http_server_start(server, &(mcp_http_options_t){.port = port}, &http, &err);
    if (rc != MCP_OK) {
        fprintf(stderr, "notes_server: %s\n", err.message);
        mcp_error_clear(&err);
        return rc;
    }
    fprintf(stderr, "notes_server: serving http://127.0.0.1:%u/mcp\n",
            (unsigned)mcp_http_server_port(http));
    int sig;
    sigwait(&stop, &sig);
    mcp_http_server_stop(http);
    return MCP_OK;
}

int main(int argc, char **argv)
{
    const char *skills = NULL;
    bool http = false;
    uint16_t port = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--skills") == 0 && i + 1 < argc) {
            skills = argv[++i];
        } else if (strcmp(argv[i], "--http") == 0) {
            http = true;
            if (i + 1 < argc && argv[i + 1][0] != '-')
                port = (uint16_t)atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: notes_server [--skills DIR] [--http [PORT]]\n");
            return 2;
        }
    }

    mcp_error_t err = {0};
    notes = json_pack("{s:s}", "welcome", "Notes live in memory while the server runs.");
    server = mcp_server_new(&(mcp_server_options_t){
        .name = "notes-server", .version = MCP_LIB_VERSION, .title = "Notes",
        .instructions = "Keeps short notes. Use add_note to save one; read note://{name}.",
        .log = mcp_log_stderr}, &err);
    /* Each subdirectory of DIR with a SKILL.md is a skill, read once. */
    if (!server || add_everything(server, &err) != MCP_OK ||
        (skills && mcp_server_add_skills(server, skills, NULL, &err) != MCP_OK)) {
        fprintf(stderr, "notes_server: %s\n", err.message);
        mcp_error_clear(&err);
        mcp_server_free(server);
        json_decref(notes);
        return 1;
    }
    int rc = http ? serve_http(port) : mcp_server_run_stdio(server, NULL);
    mcp_server_free(server);
    json_decref(notes);
    return rc == MCP_OK ? 0 : 1;
}
