// lowerings_spectral.cpp — DFT and STFT as matmuls with host-built cosine and sine
// matrices (the weights), the signal's real and imaginary parts multiplied on the device.
#include "lowerings.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace wick::onnx {

// The DFT along the second-to-last axis of x [..., n, c] (c = 1: real, 2: complex), of `length`
// points (the signal cut or zero-padded), `bins` of them kept; gives [..., bins, 2].
Tensor OnnxLowering::Impl::dft(const Tensor& x, int64_t length, int64_t bins, bool inverse) {
  const int64_t n = x.dim(-2), used = std::min(n, length);
  if (length < 1 || bins < 0)
    throw NotImportable("malformed " + this->n.op_type + ": a DFT of length " + std::to_string(length));
  if (checked_mul(used, bins) > max_host_elements())
    throw NotImportable(this->n.op_type + " weights of " + std::to_string(used) + " x " + std::to_string(bins) +
                        " have more than " + std::to_string(max_host_elements()) + " elements" + limit_hint("max_host_elements"));
  const DType ct = x.dtype() == DType::F64 ? DType::F64 : DType::F32;
  std::vector<double> cs(static_cast<size_t>(used * bins)), sn(cs.size());
  for (int64_t i = 0; i < used; ++i)
    for (int64_t k = 0; k < bins; ++k) {
      // The angle reduced modulo length first keeps it exact for large i * k.
      const double a = 2 * M_PI * static_cast<double>((i * k) % length) / static_cast<double>(length);
      cs[static_cast<size_t>(i * bins + k)] = std::cos(a);
      sn[static_cast<size_t>(i * bins + k)] = std::sin(a);
    }
  const Tensor cmat = upload_values(cs, {used, bins}, ct), smat = upload_values(sn, {used, bins}, ct);
  const Tensor xs = cast(x.narrow(-2, 0, used), ct);
  const Tensor re = xs.narrow(-1, 0, 1).squeeze(-1);
  // Forward: (re + i im)(cos - i sin); inverse: (re + i im)(cos + i sin) / length.
  Tensor yr = matmul(re, cmat), yi = affine(matmul(re, smat), inverse ? 1 : -1, 0);
  if (x.dim(-1) == 2) {
    const Tensor im = xs.narrow(-1, 1, 1).squeeze(-1);
    yr = op2(WICK_OP_ADD, yr, affine(matmul(im, smat), inverse ? -1 : 1, 0));
    yi = op2(WICK_OP_ADD, yi, matmul(im, cmat));
  }
  if (inverse) {
    yr = affine(yr, 1.0 / static_cast<double>(length), 0);
    yi = affine(yi, 1.0 / static_cast<double>(length), 0);
  }
  Shape os = yr.shape();
  os.push_back(2);
  Tensor y = Tensor::empty(os, ct, dev());
  exec(WICK_OP_COPY, nullptr, {yr.unsqueeze(-1)}, {y.narrow(-1, 0, 1)});
  exec(WICK_OP_COPY, nullptr, {yi.unsqueeze(-1)}, {y.narrow(-1, 1, 1)});
  return cast(y, x.dtype());
}

// DFT: `axis` an attribute in opsets 17-19, an input from 20; dft_length (input 1) cuts or pads.
void OnnxLowering::Impl::lower_dft_17() {
  dft_node(attr_i("axis", 1));
}
void OnnxLowering::Impl::lower_dft() {
  dft_node(has_in(2) ? host_ints(in(2)).at(0) : -2);
}
void OnnxLowering::Impl::dft_node(int64_t axis_value) {
  const Tensor x = in(0);
  const int r = x.rank();
  if (x.dim(-1) != 1 && x.dim(-1) != 2) throw NotImportable("DFT input's last axis is not 1 or 2");
  const int axis = norm_axis(axis_value, r);
  if (axis == r - 1) throw NotImportable("DFT along the complex axis");
  const bool inverse = attr_i("inverse", 0) != 0, onesided = attr_i("onesided", 0) != 0;
  if (inverse && onesided) throw NotImportable("DFT inverse and onesided");
  const int64_t length = has_in(1) && in(1).numel() > 0 ? host_ints(in(1)).at(0) : x.dim(axis);
  // The axis moved next to the complex one, transformed, moved back.
  std::vector<int> perm;
  for (int a = 0; a < r - 1; ++a)
    if (a != axis) perm.push_back(a);
  perm.push_back(axis);
  perm.push_back(r - 1);
  const Tensor y = dft(x.permute(perm), length, onesided ? length / 2 + 1 : length, inverse);
  std::vector<int> back(static_cast<size_t>(r));
  for (int a = 0; a < r; ++a) back[static_cast<size_t>(perm[static_cast<size_t>(a)])] = a;
  out(0, y.permute(back));
}

