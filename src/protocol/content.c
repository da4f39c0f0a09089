/* Builders of content blocks and resource contents (mcp/content.h). */
#include <stdio.h>
#include <stdlib.h>

#include "mcp/content.h"
#include "protocol/base64.h"

char *mcp_base64_to_string(const void *data, size_t len)
{
    if (!data && len)
        return NULL;
    char *out = malloc(mcp_base64_encoded_len(len) + 1);
    if (out)
        mcp_base64_encode(data ? data : "", len, out);
    return out;
}

void *mcp_base64_from_string(const char *text, size_t text_len, size_t *len)
{
    if (!text || !len)
        return NULL;
    unsigned char *out = malloc(mcp_base64_decoded_max(text_len) + 1);
    if (!out)
        return NULL;
    if (mcp_base64_decode(text, text_len, out, len) != 0) {
        free(out);
        return NULL;
    }
    out[*len] = '\0';
    return out;
}

/* Adds "mimeType" when given; returns obj, or NULL (freeing obj) when the
 * value is not valid UTF-8. */
static json_t *with_mime(json_t *obj, const char *mime_type)
{
    if (obj && mime_type) {
        json_t *m = json_string(mime_type);
        if (!m) {
            json_decref(obj);
            return NULL;
        }
        json_object_set_new(obj, "mimeType", m);
    }
    return obj;
}

json_t *mcp_content_text(const char *text)
{
    /* Built directly rather than with json_pack, which parses its format on
     * every call: this block is in nearly every tools/call result. Only the
     * caller's text needs the UTF-8 check json_string() makes. */
    if (!text)
        return NULL;
    json_t *block = json_object();
    json_t *value = json_string(text);
    if (!block || !value ||
        json_object_set_new_nocheck(block, "type", json_string_nocheck("text")) != 0) {
        json_decref(block);
        json_decref(value);
        return NULL;
    }
    if (json_object_set_new_nocheck(block, "text", value) != 0) { /* value released */
        json_decref(block);
        return NULL;
    }
    return block;
}

json_t *mcp_content_textf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    json_t *block = mcp_content_text(text);
    free(text);
    return block;
}

static json_t *binary_block(const char *type, const void *data, size_t len,
                            const char *mime_type)
{
    if (!mime_type)
        return NULL;
    char *b64 = mcp_base64_to_string(data, len);
    if (!b64)
        return NULL;
    json_t *block = json_pack("{s:s, s:s}", "type", type, "data", b64);
    free(b64);
    return with_mime(block, mime_type);
}

json_t *mcp_content_image(const void *data, size_t len, const char *mime_type)
{
    return binary_block("image", data, len, mime_type);
}

json_t *mcp_content_audio(const void *data, size_t len, const char *mime_type)
{
    return binary_block("audio", data, len, mime_type);
}

json_t *mcp_content_resource_link(const char *uri, const char *name, const char *mime_type)
{
    if (!uri || !name)
        return NULL;
    return with_mime(json_pack("{s:s, s:s, s:s}", "type", "resource_link", "uri", uri, "name",
                               name),
                     mime_type);
}

json_t *mcp_resource_text(const char *uri, const char *mime_type, const char *text)
{
    if (!uri || !text)
        return NULL;
    return with_mime(json_pack("{s:s, s:s}", "uri", uri, "text", text), mime_type);
}

json_t *mcp_resource_blob(const char *uri, const char *mime_type, const void *data, size_t len)
{
    if (!uri)
        return NULL;
    char *b64 = mcp_base64_to_string(data, len);
    if (!b64)
        return NULL;
    json_t *contents = json_pack("{s:s, s:s}", "uri", uri, "blob", b64);
    free(b64);
    return with_mime(contents, mime_type);
}

static json_t *embedded(json_t *resource)
{
    return resource ? json_pack("{s:s, s:o}", "type", "resource", "resource", resource) : NULL;
}

json_t *mcp_content_embedded_text(const char *uri, const char *mime_type, const char *text)
{
    return embedded(mcp_resource_text(uri, mime_type, text));
}

json_t *mcp_content_embedded_blob(const char *uri, const char *mime_type, const void *data,
                                  size_t len)
{
    return embedded(mcp_resource_blob(uri, mime_type, data, len));
}
