/*
 * The pure pieces of the OAuth client (src/client/oauth/oauth_parse.h):
 * WWW-Authenticate challenges, discovery URLs, the resource identifier and
 * its check, form encoding and query decoding, PKCE, random strings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/oauth/oauth_parse.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* NULL-safe string equality, for optional fields. */
static void expect_text(const char *what, const char *input, const char *got,
                          const char *want)
{
    if (!want && !got)
        return;
    if (!want || !got || strcmp(got, want) != 0)
        fail_msg("%s of \"%s\": got %s%s%s, want %s%s%s", what, input, got ? "\"" : "",
                 got ? got : "NULL", got ? "\"" : "", want ? "\"" : "", want ? want : "NULL",
                 want ? "\"" : "");
}

/* ------------------------------------------------------------------------
 * WWW-Authenticate
 * ------------------------------------------------------------------------ */

typedef struct {
    const char *value;
    int rc;
    const char *resource_metadata, *scope, *error, *error_description;
    bool dpop; /* the challenge kept is DPoP's */
} challenge_case_t;

static const challenge_case_t CHALLENGES[] = {
    /* The MCP 401 and 403 shapes. */
    {"Bearer resource_metadata=\"https://x/.well-known/oauth-protected-resource/mcp\", "
     "scope=\"a b\"",
     MCP_OK, "https://x/.well-known/oauth-protected-resource/mcp", "a b", NULL, NULL},
    {"Bearer error=\"insufficient_scope\", scope=\"mcp:write\", "
     "error_description=\"needs write\"",
     MCP_OK, NULL, "mcp:write", "insufficient_scope", "needs write"},
    /* Scheme and parameter names in any case. */
    {"bEaReR ReSoUrCe_MeTaDaTa=\"u\", SCOPE=s, Error=e, ERROR_description=d", MCP_OK, "u", "s",
     "e", "d"},
    /* Bearer second, after a challenge with parameters of its own. */
    {"Basic realm=\"x\", Bearer error=\"insufficient_scope\", scope=\"mcp:write\"", MCP_OK, NULL,
     "mcp:write", "insufficient_scope", NULL},
    /* Another scheme's parameters are not Bearer's. */
    {"Basic scope=\"wrong\", error=no, Bearer scope=\"right\"", MCP_OK, NULL, "right", NULL,
     NULL},
    {"Bearer, Basic scope=\"wrong\"", MCP_OK, NULL, NULL, NULL, NULL},
    /* After a token68 challenge. */
    {"Negotiate abc==, Bearer scope=x", MCP_OK, NULL, "x", NULL, NULL},
    {"Negotiate a.b-c_d~e+f/g, Bearer scope=x", MCP_OK, NULL, "x", NULL, NULL},
    /* Token values: any tchar. */
    {"Bearer error=invalid_token, scope=files.read!#$%&'*+-^_`|~", MCP_OK, NULL,
     "files.read!#$%&'*+-^_`|~", "invalid_token", NULL},
    /* Bare values beyond tokens, as servers send them: ":" and "/" too. */
    {"Bearer scope=mcp:read, resource_metadata=https://x/.well-known/r?a=b", MCP_OK,
     "https://x/.well-known/r?a=b", "mcp:read", NULL, NULL},
    /* Quoted strings: escapes undone, commas, "=", tabs and non-ASCII kept. */
    {"Bearer error_description=\"say \\\"hi\\\" \\\\ \\o\\k\"", MCP_OK, NULL, NULL, NULL,
     "say \"hi\" \\ ok"},
    {"Bearer scope=\"a,b\", error=\"x, y=z\"", MCP_OK, NULL, "a,b", "x, y=z", NULL},
    {"Bearer scope=\"\"", MCP_OK, NULL, "", NULL, NULL},
    {"Bearer scope=\"a\tb\", error_description=\"caf\xc3\xa9\"", MCP_OK, NULL, "a\tb", NULL,
     "caf\xc3\xa9"},
    /* A parameter twice keeps the first, whatever the case of its name. */
    {"Bearer scope=first, scope=second", MCP_OK, NULL, "first", NULL, NULL},
    {"Bearer Scope=\"first\", SCOPE=second", MCP_OK, NULL, "first", NULL, NULL},
    /* The first Bearer challenge counts, even without parameters. */
    {"Bearer scope=a, Bearer scope=b", MCP_OK, NULL, "a", NULL, NULL},
    {"Bearer, Bearer scope=b", MCP_OK, NULL, NULL, NULL, NULL},
    {"Bearer", MCP_OK, NULL, NULL, NULL, NULL},
    /* Whitespace around "=", empty list elements, unknown parameters. */
    {"Bearer  scope = \"x\" ,\t error=y", MCP_OK, NULL, "x", "y", NULL},
    {", ,Bearer scope=x,, ,error=y,", MCP_OK, NULL, "x", "y", NULL},
    {"Bearer realm=\"r\", foo=bar, scope=x", MCP_OK, NULL, "x", NULL, NULL},
    {"Bearer , scope=x", MCP_OK, NULL, "x", NULL, NULL},

    /* DPoP (RFC 9449 §7.1): the same parameters, and algs; the first of
     * Bearer and DPoP counts. */
    {"DPoP resource_metadata=\"https://x/prm\"", MCP_OK, "https://x/prm", NULL, NULL, NULL,
     true},
    {"DPoP error=\"use_dpop_nonce\", error_description=\"Resource server requires nonce\"",
     MCP_OK, NULL, NULL, "use_dpop_nonce", "Resource server requires nonce", true},
    {"dpop algs=\"ES256 PS256\", error=e", MCP_OK, NULL, NULL, "e", NULL, true},
    {"Bearer scope=a, DPoP error=x", MCP_OK, NULL, "a", NULL, NULL, false},
    {"DPoP algs=\"ES256\", Bearer scope=b", MCP_OK, NULL, NULL, NULL, NULL, true},
    {"DPoP abc==", MCP_EPROTO}, /* DPoP takes no token68 either */
    {"DPoPx scope=a", MCP_ENOTFOUND},

    /* No Bearer challenge. */
    {"", MCP_ENOTFOUND},
    {" , ", MCP_ENOTFOUND},
    {"Basic realm=\"x\"", MCP_ENOTFOUND},
    {"Negotiate abc==", MCP_ENOTFOUND},
    {"Bearerx scope=a", MCP_ENOTFOUND},
    {"Basic Bearer", MCP_ENOTFOUND}, /* "Bearer" is Basic's token68 */

    /* Malformed. */
    {"Bearer scope=\"unterminated", MCP_EPROTO},
    {"Bearer scope=\"ends in an escape\\", MCP_EPROTO},
    {"Bearer scope=", MCP_EPROTO},
    {"Bearer scope=, error=x", MCP_EPROTO},
    {"Bearer scope=x, error=", MCP_EPROTO},
    {"Bearer ,,=,", MCP_EPROTO},
    {"Bearer scope=a b", MCP_EPROTO},
    {"Bearer scope=\"a\" error=b", MCP_EPROTO},
    {"Bearer=x", MCP_EPROTO},
    {"Bearer scope=\"a\x01z\"", MCP_EPROTO},
    {"Bearer scope=\"a\x7fz\"", MCP_EPROTO},
    {"Bearer abc==", MCP_EPROTO}, /* Bearer takes no token68 */
    {"Bearer scope", MCP_EPROTO},
    {"Basic realm=\"x\" Bearer", MCP_EPROTO},
    {"\"Bearer\" scope=x", MCP_EPROTO},
    {"scope=x, Bearer", MCP_EPROTO},
    {"Negotiate abc==def, Bearer", MCP_EPROTO},
    /* Anywhere in the value, after a good Bearer challenge too. */
    {"Bearer scope=x, error=y, Basic realm=\"", MCP_EPROTO},
};

