/*
 * Reading JSON text from a peer into jansson values, internal to libmcp.
 *
 * json_read() accepts and rejects the same texts as
 *
 *     json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, err)
 *
 * and builds equal trees, in a fraction of the instructions: jansson's
 * loader reads every byte through a callback and copies each token twice,
 * which made it the largest single cost of serving a small request. The
 * rules, all jansson's:
 *   - one value of any type, surrounded only by space, \t, \n and \r;
 *   - strings: valid UTF-8 only (no overlong forms, no encoded surrogates,
 *     nothing above U+10FFFF, no truncated sequence), no raw control
 *     characters, the escapes \" \\ \/ \b \f \n \r \t and \uXXXX, where
 *     surrogates must come in high-low pairs; \u0000 is allowed in values
 *     but not in object keys;
 *   - numbers per RFC 8259; one without fraction or exponent is a
 *     json_int_t and must fit in one, any other is a double that must not
 *     overflow (underflow to zero or a subnormal is accepted), whatever the
 *     locale's decimal point;
 *   - no duplicate keys in an object;
 *   - at most JSON_PARSER_MAX_DEPTH (2048) values nested in one another,
 *     counting the innermost scalar, so that the recursion stays bounded.
 *
 * One deliberate difference: jansson's lexer skips a NUL byte that directly
 * follows a number or a literal ("1\0" loads as 1), a side effect of how it
 * pushes back its look-ahead byte. json_read() rejects that byte like any
 * other stray byte.
 *
 * Errors are reported as jansson reports them: the same texts ("duplicate
 * object key near '\"id\"'"), codes (json_error_code()), and line, column
 * (in characters) and byte position just after the token at fault.
 *
 * Pure and thread-safe; reads the LC_NUMERIC locale of the calling thread.
 */
#ifndef MCP_PROTOCOL_JSON_READER_H
#define MCP_PROTOCOL_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/*
 * Parses the `len` bytes at `buf` (no terminating NUL needed) into a new
 * value, owned by the caller. On failure returns NULL and, if `err` is not
 * NULL, fills it in (source "<buffer>"); json_error_code(err) tells
 * json_error_stack_overflow (too deep), json_error_out_of_memory and the
 * syntax errors apart. `err` is untouched on success.
 */
json_t *json_read(const char *buf, size_t len, json_error_t *err);

/*
 * json_read() under the caller's own limit as well: at most `max_nesting`
 * arrays and objects nested in one another (the outermost counts 1;
 * scalars do not count). An array or object beyond it fails the read as
 * soon as its bracket is met, so the partial tree (freed before returning)
 * is never deeper than the limit; the error is json_error_stack_overflow
 * and *too_deep is set. Errors met earlier in the text win, as they do in
 * json_read(). On any other outcome *too_deep is false.
 */
json_t *json_read_nested(const char *buf, size_t len, int max_nesting, bool *too_deep,
                         json_error_t *err);

/*
 * A value remembered from one read to the next. MCP clients send the same
 * request metadata (params._meta: protocol version, client info and
 * capabilities, some 170 bytes, six objects and strings) on every request,
 * and building it is a third of reading a small request. A read given a
 * memo compares the text of the value at outermost.`parent_key`.`key`
 * with the text it remembers: the same bytes give the same value, which
 * the read then shares (json_incref) instead of building it again.
 * Otherwise it reads the value and remembers it (an object, array or
 * string of up to JSON_READ_MEMO_MAX_TEXT bytes of text).
 *
 * A shared value must never be changed: give a memo only to reads whose
 * trees are read, never modified (the server's requests). A memo belongs
 * to one thread at a time; the values it hands out may go to any thread
 * (jansson's reference counts are atomic).
 */
#define JSON_READ_MEMO_MAX_TEXT 1024
typedef struct json_read_memo {
    const char *parent_key; /* set by the owner, e.g. "params" */
    const char *key;        /* set by the owner, e.g. "_meta" */
    char *text;             /* the remembered value's text, or NULL */
    size_t len;
    json_t *value;          /* the value it read as (one reference) */
    int max_nesting;        /* the limit it was read under */
} json_read_memo_t;

/* json_read_nested() with a memo (NULL: none); see json_read_memo_t. */
json_t *json_read_memo(const char *buf, size_t len, int max_nesting, bool *too_deep,
                       json_error_t *err, json_read_memo_t *memo);

/*
 * One member of the object json_read_members() reads: `key` and `equals`
 * set by the caller, `value` and `present` filled in by the read.
 */
typedef struct json_read_member {
    const char *key;    /* the member's name */
    const char *equals; /* NULL: the value is built into `value`; else the
                           value must be a string of exactly these bytes
                           (no escapes), and is checked, not built */
    json_t *value;      /* the value read (a reference), or NULL */
    bool present;       /* whether the member was there */
} json_read_member_t;

/*
 * Reads a text that is one object with some of the `n` members named in
 * `members` and no others, each at most once, without building the object
 * itself: each value goes to its member (through `memo` as in
 * json_read_memo(), the object being the outermost value). For a reader
 * that wants a few members of a well-known object, the commonest case of
 * which costs the object, its hashed keys and their values to build and
 * to free (a JSON-RPC request's envelope).
 *
 * Returns true when the text is such an object, read whole and within
 * `max_nesting` (as json_read_nested()); the caller owns the values.
 * Returns false for anything else, valid or not -- another member, a
 * duplicate, an `equals` mismatch, a syntax error, too deep, out of memory
 * -- having freed what it read: the caller then reads the text the usual
 * way, which tells it what the text is and reports its errors exactly.
 */
bool json_read_members(const char *buf, size_t len, int max_nesting, json_read_memo_t *memo,
                       json_read_member_t *members, size_t n);

/*
 * json_read_nested(), except that a number out of json_int_t's range (an
 * integer) or a double's (a real that overflows) reads as null instead of
 * failing the read. For telling a peer which of its messages held such a
 * number: the id is still found when the number is elsewhere. Never use
 * its tree as the message itself.
 */
json_t *json_read_out_of_range_as_null(const char *buf, size_t len, int max_nesting,
                                       bool *too_deep, json_error_t *err);

/* Forgets what `memo` remembers (its key and depth stay). NULL-safe. */
void json_read_memo_clear(json_read_memo_t *memo);

/*
 * Converts the real number text [s, s + n) ("-1.5e-3": strtod() syntax
 * with '.' for the decimal point) to a double, whatever the locale's
 * decimal point (setlocale(LC_NUMERIC) is the application's business):
 * the '.' is swapped for it first, as jansson does. MCP_OK; MCP_ELIMIT
 * when the number overflows (underflow to zero or a subnormal is
 * accepted); MCP_ENOMEM. The SKILL.md reader shares it (src/skill_md.c).
 */
int mcp_real_from_text(const char *s, size_t n, double *out);

#endif /* MCP_PROTOCOL_JSON_READER_H */
