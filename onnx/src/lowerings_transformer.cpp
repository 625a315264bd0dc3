// lowerings_transformer.cpp — the ops of transformer blocks: the activations Gelu, Swish, Mish and
// SwiGLU, RMSNormalization, and Attention (onto Wick's fused attention where it fits, composed from
// matmul and softmax otherwise).
#include "lowerings.hpp"

#include <wick/direct.hpp>
#include <wick/sdk/ops.hpp>

#include <cmath>
#include <limits>

namespace wick::onnx {

// A fused op that a plugin may decline: true when it ran, false when the device's plugin declined
// it (the caller then composes it). Through the dispatcher the CPU runs what the device declines.
bool OnnxLowering::Impl::try_fused(wick_op_code op, const void* params, const std::vector<Tensor>& ins,
                                   const std::vector<Tensor>& outs) {
  if (outs[0].numel() == 0) return true;
  if (g.dispatching()) {
    // A fused op the device lacks is composed on the device, not run on the CPU (nor, in strict
    // mode, refused).
    if (query_op_direct(dev(), op, params, ins, outs) != WICK_SUPPORT_YES) return false;
    exec(op, params, ins, outs);
    return true;
  }
  const DirectResult r = run_op_direct(dev(), op, params, ins, outs);
  if (r.status == DirectResult::Status::Ran) return true;
  if (r.status == DirectResult::Status::Failed)
    throw ExecuteFailed(std::string(sdk::op_name(op)) + ": " + r.message);
  return false;
}

// --- Activations ---

// Gelu (opset 20): approximate = "none" is x Φ(x) (erf), "tanh" its tanh approximation.
void OnnxLowering::Impl::lower_gelu() {
  const bool tanh = attr_choice("approximate", "none", {"none", "tanh"}) == "tanh";
  out(0, op1(tanh ? WICK_OP_GELU_TANH : WICK_OP_GELU_ERF, in(0)));
}
// x sigmoid(alpha x); alpha = 1 is Wick's silu.
Tensor OnnxLowering::Impl::swish(const Tensor& x, double alpha) {
  if (alpha == 1.0) return op1(WICK_OP_SILU, x);
  return op2(WICK_OP_MUL, x, op1(WICK_OP_SIGMOID, affine(x, alpha, 0)));
}
void OnnxLowering::Impl::lower_swish() {
  out(0, swish(in(0), attr_f("alpha", 1.0f)));
}
// Mish: x tanh(softplus(x)), softplus as the Softplus lowering computes it (log1p(exp(x))).
void OnnxLowering::Impl::lower_mish() {
  const Tensor x = in(0);
  out(0, op2(WICK_OP_MUL, x, op1(WICK_OP_TANH, op1(WICK_OP_LOG1P, op1(WICK_OP_EXP, x)))));
}
// SwiGLU (opset 28): Swish_alpha(A) * B, A and B of one shape (no broadcasting).
void OnnxLowering::Impl::lower_swiglu() {
  const Tensor a = in(0), b = in(1);
  if (a.shape() != b.shape())
    throw NotImportable(node_context() + ": A " + shape_to_string(a.shape()) + " and B " +
                        shape_to_string(b.shape()) + " differ in shape (the op does not broadcast)");
  out(0, op2(WICK_OP_MUL, swish(a, attr_f("alpha", 1.0f)), b));
}

// --- RMSNormalization (opset 23) ---

// X / sqrt(mean(X^2 over axes axis..rank-1) + epsilon), computed in f32 (stash_type 1, as the
// op's function casts X; stash_type has no other value the importer implements), cast back to
// X's dtype, then times scale (broadcast to X).
void OnnxLowering::Impl::lower_rms_norm() {
  const Tensor x = in(0), scale = in(1);
  const int axis = norm_axis(attr_i("axis", -1), x.rank());
  const double eps = attr_f("epsilon", 1e-5f);
  const int64_t stash = attr_i("stash_type", 1);
  if (stash != 1) refuse_attr(*attr("stash_type"), "is not implemented by the importer (only 1, f32)");
  if (scale.dtype() != x.dtype())
    throw NotImportable(node_context() + ": scale of dtype " + dtype_name(scale.dtype()) + " with X of " +
                        dtype_name(x.dtype()) + " is not implemented by the importer");
  const Shape normalized(x.shape().begin() + axis, x.shape().end());
  const Shape ys = broadcast(x.shape(), scale.shape());
  if (ys != x.shape()) throw NotImportable(node_context() + ": scale does not broadcast to X");
  const wick_norm_params p{sizeof(wick_norm_params), x.rank() - axis, eps};
  // Fused with the weight where X is f32 (the computation's dtype) and scale spans only the
  // normalised axes.
  Shape sc = scale.shape();
  while (!sc.empty() && sc.front() == 1 && sc.size() > normalized.size()) sc.erase(sc.begin());
  if (x.dtype() == DType::F32 && sc.size() <= normalized.size()) {
    const Tensor w = reshape(scale, sc).broadcast_to(normalized);
    Tensor o = Tensor::empty(x.shape(), x.dtype(), dev());
    if (try_fused(WICK_OP_RMS_NORM, &p, {x, w}, {o})) return out(0, o);
  }
  const Tensor xf = cast(x, DType::F32);
  Tensor normed = Tensor::empty(x.shape(), DType::F32, dev());
  if (!try_fused(WICK_OP_RMS_NORM, &p, {xf}, {normed})) {
    std::vector<int32_t> axes;
    for (int a = axis; a < x.rank(); ++a) axes.push_back(a);
    const double count = static_cast<double>(reduced_count(xf, axes));
    const Tensor ms = affine(reduce(WICK_OP_REDUCE_SUM, op2(WICK_OP_MUL, xf, xf), axes, true), 1.0 / count, eps);
    normed = op2(WICK_OP_DIV, xf, op1(WICK_OP_SQRT, ms));
  }
  out(0, op2(WICK_OP_MUL, cast(normed, x.dtype()), scale));
}


// --- Attention (opsets 23-25 and on; 25 adds the sliding window) ---

// Q, K, V as [B, heads, seq, head size], the past concatenated onto K and V, and the attributes.
struct OnnxLowering::Impl::AttentionInputs {
  Tensor q, k, v;            // 4-D; k and v hold present_key / present_value (before GQA repetition)
  bool three_d = false;      // Y goes back to [B, L, heads * Ev]
  int64_t past = -1;         // past_sequence_length, -1 without a past
  std::vector<int64_t> nonpad;  // nonpad_kv_seqlen per batch (empty without it)
  double scale = 0;          // the factor that Q and K are each multiplied by, sqrt(scale) in T
};

// 3-D inputs [B, seq, heads * size] to [B, heads, seq, size].
Tensor OnnxLowering::Impl::attention_heads(const Tensor& t, int64_t heads, const char* what) {
  if (heads < 1 || t.dim(2) % heads != 0)
    throw NotImportable(node_context() + ": " + what + " of shape " + shape_to_string(t.shape()) +
                        " does not split into " + std::to_string(heads) + " heads");
  return reshape(t, {t.dim(0), t.dim(1), heads, t.dim(2) / heads}).permute({0, 2, 1, 3});
}

OnnxLowering::Impl::AttentionInputs OnnxLowering::Impl::attention_inputs() {
  AttentionInputs a;
  a.q = in(0), a.k = in(1), a.v = in(2);
  const onnx::AttributeProto* qh = attr("q_num_heads");
  const onnx::AttributeProto* kvh = attr("kv_num_heads");
  if (a.q.dtype() != a.k.dtype() || a.q.dtype() != a.v.dtype())
    throw NotImportable(node_context() + ": Q, K and V of different dtypes are not implemented by the importer");
  if (a.q.rank() != a.k.rank() || a.q.rank() != a.v.rank() || (a.q.rank() != 3 && a.q.rank() != 4))
    throw NotImportable(node_context() + ": Q, K and V must all be 3-D or all 4-D");
  a.three_d = a.q.rank() == 3;
  if (a.three_d) {
    if (qh == nullptr || kvh == nullptr)
      throw NotImportable(node_context() + ": 3-D inputs without q_num_heads and kv_num_heads");
    a.q = attention_heads(a.q, qh->i, "Q");
    a.k = attention_heads(a.k, kvh->i, "K");
    a.v = attention_heads(a.v, kvh->i, "V");
  } else if ((qh != nullptr && qh->i != a.q.dim(1)) || (kvh != nullptr && kvh->i != a.k.dim(1))) {
    refuse_attr(qh != nullptr && qh->i != a.q.dim(1) ? *qh : *kvh, "differs from the 4-D input's heads");
  }
  if (has_in(4) != has_in(5)) throw NotImportable(node_context() + ": past_key without past_value or the reverse");
  if (has_in(4)) {
    const Tensor pk = in(4), pv = in(5);
    if (pk.rank() != 4 || pv.rank() != 4 || pk.dtype() != a.k.dtype() || pv.dtype() != a.v.dtype())
      throw NotImportable(node_context() + ": past_key / past_value not 4-D of K's and V's dtype");
    a.past = pk.dim(2);
    a.k = concat({pk, a.k}, 2);
    a.v = concat({pv, a.v}, 2);
  }
  if (has_in(6)) {
    if (a.past >= 0) throw NotImportable(node_context() + ": nonpad_kv_seqlen with past_key (the op forbids it)");
    a.nonpad = host_ints(in(6));
    if (static_cast<int64_t>(a.nonpad.size()) != a.q.dim(0))
      throw NotImportable(node_context() + ": nonpad_kv_seqlen has not one value per batch");
  }
  const onnx::AttributeProto* sc = attr("scale");
  const double scale = sc != nullptr ? static_cast<double>(sc->f) : 1.0 / std::sqrt(static_cast<double>(a.q.dim(3)));
  // The reference's Cast of sqrt(scale) to T.
  a.scale = host_scalar(scalar(std::sqrt(scale), a.q.dtype()));
  return a;
}

// The additive bias [.., L, S] in T (undefined when there is none): attn_mask (bool: true 0,
// false -inf; float: added), its last axis padded to S with -inf, plus the structural part
// decided on the host: the causal frontier j <= i + offset, the sliding window and the padding
// of nonpad_kv_seqlen, each 0 or -inf.
Tensor OnnxLowering::Impl::attention_bias(const AttentionInputs& a) {
  const DType t = a.q.dtype();
  const int64_t L = a.q.dim(2), S = a.k.dim(2), B = a.q.dim(0);
  Tensor bias;
  if (has_in(3)) {
    Tensor m = in(3);
    if (m.dtype() == DType::Bool) {
      m = where(m, scalar(0, t), scalar(-INFINITY, t));
    } else if (m.dtype() != t) {
      throw NotImportable(node_context() + ": attn_mask of dtype " + dtype_name(m.dtype()) +
                          " (only bool or Q's dtype are implemented by the importer)");
    }
    if (m.rank() < 1 || m.dim(-1) > S) throw NotImportable(node_context() + ": attn_mask longer than the keys");
    if (m.dim(-1) < S) {
      Shape pad = m.shape();
      pad.back() = S - m.dim(-1);
      m = concat({m, filled(pad, t, -INFINITY)}, m.rank() - 1);
    }
    bias = m;
  }
  const bool causal = attr_i("is_causal", 0) != 0;
  const int64_t left = attr_i("left_window_size", -1), right = attr_i("right_window_size", -1);
  if (left < -1 || right < -1) throw NotImportable(node_context() + ": a window size below -1");
  if (!causal && left < 0 && right < 0 && a.nonpad.empty()) return bias;
  const int64_t rows = a.nonpad.empty() ? 1 : B;
  if (checked_mul(checked_mul(rows, L), S) > max_host_elements())
    throw NotImportable(node_context() + ": the mask is larger than max_host_elements" + limit_hint("max_host_elements"));
  std::vector<double> s(static_cast<size_t>(rows * L * S));
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t off = a.past >= 0 ? a.past : a.nonpad.empty() ? 0 : a.nonpad[static_cast<size_t>(b)] - L;
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) {
        const int64_t d = i + off - j;  // how far key j is before the query's position
        const bool ok = (!causal || d >= 0) && (left < 0 || d <= left) && (right < 0 || -d <= right) &&
                        (a.nonpad.empty() || j < a.nonpad[static_cast<size_t>(b)]);
        s[static_cast<size_t>((b * L + i) * S + j)] = ok ? 0.0 : -INFINITY;
      }
  }
  const Tensor st = upload_values(s, {rows, 1, L, S}, t);
  return bias.defined() ? op2(WICK_OP_ADD, bias, st) : st;
}

