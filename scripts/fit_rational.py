#!/usr/bin/python3
"""Fits the rational functions of cpu-onednn's f32 tanh and GELU (erf) on the FMA ISAs
(vector_math_kernels.inc): f(x) ~ x P(x^2) / Q(x^2) with Q(0) = 1 on [0, LIMIT], the kernel
clamping |x| to LIMIT (where tanh, and erf for the GELU, round to 1 or within the GELU's bound).

  tanh(x)            P and Q of degree 4, LIMIT 9.0105, its largest relative error (the kernel
                     clamps to 9, where its result rounds to 1)
  erf(x / sqrt 2)    P and Q of degree 5, LIMIT 5.3, its largest absolute error (the GELU's bound
                     is absolute: docs/ops/elementwise.md)

The fit is linearised (P - f/x Q = 0, reweighted by the last Q: Sanathanan and Koerner), then
pushed towards the minimax error by Lawson's weights, on Chebyshev points against mpmath at 40
digits. Prints each function's coefficients (constant term first) and its largest error in units
of 2^-24. Rounding the coefficients to f32 and the kernel's own roundings add more: the kernels'
bounds are checked by tests/test_vector_math.cpp on every ISA.

  /usr/bin/python3 scripts/fit_rational.py     (Debian's python3-numpy and python3-mpmath)
"""
import numpy as np
from mpmath import erf, mp, mpf, sqrt, tanh

FITS = [  # name, f, limit, degree of P, degree of Q, relative error (else absolute)
    ("tanh", lambda v: tanh(v), 9.0105, 4, 4, True),
    ("erf(x/sqrt2)", lambda v: erf(v / sqrt(2)), 5.3, 5, 5, False),
]


def fit(f, limit, dp, dq, relative, points=6000, iterations=60):
    x = (1 - np.cos(np.linspace(0, np.pi, points))) / 2 * limit
    x = x[x > 1e-6]
    t = np.array([float(f(mpf(v))) for v in x])
    g, z = t / x, x * x
    a = np.vander(z, dp + 1, increasing=True)
    b = np.vander(z, dq + 1, increasing=True)
    scale = t if relative else np.ones_like(t)
    q_last, lawson = np.ones_like(z), np.ones_like(z)
    for _ in range(iterations):
        w = lawson * x / (q_last * scale)  # the error of x P / Q - t, in the chosen units
        m = np.hstack([a, -g[:, None] * b[:, 1:]]) * w[:, None]
        c = np.linalg.lstsq(m, g * w, rcond=None)[0]
        p, q = c[:dp + 1], np.concatenate([[1.0], c[dp + 1:]])
        q_last = b @ q
        err = (x * (a @ p) / q_last - t) / scale
        lawson = lawson * np.sqrt(np.abs(err) / np.abs(err).max()) + 1e-3 * lawson.max()
    return p, q, np.abs(err).max()


def main():
    mp.dps = 40
    for name, f, limit, dp, dq, relative in FITS:
        p, q, err = fit(f, limit, dp, dq, relative)
        print("%s on [0, %g], %s error %.3g (%.2f units of 2^-24)"
              % (name, limit, "relative" if relative else "absolute", err, err * 2**24))
        print("  P: " + ", ".join("%.9g" % v for v in p))
        print("  Q: " + ", ".join("%.9g" % v for v in q))


if __name__ == "__main__":
    main()
