/*
 * curl_api.h - the libcurl functions the HTTP client transports call,
 * loaded on first use (see lazy_library.h for why).
 *
 * Each member has the type of the function it stands for, taken from
 * <curl/curl.h> itself. (libcurl's compile-time checks of curl_easy_setopt
 * arguments are macros, and do not follow the call through the table.)
 */
#ifndef MCP_CURL_API_H
#define MCP_CURL_API_H

#include <curl/curl.h>

#include "mcp/common.h"

typedef struct {
    __typeof__(curl_easy_init) *easy_init;
    __typeof__(curl_easy_cleanup) *easy_cleanup;
    __typeof__(curl_easy_setopt) *easy_setopt;
    __typeof__(curl_easy_getinfo) *easy_getinfo;
    __typeof__(curl_easy_perform) *easy_perform;
    __typeof__(curl_easy_strerror) *easy_strerror;
    __typeof__(curl_easy_pause) *easy_pause;
    __typeof__(curl_multi_init) *multi_init;
    __typeof__(curl_multi_cleanup) *multi_cleanup;
    __typeof__(curl_multi_add_handle) *multi_add_handle;
    __typeof__(curl_multi_remove_handle) *multi_remove_handle;
    __typeof__(curl_multi_perform) *multi_perform;
    __typeof__(curl_multi_poll) *multi_poll;
    __typeof__(curl_multi_wakeup) *multi_wakeup;
    __typeof__(curl_multi_info_read) *multi_info_read;
    __typeof__(curl_multi_strerror) *multi_strerror;
    __typeof__(curl_slist_append) *slist_append;
    __typeof__(curl_slist_free_all) *slist_free_all;
    __typeof__(curl_url) *url;
    __typeof__(curl_url_set) *url_set;
    __typeof__(curl_url_get) *url_get;
    __typeof__(curl_url_cleanup) *url_cleanup;
    __typeof__(curl_url_strerror) *url_strerror;
    __typeof__(curl_free) *free;
} mcp_curl_api_t;

/*
 * Loads libcurl and initialises it (curl_global_init) the first time it is
 * called; MCP_OK, or MCP_EUNSUPPORTED / MCP_EIO with *err set, the same
 * answer every time. Every HTTP client transport calls it before anything
 * else. libcurl is never cleaned up: curl_global_cleanup() is not
 * thread-safe, and the application may use libcurl itself. Thread-safe.
 */
int mcp_curl_load(mcp_error_t *err);

/* The table: valid once mcp_curl_load() returned MCP_OK. */
extern mcp_curl_api_t mcp_curl;

#endif /* MCP_CURL_API_H */
