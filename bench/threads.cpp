// wick_bench_threads: throughput of independent requests on one cpu-onednn device from 1, 2 and 4
// host threads (issue 21), each op on one intra-op thread ([plugins.cpu-onednn] threads = 1), so
// that the host threads are the only parallelism. Two contenders, interleaved round by round:
//   wick        Wick as it is: the device declares WICK_DEVICE_CAP_CONCURRENT, no host lock;
//   serialised  the same work with every request behind one process-wide mutex, the way a host
//               with one lock per plugin ran it (the old behaviour, and PyTorch-style code
//               that guards a shared model with a lock).
// Workloads: an MLP forward (x[16,512] -> 2048 -> relu -> 512, f32) and the four matmuls of a
// BERT-base layer's projections and feed-forward on 128 tokens (768x768 three times, 768x3072
// and 3072x768). Prints, per workload and thread count, the median over the rounds of requests
// per second, its ratio to one thread, and its ratio to the serialised contender.
//   build/bin/wick_bench_threads [rounds=7] [seconds per run=0.4]
#include <wick/runtime.hpp>
#include <wick/tensor.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using wick::DType;
using wick::Tensor;
using Clock = std::chrono::steady_clock;

struct Workload {
  std::string name;
  std::function<void(const Tensor& input)> request;
  wick::Shape input;
};

// Runs `request` on `threads` threads for about `seconds`; requests per second over all threads.
double throughput(const Workload& w, int threads, bool serialised, double seconds) {
  static std::mutex one_at_a_time;
  std::vector<long> done(static_cast<size_t>(threads), 0);
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const Tensor x = Tensor::rand(w.input, -1.0, 1.0, DType::F32, wick::Runtime::global().cpu_device(),
                                    static_cast<uint64_t>(100 + t));
      while (Clock::now() < end) {
        if (serialised) {
          std::lock_guard lock(one_at_a_time);
          w.request(x);
        } else {
          w.request(x);
        }
        ++done[static_cast<size_t>(t)];
      }
    });
  for (std::thread& th : pool) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  long total = 0;
  for (long d : done) total += d;
  return static_cast<double>(total) / elapsed;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<Workload> workloads() {
  const wick::Device cpu = wick::Runtime::global().cpu_device();
  auto weight = [&](int64_t in, int64_t out, uint64_t seed) {
    return Tensor::rand({in, out}, -0.05, 0.05, DType::F32, cpu, seed);
  };
  const Tensor w1 = weight(512, 2048, 1), b1 = weight(1, 2048, 2), w2 = weight(2048, 512, 3),
               b2 = weight(1, 512, 4);
  const Tensor q = weight(768, 768, 5), k = weight(768, 768, 6), v = weight(768, 768, 7),
               up = weight(768, 3072, 8), down = weight(3072, 768, 9);
  return {
      {"mlp_f32_16x512x2048",
       [=](const Tensor& x) { (void)((x.matmul(w1) + b1).relu().matmul(w2) + b2).sum().item<float>(); },
       {16, 512}},
      {"bert_matmuls_f32_128x768",
       [=](const Tensor& x) {
         const Tensor h = x.matmul(q) + x.matmul(k) + x.matmul(v);
         (void)h.matmul(up).matmul(down).sum().item<float>();
       },
       {128, 768}},
  };
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const double seconds = argc > 2 ? std::max(0.05, std::atof(argv[2])) : 0.4;
  wick::Config config = wick::default_config();
  config.plugin_paths = {WICK_PLUGIN_BUILD_DIR};
  config.priority = {wick::DeviceEntry{"cpu", wick::SourceLocation{"wick_bench_threads", 0, 0}}};
  config.plugin_options["cpu-onednn"].values = {{"threads", static_cast<int64_t>(1)}};
  config.log_level = "error";
  wick::Runtime::configure(config);
  const std::vector<Workload> work = workloads();
  const std::vector<int> counts = {1, 2, 4};
  // rate[workload][contender][threads]: one sample per round, the contenders interleaved.
  std::map<std::string, std::map<bool, std::map<int, std::vector<double>>>> rate;
  const wick::Device cpu = wick::Runtime::global().cpu_device();
  for (const Workload& w : work) w.request(Tensor::rand(w.input, -1.0, 1.0, DType::F32, cpu));  // warm
  for (int r = 0; r < rounds; ++r)
    for (const Workload& w : work)
      for (int n : counts)
        for (bool serialised : {r % 2 == 0, r % 2 != 0})
          rate[w.name][serialised][n].push_back(throughput(w, n, serialised, seconds));
  std::printf("cores: %u, rounds: %d of %.2f s per contender and thread count; medians\n",
              std::thread::hardware_concurrency(), rounds, seconds);
  std::printf("%-26s %7s %12s %10s %16s\n", "workload", "threads", "requests/s", "vs 1 thread",
              "vs serialised");
  for (const Workload& w : work) {
    const double one = median(rate[w.name][false][1]);
    for (int n : counts) {
      const double mine = median(rate[w.name][false][n]), locked = median(rate[w.name][true][n]);
      std::printf("%-26s %7d %12.1f %10.2fx %15.2fx\n", w.name.c_str(), n, mine, mine / one,
                  mine / locked);
    }
  }
  return 0;
}
