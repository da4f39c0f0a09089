/*
 * schema_check.c: a small JSON Schema validator for the test suite, plus the
 * MCP knowledge needed to apply it to whole messages (which definition each
 * method's result must match). See schema_check.h for the supported subset.
 *
 * The validator walks schema and instance together. Each keyword is one
 * function in the `keywords` table; a keyword missing from the table stops
 * validation with "unsupported keyword", so an unimplemented rule can never
 * turn into a silent pass.
 */
#include "schema_check.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define PRINTF_LIKE(fmt, args)
#endif

static void PRINTF_LIKE(3, 4) set_reason(char *reason, size_t reason_size, const char *fmt, ...)
{
    if (!reason || reason_size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, reason_size, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------ */
/* The schema cache: each file is parsed once and kept until exit.           */
/* ------------------------------------------------------------------------ */

struct cached_schema {
    struct cached_schema *next;
    char *path;
    json_t *root;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cached_schema *cache_head;
static bool cache_release_registered;

static void release_cache(void)
{
    while (cache_head) {
        struct cached_schema *next = cache_head->next;
        json_decref(cache_head->root);
        free(cache_head->path);
        free(cache_head);
        cache_head = next;
    }
}

/* Called with cache_lock held. */
static const json_t *find_or_load(const char *path, char *reason, size_t reason_size)
{
    for (struct cached_schema *entry = cache_head; entry; entry = entry->next)
        if (strcmp(entry->path, path) == 0)
            return entry->root;

    json_error_t error;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &error);
    if (!root) {
        set_reason(reason, reason_size, "%s:%d: %s", path, error.line, error.text);
        return NULL;
    }
    if (!json_is_object(json_object_get(root, "$defs"))) {
        set_reason(reason, reason_size, "%s: no \"$defs\" object", path);
        json_decref(root);
        return NULL;
    }

    size_t path_size = strlen(path) + 1;
    struct cached_schema *entry = malloc(sizeof *entry);
    char *path_copy = malloc(path_size);
    if (!entry || !path_copy) {
        set_reason(reason, reason_size, "%s: out of memory", path);
        free(entry);
        free(path_copy);
        json_decref(root);
        return NULL;
    }
    memcpy(path_copy, path, path_size);
    *entry = (struct cached_schema){.next = cache_head, .path = path_copy, .root = root};
    cache_head = entry;
    /* Freed at exit so leak checkers see a clean process. */
    if (!cache_release_registered && atexit(release_cache) == 0)
        cache_release_registered = true;
    return root;
}

const json_t *schema_check_load(const char *path, char *reason, size_t reason_size)
{
    if (!path) {
        set_reason(reason, reason_size, "no schema path given");
        return NULL;
    }
    pthread_mutex_lock(&cache_lock);
    const json_t *root = find_or_load(path, reason, reason_size);
    pthread_mutex_unlock(&cache_lock);
    return root;
}

/* ------------------------------------------------------------------------ */
/* The validator.                                                            */
/* ------------------------------------------------------------------------ */

/* How a $ref must begin: only definitions of the same document are supported. */
static const char defs_prefix[] = "#/$defs/";

/*
 * Schema nesting limit. The official schemas recurse only through members of
 * the instance (JSONValue), so hitting it means a $ref cycle that consumes no
 * instance, or an absurdly deep instance.
 */
#define MAX_SCHEMA_DEPTH 512
#define MAX_POINTER 512

struct validator {
    const json_t *defs;       /* "$defs" of the schema document */
    const char *definition;   /* innermost definition entered, for schema problems */
    unsigned depth;           /* schema nesting */
    bool schema_broken;       /* the schema uses something unsupported: anyOf stops
                                 rather than pass on a later alternative */

    char pointer[MAX_POINTER]; /* JSON Pointer of the instance value being checked */
    size_t pointer_len;
    unsigned pointer_segments;

    char reason[SCHEMA_CHECK_REASON_MAX]; /* the latest failure */
    unsigned reason_segments;             /* how deep in the instance it lies */
};

/* Appends a reference token (escaped per RFC 6901) and returns the old length for pop. */
static size_t push_key(struct validator *v, const char *key)
{
    size_t mark = v->pointer_len;
    size_t len = v->pointer_len;
    char *out = v->pointer;
    const size_t room = sizeof v->pointer - 4; /* keeps space for "..." and NUL */

    if (len < room)
        out[len++] = '/';
    for (const char *c = key; *c && len < room; c++) {
        if (*c == '~' || *c == '/') {
            out[len++] = '~';
            out[len++] = *c == '~' ? '0' : '1';
        } else {
            out[len++] = *c;
        }
    }
    if (len >= room) { /* too long to show whole: mark the cut */
        memcpy(out + room, "...", 4);
        len = room + 3;
    }
    out[len] = '\0';
    v->pointer_len = len;
    v->pointer_segments++;
    return mark;
}

static size_t push_index(struct validator *v, size_t index)
{
    char token[24];
    snprintf(token, sizeof token, "%zu", index);
    return push_key(v, token);
}

static void pop(struct validator *v, size_t mark)
{
    v->pointer_len = mark;
    v->pointer[mark] = '\0';
    v->pointer_segments--;
}

static const char *pointer_text(const struct validator *v)
{
    return v->pointer_len ? v->pointer : "(root)";
}

/* Records why the instance is invalid; returns false so callers can `return invalid(...)`. */
static bool PRINTF_LIKE(2, 3) invalid(struct validator *v, const char *fmt, ...)
{
    int n = snprintf(v->reason, sizeof v->reason, "%s: ", pointer_text(v));
    if (n >= 0 && (size_t)n < sizeof v->reason) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->reason + n, sizeof v->reason - (size_t)n, fmt, ap);
        va_end(ap);
    }
    v->reason_segments = v->pointer_segments;
    return false;
}

