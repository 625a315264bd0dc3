// `wick plugin check PATH|NAME` — a plugin vendor's one command: every stage in a child process
// of this same binary (a plugin that crashes or hangs ends that stage, not the check), each
// stage's findings printed, and a verdict naming the next thing to fix.
//
//   1. probe (`wick plugin probe`): the manifest, the library, the ABI table (versions, size,
//      required slots), initialize within the probe deadline, the devices and their properties;
//   2. the claimed capability matrix: `wick conformance --mode support` (every golden case asked of
//      op_supports, nothing run), into REPORT/support/;
//   3. a smoke set (copy, fill, add on the golden cases) in worker processes, into REPORT/smoke/;
//   4. the conformance suite in worker processes (crashes, hangs and writes outside an output,
//      caught by canary bytes, are per-case results), into REPORT/conformance/.
#include "commands.hpp"

#include <wick/registry.hpp>

#include <nlohmann/json.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace wick::cli {

namespace fs = std::filesystem;

namespace {

fs::path self_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("wick") : p;
}

struct Child {
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  std::string output;  // stdout and stderr together
};

// Runs argv (argv[0] a path) with a time limit, capturing its output.
Child run_child(const std::vector<std::string>& argv, double timeout_s) {
  Child c;
  int pipefd[2];
  if (pipe(pipefd) != 0) {
    c.output = std::string("pipe failed: ") + std::strerror(errno);
    return c;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    dup2(pipefd[1], 2);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipefd[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      c.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{pipefd[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) > 0) {
      const ssize_t n = read(pipefd[0], buf, sizeof buf);
      if (n <= 0) break;  // the child closed its end: it is exiting
      c.output.append(buf, static_cast<size_t>(n));
    }
  }
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) c.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) c.signal = WTERMSIG(status);
  return c;
}

// The global options that found the plugin, for the child commands.
std::vector<std::string> global_args(const ConfigOverrides& o) {
  std::vector<std::string> args;
  if (o.config_file) args.insert(args.end(), {"--config", *o.config_file});
  for (const std::string& p : o.plugin_paths) args.insert(args.end(), {"--plugin-path", p});
  return args;
}

std::vector<nlohmann::json> results_of(const fs::path& report) {
  std::vector<nlohmann::json> rs;
  std::ifstream in(report / "results.jsonl");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rs.push_back(nlohmann::json::parse(line));
  return rs;
}

// One conformance stage: runs it, prints its counts; the first bad case (CRASH, TIMEOUT, FAIL)
// in `problem`, with its message and repro line.
std::map<std::string, int> conformance_stage(const std::vector<std::string>& base,
                                             const std::vector<std::string>& extra,
                                             const fs::path& report, double timeout_s,
                                             std::string& problem) {
  std::vector<std::string> argv = base;
  argv.insert(argv.end(), {"conformance", "--report", report.string(), "--fail-on", "never"});
  argv.insert(argv.end(), extra.begin(), extra.end());
  const Child c = run_child(argv, timeout_s);
  std::map<std::string, int> counts;
  if (c.timed_out || c.signal != 0 || c.exit_code != 0) {
    problem = "the suite itself did not finish (" +
              (c.timed_out ? "over " + std::to_string(static_cast<int>(timeout_s)) + " s"
                           : c.signal ? "signal " + std::to_string(c.signal)
                                      : "exit " + std::to_string(c.exit_code)) +
              "): " + c.output.substr(c.output.size() > 2000 ? c.output.size() - 2000 : 0);
    return counts;
  }
  for (const nlohmann::json& r : results_of(report)) {
    const std::string status = r.value("status", "?");
    ++counts[status];
    if (problem.empty() && (status == "CRASH" || status == "TIMEOUT" || status == "FAIL"))
      problem = status + " " + r.value("case", "?") + ": " + r.value("message", "") +
                "\n    repro: " + r.value("repro", "");
  }
  return counts;
}

std::string counts_text(const std::map<std::string, int>& counts) {
  std::string s;
  for (const auto& [status, n] : counts) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + status;
  return s.empty() ? "no cases" : s;
}

// What a probe state asks the vendor to do next.
std::string next_step(const std::string& state) {
  if (state == "not found") return "put <name>.wick-plugin.toml beside the library, or pass its path";
  if (state == "load failed") return "fix the manifest or the library's loading (the reason names it)";
  if (state == "incompatible") return "rebuild against this Wick's SDK (the ABI versions or table are off)";
  if (state == "failed") return "make initialize succeed (it returned an error, threw, or overran the deadline)";
  if (state == "unavailable") return "initialize found no device: check the hardware or driver it needs";
  return "";
}

}  // namespace

