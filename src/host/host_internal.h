/*
 * Internals of the host (include/mcp/host.h), shared by the files of
 * src/host. The host is built on the public client API only.
 *
 *   config.c      mcpServers documents: parsing, copying, clearing
 *   expand.c      ${VAR} and ${VAR:-default} in configuration strings
 *   connect.c     a configuration turned into client options and a connection
 *   host.c        the host object: servers, connecting, state, clients
 *   supervise.c   one thread per server: connect, watch, refresh, reconnect
 *   conn.c        one connection: a client with the host's callbacks
 *   views.c       each server's lists, decorated, and the aggregated views
 *   route.c       calls by aggregated name (and skill files, by their entry)
 *
 * Threads: each server has a supervisor thread (started by
 * mcp_host_connect) that owns its connection attempts: it creates the
 * client, connects, opens the listen subscription, fetches the lists and
 * publishes them; then it waits for what the connection reports (a list
 * changed, the connection ended, a call failed on the transport) and acts
 * on it; when the connection is lost it retires it and reconnects after
 * the backoff. User calls run on the caller's thread on the connection the
 * server has published, holding a reference on it. A retired connection
 * whose last reference such a call (or a client's release) drops is freed
 * by the host's reaper thread, started when first needed: the thread that
 * dropped it may be running one of that client's callbacks (a callback
 * may call the host), and freeing a client waits for its callbacks.
 *
 * Locking: one mutex, host->lock, guards the server list, every server's
 * state, lists and published connection, and every connection's reference
 * count and pending events. It is held only for short bookkeeping: never
 * across a client call, a user callback or a thread join.
 */
#ifndef MCP_HOST_INTERNAL_H
#define MCP_HOST_INTERNAL_H

#include <pthread.h>

#include "mcp/host.h"

typedef struct host_server host_server_t;
typedef struct host_conn host_conn_t;

/* ------------------------------------------------------------------------
 * Configurations (config.c, expand.c)
 * ------------------------------------------------------------------------ */

/* A deep copy of `from` into *to (zeroed first). MCP_ENOMEM leaves *to
 * empty. */
int host_config_copy(mcp_server_config_t *to, const mcp_server_config_t *from);

/* Does the config describe exactly one transport (a command, or a URL)? */
bool host_config_is_stdio(const mcp_server_config_t *config);
bool host_config_is_http(const mcp_server_config_t *config);

/*
 * A malloc'd copy of `in` with ${VAR} replaced by the environment variable
 * VAR and ${VAR:-default} by VAR, or the default when VAR is unset or
 * empty. NULL with a sentence in why[why_size] for an unset variable or a
 * malformed reference (or no memory).
 */
char *host_expand(const char *in, char *why, size_t why_size);

/* ------------------------------------------------------------------------
 * Lists (views.c)
 * ------------------------------------------------------------------------ */

/* The _meta key of every view entry that names its server. */
#define HOST_META_SERVER "io.libmcp/server"

/* The kinds of list a server has, as bits. Skills are resources (their
 * files are read with resources/read), and a server tells of a change to
 * them with a resources list_changed: they are fetched with the
 * resources. */
enum {
    HOST_LIST_TOOLS = 1u << 0,
    HOST_LIST_RESOURCES = 1u << 1,    /* resources, resource templates and skills */
    HOST_LIST_PROMPTS = 1u << 2,
    HOST_LIST_ALL = HOST_LIST_TOOLS | HOST_LIST_RESOURCES | HOST_LIST_PROMPTS
};

/* A server's part of the views: arrays of decorated entries (owned). */
typedef struct host_lists {
    json_t *tools;
    json_t *resources;
    json_t *templates;
    json_t *prompts;
    json_t *skills;
} host_lists_t;

/*
 * Fetches the lists named by `which` (HOST_LIST_*) from the connection's
 * server into *lists, decorated for the views; the others are left as
 * they are. A kind the server's capabilities lack is empty (skills: a
 * server that does not declare the extension, or a legacy one); one the
 * server refuses (MCP_ERPC) is empty and logged, and so are skills the
 * client finds malformed (MCP_EPROTO): one bad skill entry must not cost
 * the server its tools. Any other failure is returned.
 */
int host_lists_fetch(host_conn_t *conn, unsigned which, host_lists_t *lists, mcp_error_t *err);

/* A copy of *from sharing its arrays (references taken). */
host_lists_t host_lists_share(const host_lists_t *from);
bool host_lists_equal(const host_lists_t *a, const host_lists_t *b);
void host_lists_clear(host_lists_t *lists);

/* ------------------------------------------------------------------------
 * Connections (conn.c)
 * ------------------------------------------------------------------------ */

/* What a connection reports to its server's supervisor (bits). */
enum {
    CONN_TOOLS_CHANGED = HOST_LIST_TOOLS,
    CONN_RESOURCES_CHANGED = HOST_LIST_RESOURCES,
    CONN_PROMPTS_CHANGED = HOST_LIST_PROMPTS,
    CONN_CHECK = 1u << 3,     /* a call failed on the transport: is it still there? */
    CONN_RELISTEN = 1u << 4,  /* the listen subscription ended */
    CONN_LOST = 1u << 5       /* the connection ended */
};

