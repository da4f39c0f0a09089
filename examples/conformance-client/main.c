/*
 * conformance_client: the client the official MCP conformance suite drives
 * (`conformance client --command conformance_client`), built on the public
 * API only, like any user's client.
 *
 *   conformance_client <server-url>
 *
 * The suite starts it once per scenario, with the scenario's mock server URL
 * as the last argument and three environment variables:
 *
 *   MCP_CONFORMANCE_SCENARIO          the scenario to perform ("tools_call", ...)
 *   MCP_CONFORMANCE_CONTEXT           JSON data for it (optional), e.g. toolCalls
 *   MCP_CONFORMANCE_PROTOCOL_VERSION  the revision under test ("2026-07-28", ...)
 *
 * It connects over Streamable HTTP, does what the scenario asks (the mock
 * server judges how it was done) and exits 0, or 1 when something the
 * scenario needs failed; 2 for a usage error or a scenario it does not know.
 * Each step is reported on stdout, library diagnostics on stderr.
 *
 * The auth/ scenarios all run alike: an mcp_oauth_t answers the mock
 * server's challenges (its "browser" fetches the authorization URL and
 * returns the redirect; none for the extensions' grants), then
 * the tools are listed and test-tool called.
 *
 * The sep-2640-client-* scenarios test the Skills extension, which belongs
 * to no revision: the suite names 2025-11-25 for them only for want of
 * another, and its mock server speaks both eras. The client connects as a
 * host would, letting server/discover decide (the extension needs the
 * modern era), lists the skills and, but for no-prefetch, loads the first:
 * its SKILL.md, then its other files, each verified against the entry. A
 * file that fails verification refuses the skill: the client says why on
 * stderr, reads nothing more and exits 1.
 *
 * Adding a scenario: write `static int scenario_x(session_t *s)` and list it
 * in `scenarios[]` below.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include <mcp/client.h>
#include <mcp/mcp.h>
#include <mcp/oauth.h>

/* What one run knows: the scenario, its data and the connected client. */
typedef struct session {
    const char *scenario;
    const char *url;
    const char *protocol_version;
    bool discover_era;         /* connect in the era server/discover decides */
    const json_t *context;     /* MCP_CONFORMANCE_CONTEXT, or an empty object */
    mcp_client_t *client;
    mcp_oauth_t *oauth;        /* auth/ scenarios: the token source */
    /* A tool to call (once) while a call waits for an elicitation answer,
     * i.e. between two rounds of a multi-round call; NULL for none. */
    const char *tool_between_rounds;
    int between_rounds_rc;
} session_t;

/* ------------------------------------------------------------------------
 * Reporting
 * ------------------------------------------------------------------------ */

/* Reports a failed step (with the library's error, when there is one) and
 * returns 1, the exit status of a failed scenario. */
static int failed(const session_t *s, const char *what, const mcp_error_t *err)
{
    if (err && err->code != 0)
        fprintf(stderr, "conformance_client: %s: %s: %s (JSON-RPC %d)\n", s->scenario, what,
                err->message, err->code);
    else
        fprintf(stderr, "conformance_client: %s: %s: %s\n", s->scenario, what,
                err ? err->message : "failed");
    return 1;
}

/* Reports a wrong answer and returns 1. */
static int wrong(const session_t *s, const char *what, const char *why)
{
    fprintf(stderr, "conformance_client: %s: %s: %s\n", s->scenario, what, why);
    return 1;
}

/* The text of the first content block of a result, or "". */
static const char *first_text(const json_t *result)
{
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
    return text ? text : "";
}

/* ------------------------------------------------------------------------
 * Answering the server
 * ------------------------------------------------------------------------ */

/*
 * Elicitation: the user accepts the form as offered, every field at its
 * default (a field without a default is left out). This is also what
 * SEP-1034 asks of a client: defaults apply to the fields the user did not
 * touch.
 */
