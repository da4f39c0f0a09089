/*
 * The Tasks extension (io.modelcontextprotocol/tasks, SEP-2663), server
 * side: a tools/call handler turns its call into a task
 * (mcp_call_start_task), the client gets a CreateTaskResult at once, and
 * then polls tasks/get, answers input with tasks/update and may stop the
 * work with tasks/cancel.
 *
 * A task keeps the exchange of the tools/call that started it. The
 * response went out when the task started (the exchange's sink is
 * released), but the request itself -- arguments, client capabilities,
 * principal, the handler's entry -- is what every later run of the handler
 * reads, exactly as it did on the first run. Cancelling the task cancels
 * that exchange, which is what mcp_call_cancelled() and mcp_call_sleep()
 * watch.
 *
 * Input inside a task reuses the request's input machinery: the handler
 * asks with mcp_call_elicit() & co. and returns; the task shows the
 * requests in "input_required"; when tasks/update has answered all of
 * them, the handler runs again on a worker with every answer so far in
 * ex->input_responses and its state in ex->state.
 *
 * Every task lives in the server's store, a hash table under one mutex that
 * also guards each task's mutable fields: the operations are a few field
 * reads and writes, never a handler run, so one lock is plenty. The store
 * is bounded, overall and per principal (max_tasks): a task keeps memory
 * for its whole time to live, and no client may take it all. A task that
 * ended lets go of its request's arguments, which nothing reads any more. The
 * experimental tasks of 2025-11-25 live in the same store and run the same
 * way (legacy_tasks.c, task_internal.h); each era sees only its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "fnv.h"
#include "protocol/envelope.h"
#include "protocol/hex.h"
#include "random.h"
#include "server/task_internal.h"

#define SWEEP_INTERVAL_MS 1000
#define INITIAL_BUCKETS 64

const char *const task_status_names[] = {
    "working", "input_required", "completed", "failed", "cancelled",
};

bool task_is_terminal(task_status_t s)
{
    return s == TASK_COMPLETED || s == TASK_FAILED || s == TASK_CANCELLED;
}

void task_timestamp_now(char out[32])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", (int)(ts.tv_nsec / 1000000) % 1000);
}

void task_ref(struct task *t)
{
    atomic_fetch_add(&t->refs, 1);
}

void task_unref(struct task *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    pthread_mutex_destroy(&t->publish_lock);
    exchange_unref(t->ex);
    free(t->principal);
    free(t->status_message);
    json_decref(t->result);
    json_decref(t->error);
    json_decref(t->input_requests);
    json_decref(t->answers);
    json_decref(t->state);
    free(t);
}

/* ------------------------------------------------------------------------
 * The store
 * ------------------------------------------------------------------------ */

static size_t bucket_of(const char *id, size_t n_buckets)
{
    return (size_t)(mcp_fnv1a(id, strlen(id)) % n_buckets); /* ids are random already */
}

/* How many tasks a principal has (NULL: the unauthenticated clients,
 * together). */
struct task_owner {
    char *principal;
    size_t tasks;
    struct task_owner *next;
};

static struct task_owner **owner_link(struct task_store *s, const char *principal)
{
    size_t at = principal ? mcp_fnv1a(principal, strlen(principal)) % TASK_OWNER_BUCKETS : 0;
    struct task_owner **link = &s->owners[at];
    while (*link && !task_principal_equal((*link)->principal, principal))
        link = &(*link)->next;
    return link;
}

/* One task more for `principal`: MCP_ELIMIT beyond a bound. */
static int owner_add_locked(struct task_store *s, const char *principal)
{
    struct task_owner **link = owner_link(s, principal);
    /* Clients without a principal cannot be told apart: max_tasks alone
     * bounds them. */
    if (s->count >= s->max_tasks ||
        (principal && *link && (*link)->tasks >= s->max_per_principal))
        return MCP_ELIMIT;
    if (!*link) {
        struct task_owner *o = calloc(1, sizeof *o);
        if (!o || (principal && !(o->principal = strdup(principal)))) {
            free(o);
            return MCP_ENOMEM;
        }
        *link = o;
    }
    (*link)->tasks++;
    return MCP_OK;
}

