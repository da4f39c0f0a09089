/*
 * The id of a JSON-RPC message too large to keep.
 *
 * A stdio peer drops a line over its message limit: half a message is no
 * message. When that line was the answer to a call, the call would wait
 * for its timeout; when it was a request, its sender would. This scanner
 * reads the line as it goes by, in pieces and in constant memory, and
 * tells the id of a response (a JSON object with a top-level "id", an
 * integer or a string without escapes, and no "method"), so that the call
 * it answers can fail at once, or of a request (the same with a
 * "method"), so that the refusal can name it. It checks the object's structure (brackets, strings, member
 * syntax) but not the values it skips, which no one will read; a
 * malformed or truncated object, a repeated "id", a top-level member
 * name with an escape (it may spell "id"), or anything else tells no id.
 *
 * Pure: no allocation but the id it returns; not thread-safe per scan.
 */
#ifndef MCP_PROTOCOL_ID_SCAN_H
#define MCP_PROTOCOL_ID_SCAN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* The longest string id kept; a longer one tells no id. */
#define MCP_ID_SCAN_MAX_ID 128

typedef struct mcp_id_scan {
    int state;           /* where in the top-level object (id_scan.c) */
    size_t depth;        /* nesting inside a skipped value */
    bool escaped;        /* the byte before was a backslash in a string */
    bool in_string;      /* inside a string of a skipped value */
    char key[8];         /* the member name being read, while it is short */
    size_t key_len;      /* its length (past sizeof key: not one we want) */
    bool key_escaped;    /* it had an escape (not decoded) */
    bool unsure;         /* a top-level name had one: it may be "id" */
    int member;          /* which member's value is being read */
    char id[MCP_ID_SCAN_MAX_ID];
    size_t id_len;
    bool id_string;      /* the id is a string (else an integer) */
    int ids;             /* "id" members seen */
    bool id_usable;      /* the last id is an integer or a plain string */
    bool has_method;
} mcp_id_scan_t;

/* Starts a scan. */
void mcp_id_scan_init(mcp_id_scan_t *s);

/* Reads the next `len` bytes of the line (without its newline). */
void mcp_id_scan_feed(mcp_id_scan_t *s, const char *data, size_t len);

/* After the whole line: the id of the response it was (a new reference:
 * a JSON integer or string), or NULL when it was not a well-formed
 * response with a usable id, or on allocation failure. */
json_t *mcp_id_scan_response_id(const mcp_id_scan_t *s);

/* The same for a request (a top-level "method" member as well): the id a
 * refusal of the request answers, so that the caller's request fails at
 * once. NULL for a notification or anything else. */
json_t *mcp_id_scan_request_id(const mcp_id_scan_t *s);

#endif /* MCP_PROTOCOL_ID_SCAN_H */
