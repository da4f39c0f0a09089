/* libcurl, loaded on first use (curl_api.h). */
#include "lazy_library.h"
#include "transport/curl_api.h"

/* The soname the build compiled against (CMakeLists.txt reads it from the
 * library's ELF header), so the table matches the headers. */
#ifndef MCP_CURL_SONAME
#error "MCP_CURL_SONAME must name libcurl's soname"
#endif

mcp_curl_api_t mcp_curl;

static mcp_lazy_once_t loaded = MCP_LAZY_ONCE_INIT;

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
        SYMBOL(easy_pause),
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
    loaded.rc = mcp_lazy_open(MCP_CURL_SONAME, "the HTTP client", symbols,
                              sizeof symbols / sizeof symbols[0], &loaded.err);
    if (loaded.rc != MCP_OK)
        return;
    CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK)
        loaded.rc = mcp_error_set(&loaded.err, MCP_EIO, 0, NULL,
                                  "libcurl cannot be initialised: %s", mcp_curl.easy_strerror(rc));
}

int mcp_curl_load(mcp_error_t *err)
{
    return mcp_lazy_once(&loaded, load, err);
}
