# Wick's CMake packages, used out of tree as an application author and a plugin vendor would:
#   1. find_package(Wick) against the build tree (-DWick_DIR=<build>/Wick): the consumer builds
#      and runs; so does the layers' consumer (find_package(Wick COMPONENTS nn onnx): Wick::nn and
#      Wick::onnx), and an unknown component is refused, naming it;
#   2. cmake --install into a temporary prefix: no test fixture among the installed plugins;
#      find_package(Wick) (CMAKE_PREFIX_PATH) and find_package(WickSDK) (the SDK template) work
#      against it (the SDK template and the vendor guide are installed, and the installed
#      template builds), the consumer runs on the installed plugins, an isolated plugin runs through
#      the installed wick-plugin-host, and pkg-config's wick.pc compiles
#      and links the same program (wick-nn.pc and wick-onnx.pc the layers' consumer).
# -DWICK_BUILD=<build> -DSOURCE=<source> -DWORK=<scratch dir>
file(REMOVE_RECURSE ${WORK})
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(consumer ${SOURCE}/tests/package/consumer)
run("configuring the consumer against the build tree"
    ${CMAKE_COMMAND} -S ${consumer} -B ${WORK}/tree -G Ninja -DWick_DIR=${WICK_BUILD}/Wick)
run("building the consumer against the build tree" ${CMAKE_COMMAND} --build ${WORK}/tree)
run("running the consumer built against the build tree" ${WORK}/tree/consumer)
message(STATUS "build tree: ${last_output}")

# The layers above the core, as components of the package.
set(layers ${SOURCE}/tests/package/layers)
function(build_layers_consumer where)
  run("configuring the layers' consumer against ${where}" ${CMAKE_COMMAND} -S ${layers} -B ${WORK}/layers-${where} -G Ninja ${ARGN})
  run("building the layers' consumer against ${where}" ${CMAKE_COMMAND} --build ${WORK}/layers-${where})
  run("running the layers' consumer built against ${where}" ${CMAKE_COMMAND} -E env WICK_PLUGIN_PATH= ${WORK}/layers-${where}/layers-consumer)
  message(STATUS "layers, ${where}: ${last_output}")
endfunction()
build_layers_consumer(tree -DWick_DIR=${WICK_BUILD}/Wick)
file(WRITE ${WORK}/bogus/CMakeLists.txt "cmake_minimum_required(VERSION 3.24)\nproject(B LANGUAGES CXX)\nfind_package(Wick REQUIRED COMPONENTS nn bogus)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${WORK}/bogus -B ${WORK}/bogus/build -DWick_DIR=${WICK_BUILD}/Wick
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "unknown Wick component 'bogus'")
  message(FATAL_ERROR "find_package(Wick COMPONENTS nn bogus) was not refused naming 'bogus' (${rc}):\n${out}\n${err}")
endif()

set(prefix ${WORK}/prefix)
run("installing into ${prefix}" ${CMAKE_COMMAND} --install ${WICK_BUILD} --prefix ${prefix})
file(GLOB installed RELATIVE ${prefix}/lib/wick/plugins ${prefix}/lib/wick/plugins/*)
message(STATUS "installed plugins: ${installed}")
foreach(f IN LISTS installed)
  if(f MATCHES "fixture")
    message(FATAL_ERROR "a test fixture was installed: ${prefix}/lib/wick/plugins/${f}")
  endif()
endforeach()
if(NOT installed MATCHES "cpu-onednn.wick-plugin.toml")
  message(FATAL_ERROR "cpu-onednn was not installed: ${installed}")
endif()

run("configuring the consumer against the install"
    ${CMAKE_COMMAND} -S ${consumer} -B ${WORK}/installed -G Ninja -DCMAKE_PREFIX_PATH=${prefix})
run("building the consumer against the install" ${CMAKE_COMMAND} --build ${WORK}/installed)
run("running the consumer built against the install"
    ${CMAKE_COMMAND} -E env WICK_PLUGIN_PATH= ${WORK}/installed/consumer)
message(STATUS "install: ${last_output}")
build_layers_consumer(install -DCMAKE_PREFIX_PATH=${prefix})

# The plugin host ships too: an isolated plugin runs from the install.
file(WRITE ${WORK}/isolate.toml "[plugins.cpu-onednn]\nisolate = true\n")
run("listing devices with cpu-onednn isolated, from the install"
    ${CMAKE_COMMAND} -E env WICK_PLUGIN_PATH= ${prefix}/bin/wick --config ${WORK}/isolate.toml devices)
if(NOT last_output MATCHES "isolated in a child process")
  message(FATAL_ERROR "cpu-onednn did not run isolated from the install:\n${last_output}")
endif()
run("running the demo on isolated cpu-onednn, from the install"
    ${CMAKE_COMMAND} -E env WICK_PLUGIN_PATH= ${prefix}/bin/wick --config ${WORK}/isolate.toml
    --device cpu-onednn --strict demo)

# A vendor without the source tree: the install holds the template and the guide it follows.
foreach(f share/wick/sdk/template/CMakeLists.txt share/wick/sdk/template/example_plugin.cpp
          share/doc/wick/writing-a-plugin.md share/doc/wick/conformance.md share/doc/wick/ops.md
          share/doc/wick/config.md share/doc/wick/ops/elementwise.md)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install lacks ${f}, which the vendor guide needs")
  endif()
endforeach()
run("configuring the installed SDK template against the installed WickSDK"
    ${CMAKE_COMMAND} -S ${prefix}/share/wick/sdk/template -B ${WORK}/template -G Ninja -DCMAKE_PREFIX_PATH=${prefix})
run("building the SDK template against the installed WickSDK" ${CMAKE_COMMAND} --build ${WORK}/template)
if(NOT EXISTS ${WORK}/template/example.wick-plugin.toml)
  message(FATAL_ERROR "the template built no manifest")
endif()

find_program(PKG_CONFIG pkg-config REQUIRED)
run("pkg-config --cflags --libs wick"
    ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig ${PKG_CONFIG} --cflags --libs wick)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("compiling the consumer with pkg-config's flags"
    c++ -std=c++20 ${consumer}/main.cpp ${flags} -Wl,-rpath,${prefix}/lib -o ${WORK}/pkgconfig-consumer)
run("running the pkg-config consumer" ${WORK}/pkgconfig-consumer)
message(STATUS "pkg-config: ${last_output}")
run("pkg-config --cflags --libs wick-nn wick-onnx"
    ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig ${PKG_CONFIG} --cflags --libs wick-nn wick-onnx)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run("compiling the layers' consumer with pkg-config's flags"
    c++ -std=c++20 ${layers}/main.cpp ${flags} -Wl,-rpath,${prefix}/lib -o ${WORK}/pkgconfig-layers-consumer)
run("running the pkg-config layers' consumer" ${CMAKE_COMMAND} -E env WICK_PLUGIN_PATH= ${WORK}/pkgconfig-layers-consumer)
message(STATUS "pkg-config layers: ${last_output}")
