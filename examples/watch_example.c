/*
 * watch_example: an MCP client over HTTP that watches a resource.
 *
 * It connects to a server's Streamable HTTP endpoint, subscribes to the
 * resource notes://index (subscriptions/listen on a 2026-07-28 server,
 * resources/subscribe on a legacy one: the same call does both), saves a
 * note with the add_note tool, and waits for the server to say that the
 * index changed; then it reads the index again, as an application would
 * to refresh what it shows. It is written against notes_server:
 *
 *     notes_server --http 8080 &
 *     watch_example http://127.0.0.1:8080/mcp
 *
 * Exits 0 once the update arrived and the index names the new note, 1
 * otherwise (including no update within ten seconds).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mcp/client.h>

#define INDEX_URI "notes://index"
#define NOTE_NAME "watched"
#define WAIT_SECONDS 10

/*
 * What the subscription's callback and main() share. The callback runs
 * on a client thread, so the flag is guarded by a lock, and main() sleeps
 * on a condition variable until it changes.
 */
typedef struct watch {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool index_updated;
} watch_t;

/* Called for each notification the subscription matches. It must not
 * block (it holds up the subscription's later events), so it only takes
 * note and wakes main(); the reading happens there. */
static void on_event(void *user, const char *method, const json_t *params)
{
    watch_t *w = user;
    const char *uri = json_string_value(json_object_get(params, "uri"));
    printf("event: %s%s%s\n", method, uri ? " " : "", uri ? uri : "");
    if (strcmp(method, "notifications/resources/updated") != 0 || !uri ||
        strcmp(uri, INDEX_URI) != 0)
        return;
    pthread_mutex_lock(&w->lock);
    w->index_updated = true;
    pthread_cond_signal(&w->changed);
    pthread_mutex_unlock(&w->lock);
}

/* Waits up to WAIT_SECONDS for on_event to see the index change. */
static bool wait_for_update(watch_t *w)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_SECONDS;
    pthread_mutex_lock(&w->lock);
    int rc = 0;
    while (!w->index_updated && rc == 0)
        rc = pthread_cond_timedwait(&w->changed, &w->lock, &until);
    bool updated = w->index_updated;
    pthread_mutex_unlock(&w->lock);
    return updated;
}

static int fail(const char *what, mcp_error_t *err)
{
    fprintf(stderr, "watch_example: %s: %s\n", what, err->message);
    mcp_error_clear(err);
    return 1;
}

/* The text of the index, or NULL (*err says why); the caller frees it. */
static char *read_index(mcp_client_t *client, mcp_error_t *err)
{
    json_t *result = NULL;
    if (mcp_client_read_resource(client, INDEX_URI, NULL, &result, err) != MCP_OK)
        return NULL;
    json_t *contents = json_array_get(json_object_get(result, "contents"), 0);
    const char *text = json_string_value(json_object_get(contents, "text"));
    char *copy = strdup(text ? text : "");
    json_decref(result);
    return copy;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: watch_example URL (e.g. http://127.0.0.1:8080/mcp)\n");
        return 2;
    }
    mcp_error_t err = {0};
    int status = 1;
    watch_t w = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};
    mcp_subscription_t *sub = NULL;

    mcp_client_t *client = mcp_client_new(&(mcp_client_options_t){
        .name = "watch-example", .version = "1.0"}, &err);
    if (!client)
        return fail("cannot create the client", &err);
    if (mcp_client_connect_http(client, &(mcp_http_target_t){.url = argv[1]}, &err) != MCP_OK) {
        fail("cannot connect", &err);
        goto out;
    }
    printf("connected (protocol %s)\n", mcp_client_protocol_version(client));

    /* Subscribe first, then change the resource: an update that came
     * before the subscription was acknowledged would not be seen. The
     * server says which part of the filter it will honour. */
    json_t *honoured = NULL;
    if (mcp_client_listen(client, &(mcp_listen_filter_t){
            .resource_uris = (const char *const[]){INDEX_URI}, .n_resource_uris = 1},
            on_event, &w, NULL, &sub, &honoured, &err) != MCP_OK) {
        fail("subscriptions/listen", &err);
        goto out;
    }
    json_t *uris = json_object_get(honoured, "resourceSubscriptions");
    bool watched = json_array_size(uris) == 1 &&
                   strcmp(json_string_value(json_array_get(uris, 0)), INDEX_URI) == 0;
    json_decref(honoured);
    if (!watched) {
        fprintf(stderr, "watch_example: the server will not report changes to %s\n", INDEX_URI);
        goto out;
    }

    json_t *args = json_pack("{s:s, s:s}", "name", NOTE_NAME, "text", "seen");
    json_t *result = NULL;
    int rc = mcp_client_call_tool(client, "add_note", args, NULL, &result, &err);
    json_decref(args); /* the call only reads its arguments */
    if (rc != MCP_OK) {
        fail("add_note", &err);
        goto out;
    }
    bool tool_failed = json_is_true(json_object_get(result, "isError"));
    json_decref(result);
    if (tool_failed) {
        fprintf(stderr, "watch_example: add_note reported a failure\n");
        goto out;
    }

    if (!wait_for_update(&w)) {
        fprintf(stderr, "watch_example: no update of %s within %d s\n", INDEX_URI,
                WAIT_SECONDS);
        goto out;
    }
    char *index = read_index(client, &err);
    if (!index) {
        fail("resources/read", &err);
        goto out;
    }
    printf("%s now: %s\n", INDEX_URI, index);
    status = strstr(index, NOTE_NAME) ? 0 : 1;
    if (status)
        fprintf(stderr, "watch_example: the index does not name the new note\n");
    free(index);

out:
    mcp_subscription_close(sub); /* NULL-safe; no callback after it returns */
    mcp_error_clear(&err);
    mcp_client_free(client);
    return status;
}
