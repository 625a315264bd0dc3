// GGUF: the fixtures that tests/data/gguf/make_fixtures.py wrote with the `gguf` package (values
// stated here as the script writes them), files built byte by byte that break one rule each (every
// one a wick::Error naming the file, the key or tensor, and the problem), and the writer: byte-
// identical to the package's GGUFWriter on the same inputs, and round trips.
#include "test_support.hpp"

#include <wick/gguf.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>

using namespace wick;
using Catch::Contains;
using wick::test::cpu;
namespace fs = std::filesystem;
namespace gguf = wick::gguf;
using GType = wick::sdk::ggml::Type;
using gguf::Value;
using gguf::ValueType;

namespace {

const std::string kDir = std::string(WICK_TEST_DATA_DIR) + "/gguf/";

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The message of the wick::Error that `f` throws; "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string parse_error(const std::string& bytes) {
  return error_of([&] { gguf::parse(bytes.data(), bytes.size(), "bad.gguf"); });
}

// Little-endian GGUF bytes written by hand, for files no writer makes.
struct Bytes {
  std::string b;
  template <class T>
  Bytes& put(T v) {
    char c[sizeof(T)];
    std::memcpy(c, &v, sizeof(T));
    b.append(c, sizeof(T));
    return *this;
  }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& str(const std::string& s) {
    u64(s.size());
    b += s;
    return *this;
  }
  Bytes& header(uint64_t tensors, uint64_t entries, uint32_t version = 3) {
    b += "GGUF";
    return u32(version).u64(tensors).u64(entries);
  }
  // A key and its value type; the value follows.
  Bytes& key(const std::string& k, ValueType t) { return str(k).u32(static_cast<uint32_t>(t)); }
  Bytes& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }
  // Zeros to a multiple of `alignment`, then `data_bytes` bytes of data.
  Bytes& data(size_t data_bytes, size_t alignment = 32) {
    b.append((alignment - b.size() % alignment) % alignment, '\0');
    b.append(data_bytes, '\x11');
    return *this;
  }
};

std::vector<uint8_t> mod251(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i % 251);
  return v;
}

std::vector<uint8_t> span_bytes(std::span<const uint8_t> s) {
  return {s.begin(), s.end()};
}

// A scratch directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("wick-test-gguf-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace

// ---- reading the package's files
// -----------------------------------------------------------------

TEST_CASE("gguf: every scalar metadata type reads back as the gguf package wrote it") {
  const gguf::GgufFile f(kDir + "every_type_v3.gguf");
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  REQUIRE(f.metadata().size() == 32);
  CHECK(f.metadata()[0].key == "general.architecture");  // GGUFWriter writes it first
  CHECK(f.get<std::string>("general.architecture") == "wicktest");
  CHECK(f.get<uint8_t>("test.uint8") == 255);
  CHECK(f.get<int8_t>("test.int8") == -128);
  CHECK(f.get<uint16_t>("test.uint16") == 65535);
  CHECK(f.get<int16_t>("test.int16") == -32768);
  CHECK(f.get<uint32_t>("test.uint32") == 4294967295u);
  CHECK(f.get<int32_t>("test.int32") == std::numeric_limits<int32_t>::min());
  CHECK(f.get<float>("test.float32") == -2.5f);
  CHECK(f.get<bool>("test.bool_true") == true);
  CHECK(f.get<bool>("test.bool_false") == false);
  CHECK(f.get<std::string>("test.string") == "h\xc3\xa9llo, GGUF");
  CHECK(f.get<std::string>("test.empty_string").empty());
  CHECK(f.get<uint64_t>("test.uint64") == std::numeric_limits<uint64_t>::max());
  CHECK(f.get<int64_t>("test.int64") == std::numeric_limits<int64_t>::min());
  CHECK(f.get<double>("test.float64") == 0.1);
  CHECK(f.metadata()[1].key == "test.uint8");
  CHECK(f.metadata()[14].key == "test.float64");
}

