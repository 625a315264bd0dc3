// The models layer against transformers: small random-weight checkpoints of every architecture
// and their logits, made by models/fixtures/make_fixtures.py (tests/data/models), on cpu-onednn
// and on opencl in strict mode (no op may fall back); the real all-MiniLM-L6-v2 against
// sentence-transformers' embeddings.
#include <wick/models/models.hpp>
#include <wick/runtime.hpp>
#include <wick/safetensors.hpp>

#include <catch2/catch.hpp>

#include "test_support.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

using namespace wick;
namespace fs = std::filesystem;

namespace {

using test::strict_runtime;

const std::string kData = std::string(WICK_TEST_DATA_DIR) + "/models/";


Device cpu() {
  return strict_runtime().cpu_device();
}

std::vector<Device> strict_devices() {
  std::vector<Device> d = test::strict_devices();
  if (d.size() == 1) WARN("no OpenCL device in this build or on this machine: cpu-onednn only");
  return d;
}

std::map<std::string, Tensor> expected(const std::string& name) {
  return safetensors::load(kData + name + ".expected.safetensors", cpu()).tensors;
}

std::vector<float> host(const Tensor& t) {
  return t.to(cpu()).to(DType::F32).contiguous().to_vector<float>();
}

// max |got - want| over max |want| (the error relative to the tensor's scale), over the positions
// [b, t] where keep (a [B, T] mask) is 1; every element of got must be finite.
double relative_error(const Tensor& got, const Tensor& want, const Tensor& keep = {}) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<float> g = host(got), w = host(want);
  const int64_t rows = keep.defined() ? keep.numel() : 1, per = int64_t(g.size()) / rows;
  const std::vector<int64_t> k =
      keep.defined() ? keep.to(cpu()).to(DType::I64).to_vector<int64_t>() : std::vector<int64_t>{1};
  double err = 0, scale = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = r * per; i < (r + 1) * per; ++i) {
      REQUIRE(std::isfinite(g[size_t(i)]));
      if (!k[size_t(r)]) continue;
      err = std::max(err, double(std::fabs(g[size_t(i)] - w[size_t(i)])));
      scale = std::max(scale, double(std::fabs(w[size_t(i)])));
    }
  }
  return err / scale;
}

models::LoadOptions on(const Device& d, std::optional<DType> dtype = DType::F32) {
  models::LoadOptions o;
  o.device = d;
  o.dtype = dtype;
  return o;
}

const std::vector<std::string> kCausal = {"llama2", "llama3", "mistral", "qwen2", "gpt2"};

}  // namespace

TEST_CASE("every causal architecture gives transformers' logits to 1e-4 in f32, padded rows finite",
          "[models][causal]") {
  for (const Device& dev : strict_devices()) {
    for (const std::string& name : kCausal) {
      INFO(name << " on " << dev.name());
      const auto want = expected(name);
      const auto lm = models::load_causal_lm(kData + name, on(dev));
      CHECK(lm->model_type() == (name.rfind("llama", 0) == 0 ? "llama" : name));
      const Tensor logits = lm->forward(want.at("ids").to(dev), want.at("attention_mask").to(dev));
      CHECK(logits.device() == dev);
      CHECK(logits.dtype() == DType::F32);
      CHECK(relative_error(logits, want.at("logits"), want.at("attention_mask")) < 1e-4);
    }
  }
}

TEST_CASE("cached decoding (a prefill, then one token at a time) gives the full forward's logits",
          "[models][causal][cache]") {
  for (const Device& dev : strict_devices()) {
    for (const std::string& name : kCausal) {
      INFO(name << " on " << dev.name());
      const auto want = expected(name);
      const auto lm = models::load_causal_lm(kData + name, on(dev));
      const Tensor ids = want.at("ids").to(dev), mask = want.at("attention_mask").to(dev);
      const int64_t t = ids.dim(1), prefill = 5;
      models::KvCache cache = lm->new_cache(ids.dim(0), t);
      std::vector<Tensor> steps{
          lm->forward(ids.narrow(1, 0, prefill), cache, mask.narrow(1, 0, prefill))};
      // A chunk of two after the past (a [T, past + T] bottom-right mask), then single tokens
      // whose mask the cache extends by itself.
      steps.push_back(
          lm->forward(ids.narrow(1, prefill, 2), cache, mask.narrow(1, 0, prefill + 2)));
      for (int64_t i = prefill + 2; i < t; ++i)
        steps.push_back(lm->forward(ids.narrow(1, i, 1), cache));
      CHECK(cache.length() == t);
      CHECK(relative_error(Tensor::cat(steps, 1), want.at("logits"), want.at("attention_mask")) <
            1e-4);
      CHECK_THROWS_WITH(lm->forward(ids.narrow(1, 0, 1), cache), Catch::Contains("capacity"));
    }
  }
}

