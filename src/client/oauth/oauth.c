/*
 * The OAuth client (mcp/oauth.h): discovery, registration, the
 * authorization code grant with PKCE, tokens, refresh and step-up.
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
 * 9207) the issuer expected, and the token answer must be a Bearer token.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "client/oauth/oauth_http.h"
#include "client/oauth/oauth_parse.h"
#include "mcp/oauth.h"
#include "protocol/base64.h"

/* RFC 7636: a verifier of 43 to 128 characters; 64 is plenty. */
#define VERIFIER_LEN 64
#define STATE_LEN 32
/* A token is taken as expired this long before the server says. */
#define EXPIRY_MARGIN_MS 30000

struct mcp_oauth {
    pthread_mutex_t lock; /* one flow at a time; guards everything below */

    /* The options (copies). */
    char *redirect_uri;
    mcp_oauth_authorize_fn authorize;
    void *authorize_user;
    char *client_id, *client_secret; /* pre-registered */
    char *client_metadata_url;
    char *client_name;
    char *application_type;
    oauth_http_options_t http;
    char *ca_file;

    /* The protected resource and its authorization server (discovery). */
    char *server_url;      /* the MCP server URL discovery ran for */
    char *resource;        /* the resource its metadata names */
    char *resource_scopes; /* its scopes_supported, space-separated, or NULL */
    char *issuer;          /* its authorization server */
    json_t *as_meta;       /* that server's metadata */

    /* The client's registration with `reg_issuer` (dynamic or CIMD). */
    char *reg_issuer;
    char *reg_client_id, *reg_client_secret, *reg_auth_method;

    /* The tokens, from `issuer`. */
    char *access_token, *refresh_token;
    char *granted_scope;   /* what the token carries, as far as known */
    int64_t expires_at_ms; /* mcp_clock_ms(); 0 when not said */

    int last_rc;
    mcp_error_t last_err;
};

/* ------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------ */

static void replace(char **slot, char *value)
{
    free(*slot);
    *slot = value;
}

/* Frees a secret after overwriting it. */
static void wipe(char **slot)
{
    if (*slot)
        explicit_bzero(*slot, strlen(*slot));
    replace(slot, NULL);
}

static bool dup_into(char **slot, const char *value)
{
    char *copy = value ? strdup(value) : NULL;
    if (value && !copy)
        return false;
    replace(slot, copy);
    return true;
}

static const char *str_member(const json_t *obj, const char *name)
{
    return json_string_value(json_object_get(obj, name));
}

static bool array_has(const json_t *array, const char *value)
{
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item) {
        if (json_is_string(item) && strcmp(json_string_value(item), value) == 0)
            return true;
    }
    return false;
}

static void drop_tokens(mcp_oauth_t *o)
{
    wipe(&o->access_token);
    wipe(&o->refresh_token);
    replace(&o->granted_scope, NULL);
    o->expires_at_ms = 0;
}

static void drop_registration(mcp_oauth_t *o)
{
    replace(&o->reg_issuer, NULL);
    replace(&o->reg_client_id, NULL);
    wipe(&o->reg_client_secret);
    replace(&o->reg_auth_method, NULL);
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
static char *scope_union(const char *a, const char *b, bool *failed)
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
 * Discovery
 * ------------------------------------------------------------------------ */

/*
 * Whether secrets may travel to `url`: https, or plain http to this very
 * machine (OAuth 2.1 §1.5 asks for TLS on every authorization server
 * endpoint; a loopback address never leaves the host). `insecure` lifts
 * the rule, for tests against a plain-HTTP server elsewhere.
 */
static bool transport_is_safe(const char *url, bool insecure)
{
    if (insecure || strncasecmp(url, "https://", 8) == 0)
        return true;
    if (strncasecmp(url, "http://", 7) != 0)
        return false;
    const char *host = url + 7;
    size_t len = host[0] == '[' ? strcspn(host, "]") + 1 : strcspn(host, ":/?#");
    static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < sizeof loopback / sizeof loopback[0]; i++)
        if (len == strlen(loopback[i]) && strncasecmp(host, loopback[i], len) == 0)
            return true;
    return false;
}

/* GETs a JSON document; NULL (and *rc, *err) when there is none. A
 * status other than 2xx is MCP_ENOTFOUND. */
