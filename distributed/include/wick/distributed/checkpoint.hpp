// wick/distributed/checkpoint.hpp — saving a data-parallel job's training state and resuming it.
//
//   // every rank, at the same point (after opt.step() of global batch b of epoch e):
//   save_checkpoint("run/ckpt.safetensors", store, opt, {.epoch = e, .batch = b + 1});
//   // a restarted job, every rank, after building the model and the optimizer:
//   TrainingPosition at = load_checkpoint("run/ckpt.safetensors", store, opt);
//   for (epoch = at.epoch; ...) for (b = epoch == at.epoch ? at.batch : 0; ...)
//
// A checkpoint is one safetensors file: the store's tensors under their own names (as
// VarStore::save writes them, so VarStore::load and PyTorch read the model part), the optimizer's
// state (Optimizer::state_dict: momentum buffers, Adam's moments and step count) under
// "optimizer.<name>", every rank's generator state (wick/random.hpp: what rand, randn and Dropout
// draw from) as "wick.generators" ([ranks, 2] i64), and the position in the metadata
// ("wick.epoch", "wick.batch"). Data order is not state: DistributedSampler's order is a function
// of the seed and the epoch. A job resumed on as many ranks as saved draws what the uninterrupted
// job would have; on another number of ranks each rank keeps its own generator (the data is split
// differently then too).
#pragma once

#include <wick/nn/nn.hpp>
#include <wick/nn/optim.hpp>

#include <cstdint>
#include <string>

namespace wick::distributed {

// Where training goes on from: `batch` (the next global batch to run) of `epoch`.
struct TrainingPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
};

// Rank 0 writes `path`: into a temporary file beside it, fsync, then renamed over `path` (a crash
// leaves the previous checkpoint or the new one whole, never a torn file); the other ranks wait for
// it, and every rank throws, naming the path, when rank 0 could not write it. A collective: every
// rank calls it at the same point (so no rank runs ahead of a checkpoint that is not there yet).
// Works without init() too, as a job of one rank.
void save_checkpoint(const std::string& path, const nn::VarStore& store,
                     const optim::Optimizer& optimizer, TrainingPosition position);

// Rank 0 reads `path` and sends its bytes to the other ranks (only rank 0 needs the file); every
// rank then writes the model's tensors into the store's (in place; names, shapes and dtypes must
// match, one error listing what differs), loads the optimizer's state (Optimizer::load_state_dict)
// and returns the position saved. A collective; every rank throws when rank 0 cannot read the file
// (naming it and rank 0's reason).
TrainingPosition load_checkpoint(const std::string& path, nn::VarStore& store,
                                 optim::Optimizer& optimizer);

}  // namespace wick::distributed