static int accept_with_defaults(void *user, const json_t *params, json_t **result_out)
{
    session_t *s = user;
    if (s->tool_between_rounds) {
        const char *tool = s->tool_between_rounds;
        s->tool_between_rounds = NULL;
        json_t *result = NULL;
        mcp_error_t err = {0};
        s->between_rounds_rc = mcp_client_call_tool(s->client, tool, NULL, NULL, &result, &err);
        printf("tools/call %s (between rounds): %s\n", tool,
               s->between_rounds_rc == MCP_OK ? first_text(result) : err.message);
        json_decref(result);
        mcp_error_clear(&err);
    }

    json_t *content = json_object();
    const char *key;
    json_t *field;
    json_object_foreach(json_object_get(json_object_get(params, "requestedSchema"), "properties"),
                        key, field) {
        json_t *value = json_object_get(field, "default");
        if (value)
            json_object_set(content, key, value);
    }
    *result_out = json_pack("{s:s, s:o}", "action", "accept", "content", content);
    return *result_out ? 0 : MCP_ENOMEM;
}

/* ------------------------------------------------------------------------
 * Steps the scenarios share
 * ------------------------------------------------------------------------ */

static int list_tools(session_t *s, json_t **tools_out)
{
    mcp_error_t err = {0};
    int rc = mcp_client_list_tools_all(s->client, NULL, tools_out, &err);
    if (rc != MCP_OK) {
        failed(s, "tools/list", &err);
        mcp_error_clear(&err);
        return rc;
    }
    printf("tools/list: %zu tool(s)\n", json_array_size(*tools_out));
    return MCP_OK;
}

/* tools/call; *result_out (may be NULL: not wanted) receives the result. */
static int call_tool(session_t *s, const char *name, const json_t *arguments,
                     json_t **result_out)
{
    json_t *result = NULL;
    mcp_error_t err = {0};
    int rc = mcp_client_call_tool(s->client, name, arguments, NULL, &result, &err);
    if (rc != MCP_OK) {
        char what[256];
        snprintf(what, sizeof what, "tools/call %s", name);
        failed(s, what, &err);
        mcp_error_clear(&err);
        return rc;
    }
    printf("tools/call %s: %s\n", name, first_text(result));
    if (result_out)
        *result_out = result;
    else
        json_decref(result);
    return MCP_OK;
}

/* Calls `name` and requires the first text block to read `expected`. */
static int call_tool_expecting(session_t *s, const char *name, const char *expected)
{
    json_t *result = NULL;
    int rc = call_tool(s, name, NULL, &result);
    if (rc == MCP_OK && strcmp(first_text(result), expected) != 0) {
        wrong(s, name, "unexpected answer");
        rc = MCP_EPROTO;
    }
    json_decref(result);
    return rc;
}

/* Arguments a tool accepts: a sample value for each required property, by
 * its type (what a user would type into a form). */
static json_t *sample_arguments(const json_t *tool)
{
    const json_t *schema = json_object_get(tool, "inputSchema");
    const json_t *properties = json_object_get(schema, "properties");
    json_t *args = json_object();
    size_t i;
    json_t *name;
    json_array_foreach(json_object_get(schema, "required"), i, name) {
        const char *type = json_string_value(
            json_object_get(json_object_get(properties, json_string_value(name)), "type"));
        json_t *value = !type                             ? json_string("sample")
                        : strcmp(type, "boolean") == 0    ? json_true()
                        : strcmp(type, "integer") == 0    ? json_integer(1)
                        : strcmp(type, "number") == 0     ? json_real(1.5)
                        : strcmp(type, "object") == 0     ? json_object()
                        : strcmp(type, "array") == 0      ? json_array()
                                                          : json_string("sample");
        json_object_set_new(args, json_string_value(name), value);
    }
    return args;
}

/* ------------------------------------------------------------------------
 * Scenarios
 * ------------------------------------------------------------------------ */

/* tools_call: list the tools and add two numbers. */
static int scenario_tools_call(session_t *s)
{
    json_t *tools = NULL, *result = NULL;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    json_decref(tools);
    json_t *args = json_pack("{s:i, s:i}", "a", 2, "b", 3);
    int rc = call_tool(s, "add_numbers", args, &result);
    json_decref(args);
    if (rc == MCP_OK && !strstr(first_text(result), "5"))
        rc = wrong(s, "add_numbers", "the sum is not 5");
    json_decref(result);
    return rc == MCP_OK ? 0 : 1;
}

/* initialize (legacy revisions): the handshake happened in connect; then
 * the tools are listed and the first one, if any, is called, as any client
 * would after connecting. */
