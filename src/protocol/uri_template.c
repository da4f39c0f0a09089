/*
 * URI templates, RFC 6570 (contract and matching rules in uri_template.h).
 *
 * A template is parsed once into parts: literal text and expressions. An
 * expression has an operator, whose rules come from the table of RFC 6570
 * appendix A, and a list of variable specifications. Expansion walks the
 * parts and writes; matching walks them against a URI, backtracking over
 * where each expression ends.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/hex.h"
#include "protocol/uri_template.h"

/* ------------------------------------------------------------------------
 * Characters
 * ------------------------------------------------------------------------ */

static bool is_alpha(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static bool is_hex(unsigned char c)
{
    return is_digit(c) || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
}

/* RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~" */
static bool is_unreserved(unsigned char c)
{
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* RFC 3986 reserved: gen-delims and sub-delims */
static bool is_reserved(unsigned char c)
{
    return c != '\0' && strchr(":/?#[]@!$&'()*+,;=", c) != NULL;
}

/* An ASCII character RFC 6570 allows in literal text (section 2.1). */
static bool is_literal_char(unsigned char c)
{
    return c > 0x20 && c < 0x7F && strchr("\"%'<>\\^`{|}", c) == NULL;
}

/*
 * The length of the well-formed UTF-8 character at s (at most `avail`
 * bytes), or 0 when the bytes are not one: overlong forms, surrogates and
 * code points above U+10FFFF are refused.
 */
static size_t utf8_char_length(const unsigned char *s, size_t avail)
{
    if (avail == 0)
        return 0;
    if (s[0] < 0x80)
        return 1;
    size_t n;
    uint32_t cp;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        n = 2;
        cp = s[0] & 0x1F;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        n = 3;
        cp = s[0] & 0x0F;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        n = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static bool utf8_valid(const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t n = utf8_char_length((const unsigned char *)s + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

/* ------------------------------------------------------------------------
 * The parsed template
 * ------------------------------------------------------------------------ */

/* How an operator expands (RFC 6570 appendix A). */
struct operator_rules {
    char op;            /* the operator character; '\0' for simple expansion */
    char first;         /* written before the first defined value; '\0': none */
    char sep;           /* written between values */
    bool named;         /* values are written as name=value */
    bool empty_with_eq; /* a named empty value is "name=" ('?', '&'), not "name" */
    bool reserved;      /* reserved characters pass through unencoded */
};

static const struct operator_rules OPERATORS[] = {
    {'\0', '\0', ',', false, false, false},
    {'+', '\0', ',', false, false, true},
    {'#', '#', ',', false, false, true},
    {'.', '.', '.', false, false, false},
    {'/', '/', '/', false, false, false},
    {';', ';', ';', true, false, false},
    {'?', '?', '&', true, true, false},
    {'&', '&', '&', true, true, false},
};

struct varspec {
    const char *name; /* NUL-terminated, as written (pct-encoding kept) */
    size_t name_len;
    int prefix;       /* the :N modifier, or 0 */
    bool explode;     /* the * modifier */
};

struct part {
    /* Literal text (pointing into the template's text), or NULL for an
     * expression. */
    const char *literal;
    size_t literal_len;
    /* Expressions only. */
    const struct operator_rules *op;
    size_t first_var; /* index into mcp_uri_template.vars */
    size_t n_vars;
    size_t ordinal;   /* this expression's index among expressions */
};

struct mcp_uri_template {
    char *text;
    char *names; /* storage of every varspec's NUL-terminated name */
    struct part *parts;
    size_t n_parts;
    struct varspec *vars;
    size_t n_vars;
    size_t n_expressions;
    size_t max_vars_per_expression;
};

static const struct varspec *var_of(const mcp_uri_template_t *tpl, const struct part *part,
                                    size_t i)
{
    return &tpl->vars[part->first_var + i];
}

/* ------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------ */

struct parser {
    mcp_uri_template_t *tpl;
    const char *text;
    size_t text_len;
    size_t names_used;
    size_t parts_capacity;
    size_t vars_capacity;
    mcp_error_t *err;
};

static int syntax_error(struct parser *p, size_t offset, const char *what)
{
    return mcp_error_set(p->err, MCP_EINVAL, 0, NULL, "invalid URI template: %s at offset %zu",
                         what, offset);
}

static int out_of_memory(struct parser *p)
{
    return mcp_error_set(p->err, MCP_ENOMEM, 0, NULL, "out of memory parsing a URI template");
}

/* Grows *array (of `size`-byte items) to hold at least count + 1 items. */
static bool reserve_one(void **array, size_t *capacity, size_t count, size_t size)
{
    if (count < *capacity)
        return true;
    size_t capacity_new = *capacity ? *capacity * 2 : 8;
    if (capacity_new > SIZE_MAX / size)
        return false;
    void *grown = realloc(*array, capacity_new * size);
    if (!grown)
        return false;
    *array = grown;
    *capacity = capacity_new;
    return true;
}

static struct part *add_part(struct parser *p)
{
    mcp_uri_template_t *tpl = p->tpl;
    if (!reserve_one((void **)&tpl->parts, &p->parts_capacity, tpl->n_parts, sizeof *tpl->parts))
        return NULL;
    struct part *part = &tpl->parts[tpl->n_parts++];
    memset(part, 0, sizeof *part);
    return part;
}

static int add_literal(struct parser *p, size_t start, size_t end)
{
    if (end == start)
        return MCP_OK;
    struct part *part = add_part(p);
    if (!part)
        return out_of_memory(p);
    part->literal = p->tpl->text + start;
    part->literal_len = end - start;
    return MCP_OK;
}

/* varchar = ALPHA / DIGIT / "_" / pct-encoded; advances *i past one. */
static bool scan_varchar(const char *s, size_t *i)
{
    unsigned char c = (unsigned char)s[*i];
    if (is_alpha(c) || is_digit(c) || c == '_') {
        *i += 1;
        return true;
    }
    if (c == '%' && is_hex((unsigned char)s[*i + 1]) && is_hex((unsigned char)s[*i + 2])) {
        *i += 3;
        return true;
    }
    return false;
}

/* varname = varchar *( ["."] varchar ); advances *i past it. */
static bool scan_varname(const char *s, size_t *i)
{
    if (!scan_varchar(s, i))
        return false;
    for (;;) {
        size_t next = *i + (s[*i] == '.');
        if (!scan_varchar(s, &next))
            return s[*i] != '.'; /* a name cannot end with '.' */
        *i = next;
    }
}

static int add_varspec(struct parser *p, size_t name_start, size_t name_end, int prefix,
                       bool explode)
{
    mcp_uri_template_t *tpl = p->tpl;
    if (!reserve_one((void **)&tpl->vars, &p->vars_capacity, tpl->n_vars, sizeof *tpl->vars))
        return out_of_memory(p);
    size_t len = name_end - name_start;
    char *name = tpl->names + p->names_used;
    memcpy(name, p->text + name_start, len);
    name[len] = '\0';
    p->names_used += len + 1;
    tpl->vars[tpl->n_vars++] = (struct varspec){name, len, prefix, explode};
    return MCP_OK;
}

static const struct operator_rules *operator_for(char c)
{
    for (size_t i = 1; i < sizeof OPERATORS / sizeof OPERATORS[0]; i++)
        if (OPERATORS[i].op == c)
            return &OPERATORS[i];
    return NULL;
}

/* Parses the expression whose '{' is at `open`; *after receives the offset
 * just past its '}'. */
static int parse_expression(struct parser *p, size_t open, size_t *after)
{
    const char *s = p->text;
    size_t i = open + 1;

    if (s[i] == '}')
        return syntax_error(p, open, "empty expression");
    if (s[i] != '\0' && strchr("=,!@|", s[i]))
        return syntax_error(p, i, "operator reserved for future extensions");
    const struct operator_rules *op = operator_for(s[i]);
    if (op)
        i++;
    else
        op = &OPERATORS[0];

    struct part *part = add_part(p);
    if (!part)
        return out_of_memory(p);
    part->op = op;
    part->first_var = p->tpl->n_vars;
    part->ordinal = p->tpl->n_expressions++;

    for (;;) {
        size_t name_start = i;
        if (!scan_varname(s, &i))
            return s[i] == '\0' ? syntax_error(p, open, "unterminated expression")
                                : syntax_error(p, i, "invalid variable name");
        size_t name_end = i;
        int prefix = 0;
        bool explode = false;
        if (s[i] == ':') {
            size_t digits = ++i;
            if (s[i] < '1' || s[i] > '9')
                return syntax_error(p, i, "prefix length must be 1-9999");
            while (is_digit((unsigned char)s[i]) && i - digits < 4)
                prefix = prefix * 10 + (s[i++] - '0');
            if (is_digit((unsigned char)s[i]))
                return syntax_error(p, digits, "prefix length must be 1-9999");
        } else if (s[i] == '*') {
            explode = true;
            i++;
        }
        int rc = add_varspec(p, name_start, name_end, prefix, explode);
        if (rc != MCP_OK)
            return rc;
        part->n_vars++;

        if (s[i] == ',') {
            i++;
        } else if (s[i] == '}') {
            if (part->n_vars > p->tpl->max_vars_per_expression)
                p->tpl->max_vars_per_expression = part->n_vars;
            *after = i + 1;
            return MCP_OK;
        } else if (s[i] == '\0') {
            return syntax_error(p, open, "unterminated expression");
        } else {
            return syntax_error(p, i, "expected ',' or '}' after a variable");
        }
    }
}

static int parse_template(struct parser *p)
{
    const unsigned char *s = (const unsigned char *)p->text;
    size_t i = 0, literal_start = 0;

    while (s[i]) {
        if (s[i] == '{') {
            int rc = add_literal(p, literal_start, i);
            if (rc == MCP_OK)
                rc = parse_expression(p, i, &i);
            if (rc != MCP_OK)
                return rc;
            literal_start = i;
        } else if (s[i] == '}') {
            return syntax_error(p, i, "'}' without a matching '{'");
        } else if (s[i] == '%') {
            if (!is_hex(s[i + 1]) || !is_hex(s[i + 2]))
                return syntax_error(p, i, "'%' not followed by two hex digits");
            i += 3;
        } else if (s[i] >= 0x80) {
            size_t n = utf8_char_length(s + i, p->text_len - i);
            if (n == 0)
                return syntax_error(p, i, "invalid UTF-8");
            i += n;
        } else if (is_literal_char(s[i])) {
            i++;
        } else {
            return syntax_error(p, i, "character not allowed in a URI template");
        }
    }
    return add_literal(p, literal_start, i);
}

mcp_uri_template_t *mcp_uri_template_new(const char *text, mcp_error_t *err)
{
    if (!text) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "invalid URI template: NULL");
        return NULL;
    }
    size_t len = strlen(text);
    mcp_uri_template_t *tpl = calloc(1, sizeof *tpl);
    struct parser p = {.tpl = tpl, .text = text, .err = err};
    if (!tpl) {
        out_of_memory(&p);
        return NULL;
    }
    /* Every name is followed in the text by at least one character (',',
     * '}', ':' or '*') that its NUL terminator can take the place of. */
    tpl->text = malloc(len + 1);
    tpl->names = malloc(len + 1);
    if (!tpl->text || !tpl->names) {
        out_of_memory(&p);
        mcp_uri_template_free(tpl);
        return NULL;
    }
    memcpy(tpl->text, text, len + 1);
    p.text = tpl->text;
    p.text_len = len;
    if (parse_template(&p) != MCP_OK) {
        mcp_uri_template_free(tpl);
        return NULL;
    }
    return tpl;
}

void mcp_uri_template_free(mcp_uri_template_t *tpl)
{
    if (!tpl)
        return;
    free(tpl->text);
    free(tpl->names);
    free(tpl->parts);
    free(tpl->vars);
    free(tpl);
}

const char *mcp_uri_template_text(const mcp_uri_template_t *tpl)
{
    return tpl->text;
}

/* ------------------------------------------------------------------------
 * Expansion
 * ------------------------------------------------------------------------ */

/* A growing output string. A failed allocation is remembered and checked
 * once at the end, so that writers need not check every append. */
struct buffer {
    char *data;
    size_t len;
    size_t capacity;
    bool failed;
};

static void put(struct buffer *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->capacity - b->len <= n) {
        size_t capacity = b->capacity ? b->capacity : 64;
        while (capacity - b->len <= n) {
            if (capacity > SIZE_MAX / 2) {
                b->failed = true;
                return;
            }
            capacity *= 2;
        }
        char *grown = realloc(b->data, capacity);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->data = grown;
        b->capacity = capacity;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void put_char(struct buffer *b, char c)
{
    put(b, &c, 1);
}

/* Writes s, percent-encoding every byte that may not appear as is: all but
 * unreserved characters, or, when `reserved`, all but unreserved, reserved
 * and existing pct-encoded triples (RFC 6570 section 3.2.1). */
static void put_encoded(struct buffer *b, const char *s, size_t n, bool reserved)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool pct_triple = c == '%' && i + 2 < n && is_hex((unsigned char)s[i + 1]) &&
                          is_hex((unsigned char)s[i + 2]);
        if (is_unreserved(c) || (reserved && (is_reserved(c) || pct_triple))) {
            put_char(b, (char)c);
        } else {
            char triple[3] = {'%', hex[c >> 4], hex[c & 15]};
            put(b, triple, 3);
        }
    }
}

/* Literal text: copied, except non-ASCII characters, which are not allowed
 * in a URI and are written percent-encoded (RFC 6570 section 3.1). */
static void put_literal(struct buffer *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] >= 0x80)
            put_encoded(b, s + i, 1, false);
        else
            put_char(b, s[i]);
    }
}

