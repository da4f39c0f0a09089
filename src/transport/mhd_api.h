/*
 * mhd_api.h - the libmicrohttpd functions the built-in HTTP server calls,
 * loaded on first use (see lazy_library.h for why).
 *
 * Each member has the type of the function it stands for, taken from
 * <microhttpd.h> itself, so a call through the table is checked like a
 * direct call.
 */
#ifndef MCP_MHD_API_H
#define MCP_MHD_API_H

#include <microhttpd.h>

#include "mcp/common.h"

typedef struct {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_is_feature_supported) *is_feature_supported;
    __typeof__(MHD_get_connection_values) *get_connection_values;
    __typeof__(MHD_get_connection_info) *get_connection_info;
    __typeof__(MHD_suspend_connection) *suspend_connection;
    __typeof__(MHD_resume_connection) *resume_connection;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_create_response_from_callback) *create_response_from_callback;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
} mcp_mhd_api_t;

/* The table, libmicrohttpd loaded on the first call; NULL (and *err set:
 * MCP_EUNSUPPORTED naming the library) when it cannot be loaded. Every
 * later call returns the same answer. Thread-safe. */
const mcp_mhd_api_t *mcp_mhd_api(mcp_error_t *err);

#endif /* MCP_MHD_API_H */
