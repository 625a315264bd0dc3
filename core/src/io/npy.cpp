// npy.cpp — NumPy's .npy format (numpy/lib/format.py documents it): the magic "\x93NUMPY", a
// major and minor version, a little-endian header length (2 bytes in 1.0, 4 in 2.0 and 3.0), a
// Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces
// to a multiple of 64 bytes and ended by '\n', then the elements.
#include <wick/npy.hpp>

#include <wick/error.hpp>
#include <wick/mapped_file.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <optional>
#include <vector>

namespace wick {

namespace {

struct Header {
  std::string descr;
  bool fortran = false;
  Shape shape;
};

[[noreturn]] void bad(const std::string& where, const std::string& why) {
  throw Error(where + ": not a .npy file Wick can read: " + why);
}

// The value of `key` in the header dict: the text after "'key':" up to the next top-level ','.
std::string dict_value(const std::string& dict, const std::string& key, const std::string& where) {
  const std::string k = "'" + key + "'";
  const size_t at = dict.find(k);
  if (at == std::string::npos) bad(where, "the header has no " + k);
  size_t i = dict.find(':', at + k.size());
  if (i == std::string::npos) bad(where, "the header's " + k + " has no value");
  ++i;
  while (i < dict.size() && dict[i] == ' ') ++i;
  int depth = 0;
  size_t j = i;
  for (; j < dict.size(); ++j) {
    const char c = dict[j];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if ((c == ',' || c == '}') && depth == 0) break;
  }
  std::string v = dict.substr(i, j - i);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

Shape parse_shape(const std::string& text, const std::string& where) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') bad(where, "shape " + text + " is not a tuple");
  Shape shape;
  std::string num;
  auto flush = [&] {
    if (num.empty()) return;
    if (num.size() > 15) bad(where, "an extent of shape " + text + " is too large");
    shape.push_back(std::stoll(num));
    num.clear();
  };
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      num.push_back(c);
    } else if (c == ',' || c == ' ') {
      flush();
    } else if (c != 'L') {  // Python 2's long suffix
      bad(where, "shape " + text + " is not a tuple of integers");
    }
  }
  flush();
  return shape;
}

Header parse_header(const std::string& dict, const std::string& where) {
  if (dict.empty() || dict.front() != '{') bad(where, "the header is not a dict");
  Header h;
  const std::string descr = dict_value(dict, "descr", where);
  if (descr.size() < 3 || (descr.front() != '\'' && descr.front() != '"') || descr.back() != descr.front())
    bad(where, "descr " + descr + " is not a simple type (a structured or nested dtype)");
  h.descr = descr.substr(1, descr.size() - 2);
  const std::string fortran = dict_value(dict, "fortran_order", where);
  if (fortran != "True" && fortran != "False") bad(where, "fortran_order " + fortran + " is not True or False");
  h.fortran = fortran == "True";
  h.shape = parse_shape(dict_value(dict, "shape", where), where);
  return h;
}

// NumPy's descrs of Wick's dtypes, as written ('<' little-endian, '|' no byte order); read also
// with any byte-order mark on the one-byte types and '<' or '=' on the others.
struct Descr {
  DType dtype;
  const char* descr;
};
constexpr Descr kDescrs[] = {{DType::F32, "<f4"}, {DType::F64, "<f8"}, {DType::F16, "<f2"}, {DType::I8, "|i1"},
                             {DType::U8, "|u1"},  {DType::I16, "<i2"}, {DType::I32, "<i4"}, {DType::I64, "<i8"},
                             {DType::U32, "<u4"}, {DType::U64, "<u8"}, {DType::Bool, "|b1"}};

// The Wick dtype of a descr, and whether it is NumPy's uint16 (widened to u32).
std::pair<DType, bool> descr_dtype(const std::string& d, const std::string& where) {
  if (d.size() >= 2 && d[0] == '>' && d.substr(1) != "i1" && d.substr(1) != "u1" && d.substr(1) != "b1")
    bad(where, "dtype '" + d + "' is big-endian (byteswap it to '<" + d.substr(1) + "' first)");
  const std::string t = (d[0] == '<' || d[0] == '|' || d[0] == '=' || d[0] == '>') ? d.substr(1) : d;
  if (t == "u2") return {DType::U32, true};
  for (const Descr& e : kDescrs)
    if (t == e.descr + 1) return {e.dtype, false};
  bad(where, "dtype '" + d + "' has no Wick dtype (Wick reads f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)");
}