static void test_challenges(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(CHALLENGES); i++) {
        const challenge_case_t *c = &CHALLENGES[i];
        /* Stale pointers must not survive a call that fills nothing. */
        static char stale[] = "stale";
        oauth_challenge_t out = {stale, stale, stale, stale};
        int rc = oauth_challenge_parse(c->value, &out);
        if (rc != c->rc)
            fail_msg("\"%s\": rc %d, want %d", c->value, rc, c->rc);
        expect_text("resource_metadata", c->value, out.resource_metadata,
                      c->resource_metadata);
        expect_text("scope", c->value, out.scope, c->scope);
        expect_text("error", c->value, out.error, c->error);
        expect_text("error_description", c->value, out.error_description,
                      c->error_description);
        if (out.dpop != c->dpop)
            fail_msg("\"%s\": dpop %d, want %d", c->value, out.dpop, c->dpop);
        oauth_challenge_free(&out);
    }
}

static void test_challenge_null_value_and_free(void **state)
{
    (void)state;
    oauth_challenge_t out;
    assert_int_equal(oauth_challenge_parse(NULL, &out), MCP_ENOTFOUND);
    assert_null(out.scope);
    oauth_challenge_free(NULL);

    assert_int_equal(oauth_challenge_parse("Bearer scope=x", &out), MCP_OK);
    oauth_challenge_free(&out);
    assert_null(out.scope); /* freed twice is harmless */
    oauth_challenge_free(&out);
}

/* ------------------------------------------------------------------------
 * Discovery URLs
 * ------------------------------------------------------------------------ */

