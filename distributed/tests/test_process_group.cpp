// The process group from the environment, run as one process without MPI ([one-rank]).
#include <wick/distributed/data_parallel.hpp>
#include <wick/distributed/distributed.hpp>
#include <wick/error.hpp>
#include <wick/registry.hpp>
#include <wick/runtime.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>

using namespace wick;
using namespace wick::distributed;

namespace {

// Sets environment variables for one scope, restoring them after.
struct EnvGuard {
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  void set(const std::string& name, const char* value) {
    const char* old = std::getenv(name.c_str());
    saved.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~EnvGuard() {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }
};

InitOptions ranks(std::optional<int> rank, std::optional<int> world_size) {
  InitOptions o;
  o.rank = rank;
  o.world_size = world_size;
  return o;
}

}  // namespace

TEST_CASE("info_from_environment reads Open MPI's, PMI's and Slurm's variables", "[one-rank]") {
  EnvGuard env;
  for (const char* v :
       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK",
        "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"})
    env.set(v, nullptr);
  ProcessGroupInfo none = info_from_environment();
  CHECK(none.rank == 0);
  CHECK(none.world_size == 1);
  CHECK(none.source == "default");

  env.set("SLURM_PROCID", "5");
  env.set("SLURM_NTASKS", "8");
  env.set("SLURM_LOCALID", "1");
  ProcessGroupInfo slurm = info_from_environment();
  CHECK(slurm.rank == 5);
  CHECK(slurm.world_size == 8);
  CHECK(slurm.local_rank == 1);
  CHECK(slurm.source == "SLURM_PROCID");

  env.set("OMPI_COMM_WORLD_RANK", "3");
  env.set("OMPI_COMM_WORLD_SIZE", "4");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  ProcessGroupInfo ompi = info_from_environment();  // Open MPI's come first
  CHECK(ompi.rank == 3);
  CHECK(ompi.world_size == 4);
  CHECK(ompi.local_rank == 0);

  env.set("OMPI_COMM_WORLD_SIZE", "four");
  CHECK_THROWS_WITH(info_from_environment(),
                    Catch::Contains("OMPI_COMM_WORLD_SIZE='four' is not a non-negative integer"));
  env.set("OMPI_COMM_WORLD_SIZE", nullptr);
  CHECK_THROWS_WITH(info_from_environment(),
                    Catch::Contains("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not"));
}

TEST_CASE("the timeout comes from WICK_DISTRIBUTED_TIMEOUT, and a bad one is an error",
          "[one-rank]") {
  EnvGuard env;
  env.set("WICK_DISTRIBUTED_TIMEOUT", "2.5");
  CHECK(info_from_environment().timeout_seconds == 2.5);
  env.set("WICK_DISTRIBUTED_TIMEOUT", "-1");
  CHECK_THROWS_WITH(info_from_environment(), Catch::Contains("WICK_DISTRIBUTED_TIMEOUT='-1'"));
}

TEST_CASE("a job of two ranks without the MPI module fails naming the module and what to install",
          "[one-rank]") {
  if (is_initialized()) shutdown();
  EnvGuard env;
  env.set("WICK_DISTRIBUTED_MPI_MODULE", "/nonexistent/libwick-distributed-mpi.so");
  CHECK_THROWS_WITH(init(ranks(0, 2)),
                    Catch::Contains("needs the MPI backend module") &&
                        Catch::Contains("/nonexistent/libwick-distributed-mpi.so") &&
                        Catch::Contains("libopenmpi-dev"));
  CHECK_FALSE(is_initialized());
}

TEST_CASE("init refuses a rank outside the world, and a second init", "[one-rank]") {
  if (is_initialized()) shutdown();
  CHECK_THROWS_WITH(init(ranks(2, 2)), Catch::Contains("rank 2 is not in a world of size 2"));
  CHECK_THROWS_WITH(init(ranks(0, std::nullopt)), Catch::Contains("give both rank and world_size"));
  ProcessGroup& g = init(ranks(0, 1));
  CHECK(g.info().backend == "local");
  CHECK(g.info().source == "explicit");
  CHECK_THROWS_WITH(init(), Catch::Contains("already initialised"));
  shutdown();
  CHECK_THROWS_WITH(group(), Catch::Contains("call wick::distributed::init() first"));
}