static json_t *get_json(mcp_oauth_t *o, const char *url, int *rc, mcp_error_t *err)
{
    oauth_http_response_t r;
    *rc = oauth_http_request(&o->http, url, NULL, NULL, NULL, &r, err);
    if (*rc != MCP_OK)
        return NULL;
    json_t *doc = oauth_http_json(&r);
    if (!doc)
        *rc = mcp_error_set(err, MCP_ENOTFOUND, 0, NULL, "GET %s: HTTP %ld%s", url, r.status,
                            r.status >= 200 && r.status < 300 ? ", not a JSON object" : "");
    oauth_http_response_free(&r);
    return doc;
}

/* The protected resource metadata of the server at `url`: from the
 * challenge's resource_metadata URL, else from the well-known URLs. */
static json_t *fetch_resource_metadata(mcp_oauth_t *o, const char *url, const char *hinted,
                                       int *rc)
{
    mcp_error_t *err = &o->last_err;
    if (hinted) {
        json_t *doc = get_json(o, hinted, rc, err);
        if (doc)
            return doc;
    }
    char *candidates[2] = {NULL, NULL};
    size_t n = 0;
    if ((*rc = oauth_prm_urls(url, candidates, &n)) != MCP_OK) {
        mcp_error_set(err, *rc, 0, NULL, "cannot derive metadata URLs from %s", url);
        return NULL;
    }
    json_t *doc = NULL;
    for (size_t i = 0; i < n && !doc; i++)
        doc = get_json(o, candidates[i], rc, err);
    for (size_t i = 0; i < n; i++)
        free(candidates[i]);
    if (!doc) {
        char last[MCP_ERROR_MESSAGE_MAX];
        snprintf(last, sizeof last, "%s", err->message);
        mcp_error_set(err, MCP_EAUTH, 0, NULL,
                      "the server asks for authorization but publishes no protected resource "
                      "metadata (%s)", last);
    }
    return doc;
}

/* The authorization server metadata of `issuer`: the first well-known
 * document found whose `issuer` is exactly the one asked for (RFC 8414
 * §3.3); one that names another issuer is discarded. */
static json_t *fetch_as_metadata(mcp_oauth_t *o, const char *issuer, int *rc)
{
    mcp_error_t *err = &o->last_err;
    char *candidates[3] = {NULL, NULL, NULL};
    size_t n = 0;
    if ((*rc = oauth_as_metadata_urls(issuer, candidates, &n)) != MCP_OK) {
        mcp_error_set(err, *rc, 0, NULL, "the authorization server \"%s\" is not a URL", issuer);
        return NULL;
    }
    json_t *doc = NULL;
    bool mismatch = false;
    for (size_t i = 0; i < n && !doc; i++) {
        doc = get_json(o, candidates[i], rc, err);
        const char *named = str_member(doc, "issuer");
        if (doc && (!named || strcmp(named, issuer) != 0)) {
            json_decref(doc);
            doc = NULL;
            mismatch = true;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(candidates[i]);
    if (!doc)
        *rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                            mismatch ? "the metadata of the authorization server %s names "
                                       "another issuer"
                                     : "no metadata for the authorization server %s",
                            issuer);
    return doc;
}

/* What the resource's metadata says. */
typedef struct {
    char *resource; /* NULL: none named (2025-03-26) */
    char *issuer;   /* its authorization server */
    char *scopes;   /* scopes_supported, space-separated, or NULL */
    bool legacy;    /* no metadata: the 2025-03-26 authorization */
} resource_info_t;

static void resource_info_clear(resource_info_t *r)
{
    free(r->resource);
    free(r->issuer);
    free(r->scopes);
    memset(r, 0, sizeof *r);
}

/*
 * The resource's metadata, checked: its `resource` must cover the server
 * URL, and it must name an authorization server. A server that publishes
 * none is taken as 2025-03-26 authorization did: its origin is its own
 * authorization server, and no resource is named.
 */
static int learn_resource(mcp_oauth_t *o, const char *url, const char *hinted,
                          resource_info_t *out)
{
    mcp_error_t *err = &o->last_err;
    int rc;
    json_t *prm = fetch_resource_metadata(o, url, hinted, &rc);
    if (!prm) {
        out->legacy = true;
        rc = oauth_origin(url, &out->issuer);
        return rc == MCP_OK ? MCP_OK
                            : mcp_error_set(err, rc, 0, NULL, "%s is not an http(s) URL", url);
    }
    const char *resource = str_member(prm, "resource");
    const char *issuer = json_string_value(json_array_get(
        json_object_get(prm, "authorization_servers"), 0));
    if (!resource || !oauth_resource_allows(resource, url))
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                           "the protected resource metadata is for \"%s\", not for %s",
                           resource ? resource : "(no resource)", url);
    else if (!issuer)
        rc = mcp_error_set(err, MCP_EPROTO, 0, NULL,
                           "the protected resource metadata names no authorization server");
    else if (!dup_into(&out->resource, resource) || !dup_into(&out->issuer, issuer))
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    bool failed = false;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(prm, "scopes_supported"), i, item) {
        if (rc != MCP_OK || failed || !json_is_string(item))
            continue;
        replace(&out->scopes, scope_union(out->scopes, json_string_value(item), &failed));
    }
    json_decref(prm);
    if (rc == MCP_OK && failed)
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    return rc;
}

