/* Libraries opened on first use: found, not found, or missing a function. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lazy_library.h"
#include "mcp/common.h"

/* libm is always there. */
#define LIBM "libm.so.6"

static void test_functions_come_from_the_library(void **state)
{
    (void)state;
    double (*cosine)(double) = NULL, (*square_root)(double) = NULL;
    const mcp_lazy_symbol_t symbols[] = {{"cos", &cosine}, {"sqrt", &square_root}};
    mcp_error_t err = {0};
    assert_int_equal(mcp_lazy_open(LIBM, "the test", symbols, 2, &err), MCP_OK);
    assert_non_null(cosine);
    assert_non_null(square_root);
    assert_true(cosine(0.0) == 1.0);
    assert_true(square_root(81.0) == 9.0);
}

static void test_a_missing_library_is_named(void **state)
{
    (void)state;
    double (*cosine)(double) = NULL;
    const mcp_lazy_symbol_t symbols[] = {{"cos", &cosine}};
    mcp_error_t err = {0};
    assert_int_equal(mcp_lazy_open("libmcp-no-such-library.so.9", "the HTTP test", symbols, 1,
                                   &err),
                     MCP_EUNSUPPORTED);
    assert_null(cosine);
    assert_non_null(strstr(err.message, "the HTTP test needs libmcp-no-such-library.so.9"));
    mcp_error_clear(&err);
}

/* A library without one of the functions fills nothing, not even the
 * functions it has: a caller never holds half a table. */
static void test_a_missing_function_fills_nothing(void **state)
{
    (void)state;
    double (*cosine)(double) = NULL, (*missing)(double) = NULL;
    const mcp_lazy_symbol_t symbols[] = {{"cos", &cosine}, {"mcp_no_such_function", &missing}};
    mcp_error_t err = {0};
    assert_int_equal(mcp_lazy_open(LIBM, "the test", symbols, 2, &err), MCP_EUNSUPPORTED);
    assert_null(cosine);
    assert_null(missing);
    assert_non_null(strstr(err.message, "mcp_no_such_function"));
    assert_non_null(strstr(err.message, LIBM));
    mcp_error_clear(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_functions_come_from_the_library),
        cmocka_unit_test(test_a_missing_library_is_named),
        cmocka_unit_test(test_a_missing_function_fills_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
