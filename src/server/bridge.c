/*
 * Bridging MRTR to legacy clients.
 *
 * A handler asks for input the same way whatever the era: it queues input
 * requests and returns MCP_INPUT_REQUIRED. A modern client gets an
 * input_required result and retries. A legacy client cannot: it expects
 * the server to send it real requests (elicitation/create,
 * sampling/createMessage, roots/list) and to wait for the answers. The
 * bridge does exactly that: it sends one request per input request on the
 * stream of the request being served, waits (without holding a thread)
 * for every answer, then runs the handler again with the answers as its
 * input responses -- so the handler's second run looks like a modern retry.
 *
 * Answers arrive as ordinary incoming messages (a stdio line, an HTTP POST
 * of a response) and find their round by the request id the server chose:
 * a random one, and only an answer from the session that was asked counts
 * (another client cannot answer in its place). A round ends early when the
 * client cancels the original request, when an answer does not come within
 * legacy_input_timeout_ms, when an answer is not the result its request
 * asks for, or when the client refuses a sampling or roots request (the
 * handler cannot go on without it; a refused elicitation is answered as
 * "cancel", which handlers know). Requests still unanswered when the
 * server stops waiting are cancelled for the client
 * (notifications/cancelled, on their stream while it is open), as the
 * lifecycle's timeouts section asks of a sender that gives up.
 *
 * A round is reference-counted: the exchange holds one from the start
 * until it is freed (its cancellation may come at any time, even after the
 * round ended), each pending request one, and the job that resumes the
 * handler one.
 *
 * The same requests carry the questions of a legacy (2025-11-25) task,
 * with the related-task _meta, on the stream of a tasks/result waiting
 * for it (legacy_tasks.c). Such a round belongs to the task, not to the
 * exchange: it holds the task and the exchange, its answers go to the
 * task (legacy_task_input_answered) instead of resuming a handler, and
 * the exchange's owner drops it if the exchange is cancelled
 * (bridge_forget_exchange).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/secrets.h"
#include "server/task_internal.h"
#include "clock.h"

/* One bridged round of one request. */
typedef struct round {
    atomic_int refs;        /* see above */
    mcp_exchange_t *ex;     /* the core's reference, taken over while waiting */
    pthread_mutex_t lock;
    json_t *answers;        /* key -> the client's result */
    json_t *next_state;     /* the handler's state for its next run */
    int outstanding;
    bool over;              /* resumed, failed or cancelled: nothing more */
    mcp_error_t error;      /* why the round failed, when it did */
    struct task *task;      /* a legacy task's questions (reference), or NULL */
    atomic_bool sent;       /* its requests go out (so a cancellation can follow) */
} round_t;

/* A request sent to a client, awaiting its answer. */
typedef struct pending {
    char id[48];            /* "mcp-" and 32 random hex digits */
    char *key;
    char *method;
    int64_t deadline_ms;
    const mcp_session_t *session; /* who was asked (compared, never followed) */
    char *principal;        /* ... and as whom (NULL: unauthenticated) */
    round_t *round;
    struct pending *next;
} pending_t;

struct bridge {
    mcp_server_t *srv;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pending_t *pending;
    /* When the reaper sweeps the task store next (monotonic ms), for the
     * legacy tasks/result requests waiting for a task that may expire
     * first; INT64_MAX: no sweep due. */
    int64_t sweep_tasks_at;
    pthread_t reaper;
    bool reaper_running, stopping;
};


static void *reaper_main(void *arg);

static void round_unref(round_t *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    json_decref(r->answers);
    json_decref(r->next_state);
    mcp_error_clear(&r->error);
    pthread_mutex_destroy(&r->lock);
    if (r->task) {
        task_unref(r->task);
        exchange_unref(r->ex);
    }
    free(r);
}

void bridge_round_release(struct round *r)
{
    round_unref(r);
}

static void pending_free(pending_t *p)
{
    round_unref(p->round);
    free(p->principal);
    free(p->key);
    free(p->method);
    free(p);
}

/* ------------------------------------------------------------------------
 * Ending a round
 * ------------------------------------------------------------------------ */

