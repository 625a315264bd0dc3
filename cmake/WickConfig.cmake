# find_package(Wick) for applications using Wick's C++ API: gives Wick::wick (libwick and its
# headers) and, through the WickSDK package beside this one, Wick::SDK. Works against an install
# (<prefix>/lib/cmake/Wick) and against a build tree (-DWick_DIR=<build>/Wick).
include(CMakeFindDependencyMacro)
find_dependency(WickSDK CONFIG PATHS ${CMAKE_CURRENT_LIST_DIR}/../WickSDK NO_DEFAULT_PATH)
include(${CMAKE_CURRENT_LIST_DIR}/WickTargets.cmake)
