"""Scalar references of the golden data (docs/ops.md semantics, one element at a time): vmap applies
one over arrays; NaN rules, rounding modes, integer division, remainder, shifts and powers."""
import math

import numpy as np

import crmath
from cases import BITS, is_signed, wrap_int


def vmap(fn, *arrays):
    """fn applied elementwise over broadcast object/float arrays; returns an object array."""
    b = np.broadcast_arrays(*[np.asarray(a, dtype=object) for a in arrays])
    out = np.empty(b[0].shape, dtype=object)
    for idx in np.ndindex(b[0].shape):
        out[idx] = fn(*[x[idx] for x in b])
    return out


def safe(fn):
    def wrapped(*args):
        try:
            return fn(*args)
        except (ValueError, ZeroDivisionError):
            return math.nan
        except OverflowError:
            return math.inf
    return wrapped


def erfinv(y):
    if math.isnan(y) or y < -1 or y > 1:
        return math.nan
    if y == 1:
        return math.inf
    if y == -1:
        return -math.inf
    if y == 0:
        return y
    return crmath.to_f64(crmath.mpmath.erfinv(crmath.mpf(y)))


sigmoid = crmath.sigmoid


def round_half_away(x):
    if math.isnan(x) or math.isinf(x):
        return x
    r = math.floor(abs(x) + 0.5)
    return math.copysign(r, x)


def round_half_even(x):
    if math.isnan(x) or math.isinf(x):
        return x
    return math.copysign(float(round(x)), x)


def fsign(x):
    if math.isnan(x):
        return math.nan
    return 0.0 if x == 0 else math.copysign(1.0, x)


def int_div(a, b, dt):
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return wrap_int(q if (a >= 0) == (b >= 0) else -q, dt)


def int_rem(a, b, dt):
    if b == 0:
        return 0
    r = abs(a) % abs(b)
    return wrap_int(r if a >= 0 else -r, dt)


def shift(a, b, dt, left):
    bits = BITS[dt]
    if b < 0 or b >= bits:
        return -1 if (not left and is_signed(dt) and a < 0) else 0
    if left:
        return wrap_int(a << b, dt)
    if is_signed(dt):
        return wrap_int(a >> b, dt)
    return wrap_int((a & ((1 << bits) - 1)) >> b, dt)


def fmax(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


def fmin(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return min(a, b)


def fdiv(a, b):
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


fpow = crmath.pow


def fhypot(a, b):
    """sqrt(a^2 + b^2) without overflow, rounded once; C99 specials (an infinity wins over NaN)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.hypot(a, b)
    return crmath.to_f64(crmath.mpmath.hypot(crmath.mpf(a), crmath.mpf(b)))


def fmod(a, b):
    return float(np.fmod(np.float64(a), np.float64(b)))


def ipow(a, b, dt):
    if b < 0:
        return 0 if abs(a) != 1 else (a if b % 2 else 1)
    return wrap_int(pow(a, b, 1 << BITS[dt]), dt)
