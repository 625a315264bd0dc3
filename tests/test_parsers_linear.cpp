// Every reader of untrusted bytes is linear in its input (issue 22): a config, a plugin manifest, an
// ONNX protobuf and an IDX file, each read at n entries and at 100n. Linear is about 100x the time,
// quadratic about 10,000x: each test asserts at most 800x (test::linear_time), and an absolute
// bound for the big input. (At n and 10n, with a bound of 30x, a busy machine failed linear
// readers: a small input that fits the caches ran 33 to 47 times faster.)
// TOML inputs are capped at 1 MiB (safe_file::kMaxTextBytes), so the big input is the most entries
// that fit it. (The safetensors header has its own such test in test_safetensors.cpp.)
#include "test_support.hpp"

#include <wick/config.hpp>
#include <wick/nn/data.hpp>
#include <wick/onnx/proto.hpp>
#include <wick/safe_file.hpp>

#include <catch2/catch.hpp>

#include <zlib.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "host/manifest.hpp"

using namespace wick;
using wick::test::fastest_seconds;

namespace {

// The absolute bounds are for an optimized build. Unoptimized (the sanitizer job builds at -O0,
// where the readers run 10 to 20 times slower) every bound is kSlowdown times longer, fewer timing
// runs are taken, and the ONNX and IDX tests, whose inputs are not capped, read a tenth of the
// entries (at -O0 a million ONNX nodes take 20 s). The ratio bound is the same in both.
#ifdef __OPTIMIZE__
constexpr double kSlowdown = 1;
constexpr int kTries = 3;
constexpr uint32_t kFewer = 1;
#else
constexpr double kSlowdown = 10;
constexpr int kTries = 2;
constexpr uint32_t kFewer = 10;
#endif

// How an input of `n` entries is made: text before them, each entry, text after them.
struct Input {
  const char* what;
  std::string head;
  std::function<std::string(size_t)> entry;
  std::string tail;
};

// The shape's text with `n` entries, or with as many as fit in `max_bytes` (and `n` set to that).
std::string text_of(const Input& shape, size_t& n, size_t max_bytes = safe_file::kMaxTextBytes) {
  std::string text = shape.head;
  size_t i = 0;
  for (; n == 0 || i < n; ++i) {
    const std::string e = shape.entry(i);
    if (text.size() + e.size() + shape.tail.size() > max_bytes) break;
    text += e;
  }
  n = i;
  return text + shape.tail;
}

// Times `read` on the shape at the most entries 1 MiB holds and at a hundredth of them; `read` checks
// what it read (it is given the entry count).
void check_linear(const Input& shape, size_t min_entries, double bound_s,
                  const std::function<void(const std::string&, size_t)>& read) {
  size_t n_big = 0;
  const std::string big = text_of(shape, n_big);
  size_t n_small = n_big / 100;
  const std::string small = text_of(shape, n_small);
  REQUIRE(n_big >= min_entries);
  const double t_small = fastest_seconds(kTries, [&] { read(small, n_small); });
  const double t_big = fastest_seconds(kTries, [&] { read(big, n_big); });
  INFO(shape.what << ": " << n_small << " entries in " << t_small << " s, " << n_big << " in "
                  << t_big << " s (" << big.size() << " bytes)");
  CHECK(test::linear_time(t_small, n_small, t_big, n_big));
  CHECK(t_big < bound_s * kSlowdown);
}

// prefix + i, appended: GCC 12 warns falsely on "k" + std::to_string(i).
std::string named(const char* prefix, size_t i) {
  std::string out = prefix;
  out += std::to_string(i);
  return out;
}

}  // namespace

// Measured on the 2-core build machine (Release, other builds running): 1 MiB of config reads in
// 0.04 to 0.09 s at any shape (0.2 to 1.0 s at -O0 with ASan); the quadratic duplicate check of
// devices.priority (before this test) took 13.5 s for its 115,966 entries and 0.11 s for 11,596.
TEST_CASE("a config of 1 MiB (up to 110,000 keys, tables or list entries) reads in linear time, "
          "under 5 s",
          "[config][linear][slow]") {
  const std::vector<std::pair<Input, std::function<size_t(const Config&)>>> shapes = {
      {{"option keys of one plugin", "[plugins.many]\n", [](size_t i) { return named("k", i) + " = 1\n"; }, ""},
       [](const Config& c) { return c.plugin_options.at("many").values.size(); }},
      {{"plugin tables", "", [](size_t i) { return named("[plugins.p", i) + "]\nx = 1\n"; }, ""},
       [](const Config& c) { return c.plugin_options.size(); }},
      {{"devices.priority entries", "[devices]\npriority = [",
        [](size_t i) { return named("\"d", i) + "\","; }, "]\n"},
       [](const Config& c) { return c.priority.size(); }},
      {{"plugins.disable entries", "[plugins]\ndisable = [",
        [](size_t i) { return named("\"p", i) + "\","; }, "]\n"},
       [](const Config& c) { return c.disabled_plugins.size(); }},
      {{"plugins.paths entries", "[plugins]\npaths = [",
        [](size_t i) { return named("\"/p", i) + "\","; }, "]\n"},
       [](const Config& c) { return c.plugin_paths.size(); }},
  };
  // No structured binding: clang 14 (the sanitizer builds) cannot capture one in a lambda.
  for (const auto& row : shapes) {
    SECTION(row.first.what) {
      const auto& count = row.second;
      check_linear(row.first, 40'000, 5.0, [&](const std::string& text, size_t n) {
        REQUIRE(count(apply_config_text(Config{}, text, "many.toml")) == n);
      });
    }
  }
}

