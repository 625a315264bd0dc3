// onnx_import.hpp — the ONNX backend node tests (Debian libonnx-testdata) as conformance cases.
//
// Each folder under data/node holds model.onnx (one graph, usually one node) and
// test_data_set_*/input_*.pb, output_*.pb (TensorProto). The importer lowers each ONNX node to
// Wick ops, run directly through the backend's plugin (views stay on the host, like the core's),
// and compares with output_*.pb at ONNX's own tolerance (tolerances.toml [classes.onnx]).
// A folder whose nodes, attributes or dtypes the importer cannot map is SKIP ("importer: ...");
// one that needs an op the plugin declines is UNSUPPORTED.
#pragma once

#include "case.hpp"
#include "result.hpp"

#include <string>
#include <vector>

namespace wick::conformance {

struct ExecContext;

class OnnxStore {
 public:
  // `directory` is .../libonnx-testdata/data/node; a missing directory gives no cases.
  explicit OnnxStore(std::string directory);
  const std::string& directory() const { return directory_; }
  bool available() const { return available_; }
  // Why the directory gives no cases ("<dir>: No such file or directory", "<dir>: is not a
  // directory"); empty when it is available.
  std::string unavailable_reason() const;
  // One case per folder: id "onnx/<folder>", op "onnx:<OpType>" of the folder's (last) node.
  std::vector<CaseInfo> list() const;

 private:
  std::string directory_;
  bool available_ = false;
};

Result run_onnx_case(const ExecContext& ctx, const OnnxStore& store, const std::string& id);

}  // namespace wick::conformance
