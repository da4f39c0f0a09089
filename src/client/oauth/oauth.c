/*
 * The OAuth client (mcp/oauth.h): registration, the authorization code
 * grant with PKCE, the client credentials grant, tokens, refresh and
 * step-up, and the token callback that runs them (discovery:
 * oauth_discovery.c; saving: oauth_state.c; private_key_jwt assertions:
 * oauth_jwt.c; DPoP proofs: oauth_dpop.c; the JWT bearer and enterprise
 * grants: oauth_assertion.c).
 *
 * One mcp_oauth_t holds what it learned about one protected resource: the
 * resource's metadata, its authorization server's metadata, the client's
 * registration with that server, and the tokens. A flow runs under the
 * object's lock, on the thread whose request was refused; the transport
 * sends that request again with the token the flow returns.
 *
 * Every step that reads a server's answer checks it before trusting it:
 * the resource metadata must name a resource covering the server URL, the
 * authorization server metadata must carry the issuer it was fetched for
 * and offer PKCE S256, the redirect must carry the state sent and (RFC
 * 9207) the issuer expected, and the token answer must be a Bearer token
 * (or a DPoP one, when a DPoP proof asked for it).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "client/oauth/oauth_internal.h"
#include "client/oauth/oauth_jwt.h"
#include "client/oauth/oauth_parse.h"
#include "mcp/jsonrpc.h"
#include "protocol/base64.h"

/* RFC 7636: a verifier of 43 to 128 characters; 64 is plenty. */
#define VERIFIER_LEN 64
#define STATE_LEN 32
/* A token is taken as expired this long before the server says (for the
 * clocks' drift and the request's time in flight), or half its lifetime
 * before when that is shorter: a token that lives 30 s or less would
 * otherwise be expired on arrival, and renewed for every request. */
#define EXPIRY_MARGIN_MS 30000

/* ------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------ */

void oauth_replace(char **slot, char *value)
{
    free(*slot);
    *slot = value;
}

/* Frees a secret after overwriting it. */
void oauth_wipe(char **slot)
{
    if (*slot)
        explicit_bzero(*slot, strlen(*slot));
    oauth_replace(slot, NULL);
}

bool oauth_dup_into(char **slot, const char *value)
{
    char *copy = value ? strdup(value) : NULL;
    if (value && !copy)
        return false;
    oauth_replace(slot, copy);
    return true;
}

const char *oauth_str_member(const json_t *obj, const char *name)
{
    return json_string_value(json_object_get(obj, name));
}

bool oauth_array_has(const json_t *array, const char *value)
{
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item) {
        if (json_is_string(item) && strcmp(json_string_value(item), value) == 0)
            return true;
    }
    return false;
}

void oauth_drop_tokens(mcp_oauth_t *o)
{
    oauth_wipe(&o->access_token);
    oauth_wipe(&o->refresh_token);
    oauth_replace(&o->granted_scope, NULL);
    o->expires_at_ms = 0;
    o->token_dpop = false;
}

void oauth_drop_registration(mcp_oauth_t *o)
{
    oauth_replace(&o->reg_issuer, NULL);
    oauth_replace(&o->reg_client_id, NULL);
    oauth_wipe(&o->reg_client_secret);
    oauth_replace(&o->reg_auth_method, NULL);
}

/* ------------------------------------------------------------------------
 * Scopes: space-separated sets
 * ------------------------------------------------------------------------ */

static bool scope_has(const char *set, const char *word, size_t len)
{
    for (const char *p = set; p && *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == len && n > 0 && strncmp(p, word, n) == 0)
            return true;
        p += n;
    }
    return false;
}

/* Whether every scope of `wanted` is in `granted`. */
static bool scope_covers(const char *granted, const char *wanted)
{
    for (const char *p = wanted; p && *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n > 0 && !scope_has(granted, p, n))
            return false;
        p += n;
    }
    return true;
}

/* `a` then the scopes of `b` not in it, each once; NULL for an empty
 * set. *failed on allocation failure. */
