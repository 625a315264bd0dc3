#include "compare.hpp"

#include <wick/error.hpp>
#include <wick/safe_file.hpp>

#include <toml++/toml.h>

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace wick::conformance {

bool glob_match(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

// ---- tolerances -----------------------------------------------------------------------------------

namespace {

// Parses a TOML file; errors name file:line:column.
toml::table parse_toml(const std::string& file) {
  std::string text;
  try {
    text = safe_file::read_text(file);  // a regular file of at most 1 MiB: never a FIFO or a device
  } catch (const std::exception& e) {
    throw Error(std::string("conformance: ") + e.what());
  }
  try {
    return toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << file << ":" << e.source().begin.line << ":" << e.source().begin.column << ": " << e.description();
    throw Error("conformance: " + os.str());
  }
}

}  // namespace

ToleranceTable ToleranceTable::load(const std::string& table_file, const std::string& overrides_file) {
  ToleranceTable t;
  const toml::table doc = parse_toml(table_file);
  if (auto f = doc["differential"]["factor"].value<double>()) t.differential_factor_ = *f;
  const toml::table* classes = doc["classes"].as_table();
  if (classes == nullptr) throw Error("conformance: " + table_file + " has no [classes] table");
  for (const auto& [name, node] : *classes) {
    const toml::table* c = node.as_table();
    if (c == nullptr) continue;
    const std::string cls(name.str());
    t.growth_[cls] = (*c)["growth"].value_or(std::string("none"));
    for (const auto& [key, value] : *c) {
      const toml::array* a = value.as_array();
      if (a == nullptr) continue;
      if (a->size() != 2) throw Error("conformance: " + table_file + ": [classes." + cls + "] " +
                                      std::string(key.str()) + " must be [rtol, atol]");
      t.classes_[cls][std::string(key.str())] = {a->get(0)->value<double>().value_or(0),
                                                 a->get(1)->value<double>().value_or(0)};
    }
  }
  if (overrides_file.empty()) return t;
  const toml::table ov = parse_toml(overrides_file);
  if (const toml::array* list = ov["override"].as_array()) {
    for (const toml::node& n : *list) {
      const toml::table* e = n.as_table();
      if (e == nullptr) continue;
      Override o;
      o.case_glob = (*e)["case"].value_or(std::string("*"));
      o.backend_glob = (*e)["backend"].value_or(std::string("*"));
      o.dtype = (*e)["dtype"].value_or(std::string());
      o.rtol = (*e)["rtol"].value<double>();
      o.atol = (*e)["atol"].value<double>();
      o.reason = (*e)["reason"].value_or(std::string());
      if (o.reason.empty()) {
        std::ostringstream os;
        os << overrides_file << ":" << e->source().begin.line << ": the override for '" << o.case_glob
           << "' has no reason; every widened bound must say why";
        throw Error("conformance: " + os.str());
      }
      t.overrides_.push_back(std::move(o));
    }
  }
  return t;
}

Bound ToleranceTable::bound(const std::string& metric_class, DType dtype, const std::string& case_id,
                            const std::string& backend) const {
  Bound b;
  if (!is_float(dtype) || metric_class == "exact") {
    b.origin = "exact (" + std::string(dtype_name(dtype)) + ")";
    return b;
  }
  auto c = classes_.find(metric_class);
  if (c == classes_.end()) throw Error("conformance: unknown tolerance class '" + metric_class + "'");
  auto g = growth_.find(metric_class);
  b.growth = g == growth_.end() ? "none" : g->second;
  auto d = c->second.find(dtype_name(dtype));
  if (d == c->second.end()) d = c->second.find("default");
  if (d != c->second.end()) {
    b.rtol = d->second.first;
    b.atol = d->second.second;
  }
  b.origin = "[classes." + metric_class + "] " + dtype_name(dtype);
  for (const Override& o : overrides_) {
    if (!glob_match(o.case_glob, case_id) || !glob_match(o.backend_glob, backend)) continue;
    if (!o.dtype.empty() && o.dtype != dtype_name(dtype)) continue;
    if (o.rtol) b.rtol = *o.rtol;
    if (o.atol) b.atol = *o.atol;
    b.origin = "override '" + o.case_glob + "': " + o.reason;
  }
  return b;
}

// ---- comparison -----------------------------------------------------------------------------------

std::string index_string(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) break;
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

namespace {

std::string fmt(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// The raw output values as doubles (floats) or int64 (integers, bool; u64 as its bit pattern).
void decode(DType t, const std::vector<unsigned char>& raw, std::vector<double>& f, std::vector<int64_t>& i) {
  const size_t n = raw.size() / dtype_size(t);
  sdk::visit_dtype(to_c(t), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 0; k < n; ++k) {
      T v;
      std::memcpy(&v, raw.data() + k * sizeof(T), sizeof(T));
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, sdk::f16> || std::is_same_v<T, sdk::bf16>) {
        f.push_back(static_cast<double>(static_cast<float>(v)));
        if constexpr (std::is_same_v<T, double>) f.back() = v;
      } else if constexpr (std::is_same_v<T, bool>) {
        i.push_back(v ? 1 : 0);
      } else if constexpr (std::is_same_v<T, uint64_t>) {
        i.push_back(static_cast<int64_t>(v));
      } else {
        i.push_back(static_cast<int64_t>(v));
      }
    }
  });
}

double growth_factor(const std::string& growth, int64_t k) {
  const double kk = static_cast<double>(std::max<int64_t>(1, k));
  if (growth == "sqrt") return std::sqrt(kk);
  if (growth == "linear") return kk;
  return 1;
}

}  // namespace

