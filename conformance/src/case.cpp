#include "case.hpp"

#include "base64.hpp"

#include <wick/error.hpp>
#include <wick/safe_file.hpp>
#include <wick/sdk/ops.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

namespace wick::conformance {

namespace fs = std::filesystem;
using nlohmann::json;

// The most bytes read from one golden data file (the largest checked in is about 121 KB).
constexpr uint64_t kMaxGoldenBytes = uint64_t{64} << 20;

// ---- dtypes, seeds, op codes ---------------------------------------------------------------------

DType parse_dtype(const std::string& name) {
  static const std::pair<const char*, DType> names[] = {
      {"f32", DType::F32}, {"f64", DType::F64}, {"f16", DType::F16}, {"bf16", DType::BF16},
      {"i8", DType::I8},   {"u8", DType::U8},   {"i16", DType::I16}, {"i32", DType::I32},
      {"i64", DType::I64}, {"u32", DType::U32}, {"u64", DType::U64}, {"bool", DType::Bool}};
  for (const auto& [n, t] : names) {
    if (name == n) return t;
  }
  throw Error("conformance: unknown dtype '" + name + "'");
}

bool is_float_dtype(DType t) { return is_float(t); }

uint64_t case_seed(uint64_t base_seed, const std::string& case_id) {
  uint64_t h = 0xCBF29CE484222325ull ^ base_seed;
  for (unsigned char c : case_id) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

std::vector<wick_op_code> sdk_op_codes() {
  std::vector<wick_op_code> codes;
  for (const sdk::OpInfo& o : sdk::kOps) codes.push_back(o.code);
  return codes;
}

wick_op_code op_code_of(const std::string& name) { return sdk::op_code_of(name); }

// ---- params ---------------------------------------------------------------------------------------

struct Params::Holder {
  wick_fill_params fill{};
  wick_reduce_params reduce{};
  wick_iota_params iota{};
  wick_rng_params rng{};
  wick_unary_params unary{};
  wick_axis_params axis{};
  wick_conv_params conv{};
  wick_window_params window{};
  wick_sort_params sort{};
  wick_norm_params norm{};
  wick_attention_params attention{};
  wick_optim_params optim{};
  wick_quant_params quant{};
  std::vector<int32_t> axes;
  std::vector<std::vector<int64_t>> arrays;
  const void* ptr = nullptr;
};

const void* Params::get() const { return holder_ ? holder_->ptr : nullptr; }

namespace {

// The case's params by key: a number (0 when absent), or an int64 array kept alive by the holder.
struct ParamReader {
  const ParamValues& values;
  Params::Holder& holder;

  Num num(const char* key) const {
    auto it = values.find(key);
    return it == values.end() || it->second.empty() ? Num{} : it->second.front();
  }
  int32_t i32(const char* key) const { return static_cast<int32_t>(num(key).i); }
  const int64_t* array(const char* key) const {
    auto it = values.find(key);
    if (it == values.end()) return nullptr;
    std::vector<int64_t> a;
    for (const Num& n : it->second) a.push_back(n.i);
    holder.arrays.push_back(std::move(a));
    return holder.arrays.back().data();
  }
};

// Fills the params struct of kind K from the case's values; returns it.
template <class P>
const void* fill(P& out, P value) {
  out = value;
  out.struct_size = sizeof(P);
  return &out;
}

const void* build_params(sdk::ParamsKind kind, const ParamReader& r, Params::Holder& h) {
  using K = sdk::ParamsKind;
  switch (kind) {
    case K::none: return nullptr;
    case K::fill: return fill(h.fill, {0, r.num("float_value").d, r.num("int_value").i});
    case K::iota:
      return fill(h.iota, {0, r.i32("axis"), r.num("float_start").d, r.num("float_step").d,
                           r.num("int_start").i, r.num("int_step").i});
    case K::rng:
      return fill(h.rng, {0, static_cast<uint64_t>(r.num("seed").i), static_cast<uint64_t>(r.num("offset").i),
                          r.num("a").d, r.num("b").d});
    case K::unary:  // optional: absent params mean the op's defaults
      if (r.values.empty()) return nullptr;
      return fill(h.unary, {0, r.num("alpha").d, r.num("beta").d, r.i32("mode")});
    case K::reduce: {
      if (auto it = r.values.find("axes"); it != r.values.end())
        for (const Num& n : it->second) h.axes.push_back(static_cast<int32_t>(n.i));
      return fill(h.reduce, {0, h.axes.data(), static_cast<int32_t>(h.axes.size())});
    }
    case K::axis: return fill(h.axis, {0, r.i32("axis"), r.i32("flag")});
    case K::conv:
      return fill(h.conv, {0, r.i32("spatial_rank"), r.array("strides"), r.array("padding_lo"),
                           r.array("padding_hi"), r.array("dilations"), r.array("input_dilations"),
                           r.num("groups").i});
    case K::window:
      return fill(h.window, {0, r.i32("rank"), r.array("window"), r.array("strides"), r.array("padding_lo"),
                             r.array("padding_hi"), r.array("dilations"), r.num("init_value").d});
    case K::sort: return fill(h.sort, {0, r.i32("axis"), r.i32("descending"), r.i32("stable")});
    case K::norm: return fill(h.norm, {0, r.i32("num_axes"), r.num("epsilon").d});
    case K::attention: return fill(h.attention, {0, r.num("scale").d, r.i32("causal")});
    case K::optim:
      return fill(h.optim, {0, r.num("lr").d, r.num("beta1").d, r.num("beta2").d, r.num("eps").d,
                            r.num("weight_decay").d, r.num("bias_correction1").d,
                            r.num("bias_correction2").d, r.i32("flags")});
    case K::quant:
      return fill(h.quant, {0, r.i32("type"), r.num("k").i, static_cast<uint32_t>(r.num("flags").i)});
  }
  return nullptr;
}

}  // namespace

// The params struct is the op table's (wick_ops.h's PARAMS column); each field is read by name.
Params Params::build(wick_op_code op, const ParamValues& values) {
  Params p;
  const sdk::OpInfo* info = sdk::op_info(op);
  if (info == nullptr) return p;
  auto h = std::make_shared<Holder>();
  h->ptr = build_params(info->params, ParamReader{values, *h}, *h);
  if (h->ptr != nullptr) p.holder_ = std::move(h);
  return p;
}

// ---- operands -------------------------------------------------------------------------------------

int64_t Operand::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<double> Operand::logical_values() const {
  std::vector<double> out;
  const int64_t n = numel();
  if (n == 0) return out;
  out.reserve(static_cast<size_t>(n));
  const size_t esize = dtype_size(dtype);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = offset;
    for (size_t d = 0; d < shape.size(); ++d) off += index[d] * strides[d];
    const unsigned char* p = bytes.data() + static_cast<size_t>(off) * esize;
    sdk::visit_dtype(to_c(dtype), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T v;
      std::memcpy(&v, p, sizeof(T));
      out.push_back(static_cast<double>(v));
    });
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// ---- golden files ---------------------------------------------------------------------------------

namespace {

Num to_num(const json& v) {
  Num n;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    n.d = s == "nan" ? std::numeric_limits<double>::quiet_NaN()
          : s == "inf" ? std::numeric_limits<double>::infinity()
          : s == "-inf" ? -std::numeric_limits<double>::infinity()
                        : std::stod(s);
  } else if (v.is_number_integer()) {
    n.i = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
    n.d = static_cast<double>(n.i);
  } else if (v.is_boolean()) {
    n.i = v.get<bool>() ? 1 : 0;
    n.d = static_cast<double>(n.i);
  } else {
    n.d = v.get<double>();
    n.i = saturating_i64(n.d);
  }
  return n;
}

ParamValues to_params(const json& obj) {
  ParamValues values;
  if (!obj.is_object()) return values;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::vector<Num> v;
    if (it.value().is_array()) {
      for (const json& e : it.value()) v.push_back(to_num(e));
    } else {
      v.push_back(to_num(it.value()));
    }
    values[it.key()] = std::move(v);
  }
  return values;
}

Shape to_shape(const json& j) { return j.get<std::vector<int64_t>>(); }

std::vector<double> decode_f64(const std::string& b64) {
  const std::vector<unsigned char> raw = base64_decode(b64);
  std::vector<double> out(raw.size() / 8);
  if (!out.empty()) std::memcpy(out.data(), raw.data(), out.size() * 8);  // no memcpy from null
  return out;
}

}  // namespace

