/*
 * mcp/oauth.h - OAuth 2.1 authorization for a client's HTTP connections.
 *
 * A protected MCP server answers 401 with a WWW-Authenticate challenge. An
 * mcp_oauth_t answers it the way the MCP authorization specification asks:
 *
 *   discovery      the server's protected resource metadata (RFC 9728): the
 *                  challenge's resource_metadata URL, else the well-known
 *                  URLs (path form first); its `resource` must cover the
 *                  server URL. Then the authorization server's metadata
 *                  (RFC 8414, OpenID Connect Discovery), whose `issuer`
 *                  must be the one asked for, which must offer PKCE S256,
 *                  and whose endpoints must be https (or http to this
 *                  machine): credentials never cross a network in clear.
 *                  Endpoints must be well-formed absolute URLs, without
 *                  credentials (user@) in them, so that the host checked
 *                  is the host connected to.
 *                  A server with no resource metadata is taken as the
 *                  2025-03-26 revision had it: its origin is its
 *                  authorization server, at that origin's metadata or at
 *                  the default /authorize, /token and /register.
 *                  With the `issuer` option, that authorization server
 *                  must be the one pinned (see mcp_oauth_options_t).
 *   registration   the pre-registered client if one is given; else a Client
 *                  ID Metadata Document URL, if given and the server
 *                  supports them; else dynamic registration (RFC 7591).
 *                  Registrations are kept per authorization server, and
 *                  dropped when the resource moves to another one.
 *   authorization  the authorization code grant with PKCE (S256), `state`,
 *                  the `resource` indicator (RFC 8707) and the issuer check
 *                  of RFC 9207; the user's part (a browser) is the
 *                  application's `authorize` callback.
 *   tokens         from the token endpoint, authenticated as the server
 *                  supports (client_secret_basic, client_secret_post, or
 *                  none); refreshed with the refresh token when one expires
 *                  or is refused. A token is taken as expired 30 s before
 *                  the end of its expires_in, or half its lifetime before
 *                  when that is shorter (a lifetime beyond ten years is
 *                  taken as ten years).
 *   machines       or, with the client credentials grant (the extension
 *                  io.modelcontextprotocol/oauth-client-credentials, RFC
 *                  6749 §4.4), no user at all: the pre-registered client
 *                  asks the token endpoint for a token in its own name,
 *                  authenticated by its secret (client_secret_basic, or
 *                  client_secret_post when the server supports only that)
 *                  or by a JWT signed with its private key (private_key_jwt,
 *                  RFC 7523, ES256 only). The authorization server must
 *                  list client_credentials in grant_types_supported, and
 *                  private_key_jwt and ES256 when the key is used; PKCE,
 *                  the authorization endpoint and registration play no
 *                  part. There is no refresh token: an expired token is
 *                  replaced by a new grant.
 *   workloads      or, with the JWT bearer grant (RFC 7523 §2.1; workload
 *                  identity federation), a workload presents a JWT its
 *                  platform issued it (a Kubernetes service account token,
 *                  a cloud or CI identity token) as the grant itself: the
 *                  application's `assertion` callback supplies a fresh one
 *                  for each grant, with the authorization server's issuer
 *                  as audience. The authorization server must list the
 *                  grant type urn:ietf:params:oauth:grant-type:jwt-bearer.
 *   enterprises    or, with Enterprise-Managed Authorization (the extension
 *                  io.modelcontextprotocol/enterprise-managed-authorization),
 *                  the user's sign-in at the enterprise's identity provider
 *                  (IdP) stands for them: the user's ID token (again from
 *                  the `assertion` callback) is exchanged at the IdP's
 *                  token endpoint (RFC 8693 token exchange) for an Identity
 *                  Assertion JWT Authorization Grant (ID-JAG) naming the
 *                  MCP authorization server (audience) and the MCP server
 *                  (resource), which the client then presents to that
 *                  authorization server in a JWT bearer grant. The IdP
 *                  decides by its policy; no browser is involved.
 *                  Both grants fail as the token endpoint says (its error
 *                  and error_description, in mcp_oauth_last_error()), and
 *                  are not retried nor replaced by another grant; an
 *                  expired token is replaced by a new grant with a fresh
 *                  assertion (or refreshed, if a refresh token came).
 *   DPoP           with the `dpop` option, tokens bound to a key (RFC 9449,
 *                  the MCP DPoP extension) when the authorization server
 *                  lists ES256 in dpop_signing_alg_values_supported: a key
 *                  pair made for the token source, a proof signed with it
 *                  on every token request and every request to the MCP
 *                  server (mcp_oauth_proof), and one more try with the
 *                  nonce a server asks for (use_dpop_nonce). A server
 *                  that answers a Bearer token anyway gets it used as one.
 *   scopes         the challenge's `scope`, else the resource's
 *                  scopes_supported, else none; a 403 insufficient_scope
 *                  asks again for the union of what was granted and what is
 *                  challenged, once: a challenge for scopes already granted
 *                  fails instead of looping.
 *
 * Use: make one per server (or per user), and set it as the token source of
 * the HTTP target. One shared by several servers holds the tokens of one
 * server at a time, and gives them to that server only: when another
 * server challenges, the tokens held are dropped before its flow runs
 * (whether or not that flow succeeds).
 *
 *     mcp_oauth_t *auth = mcp_oauth_new(&(mcp_oauth_options_t){
 *         .redirect_uri = "http://127.0.0.1:8976/callback",
 *         .authorize = open_browser_and_wait, .authorize_user = app}, &err);
 *     mcp_client_connect_http(client, &(mcp_http_target_t){
 *         .url = "https://example.com/mcp",
 *         .token = mcp_oauth_token, .token_proof = mcp_oauth_proof,
 *         .token_user = auth}, &err);
 *
 * Requests refused with 401 or 403 are sent once more after the token
 * source answered the challenge (mcp_http_target_t).
 *
 * Threads: an mcp_oauth_t may be used by several connections and threads at
 * once; one flow runs at a time. Tokens live in memory, unless the
 * application keeps them with mcp_oauth_save() and mcp_oauth_restore().
 */