Comparison compare_output(const Expected& want, const std::vector<unsigned char>& got, const Bound& bound,
                          int64_t reduction, bool norm_scale) {
  Comparison r;
  std::vector<double> gf;
  std::vector<int64_t> gi;
  decode(want.dtype, got, gf, gi);
  const bool fl = is_float(want.dtype);
  const size_t n = fl ? want.f.size() : want.i.size();
  if ((fl ? gf.size() : gi.size()) != n) {
    r.ok = false;
    r.error = std::numeric_limits<double>::infinity();
    r.detail = "output has " + std::to_string(fl ? gf.size() : gi.size()) + " elements, expected " +
               std::to_string(n);
    return r;
  }
  if (!fl) {
    for (size_t k = 0; k < n; ++k) {
      if (gi[k] == want.i[k]) continue;
      r.ok = false;
      r.error = std::fabs(static_cast<double>(gi[k]) - static_cast<double>(want.i[k]));
      r.threshold = 0;
      r.worst_index = static_cast<int64_t>(k);
      const bool u64 = want.dtype == DType::U64;
      auto show = [&](int64_t v) { return u64 ? std::to_string(static_cast<uint64_t>(v)) : std::to_string(v); };
      r.detail = "first mismatch at " + index_string(r.worst_index, want.shape) + ": got " + show(gi[k]) +
                 ", want " + show(want.i[k]) + " (exact, " + dtype_name(want.dtype) + ")";
      return r;
    }
    return r;
  }
  const double g = growth_factor(bound.growth, reduction);
  double tensor_scale = 0;
  if (norm_scale) {
    for (double w : want.f) {
      if (std::isfinite(w)) tensor_scale = std::max(tensor_scale, std::fabs(w));
    }
  }
  double worst_ratio = -1;
  for (size_t k = 0; k < n; ++k) {
    const double w = want.f[k], v = gf[k];
    double err, lim;
    if (std::isnan(w) || std::isnan(v)) {
      err = std::isnan(w) && std::isnan(v) ? 0 : std::numeric_limits<double>::infinity();
      lim = 0;
    } else if (std::isinf(w) || std::isinf(v)) {
      err = w == v ? 0 : std::numeric_limits<double>::infinity();
      lim = 0;
    } else {
      err = std::fabs(v - w);
      double s = std::fabs(w);
      if (!want.scale.empty()) s = std::max(s, want.scale[k]);
      s = std::max(s, tensor_scale);
      lim = (bound.atol + bound.rtol * s) * g;
    }
    const double ratio = err == 0 ? 0 : lim == 0 ? std::numeric_limits<double>::infinity() : err / lim;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      r.error = err;
      r.threshold = lim;
      r.worst_index = static_cast<int64_t>(k);
    }
  }
  if (worst_ratio > 1) {
    r.ok = false;
    const size_t k = static_cast<size_t>(r.worst_index);
    r.detail = "max error " + fmt(r.error) + " > threshold " + fmt(r.threshold) + " at " +
               index_string(r.worst_index, want.shape) + ": got " + fmt(gf[k]) + ", want " + fmt(want.f[k]) +
               " (rtol " + fmt(bound.rtol) + ", atol " + fmt(bound.atol) + ", growth " + bound.growth +
               " K=" + std::to_string(reduction) + "; " + bound.origin + ")";
  }
  return r;
}