struct GoldenStore::File {
  std::string op;
  wick_op_code code = WICK_OP_INVALID;
  json cases;
  json large;
};

GoldenStore::GoldenStore(std::string directory) : directory_(std::move(directory)) {
  std::error_code ec;
  std::vector<std::pair<int, std::string>> found;
  for (fs::directory_iterator it(directory_, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    const std::string stem = it->path().stem().string();
    found.emplace_back(static_cast<int>(op_code_of(stem)), stem);
  }
  if (ec) throw Error("conformance: cannot read the golden data directory " + directory_ + ": " + ec.message());
  std::sort(found.begin(), found.end());
  for (auto& [code, stem] : found) ops_.push_back(stem);
}

const GoldenStore::File& GoldenStore::file(const std::string& op) const {
  auto it = cache_.find(op);
  if (it != cache_.end()) return *it->second;
  const std::string path = directory_ + "/" + op + ".json";
  // A regular file of bounded size (the largest golden file is 121 KB): never a FIFO or a device.
  if (auto why = safe_file::refuse(path, kMaxGoldenBytes)) throw Error("conformance: " + path + ": " + *why);
  std::ifstream in(path);
  if (!in) throw Error("conformance: no golden file " + path);
  auto f = std::make_shared<File>();
  json j;
  try {
    j = json::parse(in);
  } catch (const std::exception& e) {
    throw Error("conformance: cannot parse " + path + ": " + e.what());
  }
  f->op = op;
  f->code = static_cast<wick_op_code>(j.at("op_code").get<int>());
  if (op_code_of(op) != f->code) {
    throw Error("conformance: " + path + " says op '" + op + "' has code " + std::to_string(f->code) +
                " but the SDK header disagrees; regenerate the golden data");
  }
  f->cases = std::move(j.at("cases"));
  f->large = std::move(j.at("large"));
  return *cache_.emplace(op, std::move(f)).first->second;
}

std::vector<CaseInfo> GoldenStore::list(bool golden, bool diff) const {
  std::vector<CaseInfo> out;
  for (const std::string& op : ops_) {
    const File& f = file(op);
    if (golden) {
      for (const json& c : f.cases)
        out.push_back({"golden/" + c.at("id").get<std::string>(), "golden", op, c.at("dtype").get<std::string>()});
    }
    if (diff) {
      for (const json& c : f.large)
        out.push_back({"diff/" + c.at("id").get<std::string>(), "diff", op, c.at("dtype").get<std::string>()});
    }
  }
  return out;
}

std::map<std::string, int> GoldenStore::golden_counts() const {
  std::map<std::string, int> counts;
  for (const std::string& op : ops_) counts[op] = static_cast<int>(file(op).cases.size());
  return counts;
}

Case GoldenStore::load(const std::string& id, uint64_t base_seed) const {
  const size_t slash = id.find('/');
  const size_t slash2 = slash == std::string::npos ? slash : id.find('/', slash + 1);
  if (slash2 == std::string::npos) throw Error("conformance: malformed case id '" + id + "'");
  const std::string source = id.substr(0, slash);
  const std::string op = id.substr(slash + 1, slash2 - slash - 1);
  if (source != "golden" && source != "diff") throw Error("conformance: '" + id + "' is not a golden or diff case");
  const File& f = file(op);
  const std::string local = id.substr(slash + 1);
  const json& list = source == "golden" ? f.cases : f.large;
  for (const json& c : list) {
    if (c.at("id").get<std::string>() != local) continue;
    Case out;
    out.info = {id, source, op, c.at("dtype").get<std::string>()};
    out.code = f.code;
    out.params = Params::build(f.code, to_params(c.value("params", json::object())));
    out.tolerance = c.value("tolerance", "exact");
    out.reduction = c.value("reduction", int64_t{1});
    out.check = c.value("check", "");
    for (const json& in : c.at("inputs")) {
      if (source == "golden") {
        Operand o;
        o.dtype = parse_dtype(in.at("dtype").get<std::string>());
        o.shape = to_shape(in.at("shape"));
        o.strides = in.at("strides").get<std::vector<int64_t>>();
        o.offset = in.at("offset").get<int64_t>();
        o.storage = in.at("storage").get<int64_t>();
        o.bytes = base64_decode(in.at("data").get<std::string>());
        if (o.bytes.size() != static_cast<size_t>(o.storage) * dtype_size(o.dtype))
          throw Error("conformance: " + id + ": operand data has the wrong size");
        out.inputs.push_back(std::move(o));
      } else {
        RandomSpec r;
        r.dtype = parse_dtype(in.at("dtype").get<std::string>());
        r.shape = to_shape(in.at("shape"));
        const json& dom = in.at("domain");
        if (dom.is_string() && dom.get<std::string>() == "bool") {
          r.is_bool = true;
        } else if (dom.is_array() && dom.size() == 2 && dom[0].is_string()) {
          r.index_bound = dom[1].get<int64_t>();
        } else if (dom.is_array() && dom.size() == 2) {
          r.lo = dom[0].get<double>();
          r.hi = dom[1].get<double>();
          r.has_range = true;
        }
        out.random_inputs.push_back(r);
      }
    }
    for (const json& o : c.at("outputs")) {
      Expected e;
      e.dtype = parse_dtype(o.at("dtype").get<std::string>());
      e.shape = to_shape(o.at("shape"));
      if (o.contains("expected")) {
        const std::vector<unsigned char> raw = base64_decode(o.at("expected").get<std::string>());
        if (is_float(e.dtype)) {
          e.f.resize(raw.size() / 8);
          if (!e.f.empty()) std::memcpy(e.f.data(), raw.data(), e.f.size() * 8);
        } else {
          e.i.resize(raw.size() / 8);
          if (!e.i.empty()) std::memcpy(e.i.data(), raw.data(), e.i.size() * 8);
        }
      }
      if (o.contains("scale")) e.scale = decode_f64(o.at("scale").get<std::string>());
      out.outputs.push_back(std::move(e));
    }
    if (source == "diff") materialize(out, case_seed(base_seed, id));
    return out;
  }
  throw Error("conformance: no case '" + id + "' in " + directory_ + "/" + op + ".json");
}

// ---- random data ----------------------------------------------------------------------------------

namespace {

// SplitMix64: a tiny, fully specified generator, so the same seed gives the same data everywhere.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }
};

void default_int_range(DType t, double& lo, double& hi) {
  switch (t) {
    case DType::U8: case DType::U32: case DType::U64: lo = 0; hi = 100; break;
    default: lo = -50; hi = 50; break;
  }
}

}  // namespace

