/*
 * Typing text by a JSON Schema (see schema_value.h for the rules).
 */
#include "schema_value.h"

#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The JSON types, as a set. */
enum {
    T_NULL = 1u << 0,
    T_BOOLEAN = 1u << 1,
    T_INTEGER = 1u << 2,
    T_NUMBER = 1u << 3,
    T_OBJECT = 1u << 4,
    T_ARRAY = 1u << 5,
    T_STRING = 1u << 6,
    T_ANY = (1u << 7) - 1
};

/* Nesting followed through oneOf/anyOf/items: schemas from a server are
 * input, and deep ones are not worth understanding. */
#define MAX_DEPTH 8

static const struct {
    const char *name;
    unsigned bit;
} type_names[] = {
    {"null", T_NULL},     {"boolean", T_BOOLEAN}, {"integer", T_INTEGER}, {"number", T_NUMBER},
    {"object", T_OBJECT}, {"array", T_ARRAY},     {"string", T_STRING},
};

static unsigned type_of_value(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_NULL:
        return T_NULL;
    case JSON_TRUE:
    case JSON_FALSE:
        return T_BOOLEAN;
    case JSON_INTEGER:
        return T_INTEGER;
    case JSON_REAL:
        return T_NUMBER;
    case JSON_OBJECT:
        return T_OBJECT;
    case JSON_ARRAY:
        return T_ARRAY;
    case JSON_STRING:
        return T_STRING;
    }
    return 0;
}

static unsigned type_bit(const char *name)
{
    for (size_t i = 0; name && i < sizeof type_names / sizeof type_names[0]; i++)
        if (strcmp(type_names[i].name, name) == 0)
            return type_names[i].bit;
    return 0;
}

/* The types a schema allows; T_ANY when it does not say. */
static unsigned types_of(const json_t *schema, int depth)
{
    if (!json_is_object(schema) || depth > MAX_DEPTH)
        return T_ANY;
    unsigned types = 0;
    const json_t *type = json_object_get(schema, "type");
    if (json_is_string(type)) {
        types = type_bit(json_string_value(type));
    } else if (json_is_array(type)) {
        size_t i;
        const json_t *t;
        json_array_foreach(type, i, t)
            types |= type_bit(json_string_value(t));
    }
    if (types) {
        if (types & T_NUMBER)
            types |= T_INTEGER; /* an integer is a number */
        return types;
    }
    const json_t *constant = json_object_get(schema, "const");
    if (constant)
        return type_of_value(constant);
    const json_t *choices = json_object_get(schema, "enum");
    if (json_is_array(choices)) {
        size_t i;
        const json_t *v;
        json_array_foreach(choices, i, v)
            types |= type_of_value(v);
        return types ? types : T_ANY;
    }
    static const char *const branches[] = {"oneOf", "anyOf"};
    for (size_t b = 0; b < 2; b++) {
        const json_t *list = json_object_get(schema, branches[b]);
        if (!json_is_array(list))
            continue;
        size_t i;
        const json_t *branch;
        json_array_foreach(list, i, branch)
            types |= types_of(branch, depth + 1);
        return types ? types : T_ANY;
    }
    return T_ANY;
}

static const json_t *items_of(const json_t *schema)
{
    const json_t *items = json_object_get(schema, "items");
    return json_is_object(items) ? items : NULL;
}

bool schema_value_is_array(const json_t *schema)
{
    return types_of(schema, 0) == T_ARRAY;
}

bool schema_value_is_boolean(const json_t *schema)
{
    return types_of(schema, 0) == T_BOOLEAN;
}

/* ------------------------------------------------------------------------
 * Choices
 * ------------------------------------------------------------------------ */

static void add_choice(json_t *list, const json_t *value, const char *title)
{
    json_t *choice = json_pack("{s:O}", "value", value);
    if (choice && title)
        json_object_set_new(choice, "title", json_string(title));
    json_array_append_new(list, choice);
}

