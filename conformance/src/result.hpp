// result.hpp — one case's outcome on one backend, as the worker reports it and the reports keep it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace wick::conformance {

// PASS, FAIL, UNSUPPORTED (the plugin declined), CRASH, TIMEOUT, SKIP (with a reason), XFAIL,
// XPASS (expectations file); in --mode support: SUPPORTED or UNSUPPORTED.
struct Result {
  std::string backend;
  std::string id;
  std::string source;  // golden, diff, onnx, grad
  std::string op;
  std::string dtype;
  std::string status;
  std::string message;  // why (failure detail, the plugin's reason, the skip reason)
  double error = 0;
  double threshold = 0;
  std::string worst_index;  // "[i, j]" or empty
  double seconds = 0;
  std::string repro;        // one command that reruns exactly this case on this backend
  nlohmann::json perf;      // --mode perf: time, GB/s, GFLOP/s

  // JSON text that never throws: bytes that are not UTF-8 (from a corrupt file or a folder name)
  // become U+FFFD instead of ending the run.
  static std::string dump(const nlohmann::json& j, int indent = -1) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  nlohmann::json to_json() const {
    nlohmann::json j{{"backend", backend}, {"case", id},       {"source", source},
                     {"op", op},           {"dtype", dtype},   {"status", status},
                     {"message", message}, {"seconds", seconds}};
    if (status == "FAIL" || status == "XFAIL") {
      j["error"] = error;
      j["threshold"] = threshold;
      j["worst_index"] = worst_index;
    }
    if (!repro.empty()) j["repro"] = repro;
    if (!perf.is_null()) j["perf"] = perf;
    return j;
  }
  static Result from_json(const nlohmann::json& j) {
    Result r;
    r.backend = j.value("backend", "");
    r.id = j.value("case", "");
    r.source = j.value("source", "");
    r.op = j.value("op", "");
    r.dtype = j.value("dtype", "");
    r.status = j.value("status", "");
    r.message = j.value("message", "");
    r.seconds = j.value("seconds", 0.0);
    if (j.contains("error") && j["error"].is_number()) r.error = j["error"].get<double>();
    if (j.contains("threshold") && j["threshold"].is_number()) r.threshold = j["threshold"].get<double>();
    r.worst_index = j.value("worst_index", "");
    r.repro = j.value("repro", "");
    if (j.contains("perf")) r.perf = j["perf"];
    return r;
  }
};

}  // namespace wick::conformance
