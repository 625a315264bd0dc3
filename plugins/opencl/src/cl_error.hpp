// cl_error.hpp — the one place OpenCL status codes become wick::sdk::Error.
#pragma once

#include <CL/cl.h>

#include <string>

namespace wick::opencl {

// "CL_OUT_OF_RESOURCES" for -5, "CL_UNKNOWN_ERROR" for a code we do not know.
const char* cl_error_name(cl_int code);

// Throws sdk::Error "<call> failed: <name> (<code>) on <where>" unless code is CL_SUCCESS.
// Allocation failures carry WICK_STATUS_OUT_OF_MEMORY so the host can tell them apart; every
// other code is WICK_STATUS_DEVICE_ERROR. `detail` (e.g. a build log) is appended when non-empty.
void cl_check(cl_int code, const char* call, const std::string& where,
              const std::string& detail = {});

}  // namespace wick::opencl
