// libFuzzer entry: Wick::onnx's protobuf reader on arbitrary bytes, read both as a
// model.onnx (ModelProto) and as an input_N.pb (TensorProto). Each must give a message or throw
// onnx::ReadError; a crash, an over-read (ASan) or undefined behaviour (UBSan) is a bug. What was
// read is walked, so that sizes the reader reports are used as the importer would.
#include <wick/onnx/proto.hpp>

#include <cstddef>
#include <cstdint>

namespace onnx = wick::onnx;

namespace {

size_t walk(const onnx::TensorProto& t) {
  size_t n = t.dims.size() + t.name.size();
  for (unsigned char b : t.data) n += b;
  return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  volatile size_t sink = 0;
  try {
    const onnx::ModelProto m = onnx::parse_model(data, size, "fuzz model.onnx");
    for (const onnx::NodeProto& node : m.graph.nodes) {
      sink = sink + node.inputs.size() + node.outputs.size() + node.op_type.size();
      for (const onnx::AttributeProto& a : node.attributes) {
        sink = sink + a.ints.size() + a.floats.size() + a.s.size();
        for (const onnx::TensorProto& t : a.t) sink = sink + walk(t);
      }
      (void)node.attribute("axis");
    }
    for (const onnx::TensorProto& t : m.graph.initializers) sink = sink + walk(t);
  } catch (const onnx::ReadError&) {
  }
  try {
    sink = sink + walk(onnx::parse_tensor(data, size, "fuzz input_0.pb"));
  } catch (const onnx::ReadError&) {
  }
  return 0;
}
