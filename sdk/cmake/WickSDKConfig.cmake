# find_package(WickSDK) for third-party plugin authors: gives Wick::SDK and wick_add_plugin().
include(${CMAKE_CURRENT_LIST_DIR}/WickSDKTargets.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/WickPlugin.cmake)
