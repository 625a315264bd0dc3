// wick/sdk/op_shapes.hpp — the operand shapes ops require, where the rule is more than "every
// input broadcast to the output": one definition for every plugin (header-only, the C ABI only).
#pragma once

#include <wick/wick_plugin.h>

namespace wick::sdk {

// The output extent of a window (pooling) or convolution along one axis: `in` elements spread by
// the input dilation `idil`, padded by lo and hi, covered by a window of `w` taps `dil` apart at
// stride `s`; 0 when the window does not fit.
inline int64_t window_out_extent(int64_t in, int64_t w, int64_t s, int64_t lo, int64_t hi,
                                 int64_t dil, int64_t idil = 1) {
  const int64_t dilated = in == 0 ? 0 : (in - 1) * idil + 1;
  const int64_t span = dilated + lo + hi - ((w - 1) * dil + 1);
  return span < 0 ? 0 : span / s + 1;
}

// WICK_OP_ATTENTION: q [..., L, E], k [..., S, E], v [..., S, Ev], out [..., L, Ev] sharing the
// batch dims and q's dtype, an optional mask (in[3]) [..., L, S] of that dtype.
inline bool attention_shapes_ok(const wick_op_desc& op) {
  if (op.num_inputs < 3 || op.num_inputs > 4 || op.num_outputs != 1) return false;
  const wick_tensor_desc &q = op.inputs[0], &k = op.inputs[1], &v = op.inputs[2],
                         &o = op.outputs[0];
  const int r = q.rank;
  if (r < 2 || k.rank != r || v.rank != r || o.rank != r) return false;
  if (k.dtype != q.dtype || v.dtype != q.dtype || o.dtype != q.dtype) return false;
  for (int i = 0; i < r - 2; ++i)
    if (k.shape[i] != q.shape[i] || v.shape[i] != q.shape[i] || o.shape[i] != q.shape[i])
      return false;
  const int64_t l = q.shape[r - 2], e = q.shape[r - 1], s = k.shape[r - 2], ev = v.shape[r - 1];
  if (k.shape[r - 1] != e || v.shape[r - 2] != s || o.shape[r - 2] != l || o.shape[r - 1] != ev)
    return false;
  if (op.num_inputs == 4) {
    const wick_tensor_desc& m = op.inputs[3];
    if (m.dtype != q.dtype || m.rank != r || m.shape[r - 2] != l || m.shape[r - 1] != s)
      return false;
    for (int i = 0; i < r - 2; ++i)
      if (m.shape[i] != q.shape[i]) return false;
  }
  return true;
}

}  // namespace wick::sdk
