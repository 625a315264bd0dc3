// wick-distributed-resume-check — a job resumed from a checkpoint ends where an uninterrupted one
// does. Three runs of the same training (the 12-32-4 MLP of mlp_fixture.hpp, data parallel with
// DataParallel, 15 global batches of 16 over 2.5 epochs) and a comparison:
//   mpirun -n 2 wick-distributed-resume-check --steps 15 --out full.safetensors
//   mpirun -n 2 wick-distributed-resume-check --steps 15 --stop-after 8 --out ckpt.safetensors
//   mpirun -n 2 wick-distributed-resume-check --steps 15 --resume ckpt.safetensors --out
//   resumed.safetensors wick-distributed-resume-check --compare full.safetensors
//   resumed.safetensors --tolerance 0
// Common options: --dtype f32|f64, --optimizer sgd|adam (SGD with momentum), --dropout (a Dropout
// of 0.25 after the ReLU, each rank drawing from its own seed), and, for the test's negative
// controls, --drop-optimizer-state (the resumed run starts a fresh optimizer) and
// --drop-generator-state (its generator starts over instead of going on from the checkpoint). The files
// are save_checkpoint's: the model, the optimizer's state and the position. --compare exits 1
// naming the first tensor whose max |a - b| / max |b| exceeds the tolerance (or that is missing).
#include "mlp_fixture.hpp"

#include <wick/distributed/checkpoint.hpp>
#include <wick/distributed/data_parallel.hpp>
#include <wick/nn/optim.hpp>
#include <wick/runtime.hpp>
#include <wick/safetensors.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

using namespace wick;
namespace dist = wick::distributed;

namespace {

constexpr int64_t kGlobalBatch = 16;

struct Options {
  std::string dtype = "f32", optimizer = "sgd", resume, out, compare_a, compare_b;
  int64_t steps = 15, stop_after = -1;
  double tolerance = 0;
  bool drop_optimizer_state = false, dropout = false, drop_generator_state = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--dtype")
      o.dtype = value();
    else if (a == "--optimizer")
      o.optimizer = value();
    else if (a == "--steps")
      o.steps = std::stoll(value());
    else if (a == "--stop-after")
      o.stop_after = std::stoll(value());
    else if (a == "--resume")
      o.resume = value();
    else if (a == "--out")
      o.out = value();
    else if (a == "--tolerance")
      o.tolerance = std::stod(value());
    else if (a == "--drop-optimizer-state")
      o.drop_optimizer_state = true;
    else if (a == "--dropout")
      o.dropout = true;
    else if (a == "--drop-generator-state")
      o.drop_generator_state = true;
    else if (a == "--compare") {
      o.compare_a = value();
      o.compare_b = value();
    } else {
      throw Error("unknown argument " + a);
    }
  }
  return o;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const Options& o, const nn::VarStore& store) {
  if (o.optimizer == "adam")
    return std::make_unique<optim::Adam>(store.trainable(), optim::AdamOptions{.lr = 1e-2});
  return std::make_unique<optim::SGD>(store.trainable(),
                                      optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
}

int train(const Options& o) {
  dist::ProcessGroup& g = dist::init();
  const Device device = Runtime::global().default_device();
  const DType dtype = o.dtype == "f64" ? DType::F64 : DType::F32;
  data::Dataset ds = dp_fixture::make_data();
  // Another seed on each rank: the broadcast (DataParallel) or the checkpoint must set the weights.
  nn::VarStore store(device, dtype, 5 + uint64_t(g.rank()));
  const nn::Sequential model = dp_fixture::mlp(store.root(), o.dropout ? 0.25 : 0.0);
  manual_seed(100 + uint64_t(g.rank()));  // Dropout's draws: another stream on each rank
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(o, store);
  dist::DataParallel dp(store.trainable(), /*bucket_bytes=*/1024);
  dist::TrainingPosition at;
  if (!o.resume.empty()) {
    at = dist::load_checkpoint(o.resume, store, *opt);
    if (o.drop_optimizer_state) opt = make_optimizer(o, store);
    if (o.drop_generator_state) manual_seed(100 + uint64_t(g.rank()));  // the draws start over
  }
  dist::DistributedSampler sampler(dp_fixture::kSamples, g.rank(), g.size(), /*seed=*/11);
  const data::BatchOptions bo{
      .batch_size = kGlobalBatch, .drop_last = true, .image_shape = {}, .device = device};
  const int64_t per_epoch = sampler.num_batches(kGlobalBatch);
  int64_t step = at.epoch * per_epoch + at.batch;
  for (int64_t epoch = at.epoch; step < o.steps; ++epoch) {
    sampler.set_epoch(uint64_t(epoch));
    for (int64_t b = epoch == at.epoch ? at.batch : 0; b < per_epoch && step < o.steps; ++b) {
      const data::Batch batch = ds.samples(sampler.batch_indices(b, kGlobalBatch), bo);
      opt->zero_grad();
      nn::cross_entropy(model(batch.images.to(dtype)), batch.labels).backward();
      dp.synchronize();
      opt->step();
      ++step;
      if (step == o.stop_after || step == o.steps) {
        const dist::TrainingPosition next = b + 1 < per_epoch
                                                ? dist::TrainingPosition{epoch, b + 1}
                                                : dist::TrainingPosition{epoch + 1, 0};
        dist::save_checkpoint(o.out, store, *opt, next);
        if (step == o.stop_after) {
          std::printf("resume_check: rank %d: stopped after step %lld\n", g.rank(),
                      (long long)step);
          dist::shutdown();
          return 0;
        }
      }
    }
  }
  std::printf("resume_check: rank %d of %d on %s: %lld steps (from epoch %lld batch %lld)\n",
              g.rank(), g.size(), device.name().c_str(), (long long)step, (long long)at.epoch,
              (long long)at.batch);
  dist::shutdown();
  return 0;
}

double relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to(DType::F64).to_vector<double>(),
                            y = b.to(DType::F64).to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::fabs(x[i] - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

int compare(const Options& o) {
  const safetensors::File a = safetensors::load(o.compare_a), b = safetensors::load(o.compare_b);
  double worst = 0;
  for (const auto& [name, t] : b.tensors) {
    auto it = a.tensors.find(name);
    if (it == a.tensors.end() || it->second.shape() != t.shape() ||
        it->second.dtype() != t.dtype()) {
      std::printf("resume_check: FAIL: %s is missing from %s or differs in shape or dtype\n",
                  name.c_str(), o.compare_a.c_str());
      return 1;
    }
    const double rel = relative_difference(it->second, t);
    worst = std::max(worst, rel);
    if (rel > o.tolerance) {
      std::printf("resume_check: FAIL: %s differs by %.3g relative (tolerance %.3g)\n",
                  name.c_str(), rel, o.tolerance);
      return 1;
    }
  }
  const bool same_keys = a.tensors.size() == b.tensors.size() && a.metadata == b.metadata;
  std::printf("resume_check: %zu tensors, largest relative difference %.3g, metadata %s: %s\n",
              b.tensors.size(), worst, a.metadata == b.metadata ? "equal" : "different",
              same_keys ? "PASS" : "FAIL");
  return same_keys ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  return o.compare_a.empty() ? train(o) : compare(o);
} catch (const std::exception& e) {
  std::fprintf(stderr, "wick-distributed-resume-check: error: %s\n", e.what());
  return 1;
}
