// lowerings_rnn.cpp — RNN, GRU and LSTM as Wick ops: the input projection of every step in
// one matmul, then per step a matmul of the hidden state, elementwise gates and activations.
// sequence_lens is read back to the host: it selects, per batch entry, which steps update the
// state (a host-built mask and WHERE) and, for the reverse direction, which steps are reversed
// (GATHER_ELEMENTS with host-built positions, as ReverseSequence).
#include "lowerings.hpp"

#include <algorithm>
#include <cctype>

namespace wick::onnx {

namespace {

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The ONNX activations that take alpha, and those that take beta.
bool takes_alpha(const std::string& f) {
  return f == "affine" || f == "leakyrelu" || f == "thresholdedrelu" || f == "scaledtanh" ||
         f == "hardsigmoid" || f == "elu";
}
bool takes_beta(const std::string& f) {
  return f == "affine" || f == "scaledtanh" || f == "hardsigmoid";
}

}  // namespace

Tensor OnnxLowering::Impl::activation(const std::string& name, const Tensor& x,
                                      std::optional<double> alpha, std::optional<double> beta) {
  const std::string f = lowercase(name);
  if (f == "tanh") return op1(WICK_OP_TANH, x);
  if (f == "sigmoid") return op1(WICK_OP_SIGMOID, x);
  if (f == "relu") return op1(WICK_OP_RELU, x);
  if (f == "affine") return affine(x, alpha.value_or(1.0), beta.value_or(0.0));
  if (f == "leakyrelu") return where_negative(x, affine(x, alpha.value_or(0.01), 0));
  if (f == "thresholdedrelu")
    return where(op2(WICK_OP_GT, x, scalar(alpha.value_or(1.0), x.dtype()), DType::Bool), x,
                 scalar(0, x.dtype()));
  if (f == "scaledtanh")
    return affine(op1(WICK_OP_TANH, affine(x, beta.value_or(1.0), 0)), alpha.value_or(1.0), 0);
  if (f == "hardsigmoid") return hard_sigmoid(x, alpha.value_or(0.2), beta.value_or(0.5));
  if (f == "elu") return elu(x, alpha.value_or(1.0));
  if (f == "softsign") return op2(WICK_OP_DIV, x, affine(op1(WICK_OP_ABS, x), 1, 1));
  if (f == "softplus") return op1(WICK_OP_LOG1P, op1(WICK_OP_EXP, x));
  throw NotImportable(n.op_type + " activation " + name);
}

// A recurrent layer as recurrent() reads it, for the helpers that run it: its inputs (X
// time-major and contiguous), sizes and attributes, its activations and its sequence lengths.
struct OnnxLowering::Impl::Recurrence {
  Cell cell = Cell::Rnn;
  bool batch_first = false;
  Tensor x, w, r;
  DType dt = DType::F32;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, gates = 0, dirs = 0;
  std::string direction;
  bool linear_before_reset = false, input_forget = false;
  std::optional<double> clip;
  // The activations, f (and g, h) per direction, each with the alpha and beta it consumes in turn.
  size_t per_dir = 0;
  std::vector<std::string> fs{};
  std::vector<std::optional<double>> alphas{}, betas{};
  // Per batch entry, the steps that count; the others leave the state as it was and give Y = 0.
  std::vector<int64_t> lens{};
  bool ragged = false;
  bool want_y = false;
};
// One direction of a recurrent layer: its weights and biases, LSTM's peepholes, and the index in
// Recurrence::fs of its first activation.
struct OnnxLowering::Impl::RecurrentDirection {
  Tensor wd, rd;
  std::optional<Tensor> wb, rb, peep;
  size_t f0 = 0;
};

// The ONNX recurrent layers. Weights W [dirs, G*H, I] and R [dirs, G*H, H] hold G gate blocks
// (RNN: one; GRU: z, r, h; LSTM: i, o, f, c), B [dirs, 2*G*H] the input then the recurrent biases,
// P [dirs, 3*H] LSTM's peepholes (i, o, f). X is [seq, batch, I], or [batch, seq, I] with
// layout = 1 (the states and outputs then batch-first too).
void OnnxLowering::Impl::recurrent(Cell cell) {
  const Recurrence rc = recurrence(cell);
  const bool batch_first = rc.batch_first, want_y = rc.want_y;
  const DType dt = rc.dt;
  const int64_t seq = rc.seq, batch = rc.batch, hidden = rc.hidden, dirs = rc.dirs;
  Tensor y, y_h = Tensor::empty({dirs, batch, hidden}, dt, dev()), y_c = Tensor::empty({dirs, batch, hidden}, dt, dev());
  if (want_y) y = filled({seq, dirs, batch, hidden}, dt, 0);
  for (int64_t d = 0; d < dirs; ++d) recurrent_direction(rc, d, y, y_h, y_c);
  if (want_y) out(0, batch_first ? y.permute({2, 0, 1, 3}) : y);
  out(1, batch_first ? y_h.permute({1, 0, 2}) : y_h);
  if (cell == Cell::Lstm) out(2, batch_first ? y_c.permute({1, 0, 2}) : y_c);
}
// The layer's inputs, sizes and attributes, checked; its activations; its sequence lengths.
OnnxLowering::Impl::Recurrence OnnxLowering::Impl::recurrence(Cell cell) {
  const bool batch_first = attr_i("layout", 0) != 0;
  Tensor x = in(0);
  if (x.rank() != 3 || in(1).rank() != 3 || in(2).rank() != 3)
    throw NotImportable("malformed " + n.op_type + ": X, W or R not of rank 3");
  if (batch_first) x = x.permute({1, 0, 2});
  x = g.contiguous(x);
  const Tensor w = in(1), r = in(2);
  const DType dt = x.dtype();
  const int64_t seq = x.dim(0), batch = x.dim(1), input = x.dim(2), hidden = r.dim(2);
  const int64_t gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  if (const onnx::AttributeProto* a = attr("hidden_size"); a != nullptr && a->i != hidden)
    refuse_attr(*a, "differs from R's hidden size " + std::to_string(hidden) + " (a malformed node)");
  // One step per sequence position and a host entry per batch entry: bounded like Loop and Scan.
  if (seq > max_loop_steps() || batch > max_host_elements() || hidden > max_host_elements())
    throw NotImportable(n.op_type + " of " + std::to_string(seq) + " steps, batch " + std::to_string(batch) +
                        " and hidden size " + std::to_string(hidden) +
                        (seq > max_loop_steps() ? limit_hint("max_loop_steps") : limit_hint("max_host_elements")));
  const std::string direction = attr_choice("direction", "forward", {"forward", "reverse", "bidirectional"});
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    throw NotImportable(n.op_type + " direction " + direction);
  if (w.dim(0) != dirs || w.dim(1) != gates * hidden || w.dim(2) != input)
    throw NotImportable(n.op_type + ": W's shape does not match X, R and direction");
  Recurrence rc{.cell = cell, .batch_first = batch_first, .x = x, .w = w, .r = r, .dt = dt,
                .seq = seq, .batch = batch, .input = input, .hidden = hidden, .gates = gates,
                .dirs = dirs, .direction = direction,
                .linear_before_reset = attr_i("linear_before_reset", 0) != 0,
                .input_forget = attr_i("input_forget", 0) != 0,
                .clip = attr("clip") != nullptr ? std::optional<double>(attr_f("clip", 0))
                                                       : std::nullopt};
  recurrent_activations(rc);

  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (has_in(4)) lens = host_ints(in(4));
  if (lens.size() != static_cast<size_t>(batch)) throw NotImportable(n.op_type + ": sequence_lens length");
  rc.ragged = std::any_of(lens.begin(), lens.end(), [&](int64_t l) { return l != seq; });
  rc.lens = lens;
  rc.want_y = !n.outputs.empty() && !n.outputs[0].empty();
  return rc;
}
// The activations, f (and g, h) per direction, each with the alpha and beta it consumes in turn.
void OnnxLowering::Impl::recurrent_activations(Recurrence& rc) {
  const Cell cell = rc.cell;
  const int64_t dirs = rc.dirs;
  const size_t per_dir = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 2 : 3;
  std::vector<std::string> fs;
  if (const onnx::AttributeProto* a = attr("activations")) {
    for (const std::string& s : a->strings) fs.push_back(s);
  }
  if (fs.empty()) {
    const std::vector<std::string> dflt = cell == Cell::Rnn   ? std::vector<std::string>{"Tanh"}
                                          : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                              : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < dirs; ++d) fs.insert(fs.end(), dflt.begin(), dflt.end());
  }
  if (fs.size() != per_dir * static_cast<size_t>(dirs))
    throw NotImportable(n.op_type + ": " + std::to_string(fs.size()) + " activations for " +
                        std::to_string(dirs) + " direction(s)");
  std::vector<std::optional<double>> alphas(fs.size()), betas(fs.size());
  {
    const onnx::AttributeProto* aa = attr("activation_alpha");
    const onnx::AttributeProto* ab = attr("activation_beta");
    size_t ia = 0, ib = 0;
    for (size_t k = 0; k < fs.size(); ++k) {
      const std::string f = lowercase(fs[k]);
      if (aa != nullptr && takes_alpha(f) && ia < aa->floats.size()) alphas[k] = aa->floats[ia++];
      if (ab != nullptr && takes_beta(f) && ib < ab->floats.size()) betas[k] = ab->floats[ib++];
    }
  }
  rc.per_dir = per_dir;
  rc.fs = fs;
  rc.alphas = alphas;
  rc.betas = betas;
}
// t ([seq, batch, ...]) with time reversed within each entry's length (the reverse direction reads
// and writes this way).
Tensor OnnxLowering::Impl::reverse_steps(const Recurrence& rc, const Tensor& t) {
  const int64_t seq = rc.seq, batch = rc.batch;
  const std::vector<int64_t>& lens = rc.lens;
  std::vector<int64_t> pos(static_cast<size_t>(t.numel()));
  const int64_t inner = t.numel() / std::max<int64_t>(seq * batch, 1);
  for (int64_t s = 0; s < seq; ++s)
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      const int64_t from = s < len ? len - 1 - s : s;
      for (int64_t k = 0; k < inner; ++k) pos[static_cast<size_t>((s * batch + b) * inner + k)] = from;
    }
  Tensor o = Tensor::empty(t.shape(), t.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), 0, 0};
  exec(WICK_OP_GATHER_ELEMENTS, &p, {t, upload_i64(pos, t.shape())}, {o});
  return o;
}
// Direction d's initial state from input `input_index` (initial_h, initial_c), zeros without it.
Tensor OnnxLowering::Impl::recurrent_initial(const Recurrence& rc, size_t input_index, int64_t d) {
  const int64_t batch = rc.batch, hidden = rc.hidden;
  if (!has_in(input_index)) return filled({batch, hidden}, rc.dt, 0);
  Tensor s = in(input_index);
  if (rc.batch_first) s = s.permute({1, 0, 2});
  return g.contiguous(s.narrow(0, d, 1).reshape({batch, hidden}));
}
// Activation f of the layer (an index into Recurrence::fs) on t, clipped first where clip is set.
Tensor OnnxLowering::Impl::recurrent_activation(const Recurrence& rc, size_t f, const Tensor& t) {
  auto clipped = [&](const Tensor& v) {
    if (!rc.clip) return v;
    return op2(WICK_OP_MAXIMUM, op2(WICK_OP_MINIMUM, v, scalar(*rc.clip, rc.dt)),
               scalar(-*rc.clip, rc.dt));
  };
  return activation(rc.fs[f], clipped(t), rc.alphas[f], rc.betas[f]);
}
// Direction d's weights, biases and peepholes.
OnnxLowering::Impl::RecurrentDirection OnnxLowering::Impl::recurrent_weights(const Recurrence& rc,
                                                                             int64_t d) {
  const int64_t gates = rc.gates, hidden = rc.hidden, input = rc.input;
  RecurrentDirection dir;
  dir.f0 = static_cast<size_t>(d) * rc.per_dir;
  dir.wd = rc.w.narrow(0, d, 1).reshape({gates * hidden, input});
  dir.rd = rc.r.narrow(0, d, 1).reshape({gates * hidden, hidden});
  if (has_in(3)) {
    const Tensor bd = in(3).narrow(0, d, 1).reshape({2 * gates * hidden});
    dir.wb = bd.narrow(0, 0, gates * hidden);
    dir.rb = bd.narrow(0, gates * hidden, gates * hidden);
  }
  if (rc.cell == Cell::Lstm && has_in(7)) dir.peep = in(7).narrow(0, d, 1).reshape({3 * hidden});
  return dir;
}
// Direction d of the layer: every step's input projection at once, then the steps in turn. The
// final states go to y_h and y_c at d and, when Y is wanted, the steps' outputs to y.
void OnnxLowering::Impl::recurrent_direction(const Recurrence& rc, int64_t d, const Tensor& y,
                                             const Tensor& y_h, const Tensor& y_c) {
  const Cell cell = rc.cell;
  const DType dt = rc.dt;
  const int64_t seq = rc.seq, batch = rc.batch, input = rc.input, hidden = rc.hidden;
  const int64_t gates = rc.gates;
  const std::vector<int64_t>& lens = rc.lens;
  const bool want_y = rc.want_y;
  const bool reverse = rc.direction == "reverse" || d == 1;
  const RecurrentDirection dir = recurrent_weights(rc, d);
  // Every step's input projection at once: [seq, batch, G*H], the input bias included.
  const Tensor xs = reverse ? reverse_steps(rc, rc.x) : rc.x;
  Tensor xw = matmul(xs.reshape({seq * batch, input}), dir.wd.t());
  if (dir.wb) xw = op2(WICK_OP_ADD, xw, *dir.wb);
  xw = xw.reshape({seq, batch, gates * hidden});
  Tensor h = recurrent_initial(rc, 5, d), c = recurrent_initial(rc, 6, d);
  Tensor yd = want_y ? filled({seq, batch, hidden}, dt, 0) : Tensor();
  for (int64_t s = 0; s < seq; ++s) {
    const Tensor xt = xw.narrow(0, s, 1).reshape({batch, gates * hidden});
    Tensor c_new;
    Tensor h_new = recurrent_step(rc, dir, xt, h, c, c_new);
    Tensor y_t = h_new;
    if (rc.ragged) {
      std::vector<double> live(static_cast<size_t>(batch));
      for (int64_t b = 0; b < batch; ++b) live[static_cast<size_t>(b)] = s < lens[static_cast<size_t>(b)];
      const Tensor mask = upload_values(live, {batch, 1}, DType::Bool);
      h_new = where(mask, h_new, h);
      if (cell == Cell::Lstm) c_new = where(mask, c_new, c);
      y_t = where(mask, y_t, scalar(0, dt));
    }
    h = h_new;
    c = c_new;
    if (want_y) exec(WICK_OP_COPY, nullptr, {y_t.reshape({1, batch, hidden})}, {yd.narrow(0, s, 1)});
  }
  exec(WICK_OP_COPY, nullptr, {h.reshape({1, batch, hidden})}, {y_h.narrow(0, d, 1)});
  if (cell == Cell::Lstm) exec(WICK_OP_COPY, nullptr, {c.reshape({1, batch, hidden})}, {y_c.narrow(0, d, 1)});
  if (want_y) {
    if (reverse) yd = reverse_steps(rc, yd);
    exec(WICK_OP_COPY, nullptr, {yd.reshape({seq, 1, batch, hidden})}, {y.narrow(1, d, 1)});
  }
}
// One step of the cell: the new hidden state from the step's input projection xt and the hidden
// state h (LSTM: and the cell state c, whose new value goes to c_new).
Tensor OnnxLowering::Impl::recurrent_step(const Recurrence& rc, const RecurrentDirection& dir,
                                          const Tensor& xt, const Tensor& h, const Tensor& c,
                                          Tensor& c_new) {
  const Cell cell = rc.cell;
  const int64_t hidden = rc.hidden;
  const Tensor& rd = dir.rd;
  const std::optional<Tensor>& rb = dir.rb;
  const std::optional<Tensor>& peep = dir.peep;
  auto act = [&](size_t k, const Tensor& t) { return recurrent_activation(rc, dir.f0 + k, t); };
  auto block = [&](const Tensor& t, int64_t k) { return t.narrow(1, k * hidden, hidden); };
  Tensor h_new;
  if (cell == Cell::Gru) {
    // z and r from both projections; h from the reset state (or, with linear_before_reset,
    // the reset applied after the recurrent projection).
    Tensor hr = matmul(h, rd.narrow(0, 0, 2 * hidden).t());
    if (rb) hr = op2(WICK_OP_ADD, hr, rb->narrow(0, 0, 2 * hidden));
    const Tensor z = act(0, op2(WICK_OP_ADD, block(xt, 0), block(hr, 0)));
    const Tensor rg = act(0, op2(WICK_OP_ADD, block(xt, 1), block(hr, 1)));
    const Tensor rh = rd.narrow(0, 2 * hidden, hidden).t();
    Tensor cand;
    if (rc.linear_before_reset) {
      Tensor lin = matmul(h, rh);
      if (rb) lin = op2(WICK_OP_ADD, lin, rb->narrow(0, 2 * hidden, hidden));
      cand = op2(WICK_OP_MUL, rg, lin);
    } else {
      cand = matmul(op2(WICK_OP_MUL, rg, h), rh);
      if (rb) cand = op2(WICK_OP_ADD, cand, rb->narrow(0, 2 * hidden, hidden));
    }
    const Tensor ht = act(1, op2(WICK_OP_ADD, block(xt, 2), cand));
    // (1 - z) h~ + z h = h~ + z (h - h~)
    h_new = op2(WICK_OP_ADD, ht, op2(WICK_OP_MUL, z, op2(WICK_OP_SUB, h, ht)));
  } else {
    Tensor pre = op2(WICK_OP_ADD, xt, matmul(h, rd.t()));
    if (rb) pre = op2(WICK_OP_ADD, pre, *rb);
    if (cell == Cell::Rnn) {
      h_new = act(0, pre);
    } else {
      auto peeped = [&](const Tensor& t, int64_t k, const Tensor& state) {
        return peep ? op2(WICK_OP_ADD, t, op2(WICK_OP_MUL, peep->narrow(0, k * hidden, hidden), state)) : t;
      };
      const Tensor i = act(0, peeped(block(pre, 0), 0, c));
      const Tensor f = rc.input_forget ? affine(i, -1, 1) : act(0, peeped(block(pre, 2), 2, c));
      const Tensor ct = act(1, block(pre, 3));
      c_new = op2(WICK_OP_ADD, op2(WICK_OP_MUL, f, c), op2(WICK_OP_MUL, i, ct));
      const Tensor o = act(0, peeped(block(pre, 1), 1, c_new));
      h_new = op2(WICK_OP_MUL, o, act(2, c_new));
    }
  }
  return h_new;
}

}  // namespace wick::onnx