/* URLs that are not absolute http(s) URLs this module accepts. */
static const char *const BAD_URLS[] = {
    "",
    "ftp://x/mcp",
    "ws://x/mcp",
    "mailto:a@b",
    "x/mcp",
    "/mcp",
    "https:x/y",
    "https//x",
    " https://x/",
    "https://",
    "https:///mcp",
    "https://?q",
    "https://user@x/mcp",
    "https://user:pw@x/",
    "https://@x/",
    "https://x:/mcp",
    "https://x:abc/",
    "https://x:-1/",
    "https://x:65536/",
    "https://x:123456/",
    "https://x:443:443/",
    "https://[::1/",
    "https://[]/",
    "https://[1.2.3.4]/", /* no colon: not an IPv6 address */
    "https://[::1%25eth0]/",
    "https://[::g]/",
    "https://[::1]x/",
    "https://[::1]:/",
    "https://x y/",
    "https://x%41/",
    "https://h\xc3\xa9/",
    "https://x!/",
    "https://x/a b",
    "https://x/a\\b",
    "https://x/a|b",
    "https://x/a%zz",
    "https://x/a%4",
    "https://x/a%",
    "https://x/a?b c",
    "https://x/a?%g0",
    "https://x/a#b#c",
    "https://x/a#%",
    "https://x/./a",
    "https://x/a/.",
    "https://x/a/../b",
    "https://x/..",
    "https://x/%2e%2E/b",
    "https://x/.%2e",
    "https://x/a/%2E",
};

static void test_bad_urls_are_refused_everywhere(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(BAD_URLS); i++) {
        const char *url = BAD_URLS[i];
        char *out[3] = {NULL, NULL, NULL}, *one = NULL;
        size_t n = 9;
        if (oauth_prm_urls(url, out, &n) != MCP_EINVAL || n != 0 || out[0])
            fail_msg("oauth_prm_urls accepted \"%s\"", url);
        if (oauth_as_metadata_urls(url, out, &n) != MCP_EINVAL || n != 0 || out[0])
            fail_msg("oauth_as_metadata_urls accepted \"%s\"", url);
        if (oauth_canonical_resource(url, &one) != MCP_EINVAL || one)
            fail_msg("oauth_canonical_resource accepted \"%s\"", url);
        if (oauth_origin(url, &one) != MCP_EINVAL || one)
            fail_msg("oauth_origin accepted \"%s\"", url);
        if (oauth_resource_allows(url, url) || oauth_resource_allows(url, "https://x/") ||
            oauth_resource_allows("https://x/", url))
            fail_msg("oauth_resource_allows accepted \"%s\"", url);
    }
}

typedef struct {
    const char *in;
    int rc;
    const char *want[3]; /* NULL after the last */
} urls_case_t;

#define PRM "/.well-known/oauth-protected-resource"

static const urls_case_t PRM_CASES[] = {
    {"https://x/mcp", MCP_OK, {"https://x" PRM "/mcp", "https://x" PRM}},
    {"https://x/a/b", MCP_OK, {"https://x" PRM "/a/b", "https://x" PRM}},
    {"https://x", MCP_OK, {"https://x" PRM}},
    {"https://x/", MCP_OK, {"https://x" PRM}},
    {"https://x?q=1", MCP_OK, {"https://x" PRM}},
    {"https://x/mcp/", MCP_OK, {"https://x" PRM "/mcp", "https://x" PRM}},
    {"https://x/a/b?q=1#f", MCP_OK, {"https://x" PRM "/a/b", "https://x" PRM}},
    {"https://x/mcp#f", MCP_OK, {"https://x" PRM "/mcp", "https://x" PRM}},
    /* Scheme and host lowercased, path kept; default ports dropped. */
    {"HTTPS://Example.COM:443/MCP", MCP_OK,
     {"https://example.com" PRM "/MCP", "https://example.com" PRM}},
    {"http://x:80/mcp", MCP_OK, {"http://x" PRM "/mcp", "http://x" PRM}},
    {"http://x:8080/mcp", MCP_OK, {"http://x:8080" PRM "/mcp", "http://x:8080" PRM}},
    {"https://x:80/mcp", MCP_OK, {"https://x:80" PRM "/mcp", "https://x:80" PRM}},
    {"http://x:443/", MCP_OK, {"http://x:443" PRM}},
    {"https://x:00443/", MCP_OK, {"https://x" PRM}},
    {"http://127.0.0.1:3000/mcp", MCP_OK,
     {"http://127.0.0.1:3000" PRM "/mcp", "http://127.0.0.1:3000" PRM}},
    /* IPv6 literals, brackets kept. */
    {"http://[::1]:3000/mcp", MCP_OK, {"http://[::1]:3000" PRM "/mcp", "http://[::1]:3000" PRM}},
    {"https://[FE80::1]/", MCP_OK, {"https://[fe80::1]" PRM}},
    {"https://[::ffff:1.2.3.4]/", MCP_OK, {"https://[::ffff:1.2.3.4]" PRM}},
    /* Everything RFC 3986 allows in a path; dots inside segments. */
    {"https://x/a:b@c!$&'()*+,;=-._~%2F", MCP_OK,
     {"https://x" PRM "/a:b@c!$&'()*+,;=-._~%2F", "https://x" PRM}},
    {"https://x/.well-known/.../a..b/%2e%2e%2e", MCP_OK,
     {"https://x" PRM "/.well-known/.../a..b/%2e%2e%2e", "https://x" PRM}},
    {"https://xn--caf-dma.example/", MCP_OK, {"https://xn--caf-dma.example" PRM}},
};

