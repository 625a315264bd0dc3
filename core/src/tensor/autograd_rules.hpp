// autograd_rules.hpp — the recorded forms of the differentiable Tensor methods (core internal).
// A method that may need recording starts with `if (grad::needs(...)) return grad::op(...);`: each
// of these runs the method itself without grad, then records the result with its backward rule
// (autograd_rules.cpp, autograd_rules_nn.cpp).
#pragma once

#include "tensor/autograd_graph.hpp"

#include <wick/wick_plugin.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wick::detail::grad {

using Grads = std::vector<Tensor>;  // what a backward rule returns: one gradient per input

// f() run with recording off: the forward half of every function below.
template <class F>
Tensor without_grad(F&& f) {
  autograd::NoGradGuard no_grad;
  return f();
}

// ---- views and copies (autograd_rules.cpp) ------------------------------------------------------
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor permute(const Tensor& x, const std::vector<int>& axes);
Tensor broadcast_to(const Tensor& x, const Shape& shape);
Tensor slice(const Tensor& x, int axis, std::optional<int64_t> start, std::optional<int64_t> stop,
             int64_t step);
Tensor squeeze(const Tensor& x, std::optional<int> axis);
Tensor unsqueeze(const Tensor& x, int axis);
Tensor clone(const Tensor& x);
Tensor to_dtype(const Tensor& x, DType dtype);
Tensor to_device(const Tensor& x, const Device& device);

// ---- elementwise (autograd_rules.cpp) -----------------------------------------------------------
Tensor unary(wick_op_code op, const Tensor& x, const wick_unary_params* params = nullptr);
Tensor clamp(const Tensor& x, double lo, double hi);
Tensor binary(wick_op_code op, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// ---- reductions and scans (autograd_rules.cpp) --------------------------------------------------
Tensor sum(const Tensor& x, const std::vector<int>& axes, bool keepdim);
Tensor mean(const Tensor& x, const std::vector<int>& axes, bool keepdim);
Tensor prod(const Tensor& x, const std::vector<int>& axes, bool keepdim);
Tensor extreme(const Tensor& x, const std::vector<int>& axes, bool keepdim, bool is_max);
Tensor cumsum(const Tensor& x, int axis, bool reverse, bool exclusive);
Tensor cumprod(const Tensor& x, int axis, bool reverse, bool exclusive);
Tensor cumextreme(const Tensor& x, int axis, bool reverse, bool is_max);

// ---- indexing (autograd_rules.cpp) --------------------------------------------------------------
Tensor index_select(const Tensor& x, const Tensor& ids, int axis);
Tensor index_reduce(const Tensor& x, int axis, const Tensor& ids, const Tensor& src,
                    const std::string& mode);
Tensor gather(const Tensor& x, int axis, const Tensor& ids);
Tensor scatter(const Tensor& x, int axis, const Tensor& ids, const Tensor& src,
               const std::string& mode);
std::pair<Tensor, Tensor> sort(const Tensor& x, int axis, bool descending, bool stable);
Tensor cat(const std::vector<Tensor>& tensors, int axis);

// ---- neural-network ops (autograd_rules_nn.cpp) -------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor conv(const Tensor& x, const Tensor& weight, const std::vector<int64_t>& strides,
            const std::vector<int64_t>& padding, const std::vector<int64_t>& dilations,
            int64_t groups);
// A convolution's geometry as its backward rule keeps it: per spatial axis the strides, padding
// and dilations, and the groups.
struct ConvSpec {
  size_t r = 0;
  int64_t groups = 1;
  std::vector<int64_t> s, lo, hi, d;
  // From Tensor::conv's arguments, for r spatial axes.
  static ConvSpec of(size_t r, const std::vector<int64_t>& strides,
                     const std::vector<int64_t>& padding, const std::vector<int64_t>& dilations,
                     int64_t groups);
  // The params of the forward op and of its two gradient ops; valid while this spec lives.
  wick_conv_params params() const;
};
// conv's gradients composed from forward convolutions (what its rule runs where the device has no
// WICK_OP_CONV_GRAD_INPUT / _WEIGHT): the input's from the output's gradient g and the weight w,
// the weight's from the input x and g.
Tensor conv_grad_input_composed(const ConvSpec& c, const Tensor& g, const Tensor& w,
                                const Shape& x_shape);
Tensor conv_grad_weight_composed(const ConvSpec& c, const Tensor& x, const Tensor& g,
                                 const Shape& w_shape);
Tensor window_reduce(const Tensor& x, const std::string& op, const std::vector<int64_t>& window,
                     const std::vector<int64_t>& strides,
                     const std::vector<std::pair<int64_t, int64_t>>& padding,
                     const std::vector<int64_t>& dilations);
Tensor window_scatter(const Tensor& x, const std::string& op, const Tensor& source,
                      const std::vector<int64_t>& window, const std::vector<int64_t>& strides,
                      const std::vector<std::pair<int64_t, int64_t>>& padding);
Tensor softmax(const Tensor& x, int axis, bool log);
Tensor layer_norm(const Tensor& x, int normalized_rank, const Tensor& weight, const Tensor& bias,
                  double eps);
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps);
Tensor batch_norm(const Tensor& x, const Tensor& mean, const Tensor& var, const Tensor& weight,
                  const Tensor& bias, double eps);
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 std::optional<double> scale, bool causal);

}  // namespace wick::detail::grad
