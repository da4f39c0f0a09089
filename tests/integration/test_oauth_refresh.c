/*
 * The authorization code grant's tokens over time, against a small
 * authorization server (tests/support/oauth_fixture), with mcp_oauth_token
 * called as the HTTP client calls it:
 *   - a token the server refuses is replaced through the refresh token,
 *     without the user, and the refresh token is rotated when the
 *     authorization server sends a new one;
 *   - a token past its expiry is refreshed before it is sent;
 *   - a refresh the authorization server refuses falls back to asking the
 *     user again;
 *   - the user refusing (error=access_denied on the redirect) and the
 *     authorization server refusing registration fail with MCP_EAUTH, and
 *     say why;
 *   - a token source shared by two servers of the same authorization
 *     server never hands one server's token to the other, even when the
 *     other's step-up fails.
 */
#define _GNU_SOURCE

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <microhttpd.h>

#include "mcp/mcp.h"
#include "oauth_fixture.h"
#include "test_clock.h"

#define CODE "the-code"
#define RESOURCE_PATH "/mcp"
/* A second protected resource of the same authorization server. */
#define OTHER_PATH "/other"

typedef struct as {
    oauth_fixture_t *http;
    char issuer[OAUTH_FIXTURE_ORIGIN_MAX];
    pthread_mutex_t lock;
    int tokens_issued;      /* access tokens handed out: tok-1, tok-2, ... */
    int refreshes;          /* refresh_token grants received */
    char last_refresh[64];  /* the refresh token of the last one */
    bool refuse_refresh;    /* answer refresh grants invalid_grant */
    bool refuse_register;   /* answer registration 400 */
    int expires_in;         /* of the tokens issued */
} as_t;

static enum MHD_Result issue(as_t *as, struct MHD_Connection *conn)
{
    char json[256];
    int n = ++as->tokens_issued;
    snprintf(json, sizeof json,
             "{\"access_token\":\"tok-%d\",\"token_type\":\"Bearer\",\"expires_in\":%d,"
             "\"refresh_token\":\"ref-%d\"}",
             n, as->expires_in, n);
    return oauth_fixture_answer(conn, 200, json);
}

static enum MHD_Result route(void *user, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *body)
{
    as_t *as = user;
    enum MHD_Result rc;
    pthread_mutex_lock(&as->lock);
    if (strcmp(url, "/prm") == 0) {
        char resource[128];
        snprintf(resource, sizeof resource, "%s" RESOURCE_PATH, as->issuer);
        rc = oauth_fixture_answer_resource_metadata(conn, resource, "", as->issuer, NULL);
    } else if (strcmp(url, "/prm-other") == 0) {
        char resource[128];
        snprintf(resource, sizeof resource, "%s" OTHER_PATH, as->issuer);
        rc = oauth_fixture_answer_resource_metadata(conn, resource, "", as->issuer, NULL);
    } else if (strcmp(url, "/.well-known/oauth-authorization-server") == 0) {
        char extra[512];
        snprintf(extra, sizeof extra,
                 "\"authorization_endpoint\":\"%s/authorize\","
                 "\"registration_endpoint\":\"%s/register\","
                 "\"code_challenge_methods_supported\":[\"S256\"],"
                 "\"grant_types_supported\":[\"authorization_code\",\"refresh_token\"]",
                 as->issuer, as->issuer);
        rc = oauth_fixture_answer_as_metadata(conn, as->issuer, extra);
    } else if (strcmp(url, "/register") == 0 && strcmp(method, "POST") == 0) {
        rc = as->refuse_register
                 ? oauth_fixture_answer(conn, 400, "{\"error\":\"invalid_client_metadata\"}")
                 : oauth_fixture_answer(conn, 201, "{\"client_id\":\"refresh-client\"}");
    } else if (strcmp(url, "/token") == 0 && strcmp(method, "POST") == 0) {
        char *grant = oauth_fixture_form_get(body, "grant_type");
        char *refresh = oauth_fixture_form_get(body, "refresh_token");
        if (grant && strcmp(grant, "refresh_token") == 0) {
            as->refreshes++;
            snprintf(as->last_refresh, sizeof as->last_refresh, "%s", refresh ? refresh : "");
            rc = as->refuse_refresh ? oauth_fixture_answer(conn, 400,
                                                           "{\"error\":\"invalid_grant\"}")
                                    : issue(as, conn);
        } else if (grant && strcmp(grant, "authorization_code") == 0 && strstr(body, CODE)) {
            rc = issue(as, conn);
        } else {
            rc = oauth_fixture_answer(conn, 400, "{\"error\":\"invalid_grant\"}");
        }
        free(grant);
        free(refresh);
    } else {
        rc = oauth_fixture_answer(conn, 404, "{}");
    }
    pthread_mutex_unlock(&as->lock);
    return rc;
}

