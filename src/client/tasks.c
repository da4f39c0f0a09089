/*
 * The Tasks extension on the client (SEP-2663; digest section 8.2): what a
 * CreateTaskResult means to the call it answers, following a task to its
 * end (from its CreateTaskResult, or from its id alone), and the public
 * tasks/get, tasks/update and tasks/cancel.
 *
 * Following a task is a loop of tasks/get polls, each one a request of its
 * own through client_call() (so versions, headers and the per-request
 * timeout work as for any call), paced by the server's pollIntervalMs.
 * Input the task asks for is answered through the same code as an
 * input_required round (client_answer_inputs) and sent with tasks/update;
 * since every poll shows all the requests still outstanding, the keys
 * answered are remembered and never put to the user again.
 *
 * While it follows tasks the client also listens for them: one
 * subscription (subscriptions/listen with taskIds) names every task
 * followed at the time, however many calls follow them, and a
 * notifications/tasks ends the wait of the call that follows that task,
 * whose next poll reads the state. So a task that moves is seen without
 * waiting out pollIntervalMs, and a hundred tasks cost one stream, not a
 * hundred. A server that does not take the subscription is simply polled.
 *
 * The subscription is replaced when a task it does not name is followed
 * (the filter of a subscription is fixed), by one thread at a time: a
 * follow that starts meanwhile marks the watch stale, and the thread
 * replacing it goes round once more. A task whose follow ended stays in
 * the filter until the next replacement; the subscription is closed when
 * no task is followed. Locks: the watch's lock, then a follow's; never
 * the other way, and neither is held while a subscription opens or
 * closes.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "mcp/request.h"
#include "clock.h"

/* The longest wait for the acknowledgement of a task's subscription. */
#define MAX_ACK_WAIT_MS 2000

/* Did this client's request declare the extension? Legacy requests carry
 * no capabilities. */
static bool declares_tasks(const mcp_client_t *c)
{
    return c->tasks && !c->legacy;
}

/* The methods the extension lets a server answer with a task. */
static bool may_become_task(const char *method)
{
    return strcmp(method, "tools/call") == 0;
}

int client_task_request(mcp_client_t *c, const char *method, const char *task_id,
                        const json_t *input_responses, const mcp_request_options_t *opts,
                        json_t **result_out, mcp_error_t *err)
{
    json_t *params = json_pack("{s:s}", "taskId", task_id);
    if (params && input_responses &&
        json_object_set(params, "inputResponses", (json_t *)input_responses) != 0) {
        json_decref(params);
        params = NULL;
    }
    if (!params)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "the task id is not UTF-8 (or out of memory)");
    int rc = client_call(c, method, params, opts, result_out, err);
    json_decref(params);
    return rc;
}

/* ------------------------------------------------------------------------
 * Following a task
 * ------------------------------------------------------------------------ */

typedef struct follow {
    struct follow *next; /* in the client's task watch */
    mcp_client_t *c;
    char *id;
    /* What a notification about the task wakes. */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool heard; /* a notification since the last poll; under lock */
    /* Each request on the wire: the call's timeout and cancel. Progress is
     * not reported for tasks (the extension does not support it). */
    mcp_request_options_t wire;
    int64_t interval_ms;
    json_t *answered;   /* the input requests answered, by key */
    int updates;        /* tasks/update requests sent */
} follow_t;

/* Answers the input requests (borrowed) not answered yet, and sends the
 * answers. Requests already answered are the server not having taken the
 * answers yet: nothing to do. */
