#include "onnx_import.hpp"

#include "compare.hpp"
#include "execute.hpp"
#include <wick/onnx/lower.hpp>
#include <wick/onnx/narrow_types.hpp>
#include <wick/onnx/proto.hpp>

#include <wick/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace wick::conformance {

// The importer is Wick::onnx's (onnx/include/wick/onnx/lower.hpp); this file makes its node tests cases.
using onnx::Declined;
using onnx::ExecuteFailed;
using onnx::kind_name;
using onnx::NotImportable;
using onnx::onnx_dtype;
using onnx::OnnxLowering;
using onnx::upload_proto;
using onnx::upload_value;
using onnx::Value;

namespace fs = std::filesystem;

OnnxStore::OnnxStore(std::string directory) : directory_(std::move(directory)) {
  std::error_code ec;
  available_ = !directory_.empty() && fs::is_directory(directory_, ec);
}

std::string OnnxStore::unavailable_reason() const {
  if (available_) return "";
  std::error_code ec;
  const fs::file_status st = fs::status(directory_, ec);
  if (ec) return directory_ + ": " + ec.message();
  return directory_ + ": is not a directory";
}

namespace {

// Whether `path` exists; a ReadError naming it when that cannot be told (a symlink loop, no
// permission), so that such a path is reported, not taken for a missing file.
bool exists_or_throw(const std::string& path) {
  std::error_code ec;
  const bool there = fs::exists(path, ec);
  if (ec) throw onnx::ReadError(path + ": " + ec.message());
  return there;
}

// The names of `dir`'s entries that are directories or whose status cannot be read (a symlink
// loop: listed, so that its case reports it); an unreadable `dir` gives none.
std::vector<std::string> folder_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code st;
    if (it->is_directory(st) || st) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

std::vector<CaseInfo> OnnxStore::list() const {
  std::vector<CaseInfo> out;
  if (!available_) return out;
  const std::vector<std::string> folders = folder_names(directory_);
  for (const std::string& f : folders) {
    std::string op = "?";
    try {
      // An _expanded folder is its sibling's op written as a subgraph: list it under that op.
      const bool expanded = f.size() > 9 && f.compare(f.size() - 9, 9, "_expanded") == 0;
      const std::string sibling = expanded ? f.substr(0, f.size() - 9) : f;
      std::error_code ec2;
      const std::string model = fs::exists(directory_ + "/" + sibling + "/model.onnx", ec2) ? sibling : f;
      const onnx::ModelProto m = onnx::read_model(directory_ + "/" + model + "/model.onnx");
      // Every op type of the graph, in first-seen order: the matrix files the folder under each.
      std::string types;
      for (const onnx::NodeProto& node : m.graph.nodes)
        if (("," + types + ",").find("," + node.op_type + ",") == std::string::npos)
          types += (types.empty() ? "" : ",") + node.op_type;
      if (!types.empty()) op = types;
    } catch (const std::exception&) {
      op = "unreadable";
    }
    out.push_back({"onnx/" + f, "onnx", "onnx:" + op, ""});
  }
  return out;
}

}  // namespace wick::conformance


