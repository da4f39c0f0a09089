/*
 * Tools (and one prompt) that ask the client for input: multi round-trip
 * requests (MRTR, SEP-2322). A handler asks by key and returns
 * MCP_INPUT_REQUIRED; the client answers and retries; the handler runs
 * again and finds the answers with mcp_call_input(). The sealed
 * requestState, its tamper check and the validation of the answers are
 * libmcp's: a handler never sees a state that failed to open.
 *
 * The input-required-result-* scenarios name the keys (user_name,
 * capital_question, client_roots, confirm, step1, ...). The tools of the
 * legacy scenarios (test_sampling, test_elicitation, ...) are written the
 * same way: on a legacy session libmcp turns the same asks into real
 * server-to-client requests.
 */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

/* What a handler returns after asking: the failure, or "ask the client". */
static int asked(int rc)
{
    return rc < 0 ? rc : MCP_INPUT_REQUIRED;
}

/* Asks for a form with one required string property. */
static int ask_string(mcp_call_t *call, const char *key, const char *message,
                      const char *property)
{
    json_t *schema = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties",
                               property, "type", "string", "required", property);
    return mcp_call_elicit(call, key, message, schema, MCP_INPUT_NEEDED);
}

/* Asks for a form with one required boolean "ok". */
static int ask_confirm(mcp_call_t *call, const char *key, const char *message)
{
    return mcp_call_elicit(call, key, message,
                           fixture_json("{\"type\":\"object\",\"properties\":{\"ok\":"
                                        "{\"type\":\"boolean\"}},\"required\":[\"ok\"]}"),
                           MCP_INPUT_NEEDED);
}

/* Asks the client's model one question in plain text. */
static int ask_model(mcp_call_t *call, const char *key, const char *question, int max_tokens,
                     unsigned flags)
{
    json_t *params = json_pack("{s:[{s:s, s:{s:s, s:s}}], s:i}", "messages", "role", "user",
                               "content", "type", "text", "text", question, "maxTokens",
                               max_tokens);
    return mcp_call_sample(call, key, params, flags);
}

/* A string field of an accepted elicitation's content, or `fallback`. */
static const char *answer_field(const json_t *answer, const char *field, const char *fallback)
{
    const json_t *content = json_object_get(answer, "content");
    const char *value = json_string_value(json_object_get(content, field));
    return value ? value : fallback;
}

/* The text of a sampling answer (content is one block, or an array when
 * the model used tools), or `fallback`. */
static const char *sampled_text(const json_t *answer, const char *fallback)
{
    const json_t *content = json_object_get(answer, "content");
    if (json_is_array(content))
        content = json_array_get(content, 0);
    const char *text = json_string_value(json_object_get(content, "text"));
    return text ? text : fallback;
}

/* A string value of the handler's state from the previous round, or NULL. */
static const char *state_field(const mcp_call_t *call, const char *field)
{
    return json_string_value(json_object_get(mcp_call_state(call), field));
}

/* "action=accept, content={...}" for an elicitation answer. */
static int add_elicit_summary(mcp_call_t *call, const char *prefix, const json_t *answer)
{
    const json_t *content = json_object_get(answer, "content");
    char *text = content ? json_dumps(content, JSON_COMPACT) : NULL;
    const char *action = json_string_value(json_object_get(answer, "action"));
    int rc = mcp_call_add_textf(call, "%saction=%s, content=%s", prefix, action ? action : "?",
                                text ? text : "{}");
    free(text);
    return rc;
}

/* ------------------------------------------------------------------------
 * input-required-result-* (one ask of each kind, state, rounds, tamper)
 * ------------------------------------------------------------------------ */

static int mrtr_elicitation(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "user_name");
    if (!answer)
        return asked(ask_string(call, "user_name", "What is your name?", "name"));
    return mcp_call_add_textf(call, "Hello, %s!", answer_field(answer, "name", "stranger"));
}

static int mrtr_sampling(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "capital_question");
    if (!answer)
        return asked(ask_model(call, "capital_question", "What is the capital of France?", 100,
                               MCP_INPUT_NEEDED));
    return mcp_call_add_textf(call, "Sampling result: %s", sampled_text(answer, "(no text)"));
}

