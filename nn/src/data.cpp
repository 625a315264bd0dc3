// data.cpp — IDX files to tensors, the seeded permutation, datasets and batches, and finding
// Fashion-MNIST. The IDX decoding itself is idx.cpp.
#include <wick/nn/data.hpp>

#include <wick/safe_file.hpp>
#include <wick/shape.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace wick::data {
namespace {

std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes) {
  if (auto why = safe_file::refuse(path, max_bytes)) throw Error(path + ": " + *why);
  // O_NONBLOCK: should the file have been swapped for a FIFO since the check, open does not wait.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": is not a regular file");
  }
  std::vector<uint8_t> out;
  try {
    out.resize(static_cast<size_t>(st.st_size));
  } catch (const std::bad_alloc&) {
    ::close(fd);
    throw Error(path + ": out of memory: cannot allocate " + std::to_string(st.st_size) +
                " bytes to read the file");
  }
  size_t have = 0;
  while (have < out.size()) {
    const ssize_t n = ::read(fd, out.data() + have, out.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw Error(path + ": cannot read: " + std::strerror(err));
    }
    if (n == 0) break;  // shrank under us: parse what is there
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(have);
  return out;
}

// Every element of `a` converted to T (a is host-order C-order data of a.dtype).
template <class T>
std::vector<T> convert(const IdxArray& a) {
  std::vector<T> out(a.bytes.size() / dtype_size(a.dtype));
  sdk::visit_dtype(to_c(a.dtype), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const auto* p = reinterpret_cast<const S*>(a.bytes.data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(p[i]);
  });
  return out;
}

IdxArray to_host(const Tensor& t, const char* what) {
  if (!t.defined()) throw Error(std::string("Dataset: the ") + what + " tensor is undefined");
  IdxArray a;
  a.dtype = t.dtype();
  a.shape = t.shape();
  a.bytes.resize(static_cast<size_t>(bytes_of(t.shape(), t.dtype())));
  t.copy_to_host(a.bytes.data(), a.bytes.size());
  return a;
}

bool is_integer(DType t) { return !is_float(t); }  // bool counts: labels 0 and 1

}  // namespace

IdxArray read_idx_array(const std::string& path) {
  const std::vector<uint8_t> file = read_file(path, kMaxIdxBytes + (uint64_t{1} << 20));
  return parse_idx(file.data(), file.size(), path);
}

Tensor read_idx(const std::string& path, const Device& device) {
  const IdxArray a = read_idx_array(path);
  return Tensor::from_bytes(a.bytes.data(), a.bytes.size(), a.shape, a.dtype, device);
}

uint64_t splitmix64(uint64_t seed, uint64_t k) {
  uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  if (n < 0) throw Error("permutation: n is " + std::to_string(n) + ", not >= 0");
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[static_cast<size_t>(i)] = i;
  uint64_t k = 0;
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t bound = static_cast<uint64_t>(i) + 1;
    // Values at or above the largest multiple of bound below 2^64 are redrawn: no modulo bias.
    const uint64_t rem = (0 - bound) % bound;  // 2^64 mod bound
    uint64_t x = splitmix64(seed, k++);
    while (rem != 0 && x > ~uint64_t{0} - rem) x = splitmix64(seed, k++);
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(x % bound)]);
  }
  return p;
}

Dataset::Dataset(const Tensor& images, const Tensor& labels)
    : Dataset(to_host(images, "images"), to_host(labels, "labels"), "Dataset") {}

Dataset::Dataset(IdxArray images, IdxArray labels, const std::string& source)
    : images_(std::move(images)) {
  if (images_.shape.empty())
    throw Error(source + ": images must have a first axis (samples), got a scalar");
  if (images_.dtype == DType::Bool) throw Error(source + ": images may not be bool");
  if (labels.shape.size() != 1 || !is_integer(labels.dtype))
    throw Error(source + ": labels must be a 1-D integer tensor, got " +
                shape_to_string(labels.shape) + " " + dtype_name(labels.dtype));
  n_ = images_.shape[0];
  if (labels.shape[0] != n_)
    throw Error(source + ": " + std::to_string(n_) + " images but " +
                std::to_string(labels.shape[0]) + " labels");
  sample_shape_.assign(images_.shape.begin() + 1, images_.shape.end());
  labels_ = convert<int64_t>(labels);
  unshuffle();
}

Dataset Dataset::from_idx(const std::string& images_path, const std::string& labels_path) {
  return Dataset(read_idx_array(images_path), read_idx_array(labels_path),
                 images_path + " with " + labels_path);
}

