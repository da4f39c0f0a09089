/*
 * The host without any server running: options refused, servers added and
 * removed (names, duplicates, all-or-none loading), states before
 * connecting, and every routing error. Servers that really connect are in
 * tests/integration/host_*.c.
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

#include <cmocka.h>

#include "mcp/host.h"

static int elicit(void *user, const json_t *params, json_t **result_out)
{
    return -1;
}

static void on_log(void *user, const char *level, const char *logger, const json_t *data)
{
}

static void on_closed(void *user, int rc, const char *why)
{
}

static mcp_host_t *new_host(const char *separator)
{
    mcp_error_t err = {0};
    mcp_host_t *h = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "t", .version = "1"}, .separator = separator}, &err);
    if (!h)
        fail_msg("%s", err.message);
    return h;
}

static mcp_server_config_t stdio_config(const char *name)
{
    static char *argv[] = {"/nonexistent/server", NULL};
    return (mcp_server_config_t){.name = (char *)name, .argv = argv};
}

static const char *names(mcp_host_t *h)
{
    static char buf[256];
    json_t *list = mcp_host_servers(h);
    char *text = json_dumps(list, JSON_COMPACT);
    snprintf(buf, sizeof buf, "%s", text);
    free(text);
    json_decref(list);
    return buf;
}

static void test_options_refused(void **state)
{
    static const struct {
        mcp_host_options_t opts;
        const char *message;
    } cases[] = {
        {{.client = {.name = "t"}}, "name and a version"},
        {{.client = {.name = "t", .version = "1", .elicit = elicit}}, "leave those NULL"},
        {{.client = {.name = "t", .version = "1", .on_log = on_log}}, "leave those NULL"},
        {{.client = {.name = "t", .version = "1", .on_closed = on_closed}}, "leave those NULL"},
        {{.client = {.name = "t", .version = "1", .log_level = "chatty"}}, "bad client option"},
        {{.client = {.name = "t", .version = "1", .protocol_version = "1999-01-01"}},
         "not a modern version"},
        {{.client = {.name = "t", .version = "1"}, .callbacks = {.elicit_modes = 8}},
         "bad client option"},
        {{.client = {.name = "t", .version = "1"}, .separator = ""}, "separator"},
        {{.client = {.name = "t", .version = "1"}, .retry_initial_ms = -1}, "negative"},
        {{.client = {.name = "t", .version = "1"}, .retry_max_ms = -1}, "negative"},
        {{.client = {.name = "t", .version = "1"}, .retry_initial_ms = 1000, .retry_max_ms = 10},
         "below retry_initial_ms"},
        {{.client = {.name = "t", .version = "1"}, .retry_initial_ms = 40000},
         "below retry_initial_ms"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mcp_error_t err = {0};
        mcp_host_t *h = mcp_host_new(&cases[i].opts, &err);
        if (h || !strstr(err.message, cases[i].message))
            fail_msg("case %zu: %s", i, h ? "accepted" : err.message);
        mcp_error_clear(&err);
    }
    assert_null(mcp_host_new(NULL, NULL));
    mcp_host_free(NULL);
}

static void test_servers_added_and_removed(void **state)
{
    mcp_host_t *h = new_host(NULL);
    mcp_error_t err = {0};
    mcp_server_config_t a = stdio_config("a");
    mcp_server_config_t web = {.name = "web", .url = "http://127.0.0.1:1/mcp"};
    assert_int_equal(mcp_host_add_server(h, &a, &err), MCP_OK);
    assert_int_equal(mcp_host_add_server(h, &web, &err), MCP_OK);
    assert_string_equal(names(h), "[\"a\",\"web\"]");
    assert_int_equal(mcp_host_add_server(h, &a, &err), MCP_EEXIST);
    assert_non_null(strstr(err.message, "already a server \"a\""));

    /* Refused configs. */
    static char *argv[] = {"x", NULL};
    static const struct {
        mcp_server_config_t config;
        const char *message;
    } bad[] = {
        {{.argv = argv}, "a server needs a name"},
        {{.name = "", .argv = argv}, "a server needs a name"},
        {{.name = "a__b", .argv = argv}, "contains the separator \"__\""},
        {{.name = "__", .argv = argv}, "contains the separator"},
        {{.name = "notes_", .argv = argv}, "ends with \"_\", the beginning of the separator"},
        {{.name = "n"}, "give either a command (stdio) or a URL (HTTP)"},
        {{.name = "n", .argv = argv, .url = "http://h/"}, "give either"},
        {{.name = "n", .argv = argv, .era = (mcp_client_era_t)7}, "no such era"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(mcp_host_add_server(h, &bad[i].config, &err), MCP_EINVAL);
        if (!strstr(err.message, bad[i].message))
            fail_msg("case %zu: %s", i, err.message);
    }
    assert_int_equal(mcp_host_add_server(h, NULL, &err), MCP_EINVAL);
    assert_int_equal(mcp_host_add_server(NULL, &a, &err), MCP_EINVAL);

    /* Before connecting every server is CONNECTING, with no error. */
    mcp_host_server_state_t st = MCP_HOST_FAILED;
    char *why = (char *)"x";
    assert_int_equal(mcp_host_server_state(h, "web", &st, &why), MCP_OK);
    assert_int_equal(st, MCP_HOST_CONNECTING);
    assert_null(why);
    assert_int_equal(mcp_host_server_state(h, "nobody", &st, NULL), MCP_ENOTFOUND);

    assert_int_equal(mcp_host_remove_server(h, "a"), MCP_OK);
    assert_int_equal(mcp_host_remove_server(h, "a"), MCP_ENOTFOUND);
    assert_string_equal(names(h), "[\"web\"]");
    assert_int_equal(mcp_host_add_server(h, &a, &err), MCP_OK); /* the name is free again */
    assert_string_equal(names(h), "[\"web\",\"a\"]");
    mcp_host_free(h);

    /* Another separator: "__" is then an ordinary part of a name. */
    h = new_host(".");
    mcp_server_config_t dotted = stdio_config("a.b"), underscored = stdio_config("a__b");
    assert_int_equal(mcp_host_add_server(h, &dotted, &err), MCP_EINVAL);
    assert_int_equal(mcp_host_add_server(h, &underscored, &err), MCP_OK);
    mcp_server_config_t trailing = stdio_config("notes_"); /* no "." at the split */
    assert_int_equal(mcp_host_add_server(h, &trailing, &err), MCP_OK);
    mcp_host_free(h);
    h = new_host("::");
    mcp_server_config_t colon = stdio_config("a:");
    assert_int_equal(mcp_host_add_server(h, &colon, &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "ends with \":\""));
    mcp_host_free(h);
    mcp_error_clear(&err);
}

