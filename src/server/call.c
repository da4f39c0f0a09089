/*
 * The handler API: what a tool, resource, prompt or completion handler can
 * read about its request and how it builds its answer (mcp_call_*).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/utf8.h"
#include "server/server_internal.h"
#include "clock.h"
#include "json_get.h"

void call_init(mcp_call_t *call, mcp_exchange_t *ex, method_id_t method, const char *target)
{
    memset(call, 0, sizeof *call);
    call->ex = ex;
    call->method = method;
    call->target = target;
    call->arguments = mcp_json_get(ex->msg.params, "arguments");
    if (!json_is_object(call->arguments)) {
        call->arguments = json_object();
        call->owns_arguments = true;
    }
    /* content, contents, messages and values are made on first use (see
     * append()): a method fills one of them at most, and making all four
     * up front was 8 allocations and ~3k instructions per call. */
    call->total = -1;
    call->cache_ttl_ms = -1;
    call->last_progress = -INFINITY;
}

void call_cleanup(mcp_call_t *call)
{
    if (call->owns_arguments)
        json_decref(call->arguments);
    free(call->first_text);
    json_decref(call->content);
    json_decref(call->structured);
    json_decref(call->contents);
    json_decref(call->messages);
    json_decref(call->values);
    json_decref(call->result_meta);
    json_decref(call->input_requests);
    json_decref(call->next_state);
    task_unref(call->task);
    free(call->description);
    mcp_error_clear(&call->error);
}

/* ------------------------------------------------------------------------
 * Reading the request
 * ------------------------------------------------------------------------ */

const char *mcp_call_method(const mcp_call_t *call)
{
    return call->ex->msg.method;
}

const char *mcp_call_target(const mcp_call_t *call)
{
    return call->target;
}

const json_t *mcp_call_params(const mcp_call_t *call)
{
    return call->ex->msg.params;
}

const json_t *mcp_call_arguments(const mcp_call_t *call)
{
    return call->arguments;
}

const json_t *mcp_call_arg(const mcp_call_t *call, const char *name)
{
    return mcp_json_get(call->arguments, name);
}

const char *mcp_call_arg_string(const mcp_call_t *call, const char *name)
{
    return json_string_value(mcp_call_arg(call, name));
}

bool mcp_call_arg_int(const mcp_call_t *call, const char *name, int64_t *out)
{
    const json_t *v = mcp_call_arg(call, name);
    if (!json_is_integer(v))
        return false;
    *out = json_integer_value(v);
    return true;
}

bool mcp_call_arg_number(const mcp_call_t *call, const char *name, double *out)
{
    const json_t *v = mcp_call_arg(call, name);
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return true;
}

bool mcp_call_arg_bool(const mcp_call_t *call, const char *name, bool *out)
{
    const json_t *v = mcp_call_arg(call, name);
    if (!json_is_boolean(v))
        return false;
    *out = json_is_true(v);
    return true;
}

const char *mcp_call_uri_var(const mcp_call_t *call, const char *name)
{
    return name ? json_string_value(json_object_get(call->ex->uri_vars, name)) : NULL;
}

const json_t *mcp_call_client_capabilities(const mcp_call_t *call)
{
    return call->ex->client_caps;
}

const json_t *mcp_call_client_info(const mcp_call_t *call)
{
    return call->ex->client_info;
}

const char *mcp_call_protocol_version(const mcp_call_t *call)
{
    return call->ex->protocol_version;
}

mcp_era_t mcp_call_era(const mcp_call_t *call)
{
    return call->ex->era;
}

const char *mcp_call_principal(const mcp_call_t *call)
{
    return call->ex->principal;
}

bool mcp_call_cancelled(const mcp_call_t *call)
{
    return atomic_load(&call->ex->cancelled);
}

int mcp_call_sleep(mcp_call_t *call, int64_t ms)
{
    mcp_exchange_t *ex = call->ex;
    struct timespec deadline = mcp_clock_deadline(ms);
    pthread_mutex_lock(&ex->wait_lock);
    int rc = 0;
    while (!atomic_load(&ex->cancelled) && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&ex->wait_cond, &ex->wait_lock, &deadline);
    pthread_mutex_unlock(&ex->wait_lock);
    return atomic_load(&ex->cancelled) ? MCP_ECANCELED : MCP_OK;
}

/* ------------------------------------------------------------------------
 * Notifications during the request
 * ------------------------------------------------------------------------ */