// Measured as above: 1 MiB of manifest reads in 0.03 to 0.08 s at any shape (0.2 to 0.35 s at -O0
// with ASan); a duplicate check of device_kinds by linear search made 115,961 kinds take 13.4 s.
TEST_CASE("a plugin manifest of 1 MiB (up to 130,000 keys, tables or kinds) reads in linear time, "
          "under 5 s",
          "[manifest][linear][slow]") {
  const std::string head = "name = \"many\"\nlibrary = \"libmany.so\"\nabi_major = 1\n";
  const std::vector<Input> shapes = {
      {"keys", head, [](size_t i) { return named("k", i) + " = 1\n"; }, ""},
      {"dotted keys", head, [](size_t i) { return named("t.k", i) + " = 1\n"; }, ""},
      {"tables", head, [](size_t i) { return named("[t", i) + "]\n"; }, ""},
      {"an array of tables", head, [](size_t i) { return named("[[t]]\nk = ", i) + "\n"; }, ""},
      {"nested arrays", head + "a = [", [](size_t i) { return named("[[", i) + "]],"; }, "]\n"},
      {"an inline table", head + "t = {", [](size_t i) { return named("k", i) + " = 1,"; },
       "z = 1}\n"},
      {"device kinds", head + "device_kinds = [", [](size_t i) { return named("\"k", i) + "\","; },
       "]\n"},
  };
  for (const Input& shape : shapes) {
    SECTION(shape.what) {
      const bool kinds = std::string(shape.what) == "device kinds";
      check_linear(shape, 40'000, 5.0, [&](const std::string& text, size_t n) {
        const Manifest m = parse_manifest(text, "/plugins/many.wick-plugin.toml");
        REQUIRE(m.name == "many");
        REQUIRE(m.device_kinds.size() == (kinds ? n : 0));
      });
    }
  }
}

namespace {

// Protobuf encoding, as much as the ONNX test needs.
void varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7F) | 0x80);
  out += static_cast<char>(v);
}
void int_field(std::string& out, uint32_t field, uint64_t v) {
  varint(out, uint64_t{field} << 3);
  varint(out, v);
}
void bytes_field(std::string& out, uint32_t field, const std::string& bytes) {
  varint(out, (uint64_t{field} << 3) | 2);
  varint(out, bytes.size());
  out += bytes;
}

// A ModelProto (opset 13) whose graph has `n` nodes (Relu, x<i> -> x<i+1>, an attribute
// "alpha" of ints [1, 2, 3]) and `n` initializers (w<i>, one f32 of value i).
std::string model_of(size_t n) {
  std::string graph;
  for (size_t i = 0; i < n; ++i) {
    std::string attribute, node, init;
    bytes_field(attribute, 1, "alpha");
    bytes_field(attribute, 8, std::string("\x01\x02\x03", 3));  // packed ints
    int_field(attribute, 20, 7);                                   // INTS
    bytes_field(node, 1, named("x", i));
    bytes_field(node, 2, named("x", i + 1));
    bytes_field(node, 4, "Relu");
    bytes_field(node, 5, attribute);
    bytes_field(graph, 1, node);
    int_field(init, 1, 1);  // dims [1]
    int_field(init, 2, onnx::kFloat);
    bytes_field(init, 8, named("w", i));
    const float value = static_cast<float>(i);
    bytes_field(init, 9, std::string(reinterpret_cast<const char*>(&value), 4));
    bytes_field(graph, 5, init);
  }
  std::string opset, model;
  int_field(opset, 2, 13);
  int_field(model, 1, 8);  // ir_version
  bytes_field(model, 8, opset);
  bytes_field(model, 7, graph);
  return model;
}

}  // namespace

