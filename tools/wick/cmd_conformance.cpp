// `wick conformance`: the cross-backend conformance suite (docs/conformance.md).
#include "commands.hpp"

#include "case.hpp"
#include "compare.hpp"
#include "onnx_import.hpp"
#include "report.hpp"
#include "supervisor.hpp"

#include <wick/error.hpp>
#include <wick/sdk/ops.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
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
  return arrow != std::string::npos && (any_glob(globs, dtype.substr(0, arrow)) || any_glob(globs, dtype.substr(arrow + 2)));
}

fs::path self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

// The conformance data: the source tree's conformance/ in a build tree, share/wick/conformance
// when installed; WICK_CONFORMANCE_DIR overrides both.
std::string conformance_dir() {
  if (const char* env = std::getenv("WICK_CONFORMANCE_DIR")) return env;
  std::error_code ec;
  if (fs::is_directory(WICK_CONFORMANCE_SOURCE_DIR, ec)) return WICK_CONFORMANCE_SOURCE_DIR;
  return (self_dir().parent_path() / "share" / "wick" / "conformance").string();
}

std::string quote(const std::string& s) {
  if (s.find_first_of(" '\"*?[]$;&|<>()") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

int run_conformance(const ConfigOverrides& overrides, const ConformanceArgs& a) {
  const std::string dir = conformance_dir();
  const std::string data = a.data_dir.empty() ? dir + "/golden/data" : a.data_dir;
  const std::string tolerances = a.tolerances.empty() ? dir + "/tolerances.toml" : a.tolerances;
  const std::string overrides_file = a.overrides_file.empty() ? dir + "/tolerance-overrides.toml" : a.overrides_file;
  const std::vector<std::string> sources = split(a.suite);
  auto has_source = [&](const std::string& s) {
    return std::find(sources.begin(), sources.end(), s) != sources.end();
  };

  GoldenStore golden(data);
  OnnxStore onnx(a.onnx_dir);
  // Every op of the SDK must have golden cases; the coverage view names any without.
  std::vector<std::string> uncovered;
  const auto counts = golden.golden_counts();
  for (wick_op_code c : sdk_op_codes()) {
    auto it = counts.find(sdk::op_name(c));
    if (it == counts.end() || it->second == 0) uncovered.push_back(sdk::op_name(c));
  }
  if (a.coverage) {
    std::cout << "SDK op codes: " << sdk_op_codes().size() << "\n";
    for (wick_op_code c : sdk_op_codes()) {
      auto it = counts.find(sdk::op_name(c));
      std::printf("  %4d %-20s %5d golden cases\n", static_cast<int>(c), sdk::op_name(c),
                  it == counts.end() ? 0 : it->second);
    }
    std::cout << (uncovered.empty() ? "every SDK op has golden cases\n" : "ops without golden cases listed above with 0\n");
    return uncovered.empty() ? 0 : 1;
  }

  std::vector<CaseInfo> all = golden.list(has_source("golden") && a.mode != "perf", has_source("diff") || a.mode == "perf");
  if (has_source("onnx") && a.mode == "test") {
    const std::vector<CaseInfo> o = onnx.list();
    all.insert(all.end(), o.begin(), o.end());
  }
  const std::vector<std::string> ops = split(a.op), dtypes = split(a.dtype), ids = split(a.case_pattern);
  std::vector<CaseInfo> cases;
  for (const CaseInfo& c : all) {
    if (!ops.empty()) {
      const std::string bare = c.op.rfind("onnx:", 0) == 0 ? c.op.substr(5) : c.op;
      if (!any_glob(ops, c.op) && !any_glob(ops, bare)) continue;
    }
    if (!dtypes.empty() && (c.dtype.empty() || !dtype_matches(dtypes, c.dtype))) continue;
    if (!ids.empty() && !any_glob(ids, c.id)) continue;
    cases.push_back(c);
  }
  if (a.list) {
    for (const CaseInfo& c : cases) std::cout << c.id << "\t" << c.op << "\t" << c.dtype << "\n";
    return 0;
  }

  SupervisorOptions so;
  if (const char* w = std::getenv("WICK_CONFORMANCE_WORKER")) {
    so.worker = w;
  } else {
    so.worker = (self_dir() / "wick-conformance-worker").string();
  }
  so.worker_args = {"--data", data, "--tolerances", tolerances, "--mode", a.mode, "--seed", std::to_string(a.seed)};
  if (fs::exists(overrides_file)) {
    so.worker_args.push_back("--overrides");
    so.worker_args.push_back(overrides_file);
  }
  if (onnx.available()) {
    so.worker_args.push_back("--onnx-dir");
    so.worker_args.push_back(a.onnx_dir);
  }
  bool any_diff = false;
  for (const CaseInfo& c : cases) any_diff = any_diff || c.source == "diff";
  if (any_diff && a.mode != "perf") {
    so.worker_args.push_back("--reference");
    so.worker_args.push_back(a.reference);
  }
  if (overrides.config_file) {
    so.worker_args.push_back("--config");
    so.worker_args.push_back(*overrides.config_file);
  }
  for (const std::string& p : overrides.plugin_paths) {
    so.worker_args.push_back("--plugin-path");
    so.worker_args.push_back(p);
  }
  so.case_timeout_s = a.timeout;
  so.jobs = a.jobs;
  fs::create_directories(a.report_dir);
  so.log_file = (fs::path(a.report_dir) / "workers.log").string();
  fs::remove(so.log_file);
  const Expectations expectations = Expectations::load(a.expectations);
  so.expectations = &expectations;
  const std::string self = (self_dir() / "wick").string();
  so.repro = [&](const std::string& spec, const std::string& id) {
    std::string cmd = self + " conformance --backend " + quote(spec) + " --case " + quote(id);
    if (a.mode != "test") cmd += " --mode " + a.mode;
    if (a.seed != kDefaultBaseSeed) cmd += " --seed " + std::to_string(a.seed);
    if (!a.expectations.empty()) cmd += " --expectations " + quote(a.expectations);
    return cmd;
  };
  const std::string jsonl_path = (fs::path(a.report_dir) / "results.jsonl").string();
  std::ofstream jsonl(jsonl_path, std::ios::trunc);
  if (!jsonl) throw Error("conformance: cannot write " + jsonl_path);
  ReportInput report;
  report.mode = a.mode;
  report.uncovered_ops = uncovered;
  report.onnx_folders = static_cast<int>(onnx.list().size());
  report.command = a.command_line;
  size_t done = 0;
  so.on_result = [&](const Result& r) {
    jsonl << r.to_json().dump() << "\n";
    jsonl.flush();  // a killed run still leaves its record
    report.results.push_back(r);
    if (++done % 1000 == 0) std::cerr << "  ... " << done << " results\n";
  };

  std::vector<std::string> backends;
  for (const std::string& b : split(a.backend)) {
    if (b == "all") {
      for (const std::string& n : list_backends(so)) backends.push_back(n);
    } else {
      backends.push_back(b);
    }
  }
  std::cerr << "wick conformance: " << cases.size() << " cases x " << backends.size() << " backend(s), mode "
            << a.mode << ", report in " << a.report_dir << "\n";
  for (const std::string& b : backends) {
    std::cerr << "  running " << b << " ...\n";
    // The reference is not compared with itself: the differential cases skip it.
    std::vector<CaseInfo> mine;
    for (const CaseInfo& c : cases) {
      if (!(c.source == "diff" && a.mode == "test" && b == a.reference)) mine.push_back(c);
    }
    const BackendRun run = run_backend(so, b, mine);
    if (!run.error.empty()) std::cerr << "  " << b << ": not run: " << run.error << "\n";
    report.runs.push_back(run);
  }
  report.warnings = expectations.unmatched_warnings();
  const std::string text = console_report(report);
  std::cout << text;
  write_text((fs::path(a.report_dir) / "matrix.txt").string(), text);
  write_junit((fs::path(a.report_dir) / "junit.xml").string(), report);
  write_html((fs::path(a.report_dir) / "report.html").string(), report);
  std::cout << "\nReports: " << jsonl_path << ", junit.xml, report.html, matrix.txt in " << a.report_dir << "\n";

  // Exit status: 2 when a named backend could not run; 1 on CRASH/TIMEOUT (or FAIL with
  // --fail-on fail); unsupported ops never fail the run.
  for (const BackendRun& r : report.runs) {
    if (!r.error.empty()) return 2;
  }
  for (const Result& r : report.results) {
    const bool crash = r.status == "CRASH" || r.status == "TIMEOUT";
    if ((a.fail_on == "crash" || a.fail_on == "fail") && crash) return 1;
    if (a.fail_on == "fail" && (r.status == "FAIL" || r.status == "XPASS")) return 1;
  }
  return 0;
}

}  // namespace wick::cli