TEST_CASE("a left-padded row gives the logits of its prompt alone", "[models][causal][padding]") {
  for (const std::string& name : kCausal) {
    INFO(name);
    const auto want = expected(name);
    const auto lm = models::load_causal_lm(kData + name, on(cpu()));
    const Tensor alone = lm->forward(want.at("alone_ids"));
    CHECK(relative_error(alone, want.at("alone_logits")) < 1e-4);
    const int64_t pads = want.at("ids").dim(1) - want.at("alone_ids").dim(1);
    const Tensor batch = lm->forward(want.at("ids"), want.at("attention_mask"));
    const Tensor row = batch.narrow(0, 1, 1).narrow(1, pads, alone.dim(1));
    CHECK(relative_error(row, want.at("alone_logits")) < 1e-4);
    CHECK(batch.isnan().to(DType::I64).sum().item<int64_t>() == 0);
    // A row with no token at all (every key masked for every query) stays finite too.
    const Tensor none = Tensor::zeros({1, want.at("ids").dim(1)}, DType::I64, cpu());
    const Tensor mask = Tensor::cat({want.at("attention_mask").narrow(0, 0, 1), none}, 0);
    const Tensor empty_row = lm->forward(want.at("ids").narrow(0, 0, 2), mask);
    CHECK(empty_row.isnan().logical_or(empty_row.isinf()).to(DType::I64).sum().item<int64_t>() ==
          0);
    CHECK(relative_error(empty_row.narrow(0, 0, 1), want.at("logits").narrow(0, 0, 1)) < 1e-4);
  }
}

TEST_CASE("greedy decoding from the cache gives transformers' generate() tokens",
          "[models][causal][generate]") {
  for (const std::string& name : kCausal) {
    INFO(name);
    const auto want = expected(name);
    const auto lm = models::load_causal_lm(kData + name, on(cpu()));
    const Tensor ids = want.at("ids"), gen = want.at("generate_ids");
    const int64_t b = ids.dim(0), t = ids.dim(1), steps = gen.dim(1) - t;
    models::KvCache cache = lm->new_cache(b, t + steps);
    Tensor logits = lm->forward(ids, cache, want.at("attention_mask"));
    std::vector<Tensor> out{ids};
    for (int64_t s = 0; s < steps; ++s) {
      const Tensor next = logits.narrow(1, logits.dim(1) - 1, 1).argmax(-1);  // [B, 1]
      out.push_back(next);
      if (s + 1 < steps) logits = lm->forward(next, cache);
    }
    CHECK(Tensor::cat(out, 1).to_vector<int64_t>() == gen.to_vector<int64_t>());
  }
}

TEST_CASE("a sharded checkpoint loads through its index, every shard's tensors by name",
          "[models][checkpoint]") {
  const models::ModelDir d = models::ModelDir::open(kData + "llama3");
  REQUIRE(d.weights.size() == 2);
  CHECK(d.weights[0].filename() == "model-00001-of-00002.safetensors");
  const auto store = models::open_store(d, on(cpu()));
  CHECK(store->checkpoint()->names().size() == 2 + 2 * 9 + 1);  // embed, lm_head, 9 per layer, norm
}

