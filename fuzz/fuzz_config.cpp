// libFuzzer entry: a config file's text (wick::apply_config_text) on arbitrary bytes. It must give
// a config or throw wick::ConfigError / wick::Error naming the place; anything else (a crash, an
// uncaught exception, a hang in toml++ on deep nesting) is a bug.
#include <wick/config.hpp>
#include <wick/error.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)wick::apply_config_text(wick::default_config(), std::string(reinterpret_cast<const char*>(data), size),
                                  "fuzz.toml");
  } catch (const wick::Error&) {
  }
  return 0;
}
