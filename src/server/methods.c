/*
 * The methods of 2026-07-28, as the server answers them.
 *
 * server/discover and the four list methods are answered from the
 * registries without user code. tools/call, resources/read, prompts/get
 * and completion/complete find their target, run the user's handler on a
 * worker thread (or on the receiving thread, when it is lent: lend.h), and
 * turn what it built into the method's result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/json_writer.h"
#include "server/server_internal.h"
#include "clock.h"
#include "json_get.h"
#include "lend.h"

/* ------------------------------------------------------------------------
 * Built-in methods
 * ------------------------------------------------------------------------ */

static json_t *discover_result(mcp_server_t *srv)
{
    size_t n;
    const char *const *modern = mcp_protocol_versions_modern(&n);
    /* Every failure below is out of memory, and is the whole result's: a
     * version, extension or instructions left out would be a wrong
     * answer, not a smaller one. */
    json_t *versions = json_array();
    int bad = !versions;
    for (size_t i = 0; i < n; i++)
        bad |= json_array_append_new(versions, json_string(modern[i]));
    json_t *caps = server_capabilities(srv);
    /* Extensions are a 2026-07-28 notion: only discover speaks of them. */
    json_t *extensions = srv->extensions ? json_deep_copy(srv->extensions) : json_object();
    bad |= !extensions;
    if (atomic_load(&srv->tasks_offered))
        bad |= json_object_set_new(extensions, MCP_EXTENSION_TASKS, json_object());
    if (skills_offered(srv))
        bad |= json_object_set_new(extensions, MCP_EXTENSION_SKILLS,
                                   skills_extension_settings());
    if (json_object_size(extensions) > 0)
        bad |= json_object_set(caps, "extensions", extensions);
    json_decref(extensions);
    if (bad) {
        json_decref(versions);
        json_decref(caps);
        return NULL;
    }
    json_t *result = json_pack("{s:o, s:o}", "supportedVersions", versions, "capabilities",
                               caps);
    if (result && srv->instructions &&
        json_object_set_new(result, "instructions", json_string(srv->instructions)) != 0) {
        json_decref(result);
        return NULL;
    }
    return result;
}

static json_t *list_result(mcp_server_t *srv, entry_kind_t kind, const char *member,
                           const json_t *params, list_text_t *text, mcp_error_t *err)
{
    char *after;
    if (!registry_cursor_param(params, &after, err))
        return NULL;
    json_t *items = NULL;
    char *next = NULL;
    registry_page(srv, kind, after, &items, &next, text);
    free(after);
    json_t *result = json_pack("{s:o}", member, items);
    /* A page without its nextCursor would end the listing early. */
    if (result && next && json_object_set_new(result, "nextCursor", json_string(next)) != 0) {
        json_decref(result);
        result = NULL;
    }
    free(next);
    return result;
}

json_t *method_builtin(mcp_server_t *srv, method_id_t method, const json_t *params,
                       list_text_t *text, mcp_error_t *err)
{
    if (text)
        *text = (list_text_t){0};
    switch (method) {
    case METHOD_DISCOVER:
        return discover_result(srv);
    case METHOD_TOOLS_LIST:
        return list_result(srv, ENTRY_TOOL, "tools", params, text, err);
    case METHOD_RESOURCES_LIST:
        return list_result(srv, ENTRY_RESOURCE, "resources", params, text, err);
    case METHOD_RESOURCES_TEMPLATES_LIST:
        return list_result(srv, ENTRY_TEMPLATE, "resourceTemplates", params, text, err);
    case METHOD_PROMPTS_LIST:
        return list_result(srv, ENTRY_PROMPT, "prompts", params, text, err);
    default:
        mcp_error_set(err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL, "not a built-in method");
        return NULL;
    }
}

/* ------------------------------------------------------------------------
 * Finding the target of a handler-backed method
 * ------------------------------------------------------------------------ */

const char *method_string_param(const json_t *params, const char *key, mcp_error_t *err)
{
    const json_t *v = mcp_json_get(params, key);
    const char *s = json_string_value(v);
    if (!s || strlen(s) != json_string_length(v)) {
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                      "params.%s must be a string", key);
        return NULL;
    }
    return s;
}

