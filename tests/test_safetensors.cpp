// safetensors: the fixtures of tests/data/make_safetensors_fixtures.py (values stated here as the
// script computes them), round trips of every dtype and of strided views, state-dict checks, and
// corrupt files, each a wick::Error naming the file, the tensor and the problem.
#include "test_support.hpp"

#include <wick/safetensors.hpp>

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

using namespace wick;
using wick::test::cpu;
namespace fs = std::filesystem;
namespace st = wick::safetensors;

namespace {

const std::string kDir = std::string(WICK_TEST_DATA_DIR) + "/safetensors/";

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A scratch directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("wick-test-safetensors-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::vector<uint8_t> host_bytes(const Tensor& t) {
  std::vector<uint8_t> b(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  t.copy_to_host(b.data(), b.size());
  return b;
}

// The C-order bytes of a strided view of `base` (contiguous, bytes `raw`), gathered on the host from
// the view's shape, strides and offset: independent of the device's copy kernels.
std::vector<uint8_t> gather(const std::vector<uint8_t>& raw, const Tensor& view) {
  const size_t es = dtype_size(view.dtype());
  std::vector<uint8_t> out;
  std::vector<int64_t> idx(view.shape().size(), 0);
  for (int64_t n = 0; n < view.numel(); ++n) {
    int64_t off = view.offset();
    for (size_t a = 0; a < idx.size(); ++a) off += idx[a] * view.strides()[a];
    out.insert(out.end(), raw.begin() + off * static_cast<int64_t>(es),
               raw.begin() + (off + 1) * static_cast<int64_t>(es));
    for (size_t a = idx.size(); a-- > 0;) {
      if (++idx[a] < view.shape()[a]) break;
      idx[a] = 0;
    }
  }
  return out;
}

// 24 elements of `dtype` from a fixed byte pattern (bool: 0/1).
Tensor pattern(DType dtype) {
  const size_t es = dtype_size(dtype);
  std::vector<uint8_t> b(24 * es);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = dtype == DType::Bool ? static_cast<uint8_t>((i * 7) % 3 == 0)
                                : static_cast<uint8_t>((i * 37 + 11) % 251);
  return Tensor::from_bytes(b.data(), b.size(), {2, 3, 4}, dtype, cpu());
}

// A file of the given header bytes (no data): the 8-byte length, then `header` as it is.
std::string with_header(const std::string& header) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
  return out + header;
}

// A file of n zero-size tensors "t<i>": F32 of shape [0] for even i, I64 of shape [0, i % 5] for
// odd i, all at data_offsets [0, 0]; the JSON without spaces, then padded to 8 bytes.
std::string many_tensors(size_t n) {
  std::string json = "{";
  for (size_t i = 0; i < n; ++i) {
    json += "\"t";
    json += std::to_string(i);
    json += "\":";
    json += i % 2 ? "{\"dtype\":\"I64\",\"shape\":[0," + std::to_string(i % 5) + "],"
                  : std::string("{\"dtype\":\"F32\",\"shape\":[0],");
    json += "\"data_offsets\":[0,0]},";
  }
  json.back() = '}';
  json.append((8 - json.size() % 8) % 8, ' ');
  return with_header(json);
}

// The message of the wick::Error that parsing `bytes` raises ("" when it parses).
std::string parse_error(const std::string& bytes, const std::string& source) {
  try {
    st::parse(bytes.data(), bytes.size(), source);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                            DType::I16, DType::I8,  DType::U8,  DType::U64,  DType::U32, DType::Bool};

}  // namespace

TEST_CASE("the fixture's tensors load with the values, shapes and dtypes the script wrote",
          "[safetensors]") {
  const st::File f = st::load(kDir + "valid.safetensors", cpu());
  CHECK(f.tensors.size() == 15);
  CHECK(f.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"source", "wick-fixture"}});
  const auto& t = f.tensors;
  CHECK(t.at("f64").to_vector<double>() == std::vector<double>{0.1, -2.5, 1e300});
  CHECK(t.at("f32").shape() == Shape{2, 3});
  CHECK(t.at("f32").to_vector<float>() == std::vector<float>{-1, -0.5f, 0, 0.5f, 1, 1.5f});
  const auto f16 = t.at("f16").to_vector<wick::f16>();
  CHECK(std::vector<float>(f16.begin(), f16.end()) == std::vector<float>{1, -2, 0.5f, 65504});
  const auto bf16 = t.at("bf16").to_vector<wick::bf16>();
  CHECK(std::vector<float>(bf16.begin(), bf16.end()) == std::vector<float>{1, -3, 0.15625f});
  CHECK(t.at("i64").to_vector<int64_t>() ==
        std::vector<int64_t>{std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 0, 42});
  CHECK(t.at("i32").shape() == Shape{3, 1, 2});
  CHECK(t.at("i32").to_vector<int32_t>() == std::vector<int32_t>{-3, -2, -1, 0, 1, 2});
  CHECK(t.at("i16").to_vector<int16_t>() == std::vector<int16_t>{-32768, 32767});
  CHECK(t.at("i8").to_vector<int8_t>() == std::vector<int8_t>{-128, 127, -1});
  CHECK(t.at("u8").to_vector<uint8_t>() == std::vector<uint8_t>{0, 255, 7, 8});
  CHECK(t.at("u64").to_vector<uint64_t>() ==
        std::vector<uint64_t>{std::numeric_limits<uint64_t>::max(), 1});
  CHECK(t.at("u32").to_vector<uint32_t>() == std::vector<uint32_t>{4294967295u});
  CHECK(t.at("bool").to_vector<bool>() == std::vector<bool>{true, false, true, true, false});
  CHECK(t.at("scalar").shape() == Shape{});
  CHECK(t.at("scalar").item<float>() == 3.25f);
  CHECK(t.at("empty").shape() == Shape{0, 3});
  CHECK(t.at("nested.layer.weight").to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  for (const auto& [name, tensor] : t) CHECK(tensor.device() == cpu());
}