static void owner_remove_locked(struct task_store *s, const char *principal)
{
    struct task_owner **link = owner_link(s, principal), *o = *link;
    if (!o || --o->tasks > 0)
        return;
    *link = o->next;
    free(o->principal);
    free(o);
}

struct task_store *task_store_new(size_t max_tasks, size_t max_per_principal)
{
    struct task_store *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->max_tasks = max_tasks;
    s->max_per_principal = max_per_principal;
    s->buckets = calloc(INITIAL_BUCKETS, sizeof *s->buckets);
    if (!s->buckets) {
        free(s);
        return NULL;
    }
    s->n_buckets = INITIAL_BUCKETS;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void task_store_free(struct task_store *s)
{
    if (!s)
        return;
    for (size_t b = 0; b < s->n_buckets; b++) {
        struct task *t = s->buckets[b];
        while (t) {
            struct task *next = t->next;
            task_unref(t);
            t = next;
        }
    }
    for (size_t b = 0; b < TASK_OWNER_BUCKETS; b++) {
        for (struct task_owner *o = s->owners[b], *next; o; o = next) {
            next = o->next;
            free(o->principal);
            free(o);
        }
    }
    pthread_mutex_destroy(&s->lock);
    free(s->buckets);
    free(s);
}

/* Doubles the table when it gets crowded; on allocation failure the
 * chains just grow longer. */
static void grow_locked(struct task_store *s)
{
    if (s->count < 2 * s->n_buckets)
        return;
    size_t n = 2 * s->n_buckets;
    struct task **buckets = calloc(n, sizeof *buckets);
    if (!buckets)
        return;
    for (size_t b = 0; b < s->n_buckets; b++) {
        struct task *t = s->buckets[b];
        while (t) {
            struct task *next = t->next;
            size_t at = bucket_of(t->id, n);
            t->next = buckets[at];
            buckets[at] = t;
            t = next;
        }
    }
    free(s->buckets);
    s->buckets = buckets;
    s->n_buckets = n;
}

int task_store_insert_locked(struct task_store *s, struct task *t)
{
    int rc = owner_add_locked(s, t->principal);
    if (rc != MCP_OK)
        return rc;
    grow_locked(s);
    size_t at = bucket_of(t->id, s->n_buckets);
    t->next = s->buckets[at];
    s->buckets[at] = t;
    t->stored = true;
    s->count++;
    return MCP_OK;
}

bool task_principal_equal(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* A task of another principal or session is as unknown as one that never
 * existed: its existence is not for others to learn. */
struct task *task_find_locked(struct task_store *s, const char *id, const char *principal,
                              bool legacy, const mcp_session_t *session)
{
    for (struct task *t = s->buckets[bucket_of(id, s->n_buckets)]; t; t = t->next)
        if (strcmp(t->id, id) == 0)
            return task_principal_equal(t->principal, principal) && t->legacy == legacy &&
                           t->session == session
                       ? t
                       : NULL;
    return NULL;
}

bool task_visible(mcp_server_t *srv, const char *id, const char *principal)
{
    pthread_mutex_lock(&srv->tasks->lock);
    bool found = id && task_find_locked(srv->tasks, id, principal, false, NULL) != NULL;
    pthread_mutex_unlock(&srv->tasks->lock);
    return found;
}

static bool expired(const struct task *t, int64_t now)
{
    return t->ttl_ms >= 0 && now - t->created_ms >= t->ttl_ms;
}

/*
 * Running tasks whose time is up are cancelled (outside the lock:
 * cancelling wakes the handler); their handler's outcome then finds the
 * task gone from the store and is dropped. A legacy task's waiting
 * tasks/result requests are answered now (legacy_task_changed sees
 * `expired`), whether or not a handler runs: one waiting for input would
 * otherwise wait for answers that can no longer matter.
 */
static int64_t sweep(struct task_store *s, bool force)
{
    int64_t now = mcp_clock_ms(), next_watched = INT64_MAX;
    struct task *gone = NULL;
    pthread_mutex_lock(&s->lock);
    if (!force && now < s->next_sweep_ms) {
        pthread_mutex_unlock(&s->lock);
        return INT64_MAX; /* only the forced sweep's answer is used */
    }
    s->next_sweep_ms = now + SWEEP_INTERVAL_MS;
    for (size_t b = 0; b < s->n_buckets; b++) {
        struct task **p = &s->buckets[b];
        while (*p) {
            struct task *t = *p;
            if (!expired(t, now)) {
                if (t->waiters && t->ttl_ms >= 0 && t->created_ms + t->ttl_ms < next_watched)
                    next_watched = t->created_ms + t->ttl_ms;
                p = &t->next;
                continue;
            }
            *p = t->next;
            t->stored = false;
            t->expired = true;
            s->count--;
            owner_remove_locked(s, t->principal);
            t->next = gone;
            gone = t;
        }
    }
    pthread_mutex_unlock(&s->lock);
    while (gone) {
        struct task *next = gone->next;
        exchange_cancel(gone->ex); /* harmless when the handler is done */
        if (gone->legacy)
            legacy_task_changed(gone);
        task_unref(gone);
        gone = next;
    }
    return next_watched;
}

void task_sweep(struct task_store *s)
{
    sweep(s, false);
}

int64_t task_sweep_now(struct task_store *s)
{
    return sweep(s, true);
}

/* ------------------------------------------------------------------------
 * The wire shapes
 * ------------------------------------------------------------------------ */

/*
 * The Task object (new), under the lock; `detailed` adds what the status
 * carries (inputRequests, result or error): the DetailedTask of tasks/get.
 */
static json_t *task_json_locked(const struct task *t, bool detailed)
{
    const mcp_server_t *srv = t->srv;
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I}", "taskId", t->id, "status",
                          task_status_names[t->status], "createdAt", t->created_at,
                          "lastUpdatedAt", t->updated_at, "ttlMs",
                          t->ttl_ms >= 0 ? json_integer(t->ttl_ms) : json_null(),
                          "pollIntervalMs", (json_int_t)srv->task_poll_ms);
    if (!o)
        return NULL;
    if (t->status_message)
        json_object_set_new(o, "statusMessage", json_string(t->status_message));
    if (!detailed)
        return o;
    switch (t->status) {
    case TASK_INPUT_REQUIRED:
        json_object_set(o, "inputRequests", t->input_requests);
        break;
    case TASK_COMPLETED:
        json_object_set(o, "result", t->result);
        break;
    case TASK_FAILED:
        json_object_set(o, "error", t->error);
        break;
    default:
        break;
    }
    return o;
}

