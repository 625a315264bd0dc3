// lowerings_shape.cpp — views and shapes, host metadata where a view serves (Reshape, Flatten,
// Squeeze, Unsqueeze, Transpose, Expand, Slice, Shape, Size), and the ops that rearrange data
// without arithmetic: Concat, Split, Pad, DepthToSpace, SpaceToDepth and Tile.
#include "lowerings.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace wick::onnx {

// --- Views and shapes (host metadata) ---

void OnnxLowering::Impl::lower_reshape() {
  const Tensor x = in(0);
  std::vector<int64_t> s = host_ints(in(1));
  const bool allowzero = attr_i("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0 && !allowzero) s[i] = x.shape().at(i);
    if (s[i] < -1 || (s[i] == -1 && infer >= 0))
      throw NotImportable("malformed Reshape: shape " + shape_to_string(s));
    if (s[i] == -1)
      infer = static_cast<int64_t>(i);
    else
      known = checked_mul(known, s[i]);
  }
  if (infer >= 0) s[static_cast<size_t>(infer)] = known == 0 ? 0 : x.numel() / known;
  out(0, reshape(x, s));
}
void OnnxLowering::Impl::lower_flatten() {
  const Tensor x = in(0);
  const int64_t axis = attr_i("axis", 1) < 0 ? attr_i("axis", 1) + x.rank() : attr_i("axis", 1);
  if (axis < 0 || axis > x.rank()) throw NotImportable("malformed Flatten: axis " + std::to_string(attr_i("axis", 1)));
  int64_t rows = 1;
  for (int64_t i = 0; i < axis; ++i) rows = checked_mul(rows, x.shape()[static_cast<size_t>(i)]);
  out(0, reshape(x, {rows, rows == 0 ? 0 : x.numel() / rows}));
}
void OnnxLowering::Impl::squeeze(std::vector<int64_t> axes) {
  Tensor x = in(0);
  if (axes.empty()) return out(0, x.squeeze());
  for (int64_t& a : axes) a = norm_axis(a, x.rank());
  std::sort(axes.rbegin(), axes.rend());
  for (int64_t a : axes) x = x.squeeze(static_cast<int>(a));
  out(0, x);
}
void OnnxLowering::Impl::unsqueeze(std::vector<int64_t> axes) {
  Tensor x = in(0);
  const int rank = x.rank() + static_cast<int>(axes.size());
  for (int64_t& a : axes) a = norm_axis(a, rank);
  std::sort(axes.begin(), axes.end());
  for (int64_t a : axes) x = x.unsqueeze(static_cast<int>(a));
  out(0, x);
}
void OnnxLowering::Impl::lower_transpose() {
  const Tensor x = in(0);
  std::vector<int> perm(static_cast<size_t>(x.rank()));
  std::iota(perm.rbegin(), perm.rend(), 0);
  if (auto p = attr_ints("perm")) perm.assign(p->begin(), p->end());
  out(0, x.permute(perm));
}
void OnnxLowering::Impl::lower_expand() {
  const Tensor x = in(0);
  const std::vector<int64_t> s = host_ints(in(1));
  if (std::any_of(s.begin(), s.end(), [](int64_t d) { return d < 0; }))
    throw NotImportable("malformed Expand: shape " + shape_to_string(s));
  out(0, x.broadcast_to(broadcast(x.shape(), s)));
}
void OnnxLowering::Impl::lower_concat() {
  std::vector<Tensor> parts;
  for (size_t i = 0; i < n.inputs.size(); ++i) parts.push_back(in(i));
  out(0, concat(parts, norm_axis(attr_i("axis", 0), in(0).rank())));
}
// Split's sizes: an attribute before opset 13, an input from 13; without them, equal parts (from
// 18, num_outputs parts of ceil(extent / num_outputs), the last one smaller).
void OnnxLowering::Impl::split(std::vector<int64_t> sizes) {
  const Tensor x = in(0);
  const int axis = norm_axis(attr_i("axis", 0), x.rank());
  const int64_t parts = static_cast<int64_t>(n.outputs.size());
  if (parts == 0) throw NotImportable("malformed Split: no outputs");
  if (std::any_of(sizes.begin(), sizes.end(), [](int64_t v) { return v < 0; }))
    throw NotImportable("malformed Split: sizes " + shape_to_string(sizes));
  if (sizes.empty() && attr("num_outputs") != nullptr) {
    const int64_t each = (x.dim(axis) + parts - 1) / parts;
    for (int64_t at = 0; at < x.dim(axis); at += each) sizes.push_back(std::min(each, x.dim(axis) - at));
  }
  if (sizes.empty()) sizes.assign(n.outputs.size(), x.dim(axis) / parts);
  int64_t total = 0;
  for (int64_t s : sizes) total = checked_add(total, s);
  if (total > x.dim(axis)) throw NotImportable("malformed Split: sizes " + shape_to_string(sizes) + " for an axis of " + std::to_string(x.dim(axis)));
  int64_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out(i, g.contiguous(x.narrow(axis, at, sizes[i])));
    at = checked_add(at, sizes[i]);
  }
}
// Before opset 10 starts, ends and axes are attributes (and there are no steps); inputs from 10.
void OnnxLowering::Impl::lower_slice_attrs() {
  slice(attr_ints("starts").value_or(std::vector<int64_t>{}),
        attr_ints("ends").value_or(std::vector<int64_t>{}), attr_ints("axes"), std::nullopt);
}
void OnnxLowering::Impl::lower_slice() {
  slice(host_ints(in(1)), host_ints(in(2)),
        has_in(3) ? std::optional(host_ints(in(3))) : std::nullopt,
        has_in(4) ? std::optional(host_ints(in(4))) : std::nullopt);
}
void OnnxLowering::Impl::slice(const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                               std::optional<std::vector<int64_t>> axes_in,
                               std::optional<std::vector<int64_t>> steps_in) {
  Tensor x = in(0);
  if (starts.size() != ends.size()) throw NotImportable("Slice: starts and ends differ in length");
  std::vector<int64_t> axes(starts.size());
  std::iota(axes.begin(), axes.end(), 0);
  if (axes_in) axes = *axes_in;
  const std::vector<int64_t> steps = steps_in.value_or(std::vector<int64_t>(starts.size(), 1));
  if (axes.size() != starts.size() || steps.size() != starts.size())
    throw NotImportable("Slice: axes or steps differ in length from starts");
  for (size_t i = 0; i < starts.size(); ++i) {
    const int a = norm_axis(axes[i], x.rank());
    const int64_t big = int64_t{1} << 40;
    auto clip = [&](int64_t v, int64_t limit) { return std::max(-limit, std::min(limit, v)); };
    // A step longer than the axis takes one element, as one of the axis' length does: clipped
    // there (keeping its sign), the view's stride cannot overflow.
    x = x.slice(a, clip(starts[i], big), clip(ends[i], big), clip(steps[i], std::max<int64_t>(x.dim(a), 1)));
  }
  out(0, x);
}
void OnnxLowering::Impl::lower_shape() {
  const Tensor x = in(0);
  const int64_t r = x.rank();
  int64_t start = attr_i("start", 0), end = attr_i("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  std::vector<int64_t> s(x.shape().begin() + start, x.shape().begin() + std::max(start, end));
  out(0, upload_i64(s, {static_cast<int64_t>(s.size())}));
}
void OnnxLowering::Impl::lower_size() {
  out(0, upload_i64({in(0).numel()}, {}));
}

// --- Rearranged data ---

// Pad: constant (a filled tensor, x copied into its interior), reflect and edge (per axis, an
// index_select with host-built indices). Negative pads crop. Pads are an attribute before opset 11
// ("paddings" in opset 1), an input from 11 on, with the constant value an input too.
void OnnxLowering::Impl::lower_pad_paddings() {
  pad(in(0), attr_ints("paddings").value_or(std::vector<int64_t>{}), attr_f("value", 0.0f));
}
void OnnxLowering::Impl::lower_pad_attrs() {
  pad(in(0), attr_ints("pads").value_or(std::vector<int64_t>{}), attr_f("value", 0.0f));
}
void OnnxLowering::Impl::lower_pad() {
  const Tensor x = in(0);
  std::vector<int64_t> pads = host_ints(in(1));
  const double value = has_in(2) ? host_scalar(in(2)) : 0.0;
  if (has_in(3)) {  // opset 18: pads [begins..., ends...] of the listed axes only, the others 0
    const std::vector<int64_t> axes = host_ints(in(3));
    if (pads.size() != 2 * axes.size()) throw NotImportable("malformed Pad: pads are not 2 x the axes");
    const size_t r = static_cast<size_t>(x.rank());
    std::vector<int64_t> full(2 * r, 0);
    std::vector<bool> seen(r, false);
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(norm_axis(axes[i], x.rank()));
      if (seen[a]) throw NotImportable("malformed Pad: axis " + std::to_string(axes[i]) + " repeated");
      seen[a] = true;
      full[a] = pads[i];
      full[a + r] = pads[i + axes.size()];
    }
    pads = full;
  }
  pad(x, pads, value);
}
void OnnxLowering::Impl::pad(Tensor x, const std::vector<int64_t>& pads, double value) {
  const int r = x.rank();
  if (pads.size() != static_cast<size_t>(2 * r)) throw NotImportable("Pad: pads are not 2 x rank");
  const std::string mode = attr_choice("mode", "constant", {"constant", "reflect", "edge"});
  for (int a = 0; a < r; ++a) {  // negative pads crop first
    const int64_t lo = std::min<int64_t>(pads[a], 0), hi = std::min<int64_t>(pads[a + r], 0);
    if (lo < -x.dim(a) || hi < -x.dim(a)) throw NotImportable("malformed Pad: a crop wider than the axis");
    if (lo < 0 || hi < 0) x = x.slice(a, -lo, x.dim(a) + hi, 1);
  }
  if (mode == "constant") {
    Shape os = x.shape();
    for (int a = 0; a < r; ++a)
      os[a] = checked_add(os[a], checked_add(std::max<int64_t>(pads[a], 0), std::max<int64_t>(pads[a + r], 0)));
    Tensor o = filled(os, x.dtype(), value);
    Tensor inner = o;
    for (int a = 0; a < r; ++a) {
      const int64_t lo = std::max<int64_t>(pads[a], 0);
      inner = inner.slice(a, lo, lo + x.dim(a), 1);
    }
    exec(WICK_OP_COPY, nullptr, {x}, {inner});
    return out(0, o);
  }
  if (mode != "reflect" && mode != "edge") throw NotImportable("Pad mode " + mode);
  for (int a = 0; a < r; ++a) {
    const int64_t lo = std::max<int64_t>(pads[a], 0), hi = std::max<int64_t>(pads[a + r], 0);
    if (lo == 0 && hi == 0) continue;
    const int64_t n = x.dim(a);
    if (n == 0 || (mode == "reflect" && (n < 2 || lo >= n || hi >= n)))
      throw NotImportable("Pad reflect wider than the axis");
    (void)host_count(static_cast<double>(checked_add(n, checked_add(lo, hi))), "Pad's padded length");
    std::vector<int64_t> ids;
    for (int64_t i = -lo; i < n + hi; ++i) {
      int64_t j = i;
      if (mode == "edge") j = std::clamp<int64_t>(i, 0, n - 1);
      else if (i < 0) j = -i;
      else if (i >= n) j = 2 * (n - 1) - i;
      ids.push_back(j);
    }
    Shape os = x.shape();
    os[a] = static_cast<int64_t>(ids.size());
    Tensor o = Tensor::empty(os, x.dtype(), dev());
    const wick_axis_params p{sizeof(wick_axis_params), a, 0};
    exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(ids, {static_cast<int64_t>(ids.size())})}, {o});
    x = o;
  }
  out(0, x);
}
void OnnxLowering::Impl::lower_depth_to_space() {
  const Tensor x = in(0);
  const int64_t b = attr_i("blocksize", 1), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  if (x.rank() != 4 || b < 1 || b > (int64_t{1} << 20) || C % (b * b) != 0)
    throw NotImportable("malformed DepthToSpace: blocksize " + std::to_string(b) + " for " + shape_to_string(x.shape()));
  const bool crd = attr_choice("mode", "DCR", {"DCR", "CRD"}) == "CRD";
  const Tensor t = crd ? reshape(x, {N, C / (b * b), b, b, H, W}).permute({0, 1, 4, 2, 5, 3})
                       : reshape(x, {N, b, b, C / (b * b), H, W}).permute({0, 3, 4, 1, 5, 2});
  out(0, reshape(t, {N, C / (b * b), checked_mul(H, b), checked_mul(W, b)}));
}
void OnnxLowering::Impl::lower_space_to_depth() {
  const Tensor x = in(0);
  const int64_t b = attr_i("blocksize", 1), N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  if (x.rank() != 4 || b < 1 || H % b != 0 || W % b != 0)
    throw NotImportable("malformed SpaceToDepth: blocksize " + std::to_string(b) + " for " + shape_to_string(x.shape()));
  // DCR: output channel (bh * b + bw) * C + c; CRD (opset 28): c * b * b + bh * b + bw.
  const bool crd = attr_choice("mode", "DCR", {"DCR", "CRD"}) == "CRD";
  const Tensor t = reshape(x, {N, C, H / b, b, W / b, b})
                       .permute(crd ? std::vector<int>{0, 1, 3, 5, 2, 4} : std::vector<int>{0, 3, 5, 1, 2, 4});
  out(0, reshape(t, {N, checked_mul(C, b * b), H / b, W / b}));
}
void OnnxLowering::Impl::lower_tile() {
  const Tensor x = in(0);
  const std::vector<int64_t> reps = host_ints(in(1));
  if (reps.size() != static_cast<size_t>(x.rank()) ||
      std::any_of(reps.begin(), reps.end(), [](int64_t v) { return v < 0; }))
    throw NotImportable("malformed Tile: repeats " + shape_to_string(reps) + " for rank " +
                        std::to_string(x.rank()));
  Shape inter, bshape, final_shape;
  for (int i = 0; i < x.rank(); ++i) {
    inter.insert(inter.end(), {1, x.dim(i)});
    bshape.insert(bshape.end(), {reps[static_cast<size_t>(i)], x.dim(i)});
    final_shape.push_back(checked_mul(reps[static_cast<size_t>(i)], x.dim(i)));
  }
  out(0, reshape(reshape(x, inter).broadcast_to(bshape), final_shape));
}

}  // namespace wick::onnx