static int scenario_initialize(session_t *s)
{
    json_t *tools = NULL;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    const char *first = json_string_value(json_object_get(json_array_get(tools, 0), "name"));
    int rc = first ? call_tool(s, first, NULL, NULL) : MCP_OK;
    json_decref(tools);
    return rc == MCP_OK ? 0 : 1;
}

/* elicitation-sep1034-client-defaults: a tool whose call makes the server
 * ask for a form whose every field has a default; accept_with_defaults
 * answers with them. */
static int scenario_elicitation_defaults(session_t *s)
{
    json_t *tools = NULL;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    json_decref(tools);
    json_t *result = NULL;
    int rc = call_tool(s, "test_client_elicitation_defaults", NULL, &result);
    if (rc == MCP_OK && !strstr(first_text(result), "Elicitation completed"))
        rc = wrong(s, "test_client_elicitation_defaults", "the server did not get the form");
    json_decref(result);
    return rc == MCP_OK ? 0 : 1;
}

/* sse-retry: the server closes the call's event stream before answering,
 * after an event ID and a retry delay; the client resumes with a GET and
 * Last-Event-ID once the delay passed, and gets the answer there. */
static int scenario_sse_retry(session_t *s)
{
    json_t *tools = NULL;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    json_decref(tools);
    return call_tool_expecting(s, "test_reconnection",
                               "Reconnection test completed successfully") == MCP_OK ? 0 : 1;
}

/* request-metadata: the server refuses the first request's version; the
 * client retries with one the server lists, then goes on with tools/list. */
static int scenario_request_metadata(session_t *s)
{
    json_t *tools = NULL;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    json_decref(tools);
    return 0;
}

/* sep-2322-client-request-state: multi-round calls, with and without
 * requestState, another call between the rounds, and a result without
 * resultType. */
static int scenario_mrtr(session_t *s)
{
    json_t *tools = NULL;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    json_decref(tools);

    s->tool_between_rounds = "test_mrtr_unrelated";
    s->between_rounds_rc = MCP_EPROTO;
    int rc = call_tool_expecting(s, "test_mrtr_echo_state", "echo-state-ok");
    if (rc == MCP_OK && s->between_rounds_rc != MCP_OK)
        rc = wrong(s, "test_mrtr_unrelated", "not called between the rounds");
    if (rc == MCP_OK)
        rc = call_tool_expecting(s, "test_mrtr_no_state", "no-state-ok");
    if (rc == MCP_OK)
        rc = call_tool_expecting(s, "test_mrtr_no_result_type", "no-result-type-test-ok");
    return rc == MCP_OK ? 0 : 1;
}

/* http-standard-headers: one request of every kind that names something,
 * so that the server sees Mcp-Method and Mcp-Name on each. */
static int scenario_standard_headers(session_t *s)
{
    mcp_error_t err = {0};
    json_t *tools = NULL, *resources = NULL, *prompts = NULL, *item, *result = NULL;
    size_t i;
    int status = 1;
    if (list_tools(s, &tools) != MCP_OK)
        goto out;
    json_array_foreach(tools, i, item) {
        if (call_tool(s, json_string_value(json_object_get(item, "name")), NULL, NULL) != MCP_OK)
            goto out;
    }

    if (mcp_client_list_resources_all(s->client, NULL, &resources, &err) != MCP_OK) {
        failed(s, "resources/list", &err);
        goto out;
    }
    json_array_foreach(resources, i, item) {
        const char *uri = json_string_value(json_object_get(item, "uri"));
        if (mcp_client_read_resource(s->client, uri, NULL, &result, &err) != MCP_OK) {
            failed(s, "resources/read", &err);
            goto out;
        }
        printf("resources/read %s: ok\n", uri);
        json_decref(result);
    }

    if (mcp_client_list_prompts_all(s->client, NULL, &prompts, &err) != MCP_OK) {
        failed(s, "prompts/list", &err);
        goto out;
    }
    json_array_foreach(prompts, i, item) {
        const char *name = json_string_value(json_object_get(item, "name"));
        if (mcp_client_get_prompt(s->client, name, NULL, NULL, &result, &err) != MCP_OK) {
            failed(s, "prompts/get", &err);
            goto out;
        }
        printf("prompts/get %s: ok\n", name);
        json_decref(result);
    }
    status = 0;
out:
    json_decref(tools);
    json_decref(resources);
    json_decref(prompts);
    mcp_error_clear(&err);
    return status;
}

