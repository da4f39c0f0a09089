/*
 * JSON-RPC 2.0 messages as MCP uses them: one message per line or body,
 * parsed strictly and classified into request, notification, result or error.
 *
 * Decisions where JSON-RPC 2.0 leaves room and MCP narrows it:
 *   - "params" must be an object when present; positional (array) params
 *     are not used by MCP, so they are an Invalid Request, as is "params":null.
 *   - "result" must be an object (every MCP result is one).
 *   - An error response may omit its id or carry null (digest section 14,
 *     item 11); any other id must be a string or an integer, as for requests
 *     and results. A real number (1.0) is not an integer.
 *   - "error" must be an object with an integer "code" and a string
 *     "message"; anything else is not an error response.
 *   - A message that names a method and also carries "result" or "error" is
 *     ambiguous and rejected rather than guessed at.
 *   - Unknown members are ignored, as MCP requires.
 *   - A string id may contain NUL (JSON allows it); the method may not,
 *     because it is used as a C string.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/errors.h"
#include "mcp/jsonrpc.h"
#include "protocol/json_reader.h"
#include "protocol/json_writer.h"
#include "protocol/jsonrpc_internal.h"

/* ---------------------------------------------------------------------- */
/* Depth pre-scan                                                          */
/* ---------------------------------------------------------------------- */

int mcp_json_depth(const char *buf, size_t len, int max_depth)
{
    /* Clamp so that max_depth + 1 (the "too deep" answer) cannot overflow. */
    if (max_depth < 0)
        max_depth = 0;
    if (max_depth > INT_MAX - 1)
        max_depth = INT_MAX - 1;
    if (!buf)
        return 0;

    int depth = 0, deepest = 0;
    for (size_t i = 0; i < len; i++) {
        switch (buf[i]) {
        case '"':
            /* Skip the string, where only '"' and '\' matter, in a loop of
             * its own: most bytes of a message are in strings. An escape's
             * payload is one byte ('"', '\', 'n', 'u', ...); the hex digits
             * of \uXXXX can be neither, so skipping one byte is enough. */
            for (i++; i < len && buf[i] != '"'; i++)
                if (buf[i] == '\\')
                    i++;
            break;
        case '[':
        case '{':
            if (++depth > deepest) {
                deepest = depth;
                if (deepest > max_depth)
                    return max_depth + 1;
            }
            break;
        case ']':
        case '}':
            /* Unbalanced closers are the parser's to report; never go below 0. */
            if (depth > 0)
                depth--;
            break;
        default:
            break;
        }
    }
    return deepest;
}

/* ---------------------------------------------------------------------- */
/* Classification                                                          */
/* ---------------------------------------------------------------------- */

void mcp_message_clear(mcp_message_t *msg)
{
    if (!msg)
        return;
    json_decref(msg->root);
    memset(msg, 0, sizeof *msg);
}

/*
 * Fails classification with -32600. The root is kept only when an id was
 * read, so that the caller can answer with it; every other field is cleared
 * so that a rejected message never looks partly valid.
 */
static int invalid_request(mcp_message_t *out, mcp_error_t *err, const char *fmt, ...)
    MCP_PRINTF(3, 4);

static int invalid_request(mcp_message_t *out, mcp_error_t *err, const char *fmt, ...)
{
    json_t *root = out->root, *id = out->id;
    memset(out, 0, sizeof *out);
    if (id) {
        out->root = root;
        out->id = id;
    } else {
        json_decref(root);
    }

    va_list ap;
    va_start(ap, fmt);
    int rc = mcp_error_setv(err, MCP_EINVAL, MCP_INVALID_REQUEST, NULL, fmt, ap);
    va_end(ap);
    return rc;
}

