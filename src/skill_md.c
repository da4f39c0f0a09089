/*
 * A skill's SKILL.md frontmatter, read the way the conformance suite reads
 * it (skill_md.h).
 *
 * Three steps. The fences are found as the suite's regular expression
 * finds them. The YAML between them is checked for UTF-8 and handed to
 * libyaml's event parser: events rather than its document loader, so that
 * every limit (depth, aliases, tags) is enforced while the text is read,
 * before anything grows. Each event then builds the JSON value directly,
 * with the scalars resolved by the YAML 1.2 core schema, as the npm `yaml`
 * package does by default.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "lazy_library.h"
#include "mcp/canonical_json.h"
#include "protocol/hex.h"
#include "protocol/json_reader.h"
#include "skill_md.h"

/* The soname the build compiled against (CMakeLists.txt reads it from the
 * library's ELF header), so the table matches the headers. */
#ifndef MCP_YAML_SONAME
#error "MCP_YAML_SONAME must name libyaml's soname"
#endif

/* The largest json_int_t (jansson_config.h picks long long or long). */
#if JSON_INTEGER_IS_LONG_LONG
#define INTEGER_MAX LLONG_MAX
#else
#define INTEGER_MAX LONG_MAX
#endif

/* ---------------------------------------------------------------------- */
/* libyaml, loaded on first use (lazy_library.h)                           */
/* ---------------------------------------------------------------------- */

/* The members take their types from libyaml's own declarations. */
static struct {
    __typeof__(yaml_parser_initialize) *parser_initialize;
    __typeof__(yaml_parser_set_input_string) *set_input_string;
    __typeof__(yaml_parser_set_encoding) *set_encoding;
    __typeof__(yaml_parser_parse) *parse;
    __typeof__(yaml_event_delete) *event_delete;
    __typeof__(yaml_parser_delete) *parser_delete;
} yaml;
static mcp_lazy_once_t yaml_loaded = MCP_LAZY_ONCE_INIT;

static void yaml_load(void)
{
    const mcp_lazy_symbol_t symbols[] = {
        {"yaml_parser_initialize", &yaml.parser_initialize},
        {"yaml_parser_set_input_string", &yaml.set_input_string},
        {"yaml_parser_set_encoding", &yaml.set_encoding},
        {"yaml_parser_parse", &yaml.parse},
        {"yaml_event_delete", &yaml.event_delete},
        {"yaml_parser_delete", &yaml.parser_delete},
    };
    yaml_loaded.rc = mcp_lazy_open(MCP_YAML_SONAME, "reading a SKILL.md frontmatter", symbols,
                                   sizeof symbols / sizeof symbols[0], &yaml_loaded.err);
}

/* ---------------------------------------------------------------------- */
/* Positions and errors                                                    */
/* ---------------------------------------------------------------------- */

/* The YAML starts on the line after the opening fence: its line 0 is the
 * SKILL.md's line 2 (a byte order mark adds no line). */
#define YAML_FIRST_LINE 2

/* A position in the SKILL.md, 1-based, counted in characters. */
typedef struct {
    size_t line, column;
} position_t;

static position_t position_of_mark(yaml_mark_t mark)
{
    return (position_t){mark.line + YAML_FIRST_LINE, mark.column + 1};
}

/* The position of byte `offset` of the YAML, for the errors that come with
 * a byte offset only (bad UTF-8, libyaml's reader). */
static position_t position_of_offset(const char *yaml_text, size_t offset)
{
    position_t at = {YAML_FIRST_LINE, 1};
    for (size_t i = 0; i < offset; i++) {
        if (yaml_text[i] == '\n') {
            at.line++;
            at.column = 1;
        } else if (((unsigned char)yaml_text[i] & 0xC0) != 0x80) {
            at.column++; /* continuation bytes belong to the same character */
        }
    }
    return at;
}

static int fail_at(mcp_error_t *err, position_t at, const char *fmt, ...) MCP_PRINTF(3, 4);

