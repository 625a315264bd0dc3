// idx.cpp — decoding IDX files (raw or gzip'd) in memory, with no device work, kept apart from
// data.cpp so the fuzzer links only this, shape.cpp and zlib.
#include <wick/nn/data.hpp>

#include <wick/shape.hpp>

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "IDX elements are swapped from big-endian to little-endian here");

namespace wick::data {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw Error(source + ": " + what);
}

// Bytes of the file's content in order, whether stored raw or gzip'd.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& source)
      : in_(data), left_(size), source_(source) {
    gzip_ = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    if (gzip_) {
      std::memset(&z_, 0, sizeof z_);
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) fail(source_, "cannot start zlib");
    }
  }
  ~Reader() {
    if (gzip_) inflateEnd(&z_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  bool gzip() const { return gzip_; }
  // Raw files only: how many bytes are left.
  size_t raw_left() const { return left_; }

  // Up to n bytes into dst; fewer only at the end of the content.
  size_t read(uint8_t* dst, size_t n) {
    if (n == 0) return 0;  // dst may be null (an empty vector's data())
    if (!gzip_) {
      const size_t k = std::min(n, left_);
      std::memcpy(dst, in_, k);
      in_ += k;
      left_ -= k;
      return k;
    }
    size_t got = 0;
    while (got < n && !ended_) {
      if (z_.avail_in == 0 && left_ > 0) {
        const size_t k = std::min<size_t>(left_, 1u << 30);  // avail_in is 32 bits
        z_.next_in = const_cast<Bytef*>(in_);
        z_.avail_in = static_cast<uInt>(k);
        in_ += k;
        left_ -= k;
      }
      const size_t want = std::min<size_t>(n - got, 1u << 30);
      z_.next_out = dst + got;
      z_.avail_out = static_cast<uInt>(want);
      const int rc = inflate(&z_, Z_NO_FLUSH);
      got += want - z_.avail_out;
      if (rc == Z_STREAM_END) {
        if (z_.avail_in == 0 && left_ == 0) ended_ = true;
        else if (inflateReset(&z_) != Z_OK) fail(source_, "cannot restart zlib");  // next member
      } else if (rc == Z_BUF_ERROR && z_.avail_in == 0 && left_ == 0) {
        fail(source_, "the gzip stream is truncated");
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        fail(source_, std::string("corrupt gzip data: ") + (z_.msg ? z_.msg : "zlib error " + std::to_string(rc)));
      }
    }
    return got;
  }

 private:
  const uint8_t* in_;
  size_t left_;
  const std::string& source_;
  bool gzip_ = false, ended_ = false;
  z_stream z_{};
};

struct IdxType {
  uint8_t code;
  DType dtype;
};
constexpr IdxType kTypes[] = {{0x08, DType::U8},  {0x09, DType::I8},  {0x0B, DType::I16},
                              {0x0C, DType::I32}, {0x0D, DType::F32}, {0x0E, DType::F64}};

// How much of the data the file is known to hold before any is read: all of it for a raw file
// long enough, and for a gzip'd one whose trailer (ISIZE, the last member's size mod 2^32) is the
// size the header implies and whose length could inflate that far (deflate's limit is 1032:1),
// so no honest file costs a copy; 0 otherwise.
uint64_t known_size(const uint8_t* file, size_t size, bool gzip, uint64_t header, uint64_t bytes) {
  if (!gzip) return bytes;  // the caller has checked the file holds them
  if (size < 18) return 0;
  const uint8_t* t = file + size - 4;
  const uint32_t isize =
      t[0] | (uint32_t{t[1]} << 8) | (uint32_t{t[2]} << 16) | (uint32_t{t[3]} << 24);
  const uint64_t content = header + bytes;
  return uint32_t(content) == isize && content / 1032 <= size ? bytes : 0;
}

// The `bytes` of element data into out.bytes: set aside at once when `known` (see known_size),
// otherwise grown (doubling from 1 MiB) as data arrives, so memory follows the real content, not
// a size the header claims. Running out of memory is an error naming the file and the size.
void read_data(Reader& r, IdxArray& out, uint64_t bytes, uint64_t known, const std::string& source,
               const std::string& what) {
  const auto out_of_memory = [&](uint64_t n) {
    fail(source, "out of memory: cannot allocate " + std::to_string(n) +
                     " bytes for the data of shape " + shape_to_string(out.shape) + " of " +
                     dtype_name(out.dtype) + " (" + std::to_string(bytes) + " bytes in all)");
  };
  try {
    out.bytes.reserve(known);
  } catch (const std::bad_alloc&) {
    out_of_memory(known);
  }
  while (out.bytes.size() < bytes) {
    const size_t have = out.bytes.size();
    const size_t want = std::min<uint64_t>(bytes - have, std::max<size_t>(have, size_t{1} << 20));
    try {
      out.bytes.resize(have + want);
    } catch (const std::bad_alloc&) {
      out_of_memory(have + want);
    }
    const size_t got = r.read(out.bytes.data() + have, want);
    if (got != want)
      fail(source, "truncated: shape " + shape_to_string(out.shape) + " of " +
                       dtype_name(out.dtype) + " needs " + std::to_string(bytes) +
                       " bytes of data, " + what + " holds " + std::to_string(have + got));
  }
}

}  // namespace

