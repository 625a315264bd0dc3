// lowerings_matmul.cpp — matrix products: MatMul, Gemm and Einsum.
#include "lowerings.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace wick::onnx {

void OnnxLowering::Impl::lower_matmul() {
  out(0, matmul(in(0), in(1)));
}
void OnnxLowering::Impl::lower_gemm() {
  Tensor a = in(0), b = in(1);
  if (attr_i("transA", 0)) a = a.t();
  if (attr_i("transB", 0)) b = b.t();
  Tensor y = matmul(a, b);
  const double alpha = attr_f("alpha", 1.0f), beta = attr_f("beta", 1.0f);
  if (alpha != 1.0) y = affine(y, alpha, 0);
  // Before opset 7, C broadcasts to [M, N] only with broadcast = 1 (NumPy's rules, as from 7);
  // with broadcast = 0 it must be [M, N] itself.
  const onnx::AttributeProto* broadcast = attr("broadcast");
  if (broadcast && attr_i("broadcast", 0) != 0 && attr_i("broadcast", 0) != 1) refuse_attr(*broadcast, "is not 0 or 1");
  if (has_in(2)) {  // beta = 0 too: 0 * C, as the reference computes it (an Inf in C gives NaN)
    const Tensor c = in(2);
    if (broadcast && attr_i("broadcast", 0) == 0 && c.shape() != y.shape())
      throw NotImportable(node_context() + ": broadcast = 0 with C of shape " + shape_to_string(c.shape()) +
                          " for a product of shape " + shape_to_string(y.shape()));
    y = op2(WICK_OP_ADD, y, beta == 1.0 ? c : affine(c, beta, 0));
  }
  out(0, y);
}

namespace {

// Einsum's input terms: the equation (spaces removed) up to its arrow, split at the commas.
std::vector<std::string> einsum_terms(const std::string& eq, size_t arrow) {
  std::vector<std::string> terms;
  for (size_t start = 0, comma;; start = comma + 1) {
    comma = eq.find(',', start);
    const size_t stop = std::min(comma, arrow);
    terms.push_back(eq.substr(start, stop - start));
    if (comma == std::string::npos || comma > arrow) break;
  }
  return terms;
}

// Every term's ellipsis replaced by digits, one per axis it stands for (the last ones of the
// widest ellipsis, right-aligned); returns the digits of the widest.
std::string expand_ellipses(std::vector<std::string>& terms, const std::vector<Tensor>& xs) {
  int ellipsis = 0;  // the most axes an ellipsis stands for
  for (size_t k = 0; k < terms.size(); ++k) {
    const size_t at = terms[k].find("...");
    if (at != std::string::npos)
      ellipsis = std::max(ellipsis, xs[k].rank() - static_cast<int>(terms[k].size() - 3));
  }
  std::string dots;
  for (int j = 0; j < ellipsis; ++j) dots += static_cast<char>('0' + j);
  for (size_t k = 0; k < terms.size(); ++k) {
    std::string& t = terms[k];
    const size_t at = t.find("...");
    if (at == std::string::npos) continue;
    const int count = xs[k].rank() - static_cast<int>(t.size() - 3);
    if (count < 0) throw NotImportable("Einsum term rank mismatch");
    t.replace(at, 3, dots.substr(dots.size() - static_cast<size_t>(count)));
  }
  return dots;
}

// Einsum's output letters: after the arrow (its ellipsis as `dots`), or without one the ellipsis
// axes, then the letters that appear once, alphabetically.
std::string einsum_output(const std::string& eq, size_t arrow,
                          const std::vector<std::string>& terms, const std::string& letters,
                          const std::string& dots) {
  std::string output;
  if (arrow != std::string::npos) {
    output = eq.substr(arrow + 2);
    const size_t at = output.find("...");
    if (at != std::string::npos) output.replace(at, 3, dots);
  } else {  // implicit: the ellipsis axes, then the letters that appear once, alphabetically
    for (char c : letters) {
      int count = 0;
      for (const std::string& t : terms) count += static_cast<int>(std::count(t.begin(), t.end(), c));
      if (count == 1 && dots.find(c) == std::string::npos) output += c;
    }
    std::sort(output.begin(), output.end());
    output = dots + output;
  }
  return output;
}

}  // namespace