int run_plugin_probe(const ConfigOverrides& overrides, const std::string& target) {
  const Config config = resolve_config(overrides);
  PluginRegistry registry(config);
  std::error_code ec;
  PluginInfo info;
  if (fs::exists(target, ec)) {
    info = registry.load(target);
  } else if (auto found = registry.find(target)) {
    info = *found;
  } else {
    info.name = target;
    info.state = PluginState::NotFound;
    std::string dirs;
    for (const auto& [dir, from] : registry.search_directories())
      dirs += (dirs.empty() ? "" : ", ") + dir + " (" + from + ")";
    info.reason = "no file and no plugin of that name in the search path [" + dirs + "]";
  }
  nlohmann::json j{{"name", info.name},       {"state", to_string(info.state)},
                   {"reason", info.reason},   {"version", info.version},
                   {"abi", std::to_string(info.abi_major) + "." + std::to_string(info.abi_minor)},
                   {"manifest", info.manifest_path}, {"library", info.library_path},
                   {"device_kinds", info.device_kinds}};
  j["devices"] = nlohmann::json::array();
  for (const DeviceInfo& d : info.devices)
    j["devices"].push_back({{"name", d.name}, {"description", d.description},
                            {"kind", to_string(d.kind)}, {"memory_bytes", d.memory_bytes},
                            {"capabilities", d.capabilities}});
  std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

int run_plugin_check(const ConfigOverrides& overrides, const PluginCheckArgs& a) {
  const std::string self = self_path().string();
  std::vector<std::string> base = {self};
  const std::vector<std::string> globals = global_args(overrides);
  base.insert(base.end(), globals.begin(), globals.end());
  const fs::path report = fs::absolute(a.report_dir);
  fs::create_directories(report);
  std::cout << "wick plugin check " << a.target << " (reports in " << report.string() << ")\n";

  // 1. probe, in a child: a plugin that crashes or hangs while loading ends only the child.
  std::vector<std::string> probe = base;
  probe.insert(probe.end(), {"plugin", "probe", a.target});
  const Child c = run_child(probe, a.probe_timeout);
  nlohmann::json info;
  std::string verdict;
  if (c.timed_out) {
    verdict = "loading or initializing the plugin hung (over " + std::to_string(static_cast<int>(a.probe_timeout)) +
              " s): make initialize return (and quickly: the host waits [plugins] probe_timeout_ms)";
  } else if (c.signal != 0) {
    verdict = "loading or initializing the plugin killed the process (signal " + std::to_string(c.signal) + " " +
              strsignal(c.signal) + "): run `wick plugin probe " + a.target + "` under a debugger";
  } else {
    const size_t brace = c.output.rfind("\n{");
    try {
      info = nlohmann::json::parse(c.output.substr(brace == std::string::npos ? 0 : brace + 1));
    } catch (const std::exception&) {
      verdict = "the probe printed no result (exit " + std::to_string(c.exit_code) + "): " + c.output;
    }
  }
  if (verdict.empty()) {
    const std::string state = info.value("state", "?");
    std::cout << "1. probe: " << info.value("name", "?") << " " << info.value("version", "")
              << ", ABI " << info.value("abi", "?") << ": " << state << " — " << info.value("reason", "") << "\n";
    for (const auto& d : info["devices"])
      std::cout << "     " << d.value("name", "") << ": " << d.value("description", "") << " ("
                << d.value("kind", "") << ")\n";
    if (state != "usable") verdict = state + ": " + info.value("reason", "") + "; next: " + next_step(state);
  }
  std::map<std::string, int> full;
  if (verdict.empty()) {
    const std::string backend = a.target;
    std::string problem;
    const auto support = conformance_stage(base, {"--backend", backend, "--mode", "support", "--suite", "golden"},
                                           report / "support", a.stage_timeout, problem);
    std::cout << "2. claimed capability (op_supports on every golden case): " << counts_text(support)
              << " — matrix in " << (report / "support" / "matrix.txt").string() << "\n";
    if (!problem.empty()) verdict = "asking op_supports: " + problem;
    problem.clear();
    const auto smoke = conformance_stage(
        base, {"--backend", backend, "--suite", "golden", "--op", "copy,fill,add", "--timeout", "10"},
        report / "smoke", a.stage_timeout, problem);
    std::cout << "3. smoke (copy, fill, add): " << counts_text(smoke) << "\n";
    if (!problem.empty()) verdict = "the smoke set: " + problem;
    if (verdict.empty()) {
      std::vector<std::string> extra = {"--backend", backend, "--suite", a.suite, "--jobs",
                                        std::to_string(a.jobs), "--timeout",
                                        std::to_string(a.case_timeout)};
      full = conformance_stage(base, extra, report / "conformance", a.stage_timeout, problem);
      std::cout << "4. conformance (" << a.suite << "): " << counts_text(full) << "\n";
      if (!problem.empty()) verdict = "the conformance suite: " + problem;
    }
  }
  if (!verdict.empty()) {
    std::cout << "\nVERDICT: FAIL — " << verdict << "\n";
    return 1;
  }
  std::cout << "\nVERDICT: PASS — loads, initializes, claims what it runs, and every case it runs "
               "passes (" << full["PASS"] << " passed, " << full["UNSUPPORTED"]
            << " unsupported: the next ops to implement are in " << (report / "conformance" / "matrix.txt").string()
            << ")\n";
  return 0;
}

}  // namespace wick::cli
