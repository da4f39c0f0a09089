/*
 * Builders for MCP content blocks and resource contents (the ContentBlock
 * and ResourceContents types of the 2026-07-28 schema). Servers use them
 * for tool results, prompt messages and resource reads; clients for
 * sampling results.
 *
 * Every builder returns a new reference, or NULL when an argument is
 * invalid (NULL where a value is required, text that is not valid UTF-8) or
 * allocation fails. Binary data is Base64-encoded (standard alphabet, with
 * padding) by the builder. Pure and thread-safe.
 */
#ifndef MCP_CONTENT_H
#define MCP_CONTENT_H

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* {"type":"text","text":text} */
MCP_API json_t *mcp_content_text(const char *text);

/* {"type":"text","text":...} from a printf format. */
MCP_API json_t *mcp_content_textf(const char *fmt, ...) MCP_PRINTF(1, 2);

/* {"type":"image","data":base64(data),"mimeType":mime_type} */
MCP_API json_t *mcp_content_image(const void *data, size_t len, const char *mime_type);

/* {"type":"audio","data":base64(data),"mimeType":mime_type} */
MCP_API json_t *mcp_content_audio(const void *data, size_t len, const char *mime_type);

/* {"type":"resource_link","uri":uri,"name":name,"mimeType"?:mime_type}
 * (mime_type may be NULL). */
MCP_API json_t *mcp_content_resource_link(const char *uri, const char *name,
                                          const char *mime_type);

/* {"type":"resource","resource":<mcp_resource_text(uri, mime_type, text)>} */
MCP_API json_t *mcp_content_embedded_text(const char *uri, const char *mime_type,
                                          const char *text);

/* {"type":"resource","resource":<mcp_resource_blob(uri, mime_type, data, len)>} */
MCP_API json_t *mcp_content_embedded_blob(const char *uri, const char *mime_type,
                                          const void *data, size_t len);

/* TextResourceContents {"uri","mimeType"?,"text"} (mime_type may be NULL). */
MCP_API json_t *mcp_resource_text(const char *uri, const char *mime_type, const char *text);

/* BlobResourceContents {"uri","mimeType"?,"blob":base64(data)}. */
MCP_API json_t *mcp_resource_blob(const char *uri, const char *mime_type, const void *data,
                                  size_t len);

/*
 * Standard Base64 (with padding) of len bytes: a malloc'd NUL-terminated
 * string (free with free()), or NULL on allocation failure.
 */
MCP_API char *mcp_base64_to_string(const void *data, size_t len);

/*
 * Decodes standard Base64 (padding required). Returns a malloc'd buffer
 * (free with free(); NUL-terminated for convenience) with its length in
 * *len, or NULL when the input is not valid Base64 or allocation fails.
 */
MCP_API void *mcp_base64_from_string(const char *text, size_t text_len, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* MCP_CONTENT_H */
