// in_place.cpp — writes into tensors that already hold data (wick/dispatch.hpp): sources that
// overlap their destination go through a copy, and every write gives the storage a new version.
#include <wick/dispatch.hpp>
#include <wick/shape.hpp>

#include "tensor/storage.hpp"

#include <cstdint>
#include <numeric>

namespace wick {

namespace {

uint64_t magnitude(int64_t v) {
  return v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
}

// The gcd of the strides of the axes that move (extent > 1); 0 when none does.
uint64_t stride_gcd(const Tensor& t, uint64_t g) {
  for (size_t i = 0; i < t.shape().size(); ++i)
    if (t.shape()[i] > 1) g = std::gcd(g, magnitude(t.strides()[i]));
  return g;
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.offset() == b.offset() && a.dtype() == b.dtype() &&
         a.shape() == b.shape() && a.strides() == b.strides();
}

}  // namespace

bool may_share_memory(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.storage() != b.storage()) return false;
  if (a.numel() == 0 || b.numel() == 0) return false;
  const uint64_t ea = dtype_size(a.dtype()), eb = dtype_size(b.dtype());
  const auto [alo, ahi] = element_span(a.shape(), a.strides(), a.offset());
  const auto [blo, bhi] = element_span(b.shape(), b.strides(), b.offset());
  // Byte ranges [begin, end) of each view; offsets are within the buffer, so these do not wrap.
  const uint64_t a_begin = static_cast<uint64_t>(alo) * ea,
                 a_end = (static_cast<uint64_t>(ahi) + 1) * ea;
  const uint64_t b_begin = static_cast<uint64_t>(blo) * eb,
                 b_end = (static_cast<uint64_t>(bhi) + 1) * eb;
  if (a_end <= b_begin || b_end <= a_begin) return false;
  // Every element of either view sits at its offset plus a multiple of g, so two views whose
  // offsets differ by no multiple of g share none (only meaningful in units of one element size).
  if (ea != eb) return true;
  const uint64_t g = stride_gcd(b, stride_gcd(a, 0));
  return g == 0 || magnitude(a.offset() - b.offset()) % g == 0;
}

void dispatch_in_place(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
                       const std::vector<Tensor>& outputs) {
  std::vector<Tensor> sources = inputs;
  for (Tensor& s : sources) {
    for (const Tensor& out : outputs) {
      if (same_view(s, out) || !may_share_memory(s, out)) continue;
      s = s.detach().clone();  // read before anything is written: a backend may go in any order
      break;
    }
  }
  // Before the write: a failure part-way has still changed the contents.
  for (const Tensor& out : outputs) out.storage()->version.fetch_add(1, std::memory_order_relaxed);
  dispatch(op, params, sources, outputs);
}

}  // namespace wick