/* MCP_EINVAL with "SKILL.md line L, column C: " before the message. */
static int fail_at(mcp_error_t *err, position_t at, const char *fmt, ...)
{
    char what[MCP_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return mcp_error_set(err, MCP_EINVAL, 0, NULL, "SKILL.md line %zu, column %zu: %s", at.line,
                         at.column, what);
}

static int out_of_memory(mcp_error_t *err)
{
    return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory reading SKILL.md");
}

/* Turns libyaml's report of a failed parse into an error. */
static int parser_failure(const yaml_parser_t *parser, const char *yaml_text, mcp_error_t *err)
{
    const char *problem = parser->problem ? parser->problem : "malformed YAML";
    switch (parser->error) {
    case YAML_MEMORY_ERROR:
        return out_of_memory(err);
    case YAML_READER_ERROR:
        return fail_at(err, position_of_offset(yaml_text, parser->problem_offset), "%s", problem);
    default:
        if (parser->context)
            return fail_at(err, position_of_mark(parser->problem_mark), "%s %s", parser->context,
                           problem);
        return fail_at(err, position_of_mark(parser->problem_mark), "%s", problem);
    }
}

/* ---------------------------------------------------------------------- */
/* UTF-8                                                                   */
/* ---------------------------------------------------------------------- */

/* The offset of the first byte of `s` that does not start a well-formed
 * UTF-8 character (no overlong forms, no surrogates, nothing above
 * U+10FFFF), or `n` when all of `s` is UTF-8. */
static size_t utf8_end(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t more;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            more = 1, cp = c & 0x1F, min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2, cp = c & 0x0F, min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (n - i <= more)
            return i;
        for (size_t k = 1; k <= more; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += more + 1;
    }
    return n;
}

/* How many bytes of `s` an error message quotes, for "%.*s": at most 40,
 * cut before a partial UTF-8 character so that the message stays UTF-8. */
static int quotable(const char *s, size_t n)
{
    return (int)utf8_end((const unsigned char *)s, n > 40 ? 40 : n);
}

/* ---------------------------------------------------------------------- */
/* Fences                                                                  */
/* ---------------------------------------------------------------------- */

/* If a fence line ("---", then spaces or tabs) starts at `p`, the length of
 * its text before the line end; else 0. */
static size_t fence_at(const char *p, const char *end)
{
    if (end - p < 3 || memcmp(p, "---", 3) != 0)
        return 0;
    const char *q = p + 3;
    while (q < end && (*q == ' ' || *q == '\t'))
        q++;
    return (size_t)(q - p);
}

/* The length of the line end at `p`: 2 for "\r\n", 1 for "\n", else 0. */
static size_t line_end_at(const char *p, const char *end)
{
    if (p < end && *p == '\n')
        return 1;
    if (end - p >= 2 && p[0] == '\r' && p[1] == '\n')
        return 2;
    return 0;
}

/* Where split_fences() found the frontmatter. */
typedef struct {
    const char *yaml; /* the text between the fences */
    size_t yaml_len;
    size_t parse_len;   /* how much of it, and of the line end after it, libyaml reads */
    size_t body_offset; /* the first byte after the closing fence's line */
} fences_t;

/*
 * Finds the YAML between the fences, as the conformance suite's
 * expression ^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$) does after a
 * byte order mark is stripped (trailing blanks are allowed on the opening
 * fence too). The closing fence is the first fence line that follows a
 * line end inside the YAML: the line end that ends the opening fence does
 * not count, so "---\n---\n" is no frontmatter at all, while
 * "---\n---\nname: x\n---\n" is the YAML "---\nname: x" (one document
 * with an explicit start), as the suite reads it.
 *
 * The expression leaves out the line end before the closing fence, and
 * the `yaml` package then reads a block scalar on the last line as if that
 * line were ended ("d: |\n  text" is "text\n"); libyaml ends it at the end
 * of the input ("text"). So libyaml is given that line end back whenever
 * the YAML's last line is not empty: the usual
 * "description: |\n  ...\n---" reads the same on both sides.
 */
static int split_fences(const char *text, size_t len, fences_t *out, mcp_error_t *err)
{
    const char *p = text, *end = text + len;
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    size_t fence = fence_at(p, end), eol = fence ? line_end_at(p + fence, end) : 0;
    if (!eol)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "SKILL.md does not begin with a frontmatter: its first line is not "
                             "\"---\"");
    const char *yaml_text = p + fence + eol;

    for (const char *nl = yaml_text; (nl = memchr(nl, '\n', (size_t)(end - nl))); nl++) {
        size_t closing = fence_at(nl + 1, end);
        if (!closing)
            continue;
        const char *after = nl + 1 + closing;
        size_t closing_eol = line_end_at(after, end);
        if (!closing_eol && after != end)
            continue; /* "---" followed by more text, e.g. "----" */
        const char *yaml_end = nl > yaml_text && nl[-1] == '\r' ? nl - 1 : nl;
        out->yaml = yaml_text;
        out->yaml_len = (size_t)(yaml_end - yaml_text);
        bool last_line_empty = yaml_end == yaml_text || yaml_end[-1] == '\n';
        out->parse_len = last_line_empty ? out->yaml_len : (size_t)(nl + 1 - yaml_text);
        out->body_offset = (size_t)(after + closing_eol - text);
        return MCP_OK;
    }
    return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                         "SKILL.md's frontmatter has no closing \"---\" line");
}