namespace wick::conformance {

namespace {

Expected expected_from(const onnx::TensorProto& t) {
  Expected e;
  e.shape.assign(t.dims.begin(), t.dims.end());
  if (onnx::narrow::is_narrow(t.data_type)) {  // compared with the holder the importer keeps it in
    e.dtype = onnx::narrow::holder(t.data_type);
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    std::vector<double> v;
    try {
      v = onnx::narrow::unpack(t.data_type, t.data, static_cast<size_t>(n));
    } catch (const std::invalid_argument& ex) {
      throw onnx::ReadError(std::string("expected output of ") + onnx::narrow::name(t.data_type) + ": " + ex.what());
    }
    for (double x : v) {
      if (is_float(e.dtype)) {
        e.f.push_back(x);
      } else {
        e.i.push_back(static_cast<int64_t>(x));
      }
    }
    return e;
  }
  if (t.data_type == onnx::kUint16) {  // compared with the u32 the importer holds uint16 in
    e.dtype = DType::U32;
    for (size_t k = 0; k + 2 <= t.data.size(); k += 2) {
      uint16_t v;
      std::memcpy(&v, t.data.data() + k, 2);
      e.i.push_back(v);
    }
    return e;
  }
  e.dtype = onnx_dtype(t.data_type);
  const size_t n = t.data.size() / dtype_size(e.dtype);
  sdk::visit_dtype(to_c(e.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 0; k < n; ++k) {
      T v;
      std::memcpy(&v, t.data.data() + k * sizeof(T), sizeof(T));
      if (is_float(e.dtype)) {
        e.f.push_back(static_cast<double>(v));
      } else {
        e.i.push_back(static_cast<int64_t>(v));
      }
    }
  });
  return e;
}

// The folder's test_data_set_* directories; one whose status cannot be read (a symlink loop) is
// a ReadError naming it.
std::vector<std::string> data_sets(const std::string& folder) {
  std::vector<std::string> sets;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("test_data_set_", 0) != 0) continue;
    std::error_code st;
    const bool dir = it->is_directory(st);
    if (st) throw onnx::ReadError(it->path().string() + ": " + st.message());
    if (dir) sets.push_back(it->path().string());
  }
  if (ec) throw onnx::ReadError(folder + ": " + ec.message());
  std::sort(sets.begin(), sets.end());
  return sets;
}

// A type the importer can hold: tensors of a Wick dtype, in sequences and optionals.
void check_type(const onnx::ValueInfo& v, const char* what) {
  if (!v.type.tensor)
    throw NotImportable(std::string(what) + " '" + v.name + "' is not a tensor, sequence or optional (map, sparse)");
  // uint16 is held as u32, the narrow types in their holders (wick/onnx/narrow_types.hpp)
  if (v.type.elem_type != onnx::kUint16 && !onnx::narrow::is_narrow(v.type.elem_type)) onnx_dtype(v.type.elem_type);
}

// The ONNX 1.12 test generator wrote bfloat16 tensors with data_type UINT16: take the graph's
// declared bfloat16 for them.
void declared_bfloat16(onnx::ValueProto& v, const onnx::TypeInfo& type) {
  if (type.elem_type != onnx::kBfloat16) return;
  if (v.kind == onnx::ValueProto::Kind::Tensor && v.tensor.data_type == onnx::kUint16) v.tensor.data_type = onnx::kBfloat16;
  for (onnx::ValueProto& item : v.items) declared_bfloat16(item, type);
}

onnx::ValueProto read_declared(const std::string& file, const onnx::TypeInfo& type) {
  onnx::ValueProto v = onnx::read_value(file, type);
  declared_bfloat16(v, type);
  return v;
}

// A folder's own bound, from its tolerance.json (onnx/tools/make_node_tests.py writes the
// TestCase's rtol/atol there, and the bfloat16 rtol onnx's runner widens them to): the outputs are
// compared at exactly that, never looser.
struct FolderTolerance {
  double rtol = 0, atol = 0, bfloat16_rtol = 0;
};

// One number of a flat JSON object of numbers (the only form tolerance.json has).
std::optional<double> json_number(const std::string& text, const std::string& key, const std::string& file) {
  const size_t k = text.find("\"" + key + "\"");
  if (k == std::string::npos) return std::nullopt;
  const size_t colon = text.find_first_not_of(" \t\r\n", k + key.size() + 2);
  if (colon == std::string::npos || text[colon] != ':') throw onnx::ReadError(file + ": no ':' after \"" + key + "\"");
  const char* start = text.c_str() + colon + 1;
  char* end = nullptr;
  const double v = std::strtod(start, &end);
  if (end == start || !(v >= 0) || v > 1) throw onnx::ReadError(file + ": \"" + key + "\" is not a number in [0, 1]");
  return v;
}

