// crash_hint.cpp — the per-plugin rerun commands of the crash reporter (crash_hint.hpp).
#include "host/crash_hint.hpp"

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>

namespace wick::detail {

namespace {

// Slots written under the mutex and read lock-free from a signal handler: a slot's hint is stored
// before its name, so a reader that sees the name sees a hint. The strings are never freed (a
// crash may come during static destruction).
struct Slot {
  std::atomic<const char*> name{nullptr};
  std::atomic<const char*> hint{nullptr};
};
constexpr size_t kSlots = 256;
Slot g_slots[kSlots];

std::mutex& writers() {
  static auto* m = new std::mutex;
  return *m;
}

const char* keep(const std::string& s) {
  static auto* kept = new std::deque<std::string>;
  return kept->emplace_back(s).c_str();
}

}  // namespace

void set_crash_hint(const std::string& plugin, const std::string& command) {
  const std::lock_guard<std::mutex> lock(writers());
  for (Slot& slot : g_slots) {
    const char* name = slot.name.load(std::memory_order_acquire);
    if (name != nullptr && plugin == name) {
      slot.hint.store(keep(command), std::memory_order_release);
      return;
    }
    if (name == nullptr) {
      slot.hint.store(keep(command), std::memory_order_release);
      slot.name.store(keep(plugin), std::memory_order_release);
      return;
    }
  }
  // More plugins than slots: the reporter falls back to the plugin's name alone.
}

const char* crash_hint(const char* plugin) noexcept {
  if (plugin == nullptr) return nullptr;
  for (const Slot& slot : g_slots) {
    const char* name = slot.name.load(std::memory_order_acquire);
    if (name == nullptr) return nullptr;
    if (std::strcmp(name, plugin) == 0) return slot.hint.load(std::memory_order_acquire);
  }
  return nullptr;
}

}  // namespace wick::detail