/* ---------------------------------------------------------------------- */
/* Scalars: the YAML 1.2 core schema                                       */
/* ---------------------------------------------------------------------- */

/* What a scalar is, by its tag or, untagged and plain, by its text. */
typedef enum {
    SCALAR_NULL,
    SCALAR_BOOL,
    SCALAR_INT,
    SCALAR_FLOAT,
    SCALAR_NONFINITE, /* .inf, .nan: a float JSON cannot carry */
    SCALAR_STRING
} scalar_kind_t;

static bool text_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

static bool text_is_any(const char *s, size_t n, const char *const *words)
{
    for (; *words; words++)
        if (text_is(s, n, *words))
            return true;
    return false;
}

static const char *const NULL_WORDS[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const TRUE_WORDS[] = {"true", "True", "TRUE", NULL};
static const char *const FALSE_WORDS[] = {"false", "False", "FALSE", NULL};
static const char *const NONFINITE_WORDS[] = {
    ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
    ".nan", ".NaN", ".NAN", NULL};

/* Are all of s[from, n), at least one, digits of `base`? */
static bool all_digits(const char *s, size_t from, size_t n, int base)
{
    if (from >= n)
        return false;
    for (size_t i = from; i < n; i++) {
        int digit = mcp_hex_digit((unsigned char)s[i]);
        if (digit < 0 || digit >= base)
            return false;
    }
    return true;
}

/* The base of an integer's text, 0 if it is none: [-+]?[0-9]+ (10),
 * 0o[0-7]+ (8), 0x[0-9a-fA-F]+ (16). */
static int integer_base(const char *s, size_t n)
{
    if (n > 2 && s[0] == '0' && s[1] == 'o')
        return all_digits(s, 2, n, 8) ? 8 : 0;
    if (n > 2 && s[0] == '0' && s[1] == 'x')
        return all_digits(s, 2, n, 16) ? 16 : 0;
    size_t sign = n > 0 && (s[0] == '-' || s[0] == '+');
    return all_digits(s, sign, n, 10) ? 10 : 0;
}

/* The digits at s[*i...], skipped; returns how many. */
static size_t skip_digits(const char *s, size_t n, size_t *i)
{
    size_t from = *i;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9')
        (*i)++;
    return *i - from;
}

/* Is `s` a float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
 * (which every decimal integer is too)? */
static bool is_float_text(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    size_t whole = skip_digits(s, n, &i);
    if (i < n && s[i] == '.') {
        i++;
        if (skip_digits(s, n, &i) == 0 && whole == 0)
            return false;
    } else if (whole == 0) {
        return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        if (skip_digits(s, n, &i) == 0)
            return false;
    }
    return i == n;
}

/* What the core schema reads an untagged plain scalar as. */
static scalar_kind_t plain_kind(const char *s, size_t n)
{
    if (text_is_any(s, n, NULL_WORDS))
        return SCALAR_NULL;
    if (text_is_any(s, n, TRUE_WORDS) || text_is_any(s, n, FALSE_WORDS))
        return SCALAR_BOOL;
    if (integer_base(s, n))
        return SCALAR_INT;
    if (is_float_text(s, n))
        return SCALAR_FLOAT;
    if (text_is_any(s, n, NONFINITE_WORDS))
        return SCALAR_NONFINITE;
    return SCALAR_STRING;
}

/* The integer of text whose integer_base() is `base`; false when it does
 * not fit in a json_int_t. */
static bool integer_value(const char *s, size_t n, int base, json_int_t *out)
{
    size_t i = base == 10 ? 0 : 2;
    bool negative = base == 10 && s[0] == '-';
    if (base == 10 && (s[0] == '-' || s[0] == '+'))
        i = 1;
    /* The magnitude of the most negative value is one more than the
     * maximum. */
    uint64_t limit = (uint64_t)INTEGER_MAX + negative, magnitude = 0;
    for (; i < n; i++) {
        uint64_t digit = (uint64_t)mcp_hex_digit((unsigned char)s[i]); /* checked digits */
        if (magnitude > (limit - digit) / (uint64_t)base)
            return false;
        magnitude = magnitude * (uint64_t)base + digit;
    }
    if (!negative)
        *out = (json_int_t)magnitude;
    else
        *out = magnitude == limit ? -INTEGER_MAX - 1 : -(json_int_t)magnitude;
    return true;
}


/* The kind a tag asks for; false for a tag outside the core schema.
 * Untagged scalars have tag NULL; "!", the non-specific tag, makes a
 * scalar a string (YAML 1.2, 6.9.1). */
static bool tag_kind(const char *tag, bool plain, const char *s, size_t n, scalar_kind_t *kind)
{
    static const struct {
        const char *tag;
        scalar_kind_t kind;
    } core[] = {
        {"tag:yaml.org,2002:str", SCALAR_STRING}, {"tag:yaml.org,2002:null", SCALAR_NULL},
        {"tag:yaml.org,2002:bool", SCALAR_BOOL},  {"tag:yaml.org,2002:int", SCALAR_INT},
        {"tag:yaml.org,2002:float", SCALAR_FLOAT},
    };
    if (!tag) {
        *kind = plain ? plain_kind(s, n) : SCALAR_STRING;
        return true;
    }
    if (strcmp(tag, "!") == 0) {
        *kind = SCALAR_STRING;
        return true;
    }
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++) {
        if (strcmp(tag, core[i].tag) == 0) {
            *kind = core[i].kind;
            return true;
        }
    }
    return false;
}

