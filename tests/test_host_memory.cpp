// Host memory shared with the caller (ABI 1.7): Tensor::host_data (buffer_host_address) and
// Tensor::from_host_memory over caller memory with strides, writable, aligned only to the element
// size — zero-copy on cpu-onednn; a copy, as before 1.7, where the plugin declines (fixture-good),
// is older (fixture-minor6-wraps, a 1.6 table) or has no host memory. Expected values are worked
// out here, never read from the code under test.
#include "test_support.hpp"

#include <wick/autograd.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

using namespace wick;

namespace {

using test::cpu;

// Zeroed memory owned by a shared_ptr, and an address in it `misalign` bytes past a 64-byte
// boundary (so that it is aligned to `misalign` and to nothing larger, for a power of two).
struct CallerMemory {
  std::shared_ptr<unsigned char[]> owner;
  unsigned char* at = nullptr;
  CallerMemory(size_t bytes, size_t misalign) : owner(new unsigned char[bytes + 128]()) {
    const auto base = reinterpret_cast<uintptr_t>(owner.get());
    at = owner.get() + (64 - base % 64) % 64 + misalign;
  }
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(at);
  }
};

HostMemoryOptions writable_with(std::vector<int64_t> strides = {}) {
  HostMemoryOptions o;
  o.strides = std::move(strides);
  o.writable = true;
  return o;
}

std::vector<float> iota(int n, float start = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("host_data is a cpu-onednn tensor's first element: writes there are read by ops, and an "
          "op's results are read there",
          "[host_memory]") {
  Tensor t = Tensor::from_vector(iota(6, 1), {2, 3}, cpu());  // [[1, 2, 3], [4, 5, 6]]
  auto* p = static_cast<float*>(t.host_data());
  REQUIRE(p != nullptr);
  CHECK(t.host_data() == p);  // the same address on every call
  CHECK(std::vector<float>(p, p + 6) == iota(6, 1));
  p[4] = 50;  // [1][1]
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 50, 6});
  CHECK(t.sum().item<float>() == 1 + 2 + 3 + 4 + 50 + 6);
  // Views: the address of their own first element, in the same memory.
  CHECK(t.narrow(1, 1, 2).host_data() == p + 1);
  CHECK(t.narrow(0, 1, 1).host_data() == p + 3);
  CHECK(t.t().host_data() == p);
  // An op's result, and an in-place write, once the device is done (host_data waits).
  const Tensor doubled = t * 2.0;
  const auto* d = static_cast<const float*>(doubled.host_data());
  REQUIRE(d != nullptr);
  CHECK(std::vector<float>(d, d + 6) == std::vector<float>{2, 4, 6, 8, 100, 12});
  t.narrow(1, 2, 1).copy_(Tensor::from_vector<float>({-3, -6}, {2, 1}, cpu()));
  CHECK(t.host_data() == p);
  CHECK(std::vector<float>(p, p + 6) == std::vector<float>{1, 2, -3, 4, 50, -6});
  CHECK_FALSE(t.is_host_view());  // Wick's own memory, not a caller's
  CHECK(Tensor().host_data() == nullptr);
}

TEST_CASE("a matmul weight written through host_data is used as written, not as it was packed",
          "[host_memory]") {
  // cpu-onednn keeps a prepacked copy of a weight it sees again unchanged; the address tells it
  // that the memory may change behind its back.
  constexpr int N = 64;
  const Tensor a = Tensor::ones({4, N}, DType::F32, cpu());
  Tensor w = Tensor::ones({N, N}, DType::F32, cpu());
  for (int i = 0; i < 4; ++i) CHECK(a.matmul(w).to_vector<float>()[0] == N);  // packed by now
  auto* p = static_cast<float*>(w.host_data());
  REQUIRE(p != nullptr);
  for (int i = 0; i < N * N; ++i) p[i] = 2;
  for (int i = 0; i < 3; ++i) {
    const std::vector<float> out = a.matmul(w).to_vector<float>();
    CHECK(out == std::vector<float>(4 * N, 2.0f * N));
    p[0] = static_cast<float>(3 + i);  // row 0 of w: column 0 of the product gains 3 + i - 2
    CHECK(a.matmul(w).to_vector<float>()[0] == 2.0f * N + static_cast<float>(1 + i));
    p[0] = 2;
  }
}

