/* The event stream of the HTTP+SSE transport (2024-11-05); see
 * http_sse_stream.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/curl_api.h"
#include "transport/http_sse_stream.h"

static bool same_text(const char *a, const char *b, bool fold)
{
    if (!a || !b)
        return a == b;
    return fold ? strcasecmp(a, b) == 0 : strcmp(a, b) == 0;
}

/* The scheme, host and port of a parsed URL must match the base's. */
static bool same_origin(CURLU *base, CURLU *url)
{
    static const CURLUPart parts[] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT};
    bool same = true;
    for (size_t i = 0; same && i < sizeof parts / sizeof parts[0]; i++) {
        char *a = NULL, *b = NULL;
        unsigned flags = parts[i] == CURLUPART_PORT ? CURLU_DEFAULT_PORT : 0;
        mcp_curl.url_get(base, parts[i], &a, flags);
        mcp_curl.url_get(url, parts[i], &b, flags);
        same = same_text(a, b, parts[i] != CURLUPART_PORT);
        mcp_curl.free(a);
        mcp_curl.free(b);
    }
    return same;
}

int http_sse_endpoint_resolve(const char *base_url, const char *data, size_t len,
                              char **url_out)
{
    *url_out = NULL;
    /* One line of visible text: no NUL, no line breaks, no spaces. */
    if (len == 0 || len > 4096)
        return MCP_EPROTO;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)data[i] <= 0x20 || data[i] == 0x7f)
            return MCP_EPROTO;
    int loaded = mcp_curl_load(NULL); /* libcurl resolves the reference */
    if (loaded != MCP_OK)
        return loaded;
    char *ref = malloc(len + 1);
    CURLU *base = mcp_curl.url(), *url = mcp_curl.url();
    int rc = ref && base && url ? MCP_OK : MCP_ENOMEM;
    if (rc == MCP_OK) {
        memcpy(ref, data, len);
        ref[len] = '\0';
        /* Resolving a reference against the base is what setting it as
         * the URL of a handle that holds the base does. */
        if (mcp_curl.url_set(base, CURLUPART_URL, base_url, 0) != CURLUE_OK ||
            mcp_curl.url_set(url, CURLUPART_URL, base_url, 0) != CURLUE_OK ||
            mcp_curl.url_set(url, CURLUPART_URL, ref, 0) != CURLUE_OK || !same_origin(base, url))
            rc = MCP_EPROTO;
    }
    char *resolved = NULL;
    if (rc == MCP_OK && mcp_curl.url_get(url, CURLUPART_URL, &resolved, 0) != CURLUE_OK)
        rc = MCP_EPROTO;
    if (rc == MCP_OK && !(*url_out = strdup(resolved)))
        rc = MCP_ENOMEM;
    mcp_curl.free(resolved);
    mcp_curl.url_cleanup(base);
    mcp_curl.url_cleanup(url);
    free(ref);
    return rc;
}

static int fail(http_sse_stream_t *s, int rc, const char *why)
{
    if (!s->failure) {
        s->failure = rc;
        snprintf(s->why, sizeof s->why, "%s", why);
    }
    return rc;
}

static int on_event(void *user, const mcp_sse_event_t *ev)
{
    http_sse_stream_t *s = user;
    if (strcmp(ev->type, "endpoint") == 0) {
        if (s->have_endpoint)
            return fail(s, MCP_EPROTO, "the server sent a second endpoint event");
        char *url = NULL;
        int rc = http_sse_endpoint_resolve(s->base_url, ev->data, ev->data_len, &url);
        if (rc != MCP_OK)
            return fail(s, rc, rc == MCP_ENOMEM ? "out of memory"
                                                : "the endpoint event names no URL of the "
                                                  "server's own origin");
        s->have_endpoint = true;
        if (s->ev.on_endpoint)
            s->ev.on_endpoint(s->ev.user, url);
        free(url);
    } else if (strcmp(ev->type, "message") == 0 && ev->data_len > 0 && s->ev.on_message) {
        s->ev.on_message(s->ev.user, ev->data, ev->data_len);
    }
    return MCP_OK;
}

void http_sse_stream_init(http_sse_stream_t *s, const char *base_url, size_t max_event_bytes,
                          const http_sse_stream_events_t *ev)
{
    memset(s, 0, sizeof *s);
    s->base_url = base_url;
    if (ev)
        s->ev = *ev;
    mcp_sse_decoder_init(&s->sse, max_event_bytes, on_event, s);
}

int http_sse_stream_feed(http_sse_stream_t *s, const char *bytes, size_t len)
{
    if (s->failure)
        return s->failure;
    int rc = mcp_sse_decoder_feed(&s->sse, bytes, len);
    if (rc == MCP_ELIMIT)
        return fail(s, rc, "an event of the stream is too large");
    if (rc == MCP_ENOMEM)
        return fail(s, rc, "out of memory");
    return rc;
}

void http_sse_stream_free(http_sse_stream_t *s)
{
    mcp_sse_decoder_free(&s->sse);
}
