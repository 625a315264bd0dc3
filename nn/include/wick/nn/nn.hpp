// wick/nn.hpp — models from a parameter store: hierarchical names, layers, losses, initialisation.
//
//   nn::VarStore store(device);
//   nn::Sequential model;
//   model.add(nn::Linear(store.root() / "0", 784, 256)).add(nn::relu)
//        .add(nn::Linear(store.root() / "2", 256, 10));
//   Tensor loss = nn::cross_entropy(model(x), labels);
//
// Names follow PyTorch's state_dict and candle's VarMap ("encoder.0.weight"), so a safetensors file
// written from a PyTorch model loads by name (VarStore::load checks names, shapes and dtypes).
// Parameters are initialised from the counter-based RNG with a seed the store derives from its own
// seed and the parameter's name: the same model gets the same numbers on every device.
//
// Layers hold the store's tensors (shared storage), so an optimizer step that writes a parameter in
// place (nn::assign) is seen by every layer. Everything here runs through ordinary Tensor ops:
// every device plugin trains with no op of its own.
#pragma once

#include <wick/autograd.hpp>
#include <wick/tensor.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wick::nn {

// How a new parameter is filled. fan_in / fan_out are PyTorch's: for a weight [out, in, k...],
// fan_in = in * prod(k), fan_out = out * prod(k).
struct Init {
  enum class Kind { Zeros, Ones, Constant, Uniform, Normal, KaimingUniform, KaimingNormal, XavierUniform, XavierNormal };
  Kind kind = Kind::Zeros;
  double a = 0.0, b = 0.0;  // Constant: a; Uniform: [a, b); Normal: mean a, std b;
                            // Kaiming: the negative slope (a = sqrt(5) is PyTorch's Linear default);
                            // Xavier: the gain (a, 1 when 0)
  static Init zeros() { return {Kind::Zeros}; }
  static Init ones() { return {Kind::Ones}; }
  static Init constant(double v) { return {Kind::Constant, v}; }
  static Init uniform(double lo, double hi) { return {Kind::Uniform, lo, hi}; }
  static Init normal(double mean, double std) { return {Kind::Normal, mean, std}; }
  static Init kaiming_uniform(double negative_slope = 0.0) { return {Kind::KaimingUniform, negative_slope}; }
  static Init kaiming_normal(double negative_slope = 0.0) { return {Kind::KaimingNormal, negative_slope}; }
  static Init xavier_uniform(double gain = 1.0) { return {Kind::XavierUniform, gain}; }
  static Init xavier_normal(double gain = 1.0) { return {Kind::XavierNormal, gain}; }
};

class VarStore;
class Checkpoint;

// A place in the store's name tree: root() / "encoder" / "0" names "encoder.0.*".
class Path {
 public:
  Path(VarStore* store, std::string prefix) : store_(store), prefix_(std::move(prefix)) {}
  Path operator/(const std::string& child) const;
  Path operator/(int index) const { return *this / std::to_string(index); }
  // The trainable parameter `name` under this path, created with `init` on first use; an existing
  // one must have this shape (an error naming both otherwise). In a store made from a checkpoint
  // the tensor is the checkpoint's (converted to the store's dtype, its shape checked; `init` is
  // not used), and a name the checkpoint lacks is an error naming it and the checkpoint.
  Tensor var(const std::string& name, const Shape& shape, const Init& init) const;
  // A state tensor saved with the model but not trained (BatchNorm's running statistics).
  Tensor buffer(const std::string& name, const Shape& shape, const Init& init) const;
  // Whether the store's checkpoint holds `name` under this path (false for a store without one):
  // for optional tensors (a bias some checkpoints have, an untied lm_head).
  bool has(const std::string& name) const;
  const std::string& prefix() const { return prefix_; }
  VarStore& store() const { return *store_; }

 private:
  std::string full(const std::string& name) const { return prefix_.empty() ? name : prefix_ + "." + name; }
  VarStore* store_;
  std::string prefix_;
};

