/*
 * Tools whose results the scenarios check: every content type, a tool-level
 * error, progress, logging, a custom header parameter (x-mcp-header) and a
 * JSON Schema 2020-12 input schema that must come back from tools/list
 * untouched. Texts are the ones the scenario descriptions spell out.
 */
#include <stdlib.h>

#include "fixture.h"

/* ------------------------------------------------------------------------
 * Content of every type (tools-call-simple-text, -image, -audio,
 * -embedded-resource, -mixed-content)
 * ------------------------------------------------------------------------ */

static int simple_text(mcp_call_t *call, void *user)
{
    return mcp_call_add_text(call, "This is a simple text response for testing.");
}

static int image_content(mcp_call_t *call, void *user)
{
    return mcp_call_add_content(call,
                                mcp_content_image(fixture_png, fixture_png_len, "image/png"));
}

static int audio_content(mcp_call_t *call, void *user)
{
    return mcp_call_add_content(call,
                                mcp_content_audio(fixture_wav, fixture_wav_len, "audio/wav"));
}

static int embedded_resource(mcp_call_t *call, void *user)
{
    return mcp_call_add_content(call,
                                mcp_content_embedded_text("test://embedded-resource", "text/plain",
                                                          "This is an embedded resource content."));
}

static int multiple_content_types(mcp_call_t *call, void *user)
{
    int rc = mcp_call_add_text(call, "Multiple content types test:");
    if (rc == MCP_OK)
        rc = mcp_call_add_content(call,
                                  mcp_content_image(fixture_png, fixture_png_len, "image/png"));
    if (rc == MCP_OK)
        rc = mcp_call_add_content(call, mcp_content_embedded_text(
                                            "test://mixed-content-resource", "application/json",
                                            "{\"test\":\"data\",\"value\":123}"));
    return rc;
}

/* ------------------------------------------------------------------------
 * Errors, progress and logs (tools-call-error, -with-progress,
 * -with-logging; server-stateless's no-log-without-logLevel check)
 * ------------------------------------------------------------------------ */

/* A failure the model should see is a result with isError, not a JSON-RPC
 * error. */
static int error_handling(mcp_call_t *call, void *user)
{
    return mcp_call_tool_error(call, "This tool intentionally returns an error for testing");
}

/* 0, 50 and 100 of 100, about 50 ms apart (progress is sent only when the
 * request carried a progressToken; the delays happen either way). */
static int tool_with_progress(mcp_call_t *call, void *user)
{
    static const double steps[] = {0, 50, 100};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (i > 0 && mcp_call_sleep(call, 50) != MCP_OK)
            return MCP_ECANCELED;
        int rc = mcp_call_progress(call, steps[i], 100, NULL);
        if (rc != MCP_OK)
            return rc;
    }
    return mcp_call_add_text(call, "Progress reported: 0, 50 and 100 of 100.");
}

/* Three info messages about 50 ms apart. They reach the client only if it
 * asked for logs (modern: _meta logLevel; legacy: logging/setLevel). */
static int tool_with_logging(mcp_call_t *call, void *user)
{
    static const char *const messages[] = {"Tool execution started", "Tool processing data",
                                           "Tool execution completed"};
    for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++) {
        if (i > 0 && mcp_call_sleep(call, 50) != MCP_OK)
            return MCP_ECANCELED;
        int rc = mcp_call_log(call, "info", "conformance-server", json_string(messages[i]));
        if (rc != MCP_OK)
            return rc;
    }
    return mcp_call_add_text(call, "Tool with logging executed successfully");
}

/* Logs once; a request without _meta logLevel must see no log at all. */
static int logging_tool(mcp_call_t *call, void *user)
{
    int rc = mcp_call_logf(call, "info", "Diagnostic trace logging activated");
    return rc != MCP_OK ? rc : mcp_call_add_text(call, "Logging evaluated");
}

/* ------------------------------------------------------------------------
 * Schemas that travel (http-custom-header-server-validation,
 * json-schema-2020-12)
 * ------------------------------------------------------------------------ */

/* The HTTP transport checks the Mcp-Param-Region header against the body
 * before this runs; the handler only sees requests that passed. */
static int header_param(mcp_call_t *call, void *user)
{
    const char *region = mcp_call_arg_string(call, "region");
    if (!region)
        return mcp_call_tool_error(call, "region must be a string");
    return mcp_call_add_textf(call, "Region: %s", region);
}

static const char header_param_schema[] =
    "{\"type\":\"object\",\"properties\":{\"region\":{\"type\":\"string\","
    "\"description\":\"Where to run; mirrored into the Mcp-Param-Region header\","
    "\"x-mcp-header\":\"Region\"}},\"required\":[\"region\"]}";

static int json_schema_tool(mcp_call_t *call, void *user)
{
    char *args = json_dumps(mcp_call_arguments(call), JSON_COMPACT);
    int rc = mcp_call_add_textf(call, "JSON Schema 2020-12 tool called with: %s",
                                args ? args : "{}");
    free(args);
    return rc;
}

/* $schema, $defs with an $anchor, $ref, allOf/anyOf, if/then/else and
 * additionalProperties: every keyword must survive tools/list. */
static const char json_schema_2020_12[] =
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
    "\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\","
    "\"properties\":{\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
    "\"properties\":{\"name\":{\"type\":\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"},"
    "\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},"
    "\"phone\":{\"type\":\"string\"},\"email\":{\"type\":\"string\"}},"
    "\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"
    "\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},"
    "\"required\":[\"contactMethod\"]},"
    "\"then\":{\"required\":[\"phone\"]},\"else\":{\"required\":[\"email\"]},"
    "\"additionalProperties\":false}";

/* ------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------ */

static const mcp_tool_t tools[] = {
    {.name = "test_simple_text", .description = "Returns one text block",
     .handler = simple_text},
    {.name = "test_image_content", .description = "Returns one image block (a PNG)",
     .handler = image_content},
    {.name = "test_audio_content", .description = "Returns one audio block (a WAV)",
     .handler = audio_content},
    {.name = "test_embedded_resource", .description = "Returns one embedded text resource",
     .handler = embedded_resource},
    {.name = "test_multiple_content_types",
     .description = "Returns text, an image and an embedded resource",
     .handler = multiple_content_types},
    {.name = "test_error_handling", .description = "Always fails with a tool-level error",
     .handler = error_handling},
    {.name = "test_tool_with_progress",
     .description = "Reports progress 0, 50 and 100 of 100, about 50 ms apart",
     .handler = tool_with_progress},
    {.name = "test_tool_with_logging",
     .description = "Sends three info log messages, about 50 ms apart",
     .handler = tool_with_logging},
    {.name = "test_logging_tool",
     .description = "Logs once, at info (only clients that asked for logs see it)",
     .handler = logging_tool},
    {.name = "test_header_param",
     .description = "Echoes its region argument, which travels in the Mcp-Param-Region header",
     .input_schema = header_param_schema, .handler = header_param},
    {.name = "json_schema_2020_12_tool",
     .description = "Tool with JSON Schema 2020-12 features (SEP-1613, SEP-2106)",
     .input_schema = json_schema_2020_12, .handler = json_schema_tool},
};

int fixture_add_tools(mcp_server_t *srv, mcp_error_t *err)
{
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        int rc = mcp_server_add_tool(srv, &tools[i], err);
        if (rc != MCP_OK)
            return rc;
    }
    return MCP_OK;
}