TEST_CASE("gguf: arrays of every item type, nested and empty ones, read back") {
  const gguf::GgufFile f(kDir + "every_type_v3.gguf");
  CHECK(f.get<std::vector<uint8_t>>("test.array_uint8") == std::vector<uint8_t>{0, 255});
  CHECK(f.get<std::vector<int8_t>>("test.array_int8") == std::vector<int8_t>{-128, 127});
  CHECK(f.get<std::vector<uint16_t>>("test.array_uint16") == std::vector<uint16_t>{0, 65535});
  CHECK(f.get<std::vector<int16_t>>("test.array_int16") == std::vector<int16_t>{-32768, 32767});
  CHECK(f.get<std::vector<uint32_t>>("test.array_uint32") == std::vector<uint32_t>{0, 4294967295u});
  CHECK(f.get<std::vector<int32_t>>("test.array_int32") == std::vector<int32_t>{1, -2, 3});
  CHECK(f.get<std::vector<float>>("test.array_float32") == std::vector<float>{0.5f, -1.25f});
  CHECK(f.get<std::vector<bool>>("test.array_bool") == std::vector<bool>{true, false, true});
  CHECK(f.get<std::vector<std::string>>("test.array_string") ==
        std::vector<std::string>{"a", "bc", ""});
  CHECK(f.get<std::vector<uint64_t>>("test.array_uint64") ==
        std::vector<uint64_t>{1, std::numeric_limits<uint64_t>::max()});
  CHECK(f.get<std::vector<int64_t>>("test.array_int64") ==
        std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max()});
  CHECK(f.get<std::vector<double>>("test.array_float64") == std::vector<double>{0.1, -1e300});

  const Value* nested = f.find("test.nested");
  REQUIRE(nested != nullptr);
  CHECK(nested->describe() == "array of array");
  CHECK(*nested == Value::array(ValueType::Array, {Value::array(std::vector<int32_t>{1, 2}),
                                                   Value::array(std::vector<int32_t>{3})}));
  const gguf::Array& mixed = f.find("test.nested_mixed")->array();
  REQUIRE(mixed.items.size() == 2);
  CHECK(mixed.items[0].as<std::vector<int32_t>>() == std::vector<int32_t>{1});
  CHECK(mixed.items[1].as<std::vector<std::string>>() == std::vector<std::string>{"x", "y"});
  CHECK(f.find("test.nested3")->array().items[0].array().items[0].as<std::vector<int32_t>>() ==
        std::vector<int32_t>{7});
  const gguf::Array& empty = f.find("test.empty_array")->array();
  CHECK(empty.type == ValueType::Int32);
  CHECK(empty.items.empty());
  const gguf::Array& with_empty = f.find("test.nested_with_empty")->array();
  REQUIRE(with_empty.items.size() == 2);
  CHECK(with_empty.items[1].array().type == ValueType::String);
  CHECK(with_empty.items[1].array().items.empty());
}

TEST_CASE(
    "gguf: asking for the wrong type or an absent key names the file, the key and the types") {
  const gguf::GgufFile f(kDir + "every_type_v3.gguf");
  const std::string file = kDir + "every_type_v3.gguf";
  CHECK_THAT(
      error_of([&] { f.get<int64_t>("test.uint32"); }),
      Contains(file) && Contains("'test.uint32'") && Contains("is of type uint32, read as int64"));
  CHECK_THAT(
      error_of([&] { f.get<std::string>("test.array_string"); }),
      Contains("'test.array_string'") && Contains("is of type array of string, read as string"));
  CHECK_THAT(error_of([&] { f.get<std::vector<int64_t>>("test.array_int32"); }),
             Contains("of type array of int32, read as array of int64"));
  CHECK_THAT(error_of([&] { f.get<uint32_t>("no.such.key"); }),
             Contains(file) && Contains("'no.such.key' is absent"));
  CHECK(f.find("no.such.key") == nullptr);
  CHECK_THAT(error_of([&] { f.find("test.uint8")->array(); }),
             Contains("is of type uint8, read as array"));
}

