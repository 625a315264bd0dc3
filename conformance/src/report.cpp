#include "report.hpp"

#include <wick/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

namespace wick::conformance {

namespace fs = std::filesystem;

void Tally::add(const std::string& s) {
  static const std::map<std::string, int Tally::*> counters = {
      {"PASS", &Tally::pass},   {"FAIL", &Tally::fail},       {"UNSUPPORTED", &Tally::unsupported},
      {"CRASH", &Tally::crash}, {"TIMEOUT", &Tally::timeout}, {"SKIP", &Tally::skip},
      {"XFAIL", &Tally::xfail}, {"XPASS", &Tally::xpass},     {"SUPPORTED", &Tally::supported}};
  ++total;
  auto it = counters.find(s);
  if (it != counters.end()) ++(this->*(it->second));
}

std::map<std::string, std::map<std::string, Tally>> tallies_by_backend(
    const std::vector<Result>& results) {
  std::map<std::string, std::map<std::string, Tally>> t;
  for (const Result& r : results) {
    t[r.backend][r.source].add(r.status);
    t[r.backend][""].add(r.status);
  }
  return t;
}

namespace {

std::vector<std::string> backend_names(const ReportInput& in) {
  std::vector<std::string> names;
  for (const BackendRun& r : in.runs) {
    if (r.error.empty() && std::find(names.begin(), names.end(), r.name) == names.end())
      names.push_back(r.name);
  }
  return names;
}

// op -> backend -> tally, for one source, ops in first-seen order.
std::vector<std::pair<std::string, std::map<std::string, Tally>>> matrix(
    const ReportInput& in, const std::string& source) {
  std::vector<std::pair<std::string, std::map<std::string, Tally>>> rows;
  std::map<std::string, size_t> where;
  for (const Result& r : in.results) {
    if (r.source != source) continue;
    // An ONNX graph ("onnx:Concat,Shape,Slice") counts under each of its op types.
    std::vector<std::string> ops{r.op};
    if (r.op.rfind("onnx:", 0) == 0 && r.op.find(',') != std::string::npos) {
      ops.clear();
      std::string rest = r.op.substr(5);
      for (size_t at; (at = rest.find(',')) != std::string::npos; rest = rest.substr(at + 1))
        ops.push_back("onnx:" + rest.substr(0, at));
      ops.push_back("onnx:" + rest);
    }
    for (const std::string& op : ops) {
      auto it = where.find(op);
      if (it == where.end()) {
        it = where.emplace(op, rows.size()).first;
        rows.push_back({op, {}});
      }
      rows[it->second].second[r.backend].add(r.status);
    }
  }
  return rows;
}

// part / total, 0 for no cases.
double share(int part, int total) {
  return total ? static_cast<double>(part) / total : 0;
}

std::string pct(double v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%.1f%%", v * 100);
  return buf;
}

// The statuses that make a cell red and a run fail: FAIL, CRASH, TIMEOUT, XPASS.
bool is_failure(const std::string& status) {
  return status == "FAIL" || status == "CRASH" || status == "TIMEOUT" || status == "XPASS";
}
bool has_failure(const Tally& t) {
  return (t.fail + t.crash + t.timeout + t.xpass) > 0;
}

std::string cell_text(const Tally& t, const std::string& mode) {
  if (t.total == 0) return "-";
  const int good = mode == "support" ? t.supported : t.pass;
  std::string s = std::to_string(good) + "/" + std::to_string(t.total);
  if (mode != "support" && has_failure(t)) s += "!";
  return s;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          o += ' ';
        else
          o += c;
    }
  }
  return o;
}

const char* source_title(const std::string& s) {
  if (s == "golden") return "Wick ops against the NumPy float64 golden data";
  if (s == "diff")
    return "Differential: large random shapes against the reference backend (reported apart)";
  if (s == "grad") return "Gradients: autograd against central differences in float64";
  return "ONNX backend node tests (libonnx-testdata)";
}

}  // namespace