json_t *task_error_object(const mcp_error_t *err)
{
    json_t *response = mcp_jsonrpc_error_from(NULL, err);
    json_t *error = json_incref(json_object_get(response, "error"));
    json_decref(response);
    if (error)
        mcp_shape_modern_error(error);
    return error;
}

/*
 * The snapshot is taken when the publication starts, under the task's
 * publish lock: two publications of one task reach the streams in the
 * order of their snapshots, the last one showing the latest state.
 */
void task_publish(struct task *t)
{
    mcp_server_t *srv = t->srv;
    pthread_mutex_lock(&t->publish_lock);
    pthread_mutex_lock(&srv->tasks->lock);
    json_t *now = t->stored ? task_json_locked(t, true) : NULL;
    pthread_mutex_unlock(&srv->tasks->lock);
    if (now) {
        server_event_t ev = {.kind = SERVER_EVENT_TASK_CHANGED, .task_id = t->id,
                             .principal = t->principal, .task = now};
        int rc = srv->bus->publish(srv->bus, &ev);
        if (rc != MCP_OK)
            server_log(srv, MCP_LOG_WARNING, "task %s: status not published: %s", t->id,
                       mcp_strerror(rc));
    }
    pthread_mutex_unlock(&t->publish_lock);
    json_decref(now);
    if (t->legacy)
        legacy_task_changed(t);
}

/* ------------------------------------------------------------------------
 * Starting a task
 * ------------------------------------------------------------------------ */

json_t *task_required_capabilities(void)
{
    return json_pack("{s:{s:{}}}", "extensions", MCP_EXTENSION_TASKS);
}

