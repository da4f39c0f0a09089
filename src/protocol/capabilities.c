/*
 * The ClientCapabilities object a client advertises (digest sections 2.2.1
 * and 10.1). A client must not promise what it cannot do, so every key comes
 * from a callback the user actually set.
 */
#include "mcp/capabilities.h"

/* Adds key: {} to obj. Returns false on allocation failure. */
static bool add_empty_object(json_t *obj, const char *key)
{
    return json_object_set_new(obj, key, json_object()) == 0;
}

/* Adds key: <obj_new> to caps, taking obj_new even on failure. */
static bool add_object(json_t *caps, const char *key, json_t *obj_new)
{
    return obj_new && json_object_set_new(caps, key, obj_new) == 0;
}

static json_t *roots_capability(const mcp_client_caps_spec_t *spec, bool legacy)
{
    json_t *roots = json_object();
    /* 2026-07-28 dropped roots.listChanged; only legacy peers understand it. */
    if (roots && legacy && spec->roots_list_changed &&
        json_object_set_new(roots, "listChanged", json_true()) != 0) {
        json_decref(roots);
        return NULL;
    }
    return roots;
}

static json_t *sampling_capability(const mcp_client_caps_spec_t *spec)
{
    json_t *sampling = json_object();
    if (!sampling)
        return NULL;
    bool ok = true;
    if (spec->sampling_tools)
        ok = ok && add_empty_object(sampling, "tools");
    if (spec->sampling_context)
        ok = ok && add_empty_object(sampling, "context");
    if (!ok) {
        json_decref(sampling);
        return NULL;
    }
    return sampling;
}

/* Always names the modes: a bare {} would mean "form only" to a peer. */
static json_t *elicitation_capability(const mcp_client_caps_spec_t *spec)
{
    json_t *elicitation = json_object();
    if (!elicitation)
        return NULL;
    bool ok = true;
    if (spec->elicitation_form)
        ok = ok && add_empty_object(elicitation, "form");
    if (spec->elicitation_url)
        ok = ok && add_empty_object(elicitation, "url");
    if (!ok) {
        json_decref(elicitation);
        return NULL;
    }
    return elicitation;
}

json_t *mcp_client_capabilities_build(const mcp_client_caps_spec_t *spec)
{
    json_t *caps = json_object();
    if (!caps || !spec)
        return caps;

    bool legacy = spec->era == MCP_ERA_LEGACY;
    bool ok = true;
    /* Keys in the order of the ClientCapabilities schema. */
    if (spec->roots)
        ok = ok && add_object(caps, "roots", roots_capability(spec, legacy));
    if (spec->sampling)
        ok = ok && add_object(caps, "sampling", sampling_capability(spec));
    if (spec->elicitation_form || spec->elicitation_url)
        ok = ok && add_object(caps, "elicitation", elicitation_capability(spec));
    /* The 2025-11-25 schema has no "extensions" field. */
    if (!legacy && json_is_object(spec->extensions) && json_object_size(spec->extensions) > 0)
        ok = ok && add_object(caps, "extensions", json_deep_copy(spec->extensions));

    if (!ok) {
        json_decref(caps);
        return NULL;
    }
    return caps;
}
