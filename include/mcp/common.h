/*
 * libmcp: conventions shared by every part of the API.
 *
 *   - Functions that can fail return int: 0 on success, a negative MCP_E*
 *     code on failure. Many take an optional mcp_error_t * that receives the
 *     JSON-RPC shape of the failure (code, message, data).
 *   - json_t * parameters are borrowed unless the parameter name ends in
 *     "_new" or the comment says "steals": then the function takes the
 *     reference, even on failure. Returned json_t * are new references unless
 *     the comment says "borrowed".
 *   - The library never prints and never aborts on bad input.
 *
 * Thread safety: every function in this header may be called from any
 * thread. mcp_strerror() and mcp_lib_version() return static strings. The
 * mcp_error_* functions touch only the mcp_error_t values they are given;
 * use each of those from one thread at a time.
 */
#ifndef MCP_COMMON_H
#define MCP_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a symbol exported from the shared library; everything else is hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define MCP_API __attribute__((visibility("default")))
#define MCP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define MCP_API
#define MCP_PRINTF(fmt, args)
#endif

#define MCP_LIB_VERSION_MAJOR 0
#define MCP_LIB_VERSION_MINOR 1
#define MCP_LIB_VERSION_PATCH 0
#define MCP_LIB_VERSION "0.1.0"

/* Return codes. 0 is success; every failure is negative. */
enum {
    MCP_OK = 0,
    MCP_EINVAL = -1,       /* an argument (or peer input) is malformed */
    MCP_ENOMEM = -2,       /* allocation failed */
    MCP_EPROTO = -3,       /* the peer broke the protocol */
    MCP_ERPC = -4,         /* the peer answered with a JSON-RPC error (see mcp_error_t) */
    MCP_EIO = -5,          /* I/O or network failure */
    MCP_ETIMEDOUT = -6,    /* a deadline passed */
    MCP_ECANCELED = -7,    /* the operation was cancelled */
    MCP_ECLOSED = -8,      /* the connection or object is closed */
    MCP_ENOTFOUND = -9,    /* no such item */
    MCP_EEXIST = -10,      /* the item already exists */
    MCP_EUNSUPPORTED = -11,/* not supported by this build, peer or era */
    MCP_EAUTH = -12,       /* authorization required or refused */
    MCP_ELIMIT = -13,      /* a configured limit was exceeded */
    MCP_ESTATE = -14       /* the call is not valid in the current state */
};

/* A short, static, English description of an MCP_E* code. Never NULL. */
MCP_API const char *mcp_strerror(int rc);

/* The library's version string, e.g. "0.1.0". */
MCP_API const char *mcp_lib_version(void);

/*
 * A failure, described. Zero-initialise it (`mcp_error_t e = {0};`) before
 * first use and release it with mcp_error_clear().
 *
 * `rc` is the MCP_E* code of the failure, the value the function that
 * filled it returned; it is the only way to learn it from a constructor
 * that returns NULL (mcp_server_new(), mcp_client_new() ...). MCP_ERPC
 * means the peer answered with a JSON-RPC error, found in `code`.
 * `code` is that JSON-RPC error code, or 0 when no JSON-RPC error is
 * attached: a local failure (bad options, I/O, memory), which `message`
 * still describes.
 */
#define MCP_ERROR_MESSAGE_MAX 256
typedef struct mcp_error {
    int rc;                              /* MCP_E* code; MCP_OK when unset */
    int code;                            /* JSON-RPC error code, or 0 */
    char message[MCP_ERROR_MESSAGE_MAX]; /* NUL-terminated, may be truncated */
    json_t *data;                        /* owned; NULL when absent */
} mcp_error_t;

/*
 * Fills *err (if err is not NULL): releases any previous data, stores rc,
 * code, the formatted message and data_new (stolen, may be NULL). Returns
 * `rc`, so that `return mcp_error_set(err, MCP_EINVAL, 0, NULL, "bad uri");`
 * reads naturally. Thread safety: touches only *err.
 */
MCP_API int mcp_error_set(mcp_error_t *err, int rc, int code, json_t *data_new,
                          const char *fmt, ...) MCP_PRINTF(5, 6);

/* Same as mcp_error_set with a va_list. */
MCP_API int mcp_error_setv(mcp_error_t *err, int rc, int code, json_t *data_new,
                           const char *fmt, va_list ap) MCP_PRINTF(5, 0);

/* Releases err->data and zeroes *err. NULL-safe. */
MCP_API void mcp_error_clear(mcp_error_t *err);

/* Moves *src into *dst (clearing dst first, then zeroing src). */
MCP_API void mcp_error_move(mcp_error_t *dst, mcp_error_t *src);

/*
 * The JSON-RPC error object {"code","message","data"?} for err (new
 * reference; err->data is shared, not copied), or NULL on allocation
 * failure. `err` must not be NULL. A code of 0 is rendered as -32603
 * (internal error); an empty message, or one that is not UTF-8, as the
 * code's standard name.
 */
MCP_API json_t *mcp_error_to_json(const mcp_error_t *err);

/*
 * Fills *err from a JSON-RPC error object (borrowed). Returns MCP_OK, or
 * MCP_EPROTO when the object is not a valid error (code not an integer,
 * message not a string); then *err still describes the problem.
 */
MCP_API int mcp_error_from_json(mcp_error_t *err, const json_t *error_obj);

/* Severity of a library log line (see mcp_log_fn). */
typedef enum mcp_log_level {
    MCP_LOG_DEBUG = 0,
    MCP_LOG_INFO = 1,
    MCP_LOG_WARNING = 2,
    MCP_LOG_ERROR = 3
} mcp_log_level_t;

/*
 * Where the library's own diagnostics go. Called from any thread; `msg` is
 * valid only during the call. The library never writes to stdout/stderr
 * itself: pass mcp_log_stderr to get lines on stderr.
 */
typedef void (*mcp_log_fn)(void *user, mcp_log_level_t level, const char *msg);

/* A ready-made mcp_log_fn that writes "libmcp: <level>: <msg>\n" to stderr. */
MCP_API void mcp_log_stderr(void *user, mcp_log_level_t level, const char *msg);

#ifdef __cplusplus
}
#endif
#endif /* MCP_COMMON_H */
