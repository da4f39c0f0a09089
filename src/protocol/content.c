/* Builders of content blocks and resource contents (mcp/content.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/content.h"
#include "protocol/base64.h"
#include "protocol/utf8.h"

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

/* A JSON string of the caller's text: NULL when there is none, when it is
 * not well-formed UTF-8, or when out of memory. Checked here rather than
 * by json_string(): a resource's text may be megabytes, and jansson checks
 * a byte at a time (protocol/utf8.h). */
static json_t *text_string(const char *text)
{
    if (!text)
        return NULL;
    size_t len = strlen(text);
    return mcp_utf8_valid(text, len) ? json_stringn_nocheck(text, len) : NULL;
}

/* A JSON string of base64 text (ASCII by construction), taking `b64`. */
static json_t *base64_string(char *b64)
{
    json_t *value = b64 ? json_stringn_nocheck(b64, strlen(b64)) : NULL;
    free(b64);
    return value;
}

/* obj[key] = value_new (taken). Returns false, releasing obj, when either
 * is NULL (a failed constructor) or the set fails, so that builders can
 * chain members and stop at the first failure. */
static bool member(json_t *obj, const char *key, json_t *value_new)
{
    if (obj && value_new && json_object_set_new_nocheck(obj, key, value_new) == 0)
        return true;
    if (!obj || !value_new)
        json_decref(value_new); /* a failed set released it already */
    json_decref(obj);
    return false;
}

/* Adds "mimeType" when given; returns obj, or NULL (freeing obj) when the
 * value is not valid UTF-8. */
static json_t *with_mime(json_t *obj, const char *mime_type)
{
    if (obj && mime_type && !member(obj, "mimeType", text_string(mime_type)))
        return NULL;
    return obj;
}

json_t *mcp_content_text(const char *text)
{
    /* Built directly rather than with json_pack, which parses its format on
     * every call: this block is in nearly every tools/call result. */
    json_t *block = text ? json_object() : NULL;
    if (!member(block, "type", json_string_nocheck("text")) ||
        !member(block, "text", text_string(text)))
        return NULL;
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
    json_t *encoded = base64_string(mcp_base64_to_string(data, len));
    json_t *block = encoded ? json_object() : NULL;
    if (!member(block, "type", json_string_nocheck(type))) {
        json_decref(encoded);
        return NULL;
    }
    return member(block, "data", encoded) ? with_mime(block, mime_type) : NULL;
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
    json_t *link = json_object();
    if (!member(link, "type", json_string_nocheck("resource_link")) ||
        !member(link, "uri", text_string(uri)) || !member(link, "name", text_string(name)))
        return NULL;
    return with_mime(link, mime_type);
}

json_t *mcp_resource_text(const char *uri, const char *mime_type, const char *text)
{
    if (!uri || !text)
        return NULL;
    json_t *contents = json_object();
    if (!member(contents, "uri", text_string(uri)) || !member(contents, "text", text_string(text)))
        return NULL;
    return with_mime(contents, mime_type);
}

json_t *mcp_resource_blob(const char *uri, const char *mime_type, const void *data, size_t len)
{
    if (!uri)
        return NULL;
    json_t *encoded = base64_string(mcp_base64_to_string(data, len));
    json_t *contents = encoded ? json_object() : NULL;
    if (!member(contents, "uri", text_string(uri))) {
        json_decref(encoded);
        return NULL;
    }
    return member(contents, "blob", encoded) ? with_mime(contents, mime_type) : NULL;
}

static json_t *embedded(json_t *resource)
{
    json_t *block = resource ? json_object() : NULL;
    if (!member(block, "type", json_string_nocheck("resource"))) {
        json_decref(resource);
        return NULL;
    }
    return member(block, "resource", resource) ? block : NULL;
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
