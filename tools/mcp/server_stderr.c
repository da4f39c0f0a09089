/*
 * A stdio server's stderr: shown live, or kept for when things go wrong.
 */
#include "server_stderr.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "term.h"

/* How many of the last lines are kept. */
#define KEPT_LINES 20

struct server_stderr {
    bool live;
    pthread_mutex_t lock;
    char *lines[KEPT_LINES]; /* a ring; `next` is the oldest slot */
    size_t next, count;
};

server_stderr_t *server_stderr_new(bool live)
{
    server_stderr_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->live = live;
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

static void show_line(const char *line)
{
    fprintf(stderr, "%sserver:%s %s\n", term_sgr(stderr, TERM_DIM), term_sgr(stderr, TERM_RESET),
            line);
}

void server_stderr_line(void *user, const char *line)
{
    server_stderr_t *s = user;
    if (s->live) {
        term_stderr_lock();
        show_line(line);
        term_stderr_unlock();
        return;
    }
    char *copy = strdup(line);
    if (!copy)
        return;
    pthread_mutex_lock(&s->lock);
    free(s->lines[s->next]);
    s->lines[s->next] = copy;
    s->next = (s->next + 1) % KEPT_LINES;
    if (s->count < KEPT_LINES)
        s->count++;
    pthread_mutex_unlock(&s->lock);
}

void server_stderr_show(server_stderr_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    if (s->count > 0) {
        term_stderr_lock();
        fprintf(stderr, "mcp: what the server last wrote on its stderr:\n");
        size_t first = (s->next + KEPT_LINES - s->count) % KEPT_LINES;
        for (size_t i = 0; i < s->count; i++) {
            size_t slot = (first + i) % KEPT_LINES;
            show_line(s->lines[slot]);
            free(s->lines[slot]);
            s->lines[slot] = NULL;
        }
        term_stderr_unlock();
        s->count = 0;
    }
    pthread_mutex_unlock(&s->lock);
}

void server_stderr_free(server_stderr_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < KEPT_LINES; i++)
        free(s->lines[i]);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