TEST_CASE(
    "gguf: tensor infos give ne fastest first, the Wick shape slowest first, offsets and sizes") {
  const gguf::GgufFile f(kDir + "every_type_v3.gguf");
  CHECK(f.data_offset() == 1856);
  struct Expected {
    const char* name;
    GType type;
    std::vector<uint64_t> ne;
    Shape shape;
    uint64_t offset, size;
  };
  const std::vector<Expected> expected = {
      {"f32", GType::F32, {3, 2}, {2, 3}, 0, 24},
      {"f16", GType::F16, {4}, {4}, 32, 8},
      {"bf16", GType::BF16, {3, 2}, {2, 3}, 64, 12},
      {"f64", GType::F64, {2}, {2}, 96, 16},
      {"i8", GType::I8, {3}, {3}, 128, 3},
      {"i16", GType::I16, {1, 2}, {2, 1}, 160, 4},
      {"i32_scalar", GType::I32, {}, {}, 192, 4},
      {"i64", GType::I64, {2}, {2}, 224, 16},
      {"q8_0", GType::Q8_0, {64}, {64}, 256, 68},
      {"q4_k", GType::Q4_K, {256, 2}, {2, 256}, 352, 288},
      {"empty", GType::F32, {3, 0}, {0, 3}, 640, 0},
  };
  REQUIRE(f.tensors().size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const gguf::TensorInfo& t = f.tensors()[i];
    INFO(expected[i].name);
    CHECK(t.name == expected[i].name);
    CHECK(t.type == expected[i].type);
    CHECK(t.ne == expected[i].ne);
    CHECK(t.shape() == expected[i].shape);
    CHECK(t.offset == expected[i].offset);
    CHECK(t.size == expected[i].size);
    CHECK(f.find_tensor(expected[i].name) == &t);
  }
  CHECK(f.find_tensor("nope") == nullptr);
  CHECK(f.tensors()[9].numel() == 512);
  CHECK(f.tensors()[6].numel() == 1);
}

TEST_CASE("gguf: quantized tensors are raw blocks in the mapping and refused as Wick tensors") {
  const gguf::GgufFile f(kDir + "every_type_v3.gguf");
  CHECK(span_bytes(f.tensor_data(*f.find_tensor("q8_0"))) == mod251(68));
  CHECK(span_bytes(f.tensor_data(*f.find_tensor("q4_k"))) == mod251(288));
  CHECK(f.tensor_data(*f.find_tensor("empty")).empty());
  CHECK_THAT(error_of([&] { f.to_tensor(*f.find_tensor("q4_k"), cpu()); }),
             Contains("every_type_v3.gguf") && Contains("tensor 'q4_k'") && Contains("Q4_K") &&
                 Contains("quantized"));
  // Copies share the mapping: the bytes stay readable through a copy that outlives the original.
  std::optional<gguf::GgufFile> copy;
  {
    const gguf::GgufFile original(kDir + "every_type_v3.gguf");
    copy.emplace(original);
  }
  CHECK(span_bytes(copy->tensor_data(*copy->find_tensor("q8_0"))) == mod251(68));
  gguf::TensorInfo foreign = *f.find_tensor("q4_k");
  foreign.offset = 4096;
  CHECK_THAT(error_of([&] { f.tensor_data(foreign); }), Contains("does not lie in this file"));
}

TEST_CASE("gguf: quantized tensors become QTensors of their blocks, which dequantize by ggml's rules") {
  const gguf::GgufFile f(kDir + "every_type_v3.gguf");
  // q8_0: 68 bytes, 0, 1, ..., 67: two blocks of an f16 scale and 32 int8 weights.
  const quant::QTensor q = f.to_qtensor(*f.find_tensor("q8_0"), cpu());
  CHECK(q.type() == quant::Type::Q8_0);
  CHECK(q.shape() == Shape{64});
  CHECK(q.data().to_vector<uint8_t>() == mod251(68));
  // The scales as hand-decoded halves: bits 0x0100 (a subnormal, 256 x 2^-24) and 0x2322
  // (exponent 8 - 15, mantissa 0x322: (1 + 802 / 1024) x 2^-7).
  const double d0 = 256.0 * std::ldexp(1.0, -24), d1 = (1.0 + 802.0 / 1024.0) * std::ldexp(1.0, -7);
  const std::vector<float> v = quant::dequantize(q).to_vector<float>();
  REQUIRE(v.size() == 64);
  for (int i = 0; i < 32; ++i) {
    CHECK(v[size_t(i)] == static_cast<float>(d0 * static_cast<int8_t>(2 + i)));
    CHECK(v[size_t(32 + i)] == static_cast<float>(d1 * static_cast<int8_t>(36 + i)));
  }
  CHECK(f.to_qtensor(*f.find_tensor("q4_k"), cpu()).shape() == Shape{2, 256});
  CHECK_THAT(error_of([&] { f.to_qtensor(*f.find_tensor("f32"), cpu()); }),
             Contains("tensor 'f32'") && Contains("not a quantized type: to_tensor() reads it"));
}