static int mrtr_list_roots(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "client_roots");
    if (!answer)
        return asked(mcp_call_list_roots(call, "client_roots", MCP_INPUT_NEEDED));
    const json_t *roots = json_object_get(answer, "roots");
    const char *first = json_string_value(json_object_get(json_array_get(roots, 0), "uri"));
    return mcp_call_add_textf(call, "Found %zu root(s)%s%s", json_array_size(roots),
                              first ? ", the first at " : "", first ? first : "");
}

/* Round 1 stores {"kind": "request-state"}; round 2 finds it again, which
 * proves the client echoed the (sealed) requestState. */
static int mrtr_request_state(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "confirm");
    const char *kind = state_field(call, "kind");
    if (answer && kind && strcmp(kind, "request-state") == 0) {
        bool ok = json_is_true(json_object_get(json_object_get(answer, "content"), "ok"));
        return mcp_call_add_textf(call, "state-ok: requestState validated (ok=%s)",
                                  ok ? "true" : "false");
    }
    mcp_call_set_state(call, json_pack("{s:s}", "kind", "request-state"));
    return asked(ask_confirm(call, "confirm", "Please confirm"));
}

static int mrtr_multiple_inputs(mcp_call_t *call, void *user)
{
    const json_t *name = mcp_call_input(call, "user_name");
    const json_t *greeting = mcp_call_input(call, "greeting");
    const json_t *roots = mcp_call_input(call, "client_roots");
    const char *kind = state_field(call, "kind");
    if (name && greeting && roots && kind && strcmp(kind, "multiple-inputs") == 0)
        return mcp_call_add_textf(call, "Name: %s; Greeting: %s; Roots: %zu",
                                  answer_field(name, "name", "stranger"),
                                  sampled_text(greeting, "Hello!"),
                                  json_array_size(json_object_get(roots, "roots")));

    /* All three at once, in one input_required result. */
    mcp_call_set_state(call, json_pack("{s:s}", "kind", "multiple-inputs"));
    int rc = ask_string(call, "user_name", "What is your name?", "name");
    if (rc == MCP_OK)
        rc = ask_model(call, "greeting", "Generate a greeting", 50, MCP_INPUT_NEEDED);
    if (rc == MCP_OK)
        rc = mcp_call_list_roots(call, "client_roots", MCP_INPUT_NEEDED);
    return asked(rc);
}

/* Three rounds: the name, then the colour (the name travels in the state),
 * then the result. */
static int mrtr_multi_round(mcp_call_t *call, void *user)
{
    const json_t *color = mcp_call_input(call, "step2");
    const char *name = state_field(call, "name");
    if (color && name)
        return mcp_call_add_textf(call, "Multi-round complete for %s who likes %s", name,
                                  answer_field(color, "color", "no colour"));

    const json_t *step1 = mcp_call_input(call, "step1");
    if (step1) {
        mcp_call_set_state(call, json_pack("{s:s}", "name", answer_field(step1, "name", "friend")));
        return asked(ask_string(call, "step2", "Step 2: What is your favorite color?", "color"));
    }
    return asked(ask_string(call, "step1", "Step 1: What is your name?", "name"));
}

/* The state is sealed by libmcp; a tampered one is refused (-32602) before
 * this handler runs, so reaching round 2 means it verified. */
static int mrtr_tampered_state(mcp_call_t *call, void *user)
{
    const char *kind = state_field(call, "kind");
    if (mcp_call_input(call, "confirm") && kind && strcmp(kind, "tamper-test") == 0)
        return mcp_call_add_text(call, "integrity-ok: state verified");
    mcp_call_set_state(call, json_pack("{s:s}", "kind", "tamper-test"));
    return asked(ask_confirm(call, "confirm", "Please confirm"));
}

/* Asks only for what the client declared: without MCP_INPUT_NEEDED an
 * undeclared capability is skipped (MCP_EUNSUPPORTED), not an error. */
static int mrtr_capabilities(mcp_call_t *call, void *user)
{
    const json_t *elicited = mcp_call_input(call, "elicit_input");
    const json_t *sampled = mcp_call_input(call, "sample_input");
    if (elicited || sampled)
        return mcp_call_add_textf(call, "capabilities-ok: received%s%s",
                                  elicited ? " elicit_input" : "", sampled ? " sample_input" : "");

    int n_asked = 0;
    json_t *schema = json_pack("{s:s, s:{s:{s:s}}, s:[s]}", "type", "object", "properties",
                               "value", "type", "string", "required", "value");
    int rc = mcp_call_elicit(call, "elicit_input", "Elicitation input", schema, 0);
    if (rc == MCP_OK)
        n_asked++;
    else if (rc != MCP_EUNSUPPORTED)
        return rc;
    rc = ask_model(call, "sample_input", "Sample request", 50, 0);
    if (rc == MCP_OK)
        n_asked++;
    else if (rc != MCP_EUNSUPPORTED)
        return rc;
    if (n_asked == 0)
        return mcp_call_add_text(call, "No supported capabilities declared");
    return MCP_INPUT_REQUIRED;
}