// Measured on the 2-core build machine (Release, other builds running): 100,000 nodes and as many
// initializers read in 0.07 to 0.1 s, 1,000,000 (64 MB) in 0.9 to 1.0 s; at -O0 with ASan 100,000
// take 2 s. Nodes inserted at the front instead of appended made 20,000 take 2.5 s (2,000: 0.02 s).
TEST_CASE("an ONNX model of 1,000,000 nodes and 1,000,000 initializers (a tenth at -O0) reads in "
          "linear time, under 10 s",
          "[onnx][linear][slow]") {
  const size_t n_small = 10'000 / kFewer, n_big = 1'000'000 / kFewer;
  const std::string small = model_of(n_small), big = model_of(n_big);
  onnx::ModelProto m;
  const auto read = [&](const std::string& bytes) {
    m = onnx::parse_model(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                          "/models/many/model.onnx");
  };
  const double t_small = fastest_seconds(2, [&] { read(small); });
  REQUIRE(m.graph.nodes.size() == n_small);
  const double t_big = fastest_seconds(2, [&] { read(big); });
  INFO(n_small << " nodes: " << t_small << " s, " << n_big << " nodes: " << t_big << " s ("
               << big.size() << " bytes)");
  CHECK(test::linear_time(t_small, n_small, t_big, n_big));
  CHECK(t_big < 10.0 * kSlowdown / kFewer);
  REQUIRE(m.opset == 13);
  REQUIRE(m.graph.nodes.size() == n_big);
  REQUIRE(m.graph.initializers.size() == n_big);
  for (size_t i : {size_t{0}, size_t{12'345}, n_big - 1}) {
    const onnx::NodeProto& node = m.graph.nodes[i];
    CHECK(node.inputs == std::vector<std::string>{named("x", i)});
    CHECK(node.outputs == std::vector<std::string>{named("x", i + 1)});
    REQUIRE(node.attribute("alpha") != nullptr);
    CHECK(node.attribute("alpha")->ints == std::vector<int64_t>{1, 2, 3});
    const onnx::TensorProto& w = m.graph.initializers[i];
    CHECK(w.name == named("w", i));
    float value = -1;
    REQUIRE(w.data.size() == 4);
    std::memcpy(&value, w.data.data(), 4);
    CHECK(value == static_cast<float>(i));
  }
}

namespace {

// IDX i32: `n` items of value i, big-endian (each is swapped to host order as it is read).
std::string idx_of(uint32_t n) {
  std::string out(8 + 4 * size_t{n}, '\0');
  const auto put = [&](size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) out[at + k] = static_cast<char>((v >> (24 - 8 * k)) & 0xFF);
  };
  out[2] = 0x0C;
  out[3] = 1;
  put(4, n);
  for (uint32_t i = 0; i < n; ++i) put(8 + 4 * size_t{i}, i);
  return out;
}

// `bytes` as one gzip member.
std::string gzip(const std::string& bytes) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, bytes.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace

// Measured on the 2-core build machine (Release, other builds running): 10 Mi i32 items (40 MiB)
// read in 0.02 s raw and 0.12 s from two gzip members (a file whose size is known only once
// inflated, so the data grows as it arrives), a tenth of them in a tenth of that. Growing the data
// by 64 KiB at a time, each reallocated exactly, made the gzip'd 10 Mi take 4 s (1 Mi: 0.02 s).
TEST_CASE("an IDX file of 10 Mi items (a tenth at -O0) reads in linear time, raw or gzip'd, "
          "under 5 s",
          "[data][idx][linear][slow]") {
  const uint32_t n_small = (uint32_t{10} << 20) / 100 / kFewer, n_big = (uint32_t{10} << 20) / kFewer;
  for (const bool gzipped : {false, true}) {
    INFO((gzipped ? "two gzip members" : "raw"));
    // Two members: the trailer gives the last member's size only, so no size is known up front.
    const auto file = [&](uint32_t n) {
      const std::string raw = idx_of(n);
      return gzipped ? gzip(raw.substr(0, raw.size() - 1)) + gzip(raw.substr(raw.size() - 1)) : raw;
    };
    const std::string small = file(n_small), big = file(n_big);
    data::IdxArray a;
    const auto read = [&](const std::string& bytes) {
      a = data::parse_idx(bytes.data(), bytes.size(), "many.idx");
    };
    const double t_small = fastest_seconds(kTries, [&] { read(small); });
    REQUIRE(a.shape == Shape{n_small});
    const double t_big = fastest_seconds(kTries, [&] { read(big); });
    INFO(n_small << " items: " << t_small << " s, " << n_big << " items: " << t_big << " s");
    CHECK(test::linear_time(t_small, n_small, t_big, n_big));
    CHECK(t_big < 5.0 * kSlowdown / kFewer);
    REQUIRE(a.shape == Shape{n_big});
    REQUIRE(a.dtype == DType::I32);
    for (uint32_t i : {0u, 255u, 256u, 12'345u, n_big - 1}) {
      int32_t v = -1;
      std::memcpy(&v, a.bytes.data() + 4 * size_t{i}, 4);
      CHECK(v == static_cast<int32_t>(i));
    }
  }
}
