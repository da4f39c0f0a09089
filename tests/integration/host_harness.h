/*
 * Helpers shared by the host integration tests (host_*.c): a recorder for
 * the host's callbacks, waits on conditions that settle in the background
 * (a server reconnecting, a list refreshed), and small accessors for
 * results. Include after <cmocka.h>.
 */
#ifndef MCP_TEST_HOST_HARNESS_H
#define MCP_TEST_HOST_HARNESS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp/mcp.h"

/* ------------------------------------------------------------------------
 * What the host's callbacks saw
 * ------------------------------------------------------------------------ */

typedef struct recorder {
    pthread_mutex_t lock;
    int changed;          /* calls of `changed` */
    json_t *states;       /* [{"server","state","error"?}] in order */
    json_t *asked;        /* [{"callback","server"}]: elicit, sample, roots, progress, log */
    json_t *logs;         /* the library's diagnostics (on_library_log), in order */
} recorder_t;

static inline void recorder_init(recorder_t *r)
{
    pthread_mutex_init(&r->lock, NULL);
    r->changed = 0;
    r->states = json_array();
    r->asked = json_array();
    r->logs = json_array();
}

static inline void recorder_clear(recorder_t *r)
{
    json_decref(r->states);
    json_decref(r->asked);
    json_decref(r->logs);
    pthread_mutex_destroy(&r->lock);
}

static inline void record_asked(recorder_t *r, const char *callback, const char *server)
{
    pthread_mutex_lock(&r->lock);
    json_array_append_new(r->asked, json_pack("{s:s, s:s}", "callback", callback, "server",
                                              server));
    pthread_mutex_unlock(&r->lock);
}

/* How many times `callback` was told `server` (NULL: any server). */
static inline int asked_count(recorder_t *r, const char *callback, const char *server)
{
    int n = 0;
    size_t i;
    json_t *e;
    pthread_mutex_lock(&r->lock);
    json_array_foreach(r->asked, i, e)
        n += strcmp(json_string_value(json_object_get(e, "callback")), callback) == 0 &&
             (!server || strcmp(json_string_value(json_object_get(e, "server")), server) == 0);
    pthread_mutex_unlock(&r->lock);
    return n;
}

static inline int changed_count(recorder_t *r)
{
    pthread_mutex_lock(&r->lock);
    int n = r->changed;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* How many times `server` entered `state`. */
static inline int state_count(recorder_t *r, const char *server, mcp_host_server_state_t state)
{
    int n = 0;
    size_t i;
    json_t *e;
    pthread_mutex_lock(&r->lock);
    json_array_foreach(r->states, i, e)
        n += strcmp(json_string_value(json_object_get(e, "server")), server) == 0 &&
             json_integer_value(json_object_get(e, "state")) == state;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* The last error `server` failed with ("" when none), copied into buf. */
static inline const char *last_error(recorder_t *r, const char *server, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t i;
    json_t *e;
    pthread_mutex_lock(&r->lock);
    json_array_foreach(r->states, i, e)
        if (strcmp(json_string_value(json_object_get(e, "server")), server) == 0 &&
            json_object_get(e, "error"))
            snprintf(buf, size, "%s", json_string_value(json_object_get(e, "error")));
    pthread_mutex_unlock(&r->lock);
    return buf;
}

static inline void on_changed(void *user)
{
    recorder_t *r = user;
    pthread_mutex_lock(&r->lock);
    r->changed++;
    pthread_mutex_unlock(&r->lock);
}

static inline void on_server_state(void *user, const char *server, mcp_host_server_state_t state,
                                   const char *error)
{
    recorder_t *r = user;
    pthread_mutex_lock(&r->lock);
    json_array_append_new(r->states, json_pack("{s:s, s:i, s:s?}", "server", server, "state",
                                               (int)state, "error", error));
    pthread_mutex_unlock(&r->lock);
}

/* The client option `log`, which also receives the host's diagnostics. */
static inline void on_library_log(void *user, mcp_log_level_t level, const char *msg)
{
    recorder_t *r = user;
    (void)level;
    pthread_mutex_lock(&r->lock);
    json_array_append_new(r->logs, json_string(msg));
    pthread_mutex_unlock(&r->lock);
}

/* How many diagnostics contain `needle`. */
static inline int logged_count(recorder_t *r, const char *needle)
{
    int n = 0;
    size_t i;
    json_t *e;
    pthread_mutex_lock(&r->lock);
    json_array_foreach(r->logs, i, e)
        n += strstr(json_string_value(e), needle) != NULL;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* ------------------------------------------------------------------------
 * Waiting for what settles in the background
 * ------------------------------------------------------------------------ */

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline bool has_state(mcp_host_t *h, const char *server, mcp_host_server_state_t want)
{
    mcp_host_server_state_t state;
    return mcp_host_server_state(h, server, &state, NULL) == MCP_OK && state == want;
}

/* Is there an entry named `name` in the list (new reference, consumed)? */
static inline bool lists_name(json_t *list, const char *key, const char *name)
{
    bool found = false;
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
        found |= json_is_string(json_object_get(e, key)) &&
                 strcmp(json_string_value(json_object_get(e, key)), name) == 0;
    json_decref(list);
    return found;
}

/* Polls `cond` every 20 ms for up to `timeout_ms`. */
#define WAIT_UNTIL(cond, timeout_ms)                                      \
    do {                                                                  \
        int waited_ = 0;                                                  \
        while (!(cond) && waited_ < (timeout_ms)) {                       \
            sleep_ms(20);                                                 \
            waited_ += 20;                                                \
        }                                                                 \
        if (!(cond))                                                      \
            fail_msg("gave up after %d ms waiting for: %s", (timeout_ms), #cond); \
    } while (0)

/* ------------------------------------------------------------------------
 * Results
 * ------------------------------------------------------------------------ */

static inline const char *first_text(const json_t *result)
{
    const json_t *content = json_object_get(result, "content");
    if (!content)
        content = json_object_get(result, "contents");
    if (!content)
        content = json_object_get(json_array_get(json_object_get(result, "messages"), 0),
                                  "content");
    const json_t *first = json_is_array(content) ? json_array_get(content, 0) : content;
    const char *text = json_string_value(json_object_get(first, "text"));
    return text ? text : "";
}

/* Calls `name` with arguments from JSON text (NULL: none) and returns the
 * first text of the result (malloc'd); fails the test on an error. */
static inline char *call_text(mcp_host_t *h, const char *name, const char *args_json)
{
    json_t *args = args_json ? json_loads(args_json, 0, NULL) : NULL;
    json_t *result = NULL;
    mcp_error_t err = {0};
    int rc = mcp_host_call_tool(h, name, args, NULL, &result, &err);
    if (rc != MCP_OK)
        fail_msg("%s: %s (%s)", name, mcp_strerror(rc), err.message);
    char *text = strdup(first_text(result));
    json_decref(args);
    json_decref(result);
    mcp_error_clear(&err);
    return text;
}

#define ASSERT_CALL_TEXT(h, name, args, expect)        \
    do {                                               \
        char *text_ = call_text((h), (name), (args));  \
        assert_string_equal(text_, (expect));          \
        free(text_);                                   \
    } while (0)

#endif /* MCP_TEST_HOST_HARNESS_H */