struct host_conn {
    mcp_host_t *host;
    char *name;                /* the server's, for callbacks (outlives the server) */
    mcp_client_t *client;
    mcp_subscription_t *sub;   /* list changes; NULL when the server has none */
    /* Guarded by host->lock. */
    host_server_t *server;     /* NULL once retired */
    int refs;                  /* the server's (while current), calls', users' */
    unsigned events;           /* CONN_* not yet handled */
    char lost_why[MCP_ERROR_MESSAGE_MAX];
    host_conn_t *next;         /* in host->conns, then in host->reap */
};

/*
 * Creates a client for server `s` with the host's callbacks, connects it
 * (with the server's earlier verdict, if any, so that a reconnect does not
 * probe again) and opens a listen subscription for the list changes the
 * server's capabilities promise. On success *out holds one reference
 * (the caller's). Runs on the server's supervisor thread.
 */
int host_conn_open(host_server_t *s, host_conn_t **out, mcp_error_t *err);

/* (Re)opens the listen subscription of a connection (the supervisor's
 * thread). A server that offers none is logged, not an error. */
void host_conn_listen(host_conn_t *conn);

/* Reports `events` to the supervisor of the connection's server, unless
 * the connection is retired. Any thread; takes host->lock. */
void host_conn_flag(host_conn_t *conn, unsigned events);

/* Takes a reference; host->lock held. */
void host_conn_ref_locked(host_conn_t *conn);

/* Drops a reference; any thread. After the last one the reaper frees the
 * connection (closing the client), never the calling thread: it may be
 * running one of the client's callbacks. Takes host->lock. */
void host_conn_release(host_conn_t *conn);

/* Drops the supervisor's reference; the last one frees the connection on
 * the calling thread, which must be the server's supervisor (it runs no
 * client callback), so that a server stopped with no call in flight is
 * disconnected when mcp_host_remove_server returns. Takes host->lock. */
void host_conn_release_here(host_conn_t *conn);

/* Request options for a call on `conn`: *opts (may be NULL) with the
 * host's progress callback when the call names none. */
mcp_request_options_t host_conn_request_options(host_conn_t *conn,
                                                const mcp_request_options_t *opts);

/* Frees a connection no one references any more (mcp_host_free). */
void host_conn_free(host_conn_t *conn);

/* ------------------------------------------------------------------------
 * Servers and the host (host.c, supervise.c)
 * ------------------------------------------------------------------------ */

struct host_server {
    mcp_host_t *host;
    mcp_server_config_t config;
    mcp_oauth_t *oauth;          /* config.oauth on a host that signs in; fixed */
    host_server_t *next;         /* in host->servers, in the order added */

    /* Guarded by host->lock. */
    mcp_host_server_state_t state;
    char *error;                 /* why it failed, or NULL */
    bool attempted;              /* its first attempt ended (READY or FAILED), the user told */
    bool stop;                   /* removed, or the host is being freed */
    pthread_cond_t wake;         /* with host->lock: the supervisor waits on it */
    host_conn_t *conn;           /* the published connection, while ready */
    host_lists_t lists;          /* its lists, while ready */
    bool has_thread;
    pthread_t thread;

    /* The supervisor's own. */
    bool has_verdict;
    mcp_client_verdict_t verdict;
};

struct mcp_host {
    /* Fixed after mcp_host_new. */
    mcp_client_options_t client;  /* with the host's copies of its strings */
    char *client_strings[7];      /* those copies, to free */
    mcp_host_callbacks_t cb;
    char *separator;
    size_t separator_len;
    int64_t retry_initial_ms;
    int64_t retry_max_ms;
    char *oauth_redirect_uri;     /* a copy; NULL when the host does not sign in */
    mcp_oauth_authorize_fn oauth_authorize;
    void *oauth_authorize_user;

    pthread_mutex_t lock;
    pthread_cond_t attempted;     /* a server finished its first attempt */
    host_server_t *servers;
    host_conn_t *conns;           /* every connection referenced, not yet freed */
    bool connecting;              /* mcp_host_connect was called */
    /* The reaper: frees the connections queued on `reap` (through their
     * `next`), which no one references any more. */
    host_conn_t *reap;
    pthread_cond_t reap_wake;     /* a connection queued, or reaper_stop */
    bool reaper_stop;             /* mcp_host_free: drain the queue and end */
    bool has_reaper;
    pthread_t reaper;
    bool freeing;                 /* mcp_host_free took every connection: it frees them */
};

/* The host's diagnostics, through the client option `log`. */
void host_log(mcp_host_t *h, mcp_log_level_t level, const char *fmt, ...) MCP_PRINTF(3, 4);

/* The server called `name` (`len` bytes), or NULL; host->lock held. */
host_server_t *host_find_locked(mcp_host_t *h, const char *name, size_t len);

/* The supervisor thread of a server (supervise.c). */
void *host_supervise(void *server);

#endif /* MCP_HOST_INTERNAL_H */