/* The text of a scalar value; `scratch` holds it for numbers. */
struct scalar {
    const char *text;
    size_t len;
    char scratch[32];
};

static bool is_scalar(const json_t *v)
{
    return json_is_string(v) || json_is_number(v) || json_is_boolean(v);
}

static void scalar_text(const json_t *v, struct scalar *out)
{
    if (json_is_string(v)) {
        out->text = json_string_value(v);
        out->len = json_string_length(v);
        return;
    }
    if (json_is_boolean(v)) {
        out->text = json_is_true(v) ? "true" : "false";
        out->len = strlen(out->text);
        return;
    }
    if (json_is_integer(v)) {
        snprintf(out->scratch, sizeof out->scratch, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
    } else {
        /* The shortest decimal form that reads back as the same double. */
        double d = json_real_value(v);
        for (int precision = 15; precision <= 17; precision++) {
            snprintf(out->scratch, sizeof out->scratch, "%.*g", precision, d);
            if (strtod(out->scratch, NULL) == d)
                break;
        }
    }
    out->text = out->scratch;
    out->len = strlen(out->scratch);
}

/* The byte length of the first `max_chars` characters of UTF-8 text. */
static size_t utf8_prefix_length(const char *s, size_t len, int max_chars)
{
    size_t i = 0;
    for (int chars = 0; i < len && chars < max_chars; chars++) {
        i++;
        while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

/* name=value, name= or name, as the operator writes a named value. */
static void put_named_value(struct buffer *b, const struct operator_rules *op, const char *name,
                            size_t name_len, bool encode_name, const struct scalar *value)
{
    if (encode_name)
        put_encoded(b, name, name_len, op->reserved);
    else
        put(b, name, name_len);
    if (value->len > 0 || op->empty_with_eq)
        put_char(b, '=');
    put_encoded(b, value->text, value->len, op->reserved);
}

/* One defined member of a list (key NULL) or an associative array. */
struct member {
    const char *key;
    size_t key_len;
    const json_t *value;
};

/* Iterates over the non-null members of an array or object, in order. */
struct member_cursor {
    const json_t *composite;
    size_t index; /* arrays */
    void *iter;   /* objects */
};

static struct member_cursor members_of(const json_t *composite)
{
    struct member_cursor c = {composite, 0, NULL};
    if (json_is_object(composite))
        c.iter = json_object_iter((json_t *)composite);
    return c;
}

static bool next_member(struct member_cursor *c, struct member *out)
{
    for (;;) {
        if (json_is_array(c->composite)) {
            if (c->index >= json_array_size(c->composite))
                return false;
            *out = (struct member){NULL, 0, json_array_get(c->composite, c->index++)};
        } else {
            if (!c->iter)
                return false;
            *out = (struct member){json_object_iter_key(c->iter), json_object_iter_key_len(c->iter),
                                   json_object_iter_value(c->iter)};
            c->iter = json_object_iter_next((json_t *)c->composite, c->iter);
        }
        if (!json_is_null(out->value))
            return true;
    }
}

/* RFC 6570 section 2.3: null, an empty list and a list or associative
 * array without defined members are undefined. */
static bool is_undefined(const json_t *v)
{
    if (!v || json_is_null(v))
        return true;
    if (json_is_array(v) || json_is_object(v)) {
        struct member_cursor cursor = members_of(v);
        struct member m;
        return !next_member(&cursor, &m);
    }
    return false;
}

/*
 * A list or associative array (RFC 6570 appendix A). Unexploded, members
 * are joined with ',' (an object as key,value,...) behind one name=;
 * exploded, each member is an item of its own, separated like variables,
 * named after the variable (lists) or its key (objects).
 */
static int expand_composite(struct buffer *b, const struct operator_rules *op,
                            const struct varspec *v, const json_t *value, mcp_error_t *err)
{
    struct member_cursor cursor = members_of(value);
    struct member m;
    struct scalar text;
    size_t value_start = 0;
    bool first = true;

    if (v->prefix)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "URI template variable '%s': a prefix modifier does not apply "
                             "to a list or an object",
                             v->name);
    if (!v->explode && op->named) {
        put(b, v->name, v->name_len);
        put_char(b, '=');
        value_start = b->len;
    }
    while (next_member(&cursor, &m)) {
        if (!is_scalar(m.value))
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "URI template variable '%s': members must be strings, numbers "
                                 "or booleans",
                                 v->name);
        scalar_text(m.value, &text);
        if (!first)
            put_char(b, v->explode ? op->sep : ',');
        first = false;

        if (v->explode && op->named) {
            if (m.key)
                put_named_value(b, op, m.key, m.key_len, true, &text);
            else
                put_named_value(b, op, v->name, v->name_len, false, &text);
            continue;
        }
        if (m.key) {
            put_encoded(b, m.key, m.key_len, op->reserved);
            put_char(b, v->explode ? '=' : ',');
        }
        put_encoded(b, text.text, text.len, op->reserved);
    }
    /* A list of one empty string is an empty value: ";list", not ";list=". */
    if (!v->explode && op->named && !op->empty_with_eq && !b->failed && b->len == value_start)
        b->data[--b->len] = '\0';
    return MCP_OK;
}

static int expand_expression(struct buffer *b, const mcp_uri_template_t *tpl,
                             const struct part *part, const json_t *vars, mcp_error_t *err)
{
    const struct operator_rules *op = part->op;
    bool first = true;

    for (size_t i = 0; i < part->n_vars; i++) {
        const struct varspec *v = var_of(tpl, part, i);
        const json_t *value = vars ? json_object_getn(vars, v->name, v->name_len) : NULL;
        if (is_undefined(value))
            continue;
        if (!first || op->first)
            put_char(b, first ? op->first : op->sep);
        first = false;

        if (json_is_array(value) || json_is_object(value)) {
            int rc = expand_composite(b, op, v, value, err);
            if (rc != MCP_OK)
                return rc;
            continue;
        }
        if (!is_scalar(value))
            return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                                 "URI template variable '%s' has an unsupported type", v->name);
        struct scalar text;
        scalar_text(value, &text);
        if (v->prefix)
            text.len = utf8_prefix_length(text.text, text.len, v->prefix);
        if (op->named)
            put_named_value(b, op, v->name, v->name_len, false, &text);
        else
            put_encoded(b, text.text, text.len, op->reserved);
    }
    return MCP_OK;
}

