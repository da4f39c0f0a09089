/*
 * mcp TARGET info: what the server said about itself when mcp connected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mcp/probe.h>
#include <mcp/version.h>

#include "cli.h"
#include "json_out.h"
#include "output.h"

static const char *era_name(mcp_era_t era)
{
    return era == MCP_ERA_MODERN ? "modern" : era == MCP_ERA_LEGACY ? "legacy" : "unknown";
}

/* "tools (listChanged), resources (subscribe, listChanged), logging" */
static void describe_capabilities(const json_t *caps, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    const char *name;
    const json_t *value;
    json_object_foreach((json_t *)caps, name, value) {
        char details[256] = "";
        size_t dused = 0;
        const char *sub;
        const json_t *flag;
        json_object_foreach((json_t *)value, sub, flag) {
            /* Flags that are on, and the names of extensions. */
            if (!json_is_true(flag) && strcmp(name, "extensions") != 0)
                continue;
            int n = snprintf(details + dused, sizeof details - dused, "%s%s", dused ? ", " : "",
                             sub);
            if (n < 0 || (size_t)n >= sizeof details - dused)
                break;
            dused += (size_t)n;
        }
        int n = snprintf(buf + used, cap - used, "%s%s%s%s%s", used ? ", " : "", name,
                         dused ? " (" : "", details, dused ? ")" : "");
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    }
    if (!used)
        snprintf(buf, cap, "none");
}

static void print_human(cli_session_t *s)
{
    const json_t *info = mcp_client_server_info(s->client);
    const char *name = json_string_value(json_object_get(info, "name"));
    const char *version = json_string_value(json_object_get(info, "version"));
    const char *title = json_string_value(json_object_get(info, "title"));
    const char *protocol = mcp_client_protocol_version(s->client);
    const char *instructions = mcp_client_instructions(s->client);
    char caps[2048], *target = NULL;

    if (name)
        out_field("Server", "%s %s%s%s%s", name, version ? version : "", title ? " (" : "",
                  title ? title : "", title ? ")" : "");
    else
        out_field("Server", "(the server did not say)");
    mcp_client_verdict_t verdict;
    bool known = mcp_client_verdict(s->client, &verdict) == MCP_OK;
    out_field("Protocol", "%s (%s era%s%s)", protocol ? protocol : "?",
              era_name(mcp_client_era(s->client)), known && verdict.probed ? "; probe: " : "",
              known && verdict.probed && verdict.reason ? verdict.reason : "");
    if (json_is_string(s->target_json)) {
        out_field("Transport", "%s, %s",
                  known && verdict.http_sse ? "HTTP+SSE (2024-11-05)" : "Streamable HTTP",
                  json_string_value(s->target_json));
    } else {
        target = json_dumps(s->target_json, JSON_COMPACT);
        out_field("Transport", "stdio, %s", target ? target : "");
    }
    describe_capabilities(mcp_client_server_capabilities(s->client), caps, sizeof caps);
    out_field("Capabilities", "%s", caps);
    if (instructions)
        out_field("Instructions", "%s", instructions);
    free(target);
}

int cmd_info(cli_session_t *s)
{
    if (!s->opt->json) {
        print_human(s);
        return CLI_EXIT_OK;
    }
    const json_t *caps = mcp_client_server_capabilities(s->client);
    const json_t *info = mcp_client_server_info(s->client);
    const char *instructions = mcp_client_instructions(s->client);
    mcp_client_verdict_t verdict;
    json_t *how = NULL;
    if (mcp_client_verdict(s->client, &verdict) == MCP_OK)
        how = json_pack("{s:s, s:b, s:b, s:s?}", "kind", mcp_verdict_name(verdict.kind),
                        "probed", verdict.probed, "httpSse", verdict.http_sse, "reason",
                        verdict.reason);
    json_t *doc = json_pack(
        "{s:s, s:O, s:s, s:s?, s:O?, s:O?, s:s?, s:o?}", "transport",
        s->transport == MCP_TRANSPORT_HTTP ? "http" : "stdio", "target", s->target_json, "era",
        era_name(mcp_client_era(s->client)), "protocolVersion",
        mcp_client_protocol_version(s->client), "serverInfo", info, "capabilities", caps,
        "instructions", instructions, "verdict", how);
    /* Every key is always there: null when the server did not say. */
    static const char *const keys[] = {"protocolVersion", "serverInfo", "capabilities",
                                       "instructions", "verdict"};
    for (size_t i = 0; doc && i < sizeof keys / sizeof keys[0]; i++)
        if (!json_object_get(doc, keys[i]))
            json_object_set_new(doc, keys[i], json_null());
    json_out_print(doc);
    json_decref(doc);
    return CLI_EXIT_OK;
}
