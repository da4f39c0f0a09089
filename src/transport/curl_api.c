/* libcurl, loaded on first use (curl_api.h). */
#include <pthread.h>

#include "lazy_library.h"
#include "transport/curl_api.h"

/* The soname the build compiled against (CMakeLists.txt reads it from the
 * library's ELF header), so the table matches the headers. */
#ifndef MCP_CURL_SONAME
#error "MCP_CURL_SONAME must name libcurl's soname"
#endif

mcp_curl_api_t mcp_curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static mcp_error_t load_err;

static void load(void)
{
    __typeof__(curl_global_init) *global_init = NULL;
#define SYMBOL(fn) {"curl_" #fn, &mcp_curl.fn}
    const mcp_lazy_symbol_t symbols[] = {
        {"curl_global_init", &global_init},
        SYMBOL(easy_init),
        SYMBOL(easy_cleanup),
        SYMBOL(easy_setopt),
        SYMBOL(easy_getinfo),
        SYMBOL(easy_perform),
        SYMBOL(easy_strerror),
        SYMBOL(multi_init),
        SYMBOL(multi_cleanup),
        SYMBOL(multi_add_handle),
        SYMBOL(multi_remove_handle),
        SYMBOL(multi_perform),
        SYMBOL(multi_poll),
        SYMBOL(multi_wakeup),
        SYMBOL(multi_info_read),
        SYMBOL(multi_strerror),
        SYMBOL(slist_append),
        SYMBOL(slist_free_all),
        SYMBOL(url),
        SYMBOL(url_set),
        SYMBOL(url_get),
        SYMBOL(url_cleanup),
        SYMBOL(url_strerror),
        SYMBOL(free),
    };
#undef SYMBOL
    load_rc = mcp_lazy_open(MCP_CURL_SONAME, "the HTTP client", symbols,
                            sizeof symbols / sizeof symbols[0], &load_err);
    if (load_rc != MCP_OK)
        return;
    CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK)
        load_rc = mcp_error_set(&load_err, MCP_EIO, 0, NULL, "libcurl cannot be initialised: %s",
                                mcp_curl.easy_strerror(rc));
}

int mcp_curl_load(mcp_error_t *err)
{
    pthread_once(&once, load);
    if (load_rc != MCP_OK && err)
        *err = load_err;
    return load_rc;
}
