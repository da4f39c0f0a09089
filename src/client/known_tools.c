/*
 * What the client remembers of the tools it has seen in tools/list: their
 * x-mcp-header annotations (digest section 4.6), which tools/call mirrors
 * into Mcp-Param-* headers (a tool with invalid annotations is dropped
 * from tools/list), and, from legacy servers, execution.taskSupport,
 * which says whether a call may or must be a task (legacy/tasks.c).
 *
 * The server chooses how many tools there are (a 16 MB page holds some
 * 800,000) and what they are called, so the table is a chained hash map
 * by name whose hash starts from a secret state (a server cannot pick
 * names that share a bucket), and every step costs time in proportion to
 * the page at hand, not to the table: a page is checked into a table of
 * its own, off the client's lock, and only merged under it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_internal.h"
#include "fnv.h"
#include "random.h"

/* Dropped tools of one page that are each logged; the rest are counted
 * in one line, so that a page of bad tools is not also a flood of logs. */
#define MAX_DROP_WARNINGS 8

struct client_tool {
    client_tool_t *next; /* in its bucket, or in `retired` */
    uint64_t hash;
    char *name;
    mcp_param_headers_t headers;
    client_task_support_t task_support;
};

static uint64_t seed;
static pthread_once_t seed_once = PTHREAD_ONCE_INIT;

static void seed_init(void)
{
    if (mcp_secret_random(&seed, sizeof seed) != MCP_OK) {
        /* No getrandom(2): the address of a variable (ASLR) and the clock
         * still keep the state from being known in advance. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = (uint64_t)(uintptr_t)&seed ^ (uint64_t)ts.tv_nsec ^
               ((uint64_t)ts.tv_sec << 32);
    }
    seed ^= 14695981039346656037ull; /* FNV's offset basis */
}

/* FNV-1a from the secret state, then MurmurHash3's finalizer: the last
 * bytes of FNV-1a barely reach the high bits, nor the high bits of the
 * state the low ones; mixed, every bit of the name and of the seed
 * reaches every bit of the bucket. */
static uint64_t hash_of(const char *name)
{
    pthread_once(&seed_once, seed_init);
    uint64_t h = mcp_fnv1a_from(seed, name, strlen(name));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* The bucket of `hash` among 2^bits. */
static size_t bucket_of(uint64_t hash, unsigned bits)
{
    return bits ? (size_t)(hash >> (64 - bits)) : 0;
}

static void tool_free(client_tool_t *t)
{
    free(t->name);
    mcp_param_headers_clear(&t->headers);
    free(t);
}

static void free_chain(client_tool_t *t)
{
    for (client_tool_t *next; t; t = next) {
        next = t->next;
        tool_free(t);
    }
}

void client_tools_clear(client_tools_t *tools)
{
    for (size_t b = 0; tools->buckets && b < (size_t)1 << tools->bits; b++)
        free_chain(tools->buckets[b]);
    free(tools->buckets);
    free_chain(tools->retired);
    tools->buckets = NULL;
    tools->bits = 0;
    tools->count = 0;
    tools->retired = NULL;
    tools->complete = false;
    tools->generation++;
}

void client_tools_forget(client_tools_t *tools, client_tools_t *old)
{
    client_tools_t keep = {.generation = tools->generation + 1,
                           .comparisons = tools->comparisons};
    *old = *tools;
    *tools = keep;
}

/* The link pointing at tool `name`, or at the NULL ending its chain; the
 * table has buckets. */
static client_tool_t **slot(client_tools_t *tools, const char *name, uint64_t hash)
{
    client_tool_t **p = &tools->buckets[bucket_of(hash, tools->bits)];
    for (; *p; p = &(*p)->next) {
        tools->comparisons++;
        if ((*p)->hash == hash && strcmp((*p)->name, name) == 0)
            break;
    }
    return p;
}

/* Doubles the buckets until they are at least as many as `want` entries
 * (a load factor of at most 1). A failure leaves the table as it was:
 * only its chains grow longer. */
static void reserve(client_tools_t *tools, size_t want)
{
    unsigned bits = tools->bits ? tools->bits : 4;
    while (((size_t)1 << bits) < want && bits < 40)
        bits++;
    if (tools->buckets && bits == tools->bits)
        return;
    client_tool_t **b = calloc((size_t)1 << bits, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; tools->buckets && i < (size_t)1 << tools->bits; i++)
        for (client_tool_t *t = tools->buckets[i], *next; t; t = next) {
            next = t->next;
            size_t at = bucket_of(t->hash, bits);
            t->next = b[at];
            b[at] = t;
        }
    free(tools->buckets);
    tools->buckets = b;
    tools->bits = bits;
}

/* Puts `t` in the table, which has buckets; a tool of the same name it
 * replaces goes to `retired` (freed by whoever clears that table). */
static void insert(client_tools_t *tools, client_tool_t *t, client_tool_t **retired)
{
    client_tool_t **p = slot(tools, t->name, t->hash);
    if (*p) {
        client_tool_t *old = *p;
        t->next = old->next;
        old->next = *retired;
        *retired = old;
    } else {
        t->next = NULL;
        tools->count++;
    }
    *p = t;
}

static const client_tool_t *find(client_tools_t *tools, const char *name)
{
    if (!name || !tools->count)
        return NULL;
    return *slot(tools, name, hash_of(name));
}

const mcp_param_headers_t *client_tools_find(client_tools_t *tools, const char *name)
{
    const client_tool_t *t = find(tools, name);
    return t ? &t->headers : NULL;
}

client_task_support_t client_tools_task_support(client_tools_t *tools, const char *name)
{
    const client_tool_t *t = find(tools, name);
    return t ? t->task_support : CLIENT_TASK_SUPPORT_UNKNOWN;
}

/* execution.taskSupport of a tool (borrowed); absent means forbidden. */
static client_task_support_t task_support_of(const json_t *tool)
{
    const char *s =
        json_string_value(json_object_get(json_object_get(tool, "execution"), "taskSupport"));
    if (s && strcmp(s, "required") == 0)
        return CLIENT_TASK_SUPPORT_REQUIRED;
    if (s && strcmp(s, "optional") == 0)
        return CLIENT_TASK_SUPPORT_OPTIONAL;
    return CLIENT_TASK_SUPPORT_FORBIDDEN;
}

/* Records (or replaces) tool `name`; takes the headers. */
static int remember(client_tools_t *tools, const char *name, mcp_param_headers_t *headers,
                    client_task_support_t task_support)
{
    client_tool_t *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name))) {
        free(t);
        mcp_param_headers_clear(headers);
        return MCP_ENOMEM;
    }
    t->hash = hash_of(name);
    t->headers = *headers;
    t->task_support = task_support;
    reserve(tools, tools->count + 1);
    if (!tools->buckets) {
        tool_free(t);
        return MCP_ENOMEM;
    }
    insert(tools, t, &tools->retired);
    return MCP_OK;
}