// Einsum: an ellipsis stands for the same (right-aligned, broadcast) leading axes in every term,
// named by digits; a letter repeated within one term takes that term's diagonal (a host-built
// identity mask, then a sum over the second axis). Then every operand's axes are permuted to the
// order of all letters (first appearance) with extent-1 axes for the letters it lacks, the
// broadcast product, a sum over the letters the output drops, and the output's permutation.
void OnnxLowering::Impl::lower_einsum() {
  std::string eq = attr_s("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms = einsum_terms(eq, arrow);
  if (terms.size() != n.inputs.size()) throw NotImportable("Einsum terms and inputs differ in number");
  std::vector<Tensor> xs;
  for (size_t k = 0; k < terms.size(); ++k) xs.push_back(in(k));
  const std::string dots = expand_ellipses(terms, xs);
  // Repeated letters: the diagonal over each pair, the second axis summed away.
  for (size_t k = 0; k < terms.size(); ++k) xs[k] = einsum_diagonals(terms[k], xs[k]);
  std::string letters;
  for (const std::string& t : terms)
    for (char c : t)
      if (letters.find(c) == std::string::npos) letters += c;
  const std::string output = einsum_output(eq, arrow, terms, letters, dots);
  const Tensor product = einsum_product(xs, terms, letters);
  std::vector<int32_t> summed;
  std::string kept;
  for (size_t i = 0; i < letters.size(); ++i) {
    if (output.find(letters[i]) == std::string::npos) summed.push_back(static_cast<int32_t>(i));
    else kept += letters[i];
  }
  Tensor r = summed.empty() ? product : reduce(WICK_OP_REDUCE_SUM, product, summed, false);
  std::vector<int> perm;
  for (char c : output) perm.push_back(static_cast<int>(kept.find(c)));
  out(0, r.permute(perm));
}
// One Einsum operand x with its term t's repeated letters taken as diagonals: for each pair, a
// host-built identity mask over the two axes, then a sum over the second (erased from t).
Tensor OnnxLowering::Impl::einsum_diagonals(std::string& t, Tensor x) {
  if (static_cast<int>(t.size()) != x.rank()) throw NotImportable("Einsum term rank mismatch");
  for (size_t p = 0; p < t.size(); ++p) {
    for (size_t q = t.size(); q-- > p + 1;) {
      if (t[q] != t[p]) continue;
      const int64_t d = x.dim(static_cast<int>(p));
      if (x.dim(static_cast<int>(q)) != d) throw NotImportable("Einsum diagonal of unequal axes");
      std::vector<double> eye(static_cast<size_t>(host_count(static_cast<double>(checked_mul(d, d)), "Einsum's diagonal mask size")), 0.0);
      for (int64_t i = 0; i < d; ++i) eye[static_cast<size_t>(i * d + i)] = 1;
      Shape ms(static_cast<size_t>(x.rank()), 1);
      ms[p] = ms[q] = d;
      const Tensor mask = reshape(upload_values(eye, {d, d}, DType::Bool), ms);
      x = reduce(WICK_OP_REDUCE_SUM, where(mask, x, scalar(0, x.dtype())), {static_cast<int32_t>(q)}, false);
      t.erase(q, 1);
    }
  }
  return x;
}
// The broadcast product of the operands, each permuted to the order of `letters` with extent-1
// axes for the letters its term lacks.
Tensor OnnxLowering::Impl::einsum_product(const std::vector<Tensor>& xs,
                                          const std::vector<std::string>& terms,
                                          const std::string& letters) {
  Tensor product;
  for (size_t k = 0; k < terms.size(); ++k) {
    const Tensor x = xs[k];
    const std::string& t = terms[k];
    std::vector<int> perm;
    Shape s;
    for (char c : letters) {
      const size_t at = t.find(c);
      if (at != std::string::npos) perm.push_back(static_cast<int>(at));
      s.push_back(at != std::string::npos ? x.dim(static_cast<int>(at)) : 1);
    }
    const Tensor aligned = reshape(x.permute(perm), s);
    product = k == 0 ? aligned : op2(WICK_OP_MUL, product, aligned);
  }
  return product;
}

}  // namespace wick::onnx
