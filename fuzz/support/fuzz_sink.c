/* The contract-checking sink of the server-core fuzz targets; see
 * fuzz_sink.h. */
#include "support/fuzz_sink.h"

#include <pthread.h>
#include <stdlib.h>

#include "mcp/jsonrpc.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;
static int pending;
static fuzz_sink_observer_fn observer;

void fuzz_sink_observe(fuzz_sink_observer_fn fn)
{
    pthread_mutex_lock(&lock);
    observer = fn;
    pthread_mutex_unlock(&lock);
}

static int sink_send(mcp_sink_t *sink, mcp_out_kind_t kind, const json_t *msg, int status)
{
    fuzz_sink_t *s = (fuzz_sink_t *)sink;
    (void)status;
    pthread_mutex_lock(&lock);
    if (s->done || s->answered || (kind == MCP_OUT_ACCEPTED) != (msg == NULL))
        __builtin_trap();
    if (kind != MCP_OUT_NOTIFICATION && kind != MCP_OUT_REQUEST)
        s->answered = true;
    if (observer && msg)
        observer(msg);
    pthread_mutex_unlock(&lock);
    /* What a transport would do with it. */
    free(mcp_json_dump(msg, NULL));
    return 0;
}

static void sink_release(mcp_sink_t *sink)
{
    fuzz_sink_t *s = (fuzz_sink_t *)sink;
    pthread_mutex_lock(&lock);
    if (s->done)
        __builtin_trap();
    s->done = true;
    pending--;
    pthread_cond_broadcast(&released);
    pthread_mutex_unlock(&lock);
}

void fuzz_sink_init(fuzz_sink_t *s)
{
    *s = (fuzz_sink_t){.sink = {.send = sink_send, .release = sink_release}};
    pthread_mutex_lock(&lock);
    pending++;
    pthread_mutex_unlock(&lock);
}

void fuzz_sink_abandon(fuzz_sink_t *s)
{
    pthread_mutex_lock(&lock);
    s->done = true;
    pending--;
    pthread_cond_broadcast(&released);
    pthread_mutex_unlock(&lock);
}

void fuzz_sink_wait(fuzz_sink_t *s)
{
    pthread_mutex_lock(&lock);
    while (!s->done)
        pthread_cond_wait(&released, &lock);
    pthread_mutex_unlock(&lock);
}

void fuzz_sinks_wait_all(void)
{
    pthread_mutex_lock(&lock);
    while (pending > 0)
        pthread_cond_wait(&released, &lock);
    pthread_mutex_unlock(&lock);
}