// K or V [B, Hkv, S, E] repeated to `heads` heads, each kv head for heads / Hkv consecutive
// query heads (group-query attention).
Tensor OnnxLowering::Impl::attention_repeat(const Tensor& t, int64_t heads) {
  const int64_t kv = t.dim(1);
  if (kv == heads) return t;
  if (kv < 1 || heads % kv != 0)
    throw NotImportable(node_context() + ": " + std::to_string(heads) + " query heads are not a multiple of " +
                        std::to_string(kv) + " key/value heads");
  const Shape wide{t.dim(0), kv, heads / kv, t.dim(2), t.dim(3)};
  return reshape(t.unsqueeze(2).broadcast_to(wide), {t.dim(0), heads, t.dim(2), t.dim(3)});
}

void OnnxLowering::Impl::lower_attention() {
  AttentionInputs a = attention_inputs();
  out(1, a.k);
  out(2, a.v);
  const DType t = a.q.dtype();
  const Tensor k = attention_repeat(a.k, a.q.dim(1)), v = attention_repeat(a.v, a.q.dim(1));
  const Tensor bias = attention_bias(a);
  const int64_t mode = attr_i("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) refuse_attr(*attr("qk_matmul_output_mode"), "is not 0, 1, 2 or 3");
  const double softcap = attr_f("softcap", 0.0f);
  const onnx::AttributeProto* sp = attr("softmax_precision");
  const DType smt = sp != nullptr ? onnx_dtype(static_cast<int32_t>(sp->i)) : t;
  if (smt != DType::F32 && smt != DType::F64 && smt != DType::F16 && smt != DType::BF16)
    refuse_attr(*sp, "is not a float type");
  const bool want_qk = n.outputs.size() > 3 && !n.outputs[3].empty();
  if (want_qk && mode == 0 && softcap > 0)
    refuse_attr(*attr("softcap"), "with qk_matmul_output_mode 0: the spec's output (before the softcap) and the "
                                 "reference's (after it) differ");
  const Shape scores{a.q.dim(0), a.q.dim(1), a.q.dim(2), k.dim(2)};
  // Rows whose bias is -inf throughout attend no key: their softmax is 0 (the op's guard).
  std::optional<Tensor> masked;
  if (bias.defined())
    masked = op2(WICK_OP_EQ, reduce(WICK_OP_REDUCE_MAX, bias, {bias.rank() - 1}, true), scalar(-INFINITY, t),
                 DType::Bool);
  Tensor y;
  const bool halves_in_f32 = (t == DType::F16 || t == DType::BF16) && smt == DType::F32;
  // A softmax in bf16: the reference rounds each of its steps (and the matmuls) to bf16, which
  // neither the fused op (rounding once) nor Wick's bf16 ops step by step reproduce within the
  // suite's tolerance (a bf16 ulp apart).
  if (smt == DType::BF16)
    throw NotImportable(node_context() + ": bf16 Attention with its softmax in bf16 is not implemented by the "
                        "importer (the reference's rounding of every step to bf16 is not reproduced)");
  if (!want_qk && softcap <= 0 && (smt == t || halves_in_f32) && k.dim(2) > 0) {
    // Wick's fused attention: softmax(q k^T scale + bias) v, a row of only -inf scores 0.
    const wick_attention_params p{sizeof(wick_attention_params), a.scale * a.scale, 0};
    std::vector<Tensor> ins{a.q, k, v};
    if (bias.defined()) ins.push_back(bias.broadcast_to(scores));
    Tensor o = Tensor::empty({a.q.dim(0), a.q.dim(1), a.q.dim(2), v.dim(3)}, t, dev());
    if (try_fused(WICK_OP_ATTENTION, &p, ins, {o})) y = o;
  }
  if (!y.defined()) y = attention_composite(a.q, k, v, bias, masked, a.scale, softcap, mode, smt);
  else if (masked) y = where(*masked, scalar(0, t), y);
  if (a.three_d) y = reshape(y.permute({0, 2, 1, 3}), {y.dim(0), y.dim(2), y.dim(1) * y.dim(3)});
  out(0, y);
}

// Q sqrt(s) (K sqrt(s))^T, softcap, + bias, softmax (in the softmax precision), the guard of
// fully masked rows, times V; qk_matmul_output (output 3) as `mode` selects.
Tensor OnnxLowering::Impl::attention_composite(const Tensor& q, const Tensor& k, const Tensor& v,
                                               const Tensor& bias, const std::optional<Tensor>& masked,
                                               double scale, double softcap, int64_t mode, DType smt) {
  const DType t = q.dtype();
  Tensor qk = matmul(affine(q, scale, 0), affine(k, scale, 0).transpose(2, 3));
  if (softcap > 0) qk = affine(op1(WICK_OP_TANH, affine(qk, 1.0 / softcap, 0)), softcap, 0);
  const Tensor with_bias = bias.defined() ? op2(WICK_OP_ADD, qk, bias) : qk;
  if (mode == 0 || mode == 1) out(3, qk);
  if (mode == 2) out(3, with_bias);
  Tensor p = softmax(cast(with_bias, smt), with_bias.rank() - 1, false);
  if (masked) p = where(*masked, scalar(0, smt), p);
  p = cast(p, t);
  if (mode == 3) out(3, p);
  return matmul(p, v);
}

// --- RotaryEmbedding (opset 23) ---

// cos_cache / sin_cache as [B, S, 1, half]: rows picked by position_ids [B, S] from a [max, half]
// cache, or the cache itself when it is already [B, S, half].
Tensor OnnxLowering::Impl::rotary_cache(const Tensor& cache, const std::optional<std::vector<int64_t>>& pos,
                                        int64_t B, int64_t S) {
  Tensor c = cache;
  if (pos) {
    if (c.rank() != 2) throw NotImportable(node_context() + ": a cache not 2-D with position_ids");
    std::vector<int64_t> ids = *pos;
    for (int64_t& i : ids)
      if (i < 0 || i >= c.dim(0)) throw NotImportable(node_context() + ": a position id outside the cache");
    Tensor o = Tensor::empty({static_cast<int64_t>(ids.size()), c.dim(1)}, c.dtype(), dev());
    const wick_axis_params p{sizeof(wick_axis_params), 0, 0};
    exec(WICK_OP_INDEX_SELECT, &p, {c, upload_i64(ids, {static_cast<int64_t>(ids.size())})}, {o});
    c = o;
  }
  if (c.numel() % (B * S) != 0) throw NotImportable(node_context() + ": the cache is not [batch, sequence, dim / 2]");
  return reshape(c, {B, S, c.numel() / (B * S)}).unsqueeze(2);
}

// x [B, H, S, D] (or [B, S, H * D] with num_heads): the first rotary_embedding_dim (default D)
// of each head rotated by the cached angles, as halves (x1, x2) or interleaved pairs: real =
// cos x1 - sin x2, imag = sin x1 + cos x2; the rest passed through.
void OnnxLowering::Impl::lower_rotary_embedding() {
  const Tensor input = in(0);
  const bool interleaved = attr_i("interleaved", 0) != 0;
  const int64_t heads = attr_i("num_heads", 0), dim_attr = attr_i("rotary_embedding_dim", 0);
  Tensor x;  // [B, S, H, D]
  if (input.rank() == 4) x = input.permute({0, 2, 1, 3});
  else if (input.rank() == 3 && heads > 0 && input.dim(2) % heads == 0)
    x = reshape(input, {input.dim(0), input.dim(1), heads, input.dim(2) / heads});
  else throw NotImportable(node_context() + ": input neither 4-D nor 3-D with num_heads dividing it");
  const int64_t B = x.dim(0), S = x.dim(1), D = x.dim(3), rd = dim_attr == 0 ? D : dim_attr;
  if (rd < 2 || rd > D || rd % 2 != 0) throw NotImportable(node_context() + ": rotary_embedding_dim out of range");
  std::optional<std::vector<int64_t>> pos;
  if (has_in(3)) pos = host_ints(in(3));
  if (pos && static_cast<int64_t>(pos->size()) != B * S) throw NotImportable(node_context() + ": position_ids not [B, S]");
  const Tensor c = rotary_cache(in(1), pos, B, S), sn = rotary_cache(in(2), pos, B, S);
  if (c.dtype() != x.dtype() || sn.dtype() != x.dtype() || c.dim(3) != rd / 2 || sn.dim(3) != rd / 2)
    throw NotImportable(node_context() + ": cos_cache / sin_cache not [.., rotary_embedding_dim / 2] in X's dtype");
  const Tensor xr = x.narrow(3, 0, rd);
  const Tensor x1 = interleaved ? xr.slice(3, 0, rd, 2) : xr.narrow(3, 0, rd / 2);
  const Tensor x2 = interleaved ? xr.slice(3, 1, rd, 2) : xr.narrow(3, rd / 2, rd / 2);
  const Tensor real = op2(WICK_OP_SUB, op2(WICK_OP_MUL, c, x1), op2(WICK_OP_MUL, sn, x2));
  const Tensor imag = op2(WICK_OP_ADD, op2(WICK_OP_MUL, sn, x1), op2(WICK_OP_MUL, c, x2));
  Tensor y = interleaved ? reshape(stack({real, imag}, 4), {B, S, x.dim(2), rd}) : concat({real, imag}, 3);
  if (rd < D) y = concat({y, x.narrow(3, rd, D - rd)}, 3);
  out(0, input.rank() == 4 ? g.contiguous(y.permute({0, 2, 1, 3})) : reshape(y, input.shape()));
}

}  // namespace wick::onnx
