/*
 * Keeping a token source's state between runs (mcp_oauth_save,
 * mcp_oauth_restore): the discovered metadata, the registration and the
 * tokens as one JSON object, the expiry in wall-clock time.
 *
 * A DPoP-bound token (and its refresh token, bound too for a public
 * client) is worth nothing without the private key it is bound to: the
 * key is saved with the tokens, as "dpop_key" (the scalar, base64url),
 * and "token_type" says whether the access token is bound to it. The
 * document already holds secrets as strong (the refresh token).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/oauth/oauth_internal.h"
#include "client/oauth/oauth_parse.h"
#include "clock.h"
#include "protocol/base64.h"

#define SAVE_FORMAT "libmcp-oauth-1"

/* Sets `name` to a string copy of `value` when there is one. */
static int set_string(json_t *obj, const char *name, const char *value)
{
    return value ? json_object_set_new(obj, name, json_string(value)) : 0;
}

/* Adds the DPoP key and the token type to the saved tokens. */
static int set_dpop(json_t *tokens, const mcp_oauth_t *o)
{
    if (!o->has_dpop_key)
        return 0;
    char d[64];
    mcp_base64url_encode(o->dpop_key.d, sizeof o->dpop_key.d, d);
    int bad = set_string(tokens, "dpop_key", d) ||
              set_string(tokens, "token_type", o->token_dpop ? "DPoP" : "Bearer");
    explicit_bzero(d, sizeof d);
    return bad;
}

json_t *mcp_oauth_save(mcp_oauth_t *o)
{
    if (!o)
        return NULL;
    pthread_mutex_lock(&o->lock);
    json_t *saved = NULL;
    if (o->server_url && o->as_meta) {
        saved = json_object();
        int bad = !saved || set_string(saved, "format", SAVE_FORMAT) ||
                  set_string(saved, "server_url", o->server_url) ||
                  set_string(saved, "resource", o->resource) ||
                  set_string(saved, "resource_scopes", o->resource_scopes) ||
                  set_string(saved, "issuer", o->issuer) ||
                  json_object_set(saved, "authorization_server", o->as_meta);
        if (!bad && o->reg_client_id) {
            json_t *reg = json_object();
            bad = !reg || set_string(reg, "issuer", o->reg_issuer) ||
                  set_string(reg, "client_id", o->reg_client_id) ||
                  set_string(reg, "client_secret", o->reg_client_secret) ||
                  set_string(reg, "token_endpoint_auth_method", o->reg_auth_method) ||
                  json_object_set_new(saved, "registration", reg);
        }
        if (!bad && (o->access_token || o->refresh_token)) {
            json_t *tokens = json_object();
            bad = !tokens || set_string(tokens, "access_token", o->access_token) ||
                  set_string(tokens, "refresh_token", o->refresh_token) ||
                  set_string(tokens, "scope", o->granted_scope) || set_dpop(tokens, o);
            if (!bad && o->expires_at_ms) /* monotonic now, wall clock there */
                bad = json_object_set_new(tokens, "expires_at",
                                          json_integer((json_int_t)time(NULL) +
                                                       (o->expires_at_ms - mcp_clock_ms()) /
                                                           1000));
            bad = bad || json_object_set_new(saved, "tokens", tokens);
        }
        if (bad) {
            json_decref(saved);
            saved = NULL;
        }
    }
    pthread_mutex_unlock(&o->lock);
    return saved;
}

/* A string member, or NULL; *bad when present but not a string. */
static const char *optional_string(const json_t *obj, const char *name, bool *bad)
{
    const json_t *v = json_object_get(obj, name);
    if (v && !json_is_string(v))
        *bad = true;
    return json_string_value(v);
}

/*
 * Why the saved authorization server metadata cannot be used, or NULL.
 * Restored tokens are renewed at its token endpoint with no discovery
 * first, so what discovery checks is checked here: a token endpoint, and
 * no endpoint that would take credentials over plain HTTP to another
 * machine. The file may have been damaged or edited by hand.
 */
static const char *saved_endpoints_problem(const json_t *meta, bool insecure)
{
    static const char *const names[] = {"token_endpoint", "authorization_endpoint",
                                        "registration_endpoint"};
    if (!json_is_string(json_object_get(meta, "token_endpoint")))
        return "the saved authorization server has no token endpoint";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const json_t *v = json_object_get(meta, names[i]);
        if (v && (!json_is_string(v) || !oauth_url_is_safe(json_string_value(v), insecure)))
            return "a saved authorization server endpoint is not an https URL (nor http to "
                   "this machine)";
    }
    return NULL;
}

