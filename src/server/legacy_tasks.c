/*
 * The experimental tasks of 2025-11-25, for legacy clients (digest section
 * 10.2; the 2025-11-25 specification, basic/utilities/tasks).
 *
 * In that protocol the client asks for a task: a tools/call whose params
 * carry "task" is answered at once with {"task": Task}, and the client
 * polls tasks/get, reads the outcome with tasks/result, lists its tasks
 * with tasks/list and stops one with tasks/cancel. A libmcp server offers
 * this to clients that negotiated 2025-11-25 as soon as a tool may run as
 * a task (mcp_tool_t.tasks), from the same handlers as the Tasks
 * extension of 2026-07-28:
 *
 *   - initialize declares capabilities.tasks (list and cancel, and task
 *     augmentation of tools/call), and tools/list shows each task tool's
 *     execution.taskSupport ("optional" or "required");
 *   - a task-augmented call of a tool that allows tasks becomes a task
 *     before its handler runs; for the handler, mcp_call_start_task() then
 *     just says yes. A call without "task" of a tool that requires one,
 *     and a call with "task" of a tool that allows none, are -32601, as
 *     that spec says;
 *   - the task runs and settles in the one task store (task_internal.h),
 *     so its status, TTL and cancellation behave as a modern task's;
 *   - input the handler asks for inside the task is sent to the client as
 *     real requests (elicitation/create, ...) carrying the related-task
 *     _meta, on the stream of a tasks/result that waits for the task
 *     (bridge.c), as that spec says a client should expect; the answers
 *     go to the task as a modern tasks/update's would;
 *   - tasks/result waits, without holding a thread, until the task is
 *     over, then answers what the call would have: its result (with the
 *     related-task _meta) or its JSON-RPC error.
 *
 * A task belongs to the principal and the session that made it: another
 * client gets -32602 for its id, as if it did not exist.
 */
#include <stdlib.h>
#include <string.h>

#include "json_copy.h"
#include "mcp/legacy.h"
#include "mcp/version.h"
#include "server/task_internal.h"

#define RELATED_TASK_META "io.modelcontextprotocol/related-task"

/*
 * A tasks/result request waiting for its task. Two parties hold it: the
 * task's list, until the waiter is answered or cancelled (whichever comes
 * first sets `done` and ends it), and the exchange's cancellation hook,
 * which may run at any time until the exchange is freed, even after the
 * answer. Each holds a reference; the last one frees.
 */
struct task_waiter {
    atomic_int refs;
    struct task_waiter *next;
    mcp_exchange_t *ex;  /* the request (the core's reference) */
    struct task *task;   /* reference */
    bool done;           /* answered or cancelled; under the store's lock */
};

bool legacy_tasks_served(mcp_server_t *srv, const char *version)
{
    return version && strcmp(version, MCP_PROTOCOL_2025_11_25) == 0 &&
           atomic_load(&srv->tasks_offered);
}

json_t *legacy_tasks_capability(bool can_list)
{
    json_t *caps = json_pack("{s:{}, s:{s:{s:{}}}}", "cancel", "requests", "tools", "call");
    /* A server that cannot tell one client from another must not list
     * tasks: anyone would see everyone's. */
    if (caps && can_list)
        json_object_set_new(caps, "list", json_object());
    return caps;
}

int legacy_tools_show_task_support(mcp_server_t *srv, json_t *tools)
{
    size_t i;
    json_t *tool;
    json_array_foreach(tools, i, tool) {
        entry_t *e = registry_find(srv, ENTRY_TOOL,
                                   json_string_value(json_object_get(tool, "name")));
        mcp_task_support_t tasks = e ? e->tasks : MCP_TASKS_NONE;
        entry_unref(e);
        if (tasks == MCP_TASKS_NONE)
            continue;
        json_t *shown = mcp_json_copy_object(tool);
        if (!shown)
            return MCP_ENOMEM;
        if (json_object_set_new(shown, "execution",
                                json_pack("{s:s}", "taskSupport",
                                          tasks == MCP_TASKS_REQUIRED ? "required"
                                                                      : "optional")) != 0) {
            json_decref(shown);
            return MCP_ENOMEM;
        }
        if (json_array_set_new(tools, i, shown) != 0) /* it releases `shown` when failing */
            return MCP_ENOMEM;
    }
    return MCP_OK;
}

