// wick/data.hpp — training data: IDX files (the MNIST format, raw or gzip'd), a seeded shuffle that
// gives the same order on every machine, and batching onto a device.
#pragma once

#include <wick/error.hpp>
#include <wick/tensor.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace wick::data {

// ---- IDX -----------------------------------------------------------------------------------------
// An IDX file: bytes 0-1 zero, byte 2 the type (0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32,
// 0x0E f64), byte 3 the rank, then rank big-endian u32 extents, then the elements big-endian in C
// order. A gzip'd file (starting 1f 8b) is inflated on the fly, never past the size its header
// announces (a gzip bomb costs nothing).

// Largest element data accepted (after inflation): 16 GiB.
inline constexpr uint64_t kMaxIdxBytes = uint64_t{16} << 30;

// The decoded contents: elements in host (little-endian) order, C order.
struct IdxArray {
  DType dtype = DType::U8;
  Shape shape;
  std::vector<uint8_t> bytes;
};

// Decodes an IDX file held in memory (raw or gzip'd). Errors (truncated, bad magic, unknown type,
// extents whose product overflows or exceeds kMaxIdxBytes, trailing bytes, corrupt gzip, out of
// memory for the data) are wick::Error naming `source` and the problem (out of memory: the size).
// Needs no device: the fuzzer's entry.
IdxArray parse_idx(const void* data, size_t size, const std::string& source = "<memory>");
// Reads a regular file (FIFOs, devices and directories are refused) and decodes it.
IdxArray read_idx_array(const std::string& path);
// The same as a tensor on `device` (invalid: Runtime::global().default_device()).
Tensor read_idx(const std::string& path, const Device& device = {});

// ---- seeded permutations -------------------------------------------------------------------------
// splitmix64 (Steele, Lea, Flood 2014): the k-th value of the stream for `seed` is
// mix(seed + (k + 1) * 0x9E3779B97F4A7C15). Defined exactly, so every machine and standard library
// gives the same numbers (std::shuffle and std::uniform_int_distribution do not).
uint64_t splitmix64(uint64_t seed, uint64_t k);
// A permutation of 0..n-1 by Fisher-Yates: for i = n-1 down to 1, swap i with j uniform in [0, i]
// (drawn from the stream by rejection: unbiased); tests/data/make_idx_fixtures.py computes the same.
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

// ---- datasets and batches ------------------------------------------------------------------------
struct Batch {
  Tensor images;  // f32 [B, image_shape...]: u8 data scaled to [0, 1], other dtypes converted
  Tensor labels;  // i64 [B]
};

struct BatchOptions {
  int64_t batch_size = 64;
  bool drop_last = false;  // drop a last batch smaller than batch_size
  Shape image_shape;       // per-sample shape (e.g. {784} or {1, 28, 28}); empty: as stored
  Device device;           // invalid: Runtime::global().default_device()
};

// Images [N, ...] and labels [N], held in host memory; an order of the samples (identity until
// shuffled); batches built on the host and copied once to their device (one copy for the images,
// one for the labels).
class Dataset {
 public:
  // images: any dtype but bool, first axis N; labels: an integer dtype (or bool), shape [N].
  // Copies both to host memory once.
  Dataset(const Tensor& images, const Tensor& labels);
  Dataset(IdxArray images, IdxArray labels, const std::string& source = "dataset");
  static Dataset from_idx(const std::string& images_path, const std::string& labels_path);

  int64_t size() const { return n_; }
  const Shape& sample_shape() const { return sample_shape_; }
  DType image_dtype() const { return images_.dtype; }
  const std::vector<int64_t>& order() const { return order_; }

  void shuffle(uint64_t seed) { order_ = permutation(n_, seed); }
  void unshuffle();  // back to 0..N-1

  int64_t num_batches(const BatchOptions& options) const;
  // Batch `index` of the current order (0 <= index < num_batches(options)).
  Batch batch(int64_t index, const BatchOptions& options) const;
  // The samples at `indices` (into the stored, unshuffled order), in that order: one rank's share
  // of a batch in data-parallel training (an error naming an index out of range).
  Batch samples(const std::vector<int64_t>& indices, const BatchOptions& options) const;

  // for (const Batch& b : ds.batches(opts)) ...
  class Iterator {
   public:
    Iterator(const Dataset* ds, const BatchOptions* opts, int64_t index)
        : ds_(ds), opts_(opts), index_(index) {}
    Batch operator*() const { return ds_->batch(index_, *opts_); }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return index_ != other.index_; }

   private:
    const Dataset* ds_;
    const BatchOptions* opts_;
    int64_t index_;
  };
  class Range {
   public:
    Range(const Dataset* ds, BatchOptions opts) : ds_(ds), opts_(std::move(opts)) {}
    Iterator begin() const { return {ds_, &opts_, 0}; }
    Iterator end() const { return {ds_, &opts_, ds_->num_batches(opts_)}; }

   private:
    const Dataset* ds_;
    BatchOptions opts_;
  };
  // The range holds a pointer to this dataset: keep the dataset alive and unshuffled while
  // iterating.
  Range batches(BatchOptions options) const { return Range(this, std::move(options)); }

 private:
  IdxArray images_;
  std::vector<int64_t> labels_;
  int64_t n_ = 0;
  Shape sample_shape_;
  std::vector<int64_t> order_;
};

// ---- Fashion-MNIST -------------------------------------------------------------------------------
struct FashionMnistFiles {
  std::string dir;
  std::string train_images, train_labels, test_images, test_labels;
};
// Where Fashion-MNIST's four gzip'd IDX files are: `dir` when given, else $WICK_FASHION_MNIST_DIR
// when set, else /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist). Throws a
// wick::Error listing each path tried and what is missing there, and how to install the package.
FashionMnistFiles find_fashion_mnist(const std::string& dir = "");

}  // namespace wick::data
