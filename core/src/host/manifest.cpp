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
  auto name = t["name"].value<std::string>();
  auto library = t["library"].value<std::string>();
  auto major = t["abi_major"].value<int64_t>();
  if (!name || name->empty())
    throw std::runtime_error(where("name") + ": 'name' must be a non-empty string");
  if (!library || library->empty())
    throw std::runtime_error(where("library") + ": 'library' must be a non-empty string");
  if (!major) throw std::runtime_error(where("abi_major") + ": 'abi_major' must be an integer");
  m.name = *name;
  m.abi_major = *major;
  fs::path lib(*library);
  m.library = (lib.is_absolute() ? lib : path.parent_path() / lib).lexically_normal().string();
  if (const toml::array* kinds = t["device_kinds"].as_array()) {
    for (const toml::node& k : *kinds) {
      if (auto s = k.value<std::string>()) m.device_kinds.push_back(*s);
    }
  }
  m.first_party = t["first_party"].value<bool>().value_or(false);
  return m;
}

}  // namespace wick
