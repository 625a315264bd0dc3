// safetensors.cpp — loading (mmap, then one copy per tensor onto its device; MappedFile), saving (temporary
// file, fsync, rename) and state-dict checks. The header's validation is safetensors_header.cpp.
#include <wick/safetensors.hpp>

#include <wick/mapped_file.hpp>
#include <wick/safe_file.hpp>
#include <wick/shape.hpp>

#include "io/atomic_write.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; a big-endian host would need byte swaps here");

namespace wick::safetensors {
namespace {

// One tensor of the file on `device`. With `mapped`, a page of it gone (the file was truncated
// while mapped: the copy read zeros there) is an error naming the file, never the zeros.
Tensor copy_entry(const uint8_t* file, const Header& h, const Entry& e, const Device& device,
                  const std::string& source, const MappedFile* mapped = nullptr) {
  Tensor t;
  try {
    t = Tensor::from_bytes(file + h.data_start + e.begin, e.end - e.begin, e.shape, e.dtype,
                           device);
  } catch (const Error& err) {
    if (mapped != nullptr) mapped->check_intact("copying tensor '" + printable_name(e.name) + "'");
    throw Error(source + ": tensor '" + printable_name(e.name) + "': " + err.what());
  }
  if (mapped != nullptr) mapped->check_intact("copying tensor '" + printable_name(e.name) + "'");
  return t;
}

// The header of a mapped file; an error that comes from the file shrinking under the parse says so.
Header parse_mapped(const MappedFile& m) {
  try {
    return parse(m.data(), m.size(), m.path());
  } catch (const Error&) {
    m.check_intact("reading its header");
    throw;
  }
}

// What save() writes before the data: the header (length and padded JSON) and the tensors in
// file order.
struct Plan {
  std::string prefix;
  std::vector<std::pair<std::string, Tensor>> order;
};

Plan plan(const std::map<std::string, Tensor>& tensors,
          const std::map<std::string, std::string>& metadata, const std::string& target) {
  Plan p;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__")
      throw Error(target + ": a tensor may not be named '" + name + "'");
    if (!t.defined()) throw Error(target + ": tensor '" + printable_name(name) + "' is undefined");
    p.order.emplace_back(name, t);
  }
  // Largest element first keeps every tensor aligned to its element size (the data starts at a
  // multiple of 8).
  std::stable_sort(p.order.begin(), p.order.end(), [](const auto& a, const auto& b) {
    return dtype_size(a.second.dtype()) > dtype_size(b.second.dtype());
  });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : p.order) {
    const uint64_t bytes = bytes_of(t.shape(), t.dtype());
    header[name] = {{"dtype", format_dtype_name(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw Error(target + ": a tensor name or metadata string is not valid UTF-8 (" + e.what() + ")");
  }
  json.append((8 - json.size() % 8) % 8, ' ');
  p.prefix.resize(8);
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) p.prefix[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i));
  p.prefix += json;
  return p;
}

std::vector<char> host_bytes(const Tensor& t) {
  std::vector<char> buf(static_cast<size_t>(bytes_of(t.shape(), t.dtype())));
  t.copy_to_host(buf.data(), buf.size());  // any device, any strides: C order
  return buf;
}

struct Described {
  DType dtype;
  Shape shape;
};

void check(const std::map<std::string, Tensor>& expected, const std::map<std::string, Described>& found,
           const std::string& source, bool allow_extra) {
  std::vector<std::string> missing, extra, mismatched;
  for (const auto& [name, t] : expected) {
    auto it = found.find(name);
    if (it == found.end()) {
      missing.push_back(printable_name(name));
    } else if (it->second.dtype != t.dtype() || it->second.shape != t.shape()) {
      mismatched.push_back(printable_name(name) + ": expected " + shape_to_string(t.shape()) + " " +
                           dtype_name(t.dtype()) + ", found " + shape_to_string(it->second.shape) +
                           " " + dtype_name(it->second.dtype));
    }
  }
  if (!allow_extra)
    for (const auto& [name, d] : found)
      if (!expected.count(name)) extra.push_back(printable_name(name));
  if (missing.empty() && extra.empty() && mismatched.empty()) return;
  std::string msg = source + ": the tensors do not match the expected parameters:";
  const auto list = [&](const char* what, const std::vector<std::string>& names, const char* sep) {
    if (names.empty()) return;
    msg += std::string("\n  ") + what + " (" + std::to_string(names.size()) + "): ";
    for (size_t i = 0; i < names.size(); ++i) msg += (i ? sep : "") + names[i];
  };
  list("missing", missing, ", ");
  list("extra", extra, ", ");
  list("mismatched", mismatched, "; ");
  throw Error(msg);
}

std::map<std::string, Described> describe(const Header& h) {
  std::map<std::string, Described> out;
  for (const Entry& e : h.entries) out[e.name] = Described{e.dtype, e.shape};
  return out;
}

}  // namespace

File load_bytes(const void* data, size_t size, const Device& device, const std::string& source) {
  const Header h = parse(data, size, source);
  File out;
  out.metadata = h.metadata;
  for (const Entry& e : h.entries)
    out.tensors[e.name] = copy_entry(static_cast<const uint8_t*>(data), h, e, device, source);
  return out;
}

File load(const std::string& path, const Device& device) {
  const MappedFile m(path);
  const Header h = parse_mapped(m);
  File out;
  out.metadata = h.metadata;
  for (const Entry& e : h.entries) out.tensors[e.name] = copy_entry(m.data(), h, e, device, path, &m);
  return out;
}

std::string save_bytes(const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  Plan p = plan(tensors, metadata, "<memory>");
  std::string out = std::move(p.prefix);
  for (const auto& [name, t] : p.order) {
    const std::vector<char> buf = host_bytes(t);
    out.append(buf.data(), buf.size());
  }
  return out;
}

void save(const std::string& path, const std::map<std::string, Tensor>& tensors,
          const std::map<std::string, std::string>& metadata) {
  const Plan p = plan(tensors, metadata, path);
  io::write_atomically(path, [&](const io::Sink& sink) {
    sink(p.prefix.data(), p.prefix.size());
    for (const auto& [name, t] : p.order) {
      const std::vector<char> buf = host_bytes(t);
      sink(buf.data(), buf.size());
    }
  });
}

void check_state_dict(const std::map<std::string, Tensor>& expected, const Header& found,
                      const std::string& source, bool allow_extra) {
  check(expected, describe(found), source, allow_extra);
}

void check_state_dict(const std::map<std::string, Tensor>& expected,
                      const std::map<std::string, Tensor>& found, const std::string& source,
                      bool allow_extra) {
  std::map<std::string, Described> d;
  for (const auto& [name, t] : found) d[name] = Described{t.dtype(), t.shape()};
  check(expected, d, source, allow_extra);
}

std::map<std::string, Tensor> load_state_dict(const std::string& path,
                                              const std::map<std::string, Tensor>& expected,
                                              const Device& device, bool allow_extra) {
  const MappedFile m(path);
  const Header h = parse_mapped(m);
  check_state_dict(expected, h, path, allow_extra);
  std::map<std::string, Tensor> out;
  for (const Entry& e : h.entries) {
    auto it = expected.find(e.name);
    if (it == expected.end()) continue;  // an extra tensor, allowed
    out[e.name] =
        copy_entry(m.data(), h, e, device.valid() ? device : it->second.device(), path, &m);
  }
  return out;
}

}  // namespace wick::safetensors