/* Does the text fit the kind its tag asks for? A !!float may be written
 * as a decimal integer ("!!float 1" is 1.0). */
static bool text_fits(const char *s, size_t n, scalar_kind_t kind)
{
    switch (kind) {
    case SCALAR_NULL:
        return text_is_any(s, n, NULL_WORDS);
    case SCALAR_BOOL:
        return text_is_any(s, n, TRUE_WORDS) || text_is_any(s, n, FALSE_WORDS);
    case SCALAR_INT:
        return integer_base(s, n) != 0;
    case SCALAR_FLOAT:
        return is_float_text(s, n) || text_is_any(s, n, NONFINITE_WORDS);
    default:
        return true;
    }
}

/* The JSON value of a scalar event. */
static int scalar_value(const yaml_event_t *event, json_t **out, mcp_error_t *err)
{
    const char *s = (const char *)event->data.scalar.value;
    size_t n = event->data.scalar.length;
    const char *tag = (const char *)event->data.scalar.tag;
    position_t at = position_of_mark(event->start_mark);
    bool plain = event->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;

    scalar_kind_t kind;
    if (!tag_kind(tag, plain, s, n, &kind))
        return fail_at(err, at, "the tag %.*s is not one of the YAML core schema's",
                       quotable(tag, strlen(tag)), tag);
    if (!text_fits(s, n, kind))
        return fail_at(err, at, "\"%.*s\" is not what its tag %s says", quotable(s, n), s, tag);
    if (kind == SCALAR_FLOAT && !is_float_text(s, n))
        kind = SCALAR_NONFINITE;

    json_int_t integer;
    double real;
    int rc;
    switch (kind) {
    case SCALAR_NULL:
        *out = json_null();
        break;
    case SCALAR_BOOL:
        *out = json_boolean(text_is_any(s, n, TRUE_WORDS));
        break;
    case SCALAR_INT:
        if (!integer_value(s, n, integer_base(s, n), &integer))
            return fail_at(err, at, "the integer %.*s does not fit in 64 bits", quotable(s, n),
                           s);
        *out = json_integer(integer);
        break;
    case SCALAR_FLOAT:
        if ((rc = mcp_real_from_text(s, n, &real)) == MCP_ENOMEM)
            return out_of_memory(err);
        if (rc != MCP_OK)
            return fail_at(err, at, "the number %.*s is too large for JSON", quotable(s, n), s);
        *out = json_real(real);
        break;
    case SCALAR_NONFINITE:
        return fail_at(err, at, "%.*s: JSON has no infinities or NaN", (int)n, s);
    case SCALAR_STRING:
        /* The text came through libyaml from checked UTF-8; "\0" escapes
         * are kept (jansson strings carry a length). */
        *out = json_stringn(s, n);
        break;
    }
    return *out ? MCP_OK : out_of_memory(err);
}