void client_tools_merge(client_tools_t *to, client_tools_t *from)
{
    to->comparisons += from->comparisons;
    from->comparisons = 0;
    if (!to->count) {
        /* The first page after an invalidation: the page becomes the
         * table, and the empty table's buckets go with the page. */
        client_tool_t **buckets = to->buckets;
        unsigned bits = to->bits;
        to->buckets = from->buckets;
        to->bits = from->bits;
        to->count = from->count;
        from->buckets = buckets;
        from->bits = bits;
        from->count = 0;
        return;
    }
    reserve(to, to->count + from->count);
    for (size_t b = 0; from->buckets && b < (size_t)1 << from->bits; b++)
        while (from->buckets[b]) {
            client_tool_t *t = from->buckets[b];
            from->buckets[b] = t->next;
            from->count--;
            insert(to, t, &from->retired);
        }
}

static void warn_dropped(mcp_log_fn log, void *log_user, const char *name, const char *why,
                         size_t *dropped)
{
    if (!log || ++*dropped > MAX_DROP_WARNINGS)
        return;
    char msg[512];
    snprintf(msg, sizeof msg, "dropping tool \"%s\" from tools/list: %s", name, why);
    log(log_user, MCP_LOG_WARNING, msg);
}

int client_tools_accept_page(client_tools_t *tools, json_t *result, mcp_log_fn log,
                             void *log_user)
{
    json_t *list = json_object_get(result, "tools");
    if (!json_is_array(list))
        return MCP_OK;
    /* One pass: the tools kept move down over the dropped ones, and the
     * tail left over is cut at the end (removing the last element of a
     * jansson array moves nothing). */
    size_t n = json_array_size(list), kept = 0, dropped = 0;
    int rc = MCP_OK;
    for (size_t i = 0; i < n && rc == MCP_OK; i++) {
        json_t *tool = json_array_get(list, i);
        const char *name = json_string_value(json_object_get(tool, "name"));
        if (!name) {
            warn_dropped(log, log_user, "(unnamed)", "a tool needs a string name", &dropped);
            continue;
        }
        mcp_param_headers_t headers = {0};
        mcp_error_t err = {0};
        rc = mcp_xmcp_headers_collect(json_object_get(tool, "inputSchema"), &headers, &err);
        if (rc != MCP_OK && rc != MCP_ENOMEM) {
            warn_dropped(log, log_user, name, err.message, &dropped);
            mcp_error_clear(&err);
            rc = MCP_OK;
            continue;
        }
        mcp_error_clear(&err);
        if (rc == MCP_OK)
            rc = remember(tools, name, &headers, task_support_of(tool));
        if (rc == MCP_OK && kept != i)
            json_array_set(list, kept, tool);
        kept++;
    }
    if (rc != MCP_OK)
        return rc;
    while (json_array_size(list) > kept)
        json_array_remove(list, json_array_size(list) - 1);
    if (log && dropped > MAX_DROP_WARNINGS) {
        char msg[160];
        snprintf(msg, sizeof msg, "dropping %zu more tools from tools/list",
                 dropped - MAX_DROP_WARNINGS);
        log(log_user, MCP_LOG_WARNING, msg);
    }
    return MCP_OK;
}
