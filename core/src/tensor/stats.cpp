// stats.cpp — whole-tensor statistics (tensor.hpp: min_all ... summary). Every statistic is a few
// ops on the tensor's own device and one scalar read back: a big tensor never comes to the host.
// NaN elements are left out of min, max, mean and std (counted by count_nan instead).
#include <wick/autograd.hpp>
#include <wick/tensor.hpp>

#include "tensor/ops_common.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace wick {

using namespace detail;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The dtype the statistics of t are computed in: floats their own (f16 and bf16 f32), integers
// and bool f64 (as Tensor::mean).
DType work_dtype(DType t) {
  if (t == DType::F16 || t == DType::BF16) return DType::F32;
  return is_float(t) ? t : DType::F64;
}

// One element of a 0-d f32, f64 or i64 tensor.
double read(const Tensor& s) {
  switch (s.dtype()) {
    case DType::F32: return static_cast<double>(s.item<float>());
    case DType::F64: return s.item<double>();
    case DType::I64: return static_cast<double>(s.item<int64_t>());
    default:
      throw Error(std::string("internal error: stats read a ") + dtype_name(s.dtype()) + " scalar");
  }
}

int64_t count_where(const Tensor& mask) {
  return mask.sum().item<int64_t>();
}

// t in its working dtype, without history, and its NaN count (0 without device work for
// integers and bool).
struct Prepared {
  Tensor x;
  Tensor nan_mask;  // undefined when x has no NaN
  int64_t n = 0;    // elements
  int64_t nans = 0;
};

Prepared prepare(const Tensor& t, const char* what) {
  require_defined(t, what);
  autograd::NoGradGuard no_grad;
  Prepared p;
  p.x = t.detach().to(work_dtype(t.dtype()));
  p.n = t.numel();
  if (p.n > 0 && is_float(t.dtype())) {
    Tensor mask = p.x.isnan();
    p.nans = count_where(mask);
    if (p.nans > 0) p.nan_mask = mask;
  }
  return p;
}

// x with its NaN elements replaced by `value`.
Tensor without_nan(const Prepared& p, double value) {
  if (!p.nan_mask.defined()) return p.x;
  return Tensor::where(p.nan_mask, scalar_tensor(value, p.x.dtype(), p.x.device()), p.x);
}

double extreme(const Prepared& p, bool largest) {
  if (p.n == p.nans) return kNaN;
  autograd::NoGradGuard no_grad;
  const Tensor clean = without_nan(p, largest ? -kInf : kInf);
  std::vector<int> axes(static_cast<size_t>(clean.rank()));
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int>(i);
  return read(largest ? clean.max(axes) : clean.min(axes));
}

double mean_of(const Prepared& p) {
  if (p.n == p.nans) return kNaN;
  autograd::NoGradGuard no_grad;
  return read(without_nan(p, 0.0).sum()) / static_cast<double>(p.n - p.nans);
}

double std_of(const Prepared& p, double mean, int64_t ddof) {
  const int64_t n = p.n - p.nans;
  if (ddof < 0) throw Error("std_all: ddof " + std::to_string(ddof) + " must not be negative");
  if (n <= ddof || std::isnan(mean)) return kNaN;
  autograd::NoGradGuard no_grad;
  Tensor centred = p.x.sub(scalar_tensor(mean, p.x.dtype(), p.x.device()));
  if (p.nan_mask.defined())
    centred = Tensor::where(p.nan_mask, scalar_tensor(0.0, p.x.dtype(), p.x.device()), centred);
  return std::sqrt(read(centred.sqr().sum()) / static_cast<double>(n - ddof));
}

}  // namespace

double Tensor::min_all() const {
  return extreme(prepare(*this, "min_all"), false);
}
double Tensor::max_all() const {
  return extreme(prepare(*this, "max_all"), true);
}
double Tensor::mean_all() const {
  return mean_of(prepare(*this, "mean_all"));
}

double Tensor::std_all(int64_t ddof) const {
  const Prepared p = prepare(*this, "std_all");
  return std_of(p, mean_of(p), ddof);
}

int64_t Tensor::count_nan() const {
  require_defined(*this, "count_nan");
  if (!is_float(dtype_) || numel() == 0) return 0;
  autograd::NoGradGuard no_grad;
  return count_where(detach().isnan());
}

int64_t Tensor::count_inf() const {
  require_defined(*this, "count_inf");
  if (!is_float(dtype_) || numel() == 0) return 0;
  autograd::NoGradGuard no_grad;
  return count_where(detach().isinf());
}

std::string Tensor::summary() const {
  require_defined(*this, "summary");
  std::ostringstream out;
  out << dtype_name(dtype_) << " " << shape_to_string(shape_) << " " << device().name();
  if (numel() == 0) {
    out << " empty";
    return out.str();
  }
  const Prepared p = prepare(*this, "summary");
  const double mean = mean_of(p);
  out.precision(6);
  out << " min " << extreme(p, false) << " max " << extreme(p, true) << " mean " << mean << " std "
      << std_of(p, mean, 0) << " nan " << p.nans << " inf " << count_inf();
  return out.str();
}

}  // namespace wick
