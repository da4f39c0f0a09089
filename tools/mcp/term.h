/*
 * The terminal: whether to use colour, how wide a line is, and the status
 * line on stderr (the progress bar) that other stderr output must not tear.
 *
 * Colour is used only on a terminal, never when NO_COLOR is set to a
 * non-empty value (https://no-color.org) or TERM is "dumb".
 *
 * Everything mcp writes to stderr goes through term_errorf()/term_notef()
 * or term_stderr_lock(), so that lines from several threads (progress,
 * server logs, the wire trace) never interleave and the status line is
 * redrawn below them. Thread-safe.
 */
#ifndef MCP_CLI_TERM_H
#define MCP_CLI_TERM_H

#include <stdbool.h>
#include <stdio.h>

#include <mcp/common.h>

/* Decides about colour and Unicode once, at start-up. */
void term_init(void);

typedef enum term_style {
    TERM_RESET = 0,
    TERM_BOLD,
    TERM_DIM,
    TERM_RED,
    TERM_GREEN,
    TERM_YELLOW,
    TERM_BLUE,
    TERM_CYAN
} term_style_t;

/* The escape sequence for `style` on `f` (stdout or stderr), or "" when
 * that stream gets no colour. */
const char *term_sgr(FILE *f, term_style_t style);

/* Is `f` a terminal? */
bool term_is_tty(FILE *f);

/* Columns of the terminal behind `f`, or 0 when it is not one. */
int term_width(FILE *f);

/* May output use Unicode symbols (a UTF-8 locale)? */
bool term_unicode(void);

/* Shows `line` as the status line on stderr (terminals only), replacing the
 * previous one; NULL removes it. */
void term_status(const char *line);

/* Takes stderr for a few writes: the status line is cleared first and
 * redrawn by term_stderr_unlock(). */
void term_stderr_lock(void);
void term_stderr_unlock(void);

/* "mcp: error: MESSAGE\n" on stderr (the label in red on a terminal). */
void term_errorf(const char *fmt, ...) MCP_PRINTF(1, 2);

/* "mcp: MESSAGE\n" on stderr. */
void term_notef(const char *fmt, ...) MCP_PRINTF(1, 2);

/* Number of characters (UTF-8 code points) in the first `len` bytes of s. */
size_t term_text_width(const char *s, size_t len);

#endif /* MCP_CLI_TERM_H */