#ifndef MCP_OAUTH_H
#define MCP_OAUTH_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "mcp/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mcp_oauth mcp_oauth_t;

/*
 * The user's part of the authorization: show `authorization_url` (open it
 * in a browser), wait for the authorization server to redirect to the
 * redirect URI, and return that whole URL (with its code, state and iss
 * parameters) as a malloc'd string in *redirect_out. Return 0, or a
 * negative MCP_E* code to give up (the request then fails with it). Called
 * on the thread whose request needs a token; it may block.
 */
typedef int (*mcp_oauth_authorize_fn)(void *user, const char *authorization_url,
                                      char **redirect_out);

/*
 * A JWT for a grant, as a malloc'd string in *assertion_out: for
 * MCP_OAUTH_JWT_BEARER the workload's identity token, meant for
 * `audience` (the authorization server's issuer identifier); for
 * MCP_OAUTH_ENTERPRISE the user's ID token from the enterprise IdP
 * (`audience` is NULL: the IdP issued it to this client). Called for each
 * grant, so that a short-lived token can be fetched fresh. Return 0, or a
 * negative MCP_E* code to give up (the request then fails with it).
 * Called on the thread whose request needs a token; it may block.
 */
typedef int (*mcp_oauth_assertion_fn)(void *user, const char *audience, char **assertion_out);

/*
 * An mcp_oauth_assertion_fn that reads the JWT from a file at each grant:
 * `path` (const char *, borrowed for as long as the token source lives) is
 * the file, e.g. a Kubernetes projected service account token, which the
 * platform rewrites before it expires. The file must be a regular file of
 * at most 64 KiB; surrounding whitespace is dropped. Errors: MCP_EIO (it
 * cannot be opened or read, or is not such a file), MCP_EINVAL (empty, or
 * holding a NUL byte), MCP_ENOMEM. Thread-safe.
 */
MCP_API int mcp_oauth_assertion_from_file(void *path, const char *audience,
                                          char **assertion_out);

/* How the token source gets its tokens. */
typedef enum mcp_oauth_grant {
    /* A user authorizes in a browser (the authorization code grant). */
    MCP_OAUTH_AUTHORIZATION_CODE = 0,
    /* The client asks in its own name (the client credentials grant):
     * for services, jobs and pipelines with no user present. */
    MCP_OAUTH_CLIENT_CREDENTIALS = 1,
    /* The workload presents a JWT its platform issued (the JWT bearer
     * grant, workload identity federation). */
    MCP_OAUTH_JWT_BEARER = 2,
    /* The user's enterprise IdP grants access by its policy: ID token,
     * token exchange for an ID-JAG, JWT bearer grant (Enterprise-Managed
     * Authorization). */
    MCP_OAUTH_ENTERPRISE = 3,
} mcp_oauth_grant_t;