static int answer_inputs(follow_t *f, const json_t *requests, mcp_error_t *err)
{
    json_t *fresh = json_object();
    if (!fresh)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    const char *key;
    json_t *request;
    int rc = MCP_OK;
    json_object_foreach((json_t *)requests, key, request) {
        if (!json_object_get(f->answered, key) && json_object_set(fresh, key, request) != 0)
            rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    if (rc != MCP_OK || json_object_size(fresh) == 0) {
        json_decref(fresh);
        return rc;
    }
    if (++f->updates > f->c->max_input_rounds) {
        json_decref(fresh);
        return mcp_error_set(err, MCP_ELIMIT, 0, NULL,
                             "task %s still needs input after %d updates", f->id,
                             f->c->max_input_rounds);
    }

    json_t *responses = NULL, *ack = NULL;
    rc = client_answer_inputs(&f->c->input, fresh, &responses, err);
    if (rc == MCP_OK)
        rc = client_task_request(f->c, "tasks/update", f->id, responses, &f->wire, &ack, err);
    if (rc == MCP_OK && json_object_update(f->answered, fresh) != 0)
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    json_decref(ack);
    json_decref(responses);
    json_decref(fresh);
    return rc;
}

/* Acts on one polled state. Sets *ended when the task is over; the return
 * value is then the call's outcome. */
static int take_state(follow_t *f, const client_task_t *task, bool *ended, json_t **result_out,
                      mcp_error_t *err)
{
    *ended = client_task_status_final(task->status);
    switch (task->status) {
    case CLIENT_TASK_WORKING:
        return MCP_OK;
    case CLIENT_TASK_INPUT_REQUIRED:
        return answer_inputs(f, task->input_requests, err);
    case CLIENT_TASK_COMPLETED: {
        /* What a direct call gives: a result that says it is complete.
         * The state is ours (a fresh tasks/get answer), so is its result. */
        json_t *result = (json_t *)task->result;
        if (!json_object_get(result, "resultType") &&
            json_object_set_new(result, "resultType", json_string("complete")) != 0)
            return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        *result_out = json_incref(result);
        return MCP_OK;
    }
    case CLIENT_TASK_FAILED:
        return client_rpc_error(task->error, err);
    case CLIENT_TASK_CANCELLED:
        break;
    }
    return mcp_error_set(err, MCP_ECANCELED, 0, NULL, "the server cancelled task %s%s%s", f->id,
                         task->status_message ? ": " : "",
                         task->status_message ? task->status_message : "");
}

void client_task_abandon(mcp_client_t *c, const char *task_id, int64_t timeout_ms)
{
    json_t *ack = NULL;
    mcp_error_t e = {0};
    if (client_task_request(c, "tasks/cancel", task_id, NULL,
                            &(mcp_request_options_t){.timeout_ms = timeout_ms}, &ack,
                            &e) != MCP_OK)
        client_log(c, MCP_LOG_WARNING, "cannot cancel task %s: %s", task_id, e.message);
    json_decref(ack);
    mcp_error_clear(&e);
}

/* ------------------------------------------------------------------------
 * The task watch: one subscription for every task followed
 * ------------------------------------------------------------------------ */

void client_task_watch_init(client_task_watch_t *w)
{
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->lock, NULL);
}

void client_task_watch_close(client_task_watch_t *w)
{
    mcp_subscription_close(w->sub);
    json_decref(w->covered);
    pthread_mutex_destroy(&w->lock);
}

/* A notifications/tasks: wakes the follow of that task, if any. */
static void on_task_notification(void *user, const char *method, const json_t *params)
{
    (void)method; /* the filter names tasks alone */
    client_task_watch_t *w = user;
    const char *id = json_string_value(json_object_get(params, "taskId"));
    pthread_mutex_lock(&w->lock);
    for (follow_t *f = w->follows; f && id; f = f->next) {
        if (strcmp(f->id, id) != 0)
            continue;
        pthread_mutex_lock(&f->lock);
        f->heard = true;
        pthread_cond_broadcast(&f->changed);
        pthread_mutex_unlock(&f->lock);
    }
    pthread_mutex_unlock(&w->lock);
}

static bool names(const json_t *ids, const char *id)
{
    size_t i;
    const json_t *v;
    json_array_foreach(ids, i, v)
        if (strcmp(json_string_value(v), id) == 0)
            return true;
    return false;
}

/* The ids of the tasks followed now (new array; NULL when out of memory),
 * and whether `covered` names them all. Under the watch's lock. */
static json_t *followed_ids(const client_task_watch_t *w, bool *covered)
{
    json_t *ids = json_array();
    *covered = true;
    for (const follow_t *f = w->follows; f && ids; f = f->next) {
        if (!names(w->covered, f->id))
            *covered = false;
        if (!names(ids, f->id) && json_array_append_new(ids, json_string(f->id)) != 0) {
            json_decref(ids);
            ids = NULL;
        }
    }
    return ids;
}

/* Opens a subscription for `ids` (NULL when the server will not, which
 * is only logged). Its acknowledgement is awaited no longer than
 * `ack_ms`: the wait does not watch any call's cancel. */
