/*
 * The HTTP server over TLS, with a self-signed certificate made at test
 * time by the openssl command-line tool: a JSON answer and an event stream
 * over https, verified against that certificate; plain http to the TLS
 * port gets no answer. Skipped, saying why, when openssl is missing.
 */
#define _GNU_SOURCE

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "http_client.h"
#include "mcp/mcp.h"
#include "schema_check.h"

#define REVISION "2026-07-28"

typedef struct tls_files {
    char dir[64];
    char cert[128];
    char key[128];
} tls_files_t;

/* Makes a certificate valid for 127.0.0.1 and localhost; false when the
 * openssl tool is missing or fails. */
static bool make_certificate(tls_files_t *t)
{
    if (!MCP_OPENSSL_CLI[0])
        return false;
    snprintf(t->dir, sizeof t->dir, "/tmp/mcp-tls-XXXXXX");
    if (!mkdtemp(t->dir))
        return false;
    snprintf(t->cert, sizeof t->cert, "%s/cert.pem", t->dir);
    snprintf(t->key, sizeof t->key, "%s/key.pem", t->dir);
    char command[1024];
    snprintf(command, sizeof command,
             "'%s' req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost "
             "-keyout '%s' -out '%s' >/dev/null 2>&1",
             MCP_OPENSSL_CLI, t->key, t->cert);
    int status = system(command);
    return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void remove_certificate(tls_files_t *t)
{
    unlink(t->cert);
    unlink(t->key);
    rmdir(t->dir);
}

static int progress(mcp_call_t *call, void *user)
{
    for (int i = 1; i <= 3; i++)
        mcp_call_progress(call, i, 3, NULL);
    return mcp_call_add_text(call, "over tls");
}

static void post(const char *base, const char *ca, const char *method, const char *params,
                 const char *meta, http_response_t *resp)
{
    char method_header[64];
    snprintf(method_header, sizeof method_header, "Mcp-Method: %s", method);
    const char *headers[] = {"Content-Type: application/json",
                             "Accept: application/json, text/event-stream",
                             "MCP-Protocol-Version: 2026-07-28", method_header,
                             params ? "Mcp-Name: progress" : NULL, NULL};
    char *body = mcp_text(1, method, params, meta);
    http_call(&(http_request_t){.base = base, .headers = headers, .body = body, .ca_file = ca},
              resp);
    free(body);
}

static void test_tls(void **state)
{
    tls_files_t files;
    if (!make_certificate(&files)) {
        print_message("SKIPPED: the openssl command-line tool is missing or failed; install it "
                      "(scripts/install-deps.sh) to test TLS\n");
        skip();
    }
    mcp_error_t err = {0};
    mcp_server_t *srv = mcp_server_new(&(mcp_server_options_t){.name = "tls", .version = "1"},
                                       &err);
    assert_int_equal(mcp_server_add_tool(srv, &(mcp_tool_t){
                         .name = "progress", .input_schema = "{\"type\":\"object\"}",
                         .handler = progress}, &err),
                     MCP_OK);
    mcp_http_server_t *http = NULL;
    int rc = mcp_http_server_start(srv, &(mcp_http_options_t){
                                       .tls_cert_file = files.cert, .tls_key_file = files.key},
                                   &http, &err);
    assert_int_equal(rc, MCP_OK);
    unsigned port = mcp_http_server_port(http);
    char https[64], plain[64];
    snprintf(https, sizeof https, "https://127.0.0.1:%u", port);
    snprintf(plain, sizeof plain, "http://127.0.0.1:%u", port);

    http_response_t resp;
    post(https, files.cert, "server/discover", NULL, NULL, &resp);
    assert_int_equal(resp.curl_code, 0);
    assert_int_equal(resp.status, 200);
    json_t *msgs = mcp_messages(&resp);
    assert_non_null(msgs);
    MCP_ASSERT_SCHEMA_VALID(json_array_get(msgs, 0), "server/discover", REVISION);
    json_decref(msgs);
    http_response_free(&resp);

    post(https, files.cert, "tools/call", "\"name\":\"progress\"", "\"progressToken\":7", &resp);
    assert_int_equal(resp.curl_code, 0);
    assert_int_equal(resp.status, 200);
    assert_true(http_header_is(&resp, "Content-Type", "text/event-stream"));
    msgs = mcp_messages(&resp);
    assert_non_null(msgs);
    assert_int_equal(json_array_size(msgs), 4);
    size_t i;
    json_t *msg;
    json_array_foreach(msgs, i, msg)
        MCP_ASSERT_SCHEMA_VALID(msg, i == 3 ? "tools/call" : NULL, REVISION);
    json_decref(msgs);
    http_response_free(&resp);

    /* Plain HTTP to the TLS port is not answered as HTTP. */
    post(plain, NULL, "server/discover", NULL, NULL, &resp);
    assert_int_not_equal(resp.status, 200);
    http_response_free(&resp);

    mcp_http_server_stop(http);
    mcp_server_free(srv);
    remove_certificate(&files);
}

int main(void)
{
    http_client_init();
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tls)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