// The folder's tolerance.json, when it has one; a file that is not a small regular file of the
// expected keys is a ReadError naming it (never a hang on a FIFO, never a default bound).
std::optional<FolderTolerance> folder_tolerance(const std::string& folder) {
  const std::string file = folder + "/tolerance.json";
  if (!exists_or_throw(file)) return std::nullopt;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec) || fs::file_size(file, ec) > 4096 || ec)
    throw onnx::ReadError(file + ": not a regular file of at most 4096 bytes");
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  FolderTolerance t;
  const std::optional<double> rtol = json_number(text, "rtol", file), atol = json_number(text, "atol", file);
  if (!rtol || !atol) throw onnx::ReadError(file + ": needs \"rtol\" and \"atol\"");
  t.rtol = *rtol;
  t.atol = *atol;
  t.bfloat16_rtol = json_number(text, "bfloat16_rtol", file).value_or(t.rtol);
  return t;
}

// The bound an output of `dtype` is compared with: the folder's own where it has one, else
// tolerances.toml's onnx class (with its overrides).
Bound output_bound(const ExecContext& ctx, const std::optional<FolderTolerance>& own, DType dtype, const Result& r) {
  if (!own) return ctx.tolerances->bound("onnx", dtype, r.id, ctx.backend);
  Bound b = ctx.tolerances->bound("onnx", dtype, r.id, ctx.backend);  // exact for integers and bool
  if (!is_float(dtype)) return b;
  b.rtol = dtype == DType::BF16 ? own->bfloat16_rtol : own->rtol;
  b.atol = own->atol;
  b.growth = "none";
  b.origin = "the folder's tolerance.json";
  return b;
}

// Compares one output value (a tensor, or each element of a sequence or optional); returns an
// empty string when it matches, else why not.
std::string compare_value(const ExecContext& ctx, const std::optional<FolderTolerance>& own, OnnxLowering& low,
                          const onnx::ValueProto& want_v, const Value& got_v, const std::string& label, Result& r) {
  const Value::Kind want_kind = want_v.kind == onnx::ValueProto::Kind::Tensor     ? Value::Kind::Tensor
                                : want_v.kind == onnx::ValueProto::Kind::Sequence ? Value::Kind::Sequence
                                                                                  : Value::Kind::Optional;
  if (got_v.kind != want_kind)
    return label + " is a " + kind_name(got_v.kind) + ", expected a " + kind_name(want_kind);
  if (want_kind != Value::Kind::Tensor) {
    if (got_v.items.size() != want_v.items.size())
      return label + " has " + std::to_string(got_v.items.size()) + " elements, expected " + std::to_string(want_v.items.size());
    for (size_t i = 0; i < want_v.items.size(); ++i) {
      const std::string why = compare_value(ctx, own, low, want_v.items[i], got_v.items[i], label + "[" + std::to_string(i) + "]", r);
      if (!why.empty()) return why;
    }
    return "";
  }
  const Expected want = expected_from(want_v.tensor);
  const int32_t want_narrow = onnx::narrow::is_narrow(want_v.tensor.data_type) ? want_v.tensor.data_type : 0;
  if (got_v.narrow != want_narrow)
    return label + " is of ONNX type " + std::to_string(got_v.narrow) + ", expected " + std::to_string(want_narrow);
  const Tensor got = low.contiguous(got_v.tensor);
  if (got.dtype() != want.dtype)
    return label + " has dtype " + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype);
  if (got.shape() != want.shape)
    return label + " has shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(want.shape);
  std::vector<unsigned char> raw(static_cast<size_t>(got.numel()) * dtype_size(got.dtype()));
  if (!raw.empty()) got.copy_to_host(raw.data(), raw.size());
  Bound b = output_bound(ctx, own, want.dtype, r);
  if (want_narrow != 0) b = Bound{0, 0, "none", std::string("exact: ") + onnx::narrow::name(want_narrow)};
  const Comparison c = compare_output(want, raw, b, 1);
  if (!c.ok) {
    r.error = c.error;
    r.threshold = c.threshold;
    r.worst_index = c.worst_index >= 0 ? index_string(c.worst_index, want.shape) : "";
    return label + ": " + c.detail;
  }
  return "";
}