int mcp_uri_template_expand(const mcp_uri_template_t *tpl, const json_t *vars, char **out,
                            mcp_error_t *err)
{
    struct buffer b = {0};
    int rc = MCP_OK;

    *out = NULL;
    if (vars && !json_is_object(vars))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "URI template variables must be a JSON object");
    put(&b, "", 0); /* an empty expansion is still a string */
    for (size_t i = 0; i < tpl->n_parts && rc == MCP_OK; i++) {
        const struct part *part = &tpl->parts[i];
        if (part->literal)
            put_literal(&b, part->literal, part->literal_len);
        else
            rc = expand_expression(&b, tpl, part, vars, err);
    }
    if (rc == MCP_OK && b.failed)
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory expanding a URI template");
    if (rc != MCP_OK) {
        free(b.data);
        return rc;
    }
    *out = b.data;
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Matching
 *
 * The matcher walks the parts left to right. A literal either matches at
 * the current position or not. An expression chooses where it ends: first
 * its shortest possible span, then ever longer ones up to the longest its
 * characters allow (its "extent"); when the rest of the template fails to
 * match, the matcher backtracks to the most recent expression and tries
 * its next longer span. Shortest-first lets a literal or a following
 * expression claim what it can: "{+path}{?q}" leaves the query to {?q}.
 *
 * Two things keep this from going exponential. A failed (expression,
 * start position) pair is recorded in a bitmap and never explored again,
 * which makes the search polynomial; and every unit of work is charged to
 * a budget linear in the URI's length, which bounds even the polynomial.
 * ------------------------------------------------------------------------ */

