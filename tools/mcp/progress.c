/*
 * Progress notifications -> a progress bar.
 */
#include "progress.h"

#include <stdio.h>
#include <string.h>

#include "term.h"

#define BAR_CELLS 24

/* "5", "2.5": a number as people write it. */
static void number(char *buf, size_t cap, double x)
{
    snprintf(buf, cap, "%.10g", x);
}

void progress_report(void *user, double progress, double total, const char *message)
{
    char done[32], all[32], line[512];
    number(done, sizeof done, progress);
    number(all, sizeof all, total);
    if (!term_is_tty(stderr)) {
        term_stderr_lock();
        fprintf(stderr, "progress %s%s%s%s%s\n", done, total >= 0 ? "/" : "",
                total >= 0 ? all : "", message ? ": " : "", message ? message : "");
        term_stderr_unlock();
        return;
    }
    char bar[BAR_CELLS * 3 + 1];
    size_t used = 0;
    if (total > 0) {
        double ratio = progress / total;
        int filled = (int)(ratio < 0 ? 0 : ratio > 1 ? BAR_CELLS : ratio * BAR_CELLS + 0.5);
        /* Unicode: full and light-shade blocks; otherwise # and -. */
        const char *full = term_unicode() ? "\u2588" : "#";
        const char *empty = term_unicode() ? "\u2591" : "-";
        for (int i = 0; i < BAR_CELLS; i++) {
            const char *cell = i < filled ? full : empty;
            memcpy(bar + used, cell, strlen(cell));
            used += strlen(cell);
        }
    }
    bar[used] = '\0';
    if (total > 0)
        snprintf(line, sizeof line, "%s%s%s %s/%s%s%s", term_sgr(stderr, TERM_CYAN), bar,
                 term_sgr(stderr, TERM_RESET), done, all, message ? "  " : "",
                 message ? message : "");
    else
        snprintf(line, sizeof line, "%s... %s%s%s", term_sgr(stderr, TERM_CYAN),
                 term_sgr(stderr, TERM_RESET), done, message ? "  " : "");
    if (total <= 0 && message)
        strncat(line, message, sizeof line - strlen(line) - 1);
    term_status(line);
}

mcp_request_options_t progress_options(const mcp_request_options_t *base)
{
    mcp_request_options_t opts = *base;
    opts.progress = progress_report;
    return opts;
}

void progress_done(void)
{
    term_status(NULL);
}
