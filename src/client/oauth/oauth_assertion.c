/*
 * The grants by assertion (mcp/oauth.h): a JWT stands for the client's
 * right to a token, and the authorization server takes it in the JWT
 * bearer grant (RFC 7523 §2.1).
 *
 *   workload identity federation   the JWT is the workload's own identity
 *                                  token, issued by its platform for the
 *                                  authorization server (SEP-1933);
 *   enterprise-managed             the JWT is an Identity Assertion JWT
 *                                  Authorization Grant (ID-JAG), which the
 *                                  enterprise's IdP issues in exchange for
 *                                  the user's ID token (RFC 8693 token
 *                                  exchange), by its own policy (SEP-990,
 *                                  draft-ietf-oauth-identity-assertion-
 *                                  authz-grant).
 *
 * An assertion refused is an answer, not a glitch: neither grant is
 * retried, nor followed by another kind of grant; the token endpoint's
 * error goes to the caller (RFC 7523 §3.1 and SEP-1933 ask the client to
 * give up on invalid_grant, invalid_scope and unauthorized_client).
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "client/oauth/oauth_internal.h"
#include "client/oauth/oauth_parse.h"

/* RFC 7523 §2.1. */
#define JWT_BEARER_GRANT "urn:ietf:params:oauth:grant-type:jwt-bearer"
/* RFC 8693 §2.1 and §3; the ID-JAG draft §9.1. */
#define TOKEN_EXCHANGE_GRANT "urn:ietf:params:oauth:grant-type:token-exchange"
#define ID_TOKEN_TYPE "urn:ietf:params:oauth:token-type:id_token"
/* The largest token file mcp_oauth_assertion_from_file() reads (its
 * refusal message in fetch_assertion() says "64 KiB"). */
#define ASSERTION_FILE_MAX (64 * 1024)
#define ID_JAG_TYPE "urn:ietf:params:oauth:token-type:id-jag"

static bool is_assertion_grant(mcp_oauth_grant_t grant)
{
    return grant == MCP_OAUTH_JWT_BEARER || grant == MCP_OAUTH_ENTERPRISE;
}

const char *oauth_assertion_options_problem(const mcp_oauth_options_t *opts)
{
    bool idp = opts->idp_token_endpoint || opts->idp_client_id || opts->idp_client_secret;
    if (!is_assertion_grant(opts->grant))
        return opts->assertion ? "an assertion callback is for the JWT bearer and enterprise "
                                 "grants only"
               : idp ? "the IdP options are for the enterprise grant only"
                     : NULL;
    if (!opts->assertion)
        return opts->grant == MCP_OAUTH_JWT_BEARER
                   ? "the JWT bearer grant needs an assertion callback (the workload's JWT)"
                   : "the enterprise grant needs an assertion callback (the user's ID token)";
    if (opts->private_key_pem || opts->signing_algorithm)
        return "a private key (private_key_jwt) is for the client credentials grant only";
    if (opts->grant == MCP_OAUTH_JWT_BEARER)
        return idp ? "the IdP options are for the enterprise grant only" : NULL;
    if (!opts->client_id)
        return "the enterprise grant needs the client's id at the authorization server";
    if (!opts->idp_token_endpoint || !opts->idp_client_id)
        return "the enterprise grant needs the IdP's token endpoint and the client's id there";
    return NULL;
}

/* Asks the application for the JWT to present; *jwt malloc'd. */
static int fetch_assertion(mcp_oauth_t *o, const char *audience, const char *what, char **jwt)
{
    *jwt = NULL;
    int rc = o->assertion(o->assertion_user, audience, jwt);
    if (rc >= 0 && *jwt && **jwt)
        return MCP_OK;
    free(*jwt);
    *jwt = NULL;
    int code = rc < 0 ? rc : MCP_EAUTH;
    /* The library's own reader knows where it looked: say so, as the one
     * who must fix it is whoever mounts that file. */
    if (o->assertion == mcp_oauth_assertion_from_file)
        return mcp_error_set(&o->last_err, code, 0, NULL, "no %s in the file %s: %s", what,
                             (const char *)o->assertion_user,
                             rc == MCP_EIO ? "it is missing, unreadable, not a regular file "
                                             "or larger than 64 KiB"
                                           : "it is empty or not text");
    return mcp_error_set(&o->last_err, code, 0, NULL, "the application gave no %s", what);
}