bool task_client_declares(const json_t *caps)
{
    return json_is_object(json_object_get(json_object_get(caps, "extensions"),
                                          MCP_EXTENSION_TASKS));
}

struct task *task_new(mcp_exchange_t *ex)
{
    mcp_server_t *srv = ex->srv;
    struct task *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    unsigned char raw[TASK_ID_BYTES];
    if (mcp_secret_random(raw, sizeof raw) != MCP_OK ||
        (ex->principal && !(t->principal = strdup(ex->principal)))) {
        free(t);
        return NULL;
    }
    mcp_hex_encode(raw, sizeof raw, t->id);
    /* What the request gathered before it became a task stays readable. */
    t->answers = ex->input_responses ? json_deep_copy(ex->input_responses) : json_object();
    if (!t->answers) {
        free(t->principal);
        free(t);
        return NULL;
    }
    atomic_init(&t->refs, 1);
    pthread_mutex_init(&t->publish_lock, NULL);
    t->srv = srv;
    exchange_ref(ex);
    t->ex = ex;
    t->created_ms = mcp_clock_ms();
    t->ttl_ms = srv->task_ttl_ms;
    task_timestamp_now(t->created_at);
    memcpy(t->updated_at, t->created_at, sizeof t->updated_at);
    t->status = TASK_WORKING;
    t->running = true;
    return t;
}

int mcp_call_start_task(mcp_call_t *call)
{
    if (!call)
        return MCP_EINVAL;
    if (call->task)
        return MCP_OK;
    mcp_exchange_t *ex = call->ex;
    if (call->method != METHOD_TOOLS_CALL || !ex->entry || ex->entry->tasks == MCP_TASKS_NONE)
        return MCP_EINVAL;
    if (ex->era != MCP_ERA_MODERN || !task_client_declares(ex->client_caps))
        return MCP_EUNSUPPORTED;
    if (atomic_load(&ex->cancelled))
        return MCP_ECANCELED;

    mcp_server_t *srv = ex->srv;
    task_sweep(srv->tasks);
    struct task *t = task_new(ex);
    if (!t)
        return MCP_ENOMEM;
    /* The CreateTaskResult is built before the task is visible, so that
     * once it is stored nothing can fail: the client must never hear of a
     * task tasks/get does not find, nor lose one that was created. */
    json_t *result = task_json_locked(t, false);
    if (result)
        json_object_set_new(result, "resultType", json_string("task"));
    mcp_result_shape_t shape;
    server_result_shape(srv, &shape);
    mcp_error_t err = {0};
    if (!result || mcp_shape_modern_result(ex->msg.method, result, &shape, &err) != MCP_OK) {
        json_decref(result);
        mcp_error_clear(&err);
        task_unref(t);
        return MCP_ENOMEM;
    }
    int rc = task_store_and_answer(call, t, result);
    if (rc != MCP_OK) {
        json_decref(result);
        task_unref(t);
        return task_refused(call, rc, NULL);
    }
    return MCP_OK;
}

int task_refused(mcp_call_t *call, int rc, mcp_error_t *err)
{
    mcp_exchange_t *ex = call->ex;
    if (rc != MCP_ELIMIT)
        return rc;
    /* Like max_sessions: refuse one more rather than grow without bound.
     * A tool that may run without a task just does (the client takes
     * either answer); one that may not is refused, -32603 with a busy
     * message, and the client may try again later. */
    server_log(ex->srv, MCP_LOG_WARNING,
               "tools/call %s gets no task: the store holds its max_tasks (%zu), or the "
               "principal its max_tasks_per_principal (%zu)",
               call->target, ex->srv->tasks->max_tasks, ex->srv->tasks->max_per_principal);
    if (ex->entry->tasks == MCP_TASKS_OPTIONAL)
        return MCP_EUNSUPPORTED;
    return mcp_error_set(err ? err : &call->error, MCP_ELIMIT, MCP_INTERNAL_ERROR, NULL,
                         "Server busy: too many tasks; try again later");
}