int mcp_oauth_restore(mcp_oauth_t *o, const json_t *saved, mcp_error_t *err)
{
    if (!o || !json_is_object(saved))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "nothing to restore");
    bool bad = false;
    const json_t *reg = json_object_get(saved, "registration");
    const json_t *tokens = json_object_get(saved, "tokens");
    const json_t *meta = json_object_get(saved, "authorization_server");
    const json_t *expires = json_object_get(tokens, "expires_at");
    const char *format = optional_string(saved, "format", &bad);
    const char *server_url = optional_string(saved, "server_url", &bad);
    const char *resource = optional_string(saved, "resource", &bad);
    const char *issuer = optional_string(saved, "issuer", &bad);
    const char *scopes = optional_string(saved, "resource_scopes", &bad);
    const char *reg_issuer = optional_string(reg, "issuer", &bad);
    const char *reg_id = optional_string(reg, "client_id", &bad);
    const char *reg_secret = optional_string(reg, "client_secret", &bad);
    const char *reg_method = optional_string(reg, "token_endpoint_auth_method", &bad);
    const char *access = optional_string(tokens, "access_token", &bad);
    const char *refresh_token = optional_string(tokens, "refresh_token", &bad);
    const char *scope = optional_string(tokens, "scope", &bad);
    const char *dpop_key = optional_string(tokens, "dpop_key", &bad);
    const char *token_type = optional_string(tokens, "token_type", &bad);
    if (bad || !format || strcmp(format, SAVE_FORMAT) != 0 || !server_url || !issuer ||
        !json_is_object(meta) || (reg && (!json_is_object(reg) || !reg_id)) ||
        (tokens && !json_is_object(tokens)) || (expires && !json_is_integer(expires)) ||
        (token_type && strcmp(token_type, "DPoP") != 0 && strcmp(token_type, "Bearer") != 0) ||
        (token_type && strcmp(token_type, "DPoP") == 0 && !dpop_key))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "not OAuth state saved by mcp_oauth_save() (" SAVE_FORMAT ")");
    const char *problem = saved_endpoints_problem(meta, o->http.insecure);
    if (problem)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "not usable OAuth state: %s", problem);
    /* Restored tokens are renewed at the saved token endpoint, with the
     * pre-registered credentials: only the pinned server's will do. */
    const char *meta_issuer = oauth_str_member(meta, "issuer");
    if (o->pinned_issuer && (strcmp(issuer, o->pinned_issuer) != 0 || !meta_issuer ||
                             strcmp(meta_issuer, o->pinned_issuer) != 0))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "the OAuth state was saved for the authorization server %s, not %s, "
                             "the issuer this client is set up for",
                             issuer, o->pinned_issuer);

    /* Built aside, then moved in: a failure leaves everything as it was. */
    mcp_oauth_t next = {0};
    if (dpop_key) {
        /* Sized for what the 43 characters of 32 bytes decode to, at most. */
        uint8_t d[OAUTH_ES256_KEY_SIZE + 3];
        size_t d_len = 0, len = strlen(dpop_key);
        int rc = len == mcp_base64url_encoded_len(OAUTH_ES256_KEY_SIZE)
                     ? mcp_base64url_decode(dpop_key, len, d, &d_len)
                     : MCP_EINVAL;
        if (rc == MCP_OK && d_len != OAUTH_ES256_KEY_SIZE)
            rc = MCP_EINVAL;
        if (rc == MCP_OK)
            rc = oauth_dpop_key_from_private(&next.dpop_key, d, err);
        explicit_bzero(d, sizeof d);
        if (rc != MCP_OK)
            return mcp_error_set(err, rc == MCP_EUNSUPPORTED ? rc : MCP_EINVAL, 0, NULL,
                                 "the saved DPoP key is not a P-256 private key");
        next.has_dpop_key = true;
        next.token_dpop = token_type && strcmp(token_type, "DPoP") == 0;
    }
    bool ok = oauth_dup_into(&next.server_url, server_url) && oauth_dup_into(&next.resource, resource) &&
              oauth_dup_into(&next.issuer, issuer) && oauth_dup_into(&next.resource_scopes, scopes) &&
              oauth_dup_into(&next.reg_issuer, reg_id ? (reg_issuer ? reg_issuer : issuer) : NULL) &&
              oauth_dup_into(&next.reg_client_id, reg_id) &&
              oauth_dup_into(&next.reg_client_secret, reg_secret) &&
              oauth_dup_into(&next.reg_auth_method, reg_method) &&
              oauth_dup_into(&next.access_token, access) &&
              oauth_dup_into(&next.refresh_token, refresh_token) &&
              oauth_dup_into(&next.granted_scope, scope) &&
              (next.as_meta = json_deep_copy(meta)) != NULL;
    if (expires) {
        /* Compared before subtracting: a saved time near INT64_MIN would
         * overflow the difference. */
        int64_t at_s = (int64_t)json_integer_value(expires), now_s = (int64_t)time(NULL);
        int64_t left_s = at_s <= now_s ? 0 : at_s - now_s;
        if (left_s > OAUTH_MAX_LIFETIME_S)
            left_s = OAUTH_MAX_LIFETIME_S;
        /* Already expired: due at once (0 would mean "never said"). */
        next.expires_at_ms = mcp_clock_ms() + (left_s > 0 ? left_s * 1000 : -1);
    }

    if (!ok) {
        oauth_drop_tokens(&next);
        oauth_drop_registration(&next);
        free(next.server_url);
        free(next.resource);
        free(next.issuer);
        free(next.resource_scopes);
        json_decref(next.as_meta);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    pthread_mutex_lock(&o->lock);
    oauth_drop_tokens(o);
    oauth_drop_registration(o);
    oauth_replace(&o->server_url, next.server_url);
    oauth_replace(&o->resource, next.resource);
    oauth_replace(&o->issuer, next.issuer);
    oauth_replace(&o->resource_scopes, next.resource_scopes);
    json_decref(o->as_meta);
    o->as_meta = next.as_meta;
    o->reg_issuer = next.reg_issuer;
    o->reg_client_id = next.reg_client_id;
    o->reg_client_secret = next.reg_client_secret;
    o->reg_auth_method = next.reg_auth_method;
    o->access_token = next.access_token;
    o->refresh_token = next.refresh_token;
    o->granted_scope = next.granted_scope;
    o->expires_at_ms = next.expires_at_ms;
    o->token_dpop = next.token_dpop;
    if (next.has_dpop_key) {
        o->dpop_key = next.dpop_key;
        o->has_dpop_key = true;
    }
    oauth_replace(&o->as_nonce, NULL);
    pthread_mutex_unlock(&o->lock);
    explicit_bzero(&next.dpop_key, sizeof next.dpop_key);
    return MCP_OK;
}

