#include "host/shared_plugins.hpp"

#include <filesystem>
#include <mutex>
#include <sstream>

namespace wick {

namespace {

struct Record {
  std::string library;
  std::weak_ptr<LoadedPlugin> plugin;
  const LoadedPlugin* address = nullptr;
  SharedInit init;
};

std::mutex g_mutex;

std::vector<Record>& records() {
  static auto* r = new std::vector<Record>();  // never destroyed: registries may outlive statics
  return *r;
}

std::string key_of(const std::string& library) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::weakly_canonical(library, ec);
  return ec ? library : p.string();
}

}  // namespace

std::string describe_options(const std::vector<wick_option>& options) {
  std::ostringstream out;
  for (size_t i = 0; i < options.size(); ++i) {
    const wick_option& o = options[i];
    out << (i > 0 ? ", " : "") << o.key << "=";
    switch (o.type) {
      case WICK_OPTION_BOOL: out << (o.bool_value != 0 ? "true" : "false"); break;
      case WICK_OPTION_INT: out << o.int_value; break;
      case WICK_OPTION_FLOAT: out << o.float_value; break;
      case WICK_OPTION_STRING: out << '"' << (o.string_value != nullptr ? o.string_value : "") << '"'; break;
      default: out << "?"; break;
    }
  }
  return out.str();
}

std::shared_ptr<LoadedPlugin> shared_plugin(const std::string& library) {
  const std::string key = key_of(library);
  std::lock_guard lock(g_mutex);
  for (const Record& r : records())
    if (r.library == key)
      if (std::shared_ptr<LoadedPlugin> live = r.plugin.lock()) return live;
  return nullptr;
}

void share_plugin(const std::string& library, const std::shared_ptr<LoadedPlugin>& plugin,
                  std::string options, std::string message) {
  const std::string key = key_of(library);
  std::lock_guard lock(g_mutex);
  auto& all = records();
  std::erase_if(all, [&](const Record& r) { return r.plugin.expired() || r.library == key; });
  all.push_back(Record{key, plugin, plugin.get(), SharedInit{std::move(options), std::move(message)}});
}

SharedInit shared_init(const LoadedPlugin& plugin) {
  std::lock_guard lock(g_mutex);
  for (const Record& r : records())
    if (r.address == &plugin && !r.plugin.expired()) return r.init;
  return {};
}

}  // namespace wick
