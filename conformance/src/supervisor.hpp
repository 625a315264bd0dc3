// supervisor.hpp — runs cases on backends through worker processes (posix_spawn), with a per-case
// timeout; a crash or hang costs one case and the next case gets a fresh worker. The supervisor
// itself never loads a plugin or touches a device.
#pragma once

#include "case.hpp"
#include "compare.hpp"
#include "result.hpp"

#include <nlohmann/json.hpp>

#include <csignal>
#include <functional>
#include <string>
#include <vector>

namespace wick::conformance {

struct SupervisorOptions {
  std::string worker;                     // the wick-conformance-worker executable
  std::vector<std::string> worker_args;   // passed to every worker (data, mode, seed, ...)
  double case_timeout_s = 30;
  double startup_timeout_s = 120;         // loading the plugin, PoCL's first compile, ...
  int jobs = 1;                           // workers per backend
  std::string log_file;                   // workers' stdout and stderr go here (appended)
  const Expectations* expectations = nullptr;
  // The one-line command that reruns a case on a backend.
  std::function<std::string(const std::string& backend_spec, const std::string& id)> repro;
  // Called as each result arrives (stream it to disk here).
  std::function<void(const Result&)> on_result;
  // Set (by a signal handler) to end the run early: the workers are stopped and the cases not yet
  // run get no result.
  const volatile std::sig_atomic_t* stop = nullptr;
};

struct BackendRun {
  std::string spec;      // as given: a name or a path
  std::string name;      // the plugin's name (from the worker's READY line)
  nlohmann::json ready;  // the READY payload: device, description, version
  std::string error;     // non-empty when the backend could not be started
};

// Runs `cases` on the backend `spec`. Results go to on_result; the return value says how the
// backend started.
BackendRun run_backend(const SupervisorOptions& options, const std::string& spec,
                       const std::vector<CaseInfo>& cases);

// Starts a worker with --list-backends and returns the usable plugin names.
std::vector<std::string> list_backends(const SupervisorOptions& options);

}  // namespace wick::conformance
