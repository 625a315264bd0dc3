// nn.cpp — the parameter store, layers, losses and initialisation of wick/nn.hpp, all composed of
// Tensor ops (so autograd differentiates them and every device runs them).
#include <wick/nn/nn.hpp>

#include <wick/nn/data.hpp>
#include <wick/runtime.hpp>
#include <wick/safetensors.hpp>

#include <wick/dispatch.hpp>

#include <cmath>

namespace wick::nn {

namespace {

thread_local bool t_training = true;

// A per-name seed: FNV-1a of the name, mixed with the store's seed by data::splitmix64 (its value
// number seed - 1 of the stream keyed by the hash: mix(hash + seed * golden ratio)).
uint64_t name_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return data::splitmix64(h, seed - 1);
}

// PyTorch's fans: weight [out, in, k...] -> (in * prod k, out * prod k); 1-D [n] -> (n, n).
std::pair<double, double> fans(const Shape& shape) {
  if (shape.empty()) return {1.0, 1.0};
  if (shape.size() == 1) return {double(shape[0]), double(shape[0])};
  double receptive = 1;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= double(shape[i]);
  return {double(shape[1]) * receptive, double(shape[0]) * receptive};
}

// Refuses a label outside [0, classes): one min and one max on the labels' device and two scalars
// read back; only when one is out of range are the labels copied to find the first such.
void check_labels(const Tensor& ids, int64_t classes) {
  if (ids.numel() == 0) return;
  autograd::NoGradGuard no_grad;
  const Tensor flat = ids.reshape({-1});
  const std::vector<int64_t> range =
      Tensor::stack({flat.min({0}, true), flat.max({0}, true)}, 0).to_vector<int64_t>();
  if (range[0] >= 0 && range[1] < classes) return;
  const std::vector<int64_t> all = flat.to_vector<int64_t>();
  size_t i = 0;
  while (i + 1 < all.size() && all[i] >= 0 && all[i] < classes) ++i;
  Shape position(ids.shape().size());
  for (size_t a = position.size(), rest = i; a-- > 0;) {
    const auto extent = static_cast<size_t>(ids.shape()[a]);
    position[a] = static_cast<int64_t>(rest % extent);
    rest /= extent;
  }
  throw Error("nn::cross_entropy: label " + std::to_string(all[i]) + " at " +
              shape_to_string(position) + " is outside [0, " + std::to_string(classes) +
              ") (the logits have " + std::to_string(classes) + " classes on axis 1)");
}

std::vector<int> every_axis(int rank) {
  std::vector<int> axes(static_cast<size_t>(rank));
  for (int a = 0; a < rank; ++a) axes[static_cast<size_t>(a)] = a;
  return axes;
}

// The mean of every element, as a scalar.
Tensor mean_all(const Tensor& t) { return t.mean(every_axis(t.rank())); }

std::vector<int> axes_except(int rank, int keep) {
  std::vector<int> axes;
  for (int a = 0; a < rank; ++a)
    if (a != keep) axes.push_back(a);
  return axes;
}

}  // namespace

// ---- initialisation ------------------------------------------------------------------------------

Tensor init_tensor(const Shape& shape, const Init& init, DType dtype, const Device& device, uint64_t seed) {
  const auto [fan_in, fan_out] = fans(shape);
  switch (init.kind) {
    case Init::Kind::Zeros: return Tensor::zeros(shape, dtype, device);
    case Init::Kind::Ones: return Tensor::ones(shape, dtype, device);
    case Init::Kind::Constant: return Tensor::full(shape, init.a, dtype, device);
    case Init::Kind::Uniform: return Tensor::rand(shape, init.a, init.b, dtype, device, seed);
    case Init::Kind::Normal: return Tensor::randn(shape, init.a, init.b, dtype, device, seed);
    case Init::Kind::KaimingUniform:
    case Init::Kind::KaimingNormal: {
      const double gain = std::sqrt(2.0 / (1.0 + init.a * init.a));
      const double std = gain / std::sqrt(fan_in);
      if (init.kind == Init::Kind::KaimingNormal) return Tensor::randn(shape, 0.0, std, dtype, device, seed);
      const double bound = std::sqrt(3.0) * std;
      return Tensor::rand(shape, -bound, bound, dtype, device, seed);
    }
    case Init::Kind::XavierUniform:
    case Init::Kind::XavierNormal: {
      const double gain = init.a == 0.0 ? 1.0 : init.a;
      const double std = gain * std::sqrt(2.0 / (fan_in + fan_out));
      if (init.kind == Init::Kind::XavierNormal) return Tensor::randn(shape, 0.0, std, dtype, device, seed);
      const double bound = std::sqrt(3.0) * std;
      return Tensor::rand(shape, -bound, bound, dtype, device, seed);
    }
  }
  throw Error("init_tensor: unknown initialisation");
}