/* An optional "arguments" object; prompts require string values. */
static bool arguments_valid(const json_t *args, bool strings_only, mcp_error_t *err)
{
    if (!args)
        return true;
    if (!json_is_object(args)) {
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                      "params.arguments must be an object");
        return false;
    }
    if (strings_only) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)args, k, v) {
            if (!json_is_string(v)) {
                mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                              "prompt argument %s must be a string", k);
                return false;
            }
        }
    }
    return true;
}

static int resolve_tool(mcp_exchange_t *ex, const char **target, mcp_error_t *err)
{
    const json_t *params = ex->msg.params;
    const char *name = method_string_param(params, "name", err);
    if (!name)
        return MCP_EINVAL;
    if (!arguments_valid(mcp_json_get(params, "arguments"), false, err))
        return MCP_EINVAL;
    ex->entry = registry_find(ex->srv, ENTRY_TOOL, name);
    if (!ex->entry)
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS,
                             json_pack("{s:s}", "name", name), "Unknown tool: %s", name);
    *target = name;
    return MCP_OK;
}

static json_t *resource_not_found_data(const char *uri)
{
    return json_pack("{s:s}", "uri", uri);
}

static int resolve_resource(mcp_exchange_t *ex, const char **target, mcp_error_t *err)
{
    const char *uri = method_string_param(ex->msg.params, "uri", err);
    if (!uri)
        return MCP_EINVAL;
    ex->entry = registry_find(ex->srv, ENTRY_RESOURCE, uri);
    bool out_of_memory = false;
    if (!ex->entry)
        ex->entry = registry_match_template(ex->srv, uri, &ex->uri_vars, &out_of_memory);
    if (out_of_memory)
        return mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                             "Internal error: out of memory");
    if (!ex->entry)
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, resource_not_found_data(uri),
                             "Resource not found: %s", uri);
    *target = uri;
    return MCP_OK;
}

static int resolve_prompt(mcp_exchange_t *ex, const char **target, mcp_error_t *err)
{
    const json_t *params = ex->msg.params;
    const char *name = method_string_param(params, "name", err);
    if (!name)
        return MCP_EINVAL;
    const json_t *args = json_object_get(params, "arguments");
    if (!arguments_valid(args, true, err))
        return MCP_EINVAL;
    ex->entry = registry_find(ex->srv, ENTRY_PROMPT, name);
    if (!ex->entry)
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS,
                             json_pack("{s:s}", "name", name), "Unknown prompt: %s", name);
    size_t i;
    json_t *required;
    json_array_foreach(ex->entry->required_args, i, required) {
        if (!json_object_get(args, json_string_value(required)))
            return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS,
                                 json_pack("{s:O}", "argument", required),
                                 "Missing required argument %s for prompt %s",
                                 json_string_value(required), name);
    }
    *target = name;
    return MCP_OK;
}

/* completion/complete: {ref: {type, name|uri}, argument: {name, value}}. */
typedef struct completion_request {
    mcp_completion_ref_kind_t kind;
    const char *ref;
    const char *argument;
    const char *value;
    const json_t *context;
} completion_request_t;

static int resolve_completion(mcp_exchange_t *ex, completion_request_t *c, mcp_error_t *err)
{
    const json_t *params = ex->msg.params;
    const json_t *ref = json_object_get(params, "ref");
    const json_t *arg = json_object_get(params, "argument");
    const char *type = json_string_value(json_object_get(ref, "type"));
    if (!type || !json_is_object(arg))
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                             "completion needs params.ref.type and params.argument");
    if (strcmp(type, "ref/prompt") == 0) {
        c->kind = MCP_REF_PROMPT;
        c->ref = json_string_value(json_object_get(ref, "name"));
    } else if (strcmp(type, "ref/resource") == 0) {
        c->kind = MCP_REF_RESOURCE;
        c->ref = json_string_value(json_object_get(ref, "uri"));
    } else {
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                             "unknown completion reference type %s", type);
    }
    c->argument = json_string_value(json_object_get(arg, "name"));
    c->value = json_string_value(json_object_get(arg, "value"));
    if (!c->ref || !c->argument || !c->value)
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                             "completion needs ref name/uri, argument.name and argument.value");
    c->context = json_object_get(json_object_get(params, "context"), "arguments");
    if (c->context && !json_is_object(c->context))
        c->context = NULL;
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Turning a handler's work into a result
 * ------------------------------------------------------------------------ */

