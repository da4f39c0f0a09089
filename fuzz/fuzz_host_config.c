/*
 * Fuzzes mcpServers documents (src/host/config.c) and ${VAR} expansion
 * (src/host/expand.c). Every document is parsed; a parsed one must hold,
 * for each server, a name and exactly one transport, and survive a deep
 * copy. The input, as a string, is also expanded on its own.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/host_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Variables the seeds refer to: one set, one empty. */
    setenv("FUZZ_SET", "value", 0);
    setenv("FUZZ_EMPTY", "", 0);

    mcp_server_configs_t configs;
    mcp_error_t err = {0};
    if (mcp_server_configs_parse((const char *)data, size, &configs, NULL, NULL, &err) == MCP_OK) {
        for (size_t i = 0; i < configs.count; i++) {
            const mcp_server_config_t *c = &configs.items[i];
            if (!c->name || host_config_is_stdio(c) == host_config_is_http(c))
                abort();
            mcp_server_config_t copy;
            if (host_config_copy(&copy, c) == MCP_OK) {
                if (strcmp(copy.name, c->name) != 0)
                    abort();
                mcp_server_config_clear(&copy);
            }
        }
    } else if (configs.count != 0 || configs.items) {
        abort(); /* all or nothing */
    }
    mcp_server_configs_clear(&configs);
    mcp_error_clear(&err);

    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char why[256];
    free(host_expand(text, why, sizeof why));
    free(text);
    return 0;
}