#define ASM "/.well-known/oauth-authorization-server"
#define OIDC "/.well-known/openid-configuration"

static const urls_case_t AS_CASES[] = {
    {"https://as/tenant1", MCP_OK,
     {"https://as" ASM "/tenant1", "https://as" OIDC "/tenant1", "https://as/tenant1" OIDC}},
    {"https://as/tenant1/", MCP_OK,
     {"https://as" ASM "/tenant1", "https://as" OIDC "/tenant1", "https://as/tenant1" OIDC}},
    {"https://as/a/b", MCP_OK,
     {"https://as" ASM "/a/b", "https://as" OIDC "/a/b", "https://as/a/b" OIDC}},
    {"https://as", MCP_OK, {"https://as" ASM, "https://as" OIDC}},
    {"https://as/", MCP_OK, {"https://as" ASM, "https://as" OIDC}},
    {"HTTPS://AS:443/T", MCP_OK,
     {"https://as" ASM "/T", "https://as" OIDC "/T", "https://as/T" OIDC}},
    {"http://as:8080", MCP_OK, {"http://as:8080" ASM, "http://as:8080" OIDC}},
    /* An issuer has no query and no fragment (RFC 8414 §2). */
    {"https://as/t?x=1", MCP_EINVAL},
    {"https://as/t?", MCP_EINVAL},
    {"https://as/t#f", MCP_EINVAL},
    {"https://as#", MCP_EINVAL},
};

static void expect_urls(const char *fn, const urls_case_t *c, int rc, char **out, size_t n)
{
    if (rc != c->rc)
        fail_msg("%s(\"%s\"): rc %d, want %d", fn, c->in, rc, c->rc);
    size_t want_n = 0;
    while (want_n < 3 && c->want[want_n])
        want_n++;
    if (n != want_n)
        fail_msg("%s(\"%s\"): %zu URLs, want %zu", fn, c->in, n, want_n);
    for (size_t i = 0; i < 3; i++)
        expect_text(fn, c->in, out[i], i < want_n ? c->want[i] : NULL);
}

static void test_prm_urls(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(PRM_CASES); i++) {
        char *out[3] = {NULL, NULL, NULL};
        size_t n = 9;
        int rc = oauth_prm_urls(PRM_CASES[i].in, out, &n);
        expect_urls("oauth_prm_urls", &PRM_CASES[i], rc, out, n);
        free(out[0]);
        free(out[1]);
    }
}

static void test_as_metadata_urls(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(AS_CASES); i++) {
        char *out[3];
        size_t n = 9;
        int rc = oauth_as_metadata_urls(AS_CASES[i].in, out, &n);
        expect_urls("oauth_as_metadata_urls", &AS_CASES[i], rc, out, n);
        for (size_t j = 0; j < 3; j++)
            free(out[j]);
    }
}

static const struct {
    const char *in, *want;
} CANONICAL[] = {
    {"https://Example.com/MCP", "https://example.com/MCP"},
    {"HTTPS://X:443/", "https://x"},
    {"https://x", "https://x"},
    {"https://x/mcp/", "https://x/mcp/"},
    {"https://x//", "https://x//"},
    {"http://x:8080/mcp?q=1#f", "http://x:8080/mcp"},
    {"http://x/mcp#f", "http://x/mcp"},
    {"http://x:80/", "http://x"},
    {"http://x:443/", "http://x:443"},
    {"https://[::1]:8443/mcp", "https://[::1]:8443/mcp"},
    {"https://[AB::CD]/", "https://[ab::cd]"},
};

static void test_canonical_resource(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(CANONICAL); i++) {
        char *out = NULL;
        assert_int_equal(oauth_canonical_resource(CANONICAL[i].in, &out), MCP_OK);
        expect_text("canonical resource", CANONICAL[i].in, out, CANONICAL[i].want);
        free(out);
    }
}