/* The 2025-03-26 default endpoints of an authorization server that
 * publishes no metadata: /authorize, /token and /register at its origin,
 * with PKCE S256, which that revision required. */
static json_t *default_endpoints(const char *origin)
{
    char *authorize = NULL, *token = NULL, *reg = NULL;
    json_t *meta = NULL;
    if (asprintf(&authorize, "%s/authorize", origin) >= 0 &&
        asprintf(&token, "%s/token", origin) >= 0 && asprintf(&reg, "%s/register", origin) >= 0)
        meta = json_pack("{s:s, s:s, s:s, s:s, s:[s]}", "issuer", origin,
                         "authorization_endpoint", authorize, "token_endpoint", token,
                         "registration_endpoint", reg, "code_challenge_methods_supported",
                         "S256");
    free(authorize);
    free(token);
    free(reg);
    return meta;
}

/* The authorization server's metadata, checked: its endpoints must not
 * carry credentials across a network in clear, and it must offer PKCE
 * S256 (a 2025-03-26 server that does not say is taken to). */
static int learn_authorization_server(mcp_oauth_t *o, const resource_info_t *r, json_t **out)
{
    mcp_error_t *err = &o->last_err;
    int rc;
    json_t *meta = fetch_as_metadata(o, r->issuer, &rc);
    if (!meta && r->legacy && !(meta = default_endpoints(r->issuer)))
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    if (!meta)
        return rc;
    const char *endpoints[] = {r->issuer, str_member(meta, "authorization_endpoint"),
                               str_member(meta, "token_endpoint"),
                               str_member(meta, "registration_endpoint")};
    const char *unsafe = NULL;
    for (size_t e = 0; e < sizeof endpoints / sizeof endpoints[0] && !unsafe; e++)
        if (endpoints[e] && !transport_is_safe(endpoints[e], o->http.insecure))
            unsafe = endpoints[e];
    const json_t *pkce = json_object_get(meta, "code_challenge_methods_supported");
    bool s256 = array_has(pkce, "S256") || (r->legacy && !pkce);
    if (unsafe)
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                           "the authorization server %s would take credentials over plain "
                           "HTTP (%s): only https, or http to this machine",
                           r->issuer, unsafe);
    else if (!s256)
        rc = mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                           "the authorization server %s does not offer PKCE with S256",
                           r->issuer);
    else if (!str_member(meta, "authorization_endpoint") || !str_member(meta, "token_endpoint"))
        rc = mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                           "the authorization server %s has no authorization or token endpoint",
                           r->issuer);
    else
        rc = MCP_OK;
    if (rc == MCP_OK)
        *out = meta;
    else
        json_decref(meta);
    return rc;
}

/*
 * Learns (again) where to authorize for the server at `url`. The
 * registration and tokens of another authorization server are dropped:
 * credentials are bound to the server that issued them.
 */