TEST_CASE("gguf: plain tensors become Wick tensors in Wick's axis order") {
  const gguf::GgufFile f(kDir + "every_type_v3.gguf");
  const auto get = [&](const char* name) { return f.to_tensor(*f.find_tensor(name), cpu()); };
  const Tensor f32 = get("f32");
  CHECK(f32.dtype() == DType::F32);
  CHECK(f32.shape() == Shape{2, 3});
  CHECK(f32.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  const std::vector<f16> h = get("f16").to_vector<f16>();
  CHECK(std::vector<float>(h.begin(), h.end()) == std::vector<float>{0, 0.5f, 1, 1.5f});
  const Tensor b = get("bf16");
  CHECK(b.shape() == Shape{2, 3});
  const std::vector<bf16> bv = b.to_vector<bf16>();
  CHECK(std::vector<float>(bv.begin(), bv.end()) == std::vector<float>{1, -2, 0.5f, 3, -0.25f, 8});
  CHECK(get("f64").to_vector<double>() == std::vector<double>{0.1, -1e300});
  CHECK(get("i8").to_vector<int8_t>() == std::vector<int8_t>{-128, 127, -1});
  const Tensor i16 = get("i16");
  CHECK(i16.shape() == Shape{2, 1});
  CHECK(i16.to_vector<int16_t>() == std::vector<int16_t>{-32768, 32767});
  const Tensor scalar = get("i32_scalar");
  CHECK(scalar.shape().empty());
  CHECK(scalar.item<int32_t>() == 7);
  CHECK(get("i64").to_vector<int64_t>() ==
        std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                             std::numeric_limits<int64_t>::max()});
  CHECK(get("empty").shape() == Shape{0, 3});
}

