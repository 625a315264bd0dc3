// A quantized GGUF model on the CPU lives in the file's mapping (issue 26, item 4): its matrices
// are read-only views of the file, not copies, so loading a ~40 MB Q4_K / Q6_K model and running
// it adds about the file's size to the process's resident memory, nearly all of it file-backed
// pages (RssFile), and little private memory (RssAnon). A GPU gets a copy. The file is written
// here: random Q4_K and Q6_K blocks with small scales (the numbers do not matter, the bytes do).
#include "address_limit.hpp"
#include "test_support.hpp"

#include <wick/gguf.hpp>
#include <wick/models/causal_lm.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace wick;
namespace fs = std::filesystem;
using sdk::ggml::Type;

namespace {

constexpr int64_t kHidden = 1024, kFfn = 2816, kLayers = 4, kHeads = 8, kKvHeads = 2,
                  kVocab = 8192;

// kB of a /proc/self/status line ("RssAnon:  1234 kB").
int64_t status_kb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.compare(0, key.size() + 1, key + ":") == 0) return std::stoll(line.substr(key.size() + 1));
  FAIL("no " << key << " in /proc/self/status");
  return 0;
}

struct Blocks {
  std::vector<std::vector<uint8_t>> store;  // kept alive for gguf::write's spans
  std::vector<gguf::TensorToWrite> tensors;
  std::mt19937_64 rng{20261206};

  void add(const std::string& name, Type type, int64_t rows, int64_t k) {
    const auto traits = *sdk::ggml::type_traits(static_cast<uint32_t>(type));
    const size_t block = traits.type_size, n = static_cast<size_t>(rows * k / traits.block_size);
    std::vector<uint8_t> b(n * block);
    for (size_t i = 0; i + 8 <= b.size(); i += 8) {
      const uint64_t r = rng();
      std::memcpy(&b[i], &r, 8);
    }
    const uint16_t small = 0x211F;  // f16 0.01
    for (size_t i = 0; i < n; ++i) {
      uint8_t* p = &b[i * block];
      if (type == Type::Q4_K) {
        std::memcpy(p, &small, 2);      // d
        std::memcpy(p + 2, &small, 2);  // dmin
      } else {
        std::memcpy(p + 208, &small, 2);  // Q6_K's d
      }
    }
    store.push_back(std::move(b));
    tensors.push_back({name, type, {static_cast<uint64_t>(k), static_cast<uint64_t>(rows)},
                       store.back()});
  }
  void add_norm(const std::string& name, int64_t n) {
    std::vector<uint8_t> b(static_cast<size_t>(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
      const float one = 1.0f;
      std::memcpy(&b[static_cast<size_t>(i) * 4], &one, 4);
    }
    store.push_back(std::move(b));
    tensors.push_back({name, Type::F32, {static_cast<uint64_t>(n)}, store.back()});
  }
};

// A Llama of ~67M parameters as Q4_K_M lays it out (Q6_K for the head, v and down projections).
std::string write_model(const fs::path& dir) {
  Blocks b;
  b.store.reserve(8 + kLayers * 9);
  b.add("token_embd.weight", Type::Q4_K, kVocab, kHidden);
  for (int64_t i = 0; i < kLayers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const int64_t d = kHidden / kHeads;
    b.add_norm(p + "attn_norm.weight", kHidden);
    b.add(p + "attn_q.weight", Type::Q4_K, kHidden, kHidden);
    b.add(p + "attn_k.weight", Type::Q4_K, kKvHeads * d, kHidden);
    b.add(p + "attn_v.weight", Type::Q6_K, kKvHeads * d, kHidden);
    b.add(p + "attn_output.weight", Type::Q4_K, kHidden, kHidden);
    b.add_norm(p + "ffn_norm.weight", kHidden);
    b.add(p + "ffn_gate.weight", Type::Q4_K, kFfn, kHidden);
    b.add(p + "ffn_up.weight", Type::Q4_K, kFfn, kHidden);
    b.add(p + "ffn_down.weight", Type::Q6_K, kHidden, kFfn);
  }
  b.add_norm("output_norm.weight", kHidden);
  b.add("output.weight", Type::Q6_K, kVocab, kHidden);
  const std::vector<gguf::KeyValue> meta = {
      {"general.architecture", "llama"},
      {"llama.context_length", uint32_t{256}},
      {"llama.embedding_length", uint32_t{kHidden}},
      {"llama.block_count", uint32_t{kLayers}},
      {"llama.feed_forward_length", uint32_t{kFfn}},
      {"llama.attention.head_count", uint32_t{kHeads}},
      {"llama.attention.head_count_kv", uint32_t{kKvHeads}},
      {"llama.attention.layer_norm_rms_epsilon", 1e-5f},
  };
  const std::string path = (dir / "model.gguf").string();
  gguf::write(path, meta, b.tensors);
  return path;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("wick-test-gguf-memory-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("a quantized GGUF model on the CPU occupies about its file's size, in the file's pages") {
  const TempDir dir;
  const std::string path = write_model(dir.path);
  const double file_mb = double(fs::file_size(path)) / (1 << 20);
  REQUIRE(file_mb > 35);

  // The matrices are views of the mapping on the CPU, copies on another device.
  {
    const gguf::GgufFile f(path);
    const quant::QTensor q = f.to_qtensor(*f.find_tensor("blk.0.ffn_up.weight"), test::cpu());
    CHECK(q.data().is_read_only());
    Tensor view = q.data();
    CHECK_THROWS_WITH(view.copy_(Tensor::zeros({}, DType::U8, test::cpu())),
                      Catch::Contains("read-only") && Catch::Contains("clone()"));
    for (const Device& d : test::cpu_and_opencl())
      if (!(d == test::cpu()))
        CHECK_FALSE(f.to_qtensor(*f.find_tensor("blk.0.ffn_up.weight"), d).data().is_read_only());
  }

  // The same kernels once on the tiny fixture, so that the code they page in is not counted.
  models::load_causal_lm(std::string(WICK_TEST_DATA_DIR) + "/gguf_llama/q4_k_m.gguf",
                         models::LoadOptions{test::cpu()})
      ->forward(Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4}, {1, 4}));

  const int64_t anon0 = status_kb("RssAnon"), file0 = status_kb("RssFile");
  const auto lm = models::load_causal_lm(path, models::LoadOptions{test::cpu()});
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{1, 17, 4242, 8000}, {1, 4});
  const Tensor logits = lm->forward(ids);  // reads every matrix
  REQUIRE(logits.shape() == Shape{1, 4, kVocab});
  const double anon_mb = double(status_kb("RssAnon") - anon0) / 1024,
               file_pages_mb = double(status_kb("RssFile") - file0) / 1024;
  INFO("file " << file_mb << " MB; after loading and one forward: RssFile +" << file_pages_mb
               << " MB, RssAnon +" << anon_mb << " MB");
  CHECK(file_pages_mb > 0.75 * file_mb);  // the model is the file's pages (not all embedding rows are read)
  if (test::kSanitized) {
    WARN("the private-memory bound is not checked: a sanitizer's allocator keeps freed memory");
  } else {
    CHECK(anon_mb < 0.25 * file_mb);  // a copy of the matrices would be > 1.0x
    CHECK(anon_mb + file_pages_mb < 1.3 * file_mb);
  }
}