static json_t *choices_here(const json_t *schema)
{
    if (!json_is_object(schema))
        return NULL;
    const json_t *constant = json_object_get(schema, "const");
    const json_t *values = json_object_get(schema, "enum");
    json_t *list = json_array();
    if (!list)
        return NULL;
    if (constant) {
        add_choice(list, constant, json_string_value(json_object_get(schema, "title")));
        return list;
    }
    if (json_is_array(values)) {
        /* enumNames: the titles of a legacy (2025-06-18) enum. */
        const json_t *names = json_object_get(schema, "enumNames");
        size_t i;
        const json_t *v;
        json_array_foreach(values, i, v)
            add_choice(list, v, json_string_value(json_array_get(names, i)));
        return list;
    }
    static const char *const branches[] = {"oneOf", "anyOf"};
    for (size_t b = 0; b < 2; b++) {
        const json_t *alternatives = json_object_get(schema, branches[b]);
        if (!json_is_array(alternatives) || json_array_size(alternatives) == 0)
            continue;
        size_t i;
        const json_t *alt;
        json_array_foreach(alternatives, i, alt) {
            const json_t *c = json_object_get(alt, "const");
            if (!c) {
                json_decref(list);
                return NULL; /* not a list of choices */
            }
            add_choice(list, c, json_string_value(json_object_get(alt, "title")));
        }
        return list;
    }
    json_decref(list);
    return NULL;
}

json_t *schema_value_choices(const json_t *schema)
{
    json_t *choices = choices_here(schema);
    if (!choices && schema_value_is_array(schema))
        choices = choices_here(items_of(schema));
    return choices;
}

/* Is value one of the choices? */
static bool among(const json_t *choices, const json_t *value)
{
    size_t i;
    const json_t *c;
    json_array_foreach(choices, i, c)
        if (json_equal(json_object_get(c, "value"), (json_t *)value))
            return true;
    return false;
}

/* "a, b, c" (the values of the choices, strings unquoted) into buf. */
static void list_choices(const json_t *choices, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    size_t i;
    const json_t *c;
    json_array_foreach(choices, i, c) {
        const json_t *v = json_object_get(c, "value");
        char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY);
        int n = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "",
                         text ? text : json_string_value(v));
        free(text);
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    }
}

/* ------------------------------------------------------------------------
 * Checking a typed value
 * ------------------------------------------------------------------------ */

static bool number_kw(const json_t *schema, const char *key, double *out)
{
    const json_t *v = json_object_get(schema, key);
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return true;
}

