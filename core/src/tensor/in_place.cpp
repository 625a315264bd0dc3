// in_place.cpp — writes into tensors that already hold data (wick/dispatch.hpp, Tensor::copy_):
// sources that overlap their destination go through a copy, and every write gives the storage a
// new version.
#include <wick/autograd.hpp>
#include <wick/dispatch.hpp>
#include <wick/shape.hpp>

#include "tensor/storage.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <utility>

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

// False only when no two elements of t share a location: with the moving axes sorted by |stride|,
// each stride exceeds the farthest the smaller ones reach together (every view that slicing,
// permuting and reshaping make of a contiguous tensor passes; a stride-0 axis of extent > 1 and
// some hand-made stride sets that might interleave do not).
bool may_overlap_itself(const Tensor& t) {
  std::vector<std::pair<uint64_t, uint64_t>> axes;  // (|stride|, extent - 1)
  for (size_t i = 0; i < t.shape().size(); ++i)
    if (t.shape()[i] > 1)
      axes.emplace_back(magnitude(t.strides()[i]), static_cast<uint64_t>(t.shape()[i] - 1));
  std::sort(axes.begin(), axes.end());
  uint64_t reach = 0;  // the largest distance the axes so far span together
  for (const auto& [stride, steps] : axes) {
    if (stride <= reach) return true;
    reach += stride * steps;
  }
  return false;
}

std::string describe(const Tensor& t) {
  return shape_to_string(t.shape()) + " " + dtype_name(t.dtype()) + " (strides " +
         shape_to_string(t.strides()) + ")";
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
  for (const Tensor& out : outputs)
    if (out.storage()->read_only)
      throw Error("an in-place write into a " + shape_to_string(out.shape()) + " " +
                  dtype_name(out.dtype()) +
                  " tensor that views read-only memory (a mapped file, or Tensor::from_host_memory "
                  "without HostMemoryOptions::writable): write into its clone()");
  // Before the write: a failure part-way has still changed the contents.
  for (const Tensor& out : outputs) out.storage()->version.fetch_add(1, std::memory_order_relaxed);
  dispatch(op, params, sources, outputs);
}

Tensor& Tensor::copy_(const Tensor& src) {
  if (!defined()) throw Error("copy_: the target is undefined");
  if (!src.defined())
    throw Error("copy_: the source is undefined (target " + describe(*this) + ")");
  if (autograd::grad_enabled() && requires_grad()) {
    throw Error("copy_: the target " + describe(*this) +
                " requires grad and grad mode is on; an in-place write records no history, so do "
                "it under autograd::NoGradGuard (or write into a detach()ed tensor)");
  }
  if (autograd::grad_enabled() && src.requires_grad()) {
    throw Error("copy_: the source " + describe(src) +
                " requires grad and grad mode is on; copy_ records no history, so its gradient "
                "would be lost: pass src.detach(), or write under autograd::NoGradGuard");
  }
  if (may_overlap_itself(*this)) {
    throw Error("copy_: the target " + describe(*this) +
                " has elements that may share one memory location (a broadcast or expanded view); "
                "write into a tensor that owns each element, e.g. a contiguous() copy");
  }
  // NumPy's rule one way: src may gain leading axes and stretch its extent-1 ones, not the target.
  if (broadcast_shapes(src.shape(), shape_, "copy_ (source, target)") != shape_) {
    throw Error("copy_: the source " + shape_to_string(src.shape()) +
                " does not broadcast to the target " + shape_to_string(shape_));
  }
  Tensor value = src.detach();
  if (!(value.device() == device())) value = value.to(device());
  if (value.dtype() != dtype_) value = value.to(dtype_);
  if (value.shape() != shape_) value = value.broadcast_to(shape_);
  if (numel() == 0) return *this;
  dispatch_in_place(WICK_OP_COPY, nullptr, {value}, {detach()});
  return *this;
}

}  // namespace wick
