/*
 * mcpServers documents (src/host/config.c, expand.c, connect.c): valid
 * files field by field, unknown keys ignored with a warning naming the
 * server and the key, every malformed field rejected with a message naming
 * the server and the field, bad JSON with its line and column, ${VAR}
 * expansion, loading from files (all servers, or one of them), the default
 * path, and the client and token source options a config implies.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "mcp/host.h"
#include "mcp/request.h"

#include "host/host_internal.h"
#include "test_keys.h"

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------ */

/* Warnings collected by the parser, one per line. */
typedef struct warnings {
    int count;
    char text[4096];
} warnings_t;

static void collect(void *user, mcp_log_level_t level, const char *msg)
{
    warnings_t *w = user;
    assert_int_equal(level, MCP_LOG_WARNING);
    w->count++;
    size_t used = strlen(w->text);
    snprintf(w->text + used, sizeof w->text - used, "%s\n", msg);
}

static int parse(const char *text, mcp_server_configs_t *out, warnings_t *w, mcp_error_t *err)
{
    return mcp_server_configs_parse(text, strlen(text), out, collect, w, err);
}

/* A NULL-terminated vector as one string, entries joined by '|'. */
static const char *joined(char *const *v)
{
    static char buf[1024];
    buf[0] = '\0';
    for (size_t i = 0; v && v[i]; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, "%s%s", i ? "|" : "", v[i]);
    }
    return v ? buf : "(null)";
}

static const char *temp_file(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/libmcp-host-config-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static int setup_env(void **state)
{
    setenv("HOST_TEST_TOKEN", "s3cret", 1);
    setenv("HOST_TEST_BIN", "/usr/bin/server", 1);
    setenv("HOST_TEST_EMPTY", "", 1);
    unsetenv("HOST_TEST_UNSET");
    return 0;
}

/* ------------------------------------------------------------------------
 * Valid documents
 * ------------------------------------------------------------------------ */

static void test_valid_servers(void **state)
{
    static const struct {
        const char *entry;      /* the value of mcpServers.s */
        const char *argv, *env, *cwd, *url, *headers, *token;
        mcp_client_era_t era;
        int64_t timeout_ms;
    } cases[] = {
        {"{\"command\": \"notes\"}", "notes", "(null)", NULL, NULL, "(null)", NULL},
        {"{\"command\": \"n\", \"args\": [\"-v\", \"--x=1\"], \"env\": {\"K\": \"V\", \"A\": \"b=c\"},"
         " \"cwd\": \"/tmp\"}",
         "n|-v|--x=1", "K=V|A=b=c", "/tmp", NULL, "(null)", NULL},
        {"{\"command\": \"n\", \"args\": []}", "n", "(null)", NULL, NULL, "(null)", NULL},
        {"{\"url\": \"https://example.com/mcp\", \"headers\": {\"X-Key\": \"k\", \"Accept-Language\": "
         "\"fr\"}}",
         "(null)", "(null)", NULL, "https://example.com/mcp", "X-Key: k|Accept-Language: fr", NULL},
        {"{\"url\": \"http://127.0.0.1:1/mcp\", \"token\": \"t\"}", "(null)", "(null)", NULL,
         "http://127.0.0.1:1/mcp", "(null)", "t"},
        {"{\"url\": \"http://h/mcp\", \"tokenEnv\": \"HOST_TEST_TOKEN\"}", "(null)", "(null)", NULL,
         "http://h/mcp", "(null)", "s3cret"},
        /* type, era and timeoutMs */
        {"{\"type\": \"stdio\", \"command\": \"n\", \"era\": \"modern\", \"timeoutMs\": 2500}", "n",
         "(null)", NULL, NULL, "(null)", NULL, MCP_CLIENT_ERA_MODERN, 2500},
        {"{\"type\": \"http\", \"url\": \"http://h/\", \"era\": \"legacy\"}", "(null)", "(null)", NULL,
         "http://h/", "(null)", NULL, MCP_CLIENT_ERA_LEGACY},
        {"{\"type\": \"streamable-http\", \"url\": \"http://h/\", \"era\": \"auto\"}", "(null)",
         "(null)", NULL, "http://h/", "(null)", NULL, MCP_CLIENT_ERA_AUTO},
        /* HTTP+SSE is legacy */
        {"{\"type\": \"sse\", \"url\": \"http://h/sse\"}", "(null)", "(null)", NULL, "http://h/sse",
         "(null)", NULL, MCP_CLIENT_ERA_LEGACY},
        {"{\"type\": \"sse\", \"url\": \"http://h/sse\", \"era\": \"legacy\"}", "(null)", "(null)", NULL,
         "http://h/sse", "(null)", NULL, MCP_CLIENT_ERA_LEGACY},
        /* ${VAR} everywhere a value is a string */
        {"{\"command\": \"${HOST_TEST_BIN}\", \"args\": [\"--token=${HOST_TEST_TOKEN}\", \"$HOME\"],"
         " \"env\": {\"T\": \"${HOST_TEST_UNSET:-fallback}\"}, \"cwd\": \"${HOST_TEST_EMPTY:-/srv}\"}",
         "/usr/bin/server|--token=s3cret|$HOME", "T=fallback", "/srv", NULL, "(null)", NULL},
        {"{\"url\": \"https://h/${HOST_TEST_EMPTY}mcp\", \"headers\": {\"Authorization\": "
         "\"Bearer ${HOST_TEST_TOKEN}\"}, \"token\": \"${HOST_TEST_UNSET:-}\"}",
         "(null)", "(null)", NULL, "https://h/mcp", "Authorization: Bearer s3cret", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "{\"mcpServers\": {\"s\": %s}}", cases[i].entry);
        mcp_server_configs_t configs;
        warnings_t w = {0};
        mcp_error_t err = {0};
        int rc = parse(text, &configs, &w, &err);
        if (rc != MCP_OK)
            fail_msg("case %zu: %s", i, err.message);
        assert_int_equal(w.count, 0);
        assert_int_equal(configs.count, 1);
        const mcp_server_config_t *c = &configs.items[0];
        assert_string_equal(c->name, "s");
        assert_string_equal(joined(c->argv), cases[i].argv);
        assert_string_equal(joined(c->env), cases[i].env);
        assert_string_equal(joined(c->headers), cases[i].headers);
        if (cases[i].cwd)
            assert_string_equal(c->cwd, cases[i].cwd);
        else
            assert_null(c->cwd);
        if (cases[i].url)
            assert_string_equal(c->url, cases[i].url);
        else
            assert_null(c->url);
        if (cases[i].token)
            assert_string_equal(c->token, cases[i].token);
        else
            assert_null(c->token);
        assert_int_equal(c->era, cases[i].era);
        assert_int_equal(c->timeout_ms, cases[i].timeout_ms);
        mcp_server_configs_clear(&configs);
        assert_null(configs.items);
        assert_int_equal(configs.count, 0);
    }
}

static void test_document_order_and_other_keys(void **state)
{
    /* Keys beside mcpServers belong to the application: no warning. */
    const char *text = "{\"globalShortcut\": \"Ctrl+Space\", \"mcpServers\": {"
                       "\"zeta\": {\"command\": \"z\"}, \"alpha\": {\"url\": \"http://a/\"},"
                       "\"mid\": {\"command\": \"m\"}}, \"theme\": {}}";
    mcp_server_configs_t configs;
    warnings_t w = {0};
    assert_int_equal(parse(text, &configs, &w, NULL), MCP_OK);
    assert_int_equal(w.count, 0);
    assert_int_equal(configs.count, 3);
    assert_string_equal(configs.items[0].name, "zeta");
    assert_string_equal(configs.items[1].name, "alpha");
    assert_string_equal(configs.items[2].name, "mid");
    mcp_server_configs_clear(&configs);

    assert_int_equal(parse("{\"mcpServers\": {}}", &configs, &w, NULL), MCP_OK);
    assert_int_equal(configs.count, 0);
    mcp_server_configs_clear(&configs);
    mcp_server_configs_clear(NULL);
}

/* ------------------------------------------------------------------------
 * Warnings
 * ------------------------------------------------------------------------ */

/* "oauth": true, or an object naming the client; copied with the config. */
static void test_oauth(void **state)
{
    (void)state;
    const char *text =
        "{\"mcpServers\": {"
        "\"plain\": {\"url\": \"https://a/mcp\", \"oauth\": true},"
        "\"off\": {\"url\": \"https://b/mcp\", \"oauth\": false},"
        "\"named\": {\"url\": \"https://c/mcp\", \"oauth\": {\"clientId\": \"cid\","
        " \"clientSecretEnv\": \"HOST_TEST_TOKEN\","
        " \"clientMetadataUrl\": \"https://app/${HOST_TEST_BIN}.json\", \"dpop\": true,"
        " \"issuer\": \"https://as.example\"}}}}";
    mcp_server_configs_t configs;
    warnings_t w = {0};
    assert_int_equal(parse(text, &configs, &w, NULL), MCP_OK);
    assert_int_equal(configs.count, 3);
    assert_true(configs.items[0].oauth);
    assert_null(configs.items[0].oauth_client_id);
    assert_false(configs.items[1].oauth);
    const mcp_server_config_t *named = &configs.items[2];
    assert_true(named->oauth);
    assert_string_equal(named->oauth_client_id, "cid");
    assert_string_equal(named->oauth_client_secret, "s3cret");
    assert_string_equal(named->oauth_client_metadata_url, "https://app//usr/bin/server.json");
    assert_true(named->oauth_dpop);
    assert_string_equal(named->oauth_issuer, "https://as.example");
    assert_null(configs.items[0].oauth_issuer);
    assert_false(configs.items[0].oauth_dpop);
    assert_int_equal(w.count, 0);
    mcp_server_config_t copy;
    assert_int_equal(host_config_copy(&copy, named), MCP_OK);
    assert_true(copy.oauth_dpop);
    assert_string_equal(copy.oauth_issuer, "https://as.example");
    mcp_server_config_clear(&copy);

    /* A host keeps its own copy. */
    mcp_host_t *host = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "t", .version = "1"}}, NULL);
    assert_non_null(host);
    assert_int_equal(mcp_host_add_server(host, named, NULL), MCP_OK);
    mcp_server_configs_clear(&configs);
    mcp_host_free(host);
}