static int discover(mcp_oauth_t *o, const char *url, const char *hinted_metadata)
{
    resource_info_t r = {0};
    json_t *meta = NULL;
    int rc = learn_resource(o, url, hinted_metadata, &r);
    if (rc == MCP_OK)
        rc = learn_authorization_server(o, &r, &meta);
    if (rc == MCP_OK) {
        if (o->issuer && strcmp(o->issuer, r.issuer) != 0)
            drop_tokens(o); /* tokens of the previous authorization server */
        if (o->reg_issuer && strcmp(o->reg_issuer, r.issuer) != 0)
            drop_registration(o);
        if (!dup_into(&o->server_url, url))
            rc = mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
        replace(&o->resource, r.resource);
        replace(&o->issuer, r.issuer);
        replace(&o->resource_scopes, r.scopes);
        memset(&r, 0, sizeof r); /* moved */
        json_decref(o->as_meta);
        o->as_meta = meta;
    }
    resource_info_clear(&r);
    return rc;
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
    const char *endpoint = str_member(o->as_meta, "registration_endpoint");
    if (!endpoint)
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "the authorization server %s takes no registrations, and no client "
                             "id was given", o->issuer);
    json_t *request = json_pack("{s:s, s:[s], s:[s,s], s:[s], s:s}", "client_name",
                                o->client_name, "redirect_uris", o->redirect_uri, "grant_types",
                                "authorization_code", "refresh_token", "response_types", "code",
                                "application_type", o->application_type);
    char *body = request ? json_dumps(request, JSON_COMPACT) : NULL;
    json_decref(request);
    if (!body)
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    oauth_http_response_t r;
    int rc = oauth_http_request(&o->http, endpoint, "application/json", body, NULL, &r, err);
    free(body);
    if (rc != MCP_OK)
        return rc;
    json_t *answer = oauth_http_json(&r);
    const char *id = str_member(answer, "client_id");
    if (!id) {
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL, "registration at %s refused: HTTP %ld %.200s",
                           endpoint, r.status, r.body ? r.body : "");
    } else if (!dup_into(&o->reg_client_id, id) ||
               !dup_into(&o->reg_client_secret, str_member(answer, "client_secret")) ||
               !dup_into(&o->reg_auth_method, str_member(answer, "token_endpoint_auth_method")) ||
               !dup_into(&o->reg_issuer, o->issuer)) {
        drop_registration(o);
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
        drop_registration(o);
        if (!dup_into(&o->reg_client_id, o->client_metadata_url) ||
            !dup_into(&o->reg_issuer, o->issuer) || !dup_into(&o->reg_auth_method, "none"))
            return mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
        return MCP_OK;
    }
    return register_client(o);
}

/* ------------------------------------------------------------------------
 * The token endpoint
 * ------------------------------------------------------------------------ */

/* How the client authenticates at the token endpoint: what its
 * registration says, else the first the server supports of basic, post
 * and none (RFC 8414: basic when the server lists none). */
static const char *auth_method(const mcp_oauth_t *o)
{
    if (!client_secret(o))
        return "none";
    if (!o->client_id && o->reg_auth_method)
        return o->reg_auth_method;
    const json_t *supported = json_object_get(o->as_meta, "token_endpoint_auth_methods_supported");
    if (!json_is_array(supported) || array_has(supported, "client_secret_basic"))
        return "client_secret_basic";
    if (array_has(supported, "client_secret_post"))
        return "client_secret_post";
    return array_has(supported, "none") ? "none" : "client_secret_basic";
}

/* The form-encoding of one string (RFC 6749 §2.3.1 encodes the client id
 * and secret so before Basic authentication). */
static char *form_encoded(const char *text)
{
    char *pair = NULL;
    if (oauth_form_add(&pair, "v", text) != MCP_OK)
        return NULL;
    char *value = strdup(pair + 2); /* past "v=" */
    free(pair);
    return value;
}

