// lowerings_training.cpp — the optimizers of the ai.onnx.preview.training domain (Adagrad,
// Momentum, Adam) as elementwise Wick ops. Each takes the learning rate R and the update count T
// (scalars), then n tensors of each of its groups (X..., G..., and its state V... and/or H...),
// and gives the new X... and the new state, group by group. R, T and every formula of the spec run
// on the device, the T > 0 branches as WHERE; the host supplies only the attributes.
#include "lowerings.hpp"

namespace wick::onnx {

// The number n of optimized tensors of a node with `groups` groups of inputs after R and T.
size_t OnnxLowering::Impl::optimized_tensors(size_t groups) {
  const size_t rest = n.inputs.size() >= 2 ? n.inputs.size() - 2 : 0;
  if (rest == 0 || rest % groups != 0)
    throw NotImportable(n.op_type + ": " + std::to_string(n.inputs.size()) +
                        " inputs are not R, T and " + std::to_string(groups) + " groups");
  return rest / groups;
}
// G + norm_coefficient * X: the gradient with the L2 regularisation term.
Tensor OnnxLowering::Impl::regularized(const Tensor& x, const Tensor& grad, double norm) {
  return norm == 0 ? grad : op2(WICK_OP_ADD, affine(x, norm, 0), grad);
}

// Adagrad: r = R / (1 + T * decay_factor); G' = norm * X + G; H_new = H + G'^2;
// X_new = X - r * G' / (sqrt(H_new) + epsilon).
void OnnxLowering::Impl::lower_adagrad() {
  const size_t count = optimized_tensors(3);
  const DType dt = in(2).dtype();
  const double decay = attr_f("decay_factor", 0.0f), eps = attr_f("epsilon", 1e-6f),
               norm = attr_f("norm_coefficient", 0.0f);
  const Tensor r = op2(WICK_OP_DIV, cast(in(0), dt), affine(cast(in(1), dt), decay, 1));
  for (size_t i = 0; i < count; ++i) {
    const Tensor x = in(2 + i), h = in(2 + 2 * count + i);
    const Tensor grad = regularized(x, in(2 + count + i), norm);
    const Tensor h_new = op2(WICK_OP_ADD, h, op1(WICK_OP_SQR, grad));
    const Tensor step = op2(WICK_OP_DIV, op2(WICK_OP_MUL, r, grad),
                            affine(op1(WICK_OP_SQRT, h_new), 1, eps));
    out(i, op2(WICK_OP_SUB, x, step));
    out(count + i, h_new);
  }
}

// Momentum: G' = norm * X + G; V_new = alpha * V + beta' * G' (beta' = beta once T > 0, else 1);
// X_new = X - R * V_new ("standard") or X - R * (G' + alpha * V_new) ("nesterov").
void OnnxLowering::Impl::lower_momentum() {
  const size_t count = optimized_tensors(3);
  const DType dt = in(2).dtype();
  const double alpha = attr_f("alpha", 0.0f), beta = attr_f("beta", 0.0f),
               norm = attr_f("norm_coefficient", 0.0f);
  const std::string mode = attr_choice("mode", "", {"standard", "nesterov"});
  if (mode != "standard" && mode != "nesterov")
    throw NotImportable("Momentum mode '" + mode + "'");
  const Tensor lr = cast(in(0), dt);
  const Tensor started = op2(WICK_OP_GT, in(1), scalar(0, in(1).dtype()), DType::Bool);
  const Tensor beta_t = where(started, scalar(beta, dt), scalar(1, dt));
  for (size_t i = 0; i < count; ++i) {
    const Tensor x = in(2 + i), v = in(2 + 2 * count + i);
    const Tensor grad = regularized(x, in(2 + count + i), norm);
    const Tensor v_new = op2(WICK_OP_ADD, affine(v, alpha, 0), op2(WICK_OP_MUL, beta_t, grad));
    const Tensor dir = mode == "standard" ? v_new : op2(WICK_OP_ADD, grad, affine(v_new, alpha, 0));
    out(i, op2(WICK_OP_SUB, x, op2(WICK_OP_MUL, lr, dir)));
    out(count + i, v_new);
  }
}

// Adam: G' = norm * X + G; V_new = alpha * V + (1 - alpha) * G';
// H_new = beta * H + (1 - beta) * G'^2; R' = R * sqrt(1 - beta^T) / (1 - alpha^T) once T > 0,
// else R; X_new = (1 - norm_coefficient_post) * (X - R' * V_new / (sqrt(H_new) + epsilon)).
void OnnxLowering::Impl::lower_adam() {
  const size_t count = optimized_tensors(4);
  const DType dt = in(2).dtype();
  const double alpha = attr_f("alpha", 0.9f), beta = attr_f("beta", 0.999f),
               eps = attr_f("epsilon", 1e-6f), norm = attr_f("norm_coefficient", 0.0f),
               post = attr_f("norm_coefficient_post", 0.0f);
  const Tensor lr = cast(in(0), dt), t = cast(in(1), dt);
  const Tensor started = op2(WICK_OP_GT, in(1), scalar(0, in(1).dtype()), DType::Bool);
  const Tensor alpha_t = op2(WICK_OP_POW, scalar(alpha, dt), t);
  const Tensor beta_t = op2(WICK_OP_POW, scalar(beta, dt), t);
  const Tensor corrected = op2(WICK_OP_DIV,
                               op2(WICK_OP_MUL, lr, op1(WICK_OP_SQRT, affine(beta_t, -1, 1))),
                               affine(alpha_t, -1, 1));
  const Tensor lr_t = where(started, corrected, lr);
  for (size_t i = 0; i < count; ++i) {
    const Tensor x = in(2 + i), v = in(2 + 2 * count + i), h = in(2 + 3 * count + i);
    const Tensor grad = regularized(x, in(2 + count + i), norm);
    const Tensor v_new = op2(WICK_OP_ADD, affine(v, alpha, 0), affine(grad, 1 - alpha, 0));
    const Tensor h_new =
        op2(WICK_OP_ADD, affine(h, beta, 0), affine(op1(WICK_OP_SQR, grad), 1 - beta, 0));
    const Tensor step = op2(WICK_OP_MUL, lr_t,
                            op2(WICK_OP_DIV, v_new, affine(op1(WICK_OP_SQRT, h_new), 1, eps)));
    const Tensor x_new = op2(WICK_OP_SUB, x, step);
    out(i, post == 0 ? x_new : affine(x_new, 1 - post, 0));
    out(count + i, v_new);
    out(2 * count + i, h_new);
  }
}

}  // namespace wick::onnx