TEST_CASE(
    "device_for_local_rank takes the local rank's device of the selected plugin, modulo their "
    "number",
    "[one-rank]") {
  const Device selected = Runtime::global().default_device();
  int count = 0;
  for (const Device& d : Runtime::global().registry().devices())
    count += d.plugin_name() == selected.plugin_name();
  REQUIRE(count > 0);
  // Devices are named "<plugin>:<index>", indices 0..count-1.
  for (int local = 0; local < 5; ++local) {
    INFO("local rank " << local << " of " << count << " " << selected.plugin_name() << " devices");
    CHECK(device_for_local_rank(selected, local).name() ==
          selected.plugin_name() + ":" + std::to_string(local % count));
  }
  CHECK_THROWS_WITH(device_for_local_rank(selected, -1), Catch::Contains("local rank -1"));
}

TEST_CASE("WICK_DISTRIBUTED_NCCL is auto, on or off, and a bad one is an error", "[one-rank]") {
  EnvGuard env;
  env.set("WICK_DISTRIBUTED_NCCL", nullptr);
  CHECK(info_from_environment().nccl == NcclMode::Auto);
  env.set("WICK_DISTRIBUTED_NCCL", "on");
  CHECK(info_from_environment().nccl == NcclMode::On);
  env.set("WICK_DISTRIBUTED_NCCL", "off");
  CHECK(info_from_environment().nccl == NcclMode::Off);
  env.set("WICK_DISTRIBUTED_NCCL", "yes");
  CHECK_THROWS_WITH(info_from_environment(),
                    Catch::Contains("WICK_DISTRIBUTED_NCCL='yes' is not auto, on or off"));
}

TEST_CASE("nccl_status names NCCL's version, or why NCCL cannot be used here, and tensors without CUDA "
          "memory are staged even with NCCL on",
          "[one-rank]") {
  if (is_initialized()) shutdown();
  const std::string status = nccl_status();
  INFO(status);
  // A machine with a GPU and NCCL: "NCCL 2.x.y (path)"; this project's CI machine has neither a
  // GPU nor a driver, and the reason names what is missing.
  const bool usable = status.rfind("NCCL ", 0) == 0;
  CHECK((usable || status.find("CUDA") != std::string::npos ||
         status.find("NCCL module") != std::string::npos ||
         status.find("NCCL library") != std::string::npos));
  InitOptions o = ranks(0, 1);
  o.nccl = NcclMode::On;
  init(o);
  CHECK(group().info().nccl == NcclMode::On);
  Tensor t = Tensor::from_vector<float>({1, 2, 3}, Runtime::global().default_device());
  all_reduce(t, ReduceOp::Sum);  // no native memory: staged on the local transport
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3});
  shutdown();
}

TEST_CASE("DataParallel::no_sync accumulates without starting buckets; synchronize inside it is an "
          "error",
          "[one-rank]") {
  if (is_initialized()) shutdown();
  init(ranks(0, 1));
  {
    const Device dev = Runtime::global().default_device();
    Tensor w = Tensor::from_vector<float>({1, 2}, dev).set_requires_grad();
    DataParallel dp({w});
    {
      auto accumulating = dp.no_sync();
      (w * 3.0).sum().backward();  // d/dw = 3
      CHECK_THROWS_WITH(dp.synchronize(), Catch::Contains("synchronize() inside no_sync()"));
    }
    CHECK(dp.buckets_started_in_backward() == 0);
    (w * 4.0).sum().backward();  // accumulates to 7, and starts the bucket
    dp.synchronize();
    CHECK(dp.buckets_started_in_backward() == 1);
    CHECK(w.grad().to_vector<float>() == std::vector<float>{7, 7});  // the mean over one rank
  }
  shutdown();
}