static char *basic_credentials(const char *id, const char *secret)
{
    char *user = form_encoded(id), *pass = form_encoded(secret), *joined = NULL, *out = NULL;
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

/* Adds the client's authentication to a token request: the client id in
 * the form (none, post) and the secret in the form (post) or a Basic
 * header (basic). */
static int add_client_auth(mcp_oauth_t *o, char **form, char **authorization)
{
    const char *method = auth_method(o);
    int rc = MCP_OK;
    if (strcmp(method, "client_secret_basic") == 0) {
        if (!(*authorization = basic_credentials(client_id(o), client_secret(o))))
            rc = MCP_ENOMEM;
    } else {
        rc = oauth_form_add(form, "client_id", client_id(o));
        if (rc == MCP_OK && strcmp(method, "client_secret_post") == 0)
            rc = oauth_form_add(form, "client_secret", client_secret(o));
    }
    return rc;
}

/* Posts a token request and keeps the tokens it answers. `requested` is
 * the scope asked for, taken as granted when the answer does not say. A
 * refresh answered without a new refresh token keeps the old one (RFC
 * 6749 §6). */
static int token_request(mcp_oauth_t *o, char *form, const char *requested, bool refreshing)
{
    mcp_error_t *err = &o->last_err;
    char *authorization = NULL;
    int rc = oauth_form_add(&form, "resource", o->resource);
    if (rc == MCP_OK)
        rc = add_client_auth(o, &form, &authorization);
    if (rc != MCP_OK) {
        free(form);
        return mcp_error_set(err, rc, 0, NULL, "out of memory");
    }
    const char *endpoint = str_member(o->as_meta, "token_endpoint");
    oauth_http_response_t r;
    rc = oauth_http_request(&o->http, endpoint, "application/x-www-form-urlencoded", form,
                            authorization, &r, err);
    explicit_bzero(form, strlen(form));
    free(form);
    if (authorization)
        explicit_bzero(authorization, strlen(authorization));
    free(authorization);
    if (rc != MCP_OK)
        return rc;

    json_t *answer = oauth_http_json(&r);
    const char *token = str_member(answer, "access_token");
    const char *type = str_member(answer, "token_type");
    const json_t *expires = json_object_get(answer, "expires_in");
    if (!token || !type || strcasecmp(type, "Bearer") != 0) {
        const char *why = str_member(answer, "error");
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL, "the token endpoint %s refused: HTTP %ld %s",
                           endpoint, r.status,
                           why ? why : token ? "a token that is not a Bearer token"
                                             : "no access token");
    } else {
        const char *scope = str_member(answer, "scope");
        const char *renewed = str_member(answer, "refresh_token");
        char *kept = refreshing && !renewed ? o->refresh_token : NULL;
        if (kept)
            o->refresh_token = NULL;
        drop_tokens(o);
        o->refresh_token = kept;
        if (!dup_into(&o->access_token, token) ||
            (renewed && !dup_into(&o->refresh_token, renewed)) ||
            !dup_into(&o->granted_scope, scope ? scope : requested))
            rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
        if (json_is_integer(expires) && json_integer_value(expires) > 0)
            o->expires_at_ms =
                mcp_clock_ms() + json_integer_value(expires) * 1000 - EXPIRY_MARGIN_MS;
    }
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
    int rc = token_request(o, form, scope, true);
    free(scope);
    if (rc != MCP_OK)
        wipe(&o->refresh_token);
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
        rc = oauth_url_with_query(str_member(o->as_meta, "authorization_endpoint"), form, url);
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
    return token_request(o, form, scope, false);
}

/* What to ask for: the challenge's scope, else the resource's; with what
 * was granted before when stepping up; and offline_access when the
 * authorization server lists it, for a refresh token. NULL: no scope. */
static char *scope_to_request(const mcp_oauth_t *o, const char *challenged, bool step_up,
                              bool *failed)
{
    const char *base = challenged ? challenged : o->resource_scopes;
    char *scope = scope_union(step_up ? o->granted_scope : NULL, base, failed);
    const json_t *offered = json_object_get(o->as_meta, "scopes_supported");
    if (scope && array_has(offered, "offline_access")) {
        char *more = scope_union(scope, "offline_access", failed);
        free(scope);
        scope = more;
    }
    return scope;
}

/* ------------------------------------------------------------------------
 * The token callback
 * ------------------------------------------------------------------------ */

/* The token held for `url`, refreshed first if it has expired; none when
 * it is for another server or cannot be refreshed. */
static int held_token(mcp_oauth_t *o, const char *url, char **token_out)
{
    if (!o->access_token || !o->server_url || strcmp(o->server_url, url) != 0)
        return MCP_OK;
    if (o->expires_at_ms && mcp_clock_ms() >= o->expires_at_ms) {
        if (!o->refresh_token || refresh(o) != MCP_OK) {
            drop_tokens(o);
            return MCP_OK; /* the server will challenge, and the flow runs */
        }
    }
    return (*token_out = strdup(o->access_token)) ? MCP_OK : MCP_ENOMEM;
}