// ---- the store -----------------------------------------------------------------------------------

Path Path::operator/(const std::string& child) const {
  if (child.empty() || child.find('.') != std::string::npos)
    throw Error("nn::Path: '" + child + "' is not a name part (non-empty, without '.')");
  return Path(store_, full(child));
}

Tensor Path::var(const std::string& name, const Shape& shape, const Init& init) const {
  return store_->create(full(name), shape, init, true);
}

Tensor Path::buffer(const std::string& name, const Shape& shape, const Init& init) const {
  return store_->create(full(name), shape, init, false);
}

VarStore::VarStore(const Device& device, DType dtype, uint64_t seed)
    : device_(device.valid() ? device : Runtime::global().default_device()), dtype_(dtype), seed_(seed) {
  if (!is_float(dtype)) throw Error(std::string("nn::VarStore: parameters must be float, not ") + dtype_name(dtype));
}

Tensor VarStore::create(const std::string& name, const Shape& shape, const Init& init, bool trainable) {
  auto found = vars_.find(name);
  if (found != vars_.end()) {
    if (found->second.tensor.shape() != shape)
      throw Error("nn::VarStore: '" + name + "' exists with shape " +
                  shape_to_string(found->second.tensor.shape()) + ", asked for " + shape_to_string(shape));
    return found->second.tensor;
  }
  // Integer buffers (num_batches_tracked) are i64, as PyTorch keeps them.
  const bool counter = name.size() >= 19 && name.compare(name.size() - 19, 19, "num_batches_tracked") == 0;
  Tensor t = init_tensor(shape, init, counter ? DType::I64 : dtype_, device_, name_seed(seed_, name));
  if (trainable) t.set_requires_grad(true);
  vars_.emplace(name, Var{t, trainable});
  order_.push_back(name);
  return t;
}

std::vector<Tensor> VarStore::trainable() const {
  std::vector<Tensor> out;
  for (const std::string& name : order_) {
    const Var& v = vars_.at(name);
    if (v.trainable) out.push_back(v.tensor);
  }
  return out;
}

std::map<std::string, Tensor> VarStore::state_dict() const {
  std::map<std::string, Tensor> out;
  for (const auto& [name, v] : vars_) out.emplace(name, v.tensor);
  return out;
}

Tensor VarStore::get(const std::string& name) const {
  auto found = vars_.find(name);
  if (found != vars_.end()) return found->second.tensor;
  std::string known;
  for (const std::string& n : order_) known += (known.empty() ? "" : ", ") + n;
  throw Error("nn::VarStore: no tensor named '" + name + "' (known: " + (known.empty() ? "none" : known) + ")");
}

int64_t VarStore::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& t : trainable()) n += t.numel();
  return n;
}

void VarStore::save(const std::string& path) const {
  safetensors::save(path, state_dict(), {{"format", "pt"}});
}

void VarStore::load(const std::string& path, bool allow_extra) {
  const std::map<std::string, Tensor> expected = state_dict();
  const std::map<std::string, Tensor> loaded = safetensors::load_state_dict(path, expected, device_, allow_extra);
  autograd::NoGradGuard no_grad;
  for (auto& [name, v] : vars_) assign(v.tensor, loaded.at(name));
}

