// `wick inspect model.onnx`: what a model is (inputs, outputs, opsets, op counts, initializers)
// and, for each usable device, whether Wick can run it there and which Wick ops would fall back to
// the CPU — found by running it once on that device (inputs from --input files, else zeros).
#include "commands.hpp"

#include <wick/error.hpp>
#include <wick/npy.hpp>
#include <wick/onnx/model.hpp>
#include <wick/runtime.hpp>

#include <iostream>
#include <map>
#include <set>

namespace wick::cli {

namespace {

void count_ops(const onnx::GraphProto& g, std::map<std::string, int>& top, std::map<std::string, int>& nested,
               bool is_top) {
  for (const onnx::NodeProto& n : g.nodes) {
    const std::string key = (n.domain.empty() || n.domain == "ai.onnx" ? "" : n.domain + ":") + n.op_type;
    ++(is_top ? top : nested)[key];
    for (const onnx::AttributeProto& a : n.attributes)
      if (a.has_graph && a.g) count_ops(*a.g, top, nested, false);
  }
}

void print_header(const std::string& path, const onnx::ModelProto& m) {
  std::cout << path << ": ONNX IR version " << m.ir_version;
  if (!m.producer_name.empty())
    std::cout << ", made by " << m.producer_name << (m.producer_version.empty() ? "" : " " + m.producer_version);
  std::cout << "\nopset imports:";
  for (const auto& [domain, version] : m.opset_imports) std::cout << " " << (domain.empty() ? "ai.onnx" : domain) << " " << version;
  std::cout << "\n";
}

void print_ops(const onnx::ModelProto& m) {
  std::map<std::string, int> top, nested;
  count_ops(m.graph, top, nested, true);
  int64_t init_bytes = 0;
  for (const onnx::TensorProto& t : m.graph.initializers) init_bytes += static_cast<int64_t>(t.nbytes());
  std::cout << m.graph.nodes.size() << " nodes, " << m.graph.initializers.size() << " initializers ("
            << init_bytes << " bytes)\nops:";
  for (const auto& [op, n] : top) std::cout << " " << op << " x" << n;
  if (!nested.empty()) {
    std::cout << "\nops in subgraphs:";
    for (const auto& [op, n] : nested) std::cout << " " << op << " x" << n;
  }
  std::cout << "\n";
}

// Why the importer refuses nodes of the file, once per distinct reason (empty: none).
std::vector<std::string> refusals(const onnx::ModelProto& m, const Device& device) {
  onnx::OnnxLowering check(device, m.opset, m.training_opset);
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const onnx::NodeProto& n : m.graph.nodes) {
    try {
      check.check(n);
    } catch (const std::exception& e) {
      if (seen.insert(e.what()).second) out.push_back(n.op_type + ": " + e.what());
    }
  }
  return out;
}

std::vector<onnx::Value> probe_inputs(const onnx::Model& model, const OnnxInspectArgs& args, const Device& device) {
  const std::map<std::string, Tensor> given = read_npy_inputs(args.inputs, device);
  std::vector<onnx::Value> ins;
  for (const onnx::ModelValue& in : model.inputs()) {
    if (const auto it = given.find(in.name); it != given.end()) {
      ins.push_back(onnx::Value::of(it->second));
      continue;
    }
    if (in.kind != onnx::Value::Kind::Tensor || !in.has_shape)
      throw Error("input '" + in.name + "' (" + in.describe() + ") has no fixed shape: give it with --input");
    Shape shape = in.shape;
    for (int64_t& d : shape)
      if (d < 0) d = args.symbolic_extent;
    ins.push_back(onnx::Value::of(Tensor::zeros(shape, in.dtype, device)));
  }
  return ins;
}

void probe_device(const onnx::ModelProto& proto, const Device& device, const OnnxInspectArgs& args, bool first) {
  std::cout << "on " << device.name() << " (" << device.description() << "): ";
  try {
    const onnx::Model model = onnx::Model::from_proto(proto, device);
    if (first) {
      std::cout << "optimised graph: " << model.optimize_report().summary() << " (" << model.graph().nodes.size()
                << " nodes)\n  ";
    }
    const std::vector<onnx::Value> ins = probe_inputs(model, args, device);
    Runtime::global().reset_fallbacks();
    model.run_values(ins);
    const auto records = Runtime::global().fallbacks();
    if (records.empty()) {
      std::cout << "runs every op on the device\n";
      return;
    }
    std::cout << "runs, with these Wick ops on the CPU instead:\n";
    for (const FallbackRecord& r : records)
      std::cout << "    " << r.op << " (" << r.dtype << "): " << r.reason << ", x" << r.count << "\n";
  } catch (const std::exception& e) {
    std::cout << "cannot run: " << e.what() << "\n";
  }
}

}  // namespace

int run_onnx_inspect(const ConfigOverrides& overrides, const OnnxInspectArgs& args) {
  Runtime::configure(resolve_config(overrides));
  const onnx::ModelProto proto = onnx::read_model(args.model);
  print_header(args.model, proto);
  print_ops(proto);
  const Device cpu = Runtime::global().cpu_device();
  try {
    const onnx::Model model = onnx::Model::from_proto(proto, cpu, onnx::ModelOptions{false, {}});
    for (const onnx::ModelValue& v : model.inputs()) std::cout << "input  " << v.name << ": " << v.describe() << "\n";
    for (const onnx::ModelValue& v : model.outputs()) std::cout << "output " << v.name << ": " << v.describe() << "\n";
  } catch (const std::exception& e) {
    std::cout << "not importable: " << e.what() << "\n";
  }
  const std::vector<std::string> refused = refusals(proto, cpu);
  for (const std::string& r : refused) std::cout << "refused: " << r << "\n";
  if (!refused.empty() || !args.probe) return refused.empty() ? 0 : 1;
  const bool strict = Runtime::global().strict();
  Runtime::global().set_strict(false);  // a probe reports fallbacks rather than stopping at one
  bool first = true;
  for (const Device& d : Runtime::global().registry().devices()) {
    probe_device(proto, d, args, first);
    first = false;
  }
  Runtime::global().set_strict(strict);
  return 0;
}

}  // namespace wick::cli