/* A mapping key as text, the way the npm `yaml` package turns one into a
 * JavaScript object key: a string stays itself, null becomes "", booleans
 * "true"/"false" and numbers their ECMAScript form ("1.0" and "0x1" are
 * the keys "1"). Returns a new string, or NULL without memory. */
static json_t *key_text(json_t *key)
{
    char number[32];
    switch (json_typeof(key)) {
    case JSON_STRING:
        return json_incref(key);
    case JSON_NULL:
        return json_string("");
    case JSON_TRUE:
        return json_string("true");
    case JSON_FALSE:
        return json_string("false");
    case JSON_INTEGER:
        snprintf(number, sizeof number, "%" JSON_INTEGER_FORMAT, json_integer_value(key));
        return json_string(number);
    default: /* a real: finite, so it formats */
        mcp_format_es_number(json_real_value(key), number, sizeof number);
        return json_string(number);
    }
}

/* ---------------------------------------------------------------------- */
/* Building the value from events                                          */
/* ---------------------------------------------------------------------- */

/* A mapping or sequence still open: its value (held by its parent, or the
 * root) and, for a mapping, the key read that waits for its value. */
typedef struct {
    json_t *node;
    json_t *key; /* owned; NULL when a key comes next */
} open_node_t;

typedef struct {
    open_node_t open[MCP_SKILL_MD_MAX_DEPTH];
    size_t depth;
    json_t *root;
    size_t documents;
    mcp_error_t *err;
} builder_t;

static bool key_comes_next(const builder_t *b)
{
    return b->depth > 0 && json_is_object(b->open[b->depth - 1].node) &&
           !b->open[b->depth - 1].key;
}

/* Puts a finished value (or a new, still empty, collection) in its place. */
static int attach(builder_t *b, json_t *value_new)
{
    if (b->depth == 0) {
        b->root = value_new;
        return MCP_OK;
    }
    open_node_t *parent = &b->open[b->depth - 1];
    int failed;
    if (parent->key) {
        failed = json_object_set_new(parent->node, json_string_value(parent->key), value_new);
        json_decref(parent->key);
        parent->key = NULL;
    } else {
        failed = json_array_append_new(parent->node, value_new);
    }
    return failed ? out_of_memory(b->err) : MCP_OK;
}

