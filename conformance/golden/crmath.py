"""Correctly rounded float64 references, the same bytes on every CPU.

NumPy picks a SIMD implementation of exp, log, sin, ... per CPU (AVX-512, AVX2, baseline), and
glibc's libm has FMA variants: their float64 results differ in the last bit from machine to
machine, so golden data computed with them do not regenerate byte-identically everywhere. Here
each function is evaluated in mpmath at 128 bits (pure Python integers, no CPU dependence) and
rounded once to float64 (round to nearest even). Special values (NaN, infinities, zeros, poles,
out-of-domain arguments) keep the C99 result, which every implementation gives exactly.

Composite formulas (sigmoid, gelu, softmax, attention, norms) are evaluated wholly in mpmath and
rounded once at the end, so the reference is the exact value to within half an ulp of float64.
"""
import math

import mpmath

mp = mpmath.mp
mp.prec = 128
mp.rounding = "n"

F64_MIN_NORMAL = 2.2250738585072014e-308


def to_f64(v):
    """An mpmath real rounded once to the nearest float64 (subnormals too, ties to even)."""
    if isinstance(v, mpmath.mpc):
        if v.imag != 0:
            return math.nan
        v = v.real
    if mpmath.isnan(v):
        return math.nan
    if mpmath.isinf(v):
        return math.inf if v > 0 else -math.inf
    if v == 0:
        return 0.0
    # Below the normal range the float64 grid is fixed (2^-1074): round on it directly, so a
    # subnormal result is not rounded twice (once to 53 bits, once more by ldexp).
    if abs(v) < F64_MIN_NORMAL:
        n = int(mpmath.nint(v * mpmath.mpf(2) ** 1074))  # nint rounds ties to even
        return math.ldexp(float(n), -1074)
    f = float(v)  # mpmath rounds to 53 bits with the context's rounding (nearest, ties to even)
    return f


def mpf(x):
    return mpmath.mpf(float(x))


def unary(c99, exact):
    """A float64 function: c99(x) (special values), else exact(mpf x) rounded once.

    The C99 result decides only what is not a finite non-zero number: NaN, +-Inf, zeros (with
    their signs) are the same on every implementation; finite values come from mpmath."""
    def f(x):
        x = float(x)
        r = float(c99(x))
        if not math.isfinite(x) or not math.isfinite(r) or r == 0 or x == 0:
            return r
        return to_f64(exact(mpf(x)))
    return f


def c99(fn):
    """A libm function with C99 special values and NaN (not an exception) outside its domain."""
    def f(x):
        try:
            return fn(x)
        except ValueError:
            return math.nan
        except OverflowError:
            return math.inf
    return f


def _c99_log(x):
    if x == 0:
        return -math.inf
    if x < 0 or math.isnan(x):
        return math.nan
    return math.inf if math.isinf(x) else 0.0 if x == 1 else -1.0  # finite: any finite sentinel


def _c99_atanh(x):
    if x == 1 or x == -1:
        return math.copysign(math.inf, x)
    if abs(x) > 1 or math.isnan(x):
        return math.nan
    return x if x == 0 else 0.5  # finite sentinel


def _c99_log1p(x):
    if x == -1:
        return -math.inf
    if x < -1 or math.isnan(x):
        return math.nan
    return x if x == 0 or math.isinf(x) else 0.5


def _c99_acosh(x):
    if x < 1 or math.isnan(x):
        return math.nan
    return math.inf if math.isinf(x) else 0.0 if x == 1 else 0.5


def _c99_limit(fn, lo, hi):
    """C99 specials of a function that saturates at +-Inf: NaN stays NaN, +-Inf go to lo/hi."""
    def f(x):
        if math.isnan(x):
            return math.nan
        if math.isinf(x):
            return hi if x > 0 else lo
        try:
            return fn(x)
        except OverflowError:
            return math.inf
    return f


exp = unary(c99(math.exp), mpmath.exp)
expm1 = unary(c99(math.expm1), mpmath.expm1)
log = unary(_c99_log, mpmath.log)
log1p = unary(_c99_log1p, mpmath.log1p)
sin = unary(c99(math.sin), mpmath.sin)
cos = unary(c99(math.cos), mpmath.cos)
tan = unary(c99(math.tan), mpmath.tan)
asin = unary(c99(math.asin), mpmath.asin)
acos = unary(c99(math.acos), mpmath.acos)
atan = unary(_c99_limit(math.atan, -math.pi / 2, math.pi / 2), mpmath.atan)
sinh = unary(c99(math.sinh), mpmath.sinh)
cosh = unary(c99(math.cosh), mpmath.cosh)
tanh = unary(_c99_limit(math.tanh, -1.0, 1.0), mpmath.tanh)
asinh = unary(c99(math.asinh), mpmath.asinh)
acosh = unary(_c99_acosh, mpmath.acosh)
atanh = unary(_c99_atanh, mpmath.atanh)
cbrt = unary(c99(lambda x: math.copysign(abs(x) ** (1 / 3), x)),
             lambda v: mpmath.cbrt(v) if v > 0 else -mpmath.cbrt(-v))  # the real root
erf = unary(c99(math.erf), mpmath.erf)
erfc = unary(c99(math.erfc), mpmath.erfc)

# atan(+-Inf) is +-pi/2 rounded: the same float64 everywhere, math.pi / 2 is that value.
assert math.pi / 2 == to_f64(mpmath.pi / 2)


def atan2(y, x):
    y, x = float(y), float(x)
    r = math.atan2(y, x)
    if not (math.isfinite(y) and math.isfinite(x)) or r == 0 or y == 0:
        return r  # C99 specials (signed zeros, +-pi, +-pi/2 for infinite or zero operands)
    return to_f64(mpmath.atan2(mpf(y), mpf(x)))


