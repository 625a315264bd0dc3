// wick/optim.hpp — optimizers over a model's trainable tensors (nn::VarStore::trainable()).
//
//   optim::Adam opt(store.trainable(), {.lr = 1e-3});
//   opt.zero_grad(); loss.backward(); opt.step();
//
// Updates follow PyTorch's formulas (torch.optim.SGD, Adam, AdamW), run as ordinary Tensor ops on
// the parameters' device without recording, and write each parameter in place (nn::assign), so the
// layers holding it see the new values. The per-parameter state (momentum buffers, Adam's moments)
// lives in the optimizer, created at the first step; state_dict() names it for a checkpoint.
#pragma once

#include <wick/tensor.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace wick::optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Applies one update from the parameters' gradients (parameters without one are left alone).
  virtual void step() = 0;
  // Clears every parameter's gradient.
  void zero_grad();
  // The state, by "<parameter index>.<name>" ("0.exp_avg") and "step".
  virtual std::map<std::string, Tensor> state_dict() const = 0;
  // Replaces the state with `state` (what state_dict() gave, for the same parameters: a checkpoint
  // read back), so that the next step() is the one the saved optimizer would have taken. Each
  // tensor is copied onto its parameter's device; names, shapes and dtypes are checked first and
  // one error names what is unknown, missing or different (nothing is changed then).
  virtual void load_state_dict(const std::map<std::string, Tensor>& state) = 0;
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  std::vector<Tensor> params_;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

// p -= lr * d, d = g + wd p, with momentum: b = momentum b + (1 - dampening) d (b = d at the first
// step), d = nesterov ? d + momentum b : b.
class SGD final : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;
  SGDOptions options;

 private:
  std::vector<Tensor> momentum_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // Adam: added to the gradient (L2); AdamW: decoupled decay
};

// Adam (Kingma & Ba) with PyTorch's bias correction; AdamW decays the weights directly
// (p *= 1 - lr wd) instead of adding wd p to the gradient.
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled_weight_decay = false);
  void step() override;
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;
  AdamOptions options;
  int64_t steps() const { return step_; }

 private:
  bool decoupled_;
  int64_t step_ = 0;
  std::vector<Tensor> m_, v_;
  std::vector<int> fused_;  // per parameter: -1 not asked yet, 1 the device runs adam_update, 0 not
};

class AdamW final : public Adam {
 public:
  // PyTorch's default weight decay for AdamW is 0.01.
  AdamW(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, true) {}
};

}  // namespace wick::optim