typedef struct mcp_oauth_options {
    /* The grant; MCP_OAUTH_AUTHORIZATION_CODE (0) unless set. */
    mcp_oauth_grant_t grant;

    /* Required for the authorization code grant (not used by client
     * credentials): where the authorization server sends the user back,
     * as registered (e.g. a loopback URL the application listens on). */
    const char *redirect_uri;
    /* Required for the authorization code grant (not used by client
     * credentials): see mcp_oauth_authorize_fn. */
    mcp_oauth_authorize_fn authorize;
    void *authorize_user;

    /* A client registered beforehand with the authorization server: its
     * id, and its secret for a confidential client (else NULL). Optional
     * for the JWT bearer grant (RFC 7523 §3.1: the assertion may be all
     * the authorization server asks for); required for the enterprise
     * grant, whose ID-JAG names the client. */
    const char *client_id;
    const char *client_secret;
    /* The issuer identifier of the authorization server the client is
     * registered with (e.g. "https://auth.example.com"), or NULL. When
     * set, the authorization server an MCP server names (the first of its
     * resource metadata's authorization_servers; for a server without
     * metadata, its origin) must be exactly this (compared as strings, as
     * RFC 8414 compares issuers), and saved state restored must be for
     * it: otherwise the sign-in fails with MCP_EAUTH (mcp_oauth_restore:
     * MCP_EINVAL) and a message naming both, before any request to that
     * authorization server, so before any credential is sent.
     * Without it, the client follows the MCP server (the RFC 9728 trust
     * model): the pre-registered client_id and client_secret, the
     * private_key_jwt assertions, and the workload's JWT or the
     * enterprise's ID-JAG go to whatever authorization server the MCP
     * server names -- a malicious or compromised MCP server, or anyone on
     * the path to an http:// one, can name its own and collect them. Set
     * it whenever credentials are pre-registered (client_secret,
     * private_key_pem, or the JWT bearer and enterprise grants). Must be
     * an https URL (or http to this machine unless `insecure`) without a
     * query or fragment. */
    const char *issuer;
    /* Client credentials only, instead of a secret: the client's private
     * key, as PEM text of an unencrypted PKCS#8 "PRIVATE KEY" (e.g. from
     * `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`),
     * whose public key the authorization server knows for client_id. The
     * client then authenticates with private_key_jwt: a JWT assertion
     * (iss and sub the client id, aud the authorization server's issuer,
     * valid five minutes, a unique jti) signed with `signing_algorithm`:
     * NULL or "ES256" (ECDSA on P-256 with SHA-256), the only one
     * supported (RS256 keys are refused). The key is read, checked and
     * copied by mcp_oauth_new(); it is signed with Nettle's libhogweed,
     * loaded on first use. */
    const char *private_key_pem;
    const char *signing_algorithm;
    /* Required for the JWT bearer and enterprise grants (not used by the
     * others): see mcp_oauth_assertion_fn. */
    mcp_oauth_assertion_fn assertion;
    void *assertion_user;
    /* Enterprise grant only: the enterprise IdP's token endpoint (a
     * well-formed https URL, or http to this machine unless `insecure`;
     * no user@ in it), and this client's
     * registration with the IdP: its id (required) and, for a
     * confidential client, its secret (sent in a Basic header; else the
     * id goes in the form). */
    const char *idp_token_endpoint;
    const char *idp_client_id;
    const char *idp_client_secret;
    /* An https URL serving this client's metadata document (Client ID
     * Metadata Documents): used as the client id by servers that support
     * them, instead of registering. NULL: none. */
    const char *client_metadata_url;
    /* For dynamic registration: the name shown to the user (NULL:
     * "libmcp client") and the application type, "native" (the default:
     * desktop, command line, loopback redirect) or "web". */
    const char *client_name;
    const char *application_type;

    /* Requests to the authorization server and the metadata URLs: the
     * whole request's limit in ms (0: 30000), and TLS as in
     * mcp_http_target_t; `insecure` also allows an authorization server
     * on plain HTTP beyond this machine (for tests). */
    int64_t timeout_ms;
    bool insecure;
    const char *ca_file;

    /* Ask for tokens bound to a key (DPoP, RFC 9449) from authorization
     * servers that offer them with ES256; others still give Bearer tokens.
     * The HTTP target must then have mcp_oauth_proof as its token_proof:
     * a bound token sent without its proof is refused. */
    bool dpop;
} mcp_oauth_options_t;

