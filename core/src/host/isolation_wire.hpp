// isolation_wire.hpp — the wire format between the host's proxy table (isolated_plugin.cpp) and
// the call server in the child (isolation_server.cpp, wick-plugin-host), core internal.
//
// Wire format: each message is a 64-bit length, then that many bytes. A request starts with a Call
// (u32) and its sequence number (u64, one more for each request); a reply with the sequence number
// of the request it answers, then a status (u32, WICK_STATUS_OK or the plugin's error code), then on
// error the message, else the call's results. The hello (the child's first message) starts with a
// status and kWireVersion. Integers are host-endian: both ends are the same machine.
//
// The host trusts nothing the child sends: every reply is bounded before it is received (by what
// its call can need: reply_bound), and a reply that breaks the format is a Malformed error.
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

// Changes whenever the format does: a wick-plugin-host from another build is refused by name.
constexpr uint32_t kWireVersion = 2;

constexpr uint64_t kChunk = uint64_t(1) << 30;  // buffer reads and writes go in pieces this big
// Largest request the child accepts: a chunk and its call's header.
constexpr uint64_t kMaxRequest = kChunk + 4096;
// Largest reply to a call other than buffer_read, and the largest hello: room for an error message,
// names and results, never a buffer's contents.
constexpr uint64_t kMaxReply = uint64_t(1) << 20;
// The most devices one isolated plugin may report.
constexpr uint64_t kMaxDevices = 1024;
// Bytes in front of every reply's results: the sequence number and the status.
constexpr uint64_t kReplyHeader = sizeof(uint64_t) + sizeof(uint32_t);

// The most bytes a reply to `c` may have: kMaxReply, or for a buffer_read of `read_bytes` the
// header and those bytes.
uint64_t reply_bound(Call c, uint64_t read_bytes);

// A message that breaks the format (too short, a field out of range).
class Malformed : public Error {
 public:
  explicit Malformed(const std::string& what) : Error(what) {}
};

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
    if (n > left_)
      throw Malformed("a field of " + std::to_string(n) + " bytes where " + std::to_string(left_) +
                      " are left");
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

enum class RecvResult { Ok, Closed, TimedOut, TooLong };

// Receives one message of at most `max_bytes` into `into`, waiting at most `timeout_ms` for each
// part (<= 0: forever). A longer one is TooLong before anything is allocated or read beyond its
// length field, which goes to *announced (when given).
RecvResult recv_message(int fd, std::vector<uint8_t>& into, int64_t timeout_ms, uint64_t max_bytes,
                        uint64_t* announced = nullptr);

// True when bytes are waiting on `fd` (or it is closed): before a request, bytes the child sent
// unasked.
bool readable_now(int fd);

// Op descriptors: the params struct's bytes, then the arrays its pointers point to, then the
// tensors. Buffers travel as the child's handles (0 for none, as in supports()).
void put_op(Out& o, const wick_op_desc& op, uint64_t (*buffer_id)(const wick_buffer*));

}  // namespace wick::isolation::wire