/* Drops the pending requests of `r` (their answers no longer matter).
 * With a `reason`, the client is told that the server gave up on each of
 * them (notifications/cancelled, on the stream they went out on), so that
 * it can close a dialog or stop a sampling nobody waits for any more: the
 * caller then guarantees that r->ex is alive. NULL: say nothing (the
 * caller cannot tell, or someone else ending the round says it). */
static void forget_round(bridge_t *b, round_t *r, const char *reason)
{
    pthread_mutex_lock(&b->lock);
    pending_t **link = &b->pending;
    pending_t *gone = NULL;
    while (*link) {
        pending_t *p = *link;
        if (p->round == r) {
            *link = p->next;
            p->next = gone;
            gone = p;
        } else {
            link = &p->next;
        }
    }
    pthread_mutex_unlock(&b->lock);
    while (gone) {
        pending_t *next = gone->next;
        if (reason && atomic_load(&r->sent)) {
            json_t *cancelled = mcp_jsonrpc_notification(
                "notifications/cancelled",
                json_pack("{s:s, s:s}", "requestId", gone->id, "reason", reason));
            if (cancelled)
                exchange_notify_late(r->ex, cancelled); /* a stream gone: nothing to tell */
            json_decref(cancelled);
        }
        pending_free(gone);
        gone = next;
    }
}

#define GAVE_UP_TIMEOUT "The server stopped waiting for an answer"
#define GAVE_UP_CANCELLED "The request it was sent for has ended"


static void resume_job(void *arg)
{
    round_t *r = arg;
    mcp_exchange_t *ex = r->ex;
    if (r->error.code) {
        exchange_fail(ex, &r->error, false);
        exchange_unref(ex);
    } else {
        /* The answers become the handler's input responses, exactly as a
         * modern retry's inputResponses would. */
        json_decref(ex->input_responses);
        ex->input_responses = r->answers;
        r->answers = NULL;
        json_decref(ex->state);
        ex->state = r->next_state;
        r->next_state = NULL;
        ex->round++;
        ex->resumed = true;
        method_run(ex); /* takes the exchange's reference */
    }
    round_unref(r);
}

/* Ends the round: resume the handler, or fail the request; a task's
 * round hands the answers to the task. Requests still unanswered (the
 * round timed out) are cancelled for the client. The caller ended the
 * round, so r->ex, which the round holds until here, is alive. */
static void finish_round(bridge_t *b, round_t *r)
{
    forget_round(b, r, GAVE_UP_TIMEOUT);
    if (r->task) {
        legacy_task_input_answered(r->task, r->ex, r->answers, &r->error);
        round_unref(r); /* the task round's own */
        return;
    }
    atomic_fetch_add(&r->refs, 1); /* the job's */
    if (server_run_job(b->srv, resume_job, r) != MCP_OK) {
        mcp_error_t err = {0};
        mcp_error_set(&err, MCP_ECLOSED, MCP_INTERNAL_ERROR, NULL, "Server is shutting down");
        exchange_fail(r->ex, &err, false);
        mcp_error_clear(&err);
        exchange_unref(r->ex);
        round_unref(r);
    }
}

/* The client cancelled the request (or went away) while we waited. */
static void round_cancelled(mcp_exchange_t *ex)
{
    /* The round in place, held: a next round may replace it (and drop the
     * exchange's reference to this one) while we end it. */
    pthread_mutex_lock(&ex->wait_lock);
    round_t *r = ex->bridge_round;
    atomic_fetch_add(&r->refs, 1);
    pthread_mutex_unlock(&ex->wait_lock);
    pthread_mutex_lock(&r->lock);
    bool mine = !r->over;
    r->over = true;
    pthread_mutex_unlock(&r->lock);
    if (mine) {
        /* Before the release: the stream may still carry the news. */
        forget_round(ex->srv->bridge, r, GAVE_UP_CANCELLED);
        exchange_release_sink(ex);
        exchange_unref(ex); /* the core's: the exchange keeps the round until it goes */
    }
    /* else already resuming: the handler run notices the cancellation */
    round_unref(r);
}

