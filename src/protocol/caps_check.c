/*
 * Server-side checks of the capabilities a client declared in a request's
 * _meta (digest sections 1.2, 2.2.1, 3.2 and 3.4).
 *
 * Both questions reduce to one: does the declared ClientCapabilities object
 * cover a required one? mcp_client_caps_allow() first spells out what an
 * input request needs, then asks mcp_client_caps_cover().
 */
#include <string.h>

#include "mcp/capabilities.h"

/* The spec reads a bare `"elicitation": {}` as form mode only. */
static bool elicitation_means_form(const char *key, const json_t *declared)
{
    return strcmp(key, "elicitation") == 0 && json_is_object(declared) &&
           !json_object_get(declared, "form") && !json_object_get(declared, "url");
}

/*
 * Does `declared` cover `required` (the values of one capability key)?
 * Objects cover key by key, recursively; any other required value must be
 * matched exactly (a flag such as listChanged: true is a promise that
 * false does not keep). When not covered and `missing` is not NULL,
 * *missing receives the uncovered part of `required` (new reference; NULL
 * only on allocation failure).
 */
static bool covers(const json_t *declared, const json_t *required, json_t **missing);

/* covers({"form":{}}, required), decided without building that object
 * (which could fail for want of memory, and read as "not covered"): only
 * {} and {"form":{}} are covered. */
static bool implicit_form_covers(const json_t *required)
{
    const char *key;
    json_t *want;
    if (!json_is_object(required))
        return false;
    json_object_foreach((json_t *)required, key, want) {
        if (strcmp(key, "form") != 0 || !json_is_object(want) || json_object_size(want) > 0)
            return false;
    }
    return true;
}

static bool covers_object(const json_t *declared, const json_t *required, bool top_level,
                          json_t **missing)
{
    bool covered = true;
    json_t *gap = missing ? json_object() : NULL;
    bool out_of_memory = missing && !gap;
    const char *key;
    json_t *want;

    json_object_foreach((json_t *)required, key, want) {
        if (out_of_memory)
            break;
        const json_t *have = json_object_get(declared, key);
        json_t *part = NULL;
        bool ok;
        if (top_level && elicitation_means_form(key, have) && !gap) {
            ok = implicit_form_covers(want);
        } else if (top_level && elicitation_means_form(key, have)) {
            /* The gap is told as the required part that {"form":{}} does
             * not cover. */
            json_t *form = json_pack("{s:{}}", "form");
            out_of_memory = !form;
            ok = form && covers(form, want, &part);
            json_decref(form);
            if (out_of_memory)
                break;
        } else {
            ok = have && covers(have, want, gap ? &part : NULL);
        }
        if (ok)
            continue;
        covered = false;
        if (!gap)
            break;
        if (json_object_set_new(gap, key, part ? part : json_deep_copy(want)) != 0)
            out_of_memory = true;
    }
    /* Out of memory the gap is not told (NULL): the callers take that for
     * the failure it is, not for a capability the client lacks. */
    if (covered || !missing || out_of_memory) {
        json_decref(gap);
        return covered && !out_of_memory;
    }
    *missing = gap;
    return false;
}

static bool covers(const json_t *declared, const json_t *required, json_t **missing)
{
    if (json_is_object(required) && json_is_object(declared))
        return covers_object(declared, required, false, missing);
    if (!json_is_object(required) && json_equal((json_t *)declared, (json_t *)required))
        return true;
    if (missing)
        *missing = json_deep_copy(required);
    return false;
}

bool mcp_client_caps_cover(const json_t *caps, const json_t *required, json_t **missing_out)
{
    if (missing_out)
        *missing_out = NULL;
    if (!json_is_object(required))
        return true;
    return covers_object(json_is_object(caps) ? caps : NULL, required, true, missing_out);
}

/* True when params carry `key` with a value other than null. */
static bool has_value(const json_t *params, const char *key)
{
    const json_t *v = json_object_get(params, key);
    return v && !json_is_null(v);
}

/*
 * The ClientCapabilities an input request needs (new reference), or NULL
 * when `method` with `params` is not an input request this revision knows.
 */
static json_t *input_request_needs(const char *method, const json_t *params)
{
    if (!method)
        return NULL;

    if (strcmp(method, "elicitation/create") == 0) {
        const json_t *mode = json_object_get(params, "mode");
        const char *m = mode ? json_string_value(mode) : "form";
        if (!m || (strcmp(m, "form") != 0 && strcmp(m, "url") != 0))
            return NULL;
        return json_pack("{s:{s:{}}}", "elicitation", m);
    }

    if (strcmp(method, "sampling/createMessage") == 0) {
        json_t *sampling = json_object();
        if (has_value(params, "tools") || has_value(params, "toolChoice"))
            json_object_set_new(sampling, "tools", json_object());
        const json_t *context = json_object_get(params, "includeContext");
        const char *c = json_string_value(context);
        if (context && !json_is_null(context) && !(c && strcmp(c, "none") == 0))
            json_object_set_new(sampling, "context", json_object());
        return json_pack("{s:o}", "sampling", sampling);
    }

    if (strcmp(method, "roots/list") == 0)
        return json_pack("{s:{}}", "roots");

    return NULL;
}

bool mcp_client_caps_allow(const json_t *caps, const char *method, const json_t *params,
                           json_t **required_out)
{
    if (required_out)
        *required_out = NULL;
    json_t *needs = input_request_needs(method, params);
    if (!needs)
        return false;
    bool allowed = mcp_client_caps_cover(caps, needs, NULL);
    if (!allowed && required_out)
        *required_out = json_incref(needs);
    json_decref(needs);
    return allowed;
}