namespace {

// One source's op x backend matrix; ONNX's 164 op types are left to the HTML page.
void console_matrix(std::ostream& os, const ReportInput& in, const std::string& source,
                    const std::vector<std::string>& backends) {
  auto rows = matrix(in, source);
  if (rows.empty()) return;
  os << "\n" << source_title(source) << (in.mode == "support" ? " — claimed support" : "") << "\n";
  if (source == "onnx" && rows.size() > 40) {
    // 164 ONNX op types are too many for a console: the HTML page has them all.
    os << "  (per-op rows in report.html)\n";
    return;
  }
  size_t w = 10;
  for (const auto& row : rows) w = std::max(w, row.first.size());
  os << "  " << std::string(w, ' ');
  for (const std::string& b : backends) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), " %14s", b.c_str());
    os << buf;
  }
  os << "\n";
  for (const auto& [op, cells] : rows) {
    os << "  " << op << std::string(w - op.size(), ' ');
    for (const std::string& b : backends) {
      auto it = cells.find(b);
      char buf[64];
      std::snprintf(buf, sizeof(buf), " %14s",
                    it == cells.end() ? "-" : cell_text(it->second, in.mode).c_str());
      os << buf;
    }
    os << "\n";
  }
}

std::string score_line(const ReportInput& in, const std::string& b, const std::string& source,
                       const Tally& x) {
  char buf[512];
  if (in.mode == "support") {
    std::snprintf(buf, sizeof(buf), "  %-12s %-7s claims %d of %d cases (%s)\n", b.c_str(),
                  source.c_str(), x.supported, x.total, pct(share(x.supported, x.total)).c_str());
  } else if (source == "onnx") {
    const int run = x.pass + x.fail + x.crash + x.timeout + x.xfail + x.xpass;
    std::snprintf(buf, sizeof(buf),
                  "  %-12s onnx    run %d, passed %d, of %d folders (unsupported by the plugin "
                  "%d, not importable %d)\n",
                  b.c_str(), run, x.pass, in.onnx_folders, x.unsupported, x.skip);
  } else {
    std::snprintf(buf, sizeof(buf),
                  "  %-12s %-7s %s  (%d/%d passed; unsupported %s; fail %d, crash %d, timeout "
                  "%d, skip %d, xfail %d, xpass %d)\n",
                  b.c_str(), source.c_str(), pct(x.score()).c_str(), x.pass, x.total,
                  pct(share(x.unsupported, x.total)).c_str(), x.fail, x.crash, x.timeout, x.skip,
                  x.xfail, x.xpass);
  }
  return buf;
}

void console_scores(std::ostream& os, const ReportInput& in,
                    const std::vector<std::string>& backends) {
  os << "\nScores (passed / all cases; unsupported share beside; '!' in a cell = a FAIL, CRASH, "
        "TIMEOUT or XPASS):\n";
  const auto t = tallies_by_backend(in.results);
  for (const std::string& b : backends) {
    auto bt = t.find(b);
    if (bt == t.end()) continue;
    for (const std::string source : {"golden", "diff", "onnx", "grad"}) {
      auto it = bt->second.find(source);
      if (it != bt->second.end()) os << score_line(in, b, source, it->second);
    }
  }
}

// --mode grad: per backend, the op rows whose cases all pass (XFAIL aside) and at least one ran,
// against the differentiable ops of the op table.
void console_grad_ops(std::ostream& os, const ReportInput& in,
                      const std::vector<std::string>& backends) {
  const auto rows = matrix(in, "grad");
  if (rows.empty()) return;
  os << "\nGradient-checked op rows (every case PASS or XFAIL, at least one PASS), of the "
     << in.differentiable_ops << " ops of the op table that could carry a gradient:\n";
  for (const std::string& b : backends) {
    int checked = 0, xfail_only = 0, skip_only = 0;
    for (const auto& [op, cells] : rows) {
      auto it = cells.find(b);
      if (it == cells.end()) continue;
      const Tally& t = it->second;
      if (t.pass > 0 && t.pass + t.xfail == t.total) ++checked;
      if (t.pass == 0 && t.xfail == t.total) ++xfail_only;
      if (t.skip == t.total) ++skip_only;
    }
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "  %-12s %d checked, %d only XFAIL (backward throws by design), %d SKIP (never "
                  "recorded by autograd)\n",
                  b.c_str(), checked, xfail_only, skip_only);
    os << buf;
  }
}

void console_failures(std::ostream& os, const ReportInput& in) {
  int shown = 0;
  for (const Result& r : in.results) {
    if (!is_failure(r.status)) continue;
    if (shown == 0) os << "\nFailures (first 25; all in results.jsonl and report.html):\n";
    if (shown++ >= 25) continue;
    os << "  " << r.status << " " << r.backend << " " << r.id << ": " << r.message
       << "\n    repro: " << r.repro << "\n";
  }
}

}  // namespace

