/*
 * KEY=VALUE words -> tool and prompt arguments.
 */
#include "args_typing.h"

#include <stdio.h>
#include <string.h>

#include "schema_value.h"

#define MAX_KEY 256

bool args_split(const char *word, char *key_buf, size_t key_cap, const char **value,
                bool *raw_json)
{
    const char *eq = strchr(word, '=');
    if (!eq || eq == word)
        return false;
    size_t key_len = (size_t)(eq - word);
    *raw_json = key_len > 1 && eq[-1] == ':';
    if (*raw_json)
        key_len--;
    if (key_len == 0 || key_len >= key_cap)
        return false;
    memcpy(key_buf, word, key_len);
    key_buf[key_len] = '\0';
    *value = eq + 1;
    return true;
}

/* The names of the object's keys, "a, b, c", into buf. */
static const char *key_list(const json_t *object, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)object, key, v) {
        int n = snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", key);
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    }
    if (!used)
        snprintf(buf, cap, "none");
    return buf;
}

/* May the schema's object take a key it does not list? */
static bool takes_other_keys(const json_t *schema, const json_t *properties)
{
    if (!json_is_object(properties))
        return true;
    const json_t *additional = json_object_get(schema, "additionalProperties");
    return json_is_true(additional) || json_is_object(additional) ||
           json_object_get(schema, "patternProperties") != NULL;
}

/* Sets args[key] = value (stolen), appending when the key was given
 * before and the property is an array. */
static bool assign(json_t *args, const char *key, json_t *value, const json_t *property,
                   bool given_before, char *why, size_t cap)
{
    if (!given_before) {
        if (json_object_set_new(args, key, value) == 0)
            return true;
        /* jansson refuses keys that are not UTF-8 (and fails on memory) */
        snprintf(why, cap, "an argument name is not valid UTF-8");
        return false;
    }
    json_t *current = json_object_get(args, key);
    if (!schema_value_is_array(property) || !json_is_array(current)) {
        json_decref(value);
        snprintf(why, cap, "argument \"%s\" is given twice", key);
        return false;
    }
    if (json_is_array(value))
        json_array_extend(current, value);
    else
        json_array_append(current, value);
    json_decref(value);
    return true;
}

bool args_tool_arguments(const json_t *input_schema, const json_t *base,
                         const char *const *words, size_t n_words, json_t **args_out, char *why,
                         size_t why_cap)
{
    *args_out = NULL;
    const json_t *properties = json_object_get(input_schema, "properties");
    json_t *args = json_is_object(base) ? json_deep_copy(base) : json_object();
    json_t *given = json_object(); /* the keys the words set */
    if (!args || !given) {
        json_decref(args);
        json_decref(given);
        snprintf(why, why_cap, "out of memory");
        return false;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < n_words; i++) {
        char key[MAX_KEY], names[512], reason[512];
        const char *text;
        bool raw;
        if (!args_split(words[i], key, sizeof key, &text, &raw)) {
            snprintf(why, why_cap, "expected KEY=VALUE (or KEY:=JSON), got \"%s\"", words[i]);
            ok = false;
            break;
        }
        const json_t *property = json_object_get(properties, key);
        if (!property && !takes_other_keys(input_schema, properties)) {
            snprintf(why, why_cap, "the tool has no argument \"%s\" (it takes: %s)", key,
                     key_list(properties, names, sizeof names));
            ok = false;
            break;
        }
        json_t *value = NULL;
        if (raw) {
            json_error_t jerr;
            value = json_loads(text, JSON_DECODE_ANY, &jerr);
            if (!value)
                snprintf(why, why_cap, "argument \"%s\": not JSON: %s", key, jerr.text);
        } else if (!schema_value_parse(property, text, &value, reason, sizeof reason)) {
            snprintf(why, why_cap, "argument \"%s\": %s", key, reason);
        }
        ok = value && assign(args, key, value, property, json_object_get(given, key) != NULL,
                             why, why_cap);
        json_object_set_new(given, key, json_true());
    }
    const json_t *required = json_object_get(input_schema, "required");
    size_t i;
    const json_t *name;
    json_array_foreach(ok ? required : NULL, i, name) {
        const char *key = json_string_value(name);
        if (key && !json_object_get(args, key)) {
            char want[256];
            snprintf(why, why_cap, "missing argument \"%s\" (%s)", key,
                     schema_value_describe(json_object_get(properties, key), want, sizeof want));
            ok = false;
            break;
        }
    }
    json_decref(given);
    if (!ok) {
        json_decref(args);
        return false;
    }
    *args_out = args;
    return true;
}

bool args_prompt_arguments(const json_t *declared, const char *const *words, size_t n_words,
                           json_t **args_out, char *why, size_t why_cap)
{
    *args_out = NULL;
    json_t *names = json_object(); /* declared name -> required */
    json_t *args = json_object();
    size_t i;
    const json_t *arg;
    json_array_foreach(declared, i, arg) {
        const char *name = json_string_value(json_object_get(arg, "name"));
        if (name)
            json_object_set_new(names, name, json_boolean(json_is_true(json_object_get(arg, "required"))));
    }
    bool ok = names && args;
    for (size_t w = 0; ok && w < n_words; w++) {
        char key[MAX_KEY], list[512];
        const char *value;
        bool raw;
        if (!args_split(words[w], key, sizeof key, &value, &raw) || raw) {
            snprintf(why, why_cap, "expected KEY=VALUE, got \"%s\" (prompt arguments are strings)",
                     words[w]);
            ok = false;
        } else if (declared && !json_object_get(names, key)) {
            snprintf(why, why_cap, "the prompt has no argument \"%s\" (it takes: %s)", key,
                     key_list(names, list, sizeof list));
            ok = false;
        } else if (json_object_get(args, key)) {
            snprintf(why, why_cap, "argument \"%s\" is given twice", key);
            ok = false;
        } else {
            ok = json_object_set_new(args, key, json_string(value)) == 0;
            if (!ok)
                snprintf(why, why_cap, "argument \"%s\" is not valid UTF-8", key);
        }
    }
    const char *name;
    json_t *required;
    json_object_foreach(ok ? names : NULL, name, required) {
        if (json_is_true(required) && !json_object_get(args, name)) {
            snprintf(why, why_cap, "missing argument \"%s\"", name);
            ok = false;
            break;
        }
    }
    json_decref(names);
    if (!ok) {
        json_decref(args);
        return false;
    }
    *args_out = args;
    return true;
}
