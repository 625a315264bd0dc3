// IDX files (fixtures of tests/data/make_idx_fixtures.py, values stated here as the script computes
// them), corrupt IDX files, the seeded permutation (checked against the script's own
// implementation), datasets and batches, and Debian's Fashion-MNIST when it is installed.
#include "address_limit.hpp"
#include "test_support.hpp"

#include <wick/nn/data.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

using namespace wick;
using wick::test::cpu;
namespace data = wick::data;

namespace {

const std::string kDir = std::string(WICK_TEST_DATA_DIR) + "/idx/";

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// read_idx_array(path) in a child process whose address space may grow by only `headroom` bytes:
// "error: <what>" for a wick::Error, "bad_alloc" for a bare std::bad_alloc, "ok" when it loads.
std::string read_idx_short_of_memory(const std::string& path, uint64_t headroom) {
  return test::in_child_with_headroom(headroom, [&] {
    return std::string(data::read_idx_array(path).bytes.empty() ? "ok (empty)" : "ok");
  });
}

}  // namespace

TEST_CASE("IDX files of every type load with their values, raw or gzip'd", "[data][idx]") {
  std::vector<uint8_t> u8(24);
  for (size_t i = 0; i < u8.size(); ++i) u8[i] = static_cast<uint8_t>(7 * i % 256);
  for (const char* name : {"u8_2x3x4.idx", "u8_2x3x4.idx.gz"}) {
    INFO(name);
    const Tensor t = data::read_idx(kDir + name, cpu());
    CHECK(t.dtype() == DType::U8);
    CHECK(t.shape() == Shape{2, 3, 4});
    CHECK(t.to_vector<uint8_t>() == u8);
  }
  CHECK(data::read_idx(kDir + "i8_4.idx", cpu()).to_vector<int8_t>() ==
        std::vector<int8_t>{-128, -1, 0, 127});
  const Tensor i16 = data::read_idx(kDir + "i16_2x2.idx.gz", cpu());
  CHECK(i16.shape() == Shape{2, 2});
  CHECK(i16.to_vector<int16_t>() == std::vector<int16_t>{-32768, -2, 258, 32767});
  CHECK(data::read_idx(kDir + "i32_5.idx", cpu()).to_vector<int32_t>() ==
        std::vector<int32_t>{-2, -1, 0, 1, std::numeric_limits<int32_t>::max()});
  CHECK(data::read_idx(kDir + "f32_2x2.idx.gz", cpu()).to_vector<float>() ==
        std::vector<float>{1.5f, -2.25f, 0.0f, 3e38f});
  CHECK(data::read_idx(kDir + "f64_3.idx", cpu()).to_vector<double>() ==
        std::vector<double>{0.1, -1e300, 2.0});
  const Tensor scalar = data::read_idx(kDir + "u8_scalar.idx", cpu());
  CHECK(scalar.shape() == Shape{});
  CHECK(scalar.item<uint8_t>() == 9);
  CHECK(data::read_idx(kDir + "u8_empty.idx", cpu()).shape() == Shape{0, 5});
  // Two gzip members back to back read as one stream.
  CHECK(data::read_idx(kDir + "u8_10_two_members.idx.gz", cpu()).to_vector<uint8_t>() ==
        std::vector<uint8_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("an IDX file too big for the memory left is a wick::Error naming the file and the size",
          "[data][idx]") {
  if (test::kSanitized) {
    WARN("skipped: RLIMIT_AS cannot bound a sanitizer's address space");
    return;
  }
  // Raw files of 1 GiB and 256 MiB (sparse), each header asking for all the rest of the file.
  const std::string raw = "/tmp/wick-idx-big-" + std::to_string(::getpid()) + ".idx";
  const auto write_raw = [&](uint32_t extent) {
    std::ofstream f(raw, std::ios::binary | std::ios::trunc);
    const char head[8] = {0, 0, 8, 1, char(extent >> 24), char(extent >> 16), char(extent >> 8), char(extent)};
    f.write(head, sizeof head);
    f.close();
    REQUIRE(::truncate(raw.c_str(), off_t{8} + extent) == 0);
  };
  // The file itself does not fit.
  write_raw((uint32_t{1} << 30) - 8);
  CHECK_THAT(read_idx_short_of_memory(raw, uint64_t{64} << 20),
             Catch::StartsWith("error: " + raw + ": out of memory: cannot allocate 1073741824 bytes"));
  // The file fits, its data as it grows does not.
  write_raw((uint32_t{1} << 28) - 8);
  CHECK(read_idx_short_of_memory(raw, uint64_t{1} << 30) == "ok");
  // The file and its data fit (512 MiB), so its data is read in place: growing it, copying 128 MiB
  // into 256 MiB, would need 640.
  CHECK(read_idx_short_of_memory(raw, uint64_t{576} << 20) == "ok");
  CHECK_THAT(read_idx_short_of_memory(raw, uint64_t{384} << 20),
             Catch::StartsWith("error: " + raw + ": out of memory: cannot allocate ") &&
                 Catch::Contains("bytes for the data of shape [268435448] of u8"));
  std::remove(raw.c_str());
}

TEST_CASE("each corrupt IDX file is a wick::Error naming the file and the problem", "[data][idx]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"corrupt_short_magic.idx", "truncated: the file is shorter than the 4-byte IDX magic"},
      {"corrupt_bad_magic.idx", "bad magic: an IDX file starts with two zero bytes"},
      {"corrupt_unknown_type.idx", "bad magic: unknown IDX type 0x0A"},
      {"corrupt_truncated_dims.idx", "truncated: the file ends inside the 3 extents"},
      {"corrupt_truncated_data.idx", "truncated: shape [3, 4] of u8 needs 12 bytes of data, the file holds 9"},
      {"corrupt_trailing.idx", "trailing bytes: the file goes on after the 12 bytes of data"},
      {"corrupt_trailing.idx.gz", "trailing bytes: the inflated content goes on after the 12 bytes"},
      {"corrupt_overflow.idx", "extents overflow"},
      {"corrupt_too_big.idx", "is 68719476736 bytes, more than the 17179869184 allowed"},
      {"corrupt_truncated.idx.gz", "truncated"},
      {"corrupt_crc.idx.gz", "corrupt gzip data: incorrect data check"},
      // 16 KB inflating to 16 MiB after a header that needs 16 bytes: refused at byte 17.
      {"corrupt_bomb.idx.gz", "trailing bytes: the inflated content goes on after the 16 bytes of data"},
  };
  for (const auto& [name, part] : cases) {
    const std::string path = kDir + name;
    INFO(path);
    CHECK_THROWS_WITH(data::read_idx(path, cpu()),
                      Catch::StartsWith(path + ": ") && Catch::Contains(part));
  }
  CHECK_THROWS_WITH(data::read_idx(kDir, cpu()), Catch::Contains("is a directory"));
}

TEST_CASE("mutated IDX files never crash: each is decoded or refused with a wick::Error",
          "[data][idx][fuzz]") {
  for (const char* name : {"u8_2x3x4.idx", "u8_2x3x4.idx.gz", "f32_2x2.idx.gz"}) {
    const std::string valid = read_bytes(kDir + name);
    uint64_t state = 99;
    const auto next = [&] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return state >> 33;
    };
    int refused = 0;
    for (int round = 0; round < 2000; ++round) {
      std::string b = valid;
      if (next() % 3 == 0) {
        b.resize(next() % b.size());
      } else {
        for (uint64_t k = 0, n = 1 + next() % 3; k < n; ++k) {
          const size_t at = next() % (next() % 2 ? std::min<size_t>(b.size(), 16) : b.size());
          b[at] = static_cast<char>(b[at] ^ (1 << (next() % 8)));
        }
      }
      try {
        const data::IdxArray a = data::parse_idx(b.data(), b.size(), "mutant");
        int64_t n = 1;
        for (int64_t d : a.shape) n *= d;
        CHECK(a.bytes.size() == static_cast<size_t>(n) * dtype_size(a.dtype));
      } catch (const Error& e) {
        CHECK(std::string(e.what()).rfind("mutant: ", 0) == 0);
        ++refused;
      }
    }
    CHECK(refused > 500);
  }
}

