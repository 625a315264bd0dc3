#!/usr/bin/python3
"""Fits the polynomial of cpu-onednn's f32 tanh below |x| = 0.55 (vector_math_kernels.inc):
tanh(x) ~ x + x^3 P(x^2), P of degree 4, minimising the largest relative error on [0, 0.55] by
reweighted least squares on Chebyshev points against mpmath's tanh at 40 digits. Prints P's
coefficients (constant term first) and the fit's largest error in units of 2^-24.

  /usr/bin/python3 scripts/fit_tanh_poly.py     (Debian's python3-numpy and python3-mpmath)
"""
import sys

import numpy as np
from mpmath import mp, mpf, tanh

DEGREE, LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 4, 0.55


def main():
    mp.dps = 40
    x = np.cos(np.linspace(0, np.pi / 2, 4000)) * (LIMIT + 1e-4) + 1e-4
    t = np.array([float(tanh(mpf(v))) for v in x])
    z = x * x
    target = (t - x) / x**3          # P(z) exactly where the fit is exact
    weight = x**3 / t                # an error in P, as a relative error of tanh
    a = np.vander(z, DEGREE + 1, increasing=True)
    c = np.linalg.lstsq(a * weight[:, None], target * weight, rcond=None)[0]
    for _ in range(30):              # push weight towards the largest errors (towards minimax)
        err = (x + x**3 * (a @ c) - t) / t
        w = weight * (1 + np.abs(err) / np.abs(err).max()) ** 2
        c = np.linalg.lstsq(a * w[:, None], target * w, rcond=None)[0]
    err = (x + x**3 * (a @ c) - t) / t
    for k, v in enumerate(c):
        print("z^%d: %r" % (k, v))
    print("largest relative error: %.3g ULP (2^-24)" % (np.abs(err).max() * 2**24))


if __name__ == "__main__":
    main()
