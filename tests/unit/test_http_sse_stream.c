/* The event stream of the 2024-11-05 HTTP+SSE transport
 * (src/transport/http_sse_stream.h): where the endpoint event may send the
 * client's messages, and what ends the stream. The origin rule matters:
 * a client POSTs its messages, with its credentials, wherever that event
 * says, so a server must not be able to point it at another host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/common.h"
#include "transport/http_sse_stream.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define BASE "http://127.0.0.1:3001/sse"

static int resolve(const char *base, const char *data, char **url)
{
    return http_sse_endpoint_resolve(base, data, strlen(data), url);
}

static void test_endpoint_resolved_against_the_stream(void **state)
{
    (void)state;
    static const struct {
        const char *base, *data, *want;
    } cases[] = {
        /* The common form: a path with the session in the query. */
        {BASE, "/messages?sessionId=abc", "http://127.0.0.1:3001/messages?sessionId=abc"},
        /* Relative to the stream's own path. */
        {"http://127.0.0.1:3001/mcp/sse", "messages", "http://127.0.0.1:3001/mcp/messages"},
        {"http://127.0.0.1:3001/mcp/sse", "../up", "http://127.0.0.1:3001/up"},
        /* Absolute, same origin: scheme and host compared without case,
         * the default port equal to none. */
        {BASE, "http://127.0.0.1:3001/m", "http://127.0.0.1:3001/m"},
        {"http://example.com/sse", "HTTP://EXAMPLE.COM:80/m", "http://EXAMPLE.COM:80/m"},
        {"https://example.com:443/sse", "https://example.com/m", "https://example.com/m"},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        char *url = NULL;
        int rc = resolve(cases[i].base, cases[i].data, &url);
        if (rc != MCP_OK)
            fail_msg("case %zu (%s): %d", i, cases[i].data, rc);
        assert_string_equal(url, cases[i].want);
        free(url);
    }
}

static void test_endpoint_elsewhere_refused(void **state)
{
    (void)state;
    static const char *const refused[] = {
        "http://evil.example/messages",   /* another host */
        "http://127.0.0.1:3002/messages", /* another port */
        "https://127.0.0.1:3001/messages", /* another scheme */
        "//evil.example/messages",        /* another host, scheme-relative */
        "http://127.0.0.1:80/messages",   /* the default port is not 3001 */
        "/messages?a b",                  /* a space */
        "/messages\n",                    /* a line break */
        "/mess\177ages",                  /* a control character (DEL) */
        "",                               /* nothing */
    };
    for (size_t i = 0; i < COUNT(refused); i++) {
        char *url = (char *)"untouched";
        int rc = resolve(BASE, refused[i], &url);
        if (rc != MCP_EPROTO)
            fail_msg("case %zu (%s): %d", i, refused[i], rc);
        assert_null(url);
    }
    /* More than a URL can sensibly be. */
    char *long_ref = malloc(5000);
    assert_non_null(long_ref);
    long_ref[0] = '/';
    memset(long_ref + 1, 'a', 4998);
    long_ref[4999] = '\0';
    char *url = NULL;
    assert_int_equal(resolve(BASE, long_ref, &url), MCP_EPROTO);
    assert_null(url);
    free(long_ref);
}

/* ------------------------------------------------------------------------
 * The stream
 * ------------------------------------------------------------------------ */

typedef struct seen {
    char endpoint[256];
    int endpoints;
    char messages[1024];
    int n_messages;
} seen_t;

static void on_endpoint(void *user, const char *url)
{
    seen_t *s = user;
    snprintf(s->endpoint, sizeof s->endpoint, "%s", url);
    s->endpoints++;
}

static void on_message(void *user, const char *data, size_t len)
{
    seen_t *s = user;
    size_t used = strlen(s->messages);
    snprintf(s->messages + used, sizeof s->messages - used, "%.*s;", (int)len, data);
    s->n_messages++;
}

static int feed(http_sse_stream_t *st, const char *text)
{
    return http_sse_stream_feed(st, text, strlen(text));
}

static void open_stream(http_sse_stream_t *st, seen_t *seen, size_t max_event)
{
    memset(seen, 0, sizeof *seen);
    http_sse_stream_init(st, BASE, max_event,
                         &(http_sse_stream_events_t){on_endpoint, on_message, seen});
}

static void test_stream_delivers_endpoint_then_messages(void **state)
{
    (void)state;
    http_sse_stream_t st;
    seen_t seen;
    open_stream(&st, &seen, 4096);
    /* Byte by byte, as a slow network may deliver it. */
    const char *stream = ": hello\n\nevent: endpoint\ndata: /messages?sessionId=7\n\n"
                         "event: message\ndata: {\"id\":1}\n\n"
                         "data: {\"id\":2}\n\n" /* no type: "message" */
                         "event: message\ndata:\n\n"  /* empty: nothing to deliver */
                         "event: other\ndata: x\n\n"; /* unknown: ignored */
    for (const char *p = stream; *p; p++)
        assert_int_equal(http_sse_stream_feed(&st, p, 1), MCP_OK);
    assert_int_equal(seen.endpoints, 1);
    assert_string_equal(seen.endpoint, "http://127.0.0.1:3001/messages?sessionId=7");
    assert_int_equal(seen.n_messages, 2);
    assert_string_equal(seen.messages, "{\"id\":1};{\"id\":2};");
    http_sse_stream_free(&st);
}

static void test_stream_failures_are_final(void **state)
{
    (void)state;
    http_sse_stream_t st;
    seen_t seen;

    /* A second endpoint event ends the stream; nothing after it counts. */
    open_stream(&st, &seen, 4096);
    assert_int_equal(feed(&st, "event: endpoint\ndata: /a\n\n"), MCP_OK);
    assert_int_equal(feed(&st, "event: endpoint\ndata: /b\n\n"), MCP_EPROTO);
    assert_non_null(strstr(st.why, "second endpoint"));
    assert_int_equal(feed(&st, "event: message\ndata: {}\n\n"), MCP_EPROTO);
    assert_int_equal(seen.endpoints, 1);
    assert_string_equal(seen.endpoint, "http://127.0.0.1:3001/a");
    assert_int_equal(seen.n_messages, 0);
    http_sse_stream_free(&st);

    /* An endpoint on another origin is refused, and not reported. */
    open_stream(&st, &seen, 4096);
    assert_int_equal(feed(&st, "event: endpoint\ndata: http://evil.example/m\n\n"), MCP_EPROTO);
    assert_non_null(strstr(st.why, "origin"));
    assert_int_equal(seen.endpoints, 0);
    http_sse_stream_free(&st);

    /* An event over the limit ends it with MCP_ELIMIT. */
    open_stream(&st, &seen, 64);
    assert_int_equal(feed(&st, "event: endpoint\ndata: /a\n\n"), MCP_OK);
    char big[200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(feed(&st, "event: message\ndata: "), MCP_OK);
    assert_int_equal(feed(&st, big), MCP_ELIMIT);
    assert_non_null(strstr(st.why, "too large"));
    assert_int_equal(feed(&st, "\n\n"), MCP_ELIMIT);
    assert_int_equal(seen.n_messages, 0);
    http_sse_stream_free(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoint_resolved_against_the_stream),
        cmocka_unit_test(test_endpoint_elsewhere_refused),
        cmocka_unit_test(test_stream_delivers_endpoint_then_messages),
        cmocka_unit_test(test_stream_failures_are_final),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
