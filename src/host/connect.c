/*
 * A server configuration turned into what the client API takes: client
 * options (era, timeout), token source options and a stdio or HTTP target.
 */
#include "host/host_internal.h"
#include "mcp/request.h"

void mcp_server_config_client_options(const mcp_server_config_t *config,
                                      mcp_client_options_t *opts)
{
    if (!config || !opts)
        return;
    if (config->era != MCP_CLIENT_ERA_AUTO)
        opts->era = config->era;
    if (config->timeout_ms != 0)
        opts->timeout_ms = config->timeout_ms;
    /* The extensions' client side: "declare support" in every request. */
    if (config->oauth_grant == MCP_OAUTH_CLIENT_CREDENTIALS && !opts->extensions)
        opts->extensions = "{\"" MCP_EXTENSION_OAUTH_CLIENT_CREDENTIALS "\":{}}";
    if (config->oauth_grant == MCP_OAUTH_ENTERPRISE && !opts->extensions)
        opts->extensions = "{\"" MCP_EXTENSION_ENTERPRISE_MANAGED_AUTHORIZATION "\":{}}";
}

void mcp_server_config_oauth_options(const mcp_server_config_t *config,
                                     mcp_oauth_options_t *opts)
{
    if (!config || !opts)
        return;
    opts->grant = config->oauth_grant;
    opts->client_id = config->oauth_client_id;
    opts->client_secret = config->oauth_client_secret;
    opts->private_key_pem = config->oauth_private_key_pem;
    opts->client_metadata_url = config->oauth_client_metadata_url;
    opts->dpop = config->oauth_dpop;
    opts->assertion = config->oauth_assertion_file ? mcp_oauth_assertion_from_file : NULL;
    opts->assertion_user = config->oauth_assertion_file;
    opts->idp_token_endpoint = config->oauth_idp_token_endpoint;
    opts->idp_client_id = config->oauth_idp_client_id;
    opts->issuer = config->oauth_issuer;
    opts->idp_client_secret = config->oauth_idp_client_secret;
}

int mcp_server_config_connect(const mcp_server_config_t *config, mcp_client_t *client,
                              const mcp_server_connect_options_t *opts, mcp_error_t *err)
{
    if (!config || !client)
        return mcp_error_set(err, MCP_EINVAL, 0, NULL, "config and client are required");
    const mcp_server_connect_options_t none = {0};
    if (!opts)
        opts = &none;
    if (host_config_is_stdio(config))
        return mcp_client_connect_stdio(client, &(mcp_stdio_target_t){
            .argv = (const char *const *)config->argv,
            .env = (const char *const *)config->env,
            .cwd = config->cwd,
            .on_stderr = opts->on_stderr,
            .stderr_user = opts->stderr_user,
        }, err);
    if (host_config_is_http(config))
        return mcp_client_connect_http(client, &(mcp_http_target_t){
            .url = config->url,
            .headers = (const char *const *)config->headers,
            .bearer_token = opts->token ? NULL : config->token,
            .token = opts->token,
            .token_user = opts->token_user,
            .token_proof = opts->token ? opts->token_proof : NULL,
            .connect_timeout_ms = opts->connect_timeout_ms,
            .insecure = opts->insecure,
        }, err);
    return mcp_error_set(err, MCP_EINVAL, 0, NULL,
                         "server \"%s\" needs either a command (stdio) or a URL (HTTP)",
                         config->name ? config->name : "");
}