TEST_CASE("permutation matches the fixture script's splitmix64 Fisher-Yates", "[data][shuffle]") {
  std::ifstream f(kDir + "permutations.txt");
  std::string line;
  int checked = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    int64_t n = 0;
    uint64_t seed = 0;
    char colon = 0;
    in >> n >> seed >> colon;
    std::vector<int64_t> expected;
    for (int64_t v; in >> v;) expected.push_back(v);
    INFO(line);
    CHECK(data::permutation(n, seed) == expected);
    ++checked;
  }
  CHECK(checked == 6);
  CHECK(data::permutation(0, 1).empty());
  // A permutation: each index once.
  const auto p = data::permutation(1000, 5);
  CHECK(std::set<int64_t>(p.begin(), p.end()).size() == 1000);
  CHECK(data::permutation(1000, 5) == p);
  CHECK(data::permutation(1000, 6) != p);
}

TEST_CASE("a dataset yields f32 images in [0, 1] and i64 labels, shuffled by seed, in batches",
          "[data][dataset]") {
  // Image k (2x3) holds 10k + j; its label is (3k + 1) mod 10.
  data::Dataset ds = data::Dataset::from_idx(kDir + "images_10.idx3.gz", kDir + "labels_10.idx1.gz");
  CHECK(ds.size() == 10);
  CHECK(ds.sample_shape() == Shape{2, 3});
  const auto image = [](int64_t k) {
    std::vector<float> v;
    for (int j = 0; j < 6; ++j) v.push_back(static_cast<float>(10 * k + j) / 255.0f);
    return v;
  };
  const auto label = [](int64_t k) { return (3 * k + 1) % 10; };

  data::BatchOptions o;
  o.batch_size = 4;
  o.device = cpu();
  CHECK(ds.num_batches(o) == 3);
  const data::Batch first = ds.batch(0, o);
  CHECK(first.images.dtype() == DType::F32);
  CHECK(first.images.shape() == Shape{4, 2, 3});
  CHECK(first.labels.dtype() == DType::I64);
  CHECK(first.labels.to_vector<int64_t>() == std::vector<int64_t>{1, 4, 7, 0});
  const auto px = first.images.to_vector<float>();
  CHECK(std::vector<float>(px.begin() + 6, px.begin() + 12) == image(1));
  CHECK(first.images.device() == cpu());

  // The last, partial batch is kept or dropped.
  CHECK(ds.batch(2, o).images.shape() == Shape{2, 2, 3});
  o.drop_last = true;
  CHECK(ds.num_batches(o) == 2);
  CHECK_THROWS_WITH(ds.batch(2, o), Catch::Contains("batch 2 of 2"));

  // Shuffled: the batches follow permutation(10, seed), images and labels together.
  ds.shuffle(42);
  const std::vector<int64_t> order = data::permutation(10, 42);
  CHECK(ds.order() == order);
  o.drop_last = false;
  o.image_shape = {6};
  std::vector<int64_t> seen;
  int64_t batches = 0;
  for (const data::Batch& b : ds.batches(o)) {
    ++batches;
    CHECK(b.images.shape()[1] == 6);
    const auto labels = b.labels.to_vector<int64_t>();
    const auto pixels = b.images.to_vector<float>();
    for (size_t i = 0; i < labels.size(); ++i) {
      const int64_t k = order[seen.size()];
      CHECK(labels[i] == label(k));
      CHECK(std::vector<float>(pixels.begin() + static_cast<long>(6 * i),
                               pixels.begin() + static_cast<long>(6 * i + 6)) == image(k));
      seen.push_back(k);
    }
  }
  CHECK(batches == 3);
  CHECK(seen == order);
  ds.unshuffle();
  CHECK(ds.order() == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});

  o.image_shape = {5};
  CHECK_THROWS_WITH(ds.batch(0, o), Catch::Contains("image_shape [5] has 5 elements, a sample [2, 3] has 6"));
  o.batch_size = 0;
  CHECK_THROWS_WITH(ds.num_batches(o), Catch::Contains("batch_size is 0"));
}