static bool is_request_id(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

/* True when `s` is a JSON string that is also a valid C string (no NUL). */
static bool is_c_string(const json_t *s)
{
    return json_is_string(s) && strlen(json_string_value(s)) == json_string_length(s);
}

static bool is_version_2_0(const json_t *v)
{
    return json_is_string(v) && json_string_length(v) == 3 &&
           memcmp(json_string_value(v), "2.0", 3) == 0;
}

static bool is_error_object(const json_t *e)
{
    return json_is_object(e) && json_is_integer(json_object_get(e, "code")) &&
           json_is_string(json_object_get(e, "message"));
}

/* The members of a message that classify() reads. */
typedef struct members {
    json_t *jsonrpc, *id, *method, *params, *result, *error;
} members_t;

/* Finds them in one walk over the message: it has a handful of members,
 * and six lookups hashed six keys (~1k instructions a message). */
static void read_members(json_t *root, members_t *m)
{
    *m = (members_t){0};
    for (void *it = json_object_iter(root); it; it = json_object_iter_next(root, it)) {
        const char *key = json_object_iter_key(it);
        json_t **slot = strcmp(key, "jsonrpc") == 0  ? &m->jsonrpc
                        : strcmp(key, "id") == 0     ? &m->id
                        : strcmp(key, "method") == 0 ? &m->method
                        : strcmp(key, "params") == 0 ? &m->params
                        : strcmp(key, "result") == 0 ? &m->result
                        : strcmp(key, "error") == 0  ? &m->error
                                                     : NULL;
        if (slot)
            *slot = json_object_iter_value(it);
    }
}

/* Classifies out->root (owned by out) and fills the other fields of *out. */
static int classify(mcp_message_t *out, mcp_error_t *err)
{
    json_t *root = out->root;
    if (json_is_array(root))
        return invalid_request(out, err, "JSON-RPC batches are not supported");
    if (!json_is_object(root))
        return invalid_request(out, err, "A JSON-RPC message must be a JSON object");

    members_t m;
    read_members(root, &m);
    json_t *id = m.id, *method = m.method, *params = m.params, *result = m.result,
           *error = m.error;

    /* Read the id first so that every later rejection can be answered with
     * it. A null id is only meaningful on an error response (checked below). */
    if (is_request_id(id))
        out->id = id;
    else if (id && !json_is_null(id))
        return invalid_request(out, err, "The id must be a string or an integer");

    if (!is_version_2_0(m.jsonrpc))
        return invalid_request(out, err, "The jsonrpc member must be exactly \"2.0\"");

    if (method) {
        if (result || error)
            return invalid_request(out, err,
                                   "A message cannot have both a method and a result or error");
        if (!is_c_string(method))
            return invalid_request(out, err, "The method must be a string without NUL");
        if (params && !json_is_object(params))
            return invalid_request(out, err, "The params must be an object when present");
        if (id && !out->id)
            return invalid_request(out, err, "A request id must not be null");
        out->kind = id ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
        out->method = json_string_value(method);
        out->params = params;
        return MCP_OK;
    }

    if (result && error)
        return invalid_request(out, err, "A response cannot have both a result and an error");
    if (result) {
        if (!out->id)
            return invalid_request(out, err, "A result response needs a string or integer id");
        if (!json_is_object(result))
            return invalid_request(out, err, "The result must be an object");
        out->kind = MCP_MSG_RESULT;
        out->result = result;
        return MCP_OK;
    }
    if (error) {
        if (!is_error_object(error))
            return invalid_request(out, err,
                                   "The error must be an object with an integer code and a "
                                   "string message");
        out->kind = MCP_MSG_ERROR;
        out->error = error;
        return MCP_OK;
    }
    return invalid_request(out, err,
                           "The message is neither a request, a notification nor a response");
}

int mcp_jsonrpc_from_json(json_t *root, mcp_message_t *out, mcp_error_t *err)
{
    memset(out, 0, sizeof *out);
    out->root = json_incref(root);
    return classify(out, err);
}

/* -32700 with the position the reader reported, so the peer can find the fault. */
static int parse_error(const json_error_t *jerr, mcp_error_t *err)
{
    json_t *where = json_pack("{s:i, s:i, s:I}", "line", jerr->line, "column", jerr->column,
                              "position", (json_int_t)jerr->position);
    return mcp_error_set(err, MCP_EINVAL, MCP_PARSE_ERROR, where, "Parse error: %s",
                         jerr->text);
}

/*
 * The message is valid JSON with a number out of range (jansson holds
 * integers in 64 bits and reals in doubles): -32600, not -32700, and
 * answered with the message's id when it can be found -- over stdio a
 * client has nothing else to match the error with, and would wait for its
 * timeout. The id is found by reading the text again with such numbers as
 * null (an id out of range is then null: none to answer with).
 */
static int number_out_of_range(const char *buf, size_t len, int max_depth,
                               const json_error_t *jerr, mcp_message_t *out, mcp_error_t *err)
{
    json_error_t ignored;
    bool too_deep;
    out->root = json_read_out_of_range_as_null(buf, len, max_depth, &too_deep, &ignored);
    if (out->root) {
        mcp_error_t scratch = {0};
        classify(out, &scratch); /* for the id alone */
        mcp_error_clear(&scratch);
    }
    return invalid_request(out, err,
                           "A number in the message is out of range (%s at position %d)",
                           jerr->text, jerr->position);
}

/*
 * A well-formed request or notification -- "jsonrpc":"2.0", a method
 * without NUL, an id that is a string or an integer or none, params that
 * are an object or none, and no other member -- read without building
 * its outermost object or the "2.0" (json_read_members()): the message's
 * parts are kept in an array, out->root, which owns them. Building and
 * freeing that object and its four keys was a tenth of serving a small
 * request. False, with *out untouched, for anything else: the caller then
 * reads the message the usual way, which classifies it and words its
 * errors.
 */
static bool read_request_quickly(const char *buf, size_t len, int max_depth,
                                 json_read_memo_t *memo, mcp_message_t *out)
{
    enum { JSONRPC, ID, METHOD, PARAMS };
    json_read_member_t m[] = {
        [JSONRPC] = {.key = "jsonrpc", .equals = "2.0"},
        [ID] = {.key = "id"},
        [METHOD] = {.key = "method"},
        [PARAMS] = {.key = "params"},
    };
    size_t n = sizeof m / sizeof m[0];
    if (!json_read_members(buf, len, max_depth, memo, m, n))
        return false;
    json_t *owner = NULL;
    bool ok = m[JSONRPC].present && is_c_string(m[METHOD].value) &&
              (!m[ID].present || is_request_id(m[ID].value)) &&
              (!m[PARAMS].present || json_is_object(m[PARAMS].value)) &&
              (owner = json_array()) != NULL;
    for (size_t i = ID; ok && i < n; i++)
        ok = !m[i].value || json_array_append(owner, m[i].value) == 0;
    for (size_t i = 0; i < n; i++)
        json_decref(m[i].value); /* the owner holds them, when it is kept */
    if (!ok) {
        json_decref(owner);
        return false;
    }
    *out = (mcp_message_t){
        .kind = m[ID].present ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION,
        .root = owner,
        .id = m[ID].value,
        .method = json_string_value(m[METHOD].value),
        .params = m[PARAMS].value,
    };
    return true;
}

int mcp_jsonrpc_parse(const char *buf, size_t len, const mcp_parse_limits_t *limits,
                      mcp_message_t *out, mcp_error_t *err)
{
    return jsonrpc_parse_memo(buf, len, limits, out, err, NULL);
}

int jsonrpc_parse_memo(const char *buf, size_t len, const mcp_parse_limits_t *limits,
                       mcp_message_t *out, mcp_error_t *err, json_read_memo_t *memo)
{
    size_t max_bytes = MCP_DEFAULT_MAX_MESSAGE_BYTES;
    int max_depth = MCP_DEFAULT_MAX_DEPTH;
    if (limits && limits->max_bytes > 0)
        max_bytes = limits->max_bytes;
    if (limits && limits->max_depth > 0)
        max_depth = limits->max_depth;

    memset(out, 0, sizeof *out);
    if (!buf && len > 0)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "NULL buffer with a non-zero length");
    if (!buf)
        buf = "";

    if (len > max_bytes)
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_REQUEST, NULL,
                             "The message is %zu bytes, more than the limit of %zu", len,
                             max_bytes);

    if (memo && read_request_quickly(buf, len, max_depth, memo, out))
        return MCP_OK;

    /* jansson's strictness, duplicate keys rejected, \u0000 allowed in
     * strings. Any value is read: a lone scalar is valid JSON, so it is an
     * Invalid Request (-32600, from classify) rather than a parse error.
     * The reader enforces the depth limit as it goes: it recurses, and so
     * do decref and dump later, so a deep document must never become a
     * tree. (A syntax error before the too-deep point is reported first.) */
    json_error_t jerr;
    bool too_deep;
    json_t *root = json_read_memo(buf, len, max_depth, &too_deep, &jerr, memo);
    if (!root) {
        if (too_deep)
            return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_REQUEST, NULL,
                                 "The message nests deeper than the limit of %d", max_depth);
        switch (json_error_code(&jerr)) {
        case json_error_out_of_memory:
            return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                                 "Out of memory while parsing the message");
        case json_error_stack_overflow:
            /* The reader's own depth limit, reached when max_depth is above it. */
            return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_REQUEST, NULL,
                                 "The message nests too deep: %s", jerr.text);
        case json_error_numeric_overflow:
            return number_out_of_range(buf, len, max_depth, &jerr, out, err);
        default:
            return parse_error(&jerr, err);
        }
    }
    out->root = root;
    return classify(out, err);
}

