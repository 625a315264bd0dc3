// onnx_lower.hpp — runs ONNX nodes as Wick ops on one device, directly through its plugin.
//
// Views (reshape, transpose, slice, expand, ...) are host metadata as in the core; composite ONNX
// ops are lowered to Wick ops here; shape-like inputs (Reshape's shape, Slice's starts, TopK's k,
// Gather's indices to normalise) are read back to the host.
#pragma once

#include "onnx_proto.hpp"

#include <wick/device.hpp>
#include <wick/tensor.hpp>

#include <map>
#include <stdexcept>
#include <string>

namespace wick::conformance {

// The importer cannot map this node, attribute or dtype: the folder is SKIP, not run.
struct NotImportable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The plugin declined a Wick op the node needs: the folder is UNSUPPORTED.
struct Declined : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// op_execute returned an error: the folder is FAIL.
struct ExecuteFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

DType onnx_dtype(int32_t data_type);  // throws NotImportable for types Wick lacks
Tensor upload_proto(const onnx::TensorProto& t, const Device& device);

class OnnxLowering {
 public:
  OnnxLowering(Device device, int64_t opset) : device_(std::move(device)), opset_(opset) {}
  void set(const std::string& name, const Tensor& t) { values_[name] = t; }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  Tensor get(const std::string& name) const;
  void run(const onnx::NodeProto& node);
  // A contiguous copy made on the device (COPY) when t is a strided view.
  Tensor contiguous(const Tensor& t);

 private:
  struct Impl;
  Device device_;
  int64_t opset_;
  std::map<std::string, Tensor> values_;
};

}  // namespace wick::conformance