/* Work allowed per match: a fixed allowance plus some per input byte. A
 * template without adjacent ambiguous expressions needs a few units per
 * byte. */
#define MATCH_BUDGET_BASE (1u << 20)
#define MATCH_BUDGET_PER_BYTE 16u
/* Largest failure bitmap worth allocating; beyond it, only the budget
 * bounds the search. */
#define MATCH_MEMO_MAX_BYTES (1u << 20)

#define NO_MATCH SIZE_MAX

struct matcher {
    const mcp_uri_template_t *tpl;
    const unsigned char *uri;
    size_t len;
    /* Per part, for expressions: where the span starts, the end being
     * tried, the next end to try and the farthest possible end. */
    size_t *start;
    size_t *end;
    size_t *next;
    size_t *extent;
    unsigned char *memo; /* bit (ordinal * (len + 1) + pos): failed there */
    bool *seen;          /* scratch for named expressions */
    size_t budget;
};

static bool spend(struct matcher *m, size_t cost)
{
    if (cost > m->budget) {
        m->budget = 0;
        return false;
    }
    m->budget -= cost;
    return true;
}

static size_t memo_bit(const struct matcher *m, const struct part *part, size_t pos)
{
    return part->ordinal * (m->len + 1) + pos;
}

static bool memo_failed(const struct matcher *m, const struct part *part, size_t pos)
{
    size_t bit = memo_bit(m, part, pos);
    return m->memo && (m->memo[bit / 8] >> (bit % 8)) & 1;
}

