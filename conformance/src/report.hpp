// report.hpp — the conformance reports: the console matrix (op x backend, pass/total), JUnit XML
// and a self-contained HTML page. results.jsonl is streamed by the caller as results arrive.
#pragma once

#include "result.hpp"
#include "supervisor.hpp"

#include <map>
#include <sys/types.h>
#include <string>
#include <vector>

namespace wick::conformance {

struct Tally {
  int total = 0, pass = 0, fail = 0, unsupported = 0, crash = 0, timeout = 0, skip = 0, xfail = 0,
      xpass = 0, supported = 0;
  void add(const std::string& status);
  // passed / all cases: UNSUPPORTED, SKIP, CRASH and TIMEOUT count against it.
  double score() const { return total == 0 ? 0 : static_cast<double>(pass) / total; }
};

struct ReportInput {
  std::vector<BackendRun> runs;
  std::vector<Result> results;
  std::string mode;               // test, support, perf, grad
  int differentiable_ops = 0;     // --mode grad: ops of the op table that can carry a gradient
  int onnx_folders = 0;           // folders in the ONNX node-test directory (932)
  std::vector<std::string> uncovered_ops;  // SDK ops without golden cases
  std::vector<std::string> warnings;
  std::string command;            // how the run was started
  std::string cut_short;          // non-empty when the run was interrupted: why (e.g. "SIGINT")
};

// The matrix and per-backend scores, as printed on the console.
std::string console_report(const ReportInput& in);
void write_junit(const std::string& path, const ReportInput& in);
void write_html(const std::string& path, const ReportInput& in);
// Writes `text` atomically: a temporary file in the same directory, every write and the close
// checked, then renamed over `path`. Throws Error "conformance: cannot write <path>: why" when a
// step fails; the temporary file is removed and `path` is left as it was.
void write_text(const std::string& path, const std::string& text);

// results.jsonl, streamed: each result a whole line as it arrives (a killed run keeps its record),
// every write checked. After a failed write (a full disk) the file is cut back to its last whole
// line and renamed <path>.incomplete, and later lines are dropped.
class JsonlStream {
 public:
  explicit JsonlStream(std::string path);  // throws Error naming the path when it cannot create it
  ~JsonlStream();
  JsonlStream(const JsonlStream&) = delete;
  JsonlStream& operator=(const JsonlStream&) = delete;
  void write_line(const std::string& line);
  // Closes the file; why a write or the close failed, naming the file, or "" when none did.
  std::string finish();

 private:
  void fail(int err);
  std::string path_, error_;
  int fd_ = -1;
  off_t whole_ = 0;  // bytes of the whole lines written
  long lines_ = 0;
};

// Per backend and source: the tallies (source "" is every source).
std::map<std::string, std::map<std::string, Tally>> tallies_by_backend(const std::vector<Result>& results);

}  // namespace wick::conformance