/* Records that the schema itself is beyond this checker; validation then fails for good. */
static bool PRINTF_LIKE(2, 3) schema_problem(struct validator *v, const char *fmt, ...)
{
    int n = snprintf(v->reason, sizeof v->reason, "%s: schema problem in %s%s: ",
                     pointer_text(v), v->definition ? "$defs/" : "",
                     v->definition ? v->definition : "an inline schema");
    if (n >= 0 && (size_t)n < sizeof v->reason) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->reason + n, sizeof v->reason - (size_t)n, fmt, ap);
        va_end(ap);
    }
    v->schema_broken = true;
    return false;
}

/* A JSON value as compact text for a reason, cut short when long. */
struct shown {
    char text[96];
};

static struct shown show(const json_t *value)
{
    struct shown s;
    char *dump = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!dump) {
        snprintf(s.text, sizeof s.text, "(unprintable)");
        return s;
    }
    if (strlen(dump) < sizeof s.text)
        memcpy(s.text, dump, strlen(dump) + 1);
    else
        snprintf(s.text, sizeof s.text, "%.*s...", (int)sizeof s.text - 4, dump);
    free(dump);
    return s;
}

static const char *type_name(const json_t *instance)
{
    switch (json_typeof(instance)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "unknown";
}

/* JSON Schema counts 1.0 as an integer; jansson parses it as a real. */
static bool is_integral(const json_t *instance)
{
    if (json_is_integer(instance))
        return true;
    if (!json_is_real(instance))
        return false;
    double x = json_real_value(instance);
    return x > -9.0e18 && x < 9.0e18 && x == (double)(long long)x;
}

/* 1 when `instance` has JSON Schema type `type`, 0 when not, -1 for an unknown type name. */
static int type_matches(const json_t *instance, const char *type)
{
    if (strcmp(type, "object") == 0) return json_is_object(instance);
    if (strcmp(type, "array") == 0) return json_is_array(instance);
    if (strcmp(type, "string") == 0) return json_is_string(instance);
    if (strcmp(type, "number") == 0) return json_is_number(instance);
    if (strcmp(type, "integer") == 0) return is_integral(instance);
    if (strcmp(type, "boolean") == 0) return json_is_boolean(instance);
    if (strcmp(type, "null") == 0) return json_is_null(instance);
    return -1;
}

/* jansson's iterators take non-const objects although they do not modify them. */
#define FOR_EACH_MEMBER(object, it)                                                    \
    for (void *it = json_object_iter((json_t *)(object)); it;                          \
         it = json_object_iter_next((json_t *)(object), it))

/* Equality as JSON Schema defines it for const and enum: numbers by value. */
static bool values_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_typeof(a) != json_typeof(b))
        return false;
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!values_equal(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        FOR_EACH_MEMBER(a, it) {
            const json_t *other = json_object_get(b, json_object_iter_key(it));
            if (!other || !values_equal(json_object_iter_value(it), other))
                return false;
        }
        return true;
    }
    return json_equal(a, b);
}

static bool validate(struct validator *v, const json_t *schema, const json_t *instance);

/*
 * One keyword. `value` is the keyword's value in `schema`; `schema` is passed
 * for keywords that depend on a sibling (additionalProperties on properties).
 * Keywords that apply to one instance type ignore the others, as in JSON Schema.
 */