void Dataset::unshuffle() {
  order_.resize(static_cast<size_t>(n_));
  for (int64_t i = 0; i < n_; ++i) order_[static_cast<size_t>(i)] = i;
}

int64_t Dataset::num_batches(const BatchOptions& o) const {
  if (o.batch_size <= 0)
    throw Error("Dataset: batch_size is " + std::to_string(o.batch_size) + ", not > 0");
  return o.drop_last ? n_ / o.batch_size : (n_ + o.batch_size - 1) / o.batch_size;
}

Batch Dataset::batch(int64_t index, const BatchOptions& o) const {
  const int64_t count_batches = num_batches(o);
  if (index < 0 || index >= count_batches)
    throw Error("Dataset: batch " + std::to_string(index) + " of " + std::to_string(count_batches) +
                " (batch_size " + std::to_string(o.batch_size) + ", " + std::to_string(n_) +
                " samples)");
  const int64_t start = index * o.batch_size;
  const int64_t count = std::min(o.batch_size, n_ - start);
  return samples(std::vector<int64_t>(order_.begin() + start, order_.begin() + start + count), o);
}

Batch Dataset::samples(const std::vector<int64_t>& indices, const BatchOptions& o) const {
  for (const int64_t sample : indices)
    if (sample < 0 || sample >= n_)
      throw Error("Dataset: sample " + std::to_string(sample) + " of a data set of " + std::to_string(n_));
  const int64_t count = static_cast<int64_t>(indices.size());
  const int64_t per = numel_of(sample_shape_);
  Shape shape = o.image_shape.empty() ? sample_shape_ : o.image_shape;
  if (numel_of(shape) != per)
    throw Error("Dataset: image_shape " + shape_to_string(o.image_shape) + " has " +
                std::to_string(numel_of(shape)) + " elements, a sample " +
                shape_to_string(sample_shape_) + " has " + std::to_string(per));
  shape.insert(shape.begin(), count);

  // Gathered and converted on the host; one copy to the device per tensor.
  std::vector<float> images(static_cast<size_t>(count * per));
  std::vector<int64_t> labels(static_cast<size_t>(count));
  // u8 pixels become x / 255 (correctly rounded, as numpy's float32 x / 255).
  const float divisor = images_.dtype == DType::U8 ? 255.0f : 1.0f;
  sdk::visit_dtype(to_c(images_.dtype), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const auto* src = reinterpret_cast<const S*>(images_.bytes.data());
    for (int64_t b = 0; b < count; ++b) {
      const int64_t sample = indices[static_cast<size_t>(b)];
      const S* s = src + sample * per;
      float* d = images.data() + b * per;
      for (int64_t i = 0; i < per; ++i) d[i] = static_cast<float>(s[i]) / divisor;
      labels[static_cast<size_t>(b)] = labels_[static_cast<size_t>(sample)];
    }
  });
  return Batch{Tensor::from_vector(images, shape, o.device),
               Tensor::from_vector(labels, Shape{count}, o.device)};
}

FashionMnistFiles find_fashion_mnist(const std::string& dir) {
  static const char* const kNames[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
  std::vector<std::pair<std::string, std::string>> candidates;  // (dir, where it came from)
  const char* env = std::getenv("WICK_FASHION_MNIST_DIR");
  if (!dir.empty()) candidates.emplace_back(dir, "the argument");
  else if (env && *env) candidates.emplace_back(env, "$WICK_FASHION_MNIST_DIR");
  else candidates.emplace_back("/usr/share/datasets/fashion-mnist", "Debian's dataset-fashion-mnist");

  std::string tried;
  for (const auto& [d, from] : candidates) {
    std::string found[4], missing;
    for (int i = 0; i < 4; ++i) {
      // The gzip'd name as shipped, or the raw one when someone has unpacked it.
      for (const std::string& name : {std::string(kNames[i]) + ".gz", std::string(kNames[i])}) {
        struct stat st {};
        const std::string path = d + "/" + name;
        if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
          found[i] = path;
          break;
        }
      }
      if (found[i].empty()) missing += std::string(missing.empty() ? "" : ", ") + kNames[i] + "[.gz]";
    }
    if (missing.empty()) return FashionMnistFiles{d, found[0], found[1], found[2], found[3]};
    tried += "\n  " + d + " (" + from + "): missing " + missing;
  }
  throw Error("Fashion-MNIST not found; tried:" + tried +
              "\nInstall it with `apt-get install dataset-fashion-mnist`, or set "
              "WICK_FASHION_MNIST_DIR to a directory holding the four IDX files");
}

}  // namespace wick::data
