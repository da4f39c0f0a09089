/*
 * The terminal: colour, width and the status line on stderr.
 */
#include "term.h"

#include <langinfo.h>
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

static bool color_out, color_err;
static bool tty_out, tty_err;
static bool unicode;

static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static char *status;       /* the status line shown, or NULL; under err_lock */

void term_init(void)
{
    setlocale(LC_CTYPE, "");
    const char *codeset = nl_langinfo(CODESET);
    unicode = codeset && strcasecmp(codeset, "UTF-8") == 0;

    tty_out = isatty(STDOUT_FILENO) == 1;
    tty_err = isatty(STDERR_FILENO) == 1;
    const char *no_color = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    bool allowed = !(no_color && no_color[0]) && !(term && strcmp(term, "dumb") == 0);
    color_out = allowed && tty_out;
    color_err = allowed && tty_err;
}

bool term_is_tty(FILE *f)
{
    return f == stdout ? tty_out : f == stderr ? tty_err : false;
}

bool term_unicode(void)
{
    return unicode;
}

const char *term_sgr(FILE *f, term_style_t style)
{
    static const char *const codes[] = {
        [TERM_RESET] = "\033[0m",  [TERM_BOLD] = "\033[1m",   [TERM_DIM] = "\033[2m",
        [TERM_RED] = "\033[31m",   [TERM_GREEN] = "\033[32m", [TERM_YELLOW] = "\033[33m",
        [TERM_BLUE] = "\033[34m",  [TERM_CYAN] = "\033[36m",
    };
    bool on = f == stdout ? color_out : f == stderr ? color_err : false;
    return on ? codes[style] : "";
}

int term_width(FILE *f)
{
    if (!term_is_tty(f))
        return 0;
    struct winsize ws;
    if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

size_t term_text_width(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) /* not a continuation byte */
            n++;
    return n;
}

/* ------------------------------------------------------------------------
 * The status line
 * ------------------------------------------------------------------------ */

static void draw_status_locked(void)
{
    if (!status)
        return;
    int width = term_width(stderr);
    /* Leave the last column free: writing there makes some terminals wrap. */
    size_t max = width > 1 ? (size_t)width - 1 : 79;
    size_t len = strlen(status), shown = 0, chars = 0;
    while (shown < len && chars < max) {
        shown++;
        while (shown < len && ((unsigned char)status[shown] & 0xC0) == 0x80)
            shown++;
        chars++;
    }
    fprintf(stderr, "\r\033[K%.*s", (int)shown, status);
    fflush(stderr);
}

static void clear_status_locked(void)
{
    if (status) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

void term_status(const char *line)
{
    if (!tty_err)
        return;
    pthread_mutex_lock(&err_lock);
    clear_status_locked();
    free(status);
    status = line ? strdup(line) : NULL;
    draw_status_locked();
    pthread_mutex_unlock(&err_lock);
}

void term_stderr_lock(void)
{
    pthread_mutex_lock(&err_lock);
    clear_status_locked();
}

void term_stderr_unlock(void)
{
    fflush(stderr);
    draw_status_locked();
    pthread_mutex_unlock(&err_lock);
}

static void labelled(term_style_t style, const char *label, const char *fmt, va_list ap)
    MCP_PRINTF(3, 0);
static void labelled(term_style_t style, const char *label, const char *fmt, va_list ap)
{
    term_stderr_lock();
    fprintf(stderr, "mcp: %s%s%s", term_sgr(stderr, style), label, term_sgr(stderr, TERM_RESET));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    term_stderr_unlock();
}

void term_errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    labelled(TERM_RED, "error: ", fmt, ap);
    va_end(ap);
}

void term_notef(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    labelled(TERM_RESET, "", fmt, ap);
    va_end(ap);
}