TEST_CASE("every dtype, contiguous or strided, survives save then load", "[safetensors]") {
  TempDir dir;
  for (DType dtype : kAllDTypes) {
    INFO(dtype_name(dtype));
    const Tensor base = pattern(dtype);
    const std::vector<uint8_t> raw = host_bytes(base);
    const std::map<std::string, Tensor> views = {
        {"base", base},
        {"permuted", base.permute({2, 0, 1})},
        {"stepped_flipped", base.slice(2, std::nullopt, std::nullopt, 2).flip(1)},
        {"broadcast", base.narrow(0, 1, 1).broadcast_to({3, 3, 4})},
        {"scalar", base.reshape({24}).narrow(0, 5, 1).reshape({})},
        {"empty", base.narrow(1, 0, 0)},
    };
    st::save(dir / "rt.safetensors", views, {{"dtype", dtype_name(dtype)}});
    const st::File back = st::load(dir / "rt.safetensors", cpu());
    CHECK(back.metadata.at("dtype") == dtype_name(dtype));
    REQUIRE(back.tensors.size() == views.size());
    for (const auto& [name, view] : views) {
      INFO(name);
      const Tensor& got = back.tensors.at(name);
      CHECK(got.dtype() == dtype);
      CHECK(got.shape() == view.shape());
      CHECK(host_bytes(got) == gather(raw, view));
    }
    // What save writes is what save_bytes gives, and it loads from memory too.
    const std::string bytes = st::save_bytes(views, {{"dtype", dtype_name(dtype)}});
    CHECK(read_bytes(dir / "rt.safetensors") == bytes);
    CHECK(st::load_bytes(bytes.data(), bytes.size(), cpu()).tensors.size() == views.size());
  }
}

