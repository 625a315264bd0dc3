// train_common.hpp — what the three Fashion-MNIST examples share: options, the runtime from
// --device/--config, the data, the epoch loop with its progress bar, and the last line that
// scripts read (bench/train_vs_pytorch.py, tests/train_examples_test.sh).
#pragma once

#include "models.hpp"

#include <wick/autograd.hpp>
#include <wick/distributed/checkpoint.hpp>
#include <wick/distributed/data_parallel.hpp>
#include <wick/distributed/distributed.hpp>
#include <wick/nn/data.hpp>
#include <wick/nn/nn.hpp>
#include <wick/nn/optim.hpp>
#include <wick/runtime.hpp>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <iostream>
#include <string>
#include <tuple>

namespace wick::examples {

struct Options {
  std::string device, config, data_dir, save;
  bool strict = false;
  int epochs = 5;
  int64_t batch = 128;
  double lr = 1e-3;
  uint64_t seed = 0;
  int64_t limit = 0;       // train on the first N samples only (0: all)
  int64_t test_limit = 0;  // evaluate on the first N test samples only (0: all)
  bool progress = true;
  bool eval = true;
  // Data parallel across the ranks mpirun started (docs/distributed.md): --batch-size is then the
  // global batch, each rank training on its 1/N share of it.
  bool distributed = false;
  bool overlap = true;  // --no-overlap: all-reduce the gradients after backward (for comparison)
  // --checkpoint: save_checkpoint after every epoch; --resume: go on from one (docs/distributed.md).
  std::string checkpoint, resume;
};

// Parses the command line (exits on --help or an error, as CLI11 does).
inline Options parse(int argc, char** argv, const std::string& what, Options o) {
  CLI::App app(what);
  app.add_option("--device", o.device, "device (or priority list) to train on, e.g. cpu-onednn, opencl");
  app.add_option("--config", o.config, "a wick.toml (devices, plugin options such as threads)");
  app.add_flag("--strict", o.strict, "no fallback: every op must run on the chosen device");
  app.add_option("--epochs", o.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--batch-size", o.batch, "samples per step")->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the initialisation and the shuffles")->capture_default_str();
  app.add_option("--limit", o.limit, "train on the first N samples only");
  app.add_option("--test-limit", o.test_limit, "evaluate on the first N test samples only");
  app.add_option("--data", o.data_dir, "directory of the Fashion-MNIST .gz files");
  app.add_option("--save", o.save, "write the trained weights to this safetensors file");
  app.add_flag("--distributed", o.distributed,
               "data parallel across the ranks of mpirun (--batch-size is the global batch)");
  app.add_option("--checkpoint", o.checkpoint,
                 "after each epoch, write the weights, the optimizer's state and the epoch here (atomically)");
  app.add_option("--resume", o.resume, "go on from a --checkpoint file (its epoch, weights and optimizer state)");
  bool no_progress = false, no_eval = false, no_overlap = false;
  app.add_flag("--no-overlap", no_overlap, "with --distributed: all-reduce the gradients after backward, not during it");
  app.add_flag("--no-progress", no_progress, "no progress bar");
  app.add_flag("--no-eval", no_eval, "skip the test-set evaluation (benchmarks)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  if (o.distributed) distributed::init();
  // In a job of several ranks, rank 0 alone reports.
  const bool quiet = o.distributed && distributed::group().rank() != 0;
  if (quiet) {
    std::cout.setstate(std::ios::failbit);
    if (!std::freopen("/dev/null", "w", stdout)) std::cout.setstate(std::ios::failbit);
  }
  o.progress = !no_progress && !quiet && ::isatty(2);
  o.eval = !no_eval;
  o.overlap = !no_overlap;
  return o;
}

inline Device setup_runtime(const Options& o) {
  ConfigOverrides cli;
  if (!o.config.empty()) cli.config_file = o.config;
  if (!o.device.empty()) cli.devices = std::vector<std::string>{o.device};
  if (o.strict) cli.strict = true;
  Runtime::configure(resolve_config(cli));
  Device d = Runtime::global().default_device();
  // Several ranks on one machine: each its own device, unless --device names one by index.
  if (o.distributed && o.device.find(':') == std::string::npos)
    d = distributed::device_for_local_rank(d, distributed::group().local_rank());
  std::cout << "device: " << d.name() << " (" << d.description() << ")\n";
  return d;
}

struct Data {
  data::Dataset train, test;
};

inline Data load_data(const Options& o) {
  const data::FashionMnistFiles f = data::find_fashion_mnist(o.data_dir);
  Data d{data::Dataset::from_idx(f.train_images, f.train_labels),
         data::Dataset::from_idx(f.test_images, f.test_labels)};
  std::cout << "data: " << d.train.size() << " training and " << d.test.size() << " test images from "
            << f.dir << "\n";
  return d;
}

// One training epoch: step(batch) returns the loss; prints a progress bar (batches, loss, images/s)
// on a terminal. Returns (mean loss, seconds).
inline std::pair<double, double> train_epoch(const Options& o, data::Dataset& train, int epoch,
                                             const data::BatchOptions& bo,
                                             const std::function<Tensor(const data::Batch&)>& step) {
  const uint64_t seed = o.seed * 1000003 + static_cast<uint64_t>(epoch);
  train.shuffle(seed);
  int64_t batches = train.num_batches(bo);
  // Data parallel: the same global order (seed), the incomplete last global batch dropped, this
  // rank's share of each.
  std::optional<distributed::DistributedSampler> sampler;
  if (o.distributed) {
    const distributed::ProcessGroup& g = distributed::group();
    sampler.emplace(train.size(), g.rank(), g.size(), seed);
    batches = sampler->num_batches(bo.batch_size);
  }
  if (o.limit > 0) batches = std::min(batches, (o.limit + bo.batch_size - 1) / bo.batch_size);
  const auto start = std::chrono::steady_clock::now();
  double loss_sum = 0;
  Tensor pending;  // the loss is read one step late, so the host never waits for the device
  int64_t images = 0;
  for (int64_t i = 0; i < batches; ++i) {
    const data::Batch b = sampler ? train.samples(sampler->batch_indices(i, bo.batch_size), bo) : train.batch(i, bo);
    images += b.labels.numel();
    Tensor loss = step(b);
    if (pending.defined()) loss_sum += pending.item<float>();
    pending = loss;
    if (o.progress && (i % 20 == 0 || i + 1 == batches)) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const int width = 30, done = static_cast<int>(width * (i + 1) / batches);
      std::fprintf(stderr, "\r  epoch %d [%s%s] %lld/%lld  loss %.4f  %.0f images/s ", epoch,
                   std::string(static_cast<size_t>(done), '=').c_str(),
                   std::string(static_cast<size_t>(width - done), ' ').c_str(), (long long)(i + 1),
                   (long long)batches, i > 0 ? loss_sum / double(i) : 0.0, double(images) / std::max(s, 1e-9));
    }
  }
  if (pending.defined()) loss_sum += pending.item<float>();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (o.progress) std::fprintf(stderr, "\n");
  return {loss_sum / double(std::max<int64_t>(batches, 1)), seconds};
}

// Runs forward(batch) over the test set without grad, in inference mode, and averages metric().
inline double evaluate(const Options& o, data::Dataset& test, data::BatchOptions bo,
                       const std::function<double(const data::Batch&)>& metric) {
  nn::EvalGuard eval;
  test.unshuffle();
  bo.batch_size = 1000;
  double sum = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < test.num_batches(bo); ++i) {
    const data::Batch b = test.batch(i, bo);
    sum += metric(b) * double(b.labels.numel());
    n += b.labels.numel();
    if (o.test_limit > 0 && n >= o.test_limit) break;
  }
  return sum / double(std::max<int64_t>(n, 1));
}

