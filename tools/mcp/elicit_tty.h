/*
 * Asking the person at the terminal: fields of an elicitation form, typed
 * and checked by their schema (choices numbered, defaults shown), yes/no
 * questions, and waiting for someone to visit a URL.
 *
 * Questions go to stderr and answers are read from stdin, which must be a
 * terminal. Ctrl-C abandons the question; so does end of input (Ctrl-D).
 * Results: 1 answered, 0 declined or left empty, -1 abandoned.
 */
#ifndef MCP_CLI_ELICIT_TTY_H
#define MCP_CLI_ELICIT_TTY_H

#include <stdbool.h>

#include <jansson.h>

/*
 * Asks for field `key` of a form, described by `schema` (its
 * PrimitiveSchemaDefinition, borrowed). An empty answer takes the default,
 * or leaves an optional field out (returns 0); a required field without a
 * default is asked again, as is an answer the schema refuses.
 */
int tty_ask_field(const char *key, const json_t *schema, bool required, json_t **value_out);

/* A yes/no question; Enter answers `default_yes`. */
int tty_confirm(const char *question, bool default_yes);

/* Shows `url` and waits: Enter accepts (1), "n" declines (0). */
int tty_visit_url(const char *url);

/* OAuth sign-in: shows the authorization URL and reads the address the
 * browser was sent back to (malloc'd in *redirect_out). An empty answer
 * declines (0). */
int tty_authorize(const char *url, char **redirect_out);

#endif /* MCP_CLI_ELICIT_TTY_H */