TEST_CASE("load copies onto every built device, and save reads back from it", "[safetensors][devices]") {
  const st::File host = st::load(kDir + "valid.safetensors", cpu());
  TempDir dir;
  for (const Device& d : test::built_runtime().registry().devices()) {
    INFO(d.name());
    const st::File f = st::load(kDir + "valid.safetensors", d);
    REQUIRE(f.tensors.size() == host.tensors.size());
    std::map<std::string, Tensor> views;
    for (const auto& [name, t] : f.tensors) {
      INFO(name);
      CHECK(t.device() == d);
      CHECK(host_bytes(t) == host_bytes(host.tensors.at(name)));
      if (t.rank() == 2) views[name + ".t"] = t.t();  // a strided view on the device
    }
    st::save(dir / "from_device.safetensors", views);
    const st::File back = st::load(dir / "from_device.safetensors", cpu());
    REQUIRE(back.tensors.size() == views.size());
    for (const auto& [name, v] : views) {
      INFO(name);
      const Tensor& h = host.tensors.at(name.substr(0, name.size() - 2));
      CHECK(host_bytes(back.tensors.at(name)) == gather(host_bytes(h), h.t()));
    }
  }
}

TEST_CASE("save pads the header to 8 bytes and aligns every tensor to its element size",
          "[safetensors]") {
  std::map<std::string, Tensor> tensors;
  for (DType dtype : kAllDTypes) tensors[std::string("t_") + dtype_name(dtype)] = pattern(dtype);
  const std::string bytes = st::save_bytes(tensors);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
  CHECK(bytes[8] == '{');
  CHECK(bytes[8 + n - 1] != '\0');
  const st::Header h = st::parse(bytes.data(), bytes.size());
  CHECK(h.data_start == 8 + n);
  for (const st::Entry& e : h.entries) {
    INFO(e.name);
    CHECK(e.begin % dtype_size(e.dtype) == 0);
  }
}

TEST_CASE("the fixture survives load, save and load again", "[safetensors]") {
  TempDir dir;
  const st::File a = st::load(kDir + "valid.safetensors", cpu());
  st::save(dir / "again.safetensors", a.tensors, a.metadata);
  const st::File b = st::load(dir / "again.safetensors", cpu());
  CHECK(b.metadata == a.metadata);
  REQUIRE(b.tensors.size() == a.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    INFO(name);
    CHECK(b.tensors.at(name).shape() == t.shape());
    CHECK(host_bytes(b.tensors.at(name)) == host_bytes(t));
  }
}

TEST_CASE("save replaces a file whole and leaves no temporary behind", "[safetensors]") {
  TempDir dir;
  const std::string path = dir / "w.safetensors";
  st::save(path, {{"a", Tensor::from_vector<float>({1, 2}, cpu())}});
  st::save(path, {{"b", Tensor::from_vector<int32_t>({7}, cpu())}});
  const st::File f = st::load(path, cpu());
  CHECK(f.tensors.size() == 1);
  CHECK(f.tensors.at("b").to_vector<int32_t>() == std::vector<int32_t>{7});
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);

  // A failure before writing leaves the old file as it was.
  CHECK_THROWS_WITH(st::save(path, {{"x", Tensor()}}), Catch::Contains("tensor 'x' is undefined"));
  CHECK_THROWS_WITH(st::save(path, {{"__metadata__", Tensor::scalar(1.0f, cpu())}}),
                    Catch::Contains("may not be named '__metadata__'"));
  CHECK_THROWS_WITH(st::save(path, {{"bad\xff", Tensor::scalar(1.0f, cpu())}}),
                    Catch::Contains("not valid UTF-8"));
  CHECK(st::load(path, cpu()).tensors.count("b") == 1);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
  CHECK_THROWS_WITH(st::save(dir / "no/such/dir/w.safetensors", {}),
                    Catch::Contains("no/such/dir/w.safetensors: cannot create a temporary file"));
}

TEST_CASE("a directory, a FIFO or a missing file is refused with its path", "[safetensors]") {
  TempDir dir;
  CHECK_THROWS_WITH(st::load(dir.path.string(), cpu()), Catch::Contains("is a directory"));
  const std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(st::load(fifo, cpu()), Catch::Contains(fifo + ": is not a regular file"));
  CHECK_THROWS_WITH(st::load(dir / "missing", cpu()), Catch::Contains("missing: cannot stat"));
  std::ofstream(dir / "empty").close();
  CHECK_THROWS_WITH(st::load(dir / "empty", cpu()), Catch::Contains("is 0 bytes, too short"));
}