int mcp_call_progress(mcp_call_t *call, double progress, double total, const char *message)
{
    mcp_exchange_t *ex = call->ex;
    if (!ex->progress_token || call->task)
        return MCP_OK; /* not asked for; or a task, which has no channel */
    if (!isfinite(progress) || progress <= call->last_progress)
        return MCP_EINVAL; /* the spec requires progress to increase */
    call->last_progress = progress;
    json_t *params = json_pack("{s:O, s:f}", "progressToken", ex->progress_token, "progress",
                               progress);
    if (!params)
        return MCP_ENOMEM;
    if (total >= 0 && isfinite(total))
        json_object_set_new(params, "total", json_real(total));
    if (message)
        json_object_set_new(params, "message", json_string(message));
    return exchange_notify(ex, mcp_jsonrpc_notification("notifications/progress", params));
}

int mcp_call_log(mcp_call_t *call, const char *level, const char *logger, json_t *data_new)
{
    int index = level ? mcp_log_level_index(level) : -1;
    if (index < 0) {
        json_decref(data_new);
        return MCP_EINVAL;
    }
    mcp_exchange_t *ex = call->ex;
    if (ex->log_level < 0 || index < ex->log_level || call->task) {
        /* The client did not ask for this level; or a task, which has no
         * channel for logs. */
        json_decref(data_new);
        return MCP_OK;
    }
    json_t *params = json_pack("{s:s, s:o}", "level", level, "data",
                               data_new ? data_new : json_null());
    if (!params)
        return MCP_ENOMEM;
    if (logger)
        json_object_set_new(params, "logger", json_string(logger));
    return exchange_notify(ex, mcp_jsonrpc_notification("notifications/message", params));
}

int mcp_call_logf(mcp_call_t *call, const char *level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return MCP_ENOMEM;
    json_t *data = json_stringn(text, (size_t)n);
    free(text);
    if (!data)
        return MCP_EINVAL;
    return mcp_call_log(call, level, NULL, data);
}

/* ------------------------------------------------------------------------
 * Building the result
 * ------------------------------------------------------------------------ */

/* Appends to the list in *list, making the list first if it has none. */
static int append(json_t **list, json_t *item_new)
{
    if (!item_new)
        return MCP_EINVAL;
    if (!*list && !(*list = json_array())) {
        json_decref(item_new);
        return MCP_ENOMEM;
    }
    return json_array_append_new(*list, item_new) == 0 ? MCP_OK : MCP_ENOMEM;
}

/*
 * A tool's content while it is one text block, the commonest answer of
 * all, is kept as that text (call->first_text) rather than as a block: the
 * answer is then written from the text (answer_tool_directly()), and the
 * block object, its two strings and the array, made and freed for each
 * call, were more instructions than the rest of the result. Whatever adds
 * a second block, or reads the content, settles the text into
 * call->content first.
 */
int call_settle_content(mcp_call_t *call)
{
    if (!call->first_text)
        return MCP_OK;
    json_t *content = call->content ? call->content : json_array();
    json_t *block = content ? json_object() : NULL;
    /* set_new and insert_new take their value even when they fail. */
    bool made = block &&
                json_object_set_new_nocheck(block, "type", json_string_nocheck("text")) == 0 &&
                json_object_set_new_nocheck(
                    block, "text", json_stringn_nocheck(call->first_text, call->first_text_len)) == 0;
    if (!made)
        json_decref(block);
    if (!made || json_array_insert_new(content, 0, block) != 0) {
        if (content != call->content)
            json_decref(content);
        return MCP_ENOMEM; /* the text stays, and so does the answer */
    }
    call->content = content;
    free(call->first_text);
    call->first_text = NULL;
    return MCP_OK;
}

/* Adds a text block of `len` bytes at `text` (malloc'd, taken; NUL at
 * text[len]), checked to be UTF-8. */
static int add_text_taken(mcp_call_t *call, char *text, size_t len)
{
    if (!mcp_utf8_valid(text, len)) {
        free(text);
        return MCP_EINVAL;
    }
    if (!call->first_text && json_array_size(call->content) == 0) {
        call->first_text = text;
        call->first_text_len = len;
        return MCP_OK;
    }
    int rc = call_settle_content(call);
    if (rc == MCP_OK)
        rc = append(&call->content, mcp_content_text(text));
    free(text);
    return rc;
}

int mcp_call_add_content(mcp_call_t *call, json_t *block_new)
{
    if (!json_is_object(block_new)) {
        json_decref(block_new);
        return MCP_EINVAL;
    }
    if (call_settle_content(call) != MCP_OK) {
        json_decref(block_new);
        return MCP_ENOMEM;
    }
    return append(&call->content, block_new);
}

int mcp_call_add_text(mcp_call_t *call, const char *text)
{
    if (!text)
        return MCP_EINVAL;
    char *copy = strdup(text);
    return copy ? add_text_taken(call, copy, strlen(copy)) : MCP_ENOMEM;
}