/* "grant": "jwt_bearer" with the file the workload's token is mounted at
 * (read at each grant, not now), and that file for nothing else. */
static void test_oauth_jwt_bearer(void **state)
{
    (void)state;
    const char *text = "{\"mcpServers\": {\"w\": {\"url\": \"https://a/mcp\", \"oauth\": "
                       "{\"grant\": \"jwt_bearer\", \"assertionFile\": "
                       "\"/var/run/secrets/${HOST_TEST_BIN}/token\"}}}}";
    mcp_server_configs_t configs;
    warnings_t w = {0};
    mcp_error_t err = {0};
    assert_int_equal(parse(text, &configs, &w, &err), MCP_OK);
    const mcp_server_config_t *c = &configs.items[0];
    assert_int_equal(c->oauth_grant, MCP_OAUTH_JWT_BEARER);
    assert_string_equal(c->oauth_assertion_file, "/var/run/secrets//usr/bin/server/token");
    assert_int_equal(w.count, 0);
    mcp_server_config_t copy;
    assert_int_equal(host_config_copy(&copy, c), MCP_OK);
    assert_string_equal(copy.oauth_assertion_file, c->oauth_assertion_file);
    mcp_server_config_clear(&copy);
    /* No user signs in: the host makes its token source without an
     * authorize callback. */
    mcp_host_t *host = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "t", .version = "1"}}, NULL);
    assert_int_equal(mcp_host_add_server(host, c, NULL), MCP_OK);
    assert_non_null(mcp_host_server_oauth(host, "w"));
    mcp_host_free(host);
    mcp_server_configs_clear(&configs);

    static const char *const bad[] = {
        "{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": {\"grant\": \"jwt_bearer\"}}}}",
        "{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": {\"assertionFile\": \"/t\"}}}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_clear(&err);
        assert_int_equal(parse(bad[i], &configs, &w, &err), MCP_EINVAL);
        assert_non_null(strstr(err.message, "\"assertionFile\" goes with"));
    }
    mcp_error_clear(&err);
}

/* "grant": "enterprise": the user's ID token in a file (read at each
 * grant, not now), the client at the authorization server, the IdP's
 * token endpoint and the client there (secret optional); the IdP keys for
 * nothing else. */
#define ENTERPRISE_OAUTH(members)                                                    \
    "{\"mcpServers\": {\"e\": {\"url\": \"https://a/mcp\", \"oauth\": {" members "}}}}"
#define ENTERPRISE_FULL                                                              \
    "\"grant\": \"enterprise\", \"clientId\": \"mcp-client\", "                       \
    "\"assertionFile\": \"/run/sso/${HOST_TEST_BIN}/id_token\", "                       \
    "\"idpTokenEndpoint\": \"https://idp.example/token\", \"idpClientId\": \"idp-client\""

static void test_oauth_enterprise(void **state)
{
    (void)state;
    mcp_server_configs_t configs;
    warnings_t w = {0};
    mcp_error_t err = {0};
    assert_int_equal(parse(ENTERPRISE_OAUTH(ENTERPRISE_FULL ", \"idpClientSecretEnv\": "
                                                            "\"HOST_TEST_TOKEN\""),
                           &configs, &w, &err),
                     MCP_OK);
    assert_int_equal(w.count, 0); /* every key known */
    const mcp_server_config_t *c = &configs.items[0];
    assert_int_equal(c->oauth_grant, MCP_OAUTH_ENTERPRISE);
    assert_string_equal(c->oauth_client_id, "mcp-client");
    assert_null(c->oauth_client_secret);
    assert_string_equal(c->oauth_assertion_file, "/run/sso//usr/bin/server/id_token");
    assert_string_equal(c->oauth_idp_token_endpoint, "https://idp.example/token");
    assert_string_equal(c->oauth_idp_client_id, "idp-client");
    assert_string_equal(c->oauth_idp_client_secret, "s3cret");

    /* Copied whole, and cleared whole (LeakSanitizer sees the rest). */
    mcp_server_config_t copy;
    assert_int_equal(host_config_copy(&copy, c), MCP_OK);
    assert_int_equal(copy.oauth_grant, MCP_OAUTH_ENTERPRISE);
    assert_string_equal(copy.oauth_idp_token_endpoint, c->oauth_idp_token_endpoint);
    assert_string_equal(copy.oauth_idp_client_id, c->oauth_idp_client_id);
    assert_string_equal(copy.oauth_idp_client_secret, c->oauth_idp_client_secret);
    assert_ptr_not_equal(copy.oauth_idp_client_secret, c->oauth_idp_client_secret);
    mcp_server_config_clear(&copy);
    assert_null(copy.oauth_idp_client_secret);
    assert_null(copy.oauth_idp_token_endpoint);

    /* No user signs in: the host makes its token source without an
     * authorize callback. */
    mcp_host_t *host = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "t", .version = "1"}}, NULL);
    assert_int_equal(mcp_host_add_server(host, c, NULL), MCP_OK);
    assert_non_null(mcp_host_server_oauth(host, "e"));
    mcp_host_free(host);
    mcp_server_configs_clear(&configs);

    /* Without a secret at the IdP: a public client there. */
    assert_int_equal(parse(ENTERPRISE_OAUTH(ENTERPRISE_FULL), &configs, &w, &err), MCP_OK);
    assert_null(configs.items[0].oauth_idp_client_secret);
    mcp_server_configs_clear(&configs);

    static const char *const bad[][2] = {
        /* Each required key missing. */
        {ENTERPRISE_OAUTH("\"grant\": \"enterprise\", \"assertionFile\": \"/t\", "
                          "\"idpTokenEndpoint\": \"https://i/t\", \"idpClientId\": \"i\""),
         "the enterprise grant needs \"clientId\""},
        {ENTERPRISE_OAUTH("\"grant\": \"enterprise\", \"clientId\": \"c\", "
                          "\"idpTokenEndpoint\": \"https://i/t\", \"idpClientId\": \"i\""),
         "\"assertionFile\" goes with \"grant\": \"jwt_bearer\" or \"enterprise\""},
        {ENTERPRISE_OAUTH("\"grant\": \"enterprise\", \"clientId\": \"c\", "
                          "\"assertionFile\": \"/t\", \"idpClientId\": \"i\""),
         "the enterprise grant needs \"idpTokenEndpoint\""},
        {ENTERPRISE_OAUTH("\"grant\": \"enterprise\", \"clientId\": \"c\", "
                          "\"assertionFile\": \"/t\", \"idpTokenEndpoint\": \"https://i/t\", "
                          "\"idpClientSecretEnv\": \"HOST_TEST_TOKEN\""),
         "the enterprise grant needs \"idpClientId\""},
        /* The IdP keys with another grant. */
        {ENTERPRISE_OAUTH("\"idpTokenEndpoint\": \"https://i/t\""),
         "\"idpTokenEndpoint\", \"idpClientId\" and \"idpClientSecretEnv\" are for \"grant\": "
         "\"enterprise\""},
        {ENTERPRISE_OAUTH("\"grant\": \"jwt_bearer\", \"assertionFile\": \"/t\", "
                          "\"idpClientId\": \"i\""),
         "are for \"grant\": \"enterprise\""},
        {ENTERPRISE_OAUTH("\"grant\": \"client_credentials\", \"clientId\": \"c\", "
                          "\"clientSecretEnv\": \"HOST_TEST_TOKEN\", "
                          "\"idpClientSecretEnv\": \"HOST_TEST_TOKEN\""),
         "are for \"grant\": \"enterprise\""},
        /* The IdP secret's variable unset, or empty. */
        {ENTERPRISE_OAUTH(ENTERPRISE_FULL ", \"idpClientSecretEnv\": \"HOST_TEST_UNSET\""),
         "\"idpClientSecretEnv\" must name a set environment variable"},
        {ENTERPRISE_OAUTH(ENTERPRISE_FULL ", \"idpClientSecretEnv\": \"HOST_TEST_EMPTY\""),
         "\"idpClientSecretEnv\" must name a set environment variable"},
        {ENTERPRISE_OAUTH(ENTERPRISE_FULL ", \"idpClientSecretEnv\": 7"),
         "\"idpClientSecretEnv\" must name a set environment variable"},
        {ENTERPRISE_OAUTH(ENTERPRISE_FULL ", \"idpTokenEndpoint\": 7"),
         "\"idpTokenEndpoint\""},
        {ENTERPRISE_OAUTH("\"grant\": \"enterprise!\""),
         "\"jwt_bearer\" or \"enterprise\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mcp_error_clear(&err);
        assert_int_equal(parse(bad[i][0], &configs, &w, &err), MCP_EINVAL);
        if (!strstr(err.message, bad[i][1]))
            fail_msg("case %zu: \"%s\" does not say %s", i, err.message, bad[i][1]);
        assert_int_equal(configs.count, 0);
    }

    /* A private key has no part in it. */
    char key_path[64], text[1024];
    snprintf(key_path, sizeof key_path, "%s", temp_file(TEST_KEY_P256_PEM));
    snprintf(text, sizeof text, ENTERPRISE_OAUTH(ENTERPRISE_FULL ", \"privateKeyFile\": \"%s\""),
             key_path);
    mcp_error_clear(&err);
    assert_int_equal(parse(text, &configs, &w, &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "\"privateKeyFile\" is for \"grant\": "
                                        "\"client_credentials\""));
    unlink(key_path);
    mcp_error_clear(&err);
}