/* http-custom-headers: the calls the context lists (toolCalls: [{name,
 * arguments}]), after tools/list taught the client their x-mcp-header
 * annotations. */
static int scenario_custom_headers(session_t *s)
{
    json_t *tools = NULL, *call;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    json_decref(tools);
    const json_t *calls = json_object_get(s->context, "toolCalls");
    if (json_array_size(calls) == 0)
        return wrong(s, "MCP_CONFORMANCE_CONTEXT", "no toolCalls to make");
    size_t i;
    json_array_foreach(calls, i, call) {
        const char *name = json_string_value(json_object_get(call, "name"));
        if (!name || call_tool(s, name, json_object_get(call, "arguments"), NULL) != MCP_OK)
            return 1;
    }
    return 0;
}

/* http-invalid-tool-headers: the client drops the tools whose x-mcp-header
 * annotations are invalid when it lists them, and calls the ones it kept. */
static int scenario_invalid_tool_headers(session_t *s)
{
    json_t *tools = NULL, *tool;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    int rc = MCP_OK;
    size_t i;
    json_array_foreach(tools, i, tool) {
        json_t *args = sample_arguments(tool);
        if (rc == MCP_OK)
            rc = call_tool(s, json_string_value(json_object_get(tool, "name")), args, NULL);
        json_decref(args);
    }
    json_decref(tools);
    return rc == MCP_OK ? 0 : 1;
}

/* Every auth/ scenario: list the tools and call test-tool, as the suite's
 * reference client does, each step authorized by s->oauth. */
static int scenario_auth(session_t *s)
{
    json_t *tools = NULL, *result = NULL;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    json_decref(tools);
    int rc = call_tool(s, "test-tool", NULL, &result);
    json_decref(result);
    return rc == MCP_OK ? 0 : 1;
}

/* json-schema-ref-no-deref: list tools whose schema has a network $ref;
 * the client must not fetch it (libmcp never dereferences schemas). */
static int scenario_list_tools_only(session_t *s)
{
    json_t *tools = NULL;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    json_decref(tools);
    return 0;
}

/* json-schema-2020-12-preservation: send the focal tool's inputSchema back
 * through the echo tool, exactly as the client received it. */
static int scenario_schema_preservation(session_t *s)
{
    json_t *tools = NULL, *tool;
    if (list_tools(s, &tools) != MCP_OK)
        return 1;
    const json_t *schema = NULL;
    size_t i;
    json_array_foreach(tools, i, tool) {
        if (strcmp(json_string_value(json_object_get(tool, "name")),
                   "json_schema_2020_12_tool") == 0)
            schema = json_object_get(tool, "inputSchema");
    }
    int rc = MCP_ENOTFOUND;
    if (!schema) {
        wrong(s, "tools/list", "no json_schema_2020_12_tool");
    } else {
        json_t *args = json_pack("{s:O}", "schema", schema);
        rc = call_tool(s, "json_schema_echo", args, NULL);
        json_decref(args);
    }
    json_decref(tools);
    return rc == MCP_OK ? 0 : 1;
}

/* Reads one file of a skill through mcp_client_read_skill_file(), which
 * returns it only once verified (or, for a "dynamic" skill, frontmatter
 * checked). */
static int read_skill_file(session_t *s, const json_t *skill, const char *uri)
{
    char *content = NULL;
    size_t len = 0;
    bool verified = false;
    mcp_error_t err = {0};
    int rc = mcp_client_read_skill_file(s->client, skill, uri, NULL, &content, &len, &verified,
                                        &err);
    if (rc != MCP_OK)
        failed(s, "read skill file", &err);
    else
        printf("%s: %zu bytes, %s\n", uri, len, verified ? "verified" : "not verifiable");
    free(content);
    mcp_error_clear(&err);
    return rc;
}

/* Loads a skill the user approved: its SKILL.md first, then, only if that
 * was accepted, every other file its entry lists (none for "dynamic"). */