// The last line, for scripts: "RESULT name=value ...".
inline void print_result(const std::string& fields) { std::cout << "RESULT " << fields << std::endl; }

// What one example is: its name (the RESULT line's model=), its model, the image shape it takes,
// and whether it reconstructs its input (MSE; the test metric is then the test MSE) or classifies
// (cross-entropy; the test metric is the accuracy).
struct Task {
  std::string name, description;
  Shape image_shape;
  std::function<nn::Sequential(const nn::Path&)> build;
  bool reconstruct = false;
};

// The whole example: options, runtime, data, the model in a fresh store, Adam, the epochs with
// their progress and per-epoch line, checkpoints (--checkpoint, --resume), the weights (--save),
// then the RESULT line.
inline int run(int argc, char** argv, const Task& task, Options defaults = {}) try {
  const Options o = parse(argc, argv, task.description, defaults);
  const Device device = setup_runtime(o);
  Data data = load_data(o);
  nn::VarStore store(device, DType::F32, o.seed);
  const nn::Sequential model = task.build(store.root());
  // Data parallel: rank 0's initial weights everywhere; the gradients averaged during backward
  // (DataParallel) or after it (--no-overlap).
  std::optional<distributed::DataParallel> dp;
  if (o.distributed && o.overlap) dp.emplace(store.trainable());
  if (o.distributed && !o.overlap) distributed::broadcast_parameters(store.trainable());
  optim::Adam opt(store.trainable(), {.lr = o.lr});
  int first_epoch = 1;
  if (!o.resume.empty()) {
    first_epoch = int(distributed::load_checkpoint(o.resume, store, opt).epoch);
    std::cout << "resumed from " << o.resume << " at epoch " << first_epoch << "\n";
  }
  std::cout << "model: " << store.num_parameters() << " parameters\n";

  const data::BatchOptions bo{.batch_size = o.batch, .drop_last = false, .image_shape = task.image_shape, .device = device};
  auto loss_of = [&](const data::Batch& b) {
    const Tensor out = model(b.images);
    return task.reconstruct ? nn::mse_loss(out, b.images) : nn::cross_entropy(out, b.labels);
  };
  double loss = 0, metric = 0, seconds = 0;
  for (int epoch = first_epoch; epoch <= o.epochs; ++epoch) {
    std::tie(loss, seconds) = train_epoch(o, data.train, epoch, bo, [&](const data::Batch& b) {
      Tensor l = loss_of(b);
      opt.zero_grad();
      l.backward();
      if (dp) dp->synchronize();
      else if (o.distributed) distributed::all_reduce_gradients(store.trainable());
      opt.step();
      return l.detach();
    });
    if (!o.checkpoint.empty()) distributed::save_checkpoint(o.checkpoint, store, opt, {.epoch = epoch + 1, .batch = 0});
    if (o.eval)
      metric = evaluate(o, data.test, bo, [&](const data::Batch& b) {
        return task.reconstruct ? double(loss_of(b).item<float>()) : nn::accuracy(model(b.images), b.labels);
      });
    const double images = double(o.limit > 0 ? std::min(o.limit, data.train.size()) : data.train.size());
    std::printf(task.reconstruct ? "epoch %d: train MSE %.5f, test MSE %.5f, %.2f s (%.0f images/s)\n"
                                 : "epoch %d: train loss %.4f, test accuracy %.4f, %.2f s (%.0f images/s)\n",
                epoch, loss, metric, seconds, images / seconds);
  }
  if (!o.save.empty() && !(o.distributed && distributed::group().rank() != 0)) {
    store.save(o.save);
    std::cout << "weights: " << o.save << "\n";
  }
  if (o.distributed) distributed::shutdown();
  print_result("model=" + task.name + " loss=" + std::to_string(loss) + (task.reconstruct ? " test_mse=" : " accuracy=") +
               std::to_string(metric) + " epoch_seconds=" + std::to_string(seconds) +
               " fallbacks=" + std::to_string(Runtime::global().fallback_count()));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "wick-example-%s: error: %s\n", task.name.c_str(), e.what());
  return 1;
}

}  // namespace wick::examples