static const struct {
    const char *in, *want;
} ORIGINS[] = {
    {"https://Example.com/MCP?q#f", "https://example.com"},
    {"HTTPS://X:443/", "https://x"},
    {"http://x:8080", "http://x:8080"},
    {"http://x:443/mcp", "http://x:443"},
    {"https://[AB::CD]:8443/a", "https://[ab::cd]:8443"},
};

static void test_origin(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(ORIGINS); i++) {
        char *out = NULL;
        assert_int_equal(oauth_origin(ORIGINS[i].in, &out), MCP_OK);
        expect_text("origin", ORIGINS[i].in, out, ORIGINS[i].want);
        free(out);
    }
    char *out = (char *)"unchanged";
    assert_int_equal(oauth_origin(NULL, &out), MCP_EINVAL);
    assert_null(out);
}

static const struct {
    const char *resource, *server;
    bool allows;
} ALLOWS[] = {
    {"https://a/mcp", "https://a/mcp", true},
    {"https://a/mcp", "https://a/mcp/", true},
    {"https://a/mcp", "https://a/mcp/x", true},
    {"https://a/mcp", "https://a/mcp/x/y", true},
    {"https://a/mcp", "https://a/mcpx", false},
    {"https://a/mcp", "https://a/mc", false},
    {"https://a/mcp", "https://a/", false},
    {"https://a/mcp", "https://a", false},
    {"https://a/mcp/x", "https://a/mcp", false},
    {"https://a/MCP", "https://a/mcp", false}, /* paths are case-sensitive */
    /* A trailing "/" of the resource path is not part of it. */
    {"https://a/mcp/", "https://a/mcp", true},
    {"https://a/mcp/", "https://a/mcp/x", true},
    {"https://a/mcp/", "https://a/mcpx", false},
    /* The root covers its whole origin. */
    {"https://a/", "https://a/anything/at/all", true},
    {"https://a/", "https://a", true},
    {"https://a", "https://a/x", true},
    {"https://a", "https://a", true},
    {"https://a//", "https://a", true}, /* an empty path is "/" */
    {"https://a//", "https://a/", true},
    /* ... and so is "//", like "/": it covers "/", which covers "/x", and
     * coverage is transitive (fuzz_oauth_url found it was not). */
    {"https://a//", "https://a/x", true},
    {"https://a/mcp//", "https://a/mcp/x", true},
    {"https://a/mcp//", "https://a/mcpx", false},
    /* Same origin only. */
    {"https://a/mcp", "https://b/mcp", false},
    {"https://a/mcp", "https://ab/mcp", false},
    {"https://a/", "https://a.evil/", false},
    {"https://a/mcp", "https://a:8443/mcp", false},
    {"https://a:8443/mcp", "https://a:8444/mcp", false},
    {"https://a/mcp", "http://a/mcp", false},
    {"http://a:443/mcp", "https://a/mcp", false},
    {"https://a:443/mcp", "https://a/mcp", true},
    {"https://a/mcp", "https://a:443/mcp", true},
    {"http://a:80/", "http://a/mcp", true},
    {"HTTPS://A/mcp", "https://a/mcp", true},
    {"https://[::1]:8443/mcp", "https://[::1]:8443/mcp/x", true},
    {"https://[::1]/mcp", "https://[::2]/mcp", false},
    /* Queries and fragments are not compared. */
    {"https://a/mcp?x=1", "https://a/mcp?y=2#z", true},
    /* Nothing that does not parse. */
    {"not a url", "https://a/mcp", false},
    {"https://a/mcp", "ftp://a/mcp", false},
};

static void test_resource_allows(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(ALLOWS); i++)
        if (oauth_resource_allows(ALLOWS[i].resource, ALLOWS[i].server) != ALLOWS[i].allows)
            fail_msg("resource \"%s\" for server \"%s\": want %s", ALLOWS[i].resource,
                     ALLOWS[i].server, ALLOWS[i].allows ? "allowed" : "refused");
}

/* ------------------------------------------------------------------------
 * Form encoding and queries
 * ------------------------------------------------------------------------ */

static const struct {
    const char *name, *value, *want;
} FORM[] = {
    {"a", "b", "a=b"},
    {"k", "", "k="},
    {"q", "a b", "q=a+b"},
    {"k", "*-._AZaz09", "k=*-._AZaz09"},
    {"k", "~", "k=%7E"},
    {"k", "+&=/?#%:", "k=%2B%26%3D%2F%3F%23%25%3A"},
    {"k", "\xc3\xa9", "k=%C3%A9"},
    {"k", "\x01\x7f\xff", "k=%01%7F%FF"},
    {"redirect_uri", "http://127.0.0.1:8080/cb", "redirect_uri=http%3A%2F%2F127.0.0.1%3A8080%2Fcb"},
    {"a b&c", "d", "a+b%26c=d"},
};

