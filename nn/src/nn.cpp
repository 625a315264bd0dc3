// nn.cpp — the parameter store, layers, losses and initialisation of wick/nn.hpp, all composed of
// Tensor ops (so autograd differentiates them and every device runs them).
#include <wick/nn/nn.hpp>

#include <wick/nn/data.hpp>
#include <wick/runtime.hpp>
#include <wick/safetensors.hpp>

#include <wick/mapped_file.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

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


// "a, b, c and 4 more": at most `few` names of a list, for errors about many tensors.
std::string some_names(const std::vector<std::string>& names, size_t few = 3) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < few; ++i)
    out += (i ? ", " : "") + safetensors::printable_name(names[i]);
  if (names.size() > few) out += " and " + std::to_string(names.size() - few) + " more";
  return out;
}

template <class T>
constexpr bool float_type() {
  return std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
}

// n elements of From at src as To at dst, one typed loop (f16 and bf16 round to nearest even from
// f32; f64 goes through f32 to a 16-bit type, as PyTorch's .to()).
template <class From, class To>
void convert_elements(const unsigned char* src, unsigned char* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    From x;
    std::memcpy(&x, src + i * sizeof(From), sizeof(From));
    To y;
    if constexpr (std::is_same_v<To, double>) y = double(x);
    else if constexpr (std::is_same_v<To, float>) y = float(x);
    else y = To(float(x));
    std::memcpy(dst + i * sizeof(To), &y, sizeof(To));
  }
}

// A tensor of `from` bytes onto `device` as `to`: float dtypes convert on the host, once (f16 and
// bf16 round to nearest even, through f32 as PyTorch's .to()); any other pair must be equal.
Tensor tensor_from_file(const unsigned char* data, size_t bytes, const Shape& shape, DType from, DType to,
                        const Device& device, const std::string& what) {
  if (from == to) return Tensor::from_bytes(data, bytes, shape, from, device);
  if (!is_float(from) || !is_float(to))
    throw Error(what + " is " + dtype_name(from) + " and cannot be converted to " + dtype_name(to) +
                " (only float tensors convert)");
  const size_t n = bytes / dtype_size(from);
  std::vector<unsigned char> out(n * dtype_size(to));
  sdk::visit_dtype(to_c(from), [&](auto from_tag) {
    sdk::visit_dtype(to_c(to), [&](auto to_tag) {
      using From = typename decltype(from_tag)::type;
      using To = typename decltype(to_tag)::type;
      if constexpr (float_type<From>() && float_type<To>()) convert_elements<From, To>(data, out.data(), n);
    });
  });
  return Tensor::from_bytes(out.data(), out.size(), shape, to, device);
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

bool Path::has(const std::string& name) const {
  return store_->checkpoint() != nullptr && store_->checkpoint()->contains(full(name));
}

// ---- checkpoints ---------------------------------------------------------------------------------

struct Checkpoint::Impl {
  struct Shard {
    std::unique_ptr<MappedFile> file;
    safetensors::Header header;
  };
  std::vector<Shard> shards;
  std::map<std::string, std::pair<size_t, size_t>> index;  // name -> (shard, entry)
  std::string source;

  const safetensors::Entry& entry(const std::string& name) const {
    auto it = index.find(name);
    if (it == index.end())
      throw Error("nn::Checkpoint: " + source + " has no tensor '" + safetensors::printable_name(name) +
                  "' (it has " + std::to_string(index.size()) + " tensors" + similar(name) + ")");
    return shards[it->second.first].header.entries[it->second.second];
  }

  // ", e.g. a.b.weight, c.b.weight": names ending as `name` does (its last two parts), for errors.
  std::string similar(const std::string& name) const {
    const size_t dot = name.rfind('.', name.rfind('.') == std::string::npos ? 0 : name.rfind('.') - 1);
    const std::string tail = dot == std::string::npos ? name : name.substr(dot);
    std::vector<std::string> like;
    for (const auto& kv : index)
      if (kv.first.size() >= tail.size() && kv.first.compare(kv.first.size() - tail.size(), tail.size(), tail) == 0)
        like.push_back(kv.first);
    return like.empty() ? "" : ", e.g. " + some_names(like);
  }
};

Checkpoint::Checkpoint(const std::vector<std::string>& files) : impl_(std::make_unique<Impl>()) {
  if (files.empty()) throw Error("nn::Checkpoint: no files given");
  impl_->source = files[0];
  if (files.size() > 1)
    impl_->source += " and " + std::to_string(files.size() - 1) + " more shard" + (files.size() > 2 ? "s" : "");
  for (size_t f = 0; f < files.size(); ++f) {
    Impl::Shard shard{std::make_unique<MappedFile>(files[f]), {}};
    shard.header = safetensors::parse(shard.file->data(), shard.file->size(), files[f]);
    shard.file->check_intact("reading the header");
    for (size_t e = 0; e < shard.header.entries.size(); ++e) {
      const std::string& name = shard.header.entries[e].name;
      auto [it, fresh] = impl_->index.emplace(name, std::make_pair(f, e));
      if (!fresh)
        throw Error("nn::Checkpoint: tensor '" + safetensors::printable_name(name) + "' is in both " +
                    files[it->second.first] + " and " + files[f]);
    }
    impl_->shards.push_back(std::move(shard));
  }
}

Checkpoint::~Checkpoint() = default;

bool Checkpoint::contains(const std::string& name) const { return impl_->index.count(name) != 0; }

Checkpoint::Info Checkpoint::info(const std::string& name) const {
  const safetensors::Entry& e = impl_->entry(name);
  return {e.dtype, e.shape};
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& kv : impl_->index) out.push_back(kv.first);
  return out;
}