static int load_skill(session_t *s, const json_t *skill)
{
    const char *skill_md = json_string_value(json_object_get(skill, "uri"));
    if (read_skill_file(s, skill, skill_md) != MCP_OK)
        return wrong(s, skill_md, "skill refused");
    size_t i;
    json_t *file;
    json_array_foreach(json_object_get(skill, "resources"), i, file) {
        const char *uri = json_string_value(json_object_get(file, "uri"));
        if (strcmp(uri, skill_md) != 0 && read_skill_file(s, skill, uri) != MCP_OK)
            return wrong(s, skill_md, "skill refused");
    }
    printf("skill %s loaded\n", skill_md);
    return 0;
}

static int list_skills(session_t *s, json_t **skills_out)
{
    mcp_error_t err = {0};
    int rc = mcp_client_list_skills_all(s->client, NULL, skills_out, &err);
    if (rc != MCP_OK) {
        failed(s, "skills/list", &err);
        mcp_error_clear(&err);
        return rc;
    }
    printf("skills/list: %zu skill(s)\n", json_array_size(*skills_out));
    return MCP_OK;
}

/* sep-2640-client-no-prefetch: list the skills and fetch none of their
 * files: a host reads them only when it loads a skill. */
static int scenario_skills_list_only(session_t *s)
{
    json_t *skills = NULL;
    if (list_skills(s, &skills) != MCP_OK)
        return 1;
    json_decref(skills);
    return 0;
}

/* sep-2640-client-verify-digest, -size, -frontmatter: load the first
 * skill listed; the mock serves a SKILL.md that must be refused. */
static int scenario_skills_load(session_t *s)
{
    json_t *skills = NULL;
    if (list_skills(s, &skills) != MCP_OK)
        return 1;
    const json_t *skill = json_array_get(skills, 0);
    int status = skill ? load_skill(s, skill) : wrong(s, "skills/list", "no skill to load");
    json_decref(skills);
    return status;
}

typedef struct scenario {
    const char *name;
    int (*run)(session_t *s);
} scenario_t;

static const scenario_t scenarios[] = {
    {"initialize", scenario_initialize},
    {"tools_call", scenario_tools_call},
    {"elicitation-sep1034-client-defaults", scenario_elicitation_defaults},
    {"sse-retry", scenario_sse_retry},
    {"request-metadata", scenario_request_metadata},
    {"sep-2322-client-request-state", scenario_mrtr},
    {"http-standard-headers", scenario_standard_headers},
    {"http-custom-headers", scenario_custom_headers},
    {"http-invalid-tool-headers", scenario_invalid_tool_headers},
    {"json-schema-ref-no-deref", scenario_list_tools_only},
    {"json-schema-2020-12-preservation", scenario_schema_preservation},
};

/* The scenarios of an extension that needs the modern era: they belong to
 * no revision, and connect in the era server/discover decides. */
static const scenario_t extension_scenarios[] = {
    {"sep-2640-client-no-prefetch", scenario_skills_list_only},
    {"sep-2640-client-verify-digest", scenario_skills_load},
    {"sep-2640-client-verify-size", scenario_skills_load},
    {"sep-2640-client-verify-frontmatter", scenario_skills_load},
};

/* Every auth/ scenario: the flow happens while connecting and calling;
 * the mock servers judge it. */
static const scenario_t auth_scenario = {"auth/", scenario_auth};

/* The scenario called `name`, or NULL; *any_revision tells whether it is
 * an extension's. */
static const scenario_t *find_scenario(const char *name, bool *any_revision)
{
    *any_revision = false;
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (strcmp(scenarios[i].name, name) == 0)
            return &scenarios[i];
    for (size_t i = 0; i < sizeof extension_scenarios / sizeof extension_scenarios[0]; i++) {
        if (strcmp(extension_scenarios[i].name, name) == 0) {
            *any_revision = true;
            return &extension_scenarios[i];
        }
    }
    if (strncmp(name, "auth/", 5) == 0)
        return &auth_scenario;
    return NULL;
}

/* ------------------------------------------------------------------------
 * Connecting and main
 * ------------------------------------------------------------------------ */

/* The user's part of an authorization, headless: the suite's authorization
 * endpoint approves at once and redirects; where to is the answer. */