/*
 * A new result object whose `key` holds the array the handler filled (an
 * empty one if the handler added none). The array moves from the call
 * to the result (*items becomes NULL), so it is neither copied nor shared.
 */
static json_t *result_with_items(const char *key, json_t **items)
{
    json_t *array = *items ? *items : json_array();
    *items = NULL;
    json_t *result = json_object();
    if (!result || !array) {
        json_decref(result);
        json_decref(array);
        return NULL;
    }
    /* set_new takes the array even when it fails. */
    if (json_object_set_new_nocheck(result, key, array) != 0) {
        json_decref(result);
        return NULL;
    }
    return result;
}

/*
 * result[key] = value_new (stolen, may be NULL); NULL, with the result
 * freed, when either is missing or the member cannot be added: a result
 * without a member the handler set (isError, structuredContent, _meta)
 * would be a wrong answer, not a smaller one.
 */
static json_t *with_member(json_t *result, const char *key, json_t *value_new)
{
    if (result && json_object_set_new_nocheck(result, key, value_new) == 0)
        return result;
    if (!result)
        json_decref(value_new);
    json_decref(result);
    return NULL;
}

static json_t *tool_result(mcp_call_t *call)
{
    if (call_settle_content(call) != MCP_OK)
        return NULL;
    if (call->structured && json_array_size(call->content) == 0) {
        /* The spec asks tools that return structured content to also give
         * its serialisation as text, for clients that only read content. */
        char *text = mcp_json_dump(call->structured, NULL);
        json_t *block = text ? mcp_content_text(text) : NULL;
        free(text);
        if (block && !call->content)
            call->content = json_array();
        if (json_array_append_new(call->content, block) != 0)
            return NULL;
    }
    json_t *result = result_with_items("content", &call->content);
    if (call->structured)
        result = with_member(result, "structuredContent", json_incref(call->structured));
    if (call->is_error)
        result = with_member(result, "isError", json_true());
    return result;
}

static json_t *complete_result(mcp_call_t *call)
{
    json_t *completion = result_with_items("values", &call->values);
    if (call->total >= 0)
        completion = with_member(completion, "total", json_integer(call->total));
    if (call->has_more)
        completion = with_member(completion, "hasMore", json_true());
    return completion ? json_pack("{s:o}", "completion", completion) : NULL;
}

/* Does the request carry answers of an earlier round? Its result then
 * depends on inputs outside any cache key and must not be cached
 * (caching.mdx): ttlMs 0 marks it stale at once. */
static bool is_retry(const mcp_exchange_t *ex)
{
    return json_object_get(ex->msg.params, "inputResponses") ||
           json_object_get(ex->msg.params, "requestState");
}

json_t *method_complete_result(mcp_call_t *call, mcp_error_t *err)
{
    json_t *result = NULL;
    switch (call->method) {
    case METHOD_TOOLS_CALL:
        result = tool_result(call);
        break;
    case METHOD_RESOURCES_READ:
        if (json_array_size(call->contents) == 0) {
            /* Empty contents must never stand for a missing resource. */
            mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS,
                          resource_not_found_data(call->target), "Resource not found: %s",
                          call->target);
            return NULL;
        }
        result = result_with_items("contents", &call->contents);
        if (is_retry(call->ex))
            result = with_member(result, "ttlMs", json_integer(0));
        else if (call->cache_ttl_ms >= 0)
            result = with_member(result, "ttlMs", json_integer(call->cache_ttl_ms));
        if (call->cache_scope)
            result = with_member(result, "cacheScope", json_string(call->cache_scope));
        break;
    case METHOD_PROMPTS_GET:
        result = result_with_items("messages", &call->messages);
        if (call->description)
            result = with_member(result, "description", json_string(call->description));
        break;
    case METHOD_COMPLETE:
        result = complete_result(call);
        break;
    default:
        break;
    }
    if (!result) {
        mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "could not build the result");
        return NULL;
    }
    if (call->result_meta)
        result = with_member(result, "_meta", json_incref(call->result_meta));
    if (!result)
        mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "could not build the result");
    return result;
}

