/*
 * URI templates (RFC 6570): parsing, expansion, and matching a concrete URI
 * back to the variables that would expand to it.
 *
 * Resource templates of MCP are RFC 6570 templates. The server matches a
 * requested URI against them to find the handler and its variables; the
 * client and the CLI expand them to build URIs.
 *
 * Parsing follows the RFC's grammar strictly: every operator of levels 1-4,
 * variable lists, prefix (:N, 1-9999) and explode (*) modifiers. Rejected
 * with MCP_EINVAL and a message naming the offset: an unterminated '{', a
 * '}' without '{', an empty expression, a reserved operator (= , ! @ |), a
 * malformed variable name or modifier, a literal character the RFC forbids
 * (space, " ' < > \ ^ ` |, controls), a '%' not followed by two hex digits,
 * and invalid UTF-8.
 *
 * Expansion is RFC 6570 level 4, section 3 and appendix A.
 *
 * Matching is the inverse of expansion for string values, as far as an
 * inverse exists. A URI matches when it is an expansion of the template:
 *
 *   - Literal text must appear exactly (a non-ASCII template character also
 *     matches its percent-encoded UTF-8, which is what expansion writes).
 *   - {var} matches one or more unreserved characters (A-Z a-z 0-9 - . _ ~)
 *     or percent-encoded bytes, so it never spans '/', '?', '#', ':' ...
 *     {+var} and {#var} also take reserved characters (: / ? # [ ] @ ! $ &
 *     ' ( ) * + , ; =) and so may span path segments. Raw non-ASCII bytes
 *     are accepted as unreserved (IRIs).
 *   - {x,y} (and {+x,y}, {#x,y}) split the span at ','; {.x,y} at '.';
 *     {/x,y} at '/'. Each variable takes one piece, the last variable takes
 *     whatever remains. Fewer pieces than variables leave the trailing
 *     variables undefined. More pieces than variables only match when the
 *     last variable is exploded ({/path*} matches "/a/b/c" with path =
 *     "a/b/c"), or when the separator may itself occur in a value ('.' in
 *     labels, ',' under + and #).
 *   - {;x,y}, {?x,y} and {&x,y} match name=value pairs in any order, each at
 *     most once; any may be absent; a name the expression does not list
 *     makes the URI not match. "name" without '=' gives an empty value.
 *   - An expression with a leading operator character ({/x}, {.x}, {#x},
 *     {;x}, {?x}, {&x}) may be absent altogether: its variables are then
 *     undefined. {x} and {+x} always need at least one character.
 *   - Values are percent-decoded and must be UTF-8 without NUL bytes.
 *     A variable used in several expressions must match the same value in
 *     each.
 *   - Modifiers: prefixes (:N) are not checked (the variable captures what
 *     the URI holds); an exploded variable captures the text of its pieces,
 *     separators included, as one string. Exploded associative arrays
 *     ({?keys*} with arbitrary names) cannot be recovered.
 *
 * Where several splits fit, expressions are tried left to right and each
 * takes the shortest span that lets the rest of the template match
 * (leftmost-shortest, like a lazy regular expression): literals and later
 * expressions claim what they can. "file:///{+path}{?v}" on
 * "file:///a/b?v=1" gives path = "a/b", v = "1"; "{name}{.ext}" on
 * "a.tar.gz" gives name = "a", ext = "tar.gz". Backtracking remembers failed
 * (expression, position) pairs and is bounded by a work budget linear in
 * the URI's length; a match that would exceed it fails with MCP_ELIMIT.
 * Only templates with adjacent ambiguous expressions can get there.
 *
 * Thread safety: a template is immutable once made; any number of threads
 * may match and expand it at once.
 */
#ifndef MCP_SERVER_URI_TEMPLATE_H
#define MCP_SERVER_URI_TEMPLATE_H

#include <stddef.h>

#include "mcp/common.h"

typedef struct mcp_uri_template mcp_uri_template_t;

/*
 * Parses `text` (copied). Returns NULL with *err filled (rc MCP_EINVAL or
 * MCP_ENOMEM, JSON-RPC code 0) when it is NULL, malformed, or memory runs
 * out.
 */
mcp_uri_template_t *mcp_uri_template_new(const char *text, mcp_error_t *err);

/* Frees a template. NULL-safe. */
void mcp_uri_template_free(mcp_uri_template_t *tpl);

/* The template's text, exactly as given to mcp_uri_template_new(). */
const char *mcp_uri_template_text(const mcp_uri_template_t *tpl);

/*
 * Matches `uri` (uri_len bytes; it need not be NUL-terminated, and a NUL
 * inside never matches) against the template. On MCP_OK, *vars_out is a
 * new object mapping each defined variable's name to its decoded string
 * value. Otherwise *vars_out is NULL and the result is MCP_ENOTFOUND (not an
 * expansion of this template), MCP_ELIMIT (the backtracking budget ran out)
 * or MCP_ENOMEM.
 */
int mcp_uri_template_match(const mcp_uri_template_t *tpl, const char *uri, size_t uri_len,
                           json_t **vars_out);

/*
 * Expands the template with `vars` (borrowed; a JSON object, or NULL for no
 * variables). A value may be a string, a number, a boolean (written as
 * "true"/"false"), an array of those (a list) or an object of those (an
 * associative array). An absent or null variable, an empty array and an
 * object without non-null members are undefined; null members are skipped.
 * On MCP_OK, *out is the URI, NUL-terminated, to be released with free().
 * Fails with MCP_EINVAL (*err says which variable) when `vars` is not an
 * object, a value nests arrays or objects, or a prefix modifier meets an
 * array or object; MCP_ENOMEM otherwise. *out is NULL on failure.
 */
int mcp_uri_template_expand(const mcp_uri_template_t *tpl, const json_t *vars, char **out,
                            mcp_error_t *err);

#endif /* MCP_SERVER_URI_TEMPLATE_H */