std::string console_report(const ReportInput& in) {
  std::ostringstream os;
  if (!in.cut_short.empty()) os << "CUT SHORT: " << in.cut_short << "\n";
  const std::vector<std::string> backends = backend_names(in);
  for (const BackendRun& r : in.runs) {
    if (!r.error.empty()) os << "backend " << r.spec << ": NOT RUN: " << r.error << "\n";
  }
  for (const std::string source : {"golden", "diff", "onnx", "grad"})
    console_matrix(os, in, source, backends);
  console_scores(os, in, backends);
  console_grad_ops(os, in, backends);
  console_failures(os, in);
  if (!in.uncovered_ops.empty()) {
    os << (in.mode == "grad" ? "\nCoverage: differentiable SDK ops without grad cases:"
                             : "\nCoverage: SDK ops without golden cases:");
    for (const std::string& op : in.uncovered_ops) os << " " << op;
    os << "\n";
  }
  for (const std::string& w : in.warnings) os << "warning: " << w << "\n";
  return os.str();
}

namespace {

// Writes all of `data` to `fd`; false with errno set when a write fails (EFBIG, ENOSPC, EIO).
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string cannot_write(const std::string& path, int err) {
  return "conformance: cannot write " + path + ": " + std::strerror(err);
}

}  // namespace

void write_text(const std::string& path, const std::string& text) {
  // A temporary file beside `path`, renamed over it once every write and the close succeeded: a
  // full disk leaves the previous report (or none), never a truncated one, under the final name.
  const fs::path final_path(path);
  std::string leaf = final_path.filename().string();
  leaf.insert(leaf.begin(), '.');
  leaf += ".tmp-" + std::to_string(::getpid());
  const std::string tmp = (final_path.parent_path() / leaf).string();
  ::unlink(tmp.c_str());  // a stale one of an earlier run with this pid (O_EXCL: never a FIFO's open)
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(cannot_write(path, errno));
  int err = write_all(fd, text.data(), text.size()) ? 0 : errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw Error(cannot_write(path, err));
  }
}

JsonlStream::JsonlStream(std::string path) : path_(std::move(path)) {
  ::unlink((path_ + ".incomplete").c_str());
  // O_NONBLOCK: a FIFO left under the name fails (ENXIO) instead of waiting for a reader.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(cannot_write(path_, errno));
}

JsonlStream::~JsonlStream() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlStream::write_line(const std::string& line) {
  if (fd_ < 0) return;
  const std::string text = line + "\n";
  if (write_all(fd_, text.data(), text.size())) {
    ++lines_;
    whole_ += static_cast<off_t>(text.size());
    return;
  }
  fail(errno);
}

void JsonlStream::fail(int err) {
  // Cut back to the last whole line and moved aside: results.jsonl never ends mid-line, and a
  // record that misses results is not left under its final name.
  if (fd_ >= 0) {
    const bool cut = ::ftruncate(fd_, whole_) == 0;
    ::close(fd_);
    fd_ = -1;
    if (!cut) lines_ = -1;
  }
  const std::string aside = path_ + ".incomplete";
  error_ = cannot_write(path_, err);
  if (::rename(path_.c_str(), aside.c_str()) != 0) {
    ::unlink(path_.c_str());
  } else if (lines_ >= 0) {
    error_ += " (the " + std::to_string(lines_) + " whole lines written are kept in " + aside + ")";
  }
}

std::string JsonlStream::finish() {
  if (fd_ >= 0) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
      lines_ = -1;  // what reached the disk is not known
      fail(errno);
    }
  }
  return error_;
}

void write_junit(const std::string& path, const ReportInput& in) {
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"wick-conformance\">\n";
  std::map<std::string, std::vector<const Result*>> suites;
  for (const Result& r : in.results) suites[r.backend + "." + r.source].push_back(&r);
  for (const auto& [name, list] : suites) {
    Tally t;
    double time = 0;
    for (const Result* r : list) {
      t.add(r->status);
      time += r->seconds;
    }
    os << "  <testsuite name=\"" << xml_escape(name) << "\" tests=\"" << t.total << "\" failures=\""
       << (t.fail + t.xpass) << "\" errors=\"" << (t.crash + t.timeout) << "\" skipped=\""
       << (t.skip + t.unsupported + t.xfail) << "\" time=\"" << time << "\">\n";
    for (const Result* r : list) {
      os << "    <testcase classname=\"" << xml_escape(r->backend + "." + r->op) << "\" name=\""
         << xml_escape(r->id) << "\" time=\"" << r->seconds << "\"";
      const std::string msg = xml_escape(r->message);
      if (r->status == "PASS" || r->status == "SUPPORTED") {
        os << "/>\n";
        continue;
      }
      os << ">\n";
      if (r->status == "FAIL" || r->status == "XPASS") {
        os << "      <failure type=\"" << r->status << "\" message=\"" << msg << "\">"
           << xml_escape(r->repro) << "</failure>\n";
      } else if (r->status == "CRASH" || r->status == "TIMEOUT") {
        os << "      <error type=\"" << r->status << "\" message=\"" << msg << "\">"
           << xml_escape(r->repro) << "</error>\n";
      } else {
        os << "      <skipped message=\"" << xml_escape(r->status + ": " + r->message) << "\"/>\n";
      }
      os << "    </testcase>\n";
    }
    os << "  </testsuite>\n";
  }
  os << "</testsuites>\n";
  write_text(path, os.str());
}

