/*
 * The task store and a task's insides, shared by the two ways the server
 * offers tasks:
 *
 *   tasks.c         the Tasks extension of 2026-07-28 (SEP-2663): the
 *                   handler decides, tasks/get, tasks/update, tasks/cancel
 *   legacy_tasks.c  the experimental tasks of 2025-11-25: the client asks,
 *                   tasks/get, tasks/result, tasks/list, tasks/cancel
 *
 * Both keep their tasks in one store, and a task's handler runs and
 * settles the same way (task_settle); only the wire shapes and the ways a
 * client reads the outcome differ.
 */
#ifndef MCP_SERVER_TASK_INTERNAL_H
#define MCP_SERVER_TASK_INTERNAL_H

#include "server/server_internal.h"

#define TASK_ID_BYTES 16 /* 128 random bits: task ids are unguessable */

typedef enum task_status {
    TASK_WORKING = 0,
    TASK_INPUT_REQUIRED,
    TASK_COMPLETED,
    TASK_FAILED,
    TASK_CANCELLED
} task_status_t;

/* The wire names of the statuses, by task_status_t. */
extern const char *const task_status_names[];

struct task_waiter; /* legacy_tasks.c: a tasks/result waiting */

struct task {
    atomic_int refs;
    char id[2 * TASK_ID_BYTES + 1];
    mcp_server_t *srv;
    mcp_exchange_t *ex;  /* the tools/call (reference); immutable */
    /* Held from a snapshot of the task to the end of its delivery to the
     * listen streams, so they see its states in order. */
    pthread_mutex_t publish_lock;
    char *principal;     /* who may see the task; NULL: unauthenticated */
    /* A legacy task belongs to the session that made it too (compared,
     * never followed; NULL for modern and stateless ones). */
    const mcp_session_t *session;
    bool legacy;         /* made by a 2025-11-25 task-augmented tools/call */
    int64_t created_ms;  /* monotonic, for the TTL */
    int64_t ttl_ms;      /* < 0: no limit */
    char created_at[32]; /* ISO 8601, UTC */

    /* Under the store's lock from here on. */
    task_status_t status;
    char *status_message;
    char updated_at[32];
    json_t *result;         /* completed: the CallToolResult */
    json_t *error;          /* failed: the JSON-RPC error object */
    json_t *input_requests; /* input_required: the outstanding requests */
    json_t *answers;        /* every answer given so far (object) */
    json_t *state;          /* the handler's state for its next run, or NULL */
    bool running;           /* the handler runs, or is queued to */
    bool cancel_requested;
    bool stored;            /* still in the store */
    bool expired;           /* its time to live ran out (it left the store then) */
    /* Legacy: the tasks/result requests waiting for the task's end, and
     * whether its input requests went out to the client, on which one. */
    struct task_waiter *waiters;
    bool input_asked;
    const struct task_waiter *asked_on; /* compared, never followed */
    struct task *next;      /* hash chain */
};

#define TASK_OWNER_BUCKETS 256

struct task_store {
    pthread_mutex_t lock;
    struct task **buckets;
    size_t n_buckets, count;
    int64_t next_sweep_ms;
    /* The bounds (mcp_server_options_t.max_tasks), and how many tasks
     * each principal with any has, in chains by principal. */
    size_t max_tasks, max_per_principal;
    struct task_owner *owners[TASK_OWNER_BUCKETS];
};

bool task_is_terminal(task_status_t s);
/* ISO 8601 with milliseconds, UTC: "2026-11-30T03:04:05.678Z". */
void task_timestamp_now(char out[32]);
void task_ref(struct task *t);

/* A new task (one reference) for the tools/call `ex`, "working" and
 * running; not stored yet. NULL when out of memory. */
struct task *task_new(mcp_exchange_t *ex);
/* Stores the new task `t` of `call` (taking the reference given), then
 * answers the call with `result` (taken): the task is found from the
 * moment its id is out. call->task becomes t. MCP_ELIMIT when the store
 * holds max_tasks tasks, or its principal's share (MCP_ENOMEM when out of
 * memory): then nothing is stored or answered, and `t` and `result` stay
 * the caller's. */
int task_store_and_answer(mcp_call_t *call, struct task *t, json_t *result);
/* Why a call got no task: for MCP_ELIMIT (the store is full) logs it and
 * returns MCP_EUNSUPPORTED when the tool may run without a task (the
 * handler goes on as usual), else MCP_ELIMIT with -32603 "Server busy"
 * in *err (NULL: the call's error, which a handler returning the code
 * sends); any other code is returned as it is. */
int task_refused(mcp_call_t *call, int rc, mcp_error_t *err);
/* Stores a task (taking the reference given) under the store's lock, or
 * refuses it as task_store_and_answer() does. */
int task_store_insert_locked(struct task_store *s, struct task *t);
/* The task of `id` of the era `legacy` that `principal` (and, for a
 * legacy task, `session`; NULL for modern ones) may see: not referenced,
 * valid while the lock is held; or NULL. A task of another is as unknown
 * as one that never existed. */
struct task *task_find_locked(struct task_store *s, const char *id, const char *principal,
                              bool legacy, const mcp_session_t *session);
/* Forgets the tasks whose time is up (at most once a second): a running
 * handler is cancelled, and the legacy tasks/result requests waiting for
 * a task are answered that it expired. */
void task_sweep(struct task_store *s);
/* task_sweep() now, however recent the last one. Returns when the next
 * stored task that a tasks/result waits for expires (monotonic ms), or
 * INT64_MAX when there is none: the bridge's timer sweeps again then. */
int64_t task_sweep_now(struct task_store *s);

/* -32602 for a task that does not exist (or is not the caller's). */
int task_unknown(mcp_error_t *err, const char *id);
/* The JSON-RPC error object a failed task shows (new). */
json_t *task_error_object(const mcp_error_t *err);

/* Tells whoever watches the task how it is now: the listen streams that
 * asked for it (notifications/tasks) and the legacy tasks/result
 * requests waiting for it. */
void task_publish(struct task *t);

/*
 * Takes the answers of `responses` to outstanding input requests of an
 * input_required task, under the store's lock (others are ignored; a bad
 * one fails the whole update with -32602). When none is outstanding any
 * more, the handler is due to run again: *resume_out gets a reference
 * for task_resume(). Returns MCP_OK or the error.
 */
int task_take_answers_locked(struct task *t, const json_t *responses, struct task **resume_out,
                             mcp_error_t *err);
/* Runs the handler of a task whose input is in again, on a worker (takes
 * the reference task_take_answers_locked gave). */
void task_resume(struct task *t);

/* Asks a task to stop, under the store's lock. A running handler must be
 * told: *wake_out is set (exchange_cancel its t->ex, outside the lock);
 * one waiting for input ends "cancelled" now. No-op for a task that is
 * over. */
void task_cancel_locked(struct task *t, bool *wake_out);

/* legacy_tasks.c: the task changed; the tasks/result requests waiting for
 * it see whether it is over or needs input. */
void legacy_task_changed(struct task *t);

#endif /* MCP_SERVER_TASK_INTERNAL_H */
