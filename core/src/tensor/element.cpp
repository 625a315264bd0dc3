// element.cpp — one host value written as an element of any dtype, and the saturating double to
// int64 cast of op params (wick/tensor.hpp).
#include <wick/tensor.hpp>

#include <wick/sdk/dtype.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace wick {

void store_value(DType t, double v, unsigned char* dst) {
  sdk::visit_dtype(to_c(t), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T x;
    if constexpr (std::is_same_v<T, sdk::f16> || std::is_same_v<T, sdk::bf16>) {
      x = T(static_cast<float>(v));
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // A value outside T (a model's NaN, inf or out-of-range constant) must not reach an
      // undefined float-to-integer cast: NaN is 0, the rest saturates at T's range; a negative
      // value for an unsigned T wraps as its int64 would.
      constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
      constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
      if (std::isnan(v)) x = 0;
      else if (v >= hi) x = std::numeric_limits<T>::max();
      else if (std::is_unsigned_v<T> && v < 0 && v > -9.223372036854775808e18)
        x = static_cast<T>(static_cast<int64_t>(v));
      else if (v <= lo) x = std::numeric_limits<T>::lowest();
      else x = static_cast<T>(v);
    } else {
      x = static_cast<T>(v);
    }
    std::memcpy(dst, &x, sizeof(T));
  });
}

int64_t saturating_i64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.223372036854775807e18) return std::numeric_limits<int64_t>::max();  // 2^63 does not fit
  if (v <= -9.223372036854775808e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace wick
