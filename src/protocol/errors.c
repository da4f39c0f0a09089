/* Error code names and builders for the MCP errors with structured data. */
#include <string.h>

#include "mcp/errors.h"

const char *mcp_error_code_name(int code)
{
    switch (code) {
    case MCP_PARSE_ERROR: return "Parse error";
    case MCP_INVALID_REQUEST: return "Invalid Request";
    case MCP_METHOD_NOT_FOUND: return "Method not found";
    case MCP_INVALID_PARAMS: return "Invalid params";
    case MCP_INTERNAL_ERROR: return "Internal error";
    case MCP_HEADER_MISMATCH: return "Header mismatch";
    case MCP_MISSING_CLIENT_CAPABILITY: return "Missing required client capability";
    case MCP_UNSUPPORTED_PROTOCOL_VERSION: return "Unsupported protocol version";
    case MCP_LEGACY_RESOURCE_NOT_FOUND: return "Resource not found";
    case MCP_LEGACY_URL_ELICITATION_REQUIRED: return "URL elicitation required";
    default:
        return (code >= -32099 && code <= -32000) ? "Server error" : "Error";
    }
}

bool mcp_error_code_is_modern(int code)
{
    return code == MCP_HEADER_MISMATCH || code == MCP_MISSING_CLIENT_CAPABILITY ||
           code == MCP_UNSUPPORTED_PROTOCOL_VERSION;
}

/* json_string() refuses invalid UTF-8; a header value from the wire may be
 * anything, so fall back to a placeholder rather than lose the error. */
static json_t *string_or_placeholder(const char *s)
{
    json_t *j = json_string(s);
    return j ? j : json_string("(not valid UTF-8)");
}

int mcp_error_header_mismatch(mcp_error_t *err, const char *header, const char *received,
                              const json_t *expected, const char *detail)
{
    json_t *mismatch = json_object();
    json_object_set_new(mismatch, "header", string_or_placeholder(header));
    json_object_set_new(mismatch, "received",
                        received ? string_or_placeholder(received) : json_null());
    json_object_set_new(mismatch, "expected",
                        expected ? json_deep_copy(expected) : json_null());
    json_t *data = json_pack("{s:o}", "mismatch", mismatch);
    if (detail)
        return mcp_error_set(err, MCP_EINVAL, MCP_HEADER_MISMATCH, data,
                             "Header mismatch: %s", detail);
    return mcp_error_set(err, MCP_EINVAL, MCP_HEADER_MISMATCH, data,
                         "Header mismatch: %s %s", header,
                         received ? "does not match the request body" : "is missing");
}

int mcp_error_missing_capability(mcp_error_t *err, json_t *required_new)
{
    json_t *required = required_new ? required_new : json_object();
    /* The first key names the capability in the message. It borrows from
     * `required`, so hold that reference until the message is formatted. */
    const char *first = NULL;
    if (json_is_object(required)) {
        void *it = json_object_iter(required);
        first = it ? json_object_iter_key(it) : NULL;
    }
    json_t *data = json_pack("{s:O}", "requiredCapabilities", required);
    int rc;
    if (first)
        rc = mcp_error_set(err, MCP_EINVAL, MCP_MISSING_CLIENT_CAPABILITY, data,
                           "Server requires the %s capability for this request", first);
    else
        rc = mcp_error_set(err, MCP_EINVAL, MCP_MISSING_CLIENT_CAPABILITY, data,
                           "Server requires a client capability this request did not declare");
    json_decref(required);
    return rc;
}

int mcp_error_unsupported_version(mcp_error_t *err, const char *requested,
                                  const char *const *supported, size_t n)
{
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        if (supported[i])
            json_array_append_new(list, json_string(supported[i]));
    json_t *data = json_pack("{s:o, s:o}", "supported", list, "requested",
                             string_or_placeholder(requested ? requested : ""));
    return mcp_error_set(err, MCP_EINVAL, MCP_UNSUPPORTED_PROTOCOL_VERSION, data,
                         "Unsupported protocol version");
}