/* "grant": "client_credentials", with a secret or a key file (read and
 * checked at once), and the key file for nothing else. */
static void test_oauth_client_credentials(void **state)
{
    (void)state;
    char key_path[64], not_key_path[64], text[1024];
    snprintf(key_path, sizeof key_path, "%s", temp_file(TEST_KEY_P256_PEM));
    snprintf(not_key_path, sizeof not_key_path, "%s", temp_file("not a key\n"));
    snprintf(text, sizeof text,
             "{\"mcpServers\": {"
             "\"secret\": {\"url\": \"https://a/mcp\", \"oauth\": {\"grant\": "
             "\"client_credentials\", \"clientId\": \"svc\", \"clientSecretEnv\": "
             "\"HOST_TEST_TOKEN\"}},"
             "\"key\": {\"url\": \"https://b/mcp\", \"oauth\": {\"grant\": "
             "\"client_credentials\", \"clientId\": \"svc\", \"privateKeyFile\": \"%s\"}},"
             "\"user\": {\"url\": \"https://c/mcp\", \"oauth\": {\"grant\": "
             "\"authorization_code\"}}}}",
             key_path);
    mcp_server_configs_t configs;
    warnings_t w = {0};
    mcp_error_t err = {0};
    assert_int_equal(parse(text, &configs, &w, &err), MCP_OK);
    assert_int_equal(configs.items[0].oauth_grant, MCP_OAUTH_CLIENT_CREDENTIALS);
    assert_string_equal(configs.items[0].oauth_client_secret, "s3cret");
    assert_null(configs.items[0].oauth_private_key_pem);
    assert_int_equal(configs.items[1].oauth_grant, MCP_OAUTH_CLIENT_CREDENTIALS);
    assert_string_equal(configs.items[1].oauth_private_key_pem, TEST_KEY_P256_PEM);
    assert_int_equal(configs.items[2].oauth_grant, MCP_OAUTH_AUTHORIZATION_CODE);
    assert_int_equal(w.count, 0);

    /* A host makes their token sources without an authorize callback. */
    mcp_host_t *host = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "t", .version = "1"}}, NULL);
    assert_int_equal(mcp_host_add_server(host, &configs.items[1], NULL), MCP_OK);
    assert_non_null(mcp_host_server_oauth(host, "key"));
    mcp_host_free(host);
    mcp_server_configs_clear(&configs);

    /* The key file's path is a string value like the others: ${VAR} and
     * ${VAR:-default} are expanded before the file is read. */
    const char *base = strrchr(key_path, '/');
    setenv("HOST_TEST_KEYDIR", "/tmp", 1);
    assert_int_equal(strncmp(key_path, "/tmp/", 5), 0); /* temp_file's directory */
    snprintf(text, sizeof text,
             "{\"mcpServers\": {"
             "\"var\": {\"url\": \"https://a/mcp\", \"oauth\": {\"grant\": "
             "\"client_credentials\", \"clientId\": \"svc\", \"privateKeyFile\": "
             "\"${HOST_TEST_KEYDIR}%s\"}},"
             "\"default\": {\"url\": \"https://b/mcp\", \"oauth\": {\"grant\": "
             "\"client_credentials\", \"clientId\": \"svc\", \"privateKeyFile\": "
             "\"${HOST_TEST_UNSET:-/tmp}%s\"}}}}",
             base, base);
    assert_int_equal(parse(text, &configs, &w, &err), MCP_OK);
    assert_string_equal(configs.items[0].oauth_private_key_pem, TEST_KEY_P256_PEM);
    assert_string_equal(configs.items[1].oauth_private_key_pem, TEST_KEY_P256_PEM);
    mcp_server_configs_clear(&configs);
    unsetenv("HOST_TEST_KEYDIR");

    const char *bad[][2] = {
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": "
         "{\"grant\": \"client_credentials\", \"clientId\": \"c\", \"privateKeyFile\": \"%s\"}}}}",
         "\"privateKeyFile\": the private key is not PEM"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": {\"dpop\": \"yes\", "
         "\"clientMetadataUrl\": \"https://x%s\"}}}}",
         "\"dpop\" must be true or false"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": "
         "{\"clientId\": \"c\", \"privateKeyFile\": \"%s\"}}}}",
         "\"privateKeyFile\" is for \"grant\": \"client_credentials\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, bad[i][0], i == 0 ? not_key_path : key_path);
        mcp_error_clear(&err);
        assert_int_equal(parse(text, &configs, &w, &err), MCP_EINVAL);
        if (!strstr(err.message, bad[i][1]))
            fail_msg("\"%s\" does not say %s", err.message, bad[i][1]);
    }
    unlink(key_path);
    unlink(not_key_path);
}

