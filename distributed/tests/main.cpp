// The Catch2 main of the distributed tests: shuts the process group down (MPI_Finalize) after the
// tests, so that mpirun sees every rank end cleanly.
#define CATCH_CONFIG_RUNNER
#include <wick/distributed/distributed.hpp>

#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  const int failed = Catch::Session().run(argc, argv);
  wick::distributed::shutdown();
  return failed;
}
