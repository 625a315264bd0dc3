#include "onnx_import.hpp"

#include "execute.hpp"
#include "onnx_proto.hpp"

#include <wick/error.hpp>

#include <algorithm>
#include <filesystem>

namespace wick::conformance {

namespace fs = std::filesystem;

OnnxStore::OnnxStore(std::string directory) : directory_(std::move(directory)) {
  std::error_code ec;
  available_ = !directory_.empty() && fs::is_directory(directory_, ec);
}

std::vector<CaseInfo> OnnxStore::list() const {
  std::vector<CaseInfo> out;
  if (!available_) return out;
  std::vector<std::string> folders;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(directory_, ec)) {
    if (e.is_directory()) folders.push_back(e.path().filename().string());
  }
  std::sort(folders.begin(), folders.end());
  for (const std::string& f : folders) {
    std::string op = "?";
    try {
      // An _expanded folder is its sibling's op written as a subgraph: list it under that op.
      const bool expanded = f.size() > 9 && f.compare(f.size() - 9, 9, "_expanded") == 0;
      const std::string sibling = expanded ? f.substr(0, f.size() - 9) : f;
      std::error_code ec2;
      const std::string model = fs::exists(directory_ + "/" + sibling + "/model.onnx", ec2) ? sibling : f;
      const onnx::ModelProto m = onnx::read_model(directory_ + "/" + model + "/model.onnx");
      if (!m.graph.nodes.empty()) op = m.graph.nodes.back().op_type;
    } catch (const std::exception&) {
      op = "unreadable";
    }
    out.push_back({"onnx/" + f, "onnx", "onnx:" + op, ""});
  }
  return out;
}

}  // namespace wick::conformance

namespace wick::conformance {

Result run_onnx_case(const ExecContext& ctx, const OnnxStore& store, const std::string& id) {
  (void)ctx;
  (void)store;
  Result r;
  r.id = id;
  r.source = "onnx";
  r.status = "SKIP";
  r.message = "importer: not implemented yet";
  return r;
}

}  // namespace wick::conformance
