// libFuzzer entry: wick::data::parse_idx on arbitrary bytes (raw or gzip'd IDX). It must return
// the decoded array or throw wick::Error; anything else is a bug.
// Build and run: docs/training.md ("Fuzzing the readers").
#include <wick/nn/data.hpp>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wick::data::IdxArray a = wick::data::parse_idx(data, size, "fuzz");
    uint64_t n = wick::dtype_size(a.dtype);
    for (int64_t d : a.shape) n *= static_cast<uint64_t>(d);
    if (n != a.bytes.size()) __builtin_trap();  // the array holds what its shape says
  } catch (const wick::Error&) {
  }
  return 0;
}