/*
 * Answers a tools/call straight from `call`, as text, when its result
 * needs nothing beyond what every result gets: a modern request, no _meta
 * from the handler, and content whenever there is structuredContent. The
 * members are those tool_result() and mcp_shape_modern_result() would put
 * in a tree -- content, structuredContent, isError, resultType, _meta --
 * in the same order and the same bytes, written without making the tree,
 * which was a fifth of the instructions of a small call. False, with
 * nothing sent, when the answer takes the general path (or could not be
 * written: that path then reports the failure).
 */
static bool answer_tool_directly(mcp_exchange_t *ex, mcp_call_t *call)
{
    const mcp_server_t *srv = ex->srv;
    if (call->method != METHOD_TOOLS_CALL || ex->era != MCP_ERA_MODERN ||
        !ex->sink->send_text || call->result_meta ||
        (call->structured && !call->first_text && json_array_size(call->content) == 0) ||
        (!srv->omit_server_info_meta && !srv->result_meta_text))
        return false;
    json_member_t members[5];
    size_t n = 0;
    static const char block_head[] = "[{\"type\":\"text\",\"text\":";
    if (call->first_text)
        members[n++] = (json_member_t){.key = "content",
                                       .raw = block_head,
                                       .raw_len = sizeof block_head - 1,
                                       .string = call->first_text,
                                       .string_len = call->first_text_len,
                                       .raw_after = "}]",
                                       .raw_after_len = 2};
    else if (call->content)
        members[n++] = (json_member_t){.key = "content", .value = call->content};
    else
        members[n++] = (json_member_t){.key = "content", .raw = "[]", .raw_len = 2};
    if (call->structured)
        members[n++] = (json_member_t){.key = "structuredContent", .value = call->structured};
    if (call->is_error)
        members[n++] = (json_member_t){.key = "isError", .raw = "true", .raw_len = 4};
    members[n++] = (json_member_t){.key = "resultType", .raw = "\"complete\"", .raw_len = 10};
    if (srv->result_meta_text)
        members[n++] = (json_member_t){
            .key = "_meta", .raw = srv->result_meta_text, .raw_len = srv->result_meta_len};
    size_t len = 0;
    char *text = json_write_result_members(ex->msg.id, members, n, &len);
    if (!text)
        return false;
    exchange_finish_text(ex, text, len);
    free(text);
    return true;
}

/* Runs the handler of `call` and returns what it returned. */
static int invoke(mcp_exchange_t *ex, mcp_call_t *call, const completion_request_t *c)
{
    entry_t *e = ex->entry;
    switch (call->method) {
    case METHOD_TOOLS_CALL:
        return e->fn.tool(call, e->user);
    case METHOD_RESOURCES_READ:
        return e->fn.resource(call, call->target, e->user);
    case METHOD_PROMPTS_GET:
        return e->fn.prompt(call, e->user);
    case METHOD_COMPLETE: {
        pthread_rwlock_rdlock(&ex->srv->lock);
        mcp_complete_fn fn = ex->srv->complete;
        void *user = ex->srv->complete_user;
        pthread_rwlock_unlock(&ex->srv->lock);
        if (!fn)
            return mcp_call_fail(call, MCP_METHOD_NOT_FOUND, "Method not found");
        return fn(call, c->kind, c->ref, c->argument, c->value, c->context, user);
    }
    default:
        return mcp_call_fail(call, MCP_METHOD_NOT_FOUND, "Method not found");
    }
}

/* The target a first run resolved, read back from the request. */
static const char *call_target_of(const mcp_exchange_t *ex)
{
    const char *key = strcmp(ex->msg.method, "resources/read") == 0 ? "uri" : "name";
    return json_string_value(mcp_json_get(ex->msg.params, key));
}

/* The tool, resource or prompt a request names, into ex->entry. */
static int resolve_target(mcp_exchange_t *ex, method_id_t method, mcp_error_t *err)
{
    const char *target;
    switch (method) {
    case METHOD_TOOLS_CALL:
        return resolve_tool(ex, &target, err);
    case METHOD_RESOURCES_READ:
        return resolve_resource(ex, &target, err);
    case METHOD_PROMPTS_GET:
        return resolve_prompt(ex, &target, err);
    default:
        return mcp_error_set(err, MCP_EINVAL, MCP_METHOD_NOT_FOUND, NULL, "Method not found");
    }
}