const char* dtype_descr(DType t) {
  for (const Descr& e : kDescrs)
    if (e.dtype == t) return e.descr;
  throw Error(std::string("write_npy: NumPy has no ") + dtype_name(t) + " dtype (convert the tensor first, e.g. to f32)");
}

Tensor make_tensor(const uint8_t* data, const Header& h, DType dt, bool u16, const Device& device) {
  int64_t n = 1;
  for (int64_t e : h.shape) n *= e;
  Shape stored = h.shape;
  if (h.fortran) stored.assign(h.shape.rbegin(), h.shape.rend());
  Tensor t;
  if (u16) {
    std::vector<uint32_t> wide(static_cast<size_t>(n));
    for (size_t i = 0; i < wide.size(); ++i) wide[i] = uint32_t{data[2 * i]} | (uint32_t{data[2 * i + 1]} << 8);
    t = Tensor::from_bytes(wide.data(), wide.size() * 4, stored, DType::U32, device);
  } else {
    t = Tensor::from_bytes(data, static_cast<size_t>(n) * dtype_size(dt), stored, dt, device);
  }
  if (!h.fortran || h.shape.size() < 2) return t.reshape(h.shape);
  std::vector<int> axes(h.shape.size());
  std::iota(axes.rbegin(), axes.rend(), 0);
  return t.permute(axes).contiguous();
}

}  // namespace

Tensor parse_npy(const void* bytes, size_t size, const std::string& where, const Device& device) {
  const auto* p = static_cast<const uint8_t*>(bytes);
  if (size < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0) bad(where, "no \\x93NUMPY magic");
  const int major = p[6];
  if (major < 1 || major > 3)
    bad(where, "format version " + std::to_string(major) + "." + std::to_string(p[7]) + " (Wick reads 1.0, 2.0, 3.0)");
  size_t hlen = 0, start = 0;
  if (major == 1) {
    hlen = size_t{p[8]} | (size_t{p[9]} << 8);
    start = 10;
  } else {
    if (size < 12) bad(where, "truncated header length");
    hlen = size_t{p[8]} | (size_t{p[9]} << 8) | (size_t{p[10]} << 16) | (size_t{p[11]} << 24);
    start = 12;
  }
  if (hlen > size - start) bad(where, "the header runs past the end of the file");
  const Header h = parse_header(std::string(reinterpret_cast<const char*>(p + start), hlen), where);
  const auto [dt, u16] = descr_dtype(h.descr, where);
  int64_t n = 1;
  for (int64_t e : h.shape) {
    if (e > (int64_t{1} << 40) || (e > 0 && n > (int64_t{1} << 40) / e)) bad(where, "more than 2^40 elements");
    n *= e;
  }
  const size_t elem = u16 ? 2 : dtype_size(dt);
  const size_t need = static_cast<size_t>(n) * elem, have = size - start - hlen;
  if (have != need)
    bad(where, "the shape and dtype need " + std::to_string(need) + " bytes of data, the file has " + std::to_string(have));
  return make_tensor(p + start + hlen, h, dt, u16, device);
}

Tensor read_npy(const std::string& path, const Device& device) {
  const MappedFile file(path);
  Tensor t = parse_npy(file.data(), file.size(), path, device);
  file.check_intact("reading it as .npy");
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string dict = std::string("{'descr': '") + dtype_descr(t.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape().size(); ++i) dict += std::to_string(t.shape()[i]) + (t.shape().size() == 1 ? "," : i + 1 < t.shape().size() ? ", " : "");
  dict += "), }";
  const bool v2 = dict.size() + 11 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');
  std::vector<char> data(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  t.contiguous().copy_to_host(data.data(), data.size());
  std::string head = "\x93NUMPY";
  head.push_back(static_cast<char>(v2 ? 2 : 1));
  head.push_back(0);
  const size_t hl = dict.size();
  for (size_t b = 0; b < (v2 ? 4u : 2u); ++b) head.push_back(static_cast<char>((hl >> (8 * b)) & 0xFF));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(tmp + ": cannot create: " + std::strerror(errno));
    out << head << dict;
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error(tmp + ": cannot write (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error(path + ": cannot rename " + tmp + " over it: " + why);
  }
}

}  // namespace wick