char *oauth_scope_union(const char *a, const char *b, bool *failed)
{
    size_t cap = (a ? strlen(a) : 0) + (b ? strlen(b) : 0) + 2;
    char *out = malloc(cap);
    if (!out) {
        *failed = true;
        return NULL;
    }
    size_t len = 0;
    const char *sets[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        for (const char *p = sets[s]; p && *p;) {
            while (*p == ' ')
                p++;
            size_t n = strcspn(p, " ");
            out[len] = '\0';
            if (n > 0 && !scope_has(out, p, n)) {
                if (len > 0)
                    out[len++] = ' ';
                memcpy(out + len, p, n);
                len += n;
            }
            p += n;
        }
    }
    out[len] = '\0';
    if (len == 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* ------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------ */

static const char *client_id(const mcp_oauth_t *o)
{
    return o->client_id ? o->client_id : o->reg_client_id;
}

static const char *client_secret(const mcp_oauth_t *o)
{
    return o->client_id ? o->client_secret : o->reg_client_secret;
}

/* Dynamic client registration (RFC 7591). */
static int register_client(mcp_oauth_t *o)
{
    mcp_error_t *err = &o->last_err;
    const char *endpoint = oauth_str_member(o->as_meta, "registration_endpoint");
    if (!endpoint)
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the authorization server %s takes no registrations, and no client "
                             "id was given", o->issuer);
    json_t *request = json_pack("{s:s, s:[s], s:[s,s], s:[s], s:s}", "client_name",
                                o->client_name, "redirect_uris", o->redirect_uri, "grant_types",
                                "authorization_code", "refresh_token", "response_types", "code",
                                "application_type", o->application_type);
    /* mcp_json_dump, not json_dumps: out of memory, jansson may write a
     * text with a key left out rather than fail. */
    char *body = mcp_json_dump(request, NULL);
    json_decref(request);
    if (!body)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    oauth_http_response_t r;
    int rc = oauth_http_request(&o->http, endpoint, "application/json", body, NULL, &r, err);
    free(body);
    if (rc != MCP_OK)
        return rc;
    json_t *answer = oauth_http_json(&r);
    const char *id = oauth_str_member(answer, "client_id");
    if (!id) {
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL, "registration at %s refused: HTTP %ld %.200s",
                           endpoint, r.status, r.body ? r.body : "");
    } else if (!oauth_dup_into(&o->reg_client_id, id) ||
               !oauth_dup_into(&o->reg_client_secret, oauth_str_member(answer, "client_secret")) ||
               !oauth_dup_into(&o->reg_auth_method, oauth_str_member(answer, "token_endpoint_auth_method")) ||
               !oauth_dup_into(&o->reg_issuer, o->issuer)) {
        oauth_drop_registration(o);
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    json_decref(answer);
    oauth_http_response_free(&r);
    return rc;
}

/* A client id for the current authorization server: the pre-registered
 * one, the kept registration, a metadata document URL, or a new
 * registration, in this order (MCP authorization, client registration). */
static int ensure_client(mcp_oauth_t *o)
{
    if (o->client_id || (o->reg_client_id && o->reg_issuer))
        return MCP_OK;
    if (o->client_metadata_url &&
        json_is_true(json_object_get(o->as_meta, "client_id_metadata_document_supported"))) {
        oauth_drop_registration(o);
        if (!oauth_dup_into(&o->reg_client_id, o->client_metadata_url) ||
            !oauth_dup_into(&o->reg_issuer, o->issuer) || !oauth_dup_into(&o->reg_auth_method, "none"))
            return mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
        return MCP_OK;
    }
    return register_client(o);
}

/* ------------------------------------------------------------------------
 * The token endpoint
 * ------------------------------------------------------------------------ */

/* How the client authenticates at the token endpoint: with its private
 * key when it has one; else what its registration says, else the first
 * the server supports of basic, post and none (RFC 8414: basic when the
 * server lists none). */
static const char *auth_method(const mcp_oauth_t *o)
{
    if (o->has_key)
        return "private_key_jwt";
    if (!client_secret(o))
        return "none";
    if (!o->client_id && o->reg_auth_method)
        return o->reg_auth_method;
    const json_t *supported = json_object_get(o->as_meta, "token_endpoint_auth_methods_supported");
    if (!json_is_array(supported) || oauth_array_has(supported, "client_secret_basic"))
        return "client_secret_basic";
    if (oauth_array_has(supported, "client_secret_post"))
        return "client_secret_post";
    return oauth_array_has(supported, "none") ? "none" : "client_secret_basic";
}

char *oauth_basic_credentials(const char *id, const char *secret)
{
    char *user = oauth_form_encode(id), *pass = oauth_form_encode(secret);
    char *joined = NULL, *out = NULL;
    if (user && pass && asprintf(&joined, "%s:%s", user, pass) >= 0) {
        size_t n = strlen(joined);
        out = malloc(6 + mcp_base64_encoded_len(n) + 1);
        if (out) {
            memcpy(out, "Basic ", 6);
            mcp_base64_encode(joined, n, out + 6);
        }
        explicit_bzero(joined, n);
    }
    free(joined);
    if (pass)
        explicit_bzero(pass, strlen(pass));
    free(user);
    free(pass);
    return out;
}

/* RFC 7523 §2.2: the client_assertion_type of a JWT. */
#define JWT_BEARER_ASSERTION "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

/* Adds the client's authentication to a token request: a JWT signed with
 * its key (private_key_jwt; RFC 7523 §3: the audience is the
 * authorization server's issuer identifier), the client id in the form
 * (none, post) and the secret in the form (post) or a Basic header
 * (basic). o->last_err says why it failed. */
static int add_client_auth(mcp_oauth_t *o, char **form, char **authorization)
{
    const char *method = auth_method(o);
    int rc = MCP_OK;
    if (strcmp(method, "private_key_jwt") == 0) {
        char *assertion = NULL;
        rc = oauth_client_assertion(o->key, o->client_id, o->issuer, (int64_t)time(NULL),
                                    &assertion, &o->last_err);
        if (rc != MCP_OK)
            return rc;
        rc = oauth_form_add(form, "client_assertion_type", JWT_BEARER_ASSERTION);
        if (rc == MCP_OK)
            rc = oauth_form_add(form, "client_assertion", assertion);
        free(assertion);
    } else if (strcmp(method, "client_secret_basic") == 0) {
        if (!(*authorization = oauth_basic_credentials(client_id(o), client_secret(o))))
            rc = MCP_ENOMEM;
    } else {
        rc = oauth_form_add(form, "client_id", client_id(o));
        if (rc == MCP_OK && strcmp(method, "client_secret_post") == 0)
            rc = oauth_form_add(form, "client_secret", client_secret(o));
    }
    return rc == MCP_OK ? MCP_OK : mcp_error_set(&o->last_err, rc, 0, NULL, "out of memory");
}

/* Whether token requests carry DPoP proofs: when asked to, and the
 * authorization server takes ES256 proofs (RFC 9449 §5.1). */
static bool dpop_in_use(const mcp_oauth_t *o)
{
    return o->dpop &&
           oauth_array_has(json_object_get(o->as_meta, "dpop_signing_alg_values_supported"),
                           "ES256");
}

/* The DPoP proof of a token request to `endpoint` (NULL when DPoP is not
 * in use), with the authorization server's last nonce; the key is made on
 * first use. */
static int token_request_proof(mcp_oauth_t *o, const char *endpoint, char **proof)
{
    *proof = NULL;
    if (!dpop_in_use(o))
        return MCP_OK;
    if (!o->has_dpop_key) {
        int rc = oauth_dpop_key_new(&o->dpop_key, &o->last_err);
        if (rc != MCP_OK)
            return rc;
        o->has_dpop_key = true;
    }
    return oauth_dpop_proof(&o->dpop_key, "POST", endpoint, NULL, o->as_nonce, (int64_t)time(NULL),
                            proof, &o->last_err);
}

/* Whether the token endpoint refused for want of a DPoP nonce (RFC 9449
 * §8: 400 with the error use_dpop_nonce). */
static bool asks_for_nonce(const oauth_http_response_t *r)
{
    if (r->status != 400 || !r->body)
        return false;
    json_t *answer = json_loadb(r->body, r->len, 0, NULL);
    const char *error = oauth_str_member(answer, "error");
    bool asks = error && strcmp(error, "use_dpop_nonce") == 0;
    json_decref(answer);
    return asks;
}

/*
 * Posts `form` to the token endpoint with the client's authentication and,
 * when DPoP is in use, a proof; when the server asks for a nonce it did
 * not have, once more with it (a new assertion and proof: each is for one
 * use). The server's latest nonce is kept for the next token request.
 * *dpop_sent tells whether the answer's request carried a proof.
 */
static int post_token_request(mcp_oauth_t *o, const char *endpoint, const char *form,
                              oauth_http_response_t *r, bool *dpop_sent)
{
    for (int attempt = 0;; attempt++) {
        char *sent = strdup(form), *authorization = NULL, *proof = NULL;
        int rc = sent ? add_client_auth(o, &sent, &authorization)
                      : mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
        if (rc == MCP_OK)
            rc = token_request_proof(o, endpoint, &proof);
        if (rc == MCP_OK)
            rc = oauth_http_request_dpop(&o->http, endpoint, "application/x-www-form-urlencoded",
                                         sent, authorization, proof, r, &o->last_err);
        *dpop_sent = proof != NULL;
        if (sent)
            explicit_bzero(sent, strlen(sent));
        if (authorization)
            explicit_bzero(authorization, strlen(authorization));
        free(sent);
        free(authorization);
        free(proof);
        if (rc != MCP_OK || !*dpop_sent || !oauth_dpop_nonce_valid(r->dpop_nonce))
            return rc;
        bool new_nonce = !o->as_nonce || strcmp(o->as_nonce, r->dpop_nonce) != 0;
        if (new_nonce && !oauth_dup_into(&o->as_nonce, r->dpop_nonce)) {
            oauth_http_response_free(r);
            return mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
        }
        if (attempt > 0 || !new_nonce || !asks_for_nonce(r))
            return MCP_OK;
        oauth_http_response_free(r);
    }
}

/* When a token that lives `lifetime_s` (> 0) from now is taken as
 * expired, on mcp_clock_ms(). The lifetime is the server's number: it is
 * bounded before it is scaled, so that no value overflows. */
static int64_t expiry_after(int64_t lifetime_s)
{
    if (lifetime_s > OAUTH_MAX_LIFETIME_S)
        lifetime_s = OAUTH_MAX_LIFETIME_S;
    int64_t lifetime_ms = lifetime_s * 1000;
    int64_t margin_ms = lifetime_ms / 2 < EXPIRY_MARGIN_MS ? lifetime_ms / 2 : EXPIRY_MARGIN_MS;
    return mcp_clock_ms() + lifetime_ms - margin_ms;
}

/* (oauth_internal.h.) A refresh answered without a new refresh token
 * keeps the old one (RFC 6749 §6). A DPoP token is taken only when a
 * proof asked for it (RFC 9449 §5); a Bearer token answered to a proof is
 * used as one. */
int oauth_token_request(mcp_oauth_t *o, char *form, const char *requested, bool refreshing)
{
    mcp_error_t *err = &o->last_err;
    int rc = oauth_form_add(&form, "resource", o->resource);
    if (rc != MCP_OK) {
        free(form);
        return mcp_error_set(err, rc, 0, NULL, "out of memory");
    }
    const char *endpoint = oauth_str_member(o->as_meta, "token_endpoint");
    if (!endpoint) {
        /* Discovery and restore both insist on one; this guards against a
         * path that skipped them handing NULL to libcurl and the proof. */
        free(form);
        return mcp_error_set(err, MCP_EPROTO, 0, NULL,
                             "the authorization server %s has no token endpoint",
                             o->issuer ? o->issuer : "(unknown)");
    }
    oauth_http_response_t r;
    bool dpop_sent = false;
    rc = post_token_request(o, endpoint, form, &r, &dpop_sent);
    explicit_bzero(form, strlen(form));
    free(form);
    if (rc != MCP_OK)
        return rc;

    json_t *answer = oauth_http_json(&r);
    const char *token = oauth_str_member(answer, "access_token");
    const char *type = oauth_str_member(answer, "token_type");
    const json_t *expires = json_object_get(answer, "expires_in");
    bool bound = dpop_sent && type && strcasecmp(type, "DPoP") == 0;
    char *why = NULL;
    if (!token && oauth_token_error(r.body, r.len, &why) == MCP_ENOMEM) {
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    } else if (!token || !type || (!bound && strcasecmp(type, "Bearer") != 0)) {
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL, "the token endpoint %s refused: HTTP %ld %s",
                           endpoint, r.status,
                           why ? why : token ? "a token that is not a Bearer token"
                                             : "no access token");
    } else {
        const char *scope = oauth_str_member(answer, "scope");
        const char *renewed = oauth_str_member(answer, "refresh_token");
        char *kept = refreshing && !renewed ? o->refresh_token : NULL;
        if (kept)
            o->refresh_token = NULL;
        oauth_drop_tokens(o);
        o->refresh_token = kept;
        o->token_dpop = bound;
        if (!oauth_dup_into(&o->access_token, token) ||
            (renewed && !oauth_dup_into(&o->refresh_token, renewed)) ||
            !oauth_dup_into(&o->granted_scope, scope ? scope : requested))
            rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        if (json_is_integer(expires) && json_integer_value(expires) > 0)
            o->expires_at_ms = expiry_after(json_integer_value(expires));
    }
    free(why);
    json_decref(answer);
    oauth_http_response_free(&r);
    return rc;
}