static void memo_set_failed(struct matcher *m, const struct part *part, size_t pos)
{
    size_t bit = memo_bit(m, part, pos);
    if (m->memo)
        m->memo[bit / 8] |= (unsigned char)(1u << (bit % 8));
}

/* The length of the value character at uri[i]: 3 for a pct-encoded byte,
 * 1 for an allowed character, 0 when uri[i] cannot occur in a value. */
static size_t value_char_length(const struct matcher *m, size_t i, bool reserved)
{
    unsigned char c = m->uri[i];
    if (c == '%')
        return i + 2 < m->len && is_hex(m->uri[i + 1]) && is_hex(m->uri[i + 2]) ? 3 : 0;
    if (is_unreserved(c) || c >= 0x80 || (reserved && is_reserved(c)))
        return 1;
    return 0;
}

/* Where the longest span an expression could cover, starting at s, ends. */
static size_t expression_extent(const struct matcher *m, const struct part *part, size_t s)
{
    const struct operator_rules *op = part->op;
    bool last_explodes = var_of(m->tpl, part, part->n_vars - 1)->explode;
    size_t i = s, separators = 0;

    if (op->first) {
        if (i >= m->len || m->uri[i] != op->first)
            return s;
        i++;
    }
    while (i < m->len) {
        size_t n = value_char_length(m, i, op->reserved);
        if (n) {
            i += n;
        } else if (op->named && m->uri[i] == '=') {
            i++;
        } else if (m->uri[i] == op->sep) {
            /* Unnamed variables take one piece each; only an exploded last
             * variable absorbs more. */
            if (!op->named && ++separators >= part->n_vars && !last_explodes)
                break;
            i++;
        } else {
            break;
        }
    }
    return i;
}

