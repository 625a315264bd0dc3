#include "loaded_plugin.hpp"

#include <utility>

namespace wick {

LoadedPlugin::LoadedPlugin(boost::dll::shared_library library, const wick_plugin_api* api,
                           std::string name, std::string library_path)
    : library_(std::move(library)), api_(api), name_(std::move(name)),
      library_path_(std::move(library_path)) {}

LoadedPlugin::~LoadedPlugin() {
  if (initialized_ && api_->shutdown != nullptr) {
    try {
      api_->shutdown();
    } catch (...) {
      // A plugin that throws from shutdown cannot be helped; the process goes on.
    }
  }
  // Unloading code that may still own threads or static destructors is how runtimes crash at
  // exit: only plugins that declare themselves unloadable are closed, the rest stay mapped.
  if ((api_->flags & WICK_PLUGIN_FLAG_UNLOADABLE) == 0) {
    static auto* retained = new std::vector<boost::dll::shared_library>();
    retained->push_back(std::move(library_));
  }
}

void LoadedPlugin::check(wick_error* err, const std::string& what) const {
  if (err == nullptr) return;
  std::string message = api_->error_message != nullptr ? api_->error_message(err) : "(no message)";
  if (api_->error_destroy != nullptr) api_->error_destroy(err);
  throw Error("plugin '" + name_ + "' " + what + ": " + message);
}

void LoadedPlugin::set_initialized(std::vector<wick_device*> devices,
                                   std::vector<wick_device_props> props) {
  initialized_ = true;
  devices_ = std::move(devices);
  props_ = std::move(props);
}

}  // namespace wick
