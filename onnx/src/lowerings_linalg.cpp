// lowerings_linalg.cpp — Det as Wick ops: Gaussian elimination with partial pivoting on the
// device (ARGMAX picks each pivot row, GATHER_ELEMENTS swaps it in), then the sign of the row
// swaps times the product of the diagonal.
#include "lowerings.hpp"

namespace wick::onnx {

void OnnxLowering::Impl::lower_det() {
  const Tensor x = in(0);
  if (x.rank() < 2 || x.dim(-1) != x.dim(-2)) throw NotImportable("Det of a non-square input");
  const int64_t n = x.dim(-1);
  const Shape lead(x.shape().begin(), x.shape().end() - 2);
  if (x.numel() == 0) return out(0, filled(lead, x.dtype(), 1));  // no matrices, or 0 x 0 ones (det 1)
  int64_t batch = 1;
  for (int64_t d : lead) batch *= d;  // at most numel
  const DType ct = x.dtype() == DType::F64 ? DType::F64 : DType::F32;
  Tensor a = g.contiguous(reshape(cast(x, ct), {batch, n, n}));
  Tensor sign = filled({batch, 1}, ct, 1);
  const Tensor rows = positions({batch, n}, 1);
  const Tensor zero = scalar(0, ct);
  for (int64_t k = 0; k < n; ++k) {
    // The pivot: the largest magnitude in column k at or below the diagonal.
    const Tensor col = op1(WICK_OP_ABS, a.narrow(1, k, n - k).narrow(2, k, 1).reshape({batch, n - k}));
    Tensor best = Tensor::empty({batch, 1}, DType::I64, dev());
    const wick_axis_params ap{sizeof(wick_axis_params), 1, 0};
    exec(WICK_OP_ARGMAX, &ap, {col}, {best});
    const Tensor p = affine(best, 1, static_cast<double>(k));
    const Tensor kk = scalar(static_cast<double>(k), DType::I64);
    const Tensor is_k = op2(WICK_OP_EQ, rows, kk, DType::Bool);
    const Tensor is_p = op2(WICK_OP_EQ, rows, p, DType::Bool);
    const Tensor perm = where(is_k, p, where(is_p, kk.broadcast_to({batch, n}), rows));
    Tensor swapped = Tensor::empty({batch, n, n}, ct, dev());
    const wick_axis_params gp{sizeof(wick_axis_params), 1, 0};
    exec(WICK_OP_GATHER_ELEMENTS, &gp, {a, perm.reshape({batch, n, 1}).broadcast_to({batch, n, n})}, {swapped});
    a = swapped;
    sign = where(op2(WICK_OP_NE, p, kk, DType::Bool), affine(sign, -1, 0), sign);
    if (k + 1 == n) break;
    // Rows below k less factor * row k; a zero pivot leaves them (the determinant is 0 anyway).
    const Tensor pivot = a.narrow(1, k, 1).narrow(2, k, 1);  // [batch, 1, 1]
    const Tensor below = a.narrow(1, k + 1, n - k - 1);
    Tensor factor = op2(WICK_OP_DIV, below.narrow(2, k, 1), pivot);
    factor = where(op2(WICK_OP_EQ, pivot, zero, DType::Bool), zero, factor);
    const Tensor reduced = op2(WICK_OP_SUB, below, op2(WICK_OP_MUL, factor, a.narrow(1, k, 1)));
    exec(WICK_OP_COPY, nullptr, {reduced}, {a.narrow(1, k + 1, n - k - 1)});
  }
  std::vector<int64_t> diag;
  for (int64_t i = 0; i < n; ++i) diag.push_back(i * (n + 1));
  Tensor d = Tensor::empty({batch, n}, ct, dev());
  const wick_axis_params p{sizeof(wick_axis_params), 1, 0};
  exec(WICK_OP_INDEX_SELECT, &p, {a.reshape({batch, n * n}), upload_i64(diag, {n})}, {d});
  const Tensor det = op2(WICK_OP_MUL, reduce(WICK_OP_REDUCE_PROD, d, {1}, false), sign.reshape({batch}));
  out(0, cast(det, x.dtype()).reshape(lead));
}

}  // namespace wick::onnx