int mcp_call_add_textf(mcp_call_t *call, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return MCP_ENOMEM;
    /* Up to a NUL that a %c may have put in, as mcp_call_add_text(). */
    return add_text_taken(call, text, strlen(text));
}

int mcp_call_set_structured(mcp_call_t *call, json_t *value_new)
{
    if (!value_new)
        return MCP_EINVAL;
    json_decref(call->structured);
    call->structured = value_new;
    return MCP_OK;
}

int mcp_call_tool_error(mcp_call_t *call, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    call->is_error = true;
    if (n >= 0 && call_settle_content(call) == MCP_OK)
        append(&call->content, mcp_content_text(text));
    free(text);
    return MCP_OK;
}

int mcp_call_add_resource_contents(mcp_call_t *call, json_t *contents_new)
{
    if (!json_is_object(contents_new) || !json_is_string(json_object_get(contents_new, "uri"))) {
        json_decref(contents_new);
        return MCP_EINVAL;
    }
    return append(&call->contents, contents_new);
}

int mcp_call_add_resource_text(mcp_call_t *call, const char *uri, const char *mime_type,
                               const char *text)
{
    return append(&call->contents, mcp_resource_text(uri, mime_type, text));
}

int mcp_call_add_resource_blob(mcp_call_t *call, const char *uri, const char *mime_type,
                               const void *data, size_t len)
{
    return append(&call->contents, mcp_resource_blob(uri, mime_type, data, len));
}

int mcp_call_resource_not_found(mcp_call_t *call)
{
    const char *uri = call->target ? call->target : "";
    mcp_error_set(&call->error, MCP_ENOTFOUND, MCP_INVALID_PARAMS,
                  json_pack("{s:s}", "uri", uri), "Resource not found: %s", uri);
    return MCP_ENOTFOUND;
}

int mcp_call_add_message(mcp_call_t *call, const char *role, json_t *content_new)
{
    if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0) ||
        !json_is_object(content_new)) {
        json_decref(content_new);
        return MCP_EINVAL;
    }
    return append(&call->messages, json_pack("{s:s, s:o}", "role", role, "content", content_new));
}

int mcp_call_set_description(mcp_call_t *call, const char *description)
{
    char *copy = description ? strdup(description) : NULL;
    if (description && !copy)
        return MCP_ENOMEM;
    free(call->description);
    call->description = copy;
    return MCP_OK;
}

#define MAX_COMPLETION_VALUES 100

int mcp_call_add_completion(mcp_call_t *call, const char *value)
{
    if (!value)
        return MCP_EINVAL;
    if (json_array_size(call->values) >= MAX_COMPLETION_VALUES) {
        call->has_more = true; /* the spec caps a response at 100 values */
        return MCP_OK;
    }
    return append(&call->values, json_string(value));
}

int mcp_call_set_completion_total(mcp_call_t *call, int64_t total, bool has_more)
{
    call->total = total;
    call->has_more = call->has_more || has_more;
    return MCP_OK;
}

int mcp_call_set_result_meta(mcp_call_t *call, const char *key, json_t *value_new)
{
    if (!key || strncmp(key, "io.modelcontextprotocol/", 24) == 0 || !value_new) {
        json_decref(value_new);
        return MCP_EINVAL;
    }
    if (!call->result_meta)
        call->result_meta = json_object();
    return json_object_set_new(call->result_meta, key, value_new) == 0 ? MCP_OK : MCP_ENOMEM;
}

int mcp_call_set_cache(mcp_call_t *call, int64_t ttl_ms, const char *scope)
{
    if (ttl_ms < 0 || !scope)
        return MCP_EINVAL;
    if (strcmp(scope, MCP_CACHE_PUBLIC) == 0)
        call->cache_scope = MCP_CACHE_PUBLIC;
    else if (strcmp(scope, MCP_CACHE_PRIVATE) == 0)
        call->cache_scope = MCP_CACHE_PRIVATE;
    else
        return MCP_EINVAL;
    call->cache_ttl_ms = ttl_ms;
    return MCP_OK;
}

int mcp_call_fail_data(mcp_call_t *call, int code, json_t *data_new, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcp_error_setv(&call->error, MCP_ERPC, code ? code : MCP_INTERNAL_ERROR, data_new, fmt, ap);
    va_end(ap);
    return MCP_ERPC;
}

int mcp_call_fail(mcp_call_t *call, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mcp_error_setv(&call->error, MCP_ERPC, code ? code : MCP_INTERNAL_ERROR, NULL, fmt, ap);
    va_end(ap);
    return MCP_ERPC;
}
