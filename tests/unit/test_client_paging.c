/*
 * The client's list-everything calls (mcp_client_list_*_all) against a
 * scripted server: they follow nextCursor to the end (an empty string is
 * a cursor like any other), and they stop, with MCP_EPROTO, at a server
 * that leads them in a circle or sends a page without its list, instead
 * of asking forever; a cursor the server no longer takes restarts the walk
 * once, from a first page fetched anew. Also the arguments the call
 * helpers refuse before anything is sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client/client_internal.h"
#include "client_fake_transport.h"
#include "mcp/mcp.h"

/* What the scripted server answers to a list request: for each cursor it
 * may be asked (NULL: the first page), the page. */
typedef struct script {
    const char *method;
    struct {
        const char *cursor; /* NULL: no cursor in the request */
        const char *page;   /* the result, as JSON text */
    } pages[4];
} script_t;

static json_t *serve(void *user, fake_transport_t *ft, const json_t *req)
{
    (void)ft;
    const script_t *s = user;
    const char *method = fake_method(req);
    if (strcmp(method, "server/discover") == 0)
        return fake_result(req, fake_discover_result());
    if (!s || strcmp(method, s->method) != 0)
        return fake_error(req, MCP_METHOD_NOT_FOUND, "Method not found", NULL);
    const char *cursor = json_string_value(json_object_get(fake_params(req), "cursor"));
    for (size_t i = 0; i < 4 && s->pages[i].page; i++) {
        const char *want = s->pages[i].cursor;
        if ((!want && !cursor) || (want && cursor && strcmp(want, cursor) == 0))
            return fake_result(req, json_loads(s->pages[i].page, 0, NULL));
    }
    return fake_error(req, MCP_INVALID_PARAMS, "Invalid cursor", NULL);
}

typedef struct fixture {
    mcp_client_t *c;
    fake_transport_t *ft;
} fixture_t;

static void start(fixture_t *f, const script_t *script)
{
    f->c = mcp_client_new(&(mcp_client_options_t){.name = "pager", .version = "1"}, NULL);
    assert_non_null(f->c);
    f->ft = fake_transport_connect(f->c, serve, (void *)script);
    assert_non_null(f->ft);
}

static void stop(fixture_t *f)
{
    mcp_client_free(f->c);
}

static void test_all_pages_followed(void **state)
{
    (void)state;
    static const script_t script = {
        "tools/list",
        {{NULL, "{\"tools\":[{\"name\":\"a\",\"inputSchema\":{\"type\":\"object\"}}],"
                "\"nextCursor\":\"p2\"}"},
         {"p2", "{\"tools\":[{\"name\":\"b\",\"inputSchema\":{\"type\":\"object\"}}],"
                "\"nextCursor\":\"\"}"},
         {"", "{\"tools\":[{\"name\":\"c\",\"inputSchema\":{\"type\":\"object\"}}]}"}},
    };
    fixture_t f;
    start(&f, &script);
    json_t *tools = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_tools_all(f.c, NULL, &tools, &err), MCP_OK);
    assert_int_equal(json_array_size(tools), 3);
    const char *names[] = {"a", "b", "c"};
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(tools, i), "name")), names[i]);
    json_decref(tools);
    /* One request a page, the cursors sent as received. */
    json_t *reqs = fake_requests_of(f.ft, "tools/list");
    assert_int_equal(json_array_size(reqs), 3);
    assert_null(json_object_get(fake_params(json_array_get(reqs, 0)), "cursor"));
    assert_string_equal(
        json_string_value(json_object_get(fake_params(json_array_get(reqs, 1)), "cursor")), "p2");
    assert_string_equal(
        json_string_value(json_object_get(fake_params(json_array_get(reqs, 2)), "cursor")), "");
    json_decref(reqs);
    stop(&f);
}

typedef int (*list_all_fn)(mcp_client_t *client, const mcp_request_options_t *opts,
                           json_t **items_out, mcp_error_t *err);

/* Walks `script` with `list_all`, which must fail with MCP_EPROTO saying
 * `why`, after `requests` list requests (0: not counted). */
static void expect_walk_refused(const script_t *script, list_all_fn list_all, const char *why,
                                size_t requests)
{
    fixture_t f;
    start(&f, script);
    json_t *items = NULL;
    mcp_error_t err = {0};
    assert_int_equal(list_all(f.c, NULL, &items, &err), MCP_EPROTO);
    assert_non_null(strstr(err.message, why));
    if (requests)
        assert_int_equal(fake_count(f.ft, script->method), requests);
    mcp_error_clear(&err);
    stop(&f);
}