/* Where credentials may go: https, or http to a loopback host, as a
 * strict parse finds the host -- userinfo would make a lenient reading
 * see loopback where libcurl connects elsewhere. `insecure` lifts the
 * https rule only. */
static void test_url_is_safe(void **state)
{
    (void)state;
    static const struct {
        const char *url;
        bool safe, insecure_safe;
    } cases[] = {
        {"https://as.example/token", true, true},
        {"HTTPS://as.example:8443/t?x=1", true, true},
        {"http://localhost/token", true, true},
        {"http://LOCALHOST:8080/token", true, true},
        {"http://127.0.0.1:9/token", true, true},
        {"http://[::1]:9/token", true, true},
        {"http://as.example/token", false, true},
        {"http://127.0.0.2/token", false, true},
        {"http://localhost.evil.example/token", false, true},
        {"http://127.0.0.1.evil.example/token", false, true},
        /* Credentials before "@": the host is what follows it. */
        {"http://127.0.0.1:80@evil.example/token", false, false},
        {"http://localhost:x@evil.example/token", false, false},
        {"http://localhost@evil.example/token", false, false},
        {"https://user:pw@as.example/token", false, false},
        {"http://[::1]@evil.example/", false, false},
        /* Not URLs this client sends anything to. */
        {"ftp://localhost/token", false, false},
        {"//localhost/token", false, false},
        {"http://localhost/a/../token", false, false},
        {"http://localhost:99999/token", false, false},
        {"http:///token", false, false},
        {"", false, false},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        if (oauth_url_is_safe(cases[i].url, false) != cases[i].safe)
            fail_msg("\"%s\": safe should be %d", cases[i].url, cases[i].safe);
        if (oauth_url_is_safe(cases[i].url, true) != cases[i].insecure_safe)
            fail_msg("\"%s\": safe when insecure should be %d", cases[i].url,
                     cases[i].insecure_safe);
    }
    assert_false(oauth_url_is_safe(NULL, true));
}

static void test_form_encoding(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(FORM); i++) {
        char *form = NULL;
        assert_int_equal(oauth_form_add(&form, FORM[i].name, FORM[i].value), MCP_OK);
        expect_text("form", FORM[i].value, form, FORM[i].want);
        free(form);
    }
}

static void test_form_joins_parameters(void **state)
{
    (void)state;
    char *form = NULL;
    assert_int_equal(oauth_form_add(&form, "a", NULL), MCP_OK);
    assert_null(form); /* a NULL value appends nothing */
    assert_int_equal(oauth_form_add(&form, "a", "1"), MCP_OK);
    assert_int_equal(oauth_form_add(&form, "b", NULL), MCP_OK);
    assert_int_equal(oauth_form_add(&form, "c", "2 3"), MCP_OK);
    assert_string_equal(form, "a=1&c=2+3");
    free(form);

    form = calloc(1, 1); /* an empty form takes no "&" either */
    assert_int_equal(oauth_form_add(&form, "a", "1"), MCP_OK);
    assert_string_equal(form, "a=1");
    free(form);
}

static const struct {
    const char *url, *form, *want;
} WITH_QUERY[] = {
    {"https://as/authorize", "a=1", "https://as/authorize?a=1"},
    {"https://as/authorize?x=y", "a=1&b=2", "https://as/authorize?x=y&a=1&b=2"},
    {"https://as/authorize#frag", "a=1", "https://as/authorize?a=1"},
    {"https://as/authorize?x=y#frag", "a=1", "https://as/authorize?x=y&a=1"},
    {"https://as/authorize?", "a=1", "https://as/authorize?a=1"},
    {"https://as/authorize?x=y&", "a=1", "https://as/authorize?x=y&a=1"},
    {"https://as/authorize??", "a=1", "https://as/authorize??&a=1"}, /* the query is "?" */
    {"https://as/a#f?x", "a=1", "https://as/a?a=1"},
    {"https://as/a", "", "https://as/a"},
    {"https://as/a?x#f", NULL, "https://as/a?x"},
};

static void test_url_with_query(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(WITH_QUERY); i++) {
        char *out = NULL;
        assert_int_equal(oauth_url_with_query(WITH_QUERY[i].url, WITH_QUERY[i].form, &out),
                         MCP_OK);
        expect_text("URL with query", WITH_QUERY[i].url, out, WITH_QUERY[i].want);
        free(out);
    }
}