/* Collects the library's diagnostics (config warnings among them). */
static void diagnostics(void *user, mcp_log_level_t level, const char *msg)
{
    char *buf = user;
    size_t used = strlen(buf);
    snprintf(buf + used, 1024 - used, "%s\n", msg);
}

static void test_loading_all_or_none(void **state)
{
    char logged[1024] = "";
    mcp_host_t *h = mcp_host_new(&(mcp_host_options_t){
        .client = {.name = "t", .version = "1", .log = diagnostics, .log_user = logged}}, NULL);
    mcp_error_t err = {0};
    const char *two = "{\"mcpServers\": {\"x\": {\"command\": \"x\", \"beta\": 1},"
                      " \"y\": {\"url\": \"http://h/\"}}}";
    assert_int_equal(mcp_host_load_config(h, two, strlen(two), &err), MCP_OK);
    assert_string_equal(names(h), "[\"x\",\"y\"]");
    assert_non_null(strstr(logged, "server \"x\": unknown key \"beta\" ignored"));

    /* One clash, and none of the document is added. */
    const char *clash = "{\"mcpServers\": {\"z\": {\"command\": \"z\"}, \"y\": {\"command\": \"y\"}}}";
    assert_int_equal(mcp_host_load_config(h, clash, strlen(clash), &err), MCP_EEXIST);
    assert_non_null(strstr(err.message, "\"y\""));
    const char *dunder = "{\"mcpServers\": {\"z\": {\"command\": \"z\"}, \"p__q\": {\"command\": \"q\"}}}";
    assert_int_equal(mcp_host_load_config(h, dunder, strlen(dunder), &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "server \"p__q\""));
    const char *broken = "{\"mcpServers\": {\"z\": {\"command\": \"z\"}, \"w\": {\"url\": 3}}}";
    assert_int_equal(mcp_host_load_config(h, broken, strlen(broken), &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "server \"w\": \"url\" must be a string"));
    assert_string_equal(names(h), "[\"x\",\"y\"]");

    /* From a file. */
    char path[] = "/tmp/libmcp-host-XXXXXX";
    int fd = mkstemp(path);
    const char *one = "{\"mcpServers\": {\"f\": {\"command\": \"f\"}}}";
    assert_int_equal(write(fd, one, strlen(one)), (ssize_t)strlen(one));
    close(fd);
    assert_int_equal(mcp_host_load_config_file(h, path, &err), MCP_OK);
    assert_string_equal(names(h), "[\"x\",\"y\",\"f\"]");
    assert_int_equal(mcp_host_load_config_file(h, path, &err), MCP_EEXIST);
    unlink(path);
    assert_int_equal(mcp_host_load_config_file(h, path, &err), MCP_EIO);
    assert_int_equal(mcp_host_load_config(NULL, one, strlen(one), &err), MCP_EINVAL);
    assert_int_equal(mcp_host_load_config_file(NULL, path, &err), MCP_EINVAL);
    mcp_host_free(h);
    mcp_error_clear(&err);
}

