// wick-distributed-dp-check — data-parallel training equals one process on the global batch.
//   mpirun -n 2 wick-distributed-dp-check [--optimizer sgd|adam] [--epochs 2] [--overlap]
//                                         [--accumulate]
// Each rank trains a small MLP on its share of every global batch (DistributedSampler, gradients
// averaged by all_reduce_gradients after backward, or with --overlap by DataParallel during
// backward, which must then have started a bucket before backward returned) and, beside it, the
// same MLP the way one process would: the whole global batch, no collectives. The data-parallel
// model starts from another seed on every rank but 0, so the broadcast of rank 0's parameters is
// needed for the two to agree. With --accumulate (DataParallel), each rank's share goes through
// two backward passes, the first under no_sync(). After each step every parameter must be within 1e-6 of the
// single-process one (max |a - b| / max |b|) and bit-identical across the ranks. The device is the
// selected one (WICK_DEVICE picks it). Exit status 0 when all hold, 1 naming the step and tensor
// that differ.
#include "mlp_fixture.hpp"

#include <wick/autograd.hpp>
#include <wick/distributed/data_parallel.hpp>
#include <wick/distributed/distributed.hpp>
#include <wick/nn/data.hpp>
#include <wick/nn/nn.hpp>
#include <wick/nn/optim.hpp>
#include <wick/runtime.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

using namespace wick;
namespace dist = wick::distributed;

