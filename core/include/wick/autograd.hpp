// wick/autograd.hpp — reverse-mode automatic differentiation of wick::Tensor.
//
// The tensor side (set_requires_grad, backward, grad, detach) is in wick/tensor.hpp. An op records
// itself only when grad mode is on and one of its inputs requires grad; otherwise it pays one test
// of a null pointer. Backward rules are built from the Tensor API's own ops, so every device runs
// them through its plugin like any other op.
//
// Ops with a backward rule: every view (reshape, permute, transpose, t, broadcast_to, slice with
// any step, narrow, flip, squeeze, unsqueeze), contiguous, clone, to(dtype) between float dtypes,
// to(device); the float unary math of tensor.hpp (sign, floor, ceil and round give a zero
// gradient; relu's gradient at 0 is 0); the binary arithmetic (add, sub, mul, div, maximum and
// minimum (a tie gives each side half), pow, atan2, rem) with broadcasting summed back to each
// operand, clamp (gradient 1 on the closed interval), where, and apply() of any of these; matmul
// (1-D and batch-broadcast operands); sum, mean, prod (exact with zeros), max and min (ties share
// the gradient equally) over axes; cumsum, cumprod (O(n^2) in the scanned extent, exact with
// zeros); index_select, gather, scatter and index_reduce in modes "set" and "add", cat, stack,
// sort and topk values; conv (strides, padding, dilation, groups); window_reduce "sum" and, without
// dilation, "max" and "min" (through window_scatter: the first extremum of a window takes its
// gradient, as in the plugins), max_pool2d, avg_pool2d; softmax, log_softmax, layer_norm, rms_norm,
// batch_norm (gradients for input, mean, var, weight and bias), and attention (differentiated
// through its composite form).
//
// Ops that record a node whose backward throws wick::Error naming the op: cummax, cummin, window
// "prod", window "max"/"min" with dilation, window_scatter, and scatter / index_reduce in modes
// "mul", "max" and "min". Results that are integers or bool (comparisons, argmax, argsort, ...)
// are constants. Backward itself runs without recording: no gradients of gradients.
#pragma once

#include <wick/tensor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wick::autograd {

// Whether ops record for autograd on this thread (true unless a NoGradGuard is alive).
bool grad_enabled();

// Turns recording off on this thread for its lifetime (inference, optimizer steps); nests.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// A hook added by on_grad_ready: removed when this handle is destroyed or reset() (a default or
// moved-from handle holds none). Outliving the leaf is harmless.
class GradReadyHook {
 public:
  GradReadyHook() = default;
  GradReadyHook(std::weak_ptr<AutogradMeta> leaf, uint64_t id) : leaf_(std::move(leaf)), id_(id) {}
  GradReadyHook(GradReadyHook&& other) noexcept;
  GradReadyHook& operator=(GradReadyHook&& other) noexcept;
  GradReadyHook(const GradReadyHook&) = delete;
  GradReadyHook& operator=(const GradReadyHook&) = delete;
  ~GradReadyHook() { reset(); }
  void reset();

 private:
  std::weak_ptr<AutogradMeta> leaf_;
  uint64_t id_ = 0;
};

// Calls `hook` each time a backward() is done with `leaf`: after the last gradient that pass adds
// into leaf.grad() (which then holds the pass's whole contribution), once per pass that reaches the
// leaf, while the pass goes on with the rest of the graph — so that work on a finished gradient
// (data parallelism's all-reduce) can start before backward() returns. A pass that does not reach
// the leaf does not call it. The hook runs on the backward's thread without grad recording; an
// exception it throws ends the backward. Hooks of one leaf run in the order they were added. The
// leaf holds the hook: capture an index or a weak reference rather than the leaf itself (a cycle
// that is never freed). An error naming the tensor when it is not a leaf that requires grad.
[[nodiscard]] GradReadyHook on_grad_ready(const Tensor& leaf, std::function<void()> hook);

// The result of check_gradients: the largest error |autograd - numeric| / (1 + |numeric|) over
// every input element, and which element it was ("input 1 element 5: autograd 0.25, numeric 0.5").
struct GradCheck {
  double max_error = 0.0;
  std::string worst;
};

// Compares autograd with central differences of step h for fn at inputs (float tensors; compute
// in f64 for a meaningful answer). The loss is sum(fn(inputs) * r) for fixed random r drawn from
// seed, so that every output element counts. The inputs themselves are not modified.
GradCheck check_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double h = 1e-6, uint64_t seed = 1);

}  // namespace wick::autograd
