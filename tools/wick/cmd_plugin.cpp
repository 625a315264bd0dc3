// `wick plugin check PATH|NAME` — a plugin vendor's one command: every stage in a child process
// of this same binary (a plugin that crashes or hangs ends that stage, not the check), each
// stage's findings printed, and a verdict naming the next thing to fix.
//
//   1. probe (`wick plugin probe`): the manifest, the library, the ABI table (versions, size,
//      required slots), initialize within the probe deadline, the devices and their properties
//      (checked against wick_plugin.h and the manifest);
//   2. the claimed capability matrix: `wick conformance --mode support` (every golden case asked of
//      op_supports, nothing run), into REPORT/support/;
//   3. buffers (`wick plugin buffers`): writes read back as written, at offsets, between canaries —
//      before any case, so that a broken write is reported once, as itself;
//   4. a smoke set (copy, fill, add on the golden cases) in worker processes, into REPORT/smoke/;
//   5. leaks (`wick plugin leaks`): the smoke set again in one process, the memory before and after;
//   6. the conformance suite in worker processes (crashes, hangs and writes outside an output,
//      caught by canary bytes, are per-case results), into REPORT/conformance/.
#include "commands.hpp"

#include <wick/sdk/op_table.hpp>

#include <nlohmann/json.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
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

// Runs argv (argv[0] a path) with a time limit, capturing its output. What this process printed
// so far is flushed first: should the stage hang and the check be killed, a log keeps it.
Child run_child(const std::vector<std::string>& argv, double timeout_s) {
  std::cout.flush();
  std::fflush(stdout);
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
  if (o.config_file) args.insert(args.end(), {"--config", fs::absolute(*o.config_file).string()});
  for (const std::string& p : o.plugin_paths) args.insert(args.end(), {"--plugin-path", fs::absolute(p).string()});
  return args;
}

// argv as one line a shell runs as printed.
std::string command_text(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) {
    if (!line.empty()) line += ' ';
    line += shell_quote(a);
  }
  return line;
}

// What a child that ended badly did, in words: "over 30 s", "signal 11 (Segmentation fault)".
std::string how_it_ended(const Child& c, double timeout_s) {
  if (c.timed_out) return "over " + std::to_string(static_cast<int>(timeout_s)) + " s";
  if (c.signal != 0) return "signal " + std::to_string(c.signal) + " (" + strsignal(c.signal) + ")";
  return "exit " + std::to_string(c.exit_code);
}

// The last JSON line a stage child printed; sets `problem` (with the command to rerun it) when it
// crashed, hung or printed none.
nlohmann::json stage_json(const std::vector<std::string>& argv, double timeout_s, std::string& problem) {
  const Child c = run_child(argv, timeout_s);
  if (!c.timed_out && c.signal == 0) {
    const size_t brace = c.output.rfind("\n{");
    try {
      return nlohmann::json::parse(c.output.substr(brace == std::string::npos ? 0 : brace + 1));
    } catch (const std::exception&) {
    }
  }
  const std::string tail = c.output.substr(c.output.size() > 2000 ? c.output.size() - 2000 : 0);
  problem = "it ended without a result (" + how_it_ended(c, timeout_s) + "): " + tail +
            "\n    repro: " + command_text(argv);
  return {};
}

std::vector<nlohmann::json> results_of(const fs::path& report) {
  std::vector<nlohmann::json> rs;
  std::ifstream in(report / "results.jsonl");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rs.push_back(nlohmann::json::parse(line));
  return rs;
}