TEST_CASE("f32, bf16 and f16 checkpoints load into models of any of those dtypes, converted once",
          "[models][checkpoint][dtype]") {
  const auto want = expected("llama2");
  // The bf16 file (torch's rounding of the f32 model) into an f32 model: the logits of the rounded
  // weights, near the f32 ones.
  const auto widened = models::load_causal_lm(kData + "llama2-bf16", on(cpu()));
  CHECK(widened->dtype() == DType::F32);
  CHECK(relative_error(widened->forward(want.at("ids"), want.at("attention_mask")),
                       want.at("logits"), want.at("attention_mask")) < 2e-2);
  // The f32 file into a bf16 model: every tensor equals torch's bf16 rounding bit for bit.
  const auto narrowed = models::load_causal_lm(kData + "llama2", on(cpu(), DType::BF16));
  const auto as_stored = models::load_causal_lm(kData + "llama2-bf16", on(cpu(), std::nullopt));
  CHECK(as_stored->dtype() == DType::BF16);
  const auto reference = safetensors::load(kData + "llama2-bf16/model.safetensors", cpu()).tensors;
  for (const auto& [name, t] : narrowed->store().state_dict()) {
    INFO(name);
    CHECK(t.dtype() == DType::BF16);
    CHECK(t.to(DType::F32).to_vector<float>() ==
          reference.at(name).to(DType::F32).to_vector<float>());
  }
  const Tensor low = narrowed->forward(want.at("ids"), want.at("attention_mask"));
  CHECK(low.dtype() == DType::F32);
  CHECK(relative_error(low, want.at("logits"), want.at("attention_mask")) < 3e-2);
  // f16: the f32 file into an f16 model equals torch's f16 file; the f16 file loads into f32 and
  // bf16 models.
  const auto gpt2 = expected("gpt2");
  const auto half = models::load_causal_lm(kData + "gpt2", on(cpu(), DType::F16));
  const auto half_file = safetensors::load(kData + "gpt2-f16/model.safetensors", cpu()).tensors;
  for (const auto& [name, t] : half->store().state_dict()) {
    INFO(name);
    CHECK(t.to(DType::F32).to_vector<float>() ==
          half_file.at(name).to(DType::F32).to_vector<float>());
  }
  CHECK(relative_error(half->forward(gpt2.at("ids"), gpt2.at("attention_mask")), gpt2.at("logits"),
                       gpt2.at("attention_mask")) < 5e-3);
  for (DType t : {DType::F32, DType::BF16}) {
    const auto from_half = models::load_causal_lm(kData + "gpt2-f16", on(cpu(), t));
    CHECK(from_half->dtype() == t);
    CHECK(relative_error(from_half->forward(gpt2.at("ids"), gpt2.at("attention_mask")),
                         gpt2.at("logits"),
                         gpt2.at("attention_mask")) < (t == DType::F32 ? 5e-3 : 3e-2));
  }
}

TEST_CASE("rope_scaling linear gives transformers' logits", "[models][causal][rope]") {
  const fs::path dir =
      fs::temp_directory_path() / ("wick-models-linear-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kData + "llama2-linear.config.json", dir / "config.json",
                fs::copy_options::overwrite_existing);
  fs::copy_file(kData + "llama2/model.safetensors", dir / "model.safetensors",
                fs::copy_options::overwrite_existing);
  const auto want = expected("llama2-linear");
  const auto lm = models::load_causal_lm(dir, on(cpu()));
  const auto* llama = dynamic_cast<const models::LlamaForCausalLM*>(lm.get());
  REQUIRE(llama != nullptr);
  CHECK(llama->config().rope_scaling.type == models::RopeScaling::Type::Linear);
  CHECK(relative_error(lm->forward(want.at("ids"), want.at("attention_mask")), want.at("logits"),
                       want.at("attention_mask")) < 1e-4);
  // Without the scaling the logits differ: the test sees the factor.
  const auto plain = models::load_causal_lm(kData + "llama2", on(cpu()));
  CHECK(relative_error(plain->forward(want.at("ids"), want.at("attention_mask")), want.at("logits"),
                       want.at("attention_mask")) > 1e-3);
  fs::remove_all(dir);
}

TEST_CASE("a dtype mismatch on load is one summarised error naming a few tensors",
          "[models][checkpoint][dtype]") {
  const models::ModelDir d = models::ModelDir::open(kData + "llama2");
  auto store = models::open_store(d, on(cpu()));
  models::LlamaForCausalLM lm(models::LlamaConfig::from_file(d.config), std::move(store));
  nn::VarStore& s = const_cast<nn::VarStore&>(lm.store());
  const size_t n = s.names().size();
  try {
    s.load(kData + "llama2-bf16/model.safetensors");
    FAIL("a bf16 file into an f32 store without convert_dtype should be refused");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Catch::Contains("all " + std::to_string(n) +
                                  " tensors are bf16 in the file, the model's are f32"));
    CHECK_THAT(m, Catch::Contains("and " + std::to_string(n - 3) + " more"));
    CHECK_THAT(m, Catch::Contains("convert_dtype"));
    CHECK(std::count(m.begin(), m.end(), '\n') == 0);
  }
  s.load(kData + "llama2-bf16/model.safetensors", false, true);  // converted: allowed
}