typedef bool (*keyword_fn)(struct validator *v, const json_t *schema, const json_t *value,
                           const json_t *instance);

static bool check_type(struct validator *v, const json_t *schema, const json_t *value,
                       const json_t *instance)
{
    if (!json_is_string(value) && !json_is_array(value))
        return schema_problem(v, "\"type\" must be a string or an array");
    size_t count = json_is_array(value) ? json_array_size(value) : 1;
    bool matched = false;
    for (size_t i = 0; i < count; i++) {
        const json_t *name = json_is_array(value) ? json_array_get(value, i) : value;
        if (!json_is_string(name))
            return schema_problem(v, "\"type\" names must be strings");
        int m = type_matches(instance, json_string_value(name));
        if (m < 0)
            return schema_problem(v, "unknown type \"%s\"", json_string_value(name));
        matched = matched || m;
    }
    if (!matched)
        return invalid(v, "expected type %s, got %s", show(value).text, type_name(instance));
    return true;
}

static bool check_const(struct validator *v, const json_t *schema, const json_t *value,
                        const json_t *instance)
{
    if (!values_equal(instance, value))
        return invalid(v, "value %s does not match const %s", show(instance).text,
                       show(value).text);
    return true;
}

static bool check_enum(struct validator *v, const json_t *schema, const json_t *value,
                       const json_t *instance)
{
    if (!json_is_array(value))
        return schema_problem(v, "\"enum\" must be an array");
    for (size_t i = 0; i < json_array_size(value); i++)
        if (values_equal(instance, json_array_get(value, i)))
            return true;
    return invalid(v, "value %s is not in enum %s", show(instance).text, show(value).text);
}

/* ---- formats: each returns NULL when the string conforms, else what is wrong ---- */

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_space_or_control(char c) { return (unsigned char)c <= 0x20 || c == 0x7f; }

static bool is_scheme_char(char c)
{
    return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
}

static const char *uri_problem(const char *s, size_t len)
{
    size_t i = 0;
    if (len == 0 || !is_alpha(s[0]))
        return "it does not start with a scheme";
    while (i < len && is_scheme_char(s[i]))
        i++;
    if (i == len || s[i] != ':')
        return "it has no scheme";
    for (; i < len; i++)
        if (is_space_or_control(s[i]))
            return "it contains whitespace or a control character";
    return NULL;
}

static const char *uri_template_problem(const char *s, size_t len)
{
    bool in_expression = false;
    size_t expression_len = 0;
    for (size_t i = 0; i < len; i++) {
        if (is_space_or_control(s[i]))
            return "it contains whitespace or a control character";
        if (s[i] == '{') {
            if (in_expression)
                return "it nests '{'";
            in_expression = true;
            expression_len = 0;
        } else if (s[i] == '}') {
            if (!in_expression)
                return "it has '}' without '{'";
            if (expression_len == 0)
                return "it has an empty expression \"{}\"";
            in_expression = false;
        } else if (in_expression) {
            expression_len++;
        }
    }
    return in_expression ? "it leaves '{' unclosed" : NULL;
}

static const char *base64_problem(const char *s, size_t len)
{
    if (len % 4 != 0)
        return "its length is not a multiple of 4";
    size_t i = 0;
    while (i < len && (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '+' || s[i] == '/'))
        i++;
    size_t padding = len - i;
    for (; i < len; i++)
        if (s[i] != '=')
            return "it contains a character outside the base64 alphabet";
    if (padding > 2)
        return "it has more than two '=' of padding";
    return NULL;
}

static const struct format {
    const char *name;
    const char *(*problem)(const char *s, size_t len);
} formats[] = {
    {"uri", uri_problem},
    {"uri-template", uri_template_problem},
    {"byte", base64_problem},
};

static bool check_format(struct validator *v, const json_t *schema, const json_t *value,
                         const json_t *instance)
{
    if (!json_is_string(value))
        return schema_problem(v, "\"format\" must be a string");
    const char *name = json_string_value(value);
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (strcmp(formats[i].name, name) != 0)
            continue;
        if (!json_is_string(instance))
            return true;
        const char *problem =
            formats[i].problem(json_string_value(instance), json_string_length(instance));
        if (problem)
            return invalid(v, "value %s is not a valid %s: %s", show(instance).text, name, problem);
        return true;
    }
    return schema_problem(v, "unsupported format \"%s\"", name);
}

static bool check_minimum(struct validator *v, const json_t *schema, const json_t *value,
                          const json_t *instance)
{
    if (!json_is_number(value))
        return schema_problem(v, "\"minimum\" must be a number");
    if (json_is_number(instance) && json_number_value(instance) < json_number_value(value))
        return invalid(v, "%s is less than the minimum %s", show(instance).text, show(value).text);
    return true;
}

