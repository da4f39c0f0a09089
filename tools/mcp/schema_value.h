/*
 * Typing a word of text by a JSON Schema: "42" becomes the integer 42 for
 * {"type":"integer"} and stays the string "42" for {"type":"string"}.
 *
 * Used for tool arguments (KEY=VALUE), answers to elicitation forms
 * (--answer and the terminal) and prompts' questions. Only what such
 * schemas say is understood: type (one or several), enum, const,
 * oneOf/anyOf of consts (titled choices), items, minimum/maximum,
 * exclusiveMinimum/exclusiveMaximum, minLength/maxLength, minItems/maxItems
 * and the string formats email, uri, date and date-time. A schema that
 * says nothing (or only things not understood) accepts any JSON literal,
 * and any other text as a string.
 *
 * Text is typed by the first type that accepts it, in this order: null,
 * boolean, integer, number, object, array, string. Where the schema asks
 * for a boolean, yes/no, y/n and on/off are accepted besides true/false;
 * where it asks for an array, "a,b,c" is accepted besides a JSON array.
 */
#ifndef MCP_CLI_SCHEMA_VALUE_H
#define MCP_CLI_SCHEMA_VALUE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/*
 * Types `text` by `schema` (borrowed; NULL: no constraint) and checks the
 * value against it. On success stores a new reference in *value_out and
 * returns true; otherwise writes a sentence into why (e.g. "expected an
 * integer from 0 to 60, got \"x\"") and returns false.
 */
bool schema_value_parse(const json_t *schema, const char *text, json_t **value_out, char *why,
                        size_t why_cap);

/* Checks an already typed value (borrowed) against `schema`; false with
 * `why` when it does not fit. */
bool schema_value_check(const json_t *schema, const json_t *value, char *why, size_t why_cap);

/* The type a schema asks for, in a word or two: "string", "integer",
 * "number|null", "boolean", "string[]", "any". */
const char *schema_value_type_name(const json_t *schema, char *buf, size_t cap);

/* A description for a person: the type and its constraints ("an integer
 * from 0 to 60", "an email address", "one of: brief, detailed"). */
const char *schema_value_describe(const json_t *schema, char *buf, size_t cap);

/*
 * The choices a schema offers (enum, const, oneOf/anyOf of consts, or the
 * same on its items for an array): a new array of {"value", "title"?}
 * objects, or NULL when the schema is not a choice.
 */
json_t *schema_value_choices(const json_t *schema);

/* Does the schema ask for an array? */
bool schema_value_is_array(const json_t *schema);

/* Does the schema ask for a boolean (and nothing else)? */
bool schema_value_is_boolean(const json_t *schema);

#endif /* MCP_CLI_SCHEMA_VALUE_H */