TEST_CASE("from_host_memory over writable caller memory on cpu-onednn is a view both ways",
          "[host_memory]") {
  CallerMemory mem(6 * sizeof(float), 0);
  float* m = mem.as<float>();
  for (int i = 0; i < 6; ++i) m[i] = static_cast<float>(i);
  Tensor t = Tensor::from_host_memory(mem.owner, m, {2, 3}, DType::F32, cpu(), writable_with());
  CHECK(t.is_host_view());
  CHECK_FALSE(t.is_read_only());
  CHECK(t.host_data() == m);
  // The caller's writes reach the tensor...
  m[5] = 50;
  CHECK(t.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 50});
  CHECK(t.sum({1}).to_vector<float>() == std::vector<float>{0 + 1 + 2, 3 + 4 + 50});
  // ...and Wick's writes reach the caller: copy_ whole, and into a column.
  t.copy_(Tensor::from_vector(iota(6, 10), {2, 3}, cpu()));
  (void)t.host_data();  // waits for the device
  CHECK(std::vector<float>(m, m + 6) == iota(6, 10));
  t.narrow(1, 1, 1).copy_(Tensor::scalar(-1.0f, cpu()));
  (void)t.host_data();
  CHECK(std::vector<float>(m, m + 6) == std::vector<float>{10, -1, 12, 13, -1, 15});
  // The owner lives as long as the tensor.
  std::weak_ptr<unsigned char[]> alive = mem.owner;
  mem.owner.reset();
  CHECK_FALSE(alive.expired());
  t = Tensor();
  CHECK(alive.expired());
}

TEST_CASE("from_host_memory not asked to be writable is a read-only view of memory the caller may "
          "still change",
          "[host_memory]") {
  CallerMemory mem(4 * sizeof(int32_t), 0);
  int32_t* m = mem.as<int32_t>();
  for (int i = 0; i < 4; ++i) m[i] = i + 1;
  const Tensor t = Tensor::from_host_memory(mem.owner, m, {4}, DType::I32, cpu(), {});
  CHECK(t.is_host_view());
  CHECK(t.is_read_only());
  CHECK(t.host_data() == m);
  m[0] = 7;
  CHECK(t.to_vector<int32_t>() == std::vector<int32_t>{7, 2, 3, 4});
  Tensor target = t;
  CHECK_THROWS_WITH(target.copy_(Tensor::scalar<int32_t>(0, cpu())), Catch::Contains("read-only"));
  CHECK(std::vector<int32_t>(m, m + 4) == std::vector<int32_t>{7, 2, 3, 4});
}