static bool check_maximum(struct validator *v, const json_t *schema, const json_t *value,
                          const json_t *instance)
{
    if (!json_is_number(value))
        return schema_problem(v, "\"maximum\" must be a number");
    if (json_is_number(instance) && json_number_value(instance) > json_number_value(value))
        return invalid(v, "%s is greater than the maximum %s", show(instance).text,
                       show(value).text);
    return true;
}

static bool check_required(struct validator *v, const json_t *schema, const json_t *value,
                           const json_t *instance)
{
    if (!json_is_array(value))
        return schema_problem(v, "\"required\" must be an array");
    for (size_t i = 0; i < json_array_size(value); i++) {
        const json_t *name = json_array_get(value, i);
        if (!json_is_string(name))
            return schema_problem(v, "\"required\" names must be strings");
        if (json_is_object(instance) && !json_object_get(instance, json_string_value(name)))
            return invalid(v, "missing required property \"%s\"", json_string_value(name));
    }
    return true;
}

static bool check_member(struct validator *v, const char *name, const json_t *subschema,
                         const json_t *member)
{
    size_t mark = push_key(v, name);
    bool ok = validate(v, subschema, member);
    pop(v, mark);
    return ok;
}

static bool check_properties(struct validator *v, const json_t *schema, const json_t *value,
                             const json_t *instance)
{
    if (!json_is_object(value))
        return schema_problem(v, "\"properties\" must be an object");
    if (!json_is_object(instance))
        return true;
    FOR_EACH_MEMBER(value, it) {
        const char *name = json_object_iter_key(it);
        const json_t *member = json_object_get(instance, name);
        if (member && !check_member(v, name, json_object_iter_value(it), member))
            return false;
    }
    return true;
}

static bool check_additional_properties(struct validator *v, const json_t *schema,
                                        const json_t *value, const json_t *instance)
{
    if (!json_is_object(instance))
        return true;
    const json_t *declared = json_object_get(schema, "properties");
    FOR_EACH_MEMBER(instance, it) {
        const char *name = json_object_iter_key(it);
        if (declared && json_object_get(declared, name))
            continue;
        if (json_is_false(value))
            return invalid(v, "property \"%s\" is not allowed (additionalProperties is false)",
                           name);
        if (!check_member(v, name, value, json_object_iter_value(it)))
            return false;
    }
    return true;
}

/* Each member name, as a JSON string, must be valid against the schema
 * (the Tasks extension's schema constrains _meta keys this way). */
static bool check_property_names(struct validator *v, const json_t *schema,
                                 const json_t *value, const json_t *instance)
{
    if (!json_is_object(value))
        return schema_problem(v, "\"propertyNames\" must be a schema object");
    if (!json_is_object(instance))
        return true;
    FOR_EACH_MEMBER(instance, it) {
        const char *name = json_object_iter_key(it);
        json_t *as_value = json_string(name);
        size_t mark = push_key(v, name);
        bool ok = as_value && validate(v, value, as_value);
        pop(v, mark);
        json_decref(as_value);
        if (!ok)
            return false;
    }
    return true;
}

static bool check_max_items(struct validator *v, const json_t *schema, const json_t *value,
                            const json_t *instance)
{
    if (!json_is_integer(value) || json_integer_value(value) < 0)
        return schema_problem(v, "\"maxItems\" must be a non-negative integer");
    if (json_is_array(instance) && json_array_size(instance) > (size_t)json_integer_value(value))
        return invalid(v, "%zu items exceed maxItems %" JSON_INTEGER_FORMAT,
                    json_array_size(instance), json_integer_value(value));
    return true;
}

static bool check_items(struct validator *v, const json_t *schema, const json_t *value,
                        const json_t *instance)
{
    if (json_is_array(value))
        return schema_problem(v, "\"items\" as an array (the prefixItems form) is unsupported");
    if (!json_is_array(instance))
        return true;
    for (size_t i = 0; i < json_array_size(instance); i++) {
        size_t mark = push_index(v, i);
        bool ok = validate(v, value, json_array_get(instance, i));
        pop(v, mark);
        if (!ok)
            return false;
    }
    return true;
}