const std::string& Checkpoint::source() const { return impl_->source; }

Tensor Checkpoint::read(const std::string& name, const Device& device, std::optional<DType> dtype) const {
  const safetensors::Entry& e = impl_->entry(name);
  const Impl::Shard& shard = impl_->shards[impl_->index.at(name).first];
  const unsigned char* bytes = shard.file->data() + shard.header.data_start + e.begin;
  Tensor t = tensor_from_file(bytes, e.end - e.begin, e.shape, e.dtype, dtype.value_or(e.dtype), device,
                              source() + ": '" + safetensors::printable_name(name) + "'");
  shard.file->check_intact("reading '" + safetensors::printable_name(name) + "'");
  return t;
}

DType Checkpoint::float_dtype() const {
  std::map<DType, std::vector<std::string>> by_dtype;
  for (const auto& kv : impl_->index) {
    const DType t = impl_->entry(kv.first).dtype;
    if (is_float(t)) by_dtype[t].push_back(kv.first);
  }
  if (by_dtype.empty()) throw Error("nn::Checkpoint: " + source() + " holds no float tensor");
  if (by_dtype.size() == 1) return by_dtype.begin()->first;
  std::string mix;
  for (const auto& [t, names] : by_dtype)
    mix += (mix.empty() ? "" : ", ") + std::to_string(names.size()) + " are " + dtype_name(t) + " (" +
           some_names(names) + ")";
  throw Error("nn::Checkpoint: " + source() + " mixes float dtypes: " + mix + "; choose one dtype to load into");
}

// ---- the store -----------------------------------------------------------------------------------

VarStore::VarStore(const Device& device, DType dtype, uint64_t seed)
    : device_(device.valid() ? device : Runtime::global().default_device()), dtype_(dtype), seed_(seed) {
  if (!is_float(dtype)) throw Error(std::string("nn::VarStore: parameters must be float, not ") + dtype_name(dtype));
}

VarStore::VarStore(std::shared_ptr<const Checkpoint> checkpoint, const Device& device, DType dtype, bool trainable)
    : VarStore(device, dtype, 0) {
  if (!checkpoint) throw Error("nn::VarStore: no checkpoint given");
  checkpoint_ = std::move(checkpoint);
  trainable_ = trainable;
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
  const DType dtype = counter ? DType::I64 : dtype_;
  Tensor t;
  if (checkpoint_) {
    const Checkpoint::Info info = checkpoint_->info(name);
    if (info.shape != shape)
      throw Error("nn::VarStore: '" + safetensors::printable_name(name) + "' in " + checkpoint_->source() +
                  " is " + shape_to_string(info.shape) + ", the model (its config) needs " + shape_to_string(shape));
    t = checkpoint_->read(name, device_, dtype);
  } else {
    t = init_tensor(shape, init, dtype, device_, name_seed(seed_, name));
  }
  if (trainable && trainable_) t.set_requires_grad(true);
  vars_.emplace(name, Var{t, trainable});
  order_.push_back(name);
  return t;
}