static size_t ignore_body(char *data, size_t size, size_t n, void *user)
{
    (void)data;
    (void)user;
    return size * n;
}

static int authorize_headless(void *user, const char *url, char **redirect_out)
{
    (void)user;
    printf("authorize: %s\n", url);
    CURL *e = curl_easy_init();
    if (!e)
        return MCP_ENOMEM;
    char *location = NULL;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, ignore_body);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
    CURLcode c = curl_easy_perform(e);
    if (c == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &location);
    *redirect_out = location ? strdup(location) : NULL;
    curl_easy_cleanup(e);
    if (!*redirect_out) {
        fprintf(stderr, "conformance_client: authorize: %s\n",
                c != CURLE_OK ? curl_easy_strerror(c) : "no redirect");
        return MCP_EAUTH;
    }
    return MCP_OK;
}

/* The grant a scenario exercises: the user's authorization code unless
 * it is one of the extensions' scenarios. */
static mcp_oauth_grant_t scenario_grant(const session_t *s)
{
    if (strncmp(s->scenario, "auth/client-credentials", 23) == 0)
        return MCP_OAUTH_CLIENT_CREDENTIALS;
    if (strcmp(s->scenario, "auth/wif-jwt-bearer") == 0)
        return MCP_OAUTH_JWT_BEARER;
    if (strcmp(s->scenario, "auth/enterprise-managed-authorization") == 0)
        return MCP_OAUTH_ENTERPRISE;
    return MCP_OAUTH_AUTHORIZATION_CODE;
}

/* The assertion callback: the workload's JWT (valid_jwt) for workload
 * identity federation, the user's ID token (idp_id_token) for the
 * enterprise; both from the context, where a real client would ask its
 * platform or keep the user's sign-in. */
static int context_assertion(void *user, const char *audience, char **assertion_out)
{
    const session_t *s = user;
    (void)audience;
    const char *name = scenario_grant(s) == MCP_OAUTH_JWT_BEARER ? "valid_jwt" : "idp_id_token";
    const char *jwt = json_string_value(json_object_get(s->context, name));
    *assertion_out = jwt ? strdup(jwt) : NULL;
    return *assertion_out ? MCP_OK : MCP_EAUTH;
}

/* The token source of the auth/ scenarios: a native client with the
 * reference client's redirect URI and metadata document URL, or the
 * pre-registered client the context names. The extensions' scenarios have
 * no user: for client credentials (io.modelcontextprotocol/
 * oauth-client-credentials) the context gives the client's secret, or its
 * private key and signing algorithm; for workload identity federation the
 * workload's JWT; for enterprise-managed authorization the user's ID
 * token, the IdP's token endpoint and the client's ids at both sides. */
static int make_oauth(session_t *s)
{
    mcp_error_t err = {0};
    mcp_oauth_grant_t grant = scenario_grant(s);
    bool assertion = grant == MCP_OAUTH_JWT_BEARER || grant == MCP_OAUTH_ENTERPRISE;
    s->oauth = mcp_oauth_new(
        &(mcp_oauth_options_t){
            .grant = grant,
            .private_key_pem = json_string_value(json_object_get(s->context, "private_key_pem")),
            .signing_algorithm =
                json_string_value(json_object_get(s->context, "signing_algorithm")),
            .redirect_uri = "http://localhost:3000/callback",
            .authorize = authorize_headless,
            .client_id = json_string_value(json_object_get(s->context, "client_id")),
            .client_secret = json_string_value(json_object_get(s->context, "client_secret")),
            .assertion = assertion ? context_assertion : NULL,
            .assertion_user = s,
            .idp_token_endpoint =
                json_string_value(json_object_get(s->context, "idp_token_endpoint")),
            .idp_client_id = json_string_value(json_object_get(s->context, "idp_client_id")),
            .client_metadata_url = "https://conformance-test.local/client-metadata.json",
            .client_name = "libmcp-conformance-client",
            /* Bound tokens where the authorization server offers them
             * (auth/dpop, auth/dpop-nonce); Bearer tokens elsewhere. */
            .dpop = true,
        },
        &err);
    if (!s->oauth)
        failed(s, "OAuth", &err);
    mcp_error_clear(&err);
    return s->oauth ? MCP_OK : MCP_EINVAL;
}

