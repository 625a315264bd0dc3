// `wick conformance`: the cross-backend conformance suite (docs/conformance.md).
#include "commands.hpp"

#include "case.hpp"
#include "compare.hpp"
#include "grad.hpp"
#include "onnx_import.hpp"
#include "report.hpp"
#include "supervisor.hpp"

#include <wick/error.hpp>
#include <wick/sdk/op_table.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <csignal>
#include <cstdlib>

#include <unistd.h>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

namespace wick::cli {

namespace {

namespace fs = std::filesystem;
using namespace wick::conformance;

std::vector<std::string> split(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool any_glob(const std::vector<std::string>& globs, const std::string& text) {
  for (const std::string& g : globs) {
    if (glob_match(g, text)) return true;
  }
  return false;
}

bool dtype_matches(const std::vector<std::string>& globs, const std::string& dtype) {
  if (globs.empty()) return true;
  if (any_glob(globs, dtype)) return true;
  const size_t arrow = dtype.find("->");
  return arrow != std::string::npos &&
         (any_glob(globs, dtype.substr(0, arrow)) || any_glob(globs, dtype.substr(arrow + 2)));
}

fs::path self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

// The data files: --golden-dir, --tolerances and --tolerance-overrides, else the defaults.
struct DataPaths {
  std::string golden, tolerances, overrides;
};
DataPaths data_paths(const ConformanceArgs& a) {
  const std::string dir = conformance_data_dir();
  DataPaths p;
  p.golden = a.data_dir.empty() ? dir + "/golden/data" : a.data_dir;
  p.tolerances = a.tolerances.empty() ? dir + "/tolerances.toml" : a.tolerances;
  p.overrides = a.overrides_file.empty() ? dir + "/tolerance-overrides.toml" : a.overrides_file;
  return p;
}

// Golden cases of an op (by name), 0 for an op without a file.
int golden_count(const std::map<std::string, int>& counts, const char* op) {
  auto it = counts.find(op);
  return it == counts.end() ? 0 : it->second;
}

// Every op of the op table must have golden cases; the reports name any without.
std::vector<std::string> uncovered_ops(const std::map<std::string, int>& counts) {
  std::vector<std::string> uncovered;
  for (const sdk::OpInfo& op : sdk::kOps) {
    if (golden_count(counts, op.name) == 0) uncovered.push_back(op.name);
  }
  return uncovered;
}

const char* kind_word(sdk::OpKind k) {
  switch (k) {
    case sdk::OpKind::MEMORY: return "memory";
    case sdk::OpKind::UNARY: return "unary";
    case sdk::OpKind::BINARY: return "binary";
    case sdk::OpKind::COMPARE: return "compare";
    case sdk::OpKind::SELECT: return "select";
    case sdk::OpKind::REDUCE: return "reduce";
    case sdk::OpKind::SCAN: return "scan";
    case sdk::OpKind::INDEX: return "index";
    case sdk::OpKind::NN: return "nn";
    case sdk::OpKind::FUSED: return "fused";
  }
  return "?";
}

// `--coverage`: one row per op of the op table with its golden cases; ops without are flagged.
int print_coverage(const std::map<std::string, int>& counts) {
  const std::vector<std::string> uncovered = uncovered_ops(counts);
  int total = 0;
  for (const sdk::OpInfo& op : sdk::kOps) total += golden_count(counts, op.name);
  std::printf("Op table: %zu ops, %d golden cases, %zu op(s) without golden cases\n\n",
              std::size(sdk::kOps), total, uncovered.size());
  std::printf("%5s  %-20s %-8s %7s  %s\n", "CODE", "OP", "KIND", "GOLDEN", "DTYPES");
  for (const sdk::OpInfo& op : sdk::kOps) {
    const int n = golden_count(counts, op.name);
    std::printf("%5d  %-20s %-8s %7d  ", static_cast<int>(op.code), op.name, kind_word(op.kind), n);
    if (n == 0)
      std::printf("%-18s  <- no golden cases\n", sdk::dtype_class_words(op.dtypes));
    else
      std::printf("%s\n", sdk::dtype_class_words(op.dtypes));
  }
  if (uncovered.empty()) {
    std::printf("\nEvery op of the table has golden cases.\n");
    return 0;
  }
  std::printf("\nWithout golden cases (conformance/golden/generate.py writes them):");
  for (const std::string& op : uncovered) std::printf(" %s", op.c_str());
  std::printf("\n");
  return 0;
}

// The cases the sources, the mode and the --op, --dtype and --case filters select.
std::vector<CaseInfo> select_cases(const GoldenStore& golden, const OnnxStore& onnx,
                                   const ConformanceArgs& a) {
  const std::vector<std::string> sources = split(a.suite);
  auto has_source = [&](const std::string& s) {
    return std::find(sources.begin(), sources.end(), s) != sources.end();
  };
  // --mode grad has cases of its own (grad.cpp); the sources are the other modes'.
  std::vector<CaseInfo> all =
      a.mode == "grad" ? grad_cases()
                       : golden.list(has_source("golden") && a.mode != "perf",
                                     has_source("diff") || a.mode == "perf");
  if (has_source("onnx") && a.mode == "test") {
    const std::vector<CaseInfo> o = onnx.list();
    all.insert(all.end(), o.begin(), o.end());
  }
  const std::vector<std::string> ops = split(a.op), dtypes = split(a.dtype),
                                 ids = split(a.case_pattern);
  std::vector<CaseInfo> cases;
  for (const CaseInfo& c : all) {
    if (!ops.empty()) {
      // ONNX cases carry every op type of their graph ("onnx:Concat,Shape"): any may match.
      bool matched = any_glob(ops, c.op);
      if (c.op.rfind("onnx:", 0) == 0)
        for (const std::string& t : split(c.op.substr(5))) matched = matched || any_glob(ops, t);
      if (!matched) continue;
    }
    if (!dtypes.empty() && (c.dtype.empty() || !dtype_matches(dtypes, c.dtype))) continue;
    if (!ids.empty() && !any_glob(ids, c.id)) continue;
    cases.push_back(c);
  }
  return cases;
}

// What every worker is started with: the data, the mode, the reference, the config and plugins.
std::vector<std::string> worker_args(const ConfigOverrides& overrides, const ConformanceArgs& a,
                                     const DataPaths& paths, const OnnxStore& onnx,
                                     const std::vector<CaseInfo>& cases) {
  std::vector<std::string> args = {"--data", paths.golden, "--tolerances", paths.tolerances,
                                   "--mode", a.mode,       "--seed",       std::to_string(a.seed)};
  auto add = [&](const char* flag, const std::string& value) {
    args.push_back(flag);
    args.push_back(value);
  };
  if (fs::exists(paths.overrides)) add("--overrides", paths.overrides);
  if (onnx.available()) add("--onnx-dir", a.onnx_dir);
  bool any_diff = false;
  for (const CaseInfo& c : cases) any_diff = any_diff || c.source == "diff";
  if (any_diff && a.mode != "perf") add("--reference", a.reference);
  if (overrides.config_file) add("--config", *overrides.config_file);
  for (const std::string& p : overrides.plugin_paths) add("--plugin-path", p);
  add("--parent", std::to_string(::getpid()));  // workers end when the supervisor does
  return args;
}

// The worker, its arguments and limits; creates the report directory for the workers' log.
SupervisorOptions supervisor_options(const ConfigOverrides& overrides, const ConformanceArgs& a,
                                     const DataPaths& paths, const OnnxStore& onnx,
                                     const std::vector<CaseInfo>& cases) {
  SupervisorOptions so;
  if (const char* w = ::secure_getenv("WICK_CONFORMANCE_WORKER")) {
    so.worker = w;
  } else {
    so.worker = (self_dir() / "wick-conformance-worker").string();
  }
  so.worker_args = worker_args(overrides, a, paths, onnx, cases);
  so.case_timeout_s = a.timeout;
  so.jobs = a.jobs;
  fs::create_directories(a.report_dir);
  so.log_file = (fs::path(a.report_dir) / "workers.log").string();
  fs::remove(so.log_file);
  const std::string self = (self_dir() / "wick").string();
  // Every option that chose the plugins, the data or the case's numbers, so that the line runs
  // as printed (from any directory: paths are made absolute).
  const ConformanceArgs defaults;
  auto abs = [](const std::string& p) { return fs::absolute(p).lexically_normal().string(); };
  std::string global, data;  // the CLI's own options, then the conformance command's
  if (overrides.config_file) global += " --config " + shell_quote(abs(*overrides.config_file));
  for (const std::string& p : overrides.plugin_paths) global += " --plugin-path " + shell_quote(abs(p));
  if (a.onnx_dir != defaults.onnx_dir) data += " --onnx-dir " + shell_quote(abs(a.onnx_dir));
  if (!a.data_dir.empty()) data += " --golden-dir " + shell_quote(abs(a.data_dir));
  if (!a.tolerances.empty()) data += " --tolerances " + shell_quote(abs(a.tolerances));
  if (!a.overrides_file.empty()) data += " --tolerance-overrides " + shell_quote(abs(a.overrides_file));
  if (a.reference != defaults.reference) data += " --reference " + shell_quote(a.reference);
  if (!a.expectations.empty()) data += " --expectations " + shell_quote(abs(a.expectations));
  so.repro = [self, a, global, data](const std::string& spec, const std::string& id) {
    std::string cmd = self + global + " conformance" + data + " --backend " + shell_quote(spec) +
                      " --case " + shell_quote(id);
    if (a.mode != "test") cmd += " --mode " + a.mode;
    if (a.seed != kDefaultBaseSeed) cmd += " --seed " + std::to_string(a.seed);
    return cmd;
  };
  return so;
}

// --backend: names and paths as given; "all" is every usable plugin.
std::vector<std::string> backends_to_run(const std::string& backend, const SupervisorOptions& so) {
  std::vector<std::string> backends;
  for (const std::string& b : split(backend)) {
    if (b == "all") {
      for (const std::string& n : list_backends(so)) backends.push_back(n);
    } else {
      backends.push_back(b);
    }
  }
  return backends;
}

// SIGINT or SIGTERM during a run: the supervisor stops its workers and the reports are written
// with what ran, marked as cut short.
volatile std::sig_atomic_t g_interrupted = 0;
void on_interrupt(int sig) {
  g_interrupted = sig;
}

void run_backends(const ConformanceArgs& a, const SupervisorOptions& so,
                  const std::vector<CaseInfo>& cases, ReportInput& report) {
  const std::vector<std::string> backends = backends_to_run(a.backend, so);
  std::cerr << "wick conformance: " << cases.size() << " cases x " << backends.size()
            << " backend(s), mode " << a.mode << ", report in " << a.report_dir << "\n";
  for (const std::string& b : backends) {
    if (g_interrupted != 0) break;
    std::cerr << "  running " << b << " ...\n";
    // The reference is not compared with itself: the differential cases skip it.
    std::vector<CaseInfo> mine;
    for (const CaseInfo& c : cases) {
      if (!(c.source == "diff" && a.mode == "test" && b == a.reference)) mine.push_back(c);
    }
    const BackendRun run = run_backend(so, b, mine);
    if (!run.error.empty()) std::cerr << "  " << b << ": not run: " << run.error << "\n";
    if (run.ready.contains("note")) std::cerr << "  " << b << ": " << run.ready.value("note", "") << "\n";
    report.runs.push_back(run);
  }
}

// The reports, each written atomically; false, each failed write named on stderr, when any failed.
bool write_reports(const ReportInput& report, const std::string& dir, JsonlStream& jsonl,
                   const std::string& jsonl_path) {
  const std::string text = console_report(report);
  std::cout << text;
  std::vector<std::string> errors;
  if (std::string e = jsonl.finish(); !e.empty()) errors.push_back(e);
  auto attempt = [&](auto write) {
    try {
      write();
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
  };
  attempt([&] { write_text((fs::path(dir) / "matrix.txt").string(), text); });
  attempt([&] { write_junit((fs::path(dir) / "junit.xml").string(), report); });
  attempt([&] { write_html((fs::path(dir) / "report.html").string(), report); });
  std::cout.flush();
  if (!std::cout) errors.push_back("conformance: cannot write the console report to stdout");
  for (const std::string& e : errors) std::cerr << "wick conformance: error: " << e << "\n";
  if (!errors.empty()) return false;
  std::cout << "\nReports: " << jsonl_path << ", junit.xml, report.html, matrix.txt in " << dir
            << "\n";
  return true;
}

// Exit status (3, before these, when a report could not be written): 2 when a named backend could not run; 1 on CRASH/TIMEOUT (or FAIL with
// --fail-on fail); unsupported ops never fail the run.
int exit_status(const ReportInput& report, const std::string& fail_on) {
  for (const BackendRun& r : report.runs) {
    if (!r.error.empty()) return 2;
  }
  for (const Result& r : report.results) {
    const bool crash = r.status == "CRASH" || r.status == "TIMEOUT";
    if ((fail_on == "crash" || fail_on == "fail") && crash) return 1;
    if (fail_on == "fail" && (r.status == "FAIL" || r.status == "XPASS")) return 1;
  }
  return 0;
}

}  // namespace

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\*?[]$;&|<>()`!#~{}") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string conformance_data_dir() {
  if (const char* env = ::secure_getenv("WICK_CONFORMANCE_DIR")) return env;
  std::error_code ec;
  if (fs::is_directory(WICK_CONFORMANCE_SOURCE_DIR, ec)) return WICK_CONFORMANCE_SOURCE_DIR;
  return (self_dir().parent_path() / "share" / "wick" / "conformance").string();
}

int run_conformance(const ConfigOverrides& overrides, const ConformanceArgs& a) {
  const DataPaths paths = data_paths(a);
  GoldenStore golden(paths.golden);
  const std::map<std::string, int> counts = golden.golden_counts();
  if (a.coverage) return print_coverage(counts);
  OnnxStore onnx(a.onnx_dir);
  // An --onnx-dir given that is not a directory is an error, never a run of nothing.
  if (a.onnx_dir != ConformanceArgs().onnx_dir && !onnx.available())
    throw Error("conformance: --onnx-dir " + onnx.unavailable_reason());
  const std::vector<CaseInfo> cases = select_cases(golden, onnx, a);
  if (a.list) {
    for (const CaseInfo& c : cases) std::cout << c.id << "\t" << c.op << "\t" << c.dtype << "\n";
    return 0;
  }

  if (cases.empty())
    std::cerr << "wick conformance: no case matches the selection (--suite " << a.suite
              << (a.op.empty() ? "" : ", --op " + a.op) << (a.dtype.empty() ? "" : ", --dtype " + a.dtype)
              << (a.case_pattern.empty() ? "" : ", --case " + a.case_pattern)
              << "): the reports are written empty\n";
  SupervisorOptions so = supervisor_options(overrides, a, paths, onnx, cases);
  // The workers read the tolerance tables too: refused here first, an error naming the file.
  ToleranceTable::load(paths.tolerances, fs::exists(paths.overrides) ? paths.overrides : "");
  const Expectations expectations = Expectations::load(a.expectations);
  so.expectations = &expectations;
  const std::string jsonl_path = (fs::path(a.report_dir) / "results.jsonl").string();
  JsonlStream jsonl(jsonl_path);
  ReportInput report;
  report.mode = a.mode;
  report.uncovered_ops = a.mode == "grad" ? grad_uncovered_ops() : uncovered_ops(counts);
  for (const sdk::OpInfo& op : sdk::kOps) report.differentiable_ops += differentiable_in_table(op);
  report.onnx_folders = static_cast<int>(onnx.list().size());
  report.command = a.command_line;
  size_t done = 0;
  so.on_result = [&](const Result& r) {
    jsonl.write_line(Result::dump(r.to_json()));  // a killed run still leaves its record
    report.results.push_back(r);
    if (++done % 1000 == 0) std::cerr << "  ... " << done << " results\n";
  };
  so.stop = &g_interrupted;
  struct sigaction on{}, old_int{}, old_term{};
  on.sa_handler = &on_interrupt;  // no SA_RESTART: the supervisor's poll returns at once
  sigemptyset(&on.sa_mask);
  sigaction(SIGINT, &on, &old_int);
  sigaction(SIGTERM, &on, &old_term);
  run_backends(a, so, cases, report);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  report.warnings = expectations.unmatched_warnings();
  if (g_interrupted != 0)
    report.cut_short = std::string("interrupted by ") + (g_interrupted == SIGINT ? "SIGINT" : "SIGTERM") +
                       " after " + std::to_string(report.results.size()) + " results";
  if (!write_reports(report, a.report_dir, jsonl, jsonl_path)) return 3;
  if (g_interrupted != 0) return 128 + g_interrupted;
  return exit_status(report, a.fail_on);
}

}  // namespace wick::cli
