// nan_check.cpp — the dispatcher's NaN check (nan_check.hpp): after an op, its floating-point
// outputs are tested on their device (x * 0 summed is NaN exactly when x holds a NaN or Inf, so
// one scalar comes back per output); only an output that fails has its inputs tested (those an
// in-place op overwrites, before it runs).
#include "host/nan_check.hpp"

#include "host/dispatch_policy.hpp"

#include <wick/autograd.hpp>
#include <wick/dispatch.hpp>
#include <wick/module_scope.hpp>
#include <wick/sdk/op_table.hpp>
#include <wick/sdk/ops.hpp>

#include <cmath>
#include <initializer_list>
#include <string>

namespace wick::detail {

namespace {

thread_local int t_depth = 0;

bool all_finite(const Tensor& t) {
  if (!is_float(t.dtype()) || t.numel() == 0) return true;
  const Tensor probe = (t.detach() * 0.0).sum();
  return !std::isnan(probe.to(DType::F32).item<float>());
}

template <class P>
const P* as(const void* params) {
  // Every params struct starts with struct_size: a shorter one than P has is read as absent.
  if (params == nullptr || *static_cast<const size_t*>(params) < sizeof(P)) return nullptr;
  return static_cast<const P*>(params);
}

bool finite(std::initializer_list<double> values) {
  for (double v : values)
    if (!std::isfinite(v)) return false;
  return true;
}

// Whether the op's floating-point parameters are finite: a fill of -inf, or an affine by NaN,
// makes what it was asked to.
bool params_finite(wick_op_code op, const void* params) {
  const sdk::OpInfo* info = sdk::op_info(op);
  if (info == nullptr) return true;
  switch (info->params) {
    case sdk::ParamsKind::fill:
      if (const auto* p = as<wick_fill_params>(params)) return finite({p->float_value});
      return true;
    case sdk::ParamsKind::iota:
      if (const auto* p = as<wick_iota_params>(params))
        return finite({p->float_start, p->float_step});
      return true;
    case sdk::ParamsKind::rng:
      if (const auto* p = as<wick_rng_params>(params)) return finite({p->a, p->b});
      return true;
    case sdk::ParamsKind::unary:
      if (const auto* p = as<wick_unary_params>(params)) return finite({p->alpha, p->beta});
      return true;
    case sdk::ParamsKind::norm:
      if (const auto* p = as<wick_norm_params>(params)) return finite({p->epsilon});
      return true;
    case sdk::ParamsKind::attention:
      if (const auto* p = as<wick_attention_params>(params)) return finite({p->scale});
      return true;
    case sdk::ParamsKind::optim:
      if (const auto* p = as<wick_optim_params>(params)) {
        return finite({p->lr, p->beta1, p->beta2, p->eps, p->weight_decay, p->bias_correction1,
                       p->bias_correction2});
      }
      return true;
    default: return true;
  }
}

std::string operands(const std::vector<Tensor>& ts) {
  if (ts.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (i > 0) out += ", ";
    out += shape_to_string(ts[i].shape()) + " " + dtype_name(ts[i].dtype());
  }
  return out;
}

}  // namespace

bool inside_checked_op() {
  return t_depth > 0;
}

CheckedOpScope::CheckedOpScope() {
  ++t_depth;
}
CheckedOpScope::~CheckedOpScope() {
  --t_depth;
}

OpCheck::OpCheck(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  bool any_float = false;
  for (const Tensor& t : outputs) any_float = any_float || is_float(t.dtype());
  if (outputs.empty() || !any_float) return;
  if (!DispatchPolicy::nan_check_on(outputs.front().device())) return;
  active_ = true;
  const CheckedOpScope inside;  // the probes are not checked themselves
  const autograd::NoGradGuard no_grad;
  before_.assign(inputs.size(), -1);
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (const Tensor& out : outputs) {
      if (before_[i] < 0 && may_share_memory(inputs[i], out))
        before_[i] = all_finite(inputs[i]) ? 1 : 0;
    }
  }
}

void OpCheck::finish(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs) const {
  if (!active_) return;
  const CheckedOpScope inside;
  const autograd::NoGradGuard no_grad;
  size_t bad = outputs.size();
  for (size_t i = 0; i < outputs.size() && bad == outputs.size(); ++i)
    if (!all_finite(outputs[i])) bad = i;
  if (bad == outputs.size() || !params_finite(op, params)) return;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (before_[i] == 0 || (before_[i] < 0 && !all_finite(inputs[i]))) return;  // passed through
  const Tensor& out = outputs[bad];
  const std::string& module = ModuleScope::current();
  throw Error(
      "check_nan: op '" + std::string(sdk::op_name(op)) + "' made " +
      std::to_string(out.count_nan()) + " NaN and " + std::to_string(out.count_inf()) +
      " Inf in output " + std::to_string(bad) + " from finite inputs, on " + out.device().name() +
      ", in module " +
      (module.empty() ? std::string("(none: no wick::ModuleScope open)") : "'" + module + "'") +
      "; inputs " + operands(inputs) + " -> outputs " + operands(outputs) +
      " (the check is [debug] check_nan / WICK_CHECK_NAN)");
}

}  // namespace wick::detail