TEST_CASE("gguf: version 2 with general.alignment 64 aligns the data section and every tensor") {
  const gguf::GgufFile f(kDir + "aligned64_v2.gguf");
  CHECK(f.version() == 2);
  CHECK(f.alignment() == 64);
  CHECK(f.get<uint32_t>("general.alignment") == 64);
  CHECK(f.data_offset() == 256);
  REQUIRE(f.tensors().size() == 3);
  CHECK(f.tensors()[0].offset == 0);
  CHECK(f.tensors()[1].offset == 64);
  CHECK(f.tensors()[2].offset == 128);
  CHECK(f.to_tensor(f.tensors()[0], cpu()).to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(span_bytes(f.tensor_data(f.tensors()[1])) == mod251(34));
  const std::vector<f16> c = f.to_tensor(f.tensors()[2], cpu()).to_vector<f16>();
  CHECK(std::vector<float>(c.begin(), c.end()) == std::vector<float>{0, 1, 2, 3, 4});
}

// ---- refusals -----------------------------------------------------------------------------------

TEST_CASE("gguf: a missing file or a directory is an error naming it") {
  CHECK_THAT(error_of([] { gguf::GgufFile f(kDir + "missing.gguf"); }),
             Contains(kDir + "missing.gguf"));
  CHECK_THAT(error_of([] { gguf::GgufFile f(kDir); }), Contains(kDir));
}

TEST_CASE("gguf: every truncation of a file is an error until its last tensor's bytes are whole") {
  // Where the last tensor's bytes end (the package's numbers): the rest is padding.
  const std::vector<std::pair<std::string, size_t>> files = {{"every_type_v3.gguf", 2496},
                                                             {"writer_reference.gguf", 884}};
  for (const auto& [name, data_end] : files) {
    const std::string bytes = read_bytes(kDir + name);
    for (size_t n = 0; n < bytes.size(); ++n) {
      INFO(name << " cut to " << n << " bytes");
      const std::string cut = bytes.substr(0, n);
      if (n < data_end)
        CHECK_THAT(parse_error(cut), Contains("bad.gguf: "));
      else
        CHECK(parse_error(cut).empty());
    }
  }
  CHECK_THAT(parse_error(""), Contains("bad.gguf: the header: truncated: the magic"));
  CHECK_THAT(
      parse_error(read_bytes(kDir + "every_type_v3.gguf").substr(0, 40)),
      Contains("the header: it counts 32 metadata entries and 11 tensors, more than the 16"));
}

TEST_CASE("gguf: bad magic, version 1, unknown versions and big-endian files are refused") {
  CHECK_THAT(parse_error("GGML" + std::string(20, '\0')),
             Contains("bad.gguf") && Contains("not a GGUF file: it starts with 'GGML'"));
  CHECK_THAT(parse_error(Bytes().header(0, 0, 1).b),
             Contains("bad.gguf") && Contains("GGUF version 1 is not supported"));
  CHECK_THAT(parse_error(Bytes().header(0, 0, 4).b),
             Contains("bad.gguf") && Contains("GGUF version 4 is not supported"));
  const std::string path = kDir + "big_endian.gguf";
  CHECK_THAT(error_of([&] { gguf::GgufFile f(path); }),
             Contains(path) && Contains("big-endian") && Contains("version 3 byte-swapped"));
  CHECK(parse_error(Bytes().header(0, 0, 2).b).empty());
}

TEST_CASE("gguf: counts larger than the file can hold are refused before any allocation") {
  CHECK_THAT(parse_error(Bytes().header(std::numeric_limits<uint64_t>::max(), 0).b),
             Contains("18446744073709551615 tensors, more than the 0 bytes"));
  CHECK_THAT(parse_error(Bytes().header(0, uint64_t{1} << 60).b),
             Contains("1152921504606846976 metadata entries"));
  Bytes array;
  array.header(0, 1).key("big", ValueType::Array).u32(4).u64(uint64_t{1} << 62);
  CHECK_THAT(parse_error(array.b), Contains("metadata key 'big'") &&
                                       Contains("an array of 4611686018427387904 uint32 items"));
  Bytes str;
  str.header(0, 1).key("s", ValueType::String).u64(std::numeric_limits<uint64_t>::max());
  CHECK_THAT(parse_error(str.b), Contains("metadata key 's': truncated: a string needs"));
  Bytes key;
  key.header(0, 1).u64(uint64_t{1} << 63).u64(0);
  CHECK_THAT(parse_error(key.b), Contains("metadata entry #0: truncated: its key needs"));
}

TEST_CASE("gguf: bad metadata names the key") {
  Bytes unknown;
  unknown.header(0, 1).key("k.unknown", static_cast<ValueType>(13)).u64(0);
  CHECK_THAT(parse_error(unknown.b), Contains("metadata key 'k.unknown': unknown value type 13"));
  Bytes item;
  item.header(0, 1).key("k.items", ValueType::Array).u32(99).u64(0).u64(0);
  CHECK_THAT(parse_error(item.b), Contains("metadata key 'k.items': unknown value type 99"));
  Bytes dup;
  dup.header(0, 2).key("k.a", ValueType::UInt8).put<uint8_t>(1);
  dup.key("k.a", ValueType::UInt8).put<uint8_t>(2);
  CHECK_THAT(parse_error(dup.b), Contains("metadata key 'k.a': appears twice (entries #0 and #1)"));
  Bytes boolean;
  boolean.header(0, 1).key("k.flag", ValueType::Bool).put<uint8_t>(2).u64(0);
  CHECK_THAT(parse_error(boolean.b), Contains("metadata key 'k.flag': a bool holds 2"));
  Bytes empty;
  empty.header(0, 1).key("", ValueType::UInt8).put<uint8_t>(0).u64(0);
  CHECK_THAT(parse_error(empty.b), Contains("metadata entry #0: an empty key"));
  Bytes control;
  control.header(0, 1).key("k\n", static_cast<ValueType>(77)).u64(0);
  CHECK_THAT(parse_error(control.b), Contains("metadata key 'k\\x0a'"));
  Bytes deep;
  deep.header(0, 1).key("k.deep", ValueType::Array);
  for (int i = 0; i < gguf::kMaxArrayDepth; ++i) deep.u32(9).u64(1);
  deep.u32(0).u64(0);
  CHECK_THAT(parse_error(deep.b), Contains("metadata key 'k.deep': arrays nested deeper than 16"));
}

TEST_CASE("gguf: general.alignment must be a uint32 power of two") {
  const auto with = [](const std::function<void(Bytes&)>& value) {
    Bytes b;
    b.header(0, 1);
    value(b);
    return parse_error(b.b);
  };
  CHECK_THAT(with([](Bytes& b) { b.key("general.alignment", ValueType::String).str("32"); }),
             Contains("'general.alignment' is of type string; it must be uint32"));
  CHECK_THAT(with([](Bytes& b) { b.key("general.alignment", ValueType::UInt32).u32(0); }),
             Contains("'general.alignment' is 0; it must be a power of two"));
  CHECK_THAT(with([](Bytes& b) { b.key("general.alignment", ValueType::UInt32).u32(48); }),
             Contains("'general.alignment' is 48; it must be a power of two"));
  CHECK(with([](Bytes& b) { b.key("general.alignment", ValueType::UInt32).u32(8); }).empty());
}

TEST_CASE("gguf: bad tensor infos name the tensor") {
  const auto one = [](const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                      uint64_t offset = 0, size_t data = 64) {
    Bytes b;
    b.header(1, 0).tensor(name, std::move(ne), type, offset).data(data);
    return parse_error(b.b);
  };
  CHECK(one("ok", {16}, 0).empty());
  CHECK_THAT(
      one("w.unaligned", {4}, 0, 8),
      Contains("tensor 'w.unaligned': its data offset 8 is not a multiple of the alignment 32"));
  CHECK_THAT(one("w.type", {4}, 36), Contains("tensor 'w.type': unknown ggml type number 36"));
  CHECK_THAT(one("w.retired", {32}, 4), Contains("tensor 'w.retired': unknown ggml type number 4"));
  CHECK_THAT(one("w.dims", {1, 1, 1, 1, 1}, 0), Contains("tensor 'w.dims': has 5 dimensions"));
  CHECK_THAT(one("w.overflow", {uint64_t{1} << 32, uint64_t{1} << 32}, 0),
             Contains("tensor 'w.overflow': its dimensions ne = [4294967296, 4294967296] hold "
                      "more than 2^63 - 1 elements"));
  CHECK_THAT(one("w.big_dim", {uint64_t{1} << 63}, 0),
             Contains("tensor 'w.big_dim': ne[0] is 9223372036854775808, past 2^63 - 1"));
  CHECK_THAT(one("w.bytes", {uint64_t{1} << 62}, 28),
             Contains("tensor 'w.bytes': 4611686018427387904 elements of F64 take more than 2^64"));
  CHECK_THAT(one("w.block", {33}, 8),
             Contains("tensor 'w.block': ne[0] = 33 is not a multiple of Q8_0's block size 32"));
  CHECK_THAT(one("w.past", {32}, 0, 0, 100),
             Contains("tensor 'w.past': its 128 bytes at data offset 0") &&
                 Contains("run past the end of the file"));
  CHECK_THAT(one("w.far", {0}, 0, uint64_t{1} << 62),
             Contains("tensor 'w.far'") && Contains("run past the end of the file"));
  CHECK_THAT(one("", {1}, 0), Contains("tensor info #0: an empty tensor name"));
  CHECK_THAT(one(std::string(65, 'n'), {1}, 0),
             Contains("is 65 bytes long; GGUF allows at most 64"));
}

TEST_CASE("gguf: duplicate and overlapping tensors are refused naming both") {
  Bytes dup;
  dup.header(2, 0).tensor("w", {8}, 0, 0).tensor("w", {8}, 0, 32).data(64);
  CHECK_THAT(parse_error(dup.b), Contains("tensor 'w': appears twice (tensor infos #0 and #1)"));
  Bytes overlap;  // a: data bytes [0, 64); b: [32, 64)
  overlap.header(2, 0).tensor("b", {8}, 0, 32).tensor("a", {16}, 0, 0).data(64);
  CHECK_THAT(parse_error(overlap.b),
             Contains("tensor 'b': its bytes [32, 64) of the data section overlap those of "
                      "tensor 'a', [0, 64)"));
  Bytes nested;  // c: [0, 128) holds d: [64, 96) after e: [32, 64) ends
  nested.header(3, 0).tensor("c", {32}, 0, 0).tensor("e", {8}, 0, 32).tensor("d", {8}, 0, 64);
  nested.data(128);
  CHECK_THAT(parse_error(nested.b), Contains("overlap those of tensor 'c'"));
  Bytes shared_empty;  // empty tensors share any offset
  shared_empty.header(2, 0).tensor("x", {0}, 0, 0).tensor("y", {4}, 0, 0).data(16);
  CHECK(parse_error(shared_empty.b).empty());
}

// ---- writing
// -------------------------------------------------------------------------------------

TEST_CASE("gguf: the writer's bytes equal the gguf package's for the same metadata and tensors") {
  // The inputs of writer_reference() in make_fixtures.py.
  const std::vector<gguf::KeyValue> metadata = {
      {"general.architecture", "wicktest"},
      {"ref.uint8", uint8_t{200}},
      {"ref.int8", int8_t{-100}},
      {"ref.uint16", uint16_t{60000}},
      {"ref.int16", int16_t{-30000}},
      {"ref.uint32", uint32_t{4000000000u}},
      {"ref.int32", int32_t{-2000000000}},
      {"ref.float32", 0.75f},
      {"ref.bool", true},
      {"ref.string", "reference"},
      {"ref.uint64", uint64_t{(uint64_t{1} << 40) + 1}},
      {"ref.int64", int64_t{-(int64_t{1} << 40) - 1}},
      {"ref.float64", -0.125},
      {"ref.tokens", Value::array(std::vector<std::string>{"<s>", "</s>", "hello"})},
      {"ref.scores", Value::array(std::vector<float>{0.0f, -1.5f, 2.25f})},
      {"ref.nested", Value::array(ValueType::Array, {Value::array(std::vector<int32_t>{1, 2}),
                                                     Value::array(std::vector<int32_t>{3})})},
  };
  const std::vector<float> weight = {0, 1, 2, 3, 4, 5};
  const std::vector<uint16_t> bias = {0x0000, 0x3C00, 0x4000};  // f16 0, 1, 2
  const std::vector<uint8_t> blocks = mod251(34);
  const std::vector<int32_t> ids = {5, -6, 7, -8, 9};
  const auto bytes_of = [](const auto& v) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                    v.size() * sizeof(v[0]));
  };
  const std::vector<gguf::TensorToWrite> tensors = {
      {"weight", GType::F32, {2, 3}, bytes_of(weight)},
      {"bias", GType::F16, {3}, bytes_of(bias)},
      {"blocks", GType::Q8_0, {32}, bytes_of(blocks)},
      {"ids", GType::I32, {5}, bytes_of(ids)},
  };
  const std::string reference = read_bytes(kDir + "writer_reference.gguf");
  REQUIRE(reference.size() == 896);
  CHECK(gguf::write_bytes(metadata, tensors) == reference);

  TempDir dir;
  gguf::write(dir / "out.gguf", metadata, tensors);
  CHECK(read_bytes(dir / "out.gguf") == reference);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
  const gguf::GgufFile back(dir / "out.gguf");
  CHECK(back.get<std::vector<std::string>>("ref.tokens") ==
        std::vector<std::string>{"<s>", "</s>", "hello"});
  CHECK(back.to_tensor(*back.find_tensor("weight"), cpu()).shape() == Shape{3, 2});
}