// Named tensors of one safetensors file or of the shards of one checkpoint, mapped read-only.
// Every header is validated when opened; a tensor's bytes reach a device only when read. Reading
// is thread-safe (the mappings are never written).
class Checkpoint {
 public:
  // `files`: one file, or every shard (a name found in two shards is an error naming both).
  explicit Checkpoint(const std::vector<std::string>& files);
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  struct Info {
    DType dtype;
    Shape shape;
  };
  bool contains(const std::string& name) const;
  // The dtype and shape of `name`; an error naming the checkpoint when absent.
  Info info(const std::string& name) const;
  std::vector<std::string> names() const;  // sorted
  // Onto `device` as `dtype` (a float checkpoint tensor converts to any float dtype, once, on the
  // device; anything else must match), or as stored when dtype is nullopt.
  Tensor read(const std::string& name, const Device& device, std::optional<DType> dtype) const;
  // The one float dtype of every float tensor, or an error summarising the mix ("101 tensors are
  // bf16, 3 are f32 (a, b, c)").
  DType float_dtype() const;
  // "model.safetensors" or "model-00001-of-00002.safetensors and 1 more shard" (for errors).
  const std::string& source() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class VarStore {
 public:
  explicit VarStore(const Device& device = {}, DType dtype = DType::F32, uint64_t seed = 0);
  // A store whose tensors come from `checkpoint` as the layers create them: no initialisation,
  // each tensor read and converted to `dtype` once. Not trainable unless `trainable`: its
  // parameters do not require grad, so no thread records autograd through them without a guard.
  VarStore(std::shared_ptr<const Checkpoint> checkpoint, const Device& device, DType dtype,
           bool trainable = false);
  VarStore(const VarStore&) = delete;
  VarStore& operator=(const VarStore&) = delete;

  Path root() { return Path(this, ""); }
  const Device& device() const { return device_; }
  DType dtype() const { return dtype_; }
  const std::shared_ptr<const Checkpoint>& checkpoint() const { return checkpoint_; }
  // The checkpoint's tensors no layer has taken (a pooler or head the model does not build,
  // buffers such as position_ids), sorted; empty for a store without a checkpoint.
  std::vector<std::string> unused() const;

  // Whether the parameters require grad (true for a new store, false for one from a checkpoint
  // unless asked). set_trainable switches every parameter, now and for those created later.
  bool is_trainable() const { return trainable_; }
  void set_trainable(bool trainable);

  // Trainable parameters, in creation order (the order optimizers and checkpoints use).
  std::vector<Tensor> trainable() const;
  // Every tensor by name: parameters and buffers (what save() writes).
  std::map<std::string, Tensor> state_dict() const;
  const std::vector<std::string>& names() const { return order_; }
  Tensor get(const std::string& name) const;  // an error naming the known names when absent
  int64_t num_parameters() const;             // elements of the trainable tensors

  // Writes every tensor to a safetensors file (metadata: "format": "pt", as PyTorch writes).
  void save(const std::string& path) const;
  // Reads a safetensors file into the existing tensors (in place: layers see the new values). Names
  // and shapes must match; dtypes too unless convert_dtype (a float tensor is then converted to the
  // model's dtype once). One error summarises what is missing, extra or different, naming at most
  // a few tensors of each kind ("all 101 tensors are bf16, the model's are f32: ...").
  void load(const std::string& path, bool allow_extra = false, bool convert_dtype = false);

  // For Path.
  Tensor create(const std::string& name, const Shape& shape, const Init& init, bool trainable);

 private:
  struct Var {
    Tensor tensor;
    bool trainable;
  };
  Device device_;
  DType dtype_;
  uint64_t seed_;
  std::shared_ptr<const Checkpoint> checkpoint_;
  bool trainable_ = true;
  std::map<std::string, Var> vars_;
  std::vector<std::string> order_;
};

// Writes `value` (broadcast and converted) into `target`'s memory in place: every holder of the
// tensor sees it. The target may be any view that owns each of its elements (a narrow, a
// transpose, one position of a cache), as Tensor::copy_. A value that shares memory with the target (assign(t, t.flip(0))) is read whole
// before anything is written. Not recorded by autograd (call it under NoGradGuard for tensors that
// require grad, as optimizers do); a backward that needs the old contents throws.
void assign(Tensor& target, const Tensor& value);

// Fills a fresh tensor as `init` says, from the counter-based RNG with `seed`.
Tensor init_tensor(const Shape& shape, const Init& init, DType dtype, const Device& device, uint64_t seed);

// Training or inference behaviour for Dropout and BatchNorm, set per thread (default: training).
void set_training(bool training);
bool training();
class EvalGuard {  // inference mode, and no gradient recording, for its lifetime
 public:
  EvalGuard();
  ~EvalGuard();
  EvalGuard(const EvalGuard&) = delete;
  EvalGuard& operator=(const EvalGuard&) = delete;

