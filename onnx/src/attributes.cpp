// attributes.cpp — the check that no node runs on an attribute the importer does not implement.
// Before a lowering runs, every attribute of the node must be in the op's schema at the model's
// opset (schemas.inc, generated from the onnx wheel by onnx/tools/generate_schemas.py); after it
// ran, every attribute it did not read must hold the schema's default. Enumerated values are read
// through attr_choice, which refuses a value outside the implemented set. Each refusal is
// NotImportable naming op, opset, attribute and value: the suite's SKIP, never a silent default.
#include "lowerings.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace wick::onnx {

namespace {

struct SchemaRow {
  const char* op_type;
  int64_t since;
  const char* attributes;  // "name" or "name=<i|f|s><default>", space-separated
};
constexpr SchemaRow kSchemas[] = {
#include "schemas.inc"
    // Wick's own fused ops (optimize.hpp), keyed by their domain as the lowering table has them
    {"com.wick.fused.FusedConv", 1, "activation auto_pad=sNOTSET dilations group=i1 kernel_shape pads strides"},
};

// name -> default ("" when the schema gives none), of one op version.
using Attributes = std::map<std::string, std::string>;

// The attributes of op_type's newest schema version at or below `opset`; nullptr when the op has
// no schema there (the lowering table then has no row for it either).
const Attributes* schema(const std::string& op_type, int64_t opset) {
  static const std::map<std::string, std::map<int64_t, Attributes>> by_op = [] {
    std::map<std::string, std::map<int64_t, Attributes>> m;
    for (const SchemaRow& row : kSchemas) {
      Attributes& a = m[row.op_type][row.since];
      std::istringstream words(row.attributes);
      for (std::string w; words >> w;) {
        const size_t eq = w.find('=');
        a[w.substr(0, eq)] = eq == std::string::npos ? "" : w.substr(eq + 1);
      }
    }
    return m;
  }();
  const auto op = by_op.find(op_type);
  if (op == by_op.end()) return nullptr;
  auto v = op->second.upper_bound(opset);
  if (v == op->second.begin()) return nullptr;
  return &std::prev(v)->second;
}

std::string value_string(const onnx::AttributeProto& a) {
  std::ostringstream s;
  switch (a.type) {
    case 1: s << a.f; break;
    case 2: s << a.i; break;
    case 3: s << '"' << a.s << '"'; break;
    case 6: s << shape_to_string(std::vector<int64_t>(a.floats.begin(), a.floats.end())); break;
    case 7: s << shape_to_string(a.ints); break;
    default: s << "(of attribute type " << a.type << ")";
  }
  return s.str();
}

// Whether `a` holds the schema default `d` ("i0", "f-0.75", "sDCR"; "" is no default).
bool is_default(const onnx::AttributeProto& a, const std::string& d) {
  if (d.empty()) return false;
  const std::string v = d.substr(1);
  if (d[0] == 'i') return a.type == 2 && a.i == std::stoll(v);
  if (d[0] == 'f') return a.type == 1 && a.f == std::stof(v);
  return d[0] == 's' && a.type == 3 && a.s == v;
}

}  // namespace

std::string OnnxLowering::Impl::node_context() const {
  return "ONNX op " + n.op_type + " (opset " + std::to_string(version) + ")";
}

const onnx::AttributeProto* OnnxLowering::Impl::attr(const char* name) const {
  if (std::find(read_.begin(), read_.end(), name) == read_.end()) read_.emplace_back(name);
  return n.attribute(name);
}

void OnnxLowering::Impl::refuse_attr(const onnx::AttributeProto& a, const std::string& why) const {
  throw NotImportable(node_context() + ": attribute '" + a.name + "' = " + value_string(a) + " " + why);
}

std::string OnnxLowering::Impl::attr_choice(const char* name, const char* dflt,
                                            std::initializer_list<const char*> implemented) const {
  const onnx::AttributeProto* a = attr(name);
  const std::string v = a != nullptr ? a->s : dflt;
  for (const char* c : implemented)
    if (v == c) return v;
  std::string list;
  for (const char* c : implemented) list += (list.empty() ? "" : ", ") + std::string(c);
  if (a == nullptr)  // a required attribute (no default in `implemented`)
    throw NotImportable(node_context() + ": attribute '" + name + "' is missing (one of " + list + ")");
  refuse_attr(*a, "is not implemented by the importer (it implements " + list + ")");
}

void OnnxLowering::Impl::check_attributes_known(const std::string& schema_op) const {
  const Attributes* known = schema(schema_op, version);
  if (known == nullptr)
    throw NotImportable(node_context() + ": the op has no schema at this opset in ONNX " + kCheckedRelease +
                        " (it first appears at a later one)");
  for (const onnx::AttributeProto& a : n.attributes)
    if (known->count(a.name) == 0)
      refuse_attr(a, "is not in the op's schema at this opset (ONNX " + std::string(kCheckedRelease) + ")");
}

void OnnxLowering::Impl::check_attributes_read(const std::string& schema_op) const {
  const Attributes* known = schema(schema_op, version);
  for (const onnx::AttributeProto& a : n.attributes) {
    if (std::find(read_.begin(), read_.end(), a.name) != read_.end()) continue;
    const std::string& d = known->at(a.name);
    if (is_default(a, d)) continue;
    refuse_attr(a, "is not implemented by the importer" +
                       (d.empty() ? std::string() : " (only its default, " + d.substr(1) + ")"));
  }
}

void OnnxLowering::Impl::check_inputs_read() const {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (!n.inputs[i].empty() && (i >= inputs_read_.size() || !inputs_read_[i]))
      throw NotImportable(node_context() + ": input " + std::to_string(i) + " ('" + n.inputs[i] +
                          "') is not implemented by the importer (its lowering does not use it)");
}

}  // namespace wick::onnx