/* A server that hands out a new cursor with every page. */
static json_t *serve_endless(void *user, fake_transport_t *ft, const json_t *req)
{
    (void)user;
    (void)ft;
    if (strcmp(fake_method(req), "server/discover") == 0)
        return fake_result(req, fake_discover_result());
    const char *cursor = json_string_value(json_object_get(fake_params(req), "cursor"));
    long n = cursor ? strtol(cursor, NULL, 10) : 0;
    char next[32];
    snprintf(next, sizeof next, "%ld", n + 1);
    return fake_result(req, json_pack("{s:[], s:s}", "prompts", "nextCursor", next));
}

static void test_endless_cursors_end_the_walk(void **state)
{
    (void)state;
    mcp_client_t *c = mcp_client_new(&(mcp_client_options_t){.name = "pager", .version = "1"},
                                     NULL);
    assert_non_null(c);
    fake_transport_t *ft = fake_transport_connect(c, serve_endless, NULL);
    assert_non_null(ft);
    json_t *items = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_prompts_all(c, NULL, &items, &err), MCP_ELIMIT);
    assert_non_null(strstr(err.message, "still paging after 10000 pages"));
    assert_null(items);
    assert_int_equal(fake_count(ft, "prompts/list"), 10000);
    mcp_error_clear(&err);
    mcp_client_free(c);
}

static void test_circles_and_broken_pages_end_the_walk(void **state)
{
    (void)state;
    static const script_t same_cursor = {
        "prompts/list",
        {{NULL, "{\"prompts\":[],\"nextCursor\":\"again\"}"},
         {"again", "{\"prompts\":[],\"nextCursor\":\"again\"}"}},
    };
    static const script_t circle = {
        "resources/list",
        {{NULL, "{\"resources\":[],\"nextCursor\":\"x\"}"},
         {"x", "{\"resources\":[],\"nextCursor\":\"y\"}"},
         {"y", "{\"resources\":[],\"nextCursor\":\"x\"}"}},
    };
    static const script_t no_list = {
        "resources/templates/list",
        {{NULL, "{\"templates\":[]}"}}, /* the list is resourceTemplates */
    };
    expect_walk_refused(&same_cursor, mcp_client_list_prompts_all,
                        "repeats the cursor \"again\"", 2);
    expect_walk_refused(&circle, mcp_client_list_resources_all, "repeats the cursor \"x\"", 3);
    expect_walk_refused(&no_list, mcp_client_list_resource_templates_all,
                        "no resourceTemplates array", 0);

    /* A failing page fails the walk with the server's error. */
    fixture_t f;
    json_t *items = NULL;
    mcp_error_t err = {0};
    start(&f, NULL);
    assert_int_equal(mcp_client_list_tools_all(f.c, NULL, &items, &err), MCP_ERPC);
    assert_int_equal(err.code, MCP_METHOD_NOT_FOUND);
    mcp_error_clear(&err);
    stop(&f);
}

#define TOOL(name) "{\"name\":\"" name "\",\"inputSchema\":{\"type\":\"object\"}}"
/* A first page kept for a minute, pointing at `cursor`. */
#define FIRST_PAGE(cursor) \
    "{\"tools\":[" TOOL("a") "],\"ttlMs\":60000,\"nextCursor\":\"" cursor "\"}"

/* The cursors of the tools/list requests from the `from`th on ("-": none). */
static void expect_cursors(fake_transport_t *ft, size_t from, const char *const *cursors,
                           size_t n)
{
    json_t *reqs = fake_requests_of(ft, "tools/list");
    assert_int_equal(json_array_size(reqs), from + n);
    for (size_t i = 0; i < n; i++) {
        const char *sent = json_string_value(
            json_object_get(fake_params(json_array_get(reqs, from + i)), "cursor"));
        assert_string_equal(sent ? sent : "-", cursors[i]);
    }
    json_decref(reqs);
}

/* Digest 6: pages are cached one by one, and an invalid cursor (-32602,
 * digest 2.8) means "drop all pages and restart". A first page served
 * from the cache may carry a cursor of a server that was redeployed since:
 * the walk drops the method's pages and starts again from a first page
 * fetched anew, once; a second refusal is the caller's answer. */