static const struct {
    const char *url, *name;
    int rc;
    const char *value;
} QUERY_GET[] = {
    {"http://h/cb?code=abc&state=xyz", "code", MCP_OK, "abc"},
    {"http://h/cb?code=abc&state=xyz", "state", MCP_OK, "xyz"},
    /* Names match whole, not as prefixes. */
    {"http://h/cb?codex=1&code=2", "code", MCP_OK, "2"},
    {"http://h/cb?code=1&codex=2", "codex", MCP_OK, "2"},
    {"http://h/cb?cod=1&xcode=2", "code", MCP_ENOTFOUND},
    /* The first occurrence counts. */
    {"http://h/?a=1&a=2", "a", MCP_OK, "1"},
    /* Decoding: "+", %XX (either case), names decoded too. */
    {"http://h/?q=a+b", "q", MCP_OK, "a b"},
    {"http://h/?q=%2B%26", "q", MCP_OK, "+&"},
    {"http://h/?q=%41%62%c3%A9", "q", MCP_OK, "Ab\xc3\xa9"},
    {"http://h/?co%64e=1", "code", MCP_OK, "1"},
    {"http://h/?a+b=1", "a b", MCP_OK, "1"},
    {"http://h/?a%2Bb=1", "a b", MCP_ENOTFOUND},
    /* Missing "=", empty values, "=" in the value, empty names and pairs. */
    {"http://h/?flag&x=1", "flag", MCP_OK, ""},
    {"http://h/?a=", "a", MCP_OK, ""},
    {"http://h/?a=b=c", "a", MCP_OK, "b=c"},
    {"http://h/?=v", "", MCP_OK, "v"},
    {"http://h/?&&a=1&", "a", MCP_OK, "1"},
    /* The query ends at "#"; a "?" in the fragment starts none. */
    {"http://h/?a=1#b=2", "b", MCP_ENOTFOUND},
    {"http://h/?a=1#x", "a", MCP_OK, "1"},
    {"http://h/#?a=1", "a", MCP_ENOTFOUND},
    {"http://h/cb", "a", MCP_ENOTFOUND},
    {"http://h/?", "", MCP_ENOTFOUND},
    /* A request target will do. */
    {"/callback?code=x&state=y", "state", MCP_OK, "y"},
    /* Malformed anywhere in the query, or a NUL in the value. */
    {"http://h/?a=%zz", "a", MCP_EPROTO},
    {"http://h/?a=%4", "a", MCP_EPROTO},
    {"http://h/?a=1&b=%", "a", MCP_EPROTO},
    {"http://h/?a=1&b=%g1#x", "a", MCP_EPROTO},
    {"http://h/?a=%00", "a", MCP_EPROTO},
    {"http://h/?a=x%00y", "a", MCP_EPROTO},
};

static void test_query_get(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(QUERY_GET); i++) {
        char *value = (char *)"stale";
        int rc = oauth_query_get(QUERY_GET[i].url, QUERY_GET[i].name, &value);
        if (rc != QUERY_GET[i].rc)
            fail_msg("\"%s\" [%s]: rc %d, want %d", QUERY_GET[i].url, QUERY_GET[i].name, rc,
                     QUERY_GET[i].rc);
        expect_text("query value", QUERY_GET[i].url, value, QUERY_GET[i].value);
        free(value);
    }
}

/* What oauth_form_add writes, oauth_query_get reads back. */
static void test_form_round_trip(void **state)
{
    (void)state;
    static const char *const values[] = {"", "plain", "a b+c&d=e#f%g?h", "\xc3\xa9\x01\xff~"};
    for (size_t i = 0; i < COUNT(values); i++) {
        char *form = NULL, *url = NULL, *back = NULL;
        assert_int_equal(oauth_form_add(&form, "other", "x"), MCP_OK);
        assert_int_equal(oauth_form_add(&form, "na me&", values[i]), MCP_OK);
        assert_int_equal(oauth_url_with_query("http://h/cb?z=1#f", form, &url), MCP_OK);
        assert_int_equal(oauth_query_get(url, "na me&", &back), MCP_OK);
        assert_string_equal(back, values[i]);
        free(form);
        free(url);
        free(back);
    }
}

/* ------------------------------------------------------------------------
 * PKCE and random strings
 * ------------------------------------------------------------------------ */

/* ---- token endpoint errors ---- */

static const struct {
    const char *body;
    int rc;
    const char *want;
} TOKEN_ERRORS[] = {
    {"{\"error\":\"invalid_grant\"}", MCP_OK, "invalid_grant"},
    {"{\"error\":\"invalid_scope\",\"error_description\":\"not for you\"}", MCP_OK,
     "invalid_scope (not for you)"},
    {"{\"error\":\"x\",\"error_description\":\"\"}", MCP_OK, "x"},
    {"{\"error\":\"x\",\"error_description\":7}", MCP_OK, "x"},
    /* Characters RFC 6749 §5.2 does not allow are shown as '?'. */
    {"{\"error\":\"a\\nb\",\"error_description\":\"q\\\"\\\\\\u00e9\"}", MCP_OK,
     "a?b (q????" ")"}, /* split: no "??)" trigraph */
    {"{\"error\":\"\"}", MCP_ENOTFOUND, NULL},
    {"{\"error\":3}", MCP_ENOTFOUND, NULL},
    {"{\"error_description\":\"no code\"}", MCP_ENOTFOUND, NULL},
    {"[\"error\"]", MCP_ENOTFOUND, NULL},
    {"error=invalid_grant", MCP_ENOTFOUND, NULL},
    {"", MCP_ENOTFOUND, NULL},
};

