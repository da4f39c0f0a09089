/* mcp_error_t and return codes: the vocabulary every layer reports failures in. */
#include <stdio.h>
#include <string.h>

#include "mcp/common.h"
#include "mcp/errors.h"

const char *mcp_strerror(int rc)
{
    switch (rc) {
    case MCP_OK: return "success";
    case MCP_EINVAL: return "invalid argument";
    case MCP_ENOMEM: return "out of memory";
    case MCP_EPROTO: return "protocol violation by the peer";
    case MCP_ERPC: return "the peer answered with a JSON-RPC error";
    case MCP_EIO: return "input/output error";
    case MCP_ETIMEDOUT: return "timed out";
    case MCP_ECANCELED: return "cancelled";
    case MCP_ECLOSED: return "connection closed";
    case MCP_ENOTFOUND: return "not found";
    case MCP_EEXIST: return "already exists";
    case MCP_EUNSUPPORTED: return "not supported";
    case MCP_EAUTH: return "authorization required or refused";
    case MCP_ELIMIT: return "limit exceeded";
    case MCP_ESTATE: return "invalid state for this call";
    default: return "unknown error";
    }
}

const char *mcp_lib_version(void)
{
    return MCP_LIB_VERSION;
}

/*
 * vsnprintf cuts at a byte, possibly inside a multi-byte UTF-8 character.
 * Drop such a partial character so that the message still converts to a
 * JSON string (json_string() refuses invalid UTF-8, see mcp_error_to_json).
 */
static void drop_partial_utf8_tail(char *s)
{
    size_t len = strlen(s), lead = len;
    while (lead > 0 && len - lead < 3 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80)
        lead--;
    if (lead == 0)
        return;
    unsigned char c = (unsigned char)s[lead - 1];
    size_t needed = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (len - (lead - 1) < needed)
        s[lead - 1] = '\0';
}

int mcp_error_setv(mcp_error_t *err, int rc, int code, json_t *data_new, const char *fmt,
                   va_list ap)
{
    if (!err) {
        json_decref(data_new);
        return rc;
    }
    /* Format into a local buffer and release the old data last: the
     * arguments may point into err->message or err->data, as when context
     * is prefixed to an existing error ("reading x: %s", err->message). */
    char message[MCP_ERROR_MESSAGE_MAX];
    if (fmt) {
        int n = vsnprintf(message, sizeof message, fmt, ap);
        if (n < 0)
            message[0] = '\0';
        else if ((size_t)n >= sizeof message)
            drop_partial_utf8_tail(message);
    } else {
        snprintf(message, sizeof message, "%s",
                 code ? mcp_error_code_name(code) : mcp_strerror(rc));
    }
    json_t *old_data = err->data;
    memcpy(err->message, message, sizeof message);
    err->rc = rc;
    err->code = code;
    err->data = data_new;
    json_decref(old_data);
    return rc;
}

int mcp_error_set(mcp_error_t *err, int rc, int code, json_t *data_new, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rc = mcp_error_setv(err, rc, code, data_new, fmt, ap);
    va_end(ap);
    return rc;
}

void mcp_error_clear(mcp_error_t *err)
{
    if (!err)
        return;
    json_decref(err->data);
    memset(err, 0, sizeof *err);
}

void mcp_error_move(mcp_error_t *dst, mcp_error_t *src)
{
    if (dst == src)
        return;
    mcp_error_clear(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
}

json_t *mcp_error_to_json(const mcp_error_t *err)
{
    int code = err->code ? err->code : MCP_INTERNAL_ERROR;
    const char *msg = err->message[0] ? err->message : mcp_error_code_name(code);
    json_t *o = json_pack("{s:i, s:s}", "code", code, "message", msg);
    if (!o) {
        /* The message may be invalid UTF-8 (truncation mid-character or
         * foreign bytes): fall back to the code's generic name. */
        o = json_pack("{s:i, s:s}", "code", code, "message", mcp_error_code_name(code));
        if (!o)
            return NULL;
    }
    if (err->data && json_object_set(o, "data", err->data) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int mcp_error_from_json(mcp_error_t *err, const json_t *error_obj)
{
    const json_t *code = json_object_get(error_obj, "code");
    const json_t *message = json_object_get(error_obj, "message");
    if (!json_is_object(error_obj) || !json_is_integer(code) || !json_is_string(message))
        return mcp_error_set(err, MCP_EPROTO, MCP_INTERNAL_ERROR, NULL,
                             "malformed JSON-RPC error object");
    json_t *data = json_object_get(error_obj, "data");
    json_int_t c = json_integer_value(code);
    if (c < INT32_MIN || c > INT32_MAX)
        return mcp_error_set(err, MCP_EPROTO, MCP_INTERNAL_ERROR, NULL,
                             "JSON-RPC error code out of range");
    mcp_error_set(err, MCP_ERPC, (int)c, data ? json_incref(data) : NULL, "%s",
                  json_string_value(message));
    return MCP_OK;
}

void mcp_log_stderr(void *user, mcp_log_level_t level, const char *msg)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};
    (void)user;
    fprintf(stderr, "libmcp: %s: %s\n",
            (unsigned)level < 4 ? names[level] : "log", msg);
}
