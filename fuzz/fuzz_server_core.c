/*
 * Fuzzes the server core end to end: every line of the input is one
 * message for mcp_server_submit(), on a server that offers tools (one of
 * them asks for input), resources, a template, a prompt, completion and a
 * skill.
 * Parsing, the validation ladder, routing, the handlers' results, MRTR
 * with requestState, progress, logging and cancellation all run on
 * peer-controlled bytes.
 *
 * Input: a flags byte, then newline-separated messages.
 *   flags & 1: HTTP. Each message comes with the headers a conforming
 *              client would send for it (MCP-Protocol-Version, Mcp-Method,
 *              Mcp-Name and the tool's Mcp-Param-Region), so rung 1 passes
 *              and method code runs; otherwise stdio, all messages on one
 *              connection (notifications/cancelled can name a request).
 *   flags & 2: with an authenticated principal.
 *
 * The requestState codec has a fixed key, clock and randomness, so a seed
 * can carry a state the server really sealed. The harness waits for every
 * sink to be released before returning, checking the sink contract
 * (release exactly once, nothing sent after the response).
 *
 * Messages without the modern claim are legacy traffic: on stdio an
 * initialize opens a legacy session, and a handler that asks for input
 * has its requests sent to the "client" (the sink), which never answers:
 * the bridge gives up after a millisecond. Over HTTP an initialize mints a
 * session nobody can name again; sessions expire after a millisecond, so
 * they do not pile up from one input to the next.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/header_value.h"
#include "mcp/request.h"
#include "mcp/server_core.h"
#include "server/aead_codec.h"
#include "support/fuzz_sink.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MESSAGES 32

static mcp_server_t *server;

/* ------------------------------------------------------------------------
 * The server
 * ------------------------------------------------------------------------ */

static int echo(mcp_call_t *call, void *user)
{
    const char *text = mcp_call_arg_string(call, "text");
    if (!text)
        return mcp_call_tool_error(call, "text is required");
    return mcp_call_add_text(call, text);
}

static int structured(mcp_call_t *call, void *user)
{
    return mcp_call_set_structured(call, json_deep_copy(mcp_call_arguments(call)));
}

static int failing(mcp_call_t *call, void *user)
{
    int64_t code = 0;
    mcp_call_arg_int(call, "code", &code);
    return mcp_call_fail_data(call, (int)code, json_deep_copy(mcp_call_arguments(call)),
                              "failed as asked");
}

/* Progress and logs, driven by the arguments. */
static int noisy(mcp_call_t *call, void *user)
{
    double step = 1;
    mcp_call_arg_number(call, "step", &step);
    for (int i = 1; i <= 3 && !mcp_call_cancelled(call); i++)
        mcp_call_progress(call, i * step, 3 * step, "step");
    const char *level = mcp_call_arg_string(call, "level");
    mcp_call_log(call, level ? level : "info", "fuzz", json_deep_copy(mcp_call_arguments(call)));
    mcp_call_logf(call, "error", "%s", mcp_call_target(call));
    mcp_call_sleep(call, 0);
    return mcp_call_add_textf(call, "round %d", mcp_call_round(call));
}