int task_store_and_answer(mcp_call_t *call, struct task *t, json_t *result)
{
    mcp_server_t *srv = t->srv;
    mcp_exchange_t *ex = call->ex;
    pthread_mutex_lock(&srv->tasks->lock);
    int rc = task_store_insert_locked(srv->tasks, t);
    if (rc == MCP_OK)
        task_ref(t); /* the store's */
    pthread_mutex_unlock(&srv->tasks->lock);
    if (rc != MCP_OK)
        return rc;
    /* Stored first, answered second: the spec's "durably created". */
    exchange_finish(ex, mcp_jsonrpc_result(ex->msg.id, result), 200);
    call->task = t; /* the call's reference */
    server_log(srv, MCP_LOG_DEBUG, "tools/call %s became %stask %s", call->target,
               t->legacy ? "legacy " : "", t->id);
    return MCP_OK;
}

const char *mcp_call_task_id(const mcp_call_t *call)
{
    return call && call->task ? call->task->id : NULL;
}

int mcp_call_set_task_message(mcp_call_t *call, const char *message)
{
    if (!call || !call->task)
        return MCP_EINVAL;
    char *copy = NULL;
    if (message && !(copy = strdup(message)))
        return MCP_ENOMEM;
    struct task *t = call->task;
    pthread_mutex_lock(&t->srv->tasks->lock);
    free(t->status_message);
    t->status_message = copy;
    task_timestamp_now(t->updated_at);
    pthread_mutex_unlock(&t->srv->tasks->lock);
    task_publish(t);
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * A handler run of a task ends
 * ------------------------------------------------------------------------ */

/* The first key the handler asked for that an earlier round already had
 * answered, or NULL. Keys are unique over a task's life (the spec's MUST):
 * a client that answered "confirm" must never see a new "confirm". */
static const char *reused_key(const json_t *requests, const json_t *answers)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)requests, key, v) {
        if (json_object_get(answers, key))
            return key;
    }
    return NULL;
}

/*
 * A task that ended lets go of its request, under the store's lock: its
 * handler never runs again, and tasks/get, tasks/result and the listen
 * streams read the task alone. The arguments (up to a request's size)
 * and the answers would otherwise stay for the whole time to live. What
 * stays is the tool's name and the _meta members the exchange reads
 * (protocol version, capabilities, client info, log level, progress
 * token), which it borrows from the request.
 */
static void release_request_locked(struct task *t)
{
    mcp_exchange_t *ex = t->ex;
    json_t *params = ex->msg.params;
    mcp_envelope_t env;
    mcp_envelope_read(params, &env);
    const char *key;
    json_t *value;
    void *tmp;
    json_object_foreach_safe(params, tmp, key, value) {
        if (strcmp(key, "name") != 0 && strcmp(key, "_meta") != 0)
            json_object_del(params, key);
    }
    json_t *meta = (json_t *)env.meta;
    if (json_is_object(meta)) {
        json_object_foreach_safe(meta, tmp, key, value) {
            if (value != env.protocol_version && value != env.client_capabilities &&
                value != env.client_info && value != env.log_level &&
                value != env.progress_token)
                json_object_del(meta, key);
        }
    }
    json_decref(ex->input_responses);
    ex->input_responses = NULL;
    json_decref(ex->state);
    ex->state = NULL;
    json_object_clear(t->answers);
}