static void test_unknown_keys_warned(void **state)
{
    static const struct {
        const char *entry;
        int count;
        const char *warning;
    } cases[] = {
        {"{\"command\": \"n\", \"disabled\": false}", 1,
         "server \"s\": unknown key \"disabled\" ignored"},
        {"{\"command\": \"n\", \"autoApprove\": [], \"alwaysAllow\": []}", 2,
         "server \"s\": unknown key \"alwaysAllow\" ignored"},
        {"{\"url\": \"http://h/\", \"args\": [\"-v\"]}", 1,
         "server \"s\": \"args\" is for stdio servers; ignored"},
        {"{\"url\": \"http://h/\", \"env\": {}, \"cwd\": \"/\"}", 2,
         "server \"s\": \"cwd\" is for stdio servers; ignored"},
        {"{\"command\": \"n\", \"headers\": {}}", 1,
         "server \"s\": \"headers\" is for HTTP servers; ignored"},
        {"{\"command\": \"n\", \"token\": \"t\"}", 1,
         "server \"s\": \"token\" is for HTTP servers; ignored"},
        {"{\"command\": \"n\", \"oauth\": true}", 1,
         "server \"s\": \"oauth\" is for HTTP servers; ignored"},
        {"{\"url\": \"http://h/\", \"oauth\": {\"scope\": \"x\"}}", 1,
         "server \"s\": unknown key \"oauth.scope\" ignored"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"mcpServers\": {\"s\": %s}}", cases[i].entry);
        mcp_server_configs_t configs;
        warnings_t w = {0};
        assert_int_equal(parse(text, &configs, &w, NULL), MCP_OK);
        assert_int_equal(configs.count, 1);
        if (w.count != cases[i].count || !strstr(w.text, cases[i].warning))
            fail_msg("case %zu: %d warnings:\n%s", i, w.count, w.text);
        mcp_server_configs_clear(&configs);
    }
    /* Without a warn callback the same document is fine. */
    mcp_server_configs_t configs;
    const char *text = "{\"mcpServers\": {\"s\": {\"command\": \"n\", \"x\": 1}}}";
    assert_int_equal(mcp_server_configs_parse(text, strlen(text), &configs, NULL, NULL, NULL),
                     MCP_OK);
    assert_null(configs.items[0].token); /* the ignored key changed nothing */
    mcp_server_configs_clear(&configs);
}

