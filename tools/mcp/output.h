/*
 * Human output on stdout: tables, labelled fields, content blocks and JSON
 * for people. On a terminal tables fit its width and headings are bold;
 * elsewhere (a pipe, a file) nothing is cut and there is no colour.
 */
#ifndef MCP_CLI_OUTPUT_H
#define MCP_CLI_OUTPUT_H

#include <stdio.h>

#include <jansson.h>

/* A table of text cells, printed with aligned columns. */
typedef struct out_table out_table_t;

/* A table with `n_cols` columns titled `headers`. NULL when out of memory. */
out_table_t *out_table_new(size_t n_cols, const char *const *headers);

/* Adds a row of n_cols cells (copied; NULL is an empty cell). Each cell is
 * shown on one line: line breaks become spaces. */
void out_table_add(out_table_t *t, const char *const *cells);

/* Prints the table on stdout; an empty table prints `empty` instead. */
void out_table_print(const out_table_t *t, const char *empty);

void out_table_free(out_table_t *t);

/* "Label:      value" lines, the values aligned. */
void out_field(const char *label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints text, ending it with a newline if it has none. */
void out_text(FILE *f, const char *text);

/* Prints ContentBlocks (an array, borrowed) for people: text as it is,
 * other blocks as a one-line description. */
void out_content(FILE *f, const json_t *content);

/* Prints a CallToolResult (borrowed) of the tool `name`, or (NULL name) of
 * the task `task_id`, whose tool a task's state does not name: its
 * content, or its structured content when it has no other, on stdout; when
 * it reports an error (isError), the same on stderr under a line that
 * says so. */
void out_tool_result(const char *name, const char *task_id, const json_t *result);

/* Prints a JSON value (borrowed) indented, for people. */
void out_json(FILE *f, const json_t *value);

/* "12 bytes", "3.4 kB", "1.2 MB" into buf. */
const char *out_size(size_t bytes, char *buf, size_t cap);

/* The number of bytes base64 text decodes to. */
size_t out_base64_size(const char *b64);

#endif /* MCP_CLI_OUTPUT_H */