/*
 * Creates a token source. The options are copied. Errors: MCP_EINVAL (for
 * the authorization code grant: no redirect_uri or authorize callback, or
 * a private key; for client credentials: no client id, or not exactly one
 * of a secret and a private key; a private key that is not an EC P-256
 * PKCS#8 PEM, or a signing_algorithm other than "ES256"; for the JWT
 * bearer grant: no assertion callback, or a private key; for the
 * enterprise grant: no assertion callback, client id, IdP token endpoint
 * or IdP client id, or a private key; IdP options with another grant; an
 * application_type other than "native" or "web"; a secret without a
 * client id; an issuer that is not such a URL; an unknown grant),
 * MCP_ENOMEM. Free with mcp_oauth_free().
 */
MCP_API mcp_oauth_t *mcp_oauth_new(const mcp_oauth_options_t *options, mcp_error_t *err);

/* Frees the token source, wiping the tokens and secrets it holds. No
 * connection may still use it. NULL is ignored. */
MCP_API void mcp_oauth_free(mcp_oauth_t *oauth);

/*
 * The token callback (mcp_token_fn) to set in mcp_http_target_t, with the
 * mcp_oauth_t as `user`. Without a challenge it answers the token it holds
 * for the server (refreshed, or granted anew with client credentials, if
 * it has expired), or none; with one it runs
 * the flow above. Returns 0 with a malloc'd token (or NULL) in *token_out,
 * or a negative MCP_E* code: MCP_EAUTH (refused, a scope the server
 * will not grant, or an authorization server other than the pinned
 * `issuer`), MCP_EPROTO (a server broke the protocol), MCP_EIO,
 * MCP_ETIMEDOUT, MCP_EUNSUPPORTED (no PKCE S256; no way to register; for
 * client credentials, a server that does not list the grant, the
 * client's authentication method or ES256; for the JWT bearer and
 * enterprise grants, a server that does not list the JWT bearer grant;
 * libhogweed missing), or what the authorize or assertion callback
 * returned. Why: mcp_oauth_last_error().
 */
MCP_API int mcp_oauth_token(void *oauth, const char *url, const char *challenge,
                            char **token_out);

/*
 * The proof callback (mcp_token_proof_fn) to set in mcp_http_target_t with
 * mcp_oauth_token, with the same mcp_oauth_t as `user`. For a token bound
 * to the token source's key it answers a new DPoP proof for the request:
 * `method`, `url` (without its query and fragment), the hash of `token`,
 * a random jti, the time, and `nonce` when it is a well-formed one (a
 * malformed nonce is left out: the server asks again, and the request
 * fails). For a Bearer token (or no DPoP) it answers NULL. Returns 0, or
 * MCP_EINVAL, MCP_ENOMEM, MCP_EIO (no random bytes), MCP_EUNSUPPORTED (no
 * libhogweed). Thread-safe.
 */
MCP_API int mcp_oauth_proof(void *oauth, const char *method, const char *url, const char *token,
                            const char *nonce, char **proof_out);

/*
 * Copies why the last flow failed into *err (message, and MCP_OK if the
 * last flow succeeded). Returns that flow's result code. The last flow is
 * the mcp_oauth_token() call on this token source that finished last,
 * whichever connection or thread made it (calls run one at a time), a
 * call that only handed out a held token included. With several
 * connections sharing the source, another connection's call may have
 * replaced the one you are asking about: give each its own mcp_oauth_t
 * when you need to know which failed. MCP_EINVAL for a NULL oauth.
 */
MCP_API int mcp_oauth_last_error(mcp_oauth_t *oauth, mcp_error_t *err);

/*
 * What is worth keeping between runs, so that the user signs in once: the
 * server and its authorization server as discovered, the client's
 * registration, and the tokens (with their expiry in wall-clock time; a
 * DPoP-bound token with the private key it is bound to, without which it
 * is useless). A
 * new JSON object, or NULL when nothing is held yet (or out of memory).
 * It holds secrets: store it as you would a password (the mcp command
 * keeps it in a file only its user may read). Thread-safe.
 */
MCP_API json_t *mcp_oauth_save(mcp_oauth_t *oauth);

/*
 * Takes back what mcp_oauth_save() returned (borrowed), replacing what the
 * token source holds. An expired access token is refreshed when first
 * needed (granted anew with client credentials), or forgotten without a
 * refresh token. The private key of private_key_jwt is not saved: it
 * stays the application's (a DPoP key is, with its tokens). Errors:
 * MCP_EINVAL (not a document mcp_oauth_save() writes; among others, its
 * authorization server lacks a token endpoint, or has an endpoint that is
 * neither https nor http to this machine, unless `insecure`), MCP_ENOMEM;
 * the token source is left as it was. Thread-safe.
 */
MCP_API int mcp_oauth_restore(mcp_oauth_t *oauth, const json_t *saved, mcp_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* MCP_OAUTH_H */