/* A tool that runs only as a task cannot serve a legacy client before
 * 2025-11-25, which has no way to ask for one (modern clients that did
 * not declare the Tasks extension are refused by the request ladder, with
 * the same error); a 2025-11-25 client has its own rules. */
static bool refuse_legacy_task(mcp_exchange_t *ex, mcp_error_t *err)
{
    if (ex->era == MCP_ERA_LEGACY && legacy_tasks_served(ex->srv, ex->protocol_version))
        return legacy_task_refused(ex, err);
    if (ex->era != MCP_ERA_LEGACY || ex->entry->kind != ENTRY_TOOL ||
        ex->entry->tasks != MCP_TASKS_REQUIRED)
        return false;
    mcp_error_missing_capability(err, task_required_capabilities());
    snprintf(err->message, sizeof err->message,
             "Tool %s runs only as a task (the io.modelcontextprotocol/tasks extension of "
             "2026-07-28)",
             ex->entry->key);
    return true;
}

static void method_job(void *arg)
{
    method_run(arg);
}

/* After a call held a lent thread too long, the handler's calls go to the
 * pool for a second, then two, four... up to about an hour: a handler that
 * blocks every time costs its event loop one short stall per pause, and
 * one that was only unlucky (preempted, or slow once) is lent again soon. */
#define LEND_PAUSE_MS 1000
#define LEND_PAUSE_DOUBLINGS 12

/*
 * Runs the handler right here when the receiving thread is lent (lend.h):
 * the built-in HTTP engine's event threads offer themselves, and take the
 * thread back by moving their event loop elsewhere if the handler runs
 * long. Handlers that may become tasks always go to the pool (a task
 * outlives its request on a worker). False: the caller queues the job.
 */
static bool run_on_lent_thread(mcp_exchange_t *ex)
{
    mcp_lender_t *lender = mcp_thread_lender;
    entry_t *e = ex->entry;
    if (!lender || e->tasks != MCP_TASKS_NONE ||
        atomic_load_explicit(&ex->srv->shutting_down, memory_order_relaxed))
        return false;
    int64_t again = atomic_load_explicit(&e->lend_again_ms, memory_order_relaxed);
    if (again && mcp_clock_coarse_ms() < again)
        return false;
    if (!lender->begin(lender))
        return false;
    entry_ref(e); /* the exchange, and its reference, may be gone when the handler returns */
    method_run(ex);
    if (!lender->end(lender)) {
        unsigned n = atomic_fetch_add_explicit(&e->long_runs, 1, memory_order_relaxed);
        int64_t pause = (int64_t)LEND_PAUSE_MS << (n < LEND_PAUSE_DOUBLINGS ? n : LEND_PAUSE_DOUBLINGS);
        atomic_store_explicit(&e->lend_again_ms, mcp_clock_coarse_ms() + pause,
                              memory_order_relaxed);
    }
    entry_unref(e);
    return true;
}

void method_start(mcp_exchange_t *ex)
{
    mcp_error_t err = {0};
    method_id_t method = method_lookup(ex->msg.method);
    /* Completions resolve on the worker: their handler is the server's one
     * completion callback, which is never marked to run inline. */
    if (method != METHOD_COMPLETE) {
        if (resolve_target(ex, method, &err) != MCP_OK || refuse_legacy_task(ex, &err)) {
            exchange_fail(ex, &err, false);
            mcp_error_clear(&err);
            exchange_unref(ex);
            return;
        }
        if (ex->entry->run_inline) {
            method_run(ex);
            return;
        }
        if (run_on_lent_thread(ex))
            return;
    }
    if (server_run_job(ex->srv, method_job, ex) != MCP_OK) {
        mcp_error_set(&err, MCP_ECLOSED, MCP_INTERNAL_ERROR, NULL, "Server is shutting down");
        exchange_fail(ex, &err, false);
        mcp_error_clear(&err);
        exchange_unref(ex);
    }
}