TEST_CASE("a config that does not fit the checkpoint names the tensor and both shapes",
          "[models][checkpoint]") {
  const models::ModelDir d = models::ModelDir::open(kData + "llama2");
  models::LlamaConfig c = models::LlamaConfig::from_file(d.config);
  c.intermediate_size = 48;
  CHECK_THROWS_WITH(models::LlamaForCausalLM(c, models::open_store(d, on(cpu()))),
                    Catch::Contains("model.layers.0.mlp.gate_proj.weight") &&
                        Catch::Contains("[40, 32]") && Catch::Contains("[48, 32]"));
  // A layer the checkpoint lacks: named, with the names it has that end alike.
  c = models::LlamaConfig::from_file(d.config);
  c.num_hidden_layers = 3;
  CHECK_THROWS_WITH(models::LlamaForCausalLM(c, models::open_store(d, on(cpu()))),
                    Catch::Contains("no tensor 'model.layers.2.input_layernorm.weight'") &&
                        Catch::Contains("e.g. model.layers.0.input_layernorm.weight"));
}

TEST_CASE("a broken model directory is refused naming the file", "[models][checkpoint]") {
  const fs::path dir =
      fs::temp_directory_path() / ("wick-models-broken-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kData + "llama2/config.json", dir / "config.json",
                fs::copy_options::overwrite_existing);
  {  // the first 100 bytes of a real checkpoint: the header says more than is there
    std::ifstream in(kData + "llama2/model.safetensors", std::ios::binary);
    std::string head(100, '\0');
    in.read(head.data(), 100);
    std::ofstream(dir / "model.safetensors", std::ios::binary) << head;
  }
  CHECK_THROWS_WITH(models::load_causal_lm(dir),
                    Catch::Contains((dir / "model.safetensors").string()));
  fs::remove(dir / "model.safetensors");
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors"}})";
  CHECK_THROWS_WITH(
      models::load_causal_lm(dir),
      Catch::Contains("model-00001-of-00002.safetensors") && Catch::Contains("not there"));
  fs::remove_all(dir);
}

TEST_CASE(
    "a loaded model records no autograd in a fresh thread, and training is an explicit opt-in",
    "[models][autograd]") {
  const auto want = expected("qwen2");
  const auto lm = models::load_causal_lm(kData + "qwen2", on(cpu()));
  for (const Tensor& p : lm->store().trainable()) CHECK_FALSE(p.requires_grad());
  bool recorded = true, grad_on = false;
  std::thread worker([&] {
    grad_on = autograd::grad_enabled();
    recorded = lm->forward(want.at("ids")).requires_grad();
  });
  worker.join();
  CHECK(grad_on);  // no guard in that thread
  CHECK_FALSE(recorded);

  models::LoadOptions train = on(cpu());
  train.trainable = true;
  const auto trainable = models::load_causal_lm(kData + "qwen2", train);
  const Tensor loss = trainable->forward(want.at("ids")).sum();
  REQUIRE(loss.requires_grad());
  loss.backward();
  const Tensor embed = trainable->store().get("model.embed_tokens.weight");
  REQUIRE(embed.grad().defined());
  CHECK(embed.grad().abs().sum().item<float>() > 0.0f);
}

TEST_CASE(
    "BERT gives transformers' hidden states, mean pooling and normalisation as "
    "sentence-transformers",
    "[models][bert]") {
  const auto want = expected("bert");
  for (const Device& dev : strict_devices()) {
    INFO(dev.name());
    const auto bert = models::BertModel::load(kData + "bert", on(dev));
    const Tensor mask = want.at("attention_mask").to(dev);
    const Tensor h = bert->forward(want.at("ids").to(dev), mask, want.at("token_type_ids").to(dev));
    CHECK(relative_error(h, want.at("last_hidden_state"), want.at("attention_mask")) < 1e-4);
    const Tensor pooled = models::mean_pool(h, mask);
    CHECK(relative_error(pooled, want.at("mean_pooled")) < 1e-4);
    CHECK(relative_error(models::l2_normalize(pooled), want.at("normalized")) < 1e-4);
  }
}