TEST_CASE("each corrupt fixture is a wick::Error naming the file, the tensor and the problem",
          "[safetensors]") {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"too_short", {"is 3 bytes, too short"}},
      {"header_too_big", {"header length 1099511627776 is more than the 100000000 bytes allowed"}},
      {"header_past_end", {"header length 1000 is more than the 8 bytes that follow it"}},
      {"truncated", {"tensor 'nested.layer.weight'", "reach past the data buffer"}},
      {"bad_json", {"header is not valid JSON"}},
      {"not_object", {"header does not start with '{'"}},
      {"offsets_out_of_range", {"tensor 'weight'", "[0, 400] reach past the data buffer's 16 bytes"}},
      {"offsets_reversed", {"tensor 'weight'", "[16, 0] end before they begin"}},
      {"overlap", {"tensor 'beta'", "bytes [8, 24) overlap tensor 'alpha' [0, 16)"}},
      {"hole", {"tensor 'beta'", "bytes [4, 8) before it belong to no tensor"}},
      {"trailing", {"the last 4 bytes of the data buffer belong to no tensor"}},
      {"shape_bytes", {"tensor 'weight'", "shape [2, 3] of F32 needs 24 bytes", "hold 20"}},
      {"unknown_dtype", {"tensor 'weight'", "unknown dtype \"Q7\"", "supported: F64 F32"}},
      {"f8_dtype", {"tensor 'weight'", "dtype F8_E4M3 is not supported by Wick"}},
      {"negative_dim", {"tensor 'weight'", "shape value -2 is negative"}},
      {"huge_dims", {"tensor 'weight'", "[1099511627776, 1099511627776] has more than 2^63 - 1 elements"}},
      {"dim_too_large", {"tensor 'weight'", "18446744073709551615 is larger than 2^63 - 1"}},
      {"float_dim", {"tensor 'weight'", "shape value 2.5 is not an integer"}},
      {"missing_offsets", {"tensor 'weight'", "has no data_offsets"}},
      {"unknown_field", {"tensor 'weight'", "unknown field 'scale'"}},
      {"bool_value", {"tensor 'mask'", "BOOL element 1 is 2, not 0 or 1"}},
      {"metadata", {"__metadata__ 'epoch' is 3, not a string"}},
      {"duplicate", {"header has the key 'weight' twice"}},
      {"deep", {"nests objects or arrays deeper"}},
  };
  for (const auto& [name, parts] : cases) {
    const std::string path = kDir + "corrupt_" + name + ".safetensors";
    INFO(path);
    try {
      st::load(path, cpu());
      FAIL("no error");
    } catch (const Error& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.rfind(path + ": ", 0) == 0);
      for (const std::string& p : parts) CHECK(msg.find(p) != std::string::npos);
    }
  }
}