/* Trades the refresh token for new tokens; the refresh token is dropped
 * when the server refuses it. */
static int refresh(mcp_oauth_t *o)
{
    char *form = NULL;
    if (oauth_form_add(&form, "grant_type", "refresh_token") != MCP_OK ||
        oauth_form_add(&form, "refresh_token", o->refresh_token) != MCP_OK) {
        free(form);
        return mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    char *scope = o->granted_scope ? strdup(o->granted_scope) : NULL;
    int rc = oauth_token_request(o, form, scope, true);
    free(scope);
    if (rc != MCP_OK)
        oauth_wipe(&o->refresh_token);
    return rc;
}

/* ------------------------------------------------------------------------
 * The authorization code grant
 * ------------------------------------------------------------------------ */

/* The authorization request URL. */
static int authorization_url(mcp_oauth_t *o, const char *scope, const char *challenge,
                             const char *state, char **url)
{
    char *form = NULL;
    int rc = oauth_form_add(&form, "response_type", "code");
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "client_id", client_id(o));
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "redirect_uri", o->redirect_uri);
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "code_challenge", challenge);
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "code_challenge_method", "S256");
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "state", state);
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "scope", scope);
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "resource", o->resource);
    if (rc == MCP_OK)
        rc = oauth_url_with_query(oauth_str_member(o->as_meta, "authorization_endpoint"), form, url);
    free(form);
    return rc;
}

