# make install: headers, the libraries, their pkg-config files and a CMake
# package, so that `pkg-config --cflags --libs mcp` (or libmcp-server,
# libmcp-client) and `find_package(mcp)` (targets mcp::mcp, mcp::server,
# mcp::client, mcp::mcp_static) all work.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/mcp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS mcp mcp_server mcp_client mcp_static EXPORT mcpTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT mcpTargets NAMESPACE mcp::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mcp)

configure_package_config_file(cmake/mcpConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/mcpConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mcp)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/mcpConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/mcpConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/mcpConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mcp)

file(RELATIVE_PATH MCP_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
# One template, four files: libmcp.pc and its alias mcp.pc (the whole SDK),
# libmcp-server.pc and libmcp-client.pc (one side each).
function(mcp_pkgconfig file name lib what requires)
  set(MCP_PC_NAME ${name})
  set(MCP_PC_LIB ${lib})
  set(MCP_PC_WHAT "${what}")
  set(MCP_PC_REQUIRES "${requires}")
  configure_file(cmake/libmcp.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${file} @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${file}
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
# libmicrohttpd and libcurl are loaded at run time (src/lazy_library.h):
# a static link needs neither.
mcp_pkgconfig(libmcp.pc libmcp mcp "" "nettle")
mcp_pkgconfig(mcp.pc libmcp mcp "" "nettle")
mcp_pkgconfig(libmcp-server.pc libmcp-server mcp-server ": the server side" "nettle")
mcp_pkgconfig(libmcp-client.pc libmcp-client mcp-client ": the client side" "")
