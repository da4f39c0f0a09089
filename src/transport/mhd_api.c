/* libmicrohttpd, loaded on first use (mhd_api.h). */
#include <pthread.h>

#include "lazy_library.h"
#include "transport/mhd_api.h"

/* The soname the build compiled against (CMakeLists.txt reads it from the
 * library's ELF header), so the table matches the headers. */
#ifndef MCP_MHD_SONAME
#error "MCP_MHD_SONAME must name libmicrohttpd's soname"
#endif

static mcp_mhd_api_t api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_rc;
static mcp_error_t load_err;

static void load(void)
{
#define SYMBOL(fn) {"MHD_" #fn, &api.fn}
    const mcp_lazy_symbol_t symbols[] = {
        SYMBOL(start_daemon),
        SYMBOL(stop_daemon),
        SYMBOL(get_daemon_info),
        SYMBOL(is_feature_supported),
        SYMBOL(get_connection_values),
        SYMBOL(get_connection_info),
        SYMBOL(suspend_connection),
        SYMBOL(resume_connection),
        SYMBOL(create_response_from_buffer),
        SYMBOL(create_response_from_callback),
        SYMBOL(add_response_header),
        SYMBOL(queue_response),
        SYMBOL(destroy_response),
    };
#undef SYMBOL
    load_rc = mcp_lazy_open(MCP_MHD_SONAME, "the HTTP server", symbols,
                            sizeof symbols / sizeof symbols[0], &load_err);
}

const mcp_mhd_api_t *mcp_mhd_api(mcp_error_t *err)
{
    pthread_once(&once, load);
    if (load_rc != MCP_OK) {
        if (err)
            *err = load_err;
        return NULL;
    }
    return &api;
}