static bool check_ref(struct validator *v, const json_t *schema, const json_t *value,
                      const json_t *instance)
{
    const char *ref = json_string_value(value);
    if (!ref)
        return schema_problem(v, "\"$ref\" must be a string");
    size_t prefix_len = strlen(defs_prefix);
    if (strncmp(ref, defs_prefix, prefix_len) != 0 || !ref[prefix_len] ||
        strpbrk(ref + prefix_len, "/~"))
        return schema_problem(v, "unsupported $ref \"%s\" (only \"%sName\" is)", ref, defs_prefix);
    const char *name = ref + prefix_len;
    const json_t *target = json_object_get(v->defs, name);
    if (!target)
        return schema_problem(v, "$ref \"%s\" names no definition", ref);

    const char *outer = v->definition;
    v->definition = name;
    bool ok = validate(v, target, instance);
    v->definition = outer;
    return ok;
}

static bool check_all_of(struct validator *v, const json_t *schema, const json_t *value,
                         const json_t *instance)
{
    if (!json_is_array(value) || json_array_size(value) == 0)
        return schema_problem(v, "\"allOf\" must be a non-empty array");
    for (size_t i = 0; i < json_array_size(value); i++)
        if (!validate(v, json_array_get(value, i), instance))
            return false;
    return true;
}

/*
 * True when `branch` (after its $refs) pins a member of the object to a
 * const that the instance contradicts: MCP unions are told apart by such
 * members ("type", "method", "mode"), so the sender plainly did not mean
 * this alternative.
 */
static bool contradicts_discriminator(const struct validator *v, const json_t *branch,
                                      const json_t *instance)
{
    for (int hops = 0; hops < 16; hops++) {
        const char *ref = json_string_value(json_object_get(branch, "$ref"));
        if (!ref || strncmp(ref, defs_prefix, strlen(defs_prefix)) != 0)
            break;
        branch = json_object_get(v->defs, ref + strlen(defs_prefix));
    }
    const json_t *properties = json_object_get(branch, "properties");
    if (!json_is_object(instance) || !json_is_object(properties))
        return false;
    FOR_EACH_MEMBER(properties, it) {
        const json_t *expected = json_object_get(json_object_iter_value(it), "const");
        const json_t *actual = json_object_get(instance, json_object_iter_key(it));
        if (expected && actual && !values_equal(expected, actual))
            return true;
    }
    return false;
}

/*
 * When no alternative matches, the reason given is that of the alternative
 * the sender most likely meant: one whose discriminating consts the instance
 * matches, and among those the one whose failure lies deepest in the
 * instance (it got furthest before breaking).
 */
static bool check_any_of(struct validator *v, const json_t *schema, const json_t *value,
                         const json_t *instance)
{
    if (!json_is_array(value) || json_array_size(value) == 0)
        return schema_problem(v, "\"anyOf\" must be a non-empty array");
    char closest[sizeof v->reason];
    unsigned closest_segments = 0;
    bool have_closest = false, closest_is_meant = false;
    for (size_t i = 0; i < json_array_size(value); i++) {
        const json_t *branch = json_array_get(value, i);
        if (validate(v, branch, instance))
            return true;
        if (v->schema_broken)
            return false;
        bool meant = !contradicts_discriminator(v, branch, instance);
        bool better = !have_closest || (meant && !closest_is_meant) ||
                      (meant == closest_is_meant && v->reason_segments > closest_segments);
        if (better) {
            memcpy(closest, v->reason, sizeof closest);
            closest_segments = v->reason_segments;
            closest_is_meant = meant;
            have_closest = true;
        }
    }
    int n = snprintf(v->reason, sizeof v->reason, "%s", closest);
    if (n >= 0 && (size_t)n < sizeof v->reason)
        snprintf(v->reason + n, sizeof v->reason - (size_t)n,
                 " (closest of %zu anyOf alternatives at %s)", json_array_size(value),
                 pointer_text(v));
    v->reason_segments = closest_segments;
    return false;
}

/*
 * Evaluation order: cheap, shallow checks first, so a reason names the most
 * basic problem. Entries without a function are annotations.
 */
static const struct keyword {
    const char *name;
    keyword_fn check;
} keywords[] = {
    {"type", check_type},
    {"const", check_const},
    {"enum", check_enum},
    {"format", check_format},
    {"minimum", check_minimum},
    {"maximum", check_maximum},
    {"required", check_required},
    {"properties", check_properties},
    {"additionalProperties", check_additional_properties},
    {"propertyNames", check_property_names},
    {"maxItems", check_max_items},
    {"items", check_items},
    {"$ref", check_ref},
    {"allOf", check_all_of},
    {"anyOf", check_any_of},
    {"$schema", NULL},
    {"$comment", NULL},
    {"description", NULL},
    {"title", NULL},
    {"default", NULL},
    {"examples", NULL},
    {"deprecated", NULL},
    {"readOnly", NULL},
    {"writeOnly", NULL},
};

