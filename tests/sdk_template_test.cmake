# Builds sdk/template against the build tree's SDK and checks that `wick devices` finds it usable.
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${TEMPLATE} -B ${WORK} -G Ninja -DWickSDK_DIR=${WICK_BUILD}/WickSDK
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the template failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the template failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${WICK} --plugin-path ${WORK} --device example devices
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "example +1\\.0\\.0 +1\\.[0-9]+ +usable" OR NOT out MATCHES "Selected device: example:0")
  message(FATAL_ERROR "wick devices did not show the template plugin as usable and selected:\n${out}\n${err}")
endif()
message(STATUS "template plugin built and selected:\n${out}")
# A path means that file, also when the search path holds it: probed, initialized, usable (it was
# "load failed — loaded; not initialized yet", issue 21).
execute_process(COMMAND ${WICK} --plugin-path ${WORK} plugin probe ${WORK}/example.wick-plugin.toml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\"state\":\"usable\"" OR out MATCHES "not initialized")
  message(FATAL_ERROR "wick plugin probe PATH with PATH's directory in the search path:\n${out}\n${err}")
endif()