/* ------------------------------------------------------------------------
 * Timeouts
 *
 * The reaper thread, started on first need, fails the rounds whose answers
 * are late and sweeps the task store when a task that a legacy
 * tasks/result waits for expires.
 * ------------------------------------------------------------------------ */

/* Starts the reaper unless it runs (lock held); it checks its deadlines
 * again either way. */
static void reaper_wake_locked(bridge_t *b)
{
    if (!b->reaper_running && !b->stopping)
        b->reaper_running = pthread_create(&b->reaper, NULL, reaper_main, b) == 0;
    pthread_cond_signal(&b->wake);
}

void bridge_sweep_tasks_at(bridge_t *b, int64_t when_ms)
{
    pthread_mutex_lock(&b->lock);
    if (when_ms < b->sweep_tasks_at) {
        b->sweep_tasks_at = when_ms;
        reaper_wake_locked(b);
    }
    pthread_mutex_unlock(&b->lock);
}

static void *reaper_main(void *arg)
{
    bridge_t *b = arg;
    pthread_mutex_lock(&b->lock);
    while (!b->stopping) {
        int64_t now = mcp_clock_ms(), next = b->sweep_tasks_at;
        if (next <= now) {
            b->sweep_tasks_at = INT64_MAX;
            pthread_mutex_unlock(&b->lock);
            /* Answers the waiters of what expired (taking this lock to
             * forget their rounds), and says when to look again. */
            int64_t again = task_sweep_now(b->srv->tasks);
            pthread_mutex_lock(&b->lock);
            if (again < b->sweep_tasks_at)
                b->sweep_tasks_at = again;
            continue;
        }
        round_t *late = NULL;
        char method[64] = "";
        for (pending_t *p = b->pending; p; p = p->next) {
            if (p->deadline_ms <= now) {
                late = p->round;
                snprintf(method, sizeof method, "%s", p->method);
                atomic_fetch_add(&late->refs, 1);
                break;
            }
            if (p->deadline_ms < next)
                next = p->deadline_ms;
        }
        if (late) {
            pthread_mutex_unlock(&b->lock);
            pthread_mutex_lock(&late->lock);
            bool mine = !late->over;
            late->over = true;
            if (mine)
                mcp_error_set(&late->error, MCP_ETIMEDOUT, MCP_INTERNAL_ERROR, NULL,
                              "The client did not answer the server's %s request in time",
                              method);
            pthread_mutex_unlock(&late->lock);
            if (mine)
                finish_round(b, late);
            else
                forget_round(b, late, NULL); /* its exchange may be gone */
            round_unref(late);
            pthread_mutex_lock(&b->lock);
            continue;
        }
        if (next == INT64_MAX) {
            pthread_cond_wait(&b->wake, &b->lock);
        } else {
            struct timespec ts = {.tv_sec = (time_t)(next / 1000),
                                  .tv_nsec = (long)(next % 1000) * 1000000L};
            pthread_cond_timedwait(&b->wake, &b->lock, &ts);
        }
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

bridge_t *bridge_new(mcp_server_t *srv)
{
    bridge_t *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->srv = srv;
    b->sweep_tasks_at = INT64_MAX;
    pthread_mutex_init(&b->lock, NULL);
    mcp_clock_cond_init(&b->wake);
    return b;
}

void bridge_stop_timer(bridge_t *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->stopping = true;
    bool running = b->reaper_running;
    b->reaper_running = false;
    pthread_cond_signal(&b->wake);
    pthread_mutex_unlock(&b->lock);
    if (running)
        pthread_join(b->reaper, NULL);
}

void bridge_free(bridge_t *b)
{
    if (!b)
        return;
    bridge_stop_timer(b);
    /* Rounds still waiting were cancelled with their exchanges; anything
     * left is dropped. A task's round belongs to no exchange: one still
     * waiting ends here (its own reference goes). */
    for (pending_t *p = b->pending; p; p = p->next) {
        round_t *r = p->round;
        if (!r->task)
            continue;
        pthread_mutex_lock(&r->lock);
        bool mine = !r->over;
        r->over = true;
        pthread_mutex_unlock(&r->lock);
        if (mine)
            round_unref(r); /* the pending requests hold it still */
    }
    while (b->pending) {
        pending_t *p = b->pending;
        b->pending = p->next;
        pending_free(p);
    }
    pthread_cond_destroy(&b->wake);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* ------------------------------------------------------------------------
 * Sending and receiving
 * ------------------------------------------------------------------------ */

/* A fresh request id: "mcp-" and 128 random bits in hex, so that no
 * client can guess the id of a request sent to another. */
static bool mint_request_id(char out[48])
{
    unsigned char raw[16];
    if (mcp_secret_random(raw, sizeof raw) != MCP_OK)
        return false;
    memcpy(out, "mcp-", 4);
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 4 + 2 * i, 3, "%02x", raw[i]);
    return true;
}

/*
 * Registers one pending request of round `r` per input request (borrowed)
 * and returns them as JSON-RPC requests by id (new object), ready to send
 * on the stream of `ex`. A legacy task's requests carry its id in the
 * related-task _meta. Registered before any is sent, so an answer that
 * races ahead of the sending still finds its round.
 */
static json_t *register_requests(bridge_t *b, mcp_exchange_t *ex, round_t *r,
                                 const json_t *input_requests, const char *task_id)
{
    const char *version = ex->protocol_version;
    int64_t deadline = mcp_clock_ms() + ex->srv->legacy_input_timeout_ms;
    json_t *requests = json_object();
    const char *key;
    json_t *request;
    pthread_mutex_lock(&b->lock);
    json_object_foreach((json_t *)input_requests, key, request) {
        const char *method = json_string_value(json_object_get(request, "method"));
        pending_t *p = method ? calloc(1, sizeof *p) : NULL;
        if (!p || !mint_request_id(p->id) || !(p->key = strdup(key)) ||
            !(p->method = strdup(method)) ||
            (ex->principal && !(p->principal = strdup(ex->principal)))) {
            if (p) {
                free(p->key);
                free(p->method);
                free(p);
            }
            continue; /* not sent: the round times out without its answer */
        }
        p->deadline_ms = deadline;
        p->session = ex->session;
        p->round = r;
        atomic_fetch_add(&r->refs, 1);
        r->outstanding++;
        p->next = b->pending;
        b->pending = p;
        json_t *params = mcp_legacy_request_params(method, json_object_get(request, "params"),
                                                   version, p->id);
        if (params && task_id) {
            json_t *meta = json_object_get(params, "_meta");
            if (!json_is_object(meta)) {
                meta = json_object();
                json_object_set_new(params, "_meta", meta);
            }
            json_object_set_new(meta, "io.modelcontextprotocol/related-task",
                                json_pack("{s:s}", "taskId", task_id));
        }
        json_t *id = json_string(p->id);
        json_object_set_new(requests, p->id, mcp_jsonrpc_request(id, method, params));
        json_decref(id);
    }
    reaper_wake_locked(b);
    pthread_mutex_unlock(&b->lock);
    return requests;
}

/* Sends the requests (borrowed) on the stream of `ex`. */
static void send_requests(mcp_exchange_t *ex, const json_t *requests)
{
    const char *id;
    json_t *msg;
    json_object_foreach((json_t *)requests, id, msg) {
        json_t *copy = json_incref(msg);
        if (exchange_request(ex, copy) != MCP_OK)
            break; /* the client is gone: the cancellation path ends the round */
    }
}

/* The first method of `requests` (an object key -> InputRequest), for
 * naming it in an error. */
static const char *first_method(const json_t *requests)
{
    void *it = json_object_iter((json_t *)requests);
    const char *method = it ? json_string_value(json_object_get(json_object_iter_value(it),
                                                                "method"))
                            : NULL;
    return method ? method : "input";
}

void bridge_start(mcp_exchange_t *ex, mcp_call_t *call)
{
    bridge_t *b = ex->srv->bridge;
    if (ex->no_event_stream) {
        /* Nothing could carry the requests (mcp_call_elicit() & co. refuse
         * to queue them here; this catches any other way in): fail now
         * rather than wait for answers to requests never seen. */
        mcp_error_t err = {0};
        input_no_event_stream(&err, first_method(call->input_requests));
        exchange_fail(ex, &err, false);
        mcp_error_clear(&err);
        exchange_unref(ex);
        return;
    }
    round_t *r = calloc(1, sizeof *r);
    if (!r) {
        mcp_error_t err = {0};
        mcp_error_set(&err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "out of memory");
        exchange_fail(ex, &err, false);
        exchange_unref(ex);
        return;
    }
    atomic_init(&r->refs, 1); /* the exchange's */
    atomic_init(&r->sent, false);
    r->ex = ex;
    /* The round owns the core's reference from here and may end (time
     * out, be cancelled) before this function returns: hold one of our
     * own while we set it up. */
    exchange_ref(ex);
    r->answers = json_object();
    r->next_state = call->next_state;
    call->next_state = NULL;
    pthread_mutex_init(&r->lock, NULL);

    /* The request's cancellation now ends this round. The previous round
     * (if any) is over; the exchange lets it go. */
    /* Under wait_lock, where exchange_cancel reads on_cancel: a
     * cancellation either finds the hook or is seen below. */
    pthread_mutex_lock(&ex->wait_lock);
    round_t *previous = ex->bridge_round;
    ex->bridge_round = r;
    atomic_store(&ex->cancel_handled, false);
    ex->on_cancel = round_cancelled;
    pthread_mutex_unlock(&ex->wait_lock);
    round_unref(previous);

    json_t *requests = register_requests(b, ex, r, call->input_requests, NULL);
    /* Cancelled before the round was in place: end it now (round_cancelled
     * acts once, whoever calls it first), and drop what was registered
     * after a cancellation that came first had ended the round. */
    if (atomic_load(&ex->cancelled)) {
        round_cancelled(ex);
        forget_round(b, r, NULL); /* none was sent */
    } else {
        /* Set first: an answer or a cancellation may end the round while
         * the requests go out, and the cancellation must cover them. */
        atomic_store(&r->sent, true);
        send_requests(ex, requests);
    }
    json_decref(requests);
    exchange_unref(ex);
}

void bridge_ask_for_task(mcp_exchange_t *ex, struct task *t, json_t *input_requests)
{
    bridge_t *b = ex->srv->bridge;
    round_t *r = calloc(1, sizeof *r);
    if (!r) {
        mcp_error_t err = {0};
        mcp_error_set(&err, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL, "Internal error: out of memory");
        legacy_task_input_answered(t, ex, NULL, &err);
        json_decref(input_requests);
        return;
    }
    /* The round's own reference, until it ends; and this function's: once
     * its questions are registered, bridge_forget_exchange() (the waiter
     * cancelled, the server freed) may end the round on another thread
     * and drop the round's own while we still look at it. */
    atomic_init(&r->refs, 2);
    atomic_init(&r->sent, false);
    exchange_ref(ex);
    r->ex = ex;
    /* The round may end (answered, timed out) while we still send: hold
     * the exchange meanwhile. */
    exchange_ref(ex);
    task_ref(t);
    r->task = t;
    r->answers = json_object();
    pthread_mutex_init(&r->lock, NULL);
    /* A tasks/result whose Accept left out text/event-stream cannot carry
     * the questions: it fails saying so, and the task keeps them for a
     * later tasks/result that can. */
    json_t *requests = ex->no_event_stream
                           ? json_object()
                           : register_requests(b, ex, r, input_requests, t->id);
    pthread_mutex_lock(&r->lock);
    bool none = r->outstanding == 0 && !r->over;
    if (none) {
        r->over = true;
        if (ex->no_event_stream)
            input_no_event_stream(&r->error, first_method(input_requests));
        else
            mcp_error_set(&r->error, MCP_ENOMEM, MCP_INTERNAL_ERROR, NULL,
                          "Internal error: the task's questions could not be sent");
    }
    pthread_mutex_unlock(&r->lock);
    json_decref(input_requests);
    if (none) {
        finish_round(b, r);
    } else if (atomic_load(&ex->task_questions_closed)) {
        /* The waiter was answered or cancelled meanwhile, and its
         * bridge_forget_exchange() may have looked before these questions
         * were registered: forget them now (it ends the round). */
        bridge_forget_exchange(b, ex);
    } else {
        /* Set first: an answer or a cancellation may end the round while
         * the requests go out, and the cancellation must cover them. */
        atomic_store(&r->sent, true);
        send_requests(ex, requests);
    }
    json_decref(requests);
    exchange_unref(ex);
    round_unref(r); /* this function's */
}

bool bridge_forget_exchange(bridge_t *b, mcp_exchange_t *ex)
{
    /* Before looking: a bridge_ask_for_task() registering questions for
     * this exchange at the same time then sees the flag (it checks after
     * registering), if the look below misses them. */
    atomic_store(&ex->task_questions_closed, true);
    bool found = false;
    for (;;) {
        round_t *r = NULL;
        pthread_mutex_lock(&b->lock);
        for (pending_t *p = b->pending; p && !r; p = p->next)
            if (p->round->ex == ex && p->round->task) {
                r = p->round;
                atomic_fetch_add(&r->refs, 1);
            }
        pthread_mutex_unlock(&b->lock);
        if (!r)
            return found;
        found = true;
        pthread_mutex_lock(&r->lock);
        bool mine = !r->over;
        r->over = true;
        pthread_mutex_unlock(&r->lock);
        forget_round(b, r, GAVE_UP_CANCELLED); /* `ex` is the caller's */
        if (mine)
            round_unref(r); /* the round's own: it ends unanswered */
        round_unref(r);
    }
}

bool bridge_deliver(mcp_server_t *srv, const mcp_session_t *session, const char *principal,
                    const mcp_message_t *msg)
{
    bridge_t *b = srv->bridge;
    const char *id = json_string_value(msg->id);
    if (!b || !id)
        return false;
    /* Only the session that was asked may answer: the exchange keeps its
     * session alive while the request waits, so the pointer identifies it.
     * And only as the principal that was asked: stateless requests have no
     * session to tell clients apart. */
    pthread_mutex_lock(&b->lock);
    pending_t **link = &b->pending, *p = NULL;
    for (; *link; link = &(*link)->next) {
        if (strcmp((*link)->id, id) == 0 && (*link)->session == session &&
            task_principal_equal((*link)->principal, principal)) {
            p = *link;
            *link = p->next;
            break;
        }
    }
    pthread_mutex_unlock(&b->lock);
    if (!p)
        return false;

    round_t *r = p->round;
    pthread_mutex_lock(&r->lock);
    bool finished = false;
    if (!r->over) {
        if (msg->kind == MCP_MSG_RESULT && input_answer_valid(p->method, msg->result)) {
            json_object_set(r->answers, p->key, msg->result);
        } else if (msg->kind == MCP_MSG_RESULT) {
            /* The handler must never read what is not the result it asked
             * for: the request fails, as an invalid inputResponse does. */
            if (!r->error.code)
                mcp_error_set(&r->error, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                              "The client's answer to the server's %s request is not a valid "
                              "result",
                              p->method);
        } else if (strcmp(p->method, "elicitation/create") == 0) {
            /* A client that cannot elicit has declined to: the handler sees
             * the same answer a user's "cancel" gives. */
            json_object_set_new(r->answers, p->key, json_pack("{s:s}", "action", "cancel"));
        } else if (!r->error.code) {
            mcp_error_t client = {0};
            mcp_error_from_json(&client, msg->error);
            mcp_error_set(&r->error, MCP_ERPC, MCP_INTERNAL_ERROR, NULL,
                          "The client refused the server's %s request: %s", p->method,
                          client.message);
            mcp_error_clear(&client);
        }
        if (--r->outstanding == 0) {
            r->over = true;
            finished = true;
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (finished)
        finish_round(b, r);
    pending_free(p);
    return true;
}