#define KEYWORD_COUNT (sizeof keywords / sizeof keywords[0])

static bool is_known_keyword(const char *name)
{
    for (size_t i = 0; i < KEYWORD_COUNT; i++)
        if (strcmp(keywords[i].name, name) == 0)
            return true;
    return false;
}

static bool validate(struct validator *v, const json_t *schema, const json_t *instance)
{
    if (json_is_true(schema))
        return true;
    if (json_is_false(schema))
        return invalid(v, "no value is allowed here (schema false)");
    if (!json_is_object(schema))
        return schema_problem(v, "a schema must be an object or a boolean, got %s",
                              type_name(schema));
    if (v->depth >= MAX_SCHEMA_DEPTH)
        return schema_problem(v, "schemas nest deeper than %d (a $ref cycle, or a very deep "
                              "instance)", MAX_SCHEMA_DEPTH);

    FOR_EACH_MEMBER(schema, it)
        if (!is_known_keyword(json_object_iter_key(it)))
            return schema_problem(v, "unsupported keyword \"%s\"", json_object_iter_key(it));

    v->depth++;
    bool ok = true;
    for (size_t i = 0; ok && i < KEYWORD_COUNT; i++) {
        const json_t *value = json_object_get(schema, keywords[i].name);
        if (value && keywords[i].check)
            ok = keywords[i].check(v, schema, value, instance);
    }
    v->depth--;
    return ok;
}

/* Validates `instance` against `schema`, resolving $refs in the document `root`. */
static int run(const json_t *root, const json_t *schema, const json_t *instance, char *reason,
               size_t reason_size)
{
    struct validator v = {.defs = json_object_get(root, "$defs")};
    if (!json_is_object(v.defs)) {
        set_reason(reason, reason_size, "the schema document has no \"$defs\" object");
        return -1;
    }
    if (!instance) {
        set_reason(reason, reason_size, "no instance given");
        return -1;
    }
    if (!schema) {
        set_reason(reason, reason_size, "out of memory building the schema");
        return -1;
    }
    if (validate(&v, schema, instance))
        return 0;
    set_reason(reason, reason_size, "%s", v.reason);
    return -1;
}

/* {"$ref": "#/$defs/<definition>"}, a new reference (NULL when out of memory). */
static json_t *ref_to(const char *definition)
{
    return json_pack("{s:s+}", "$ref", defs_prefix, definition);
}

static int validate_definition(const json_t *root, const char *definition, const json_t *instance,
                               char *reason, size_t reason_size)
{
    json_t *schema = ref_to(definition);
    int rc = run(root, schema, instance, reason, reason_size);
    json_decref(schema);
    return rc;
}

int schema_check_validate(const json_t *schema, const char *definition, const json_t *instance,
                          char *reason, size_t reason_size)
{
    if (!schema || !definition) {
        set_reason(reason, reason_size, "no schema or definition given");
        return -1;
    }
    if (!json_object_get(json_object_get(schema, "$defs"), definition)) {
        set_reason(reason, reason_size, "the schema has no definition \"%s\"", definition);
        return -1;
    }
    return validate_definition(schema, definition, instance, reason, reason_size);
}

/* ------------------------------------------------------------------------ */
/* What each revision says a server may send.                               */
/* ------------------------------------------------------------------------ */

/* The result definition(s) for the answer to one request method. */
struct result_rule {
    const char *method;
    const char *definition;  /* the method's ordinary result */
    const char *alternative; /* another shape its result may take, or NULL */
};

/* Error codes whose responses the revision defines more tightly than Error. */
struct error_rule {
    json_int_t code;
    const char *definition; /* a whole-response definition */
};

struct revision {
    const char *name;
    const char *file;
    const struct result_rule *results; /* ends with a NULL method */
    const struct error_rule *errors;   /* ends with a NULL definition */
    /*
     * The "resultType" value that selects a rule's alternative instead of its
     * ordinary definition, or NULL when the alternative is simply also
     * accepted (see schema_check_server_message).
     */
    const char *alternative_result_type;
};

static const struct result_rule results_2026[] = {
    {"server/discover", "DiscoverResult", NULL},
    {"resources/list", "ListResourcesResult", NULL},
    {"resources/templates/list", "ListResourceTemplatesResult", NULL},
    {"resources/read", "ReadResourceResult", "InputRequiredResult"},
    {"subscriptions/listen", "SubscriptionsListenResult", NULL},
    {"prompts/list", "ListPromptsResult", NULL},
    {"prompts/get", "GetPromptResult", "InputRequiredResult"},
    {"tools/list", "ListToolsResult", NULL},
    {"tools/call", "CallToolResult", "InputRequiredResult"},
    {"completion/complete", "CompleteResult", NULL},
    {NULL, NULL, NULL},
};

