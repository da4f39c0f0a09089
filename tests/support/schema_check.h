/*
 * schema_check: validates JSON against the official MCP JSON Schemas, so a
 * test can prove that what our code puts on the wire is exactly what the
 * specification allows.
 *
 * The schemas live in tests/data (schema-2026-07-28.json,
 * schema-2025-11-25.json, and the Tasks extension's schema-ext-tasks.json). They are JSON Schema 2020-12 documents with every
 * type under "$defs". The checker implements the subset of keywords those
 * files use and nothing more:
 *
 *   type (name or array of names), $ref ("#/$defs/Name" only), properties,
 *   required, additionalProperties (boolean or schema), propertyNames (a
 *   schema), items (one schema), const, enum, anyOf, allOf, minimum,
 *   maximum, maxItems, format.
 *
 * Annotations that never affect validity ($schema, $comment, description,
 * title, default, examples, deprecated, readOnly, writeOnly) are ignored.
 * Any other keyword, another form of $ref or an unknown format makes
 * validation FAIL with "unsupported ...": the checker can never pass an
 * instance because it skipped a rule it does not understand.
 *
 * Formats are asserted, cheaply:
 *   uri           a scheme ("alpha *(alpha / digit / + / - / .)" then ':')
 *                 and no whitespace or control characters;
 *   uri-template  no whitespace or control characters, and every '{' closed
 *                 by a '}' around a non-empty expression, never nested;
 *   byte          standard base64 (RFC 4648 section 4) with padding.
 *
 * As in JSON Schema, 1.0 counts as an integer and numbers compare by value
 * in const and enum.
 *
 * Reasons are one line: the JSON Pointer of the offending value, then what
 * is wrong, for example
 *   /result/content/0/type: value "txt" does not match const "text"
 *     (closest of 5 anyOf alternatives at /result/content/0)
 *
 * Every function takes an optional reason buffer (NULL or size 0 to skip it)
 * that receives a NUL-terminated, possibly truncated, explanation of a
 * failure. Loaded schemas are cached for the life of the process and freed
 * at exit; all functions are safe to call from several threads.
 */
#ifndef MCP_TEST_SCHEMA_CHECK_H
#define MCP_TEST_SCHEMA_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>

/* A reason buffer of this size never truncates a reason in practice. */
#define SCHEMA_CHECK_REASON_MAX 1024

/*
 * Loads the schema document at `path`, once per path: later calls return the
 * same document. Returns it borrowed (valid until the process exits), or NULL
 * when the file cannot be read, is not JSON, or has no "$defs" object.
 */
const json_t *schema_check_load(const char *path, char *reason, size_t reason_size);

/* The Tasks extension's schema, by the name schema_check_revision() and
 * the definition checks take in place of a revision. */
#define SCHEMA_EXT_TASKS "ext-tasks"

/*
 * The official schema of a protocol revision: "2026-07-28" or "2025-11-25",
 * or of the Tasks extension: SCHEMA_EXT_TASKS (loaded from
 * MCP_TEST_DATA_DIR through schema_check_load). Returns it borrowed, or
 * NULL for another name or a load failure. schema_check_server_message()
 * takes revisions only.
 */
const json_t *schema_check_revision(const char *revision, char *reason, size_t reason_size);

/*
 * Validates `instance` against the definition "$defs/<definition>" of the
 * schema document `schema` (from schema_check_load, or any JSON object with
 * a "$defs" member). Returns 0 when the instance is valid; -1 when it is not,
 * when the definition does not exist, or when the schema uses something this
 * checker does not implement.
 */
int schema_check_validate(const json_t *schema, const char *definition,
                          const json_t *instance, char *reason, size_t reason_size);

/*
 * schema_check_validate against the official schema of `revision`.
 */
int schema_check_definition(const char *revision, const char *definition,
                            const json_t *instance, char *reason, size_t reason_size);

/*
 * Validates one JSON-RPC message a server sent, as a client of `revision`
 * would receive it. Returns 0 when valid, -1 otherwise.
 *
 *   result response  the envelope (JSONRPCResultResponse, which also checks
 *                    "result" against Result) and the result against the
 *                    definition of `request_method`, the method of the
 *                    request it answers: server/discover -> DiscoverResult,
 *                    initialize -> InitializeResult, ping -> EmptyResult,
 *                    and so on for every request a client sends in that
 *                    revision. A method without a result type in the
 *                    revision fails.
 *                    2026-07-28: tools/call, resources/read and prompts/get
 *                    may also answer InputRequiredResult. "resultType" picks
 *                    the shape: "input_required" means InputRequiredResult,
 *                    anything else the ordinary result. (The schema's anyOf
 *                    cannot decide it: InputRequiredResult accepts almost any
 *                    object, so a broken CallToolResult would pass as one.)
 *                    2025-11-25: tools/call answers CallToolResult or, when
 *                    task-augmented, CreateTaskResult; either passes.
 *   error response   JSONRPCErrorResponse, plus the definition the revision
 *                    gives that error code, if any (-32020 HeaderMismatchError,
 *                    -32021 MissingRequiredClientCapabilityError, -32022
 *                    UnsupportedProtocolVersionError in 2026-07-28; -32042
 *                    URLElicitationRequiredError in 2025-11-25).
 *                    `request_method` is not used and may be NULL.
 *   notification     JSONRPCNotification and the member of ServerNotification
 *                    whose "method" const equals the message's method; a
 *                    method that is not a server notification fails.
 *   request          (has "method" and "id") JSONRPCRequest and the member of
 *                    ServerRequest with that method; 2026-07-28 has no
 *                    server-to-client requests, so there it always fails.
 *
 * A message with both "result" and "error", or with none of "method",
 * "result" and "error", fails.
 */
int schema_check_server_message(const json_t *message, const char *request_method,
                                const char *revision, char *reason, size_t reason_size);

/*
 * cmocka assertion: fails the running test, with the reason, unless
 * `message` is a valid server message answering `request_method` (may be
 * NULL for errors and notifications) in `revision`.
 */
#define MCP_ASSERT_SCHEMA_VALID(message, request_method, revision)                     \
    do {                                                                               \
        char schema_reason_[SCHEMA_CHECK_REASON_MAX];                                  \
        const char *schema_method_ = (request_method);                                 \
        if (schema_check_server_message((message), schema_method_, (revision),         \
                                        schema_reason_, sizeof schema_reason_) != 0)   \
            fail_msg("schema %s, answer to %s: %s", (revision),                        \
                     schema_method_ ? schema_method_ : "(none)", schema_reason_);      \
    } while (0)

/*
 * cmocka assertion: fails the running test, with the reason, unless
 * `instance` is valid against `definition` in the schema of `revision`.
 */
#define MCP_ASSERT_SCHEMA_DEFINITION_VALID(instance, definition, revision)             \
    do {                                                                               \
        char schema_reason_[SCHEMA_CHECK_REASON_MAX];                                  \
        if (schema_check_definition((revision), (definition), (instance),              \
                                    schema_reason_, sizeof schema_reason_) != 0)       \
            fail_msg("schema %s, %s: %s", (revision), (definition), schema_reason_);   \
    } while (0)

#endif
