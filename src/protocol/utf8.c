/* UTF-8 well-formedness; see utf8.h. */
#include "protocol/utf8.h"

#include <stdint.h>
#include <string.h>

static bool is_continuation(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

size_t mcp_utf8_sequence_length(const unsigned char *p, const unsigned char *end)
{
    unsigned char lead = p[0];
    size_t available = (size_t)(end - p);
    /* The second byte's range is narrower after the leads that could
     * otherwise start an overlong form, a surrogate or a code point past
     * U+10FFFF. */
    unsigned char low = 0x80, high = 0xBF;
    size_t length;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0)
            low = 0xA0;
        else if (lead == 0xED)
            high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0)
            low = 0x90;
        else if (lead == 0xF4)
            high = 0x8F;
    } else {
        return 0;
    }
    if (available < length || p[1] < low || p[1] > high)
        return 0;
    for (size_t i = 2; i < length; i++)
        if (!is_continuation(p[i]))
            return 0;
    return length;
}

bool mcp_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        /* Eight ASCII bytes at once: none has its top bit set. (memcpy
         * reads the word whatever its alignment, in one load.) */
        while ((size_t)(end - p) >= sizeof(uint64_t)) {
            uint64_t word;
            memcpy(&word, p, sizeof word);
            if (word & UINT64_C(0x8080808080808080))
                break;
            p += sizeof word;
        }
        if (p == end)
            break;
        if (*p < 0x80) {
            p++;
            continue;
        }
        size_t length = mcp_utf8_sequence_length(p, end);
        if (!length)
            return false;
        p += length;
    }
    return true;
}