 private:
  bool previous_;
  autograd::NoGradGuard no_grad_;
};

// ---- layers (each callable: Tensor operator()(const Tensor&) const) ------------------------------

// y = x W^T + b, W [out, in], b [out]; PyTorch's initialisation (Kaiming uniform with a = sqrt(5):
// U(-1/sqrt(in), 1/sqrt(in)) for W and b).
class Linear {
 public:
  Linear(const Path& p, int64_t in, int64_t out, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  Tensor weight, bias;
};

// 2-D convolution, weight [out, in / groups, kh, kw], PyTorch's initialisation.
class Conv2d {
 public:
  Conv2d(const Path& p, int64_t in, int64_t out, int64_t kernel, int64_t stride = 1,
         int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  Tensor weight, bias;
  int64_t stride, padding, dilation, groups;
};

class MaxPool2d {
 public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0)
      : kernel(kernel), stride(stride > 0 ? stride : kernel), padding(padding) {}
  Tensor operator()(const Tensor& x) const;
  int64_t kernel, stride, padding;
};

// PyTorch's defaults: stride = kernel, and with count_include_pad every window is divided by
// kernel * kernel, the zero padding included (false: by the input elements it covers). No
// ceil_mode: the output extent is floor((in + 2 padding - kernel) / stride) + 1.
class AvgPool2d {
 public:
  explicit AvgPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0,
                     bool count_include_pad = true)
      : kernel(kernel),
        stride(stride > 0 ? stride : kernel),
        padding(padding),
        count_include_pad(count_include_pad) {}
  Tensor operator()(const Tensor& x) const;
  int64_t kernel, stride, padding;
  bool count_include_pad;
};

// Rows of a [num, dim] table (N(0, 1) initialisation) for integer ids of any shape.
class Embedding {
 public:
  Embedding(const Path& p, int64_t num, int64_t dim);
  Tensor operator()(const Tensor& ids) const;
  Tensor weight;
};

// Normalises over the last axes (`shape`), weight ones and bias zeros.
class LayerNorm {
 public:
  LayerNorm(const Path& p, const Shape& shape, double eps = 1e-5);
  Tensor operator()(const Tensor& x) const;
  Tensor weight, bias;
  int rank;
  double eps;
};

// Over axis 1 of [N, C, ...]: in training, the batch's statistics (biased variance for the output,
// unbiased for the running variance, as PyTorch) and running averages with `momentum`; in
// inference, the running statistics. Buffers running_mean, running_var, num_batches_tracked.
class BatchNorm {
 public:
  BatchNorm(const Path& p, int64_t channels, double eps = 1e-5, double momentum = 0.1);
  Tensor operator()(const Tensor& x) const;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  double eps, momentum;
};

// Zeroes elements with probability p in training (scaling the rest by 1 / (1 - p)); the identity
// in inference. Each call draws a fresh mask from the process generator (manual_seed).
class Dropout {
 public:
  explicit Dropout(double p = 0.5) : p(p) {}
  Tensor operator()(const Tensor& x) const;
  double p;
};

// [N, d1, d2, ...] -> [N, d1 * d2 * ...].
struct Flatten {
  Tensor operator()(const Tensor& x) const;
};

// Layers applied in order.
class Sequential {
 public:
  using Layer = std::function<Tensor(const Tensor&)>;
  template <class L>
  Sequential& add(L layer) {
    layers_.push_back(Layer(std::move(layer)));
    return *this;
  }
  Tensor operator()(const Tensor& x) const;
  size_t size() const { return layers_.size(); }

 private:
  std::vector<Layer> layers_;
};

// Activations, as layers.
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor silu(const Tensor& x);

// ---- losses (means over the batch) ------------------------------------------------------------------

// logits [N, C] (or [N, C, d...]), labels [N] (or [N, d...]) of integer class indices in [0, C).
Tensor cross_entropy(const Tensor& logits, const Tensor& labels);
Tensor mse_loss(const Tensor& prediction, const Tensor& target);
// Numerically stable: max(x, 0) - x t + log(1 + exp(-|x|)).
Tensor bce_with_logits(const Tensor& logits, const Tensor& target);

// Share of rows whose largest logit is the label.
double accuracy(const Tensor& logits, const Tensor& labels);

}  // namespace wick::nn
