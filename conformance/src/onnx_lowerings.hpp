// onnx_lowerings.hpp — OnnxLowering::Impl, the lowering of one node: the helpers every lowering
// uses (onnx_lower.cpp) and one member per ONNX op type or family (onnx_lowerings.cpp), found by
// op type in the table of lowerings. Private to the two onnx_lower*.cpp files.
#pragma once

#include "onnx_lower.hpp"

#include <wick/wick_plugin.h>

#include <optional>
#include <string>
#include <vector>

namespace wick::conformance {

struct ResizeRule;

struct OnnxLowering::Impl {
  OnnxLowering& g;
  const onnx::NodeProto& n;

  // A lowering reads the node's inputs and attributes, runs Wick ops and sets its outputs.
  using Lowering = void (Impl::*)();
  struct Row {
    const char* op_type;
    Lowering lower;
  };
  static const Row kLowerings[];
  // The lowering of an ONNX op type, or nullptr when it has none.
  static Lowering lowering(const std::string& op_type);

  // --- The node: inputs, outputs, attributes (onnx_lower.cpp) ---
  const Device& dev() const { return g.device_; }
  int64_t opset() const { return g.opset_; }
  Tensor in(size_t i) const { return g.get(n.inputs.at(i)); }
  bool has_in(size_t i) const { return i < n.inputs.size() && !n.inputs[i].empty(); }
  void out(size_t i, const Tensor& t) {
    if (i < n.outputs.size() && !n.outputs[i].empty()) g.set(n.outputs[i], t);
  }
  int64_t attr_i(const char* name, int64_t dflt) const;
  float attr_f(const char* name, float dflt) const;
  std::string attr_s(const char* name, const std::string& dflt) const;
  std::optional<std::vector<int64_t>> attr_ints(const char* name) const;
  // Input `input` from opset 13 on, attribute `attr` before (Squeeze's axes, Split's sizes).
  std::vector<int64_t> ints_input_or_attr(size_t input, const char* attr);
  static int norm_axis(int64_t axis, int rank);
  static Shape broadcast(const Shape& a, const Shape& b);

  // --- Wick ops on the device; a decline or an error ends the folder ---
  void exec(wick_op_code op, const void* params, const std::vector<Tensor>& ins,
            const std::vector<Tensor>& outs);
  Tensor op1(wick_op_code op, const Tensor& x, const void* params = nullptr,
             std::optional<DType> odt = std::nullopt);
  Tensor op2(wick_op_code op, const Tensor& a, const Tensor& b,
             std::optional<DType> odt = std::nullopt);
  Tensor where(const Tensor& c, const Tensor& a, const Tensor& b);
  Tensor cast(const Tensor& x, DType t);
  Tensor affine(const Tensor& x, double mul, double add);
  Tensor filled(const Shape& s, DType t, double value);
  Tensor reshape(const Tensor& x, const Shape& s);

  // --- Host read-backs and host-built constants ---
  Tensor scalar(double v, DType t);
  std::vector<int64_t> host_ints(const Tensor& t);
  double host_scalar(const Tensor& t);
  std::vector<double> host_doubles(const Tensor& t);
  Tensor upload_values(const std::vector<double>& v, const Shape& s, DType t);
  Tensor upload_i64(const std::vector<int64_t>& v, const Shape& s);
  // Index input values with negative ones counted from the end of `axis` of x.
  std::vector<int64_t> index_values(const Tensor& x, const Tensor& idx, int axis);

  // --- Composites several op types share ---
  Tensor reduce(wick_op_code op, const Tensor& x, std::vector<int32_t> axes, bool keepdims);
  std::vector<int32_t> reduce_axes(const Tensor& x, bool& noop);
  int64_t reduced_count(const Tensor& x, const std::vector<int32_t>& axes);
  Tensor softmax(const Tensor& x, int axis, bool log);
  Tensor matmul(Tensor a, Tensor b);
  Tensor nll(const Tensor& x, const Tensor& target, const std::optional<Tensor>& weight,
             int64_t ignore, const std::string& reduction);
  // Pads and output sizes of Conv and the pools, ONNX's auto_pad and ceil_mode included.
  struct Window {
    std::vector<int64_t> kernel, strides, dil, lo, hi;
  };
  Window window(const Tensor& x, const std::vector<int64_t>& kernel, bool ceil_mode);
  Tensor window_op(wick_op_code op, const Tensor& x, const Window& w, double init);

