// process_group.cpp — init() from the environment mpirun or srun set, and the process group.
#include "nccl.hpp"
#include "transport.hpp"

#include <wick/distributed/distributed.hpp>
#include <wick/error.hpp>
#include <wick/registry.hpp>
#include <wick/runtime.hpp>

#include <cstdlib>
#include <string>

namespace wick::distributed {
namespace {

// Never destroyed at exit: a process that ends without shutdown() (an error) leaves MPI
// unfinalised, so that mpirun ends the other ranks instead of their waiting in MPI_Finalize.
ProcessGroup* g_group = nullptr;

// An integer environment variable, or nullopt when unset; an error naming it when not a number.
std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 24)
    throw Error(std::string("wick::distributed: environment variable ") + name + "='" + v +
                "' is not a non-negative integer");
  return static_cast<int>(x);
}

double timeout_from_environment() {
  const char* v = std::getenv("WICK_DISTRIBUTED_TIMEOUT");
  if (!v || !*v) return 300;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (*end != '\0' || !(s > 0))
    throw Error(std::string("wick::distributed: WICK_DISTRIBUTED_TIMEOUT='") + v +
                "' is not a positive number of seconds");
  return s;
}

NcclMode nccl_mode_from_environment() {
  const char* v = std::getenv("WICK_DISTRIBUTED_NCCL");
  if (!v || !*v) return NcclMode::Auto;
  const std::string s = v;
  if (s == "auto") return NcclMode::Auto;
  if (s == "on") return NcclMode::On;
  if (s == "off") return NcclMode::Off;
  throw Error("wick::distributed: WICK_DISTRIBUTED_NCCL='" + s + "' is not auto, on or off");
}

}  // namespace

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Mean: return "mean";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  return "?";
}

ProcessGroupInfo info_from_environment() {
  struct Source {
    const char *rank, *size, *local;
  };
  // Open MPI's mpirun, then MPICH/Hydra's PMI, then Slurm's srun.
  const Source sources[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}};
  ProcessGroupInfo info;
  info.source = "default";
  for (const Source& s : sources) {
    const std::optional<int> rank = env_int(s.rank), size = env_int(s.size);
    if (!rank && !size) continue;
    if (!rank || !size)
      throw Error(std::string("wick::distributed: ") + (rank ? s.rank : s.size) + " is set but " +
                  (rank ? s.size : s.rank) + " is not");
    info.rank = *rank;
    info.world_size = *size;
    info.local_rank = env_int(s.local).value_or(*rank);
    info.source = s.rank;
    break;
  }
  info.timeout_seconds = timeout_from_environment();
  info.nccl = nccl_mode_from_environment();
  return info;
}

ProcessGroup::ProcessGroup(ProcessGroupInfo info, std::unique_ptr<Transport> transport)
    : info_(std::move(info)), transport_(std::move(transport)) {}
ProcessGroup::~ProcessGroup() {
  release_nccl(*this);  // before the transport (MPI) goes
}

void ProcessGroup::set_timeout_seconds(double seconds) {
  if (!(seconds > 0))
    throw Error("wick::distributed: a timeout must be a positive number of seconds, not " +
                std::to_string(seconds));
  info_.timeout_seconds = seconds;
}

ProcessGroup& init(const InitOptions& options) {
  if (g_group)
    throw Error("wick::distributed::init: already initialised (rank " +
                std::to_string(g_group->rank()) + " of " + std::to_string(g_group->size()) +
                "); call shutdown() first");
  ProcessGroupInfo info = info_from_environment();
  if (options.rank.has_value() != options.world_size.has_value())
    throw Error("wick::distributed::init: give both rank and world_size, or neither");
  if (options.rank) {
    info.rank = *options.rank;
    info.world_size = *options.world_size;
    info.local_rank = options.local_rank.value_or(*options.rank);
    info.source = "explicit";
  }
  if (options.timeout_seconds) info.timeout_seconds = *options.timeout_seconds;
  if (options.nccl) info.nccl = *options.nccl;
  if (info.world_size < 1 || info.rank < 0 || info.rank >= info.world_size)
    throw Error("wick::distributed::init: rank " + std::to_string(info.rank) +
                " is not in a world of size " + std::to_string(info.world_size) + " (from " +
                info.source + ")");
  std::unique_ptr<Transport> transport;
  if (info.world_size == 1) {
    transport = make_local_transport();
    info.backend = "local";
  } else {
    int rank = -1, size = -1;
    transport = load_mpi_transport(&rank, &size);
    if (rank != info.rank || size != info.world_size)
      throw Error("wick::distributed::init: MPI says rank " + std::to_string(rank) + " of " +
                  std::to_string(size) + ", but " + info.source + " says rank " +
                  std::to_string(info.rank) + " of " + std::to_string(info.world_size));
    info.backend = "mpi";
  }
  g_group = new ProcessGroup(std::move(info), std::move(transport));
  return *g_group;
}

Device device_for_local_rank(const Device& selected, int local_rank) {
  if (!selected.valid())
    throw Error("wick::distributed::device_for_local_rank: no device selected");
  if (local_rank < 0)
    throw Error("wick::distributed::device_for_local_rank: local rank " +
                std::to_string(local_rank));
  std::vector<Device> same_plugin;
  for (const Device& d : Runtime::global().registry().devices())
    if (d.plugin_name() == selected.plugin_name()) same_plugin.push_back(d);
  if (same_plugin.empty()) return selected;
  return same_plugin[static_cast<size_t>(local_rank) % same_plugin.size()];
}

bool is_initialized() {
  return g_group != nullptr;
}

ProcessGroup& group() {
  if (!g_group)
    throw Error("wick::distributed: no process group: call wick::distributed::init() first");
  return *g_group;
}

void shutdown() {
  delete g_group;
  g_group = nullptr;
}

}  // namespace wick::distributed