/*
 * Checks the redirect the user came back with and returns its code: the
 * state must be the one sent; the issuer (RFC 9207) must be this server's
 * when it says it sends one, or when one is sent anyway, compared as
 * strings. An error is believed only once the issuer checked out.
 */
static int code_from_redirect(mcp_oauth_t *o, const char *redirect, const char *state,
                              char **code)
{
    mcp_error_t *err = &o->last_err;
    char *got_state = NULL, *iss = NULL, *error = NULL;
    bool iss_promised = json_is_true(
        json_object_get(o->as_meta, "authorization_response_iss_parameter_supported"));
    int rc = MCP_OK;
    int iss_rc = oauth_query_get(redirect, "iss", &iss);
    if (iss_rc == MCP_OK && strcmp(iss, o->issuer) != 0)
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                           "the authorization answer comes from issuer \"%.200s\", not %s", iss,
                           o->issuer);
    else if (iss_rc == MCP_EPROTO || (iss_rc == MCP_ENOTFOUND && iss_promised))
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                           "the authorization answer lacks the issuer (%s) it must carry",
                           o->issuer);
    else if (oauth_query_get(redirect, "state", &got_state) != MCP_OK ||
             strcmp(got_state, state) != 0)
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                           "the authorization answer does not carry the state sent");
    else if (oauth_query_get(redirect, "error", &error) == MCP_OK)
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL, "authorization refused: %.200s", error);
    else if (oauth_query_get(redirect, "code", code) != MCP_OK)
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL, "the authorization answer has no code");
    free(got_state);
    free(iss);
    free(error);
    return rc;
}

