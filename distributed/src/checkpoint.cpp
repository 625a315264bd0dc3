// checkpoint.cpp — save_checkpoint and load_checkpoint (wick/distributed/checkpoint.hpp): rank 0
// writes and reads the file, the other ranks learn the outcome (and the bytes) by broadcast.
#include "engine.hpp"

#include <wick/autograd.hpp>
#include <wick/distributed/checkpoint.hpp>
#include <wick/error.hpp>
#include <wick/random.hpp>
#include <wick/safetensors.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

namespace wick::distributed {
namespace {

const std::string kOptimizerPrefix = "optimizer.";
// Every rank's generator state (wick/random.hpp), row r rank r's: [N, 2] i64, seed and offset.
const std::string kGenerators = "wick.generators";

bool several_ranks() {
  return is_initialized() && group().size() > 1;
}
int my_rank() {
  return is_initialized() ? group().rank() : 0;
}

// Broadcasts `bytes` from rank 0 in place (resized on the others to rank 0's size first; the
// transport takes messages of any size).
void broadcast_from_rank0(std::string& bytes) {
  int64_t size = static_cast<int64_t>(bytes.size());
  broadcast_bytes(HostBuffer{reinterpret_cast<uint8_t*>(&size), sizeof size, nullptr}, DType::I64,
                  Shape{1}, 0, nullptr)
      .wait();
  bytes.resize(static_cast<size_t>(size));
  broadcast_bytes(HostBuffer{reinterpret_cast<uint8_t*>(bytes.data()), bytes.size(), nullptr},
                  DType::U8, Shape{size}, 0, nullptr)
      .wait();
}

// Every rank learns whether rank 0's part succeeded: "" when it did, else its message (which
// rank 0 rethrows as it was and the others throw with `what` naming rank 0).
void share_outcome(const std::string& rank0_error, const std::string& what) {
  std::string message = rank0_error;
  if (several_ranks()) broadcast_from_rank0(message);
  if (message.empty()) return;
  if (my_rank() == 0) throw Error(message);
  throw Error("wick::distributed: rank " + std::to_string(my_rank()) + ": " + what +
              " failed on rank 0: " + message);
}

// The generator states of all ranks (a collective when there are several).
Tensor generator_states(const Device& device) {
  const GeneratorState g = generator_state();
  const Tensor mine = Tensor::from_vector<int64_t>(
      {static_cast<int64_t>(g.seed), static_cast<int64_t>(g.offset)}, Shape{2}, device);
  return several_ranks() ? all_gather(mine) : mine.reshape({1, 2});
}

// This rank's row of a checkpoint's generator states, where the job has as many ranks as the one
// that saved it (otherwise each rank keeps its generator: the data is split differently too).
void restore_generator(const Tensor& states, const std::string& path) {
  const int ranks = several_ranks() ? group().size() : 1;
  if (states.dtype() != DType::I64 || states.rank() != 2 || states.shape()[1] != 2)
    throw Error("wick::distributed::load_checkpoint: " + path + ": '" + kGenerators + "' is " +
                std::string(dtype_name(states.dtype())) + " " + shape_to_string(states.shape()) +
                ", not i64 [ranks, 2]");
  if (states.shape()[0] != ranks) return;
  const std::vector<int64_t> v = states.to_vector<int64_t>();
  const size_t at = 2 * static_cast<size_t>(my_rank());
  set_generator_state({static_cast<uint64_t>(v[at]), static_cast<uint64_t>(v[at + 1])});
}

std::map<std::string, Tensor> checkpoint_tensors(const nn::VarStore& store,
                                                 const optim::Optimizer& optimizer) {
  std::map<std::string, Tensor> all = store.state_dict();
  if (!all.emplace(kGenerators, generator_states(store.device())).second)
    throw Error("wick::distributed::save_checkpoint: the model has a tensor named '" + kGenerators +
                "', the name of the generators' state");
  for (const auto& [name, t] : optimizer.state_dict()) {
    if (!all.emplace(kOptimizerPrefix + name, t).second)
      throw Error("wick::distributed::save_checkpoint: the model has a tensor named '" +
                  kOptimizerPrefix + name + "', the name of the optimizer's '" + name + "'");
  }
  return all;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open the checkpoint " + path + ": " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (!in.good() && !in.eof()) throw Error("cannot read the checkpoint " + path);
  return out.str();
}

int64_t metadata_int(const safetensors::File& f, const std::string& key, const std::string& path) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end())
    throw Error("wick::distributed::load_checkpoint: " + path + " has no '" + key +
                "' in its metadata (not written by save_checkpoint?)");
  try {
    size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw Error("wick::distributed::load_checkpoint: " + path + ": '" + key + "' is '" + it->second +
              "', not a count");
}

}  // namespace

void save_checkpoint(const std::string& path, const nn::VarStore& store,
                     const optim::Optimizer& optimizer, TrainingPosition position) {
  const std::map<std::string, Tensor> tensors = checkpoint_tensors(store, optimizer);
  std::string error;
  if (my_rank() == 0) {
    try {
      // safetensors::save writes atomically: a temporary beside `path`, fsync, rename, fsync of
      // the directory.
      safetensors::save(path, tensors,
                        {{"format", "pt"},
                         {"wick.epoch", std::to_string(position.epoch)},
                         {"wick.batch", std::to_string(position.batch)}});
    } catch (const std::exception& e) {
      error = std::string("wick::distributed::save_checkpoint: ") + e.what();
    }
  }
  share_outcome(error, "save_checkpoint to " + path);
}

TrainingPosition load_checkpoint(const std::string& path, nn::VarStore& store,
                                 optim::Optimizer& optimizer) {
  std::string bytes, error;
  if (my_rank() == 0) {
    try {
      bytes = read_file(path);
    } catch (const std::exception& e) {
      error = std::string("wick::distributed::load_checkpoint: ") + e.what();
    }
  }
  share_outcome(error, "load_checkpoint of " + path);
  if (several_ranks()) broadcast_from_rank0(bytes);
  const safetensors::File f =
      safetensors::load_bytes(bytes.data(), bytes.size(), store.device(), path);
  std::map<std::string, Tensor> model, state;
  std::optional<Tensor> generators;  // absent from a checkpoint of an older Wick
  for (const auto& [name, t] : f.tensors) {
    if (name == kGenerators)
      generators = t;
    else if (name.rfind(kOptimizerPrefix, 0) == 0)
      state.emplace(name.substr(kOptimizerPrefix.size()), t);
    else
      model.emplace(name, t);
  }
  // Everything is checked before anything changes: the position, the model's tensors, then the
  // optimizer's state (load_state_dict checks it all first).
  const TrainingPosition position{metadata_int(f, "wick.epoch", path),
                                  metadata_int(f, "wick.batch", path)};
  std::map<std::string, Tensor> mine = store.state_dict();
  safetensors::check_state_dict(mine, model, path);
  optimizer.load_state_dict(state);
  if (generators) restore_generator(*generators, path);
  autograd::NoGradGuard no_grad;
  for (auto& [name, t] : mine) nn::assign(t, model.at(name));
  return position;
}

}  // namespace wick::distributed