// The SDK's own line for an op_supports that threw (sdk/plugin.hpp), from the workers' log: the
// exception's text, which the ABI's answer cannot carry. That of the op named, else the first.
std::string supports_exception(const fs::path& report, const std::string& op_name) {
  std::string code;
  for (const sdk::OpInfo& op : sdk::kOps)
    if (op_name == op.name) code = std::to_string(static_cast<int>(op.code));
  std::ifstream in(report / "workers.log");
  std::string first;
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("supports() threw for op code ");
    if (at == std::string::npos) continue;
    if (first.empty()) first = line;
    if (!code.empty() && line.find("op code " + code + " ") != std::string::npos) return line;
  }
  return first;
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
    problem = "the suite itself did not finish (" + how_it_ended(c, timeout_s) + "): " +
              c.output.substr(c.output.size() > 2000 ? c.output.size() - 2000 : 0);
    return counts;
  }
  for (const nlohmann::json& r : results_of(report)) {
    const std::string status = r.value("status", "?");
    ++counts[status];
    if (!problem.empty() || (status != "CRASH" && status != "TIMEOUT" && status != "FAIL")) continue;
    const std::string message = r.value("message", "");
    problem = status + " " + r.value("case", "?") + ": " + message;
    if (message.find("op_supports failed inside the plugin") != std::string::npos)
      if (const std::string said = supports_exception(report, r.value("op", "")); !said.empty())
        problem += "; the plugin's stderr (" + (report / "workers.log").string() + "): " + said;
    problem += "\n    repro: " + r.value("repro", "");
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

// Stage 1: the probe child's report, printed; "" when the plugin is usable and its devices are
// well formed, else the verdict.
std::string probe_stage(const std::vector<std::string>& base, const PluginCheckArgs& a) {
  std::vector<std::string> probe = base;
  probe.insert(probe.end(), {"plugin", "probe", a.target});
  const Child c = run_child(probe, a.probe_timeout);
  if (c.timed_out)
    return "loading or initializing the plugin hung (over " + std::to_string(static_cast<int>(a.probe_timeout)) +
           " s): make initialize return (and quickly: the host waits [plugins] probe_timeout_ms)";
  if (c.signal != 0)
    return "loading or initializing the plugin killed the process (signal " + std::to_string(c.signal) + " " +
           strsignal(c.signal) + "): run `" + command_text(probe) + "` under a debugger";
  nlohmann::json info;
  const size_t brace = c.output.rfind("\n{");
  try {
    info = nlohmann::json::parse(c.output.substr(brace == std::string::npos ? 0 : brace + 1));
  } catch (const std::exception&) {
    return "the probe printed no result (exit " + std::to_string(c.exit_code) + "): " + c.output;
  }
  const std::string state = info.value("state", "?");
  std::cout << "1. probe: " << info.value("name", "?") << " " << info.value("version", "")
            << ", ABI " << info.value("abi", "?") << ": " << state << " — " << info.value("reason", "") << "\n";
  std::string verdict;
  for (const auto& d : info["devices"]) {
    std::cout << "     " << d.value("name", "") << ": " << d.value("description", "") << " ("
              << d.value("kind", "") << ")\n";
    for (const auto& p : d.value("problems", nlohmann::json::array())) {
      std::cout << "       FAIL device property: " << p.get<std::string>() << "\n";
      if (verdict.empty())
        verdict = "the device properties (device_get_props): " + d.value("name", "") + ": " +
                  p.get<std::string>() + "; next: report what wick_plugin.h allows for that field";
    }
  }
  if (state != "usable") return state + ": " + info.value("reason", "") + "; next: " + next_step(state);
  return verdict;
}

}  // namespace