/* ---------------------------------------------------------------------- */
/* Builders                                                                */
/* ---------------------------------------------------------------------- */

/*
 * Adds `value_new` under `key`, stealing it. Returns false, and releases
 * `msg`, if value_new is NULL (a failed constructor) or the set fails, so
 * builders can chain additions and stop at the first failure.
 */
static bool add(json_t *msg, const char *key, json_t *value_new)
{
    if (json_object_set_new(msg, key, value_new) == 0)
        return true;
    json_decref(msg);
    return false;
}

/* {"jsonrpc":"2.0"} plus the id when one is given: how every message starts. */
static json_t *envelope(const json_t *id)
{
    json_t *msg = json_object();
    if (!msg || !add(msg, "jsonrpc", json_string("2.0")))
        return NULL;
    if (id && !add(msg, "id", json_incref((json_t *)id)))
        return NULL;
    return msg;
}

json_t *mcp_jsonrpc_request(const json_t *id, const char *method, json_t *params_new)
{
    json_t *msg = NULL;
    if (is_request_id(id) && method && (!params_new || json_is_object(params_new)))
        msg = envelope(id);
    if (!msg || !add(msg, "method", json_string(method))) {
        json_decref(params_new);
        return NULL;
    }
    if (params_new && !add(msg, "params", params_new))
        return NULL;
    return msg;
}

