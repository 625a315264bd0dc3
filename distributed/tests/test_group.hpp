// test_group.hpp — the process group the collectives' and checkpoints' tests run in: the one
// init() makes from the environment (one rank without mpirun), made at the first use.
#pragma once

#include <wick/distributed/distributed.hpp>

inline wick::distributed::ProcessGroup& pg() {
  if (!wick::distributed::is_initialized()) wick::distributed::init();
  return wick::distributed::group();
}
