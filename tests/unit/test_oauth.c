/*
 * mcp_oauth_t without an authorization server: what it refuses to be made
 * with, what it answers before any challenge, and the errors of a flow
 * that cannot start. (The flows themselves run against the conformance
 * suite's authorization servers: tests/conformance, client-*.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/mcp.h"

static int never_called(void *user, const char *url, char **redirect_out)
{
    (void)user;
    (void)url;
    (void)redirect_out;
    fail_msg("the authorize callback must not run");
    return MCP_EAUTH;
}

static mcp_oauth_t *make(void)
{
    mcp_error_t err = {0};
    mcp_oauth_t *o = mcp_oauth_new(&(mcp_oauth_options_t){.redirect_uri = "http://127.0.0.1:9/cb",
                                                          .authorize = never_called,
                                                          .timeout_ms = 2000},
                                   &err);
    assert_non_null(o);
    return o;
}

static void test_new_refuses_bad_options(void **state)
{
    (void)state;
    static const mcp_oauth_options_t bad[] = {
        {.authorize = never_called},                          /* no redirect_uri */
        {.redirect_uri = "http://127.0.0.1:9/cb"},            /* no authorize */
        {.redirect_uri = "http://127.0.0.1:9/cb", .authorize = never_called,
         .application_type = "desktop"},                      /* not native or web */
        {.redirect_uri = "http://127.0.0.1:9/cb", .authorize = never_called,
         .client_secret = "s"},                               /* a secret without an id */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_t err = {0};
        assert_null(mcp_oauth_new(&bad[i], &err));
        assert_true(err.message[0] != '\0');
    }
    mcp_error_t err = {0};
    assert_null(mcp_oauth_new(NULL, &err));
    mcp_oauth_free(NULL);
}

/* Before any challenge there is no token: the server says what it wants. */
static void test_no_token_before_a_challenge(void **state)
{
    (void)state;
    mcp_oauth_t *o = make();
    char *token = (char *)"unchanged";
    assert_int_equal(mcp_oauth_token(o, "http://127.0.0.1:9/mcp", NULL, &token), MCP_OK);
    assert_null(token);
    assert_int_equal(mcp_oauth_token(NULL, "http://x/mcp", NULL, &token), MCP_EINVAL);
    mcp_oauth_free(o);
}

/* A challenge that is not Bearer, or not a challenge at all, fails the
 * request with MCP_EAUTH and says why. */
static void test_challenge_not_answerable(void **state)
{
    (void)state;
    static const struct {
        const char *challenge, *why;
    } cases[] = {
        {"Basic realm=\"x\"", "not Bearer"},
        {"Bearer scope=\"unterminated", "malformed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_oauth_t *o = make();
        char *token = NULL;
        assert_int_equal(mcp_oauth_token(o, "http://127.0.0.1:9/mcp", cases[i].challenge, &token),
                         MCP_EAUTH);
        assert_null(token);
        mcp_error_t err = {0};
        assert_int_equal(mcp_oauth_last_error(o, &err), MCP_EAUTH);
        if (!strstr(err.message, cases[i].why))
            fail_msg("\"%s\": %s", cases[i].challenge, err.message);
        mcp_error_clear(&err);
        mcp_oauth_free(o);
    }
}

/* A server that publishes no resource metadata cannot be authorized: the
 * metadata URLs (the hinted one, then the well-known ones) are all tried
 * and the error says so; the user is never sent anywhere. Port 9 (discard)
 * on loopback refuses connections. */
static void test_no_metadata_no_flow(void **state)
{
    (void)state;
    mcp_oauth_t *o = make();
    char *token = NULL;
    int rc = mcp_oauth_token(o, "http://127.0.0.1:9/mcp",
                             "Bearer resource_metadata=\"http://127.0.0.1:9/prm\"", &token);
    assert_int_equal(rc, MCP_EAUTH);
    assert_null(token);
    mcp_error_t err = {0};
    mcp_oauth_last_error(o, &err);
    assert_non_null(strstr(err.message, "no protected resource metadata"));
    mcp_error_clear(&err);
    mcp_oauth_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_refuses_bad_options),
        cmocka_unit_test(test_no_token_before_a_challenge),
        cmocka_unit_test(test_challenge_not_answerable),
        cmocka_unit_test(test_no_metadata_no_flow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