// Runs one data set; returns an empty string when every output matches, else why not.
std::string run_data_set(const ExecContext& ctx, const std::optional<FolderTolerance>& own, const onnx::ModelProto& model,
                         const std::string& set, Result& r) {
  OnnxLowering low(ctx.device, model.opset, model.training_opset);
  for (const onnx::TensorProto& init : model.graph.initializers)
    low.set_value(init.name, onnx::upload_tensor_value(init, ctx.device));
  size_t k = 0;
  for (const onnx::ValueInfo& v : model.graph.inputs) {
    if (low.has(v.name)) continue;
    check_type(v, "graph input");
    const std::string file = set + "/input_" + std::to_string(k++) + ".pb";
    if (!exists_or_throw(file)) continue;  // an omitted optional input
    low.set_value(v.name, upload_value(read_declared(file, v.type), ctx.device));
  }
  for (const onnx::ValueInfo& v : model.graph.outputs) check_type(v, "graph output");
  for (const onnx::NodeProto& node : model.graph.nodes) low.run(node);
  for (size_t o = 0; o < model.graph.outputs.size(); ++o) {
    const onnx::ValueInfo& out = model.graph.outputs[o];
    const onnx::ValueProto want = read_declared(set + "/output_" + std::to_string(o) + ".pb", out.type);
    const std::string why = compare_value(ctx, own, low, want, low.value(out.name), "output '" + out.name + "'", r);
    if (!why.empty()) return why;
  }
  return "";
}

// Node-test folders whose expected outputs contradict their own model, checked by hand against the
// operator spec: SKIP with the reason, since the data, not the backend, is wrong.
struct DataError {
  const char* id;
  const char* reason;
};
constexpr DataError kDataErrors[] = {
    {"onnx/test_adam_multiple",
     "the expected outputs were computed with epsilon = 0.01, which the node does not set (Adam's "
     "default is 1e-6): X2_new[0] = 0.628653 = 1 - 0.1 * 3.75005 / (sqrt(0.9997) + 0.01)"},
};

}  // namespace

Result run_onnx_case(const ExecContext& ctx, const OnnxStore& store, const std::string& id) {
  Result r;
  r.id = id;
  r.source = "onnx";
  const std::string folder = store.directory() + "/" + id.substr(5);
  for (const DataError& e : kDataErrors) {
    if (id == e.id && fs::path(store.directory()).filename() == "node") {
      r.status = "SKIP";
      r.message = std::string("test data: ") + e.reason;
      return r;
    }
  }
  try {
    // A folder without a model (the package's `real` models ship only a data.json with a
    // download address) is not the backend's failure: SKIP, saying so.
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
      throw onnx::ReadError(folder + ": " + (ec ? ec.message() : "not a directory"));
    if (!exists_or_throw(folder + "/model.onnx"))
      throw NotImportable("no model.onnx in " + folder +
                          (fs::exists(folder + "/data.json", ec) ? " (only data.json: the model is "
                                                                   "downloaded separately)"
                                                                 : ""));
    const onnx::ModelProto model = onnx::read_model(folder + "/model.onnx");
    const std::vector<std::string> sets = data_sets(folder);
    if (sets.empty()) throw NotImportable("no test_data_set_* in " + folder);
    const std::optional<FolderTolerance> own = folder_tolerance(folder);
    for (const std::string& set : sets) {
      const std::string why = run_data_set(ctx, own, model, set, r);
      if (!why.empty()) {
        r.status = "FAIL";
        r.message = fs::path(set).filename().string() + ": " + why;
        return r;
      }
    }
    r.status = "PASS";
  } catch (const NotImportable& e) {
    r.status = "SKIP";
    r.message = std::string("importer: ") + e.what();
  } catch (const onnx::ReadError& e) {
    r.status = "SKIP";
    r.message = std::string("unreadable: ") + e.what();
  } catch (const Declined& e) {
    r.status = "UNSUPPORTED";
    r.message = std::string("plugin declined ") + e.what();
  } catch (const ExecuteFailed& e) {
    r.status = "FAIL";
    r.message = std::string("op_execute failed: ") + e.what();
  } catch (const std::exception& e) {
    r.status = "FAIL";
    r.message = std::string("error: ") + e.what();
  }
  return r;
}

}  // namespace wick::conformance
