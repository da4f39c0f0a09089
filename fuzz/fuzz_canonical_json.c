/*
 * Canonical JSON over arbitrary JSON: the output parses, and canonicalising
 * it again changes nothing. The first 8 bytes, read as a double, also feed
 * the number formatter, whose output must read back as the same double.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/canonical_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_number(const uint8_t *data, size_t size)
{
    double v;
    char buf[32];
    if (size < sizeof v)
        return;
    memcpy(&v, data, sizeof v);
    int n = mcp_format_es_number(v, buf, sizeof buf);
    if (!isfinite(v)) {
        if (n != -1)
            abort();
        return;
    }
    if (n <= 0 || (size_t)n != strlen(buf) || strtod(buf, NULL) != v)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_number(data, size);

    json_t *value = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!value)
        return 0;
    size_t len;
    char *canonical = mcp_json_canonical(value, &len);
    if (!canonical)
        abort(); /* every parsed value has a canonical form */

    /* Integers became doubles, and a double may print as an integer too
     * large for json_int_t: read the output back with every number a real. */
    json_t *again = json_loadb(canonical, len,
                               JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
    if (!again)
        abort();
    size_t len2;
    char *twice = mcp_json_canonical(again, &len2);
    if (!twice || len2 != len || memcmp(twice, canonical, len) != 0)
        abort();

    free(twice);
    json_decref(again);
    free(canonical);
    json_decref(value);
    return 0;
}