/* Whether o's authorization server offers the JWT bearer grant (RFC
 * 8414: a server that lists no grant types offers authorization_code and
 * implicit only); MCP_OK, or MCP_EUNSUPPORTED with o->last_err set. */
static int offers_jwt_bearer(mcp_oauth_t *o)
{
    if (oauth_array_has(json_object_get(o->as_meta, "grant_types_supported"), JWT_BEARER_GRANT))
        return MCP_OK;
    return mcp_error_set(&o->last_err, MCP_EUNSUPPORTED, 0, NULL,
                         "the authorization server %s does not offer the JWT bearer grant",
                         o->issuer);
}

/* The JWT bearer grant with `jwt` (wiped and freed) at o's authorization
 * server. */
static int present(mcp_oauth_t *o, char *jwt, const char *scope)
{
    int rc = MCP_OK;
    char *form = NULL;
    if (oauth_form_add(&form, "grant_type", JWT_BEARER_GRANT) != MCP_OK ||
        oauth_form_add(&form, "assertion", jwt) != MCP_OK ||
        oauth_form_add(&form, "scope", scope) != MCP_OK)
        rc = mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
    explicit_bzero(jwt, strlen(jwt));
    free(jwt);
    if (rc != MCP_OK) {
        free(form);
        return rc;
    }
    return oauth_token_request(o, form, scope, false);
}

int oauth_jwt_bearer_grant(mcp_oauth_t *o, const char *scope)
{
    char *jwt = NULL;
    int rc = offers_jwt_bearer(o);
    if (rc == MCP_OK)
        rc = fetch_assertion(o, o->issuer, "workload JWT", &jwt);
    return rc == MCP_OK ? present(o, jwt, scope) : rc;
}

/* ------------------------------------------------------------------------
 * Enterprise-Managed Authorization
 * ------------------------------------------------------------------------ */

/* The token exchange request: the user's ID token for an ID-JAG meant for
 * o's authorization server (audience, its issuer identifier) and MCP
 * server (resource), and the client's authentication at the IdP. */
static int exchange_request(mcp_oauth_t *o, const char *id_token, const char *scope,
                            char **form, char **authorization)
{
    int rc = oauth_form_add(form, "grant_type", TOKEN_EXCHANGE_GRANT);
    if (rc == MCP_OK)
        rc = oauth_form_add(form, "requested_token_type", ID_JAG_TYPE);
    if (rc == MCP_OK)
        rc = oauth_form_add(form, "audience", o->issuer);
    if (rc == MCP_OK)
        rc = oauth_form_add(form, "resource", o->resource);
    if (rc == MCP_OK)
        rc = oauth_form_add(form, "scope", scope);
    if (rc == MCP_OK)
        rc = oauth_form_add(form, "subject_token", id_token);
    if (rc == MCP_OK)
        rc = oauth_form_add(form, "subject_token_type", ID_TOKEN_TYPE);
    /* RFC 6749 §2.3.1: a confidential client in a Basic header, which
     * every server supports; a public client names itself in the form. */
    if (rc == MCP_OK && o->idp_client_secret)
        rc = (*authorization = oauth_basic_credentials(o->idp_client_id, o->idp_client_secret))
                 ? MCP_OK
                 : MCP_ENOMEM;
    else if (rc == MCP_OK)
        rc = oauth_form_add(form, "client_id", o->idp_client_id);
    return rc;
}

/* The ID-JAG in a token exchange answer (RFC 8693 §2.2.1: the token is
 * access_token, whatever its type; issued_token_type says it), malloc'd;
 * else NULL with o->last_err set. */