static void test_stale_cursor_restarts_the_walk(void **state)
{
    (void)state;
    script_t script = {
        "tools/list",
        {{NULL, FIRST_PAGE("gen1")}, {"gen1", "{\"tools\":[" TOOL("b") "]}"}},
    };
    fixture_t f;
    start(&f, &script);
    json_t *tools = NULL;
    mcp_error_t err = {0};
    assert_int_equal(mcp_client_list_tools_all(f.c, NULL, &tools, &err), MCP_OK);
    assert_int_equal(json_array_size(tools), 2);
    json_decref(tools);
    expect_cursors(f.ft, 0, (const char *const[]){"-", "gen1"}, 2);

    /* Redeployed: the first page (still cached) names a cursor the server
     * refuses now. */
    script.pages[0].page = FIRST_PAGE("gen2");
    script.pages[1].cursor = "gen2";
    script.pages[1].page = "{\"tools\":[" TOOL("b") "," TOOL("c") "]}";
    if (mcp_client_list_tools_all(f.c, NULL, &tools, &err) != MCP_OK)
        fail_msg("the walk after the redeploy: %s", err.message);
    assert_int_equal(json_array_size(tools), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tools, 2), "name")),
                        "c");
    json_decref(tools);
    expect_cursors(f.ft, 2, (const char *const[]){"gen1", "-", "gen2"}, 3);

    /* The first page fetched anew is cached again. */
    assert_int_equal(mcp_client_list_tools_all(f.c, NULL, &tools, &err), MCP_OK);
    json_decref(tools);
    expect_cursors(f.ft, 5, (const char *const[]){"gen2"}, 1);

    /* A server that refuses the cursor of its fresh first page too: one
     * restart, then its error. */
    script.pages[0].page = FIRST_PAGE("gen3");
    script.pages[1].cursor = "gen4";
    assert_int_equal(mcp_client_list_tools_all(f.c, NULL, &tools, &err), MCP_ERPC);
    assert_int_equal(err.code, MCP_INVALID_PARAMS);
    assert_null(tools);
    expect_cursors(f.ft, 6, (const char *const[]){"gen2", "-", "gen3"}, 3);
    mcp_error_clear(&err);
    stop(&f);
}

static void test_bad_arguments_sent_nowhere(void **state)
{
    (void)state;
    fixture_t f;
    start(&f, NULL);
    json_t *r = NULL;
    mcp_error_t err = {0};
    json_t *list = json_array();
    assert_int_equal(mcp_client_call_tool(f.c, NULL, NULL, NULL, &r, &err), MCP_EINVAL);
    mcp_error_clear(&err);
    assert_int_equal(mcp_client_call_tool(f.c, "t", list, NULL, &r, &err), MCP_EINVAL);
    assert_non_null(strstr(err.message, "object"));
    mcp_error_clear(&err);
    assert_int_equal(mcp_client_get_prompt(f.c, NULL, NULL, NULL, &r, &err), MCP_EINVAL);
    mcp_error_clear(&err);
    assert_int_equal(mcp_client_call_tool(f.c, "\xff\xfe", NULL, NULL, &r, &err), MCP_EINVAL);
    mcp_error_clear(&err);
    assert_int_equal(mcp_client_read_resource(f.c, NULL, NULL, &r, &err), MCP_EINVAL);
    mcp_error_clear(&err);
    json_t *ref = json_pack("{s:s, s:s}", "type", "ref/prompt", "name", "p");
    assert_int_equal(mcp_client_complete(f.c, ref, "arg", NULL, NULL, NULL, &r, &err),
                     MCP_EINVAL);
    mcp_error_clear(&err);
    assert_int_equal(mcp_client_complete(f.c, list, "arg", "v", NULL, NULL, &r, &err),
                     MCP_EINVAL);
    mcp_error_clear(&err);
    assert_int_equal(mcp_client_complete(f.c, ref, "arg", "v", list, NULL, &r, &err),
                     MCP_EINVAL);
    mcp_error_clear(&err);
    assert_int_equal(mcp_client_request(f.c, "x/y", json_array(), NULL, &r, &err), MCP_EINVAL);
    mcp_error_clear(&err);
    assert_null(r);
    json_decref(ref);
    json_decref(list);
    /* Only the probe went out. */
    json_t *reqs = fake_requests(f.ft);
    assert_int_equal(json_array_size(reqs), 1);
    assert_string_equal(fake_method(json_array_get(reqs, 0)), "server/discover");
    json_decref(reqs);
    stop(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_pages_followed),
        cmocka_unit_test(test_circles_and_broken_pages_end_the_walk),
        cmocka_unit_test(test_endless_cursors_end_the_walk),
        cmocka_unit_test(test_stale_cursor_restarts_the_walk),
        cmocka_unit_test(test_bad_arguments_sent_nowhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