void assign(Tensor& target, const Tensor& value) {
  if (!target.defined() || !value.defined()) throw Error("nn::assign: undefined tensor");
  if (!target.is_contiguous()) throw Error("nn::assign: the target must be contiguous");
  if (autograd::grad_enabled() && target.requires_grad())
    throw Error("nn::assign: writing into a tensor that requires grad records nothing; do it under "
                "autograd::NoGradGuard");
  Tensor v = value.detach();
  if (!(v.device() == target.device())) v = v.to(target.device());
  if (v.dtype() != target.dtype()) v = v.to(target.dtype());
  if (v.shape() != target.shape()) v = v.broadcast_to(target.shape());
  dispatch_in_place(WICK_OP_COPY, nullptr, {v}, {target.detach()});
}

void set_training(bool training) { t_training = training; }
bool training() { return t_training; }

EvalGuard::EvalGuard() : previous_(t_training) { t_training = false; }
EvalGuard::~EvalGuard() { t_training = previous_; }

// ---- layers --------------------------------------------------------------------------------------

Linear::Linear(const Path& p, int64_t in, int64_t out, bool with_bias) {
  weight = p.var("weight", {out, in}, Init::kaiming_uniform(std::sqrt(5.0)));
  const double bound = 1.0 / std::sqrt(double(in));
  if (with_bias) bias = p.var("bias", {out}, Init::uniform(-bound, bound));
}

Tensor Linear::operator()(const Tensor& x) const {
  Tensor y = x.matmul(weight.t());
  return bias.defined() ? y + bias : y;
}

Conv2d::Conv2d(const Path& p, int64_t in, int64_t out, int64_t kernel, int64_t stride_,
               int64_t padding_, int64_t dilation_, int64_t groups_, bool with_bias)
    : stride(stride_), padding(padding_), dilation(dilation_), groups(groups_) {
  if (groups < 1 || in % groups != 0 || out % groups != 0)
    throw Error("nn::Conv2d: groups " + std::to_string(groups) + " must divide in (" + std::to_string(in) +
                ") and out (" + std::to_string(out) + ")");
  weight = p.var("weight", {out, in / groups, kernel, kernel}, Init::kaiming_uniform(std::sqrt(5.0)));
  const double bound = 1.0 / std::sqrt(double(in / groups * kernel * kernel));
  if (with_bias) bias = p.var("bias", {out}, Init::uniform(-bound, bound));
}

Tensor Conv2d::operator()(const Tensor& x) const {
  Tensor y = x.conv(weight, {stride, stride}, {padding, padding}, {dilation, dilation}, groups);
  return bias.defined() ? y + bias.reshape({1, bias.dim(0), 1, 1}) : y;
}

Tensor MaxPool2d::operator()(const Tensor& x) const {
  return x.max_pool2d({kernel, kernel}, {stride, stride}, {padding, padding});
}

Tensor AvgPool2d::operator()(const Tensor& x) const {
  return x.avg_pool2d({kernel, kernel}, {stride, stride}, {padding, padding}, count_include_pad);
}

Embedding::Embedding(const Path& p, int64_t num, int64_t dim) {
  weight = p.var("weight", {num, dim}, Init::normal(0.0, 1.0));
}

Tensor Embedding::operator()(const Tensor& ids) const {
  Shape shape = ids.shape();
  shape.push_back(weight.dim(1));
  return weight.index_select(ids.reshape({-1}), 0).reshape(shape);
}

LayerNorm::LayerNorm(const Path& p, const Shape& shape, double eps_) : rank(static_cast<int>(shape.size())), eps(eps_) {
  weight = p.var("weight", shape, Init::ones());
  bias = p.var("bias", shape, Init::zeros());
}

Tensor LayerNorm::operator()(const Tensor& x) const { return x.layer_norm(rank, weight, bias, eps); }

BatchNorm::BatchNorm(const Path& p, int64_t channels, double eps_, double momentum_)
    : eps(eps_), momentum(momentum_) {
  weight = p.var("weight", {channels}, Init::ones());
  bias = p.var("bias", {channels}, Init::zeros());
  running_mean = p.buffer("running_mean", {channels}, Init::zeros());
  running_var = p.buffer("running_var", {channels}, Init::ones());
  num_batches_tracked = p.buffer("num_batches_tracked", {}, Init::zeros());
}