static char *id_jag_from(mcp_oauth_t *o, const oauth_http_response_t *r, int *rc)
{
    json_t *answer = oauth_http_json(r);
    const char *jag = oauth_str_member(answer, "access_token");
    const char *type = oauth_str_member(answer, "issued_token_type");
    char *why = NULL, *out = NULL;
    if (!jag && oauth_token_error(r->body, r->len, &why) == MCP_ENOMEM)
        *rc = mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
    else if (!jag || !*jag)
        *rc = mcp_error_set(&o->last_err, MCP_EAUTH, 0, NULL,
                            "the IdP's token endpoint %s refused the token exchange: HTTP %ld %s",
                            o->idp_token_endpoint, r->status, why ? why : "no token");
    else if (!type || strcmp(type, ID_JAG_TYPE) != 0)
        *rc = mcp_error_set(&o->last_err, MCP_EPROTO, 0, NULL,
                            "the IdP's token endpoint %s issued a %.100s, not an ID-JAG",
                            o->idp_token_endpoint, type ? type : "token of no said type");
    else if (!(out = strdup(jag)))
        *rc = mcp_error_set(&o->last_err, MCP_ENOMEM, 0, NULL, "out of memory");
    free(why);
    json_decref(answer);
    return out;
}

/* Exchanges the user's ID token at the IdP for an ID-JAG (*jag). */
static int exchange_for_id_jag(mcp_oauth_t *o, const char *scope, char **jag)
{
    char *id_token = NULL, *form = NULL, *authorization = NULL;
    int rc = fetch_assertion(o, NULL, "ID token", &id_token);
    if (rc != MCP_OK)
        return rc;
    rc = exchange_request(o, id_token, scope, &form, &authorization);
    explicit_bzero(id_token, strlen(id_token));
    free(id_token);
    oauth_http_response_t r = {0};
    if (rc != MCP_OK)
        rc = mcp_error_set(&o->last_err, rc, 0, NULL, "out of memory");
    else
        rc = oauth_http_request(&o->http, o->idp_token_endpoint,
                                "application/x-www-form-urlencoded", form, authorization, &r,
                                &o->last_err);
    if (form)
        explicit_bzero(form, strlen(form));
    free(form);
    if (authorization)
        explicit_bzero(authorization, strlen(authorization));
    free(authorization);
    if (rc == MCP_OK)
        *jag = id_jag_from(o, &r, &rc);
    oauth_http_response_free(&r);
    return rc;
}

int oauth_enterprise_grant(mcp_oauth_t *o, const char *scope)
{
    int rc = offers_jwt_bearer(o);
    if (rc != MCP_OK)
        return rc;
    if (!oauth_url_is_safe(o->idp_token_endpoint, o->http.insecure))
        return mcp_error_set(&o->last_err, MCP_EAUTH, 0, NULL,
                             "the IdP's token endpoint %s would take the user's ID token over "
                             "plain HTTP, or is a malformed URL: only well-formed https URLs, or "
                             "http to this machine",
                             o->idp_token_endpoint);
    char *jag = NULL;
    rc = exchange_for_id_jag(o, scope, &jag);
    return rc == MCP_OK ? present(o, jag, scope) : rc;
}

/* ------------------------------------------------------------------------
 * An assertion kept in a file
 * ------------------------------------------------------------------------ */


int mcp_oauth_assertion_from_file(void *path, const char *audience, char **assertion_out)
{
    (void)audience; /* the platform minted the token for its audience */
    if (!path || !assertion_out)
        return MCP_EINVAL;
    *assertion_out = NULL;
    /* Non-blocking: a FIFO or a device named by mistake must not hang the
     * request; only a small regular file is read. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > ASSERTION_FILE_MAX) {
        if (fd >= 0)
            close(fd);
        return MCP_EIO;
    }
    char *text = malloc((size_t)st.st_size + 1);
    ssize_t n = text ? read(fd, text, (size_t)st.st_size) : -1;
    close(fd);
    if (!text)
        return MCP_ENOMEM;
    if (n != (ssize_t)st.st_size) {
        free(text);
        return MCP_EIO;
    }
    size_t start = 0, end = (size_t)n;
    while (start < end && isspace((unsigned char)text[start]))
        start++;
    while (end > start && isspace((unsigned char)text[end - 1]))
        end--;
    if (start == end || memchr(text + start, '\0', end - start)) {
        free(text); /* nothing there, or not text */
        return MCP_EINVAL;
    }
    memmove(text, text + start, end - start);
    text[end - start] = '\0';
    *assertion_out = text;
    return MCP_OK;
}
