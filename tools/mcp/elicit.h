/*
 * Answering elicitation requests -- the server asking the user something
 * (elicitation/create, through MRTR or, on legacy servers, as a request).
 *
 * Form mode. Answers come from, in this order:
 *   --decline          decline every request
 *   --answer KEY=VALUE the value of field KEY, typed and checked by the
 *                      requested schema (keys the form lacks are ignored:
 *                      they may be meant for another question)
 *   --yes              accept: every other field takes its default, a
 *                      yes/no field without one takes yes, optional fields
 *                      stay empty
 *   the terminal       the remaining fields are asked one by one
 *                      (elicit_tty.c), when stdin and stderr are terminals
 * Without a terminal, a required field that none of these answered cancels
 * the request (with a message naming the field).
 *
 * URL mode. The URL is shown in full; --yes accepts (consent only: mcp
 * never opens it), --decline declines, and on a terminal mcp waits for
 * Enter once the person has been there.
 */
#ifndef MCP_CLI_ELICIT_H
#define MCP_CLI_ELICIT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

typedef struct elicit_policy {
    const char *const *answers; /* --answer KEY=VALUE */
    size_t n_answers;
    bool yes;
    bool decline;
    bool interactive;           /* stdin and stderr are terminals */
} elicit_policy_t;

/* The mcp_elicit_fn (user: an elicit_policy_t). Returns 0 with an
 * ElicitResult, or -1 to cancel. */
int elicit_answer(void *user, const json_t *params, json_t **result_out);

#endif /* MCP_CLI_ELICIT_H */