static void test_token_error(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(TOKEN_ERRORS); i++) {
        char *out = NULL;
        const char *body = TOKEN_ERRORS[i].body;
        int rc = oauth_token_error(body, strlen(body), &out);
        if (rc != TOKEN_ERRORS[i].rc)
            fail_msg("%s: %d, want %d", body, rc, TOKEN_ERRORS[i].rc);
        if (TOKEN_ERRORS[i].want)
            expect_text("token error", body, out, TOKEN_ERRORS[i].want);
        else
            assert_null(out);
        free(out);
    }
    char *out = NULL;
    assert_int_equal(oauth_token_error(NULL, 0, &out), MCP_ENOTFOUND);
    assert_null(out);

    /* A long description is cut; the length of the body bounds what is
     * read (no NUL needed after it). */
    char body[1200];
    int n = snprintf(body, sizeof body, "{\"error\":\"e\",\"error_description\":\"%0900d\"}", 0);
    assert_int_equal(oauth_token_error(body, (size_t)n, &out), MCP_OK);
    assert_int_equal(strlen(out), strlen("e ()") + 300);
    free(out);
    assert_int_equal(oauth_token_error(body, 15, &out), MCP_ENOTFOUND);
}

static void test_pkce_s256(void **state)
{
    (void)state;
    char out[44];
    /* RFC 7636 Appendix B. */
    assert_int_equal(oauth_pkce_s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", out), MCP_OK);
    assert_string_equal(out, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    /* SHA-256 of nothing, in base64url without padding. */
    assert_int_equal(oauth_pkce_s256("", out), MCP_OK);
    assert_string_equal(out, "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
}

static const char UNRESERVED[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";

static void test_random_string(void **state)
{
    (void)state;
    char a[129], b[129];
    memset(a, '!', sizeof a);
    assert_int_equal(oauth_random_string(a, 43), MCP_OK);
    assert_int_equal(strlen(a), 43);
    assert_int_equal(strspn(a, UNRESERVED), 43);
    assert_int_equal(oauth_random_string(a, 128), MCP_OK);
    assert_int_equal(oauth_random_string(b, 128), MCP_OK);
    assert_int_equal(strlen(b), 128);
    assert_string_not_equal(a, b);
    assert_int_equal(oauth_random_string(a, 0), MCP_OK);
    assert_string_equal(a, "");
}

/* Every character of the alphabet, each about equally often: reducing a
 * byte modulo 66 without rejection would give 58 of them 4/256 and the
 * other 8 3/256, 21 % above and below; the bounds below are 10 %, over six
 * standard deviations of a fair draw. */
static void test_random_string_is_uniform(void **state)
{
    (void)state;
    enum { ALPHABET = sizeof UNRESERVED - 1, PER_CHAR = 4000, LEN = ALPHABET * PER_CHAR };
    char *text = malloc(LEN + 1);
    assert_non_null(text);
    assert_int_equal(oauth_random_string(text, LEN), MCP_OK);
    size_t counts[256] = {0};
    for (size_t i = 0; i < LEN; i++)
        counts[(unsigned char)text[i]]++;
    for (size_t i = 0; i < ALPHABET; i++) {
        size_t n = counts[(unsigned char)UNRESERVED[i]];
        if (n < PER_CHAR * 9 / 10 || n > PER_CHAR * 11 / 10)
            fail_msg("'%c' drawn %zu times of %d", UNRESERVED[i], n, LEN);
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_challenges),
        cmocka_unit_test(test_challenge_null_value_and_free),
        cmocka_unit_test(test_bad_urls_are_refused_everywhere),
        cmocka_unit_test(test_prm_urls),
        cmocka_unit_test(test_as_metadata_urls),
        cmocka_unit_test(test_canonical_resource),
        cmocka_unit_test(test_origin),
        cmocka_unit_test(test_resource_allows),
        cmocka_unit_test(test_url_is_safe),
        cmocka_unit_test(test_form_encoding),
        cmocka_unit_test(test_form_joins_parameters),
        cmocka_unit_test(test_url_with_query),
        cmocka_unit_test(test_query_get),
        cmocka_unit_test(test_form_round_trip),
        cmocka_unit_test(test_token_error),
        cmocka_unit_test(test_pkce_s256),
        cmocka_unit_test(test_random_string),
        cmocka_unit_test(test_random_string_is_uniform),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