static const struct error_rule errors_2026[] = {
    {-32020, "HeaderMismatchError"},
    {-32021, "MissingRequiredClientCapabilityError"},
    {-32022, "UnsupportedProtocolVersionError"},
    {0, NULL},
};

static const struct result_rule results_2025[] = {
    {"initialize", "InitializeResult", NULL},
    {"ping", "EmptyResult", NULL},
    {"resources/list", "ListResourcesResult", NULL},
    {"resources/templates/list", "ListResourceTemplatesResult", NULL},
    {"resources/read", "ReadResourceResult", NULL},
    {"resources/subscribe", "EmptyResult", NULL},
    {"resources/unsubscribe", "EmptyResult", NULL},
    {"prompts/list", "ListPromptsResult", NULL},
    {"prompts/get", "GetPromptResult", NULL},
    {"tools/list", "ListToolsResult", NULL},
    {"tools/call", "CallToolResult", "CreateTaskResult"},
    {"tasks/get", "GetTaskResult", NULL},
    {"tasks/result", "GetTaskPayloadResult", NULL},
    {"tasks/cancel", "CancelTaskResult", NULL},
    {"tasks/list", "ListTasksResult", NULL},
    {"logging/setLevel", "EmptyResult", NULL},
    {"completion/complete", "CompleteResult", NULL},
    {NULL, NULL, NULL},
};

static const struct error_rule errors_2025[] = {
    {-32042, "URLElicitationRequiredError"},
    {0, NULL},
};

static const struct revision revisions[] = {
    {"2026-07-28", MCP_TEST_DATA_DIR "/schema-2026-07-28.json", results_2026, errors_2026,
     "input_required"},
    {"2025-11-25", MCP_TEST_DATA_DIR "/schema-2025-11-25.json", results_2025, errors_2025, NULL},
};

static const struct revision *find_revision(const char *name, char *reason, size_t reason_size)
{
    for (size_t i = 0; name && i < sizeof revisions / sizeof revisions[0]; i++)
        if (strcmp(revisions[i].name, name) == 0)
            return &revisions[i];
    set_reason(reason, reason_size, "no schema for revision \"%s\" (have 2026-07-28, 2025-11-25)",
               name ? name : "(null)");
    return NULL;
}

const json_t *schema_check_revision(const char *revision, char *reason, size_t reason_size)
{
    /* An extension's schema: its definitions, no message rules. */
    if (revision && strcmp(revision, SCHEMA_EXT_TASKS) == 0)
        return schema_check_load(MCP_TEST_DATA_DIR "/schema-ext-tasks.json", reason, reason_size);
    const struct revision *rev = find_revision(revision, reason, reason_size);
    return rev ? schema_check_load(rev->file, reason, reason_size) : NULL;
}

int schema_check_definition(const char *revision, const char *definition, const json_t *instance,
                            char *reason, size_t reason_size)
{
    const json_t *root = schema_check_revision(revision, reason, reason_size);
    return root ? schema_check_validate(root, definition, instance, reason, reason_size) : -1;
}

/* ---- whole messages ---- */

static const struct result_rule *find_result_rule(const struct revision *rev, const char *method)
{
    for (const struct result_rule *rule = rev->results; rule->method; rule++)
        if (strcmp(rule->method, method) == 0)
            return rule;
    return NULL;
}

/* The schema {"properties": {"result": result_schema}}; steals result_schema. */
static json_t *result_member_schema(json_t *result_schema)
{
    return json_pack("{s:{s:o}}", "properties", "result", result_schema);
}

static int check_result_response(const json_t *root, const struct revision *rev,
                                 const json_t *message, const char *request_method,
                                 char *reason, size_t reason_size)
{
    if (validate_definition(root, "JSONRPCResultResponse", message, reason, reason_size) != 0)
        return -1;
    if (!request_method) {
        set_reason(reason, reason_size, "/result: a result response is checked against the "
                                        "method it answers, and none was given");
        return -1;
    }
    const struct result_rule *rule = find_result_rule(rev, request_method);
    if (!rule) {
        set_reason(reason, reason_size, "/result: revision %s defines no result for method \"%s\"",
                   rev->name, request_method);
        return -1;
    }

    json_t *result_schema;
    if (!rule->alternative) {
        result_schema = ref_to(rule->definition);
    } else if (rev->alternative_result_type) {
        const json_t *result = json_object_get(message, "result");
        const char *result_type = json_string_value(json_object_get(result, "resultType"));
        bool alternative = result_type && strcmp(result_type, rev->alternative_result_type) == 0;
        result_schema = ref_to(alternative ? rule->alternative : rule->definition);
    } else {
        result_schema = json_pack("{s:[oo]}", "anyOf", ref_to(rule->definition),
                                  ref_to(rule->alternative));
    }
    json_t *schema = result_member_schema(result_schema);
    int rc = run(root, schema, message, reason, reason_size);
    json_decref(schema);
    return rc;
}

