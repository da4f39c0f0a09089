/*
 * `x-mcp-header` annotations in a tool's inputSchema (digest section 4.6).
 *
 * The schema comes from a peer, so the walk visits every subschema that
 * JSON Schema (2020-12 and the older drafts still in use) defines, finds
 * every annotation wherever it hides, and accepts only those on a property
 * reached from the root through "properties" alone. Values of keywords that
 * hold data (const, enum, default, examples, ...) or of unknown keywords are
 * not schemas, so an "x-mcp-header" member inside them is data, never an
 * annotation. The walk is bounded in depth and linear in the schema's size.
 *
 * Decisions the spec leaves open:
 *   - "type" must be present: "string", "integer" or "boolean", or an array
 *     of those plus "null" with at least one non-null member (a nullable
 *     parameter: a null value sends no header). A property without "type"
 *     (only "$ref", "enum", ...) is rejected, since its type cannot be known
 *     without following references the rules forbid.
 *   - An annotation on the root schema is rejected: the root is not a
 *     parameter.
 *   - A schema nested deeper than MAX_SCHEMA_DEPTH levels is rejected as a
 *     whole, so that no annotation can hide below the limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/errors.h"
#include "mcp/xmcp_header.h"
#include "protocol/headers_internal.h"

#define ANNOTATION "x-mcp-header"

/* Subschema levels the walk enters. Real tool schemas stay far below. */
#define MAX_SCHEMA_DEPTH 64

/* Keywords whose value holds subschemas, and how. */
enum holds {
    SUBSCHEMA,  /* a schema, or an array of schemas (allOf; items in old drafts) */
    SCHEMA_MAP, /* an object whose member values are schemas (properties, $defs) */
};

static const struct keyword {
    const char *name;
    enum holds holds;
} SUBSCHEMA_KEYWORDS[] = {
    {"properties", SCHEMA_MAP},
    {"patternProperties", SCHEMA_MAP},
    {"$defs", SCHEMA_MAP},
    {"definitions", SCHEMA_MAP},      /* draft-07 and older */
    {"dependentSchemas", SCHEMA_MAP},
    {"dependencies", SCHEMA_MAP},     /* draft-07: schemas or name arrays */
    {"additionalProperties", SUBSCHEMA},
    {"unevaluatedProperties", SUBSCHEMA},
    {"propertyNames", SUBSCHEMA},
    {"items", SUBSCHEMA},
    {"prefixItems", SUBSCHEMA},
    {"additionalItems", SUBSCHEMA},   /* 2019-09 and older */
    {"unevaluatedItems", SUBSCHEMA},
    {"contains", SUBSCHEMA},
    {"allOf", SUBSCHEMA},
    {"anyOf", SUBSCHEMA},
    {"oneOf", SUBSCHEMA},
    {"not", SUBSCHEMA},
    {"if", SUBSCHEMA},
    {"then", SUBSCHEMA},
    {"else", SUBSCHEMA},
    {"contentSchema", SUBSCHEMA},
};

static const struct keyword *find_keyword(const char *name)
{
    for (size_t i = 0; i < sizeof SUBSCHEMA_KEYWORDS / sizeof SUBSCHEMA_KEYWORDS[0]; i++)
        if (strcmp(SUBSCHEMA_KEYWORDS[i].name, name) == 0)
            return &SUBSCHEMA_KEYWORDS[i];
    return NULL;
}

/* One step of the location of a schema: a keyword, a member name under a
 * SCHEMA_MAP keyword, or an index into an array of schemas. */
struct step {
    const char *text; /* NULL for an index */
    size_t len;
    size_t index;
};

struct walk {
    mcp_param_headers_t *out;
    mcp_error_t *err;
    /* Each level adds a keyword and at most one name or index; the level
     * past the limit is entered only to be refused. */
    struct step steps[2 * (MAX_SCHEMA_DEPTH + 1)];
    size_t nsteps;
};

static bool is_token(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!mcp_is_tchar((unsigned char)s[i]))
            return false;
    return true;
}

bool mcp_is_http_token(const char *s)
{
    return s && is_token(s, strlen(s));
}

/* Appends "/" and a JSON Pointer (RFC 6901) token to buf, which holds n
 * bytes, truncating at `size`. Returns the new length. */
static size_t append_token(char *buf, size_t size, size_t n, const char *text, size_t len)
{
    if (n + 1 < size)
        buf[n++] = '/';
    for (size_t j = 0; j < len && n + 2 < size; j++) {
        char c = text[j];
        if (c == '~' || c == '/') {
            buf[n++] = '~';
            buf[n++] = c == '~' ? '0' : '1';
        } else {
            buf[n++] = c ? c : '?'; /* keep the message one C string */
        }
    }
    buf[n] = '\0';
    return n;
}

/* The walk's location as a JSON Pointer, e.g. /properties/a/items/0. */
static void format_location(const struct walk *w, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < w->nsteps; i++) {
        const struct step *s = &w->steps[i];
        char index[24];
        if (s->text) {
            n = append_token(buf, size, n, s->text, s->len);
        } else {
            int k = snprintf(index, sizeof index, "%zu", s->index);
            n = append_token(buf, size, n, index, (size_t)k);
        }
    }
}