TEST_CASE("from_host_memory with strides views transposed, strided and reversed caller memory",
          "[host_memory]") {
  // m holds a 3x4 matrix in C order: m[r][c] = 10 r + c.
  CallerMemory mem(12 * sizeof(float), 0);
  float* m = mem.as<float>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) m[r * 4 + c] = static_cast<float>(10 * r + c);
  const Device dev = cpu();
  SECTION("its transpose, [4, 3] with strides [1, 4]") {
    Tensor t = Tensor::from_host_memory(mem.owner, m, {4, 3}, DType::F32, dev, writable_with({1, 4}));
    CHECK(t.is_host_view());
    CHECK(t.strides() == std::vector<int64_t>{1, 4});
    CHECK(t.to_vector<float>() ==
          std::vector<float>{0, 10, 20, 1, 11, 21, 2, 12, 22, 3, 13, 23});
    // t[1] is column 1 of m: a write there lands at m[r][1].
    t.narrow(0, 1, 1).copy_(Tensor::from_vector<float>({-1, -2, -3}, {1, 3}, dev));
    (void)t.host_data();
    CHECK(m[1] == -1);
    CHECK(m[5] == -2);
    CHECK(m[9] == -3);
    CHECK(m[0] == 0);
    // An op reads the strides: [4, 3] x [3, 1] of ones gives each row's sum, i.e. m's columns'.
    const Tensor sums = t.matmul(Tensor::ones({3, 1}, DType::F32, dev));
    CHECK(sums.to_vector<float>() == std::vector<float>{0 + 10 + 20, -1 - 2 - 3, 2 + 12 + 22, 3 + 13 + 23});
  }
  SECTION("every other column, from element 1: [3, 2] with strides [4, 2]") {
    const Tensor t = Tensor::from_host_memory(mem.owner, m + 1, {3, 2}, DType::F32, dev, writable_with({4, 2}));
    CHECK(t.is_host_view());
    CHECK(t.host_data() == m + 1);
    CHECK(t.to_vector<float>() == std::vector<float>{1, 3, 11, 13, 21, 23});
  }
  SECTION("a reversed row, from its last element: [4] with stride -1") {
    Tensor t = Tensor::from_host_memory(mem.owner, m + 7, {4}, DType::F32, dev, writable_with({-1}));
    CHECK(t.is_host_view());
    CHECK(t.host_data() == m + 7);
    CHECK(t.to_vector<float>() == std::vector<float>{13, 12, 11, 10});
    t.copy_(Tensor::from_vector<float>({1, 2, 3, 4}, dev));
    (void)t.host_data();
    CHECK(std::vector<float>(m + 4, m + 8) == std::vector<float>{4, 3, 2, 1});
  }
  SECTION("a broadcast row, stride 0: readable, and refused as a target") {
    Tensor t = Tensor::from_host_memory(mem.owner, m, {2, 4}, DType::F32, dev, writable_with({0, 1}));
    CHECK(t.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3});
    CHECK_THROWS_WITH(t.copy_(Tensor::zeros({2, 4}, DType::F32, dev)),
                      Catch::Contains("share one memory location"));
  }
  SECTION("strides of another rank are an error") {
    CHECK_THROWS_WITH(Tensor::from_host_memory(mem.owner, m, {3, 4}, DType::F32, dev, writable_with({4})),
                      Catch::Contains("1 strides for shape [3, 4]"));
  }
}