int legacy_task_requested(mcp_exchange_t *ex, mcp_error_t *err)
{
    const json_t *task = json_object_get(ex->msg.params, "task");
    if (!task || !legacy_tasks_served(ex->srv, ex->protocol_version))
        return MCP_OK; /* a version without tasks ignores the member */
    const json_t *ttl = json_object_get(task, "ttl");
    if (!json_is_object(task) || (ttl && (!json_is_integer(ttl) || json_integer_value(ttl) < 0)))
        return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                             "params.task must be an object whose ttl is an integer >= 0");
    ex->legacy_task = true;
    ex->legacy_task_ttl_ms = ttl ? (int64_t)json_integer_value(ttl) : -1;
    return MCP_OK;
}

bool legacy_task_refused(const mcp_exchange_t *ex, mcp_error_t *err)
{
    if (ex->era != MCP_ERA_LEGACY || ex->entry->kind != ENTRY_TOOL ||
        !legacy_tasks_served(ex->srv, ex->protocol_version))
        return false;
    if (ex->legacy_task && ex->entry->tasks == MCP_TASKS_NONE) {
        mcp_error_set(err, MCP_EINVAL, MCP_METHOD_NOT_FOUND, NULL,
                      "Tool %s does not run as a task (execution.taskSupport is forbidden)",
                      ex->entry->key);
        return true;
    }
    if (!ex->legacy_task && ex->entry->tasks == MCP_TASKS_REQUIRED) {
        mcp_error_set(err, MCP_EINVAL, MCP_METHOD_NOT_FOUND, NULL,
                      "Tool %s runs only as a task: call it with params.task "
                      "(execution.taskSupport is required)",
                      ex->entry->key);
        return true;
    }
    return false;
}

/* ------------------------------------------------------------------------
 * The wire shapes
 * ------------------------------------------------------------------------ */

/* The 2025-11-25 Task (new), under the store's lock. A tool result that
 * reports an error is a failed task there. */
static json_t *task_json_locked(const struct task *t)
{
    task_status_t status = t->status;
    if (status == TASK_COMPLETED && json_is_true(json_object_get(t->result, "isError")))
        status = TASK_FAILED;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I}", "taskId", t->id, "status",
                          task_status_names[status], "createdAt", t->created_at,
                          "lastUpdatedAt", t->updated_at, "ttl",
                          t->ttl_ms >= 0 ? json_integer(t->ttl_ms) : json_null(),
                          "pollInterval", (json_int_t)t->srv->task_poll_ms);
    if (o && t->status_message)
        json_object_set_new(o, "statusMessage", json_string(t->status_message));
    return o;
}

static json_t *related_task_meta(const char *id)
{
    return json_pack("{s:{s:s}}", RELATED_TASK_META, "taskId", id);
}

/* What tasks/result answers for a task that is over (new response), under
 * the store's lock: exactly what the call would have answered; for one
 * that expired first, the -32602 a tasks/result sent after that gets. */