/* Answers a challenge: a step-up for insufficient_scope, else a refresh or
 * a new authorization. */
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
    bool step_up = ch.error && strcmp(ch.error, "insufficient_scope") == 0;
    if (step_up && o->access_token && scope_covers(o->granted_scope, ch.scope)) {
        /* Asking again for what was granted would loop. */
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                           "the server refuses scope \"%.200s\", which was granted",
                           ch.scope ? ch.scope : "");
        oauth_challenge_free(&ch);
        return rc;
    }
    bool had_token = o->access_token != NULL;
    if (!step_up)
        wipe(&o->access_token); /* refused: expired, revoked, or never valid here */
    rc = discover(o, url, ch.resource_metadata);
    if (rc == MCP_OK && !step_up && had_token && o->refresh_token && refresh(o) == MCP_OK) {
        oauth_challenge_free(&ch);
        return MCP_OK;
    }
    if (rc == MCP_OK) {
        bool failed = false;
        char *scope = scope_to_request(o, ch.scope, step_up || had_token, &failed);
        rc = failed ? mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory")
                    : authorize(o, scope);
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
 * Keeping the state between runs
 * ------------------------------------------------------------------------ */

#define SAVE_FORMAT "libmcp-oauth-1"
/* A saved expiry further away is taken as this far (ten years). */
#define MAX_SAVED_LIFETIME_S (10 * 365 * 24 * 3600LL)

/* Sets `name` to a string copy of `value` when there is one. */
static int set_string(json_t *obj, const char *name, const char *value)
{
    return value ? json_object_set_new(obj, name, json_string(value)) : 0;
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
                  set_string(tokens, "scope", o->granted_scope);
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
    if (bad || !format || strcmp(format, SAVE_FORMAT) != 0 || !server_url || !issuer ||
        !json_is_object(meta) || (reg && (!json_is_object(reg) || !reg_id)) ||
        (tokens && !json_is_object(tokens)) || (expires && !json_is_integer(expires)))
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "not OAuth state saved by mcp_oauth_save() (" SAVE_FORMAT ")");

    /* Built aside, then moved in: a failure leaves everything as it was. */
    mcp_oauth_t next = {0};
    bool ok = dup_into(&next.server_url, server_url) && dup_into(&next.resource, resource) &&
              dup_into(&next.issuer, issuer) && dup_into(&next.resource_scopes, scopes) &&
              dup_into(&next.reg_issuer, reg_id ? (reg_issuer ? reg_issuer : issuer) : NULL) &&
              dup_into(&next.reg_client_id, reg_id) &&
              dup_into(&next.reg_client_secret, reg_secret) &&
              dup_into(&next.reg_auth_method, reg_method) &&
              dup_into(&next.access_token, access) &&
              dup_into(&next.refresh_token, refresh_token) &&
              dup_into(&next.granted_scope, scope) &&
              (next.as_meta = json_deep_copy(meta)) != NULL;
    if (expires) {
        int64_t left_s = (int64_t)json_integer_value(expires) - (int64_t)time(NULL);
        if (left_s > MAX_SAVED_LIFETIME_S)
            left_s = MAX_SAVED_LIFETIME_S;
        /* Already expired: due at once (0 would mean "never said"). */
        next.expires_at_ms = mcp_clock_ms() + (left_s > 0 ? left_s * 1000 : -1);
    }

    if (!ok) {
        drop_tokens(&next);
        drop_registration(&next);
        free(next.server_url);
        free(next.resource);
        free(next.issuer);
        free(next.resource_scopes);
        json_decref(next.as_meta);
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    }
    pthread_mutex_lock(&o->lock);
    drop_tokens(o);
    drop_registration(o);
    replace(&o->server_url, next.server_url);
    replace(&o->resource, next.resource);
    replace(&o->issuer, next.issuer);
    replace(&o->resource_scopes, next.resource_scopes);
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
    pthread_mutex_unlock(&o->lock);
    return MCP_OK;
}

/* ------------------------------------------------------------------------
 * Life cycle
 * ------------------------------------------------------------------------ */

mcp_oauth_t *mcp_oauth_new(const mcp_oauth_options_t *opts, mcp_error_t *err)
{
    if (!opts || !opts->redirect_uri || !opts->authorize) {
        mcp_error_set(err, MCP_EINVAL, 0, NULL, "OAuth needs a redirect_uri and an authorize "
                                                "callback");
        return NULL;
    }
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
    o->authorize = opts->authorize;
    o->authorize_user = opts->authorize_user;
    o->http.timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
    o->http.insecure = opts->insecure;
    if (!dup_into(&o->redirect_uri, opts->redirect_uri) ||
        !dup_into(&o->client_id, opts->client_id) ||
        !dup_into(&o->client_secret, opts->client_secret) ||
        !dup_into(&o->client_metadata_url, opts->client_metadata_url) ||
        !dup_into(&o->client_name, opts->client_name ? opts->client_name : "libmcp client") ||
        !dup_into(&o->application_type, type) || !dup_into(&o->ca_file, opts->ca_file)) {
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
    drop_tokens(o);
    drop_registration(o);
    wipe(&o->client_secret);
    free(o->redirect_uri);
    free(o->client_id);
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