TEST_CASE("gguf: rewriting a parsed file reproduces the package's file byte for byte") {
  for (const char* name : {"every_type_v3.gguf", "aligned64_v2.gguf"}) {
    INFO(name);
    const gguf::GgufFile f(kDir + name);
    std::vector<gguf::TensorToWrite> tensors;
    for (const gguf::TensorInfo& t : f.tensors())
      tensors.push_back({t.name, t.type, t.ne, f.tensor_data(t)});
    std::string expected = read_bytes(kDir + name);
    expected[4] = '\x03';  // Wick writes version 3
    const std::string written = gguf::write_bytes(f.metadata(), tensors);
    CHECK(written == expected);
    const gguf::GgufFile again = gguf::parse(written.data(), written.size());
    REQUIRE(again.metadata().size() == f.metadata().size());
    for (size_t i = 0; i < f.metadata().size(); ++i) {
      CHECK(again.metadata()[i].key == f.metadata()[i].key);
      CHECK(again.metadata()[i].value == f.metadata()[i].value);
    }
  }
}

TEST_CASE("gguf: a file with no tensors and no metadata round-trips") {
  const std::string bytes = gguf::write_bytes({}, {});
  CHECK(bytes == Bytes().header(0, 0).data(0).b);
  const gguf::GgufFile f = gguf::parse(bytes.data(), bytes.size());
  CHECK(f.metadata().empty());
  CHECK(f.tensors().empty());
  CHECK(f.data_offset() == 32);
  const std::string unpadded = bytes.substr(0, 24);  // writers may leave the padding out
  CHECK(gguf::parse(unpadded.data(), unpadded.size()).data_offset() == 32);
}

