# mcp_soname(<var> <pkg-config prefix> <library name>)
#
# Sets <var> to the soname ("libcurl.so.4") of a library found by
# pkg_check_modules, read from its ELF dynamic section. The HTTP
# transports dlopen() their library by this name (src/lazy_library.h), so
# at run time they get the ABI the build compiled against.
function(mcp_soname var prefix name)
  set(file "")
  foreach(lib IN LISTS ${prefix}_LINK_LIBRARIES)
    if(lib MATCHES "/lib${name}\\.so$")
      set(file "${lib}")
    endif()
  endforeach()
  if(NOT file)
    message(FATAL_ERROR "lib${name}.so not found among ${${prefix}_LINK_LIBRARIES}")
  endif()
  execute_process(COMMAND ${CMAKE_OBJDUMP} -p "${file}"
    OUTPUT_VARIABLE dump RESULT_VARIABLE failed)
  if(failed OR NOT dump MATCHES "SONAME[ \t]+([^ \t\r\n]+)")
    message(FATAL_ERROR "cannot read the soname of ${file} with ${CMAKE_OBJDUMP}")
  endif()
  set(${var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  message(STATUS "lib${name} is loaded on first use as ${CMAKE_MATCH_1}")
endfunction()
