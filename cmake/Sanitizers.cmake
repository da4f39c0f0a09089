# ASan + UBSan for the whole tree when MCP_SANITIZE is on (make check).
# UBSan findings abort, so a test that trips one fails.
if(MCP_SANITIZE)
  set(MCP_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
      -fno-omit-frame-pointer)
  add_compile_options(${MCP_SANITIZER_FLAGS})
  add_link_options(-fsanitize=address,undefined)
  string(REPLACE ";" " " MCP_SANITIZER_FLAGS_STR "${MCP_SANITIZER_FLAGS}")
else()
  set(MCP_SANITIZER_FLAGS_STR "")
endif()
