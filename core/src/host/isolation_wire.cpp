// isolation_wire.cpp — the wire format's names, sending and receiving messages, and the encoding
// of op descriptors (decoded by the child's server, isolation_server.cpp).
#include "host/isolation_wire.hpp"

#include <wick/sdk/op_table.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace wick::isolation::wire {

namespace {

// Sends the whole message; false when the peer is gone (no SIGPIPE: MSG_NOSIGNAL).
bool send_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t k = ::send(fd, b, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    b += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Receives exactly n bytes, waiting at most until `deadline_ms` of monotonic time (< 0: forever).
RecvResult recv_all(int fd, void* p, size_t n, int64_t timeout_ms) {
  auto* b = static_cast<uint8_t*>(p);
  const auto start = std::chrono::steady_clock::now();
  while (n > 0) {
    if (timeout_ms > 0) {
      const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
      if (spent >= timeout_ms) return RecvResult::TimedOut;
      pollfd pfd{fd, POLLIN, 0};
      const int r = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(timeout_ms - spent, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return RecvResult::TimedOut;
    }
    const ssize_t k = ::recv(fd, b, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return RecvResult::Closed;
    b += k;
    n -= static_cast<size_t>(k);
  }
  return RecvResult::Ok;
}

template <class T>
void put_array(Out& o, const T* p, int64_t n) {
  if (p == nullptr) {
    o.put<int64_t>(-1);
    return;
  }
  o.put<int64_t>(n);
  o.bytes(p, sizeof(T) * static_cast<size_t>(n));
}

}  // namespace

const char* call_name(Call c) {
  switch (c) {
    case Call::Initialize: return "initialize";
    case Call::Shutdown: return "shutdown";
    case Call::DeviceGet: return "device_get";
    case Call::DeviceProps: return "device_get_props";
    case Call::Synchronize: return "device_synchronize";
    case Call::Allocate: return "buffer_allocate";
    case Call::Free: return "buffer_free";
    case Call::Write: return "buffer_write";
    case Call::Read: return "buffer_read";
    case Call::Copy: return "buffer_copy";
    case Call::Supports: return "op_supports";
    case Call::Execute: return "op_execute";
    case Call::FreeMemory: return "device_get_free_memory";
  }
  return "unknown call";
}

bool send_message(int fd, const Out& m) {
  const uint64_t n = m.data().size();
  return send_all(fd, &n, sizeof n) && send_all(fd, m.data().data(), m.data().size());
}

uint64_t reply_bound(Call c, uint64_t read_bytes) {
  return c == Call::Read ? std::max(kMaxReply, kReplyHeader + read_bytes) : kMaxReply;
}

RecvResult recv_message(int fd, std::vector<uint8_t>& into, int64_t timeout_ms, uint64_t max_bytes,
                        uint64_t* announced) {
  uint64_t n = 0;
  if (RecvResult r = recv_all(fd, &n, sizeof n, timeout_ms); r != RecvResult::Ok) return r;
  if (announced != nullptr) *announced = n;
  if (n > max_bytes) return RecvResult::TooLong;
  into.resize(n);
  return recv_all(fd, into.data(), n, timeout_ms);
}

bool readable_now(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  int r;
  while ((r = ::poll(&pfd, 1, 0)) < 0 && errno == EINTR) {
  }
  return r > 0;
}

void put_op(Out& o, const wick_op_desc& op, uint64_t (*buffer_id)(const wick_buffer*)) {
  o.put<int32_t>(op.op);
  const sdk::OpInfo* info = sdk::op_info(op.op);
  const bool has_params = op.params != nullptr && info != nullptr && info->params_size > 0;
  o.put<uint8_t>(has_params ? 1 : 0);
  if (has_params) {
    const size_t size = std::min(*static_cast<const size_t*>(op.params), info->params_size);
    o.put<uint64_t>(size);
    o.bytes(op.params, size);
    if (info->params == sdk::ParamsKind::reduce) {
      const auto* p = static_cast<const wick_reduce_params*>(op.params);
      put_array(o, p->axes, p->num_axes);
    } else if (info->params == sdk::ParamsKind::conv) {
      const auto* p = static_cast<const wick_conv_params*>(op.params);
      for (const int64_t* a : {p->strides, p->padding_lo, p->padding_hi, p->dilations, p->input_dilations})
        put_array(o, a, p->spatial_rank);
    } else if (info->params == sdk::ParamsKind::window) {
      const auto* p = static_cast<const wick_window_params*>(op.params);
      for (const int64_t* a : {p->window, p->strides, p->padding_lo, p->padding_hi, p->dilations})
        put_array(o, a, p->rank);
    }
  }
  auto put_tensors = [&](const wick_tensor_desc* t, size_t n) {
    o.put<uint64_t>(n);
    for (size_t i = 0; i < n; ++i) {
      o.put<uint64_t>(t[i].buffer != nullptr ? buffer_id(t[i].buffer) : 0);
      o.put<uint64_t>(t[i].byte_offset);
      o.put<int32_t>(t[i].dtype);
      o.put<int32_t>(t[i].rank);
      put_array(o, t[i].shape, t[i].rank);
      put_array(o, t[i].strides, t[i].rank);
    }
  };
  put_tensors(op.inputs, op.num_inputs);
  put_tensors(op.outputs, op.num_outputs);
}

}  // namespace wick::isolation::wire