static int reject(struct walk *w, const char *rule)
{
    char where[160];
    format_location(w, where, sizeof where);
    return mcp_error_set(w->err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                         "invalid x-mcp-header at %s: %s", where[0] ? where : "/", rule);
}

/* Is `s` a JSON string exactly equal to `word` (no NUL tricks)? */
static bool string_is(const json_t *s, const char *word)
{
    return json_string_length(s) == strlen(word) && strcmp(json_string_value(s), word) == 0;
}

static bool is_header_type(const json_t *t)
{
    return string_is(t, "string") || string_is(t, "integer") || string_is(t, "boolean");
}

static bool has_header_type(const json_t *schema)
{
    const json_t *type = json_object_get(schema, "type");
    if (json_is_string(type))
        return is_header_type(type);
    if (!json_is_array(type))
        return false;
    bool some = false;
    size_t i;
    const json_t *t;
    json_array_foreach(type, i, t) {
        if (!json_is_string(t))
            return false;
        if (is_header_type(t))
            some = true;
        else if (!string_is(t, "null"))
            return false;
    }
    return some;
}

/* Records the annotation of the property schema at the walk's location,
 * which the caller has found reachable through "properties" alone. */
static int record(struct walk *w, const json_t *value)
{
    mcp_param_headers_t *out = w->out;
    /* The capacity is the smallest power of two that holds count, so the
     * array doubles whenever count reaches one. */
    if ((out->count & (out->count - 1)) == 0) {
        size_t cap = out->count ? out->count * 2 : 1;
        mcp_param_header_t *grown = realloc(out->items, cap * sizeof *grown);
        if (!grown)
            return MCP_ENOMEM;
        out->items = grown;
    }
    mcp_param_header_t *h = &out->items[out->count];
    memset(h, 0, sizeof *h);
    out->count++;

    h->depth = w->nsteps / 2; /* "properties", name, "properties", name, ... */
    h->name = strdup(json_string_value(value));
    h->path = calloc(h->depth, sizeof *h->path);
    if (!h->name || !h->path)
        return MCP_ENOMEM;
    for (size_t i = 0; i < h->depth; i++)
        if (!(h->path[i] = strdup(w->steps[2 * i + 1].text)))
            return MCP_ENOMEM;
    return MCP_OK;
}

static int check_annotation(struct walk *w, const json_t *schema, bool via_properties)
{
    const json_t *value = json_object_get(schema, ANNOTATION);
    if (w->nsteps == 0)
        return reject(w, "the root schema is not a property");
    if (!via_properties)
        return reject(w, "the property is not reachable from the root through \"properties\" "
                         "alone");
    if (!json_is_string(value) || !is_token(json_string_value(value), json_string_length(value)))
        return reject(w, "the value must be a non-empty HTTP token (RFC 9110 tchar)");
    for (size_t i = 1; i < w->nsteps; i += 2)
        if (strlen(w->steps[i].text) != w->steps[i].len)
            return reject(w, "a property name on the path contains NUL");
    if (!has_header_type(schema))
        return reject(w, "\"type\" must be \"string\", \"integer\" or \"boolean\" (or one of "
                         "them with \"null\")");
    return record(w, value);
}

static int walk_schema(struct walk *w, const json_t *schema, bool via_properties, size_t depth);

/* Enters `sub`, reached from the current location by `keyword` and, when
 * not NULL, the member name or index in `member`. */
static int enter(struct walk *w, const json_t *sub, struct step keyword, const struct step *member,
                 bool via_properties, size_t depth)
{
    size_t saved = w->nsteps;
    w->steps[w->nsteps++] = keyword;
    if (member)
        w->steps[w->nsteps++] = *member;
    int rc = walk_schema(w, sub, via_properties, depth + 1);
    w->nsteps = saved;
    return rc;
}

static int walk_keyword(struct walk *w, const struct keyword *kw, const char *key, size_t key_len,
                        const json_t *value, bool via_properties, size_t depth)
{
    struct step keyword = {key, key_len, 0};
    int rc = MCP_OK;
    if (kw->holds == SCHEMA_MAP) {
        /* Only a chain of "properties" keeps an annotation reachable. */
        bool chain = via_properties && strcmp(key, "properties") == 0;
        const char *name;
        size_t name_len;
        json_t *sub;
        if (!json_is_object(value))
            return MCP_OK;
        json_object_keylen_foreach((json_t *)value, name, name_len, sub) {
            struct step member = {name, name_len, 0};
            if ((rc = enter(w, sub, keyword, &member, chain, depth)) != MCP_OK)
                break;
        }
    } else if (json_is_array(value)) {
        size_t i;
        json_t *sub;
        json_array_foreach(value, i, sub) {
            struct step member = {NULL, 0, i};
            if ((rc = enter(w, sub, keyword, &member, false, depth)) != MCP_OK)
                break;
        }
    } else {
        rc = enter(w, value, keyword, NULL, false, depth);
    }
    return rc;
}