void task_settle(mcp_call_t *call, int rc)
{
    struct task *t = call->task;
    mcp_exchange_t *ex = t->ex;
    mcp_server_t *srv = t->srv;
    mcp_error_t err = {0};
    json_t *result = NULL;
    json_t *requests = NULL;
    task_status_t status;

    /* What the run produced, worked out before taking the lock. */
    bool asked = rc == MCP_INPUT_REQUIRED || (rc == MCP_OK && call->input_requests);
    if (atomic_load(&ex->cancelled)) {
        status = TASK_CANCELLED;
    } else if (asked && json_object_size(call->input_requests) == 0) {
        status = TASK_FAILED;
        mcp_error_set(&err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                      "Internal error: the tool asked for input but made no input request");
    } else if (asked && ex->round >= srv->max_input_rounds) {
        status = TASK_FAILED;
        mcp_error_set(&err, MCP_ELIMIT, MCP_INVALID_PARAMS, NULL,
                      "Too many input rounds (%d) for one request", ex->round + 1);
    } else if (asked) {
        status = TASK_INPUT_REQUIRED;
        requests = call->input_requests;
        call->input_requests = NULL;
    } else if (rc < 0) {
        status = TASK_FAILED;
        if (call->error.code)
            mcp_error_move(&err, &call->error);
        else
            mcp_error_set(&err, rc, MCP_INTERNAL_ERROR, NULL, "Internal error: %s",
                          mcp_strerror(rc));
    } else {
        result = method_complete_result(call, &err);
        mcp_result_shape_t shape;
        server_result_shape(srv, &shape);
        if (result && mcp_shape_modern_result(ex->msg.method, result, &shape, &err) != MCP_OK) {
            json_decref(result);
            result = NULL;
        }
        status = result ? TASK_COMPLETED : TASK_FAILED;
    }
    json_t *error = status == TASK_FAILED ? task_error_object(&err) : NULL;

    pthread_mutex_lock(&srv->tasks->lock);
    const char *reused = requests ? reused_key(requests, t->answers) : NULL;
    if (reused) {
        server_log(srv, MCP_LOG_ERROR, "task %s: the tool asked again under the answered key %s",
                   t->id, reused);
        mcp_error_set(&err, MCP_EINVAL, MCP_INTERNAL_ERROR, NULL,
                      "Internal error: input key %s was used twice", reused);
        json_decref(requests); /* `reused` points into it */
        requests = NULL;
        error = task_error_object(&err);
        status = TASK_FAILED;
    }
    t->running = false;
    if (t->cancel_requested)
        status = TASK_CANCELLED;
    if (!task_is_terminal(t->status)) {
        t->status = status;
        task_timestamp_now(t->updated_at);
        if (status == TASK_INPUT_REQUIRED) {
            json_decref(t->input_requests);
            t->input_requests = requests;
            requests = NULL;
            json_decref(t->state);
            t->state = call->next_state;
            call->next_state = NULL;
        } else if (status == TASK_COMPLETED) {
            t->result = result;
            result = NULL;
        } else if (status == TASK_FAILED) {
            t->error = error;
            error = NULL;
        }
    }
    if (task_is_terminal(t->status))
        release_request_locked(t);
    pthread_mutex_unlock(&srv->tasks->lock);
    json_decref(requests);
    json_decref(result);
    json_decref(error);
    mcp_error_clear(&err);
    task_publish(t);
}

/* Runs the handler of a task again, now that its input is in (a worker
 * job; takes the task reference it is given). */
static void task_job(void *arg)
{
    struct task *t = arg;
    mcp_exchange_t *ex = t->ex;
    mcp_call_t call;
    call_init(&call, ex, METHOD_TOOLS_CALL,
              json_string_value(json_object_get(ex->msg.params, "name")));
    call.task = t;
    int rc = MCP_ECANCELED;
    if (!atomic_load(&ex->cancelled))
        rc = ex->entry->fn.tool(&call, ex->entry->user);
    task_settle(&call, rc);
    call_cleanup(&call);
}

/* ------------------------------------------------------------------------
 * tasks/get, tasks/update, tasks/cancel
 * ------------------------------------------------------------------------ */

int task_unknown(mcp_error_t *err, const char *id)
{
    return mcp_error_set(err, MCP_ENOTFOUND, MCP_INVALID_PARAMS,
                         json_pack("{s:s}", "taskId", id),
                         "Unknown task %s: it does not exist or has expired", id);
}

