/*
 * Discovery (oauth_internal.h): the protected resource's metadata (RFC
 * 9728), its authorization server's (RFC 8414, OpenID Connect Discovery),
 * each checked before it is trusted, and the 2025-03-26 fallback for a
 * server that publishes none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/oauth/oauth_internal.h"
#include "client/oauth/oauth_parse.h"

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
        const char *named = oauth_str_member(doc, "issuer");
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
    const char *resource = oauth_str_member(prm, "resource");
    const char *issuer = json_string_value(json_array_get(
        json_object_get(prm, "authorization_servers"), 0));
    if (!resource || !oauth_resource_allows(resource, url))
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                           "the protected resource metadata is for \"%s\", not for %s",
                           resource ? resource : "(no resource)", url);
    else if (!issuer)
        rc = mcp_error_set(err, MCP_EPROTO, 0, NULL,
                           "the protected resource metadata names no authorization server");
    else if (!oauth_dup_into(&out->resource, resource) || !oauth_dup_into(&out->issuer, issuer))
        rc = mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    bool failed = false;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(prm, "scopes_supported"), i, item) {
        if (rc != MCP_OK || failed || !json_is_string(item))
            continue;
        oauth_replace(&out->scopes, oauth_scope_union(out->scopes, json_string_value(item), &failed));
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
 * carry credentials across a network in clear, and for a user's
 * authorization it must offer PKCE S256 (a 2025-03-26 server that does
 * not say is taken to) and an authorization endpoint. The client
 * credentials grant needs the token endpoint only. */
static int learn_authorization_server(mcp_oauth_t *o, const resource_info_t *r, json_t **out)
{
    mcp_error_t *err = &o->last_err;
    int rc;
    json_t *meta = fetch_as_metadata(o, r->issuer, &rc);
    if (!meta && r->legacy && !(meta = default_endpoints(r->issuer)))
        return mcp_error_set(err, MCP_ENOMEM, 0, NULL, "out of memory");
    if (!meta)
        return rc;
    const char *endpoints[] = {r->issuer, oauth_str_member(meta, "authorization_endpoint"),
                               oauth_str_member(meta, "token_endpoint"),
                               oauth_str_member(meta, "registration_endpoint")};
    const char *unsafe = NULL;
    for (size_t e = 0; e < sizeof endpoints / sizeof endpoints[0] && !unsafe; e++)
        if (endpoints[e] && !oauth_url_is_safe(endpoints[e], o->http.insecure))
            unsafe = endpoints[e];
    const json_t *pkce = json_object_get(meta, "code_challenge_methods_supported");
    bool for_user = o->grant == MCP_OAUTH_AUTHORIZATION_CODE;
    bool s256 = !for_user || oauth_array_has(pkce, "S256") || (r->legacy && !pkce);
    if (unsafe)
        rc = mcp_error_set(err, MCP_EAUTH, 0, NULL,
                           "the authorization server %s would take credentials over plain "
                           "HTTP, or at a malformed URL (%s): only well-formed https URLs, or "
                           "http to this machine",
                           r->issuer, unsafe);
    else if (!s256)
        rc = mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                           "the authorization server %s does not offer PKCE with S256",
                           r->issuer);
    else if ((for_user && !oauth_str_member(meta, "authorization_endpoint")) ||
             !oauth_str_member(meta, "token_endpoint"))
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
 * credentials are bound to the server that issued them. So are the tokens
 * of another MCP server: server_url names the server the tokens are for,
 * and moves here now, before the grant for this server has run (a step-up
 * keeps its token until the new one comes); were the old tokens kept and
 * the grant then failed, they would be handed to this server.
 */
int oauth_discover(mcp_oauth_t *o, const char *url, const char *hinted_metadata)
{
    resource_info_t r = {0};
    json_t *meta = NULL;
    int rc = learn_resource(o, url, hinted_metadata, &r);
    /* Checked before the authorization server is even asked for its
     * metadata: pre-registered credentials are the pinned server's, and
     * the resource, not the client, chose this one. */
    if (rc == MCP_OK && o->pinned_issuer && strcmp(r.issuer, o->pinned_issuer) != 0)
        rc = mcp_error_set(&o->last_err, MCP_EAUTH, 0, NULL,
                           "the server %s names the authorization server %s, not %s, the issuer "
                           "this client is set up for: no credentials sent",
                           url, r.issuer, o->pinned_issuer);
    if (rc == MCP_OK)
        rc = learn_authorization_server(o, &r, &meta);
    if (rc == MCP_OK) {
        if ((o->issuer && strcmp(o->issuer, r.issuer) != 0) ||
            (o->server_url && strcmp(o->server_url, url) != 0))
            oauth_drop_tokens(o); /* another authorization server's, or server's */
        if (o->reg_issuer && strcmp(o->reg_issuer, r.issuer) != 0)
            oauth_drop_registration(o);
        if (!oauth_dup_into(&o->server_url, url))
            rc = mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
        oauth_replace(&o->resource, r.resource);
        oauth_replace(&o->issuer, r.issuer);
        oauth_replace(&o->resource_scopes, r.scopes);
        memset(&r, 0, sizeof r); /* moved */
        json_decref(o->as_meta);
        o->as_meta = meta;
    }
    resource_info_clear(&r);
    return rc;
}

