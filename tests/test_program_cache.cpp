// The OpenCL plugin's on-disk program cache (plugins/gpu-common/src/program_cache.cpp): a stored binary
// comes back for the same key only, and a file that does not verify is never trusted.
#include <wick/gpu/program_cache.hpp>

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using wick::gpu::ProgramCache;

namespace {

struct TempCacheHome {
  fs::path dir = fs::temp_directory_path() / ("wick-cache-test-" + std::to_string(::getpid()));
  TempCacheHome() {
    fs::create_directories(dir);
    ::setenv("XDG_CACHE_HOME", dir.c_str(), 1);
    ::unsetenv("WICK_OPENCL_CACHE");
  }
  ~TempCacheHome() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

TEST_CASE("a stored program binary comes back for the same key, not for another",
          "[opencl][cache]") {
  TempCacheHome home;
  const std::vector<unsigned char> binary = {1, 2, 3, 4, 5, 250, 0, 7};
  const ProgramCache cache("opencl", "device A\ndriver 1", "kernel source");
  CHECK_FALSE(cache.load().has_value());
  cache.store(binary);
  CHECK(fs::path(cache.path()).parent_path() == home.dir / "wick" / "opencl");
  REQUIRE(cache.load().has_value());
  CHECK(*cache.load() == binary);
  CHECK_FALSE(ProgramCache("opencl", "device A\ndriver 2", "kernel source").load().has_value());
  CHECK_FALSE(ProgramCache("opencl", "device A\ndriver 1", "other source").load().has_value());
}

TEST_CASE("a corrupt, truncated, padded or non-regular cache file is ignored and rewritten",
          "[opencl][cache]") {
  TempCacheHome home;
  const std::vector<unsigned char> binary(1000, 42);
  const ProgramCache cache("opencl", "device", "source");
  cache.store(binary);
  const auto size = fs::file_size(cache.path());
  {  // one payload byte flipped
    std::fstream f(cache.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 10));
    f.put(7);
  }
  CHECK_FALSE(cache.load().has_value());
  cache.store(binary);
  REQUIRE(cache.load().has_value());
  fs::resize_file(cache.path(), size - 1);  // truncated
  CHECK_FALSE(cache.load().has_value());
  cache.store(binary);
  {
    std::ofstream f(cache.path(), std::ios::app | std::ios::binary);
    f << "trailing";
  }
  CHECK_FALSE(cache.load().has_value());
  fs::remove(cache.path());
  REQUIRE(::mkfifo(cache.path().c_str(), 0600) == 0);  // a FIFO never blocks the load
  CHECK_FALSE(cache.load().has_value());
}

TEST_CASE("WICK_OPENCL_CACHE=0 and an empty source turn the cache off", "[opencl][cache]") {
  TempCacheHome home;
  ::setenv("WICK_OPENCL_CACHE", "0", 1);
  CHECK(ProgramCache("opencl", "device", "source").path().empty());
  ::unsetenv("WICK_OPENCL_CACHE");
  CHECK(ProgramCache("opencl", "device", "").path().empty());
  CHECK_FALSE(ProgramCache("opencl", "device", "source").path().empty());
}