TEST_CASE("all-MiniLM-L6-v2 gives sentence-transformers' embeddings to 1e-5",
          "[models][bert][minilm]") {
  const std::string dir = std::string(WICK_MODELS_DIR) + "/all-MiniLM-L6-v2";
  REQUIRE(fs::is_directory(dir));  // scripts/setup.sh fetches it
  const auto want = expected("minilm");
  const auto embedder = models::SentenceEmbedder::load(dir, on(cpu()));
  CHECK(embedder->pooling().mode == models::PoolingConfig::Mode::Mean);
  CHECK(embedder->pooling().normalize);
  CHECK(embedder->max_seq_length() == 256);
  // What the checkpoint holds beyond the encoder: the pooler and the position_ids buffer.
  CHECK(embedder->model().store().unused() == std::vector<std::string>{"embeddings.position_ids",
                                                                       "pooler.dense.bias",
                                                                       "pooler.dense.weight"});
  for (const Device& dev : strict_devices()) {
    INFO(dev.name());
    const auto on_device = dev == cpu() ? nullptr : models::SentenceEmbedder::load(dir, on(dev));
    const models::SentenceEmbedder& model = on_device ? *on_device : *embedder;
    const Tensor e = model.encode(want.at("ids").to(dev), want.at("attention_mask").to(dev));
    REQUIRE(e.shape() == Shape{10, 384});
    const std::vector<float> got = host(e), ref = host(want.at("embeddings"));
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, double(std::fabs(got[i] - ref[i])));
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("configs refuse what the models cannot honour, by name and file", "[models][config]") {
  const fs::path dir =
      fs::temp_directory_path() / ("wick-models-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& text) {
    std::ofstream(dir / "config.json") << text;
    return dir / "config.json";
  };
  const std::string base =
      R"("vocab_size": 10, "hidden_size": 8, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2)";
  CHECK_THROWS_WITH(models::LlamaConfig::from_file(
                        write("{\"model_type\": \"llama\", " + base +
                              ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 2.0}}")),
                    Catch::Contains("'yarn'") && Catch::Contains("config.json"));
  CHECK_THROWS_WITH(models::LlamaConfig::from_file(write("{\"model_type\": \"llama\", " + base +
                                                         ", \"hidden_act\": \"mish\"}")),
                    Catch::Contains("'mish'"));
  CHECK_THROWS_WITH(
      models::LlamaConfig::from_file(write("{\"model_type\": \"gemma\", " + base + "}")),
      Catch::Contains("'gemma'"));
  CHECK_THROWS_WITH(
      models::LlamaConfig::from_file(write("{\"model_type\": \"llama\", \"vocab_size\": 10}")),
      Catch::Contains("'hidden_size' is missing"));
  CHECK_THROWS_WITH(models::load_causal_lm(dir), Catch::Contains("model.safetensors"));
  write("{\"model_type\": \"t5\"}");
  std::ofstream(dir / "model.safetensors") << "";
  CHECK_THROWS_WITH(models::load_causal_lm(dir), Catch::Contains("'t5'"));
  fs::remove_all(dir);
}

TEST_CASE("one loaded model serves several threads at once, each with its own cache",
          "[models][threads]") {
  const auto want = expected("llama2");
  const auto lm = models::load_causal_lm(kData + "llama2", on(cpu()));
  std::vector<double> errors(3, 1.0);
  std::vector<std::thread> workers;
  for (size_t w = 0; w < errors.size(); ++w) {
    workers.emplace_back([&, w] {
      const Tensor ids = want.at("ids"), mask = want.at("attention_mask");
      models::KvCache cache = lm->new_cache(ids.dim(0), ids.dim(1));
      std::vector<Tensor> steps{lm->forward(ids.narrow(1, 0, 4), cache, mask.narrow(1, 0, 4))};
      for (int64_t i = 4; i < ids.dim(1); ++i)
        steps.push_back(lm->forward(ids.narrow(1, i, 1), cache));
      const Tensor got = Tensor::cat(steps, 1);
      const std::vector<float> g = host(got), r = host(want.at("logits"));
      const std::vector<int64_t> keep = mask.to_vector<int64_t>();
      const size_t per = g.size() / keep.size();
      double worst = 0;
      for (size_t i = 0; i < g.size(); ++i)
        if (keep[i / per]) worst = std::max(worst, double(std::fabs(g[i] - r[i])));
      errors[w] = worst;
    });
  }
  for (std::thread& t : workers) t.join();
  for (double e : errors) CHECK(e < 1e-4);
}

TEST_CASE("with the NaN check on, an overflow inside a layer is named by its module path",
          "[models][nan]") {
  const auto want = expected("qwen2");
  const auto lm = models::load_causal_lm(kData + "qwen2", on(cpu()));
  {
    autograd::NoGradGuard no_grad;
    Tensor w = lm->store().get("model.layers.1.mlp.up_proj.weight");
    w.copy_(Tensor::full({}, 1e38, DType::F32, cpu()));
  }
  struct CheckOn {
    CheckOn() { strict_runtime().set_check_nan(true); }
    ~CheckOn() { strict_runtime().set_check_nan(false); }
  } on_for_this_scope;
  CHECK_THROWS_WITH(lm->forward(want.at("ids")), Catch::Contains("model.layers.1.mlp"));
}

TEST_CASE("nn::assign writes into a strided view of its target", "[models][nn]") {
  Tensor t = Tensor::zeros({2, 3}, DType::F32, cpu());
  Tensor column = t.narrow(1, 1, 1);  // [2, 1], stride 3
  nn::assign(column, Tensor::from_vector<float>({5, 7}, {2, 1}, cpu()));
  Tensor transposed = t.t().narrow(0, 2, 1);  // the last column, as a [1, 2] row of stride 3
  nn::assign(transposed, Tensor::scalar(1.5f, cpu()));
  CHECK(t.to_vector<float>() == std::vector<float>{0, 5, 1.5f, 0, 7, 1.5f});
}

TEST_CASE("a model built on a fresh store has the checkpoint's names and trains", "[models][nn]") {
  for (const std::string& name : {std::string("llama2"), std::string("qwen2")}) {
    INFO(name);
    const models::ModelDir d = models::ModelDir::open(kData + name);
    auto fresh = std::make_unique<nn::VarStore>(cpu(), DType::F32, 3);
    models::LlamaForCausalLM lm(models::LlamaConfig::from_file(d.config), std::move(fresh));
    std::vector<std::string> names = lm.store().names();
    std::sort(names.begin(), names.end());
    CHECK(names == models::open_store(d, on(cpu()))->checkpoint()->names());
    CHECK(lm.store().is_trainable());
    CHECK(lm.forward(Tensor::from_vector<int64_t>({3, 4, 5}, {1, 3}, cpu())).requires_grad());
  }
}

TEST_CASE("a KvCache is written in place at its length and checks what it is given",
          "[models][cache]") {
  models::KvCache cache(1, 1, 1, 4, 2, DType::F32, cpu());
  const Tensor before = cache.keys(0);
  CHECK(cache.remaining() == 4);
  Tensor mask = cache.begin_step(2, Tensor::from_vector<int64_t>({0, 1}, {1, 2}, cpu()));
  const Tensor k1 = Tensor::from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}, cpu());
  const auto [k, v] = cache.write(0, k1, k1 * 10.0);
  CHECK(k.shape() == Shape{1, 1, 2, 2});
  cache.end_step(2, mask);
  // The next step's mask extends the kept padding mask by itself.
  mask = cache.begin_step(1, Tensor());
  CHECK(mask.to_vector<bool>() == std::vector<bool>{false, true, true});
  const auto kv = cache.write(0, Tensor::from_vector<float>({5, 6}, {1, 1, 1, 2}, cpu()),
                              Tensor::from_vector<float>({50, 60}, {1, 1, 1, 2}, cpu()));
  cache.end_step(1, mask);
  CHECK(kv.first.contiguous().to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(kv.second.contiguous().to_vector<float>() == std::vector<float>{10, 20, 30, 40, 50, 60});
  // In place: the storage allocated at construction holds the values.
  CHECK(before.storage() == cache.keys(0).storage());
  CHECK(before.narrow(2, 0, 3).contiguous().to_vector<float>() ==
        std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(cache.length() == 3);
  CHECK_THROWS_WITH(cache.begin_step(2, Tensor()), Catch::Contains("capacity of 4"));
  CHECK_THROWS_WITH(cache.begin_step(1, Tensor::ones({1, 3}, DType::I64, cpu())),
                    Catch::Contains("[batch, past + new] = [1, 4]"));
  CHECK_THROWS_WITH(cache.write(0, Tensor::zeros({1, 2, 1, 2}, DType::F32, cpu()),
                                Tensor::zeros({1, 2, 1, 2}, DType::F32, cpu())),
                    Catch::Contains("[batch, kv_heads, new, head_dim]"));
  cache.reset();
  CHECK(cache.length() == 0);
  CHECK_FALSE(cache.padding_mask().defined());
}
