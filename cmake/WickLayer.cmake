# A layer above the core (nn/, onnx/, ...) is one library with its headers under include/wick/<layer>/.
# wick_export_layer(<target> <Name>) installs both and exports the target as a component of the Wick
# package: find_package(Wick COMPONENTS <layer>) gives Wick::<layer> from an install or the build tree
# (cmake/WickConfig.cmake includes Wick<Name>Targets.cmake), and pkg-config gets wick-<layer>.pc.
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
