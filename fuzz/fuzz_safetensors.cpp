// libFuzzer entry: wick::safetensors::parse on arbitrary bytes. It must return a validated header
// or throw wick::Error; anything else (a crash, a sanitizer report, another exception) is a bug.
// Build and run: docs/training.md ("Fuzzing the readers").
#include <wick/safetensors.hpp>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wick::safetensors::Header h = wick::safetensors::parse(data, size, "fuzz");
    // What a load would copy must lie inside the input.
    for (const auto& e : h.entries)
      if (h.data_start + e.end > size || e.begin > e.end) __builtin_trap();
  } catch (const wick::Error&) {
  }
  return 0;
}