/* ------------------------------------------------------------------------
 * Errors: each names the server and the field
 * ------------------------------------------------------------------------ */

static void test_rejected_documents(void **state)
{
    static const struct {
        const char *text;
        const char *message;
    } cases[] = {
        /* JSON */
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\"},}}", "1:39: not valid JSON"},
        {"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",\n\n   \"args\": [}}}",
         "4:13: not valid JSON"},
        {"", "not valid JSON"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"a\": {\"command\": \"y\"}}}",
         "duplicate object key"},
        /* the document */
        {"[]", "expected an object {\"mcpServers\": {\"NAME\": {...}}}"},
        {"{\"servers\": {}}", "expected an object {\"mcpServers\""},
        {"{\"mcpServers\": []}", "expected an object {\"mcpServers\""},
        {"{\"mcpServers\": {\"a\": 1}}", "server \"a\": the entry must be an object"},
        {"{\"mcpServers\": {\"a\": {}}}", "server \"a\": give either \"command\" (stdio) or \"url\" (HTTP)"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"url\": \"http://h/\"}}}",
         "server \"a\": give either \"command\" (stdio) or \"url\" (HTTP)"},
        /* stdio fields */
        {"{\"mcpServers\": {\"a\": {\"command\": 7}}}", "server \"a\": \"command\" must be a non-empty string"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"\"}}}", "server \"a\": \"command\" must be a non-empty string"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": \"-v\"}}}",
         "server \"a\": \"args\" must be an array of strings"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"ok\", 1]}}}",
         "server \"a\": \"args\" must be an array of strings"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": []}}}",
         "server \"a\": \"env\" must be an object of strings"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": 1}}}}",
         "server \"a\": \"env\": \"K\" must be a string"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"K=1\": \"v\"}}}}",
         "server \"a\": \"env\": \"K=1\" is not a valid name"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"cwd\": false}}}",
         "server \"a\": \"cwd\" must be a string"},
        /* HTTP fields */
        {"{\"mcpServers\": {\"a\": {\"url\": 1}}}", "server \"a\": \"url\" must be a string"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"ftp://h/\"}}}",
         "server \"a\": \"url\" must be an http:// or https:// URL"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"headers\": [\"X: y\"]}}}",
         "server \"a\": \"headers\" must be an object of strings"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"headers\": {\"X\": true}}}}",
         "server \"a\": \"headers\": \"X\" must be a string"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"headers\": {\"X Y\": \"v\"}}}}",
         "server \"a\": \"headers\": \"X Y\" is not a valid name"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"headers\": {\"X:\": \"v\"}}}}",
         "server \"a\": \"headers\": \"X:\" is not a valid name"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"headers\": {\"X\": \"v\\r\\nEvil: 1\"}}}}",
         "server \"a\": \"headers\": the value of \"X\" has a line break"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"token\": 5}}}",
         "server \"a\": \"token\" must be a string"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"token\": \"t\", \"tokenEnv\": \"T\"}}}",
         "server \"a\": give \"token\" or \"tokenEnv\", not both"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"tokenEnv\": [\"T\"]}}}",
         "server \"a\": \"tokenEnv\" must be a string"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"tokenEnv\": \"HOST_TEST_UNSET\"}}}",
         "server \"a\": \"tokenEnv\": the environment variable HOST_TEST_UNSET is not set"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"tokenEnv\": \"HOST_TEST_EMPTY\"}}}",
         "server \"a\": \"tokenEnv\": the environment variable HOST_TEST_EMPTY is not set"},
        /* type, era, timeoutMs */
        {"{\"mcpServers\": {\"a\": {\"type\": 1, \"command\": \"x\"}}}",
         "server \"a\": \"type\" must be a string"},
        {"{\"mcpServers\": {\"a\": {\"type\": \"pigeon\", \"command\": \"x\"}}}",
         "server \"a\": unknown \"type\" \"pigeon\""},
        {"{\"mcpServers\": {\"a\": {\"type\": \"http\", \"command\": \"x\"}}}",
         "server \"a\": \"type\" \"http\" does not match \"command\""},
        {"{\"mcpServers\": {\"a\": {\"type\": \"stdio\", \"url\": \"http://h/\"}}}",
         "server \"a\": \"type\" \"stdio\" does not match \"url\""},
        {"{\"mcpServers\": {\"a\": {\"type\": \"sse\", \"url\": \"http://h/\", \"era\": \"modern\"}}}",
         "server \"a\": \"type\" \"sse\" is a legacy transport"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"era\": \"2025-11-25\"}}}",
         "server \"a\": \"era\" must be \"auto\", \"modern\" or \"legacy\""},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeoutMs\": 0}}}",
         "server \"a\": \"timeoutMs\" must be a positive integer"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeoutMs\": -5}}}",
         "server \"a\": \"timeoutMs\" must be a positive integer"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeoutMs\": \"10\"}}}",
         "server \"a\": \"timeoutMs\" must be a positive integer"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"timeoutMs\": 1.5}}}",
         "server \"a\": \"timeoutMs\" must be a positive integer"},
        /* oauth */
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": 1}}}",
         "server \"a\": \"oauth\" must be true, false or an object"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"token\": \"t\", \"oauth\": true}}}",
         "server \"a\": give a token or \"oauth\", not both"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": "
         "{\"clientSecretEnv\": \"HOST_TEST_TOKEN\"}}}}",
         "server \"a\": \"oauth\": a client secret needs its \"clientId\""},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": "
         "{\"clientId\": \"c\", \"clientSecretEnv\": \"HOST_TEST_UNSET\"}}}}",
         "server \"a\": \"oauth\": \"clientSecretEnv\" must name a set environment variable"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": {\"clientId\": 7}}}}",
         "server \"a\": \"clientId\" must be"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": {\"grant\": \"implicit\"}}}}",
         "server \"a\": \"oauth\": \"grant\" must be"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": "
         "{\"grant\": \"client_credentials\", \"clientId\": \"c\"}}}}",
         "server \"a\": \"oauth\": the client credentials grant needs"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": "
         "{\"grant\": \"client_credentials\", \"clientSecretEnv\": \"HOST_TEST_TOKEN\"}}}}",
         "server \"a\": \"oauth\": a client secret needs its"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": "
         "{\"clientId\": \"c\", \"privateKeyFile\": \"/nonexistent/key.pem\"}}}}",
         "server \"a\": \"oauth\": cannot read the private key file /nonexistent/key.pem"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": "
         "{\"grant\": \"client_credentials\", \"clientId\": \"c\", "
         "\"privateKeyFile\": \"/dev/zero\"}}}}",
         "server \"a\": \"oauth\": cannot read the private key file /dev/zero: not a small "
         "regular file"},
        /* ${VAR} */
        {"{\"mcpServers\": {\"a\": {\"command\": \"${HOST_TEST_UNSET}\"}}}",
         "server \"a\": command: the environment variable HOST_TEST_UNSET is not set"},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"oauth\": "
         "{\"grant\": \"client_credentials\", \"clientId\": \"c\", "
         "\"privateKeyFile\": \"${HOST_TEST_UNSET}/key.pem\"}}}}",
         "server \"a\": privateKeyFile: the environment variable HOST_TEST_UNSET is not set"},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"${HOST_TEST_BIN\"]}}}",
         "server \"a\": args: \"${\" without a closing \"}\""},
        {"{\"mcpServers\": {\"a\": {\"url\": \"http://h/\", \"headers\": {\"X\": \"${1X}\"}}}}",
         "server \"a\": headers: bad variable reference \"${1X}\""},
        {"{\"mcpServers\": {\"a\": {\"command\": \"x\", \"cwd\": \"${}\"}}}",
         "server \"a\": cwd: bad variable reference \"${}\""},
        /* all or nothing: the second server is named */
        {"{\"mcpServers\": {\"good\": {\"command\": \"x\"}, \"bad\": {\"command\": [\"x\"]}}}",
         "server \"bad\": \"command\" must be a non-empty string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_server_configs_t configs;
        warnings_t w = {0};
        mcp_error_t err = {0};
        int rc = parse(cases[i].text, &configs, &w, &err);
        if (rc != MCP_EINVAL || !strstr(err.message, cases[i].message))
            fail_msg("case %zu: rc %d, message \"%s\", expected \"%s\"", i, rc, err.message,
                     cases[i].message);
        assert_int_equal(configs.count, 0);
        assert_null(configs.items);
        mcp_error_clear(&err);
    }
    mcp_error_t err = {0};
    mcp_server_configs_t configs;
    assert_int_equal(mcp_server_configs_parse(NULL, 0, &configs, NULL, NULL, &err), MCP_EINVAL);
    assert_int_equal(mcp_server_configs_parse("{}", 2, NULL, NULL, NULL, &err), MCP_EINVAL);
    mcp_error_clear(&err);
}