/* The whole grant: register if need be, send the user to authorize
 * `scope`, and redeem the code. */
static int authorize(mcp_oauth_t *o, const char *scope)
{
    mcp_error_t *err = &o->last_err;
    int rc = ensure_client(o);
    if (rc != MCP_OK)
        return rc;
    char verifier[VERIFIER_LEN + 1], state[STATE_LEN + 1], challenge[44];
    if ((rc = oauth_random_string(verifier, VERIFIER_LEN)) != MCP_OK ||
        (rc = oauth_random_string(state, STATE_LEN)) != MCP_OK ||
        (rc = oauth_pkce_s256(verifier, challenge)) != MCP_OK)
        return mcp_error_set(err, rc, 0, NULL, "cannot make the PKCE verifier: %s",
                             mcp_strerror(rc));
    char *url = NULL, *redirect = NULL, *code = NULL;
    if (authorization_url(o, scope, challenge, state, &url) != MCP_OK)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    rc = o->authorize(o->authorize_user, url, &redirect);
    free(url);
    if (rc < 0 || !redirect) {
        free(redirect);
        return mcp_error_set(err, rc < 0 ? rc : MCP_EAUTH, 0, NULL,
                             "the user's authorization did not complete");
    }
    rc = code_from_redirect(o, redirect, state, &code);
    free(redirect);
    if (rc != MCP_OK)
        return rc;

    char *form = NULL;
    rc = oauth_form_add(&form, "grant_type", "authorization_code");
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "code", code);
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "redirect_uri", o->redirect_uri);
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "code_verifier", verifier);
    explicit_bzero(verifier, sizeof verifier);
    explicit_bzero(code, strlen(code));
    free(code);
    if (rc != MCP_OK) {
        free(form);
        return mcp_error_set(err, rc, 0, NULL, "out of memory");
    }
    return oauth_token_request(o, form, scope, false);
}

/* ------------------------------------------------------------------------
 * The client credentials grant
 * ------------------------------------------------------------------------ */

/*
 * The client asks for a token in its own name (RFC 6749 §4.4; the MCP
 * extension io.modelcontextprotocol/oauth-client-credentials). Only if
 * the authorization server offers it in its metadata (RFC 8414: a server
 * that lists no grant types offers authorization_code and implicit), and
 * takes the client's authentication: private_key_jwt with ES256 for a
 * key; client_secret_basic or client_secret_post for a secret.
 */
