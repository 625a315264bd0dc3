// isolation_wire.hpp — the wire format between the host's proxy table (isolated_plugin.cpp) and
// the call server in the child (isolation_server.cpp, wick-plugin-host), core internal.
//
// Wire format: each message is a 64-bit little-endian length, then that many bytes. A request
// starts with a Call (u32); a reply with a status (u32, WICK_STATUS_OK or the plugin's error code),
// then on error the message, else the call's results. Integers are host-endian: both ends are the
// same machine.
#pragma once

#include <wick/error.hpp>
#include <wick/wick_plugin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace wick::isolation::wire {

enum class Call : uint32_t {
  Initialize = 1,
  Shutdown,
  DeviceGet,
  DeviceProps,
  Synchronize,
  Allocate,
  Free,
  Write,
  Read,
  Copy,
  Supports,
  Execute,
  FreeMemory,
};

const char* call_name(Call c);

// Bits of the hello message: which optional slots the child's table has.
constexpr uint32_t kHasBufferCopy = 1u << 0;
constexpr uint32_t kHasFreeMemory = 1u << 1;

// Largest message either side accepts (a buffer_write of 4 GiB is split by the host).
constexpr uint64_t kMaxMessage = uint64_t(1) << 32;
constexpr uint64_t kChunk = uint64_t(1) << 30;  // buffer reads and writes go in pieces this big

// ---- encoding --------------------------------------------------------------------------------

class Out {
 public:
  template <class T>
  Out& put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof v);
    return *this;
  }
  Out& bytes(const void* p, size_t n) {
    if (n == 0) return *this;
    const size_t at = data_.size();
    data_.resize(at + n);
    std::memcpy(data_.data() + at, p, n);
    return *this;
  }
  Out& str(const std::string& s) {
    put<uint64_t>(s.size());
    return bytes(s.data(), s.size());
  }
  Out& cstr(const char* s) { return str(s != nullptr ? std::string(s) : std::string()); }
  const std::vector<uint8_t>& data() const { return data_; }

 private:
  std::vector<uint8_t> data_;
};

// Reads a message; any read past its end is a malformed message (the other side is broken).
class In {
 public:
  In(const uint8_t* p, size_t n) : p_(p), left_(n) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const uint8_t* take(uint64_t n) {
    if (n > left_) throw Error("malformed message between the host and wick-plugin-host");
    const uint8_t* at = p_;
    p_ += n;
    left_ -= n;
    return at;
  }
  std::string str() {
    const auto n = get<uint64_t>();
    const uint8_t* at = take(n);
    return std::string(reinterpret_cast<const char*>(at), n);
  }
  size_t left() const { return left_; }

 private:
  const uint8_t* p_;
  size_t left_;
};

// Sends the whole message; false when the peer is gone (no SIGPIPE: MSG_NOSIGNAL).
bool send_message(int fd, const Out& m);

enum class RecvResult { Ok, Closed, TimedOut };

// Receives one message into `into`, waiting at most `timeout_ms` for each part (<= 0: forever).
RecvResult recv_message(int fd, std::vector<uint8_t>& into, int64_t timeout_ms);

// Op descriptors: the params struct's bytes, then the arrays its pointers point to, then the
// tensors. Buffers travel as the child's handles (0 for none, as in supports()).
void put_op(Out& o, const wick_op_desc& op, uint64_t (*buffer_id)(const wick_buffer*));

}  // namespace wick::isolation::wire
