/*
 * oauth_internal.h - what the parts of the OAuth client share: the token
 * source's state, and the small helpers every part uses. oauth.c runs the
 * flow and the token callback; oauth_discovery.c learns where to
 * authorize; oauth_state.c saves and restores.
 */
#ifndef MCP_OAUTH_INTERNAL_H
#define MCP_OAUTH_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "client/oauth/oauth_dpop.h"
#include "client/oauth/oauth_http.h"
#include "mcp/oauth.h"

/* The longest a token is taken to live (ten years): a longer lifetime, from
 * a token endpoint or a saved file, is taken as this, which keeps the
 * arithmetic on it in range. */
#define OAUTH_MAX_LIFETIME_S (10 * 365 * 24 * 3600LL)

struct mcp_oauth {
    pthread_mutex_t lock; /* one flow at a time; guards everything below */

    /* The options (copies). */
    mcp_oauth_grant_t grant;
    char *redirect_uri;
    mcp_oauth_authorize_fn authorize;
    void *authorize_user;
    char *client_id, *client_secret; /* pre-registered */
    char *pinned_issuer;             /* the only authorization server, or NULL */
    bool has_key;                    /* private_key_jwt with `key` (ES256) */
    uint8_t key[32];                 /* the P-256 scalar (oauth_jwt.h) */
    mcp_oauth_assertion_fn assertion; /* JWT bearer and enterprise grants */
    void *assertion_user;
    char *idp_token_endpoint, *idp_client_id, *idp_client_secret; /* enterprise */
    char *client_metadata_url;
    char *client_name;
    char *application_type;
    oauth_http_options_t http;
    char *ca_file;
    bool dpop; /* bind tokens to a key when the authorization server can */

    /* The protected resource and its authorization server (discovery). */
    char *server_url;      /* the MCP server URL discovery ran for; the
                            * tokens, when held, are this server's only */
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
    bool token_dpop;       /* the access token is bound to dpop_key */

    /* DPoP (RFC 9449): the key tokens are bound to, made on first use and
     * kept for the token source's life (and saved with its tokens), and the
     * authorization server's last nonce. */
    bool has_dpop_key;
    oauth_dpop_key_t dpop_key;
    char *as_nonce;

    int last_rc;
    mcp_error_t last_err;
};

/* Frees *slot and stores `value` (taken). */
void oauth_replace(char **slot, char *value);
/* Overwrites a secret, frees it, and clears *slot. */
void oauth_wipe(char **slot);
/* Stores a copy of `value` (NULL: none) in *slot; false when out of memory
 * (then *slot is unchanged). */
bool oauth_dup_into(char **slot, const char *value);
/* A string member of an object, or NULL. */
const char *oauth_str_member(const json_t *obj, const char *name);
/* Whether an array holds the string `value`. */
bool oauth_array_has(const json_t *array, const char *value);
/* The scopes of `a`, then those of `b` not in it, each once (space-separated
 * sets); NULL for an empty set. *failed on allocation failure. */
char *oauth_scope_union(const char *a, const char *b, bool *failed);
/* Forgets the tokens, or the registration (secrets wiped). */
void oauth_drop_tokens(mcp_oauth_t *o);
void oauth_drop_registration(mcp_oauth_t *o);

/* The Authorization header of client_secret_basic (RFC 6749 §2.3.1), or
 * NULL when out of memory. */
char *oauth_basic_credentials(const char *id, const char *secret);

/*
 * Posts a token request (`form`, taken) to the authorization server's
 * token endpoint, with the resource indicator and the client's
 * authentication, and keeps the tokens it answers. `requested` is the
 * scope asked for, taken as granted when the answer does not say; a
 * refresh answered without a new refresh token keeps the old one.
 * o->lock held. MCP_OK, or the failure with o->last_err set (a refusal
 * is MCP_EAUTH, with the server's error and error_description).
 */
int oauth_token_request(mcp_oauth_t *o, char *form, const char *requested, bool refreshing);

/*
 * The grants by assertion (oauth_assertion.c). Why the options of any
 * grant misuse those of the JWT bearer and enterprise grants, or NULL
 * when they do not. Then the grants themselves, for `scope` (NULL: none),
 * o->lock held, after discovery: MCP_OK with the tokens kept, or the
 * failure with o->last_err set. Neither retries.
 */
const char *oauth_assertion_options_problem(const mcp_oauth_options_t *opts);
int oauth_jwt_bearer_grant(mcp_oauth_t *o, const char *scope);
int oauth_enterprise_grant(mcp_oauth_t *o, const char *scope);

/*
 * Learns (again) where to authorize for the server at `url` (its resource
 * metadata, hinted by a challenge or at the well-known URLs, and its
 * authorization server's), and keeps it in `o`, dropping the registration
 * and tokens of another authorization server, and the tokens of another
 * MCP server. o->lock held. MCP_OK, or the failure with o->last_err set.
 */
int oauth_discover(mcp_oauth_t *o, const char *url, const char *hinted_metadata);

#endif /* MCP_OAUTH_INTERNAL_H */