TEST_CASE("a state dict is checked against the expected parameters in one message",
          "[safetensors][state_dict]") {
  const std::string path = kDir + "valid.safetensors";
  const auto zeros = [](const Shape& s, DType d) { return Tensor::zeros(s, d, cpu()); };
  const std::map<std::string, Tensor> expected = {
      {"f32", zeros({2, 3}, DType::F32)},
      {"u8", zeros({2, 2}, DType::F32)},             // dtype differs
      {"i32", zeros({3, 2}, DType::I32)},            // shape differs
      {"fc.weight", zeros({10, 784}, DType::F32)},   // not in the file
      {"fc.bias", zeros({10}, DType::F32)},          // not in the file
  };
  std::string msg;
  try {
    st::load_state_dict(path, expected, cpu());
  } catch (const Error& e) {
    msg = e.what();
  }
  INFO(msg);
  CHECK(msg.rfind(path + ": the tensors do not match the expected parameters:", 0) == 0);
  CHECK(msg.find("missing (2): fc.bias, fc.weight") != std::string::npos);
  CHECK(msg.find("extra (12): bf16, bool, empty, f16, f64, i16, i64, i8, nested.layer.weight, "
                 "scalar, u32, u64") != std::string::npos);
  CHECK(msg.find("mismatched (2): i32: expected [3, 2] i32, found [3, 1, 2] i32; "
                 "u8: expected [2, 2] f32, found [2, 2] u8") != std::string::npos);

  // Extras allowed: only the mismatches and the missing remain.
  try {
    st::load_state_dict(path, expected, cpu(), /*allow_extra=*/true);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("extra") == std::string::npos);
  }

  const std::map<std::string, Tensor> good = {{"f32", zeros({2, 3}, DType::F32)},
                                              {"u8", zeros({2, 2}, DType::U8)}};
  const auto loaded = st::load_state_dict(path, good, Device(), /*allow_extra=*/true);
  CHECK(loaded.size() == 2);
  CHECK(loaded.at("u8").to_vector<uint8_t>() == std::vector<uint8_t>{0, 255, 7, 8});
  CHECK(loaded.at("f32").device() == cpu());  // the expected tensor's device
  CHECK_THROWS_WITH(st::load_state_dict(path, good, cpu()), Catch::Contains("extra (13)"));

  // The same check between two maps of tensors.
  CHECK_NOTHROW(st::check_state_dict(good, good, "model"));
  CHECK_THROWS_WITH(st::check_state_dict(good, {{"f32", zeros({2, 3}, DType::F32)}}, "model"),
                    Catch::Contains("model: the tensors do not match") && Catch::Contains("missing (1): u8"));
}

TEST_CASE("mutated files never crash: each is loaded or refused with a wick::Error",
          "[safetensors][fuzz]") {
  const std::string valid = read_bytes(kDir + "valid.safetensors");
  REQUIRE(valid.size() > 100);
  uint64_t state = 12345;
  const auto next = [&] {  // a fixed LCG: the same mutations on every run
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  int loaded = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string b = valid;
    const uint64_t kind = next() % 4;
    if (kind == 0) {
      b.resize(next() % b.size());
    } else {
      for (uint64_t k = 0, n = 1 + next() % 4; k < n; ++k) {
        // Mostly the header, where the structure is.
        const size_t at = next() % 3 ? 8 + next() % (b.size() - 8) % 700 : next() % b.size();
        b[at] = kind == 1 ? static_cast<char>(b[at] ^ (1 << (next() % 8)))
                          : kind == 2 ? static_cast<char>(next()) : "0123456789[]{},\"-e."[next() % 19];
      }
    }
    try {
      st::load_bytes(b.data(), b.size(), cpu(), "mutant");
      ++loaded;
    } catch (const Error& e) {
      CHECK(std::string(e.what()).rfind("mutant: ", 0) == 0);
      ++refused;
    }
  }
  CHECK(loaded + refused == 3000);
  CHECK(refused > 1000);
}