/* Whether uri[i] is a UTF-8 continuation byte, raw or pct-encoded. */
static bool at_continuation_byte(const struct matcher *m, size_t i)
{
    if (i >= m->len)
        return false;
    if (m->uri[i] == '%')
        return i + 2 < m->len && is_hex(m->uri[i + 1]) && is_hex(m->uri[i + 2]) &&
               (mcp_hex_digit(m->uri[i + 1]) & 0xC) == 0x8;
    return (m->uri[i] & 0xC0) == 0x80;
}

/* Whether ending the span that starts at s at j would cut a pct-encoded
 * triple in two. */
static bool splits_triple(const struct matcher *m, size_t s, size_t j)
{
    return j > s && (m->uri[j - 1] == '%' || (j - s >= 2 && m->uri[j - 2] == '%'));
}

/* The index of the variable of `part` named uri[i..i+n), or -1. */
static long find_var(const struct matcher *m, const struct part *part, size_t i, size_t n)
{
    for (size_t k = 0; k < part->n_vars; k++) {
        const struct varspec *v = var_of(m->tpl, part, k);
        if (v->name_len == n && memcmp(v->name, m->uri + i, n) == 0)
            return (long)k;
    }
    return -1;
}

/* The end of the piece starting at i, at the next `sep` before `end`. */
static size_t piece_end(const struct matcher *m, size_t i, size_t end, char sep)
{
    while (i < end && m->uri[i] != sep)
        i++;
    return i;
}

/*
 * Whether [s, e) is a valid span of a named expression ({;x}, {?x}, {&x}):
 * empty, or the operator character followed by name[=value] pieces naming
 * distinct variables of the expression. Returns 1, 0, or -1 when the
 * budget ran out.
 */
static int named_span_valid(struct matcher *m, const struct part *part, size_t s, size_t e)
{
    if (e == s)
        return 1;
    if (!spend(m, (e - s) + part->n_vars))
        return -1;
    memset(m->seen, 0, part->n_vars * sizeof *m->seen);
    for (size_t i = s + 1;; i++) {
        size_t end = piece_end(m, i, e, part->op->sep);
        size_t name_end = piece_end(m, i, end, '=');
        if (name_end < end && piece_end(m, name_end + 1, end, '=') < end)
            return 0; /* a second '=' */
        if (!spend(m, part->n_vars))
            return -1;
        long k = find_var(m, part, i, name_end - i);
        if (k < 0 || m->seen[k])
            return 0;
        m->seen[k] = true;
        if (end == e)
            return 1;
        i = end;
    }
}

/*
 * Whether the parts from `next` on could start matching at j: a cheap
 * necessary condition, checked before trying them. Absent optional
 * expressions are looked through. No value begins inside a UTF-8
 * character, so an expression cannot start at a continuation byte (raw or
 * pct-encoded); a literal decides for itself. False also when the budget
 * runs out (m->budget is then 0).
 */