namespace {

// Stage 3: every device's buffers read back as written; "" when they do, else the verdict.
std::string buffers_stage(const std::vector<std::string>& base, const PluginCheckArgs& a) {
  std::vector<std::string> argv = base;
  argv.insert(argv.end(), {"plugin", "buffers", a.target});
  std::string problem;
  const nlohmann::json j = stage_json(argv, a.probe_timeout, problem);
  if (problem.empty()) problem = j.value("problem", "");
  const size_t devices = j.value("devices", nlohmann::json::array()).size();
  std::cout << "3. buffers (write, read back, at offsets, between canaries): "
            << (problem.empty() ? "OK on " + std::to_string(devices) + (devices == 1 ? " device" : " devices")
                                : "FAIL")
            << "\n";
  if (problem.empty()) return "";
  if (problem.find("\n    repro: ") == std::string::npos) problem += "\n    repro: " + command_text(argv);
  return "buffer writes and reads: " + problem;
}

// Stage 5: the memory the smoke set leaves behind; "" when it came back, else the verdict.
std::string leaks_stage(const std::vector<std::string>& base, const PluginCheckArgs& a) {
  std::vector<std::string> argv = base;
  argv.insert(argv.end(), {"plugin", "leaks", a.target});
  std::string problem;
  const nlohmann::json j = stage_json(argv, a.stage_timeout, problem);
  if (problem.empty()) problem = j.value("problem", "");
  std::cout << "5. leaks (the smoke set again in one process, memory before and after): ";
  if (!problem.empty()) {
    std::cout << "FAIL\n";
    if (problem.find("\n    repro: ") == std::string::npos) problem += "\n    repro: " + command_text(argv);
    return problem;
  }
  auto grew = [&](const char* before, const char* after, bool up) {
    if (!j[before].is_number() || !j[after].is_number()) return std::string("not reported");
    const int64_t d = j[after].get<int64_t>() - j[before].get<int64_t>();
    return std::to_string(up ? d : -d) + " bytes";
  };
  std::cout << "OK: " << j.value("buffers", 0) << " buffers (" << j.value("bytes", 0)
            << " bytes) allocated and freed; heap grew " << grew("heap_before", "heap_after", true)
            << ", device free memory fell " << grew("device_free_before", "device_free_after", false) << "\n";
  return "";
}

}  // namespace

int run_plugin_check(const ConfigOverrides& overrides, const PluginCheckArgs& a) {
  const std::string self = self_path().string();
  std::vector<std::string> base = {self};
  const std::vector<std::string> globals = global_args(overrides);
  base.insert(base.end(), globals.begin(), globals.end());
  const fs::path report = fs::absolute(a.report_dir);
  fs::create_directories(report);
  std::cout << "wick plugin check " << a.target << " (reports in " << report.string() << ")\n";

  // Each stage in a child: a plugin that crashes or hangs ends only the child. The first problem
  // is the verdict; a stage whose findings would only repeat an earlier problem is not run.
  std::string verdict = probe_stage(base, a);
  std::map<std::string, int> full;
  if (verdict.empty()) {
    const std::string& backend = a.target;
    std::string problem;
    const auto support = conformance_stage(base, {"--backend", backend, "--mode", "support", "--suite", "golden"},
                                           report / "support", a.stage_timeout, problem);
    std::cout << "2. claimed capability (op_supports on every golden case): " << counts_text(support)
              << " — matrix in " << (report / "support" / "matrix.txt").string() << "\n";
    if (!problem.empty()) verdict = "asking op_supports: " + problem;
    // A write that does not read back would fail every case, each as something else.
    if (const std::string b = buffers_stage(base, a); !b.empty()) {
      std::cout << "4. smoke, 5. leaks, 6. conformance: not run (every case would fail on its buffers)\n";
      if (verdict.empty()) verdict = b;
    } else {
      problem.clear();
      const std::vector<std::string> smoke_args = {
          "--backend", backend, "--suite", "golden", "--op", kSmokeOps,
          "--jobs", std::to_string(a.jobs), "--timeout", std::to_string(a.case_timeout)};
      const auto smoke = conformance_stage(base, smoke_args, report / "smoke", a.stage_timeout, problem);
      std::cout << "4. smoke (" << kSmokeOps << "): " << counts_text(smoke) << "\n";
      if (!problem.empty() && verdict.empty()) verdict = "the smoke set: " + problem;
      if (problem.empty())
        if (const std::string l = leaks_stage(base, a); !l.empty() && verdict.empty()) verdict = l;
    }
    if (verdict.empty()) {
      problem.clear();
      std::vector<std::string> extra = {"--backend", backend, "--suite", a.suite, "--jobs",
                                        std::to_string(a.jobs), "--timeout",
                                        std::to_string(a.case_timeout)};
      full = conformance_stage(base, extra, report / "conformance", a.stage_timeout, problem);
      std::cout << "6. conformance (" << a.suite << "): " << counts_text(full) << "\n";
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
