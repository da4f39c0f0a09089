# make install: headers, both libraries, libmcp.pc and a CMake package, so
# that `pkg-config --cflags --libs mcp` and `find_package(mcp)` both work.
include(CMakePackageConfigHelpers)

install(DIRECTORY include/mcp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS mcp mcp_static EXPORT mcpTargets
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
configure_file(cmake/libmcp.pc.in ${CMAKE_CURRENT_BINARY_DIR}/libmcp.pc @ONLY)
configure_file(cmake/libmcp.pc.in ${CMAKE_CURRENT_BINARY_DIR}/mcp.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/libmcp.pc ${CMAKE_CURRENT_BINARY_DIR}/mcp.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