static json_t *outcome_locked(const struct task *t, const mcp_exchange_t *ex)
{
    if (t->expired && t->status != TASK_COMPLETED) {
        mcp_error_t err = {0};
        mcp_error_set(&err, MCP_ENOTFOUND, MCP_INVALID_PARAMS, json_pack("{s:s}", "taskId", t->id),
                      "Task %s expired before it ended: its time to live (%lld ms) is over",
                      t->id, (long long)t->ttl_ms);
        json_t *response = mcp_jsonrpc_error_from(ex->msg.id, &err);
        mcp_error_clear(&err);
        return response;
    }
    if (t->status == TASK_COMPLETED) {
        json_t *result = json_deep_copy(t->result);
        if (!result)
            return NULL;
        mcp_shape_legacy_result("tools/call", result, ex->protocol_version);
        json_t *related = related_task_meta(t->id);
        json_t *meta = json_object_get(result, "_meta");
        if (json_is_object(meta))
            json_object_update(meta, related);
        else
            json_object_set(result, "_meta", related);
        json_decref(related);
        return mcp_jsonrpc_result(ex->msg.id, result);
    }
    mcp_error_t err = {0};
    if (t->status == TASK_FAILED)
        mcp_error_from_json(&err, t->error);
    else
        mcp_error_set(&err, MCP_ECANCELED, MCP_INTERNAL_ERROR, NULL, "Task %s was cancelled",
                      t->id);
    json_t *response = mcp_jsonrpc_error_from(ex->msg.id, &err);
    json_t *error = json_object_get(response, "error");
    if (error)
        mcp_shape_legacy_error("tools/call", error);
    mcp_error_clear(&err);
    return response;
}

/* ------------------------------------------------------------------------
 * A task-augmented tools/call
 * ------------------------------------------------------------------------ */

