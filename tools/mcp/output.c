/*
 * Human output: tables, fields, content blocks.
 */
#include "output.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "term.h"

/* Columns other than the last are cut at this many characters on a
 * terminal, so that the last one (a description) keeps some room. */
#define MAX_COLUMN 40
#define COLUMN_GAP 2

struct out_table {
    size_t n_cols;
    char **cells;       /* row-major; the first row is the header */
    size_t n_rows, cap_rows;
};

/* A copy of s on one line: each run of line breaks and tabs becomes a
 * space, and surrounding blanks go. */
static char *one_line(const char *s)
{
    if (!s)
        s = "";
    while (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t')
        s++;
    char *copy = malloc(strlen(s) + 1);
    if (!copy)
        return NULL;
    size_t n = 0;
    bool blank = false;
    for (; *s; s++) {
        if (*s == '\n' || *s == '\r' || *s == '\t' || *s == ' ') {
            blank = true;
            continue;
        }
        if (blank && n > 0)
            copy[n++] = ' ';
        blank = false;
        copy[n++] = *s;
    }
    copy[n] = '\0';
    return copy;
}

out_table_t *out_table_new(size_t n_cols, const char *const *headers)
{
    out_table_t *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->n_cols = n_cols;
    out_table_add(t, headers);
    return t;
}

void out_table_add(out_table_t *t, const char *const *cells)
{
    if (!t)
        return;
    if (t->n_rows == t->cap_rows) {
        size_t cap = t->cap_rows ? t->cap_rows * 2 : 16;
        char **grown = realloc(t->cells, cap * t->n_cols * sizeof *grown);
        if (!grown)
            return;
        t->cells = grown;
        t->cap_rows = cap;
    }
    for (size_t c = 0; c < t->n_cols; c++)
        t->cells[t->n_rows * t->n_cols + c] = one_line(cells[c]);
    t->n_rows++;
}

void out_table_free(out_table_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

/* Prints s cut to `max` characters (0: no limit), marking a cut with an
 * ellipsis, then pads it to `pad` characters. */
static void put_cell(const char *s, size_t max, size_t pad)
{
    size_t len = strlen(s), chars = term_text_width(s, len);
    if (max && chars > max) {
        const char *dots = term_unicode() ? "\u2026" : "...";
        size_t keep_chars = max > strlen("...") ? max - (term_unicode() ? 1 : 3) : 0;
        size_t keep = 0, seen = 0;
        while (keep < len && seen < keep_chars) {
            keep++;
            while (keep < len && ((unsigned char)s[keep] & 0xC0) == 0x80)
                keep++;
            seen++;
        }
        fprintf(stdout, "%.*s%s", (int)keep, s, dots);
        chars = seen + (term_unicode() ? 1 : 3);
    } else {
        fputs(s, stdout);
    }
    for (; chars < pad; chars++)
        fputc(' ', stdout);
}

void out_table_print(const out_table_t *t, const char *empty)
{
    if (!t)
        return;
    if (t->n_rows <= 1) {
        printf("%s\n", empty);
        return;
    }
    int width = term_width(stdout);
    size_t *w = calloc(t->n_cols, sizeof *w);
    if (!w)
        return;
    for (size_t r = 0; r < t->n_rows; r++)
        for (size_t c = 0; c < t->n_cols; c++) {
            const char *cell = t->cells[r * t->n_cols + c];
            size_t n = cell ? term_text_width(cell, strlen(cell)) : 0;
            if (n > w[c])
                w[c] = n;
        }
    size_t used = 0;
    for (size_t c = 0; c + 1 < t->n_cols; c++) {
        if (width && w[c] > MAX_COLUMN)
            w[c] = MAX_COLUMN;
        used += w[c] + COLUMN_GAP;
    }
    /* On a terminal the last column gets what is left (at least a little). */
    size_t last_max = width ? ((size_t)width > used + 10 ? (size_t)width - used - 1 : 10) : 0;

    for (size_t r = 0; r < t->n_rows; r++) {
        if (r == 0)
            fputs(term_sgr(stdout, TERM_BOLD), stdout);
        for (size_t c = 0; c < t->n_cols; c++) {
            const char *cell = t->cells[r * t->n_cols + c];
            bool last = c + 1 == t->n_cols;
            put_cell(cell ? cell : "", last ? last_max : (width ? w[c] : 0),
                     last ? 0 : w[c] + COLUMN_GAP);
        }
        if (r == 0)
            fputs(term_sgr(stdout, TERM_RESET), stdout);
        fputc('\n', stdout);
    }
    free(w);
}

/* ------------------------------------------------------------------------
 * Fields, sizes, JSON
 * ------------------------------------------------------------------------ */

void out_field(const char *label, const char *fmt, ...)
{
    char *value = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&value, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    printf("%s%-13s%s ", term_sgr(stdout, TERM_BOLD), label, term_sgr(stdout, TERM_RESET));
    /* A value of several lines keeps to its column. */
    for (const char *line = value; line;) {
        const char *nl = strchr(line, '\n');
        if (line != value && nl != line)
            printf("%14s", "");
        printf("%.*s\n", (int)(nl ? (size_t)(nl - line) : strlen(line)), line);
        line = nl ? nl + 1 : NULL;
    }
    free(value);
}

const char *out_size(size_t bytes, char *buf, size_t cap)
{
    if (bytes < 1000)
        snprintf(buf, cap, "%zu bytes", bytes);
    else if (bytes < 1000 * 1000)
        snprintf(buf, cap, "%.1f kB", bytes / 1e3);
    else
        snprintf(buf, cap, "%.1f MB", bytes / 1e6);
    return buf;
}

size_t out_base64_size(const char *b64)
{
    size_t len = b64 ? strlen(b64) : 0;
    size_t pad = 0;
    while (len > 0 && pad < 2 && b64[len - 1 - pad] == '=')
        pad++;
    return len / 4 * 3 - (len % 4 == 0 ? pad : 0);
}

void out_json(FILE *f, const json_t *value)
{
    /* 15 significant digits: 0.1 reads as 0.1 (17 would show its binary
     * approximation). --json output keeps all 17. */
    json_dumpf(value, f, JSON_INDENT(2) | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY);
    fputc('\n', f);
}

/* ------------------------------------------------------------------------
 * Content blocks
 * ------------------------------------------------------------------------ */

static const char *str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

void out_text(FILE *f, const char *text)
{
    size_t len = strlen(text);
    fputs(text, f);
    if (len == 0 || text[len - 1] != '\n')
        fputc('\n', f);
}

static void put_note(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_note(FILE *f, const char *fmt, ...)
{
    fputs(term_sgr(f, TERM_CYAN), f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputs(term_sgr(f, TERM_RESET), f);
    fputc('\n', f);
}

static void put_embedded(FILE *f, const json_t *resource)
{
    const char *uri = str(resource, "uri");
    const char *mime = str(resource, "mimeType");
    const char *text = str(resource, "text");
    char size[32];
    if (text) {
        put_note(f, "[resource %s%s%s]", uri ? uri : "?", mime ? ", " : "", mime ? mime : "");
        out_text(f, text);
    } else {
        put_note(f, "[resource %s: %s, %s]", uri ? uri : "?", mime ? mime : "binary",
                 out_size(out_base64_size(str(resource, "blob")), size, sizeof size));
    }
}

void out_content(FILE *f, const json_t *content)
{
    size_t i;
    const json_t *block;
    char size[32];
    json_array_foreach(content, i, block) {
        const char *type = str(block, "type");
        if (!type) {
            out_json(f, block);
        } else if (strcmp(type, "text") == 0) {
            out_text(f, str(block, "text") ? str(block, "text") : "");
        } else if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0) {
            const char *mime = str(block, "mimeType");
            put_note(f, "[%s %s, %s]", type, mime ? mime : "?",
                     out_size(out_base64_size(str(block, "data")), size, sizeof size));
        } else if (strcmp(type, "resource_link") == 0) {
            const char *name = str(block, "name"), *uri = str(block, "uri");
            const char *desc = str(block, "description");
            put_note(f, "[link %s <%s>]%s%s", name ? name : "", uri ? uri : "?", desc ? " " : "",
                     desc ? desc : "");
        } else if (strcmp(type, "resource") == 0) {
            put_embedded(f, json_object_get(block, "resource"));
        } else {
            out_json(f, block);
        }
    }
}

void out_tool_result(const char *name, const char *task_id, const json_t *result)
{
    bool failed = json_is_true(json_object_get(result, "isError"));
    FILE *f = failed ? stderr : stdout;
    const json_t *content = json_object_get(result, "content");
    const json_t *structured = json_object_get(result, "structuredContent");
    if (failed) {
        term_stderr_lock();
        if (name)
            fprintf(stderr, "mcp: %stool \"%s\" reported an error:%s\n",
                    term_sgr(stderr, TERM_RED), name, term_sgr(stderr, TERM_RESET));
        else
            fprintf(stderr, "mcp: %sthe tool of task %s reported an error:%s\n",
                    term_sgr(stderr, TERM_RED), task_id ? task_id : "?",
                    term_sgr(stderr, TERM_RESET));
    }
    if (json_array_size(content) > 0)
        out_content(f, content);
    else if (structured)
        out_json(f, structured);
    if (failed)
        term_stderr_unlock();
}
