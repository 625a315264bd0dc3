#include <wick/runtime.hpp>

#include "host/dispatch_policy.hpp"
#include "host/log.hpp"

#include <atomic>
#include <iostream>
#include <mutex>

namespace wick {

// ---- logging ----------------------------------------------------------------------------------

namespace {
std::atomic<int> g_log_level{static_cast<int>(LogLevel::Warn)};
std::mutex g_log_mutex;
}  // namespace

LogLevel parse_log_level(const std::string& text) {
  if (text == "off") return LogLevel::Off;
  if (text == "error") return LogLevel::Error;
  if (text == "info") return LogLevel::Info;
  if (text == "debug") return LogLevel::Debug;
  return LogLevel::Warn;
}

void set_log_level(LogLevel level) {
  g_log_level = static_cast<int>(level);
}

bool log_enabled(LogLevel level) {
  return level != LogLevel::Off && static_cast<int>(level) <= g_log_level.load();
}

void log(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  static const char* names[] = {"", "error", "warning", "info", "debug"};
  std::lock_guard lock(g_log_mutex);
  std::cerr << "wick: " << names[static_cast<int>(level)] << ": " << message << "\n";
}

// ---- runtime ----------------------------------------------------------------------------------

Runtime::Runtime(const Config& config, RegistryOptions options)
    : config_(config),
      registry_(std::make_shared<PluginRegistry>(config, options)),
      policy_(DispatchPolicy::create(registry_, config.strict)) {
  policy_->set_check_nan(config.check_nan);
  selection_ = select_device(*registry_, config_);
  for (const std::string& s : selection_.skipped) log(LogLevel::Info, "device skipped: " + s);
  log(LogLevel::Info, selection_.reason);
}

Runtime::~Runtime() = default;

namespace {
std::mutex g_global_mutex;
Runtime* g_global = nullptr;
}  // namespace

Runtime& Runtime::global() {
  std::lock_guard lock(g_global_mutex);
  // Never destroyed: plugins stay loaded until process exit (see LoadedPlugin).
  if (g_global == nullptr) g_global = new Runtime(resolve_config());
  return *g_global;
}

void Runtime::configure(const Config& config) {
  std::lock_guard lock(g_global_mutex);
  if (g_global != nullptr) {
    throw Error(
        "Runtime::configure: the global runtime is already in use; configure it before "
        "creating the first tensor");
  }
  g_global = new Runtime(config);
}

bool Runtime::strict() const {
  return policy_->strict;
}
void Runtime::set_strict(bool strict) {
  policy_->strict = strict;
}

bool Runtime::check_nan() const {
  return policy_->check_nan();
}
void Runtime::set_check_nan(bool on) {
  policy_->set_check_nan(on);
}

std::vector<FallbackRecord> Runtime::fallbacks() const {
  return policy_->records();
}

uint64_t Runtime::fallback_count() const {
  uint64_t n = 0;
  for (const FallbackRecord& r : fallbacks()) n += r.count;
  return n;
}

void Runtime::reset_fallbacks() {
  policy_->reset();
}

}  // namespace wick
