# A layer above the core (nn/, onnx/, ...) is one shared library with its headers under
# include/wick/<layer>/, exported as a component of the Wick package: find_package(Wick COMPONENTS
# <layer>) gives Wick::<layer> from an install or the build tree (cmake/WickConfig.cmake includes
# Wick<Name>Targets.cmake), and pkg-config gets wick-<layer>.pc.
#   wick_add_layer(<Name> SOURCES src... [DEPENDS public targets...] [PRIVATE_DEPENDS targets...])
# makes target wick_<layer> (libwick-<layer>.so), alias Wick::<layer>.
function(wick_add_layer Name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;DEPENDS;PRIVATE_DEPENDS")
  string(TOLOWER ${Name} layer)
  set(target wick_${layer})
  add_library(${target} SHARED ${arg_SOURCES})
  add_library(Wick::${layer} ALIAS ${target})
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
                                              $<INSTALL_INTERFACE:include>)
  target_link_libraries(${target} PUBLIC ${arg_DEPENDS} PRIVATE ${arg_PRIVATE_DEPENDS})
  # INSTALL_RPATH $ORIGIN: a layer finds the layers it links beside it (a binary's RUNPATH is not
  # searched for its libraries' own dependencies: the CLI links models, which links nn).
  set_target_properties(${target} PROPERTIES OUTPUT_NAME wick-${layer} EXPORT_NAME ${layer}
                                             VERSION ${PROJECT_VERSION} SOVERSION 0
                                             INSTALL_RPATH "$ORIGIN")
  wick_set_warnings(${target})

  wick_export_layer(${target} ${Name})
endfunction()

# The install and export half of wick_add_layer, for a layer target made by hand.
function(wick_export_layer target Name)
  string(TOLOWER ${Name} layer)
  install(TARGETS ${target} EXPORT Wick${Name}Targets LIBRARY DESTINATION lib)
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION include)
  install(EXPORT Wick${Name}Targets NAMESPACE Wick:: DESTINATION lib/cmake/Wick)
  export(EXPORT Wick${Name}Targets NAMESPACE Wick:: FILE ${CMAKE_BINARY_DIR}/Wick/Wick${Name}Targets.cmake)
  set(WICK_LAYER ${layer})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/wick-layer.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/wick-${layer}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/pkgconfig/wick-${layer}.pc DESTINATION lib/pkgconfig)
endfunction()