static bool rest_can_start(struct matcher *m, size_t next, size_t j)
{
    for (; next < m->tpl->n_parts; next++) {
        const struct part *part = &m->tpl->parts[next];
        if (!spend(m, 1))
            return false;
        if (part->literal) {
            unsigned char c = (unsigned char)part->literal[0];
            return j < m->len && (m->uri[j] == c || (c >= 0x80 && m->uri[j] == '%'));
        }
        if (!part->op->first)
            return !at_continuation_byte(m, j); /* {x} and {+x} are never empty */
        if (j < m->len && m->uri[j] == part->op->first)
            return true;
        /* Otherwise this expression is absent and the next part starts at j. */
    }
    return j == m->len;
}

/*
 * Moves expression p to its next candidate end, shortest span first.
 * Returns 1 when one was found (m->end[p]), 0 when none is left, -1 when
 * the budget ran out.
 */
static int next_end(struct matcher *m, size_t p)
{
    const struct part *part = &m->tpl->parts[p];
    size_t s = m->start[p];

    while (m->next[p] <= m->extent[p]) {
        size_t j = m->next[p]++;
        if (!spend(m, 1))
            return -1;
        if (splits_triple(m, s, j))
            continue;
        if (!rest_can_start(m, p + 1, j)) {
            if (m->budget == 0)
                return -1;
            continue;
        }
        if (part->op->named) {
            int valid = named_span_valid(m, part, s, j);
            if (valid <= 0) {
                if (valid < 0)
                    return -1;
                continue;
            }
        }
        m->end[p] = j;
        return 1;
    }
    return 0;
}

/* Starts expression p at pos: computes its extent and first candidate. */
static bool enter_expression(struct matcher *m, size_t p, size_t pos)
{
    const struct part *part = &m->tpl->parts[p];
    size_t extent = expression_extent(m, part, pos);
    /* {x} and {+x} have no operator character to show they are there, so
     * they are never empty. The last part must reach the end of the URI. */
    size_t shortest = part->op->first ? pos : pos + 1;
    if (p + 1 == m->tpl->n_parts && shortest < m->len)
        shortest = m->len;
    m->start[p] = pos;
    m->extent[p] = extent;
    m->next[p] = shortest;
    return spend(m, extent - pos);
}

/* Matches literal text at pos: the position after it, or NO_MATCH. */
static size_t match_literal(const struct matcher *m, const struct part *part, size_t pos)
{
    for (size_t k = 0; k < part->literal_len; k++) {
        unsigned char c = (unsigned char)part->literal[k];
        if (pos < m->len && m->uri[pos] == c) {
            pos++;
        } else if (c >= 0x80 && pos + 2 < m->len && m->uri[pos] == '%' &&
                   is_hex(m->uri[pos + 1]) && is_hex(m->uri[pos + 2]) &&
                   mcp_hex_digit(m->uri[pos + 1]) * 16 + mcp_hex_digit(m->uri[pos + 2]) == c) {
            pos += 3; /* expansion percent-encodes non-ASCII literals */
        } else {
            return NO_MATCH;
        }
    }
    return pos;
}

/* Finds spans for every expression: MCP_OK, MCP_ENOTFOUND or MCP_ELIMIT. */
static int find_spans(struct matcher *m)
{
    const mcp_uri_template_t *tpl = m->tpl;
    size_t p = 0, pos = 0;

    for (;;) {
        /* Go forward while parts match. */
        int found = 0;
        if (!spend(m, 1))
            return MCP_ELIMIT;
        if (p == tpl->n_parts) {
            if (pos == m->len)
                return MCP_OK;
        } else if (tpl->parts[p].literal) {
            const struct part *part = &tpl->parts[p];
            if (!spend(m, part->literal_len))
                return MCP_ELIMIT;
            size_t after = match_literal(m, part, pos);
            if (after != NO_MATCH) {
                pos = after;
                p++;
                continue;
            }
        } else if (!memo_failed(m, &tpl->parts[p], pos)) {
            if (!enter_expression(m, p, pos))
                return MCP_ELIMIT;
            found = next_end(m, p);
            if (found < 0)
                return MCP_ELIMIT;
            if (found) {
                pos = m->end[p];
                p++;
                continue;
            }
            memo_set_failed(m, &tpl->parts[p], pos);
        }

        /* Backtrack: the latest expression with a longer span left to try
         * resumes from there. */
        for (;;) {
            if (p == 0)
                return MCP_ENOTFOUND;
            p--;
            if (!spend(m, 1))
                return MCP_ELIMIT;
            if (tpl->parts[p].literal)
                continue;
            found = next_end(m, p);
            if (found < 0)
                return MCP_ELIMIT;
            if (found)
                break;
            memo_set_failed(m, &tpl->parts[p], m->start[p]);
        }
        pos = m->end[p];
        p++;
    }
}

/* Stores variable k of `part` = the percent-decoded uri[i..e). Returns
 * MCP_ENOTFOUND when the value is not UTF-8 text or contradicts an earlier
 * value of the same variable. */