/* ------------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------------ */

static void test_load_files(void **state)
{
    const char *path = temp_file("{\"mcpServers\": {\"a\": {\"command\": \"x\", \"shiny\": 1},\n"
                                 "                \"b\": {\"url\": \"http://h/\"}}}");
    mcp_server_configs_t configs;
    warnings_t w = {0};
    mcp_error_t err = {0};
    assert_int_equal(mcp_server_configs_load(path, &configs, collect, &w, &err), MCP_OK);
    assert_int_equal(configs.count, 2);
    assert_string_equal(configs.items[1].url, "http://h/");
    /* Warnings name the file too. */
    assert_int_equal(w.count, 1);
    char expect[128];
    snprintf(expect, sizeof expect, "%s: server \"a\": unknown key \"shiny\" ignored", path);
    assert_non_null(strstr(w.text, expect));
    mcp_server_configs_clear(&configs);
    unlink(path);

    /* Errors too: "PATH:LINE:COLUMN: ..." and "PATH: server ...". */
    path = temp_file("{\"mcpServers\": {\n\"a\": {\"command\": 1}\n");
    assert_int_equal(mcp_server_configs_load(path, &configs, NULL, NULL, &err), MCP_EINVAL);
    snprintf(expect, sizeof expect, "%s:3:0: not valid JSON", path);
    assert_non_null(strstr(err.message, expect));
    unlink(path);
    path = temp_file("{\"mcpServers\": {\"a\": {\"command\": 1}}}");
    assert_int_equal(mcp_server_configs_load(path, &configs, NULL, NULL, &err), MCP_EINVAL);
    snprintf(expect, sizeof expect, "%s: server \"a\": \"command\"", path);
    assert_non_null(strstr(err.message, expect));
    unlink(path);

    assert_int_equal(mcp_server_configs_load("/no/such/servers.json", &configs, NULL, NULL, &err),
                     MCP_EIO);
    assert_string_equal(err.message, "cannot read the configuration file /no/such/servers.json: "
                                     "No such file or directory");
    assert_int_equal(configs.count, 0);
    mcp_error_clear(&err);
}