static int walk_schema(struct walk *w, const json_t *schema, bool via_properties, size_t depth)
{
    if (!json_is_object(schema))
        return MCP_OK; /* boolean schemas, and junk where a schema belongs */
    if (depth > MAX_SCHEMA_DEPTH)
        return mcp_error_set(w->err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                             "inputSchema nests deeper than %d levels", MAX_SCHEMA_DEPTH);
    if (json_object_get(schema, ANNOTATION)) {
        int rc = check_annotation(w, schema, via_properties);
        if (rc != MCP_OK)
            return rc;
    }
    const char *key;
    size_t key_len;
    json_t *value;
    json_object_keylen_foreach((json_t *)schema, key, key_len, value) {
        /* A name with NUL inside (only a program can build one) is no keyword. */
        const struct keyword *kw = strlen(key) == key_len ? find_keyword(key) : NULL;
        if (kw) {
            int rc = walk_keyword(w, kw, key, key_len, value, via_properties, depth);
            if (rc != MCP_OK)
                return rc;
        }
    }
    return MCP_OK;
}

/* Case-insensitive comparison of ASCII tokens, independent of the locale. */
static int token_casecmp(const char *a, const char *b)
{
    for (;; a++, b++) {
        int ca = (unsigned char)*a, cb = (unsigned char)*b;
        ca += (ca >= 'A' && ca <= 'Z') ? 'a' - 'A' : 0;
        cb += (cb >= 'A' && cb <= 'Z') ? 'a' - 'A' : 0;
        if (ca != cb || ca == 0)
            return ca - cb;
    }
}

static int compare_names(const void *a, const void *b)
{
    const mcp_param_header_t *x = *(const mcp_param_header_t *const *)a;
    const mcp_param_header_t *y = *(const mcp_param_header_t *const *)b;
    int order = token_casecmp(x->name, y->name);
    /* Ties keep schema order, so the message names the pair predictably. */
    return order ? order : (x > y) - (x < y);
}

/* The JSON Pointer of a collected property: /properties/a/properties/b. */
static void format_property(const mcp_param_header_t *h, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < h->depth; i++) {
        n = append_token(buf, size, n, "properties", 10);
        n = append_token(buf, size, n, h->path[i], strlen(h->path[i]));
    }
}

/* Names must be unique case-insensitively: sort a view of them and compare
 * neighbours, so that a schema with many annotations costs n log n. */
static int check_unique(const mcp_param_headers_t *headers, mcp_error_t *err)
{
    if (headers->count < 2)
        return MCP_OK;
    const mcp_param_header_t **view = malloc(headers->count * sizeof *view);
    if (!view)
        return MCP_ENOMEM;
    for (size_t i = 0; i < headers->count; i++)
        view[i] = &headers->items[i];
    qsort(view, headers->count, sizeof *view, compare_names);
    int rc = MCP_OK;
    for (size_t i = 1; i < headers->count && rc == MCP_OK; i++) {
        if (token_casecmp(view[i - 1]->name, view[i]->name) == 0) {
            char a[120], b[120];
            format_property(view[i - 1], a, sizeof a);
            format_property(view[i], b, sizeof b);
            rc = mcp_error_set(err, MCP_EINVAL, MCP_INVALID_PARAMS, NULL,
                               "invalid x-mcp-header at %s and %s: \"%s\" and \"%s\" name the "
                               "same header (names compare case-insensitively)",
                               a, b, view[i - 1]->name, view[i]->name);
        }
    }
    free(view);
    return rc;
}

int mcp_xmcp_headers_collect(const json_t *input_schema, mcp_param_headers_t *out,
                             mcp_error_t *err)
{
    memset(out, 0, sizeof *out);
    struct walk w = {.out = out, .err = err};
    int rc = walk_schema(&w, input_schema, true, 0);
    if (rc == MCP_OK)
        rc = check_unique(out, err);
    if (rc != MCP_OK) {
        if (rc == MCP_ENOMEM)
            mcp_error_set(err, MCP_ENOMEM, 0, NULL, NULL);
        mcp_param_headers_clear(out);
    }
    return rc;
}

void mcp_param_headers_clear(mcp_param_headers_t *headers)
{
    if (!headers)
        return;
    for (size_t i = 0; i < headers->count; i++) {
        mcp_param_header_t *h = &headers->items[i];
        free(h->name);
        if (h->path)
            for (size_t k = 0; k < h->depth; k++)
                free(h->path[k]);
        free(h->path);
    }
    free(headers->items);
    memset(headers, 0, sizeof *headers);
}

json_t *mcp_param_header_value(const mcp_param_header_t *h, const json_t *arguments)
{
    if (!h)
        return NULL;
    json_t *v = (json_t *)arguments;
    for (size_t i = 0; i < h->depth && v; i++)
        v = json_is_object(v) ? json_object_get(v, h->path[i]) : NULL;
    return json_is_null(v) ? NULL : v;
}