static int take_key(builder_t *b, const yaml_event_t *event)
{
    position_t at = position_of_mark(event->start_mark);
    json_t *value = NULL;
    int rc = scalar_value(event, &value, b->err);
    if (rc != MCP_OK)
        return rc;
    json_t *key = key_text(value);
    json_decref(value);
    if (!key)
        return out_of_memory(b->err);
    /* jansson's object API takes keys as C strings. */
    if (strlen(json_string_value(key)) != json_string_length(key)) {
        json_decref(key);
        return fail_at(b->err, at, "a key holds a NUL character");
    }
    open_node_t *mapping = &b->open[b->depth - 1];
    if (json_object_get(mapping->node, json_string_value(key))) {
        rc = fail_at(b->err, at, "the key \"%.*s\" appears twice",
                     quotable(json_string_value(key), json_string_length(key)),
                     json_string_value(key));
        json_decref(key);
        return rc;
    }
    mapping->key = key;
    return MCP_OK;
}

static int open_collection(builder_t *b, const yaml_event_t *event)
{
    position_t at = position_of_mark(event->start_mark);
    bool mapping = event->type == YAML_MAPPING_START_EVENT;
    const char *tag = (const char *)(mapping ? event->data.mapping_start.tag
                                             : event->data.sequence_start.tag);
    const char *own_tag = mapping ? "tag:yaml.org,2002:map" : "tag:yaml.org,2002:seq";
    if (tag && strcmp(tag, own_tag) != 0 && strcmp(tag, "!") != 0)
        return fail_at(b->err, at, "the tag %.*s does not fit a %s", quotable(tag, strlen(tag)),
                       tag, mapping ? "mapping" : "sequence");
    if (b->depth == MCP_SKILL_MD_MAX_DEPTH)
        return fail_at(b->err, at, "more than %d mappings and sequences nested",
                       MCP_SKILL_MD_MAX_DEPTH);
    json_t *node = mapping ? json_object() : json_array();
    if (!node)
        return out_of_memory(b->err);
    int rc = attach(b, node);
    if (rc == MCP_OK)
        b->open[b->depth++] = (open_node_t){node, NULL};
    return rc;
}

/* Takes one event into the value being built. */
static int take_event(builder_t *b, const yaml_event_t *event)
{
    position_t at = position_of_mark(event->start_mark);
    const yaml_char_t *anchor = NULL;
    switch (event->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (b->documents++ > 0)
            return fail_at(b->err, at, "a second YAML document");
        return MCP_OK;
    case YAML_ALIAS_EVENT:
        return fail_at(b->err, at, "the alias *%s: aliases are not allowed",
                       (const char *)event->data.alias.anchor);
    case YAML_SCALAR_EVENT:
        anchor = event->data.scalar.anchor;
        break;
    case YAML_SEQUENCE_START_EVENT:
        anchor = event->data.sequence_start.anchor;
        break;
    case YAML_MAPPING_START_EVENT:
        anchor = event->data.mapping_start.anchor;
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        b->depth--;
        return MCP_OK;
    default: /* stream start and end, document end */
        return MCP_OK;
    }

    /* A node: a scalar, or the start of a mapping or sequence. */
    if (anchor)
        return fail_at(b->err, at, "the anchor &%s: anchors are not allowed",
                       (const char *)anchor);
    if (b->depth == 0 && event->type != YAML_MAPPING_START_EVENT)
        return fail_at(b->err, at, "the frontmatter is a %s, not a mapping",
                       event->type == YAML_SCALAR_EVENT ? "scalar" : "sequence");
    if (key_comes_next(b)) {
        if (event->type != YAML_SCALAR_EVENT)
            return fail_at(b->err, at, "a key is a %s; keys must be scalars",
                           event->type == YAML_MAPPING_START_EVENT ? "mapping" : "sequence");
        return take_key(b, event);
    }
    if (event->type != YAML_SCALAR_EVENT)
        return open_collection(b, event);
    json_t *value = NULL;
    int rc = scalar_value(event, &value, b->err);
    return rc == MCP_OK ? attach(b, value) : rc;
}

/* Frees what a failed build leaves: the root holds every attached value,
 * the open mappings their pending keys. */
static void builder_discard(builder_t *b)
{
    for (size_t i = 0; i < b->depth; i++)
        json_decref(b->open[i].key);
    json_decref(b->root);
}