static void test_load_one(void **state)
{
    /* A broken neighbour does not stop the server asked for. */
    const char *path = temp_file("{\"mcpServers\": {\"good\": {\"command\": \"x\", \"args\": [\"1\"]},"
                                 " \"broken\": {\"command\": \"${HOST_TEST_UNSET}\"},"
                                 " \"remote\": {\"url\": \"http://h/\"}}}");
    mcp_server_config_t c;
    mcp_error_t err = {0};
    assert_int_equal(mcp_server_configs_load_one(path, "good", &c, NULL, NULL, &err), MCP_OK);
    assert_string_equal(c.name, "good");
    assert_string_equal(joined(c.argv), "x|1");
    mcp_server_config_clear(&c);
    assert_null(c.argv);
    mcp_server_config_clear(NULL);

    assert_int_equal(mcp_server_configs_load_one(path, "broken", &c, NULL, NULL, &err),
                     MCP_EINVAL);
    assert_non_null(strstr(err.message, "server \"broken\": command: the environment variable "
                                        "HOST_TEST_UNSET is not set"));
    assert_null(c.name);

    assert_int_equal(mcp_server_configs_load_one(path, "nameless", &c, NULL, NULL, &err),
                     MCP_ENOTFOUND);
    char expect[160];
    snprintf(expect, sizeof expect, "%s has no server \"nameless\" (it has: good, broken, remote)",
             path);
    assert_string_equal(err.message, expect);
    unlink(path);

    path = temp_file("{\"mcpServers\": {}}");
    assert_int_equal(mcp_server_configs_load_one(path, "x", &c, NULL, NULL, &err), MCP_ENOTFOUND);
    assert_non_null(strstr(err.message, "(it has: none)"));
    unlink(path);
    path = temp_file("{\"mcpServers\": 3}");
    assert_int_equal(mcp_server_configs_load_one(path, "x", &c, NULL, NULL, &err), MCP_EINVAL);
    unlink(path);
    assert_int_equal(mcp_server_configs_load_one("/no/such/file", "x", &c, NULL, NULL, &err),
                     MCP_EIO);
    mcp_error_clear(&err);
}

/* A valid document of exactly `size` bytes (padded with spaces) in a
 * temporary file. */
static const char *padded_file(size_t size)
{
    static const char doc[] = "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}";
    char *text = malloc(size + 1);
    assert_non_null(text);
    memset(text, ' ', size);
    memcpy(text, doc, strlen(doc));
    text[size] = '\0';
    const char *path = temp_file(text);
    free(text);
    return path;
}

/* Only a regular file of at most MCP_SERVER_CONFIGS_FILE_MAX bytes is a
 * configuration: a larger one is refused before it is held in memory, and
 * a FIFO or a device is refused before it blocks or never ends. */
static void test_load_limits(void **state)
{
    mcp_server_configs_t configs;
    mcp_server_config_t c;
    mcp_error_t err = {0};
    char expect[256];

    const char *path = padded_file(MCP_SERVER_CONFIGS_FILE_MAX);
    assert_int_equal(mcp_server_configs_load(path, &configs, NULL, NULL, &err), MCP_OK);
    assert_int_equal(configs.count, 1);
    mcp_server_configs_clear(&configs);
    unlink(path);

    path = padded_file(MCP_SERVER_CONFIGS_FILE_MAX + 1);
    snprintf(expect, sizeof expect,
             "the configuration file %s is larger than 4 MiB, the limit for one", path);
    assert_int_equal(mcp_server_configs_load(path, &configs, NULL, NULL, &err), MCP_EINVAL);
    assert_string_equal(err.message, expect);
    assert_int_equal(configs.count, 0);
    assert_int_equal(mcp_server_configs_load_one(path, "a", &c, NULL, NULL, &err), MCP_EINVAL);
    assert_string_equal(err.message, expect);
    unlink(path);

    assert_int_equal(mcp_server_configs_load("/dev/zero", &configs, NULL, NULL, &err),
                     MCP_EINVAL);
    assert_string_equal(err.message, "the configuration file /dev/zero is a character device, "
                                     "not a regular file");
    assert_int_equal(mcp_server_configs_load("/tmp", &configs, NULL, NULL, &err), MCP_EINVAL);
    assert_string_equal(err.message, "the configuration file /tmp is a directory, not a "
                                     "regular file");

    /* A FIFO nobody writes to: reading it would wait forever (the alarm
     * turns that into a failure rather than a hung test). */
    char fifo[] = "/tmp/libmcp-host-config-fifo-XXXXXX";
    assert_non_null(mkdtemp(fifo));
    char fifo_path[sizeof fifo + 8];
    snprintf(fifo_path, sizeof fifo_path, "%s/fifo", fifo);
    assert_int_equal(mkfifo(fifo_path, 0600), 0);
    alarm(20);
    assert_int_equal(mcp_server_configs_load_one(fifo_path, "a", &c, NULL, NULL, &err),
                     MCP_EINVAL);
    alarm(0);
    snprintf(expect, sizeof expect, "the configuration file %s is a FIFO, not a regular file",
             fifo_path);
    assert_string_equal(err.message, expect);
    unlink(fifo_path);
    rmdir(fifo);
    mcp_error_clear(&err);
}

static void test_default_path(void **state)
{
    static const struct {
        const char *mcp_config, *xdg, *home;
        const char *expect;
    } cases[] = {
        {"/etc/mine.json", "/x", "/home/u", "/etc/mine.json"},
        {"", "/x", "/home/u", "/x/mcp/servers.json"},
        {NULL, "/x", "/home/u", "/x/mcp/servers.json"},
        {NULL, "", "/home/u", "/home/u/.config/mcp/servers.json"},
        {NULL, NULL, "/home/u", "/home/u/.config/mcp/servers.json"},
    };
    char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *values[] = {cases[i].mcp_config, cases[i].xdg, cases[i].home};
        const char *names[] = {"MCP_CONFIG", "XDG_CONFIG_HOME", "HOME"};
        for (size_t v = 0; v < 3; v++)
            if (values[v])
                setenv(names[v], values[v], 1);
            else
                unsetenv(names[v]);
        char *path = mcp_server_configs_default_path();
        assert_non_null(path);
        assert_string_equal(path, cases[i].expect);
        free(path);
    }
    /* Without $HOME: the password database's home directory. */
    unsetenv("HOME");
    char *path = mcp_server_configs_default_path();
    if (path)
        assert_non_null(strstr(path, "/.config/mcp/servers.json"));
    free(path);
    if (saved_home)
        setenv("HOME", saved_home, 1);
    free(saved_home);
    unsetenv("MCP_CONFIG");
    unsetenv("XDG_CONFIG_HOME");
}

/* ------------------------------------------------------------------------
 * What a config implies for the client
 * ------------------------------------------------------------------------ */