static int client_credentials_grant(mcp_oauth_t *o, const char *scope)
{
    mcp_error_t *err = &o->last_err;
    const json_t *grants = json_object_get(o->as_meta, "grant_types_supported");
    const json_t *methods = json_object_get(o->as_meta, "token_endpoint_auth_methods_supported");
    const json_t *algs =
        json_object_get(o->as_meta, "token_endpoint_auth_signing_alg_values_supported");
    if (!oauth_array_has(grants, "client_credentials"))
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the authorization server %s does not offer the client credentials "
                             "grant", o->issuer);
    if (o->has_key && (!oauth_array_has(methods, "private_key_jwt") || !oauth_array_has(algs, "ES256")))
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the authorization server %s does not take client assertions "
                             "(private_key_jwt) signed with ES256", o->issuer);
    if (!o->has_key && json_is_array(methods) && !oauth_array_has(methods, "client_secret_basic") &&
        !oauth_array_has(methods, "client_secret_post"))
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the authorization server %s takes a client secret neither in a "
                             "Basic header nor in the form", o->issuer);
    char *form = NULL;
    int rc = oauth_form_add(&form, "grant_type", "client_credentials");
    if (rc == MCP_OK)
        rc = oauth_form_add(&form, "scope", scope);
    if (rc != MCP_OK) {
        free(form);
        return mcp_error_set(err, rc, 0, NULL, "out of memory");
    }
    return oauth_token_request(o, form, scope, false);
}

/* The grant that needs no user, for `scope`. */
static int grant_without_user(mcp_oauth_t *o, const char *scope)
{
    if (o->grant == MCP_OAUTH_JWT_BEARER)
        return oauth_jwt_bearer_grant(o, scope);
    if (o->grant == MCP_OAUTH_ENTERPRISE)
        return oauth_enterprise_grant(o, scope);
    return client_credentials_grant(o, scope);
}

/* A new token for an expired one: the refresh token's, else, without a
 * user, a new grant for the scope granted (the client credentials grant
 * issues no refresh token, RFC 6749 §4.4.3; an assertion callback makes
 * a fresh assertion). */
static int renew(mcp_oauth_t *o)
{
    int rc = o->refresh_token ? refresh(o) : MCP_EAUTH;
    if (rc == MCP_OK || o->grant == MCP_OAUTH_AUTHORIZATION_CODE)
        return rc;
    char *scope = NULL;
    if (o->granted_scope && !(scope = strdup(o->granted_scope)))
        return mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
    rc = grant_without_user(o, scope);
    free(scope);
    return rc;
}

/* What to ask for: the challenge's scope, else the resource's; with what
 * was granted before when stepping up; and, for a user's authorization,
 * offline_access when the authorization server lists it, for a refresh
 * token. NULL: no scope. */
static char *scope_to_request(const mcp_oauth_t *o, const char *challenged, bool step_up,
                              bool *failed)
{
    const char *base = challenged ? challenged : o->resource_scopes;
    char *scope = oauth_scope_union(step_up ? o->granted_scope : NULL, base, failed);
    const json_t *offered = json_object_get(o->as_meta, "scopes_supported");
    if (scope && o->grant == MCP_OAUTH_AUTHORIZATION_CODE &&
        oauth_array_has(offered, "offline_access")) {
        char *more = oauth_scope_union(scope, "offline_access", failed);
        free(scope);
        scope = more;
    }
    return scope;
}

/* ------------------------------------------------------------------------
 * The token callback
 * ------------------------------------------------------------------------ */

/* Whether the access token held was obtained for the server at `url`. A
 * token source may serve several servers (one at a time): a token must
 * never reach a server other than the one it was issued for, which could
 * replay it wherever the token's audience allows. */
static bool holds_token_for(const mcp_oauth_t *o, const char *url)
{
    return o->access_token && o->server_url && strcmp(o->server_url, url) == 0;
}

/* The token held for `url`, renewed first if it has expired; none when
 * it is for another server or cannot be renewed. */
static int held_token(mcp_oauth_t *o, const char *url, char **token_out)
{
    if (!holds_token_for(o, url))
        return MCP_OK;
    if (o->expires_at_ms && mcp_clock_ms() >= o->expires_at_ms) {
        int rc = renew(o);
        if (rc != MCP_OK) {
            oauth_drop_tokens(o);
            /* A refused assertion is the caller's to see, not one to
             * present again when the server challenges (RFC 7523 grants
             * are neither retried nor replaced by another). */
            if (o->grant == MCP_OAUTH_JWT_BEARER || o->grant == MCP_OAUTH_ENTERPRISE)
                return rc;
            return MCP_OK; /* the server will challenge, and the flow runs */
        }
    }
    return (*token_out = strdup(o->access_token)) ? MCP_OK : MCP_ENOMEM;
}

/* Answers a challenge: a step-up for insufficient_scope, else a refresh or
 * a new authorization (or client credentials grant). */