namespace {

constexpr int64_t kGlobalBatch = 16;

struct Trainer {
  nn::VarStore store;
  nn::Sequential model;
  std::unique_ptr<optim::Optimizer> opt;
  Trainer(const Device& d, uint64_t seed, const std::string& optimizer)
      : store(d, DType::F32, seed), model(dp_fixture::mlp(store.root())) {
    if (optimizer == "adam")
      opt = std::make_unique<optim::Adam>(store.trainable(), optim::AdamOptions{.lr = 1e-2});
    else
      opt = std::make_unique<optim::SGD>(store.trainable(),
                                         optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
  }
  void backward(const data::Batch& b) {
    opt->zero_grad();
    accumulate(b);
  }
  void accumulate(const data::Batch& b) { nn::cross_entropy(model(b.images), b.labels).backward(); }
};

// max |a - b| / max |b| over one tensor.
double relative_difference(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::fabs(double(x[i]) - double(y[i])));
    scale = std::max(scale, std::fabs(double(y[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

bool same_on_every_rank(const Tensor& t) {
  const Tensor all = dist::all_gather(t);
  const size_t bytes = size_t(t.numel()) * 4;
  std::vector<uint8_t> raw(bytes * size_t(dist::group().size()));
  all.copy_to_host(raw.data(), raw.size());
  for (int r = 1; r < dist::group().size(); ++r)
    if (std::memcmp(raw.data(), raw.data() + size_t(r) * bytes, bytes) != 0) return false;
  return true;
}

// Compares every parameter; prints and returns false at the first that differs.
bool compare(const Trainer& dp, const Trainer& ref, const std::string& when, double* worst) {
  for (const std::string& name : ref.store.names()) {
    const double rel = relative_difference(dp.store.get(name), ref.store.get(name));
    *worst = std::max(*worst, rel);
    const bool same = same_on_every_rank(dp.store.get(name));
    if (rel > 1e-6 || !same) {
      std::printf("dp_check: rank %d: %s: %s differs: %.3g relative to one process%s\n",
                  dist::group().rank(), when.c_str(), name.c_str(), rel,
                  same ? "" : ", and across the ranks");
      return false;
    }
  }
  return true;
}

// --accumulate: this rank's share in two halves, the first under no_sync() (gradients only
// accumulated), the second starting the buckets. Each half's loss is its mean, so the rank's
// gradient is the sum of two half-batch means, and their mean over the ranks is twice the global
// batch's mean gradient (double_gradients makes the single process's the same).
void accumulate_halves(Trainer& dp, dist::DataParallel& wrapper, data::Dataset& ds,
                       const std::vector<int64_t>& share, const data::BatchOptions& options) {
  const auto half = share.begin() + static_cast<std::ptrdiff_t>(share.size() / 2);
  dp.opt->zero_grad();
  {
    auto accumulating = wrapper.no_sync();
    dp.accumulate(ds.samples(std::vector<int64_t>(share.begin(), half), options));
  }
  dp.accumulate(ds.samples(std::vector<int64_t>(half, share.end()), options));
}

void double_gradients(Trainer& t) {
  autograd::NoGradGuard no_grad;
  for (Tensor p : t.store.trainable()) p.set_grad(p.grad() * 2.0);
}

}  // namespace

int main(int argc, char** argv) try {
  std::string optimizer = "sgd";
  int epochs = 2;
  bool overlap = false, accumulate = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--overlap")
      overlap = true;
    else if (a == "--accumulate")
      accumulate = overlap = true;
    else if (a == "--optimizer" && i + 1 < argc)
      optimizer = argv[++i];
    else if (a == "--epochs" && i + 1 < argc)
      epochs = std::stoi(argv[++i]);
    else
      throw Error("unknown argument " + a);
  }
  dist::ProcessGroup& g = dist::init();
  const Device device = Runtime::global().default_device();
  data::Dataset ds = dp_fixture::make_data();
  Trainer dp(device, 7 + uint64_t(g.rank()), optimizer), ref(device, 7, optimizer);
  // Buckets of at most 1 KiB: several (the 12x32 weight's 1536 bytes one of its own).
  std::unique_ptr<dist::DataParallel> wrapper;
  if (overlap)
    wrapper = std::make_unique<dist::DataParallel>(dp.store.trainable(), /*bucket_bytes=*/1024);
  else
    dist::broadcast_parameters(dp.store.trainable());
  double worst = 0;
  bool ok = compare(dp, ref, "after the broadcast", &worst);
  dist::DistributedSampler sampler(dp_fixture::kSamples, g.rank(), g.size(), /*seed=*/11);
  const data::BatchOptions global{
      .batch_size = kGlobalBatch, .drop_last = true, .image_shape = {}, .device = device};
  int steps = 0;
  for (int epoch = 0; epoch < epochs && ok; ++epoch) {
    sampler.set_epoch(uint64_t(epoch));
    ds.shuffle(11 + uint64_t(epoch));  // the single process's order: the same permutation
    for (int64_t b = 0; b < sampler.num_batches(kGlobalBatch) && ok; ++b, ++steps) {
      if (accumulate)
        accumulate_halves(dp, *wrapper, ds, sampler.batch_indices(b, kGlobalBatch), global);
      else
        dp.backward(ds.samples(sampler.batch_indices(b, kGlobalBatch), global));
      if (wrapper) {
        wrapper->synchronize();
        // The buckets of the last layer's gradients are complete before backward reaches the first.
        if (wrapper->bucket_count() < 2 || wrapper->buckets_started_in_backward() < 1) {
          std::printf("dp_check: rank %d: step %d: %zu of %zu buckets started during backward\n",
                      g.rank(), steps, wrapper->buckets_started_in_backward(),
                      wrapper->bucket_count());
          ok = false;
        }
      } else {
        dist::all_reduce_gradients(dp.store.trainable(), /*bucket_bytes=*/1024);
      }
      dp.opt->step();
      ref.backward(ds.batch(b, global));
      if (accumulate) double_gradients(ref);
      ref.opt->step();
      ok = ok && compare(dp, ref, "epoch " + std::to_string(epoch) + " step " + std::to_string(b),
                         &worst);
    }
  }
  std::printf(
      "dp_check: rank %d of %d on %s, %s%s: %d steps, largest relative difference %.3g: %s\n",
      g.rank(), g.size(), device.name().c_str(), optimizer.c_str(),
      accumulate ? ", overlapped, two passes a step (no_sync)" : overlap ? ", overlapped" : "",
      steps, worst, ok ? "PASS" : "FAIL");
  dist::shutdown();
  return ok ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "wick-distributed-dp-check: error: %s\n", e.what());
  return 1;
}
