/*
 * The id scan of responses too large to keep (protocol/id_scan.h),
 * against jansson:
 *   - fed whole or in two pieces (split where the first byte says), the
 *     scan tells the same id;
 *   - an id it tells is the one jansson reads from the same text, when
 *     jansson reads it (the scan skips values without checking them, so
 *     it may tell an id where jansson sees invalid JSON), and jansson
 *     sees no "method" member;
 *   - when jansson reads a response with an integer id, or a string id
 *     that fits, from a text without escapes, the scan tells that id;
 *   - the same for requests (with a "method" member), whose id the scan
 *     tells apart.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "protocol/id_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    mcp_id_scan_t whole, split;
    mcp_id_scan_init(&whole);
    mcp_id_scan_feed(&whole, text, size);
    size_t at = size ? data[0] % (size + 1) : 0;
    mcp_id_scan_init(&split);
    mcp_id_scan_feed(&split, text, at);
    mcp_id_scan_feed(&split, text + at, size - at);
    json_t *id = mcp_id_scan_response_id(&whole);
    json_t *id_split = mcp_id_scan_response_id(&split);
    if (id ? !id_split || !json_equal(id, id_split) : id_split != NULL)
        abort();
    json_decref(id_split);

    json_t *request_id = mcp_id_scan_request_id(&whole);
    if (id && request_id)
        abort(); /* a message is one or the other */

    json_t *theirs = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
    const json_t *their_id = json_object_get(theirs, "id");
    bool has_method = json_object_get(theirs, "method") != NULL;
    bool response = json_is_object(theirs) && their_id && !has_method;
    bool request = json_is_object(theirs) && their_id && has_method;
    if (id && theirs && (!response || !json_equal(id, their_id)))
        abort();
    if (request_id && theirs && (!request || !json_equal(request_id, their_id)))
        abort();
    bool plain = !memchr(text, '\\', size) && !memchr(text, '\0', size);
    bool fits = json_is_integer(their_id) ||
                (json_is_string(their_id) && json_string_length(their_id) <= MCP_ID_SCAN_MAX_ID);
    if (theirs && response && plain && fits && !id)
        abort();
    if (theirs && request && plain && fits && !request_id)
        abort();
    json_decref(theirs);
    json_decref(id);
    json_decref(request_id);
    return 0;
}