static size_t utf8_length(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

static bool digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

/* YYYY-MM-DD with a plausible month and day. */
static bool is_date(const char *s)
{
    if (strlen(s) < 10 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' ||
        !digits(s + 8, 2))
        return false;
    int month = (s[5] - '0') * 10 + (s[6] - '0'), day = (s[8] - '0') * 10 + (s[9] - '0');
    return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

/* The formats an elicitation schema may name, checked loosely: the point
 * is to catch typing mistakes, not to judge addresses. */
static bool format_ok(const char *format, const char *s)
{
    if (strcmp(format, "email") == 0) {
        const char *at = strchr(s, '@');
        return at && at > s && at[1] && !strchr(at + 1, '@') && !strchr(s, ' ');
    }
    if (strcmp(format, "uri") == 0) {
        const char *colon = strchr(s, ':');
        if (!colon || colon == s || !isalpha((unsigned char)s[0]) || strchr(s, ' '))
            return false;
        for (const char *p = s; p < colon; p++)
            if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
                return false;
        return true;
    }
    if (strcmp(format, "date") == 0)
        return strlen(s) == 10 && is_date(s);
    if (strcmp(format, "date-time") == 0)
        return is_date(s) && (s[10] == 'T' || s[10] == 't') && strlen(s) >= 20;
    return true; /* a format we do not know: the server judges */
}

static const char *format_name(const char *format)
{
    if (strcmp(format, "email") == 0)
        return "an email address";
    if (strcmp(format, "uri") == 0)
        return "a URI (scheme:...)";
    if (strcmp(format, "date") == 0)
        return "a date (YYYY-MM-DD)";
    if (strcmp(format, "date-time") == 0)
        return "a date and time (YYYY-MM-DDTHH:MM:SSZ)";
    return format;
}

static bool check(const json_t *schema, const json_t *value, int depth, char *why, size_t cap);

static bool check_number(const json_t *schema, double x, char *why, size_t cap)
{
    double bound;
    if (number_kw(schema, "minimum", &bound) && x < bound)
        return snprintf(why, cap, "must be at least %g", bound), false;
    if (number_kw(schema, "maximum", &bound) && x > bound)
        return snprintf(why, cap, "must be at most %g", bound), false;
    if (number_kw(schema, "exclusiveMinimum", &bound) && x <= bound)
        return snprintf(why, cap, "must be more than %g", bound), false;
    if (number_kw(schema, "exclusiveMaximum", &bound) && x >= bound)
        return snprintf(why, cap, "must be less than %g", bound), false;
    return true;
}

static bool check_string(const json_t *schema, const char *s, char *why, size_t cap)
{
    double bound;
    size_t len = utf8_length(s);
    if (number_kw(schema, "minLength", &bound) && (double)len < bound)
        return snprintf(why, cap, "must be at least %g characters long", bound), false;
    if (number_kw(schema, "maxLength", &bound) && (double)len > bound)
        return snprintf(why, cap, "must be at most %g characters long", bound), false;
    const char *format = json_string_value(json_object_get(schema, "format"));
    if (format && !format_ok(format, s))
        return snprintf(why, cap, "must be %s", format_name(format)), false;
    return true;
}

static bool check_array(const json_t *schema, const json_t *array, int depth, char *why,
                        size_t cap)
{
    double bound;
    size_t n = json_array_size(array);
    if (number_kw(schema, "minItems", &bound) && (double)n < bound)
        return snprintf(why, cap, "needs at least %g items", bound), false;
    if (number_kw(schema, "maxItems", &bound) && (double)n > bound)
        return snprintf(why, cap, "takes at most %g items", bound), false;
    const json_t *items = items_of(schema);
    size_t i;
    const json_t *item;
    json_array_foreach(array, i, item)
        if (items && !check(items, item, depth + 1, why, cap))
            return false;
    return true;
}

static bool check(const json_t *schema, const json_t *value, int depth, char *why, size_t cap)
{
    if (!json_is_object(schema) || depth > MAX_DEPTH)
        return true;
    unsigned types = types_of(schema, depth);
    unsigned have = type_of_value(value);
    if (!(types & have)) {
        char want[64];
        snprintf(why, cap, "must be %s", schema_value_type_name(schema, want, sizeof want));
        return false;
    }
    json_t *choices = choices_here(schema);
    if (choices && !among(choices, value)) {
        char list[512];
        list_choices(choices, list, sizeof list);
        snprintf(why, cap, "must be one of: %s", list);
        json_decref(choices);
        return false;
    }
    json_decref(choices);
    if (json_is_number(value))
        return check_number(schema, json_number_value(value), why, cap);
    if (json_is_string(value))
        return check_string(schema, json_string_value(value), why, cap);
    if (json_is_array(value))
        return check_array(schema, value, depth, why, cap);
    return true;
}

bool schema_value_check(const json_t *schema, const json_t *value, char *why, size_t why_cap)
{
    return check(schema, value, 0, why, why_cap);
}

/* ------------------------------------------------------------------------
 * Typing text
 * ------------------------------------------------------------------------ */

/* A JSON literal of one of `kinds`, or NULL. */
static json_t *json_literal(const char *text, unsigned kinds)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    if (v && !(type_of_value(v) & kinds)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

static json_t *loose_boolean(const char *text)
{
    static const char *const yes[] = {"true", "yes", "y", "on"};
    static const char *const no[] = {"false", "no", "n", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0)
            return json_true();
        if (strcasecmp(text, no[i]) == 0)
            return json_false();
    }
    return NULL;
}

/* "a, b,c" as an array of items typed by `items`; NULL when an item does
 * not type. */
static json_t *comma_list(const json_t *items, const char *text, int depth)
{
    json_t *array = json_array();
    if (!array || !*text)
        return array;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len > 0 && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len > 0 && isspace((unsigned char)p[len - 1]))
            len--;
        char word[1024];
        if (len >= sizeof word) {
            json_decref(array);
            return NULL;
        }
        memcpy(word, p, len);
        word[len] = '\0';
        json_t *item = NULL;
        char ignored[8];
        unsigned item_types = types_of(items, depth + 1);
        if (item_types & (T_OBJECT | T_ARRAY) && item_types != T_ANY) {
            json_decref(array);
            return NULL; /* nested structures need JSON */
        }
        if (!schema_value_parse(items, word, &item, ignored, sizeof ignored)) {
            json_decref(array);
            return NULL;
        }
        json_array_append_new(array, item);
        if (!comma)
            return array;
        p = comma + 1;
    }
}