Comparison compare_sort_indices(const Operand& input, int axis, const Expected& values,
                                const std::vector<unsigned char>& got_indices, DType index_dtype) {
  Comparison r;
  std::vector<double> unused;
  std::vector<int64_t> idx;
  decode(index_dtype, got_indices, unused, idx);
  const std::vector<double> in = input.logical_values();
  const Shape& shape = input.shape;
  const int64_t n = axis < static_cast<int>(shape.size()) ? shape[static_cast<size_t>(axis)] : 1;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t total = static_cast<int64_t>(in.size());
  if (static_cast<int64_t>(idx.size()) != total) {
    r.ok = false;
    r.detail = "indices output has the wrong size";
    return r;
  }
  for (int64_t base = 0; base < total; ++base) {
    if ((base / inner) % n != 0) continue;  // the first element of each row along `axis`
    std::vector<bool> seen(static_cast<size_t>(n), false);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t flat = base + j * inner;
      const int64_t ix = idx[static_cast<size_t>(flat)];
      const double want = values.f.empty() ? static_cast<double>(values.i[static_cast<size_t>(flat)])
                                           : values.f[static_cast<size_t>(flat)];
      bool ok = ix >= 0 && ix < n && !seen[static_cast<size_t>(ix)];
      if (ok) {
        seen[static_cast<size_t>(ix)] = true;
        const double v = in[static_cast<size_t>(base + ix * inner)];
        ok = v == want || (std::isnan(v) && std::isnan(want));
      }
      if (!ok) {
        r.ok = false;
        r.worst_index = flat;
        r.error = std::numeric_limits<double>::infinity();
        r.detail = "index " + std::to_string(ix) + " at " + index_string(flat, values.shape) +
                   " does not select a value equal to the sorted value " + fmt(want) +
                   " (or repeats an index)";
        return r;
      }
    }
  }
  return r;
}

// ---- expectations ---------------------------------------------------------------------------------

Expectations Expectations::load(const std::string& file) {
  Expectations e;
  if (file.empty()) return e;
  std::istringstream in;
  try {
    in.str(safe_file::read_text(file));  // a regular file of at most 1 MiB
  } catch (const std::exception& e) {
    throw Error(std::string("conformance: the expectations file ") + e.what());
  }
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream is(line);
    Entry entry;
    if (!(is >> entry.backend_glob)) continue;
    if (!(is >> entry.case_glob >> entry.kind) || (entry.kind != "XFAIL" && entry.kind != "SKIP")) {
      throw Error("conformance: " + file + ":" + std::to_string(number) +
                  ": expected `<backend glob> <case glob> XFAIL|SKIP <reason>`");
    }
    std::getline(is, entry.reason);
    entry.reason.erase(0, entry.reason.find_first_not_of(" \t"));
    if (entry.reason.empty()) {
      throw Error("conformance: " + file + ":" + std::to_string(number) + ": the entry needs a reason");
    }
    entry.where = file + ":" + std::to_string(number);
    e.entries_.push_back(std::move(entry));
  }
  return e;
}

const Expectations::Entry* Expectations::match(const std::string& backend, const std::string& case_id) const {
  for (const Entry& e : entries_) {
    if (glob_match(e.backend_glob, backend) && glob_match(e.case_glob, case_id)) {
      ++e.matched;
      return &e;
    }
  }
  return nullptr;
}

std::vector<std::string> Expectations::unmatched_warnings() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) {
    if (e.matched == 0) {
      out.push_back(e.where + ": expectation '" + e.backend_glob + " " + e.case_glob + " " + e.kind +
                    "' matched no case in this run");
    }
  }
  return out;
}

}  // namespace wick::conformance
