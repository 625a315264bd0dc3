// lowerings_selection.cpp — ops whose output shape depends on the input values: Unique and
// NonMaxSuppression. Their inputs are read back to the host, which decides what is selected (as
// for NonZero); Unique's values are then gathered on the device, NonMaxSuppression's output is
// the host-built list of indices. These folders test the importer more than the backend.
#include "lowerings.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace wick::onnx {

namespace {

// Slices compared element by element in a total order (NaN equal to NaN and after every number),
// so that a map and a sort of them are well defined whatever the values.
struct SliceLess {
  bool operator()(const std::vector<double>& a, const std::vector<double>& b) const {
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      const bool na = std::isnan(a[i]), nb = std::isnan(b[i]);
      if (na || nb) {
        if (na != nb) return nb;
        continue;
      }
      if (a[i] != b[i]) return a[i] < b[i];
    }
    return a.size() < b.size();
  }
};

}  // namespace

// Unique: the distinct elements (or, with `axis`, distinct slices along it, compared
// lexicographically), ascending when sorted (the default), else in order of first occurrence;
// with the index of each one's first occurrence, each input's position among them, and counts.
void OnnxLowering::Impl::lower_unique() {
  Tensor x = in(0);
  const bool has_axis = attr("axis") != nullptr;
  if (!has_axis) x = reshape(x, {x.numel()});
  const int axis = has_axis ? norm_axis(attr_i("axis", 0), x.rank()) : 0;
  const std::vector<double> v = host_doubles(x);
  // Slice s along the axis as its elements in row-major order.
  const int64_t len = host_count(static_cast<double>(x.dim(axis)), "Unique's slice count");
  int64_t inner = 1;
  for (int a = axis + 1; a < x.rank(); ++a) inner = checked_mul(inner, x.dim(a));
  const int64_t outer = len == 0 || inner == 0 ? 0 : x.numel() / (len * inner);
  auto slice_of = [&](int64_t s) {
    std::vector<double> e;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) e.push_back(v[static_cast<size_t>((o * len + s) * inner + i)]);
    return e;
  };
  std::vector<std::vector<double>> slices;
  for (int64_t s = 0; s < len; ++s) slices.push_back(slice_of(s));
  std::vector<int64_t> first;  // first occurrence of each distinct slice, in order of occurrence
  std::vector<int64_t> inverse(static_cast<size_t>(len));
  std::map<std::vector<double>, int64_t, SliceLess> seen;  // slice -> its position in `first`
  for (int64_t s = 0; s < len; ++s) {
    const auto [it, added] = seen.emplace(slices[static_cast<size_t>(s)], static_cast<int64_t>(first.size()));
    if (added) first.push_back(s);
    inverse[static_cast<size_t>(s)] = it->second;
  }
  std::vector<int64_t> order(first.size());  // order[k]: which distinct slice is k-th in the output
  std::iota(order.begin(), order.end(), 0);
  if (attr_i("sorted", 1) != 0)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return SliceLess{}(slices[static_cast<size_t>(first[static_cast<size_t>(a)])],
                         slices[static_cast<size_t>(first[static_cast<size_t>(b)])]);
    });
  std::vector<int64_t> rank(order.size()), indices(order.size()), counts(order.size(), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    rank[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
    indices[k] = first[static_cast<size_t>(order[k])];
  }
  for (int64_t& i : inverse) {
    i = rank[static_cast<size_t>(i)];
    ++counts[static_cast<size_t>(i)];
  }
  const int64_t u = static_cast<int64_t>(indices.size());
  Shape ys = x.shape();
  ys[static_cast<size_t>(axis)] = u;
  Tensor y = Tensor::empty(ys, x.dtype(), dev());
  const wick_axis_params p{sizeof(wick_axis_params), axis, 0};
  if (u > 0) exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(indices, {u})}, {y});
  out(0, y);
  out(1, upload_i64(indices, {u}));
  out(2, upload_i64(inverse, {len}));
  out(3, upload_i64(counts, {u}));
}

// NonMaxSuppression: per batch and class, boxes by descending score (ties by position) above
// score_threshold, each kept unless its IoU with one already kept exceeds iou_threshold, at most
// max_output_boxes_per_class (0 or absent: none); output [selected, 3] of (batch, class, box).
void OnnxLowering::Impl::lower_non_max_suppression() {
  const Tensor boxes_t = in(0), scores_t = in(1);
  const std::vector<double> boxes = host_doubles(boxes_t), scores = host_doubles(scores_t);
  const int64_t max_out = has_in(2) && in(2).numel() > 0 ? host_ints(in(2)).at(0) : 0;
  const double iou_max = has_in(3) && in(3).numel() > 0 ? host_scalar(in(3)) : 0.0;
  const bool score_cut = has_in(4) && in(4).numel() > 0;
  const double score_min = score_cut ? host_scalar(in(4)) : 0.0;
  const bool center = attr_i("center_point_box", 0) != 0;
  if (boxes_t.rank() != 3 || scores_t.rank() != 3)
    throw NotImportable("malformed NonMaxSuppression: boxes or scores not of rank 3");
  const int64_t batches = scores_t.dim(0), classes = scores_t.dim(1), count = scores_t.dim(2);
  if (boxes_t.dim(0) != batches || boxes_t.dim(1) != count || boxes_t.dim(2) != 4)
    throw NotImportable("NonMaxSuppression: boxes and scores disagree in shape");
  // Each box is compared with every box kept before it: bound the host's comparisons.
  if (checked_mul(checked_mul(batches, classes), checked_mul(count, std::max<int64_t>(std::min(max_out, count), 0))) >
      (int64_t{1} << 28))
    throw NotImportable("NonMaxSuppression of " + std::to_string(batches * classes) + " x " + std::to_string(count) +
                        " boxes, beyond the importer's limit of 2^28 comparisons");
  struct Box {
    double y1, x1, y2, x2;
  };
  auto box = [&](int64_t b, int64_t i) {
    const double* c = &boxes[static_cast<size_t>((b * count + i) * 4)];
    if (center) return Box{c[1] - c[3] / 2, c[0] - c[2] / 2, c[1] + c[3] / 2, c[0] + c[2] / 2};
    return Box{std::min(c[0], c[2]), std::min(c[1], c[3]), std::max(c[0], c[2]), std::max(c[1], c[3])};
  };
  auto iou = [](const Box& a, const Box& b) {
    const double ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
    const double iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
    if (ih <= 0 || iw <= 0) return 0.0;
    const double inter = ih * iw;
    const double uni = (a.y2 - a.y1) * (a.x2 - a.x1) + (b.y2 - b.y1) * (b.x2 - b.x1) - inter;
    return uni <= 0 ? 0.0 : inter / uni;
  };
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const double* s = &scores[static_cast<size_t>((b * classes + c) * count)];
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < count; ++i)
        if (!score_cut || s[i] > score_min) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) { return s[p] > s[q]; });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const Box bi = box(b, i);
        if (std::all_of(kept.begin(), kept.end(), [&](int64_t k) { return iou(bi, box(b, k)) <= iou_max; })) {
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
  out(0, upload_i64(selected, {static_cast<int64_t>(selected.size() / 3), 3}));
}

}  // namespace wick::onnx