json_t *mcp_jsonrpc_notification(const char *method, json_t *params_new)
{
    json_t *msg = NULL;
    if (method && (!params_new || json_is_object(params_new)))
        msg = envelope(NULL);
    if (!msg || !add(msg, "method", json_string(method))) {
        json_decref(params_new);
        return NULL;
    }
    if (params_new && !add(msg, "params", params_new))
        return NULL;
    return msg;
}

json_t *mcp_jsonrpc_result(const json_t *id, json_t *result_new)
{
    json_t *msg = NULL;
    if (is_request_id(id) && json_is_object(result_new))
        msg = envelope(id);
    if (!msg) {
        json_decref(result_new);
        return NULL;
    }
    return add(msg, "result", result_new) ? msg : NULL;
}

/* The envelope of an error response: a null id is written as no id. */
static json_t *error_envelope(const json_t *id)
{
    if (json_is_null(id))
        id = NULL;
    if (id && !is_request_id(id))
        return NULL;
    return envelope(id);
}

json_t *mcp_jsonrpc_error(const json_t *id, int code, const char *message, json_t *data_new)
{
    json_t *error = json_object();
    if (!error || !add(error, "code", json_integer(code)) ||
        !add(error, "message", json_string(message ? message : mcp_error_code_name(code)))) {
        json_decref(data_new);
        return NULL;
    }
    if (data_new && !add(error, "data", data_new))
        return NULL;

    json_t *msg = error_envelope(id);
    if (!msg) {
        json_decref(error);
        return NULL;
    }
    return add(msg, "error", error) ? msg : NULL;
}

json_t *mcp_jsonrpc_error_from(const json_t *id, const mcp_error_t *err)
{
    static const mcp_error_t internal_error = {0};
    json_t *error = mcp_error_to_json(err ? err : &internal_error);
    json_t *msg = error ? error_envelope(id) : NULL;
    if (!msg) {
        json_decref(error);
        return NULL;
    }
    return add(msg, "error", error) ? msg : NULL;
}

char *mcp_json_dump(const json_t *msg, size_t *len)
{
    /* One line: UTF-8 goes out as is, control characters (newlines and NUL
     * included) are escaped, so strlen() is the length and the text is a
     * valid stdio line. */
    size_t n = 0;
    char *text = msg ? json_write(msg, JSON_WRITE_COMPACT, &n) : NULL;
    if (len)
        *len = text ? n : 0;
    return text;
}
