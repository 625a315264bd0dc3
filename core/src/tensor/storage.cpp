#include "tensor/storage.hpp"

#include "host/loaded_plugin.hpp"

#include <wick/error.hpp>

namespace wick {

std::shared_ptr<Storage> Storage::allocate(const Device& device, uint64_t bytes) {
  if (!device.valid()) throw Error("cannot allocate on an invalid device");
  auto s = std::make_shared<Storage>();
  s->device = device;
  s->bytes = bytes;
  LoadedPlugin& p = device.plugin();
  wick_error* err = p.guard(device.index(), "buffer_allocate", [&] {
    return p.api().buffer_allocate(device.handle(), bytes, &s->buffer);
  });
  // The message only on failure: every op allocates its result, and building it is not free.
  if (err != nullptr)
    p.check(err, "could not allocate " + std::to_string(bytes) + " bytes on " + device.name());
  return s;
}

namespace {

// buffer_host_address's answer for `buffer`: the address, or nullptr when the slot is absent or the
// plugin has none (WICK_STATUS_UNSUPPORTED); any other failure is thrown.
void* ask_host_address(const Device& device, wick_buffer* buffer) {
  if ((device.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) == 0) return nullptr;
  LoadedPlugin& p = device.plugin();
  const auto fn = p.slot(&wick_plugin_api::buffer_host_address, 7);
  if (fn == nullptr) return nullptr;
  void* address = nullptr;
  wick_error* err = p.guard(device.index(), "buffer_host_address",
                            [&] { return fn(device.handle(), buffer, &address); });
  if (err != nullptr && p.api().error_code(err) == WICK_STATUS_UNSUPPORTED) {
    p.take_message(err);
    return nullptr;
  }
  if (err != nullptr) p.check(err, "buffer_host_address on " + device.name());
  return address;
}

}  // namespace

std::shared_ptr<Storage> Storage::wrap(const Device& device, const void* host, uint64_t bytes,
                                       uint64_t element_size, Access access,
                                       std::shared_ptr<const void> owner) {
  if (!device.valid() || (device.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) == 0) return nullptr;
  LoadedPlugin& p = device.plugin();
  const auto fn = p.slot(&wick_plugin_api::buffer_wrap_host, 5);
  if (fn == nullptr) return nullptr;
  const bool minor7 = p.api().abi_minor >= 7;
  // Memory its owner may change needs a plugin told so (buffer_host_address); read-only memory
  // falls back to 1.5's contract, written memory to a copy.
  const bool shared = access != Access::Unchanged && minor7 &&
                      p.slot(&wick_plugin_api::buffer_host_address, 7) != nullptr;
  if (access == Access::Writable && !shared) return nullptr;
  const uint64_t alignment = minor7 ? element_size : 32;
  if (reinterpret_cast<uintptr_t>(host) % alignment != 0) return nullptr;
  auto s = std::make_shared<Storage>();
  s->device = device;
  s->bytes = bytes;
  s->read_only = access != Access::Writable;
  s->host_view = true;
  s->owner = std::move(owner);
  wick_error* err = p.guard(device.index(), "buffer_wrap_host",
                            [&] { return fn(device.handle(), host, bytes, &s->buffer); });
  if (err != nullptr) {
    p.take_message(err);  // declined (or failed): the caller copies, which reports real trouble
    s->buffer = nullptr;
    return nullptr;
  }
  // Asking for the address tells the plugin that the contents may change between calls; an
  // address other than `host` would be a copy's, which the caller's writes would never reach.
  if (shared && ask_host_address(device, s->buffer) != host) return nullptr;
  return s;
}

void* Storage::host_address() const {
  if (buffer == nullptr || (device.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) == 0 ||
      device.plugin().slot(&wick_plugin_api::buffer_host_address, 7) == nullptr)
    return nullptr;
  device.synchronize();
  return ask_host_address(device, buffer);
}

std::optional<NativeMemory> Storage::native_memory() const {
  if (buffer == nullptr) return std::nullopt;
  LoadedPlugin& p = device.plugin();
  const auto fn = p.slot(&wick_plugin_api::buffer_native_memory, 8);
  if (fn == nullptr) return std::nullopt;
  wick_native_memory m{};
  m.struct_size = sizeof m;
  wick_error* err = p.guard(device.index(), "buffer_native_memory",
                            [&] { return fn(device.handle(), buffer, &m); });
  if (err != nullptr && p.api().error_code(err) == WICK_STATUS_UNSUPPORTED) {
    p.take_message(err);
    return std::nullopt;
  }
  p.check(err, "buffer_native_memory on " + device.name());
  if (m.kind != WICK_NATIVE_MEMORY_CUDA || m.address == nullptr) return std::nullopt;
  return NativeMemory{m.kind, m.device_ordinal, m.address, m.queue};
}

Storage::~Storage() {
  if (buffer == nullptr || process_exiting()) return;  // at exit the system takes it back
  try {
    LoadedPlugin& p = device.plugin();
    p.guard(device.index(), "buffer_free", [&] {
      p.api().buffer_free(buffer);
      return 0;
    });
  } catch (...) {
    // A destructor cannot report; the plugin already broke its contract.
  }
}

wick_tensor_desc describe_tensor(const Tensor& t) {
  wick_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.buffer = t.storage()->buffer;
  d.byte_offset = static_cast<uint64_t>(t.offset()) * dtype_size(t.dtype());
  d.dtype = to_c(t.dtype());
  d.rank = t.rank();
  d.shape = t.shape().data();
  d.strides = t.strides().data();
  return d;
}

void Storage::write(uint64_t offset, const void* src, uint64_t size) {
  LoadedPlugin& p = device.plugin();
  p.check(p.guard(device.index(), "buffer_write", [&] { return p.api().buffer_write(buffer, offset, src, size); }),
          "buffer_write of " + std::to_string(size) + " bytes to " + device.name() + " failed");
}

void Storage::read(uint64_t offset, void* dst, uint64_t size) const {
  LoadedPlugin& p = device.plugin();
  p.check(p.guard(device.index(), "buffer_read", [&] { return p.api().buffer_read(buffer, offset, dst, size); }),
          "buffer_read of " + std::to_string(size) + " bytes from " + device.name() + " failed");
}

}  // namespace wick