/* input-required-result-non-tool-request: MRTR on prompts/get. */
static int mrtr_prompt(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "user_context");
    if (!answer)
        return asked(ask_string(call, "user_context", "What context should the prompt use?",
                                "context"));
    return mcp_call_add_message(call, "user",
                                mcp_content_textf("Prompt with context: %s",
                                                  answer_field(answer, "context", "none")));
}

/* ------------------------------------------------------------------------
 * server-stateless diagnostics
 * ------------------------------------------------------------------------ */

/* Registered with required_capabilities {"sampling":{}}: a client that did
 * not declare sampling gets -32021 before this runs. */
static int missing_capability(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "hello");
    if (!answer)
        return asked(ask_model(call, "hello", "Say hello", 20, MCP_INPUT_NEEDED));
    return mcp_call_add_textf(call, "Success: %s", sampled_text(answer, "(no text)"));
}

/* The response stream of a request that needs input carries the
 * input_required result, never a server-to-client request. */
static int streaming_elicitation(mcp_call_t *call, void *user)
{
    if (!mcp_call_input(call, "proceed"))
        return asked(ask_confirm(call, "proceed", "Continue?"));
    return mcp_call_add_text(call, "Streaming elicitation complete");
}

/* ------------------------------------------------------------------------
 * The legacy scenarios' tools (tools-call-sampling, tools-call-elicitation,
 * elicitation-sep1034-defaults, elicitation-sep1330-enums)
 * ------------------------------------------------------------------------ */

static int sampling(mcp_call_t *call, void *user)
{
    const char *prompt = mcp_call_arg_string(call, "prompt");
    if (!prompt)
        return mcp_call_fail(call, MCP_INVALID_PARAMS, "prompt must be a string");
    const json_t *answer = mcp_call_input(call, "llm");
    if (!answer)
        return asked(ask_model(call, "llm", prompt, 100, MCP_INPUT_NEEDED));
    return mcp_call_add_textf(call, "LLM response: %s", sampled_text(answer, "No response"));
}

static int elicitation(mcp_call_t *call, void *user)
{
    const char *message = mcp_call_arg_string(call, "message");
    if (!message)
        return mcp_call_fail(call, MCP_INVALID_PARAMS, "message must be a string");
    const json_t *answer = mcp_call_input(call, "user_info");
    if (answer)
        return add_elicit_summary(call, "User response: ", answer);
    json_t *schema = fixture_json(
        "{\"type\":\"object\",\"properties\":{"
        "\"username\":{\"type\":\"string\",\"description\":\"User's response\"},"
        "\"email\":{\"type\":\"string\",\"description\":\"User's email address\"}},"
        "\"required\":[\"username\",\"email\"]}");
    return asked(mcp_call_elicit(call, "user_info", message, schema, MCP_INPUT_NEEDED));
}

/* SEP-1034: a default for every primitive type. */
static int elicitation_defaults(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "profile");
    if (answer)
        return add_elicit_summary(call, "Elicitation completed: ", answer);
    json_t *schema = fixture_json(
        "{\"type\":\"object\",\"properties\":{"
        "\"name\":{\"type\":\"string\",\"description\":\"User name\",\"default\":\"John Doe\"},"
        "\"age\":{\"type\":\"integer\",\"description\":\"User age\",\"default\":30},"
        "\"score\":{\"type\":\"number\",\"description\":\"User score\",\"default\":95.5},"
        "\"status\":{\"type\":\"string\",\"description\":\"User status\","
        "\"enum\":[\"active\",\"inactive\",\"pending\"],\"default\":\"active\"},"
        "\"verified\":{\"type\":\"boolean\",\"description\":\"Verification status\","
        "\"default\":true}},\"required\":[]}");
    return asked(mcp_call_elicit(call, "profile",
                                 "Please review and update the form fields with defaults",
                                 schema, MCP_INPUT_NEEDED));
}

/* SEP-1330: untitled and titled single-select, the legacy enumNames form,
 * untitled and titled multi-select. */
