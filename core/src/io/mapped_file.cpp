// mapped_file.cpp — read-only mappings that survive the file being truncated under them: a table
// of live mappings that a SIGBUS handler consults (lock-free, async-signal-safe), mapping a page of
// zeros over a page that is gone and noting where.
#include <wick/mapped_file.hpp>

#include <wick/error.hpp>
#include <wick/safe_file.hpp>

#include "host/signal_chain.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>

namespace wick {
namespace {

// One live mapping. `begin` is 0 while the slot is free or being filled; the handler reads begin,
// then end, and a mapping is registered (end, then begin) before any read of it and unregistered
// after the last.
struct Slot {
  std::atomic<bool> used{false};
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<uint64_t> first_bad{std::numeric_limits<uint64_t>::max()};
};
constexpr int kSlots = 1024;
Slot g_slots[kSlots];
uintptr_t g_page = 4096;
struct sigaction g_previous_bus;

void on_bus(int sig, siginfo_t* info, void* context) {
  if (detail::absorb_mapped_fault(sig, info != nullptr ? info->si_addr : nullptr)) return;
  detail::pass_to_previous(g_previous_bus, sig, info, context);
}

void install_bus_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = &on_bus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, &g_previous_bus);
  });
}

int register_range(const uint8_t* data, size_t size) {
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!g_slots[i].used.compare_exchange_strong(expected, true)) continue;
    g_slots[i].first_bad.store(std::numeric_limits<uint64_t>::max());
    g_slots[i].end.store(reinterpret_cast<uintptr_t>(data) + size, std::memory_order_release);
    g_slots[i].begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
    return i;
  }
  return -1;
}

}  // namespace

bool detail::absorb_mapped_fault(int sig, const void* address) {
  if (sig != SIGBUS || address == nullptr) return false;
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (Slot& s : g_slots) {
    const uintptr_t begin = s.begin.load(std::memory_order_acquire);
    if (begin == 0 || at < begin || at >= s.end.load(std::memory_order_acquire)) continue;
    const uintptr_t page = at & ~(g_page - 1);  // mmap's start is page-aligned, so page >= begin
    void* zeros = ::mmap(reinterpret_cast<void*>(page), g_page, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros == MAP_FAILED) return false;
    uint64_t seen = s.first_bad.load();
    const uint64_t offset = page - begin;
    while (offset < seen && !s.first_bad.compare_exchange_weak(seen, offset)) {
    }
    return true;
  }
  return false;
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  if (auto why = safe_file::refuse(path, std::numeric_limits<uint64_t>::max()))
    throw Error(path + ": " + *why);
  // O_NONBLOCK: should the file have been swapped for a FIFO since the check, open does not wait.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw Error(path + ": is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;  // nothing to map (mmap of 0 bytes is an error)
  install_bus_handler();
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::close(fd_);
    throw Error(path + ": cannot map " + std::to_string(size_) + " bytes: " + std::strerror(err));
  }
  data_ = static_cast<const uint8_t*>(p);
  slot_ = register_range(data_, size_);
  if (slot_ < 0) {
    ::munmap(p, size_);
    ::close(fd_);
    throw Error(path + ": cannot map it: " + std::to_string(kSlots) +
                " files are mapped already (the most at once)");
  }
}

MappedFile::~MappedFile() {
  if (slot_ >= 0) {
    g_slots[slot_].begin.store(0, std::memory_order_release);
    g_slots[slot_].end.store(0);
    g_slots[slot_].used.store(false);
  }
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  ::close(fd_);
}

const uint8_t* MappedFile::data() const {
  return data_ != nullptr ? data_ : reinterpret_cast<const uint8_t*>("");
}

bool MappedFile::damaged() const {
  return slot_ >= 0 && g_slots[slot_].first_bad.load() != std::numeric_limits<uint64_t>::max();
}

void MappedFile::check_intact(const std::string& what) const {
  if (!damaged()) return;
  struct stat st {};
  const std::string now =
      ::fstat(fd_, &st) == 0 ? "it is " + std::to_string(st.st_size) + " bytes now" : "";
  throw Error(path_ + ": the file shrank (or could not be read) while mapped, while " + what +
              ": its bytes from offset " + std::to_string(g_slots[slot_].first_bad.load()) +
              " on were gone (it had " + std::to_string(size_) + " bytes when mapped" +
              (now.empty() ? "" : "; " + now) + ")");
}

}  // namespace wick