static int parse_yaml(const char *yaml_text, size_t len, json_t **out, mcp_error_t *err)
{
    yaml_parser_t parser;
    if (!yaml.parser_initialize(&parser))
        return out_of_memory(err);
    yaml.set_input_string(&parser, (const unsigned char *)yaml_text, len);
    yaml.set_encoding(&parser, YAML_UTF8_ENCODING);

    builder_t b = {.err = err};
    int rc = MCP_OK;
    for (bool ended = false; rc == MCP_OK && !ended;) {
        yaml_event_t event;
        if (!yaml.parse(&parser, &event)) {
            rc = parser_failure(&parser, yaml_text, err);
            break;
        }
        ended = event.type == YAML_STREAM_END_EVENT;
        rc = take_event(&b, &event);
        yaml.event_delete(&event);
    }
    yaml.parser_delete(&parser);

    if (rc == MCP_OK && !b.root)
        rc = mcp_error_set(err, MCP_EINVAL, 0, NULL,
                           "SKILL.md's frontmatter is empty: it must be a YAML mapping");
    if (rc != MCP_OK) {
        builder_discard(&b);
        return rc;
    }
    *out = b.root;
    return MCP_OK;
}

int mcp_skill_md_frontmatter(const char *text, size_t len, json_t **frontmatter_out,
                             size_t *body_offset_out, mcp_error_t *err)
{
    if (!text || !frontmatter_out)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "no SKILL.md text or result pointer");
    *frontmatter_out = NULL;

    fences_t fences = {0};
    int rc = split_fences(text, len, &fences, err);
    if (rc != MCP_OK)
        return rc;
    if (fences.yaml_len > MCP_SKILL_MD_MAX_FRONTMATTER)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "SKILL.md's frontmatter is %zu bytes, more than the %d allowed",
                             fences.yaml_len, MCP_SKILL_MD_MAX_FRONTMATTER);
    size_t valid = utf8_end((const unsigned char *)fences.yaml, fences.yaml_len);
    if (valid != fences.yaml_len)
        return fail_at(err, position_of_offset(fences.yaml, valid), "the text is not UTF-8");

    if ((rc = mcp_lazy_once(&yaml_loaded, yaml_load, err)) != MCP_OK)
        return rc;
    if ((rc = parse_yaml(fences.yaml, fences.parse_len, frontmatter_out, err)) != MCP_OK)
        return rc;
    if (body_offset_out)
        *body_offset_out = fences.body_offset;
    return MCP_OK;
}

/* ---------------------------------------------------------------------- */
/* Equality                                                                */
/* ---------------------------------------------------------------------- */

/* Is the real `r` exactly the integer `i`? (Converting i to double would
 * round above 2^53.) */
static bool real_is_integer(double r, json_int_t i)
{
    /* -2^63 <= r < 2^63 (both bounds exact doubles), so that the
     * conversion is defined; then r must have no fraction to lose. */
    if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0))
        return false;
    long long whole = (long long)r;
    return (double)whole == r && whole == (long long)i;
}

bool mcp_skill_md_frontmatter_equal(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        if (json_is_real(a) && json_is_real(b))
            return json_real_value(a) == json_real_value(b);
        return json_is_integer(a) ? real_is_integer(json_real_value(b), json_integer_value(a))
                                  : real_is_integer(json_real_value(a), json_integer_value(b));
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!mcp_skill_md_frontmatter_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *key;
        json_t *value;
        /* jansson's iteration macro takes a non-const object; it only reads. */
        json_object_foreach ((json_t *)a, key, value)
            if (!mcp_skill_md_frontmatter_equal(value, json_object_get(b, key)))
                return false;
        return true;
    }
    default: /* true, false, null */
        return true;
    }
}

/* ---------------------------------------------------------------------- */
/* Names                                                                   */
/* ---------------------------------------------------------------------- */

bool mcp_skill_name_valid(const char *name)
{
    if (!name)
        return false;
    size_t len = strlen(name);
    if (len < 1 || len > 64 || name[0] == '-' || name[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool lower = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
        if (!lower && !digit && c != '-')
            return false;
        if (c == '-' && name[i + 1] == '-')
            return false;
    }
    return true;
}