static int answer_challenge(mcp_oauth_t *o, const char *url, const char *header)
{
    mcp_error_t *err = &o->last_err;
    oauth_challenge_t ch = {0};
    int rc = oauth_challenge_parse(header, &ch);
    if (rc != MCP_OK) {
        return mcp_error_set(err, rc == MCP_ENOMEM ? MCP_ENOMEM : MCP_EAUTH, 0, NULL,
                             rc == MCP_ENOTFOUND ? "the server's challenge is not Bearer: %.200s"
                                                 : "the server's challenge is malformed: %.200s",
                             header);
    }
    if (ch.error && strcmp(ch.error, "use_dpop_nonce") == 0 && holds_token_for(o, url) &&
        o->token_dpop) {
        /* RFC 9449 §9: the token stands; the proof must carry the nonce the
         * server sent with the challenge, which the transport keeps. */
        oauth_challenge_free(&ch);
        return MCP_OK;
    }
    bool step_up = ch.error && strcmp(ch.error, "insufficient_scope") == 0;
    /* What another server's token was granted says nothing about this
     * server's refusal. */
    if (step_up && holds_token_for(o, url) && scope_covers(o->granted_scope, ch.scope)) {
        /* Asking again for what was granted would loop. */
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                           "the server refuses scope \"%.200s\", which was granted",
                           ch.scope ? ch.scope : "");
        oauth_challenge_free(&ch);
        return rc;
    }
    bool had_token = holds_token_for(o, url);
    if (!step_up)
        oauth_wipe(&o->access_token); /* refused: expired, revoked, or never valid here */
    /* Discovery for another server drops the tokens held (oauth_discover):
     * a step-up that then fails leaves none to hand to this server. */
    rc = oauth_discover(o, url, ch.resource_metadata);
    if (rc == MCP_OK && !step_up && had_token && o->refresh_token && refresh(o) == MCP_OK) {
        oauth_challenge_free(&ch);
        return MCP_OK;
    }
    if (rc == MCP_OK) {
        bool failed = false;
        char *scope = scope_to_request(o, ch.scope, step_up || had_token, &failed);
        if (failed)
            rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        else if (o->grant == MCP_OAUTH_AUTHORIZATION_CODE)
            rc = authorize(o, scope);
        else
            rc = grant_without_user(o, scope);
        free(scope);
    }
    oauth_challenge_free(&ch);
    return rc;
}

int mcp_oauth_token(void *user, const char *url, const char *challenge, char **token_out)
{
    mcp_oauth_t *o = user;
    if (token_out)
        *token_out = NULL;
    if (!o || !url || !token_out)
        return MCP_EINVAL;
    pthread_mutex_lock(&o->lock);
    mcp_error_clear(&o->last_err);
    int rc;
    if (!challenge) {
        rc = held_token(o, url, token_out);
    } else {
        rc = answer_challenge(o, url, challenge);
        if (rc == MCP_OK && !(*token_out = strdup(o->access_token)))
            rc = MCP_ENOMEM;
    }
    if (rc != MCP_OK && o->last_err.message[0] == '\0')
        mcp_error_set(&o->last_err, rc, 0, NULL, "%s", mcp_strerror(rc));
    o->last_rc = rc;
    pthread_mutex_unlock(&o->lock);
    return rc;
}

int mcp_oauth_proof(void *user, const char *method, const char *url, const char *token,
                    const char *nonce, char **proof_out)
{
    mcp_oauth_t *o = user;
    if (proof_out)
        *proof_out = NULL;
    if (!o || !method || !url || !token || !proof_out)
        return MCP_EINVAL;
    pthread_mutex_lock(&o->lock);
    int rc = MCP_OK;
    if (o->token_dpop && o->has_dpop_key) {
        mcp_error_t err = {0};
        rc = oauth_dpop_proof(&o->dpop_key, method, url, token,
                              oauth_dpop_nonce_valid(nonce) ? nonce : NULL, (int64_t)time(NULL),
                              proof_out, &err);
        mcp_error_clear(&err);
    }
    pthread_mutex_unlock(&o->lock);
    return rc;
}

int mcp_oauth_last_error(mcp_oauth_t *o, mcp_error_t *err)
{
    if (!o)
        return MCP_EINVAL;
    pthread_mutex_lock(&o->lock);
    int rc = o->last_rc;
    if (err)
        mcp_error_set(err, rc, o->last_err.code, NULL, "%s", o->last_err.message);
    pthread_mutex_unlock(&o->lock);
    return rc;
}

/* ------------------------------------------------------------------------
 * Life cycle
 * ------------------------------------------------------------------------ */

