// manifest.cpp — reading a plugin's manifest.
#include "host/manifest.hpp"

#include <wick/safe_file.hpp>

#include <toml++/toml.h>

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace wick {

bool is_manifest_name(const std::string& file) {
  const size_t n = std::strlen(kManifestSuffix);
  return file.size() > n && file.compare(file.size() - n, std::string::npos, kManifestSuffix) == 0;
}

Manifest read_manifest(const fs::path& path) {
  return parse_manifest(safe_file::read_text(path.string()), path);
}

Manifest parse_manifest(const std::string& text, const fs::path& path) {
  Manifest m;
  m.path = path.string();
  toml::table t;
  try {
    if (auto deep = safe_file::too_deep(text))
      throw std::runtime_error("manifest " + m.path + ":" + std::to_string(deep->line) + ":" +
                               std::to_string(deep->column) + ": " + deep->what);
    t = toml::parse(text, m.path);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << "manifest " << m.path << ":" << e.source().begin.line << ":" << e.source().begin.column
       << ": " << e.description();
    throw std::runtime_error(os.str());
  }
  auto where = [&](const char* key) {
    const toml::node* n = t.get(key);
    std::ostringstream os;
    os << "manifest " << m.path;
    if (n != nullptr) os << ":" << n->source().begin.line << ":" << n->source().begin.column;
    return os.str();
  };
  // value_exact: a key of another TOML type is an error, never converted (toml++'s value<int64_t>
  // casts a float such as 2e21 to an integer, which overflows).
  auto name = t["name"].value_exact<std::string>();
  auto library = t["library"].value_exact<std::string>();
  auto major = t["abi_major"].value_exact<int64_t>();
  if (!name || name->empty())
    throw std::runtime_error(where("name") + ": 'name' must be a non-empty string");
  if (!library || library->empty())
    throw std::runtime_error(where("library") + ": 'library' must be a non-empty string");
  if (!major) throw std::runtime_error(where("abi_major") + ": 'abi_major' must be an integer");
  m.name = *name;
  m.abi_major = *major;
  fs::path lib(*library);
  m.library = (lib.is_absolute() ? lib : path.parent_path() / lib).lexically_normal().string();
  if (const toml::node* kinds = t["device_kinds"].node()) {
    const toml::array* list = kinds->as_array();
    if (list == nullptr)
      throw std::runtime_error(where("device_kinds") + ": 'device_kinds' must be an array of strings");
    for (const toml::node& k : *list) {
      auto s = k.value_exact<std::string>();
      if (!s)
        throw std::runtime_error(where("device_kinds") + ": 'device_kinds' must be an array of strings");
      m.device_kinds.push_back(*s);
    }
  }
  if (const toml::node* fp = t["first_party"].node()) {
    auto b = fp->value_exact<bool>();
    if (!b) throw std::runtime_error(where("first_party") + ": 'first_party' must be true or false");
    m.first_party = *b;
  }
  return m;
}

}  // namespace wick