static void test_client_options_and_connect(void **state)
{
    mcp_server_config_t c = {.name = "s", .era = MCP_CLIENT_ERA_AUTO, .timeout_ms = 0};
    mcp_client_options_t o = {.era = MCP_CLIENT_ERA_LEGACY, .timeout_ms = 900};
    mcp_server_config_client_options(&c, &o);
    assert_int_equal(o.era, MCP_CLIENT_ERA_LEGACY); /* auto and 0 leave the client's own */
    assert_int_equal(o.timeout_ms, 900);
    c.era = MCP_CLIENT_ERA_MODERN;
    c.timeout_ms = 1234;
    mcp_server_config_client_options(&c, &o);
    assert_int_equal(o.era, MCP_CLIENT_ERA_MODERN);
    assert_int_equal(o.timeout_ms, 1234);
    assert_null(o.extensions);
    mcp_server_config_client_options(NULL, &o);
    /* A client-credentials server: the extension is declared, unless the
     * application declares extensions itself. */
    c.oauth_grant = MCP_OAUTH_CLIENT_CREDENTIALS;
    mcp_server_config_client_options(&c, &o);
    assert_non_null(o.extensions);
    json_t *declared = json_loads(o.extensions, 0, NULL);
    assert_non_null(json_object_get(declared, MCP_EXTENSION_OAUTH_CLIENT_CREDENTIALS));
    json_decref(declared);
    o.extensions = "{\"x.example/own\":{}}";
    mcp_server_config_client_options(&c, &o);
    assert_string_equal(o.extensions, "{\"x.example/own\":{}}");
    /* An enterprise server: Enterprise-Managed Authorization declared. */
    c.oauth_grant = MCP_OAUTH_ENTERPRISE;
    o.extensions = NULL;
    mcp_server_config_client_options(&c, &o);
    declared = json_loads(o.extensions, 0, NULL);
    assert_non_null(declared);
    assert_non_null(json_object_get(declared, MCP_EXTENSION_ENTERPRISE_MANAGED_AUTHORIZATION));
    assert_int_equal(json_object_size(declared), 1);
    json_decref(declared);
    c.oauth_grant = MCP_OAUTH_AUTHORIZATION_CODE;

    /* Neither a command nor a URL (or both): nothing to connect to. */
    mcp_client_t *client = mcp_client_new(&(mcp_client_options_t){.name = "t", .version = "1"},
                                          NULL);
    mcp_error_t err = {0};
    assert_int_equal(mcp_server_config_connect(&c, client, NULL, &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "server \"s\" needs either a command"));
    char *argv[] = {"x", NULL};
    c.argv = argv;
    c.url = "http://h/";
    assert_int_equal(mcp_server_config_connect(&c, client, NULL, &err), MCP_EINVAL);
    assert_int_equal(mcp_server_config_connect(NULL, client, NULL, &err), MCP_EINVAL);
    assert_int_equal(mcp_server_config_connect(&c, NULL, NULL, &err), MCP_EINVAL);
    /* A stdio config runs its command (here one that does not exist). */
    char *missing[] = {"/nonexistent/libmcp-server", NULL};
    c.argv = missing;
    c.url = NULL;
    assert_int_not_equal(mcp_server_config_connect(&c, client, NULL, &err), MCP_OK);
    mcp_client_free(client);
    mcp_error_clear(&err);
}

/* The token source options a config implies: every "oauth" field, and
 * none of the application's. */
static void test_oauth_options(void **state)
{
    (void)state;
    char path[] = "/run/sso/id_token";
    mcp_server_config_t c = {
        .oauth = true,
        .oauth_grant = MCP_OAUTH_ENTERPRISE,
        .oauth_client_id = "mcp-client",
        .oauth_client_secret = "mcp-secret",
        .oauth_client_metadata_url = "https://app/meta.json",
        .oauth_dpop = true,
        .oauth_assertion_file = path,
        .oauth_idp_token_endpoint = "https://idp/token",
        .oauth_idp_client_id = "idp-client",
        .oauth_idp_client_secret = "idp-secret",
        .oauth_issuer = "https://as.example",
    };
    mcp_oauth_options_t o = {.redirect_uri = "http://127.0.0.1:9/cb", .client_name = "app",
                             .timeout_ms = 1234, .insecure = true};
    mcp_server_config_oauth_options(&c, &o);
    assert_int_equal(o.grant, MCP_OAUTH_ENTERPRISE);
    assert_string_equal(o.client_id, "mcp-client");
    assert_string_equal(o.client_secret, "mcp-secret");
    assert_string_equal(o.client_metadata_url, "https://app/meta.json");
    assert_true(o.dpop);
    assert_ptr_equal(o.assertion, mcp_oauth_assertion_from_file);
    assert_ptr_equal(o.assertion_user, path); /* borrowed: read at each grant */
    assert_string_equal(o.idp_token_endpoint, "https://idp/token");
    assert_string_equal(o.idp_client_id, "idp-client");
    assert_string_equal(o.idp_client_secret, "idp-secret");
    assert_string_equal(o.issuer, "https://as.example");
    assert_string_equal(o.redirect_uri, "http://127.0.0.1:9/cb");
    assert_string_equal(o.client_name, "app");
    assert_int_equal(o.timeout_ms, 1234);
    assert_true(o.insecure);
    mcp_oauth_t *oauth = mcp_oauth_new(&o, NULL);
    assert_non_null(oauth);
    mcp_oauth_free(oauth);

    /* A config without an assertion file gives no assertion callback,
     * and the config decides its fields even when it leaves them out. */
    mcp_server_config_t plain = {.oauth = true};
    mcp_server_config_oauth_options(&plain, &o);
    assert_int_equal(o.grant, MCP_OAUTH_AUTHORIZATION_CODE);
    assert_null(o.assertion);
    assert_null(o.assertion_user);
    assert_null(o.client_id);
    assert_null(o.idp_token_endpoint);
    assert_null(o.idp_client_secret);
    assert_false(o.dpop);
    mcp_server_config_oauth_options(NULL, &o);
    mcp_server_config_oauth_options(&c, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_servers),
        cmocka_unit_test(test_document_order_and_other_keys),
        cmocka_unit_test(test_oauth),
        cmocka_unit_test(test_oauth_client_credentials),
        cmocka_unit_test(test_oauth_jwt_bearer),
        cmocka_unit_test(test_oauth_enterprise),
        cmocka_unit_test(test_oauth_options),
        cmocka_unit_test(test_unknown_keys_warned),
        cmocka_unit_test(test_rejected_documents),
        cmocka_unit_test(test_load_files),
        cmocka_unit_test(test_load_one),
        cmocka_unit_test(test_load_limits),
        cmocka_unit_test(test_default_path),
        cmocka_unit_test(test_client_options_and_connect),
    };
    return cmocka_run_group_tests(tests, setup_env, NULL);
}