Tensor BatchNorm::operator()(const Tensor& x) const {
  if (x.rank() < 2 || x.dim(1) != weight.dim(0))
    throw Error("nn::BatchNorm: input " + shape_to_string(x.shape()) + " must be [N, " +
                std::to_string(weight.dim(0)) + ", ...]");
  if (!training()) return x.batch_norm(running_mean, running_var, weight, bias, eps);
  const std::vector<int> axes = axes_except(x.rank(), 1);
  Shape keep(static_cast<size_t>(x.rank()), 1);
  keep[1] = x.dim(1);
  const Tensor mean = x.mean(axes);
  const Tensor var = (x - mean.reshape(keep)).sqr().mean(axes);
  {
    autograd::NoGradGuard no_grad;
    const double n = double(x.numel() / x.dim(1));
    Tensor rm = running_mean, rv = running_var, nb = num_batches_tracked;
    assign(rm, running_mean * (1.0 - momentum) + mean.detach() * momentum);
    assign(rv, running_var * (1.0 - momentum) + var.detach() * (momentum * n / std::max(1.0, n - 1.0)));
    assign(nb, num_batches_tracked + 1.0);
  }
  return x.batch_norm(mean, var, weight, bias, eps);
}

Tensor Dropout::operator()(const Tensor& x) const {
  if (!training() || p == 0.0) return x;
  if (p < 0.0 || p >= 1.0) throw Error("nn::Dropout: p = " + std::to_string(p) + " must be in [0, 1)");
  const Tensor keep = Tensor::rand(x.shape(), 0.0, 1.0, x.dtype(), x.device()).ge(Tensor::scalar(p, x.device()).to(x.dtype()));
  return x * keep.to(x.dtype()) * (1.0 / (1.0 - p));
}

Tensor Flatten::operator()(const Tensor& x) const {
  if (x.rank() < 1) throw Error("nn::Flatten: a scalar has no batch axis");
  return x.reshape({x.dim(0), -1});
}

Tensor Sequential::operator()(const Tensor& x) const {
  Tensor y = x;
  for (const Layer& layer : layers_) y = layer(y);
  return y;
}

Tensor relu(const Tensor& x) { return x.relu(); }
Tensor sigmoid(const Tensor& x) { return x.sigmoid(); }
Tensor tanh(const Tensor& x) { return x.tanh(); }
Tensor gelu(const Tensor& x) { return x.gelu(); }
Tensor silu(const Tensor& x) { return x.silu(); }

// ---- losses --------------------------------------------------------------------------------------

Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  if (logits.rank() < 2 || labels.rank() != logits.rank() - 1 || labels.dim(0) != logits.dim(0))
    throw Error("nn::cross_entropy: logits " + shape_to_string(logits.shape()) + " and labels " +
                shape_to_string(labels.shape()) + " must be [N, C, ...] and [N, ...]");
  if (is_float(labels.dtype()) || labels.dtype() == DType::Bool)
    throw Error(std::string("nn::cross_entropy: labels must be integer class indices, not ") + dtype_name(labels.dtype()));
  const Tensor ids = labels.dtype() == DType::I64 ? labels : labels.to(DType::I64);
  check_labels(ids, logits.dim(1));
  return -mean_all(logits.log_softmax(1).gather(1, ids.unsqueeze(1)));
}

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  if (prediction.shape() != target.shape())
    throw Error("nn::mse_loss: prediction " + shape_to_string(prediction.shape()) + " and target " +
                shape_to_string(target.shape()) + " differ");
  return mean_all((prediction - target).sqr());
}

Tensor bce_with_logits(const Tensor& logits, const Tensor& target) {
  if (logits.shape() != target.shape())
    throw Error("nn::bce_with_logits: logits " + shape_to_string(logits.shape()) + " and target " +
                shape_to_string(target.shape()) + " differ");
  return mean_all(logits.relu() - logits * target + (-logits.abs()).exp().log1p());
}

double accuracy(const Tensor& logits, const Tensor& labels) {
  autograd::NoGradGuard no_grad;
  const Tensor ids = labels.dtype() == DType::I64 ? labels : labels.to(DType::I64);
  const Tensor right = logits.argmax(1).eq(ids).to(DType::F32).sum();
  return double(right.item<float>()) / double(labels.numel());
}

}  // namespace wick::nn