/* A client for the revision under test: a modern revision is spoken as is;
 * a legacy one through the initialize handshake. Or, for an extension's
 * scenario, whichever server/discover decides. */
static int connect_client(session_t *s)
{
    bool modern = mcp_version_era(s->protocol_version) == MCP_ERA_MODERN;
    mcp_client_era_t era = s->discover_era ? MCP_CLIENT_ERA_AUTO
                           : modern        ? MCP_CLIENT_ERA_MODERN
                                           : MCP_CLIENT_ERA_LEGACY;
    mcp_oauth_grant_t grant = scenario_grant(s);
    mcp_error_t err = {0};
    s->client = mcp_client_new(&(mcp_client_options_t){
        .name = "libmcp-conformance-client", .version = MCP_LIB_VERSION,
        .era = era,
        .protocol_version = era == MCP_CLIENT_ERA_MODERN ? s->protocol_version : NULL,
        /* The extension's client side declares it on every request. */
        .extensions = grant == MCP_OAUTH_CLIENT_CREDENTIALS
                          ? "{\"" MCP_EXTENSION_OAUTH_CLIENT_CREDENTIALS "\":{}}"
                      : grant == MCP_OAUTH_ENTERPRISE
                          ? "{\"" MCP_EXTENSION_ENTERPRISE_MANAGED_AUTHORIZATION "\":{}}"
                          : NULL,
        .elicit = accept_with_defaults, .elicit_user = s,
        .log = mcp_log_stderr}, &err);
    int rc = s->client ? mcp_client_connect_http(s->client,
                                                 &(mcp_http_target_t){
                                                     .url = s->url,
                                                     .token = s->oauth ? mcp_oauth_token : NULL,
                                                     .token_proof =
                                                         s->oauth ? mcp_oauth_proof : NULL,
                                                     .token_user = s->oauth},
                                                 &err)
                       : MCP_EINVAL;
    if (rc != MCP_OK) {
        failed(s, "connect", &err);
        if (s->oauth && mcp_oauth_last_error(s->oauth, &err) != MCP_OK)
            failed(s, "OAuth", &err);
    } else {
        const json_t *info = mcp_client_server_info(s->client);
        printf("connected to %s (protocol %s)\n",
               info ? json_string_value(json_object_get(info, "name")) : "a server",
               mcp_client_protocol_version(s->client));
    }
    mcp_error_clear(&err);
    return rc;
}

int main(int argc, char **argv)
{
    session_t s = {
        .scenario = getenv("MCP_CONFORMANCE_SCENARIO"),
        .protocol_version = getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"),
    };
    if (argc < 2 || !s.scenario) {
        fputs("usage: MCP_CONFORMANCE_SCENARIO=<name> [MCP_CONFORMANCE_CONTEXT=<json>]\n"
              "       [MCP_CONFORMANCE_PROTOCOL_VERSION=<revision>] conformance_client <url>\n",
              stderr);
        return 2;
    }
    s.url = argv[argc - 1];
    if (!s.protocol_version)
        s.protocol_version = mcp_protocol_versions(NULL)[0];

    const scenario_t *scenario = find_scenario(s.scenario, &s.discover_era);
    if (!scenario) {
        fprintf(stderr, "conformance_client: no scenario \"%s\"\n", s.scenario);
        return 2;
    }

    const char *context_text = getenv("MCP_CONFORMANCE_CONTEXT");
    json_error_t jerr;
    json_t *context = context_text ? json_loads(context_text, 0, &jerr) : json_object();
    if (!json_is_object(context)) {
        fprintf(stderr, "conformance_client: MCP_CONFORMANCE_CONTEXT is not a JSON object%s%s\n",
                context ? "" : ": ", context ? "" : jerr.text);
        json_decref(context);
        return 2;
    }
    s.context = context;

    int status = 1;
    if ((scenario != &auth_scenario || make_oauth(&s) == MCP_OK) && connect_client(&s) == MCP_OK)
        status = scenario->run(&s);
    mcp_client_free(s.client);
    mcp_oauth_free(s.oauth);
    json_decref(context);
    return status;
}