std::vector<std::string> VarStore::unused() const {
  std::vector<std::string> out;
  if (!checkpoint_) return out;
  for (const std::string& name : checkpoint_->names())
    if (!vars_.count(name)) out.push_back(name);
  return out;
}

void VarStore::set_trainable(bool trainable) {
  trainable_ = trainable;
  for (auto& kv : vars_)
    if (kv.second.trainable) kv.second.tensor.set_requires_grad(trainable);
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
  throw Error("nn::VarStore: no tensor named '" + name + "' (known: " +
              (order_.empty() ? std::string("none") : some_names(order_, 8)) + ")");
}

int64_t VarStore::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& t : trainable()) n += t.numel();
  return n;
}

void VarStore::save(const std::string& path) const {
  safetensors::save(path, state_dict(), {{"format", "pt"}});
}

namespace {

// What differs between a model's tensors and a checkpoint's, summarised: each kind of difference
// counted, with at most a few names; "" when they agree.
std::string load_mismatches(const std::map<std::string, Tensor>& model, const Checkpoint& file,
                            bool allow_extra, bool convert_dtype) {
  std::vector<std::string> missing, extra, shapes, dtypes;
  std::map<std::pair<DType, DType>, size_t> pairs;  // (file, model) -> count
  for (const auto& [name, t] : model) {
    if (!file.contains(name)) {
      missing.push_back(name);
      continue;
    }
    const Checkpoint::Info info = file.info(name);
    if (info.shape != t.shape())
      shapes.push_back(name + ": expected " + shape_to_string(t.shape()) + " " + dtype_name(t.dtype()) + ", found " +
                       shape_to_string(info.shape) + " " + dtype_name(info.dtype));
    const bool convertible = convert_dtype && is_float(info.dtype) && is_float(t.dtype());
    if (info.dtype != t.dtype() && !convertible) {
      dtypes.push_back(name);
      ++pairs[{info.dtype, t.dtype()}];
    }
  }
  if (!allow_extra)
    for (const std::string& name : file.names())
      if (!model.count(name)) extra.push_back(name);
  std::vector<std::string> parts;
  const size_t n = model.size();
  if (!missing.empty())
    parts.push_back(std::to_string(missing.size()) + " of the model's " + std::to_string(n) +
                    " tensors are missing from the file: " + some_names(missing, 5));
  if (!extra.empty())
    parts.push_back(std::to_string(extra.size()) + " tensors of the file are not in the model: " + some_names(extra, 5));
  if (!shapes.empty())
    parts.push_back(std::to_string(shapes.size()) + " differ in shape: " + some_names(shapes));
  if (!dtypes.empty()) {
    std::string d;
    if (pairs.size() == 1) {
      const auto [from, to] = pairs.begin()->first;
      d = (dtypes.size() == n ? "all " + std::to_string(n) + " tensors are " : std::to_string(dtypes.size()) +
           " of " + std::to_string(n) + " tensors are ") + dtype_name(from) + " in the file, the model's are " +
          dtype_name(to);
    } else {
      d = std::to_string(dtypes.size()) + " of " + std::to_string(n) + " tensors differ in dtype";
    }
    parts.push_back(d + " (" + some_names(dtypes) + ")" +
                    (convert_dtype ? "" : "; load with convert_dtype = true to convert float tensors once"));
  }
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

void VarStore::load(const std::string& path, bool allow_extra, bool convert_dtype) {
  const Checkpoint file({path});
  const std::map<std::string, Tensor> model = state_dict();
  const std::string problems = load_mismatches(model, file, allow_extra, convert_dtype);
  if (!problems.empty()) throw Error("nn::VarStore::load: " + path + " does not fit the model: " + problems);
  autograd::NoGradGuard no_grad;
  for (auto& [name, v] : vars_) assign(v.tensor, file.read(name, device_, v.tensor.dtype()));
}

void assign(Tensor& target, const Tensor& value) {
  if (!target.defined() || !value.defined()) throw Error("nn::assign: undefined tensor");
  if (autograd::grad_enabled() && target.requires_grad())
    throw Error("nn::assign: writing into a tensor that requires grad records nothing; do it under "
                "autograd::NoGradGuard");
  // Tensor::copy_ writes into any view (strided, offset), reading an overlapping value whole first.
  target.copy_(value.detach());
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
