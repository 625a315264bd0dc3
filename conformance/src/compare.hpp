// compare.hpp — tolerance as data, the comparison of one output with its reference, and the
// expectations file (XFAIL / SKIP entries kept by a plugin's authors).
#pragma once

#include "case.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace wick::conformance {

// A metric class's bound for one dtype: |got - want| <= (atol + rtol * max(|want|, scale)) * g(K),
// where g is 1, sqrt(K) or K (the class's growth) and K the case's reduction length.
struct Bound {
  double rtol = 0;
  double atol = 0;
  std::string growth = "none";  // "none", "sqrt", "linear"
  std::string origin;           // "tolerances.toml [classes.math] f32", or the override's reason
};

class ToleranceTable {
 public:
  // Reads conformance/tolerances.toml and, when given, an overrides file whose every entry has a
  // `reason`. Throws wick::Error naming the file and the problem.
  static ToleranceTable load(const std::string& table_file, const std::string& overrides_file = "");
  // The bound for a case's class and output dtype on a backend (integers and bool: exact).
  Bound bound(const std::string& metric_class, DType dtype, const std::string& case_id,
              const std::string& backend) const;
  // Factor the differential mode multiplies bounds by (the reference has its own error).
  double differential_factor() const { return differential_factor_; }

 private:
  struct Override {
    std::string case_glob, backend_glob, dtype;
    std::optional<double> rtol, atol;
    std::string reason;
  };
  std::map<std::string, std::map<std::string, std::pair<double, double>>> classes_;
  std::map<std::string, std::string> growth_;
  std::vector<Override> overrides_;
  double differential_factor_ = 2;
};

struct Comparison {
  bool ok = true;
  double error = 0;          // the worst element's |got - want| (inf for a NaN/Inf mismatch)
  double threshold = 0;      // that element's bound
  int64_t worst_index = -1;  // flat C-order index of the worst element
  std::string detail;        // one line: where, got, want, bound and its origin
};

// Compares `got` (raw bytes of a contiguous output of want.dtype) with want.
Comparison compare_output(const Expected& want, const std::vector<unsigned char>& got, const Bound& bound,
                          int64_t reduction, bool norm_scale = false);
// For sort without stability: each row's indices must be a permutation and the input values at
// them must equal the expected sorted values (ties may come in any order).
Comparison compare_sort_indices(const Operand& input, int axis, const Expected& values,
                                const std::vector<unsigned char>& got_indices, DType index_dtype);

// The flat index as "[i, j, k]" for a shape.
std::string index_string(int64_t flat, const Shape& shape);

// The expectations file: one entry per line, `#` comments:
//   <backend glob> <case-id glob> XFAIL|SKIP <reason...>
// XFAIL turns FAIL/CRASH/TIMEOUT into XFAIL and PASS into XPASS; SKIP does not run the case.
class Expectations {
 public:
  struct Entry {
    std::string backend_glob, case_glob, kind, reason;
    std::string where;  // file:line
    mutable int matched = 0;
  };
  static Expectations load(const std::string& file);  // empty file name: no entries
  const Entry* match(const std::string& backend, const std::string& case_id) const;
  // Entries that matched no case in this run: a warning each.
  std::vector<std::string> unmatched_warnings() const;

 private:
  std::vector<Entry> entries_;
};

bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace wick::conformance