int legacy_task_start(mcp_call_t *call, mcp_error_t *err)
{
    mcp_exchange_t *ex = call->ex;
    mcp_server_t *srv = ex->srv;
    task_sweep(srv->tasks);
    struct task *t = task_new(ex);
    if (!t)
        return MCP_ENOMEM;
    t->legacy = true;
    t->session = ex->session;
    /* The client may ask for a shorter life than the server gives. */
    if (ex->legacy_task_ttl_ms >= 0 && (t->ttl_ms < 0 || ex->legacy_task_ttl_ms < t->ttl_ms))
        t->ttl_ms = ex->legacy_task_ttl_ms;
    /* Built before the task is visible, so that once stored nothing can
     * fail (see mcp_call_start_task). */
    json_t *result = json_pack("{s:o}", "task", task_json_locked(t));
    if (!result) {
        task_unref(t);
        return MCP_ENOMEM;
    }
    int rc = task_store_and_answer(call, t, result);
    if (rc == MCP_OK)
        return MCP_OK;
    json_decref(result);
    task_unref(t);
    rc = task_refused(call, rc, err);
    if (rc != MCP_EUNSUPPORTED)
        return rc;
    /* The store is full and the tool may run without a task: it does,
     * and the client gets its result as the call's answer. */
    ex->legacy_task = false;
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * tasks/result: waiting for the end
 * ------------------------------------------------------------------------ */

static void waiter_unref(struct task_waiter *w)
{
    if (atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    /* A round of questions may outlive the waiter (it holds the exchange
     * and the task): it must find no waiter then. */
    pthread_mutex_lock(&w->task->srv->tasks->lock);
    w->ex->task_waiter = NULL;
    pthread_mutex_unlock(&w->task->srv->tasks->lock);
    task_unref(w->task);
    exchange_unref(w->ex);
    free(w);
}

/* The waiter was answered (by whoever set `done`): its list's reference
 * goes, and the hook's too unless the hook is running or ran, in which
 * case it drops its own. */
static void waiter_answered(struct task_waiter *w)
{
    if (!atomic_exchange(&w->ex->cancel_handled, true))
        waiter_unref(w); /* the hook will never run */
    waiter_unref(w);
}

/* Unlinks `w` from its task, under the store's lock. */
static void unlink_locked(struct task_waiter *w)
{
    for (struct task_waiter **p = &w->task->waiters; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            return;
        }
}

/* The client gave up on its tasks/result (closed the stream, sent
 * notifications/cancelled) or is gone. */
static void waiter_cancelled(mcp_exchange_t *ex)
{
    struct task_waiter *w = ex->task_waiter;
    struct task *t = w->task;
    pthread_mutex_lock(&t->srv->tasks->lock);
    bool mine = !w->done;
    w->done = true;
    if (mine)
        unlink_locked(w);
    /* Questions sent on its stream will not be answered there: the next
     * tasks/result asks them again. */
    if (mine && t->asked_on == w) {
        t->input_asked = false;
        t->asked_on = NULL;
    }
    pthread_mutex_unlock(&t->srv->tasks->lock);
    if (mine) {
        bridge_forget_exchange(t->srv->bridge, ex);
        exchange_release_sink(ex);
        waiter_unref(w); /* the list's */
    }
    waiter_unref(w); /* the hook's */
}

/* What a waiter has to do once the store's lock is released. */
typedef struct waiter_action {
    struct task_waiter *w;
    json_t *response;  /* the end: the answer (new), or NULL */
    json_t *requests;  /* input: the requests to send on its stream (new) */
} waiter_action_t;

/* Is the task's outcome settled for its waiters (store's lock held): it
 * ended, or its time to live ran out first? */
static bool over_locked(const struct task *t)
{
    return task_is_terminal(t->status) || t->expired;
}

/* Looks at the task for its waiters, under the store's lock: those of a
 * task that is over or expired are answered; the first of a task that
 * needs input the client was not asked for yet sends the questions. */
static size_t plan_locked(struct task *t, waiter_action_t *out, size_t cap)
{
    size_t n = 0;
    if (over_locked(t)) {
        while (t->waiters && n < cap) {
            struct task_waiter *w = t->waiters;
            t->waiters = w->next;
            w->done = true;
            out[n++] = (waiter_action_t){.w = w, .response = outcome_locked(t, w->ex)};
        }
    } else if (t->status == TASK_INPUT_REQUIRED && !t->input_asked && t->waiters &&
               t->input_requests) {
        json_t *requests = json_deep_copy(t->input_requests);
        if (!requests)
            return 0; /* out of memory: the next change or tasks/result asks */
        t->input_asked = true;
        t->asked_on = t->waiters;
        /* Not done: its cancellation may come meanwhile. Held until the
         * questions are out. */
        atomic_fetch_add(&t->waiters->refs, 1);
        out[n++] = (waiter_action_t){.w = t->waiters, .requests = requests};
    }
    return n;
}

static void act(const waiter_action_t *a)
{
    if (a->requests) {
        bridge_ask_for_task(a->w->ex, a->w->task, a->requests);
        waiter_unref(a->w); /* plan_locked's */
        return;
    }
    mcp_exchange_t *ex = a->w->ex;
    /* Questions still out on its stream no longer matter. */
    bridge_forget_exchange(ex->srv->bridge, ex);
    if (a->response) {
        exchange_finish(ex, a->response, 200);
    } else {
        mcp_error_t err = {0};
        mcp_error_set(&err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "Internal error: out of memory");
        exchange_fail(ex, &err, false);
        mcp_error_clear(&err);
    }
    waiter_answered(a->w);
}

#define MAX_ACTIONS 16

void legacy_task_changed(struct task *t)
{
    mcp_server_t *srv = t->srv;
    for (;;) {
        waiter_action_t actions[MAX_ACTIONS];
        pthread_mutex_lock(&srv->tasks->lock);
        size_t n = plan_locked(t, actions, MAX_ACTIONS);
        bool more = over_locked(t) && t->waiters;
        pthread_mutex_unlock(&srv->tasks->lock);
        for (size_t i = 0; i < n; i++)
            act(&actions[i]);
        if (!more)
            return;
    }
}

/* tasks/result: answers at once for a task that is over; otherwise waits
 * (the exchange's core reference goes to the waiter). */
static void await_outcome(mcp_exchange_t *ex, const char *id, mcp_session_t *s)
{
    mcp_server_t *srv = ex->srv;
    struct task_waiter *w = calloc(1, sizeof *w);
    mcp_error_t err = {0};
    int64_t expires_ms = INT64_MAX;
    pthread_mutex_lock(&srv->tasks->lock);
    struct task *t = task_find_locked(srv->tasks, id, ex->principal, true, s);
    if (!t) {
        task_unknown(&err, id);
    } else if (!w) {
        mcp_error_set(&err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "Internal error: out of memory");
    } else {
        /* The task's list, the hook below, and ours until we are done
         * here (the task may end, and answer the waiter, at any time). */
        atomic_init(&w->refs, 3);
        task_ref(t);
        w->task = t;
        w->ex = ex;
        w->next = t->waiters;
        t->waiters = w;
        ex->task_waiter = w; /* read under this lock */
        if (t->ttl_ms >= 0 && !over_locked(t))
            expires_ms = t->created_ms + t->ttl_ms;
    }
    pthread_mutex_unlock(&srv->tasks->lock);
    /* Answered when the task ends, or when it expires first: nothing else
     * may look at the store by then, so the bridge's timer does. */
    if (expires_ms != INT64_MAX)
        bridge_sweep_tasks_at(srv->bridge, expires_ms);
    if (err.code) {
        free(w);
        exchange_fail(ex, &err, false);
        mcp_error_clear(&err);
        exchange_unref(ex);
        return;
    }
    /* From here a cancellation finds the waiter (and acts once). One that
     * came before found no hook: it is acted on here. */
    pthread_mutex_lock(&ex->wait_lock);
    ex->on_cancel = waiter_cancelled;
    bool cancelled = atomic_load(&ex->cancelled);
    pthread_mutex_unlock(&ex->wait_lock);
    if (cancelled && !atomic_exchange(&ex->cancel_handled, true))
        waiter_cancelled(ex);
    else
        legacy_task_changed(t); /* over already, or input to ask for */
    waiter_unref(w); /* ours */
}

void legacy_task_input_answered(struct task *t, mcp_exchange_t *ex, const json_t *answers,
                                mcp_error_t *failure)
{
    mcp_server_t *srv = t->srv;
    struct task *resume = NULL;
    mcp_error_t err = {0};
    pthread_mutex_lock(&srv->tasks->lock);
    if (failure->code)
        mcp_error_move(&err, failure);
    else if (t->expired) /* answers that crossed the expiry: nothing to resume */
        mcp_error_set(&err, MCP_ENOTFOUND, MCP_INVALID_PARAMS, NULL, "Task %s expired", t->id);
    else
        task_take_answers_locked(t, answers, &resume, &err);
    if (err.code && t->asked_on == ex->task_waiter) {
        t->input_asked = false; /* a later tasks/result asks again */
        t->asked_on = NULL;
    }
    struct task_waiter *w = NULL;
    if (err.code && ex->task_waiter && !ex->task_waiter->done) {
        /* The tasks/result that carried the questions fails with why. */
        w = ex->task_waiter;
        w->done = true;
        unlink_locked(w);
    }
    pthread_mutex_unlock(&srv->tasks->lock);
    if (w) {
        exchange_fail(ex, &err, false);
        waiter_answered(w);
    }
    mcp_error_clear(&err);
    if (resume) {
        task_publish(resume);
        task_resume(resume);
    }
}

/* ------------------------------------------------------------------------
 * tasks/get, tasks/list, tasks/cancel
 * ------------------------------------------------------------------------ */

/* Every legacy task of `principal` and `session` (new array). */
static json_t *list_tasks(mcp_server_t *srv, const char *principal, const mcp_session_t *s)
{
    json_t *tasks = json_array();
    struct task_store *store = srv->tasks;
    pthread_mutex_lock(&store->lock);
    for (size_t b = 0; tasks && b < store->n_buckets; b++)
        for (struct task *t = store->buckets[b]; t; t = t->next)
            if (t->legacy && t->session == s && task_principal_equal(t->principal, principal))
                json_array_append_new(tasks, task_json_locked(t));
    pthread_mutex_unlock(&store->lock);
    return tasks;
}

/* tasks/get and tasks/cancel (new result, or NULL with *err). */
static json_t *task_call(mcp_server_t *srv, const char *method, const char *id,
                         const char *principal, const mcp_session_t *s, mcp_error_t *err)
{
    bool cancel = strcmp(method, "tasks/cancel") == 0;
    json_t *result = NULL;
    mcp_exchange_t *wake = NULL;
    struct task *changed = NULL;
    pthread_mutex_lock(&srv->tasks->lock);
    struct task *t = task_find_locked(srv->tasks, id, principal, true, s);
    if (!t) {
        task_unknown(err, id);
    } else if (cancel && task_is_terminal(t->status)) {
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                      "Task %s is %s already: it cannot be cancelled", id,
                      task_status_names[t->status]);
    } else if (cancel) {
        bool running = false;
        task_cancel_locked(t, &running);
        if (running) {
            /* That spec wants the task cancelled when the answer goes
             * out; the handler, told, finds it so when it returns. */
            t->status = TASK_CANCELLED;
            task_timestamp_now(t->updated_at);
            wake = t->ex;
            exchange_ref(wake);
        }
        task_ref(t);
        changed = t;
        result = task_json_locked(t);
    } else {
        result = task_json_locked(t);
    }
    pthread_mutex_unlock(&srv->tasks->lock);
    if (changed) {
        task_publish(changed);
        task_unref(changed);
    }
    if (wake) {
        exchange_cancel(wake);
        exchange_unref(wake);
    }
    if (!result && !err->code)
        mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "Internal error: out of memory");
    return result;
}