namespace {

void html_head(std::ostream& os, const ReportInput& in) {
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Wick "
        "conformance</title>\n<style>\n"
        "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}table{border-collapse:"
        "collapse;margin:.5em 0 1.5em}"
        "th,td{border:1px solid #ccc;padding:2px "
        "8px;text-align:right;font-size:13px}th{background:#eee;cursor:pointer}"
        "td:first-child,th:first-child{text-align:left}.all{background:#b7e4b7}.some{background:#"
        "f6e3a1}"
        ".bad{background:#f3a5a5}.none{background:#ddd;color:#666}code{font-size:12px}details{"
        "margin:2px 0}"
        "summary{cursor:pointer}.st-FAIL,.st-CRASH,.st-TIMEOUT,.st-XPASS{color:#b00;font-weight:"
        "bold}\n"
        "</style></head><body>\n<h1>Wick conformance report</h1>\n";
  if (!in.cut_short.empty())
    os << "<p class=\"st-FAIL\">CUT SHORT: " << xml_escape(in.cut_short) << "</p>\n";
  os << "<p>Mode: <b>" << xml_escape(in.mode) << "</b>. Command: <code>" << xml_escape(in.command)
     << "</code></p>\n<ul>\n";
  for (const BackendRun& r : in.runs) {
    os << "<li><b>" << xml_escape(r.name) << "</b>: ";
    if (!r.error.empty()) {
      os << "not run: " << xml_escape(r.error);
    } else {
      // No READY payload when nothing ran (zero cases selected).
      auto field = [&](const char* key) {
        return r.ready.is_object() ? r.ready.value(key, std::string()) : std::string("-");
      };
      os << xml_escape(field("device")) << " (" << xml_escape(field("description")) << "), plugin "
         << xml_escape(field("version"));
    }
    os << "</li>\n";
  }
  os << "</ul>\n";
}

void html_scores(std::ostream& os, const ReportInput& in) {
  os << "<h2>Scores</h2>\n<table><tr><th>backend</th><th>source</th><th>score (passed / "
        "all)</th><th>passed</th>"
        "<th>cases</th><th>unsupported</th><th>fail</th><th>crash</th><th>timeout</th><th>skip</"
        "th><th>xfail</th><th>xpass</th></tr>\n";
  const auto t = tallies_by_backend(in.results);
  for (const auto& [b, by] : t) {
    for (const auto& [source, x] : by) {
      if (source.empty()) continue;
      os << "<tr><td>" << xml_escape(b) << "</td><td>" << source << "</td><td>" << pct(x.score())
         << "</td><td>" << x.pass << "</td><td>" << x.total << "</td><td>" << x.unsupported << " ("
         << pct(share(x.unsupported, x.total)) << ")</td><td>" << x.fail << "</td><td>" << x.crash
         << "</td><td>" << x.timeout << "</td><td>" << x.skip << "</td><td>" << x.xfail
         << "</td><td>" << x.xpass << "</td></tr>\n";
    }
  }
  os << "</table>\n";
  if (in.onnx_folders > 0) os << "<p>ONNX node-test folders: " << in.onnx_folders << "</p>\n";
}

// One matrix cell: passed (claimed) / total, coloured by the worst outcome.
void html_cell(std::ostream& os, const Tally& x, const std::string& mode) {
  const int good = mode == "support" ? x.supported : x.pass;
  const char* cls = has_failure(x) ? "bad" : good == x.total ? "all" : good == 0 ? "none" : "some";
  os << "<td class=\"" << cls << "\" data-v=\"" << share(good, x.total) << "\">" << good << "/"
     << x.total << "</td>";
}

void html_matrices(std::ostream& os, const ReportInput& in) {
  const std::vector<std::string> backends = backend_names(in);
  int table_id = 0;
  for (const std::string source : {"golden", "diff", "onnx", "grad"}) {
    auto rows = matrix(in, source);
    if (rows.empty()) continue;
    os << "<h2>" << source_title(source)
       << "</h2>\n<p>Cells: passed/total (claimed/total in support mode). Green: all "
          "pass; yellow: some unsupported or skipped; red: a failure, crash or timeout; grey: none "
          "pass. Click a header to sort.</p>\n";
    os << "<table id=\"m" << table_id << "\" class=\"sortable\"><thead><tr><th>op</th>";
    for (const std::string& b : backends) os << "<th>" << xml_escape(b) << "</th>";
    os << "</tr></thead><tbody>\n";
    for (const auto& [op, cells] : rows) {
      os << "<tr><td>" << xml_escape(op) << "</td>";
      for (const std::string& b : backends) {
        auto it = cells.find(b);
        if (it == cells.end())
          os << "<td class=\"none\" data-v=\"-1\">-</td>";
        else
          html_cell(os, it->second, in.mode);
      }
      os << "</tr>\n";
    }
    os << "</tbody></table>\n";
    ++table_id;
  }
}

void html_failures(std::ostream& os, const ReportInput& in) {
  os << "<h2>Failures, crashes and timeouts</h2>\n";
  int n = 0;
  for (const Result& r : in.results) {
    if (!is_failure(r.status)) continue;
    ++n;
    os << "<details><summary><span class=\"st-" << r.status << "\">" << r.status << "</span> "
       << xml_escape(r.backend) << " <code>" << xml_escape(r.id) << "</code></summary><p>"
       << xml_escape(r.message) << "</p>";
    if (!r.worst_index.empty()) {
      os << "<p>error " << r.error << ", threshold " << r.threshold << ", worst element "
         << xml_escape(r.worst_index) << "</p>";
    }
    os << "<p>repro: <code>" << xml_escape(r.repro) << "</code></p></details>\n";
  }
  if (n == 0) os << "<p>None.</p>\n";
}

void html_unsupported(std::ostream& os, const ReportInput& in) {
  os << "<h2>Unsupported and skipped</h2>\n";
  std::map<std::string, int> reasons;
  for (const Result& r : in.results) {
    if (r.status == "UNSUPPORTED" || r.status == "SKIP")
      reasons[r.backend + " " + r.status + ": " + r.message]++;
  }
  os << "<details><summary>" << reasons.size() << " distinct reasons</summary><ul>\n";
  for (const auto& [why, count] : reasons)
    os << "<li>" << count << " &times; " << xml_escape(why) << "</li>\n";
  os << "</ul></details>\n";
}

void html_tail(std::ostream& os, const ReportInput& in) {
  if (!in.uncovered_ops.empty()) {
    os << "<h2>Coverage</h2><p>"
       << (in.mode == "grad" ? "Differentiable SDK ops without grad cases:" : "SDK ops without golden cases:");
    for (const std::string& op : in.uncovered_ops) os << " " << xml_escape(op);
    os << "</p>\n";
  }
  for (const std::string& w : in.warnings) os << "<p>warning: " << xml_escape(w) << "</p>\n";
  // Click a header to sort by that column (numbers by data-v, text otherwise).
  os << "<script>\n"
        "document.querySelectorAll('table.sortable "
        "th').forEach(function(th){th.addEventListener('click',function(){\n"
        " var "
        "table=th.closest('table'),body=table.tBodies[0],i=Array.prototype.indexOf.call(th."
        "parentNode.children,th);\n"
        " var asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';\n"
        " var rows=Array.prototype.slice.call(body.rows);rows.sort(function(a,b){\n"
        "  var x=a.cells[i],y=b.cells[i];var "
        "p=x.dataset.v!==undefined?parseFloat(x.dataset.v):x.textContent;\n"
        "  var q=y.dataset.v!==undefined?parseFloat(y.dataset.v):y.textContent;var "
        "c=p<q?-1:p>q?1:0;return asc?c:-c;});\n"
        " rows.forEach(function(r){body.appendChild(r);});});});\n"
        "</script>\n</body></html>\n";
}

}  // namespace

void write_html(const std::string& path, const ReportInput& in) {
  std::ostringstream os;
  html_head(os, in);
  html_scores(os, in);
  html_matrices(os, in);
  html_failures(os, in);
  html_unsupported(os, in);
  html_tail(os, in);
  write_text(path, os.str());
}

}  // namespace wick::conformance