/* Two rounds: an elicitation, then (with state) sampling or roots. */
static int confirm(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "confirm");
    if (!answer) {
        json_t *schema = json_pack("{s:s, s:{s:{s:s}}}", "type", "object", "properties", "ok",
                                   "type", "boolean");
        mcp_call_set_state(call, json_pack("{s:i}", "round", mcp_call_round(call)));
        int rc = mcp_call_elicit(call, "confirm", "Sure?", schema, MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    if (!mcp_call_input(call, "more") && mcp_call_state(call)) {
        json_t *params = json_pack("{s:[{s:s, s:{s:s, s:s}}], s:i}", "messages", "role", "user",
                                   "content", "type", "text", "text", "More?", "maxTokens", 8);
        int rc = mcp_call_sample(call, "more", params, 0);
        if (rc == MCP_EUNSUPPORTED)
            rc = mcp_call_list_roots(call, "more", 0);
        if (rc == MCP_OK)
            return MCP_INPUT_REQUIRED;
    }
    const char *action = json_string_value(json_object_get(answer, "action"));
    return mcp_call_add_textf(call, "%s", action ? action : "?");
}

static int read_resource(mcp_call_t *call, const char *uri, void *user)
{
    const char *id = mcp_call_uri_var(call, "id");
    if (id && strcmp(id, "missing") == 0)
        return mcp_call_resource_not_found(call);
    if (id && strcmp(id, "secret") == 0 && !mcp_call_input(call, "pin")) {
        json_t *schema = json_pack("{s:s, s:{s:{s:s}}}", "type", "object", "properties", "pin",
                                   "type", "string");
        int rc = mcp_call_elicit(call, "pin", "PIN?", schema, MCP_INPUT_NEEDED);
        return rc < 0 ? rc : MCP_INPUT_REQUIRED;
    }
    int rc = mcp_call_add_resource_text(call, uri, "text/plain", id ? id : "static");
    if (mcp_call_uri_var(call, "q"))
        rc |= mcp_call_add_resource_blob(call, uri, NULL, uri, strlen(uri));
    return rc;
}

static int greet(mcp_call_t *call, void *user)
{
    mcp_call_set_description(call, mcp_call_arg_string(call, "name"));
    return mcp_call_add_message(call, "user",
                                mcp_content_textf("Hello %s", mcp_call_arg_string(call, "name")));
}

static int complete(mcp_call_t *call, mcp_completion_ref_kind_t kind, const char *ref,
                    const char *argument, const char *value, const json_t *context, void *user)
{
    for (size_t i = 0; i < strlen(value) % 8; i++)
        mcp_call_add_completion(call, value);
    return mcp_call_set_completion_total(call, (int64_t)json_object_size(context),
                                         kind == MCP_REF_RESOURCE);
}

static int64_t fixed_clock(void *user)
{
    return INT64_C(1700000000000);
}

/* Zeros: the fuzzer wants the same state for the same request. */
static int fixed_random(void *user, uint8_t *buf, size_t n)
{
    memset(buf, 0, n);
    return MCP_OK;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    server = mcp_server_new(&(mcp_server_options_t){.name = "fuzz", .version = "1",
                                                    .instructions = "fuzz", .page_size = 2,
                                                    .legacy_input_timeout_ms = 1,
                                                    .session_idle_ms = 1},
                            NULL);
    uint8_t key[MCP_STATE_KEY_BYTES];
    memset(key, 0x42, sizeof key);
    mcp_keyring_t *ring = mcp_keyring_new();
    mcp_keyring_add(ring, "fuzz", key);
    mcp_aead_options_t opts = {.ttl_ms = 60000, .now_ms = fixed_clock};
    mcp_server_set_codec(server, mcp_codec_aead_new_with_random(ring, &opts, fixed_random, NULL,
                                                                NULL));
    const mcp_tool_t tools[] = {
        {.name = "echo", .handler = echo,
         .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"},"
                         "\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}}}"},
        {.name = "structured", .handler = structured, .output_schema = "{\"type\":\"object\"}"},
        {.name = "fail", .handler = failing},
        {.name = "noisy", .handler = noisy},
        {.name = "confirm", .handler = confirm},
        {.name = "needs_sampling", .handler = echo,
         .required_capabilities = "{\"sampling\":{}}"},
    };
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        mcp_server_add_tool(server, &tools[i], NULL);
    mcp_server_add_resource(server, &(mcp_resource_t){.uri = "fuzz://static", .name = "static",
                                                      .handler = read_resource},
                            NULL);
    mcp_server_add_resource_template(
        server,
        &(mcp_resource_template_t){.uri_template = "fuzz://items/{id}{?q}", .name = "item",
                                   .handler = read_resource},
        NULL);
    static const mcp_prompt_arg_t name_arg[] = {{.name = "name", .required = true}};
    mcp_server_add_prompt(server, &(mcp_prompt_t){.name = "greet", .args = name_arg, .n_args = 1,
                                                  .handler = greet},
                          NULL);
    mcp_server_set_completion(server, complete, NULL);
    /* The conformance fixture's skill: skills/list, skills/get,
     * resources/directory/read and its files as resources. */
    mcp_server_add_skills(server, FUZZ_SKILLS_DIR, NULL, NULL);
    return 0;
}

/* ------------------------------------------------------------------------
 * HTTP headers a conforming client would send for a message
 * ------------------------------------------------------------------------ */

typedef struct headers {
    mcp_header_t items[4];
    char *values[4];
    mcp_headers_t list;
} headers_t;

static void add_header(headers_t *h, const char *name, char *value_owned)
{
    if (!value_owned)
        return;
    h->items[h->list.count].name = name;
    h->items[h->list.count].value = value_owned;
    h->values[h->list.count] = value_owned;
    h->list.count++;
}

static void headers_for(headers_t *h, const char *bytes, size_t len)
{
    memset(h, 0, sizeof *h);
    h->list.items = h->items;
    json_t *msg = json_loadb(bytes, len, 0, NULL);
    const json_t *params = json_object_get(msg, "params");
    const char *method = json_string_value(json_object_get(msg, "method"));
    const json_t *version =
        json_object_get(json_object_get(params, "_meta"), MCP_META_PROTOCOL_VERSION);
    if (json_is_string(version))
        add_header(h, MCP_HEADER_PROTOCOL_VERSION, strdup(json_string_value(version)));
    if (method) {
        add_header(h, MCP_HEADER_METHOD, strdup(method));
        const char *param = mcp_method_name_param(method);
        char *encoded = NULL;
        if (param && mcp_header_value_from_json(json_object_get(params, param), &encoded) == 0)
            add_header(h, MCP_HEADER_NAME, encoded);
    }
    char *region = NULL;
    if (mcp_header_value_from_json(
            json_object_get(json_object_get(params, "arguments"), "region"), &region) == 0)
        add_header(h, "Mcp-Param-Region", region);
    json_decref(msg);
}

static void headers_clear(headers_t *h)
{
    for (size_t i = 0; i < h->list.count; i++)
        free(h->values[i]);
}

/* ------------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    const char *text = (const char *)data + 1;
    size_t left = size - 1;
    bool http = flags & 1;
    mcp_conn_t *conn = http ? NULL : mcp_conn_new(server, MCP_TRANSPORT_STDIO);
    fuzz_sink_t sinks[MAX_MESSAGES];

    for (int n = 0; n < MAX_MESSAGES && left > 0; n++) {
        const char *nl = memchr(text, '\n', left);
        size_t len = nl ? (size_t)(nl - text) : left;
        headers_t h = {0};
        if (http)
            headers_for(&h, text, len);
        mcp_request_context_t ctx = {
            .transport = http ? MCP_TRANSPORT_HTTP : MCP_TRANSPORT_STDIO,
            .headers = http ? &h.list : NULL,
            .principal = flags & 2 ? "fuzzer" : NULL,
        };
        fuzz_sink_init(&sinks[n]);
        if (mcp_server_submit(server, conn, text, len, &ctx, &sinks[n].sink, NULL) != MCP_OK)
            fuzz_sink_abandon(&sinks[n]);
        headers_clear(&h);
        text += nl ? len + 1 : len;
        left -= nl ? len + 1 : len;
    }

    fuzz_sinks_wait_all();
    mcp_conn_free(conn);
    return 0;
}