static int check_error_response(const json_t *root, const struct revision *rev,
                                const json_t *message, char *reason, size_t reason_size)
{
    if (validate_definition(root, "JSONRPCErrorResponse", message, reason, reason_size) != 0)
        return -1;
    const json_t *code = json_object_get(json_object_get(message, "error"), "code");
    for (const struct error_rule *rule = rev->errors; rule->definition; rule++)
        if (json_number_value(code) == (double)rule->code)
            return validate_definition(root, rule->definition, message, reason, reason_size);
    return 0;
}

/*
 * The member of the union definition `union_name` (an anyOf of $refs) whose
 * "method" const is `method`, or NULL when there is none.
 */
static const char *union_member_for_method(const json_t *root, const char *union_name,
                                           const char *method)
{
    const json_t *defs = json_object_get(root, "$defs");
    const json_t *members = json_object_get(json_object_get(defs, union_name), "anyOf");
    for (size_t i = 0; i < json_array_size(members); i++) {
        const char *ref = json_string_value(json_object_get(json_array_get(members, i), "$ref"));
        if (!ref || strncmp(ref, defs_prefix, strlen(defs_prefix)) != 0)
            continue;
        const char *name = ref + strlen(defs_prefix);
        const json_t *method_schema =
            json_object_get(json_object_get(json_object_get(defs, name), "properties"), "method");
        const char *method_const = json_string_value(json_object_get(method_schema, "const"));
        if (method_const && strcmp(method_const, method) == 0)
            return name;
    }
    return NULL;
}

/* Notifications and server-to-client requests: the envelope, then the union member. */
static int check_method_message(const json_t *root, const struct revision *rev,
                                const json_t *message, const char *envelope,
                                const char *union_name, const char *kind, char *reason,
                                size_t reason_size)
{
    if (validate_definition(root, envelope, message, reason, reason_size) != 0)
        return -1;
    const char *method = json_string_value(json_object_get(message, "method"));
    if (!json_object_get(json_object_get(root, "$defs"), union_name)) {
        set_reason(reason, reason_size, "/method: revision %s has no %s (got \"%s\")", rev->name,
                   kind, method);
        return -1;
    }
    const char *member = union_member_for_method(root, union_name, method);
    if (!member) {
        set_reason(reason, reason_size, "/method: \"%s\" is not in %s of revision %s", method,
                   union_name, rev->name);
        return -1;
    }
    return validate_definition(root, member, message, reason, reason_size);
}

int schema_check_server_message(const json_t *message, const char *request_method,
                                const char *revision, char *reason, size_t reason_size)
{
    const struct revision *rev = find_revision(revision, reason, reason_size);
    if (!rev)
        return -1;
    const json_t *root = schema_check_load(rev->file, reason, reason_size);
    if (!root)
        return -1;
    if (!json_is_object(message)) {
        set_reason(reason, reason_size, "(root): a JSON-RPC message is an object, got %s",
                   message ? type_name(message) : "nothing");
        return -1;
    }

    bool has_result = json_object_get(message, "result") != NULL;
    bool has_error = json_object_get(message, "error") != NULL;
    if (json_object_get(message, "method")) {
        if (json_object_get(message, "id"))
            return check_method_message(root, rev, message, "JSONRPCRequest", "ServerRequest",
                                        "server-to-client requests", reason, reason_size);
        return check_method_message(root, rev, message, "JSONRPCNotification", "ServerNotification",
                                    "server notifications", reason, reason_size);
    }
    if (has_result && has_error) {
        set_reason(reason, reason_size,
                   "(root): a response carries \"result\" or \"error\", not both");
        return -1;
    }
    if (has_result)
        return check_result_response(root, rev, message, request_method, reason, reason_size);
    if (has_error)
        return check_error_response(root, rev, message, reason, reason_size);
    set_reason(reason, reason_size,
               "(root): not a JSON-RPC message: no \"method\", \"result\" or \"error\"");
    return -1;
}