/* Whether the options name a way to get tokens; *err says why not. */
static bool grant_options_valid(const mcp_oauth_options_t *opts, mcp_error_t *err)
{
    const char *why = NULL;
    if (!opts)
        why = "OAuth needs options";
    else if (opts->grant == MCP_OAUTH_AUTHORIZATION_CODE) {
        if (!opts->redirect_uri || !opts->authorize)
            why = "OAuth needs a redirect_uri and an authorize callback";
        else if (opts->private_key_pem || opts->signing_algorithm)
            why = "a private key (private_key_jwt) is for the client credentials grant only";
    } else if (opts->grant == MCP_OAUTH_CLIENT_CREDENTIALS) {
        if (!opts->client_id)
            why = "the client credentials grant needs the client's id";
        else if (!opts->client_secret == !opts->private_key_pem)
            why = "the client credentials grant needs a client secret or a private key, not both";
        else if (opts->signing_algorithm && !opts->private_key_pem)
            why = "a signing_algorithm without a private key";
        else if (opts->signing_algorithm && strcmp(opts->signing_algorithm, "ES256") != 0)
            why = "signing_algorithm must be \"ES256\", the only one supported";
    } else if (opts->grant != MCP_OAUTH_JWT_BEARER && opts->grant != MCP_OAUTH_ENTERPRISE) {
        why = "unknown OAuth grant";
    }
    if (!why && opts)
        why = oauth_assertion_options_problem(opts);
    /* A pin that can never match (or names a server credentials may not
     * go to) is a configuration error, better told now than at sign-in. */
    if (!why && opts && opts->issuer &&
        (!oauth_url_is_safe(opts->issuer, opts->insecure) || strpbrk(opts->issuer, "?#")))
        why = "the issuer must be an https URL (or http to this machine) without a query or "
              "fragment";
    if (why)
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "%s", why);
    return why == NULL;
}

mcp_oauth_t *mcp_oauth_new(const mcp_oauth_options_t *opts, mcp_error_t *err)
{
    if (!grant_options_valid(opts, err))
        return NULL;
    const char *type = opts->application_type ? opts->application_type : "native";
    if (strcmp(type, "native") != 0 && strcmp(type, "web") != 0) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "application_type must be \"native\" or \"web\"");
        return NULL;
    }
    if (opts->client_secret && !opts->client_id) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "a client secret needs its client id");
        return NULL;
    }
    mcp_oauth_t *o = calloc(1, sizeof *o);
    if (!o) {
        mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&o->lock, NULL);
    o->grant = opts->grant;
    if (opts->private_key_pem) {
        if (oauth_es256_key_from_pem(opts->private_key_pem, o->key, err) != MCP_OK) {
            mcp_oauth_free(o);
            return NULL;
        }
        o->has_key = true;
    }
    o->authorize = opts->authorize;
    o->authorize_user = opts->authorize_user;
    o->assertion = opts->assertion;
    o->assertion_user = opts->assertion_user;
    o->http.timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
    o->http.insecure = opts->insecure;
    o->dpop = opts->dpop;
    if (!oauth_dup_into(&o->redirect_uri, opts->redirect_uri) ||
        !oauth_dup_into(&o->client_id, opts->client_id) ||
        !oauth_dup_into(&o->client_secret, opts->client_secret) ||
        !oauth_dup_into(&o->pinned_issuer, opts->issuer) ||
        !oauth_dup_into(&o->idp_token_endpoint, opts->idp_token_endpoint) ||
        !oauth_dup_into(&o->idp_client_id, opts->idp_client_id) ||
        !oauth_dup_into(&o->idp_client_secret, opts->idp_client_secret) ||
        !oauth_dup_into(&o->client_metadata_url, opts->client_metadata_url) ||
        !oauth_dup_into(&o->client_name, opts->client_name ? opts->client_name : "libmcp client") ||
        !oauth_dup_into(&o->application_type, type) || !oauth_dup_into(&o->ca_file, opts->ca_file)) {
        mcp_oauth_free(o);
        mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        return NULL;
    }
    o->http.ca_file = o->ca_file;
    return o;
}

void mcp_oauth_free(mcp_oauth_t *o)
{
    if (!o)
        return;
    oauth_drop_tokens(o);
    oauth_drop_registration(o);
    oauth_wipe(&o->client_secret);
    oauth_wipe(&o->idp_client_secret);
    free(o->idp_token_endpoint);
    free(o->idp_client_id);
    explicit_bzero(o->key, sizeof o->key);
    explicit_bzero(&o->dpop_key, sizeof o->dpop_key);
    free(o->as_nonce);
    free(o->redirect_uri);
    free(o->client_id);
    free(o->pinned_issuer);
    free(o->client_metadata_url);
    free(o->client_name);
    free(o->application_type);
    free(o->ca_file);
    free(o->server_url);
    free(o->resource);
    free(o->resource_scopes);
    free(o->issuer);
    json_decref(o->as_meta);
    mcp_error_clear(&o->last_err);
    pthread_mutex_destroy(&o->lock);
    free(o);
}