static void test_nothing_ready_yet(void **state)
{
    mcp_host_t *h = new_host(NULL);
    mcp_server_config_t a = stdio_config("a");
    assert_int_equal(mcp_host_add_server(h, &a, NULL), MCP_OK);
    json_t *r = (json_t *)1;
    mcp_error_t err = {0};

    /* A server not ready yet, one that does not exist, a name that is not
     * aggregated. */
    assert_int_equal(mcp_host_call_tool(h, "a__echo", NULL, NULL, &r, &err), MCP_ESTATE);
    assert_null(r);
    assert_non_null(strstr(err.message, "server \"a\" is not ready (connecting)"));
    assert_int_equal(mcp_host_call_tool(h, "b__echo", NULL, NULL, &r, &err), MCP_ENOTFOUND);
    assert_int_equal(mcp_host_call_tool(h, "echo", NULL, NULL, &r, &err), MCP_ENOTFOUND);
    assert_non_null(strstr(err.message, "not an aggregated name"));
    assert_int_equal(mcp_host_call_tool(h, "a__", NULL, NULL, &r, &err), MCP_ENOTFOUND);
    assert_int_equal(mcp_host_get_prompt(h, "a__p", NULL, NULL, &r, &err), MCP_ESTATE);
    assert_int_equal(mcp_host_get_prompt(h, "p", NULL, NULL, &r, &err), MCP_ENOTFOUND);
    assert_int_equal(mcp_host_read_resource(h, "a", "x://y", NULL, &r, &err), MCP_ESTATE);
    assert_int_equal(mcp_host_read_resource(h, "b", "x://y", NULL, &r, &err), MCP_ENOTFOUND);
    assert_int_equal(mcp_host_read_resource(h, NULL, "x://y", NULL, &r, &err), MCP_ENOTFOUND);
    char *server = (char *)1, *tool = (char *)1;
    assert_int_equal(mcp_host_resolve_tool(h, "a__echo", &server, &tool), MCP_ENOTFOUND);
    assert_null(server);
    assert_null(tool);
    assert_null(mcp_host_client_acquire(h, "a"));
    mcp_host_client_release(h, NULL);

    /* Bad arguments. */
    assert_int_equal(mcp_host_call_tool(h, NULL, NULL, NULL, &r, &err), MCP_EINVAL);
    assert_int_equal(mcp_host_call_tool(h, "a__echo", NULL, NULL, NULL, &err), MCP_EINVAL);
    assert_int_equal(mcp_host_call_tool(NULL, "a__echo", NULL, NULL, &r, &err), MCP_EINVAL);
    assert_int_equal(mcp_host_read_resource(h, NULL, NULL, NULL, &r, &err), MCP_EINVAL);
    assert_int_equal(mcp_host_get_prompt(h, NULL, NULL, NULL, &r, &err), MCP_EINVAL);
    assert_int_equal(mcp_host_resolve_tool(h, "a__echo", NULL, &tool), MCP_EINVAL);
    assert_int_equal(mcp_host_server_state(h, NULL, NULL, NULL), MCP_EINVAL);
    assert_int_equal(mcp_host_connect(NULL, 0), MCP_EINVAL);
    assert_null(mcp_host_servers(NULL));
    assert_null(mcp_host_tools(NULL));

    /* Empty views. */
    json_t *views[] = {mcp_host_tools(h), mcp_host_resources(h), mcp_host_resource_templates(h),
                       mcp_host_prompts(h)};
    for (size_t i = 0; i < 4; i++) {
        assert_true(json_is_array(views[i]));
        assert_int_equal(json_array_size(views[i]), 0);
        json_decref(views[i]);
    }
    mcp_host_free(h);
    mcp_error_clear(&err);
}

static void test_connect_without_servers(void **state)
{
    mcp_host_t *h = new_host(NULL);
    assert_int_equal(mcp_host_connect(h, -1), 0);
    assert_int_equal(mcp_host_connect(h, 0), 0);
    assert_int_equal(mcp_host_connect(h, 100), 0);
    mcp_host_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_refused),
        cmocka_unit_test(test_servers_added_and_removed),
        cmocka_unit_test(test_loading_all_or_none),
        cmocka_unit_test(test_nothing_ready_yet),
        cmocka_unit_test(test_connect_without_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
