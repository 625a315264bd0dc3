// wick/random.hpp — the state of the process generator that rand, randn and Dropout draw from
// when given no seed (manual_seed in tensor.hpp seeds it), for checkpoints that resume the same
// draws (wick::distributed's save_checkpoint).
#pragma once

#include <cstdint>

namespace wick {

// The generator is counter-based: a seed, and how many values have been drawn since it was set.
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

GeneratorState generator_state();
// The next draws are those that followed `state` (the same values on every device).
void set_generator_state(const GeneratorState& state);

}  // namespace wick