TEST_CASE("a dataset from tensors checks its images and labels", "[data][dataset]") {
  const Tensor images = Tensor::from_vector<float>({0.25f, 2.0f, -1.0f, 4.0f}, {2, 2}, cpu());
  const Tensor labels = Tensor::from_vector<int32_t>({3, 1}, cpu());
  data::Dataset ds(images, labels);
  data::BatchOptions o;
  o.batch_size = 8;
  o.device = cpu();
  const data::Batch b = ds.batch(0, o);
  CHECK(b.images.to_vector<float>() == std::vector<float>{0.25f, 2.0f, -1.0f, 4.0f});  // not scaled
  CHECK(b.labels.to_vector<int64_t>() == std::vector<int64_t>{3, 1});
  CHECK_THROWS_WITH(data::Dataset(images, Tensor::from_vector<int32_t>({1, 2, 3}, cpu())),
                    Catch::Contains("2 images but 3 labels"));
  CHECK_THROWS_WITH(data::Dataset(images, images), Catch::Contains("labels must be a 1-D integer tensor"));
}

TEST_CASE("samples gathers the given samples in the given order, and names one out of range", "[data][dataset]") {
  const Tensor images = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}, cpu());
  const Tensor labels = Tensor::from_vector<int32_t>({7, 8, 9}, cpu());
  data::Dataset ds(images, labels);
  data::BatchOptions o;
  o.batch_size = 8;
  o.device = cpu();
  ds.shuffle(5);  // samples() reads the stored order, whatever the shuffle
  const data::Batch b = ds.samples({2, 0}, o);
  CHECK(b.images.shape() == Shape{2, 2});
  CHECK(b.images.to_vector<float>() == std::vector<float>{5, 6, 1, 2});
  CHECK(b.labels.to_vector<int64_t>() == std::vector<int64_t>{9, 7});
  CHECK_THROWS_WITH(ds.samples({1, 3}, o), Catch::Contains("sample 3 of a data set of 3"));
}

