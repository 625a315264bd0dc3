// read_gz.hpp — a gzip'd fixture file read whole (zlib), for the tests and the fuzz targets that
// keep their data compressed (tests/data/tokenizers). Throws std::runtime_error naming the file
// when it cannot be opened or is not valid gzip.
#pragma once

#include <zlib.h>

#include <stdexcept>
#include <string>

namespace wick::test {

inline std::string read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  const bool failed = n < 0;
  gzclose(f);
  if (failed) throw std::runtime_error(path + ": not a valid gzip file");
  return out;
}

}  // namespace wick::test
