/*
 * A small legacy (2025-11-25) stdio server for the client's era tests,
 * written straight on jansson so that it behaves exactly as the test
 * needs. The first argument says how it treats a request other than
 * initialize before the handshake (the era probe):
 *
 *   exit     writes "legacy_stdio_server: unknown method ..." to stderr and
 *            exits 3 (a server that dies on the probe)
 *   ignore   ignores it (a silent legacy server: the probe times out)
 *   error    answers -32601
 *   error_exit  answers -32600 ("Received request before initialization
 *            was complete") and exits 1, as some servers end a session
 *            that did not start with initialize
 *
 * A second argument "skills" adds the Skills extension to the capabilities
 * it declares, as a server written for both eras might: no legacy
 * revision has extensions, so a client must not take it at its word.
 *
 * After initialize it knows: ping, logging/setLevel, tools/list (echo and
 * ask), tools/call echo (text back, after a progress notification when
 * asked for progress) and ask (sends sampling/createMessage to the client
 * and answers with the sampled text), resources/subscribe (answers, then
 * sends notifications/resources/updated for the URI) and
 * resources/unsubscribe. tools/call state (not listed) answers
 * "<pid> <level>": its process id, and the level of the last
 * logging/setLevel ("none" before one), so that a test can kill it and
 * tell a restarted process from the old one.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void send_json(json_t *msg)
{
    char *line = json_dumps(msg, JSON_COMPACT);
    printf("%s\n", line);
    fflush(stdout);
    free(line);
    json_decref(msg);
}

static void result(json_t *id, json_t *res)
{
    send_json(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", res));
}

static void error(json_t *id, int code, const char *message)
{
    send_json(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                        "code", code, "message", message));
}

static json_t *text(const char *t)
{
    return json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", t);
}

/* Reads the next message from stdin; NULL at EOF. */
static json_t *read_message(void)
{
    static char line[1 << 16];
    while (fgets(line, sizeof line, stdin)) {
        json_t *msg = json_loads(line, 0, NULL);
        if (msg)
            return msg;
    }
    return NULL;
}

/* tools/call ask: a sampling request to the client, whose answer is the
 * tool's result. */
static void ask(json_t *id)
{
    send_json(json_pack("{s:s, s:s, s:s, s:{s:[{s:s, s:{s:s, s:s}}], s:i}}", "jsonrpc", "2.0",
                        "id", "sample-1", "method", "sampling/createMessage", "params",
                        "messages", "role", "user", "content", "type", "text", "text", "hi",
                        "maxTokens", 10));
    json_t *answer;
    while ((answer = read_message())) {
        const char *aid = json_string_value(json_object_get(answer, "id"));
        if (aid && strcmp(aid, "sample-1") == 0 && !json_object_get(answer, "method"))
            break;
        json_decref(answer);
    }
    const char *sampled = json_string_value(json_object_get(
        json_object_get(json_object_get(answer, "result"), "content"), "text"));
    result(id, text(sampled ? sampled : "no sample"));
    json_decref(answer);
}

/* The level of the last logging/setLevel. */
static char log_level[16] = "none";

static void call_tool(json_t *id, json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    if (name && strcmp(name, "ask") == 0) {
        ask(id);
        return;
    }
    if (name && strcmp(name, "state") == 0) {
        char state[64];
        snprintf(state, sizeof state, "%ld %s", (long)getpid(), log_level);
        result(id, text(state));
        return;
    }
    if (!name || strcmp(name, "echo") != 0) {
        error(id, -32602, "unknown tool");
        return;
    }
    if (token)
        send_json(json_pack("{s:s, s:s, s:{s:O, s:i, s:i}}", "jsonrpc", "2.0", "method",
                            "notifications/progress", "params", "progressToken", token,
                            "progress", 1, "total", 2));
    const char *message = json_string_value(
        json_object_get(json_object_get(params, "arguments"), "message"));
    result(id, text(message ? message : ""));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "error";
    bool skills = argc > 2 && strcmp(argv[2], "skills") == 0;
    if (strcmp(mode, "silent") == 0) {
        /* Reads and never answers. */
        json_t *msg;
        while ((msg = read_message()))
            json_decref(msg);
        return 0;
    }
    bool initialized = false;
    json_t *msg;
    while ((msg = read_message())) {
        const char *method = json_string_value(json_object_get(msg, "method"));
        json_t *id = json_object_get(msg, "id");
        json_t *params = json_object_get(msg, "params");
        if (!method || !id) {
            json_decref(msg);
            continue;
        }
        if (strcmp(method, "initialize") == 0) {
            initialized = true;
            json_t *caps = json_pack("{s:{}, s:{s:b}, s:{s:b, s:b}}", "logging", "tools",
                                     "listChanged", 1, "resources", "subscribe", 1,
                                     "listChanged", 0);
            if (skills)
                json_object_set_new(caps, "extensions",
                                    json_pack("{s:{}}", "io.modelcontextprotocol/skills"));
            result(id, json_pack("{s:s, s:o, s:{s:s, s:s}}", "protocolVersion", "2025-11-25",
                                 "capabilities", caps, "serverInfo", "name", "legacy-stdio",
                                 "version", "1.0"));
        } else if (!initialized) {
            if (strcmp(mode, "exit") == 0) {
                fprintf(stderr, "legacy_stdio_server: unknown method %s before initialize\n",
                        method);
                json_decref(msg);
                return 3;
            }
            if (strcmp(mode, "error") == 0)
                error(id, -32601, "Method not found");
            if (strcmp(mode, "error_exit") == 0) {
                error(id, -32600, "Received request before initialization was complete");
                json_decref(msg);
                return 1;
            }
        } else if (strcmp(method, "logging/setLevel") == 0) {
            const char *level = json_string_value(json_object_get(params, "level"));
            snprintf(log_level, sizeof log_level, "%s", level ? level : "?");
            result(id, json_object());
        } else if (strcmp(method, "ping") == 0 || strcmp(method, "resources/unsubscribe") == 0) {
            result(id, json_object());
        } else if (strcmp(method, "resources/subscribe") == 0) {
            result(id, json_object());
            send_json(json_pack("{s:s, s:s, s:{s:O}}", "jsonrpc", "2.0", "method",
                                "notifications/resources/updated", "params", "uri",
                                json_object_get(params, "uri")));
        } else if (strcmp(method, "tools/list") == 0) {
            result(id, json_pack("{s:[{s:s, s:{s:s}}, {s:s, s:{s:s}}]}", "tools", "name",
                                 "echo", "inputSchema", "type", "object", "name", "ask",
                                 "inputSchema", "type", "object"));
        } else if (strcmp(method, "tools/call") == 0) {
            call_tool(id, params);
        } else {
            error(id, -32601, "Method not found");
        }
        json_decref(msg);
    }
    return 0;
}
