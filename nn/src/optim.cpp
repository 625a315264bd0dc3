// optim.cpp — SGD, Adam and AdamW of wick/optim.hpp. Scalars enter through affine (x * a + b): one
// op, where `x * 0.9` would first make a scalar tensor on the device.
#include <wick/nn/optim.hpp>

#include <wick/autograd.hpp>
#include <wick/direct.hpp>
#include <wick/nn/nn.hpp>

#include <wick/dispatch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

namespace wick::optim {

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].defined() || !params_[i].requires_grad())
      throw Error("optimizer: parameter " + std::to_string(i) + " does not require grad");
  }
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

namespace {

// Splits "<index>.<name>" into the parameter index and the name; nullopt when it has no such form
// or the index is not one of `count` parameters.
std::optional<std::pair<size_t, std::string>> split_key(const std::string& key, size_t count) {
  const size_t dot = key.find('.');
  if (dot == 0 || dot == std::string::npos || dot > 9) return std::nullopt;
  size_t index = 0;
  for (size_t i = 0; i < dot; ++i) {
    if (key[i] < '0' || key[i] > '9') return std::nullopt;
    index = index * 10 + size_t(key[i] - '0');
  }
  if (index >= count) return std::nullopt;
  return std::make_pair(index, key.substr(dot + 1));
}

// The per-parameter tensors `names` of a state dict, checked against the parameters: every key must
// be "<index>.<one of names>" (or one of `scalars`) with the parameter's shape and dtype, and a
// parameter has all of `names` or none. Returns them by parameter; throws one error listing every
// problem, with `who` ("SGD") first.
std::vector<std::map<std::string, Tensor>> checked_state(const char* who,
                                                         const std::map<std::string, Tensor>& state,
                                                         const std::vector<Tensor>& params,
                                                         const std::vector<std::string>& names,
                                                         const std::vector<std::string>& scalars) {
  std::vector<std::map<std::string, Tensor>> out(params.size());
  std::vector<std::string> problems;
  for (const auto& [key, t] : state) {
    if (std::find(scalars.begin(), scalars.end(), key) != scalars.end()) continue;
    const auto split = split_key(key, params.size());
    if (!split || std::find(names.begin(), names.end(), split->second) == names.end()) {
      problems.push_back("unknown entry '" + key + "'");
      continue;
    }
    const Tensor& p = params[split->first];
    if (!t.defined() || t.shape() != p.shape() || t.dtype() != p.dtype()) {
      problems.push_back("'" + key + "' is " +
                         (t.defined() ? shape_to_string(t.shape()) + " " + dtype_name(t.dtype()) : "undefined") +
                         ", its parameter " + shape_to_string(p.shape()) + " " + dtype_name(p.dtype()));
      continue;
    }
    out[split->first][split->second] = t;
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].empty() && out[i].size() != names.size())
      problems.push_back("parameter " + std::to_string(i) + " has " + std::to_string(out[i].size()) + " of its " +
                         std::to_string(names.size()) + " state tensors");
  for (const std::string& s : scalars)
    if (!state.count(s)) problems.push_back("no '" + s + "'");
  if (!problems.empty()) {
    std::string msg = std::string(who) + "::load_state_dict: the state does not fit this optimizer's " +
                      std::to_string(params.size()) + " parameters:";
    for (size_t i = 0; i < problems.size() && i < 8; ++i) msg += (i ? "; " : " ") + problems[i];
    if (problems.size() > 8) msg += "; and " + std::to_string(problems.size() - 8) + " more";
    throw Error(msg);
  }
  return out;
}

// A copy of a state tensor on the parameter's device (never shared with the caller's tensor: the
// optimizer updates its state in place).
Tensor state_copy(const Tensor& t, const Tensor& param) {
  return t.device() == param.device() ? t.clone() : t.to(param.device());
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions o) : Optimizer(std::move(params)), options(o) {
  if (o.lr < 0 || o.momentum < 0 || o.weight_decay < 0)
    throw Error("SGD: lr, momentum and weight_decay must be >= 0");
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    throw Error("SGD: nesterov needs momentum > 0 and dampening 0");
  momentum_.resize(params_.size());
}

void SGD::step() {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor d = p.grad();
    if (!d.defined()) continue;
    if (options.weight_decay != 0) d = d + p.detach().affine(options.weight_decay, 0.0);
    if (options.momentum != 0) {
      Tensor& b = momentum_[i];
      b = b.defined() ? b.affine(options.momentum, 0.0) + d.affine(1.0 - options.dampening, 0.0) : d.clone();
      d = options.nesterov ? d + b.affine(options.momentum, 0.0) : b;
    }
    nn::assign(p, p.detach() - d.affine(options.lr, 0.0));
  }
}

std::map<std::string, Tensor> SGD::state_dict() const {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < momentum_.size(); ++i)
    if (momentum_[i].defined()) out.emplace(std::to_string(i) + ".momentum_buffer", momentum_[i]);
  return out;
}