TEST_CASE("cpu-onednn wraps memory aligned only to the element size, and its kernels compute there "
          "what they compute on aligned memory",
          "[host_memory]") {
  const Device dev = cpu();
  constexpr int N = 40;  // not a multiple of any vector width
  std::vector<float> values(N * N);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(static_cast<float>(i)) * 0.5f;
  CallerMemory mem(values.size() * sizeof(float), 4);  // 4 past a 64-byte boundary
  std::memcpy(mem.at, values.data(), values.size() * sizeof(float));
  const Tensor wrapped =
      Tensor::from_host_memory(mem.owner, mem.at, {N, N}, DType::F32, dev, writable_with());
  REQUIRE(wrapped.is_host_view());
  CHECK(wrapped.host_data() == mem.at);
  const Tensor aligned = Tensor::from_vector(values, {N, N}, dev);
  auto close = [](const Tensor& x, const Tensor& y) {
    const std::vector<float> a = x.to_vector<float>(), b = y.to_vector<float>();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(std::abs(a[i] - b[i]) <= 1e-5f * (1 + std::abs(b[i])));
  };
  close(wrapped.matmul(wrapped), aligned.matmul(aligned));  // oneDNN
  close(wrapped.exp(), aligned.exp());                      // the vector math
  close(wrapped.softmax(-1), aligned.softmax(-1));
  close(wrapped.sum({0}), aligned.sum({0}));
  close(wrapped.reshape({1, 1, N, N}).conv(Tensor::ones({2, 1, 3, 3}, DType::F32, dev)),
        aligned.reshape({1, 1, N, N}).conv(Tensor::ones({2, 1, 3, 3}, DType::F32, dev)));
  // An op's output in that memory.
  Tensor out = wrapped;
  out.copy_(aligned.tanh());
  close(out, aligned.tanh());
  // f64 at 8 bytes past a 64-byte boundary, i16 at 2: wrapped. f32 at 2: not its size, a copy.
  CallerMemory d(8 * sizeof(double), 8), s(8 * sizeof(int16_t), 2), f(4 * sizeof(float), 2);
  CHECK(Tensor::from_host_memory(d.owner, d.at, {8}, DType::F64, dev, {}).is_host_view());
  CHECK(Tensor::from_host_memory(s.owner, s.at, {8}, DType::I16, dev, {}).is_host_view());
  const float four[4] = {1, 2, 3, 4};
  std::memcpy(f.at, four, sizeof four);
  const Tensor copied = Tensor::from_host_memory(f.owner, f.at, {4}, DType::F32, dev, writable_with());
  CHECK_FALSE(copied.is_host_view());
  CHECK(copied.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  // The mapped-file form, too, takes element alignment from a 1.7 plugin (read-only, as before).
  const Tensor mapped = Tensor::from_host_memory(mem.owner, mem.at, N * N * sizeof(float), {N, N}, DType::F32, dev);
  CHECK(mapped.is_host_view());
  CHECK(mapped.is_read_only());
}

TEST_CASE("a plugin that declines buffer_wrap_host (fixture-good) copies: a snapshot, whose writes "
          "never reach the caller, and no address",
          "[host_memory]") {
  auto rt = test::fixture_runtime(false, {"fixture-good"});
  const Device dev = rt->registry().find_device("fixture-good");
  REQUIRE(dev.valid());
  CallerMemory mem(4 * sizeof(float), 0);
  float* m = mem.as<float>();
  for (int i = 0; i < 4; ++i) m[i] = static_cast<float>(i + 1);
  Tensor t = Tensor::from_host_memory(mem.owner, m, {2, 2}, DType::F32, dev, writable_with({1, 2}));
  CHECK_FALSE(t.is_host_view());
  CHECK_FALSE(t.is_read_only());
  CHECK(t.host_data() == nullptr);
  CHECK(t.is_contiguous());  // the copy is in C order: the transpose [[1, 3], [2, 4]]
  CHECK(t.to_vector<float>() == std::vector<float>{1, 3, 2, 4});
  m[0] = 100;  // a snapshot: not seen
  CHECK(t.to_vector<float>()[0] == 1);
  t.copy_(Tensor::from_vector<float>({5, 6, 7, 8}, {2, 2}, dev));  // a write to the copy only
  CHECK(std::vector<float>(m, m + 4) == std::vector<float>{100, 2, 3, 4});
  CHECK(t.to_vector<float>() == std::vector<float>{5, 6, 7, 8});
  // The mapped-file form too.
  CHECK_FALSE(Tensor::from_host_memory(mem.owner, m, 16, {4}, DType::F32, dev).is_host_view());
}

TEST_CASE("a 1.6 plugin that wraps keeps 1.5's rules: 32-byte aligned read-only memory is wrapped, "
          "anything else copied, and the host never asks it for an address",
          "[host_memory]") {
  Config c = default_config();
  c.plugin_paths = {WICK_WRAP_FIXTURE_DIR, WICK_PLUGIN_BUILD_DIR};
  c.log_level = "error";
  Runtime rt(c, RegistryOptions{false, false});
  const Device dev = rt.registry().find_device("fixture-minor6-wraps");
  REQUIRE(dev.valid());
  for (const PluginInfo& p : rt.registry().plugins())
    if (p.name == "fixture-minor6-wraps") CHECK(p.abi_minor == 6);
  CallerMemory aligned(8 * sizeof(float), 0), off(8 * sizeof(float), 4);
  for (CallerMemory* mem : {&aligned, &off})
    for (int i = 0; i < 8; ++i) mem->as<float>()[i] = static_cast<float>(i);
  // The mapped-file form: wrapped at 32 bytes, copied at 4.
  const Tensor mapped = Tensor::from_host_memory(aligned.owner, aligned.at, 32, {8}, DType::F32, dev);
  CHECK(mapped.is_host_view());
  CHECK(mapped.is_read_only());
  CHECK(mapped.host_data() == nullptr);  // the slot lies beyond its table
  aligned.as<float>()[0] = 9;
  CHECK(mapped.to_vector<float>()[0] == 9);
  CHECK_FALSE(Tensor::from_host_memory(off.owner, off.at, 32, {8}, DType::F32, dev).is_host_view());
  // The shared form: read-only at 32 bytes wrapped (1.5's contract), writable never.
  const Tensor shared = Tensor::from_host_memory(aligned.owner, aligned.at, {8}, DType::F32, dev, {});
  CHECK(shared.is_host_view());
  CHECK(shared.is_read_only());
  CHECK_FALSE(Tensor::from_host_memory(off.owner, off.at, {8}, DType::F32, dev, {}).is_host_view());
  Tensor copy = Tensor::from_host_memory(aligned.owner, aligned.at, {8}, DType::F32, dev, writable_with());
  CHECK_FALSE(copy.is_host_view());
  CHECK_FALSE(copy.is_read_only());
  copy.copy_(Tensor::zeros({8}, DType::F32, dev));
  CHECK(aligned.as<float>()[1] == 1);  // the caller's memory is untouched
}

TEST_CASE("a device without host memory (opencl) copies and gives no address", "[host_memory]") {
  const std::vector<Device> devices = test::cpu_and_opencl();
  if (devices.size() < 2) return;  // no OpenCL device here
  const Device ocl = devices[1];
  if ((ocl.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) != 0) return;
  CallerMemory mem(4 * sizeof(float), 0);
  for (int i = 0; i < 4; ++i) mem.as<float>()[i] = static_cast<float>(i);
  const Tensor t = Tensor::from_host_memory(mem.owner, mem.at, {4}, DType::F32, ocl, writable_with());
  CHECK_FALSE(t.is_host_view());
  CHECK(t.host_data() == nullptr);
  CHECK(t.to_vector<float>() == std::vector<float>{0, 1, 2, 3});
}

TEST_CASE("from_host_memory of no elements is an empty tensor, and a negative extent an error",
          "[host_memory]") {
  CallerMemory mem(16, 0);
  const Tensor e = Tensor::from_host_memory(mem.owner, mem.at, {0, 3}, DType::F32, cpu(), writable_with());
  CHECK(e.shape() == Shape{0, 3});
  CHECK(e.numel() == 0);
  CHECK_THROWS_AS(Tensor::from_host_memory(mem.owner, mem.at, {-1, 3}, DType::F32, cpu(), {}), Error);
}

TEST_CASE("native_memory (ABI 1.8) is the plugin's answer, offset to a view's first element, and "
          "devices without the slot give none",
          "[host_memory][native_memory]") {
  // cpu-onednn and opencl name no buffer natively: collectives stage their tensors instead.
  for (const Device& d : test::cpu_and_opencl())
    CHECK_FALSE(Tensor::zeros({4}, DType::F32, d).native_memory().has_value());
  // fixture-good names its buffers as a CUDA device would, with its host memory as the address.
  auto rt = test::fixture_runtime(false, {"fixture-good"});
  const Device dev = rt->registry().find_device("fixture-good");
  REQUIRE(dev.valid());
  const Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, dev);
  const std::optional<NativeMemory> m = t.native_memory();
  REQUIRE(m.has_value());
  CHECK(m->kind == NativeMemory::kCuda);
  CHECK(m->device_ordinal == 5);
  CHECK(m->queue != nullptr);
  CHECK(std::vector<float>(static_cast<float*>(m->data), static_cast<float*>(m->data) + 6) ==
        std::vector<float>{1, 2, 3, 4, 5, 6});
  // Row 1 of the tensor starts 3 floats further; its column 2 (a strided view) 5 floats further.
  const std::optional<NativeMemory> row = t.narrow(0, 1, 1).native_memory();
  REQUIRE(row.has_value());
  CHECK(row->data == static_cast<float*>(m->data) + 3);
  const std::optional<NativeMemory> col = t.narrow(1, 2, 1).narrow(0, 1, 1).native_memory();
  REQUIRE(col.has_value());
  CHECK(*static_cast<float*>(col->data) == 6);
  CHECK(row->queue == m->queue);
  CHECK_FALSE(Tensor().native_memory().has_value());
}