/* ---- the user ---- */

typedef struct user {
    as_t *as;
    int approvals;
    bool deny;
} user_t;

static int authorize(void *arg, const char *url, char **redirect_out)
{
    user_t *u = arg;
    u->approvals++;
    const char *state = strstr(url, "state=");
    assert_non_null(state);
    state += strlen("state=");
    int len = (int)strcspn(state, "&");
    int n = u->deny ? asprintf(redirect_out,
                               "http://127.0.0.1:9/cb?error=access_denied&"
                               "error_description=the+user+said+no&state=%.*s",
                               len, state)
                    : asprintf(redirect_out, "http://127.0.0.1:9/cb?code=" CODE "&state=%.*s",
                               len, state);
    return n < 0 ? MCP_ENOMEM : 0;
}

/* ---- fixture ---- */

typedef struct fixture {
    as_t as;
    user_t user;
    mcp_oauth_t *oauth;
    char url[128];       /* the protected resource */
    char challenge[256]; /* its 401 challenge */
    char refused[256];   /* its challenge for a token it no longer takes */
} fixture_t;

/* A token source for the authorization code grant, with `user` as the
 * one who signs in. */
static mcp_oauth_t *new_oauth(user_t *user)
{
    mcp_error_t err = {0};
    mcp_oauth_t *oauth = mcp_oauth_new(&(mcp_oauth_options_t){
                                           .redirect_uri = "http://127.0.0.1:9/cb",
                                           .authorize = authorize,
                                           .authorize_user = user},
                                       &err);
    assert_non_null(oauth);
    return oauth;
}

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    pthread_mutex_init(&f->as.lock, NULL);
    f->as.expires_in = 3600;
    f->as.http = oauth_fixture_start(route, &f->as, f->as.issuer);
    snprintf(f->url, sizeof f->url, "%s" RESOURCE_PATH, f->as.issuer);
    snprintf(f->challenge, sizeof f->challenge, "Bearer resource_metadata=\"%s/prm\"",
             f->as.issuer);
    snprintf(f->refused, sizeof f->refused,
             "Bearer error=\"invalid_token\", resource_metadata=\"%s/prm\"", f->as.issuer);
    f->user.as = &f->as;
    f->oauth = new_oauth(&f->user);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    mcp_oauth_free(f->oauth);
    oauth_fixture_stop(f->as.http);
    pthread_mutex_destroy(&f->as.lock);
    free(f);
    return 0;
}

/* mcp_oauth_token's answer, asserted to succeed. */
static char *token(fixture_t *f, const char *challenge)
{
    char *tok = NULL;
    int rc = mcp_oauth_token(f->oauth, f->url, challenge, &tok);
    if (rc != MCP_OK) {
        mcp_error_t err = {0};
        mcp_oauth_last_error(f->oauth, &err);
        fail_msg("mcp_oauth_token: %d %s", rc, err.message);
    }
    assert_non_null(tok);
    return tok;
}

static void expect_token(fixture_t *f, const char *challenge, const char *want)
{
    char *tok = token(f, challenge);
    assert_string_equal(tok, want);
    free(tok);
}

static int count(fixture_t *f, const int *field)
{
    pthread_mutex_lock(&f->as.lock);
    int n = *field;
    pthread_mutex_unlock(&f->as.lock);
    return n;
}

/* ---- cases ---- */

static void test_refused_token_refreshed_without_the_user(void **state)
{
    fixture_t *f = *state;
    expect_token(f, f->challenge, "tok-1");
    assert_int_equal(f->user.approvals, 1);
    expect_token(f, NULL, "tok-1"); /* held, still valid */

    /* Refused by the server: the refresh token gets the next one. */
    expect_token(f, f->refused, "tok-2");
    assert_int_equal(f->user.approvals, 1);
    assert_int_equal(count(f, &f->as.refreshes), 1);
    pthread_mutex_lock(&f->as.lock);
    assert_string_equal(f->as.last_refresh, "ref-1");
    pthread_mutex_unlock(&f->as.lock);

    /* Again: the rotated refresh token is the one used. */
    expect_token(f, f->refused, "tok-3");
    pthread_mutex_lock(&f->as.lock);
    assert_string_equal(f->as.last_refresh, "ref-2");
    pthread_mutex_unlock(&f->as.lock);
    assert_int_equal(f->user.approvals, 1);
}