int task_take_answers_locked(struct task *t, const json_t *responses, struct task **resume_out,
                             mcp_error_t *err)
{
    if (t->status != TASK_INPUT_REQUIRED)
        return MCP_OK; /* nothing is outstanding: nothing to take */
    const char *key;
    json_t *answer;
    /* All or nothing: a bad answer must not leave the task half updated. */
    json_object_foreach((json_t *)responses, key, answer) {
        const json_t *request = json_object_get(t->input_requests, key);
        if (!request)
            continue;
        const char *method = json_string_value(json_object_get(request, "method"));
        if (!input_answer_valid(method, answer))
            return mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS,
                                 json_pack("{s:s}", "key", key),
                                 "inputResponses.%s is not a valid answer to %s", key,
                                 method ? method : "the request");
    }
    json_object_foreach((json_t *)responses, key, answer) {
        if (!json_object_get(t->input_requests, key))
            continue;
        json_object_set(t->answers, key, answer);
        json_object_del(t->input_requests, key);
    }
    task_timestamp_now(t->updated_at);
    if (json_object_size(t->input_requests) == 0) {
        json_decref(t->input_requests);
        t->input_requests = NULL;
        t->input_asked = false;
        t->asked_on = NULL;
        t->status = TASK_WORKING;
        t->running = true;
        /* The next run reads these through mcp_call_input/state; nothing
         * else touches the exchange while the task is not running. */
        mcp_exchange_t *ex = t->ex;
        json_decref(ex->input_responses);
        ex->input_responses = json_incref(t->answers);
        json_decref(ex->state);
        ex->state = t->state;
        t->state = NULL;
        ex->round++;
        task_ref(t);
        *resume_out = t;
    }
    return MCP_OK;
}

void task_resume(struct task *t)
{
    if (server_run_job(t->srv, task_job, t) == MCP_OK)
        return;
    /* The server is stopping: the task cannot run again. */
    exchange_cancel(t->ex);
    mcp_call_t call;
    call_init(&call, t->ex, METHOD_TOOLS_CALL, NULL);
    call.task = t;
    task_settle(&call, MCP_ECANCELED);
    call_cleanup(&call);
}

/* Cancellation is cooperative: a running handler is told (and the task
 * ends "cancelled" when it returns); one waiting for input ends now. */
void task_cancel_locked(struct task *t, bool *wake_out)
{
    if (task_is_terminal(t->status))
        return;
    t->cancel_requested = true;
    if (t->running) {
        *wake_out = true;
    } else {
        t->status = TASK_CANCELLED;
        json_decref(t->input_requests);
        t->input_requests = NULL;
        task_timestamp_now(t->updated_at);
        release_request_locked(t);
    }
}

json_t *task_method(mcp_server_t *srv, method_id_t method, const json_t *params,
                    const char *principal, mcp_error_t *err)
{
    const char *id = method_string_param(params, "taskId", err);
    if (!id)
        return NULL;
    const json_t *responses = json_object_get(params, "inputResponses");
    if (method == METHOD_TASKS_UPDATE && !json_is_object(responses)) {
        mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                      "params.inputResponses must be an object");
        return NULL;
    }

    task_sweep(srv->tasks);
    struct task *resume = NULL;
    struct task *changed = NULL; /* a reference, to publish */
    mcp_exchange_t *wake = NULL;
    json_t *result = NULL;
    pthread_mutex_lock(&srv->tasks->lock);
    struct task *t = task_find_locked(srv->tasks, id, principal, false, NULL);
    if (!t) {
        task_unknown(err, id);
    } else if (method == METHOD_TASKS_GET) {
        result = task_json_locked(t, true);
    } else if (method == METHOD_TASKS_UPDATE) {
        if (task_take_answers_locked(t, responses, &resume, err) == MCP_OK)
            result = json_object();
        changed = resume;
    } else {
        bool running = false;
        task_status_t before = t->status;
        task_cancel_locked(t, &running);
        result = json_object();
        if (running) {
            wake = t->ex;
            exchange_ref(wake);
        }
        changed = t->status != before ? t : NULL;
    }
    if (changed)
        task_ref(changed);
    pthread_mutex_unlock(&srv->tasks->lock);
    /* Published before the handler runs again: its outcome comes after. */
    if (changed) {
        task_publish(changed);
        task_unref(changed);
    }

    if (wake) {
        exchange_cancel(wake); /* mcp_call_cancelled() turns true */
        exchange_unref(wake);
    }
    if (resume)
        task_resume(resume);
    if (!result && !err->code)
        mcp_error_set(err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "Internal error: out of memory");
    return result;
}
