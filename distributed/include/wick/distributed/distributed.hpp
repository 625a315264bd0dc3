// wick/distributed/distributed.hpp — process groups and collectives on tensors (Wick::distributed).
//
// A job is N processes (ranks) started by mpirun or srun; init() reads the rank, the world size
// and the local rank from the environment they set. With one rank no MPI is needed (the
// collectives are then local copies); with more, the MPI backend module
// (libwick-distributed-mpi.so, built when CMake finds MPI) is loaded at init().
//
// Results are bit-identical on every rank: every element of a reduction is combined in rank order
// 0, 1, ..., N-1 (floats in double, integers in 64 bits, rounded to the dtype once), by the one
// rank that owns its part (the others receive those bytes) or, for a small reduction, by every
// rank from the same bytes (docs/distributed.md). A contiguous tensor on a device whose buffers
// are host memory is worked on in its own memory; others are staged through host memory. Every
// collective first exchanges a small header (op, dtype, shape, root, sequence number) so that
// ranks calling different collectives, or the same one on different dtypes or shapes, get an
// error naming each rank's call; a rank not heard from within the timeout is named in the error.
//
// CUDA tensors (Tensor::native_memory, ABI 1.8) go through NCCL instead where it loads
// (NcclMode): the header exchange and its checks stay on the transport, the data moves on the
// device, queued on the tensor's own stream. NCCL's results are bit-identical across ranks too, but
// rounded as NCCL reduces (in the dtype, in its order; on 2 ranks the same as above); float max and
// min, whose NaN NCCL does not define as Wick does, and i16, which NCCL lacks, stay staged.
//
// Not thread-safe: one thread calls the collectives of a process group, in the same order on every
// rank.
#pragma once

#include <wick/tensor.hpp>

#include <memory>
#include <optional>
#include <string>

namespace wick::distributed {

enum class ReduceOp { Sum, Mean, Max, Min };
const char* reduce_op_name(ReduceOp op);

// Whether the collectives of CUDA tensors run on NCCL (libwick-distributed-nccl.so, which opens
// libnccl.so.2) instead of being staged through host memory over the transport. Auto: where the
// module and NCCL load (else staged, with the reason in nccl_status()); On: an error where they do
// not; Off: always staged.
enum class NcclMode { Auto, On, Off };

struct InitOptions {
  // Explicit rank and world size (both or neither); unset: from the environment
  // (OMPI_COMM_WORLD_*, PMI_RANK/PMI_SIZE, SLURM_PROCID/SLURM_NTASKS), else a single rank.
  std::optional<int> rank, world_size, local_rank;
  // Seconds a collective may wait for the other ranks before it throws naming those not heard
  // from; unset: WICK_DISTRIBUTED_TIMEOUT (seconds) or 300.
  std::optional<double> timeout_seconds;
  // NCCL for CUDA tensors; unset: WICK_DISTRIBUTED_NCCL (auto, on or off), else Auto.
  std::optional<NcclMode> nccl;
};

// Where the rank, size and local rank came from: "OMPI_COMM_WORLD_RANK", "explicit", "default".
struct ProcessGroupInfo {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string source;
  std::string backend;  // "local" (one rank) or "mpi"
  double timeout_seconds = 300;
  NcclMode nccl = NcclMode::Auto;
};

class Transport;

// The ranks of a job. Made by init(); the collectives below take the one init() made.
class ProcessGroup {
 public:
  explicit ProcessGroup(ProcessGroupInfo info, std::unique_ptr<Transport> transport);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return info_.rank; }
  int size() const { return info_.world_size; }
  int local_rank() const { return info_.local_rank; }
  const ProcessGroupInfo& info() const { return info_; }
  double timeout_seconds() const { return info_.timeout_seconds; }
  void set_timeout_seconds(double seconds);
  Transport& transport() { return *transport_; }
  uint64_t next_sequence() { return sequence_++; }

 private:
  ProcessGroupInfo info_;
  std::unique_ptr<Transport> transport_;
  uint64_t sequence_ = 0;
};

// Reads the environment (or `options`) and makes the process group; a second call is an error
// unless shutdown() came between. World size > 1 without the MPI module is an error naming the
// module, where it was looked for and what to install.
ProcessGroup& init(const InitOptions& options = {});
bool is_initialized();
ProcessGroup& group();  // the group init() made (an error before init())
void shutdown();        // finalises MPI when init() initialised it

// This rank's device on a machine with several: the (local_rank mod count)-th device of
// `selected`'s plugin, in the registry's order (4 ranks per node on 2 GPUs: ranks 0 and 2 on the
// first). A device named with its index (--device cuda:1) is the caller's to keep instead.
Device device_for_local_rank(const Device& selected, int local_rank);

// What init() would read from this environment, without initialising anything.
ProcessGroupInfo info_from_environment();

// Whether this process runs collectives of CUDA tensors on NCCL: "NCCL 2.28.9 (libnccl.so.2)",
// or why not ("off", the module or libnccl that could not be loaded, no CUDA device). Loads the
// module the first time (without making a communicator).
std::string nccl_status();

// A collective in flight. wait() completes it (the tensor then holds the result) and throws what
// the collective would have thrown; a destroyed handle that was never waited for waits.
class Work {
 public:
  struct State;
  explicit Work(std::shared_ptr<State> state);
  Work(Work&&) noexcept;
  Work& operator=(Work&&) noexcept;
  ~Work();
  void wait();
  bool is_completed();  // advances it without blocking
  // The result of all_gather / reduce_scatter (the in-place collectives return their tensor).
  Tensor result();

 private:
  std::shared_ptr<State> state_;
};

// In place on `t` (any dtype; Mean needs a float dtype, bool reduces as or (Sum, Max) and and
// (Min)).
void all_reduce(Tensor& t, ReduceOp op = ReduceOp::Sum);
Work all_reduce_async(Tensor& t, ReduceOp op = ReduceOp::Sum);
// In place: every rank gets root's values (same dtype and shape everywhere).
void broadcast(Tensor& t, int root = 0);
Work broadcast_async(Tensor& t, int root = 0);
// [world_size, *t.shape()]: row r is rank r's tensor, on t's device.
Tensor all_gather(const Tensor& t);
Work all_gather_async(const Tensor& t);
// t's first axis must divide by the world size: the reduction of every rank's t, rank r's r-th
// part of that first axis ([t.shape(0) / world_size, ...]).
Tensor reduce_scatter(const Tensor& t, ReduceOp op = ReduceOp::Sum);
Work reduce_scatter_async(const Tensor& t, ReduceOp op = ReduceOp::Sum);
void barrier();
Work barrier_async();

}  // namespace wick::distributed
