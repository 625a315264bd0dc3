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

std::shared_ptr<Storage> Storage::wrap(const Device& device, const void* host, uint64_t bytes,
                                       std::shared_ptr<const void> owner) {
  if (!device.valid() || (device.capabilities() & WICK_DEVICE_CAP_HOST_MEMORY) == 0) return nullptr;
  LoadedPlugin& p = device.plugin();
  const auto fn = p.slot(&wick_plugin_api::buffer_wrap_host, 5);
  if (fn == nullptr) return nullptr;
  auto s = std::make_shared<Storage>();
  s->device = device;
  s->bytes = bytes;
  s->read_only = true;
  s->owner = std::move(owner);
  wick_error* err = p.guard(device.index(), "buffer_wrap_host",
                            [&] { return fn(device.handle(), host, bytes, &s->buffer); });
  if (err != nullptr) {
    p.take_message(err);  // declined (or failed): the caller copies, which reports real trouble
    s->buffer = nullptr;
    return nullptr;
  }
  return s;
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