void materialize(Case& c, uint64_t seed) {
  SplitMix rng{seed};
  c.inputs.clear();
  for (const RandomSpec& r : c.random_inputs) {
    Operand o;
    o.dtype = r.dtype;
    o.shape = r.shape;
    o.strides.assign(r.shape.size(), 1);
    for (size_t d = r.shape.size(); d-- > 1;) o.strides[d - 1] = o.strides[d] * r.shape[d];
    o.storage = o.numel();
    o.bytes.resize(static_cast<size_t>(o.storage) * dtype_size(o.dtype));
    double lo = r.lo, hi = r.hi;
    if (!r.has_range && !is_float(r.dtype)) default_int_range(r.dtype, lo, hi);
    for (int64_t k = 0; k < o.storage; ++k) {
      double v;
      if (r.is_bool) {
        v = static_cast<double>(rng.next() >> 63);
      } else if (r.index_bound > 0) {
        v = static_cast<double>(rng.next() % static_cast<uint64_t>(r.index_bound));
      } else if (is_float(r.dtype)) {
        v = lo + (hi - lo) * rng.uniform();
      } else {
        v = std::floor(lo + (hi - lo + 1) * rng.uniform());
      }
      store_value(o.dtype, v, o.bytes.data() + static_cast<size_t>(k) * dtype_size(o.dtype));
    }
    c.inputs.push_back(std::move(o));
  }
}

}  // namespace wick::conformance