IdxArray parse_idx(const void* data, size_t size, const std::string& source) {
  Reader r(static_cast<const uint8_t*>(data), size, source);
  const std::string what = r.gzip() ? "the inflated content" : "the file";

  uint8_t magic[4];
  if (r.read(magic, 4) != 4)
    fail(source, "truncated: " + what + " is shorter than the 4-byte IDX magic");
  if (magic[0] != 0 || magic[1] != 0)
    fail(source, "bad magic: an IDX file starts with two zero bytes (not an IDX file?)");
  IdxArray out;
  const IdxType* type = nullptr;
  for (const IdxType& t : kTypes)
    if (t.code == magic[2]) type = &t;
  if (!type) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", magic[2]);
    fail(source, std::string("bad magic: unknown IDX type ") + hex +
                     " (known: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64)");
  }
  out.dtype = type->dtype;

  const int rank = magic[3];
  std::vector<uint8_t> dims(static_cast<size_t>(rank) * 4);
  if (r.read(dims.data(), dims.size()) != dims.size())
    fail(source, "truncated: " + what + " ends inside the " + std::to_string(rank) + " extents");
  for (int i = 0; i < rank; ++i) {
    const uint8_t* p = &dims[static_cast<size_t>(i) * 4];
    out.shape.push_back((int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3]);
  }
  uint64_t bytes = 0;
  try {
    bytes = bytes_of(out.shape, out.dtype);
  } catch (const Error& e) {
    fail(source, std::string("extents overflow: ") + e.what());
  }
  if (bytes > kMaxIdxBytes)
    fail(source, "shape " + shape_to_string(out.shape) + " of " + dtype_name(out.dtype) + " is " +
                     std::to_string(bytes) + " bytes, more than the " +
                     std::to_string(kMaxIdxBytes) + " allowed");
  if (!r.gzip() && r.raw_left() < bytes)
    fail(source, "truncated: shape " + shape_to_string(out.shape) + " of " +
                     dtype_name(out.dtype) + " needs " + std::to_string(bytes) +
                     " bytes of data, the file holds " + std::to_string(r.raw_left()));

  const uint64_t known =
      known_size(static_cast<const uint8_t*>(data), size, r.gzip(), 4 + dims.size(), bytes);
  read_data(r, out, bytes, known, source, what);
  uint8_t extra[256];
  if (const size_t n = r.read(extra, sizeof extra); n > 0)
    fail(source, "trailing bytes: " + what + " goes on after the " + std::to_string(bytes) +
                     " bytes of data that shape " + shape_to_string(out.shape) + " of " +
                     dtype_name(out.dtype) + " needs");

  // Big-endian elements to host order.
  const size_t es = dtype_size(out.dtype);
  uint8_t* p = out.bytes.data();
  for (size_t i = 0; es > 1 && i < out.bytes.size(); i += es) std::reverse(p + i, p + i + es);
  return out;
}

}  // namespace wick::data