static json_t *type_text(const json_t *schema, const char *text, int depth)
{
    unsigned types = types_of(schema, depth);
    bool told = types != T_ANY;
    json_t *v;
    if ((types & T_NULL) && strcmp(text, "null") == 0)
        return json_null();
    if ((types & T_BOOLEAN) && (v = told ? loose_boolean(text) : json_literal(text, T_BOOLEAN)))
        return v;
    if ((types & T_INTEGER) && (v = json_literal(text, T_INTEGER)))
        return v;
    if ((types & T_NUMBER) && (v = json_literal(text, T_NUMBER | T_INTEGER)))
        return v;
    if ((types & T_OBJECT) && (v = json_literal(text, T_OBJECT)))
        return v;
    if (types & T_ARRAY) {
        if ((v = json_literal(text, T_ARRAY)))
            return v;
        if (told && (v = comma_list(items_of(schema), text, depth)))
            return v;
    }
    if (types & T_STRING)
        return json_string(text);
    return NULL;
}

bool schema_value_parse(const json_t *schema, const char *text, json_t **value_out, char *why,
                        size_t why_cap)
{
    *value_out = NULL;
    json_t *v = type_text(schema, text, 0);
    if (!v) {
        char want[256];
        snprintf(why, why_cap, "expected %s, got \"%s\"",
                 schema_value_describe(schema, want, sizeof want), text);
        return false;
    }
    char reason[256];
    if (!check(schema, v, 0, reason, sizeof reason)) {
        snprintf(why, why_cap, "\"%s\" %s", text, reason);
        json_decref(v);
        return false;
    }
    *value_out = v;
    return true;
}

/* ------------------------------------------------------------------------
 * Describing
 * ------------------------------------------------------------------------ */

const char *schema_value_type_name(const json_t *schema, char *buf, size_t cap)
{
    unsigned types = types_of(schema, 0);
    if (types == T_ANY) {
        snprintf(buf, cap, "any");
        return buf;
    }
    if (types & T_NUMBER)
        types &= ~(unsigned)T_INTEGER;
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++) {
        if (!(types & type_names[i].bit))
            continue;
        const char *name = type_names[i].name;
        char array_of[64];
        if (type_names[i].bit == T_ARRAY && items_of(schema)) {
            char item[48];
            const json_t *items = items_of(schema);
            /* An array of choices reads best as "string[]". */
            unsigned item_types = types_of(items, 1);
            if (item_types != T_ANY) {
                schema_value_type_name(items, item, sizeof item);
                snprintf(array_of, sizeof array_of, "%s[]", item);
                name = array_of;
            }
        }
        int n = snprintf(buf + used, cap - used, "%s%s", used ? "|" : "", name);
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    }
    return buf;
}

const char *schema_value_describe(const json_t *schema, char *buf, size_t cap)
{
    json_t *choices = schema_value_choices(schema);
    if (choices) {
        char list[512];
        list_choices(choices, list, sizeof list);
        snprintf(buf, cap, "%s: %s", schema_value_is_array(schema) ? "any of" : "one of", list);
        json_decref(choices);
        return buf;
    }
    unsigned types = types_of(schema, 0);
    if (types != T_ANY && (types & T_NUMBER))
        types &= ~(unsigned)T_INTEGER; /* added by types_of: an integer is a number */
    const char *format = json_string_value(json_object_get(schema, "format"));
    double lo, hi;
    bool has_lo = number_kw(schema, "minimum", &lo), has_hi = number_kw(schema, "maximum", &hi);
    const char *article = types == T_INTEGER ? "an integer" : types == T_NUMBER ? "a number"
                        : types == T_BOOLEAN                ? "true or false"
                                                            : NULL;
    if (types == T_STRING && format) {
        snprintf(buf, cap, "%s", format_name(format));
    } else if ((types == T_INTEGER || types == T_NUMBER) && has_lo && has_hi) {
        snprintf(buf, cap, "%s from %g to %g", article, lo, hi);
    } else if ((types == T_INTEGER || types == T_NUMBER) && has_lo) {
        snprintf(buf, cap, "%s of at least %g", article, lo);
    } else if ((types == T_INTEGER || types == T_NUMBER) && has_hi) {
        snprintf(buf, cap, "%s of at most %g", article, hi);
    } else if (article) {
        snprintf(buf, cap, "%s", article);
    } else if (types == T_STRING) {
        snprintf(buf, cap, "a string");
    } else if (types == T_ANY) {
        snprintf(buf, cap, "any value");
    } else {
        char name[64];
        snprintf(buf, cap, "%s", schema_value_type_name(schema, name, sizeof name));
    }
    return buf;
}