static int set_var(const struct matcher *m, const struct part *part, size_t k, size_t i, size_t e,
                   json_t *vars)
{
    char *text = malloc(e - i + 1);
    size_t len = 0;
    if (!text)
        return MCP_ENOMEM;
    while (i < e) {
        if (m->uri[i] == '%') {
            text[len++] = (char)(mcp_hex_digit(m->uri[i + 1]) * 16 + mcp_hex_digit(m->uri[i + 2]));
            i += 3;
        } else {
            text[len++] = (char)m->uri[i++];
        }
    }
    if (memchr(text, '\0', len) || !utf8_valid(text, len)) {
        free(text);
        return MCP_ENOTFOUND;
    }

    const struct varspec *v = var_of(m->tpl, part, k);
    const json_t *earlier = json_object_getn(vars, v->name, v->name_len);
    int rc = MCP_OK;
    if (earlier) {
        if (json_string_length(earlier) != len || memcmp(json_string_value(earlier), text, len))
            rc = MCP_ENOTFOUND;
    } else if (json_object_setn_new_nocheck(vars, v->name, v->name_len,
                                            json_stringn_nocheck(text, len)) != 0) {
        rc = MCP_ENOMEM;
    }
    free(text);
    return rc;
}

/* Assigns the pieces of an expression's span [s, e) to its variables. */
static int collect_expression(const struct matcher *m, const struct part *part, size_t s,
                              size_t e, json_t *vars)
{
    const struct operator_rules *op = part->op;
    if (e == s)
        return MCP_OK; /* absent: every variable undefined */
    if (op->first)
        s++;

    if (op->named) {
        /* named_span_valid() accepted this span: every name is known. */
        for (size_t i = s;; i++) {
            size_t end = piece_end(m, i, e, op->sep);
            size_t name_end = piece_end(m, i, end, '=');
            long k = find_var(m, part, i, name_end - i);
            int rc = set_var(m, part, (size_t)k, name_end < end ? name_end + 1 : end, end, vars);
            if (rc != MCP_OK || end == e)
                return rc;
            i = end;
        }
    }
    for (size_t k = 0, i = s; k < part->n_vars; k++) {
        bool last = k + 1 == part->n_vars;
        size_t end = last ? e : piece_end(m, i, e, op->sep);
        int rc = set_var(m, part, k, i, end, vars);
        if (rc != MCP_OK || end == e)
            return rc;
        i = end + 1;
    }
    return MCP_OK;
}

static int collect_vars(const struct matcher *m, json_t *vars)
{
    for (size_t p = 0; p < m->tpl->n_parts; p++) {
        const struct part *part = &m->tpl->parts[p];
        if (part->literal)
            continue;
        int rc = collect_expression(m, part, m->start[p], m->end[p], vars);
        if (rc != MCP_OK)
            return rc;
    }
    return MCP_OK;
}

int mcp_uri_template_match(const mcp_uri_template_t *tpl, const char *uri, size_t uri_len,
                           json_t **vars_out)
{
    struct matcher m = {.tpl = tpl, .uri = (const unsigned char *)uri, .len = uri_len};
    int rc = MCP_ENOMEM;

    *vars_out = NULL;
    m.budget = MATCH_BUDGET_BASE + MATCH_BUDGET_PER_BYTE * (uri_len + strlen(tpl->text));

    m.start = calloc(tpl->n_parts + 1, sizeof *m.start);
    m.end = calloc(tpl->n_parts + 1, sizeof *m.end);
    m.next = calloc(tpl->n_parts + 1, sizeof *m.next);
    m.extent = calloc(tpl->n_parts + 1, sizeof *m.extent);
    m.seen = calloc(tpl->max_vars_per_expression + 1, sizeof *m.seen);
    if (!m.start || !m.end || !m.next || !m.extent || !m.seen)
        goto out;
    /* Only a template with two or more expressions can revisit one at the
     * same position. Without the bitmap the budget still bounds the work. */
    if (tpl->n_expressions >= 2 && uri_len < MATCH_MEMO_MAX_BYTES * 8 &&
        tpl->n_expressions <= MATCH_MEMO_MAX_BYTES * 8 / (uri_len + 1))
        m.memo = calloc((tpl->n_expressions * (uri_len + 1) + 7) / 8, 1);

    rc = find_spans(&m);
    if (rc == MCP_OK) {
        json_t *vars = json_object();
        rc = vars ? collect_vars(&m, vars) : MCP_ENOMEM;
        if (rc == MCP_OK)
            *vars_out = vars;
        else
            json_decref(vars);
    }
out:
    free(m.start);
    free(m.end);
    free(m.next);
    free(m.extent);
    free(m.seen);
    free(m.memo);
    return rc;
}
