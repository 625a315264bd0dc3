# wick_add_plugin(NAME <name> SOURCES <files...> [DEVICE_KINDS <kinds...>] [DESCRIPTION <text>]
#                 [OUTPUT_DIR <dir>] [NO_INSTALL] [FIRST_PARTY])
#
# Builds libwick-<name>.so as a MODULE with hidden visibility and writes its manifest
# <name>.wick-plugin.toml beside it. The Wick host finds plugins through these manifests.
# Install rules (the library and manifest into ${WICK_PLUGIN_INSTALL_DIR}) are added when that
# variable is set, unless NO_INSTALL (test fixtures). FIRST_PARTY is for the plugins that ship
# with Wick: the manifest says `first_party = true`, which makes a CPU plugin the default fallback.
if(NOT DEFINED WICK_SDK_ABI_MAJOR)
  set(WICK_SDK_ABI_MAJOR 1)
endif()

function(wick_add_plugin)
  cmake_parse_arguments(P "NO_INSTALL;FIRST_PARTY" "NAME;DESCRIPTION;OUTPUT_DIR" "SOURCES;DEVICE_KINDS" ${ARGN})
  if(NOT P_NAME OR NOT P_SOURCES)
    message(FATAL_ERROR "wick_add_plugin: NAME and SOURCES are required")
  endif()
  if(NOT P_OUTPUT_DIR)
    if(DEFINED WICK_PLUGIN_OUTPUT_DIR)
      set(P_OUTPUT_DIR ${WICK_PLUGIN_OUTPUT_DIR})
    else()
      set(P_OUTPUT_DIR ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()
  if(NOT P_DEVICE_KINDS)
    set(P_DEVICE_KINDS other)
  endif()
  set(target wick-${P_NAME})
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE Wick::SDK)
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  set(kinds "")
  foreach(k IN LISTS P_DEVICE_KINDS)
    if(kinds)
      string(APPEND kinds ", ")
    endif()
    string(APPEND kinds "\"${k}\"")
  endforeach()
  set(manifest "# Wick plugin manifest, written by wick_add_plugin().\n")
  string(APPEND manifest "name = \"${P_NAME}\"\n")
  string(APPEND manifest "library = \"libwick-${P_NAME}.so\"\n")
  string(APPEND manifest "abi_major = ${WICK_SDK_ABI_MAJOR}\n")
  string(APPEND manifest "device_kinds = [${kinds}]\n")
  if(P_DESCRIPTION)
    string(APPEND manifest "description = \"${P_DESCRIPTION}\"\n")
  endif()
  if(P_FIRST_PARTY)
    string(APPEND manifest "first_party = true\n")
  endif()
  file(GENERATE OUTPUT ${P_OUTPUT_DIR}/${P_NAME}.wick-plugin.toml CONTENT "${manifest}")
  if(DEFINED WICK_PLUGIN_INSTALL_DIR AND NOT P_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${WICK_PLUGIN_INSTALL_DIR})
    install(FILES ${P_OUTPUT_DIR}/${P_NAME}.wick-plugin.toml DESTINATION ${WICK_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
