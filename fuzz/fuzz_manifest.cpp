// libFuzzer entry: a plugin manifest's text (wick::parse_manifest) on arbitrary bytes. It must give a
// manifest or throw std::runtime_error naming the file (and line:column where toml++ or a key says
// where); anything else (a crash, another exception, a hang on deep nesting) is a bug.
#include "host/manifest.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)wick::parse_manifest(std::string(reinterpret_cast<const char*>(data), size),
                               "/fuzz/plugins/fuzz.wick-plugin.toml");
  } catch (const std::runtime_error&) {
  }
  return 0;
}