TEST_CASE("gguf: the writer refuses what the reader would, naming the key or tensor") {
  const std::vector<uint8_t> four(4);
  const auto tensor = [&](std::string name, std::vector<uint64_t> ne, GType type = GType::F32) {
    return gguf::TensorToWrite{std::move(name), type, std::move(ne), four};
  };
  const auto refusal = [](std::vector<gguf::KeyValue> md, std::vector<gguf::TensorToWrite> ts) {
    return error_of([&] { gguf::write("/nonexistent-dir/x.gguf", md, ts); });
  };
  CHECK_THAT(refusal({{"a", 1}, {"a", 2}}, {}),
             Contains("/nonexistent-dir/x.gguf: metadata key 'a' is given twice"));
  CHECK_THAT(refusal({{"", 1}}, {}), Contains("a metadata key may not be empty"));
  CHECK_THAT(refusal({{"general.alignment", 24u}}, {}),
             Contains("'general.alignment' is 24; it must be a power of two"));
  CHECK_THAT(refusal({{"general.alignment", 32}}, {}),
             Contains("'general.alignment' is of type int32; it must be uint32"));
  gguf::Array mixed{ValueType::Int32, {Value(int32_t{1}), Value("two")}};
  CHECK_THAT(refusal({{"k.mixed", Value(mixed)}}, {}),
             Contains("metadata key 'k.mixed': item 1 of an array of int32 is of type string"));
  CHECK_THAT(refusal({}, {tensor("w", {1}), tensor("w", {1})}),
             Contains("tensor 'w' is given twice"));
  CHECK_THAT(refusal({}, {tensor("w", {2})}),
             Contains("tensor 'w': 4 bytes given, its type and dimensions take 8"));
  CHECK_THAT(refusal({}, {tensor("w", {1, 1, 1, 1, 1})}), Contains("tensor 'w': has 5 dimensions"));
  CHECK_THAT(refusal({}, {tensor("w", {1}, static_cast<GType>(5))}),
             Contains("tensor 'w': unknown ggml type number 5"));
  CHECK_THAT(refusal({}, {tensor("w", {8}, GType::Q8_0)}),
             Contains("tensor 'w': ne[0] = 8 is not a multiple of Q8_0's block size 32"));
  CHECK_THAT(refusal({}, {tensor(std::string(65, 'n'), {1})}), Contains("GGUF allows at most 64"));
  CHECK_THAT(refusal({}, {tensor("", {1})}), Contains("a tensor name may not be empty"));
  CHECK_THAT(refusal({}, {tensor("w", {1})}), Contains("/nonexistent-dir/x.gguf: cannot create"));
  CHECK_THAT(error_of([] { Value::array(ValueType::UInt8, {Value(1)}); }),
             Contains("an array of uint8 cannot hold item 0, of type int32"));
}

TEST_CASE("gguf: write replaces an existing file whole, with alignment 64 honoured") {
  TempDir dir;
  const std::string path = dir / "model.gguf";
  { std::ofstream(path) << "old contents"; }
  const std::vector<float> data = {1, 2, 3};
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(data.data()), 12);
  gguf::write(path,
              {{"general.alignment", uint32_t{64}}, {"k.empty", Value::array(ValueType::Bool, {})}},
              {{"a", GType::F32, {3}, bytes}, {"b", GType::F32, {3}, bytes}});
  const gguf::GgufFile f(path);
  CHECK(f.alignment() == 64);
  CHECK(f.data_offset() % 64 == 0);
  CHECK(f.tensors()[1].offset == 64);
  CHECK(f.to_tensor(f.tensors()[1], cpu()).to_vector<float>() == data);
  CHECK(f.find("k.empty")->array().items.empty());
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
  // A refused write leaves the file as it was, and no temporary beside it.
  const std::string before = read_bytes(path);
  CHECK_THAT(error_of([&] {
               gguf::write(path, {{"k", 1}, {"k", 2}}, {});
             }),
             Contains(path + ": metadata key 'k' is given twice"));
  CHECK(read_bytes(path) == before);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}