def pow(a, b):
    """C99 pow: specials from the libm, finite non-zero results from mpmath."""
    a, b = float(a), float(b)
    odd = math.isfinite(b) and b == int(b) and int(b) % 2 == 1
    if a == 0 and b < 0:  # a pole: +-Inf (Python's math.pow raises instead)
        return math.copysign(math.inf, a) if odd else math.inf
    try:
        r = math.pow(a, b)
    except ValueError:
        return math.nan
    except OverflowError:
        return -math.inf if a < 0 and odd else math.inf
    if not (math.isfinite(a) and math.isfinite(b)) or not math.isfinite(r) or r == 0 or b == 0:
        return r
    if a < 0:  # an integer exponent (math.pow raised otherwise): the sign is the parity's
        v = mpmath.power(-mpf(a), mpf(b))
        return to_f64(-v if int(b) % 2 else v)
    return to_f64(mpmath.power(mpf(a), mpf(b)))


def sqrt(x):
    return math.sqrt(x) if x >= 0 else math.nan  # IEEE: correctly rounded on every CPU


# ---- composites, evaluated in mpmath and rounded once -------------------------------------------

def sigmoid(x):
    x = float(x)
    if math.isnan(x):
        return math.nan
    if math.isinf(x):
        return 1.0 if x > 0 else 0.0
    return to_f64(1 / (1 + mpmath.exp(-mpf(x))))


def silu(x):
    x = float(x)
    if not math.isfinite(x) or x == 0:
        return math.nan if math.isnan(x) else (x if x > 0 else -0.0 if x == -math.inf else x)
    return to_f64(mpf(x) / (1 + mpmath.exp(-mpf(x))))


def gelu_tanh(x):
    x = float(x)
    if not math.isfinite(x) or x == 0:
        return x if not math.isinf(x) or x > 0 else -0.0
    v = mpf(x)
    u = mpmath.sqrt(2 / mpmath.pi) * (v + mpf(0.044715) * v ** 3)
    return to_f64(v / (1 + mpmath.exp(-2 * u)))


def gelu_erf(x):
    x = float(x)
    if not math.isfinite(x) or x == 0:
        return x if not math.isinf(x) or x > 0 else -0.0
    v = mpf(x)
    return to_f64(v * mpmath.erfc(-v / mpmath.sqrt(2)) / 2)


def elu(x, alpha):
    x = float(x)
    if math.isnan(x) or x > 0:
        return x
    if x == 0:
        return x
    return to_f64(mpf(alpha) * mpmath.expm1(mpf(x)))


def box_muller(a, b, u1, u2):
    """a + b * sqrt(-2 log u1) * cos(2 pi u2), exact to within the final rounding."""
    return to_f64(mpf(a) + mpf(b) * mpmath.sqrt(-2 * mpmath.log(mpf(u1))) *
                  mpmath.cos(2 * mpmath.pi * mpf(u2)))


def softmax_line(values, log):
    """softmax (or log_softmax) of one line of float64 values (may hold NaN and +-Inf).

    Non-finite lines follow docs/ops.md: any NaN gives NaN everywhere; +Inf entries share the mass
    (Inf - Inf is NaN, as the plain formula gives); a line of -Inf is NaN."""
    vals = [float(v) for v in values]
    if not vals:
        return []
    m = max(vals) if not any(math.isnan(v) for v in vals) else math.nan
    if math.isnan(m) or math.isinf(m):
        # The plain formula in float64: exp(x - m) with m = +-Inf or NaN is NaN or 0 exactly.
        e = [math.exp(v - m) if not math.isnan(v - m) else math.nan for v in vals]
        s = math.fsum(e) if not any(math.isnan(t) for t in e) else math.nan
        if log:
            return [v - m - math.log(s) if s > 0 else math.nan for v in vals]
        return [t / s if s > 0 else math.nan for t in e]
    finite = [mpf(v) - mpf(m) for v in vals]
    e = [mpmath.exp(d) if mpmath.isfinite(d) else mpmath.mpf(0) for d in finite]
    s = mpmath.fsum(e)
    if log:
        ls = mpmath.log(s)
        return [to_f64(d - ls) if mpmath.isfinite(d) else -math.inf for d in finite]
    return [to_f64(t / s) for t in e]


def dot(xs, ys):
    """sum(x * y) exactly (mpmath at 128 bits holds every float64 product), rounded once."""
    return to_f64(mpmath.fsum(mpf(x) * mpf(y) for x, y in zip(xs, ys)))


def rsqrt(x):
    x = float(x)
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0:
        return math.copysign(math.inf, x)
    if math.isinf(x):
        return 0.0
    return to_f64(1 / mpmath.sqrt(mpf(x)))


def norm_line(line, eps, rms):
    """(x - mean) / sqrt(var + eps) over one line, or x / sqrt(mean(x^2) + eps) when rms."""
    v = [mpf(t) for t in line]
    mean = mpmath.mpf(0) if rms else mpmath.fsum(v) / len(v)
    r = 1 / mpmath.sqrt(mpmath.fsum((t - mean) ** 2 for t in v) / len(v) + mpf(eps))
    return [to_f64((t - mean) * r) for t in v]


def batch_norm(x, mean, var, weight, bias, eps):
    """(x - mean) / sqrt(var + eps) * weight + bias for one element."""
    r = 1 / mpmath.sqrt(mpf(var) + mpf(eps))
    return to_f64((mpf(x) - mpf(mean)) * r * mpf(weight) + mpf(bias))