bool legacy_task_method(mcp_server_t *srv, mcp_conn_t *conn, mcp_session_t *s,
                        mcp_message_t *msg, const mcp_request_context_t *ctx, mcp_sink_t *sink,
                        mcp_exchange_t **exchange_out, const char *version)
{
    const char *m = msg->method;
    bool result_call = strcmp(m, "tasks/result") == 0;
    if (!result_call && strcmp(m, "tasks/get") != 0 && strcmp(m, "tasks/list") != 0 &&
        strcmp(m, "tasks/cancel") != 0)
        return false;
    mcp_error_t err = {0};
    json_t *result = NULL;
    const char *id = NULL;
    if (!legacy_tasks_served(srv, version) ||
        (strcmp(m, "tasks/list") == 0 && !s && !ctx->principal)) {
        mcp_error_set(&err, MCP_EINVAL, MCP_METHOD_NOT_FOUND, NULL, "Method not found");
    } else if (strcmp(m, "tasks/list") == 0) {
        /* One page: every task of the caller. */
        json_t *tasks = list_tasks(srv, ctx->principal, s);
        result = tasks ? json_pack("{s:o}", "tasks", tasks) : NULL;
        if (!result)
            mcp_error_set(&err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "Internal error: out of memory");
    } else if (!(id = method_string_param(msg->params, "taskId", &err))) {
        /* err says so */
    } else if (!result_call) {
        result = task_call(srv, m, id, ctx->principal, s, &err);
    }
    if (err.code || !result_call) {
        json_t *response = err.code ? mcp_jsonrpc_error_from(msg->id, &err)
                                    : mcp_jsonrpc_result(msg->id, result);
        sink_answer(sink, response, 200);
        mcp_error_clear(&err);
        return true;
    }

    /* tasks/result waits: an exchange on the session, as a handler's
     * request is, so that it can carry the task's questions and be
     * cancelled. */
    char *task_id = strdup(id);
    if (!task_id) {
        sink_answer(sink, mcp_jsonrpc_error(msg->id, MCP_INTERNAL_ERROR,
                                            "Internal error: out of memory", NULL),
                    500);
        return true;
    }
    mcp_exchange_t *ex = legacy_exchange_new(srv, conn, s, msg, ctx, sink, exchange_out);
    if (!ex) {
        free(task_id);
        return true;
    }
    await_outcome(ex, task_id, s);
    free(task_id);
    return true;
}