  // --- The lowerings (onnx_lowerings.cpp), in the order of the table ---
  template <wick_op_code Op>
  void lower_unary() {
    out(0, op1(Op, in(0)));
  }
  template <wick_op_code Op>
  void lower_binary() {
    out(0, op2(Op, in(0), in(1)));
  }
  template <wick_op_code Op>
  void lower_compare() {
    out(0, op2(Op, in(0), in(1), DType::Bool));
  }
  template <wick_op_code Op>
  void lower_variadic() {
    out(0, fold(Op));
  }
  Tensor fold(wick_op_code op);
  void lower_mean();
  void lower_identity();
  void lower_is_nan();
  void lower_is_inf();
  void lower_round();
  void lower_pow();
  void lower_bit_shift();
  void lower_mod();
  void lower_where();
  Tensor elu(const Tensor& x, double alpha);
  void lower_elu();
  void lower_selu();
  void lower_celu();
  Tensor where_negative(const Tensor& x, const Tensor& scaled);
  void lower_leaky_relu();
  void lower_prelu();
  void lower_thresholded_relu();
  Tensor hard_sigmoid(const Tensor& x, double alpha, double beta);
  void lower_hard_sigmoid();
  void lower_hard_swish();
  void lower_softplus();
  void lower_softsign();
  void lower_clip();
  void lower_matmul();
  void lower_gemm();
  // A reduction with an optional elementwise op before (Pre) and after (Post) it.
  template <wick_op_code Red, wick_op_code Pre = WICK_OP_INVALID,
            wick_op_code Post = WICK_OP_INVALID>
  void lower_reduce() {
    reduction(Red, Pre, Post, false);
  }
  void lower_reduce_mean() {
    reduction(WICK_OP_REDUCE_SUM, WICK_OP_INVALID, WICK_OP_INVALID, true);
  }
  void reduction(wick_op_code red, wick_op_code pre, wick_op_code post, bool mean);
  template <wick_op_code Op>
  void lower_arg_reduce() {
    arg_reduce(Op);
  }
  void arg_reduce(wick_op_code op);
  void lower_cumsum();
  template <bool Log>
  void lower_softmax() {
    softmax_node(Log);
  }
  void softmax_node(bool log);
  void lower_reshape();
  void lower_flatten();
  void lower_squeeze();
  void lower_unsqueeze();
  void lower_transpose();
  void lower_expand();
  void lower_concat();
  void lower_split();
  void lower_slice();
  void lower_shape();
  void lower_size();
  void lower_constant();
  void lower_constant_of_shape();
  void lower_cast();
  void lower_cast_like();
  void lower_gather();
  void lower_gather_elements();
  void lower_scatter_elements();
  int32_t reduction_mode() const;
  std::vector<int64_t> nd_rows(const Tensor& data, const Tensor& indices, int64_t batch_dims);
  void lower_gather_nd();
  void lower_scatter_nd();
  void lower_non_zero();
  void lower_compress();
  void lower_reverse_sequence();
  void lower_lrn();
  void lower_window_function();
  void lower_matmul_integer();
  void lower_qlinear_matmul();
  void lower_dynamic_quantize_linear();
  Tensor per_channel(const Tensor& v, int rank);
  void lower_conv();
  void lower_conv_integer();
  void lower_einsum();
  Tensor conv(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias);
  void lower_conv_transpose();
  void lower_pad();
  void lower_instance_norm();
  void lower_shrink();
  Tensor hardmax(const Tensor& x, int axis);
  void lower_hardmax();
  Tensor positions(const Shape& shape, int axis);
  Tensor along_axis(const Tensor& v, const Tensor& x, int64_t axis_attr);
  void lower_quantize_linear();
  void lower_dequantize_linear();
  void lower_one_hot();
  void lower_eye_like();
  Tensor resize_axis(const Tensor& x, int axis, int64_t out_len, double scale, const ResizeRule& r,
                     double roi_start, double roi_end);
  void lower_resize();
  void lower_mean_variance_normalization();
  Window pool_window();
  void lower_max_pool();
  void lower_average_pool();
  template <bool Max>
  void lower_global_pool() {
    global_pool(Max);
  }
  void global_pool(bool max);
  void lower_layer_norm();
  void lower_batch_norm();
  void lower_top_k();
  void lower_range();
  void lower_depth_to_space();
  void lower_space_to_depth();
  void lower_tile();
  template <bool Softmax>
  void lower_loss() {
    loss(Softmax);
  }
  void loss(bool softmax_first);
  void lower_trilu();
  void lower_dropout();
};

}  // namespace wick::conformance
