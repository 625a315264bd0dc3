// wick_bench_models: Wick's side of bench/models_vs_pytorch.py. One process per model and thread
// count, kept running so that the script can interleave its contenders without reloading:
//
//   wick_bench_models embed  --model DIR --threads N   # lines "B T id..." -> {"seconds", "first_row"}
//   wick_bench_models decode --model DIR --threads N   # lines "P NEW id..." -> {"tokens", "prefill_seconds",
//                                                      #   "decode_seconds", "total_seconds"}
//
// It prints {"ready": ...} once the model is loaded, then answers each request line with one JSON
// line. embed times SentenceEmbedder::encode on the ids (mask all ones) until the f32 result is on
// the host; decode runs greedy generate() for NEW tokens with no stop token, and decode_seconds
// is the time from the first new token to the last (the first one's time is the prefill's).
// cpu-onednn runs with [plugins.cpu-onednn] threads = N; the model keeps its checkpoint's dtype.
#include <wick/models/bert.hpp>
#include <wick/models/generate.hpp>
#include <wick/runtime.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

int usage() {
  std::cerr << "usage: wick_bench_models embed|decode --model DIR --threads N\n";
  return 2;
}

std::vector<int64_t> read_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<int64_t> words;
  int64_t w = 0;
  while (in >> w) words.push_back(w);
  return words;
}

int serve_embed(const std::string& dir, const wick::Device& device) {
  wick::models::LoadOptions options;
  options.device = device;
  options.dtype = std::nullopt;
  const auto embedder = wick::models::SentenceEmbedder::load(dir, options);
  std::cout << "{\"ready\": \"embed\"}" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto w = read_words(line);
    if (w.size() < 2 || static_cast<int64_t>(w.size()) != 2 + w[0] * w[1]) {
      std::cerr << "wick_bench_models: bad embed request (want B T and B*T ids)\n";
      return 1;
    }
    const std::vector<int64_t> ids(w.begin() + 2, w.end());
    const wick::Shape shape{w[0], w[1]};
    const std::vector<int64_t> ones(ids.size(), 1);
    const auto t0 = Clock::now();
    const wick::Tensor out = embedder->encode(wick::Tensor::from_vector(ids, shape, device),
                                              wick::Tensor::from_vector(ones, shape, device));
    const std::vector<float> v = out.to(wick::DType::F32).to_vector<float>();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    nlohmann::json j;
    j["seconds"] = seconds;
    j["first_row"] = std::vector<float>(v.begin(), v.begin() + out.dim(1));
    std::cout << j.dump() << std::endl;
  }
  return 0;
}

int serve_decode(const std::string& dir, const wick::Device& device) {
  wick::models::LoadOptions options;
  options.device = device;
  options.dtype = std::nullopt;
  // bench/gguf_vs_llama_cpp.py --exact-activations: x not rounded to 8 bits (GGUF models)
  options.round_activations = std::getenv("WICK_EXACT_ACTIVATIONS") == nullptr;
  const auto lm = wick::models::load_causal_lm(dir, options);
  std::cout << "{\"ready\": \"decode\"}" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto w = read_words(line);
    if (w.size() < 2 || static_cast<int64_t>(w.size()) != 2 + w[0]) {
      std::cerr << "wick_bench_models: bad decode request (want P NEW and P ids)\n";
      return 1;
    }
    wick::models::GenerationConfig g;
    g.max_new_tokens = w[1];
    Clock::time_point first, last;
    const auto t0 = Clock::now();
    const auto result = wick::models::generate(*lm, {std::vector<int64_t>(w.begin() + 2, w.end())}, g,
                                               [&](int64_t, int64_t) {
                                                 last = Clock::now();
                                                 if (first == Clock::time_point{}) first = last;
                                                 return true;
                                               });
    const double total = std::chrono::duration<double>(Clock::now() - t0).count();
    nlohmann::json j;
    j["tokens"] = result.tokens[0];
    j["prefill_seconds"] = std::chrono::duration<double>(first - t0).count();
    j["decode_seconds"] = std::chrono::duration<double>(last - first).count();
    j["total_seconds"] = total;
    std::cout << j.dump() << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) return usage();
  const std::string mode = argv[1];
  if (std::string(argv[2]) != "--model" || std::string(argv[4]) != "--threads") return usage();
  const std::string dir = argv[3];
  const int64_t threads = std::atoll(argv[5]);
  if (threads < 1) return usage();
  try {
    wick::Config config = wick::default_config();
    config.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
    config.priority = {wick::DeviceEntry{"cpu", wick::SourceLocation{"wick_bench_models", 0, 0}}};
    config.plugin_options["cpu-onednn"].values = {{"threads", threads}};
    config.log_level = "error";
    wick::Runtime::configure(config);
    const wick::Device device = wick::Runtime::global().default_device();
    if (mode == "embed") return serve_embed(dir, device);
    if (mode == "decode") return serve_decode(dir, device);
    return usage();
  } catch (const std::exception& e) {
    std::cerr << "wick_bench_models: " << e.what() << "\n";
    return 1;
  }
}