void method_run(mcp_exchange_t *ex)
{
    mcp_error_t err = {0};
    method_id_t method = method_lookup(ex->msg.method);
    const char *target = NULL;
    completion_request_t completion = {0};
    int rc;

    if (atomic_load(&ex->cancelled)) {
        exchange_release_sink(ex);
        exchange_unref(ex);
        return;
    }
    if (ex->resumed) {
        /* A legacy round trip came back: the target is resolved already. */
        rc = MCP_OK;
        target = method == METHOD_COMPLETE ? NULL : call_target_of(ex);
        if (method == METHOD_COMPLETE)
            rc = resolve_completion(ex, &completion, &err);
        goto run;
    }
    if (method == METHOD_COMPLETE) {
        rc = resolve_completion(ex, &completion, &err);
        target = completion.ref;
    } else {
        /* method_start() resolved the tool, resource or prompt. */
        rc = MCP_OK;
        target = call_target_of(ex);
    }
    /* Modern retries carry their state and answers in the request; legacy
     * clients never send them (the bridge keeps both). */
    if (rc == MCP_OK && ex->era == MCP_ERA_MODERN && mcp_method_may_require_input(ex->msg.method))
        rc = input_prepare(ex, &err);
run:
    if (rc != MCP_OK) {
        exchange_fail(ex, &err, false);
        mcp_error_clear(&err);
        exchange_unref(ex);
        return;
    }

    mcp_call_t call;
    call_init(&call, ex, method, target);
    /* A legacy client that asked for a task has its answer (the task) at
     * once; the handler then runs as the task. */
    if (ex->legacy_task && !call.task && (rc = legacy_task_start(&call, &err)) != MCP_OK) {
        if (!err.code)
            mcp_error_set(&err, rc, MCP_INTERNAL_ERROR, NULL, "Internal error: %s",
                          mcp_strerror(rc));
        exchange_fail(ex, &err, false);
        mcp_error_clear(&err);
        call_cleanup(&call);
        exchange_unref(ex);
        return;
    }
    rc = invoke(ex, &call, &completion);

    if (call.task) {
        /* The call became a task: its response went out then, and what
         * the handler made is the task's outcome. */
        task_settle(&call, rc);
        call_cleanup(&call);
        exchange_unref(ex);
        return;
    }
    json_t *result = NULL;
    bool answered = false;
    if (atomic_load(&ex->cancelled)) {
        /* Nothing more may be sent for a cancelled request. */
    } else if ((rc == MCP_INPUT_REQUIRED || (rc == MCP_OK && call.input_requests)) &&
               ex->era == MCP_ERA_LEGACY && call.input_requests) {
        /* A legacy client gets real requests; the handler runs again when
         * it has answered. The bridge owns the exchange from here. */
        if (ex->round >= ex->srv->max_input_rounds) {
            mcp_error_set(&err, MCP_ELIMIT, MCP_INVALID_PARAMS, NULL,
                          "Too many input rounds (%d) for one request", ex->round + 1);
        } else {
            bridge_start(ex, &call);
            call_cleanup(&call);
            return;
        }
    } else if (rc == MCP_INPUT_REQUIRED || (rc == MCP_OK && call.input_requests)) {
        result = input_required_result(&call, &err);
    } else if (rc < 0) {
        if (call.error.code)
            mcp_error_move(&err, &call.error);
        else
            mcp_error_set(&err, rc, MCP_INTERNAL_ERROR, NULL, "Internal error: %s",
                          mcp_strerror(rc));
    } else if (answer_tool_directly(ex, &call)) {
        answered = true;
    } else {
        result = method_complete_result(&call, &err);
    }

    if (answered) {
        /* Sent, or dropped by a cancellation in the meantime. */
    } else if (atomic_load(&ex->cancelled)) {
        json_decref(result);
        exchange_release_sink(ex);
    } else if (result && ex->era == MCP_ERA_LEGACY) {
        mcp_shape_legacy_result(ex->msg.method, result, ex->protocol_version);
        exchange_finish_result(ex, result);
    } else if (result) {
        mcp_result_shape_t shape;
        server_result_shape(ex->srv, &shape);
        if (mcp_shape_modern_result(ex->msg.method, result, &shape, &err) == MCP_OK) {
            exchange_finish_result(ex, result);
        } else {
            json_decref(result);
            exchange_fail(ex, &err, false);
        }
    } else {
        exchange_fail(ex, &err, false);
    }
    call_cleanup(&call);
    mcp_error_clear(&err);
    exchange_unref(ex);
}
