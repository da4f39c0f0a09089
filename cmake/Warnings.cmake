# Warnings are errors (README, DESIGN.md section 7). The list is what both
# gcc 12 and clang 14 accept.
function(mcp_apply_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic
    -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wold-style-definition
    -Wpointer-arith -Wwrite-strings -Wformat=2 -Wundef
    -Wvla -Wnull-dereference -Wimplicit-fallthrough -Wno-unused-parameter
    -Wno-sign-compare)
  if(MCP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Looser set for test code: cmocka's macros trip some of the strict checks.
function(mcp_apply_test_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter
    -Wno-missing-field-initializers -Wno-sign-compare)
  if(MCP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