// STFT: frames of frame_length every frame_step samples (an INDEX_SELECT with host-built
// positions), times the window, each frame's onesided (default) DFT: [batch, frames, bins, 2].
void OnnxLowering::Impl::lower_stft() {
  const Tensor signal = in(0);
  const int64_t step = host_ints(in(1)).at(0);
  std::optional<Tensor> window;
  if (has_in(2)) window = in(2);
  const int64_t length = has_in(3) ? host_ints(in(3)).at(0) : window ? window->dim(0) : 0;
  if (length <= 0 || step <= 0) throw NotImportable("STFT without a frame length or step");
  const int64_t batch = signal.dim(0), samples = signal.dim(1), c = signal.dim(2);
  const int64_t frames = samples < length ? 0 : (samples - length) / step + 1;
  if (checked_mul(frames, length) > max_host_elements())
    throw NotImportable("STFT of " + std::to_string(frames) + " frames of " + std::to_string(length) +
                        " has more than " + std::to_string(max_host_elements()) + " positions" + limit_hint("max_host_elements"));
  std::vector<int64_t> at;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < length; ++i) at.push_back(f * step + i);
  Tensor framed = Tensor::empty({batch, frames * length, c}, signal.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), 1, 0};
  exec(WICK_OP_INDEX_SELECT, &p, {signal, upload_i64(at, {frames * length})}, {framed});
  Tensor x = framed.reshape({batch, frames, length, c});
  if (window) x = op2(WICK_OP_MUL, x, reshape(cast(*window, signal.dtype()), {length, 1}));
  const bool onesided = attr_i("onesided", 1) != 0;
  out(0, dft(x, length, onesided ? length / 2 + 1 : length, false));
}

// MelWeightMatrix: triangular filters [dft_length / 2 + 1, num_mel_bins] between mel-spaced
// edges rounded down to spectrogram bins; a constant of its scalar inputs, computed on the host
// (as the window functions are).
void OnnxLowering::Impl::lower_mel_weight_matrix() {
  const int64_t mels = host_count(host_scalar(in(0)), "MelWeightMatrix num_mel_bins"),
                length = host_count(host_scalar(in(1)), "MelWeightMatrix dft_length");
  const double rate = host_scalar(in(2)), lo_hz = host_scalar(in(3)), hi_hz = host_scalar(in(4));
  const DType t = onnx_dtype(static_cast<int32_t>(attr_i("output_datatype", 1)));
  const int64_t bins = length / 2 + 1;
  if (checked_mul(bins, mels) > max_host_elements())
    throw NotImportable("MelWeightMatrix of " + std::to_string(bins) + " x " + std::to_string(mels) +
                        " has more than " + std::to_string(max_host_elements()) + " elements" + limit_hint("max_host_elements"));
  auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double lo = mel(lo_hz), step = (mel(hi_hz) - lo) / static_cast<double>(mels + 2);
  // Each edge a spectrogram bin: a negative or non-finite one (a negative rate or frequency) is a
  // malformed node; one past the last bin is cut there, as the reference's slices are.
  std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
  for (size_t i = 0; i < edge.size(); ++i) {
    const double hz = 700 * (std::pow(10, (static_cast<double>(i) * step + lo) / 2595) - 1);
    const double e = std::floor(static_cast<double>(length + 1) * hz / rate);
    if (!(e >= 0)) throw NotImportable("malformed MelWeightMatrix: a filter edge at bin " + std::to_string(e));
    edge[i] = e >= static_cast<double>(bins) ? bins : static_cast<int64_t>(e);
  }
  std::vector<double> w(static_cast<size_t>(bins * mels), 0.0);
  auto at = [&](int64_t j, int64_t m) -> double& { return w.at(static_cast<size_t>(j * mels + m)); };
  for (int64_t m = 0; m < mels; ++m) {
    const int64_t left = edge[static_cast<size_t>(m)], centre = edge[static_cast<size_t>(m + 1)],
                  right = edge[static_cast<size_t>(m + 2)];
    if (centre == left) {
      if (centre >= bins) throw NotImportable("malformed MelWeightMatrix: a filter centre past the last bin");
      at(centre, m) = 1;
    } else {
      for (int64_t j = left; j <= std::min(centre, bins - 1); ++j)
        at(j, m) = static_cast<double>(j - left) / static_cast<double>(centre - left);
    }
    for (int64_t j = centre; j < std::min(right, bins); ++j)
      at(j, m) = static_cast<double>(right - j) / static_cast<double>(right - centre);
  }
  out(0, upload_values(w, {bins, mels}, t));
}

}  // namespace wick::onnx
