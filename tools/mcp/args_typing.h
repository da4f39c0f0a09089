/*
 * Arguments from the command line: the KEY=VALUE words after a tool or
 * prompt name.
 *
 *   KEY=VALUE   VALUE typed by the tool's input schema for KEY
 *               (seconds=5 is the integer 5; text=5 the string "5")
 *   KEY:=JSON   JSON taken as it is (tags:='["a","b"]', n:=null)
 *
 * A KEY given twice adds to an array argument (tag=a tag=b). Prompt
 * arguments are strings, so their values are taken as they are.
 */
#ifndef MCP_CLI_ARGS_TYPING_H
#define MCP_CLI_ARGS_TYPING_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/*
 * Splits "KEY=VALUE" or "KEY:=JSON" into key (copied into key_buf) and
 * value (pointing into word); *raw_json tells which form it was. False
 * when the word has no '=' or an empty key.
 */
bool args_split(const char *word, char *key_buf, size_t key_cap, const char **value,
                bool *raw_json);

/*
 * The arguments of a tools/call: `base` (the --args object, borrowed, or
 * NULL) with each word applied, typed by `input_schema` (borrowed, or NULL
 * when unknown). Checks that every property the schema requires is given
 * and that no key is given that the schema does not list (unless its
 * additionalProperties allows it). True with *args_out (new reference), or
 * false with a sentence in `why`.
 */
bool args_tool_arguments(const json_t *input_schema, const json_t *base,
                         const char *const *words, size_t n_words, json_t **args_out, char *why,
                         size_t why_cap);

/*
 * The arguments of a prompts/get: each word's value as a string. `declared`
 * is the prompt's arguments array (PromptArgument objects, borrowed; NULL
 * when unknown): every required one must be given, and only those may be.
 */
bool args_prompt_arguments(const json_t *declared, const char *const *words, size_t n_words,
                           json_t **args_out, char *why, size_t why_cap);

#endif /* MCP_CLI_ARGS_TYPING_H */