static void test_expired_token_refreshed_before_use(void **state)
{
    fixture_t *f = *state;
    f->as.expires_in = 1;
    expect_token(f, f->challenge, "tok-1");
    sleep_ms(2100); /* past its expiry, whatever margin is kept */
    expect_token(f, NULL, "tok-2");
    assert_int_equal(count(f, &f->as.refreshes), 1);
    assert_int_equal(f->user.approvals, 1);
}

static void test_refused_refresh_asks_the_user_again(void **state)
{
    fixture_t *f = *state;
    expect_token(f, f->challenge, "tok-1");
    pthread_mutex_lock(&f->as.lock);
    f->as.refuse_refresh = true;
    pthread_mutex_unlock(&f->as.lock);
    expect_token(f, f->refused, "tok-2"); /* from a new authorization */
    assert_int_equal(count(f, &f->as.refreshes), 1);
    assert_int_equal(f->user.approvals, 2);
}

static void test_user_or_server_refusing(void **state)
{
    fixture_t *f = *state;
    f->user.deny = true;
    char *tok = NULL;
    assert_int_equal(mcp_oauth_token(f->oauth, f->url, f->challenge, &tok), MCP_EAUTH);
    assert_null(tok);
    mcp_error_t err = {0};
    assert_int_equal(mcp_oauth_last_error(f->oauth, &err), MCP_EAUTH);
    assert_non_null(strstr(err.message, "authorization refused"));
    assert_non_null(strstr(err.message, "access_denied"));
    mcp_error_clear(&err);
    assert_int_equal(count(f, &f->as.tokens_issued), 0);

    /* A fresh client the authorization server will not register. */
    mcp_oauth_free(f->oauth);
    f->user.deny = false;
    f->user.approvals = 0;
    f->oauth = new_oauth(&f->user);
    pthread_mutex_lock(&f->as.lock);
    f->as.refuse_register = true;
    pthread_mutex_unlock(&f->as.lock);
    assert_int_equal(mcp_oauth_token(f->oauth, f->url, f->challenge, &tok), MCP_EAUTH);
    assert_int_equal(mcp_oauth_last_error(f->oauth, &err), MCP_EAUTH);
    assert_non_null(strstr(err.message, "registration"));
    assert_non_null(strstr(err.message, "400"));
    mcp_error_clear(&err);
    assert_int_equal(f->user.approvals, 0); /* never sent to the user */
}

/* One token source, two servers of one authorization server. The second
 * asks for more scope (403 insufficient_scope), and the user refuses: the
 * first server's token, kept during the step-up, must not become the one
 * held for the second. */
static void test_failed_step_up_keeps_tokens_apart(void **state)
{
    fixture_t *f = *state;
    expect_token(f, f->challenge, "tok-1");
    char other[128], step_up[256];
    snprintf(other, sizeof other, "%s" OTHER_PATH, f->as.issuer);
    snprintf(step_up, sizeof step_up,
             "Bearer error=\"insufficient_scope\", scope=\"admin\", "
             "resource_metadata=\"%s/prm-other\"",
             f->as.issuer);
    f->user.deny = true;
    char *tok = NULL;
    assert_int_equal(mcp_oauth_token(f->oauth, other, step_up, &tok), MCP_EAUTH);
    assert_null(tok);
    assert_int_equal(f->user.approvals, 2);

    /* The second server's next request goes without a token. */
    tok = (char *)"unchanged";
    assert_int_equal(mcp_oauth_token(f->oauth, other, NULL, &tok), MCP_OK);
    if (tok)
        fail_msg("the other server is given %s", tok);

    /* A use_dpop_nonce challenge from it does not fetch one either. */
    int rc = mcp_oauth_token(f->oauth, other, "DPoP error=\"use_dpop_nonce\"", &tok);
    if (tok)
        fail_msg("the other server is given %s (rc %d)", tok, rc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refused_token_refreshed_without_the_user, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_expired_token_refreshed_before_use, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_refused_refresh_asks_the_user_again, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_user_or_server_refusing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_step_up_keeps_tokens_apart, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