void SGD::load_state_dict(const std::map<std::string, Tensor>& state) {
  const auto per_param = checked_state("SGD", state, params_, {"momentum_buffer"}, {});
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto it = per_param[i].find("momentum_buffer");
    momentum_[i] = it == per_param[i].end() ? Tensor() : state_copy(it->second, params_[i]);
  }
}

Adam::Adam(std::vector<Tensor> params, AdamOptions o, bool decoupled)
    : Optimizer(std::move(params)), options(o), decoupled_(decoupled) {
  if (o.lr < 0 || o.eps < 0 || o.weight_decay < 0 || o.beta1 < 0 || o.beta1 >= 1 || o.beta2 < 0 || o.beta2 >= 1)
    throw Error("Adam: lr, eps and weight_decay must be >= 0 and the betas in [0, 1)");
  m_.resize(params_.size());
  v_.resize(params_.size());
  fused_.assign(params_.size(), -1);
}

void Adam::step() {
  autograd::NoGradGuard no_grad;
  ++step_;
  const double b1 = options.beta1, b2 = options.beta2;
  const double correction1 = 1.0 - std::pow(b1, double(step_));
  const double correction2 = 1.0 - std::pow(b2, double(step_));
  const double step_size = options.lr / correction1;
  const double inv_sqrt_c2 = 1.0 / std::sqrt(correction2);
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor w = p.detach();
    Tensor& m = m_[i];
    Tensor& v = v_[i];
    // The device's fused update when its plugin runs it (one pass, in place: the moments and the
    // parameter are written where they are); else the same formulas as separate ops.
    if (fused_[i] != 0) {
      if (!m.defined()) {
        m = Tensor::zeros(w.shape(), w.dtype(), w.device());
        v = Tensor::zeros(w.shape(), w.dtype(), w.device());
      }
      const Tensor d = g.dtype() == w.dtype() && g.is_contiguous() ? g : g.to(w.dtype()).contiguous();
      wick_optim_params prm{};
      prm.struct_size = sizeof(prm);
      prm.lr = options.lr;
      prm.beta1 = b1;
      prm.beta2 = b2;
      prm.eps = options.eps;
      prm.weight_decay = options.weight_decay;
      prm.bias_correction1 = correction1;
      prm.bias_correction2 = correction2;
      prm.flags = decoupled_ ? WICK_ADAM_DECOUPLED : 0;
      const Tensor target = p.detach();
      if (fused_[i] < 0)
        fused_[i] = query_op_direct(w.device(), WICK_OP_ADAM_UPDATE, &prm, {target, d, m, v}, {target, m, v}) ==
                    WICK_SUPPORT_YES;
      if (fused_[i] == 1) {
        dispatch_in_place(WICK_OP_ADAM_UPDATE, &prm, {target, d, m, v}, {target, m, v});
        continue;
      }
    }
    if (options.weight_decay != 0) {
      if (decoupled_)
        w = w.affine(1.0 - options.lr * options.weight_decay, 0.0);
      else
        g = g + w.affine(options.weight_decay, 0.0);
    }
    // First step: the moments start at zero, so m = (1 - b1) g and v = (1 - b2) g^2.
    m = m.defined() ? m.affine(b1, 0.0) + g.affine(1.0 - b1, 0.0) : g.affine(1.0 - b1, 0.0);
    const Tensor g2 = g.sqr();
    v = v.defined() ? v.affine(b2, 0.0) + g2.affine(1.0 - b2, 0.0) : g2.affine(1.0 - b2, 0.0);
    const Tensor denom = v.sqrt().affine(inv_sqrt_c2, options.eps);
    nn::assign(p, w - (m / denom).affine(step_size, 0.0));
  }
}

std::map<std::string, Tensor> Adam::state_dict() const {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < m_.size(); ++i) {
    if (!m_[i].defined()) continue;
    out.emplace(std::to_string(i) + ".exp_avg", m_[i]);
    out.emplace(std::to_string(i) + ".exp_avg_sq", v_[i]);
  }
  out.emplace("step", Tensor::scalar<int64_t>(step_, params_.empty() ? Device() : params_[0].device()));
  return out;
}

void Adam::load_state_dict(const std::map<std::string, Tensor>& state) {
  const auto per_param = checked_state("Adam", state, params_, {"exp_avg", "exp_avg_sq"}, {"step"});
  const Tensor& step = state.at("step");
  if (step.dtype() != DType::I64 || step.numel() != 1)
    throw Error("Adam::load_state_dict: 'step' must be one i64, not " + shape_to_string(step.shape()) + " " +
                dtype_name(step.dtype()));
  const int64_t steps = step.item<int64_t>();
  if (steps < 0) throw Error("Adam::load_state_dict: 'step' is " + std::to_string(steps) + ", below 0");
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const bool has = !per_param[i].empty();
    m_[i] = has ? state_copy(per_param[i].at("exp_avg"), params_[i]) : Tensor();
    v_[i] = has ? state_copy(per_param[i].at("exp_avg_sq"), params_[i]) : Tensor();
  }
  step_ = steps;
}

}  // namespace wick::optim
