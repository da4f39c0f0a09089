/* A shared library opened the first time it is needed (lazy_library.h). */
#include <dlfcn.h>
#include <string.h>

#include "lazy_library.h"

int mcp_lazy_open(const char *soname, const char *feature, const mcp_lazy_symbol_t *symbols,
                  size_t n_symbols, mcp_error_t *err)
{
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                             "%s needs %s, which cannot be loaded: %s", feature, soname,
                             dlerror());
    /* Look everything up before filling anything: a caller never sees a
     * half-filled table. */
    void *found[64];
    if (n_symbols > sizeof found / sizeof found[0]) {
        dlclose(lib);
        return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                             "%s: too many functions to look up in %s", feature, soname);
    }
    for (size_t i = 0; i < n_symbols; i++) {
        dlerror();
        found[i] = dlsym(lib, symbols[i].name);
        if (!found[i]) {
            dlclose(lib);
            return mcp_error_set(err, MCP_EUNSUPPORTED, 0, NULL,
                                 "%s needs %s from %s, which does not have it", feature,
                                 symbols[i].name, soname);
        }
    }
    /* The slots are function pointers: POSIX guarantees a data pointer
     * from dlsym converts to them; copying the bytes says so without a
     * cast ISO C forbids. */
    for (size_t i = 0; i < n_symbols; i++)
        memcpy(symbols[i].slot, &found[i], sizeof found[i]);
    return MCP_OK;
}

int mcp_lazy_once(mcp_lazy_once_t *state, void (*load)(void), mcp_error_t *err)
{
    pthread_once(&state->once, load);
    if (state->rc != MCP_OK && err)
        *err = state->err;
    return state->rc;
}