static mcp_subscription_t *subscribe(mcp_client_t *c, const json_t *ids, int64_t ack_ms)
{
    size_t n = json_array_size(ids);
    const char **v = calloc(n, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = json_string_value(json_array_get(ids, i));
    mcp_subscription_t *sub = NULL;
    mcp_error_t e = {0};
    if (mcp_client_listen(c, &(mcp_listen_filter_t){.task_ids = v, .n_task_ids = n},
                          on_task_notification, &c->task_watch,
                          &(mcp_listen_options_t){.ack_timeout_ms = ack_ms}, &sub, NULL,
                          &e) != MCP_OK)
        client_log(c, MCP_LOG_DEBUG, "tasks are polled without notifications: %s", e.message);
    mcp_error_clear(&e);
    free(v);
    return sub;
}

/* Brings the subscription in line with the tasks followed: a new one when
 * a task is not named, none when no task is followed. One thread at a
 * time; the others mark the watch stale and go on. */
static void watch_refresh(mcp_client_t *c, int64_t ack_ms)
{
    client_task_watch_t *w = &c->task_watch;
    pthread_mutex_lock(&w->lock);
    if (w->refreshing) {
        w->stale = true;
        pthread_mutex_unlock(&w->lock);
        return;
    }
    w->refreshing = true;
    do {
        w->stale = false;
        bool covered;
        json_t *ids = followed_ids(w, &covered);
        mcp_subscription_t *old = NULL;
        if (!w->follows) {
            old = w->sub;
            w->sub = NULL;
            json_decref(w->covered);
            w->covered = NULL;
        } else if (ids && !covered) {
            pthread_mutex_unlock(&w->lock);
            mcp_subscription_t *fresh = subscribe(c, ids, ack_ms);
            pthread_mutex_lock(&w->lock);
            if (fresh) {
                old = w->sub;
                w->sub = fresh;
                json_decref(w->covered);
                w->covered = json_incref(ids);
            }
        }
        json_decref(ids);
        if (old) {
            pthread_mutex_unlock(&w->lock);
            mcp_subscription_close(old);
            pthread_mutex_lock(&w->lock);
        }
    } while (w->stale);
    w->refreshing = false;
    pthread_mutex_unlock(&w->lock);
}

static void watch_add(follow_t *f, int64_t ack_ms)
{
    client_task_watch_t *w = &f->c->task_watch;
    pthread_mutex_lock(&w->lock);
    f->next = w->follows;
    w->follows = f;
    pthread_mutex_unlock(&w->lock);
    watch_refresh(f->c, ack_ms);
}

static void watch_remove(follow_t *f)
{
    client_task_watch_t *w = &f->c->task_watch;
    pthread_mutex_lock(&w->lock);
    for (follow_t **p = &w->follows; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    bool none = !w->follows;
    pthread_mutex_unlock(&w->lock);
    if (none)
        watch_refresh(f->c, 0);
}

/* ------------------------------------------------------------------------
 * The follow loop
 * ------------------------------------------------------------------------ */

/* Takes the wait between polls from what the server said of the task
 * (borrowed), and says so when it changes: a wait of minutes is the
 * server's wish, not a hung client. */
static void pace(follow_t *f, const client_task_t *task)
{
    int64_t ms = client_task_poll_interval(task, f->interval_ms);
    if (ms != f->interval_ms)
        client_log(f->c, MCP_LOG_DEBUG, "task %s: polling every %lld ms", f->id, (long long)ms);
    f->interval_ms = ms;
}

/* Follows the task `id` to its end. `created` is the CreateTaskResult
 * that made it, or NULL when the caller has only the id: then the first
 * poll goes out at once. A follow that fails before the task ended
 * cancels the task when `cancel_if_abandoned` (the caller alone knew the
 * id). */
static int follow(mcp_client_t *c, const char *id, const client_task_t *created,
                  bool cancel_if_abandoned, const mcp_request_options_t *opts,
                  json_t **result_out, mcp_error_t *err)
{
    client_call_opts_t o;
    client_resolve_opts(c, opts, &o);
    follow_t f = {.c = c, .id = strdup(id),
                  .wire = {.timeout_ms = o.timeout_ms, .cancel = o.cancel},
                  .interval_ms = CLIENT_TASK_DEFAULT_POLL_MS, .answered = json_object()};
    if (!f.id || !f.answered) {
        free(f.id);
        json_decref(f.answered);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    if (created)
        pace(&f, created);
    pthread_mutex_init(&f.lock, NULL);
    mcp_clock_cond_init(&f.changed);

    /* A task created already over has its outcome ready: no need to wait.
     * Nor is there for a task known by its id alone: its state is news.
     * The wait for the subscription's acknowledgement never holds up the
     * first poll, nor lasts longer than MAX_ACK_WAIT_MS. */
    bool wait = created && !client_task_status_final(created->status);
    bool watched = !created || wait;
    if (watched)
        watch_add(&f, f.interval_ms < MAX_ACK_WAIT_MS ? f.interval_ms : MAX_ACK_WAIT_MS);
    bool ended = false;
    int rc = MCP_OK;
    while (rc == MCP_OK && !ended) {
        struct timespec until = mcp_clock_deadline(f.interval_ms);
        if (wait &&
            client_cancel_wait_until(o.cancel, &f.lock, &f.changed, &f.heard, &until) != MCP_OK) {
            rc = mcp_error_set(err, MCP_ECANCELED, 0, NULL, "the call was cancelled");
            break;
        }
        /* Whatever was heard so far, this poll reads. */
        pthread_mutex_lock(&f.lock);
        f.heard = false;
        pthread_mutex_unlock(&f.lock);
        wait = true;
        json_t *state = NULL;
        client_task_t task;
        rc = client_task_request(c, "tasks/get", f.id, NULL, &f.wire, &state, err);
        if (rc == MCP_OK)
            rc = client_task_read(state, true, f.id, &task, err);
        if (rc == MCP_OK) {
            pace(&f, &task);
            rc = take_state(&f, &task, &ended, result_out, err);
        }
        json_decref(state);
    }
    if (watched)
        watch_remove(&f);
    /* Nobody else knows the id of a task the call made: the server is told
     * to stop it, whatever made the call fail (even its cancel). */
    if (rc != MCP_OK && !ended && cancel_if_abandoned)
        client_task_abandon(c, f.id, f.wire.timeout_ms);
    pthread_cond_destroy(&f.changed);
    pthread_mutex_destroy(&f.lock);
    free(f.id);
    json_decref(f.answered);
    return rc;
}

int client_task_answered(mcp_client_t *c, const char *method, json_t *created,
                         const mcp_request_options_t *opts, json_t **result_out,
                         mcp_error_t *err)
{
    if (!declares_tasks(c))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL,
                             "resultType \"task\" answers a request that did not declare the "
                             "Tasks extension");
    if (!may_become_task(method))
        return mcp_error_set(err, MCP_EPROTO, 0, NULL, "%s may not be answered with a task",
                             method);
    client_task_t task;
    int rc = client_task_read(created, false, NULL, &task, err);
    if (rc != MCP_OK)
        return rc;
    if (opts && opts->keep_task) {
        *result_out = json_incref(created);
        return MCP_OK;
    }
    return follow(c, task.id, &task, true, opts, result_out, err);
}

/* ------------------------------------------------------------------------
 * The public calls: tasks/get, tasks/update, tasks/cancel, and following a
 * task known by its id
 * ------------------------------------------------------------------------ */

static int check_task_call(const mcp_client_t *client, const char *task_id, mcp_error_t *err)
{
    if (!client || !task_id)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "client and task_id are required");
    if (!client->tasks)
        return mcp_error_set(err, MCP_ESTATE, 0, NULL,
                             "the client does not declare the Tasks extension (option tasks)");
    if (client->legacy)
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the legacy protocol this server speaks has no Tasks extension");
    return MCP_OK;
}

/* check_task_call() for the calls with a result: *result_out is NULL
 * until they succeed. */
static int check_task_query(const mcp_client_t *client, const char *task_id,
                            json_t **result_out, mcp_error_t *err)
{
    if (result_out)
        *result_out = NULL;
    if (!result_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "result_out is required");
    return check_task_call(client, task_id, err);
}

int mcp_client_task_get(mcp_client_t *client, const char *task_id,
                        const mcp_request_options_t *opts, json_t **result_out, mcp_error_t *err)
{
    int rc = check_task_query(client, task_id, result_out, err);
    if (rc != MCP_OK)
        return rc;
    json_t *state = NULL;
    client_task_t task;
    rc = client_task_request(client, "tasks/get", task_id, NULL, opts, &state, err);
    if (rc == MCP_OK)
        rc = client_task_read(state, true, task_id, &task, err);
    if (rc != MCP_OK) {
        json_decref(state);
        return rc;
    }
    *result_out = state;
    return MCP_OK;
}

int mcp_client_task_update(mcp_client_t *client, const char *task_id,
                           const json_t *input_responses, const mcp_request_options_t *opts,
                           mcp_error_t *err)
{
    int rc = check_task_call(client, task_id, err);
    if (rc != MCP_OK)
        return rc;
    if (!json_is_object(input_responses))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "input_responses must be an object");
    json_t *ack = NULL;
    rc = client_task_request(client, "tasks/update", task_id, input_responses, opts, &ack, err);
    json_decref(ack);
    return rc;
}

int mcp_client_task_cancel(mcp_client_t *client, const char *task_id,
                           const mcp_request_options_t *opts, mcp_error_t *err)
{
    int rc = check_task_call(client, task_id, err);
    if (rc != MCP_OK)
        return rc;
    json_t *ack = NULL;
    rc = client_task_request(client, "tasks/cancel", task_id, NULL, opts, &ack, err);
    json_decref(ack);
    return rc;
}

int mcp_client_task_follow(mcp_client_t *client, const char *task_id,
                           const mcp_request_options_t *opts, json_t **result_out,
                           mcp_error_t *err)
{
    int rc = check_task_query(client, task_id, result_out, err);
    return rc == MCP_OK ? follow(client, task_id, NULL, false, opts, result_out, err) : rc;
}
