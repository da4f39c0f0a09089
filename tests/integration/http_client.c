/* The integration tests' HTTP client (see http_client.h). */
#define _GNU_SOURCE
#include "http_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "protocol/sse.h"

typedef struct buffer {
    char *data;
    size_t len;
} buffer_t;

static void buffer_add(buffer_t *b, const char *data, size_t len)
{
    char *grown = realloc(b->data, b->len + len + 1);
    if (!grown)
        abort();
    memcpy(grown + b->len, data, len);
    b->len += len;
    grown[b->len] = '\0';
    b->data = grown;
}

typedef struct transfer {
    const http_request_t *req;
    buffer_t head, body;
    size_t upload_off;
} transfer_t;

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    transfer_t *t = arg;
    size_t len = size * n;
    /* A new status line starts a new header block (after 100 Continue). */
    if (len >= 5 && strncmp(data, "HTTP/", 5) == 0)
        t->head.len = 0;
    buffer_add(&t->head, data, len);
    return len;
}

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
    transfer_t *t = arg;
    size_t len = size * n;
    buffer_add(&t->body, data, len);
    if (t->req->on_body && !t->req->on_body(t->req->user, data, len))
        return 0; /* CURLE_WRITE_ERROR: curl closes the connection */
    return len;
}

static size_t on_upload(char *out, size_t size, size_t n, void *arg)
{
    transfer_t *t = arg;
    size_t total = t->req->body_len ? t->req->body_len : strlen(t->req->body);
    size_t left = total - t->upload_off;
    size_t chunk = size * n < left ? size * n : left;
    if (chunk > 1000)
        chunk = 1000; /* several chunks, so the limit is crossed mid-upload */
    memcpy(out, t->req->body + t->upload_off, chunk);
    t->upload_off += chunk;
    return chunk;
}

void http_client_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void http_call(const http_request_t *req, http_response_t *resp)
{
    memset(resp, 0, sizeof *resp);
    transfer_t t = {.req = req};
    CURL *curl = curl_easy_init();
    if (!curl)
        abort();
    char url[512];
    snprintf(url, sizeof url, "%s%s", req->base, req->path ? req->path : "/mcp");
    struct curl_slist *list = curl_slist_append(NULL, "Expect:");
    for (size_t i = 0; req->headers && req->headers[i]; i++)
        list = curl_slist_append(list, req->headers[i]);
    const char *method = req->method ? req->method : "POST";

    curl_easy_setopt(curl, CURLOPT_URL, url);
    if (req->target)
        curl_easy_setopt(curl, CURLOPT_REQUEST_TARGET, req->target);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, req->timeout_ms ? req->timeout_ms : 20000L);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    if (req->ca_file) {
        curl_easy_setopt(curl, CURLOPT_CAINFO, req->ca_file);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (req->body && req->chunked) {
        list = curl_slist_append(list, "Transfer-Encoding: chunked");
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_upload);
        curl_easy_setopt(curl, CURLOPT_READDATA, &t);
    } else if (req->body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req->body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE,
                         (long)(req->body_len ? req->body_len : strlen(req->body)));
    }
    if (strcmp(method, "POST") != 0 || !req->body)
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);

    resp->curl_code = (int)curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &resp->status);
    curl_slist_free_all(list);
    curl_easy_cleanup(curl);
    resp->head = t.head.data ? t.head.data : strdup("");
    resp->body = t.body.data ? t.body.data : strdup("");
    resp->body_len = t.body.len;
}

char *http_header(const http_response_t *resp, const char *name)
{
    size_t name_len = strlen(name);
    for (const char *line = resp->head; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > name_len && strncasecmp(line, name, name_len) == 0 && line[name_len] == ':') {
            const char *v = line + name_len + 1, *e = line + len;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
                e--;
            return strndup(v, (size_t)(e - v));
        }
        line = end ? end + 1 : line + len;
    }
    return NULL;
}

bool http_header_is(const http_response_t *resp, const char *name, const char *value)
{
    char *v = http_header(resp, name);
    bool same = v && strcmp(v, value) == 0;
    free(v);
    return same;
}

void http_response_free(http_response_t *resp)
{
    free(resp->head);
    free(resp->body);
    memset(resp, 0, sizeof *resp);
}

char *mcp_text(int id, const char *method, const char *params_members, const char *meta_members)
{
    const char *params = params_members && *params_members ? params_members : NULL;
    const char *meta = meta_members && *meta_members ? meta_members : NULL;
    char id_text[32] = "";
    if (id >= 0)
        snprintf(id_text, sizeof id_text, "\"id\":%d,", id);
    size_t cap = 512 + strlen(method) + (params ? strlen(params) : 0) + (meta ? strlen(meta) : 0);
    char *text = malloc(cap);
    if (!text)
        abort();
    snprintf(text, cap,
             "{\"jsonrpc\":\"2.0\",%s\"method\":\"%s\",\"params\":{%s%s\"_meta\":{"
             "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
             "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"test\",\"version\":\"1\"},"
             "\"io.modelcontextprotocol/clientCapabilities\":{}%s%s}}}",
             id_text, method, params ? params : "", params ? "," : "", meta ? "," : "",
             meta ? meta : "");
    return text;
}

static int collect_event(void *user, const mcp_sse_event_t *event)
{
    json_t *out = user;
    if (strcmp(event->type, "message") != 0)
        return -1;
    json_t *msg = json_loadb(event->data, event->data_len, 0, NULL);
    if (!msg)
        return -1;
    json_array_append_new(out, msg);
    return 0;
}

json_t *mcp_messages(const http_response_t *resp)
{
    json_t *out = json_array();
    char *type = http_header(resp, "Content-Type");
    bool stream = type && strcmp(type, "text/event-stream") == 0;
    free(type);
    if (!stream) {
        json_t *msg = json_loadb(resp->body, resp->body_len, 0, NULL);
        if (!msg) {
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out, msg);
        return out;
    }
    mcp_sse_decoder_t dec;
    mcp_sse_decoder_init(&dec, SIZE_MAX, collect_event, out);
    int rc = mcp_sse_decoder_feed(&dec, resp->body, resp->body_len);
    int end = mcp_sse_decoder_finish(&dec);
    mcp_sse_decoder_free(&dec);
    if (rc != 0 || end != 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

mcp_http_options_t http_test_server_options(const mcp_http_options_t *opts)
{
    mcp_http_options_t o = opts ? *opts : (mcp_http_options_t){0};
    const char *engine = getenv("MCP_TEST_HTTP_ENGINE");
    if (engine && strcmp(engine, "libmicrohttpd") == 0)
        o.engine = MCP_HTTP_ENGINE_LIBMICROHTTPD;
    return o;
}
