// optim.cpp — SGD, Adam and AdamW of wick/optim.hpp. Scalars enter through affine (x * a + b): one
// op, where `x * 0.9` would first make a scalar tensor on the device.
#include <wick/nn/optim.hpp>

#include <wick/autograd.hpp>
#include <wick/direct.hpp>
#include <wick/nn/nn.hpp>

#include <wick/dispatch.hpp>

#include <cmath>

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

}  // namespace wick::optim