TEST_CASE("find_fashion_mnist names every path it tried", "[data][fashion-mnist]") {
  CHECK_THROWS_WITH(data::find_fashion_mnist("/nonexistent/fmnist"),
                    Catch::Contains("/nonexistent/fmnist (the argument): missing "
                                    "train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
                                    "t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]") &&
                        Catch::Contains("apt-get install dataset-fashion-mnist"));
  ::setenv("WICK_FASHION_MNIST_DIR", kDir.c_str(), 1);
  CHECK_THROWS_WITH(data::find_fashion_mnist(), Catch::Contains("($WICK_FASHION_MNIST_DIR)"));
  ::unsetenv("WICK_FASHION_MNIST_DIR");
}

TEST_CASE("Debian Fashion-MNIST test set: 10000 images 28x28, each class 1000 times",
          "[data][fashion-mnist]") {
  data::FashionMnistFiles files;
  try {
    files = data::find_fashion_mnist();
  } catch (const Error& e) {
    WARN("skipped: " << e.what());
    return;
  }
  const Tensor labels = data::read_idx(files.test_labels, cpu());
  CHECK(labels.shape() == Shape{10000});
  std::vector<int> count(10, 0);
  for (uint8_t l : labels.to_vector<uint8_t>()) {
    REQUIRE(l < 10);
    ++count[l];
  }
  CHECK(count == std::vector<int>(10, 1000));
  const data::IdxArray images = data::read_idx_array(files.test_images);
  CHECK(images.dtype == DType::U8);
  CHECK(images.shape == Shape{10000, 28, 28});
}