TEST_CASE("a header of a million tensors parses in linear time, under 5 s", "[safetensors][slow]") {
  // Measured on the 2-core build machine, beside a sanitizer build: 100k entries parse in 0.15 to
  // 0.2 s and 1M (a 58 MB header) in 2.1 s, well under 5 s; the quadratic parser took 383 s for
  // 100k. Unoptimized (the sanitizer job, -O0) the bound is ten times longer.
#ifdef __OPTIMIZE__
  constexpr double kBoundSeconds = 5;
#else
  constexpr double kBoundSeconds = 50;
#endif
  const std::string small = many_tensors(10'000), big = many_tensors(1'000'000);
  REQUIRE(big.size() < 8 + st::kMaxHeaderBytes);
  const auto seconds = [](const std::string& bytes, size_t n, int tries) {
    st::Header h;
    const double s =
        test::fastest_seconds(tries, [&] { h = st::parse(bytes.data(), bytes.size(), "many"); });
    REQUIRE(h.entries.size() == n);
    return std::pair<double, st::Header>(s, h);
  };
  const double t_small = seconds(small, 10'000, 3).first;
  const auto [t_big, h] = seconds(big, 1'000'000, 1);
  INFO("10k tensors: " << t_small << " s, 1M tensors: " << t_big << " s");
  CHECK(test::linear_time(t_small, 10'000, t_big, 1'000'000));
  CHECK(t_big < kBoundSeconds);
  for (size_t i : {size_t{0}, size_t{1}, size_t{123'457}, size_t{500'000}, size_t{999'999}}) {
    std::string name = "t";  // appends: GCC 12 warns falsely on "t" + std::to_string(i)
    name += std::to_string(i);
    INFO(name);
    const auto it = std::find_if(h.entries.begin(), h.entries.end(),
                                 [&](const st::Entry& e) { return e.name == name; });
    REQUIRE(it != h.entries.end());
    CHECK(it->dtype == (i % 2 ? DType::I64 : DType::F32));
    CHECK(it->shape == (i % 2 ? Shape{0, static_cast<int64_t>(i % 5)} : Shape{0}));
    CHECK(it->begin == 0);
    CHECK(it->end == 0);
  }
}

TEST_CASE("the many-tensors fuzz seed loads", "[safetensors]") {
  const st::File f = st::load(kDir + "many_tensors.safetensors", cpu());
  CHECK(f.tensors.size() == 1'000);
  CHECK(f.tensors.at("t0").shape() == Shape{0});
  CHECK(f.tensors.at("t999").to_vector<uint8_t>() == std::vector<uint8_t>{999 % 251});
  CHECK(f.tensors.at("t199").to_vector<uint8_t>() == std::vector<uint8_t>{199});
}

TEST_CASE("a header with a NUL or other bytes after its JSON is refused with the offset",
          "[safetensors]") {
  const std::string entry = R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})";
  const std::string ok = with_header(entry) + "x";
  REQUIRE(parse_error(ok, "ok").empty());
  // Padding after the JSON, as the reference implementation accepts (JSON whitespace).
  CHECK(parse_error(with_header(entry + "        ") + "x", "spaces").empty());
  CHECK(parse_error(with_header(entry + " \n\t\r ") + "x", "whitespace").empty());
  // The reference refuses what follows a NUL; the JSON parser used to stop there.
  const size_t at = 8 + entry.size();
  std::string msg = parse_error(with_header(entry + std::string("\0{\"x\":1}", 8)) + "x", "nul");
  INFO(msg);
  CHECK(msg.rfind("nul: ", 0) == 0);
  CHECK(msg.find("NUL byte at byte offset " + std::to_string(at)) != std::string::npos);
  msg = parse_error(with_header(entry + std::string("  \0", 3)) + "x", "nul2");
  CHECK(msg.find("NUL byte at byte offset " + std::to_string(at + 2)) != std::string::npos);
  msg = parse_error(with_header(entry + "  junk") + "x", "junk");
  CHECK(msg.rfind("junk: ", 0) == 0);
  CHECK(msg.find("byte offset " + std::to_string(at + 2) + " after the JSON") != std::string::npos);
  msg = parse_error(with_header(entry + " {}") + "x", "second");
  CHECK(msg.find("byte offset " + std::to_string(at + 1) + " after the JSON") != std::string::npos);
}

TEST_CASE("control bytes in tensor names are escaped in errors", "[safetensors]") {
  const std::string msg = parse_error(
      with_header(R"({"a\u0001b\u001b[2J":{"dtype":"Q7","shape":[],"data_offsets":[0,0]}})"), "ctl");
  INFO(msg);
  CHECK(msg.find("tensor 'a\\x01b\\x1b[2J'") != std::string::npos);
  CHECK(msg.find('\x01') == std::string::npos);
  CHECK(msg.find('\x1b') == std::string::npos);
  const std::string c1 = parse_error(
      with_header(R"({"x\u009by\u00e9":{"dtype":"Q7","shape":[],"data_offsets":[0,0]}})"), "c1");
  CHECK(c1.find("tensor 'x\\u009by\xc3\xa9'") != std::string::npos);  // CSI escaped, é kept
  const std::string dup = parse_error(
      with_header(R"({"__metadata__":{"k\u0007":"1","k\u0007":"2"}})"), "dup");
  CHECK(dup.find("the key 'k\\x07' twice") != std::string::npos);
  CHECK(dup.find('\x07') == std::string::npos);
}

namespace {

// A pid that is no longer running: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("save removes the temporaries of dead writers of the same file", "[safetensors]") {
  TempDir dir;
  const std::string path = dir / "w.safetensors";
  const std::string dead = path + ".tmp." + std::to_string(dead_pid()) + ".3";
  const std::string alive = path + ".tmp." + std::to_string(::getppid()) + ".0";
  const std::string other = dir / "v.safetensors.tmp." + std::to_string(dead_pid()) + ".0";
  const std::string notes = path + ".tmp.notes";
  for (const std::string& p : {dead, alive, other, notes}) std::ofstream(p) << "partial";
  st::save(path, {{"a", Tensor::from_vector<float>({1}, cpu())}});
  CHECK(!fs::exists(dead));
  CHECK(fs::exists(alive));  // its writer may still be at work
  CHECK(fs::exists(other));  // another file's
  CHECK(fs::exists(notes));  // not the pattern
  CHECK(st::load(path, cpu()).tensors.at("a").to_vector<float>() == std::vector<float>{1});
}

TEST_CASE("save through a symlink writes the link's target and keeps the link", "[safetensors]") {
  TempDir dir;
  fs::create_directories(dir.path / "real");
  const std::string target = dir / "real/w.safetensors", link = dir / "w.safetensors";
  st::save(target, {{"old", Tensor::from_vector<float>({1}, cpu())}});
  fs::create_symlink("real/w.safetensors", link);
  st::save(link, {{"new", Tensor::from_vector<float>({2}, cpu())}});
  CHECK(fs::is_symlink(link));
  CHECK(fs::read_symlink(link) == "real/w.safetensors");
  CHECK(st::load(target, cpu()).tensors.count("new") == 1);
  // A dangling link: the file is created where it points.
  const std::string dangling = dir / "d.safetensors";
  fs::create_symlink(dir / "real/d.safetensors", dangling);
  st::save(dangling, {{"d", Tensor::from_vector<float>({3}, cpu())}});
  CHECK(fs::is_symlink(dangling));
  CHECK(st::load(dir / "real/d.safetensors", cpu()).tensors.count("d") == 1);
  // No temporary left beside the link or the target.
  CHECK(std::distance(fs::directory_iterator(dir.path / "real"), fs::directory_iterator()) == 2);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 3);
}

TEST_CASE("save keeps the replaced file's mode and refuses a read-only file", "[safetensors]") {
  TempDir dir;
  const std::string path = dir / "w.safetensors";
  const std::map<std::string, Tensor> one = {{"a", Tensor::from_vector<float>({1}, cpu())}};
  const mode_t mask = ::umask(0);
  ::umask(mask);
  st::save(path, one);
  CHECK(mode_of(path) == (0666 & ~mask));  // a new file: the umask's mode, as open(2) gives
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  st::save(path, one);
  CHECK(mode_of(path) == 0600);
  REQUIRE(::chmod(path.c_str(), 0640) == 0);
  st::save(path, one);
  CHECK(mode_of(path) == 0640);
  // Read-only: refused (even for root, who could write it), the file left as it was.
  REQUIRE(::chmod(path.c_str(), 0444) == 0);
  CHECK_THROWS_WITH(st::save(path, {{"b", Tensor::from_vector<float>({2}, cpu())}}),
                    Catch::StartsWith(path + ": is read-only (mode 0444)"));
  CHECK(mode_of(path) == 0444);
  CHECK(st::load(path, cpu()).tensors.count("a") == 1);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}
