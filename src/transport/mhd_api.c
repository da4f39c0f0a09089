/* libmicrohttpd, loaded on first use (mhd_api.h). */
#include "lazy_library.h"
#include "transport/mhd_api.h"

/* The soname the build compiled against (CMakeLists.txt reads it from the
 * library's ELF header), so the table matches the headers. */
#ifndef MCP_MHD_SONAME
#error "MCP_MHD_SONAME must name libmicrohttpd's soname"
#endif

static mcp_mhd_api_t api;
static mcp_lazy_once_t loaded = MCP_LAZY_ONCE_INIT;

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
    loaded.rc = mcp_lazy_open(MCP_MHD_SONAME, "the HTTP server", symbols,
                              sizeof symbols / sizeof symbols[0], &loaded.err);
}

const mcp_mhd_api_t *mcp_mhd_api(mcp_error_t *err)
{
    return mcp_lazy_once(&loaded, load, err) == MCP_OK ? &api : NULL;
}
