/* Deeply nested JSON texts for tests (nested_json.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nested_json.h"

char *nested_arrays(size_t levels, const char *inner, size_t *len)
{
    size_t inner_len = strlen(inner);
    *len = 2 * levels + inner_len;
    char *text = malloc(*len);
    assert_non_null(text);
    memset(text, '[', levels);
    memcpy(text + levels, inner, inner_len);
    memset(text + levels + inner_len, ']', levels);
    return text;
}
