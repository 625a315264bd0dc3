// MappedFile: a file truncated while mapped reads as zeros past its new end and is reported as
// the file's fault, by name, never a SIGBUS that ends the process (or is blamed on the plugin
// that was copying its bytes). Issue 22 item 9.
#include "test_support.hpp"

#include <wick/mapped_file.hpp>
#include <wick/safetensors.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace wick;

namespace {

// A scratch file of `bytes` bytes of `fill`, removed at the end of the test.
struct ScratchFile {
  std::string path;
  ScratchFile(const std::string& name, size_t bytes, char fill)
      : path("/tmp/wick-test-mapped-" + std::to_string(::getpid()) + "-" + name) {
    std::ofstream(path, std::ios::binary) << std::string(bytes, fill);
  }
  ~ScratchFile() { ::unlink(path.c_str()); }
};

constexpr size_t kPage = 4096;

}  // namespace

TEST_CASE("a mapped file truncated under a read gives zeros and an error naming the file, never "
          "SIGBUS",
          "[mapped_file]") {
  const ScratchFile f("plain", 64 * kPage, '\xab');
  const MappedFile m(f.path);
  REQUIRE(m.size() == 64 * kPage);
  CHECK_FALSE(m.damaged());
  CHECK_NOTHROW(m.check_intact("reading"));
  REQUIRE(::truncate(f.path.c_str(), 3 * kPage) == 0);
  std::vector<uint8_t> copy(m.size());
  std::memcpy(copy.data(), m.data(), m.size());  // killed the process with SIGBUS before
  CHECK(copy[3 * kPage - 1] == 0xab);
  CHECK(copy[3 * kPage] == 0);
  CHECK(copy.back() == 0);
  CHECK(m.damaged());
  CHECK_THROWS_WITH(m.check_intact("copying it"),
                    Catch::Contains(f.path + ": the file shrank (or could not be read) while "
                                             "mapped, while copying it") &&
                        Catch::Contains("from offset 12288 on were gone") &&
                        Catch::Contains("it had 262144 bytes when mapped; it is 12288 bytes now"));
}

TEST_CASE("a device copying a truncated mapping is not reported as a plugin crash", "[mapped_file]") {
  for (const Device& dev : test::cpu_and_opencl()) {
    INFO(dev.name());
    const ScratchFile f("device-" + dev.name(), 256 * kPage, '\x01');
    const MappedFile m(f.path);
    REQUIRE(::truncate(f.path.c_str(), 8 * kPage) == 0);
    // The plugin's buffer_write reads the pages that are gone (on opencl, perhaps in PoCL's own
    // thread): zeros come through, and the mapping knows.
    const Tensor t = Tensor::from_bytes(m.data(), m.size(), {static_cast<int64_t>(m.size())},
                                        DType::U8, dev);
    CHECK(m.damaged());
    CHECK_THROWS_WITH(m.check_intact("copying it"), Catch::Contains("from offset 32768 on"));
    const std::vector<uint8_t> back = t.to_vector<uint8_t>();
    CHECK(back[8 * kPage - 1] == 1);
    CHECK(back[8 * kPage] == 0);
  }
}

TEST_CASE("a weight file truncated while it loads is either loaded whole or refused by name",
          "[mapped_file][safetensors]") {
  // Another process truncating the file races the load: whichever wins, the result is the file's
  // values or a wick::Error naming it, and the process goes on.
  const std::string path = "/tmp/wick-test-mapped-" + std::to_string(::getpid()) + ".safetensors";
  std::map<std::string, Tensor> tensors;
  for (int i = 0; i < 32; ++i)
    tensors[std::to_string(i)] = Tensor::full({64, 1024}, static_cast<double>(i), DType::F32, test::cpu());
  int refused = 0, whole = 0;
  for (int run = 0; run < 6; ++run) {
    safetensors::save(path, tensors);
    std::atomic<bool> go{false};
    std::thread cut([&] {
      while (!go.load()) {
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200 * run));
      REQUIRE(::truncate(path.c_str(), 4 * kPage) == 0);
    });
    try {
      go = true;
      const safetensors::File file = safetensors::load(path, test::cpu());
      for (const auto& [name, t] : file.tensors)
        CHECK(t.to_vector<float>().back() == std::stof(name));
      ++whole;
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains(path));
      ++refused;
    }
    cut.join();
  }
  ::unlink(path.c_str());
  CHECK(refused + whole == 6);
}