static int elicitation_enums(mcp_call_t *call, void *user)
{
    const json_t *answer = mcp_call_input(call, "choices");
    if (answer)
        return add_elicit_summary(call, "Elicitation completed: ", answer);
    json_t *schema = fixture_json(
        "{\"type\":\"object\",\"properties\":{"
        "\"untitledSingle\":{\"type\":\"string\",\"description\":\"Select one option\","
        "\"enum\":[\"option1\",\"option2\",\"option3\"]},"
        "\"titledSingle\":{\"type\":\"string\",\"description\":\"Select one option with titles\","
        "\"oneOf\":[{\"const\":\"value1\",\"title\":\"First Option\"},"
        "{\"const\":\"value2\",\"title\":\"Second Option\"},"
        "{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
        "\"legacyEnum\":{\"type\":\"string\",\"description\":\"Select one option (legacy)\","
        "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
        "\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
        "\"untitledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options\","
        "\"minItems\":1,\"maxItems\":3,"
        "\"items\":{\"type\":\"string\",\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
        "\"titledMulti\":{\"type\":\"array\","
        "\"description\":\"Select multiple options with titles\","
        "\"minItems\":1,\"maxItems\":3,"
        "\"items\":{\"anyOf\":[{\"const\":\"value1\",\"title\":\"First Choice\"},"
        "{\"const\":\"value2\",\"title\":\"Second Choice\"},"
        "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}},\"required\":[]}");
    return asked(mcp_call_elicit(call, "choices", "Please select options from the enum fields",
                                 schema, MCP_INPUT_NEEDED));
}

/* ------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------ */

static const mcp_tool_t tools[] = {
    {.name = "test_input_required_result_elicitation",
     .description = "Asks for the user's name (elicitation), then greets them",
     .handler = mrtr_elicitation},
    {.name = "test_input_required_result_sampling",
     .description = "Asks the client's model a question (sampling), then returns its answer",
     .handler = mrtr_sampling},
    {.name = "test_input_required_result_list_roots",
     .description = "Asks for the client's roots, then counts them",
     .handler = mrtr_list_roots},
    {.name = "test_input_required_result_request_state",
     .description = "Asks for a confirmation and checks that requestState came back",
     .handler = mrtr_request_state},
    {.name = "test_input_required_result_multiple_inputs",
     .description = "Asks for a name, a generated greeting and the roots in one round",
     .handler = mrtr_multiple_inputs},
    {.name = "test_input_required_result_multi_round",
     .description = "Asks for a name, then a favourite colour, over two rounds",
     .handler = mrtr_multi_round},
    {.name = "test_input_required_result_tampered_state",
     .description = "Asks for a confirmation; a tampered requestState is refused",
     .handler = mrtr_tampered_state},
    {.name = "test_input_required_result_capabilities",
     .description = "Asks only for the kinds of input the client declared",
     .handler = mrtr_capabilities},
    {.name = "test_missing_capability",
     .description = "Needs the sampling capability; refused with -32021 without it",
     .required_capabilities = "{\"sampling\":{}}", .handler = missing_capability},
    {.name = "test_streaming_elicitation",
     .description = "Asks for a confirmation; its response stream carries no request",
     .handler = streaming_elicitation},
    {.name = "test_sampling", .description = "Asks the client's model to answer a prompt",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\","
                     "\"description\":\"The prompt to send to the LLM\"}},"
                     "\"required\":[\"prompt\"]}",
     .handler = sampling},
    {.name = "test_elicitation", .description = "Asks the user for a username and an email",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\","
                     "\"description\":\"The message to show the user\"}},"
                     "\"required\":[\"message\"]}",
     .handler = elicitation},
    {.name = "test_elicitation_sep1034_defaults",
     .description = "Asks for a form whose fields all have defaults (SEP-1034)",
     .handler = elicitation_defaults},
    {.name = "test_elicitation_sep1330_enums",
     .description = "Asks for a form with every enum variant (SEP-1330)",
     .handler = elicitation_enums},
};

int fixture_add_input_tools(mcp_server_t *srv, mcp_error_t *err)
{
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        int rc = mcp_server_add_tool(srv, &tools[i], err);
        if (rc != MCP_OK)
            return rc;
    }
    return mcp_server_add_prompt(srv, &(mcp_prompt_t){
        .name = "test_input_required_result_prompt",
        .description = "Asks what context to use, then builds the prompt with it",
        .handler = mrtr_prompt}, err);
}
