"""The Array API namespace's complex dtypes, promotion and indexing against values worked out by
hand or with Python's cmath (never with the code under test)."""
import cmath
import math

import pytest

import wick as xp


def close(a, b, tol=1e-5):
    return abs(complex(a) - complex(b)) <= tol * max(1.0, abs(complex(b)))


def test_complex_arithmetic_by_hand():
    z = xp.asarray([1 + 2j, 3 - 1j], dtype=xp.complex64)
    w = xp.asarray([2 - 1j, -1 + 1j], dtype=xp.complex64)
    # (1+2j)(2-1j) = 2 - 1j + 4j - 2j^2 = 4 + 3j; (3-1j)(-1+1j) = -3 + 3j + 1j - 1j^2 = -2 + 4j
    assert (z * w).tolist() == [4 + 3j, -2 + 4j]
    # (1+2j)/(2-1j) = (1+2j)(2+1j)/5 = (2 + 1j + 4j - 2)/5 = 1j
    assert close((z / w)[0], 1j)
    assert (z + w).tolist() == [3 + 1j, 2 + 0j]
    assert (z - 1).tolist() == [2j, 2 - 1j]
    assert xp.conj(z).tolist() == [1 - 2j, 3 + 1j]
    assert xp.real(z).tolist() == [1.0, 3.0] and xp.imag(z).tolist() == [2.0, -1.0]
    assert close(xp.abs(z)[0], math.sqrt(5.0))
    assert xp.equal(z, xp.asarray([1 + 2j, 0j])).tolist() == [True, False]


def test_complex_functions_match_cmath():
    values = [0.5 + 0.25j, -1.5 + 2j, 2 - 3j]
    z = xp.asarray(values, dtype=xp.complex128)
    for name in ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
                 "asin", "acos", "atan", "asinh", "acosh", "atanh"]:
        got = getattr(xp, name)(z).tolist()
        for g, v in zip(got, values):
            assert close(g, getattr(cmath, name)(v), 1e-9), (name, v, g)
    assert close(xp.sum(z), sum(values), 1e-12)
    assert close(xp.prod(z), values[0] * values[1] * values[2], 1e-12)
    # exp(+0 + 0j) is exactly 1 + 0j; sqrt(-4 + 0j) is 2j on the branch cut's upper side
    assert xp.exp(xp.asarray(0j, dtype=xp.complex64)).item() == 1 + 0j
    assert xp.sqrt(xp.asarray(-4 + 0j, dtype=xp.complex128)).item() == 2j


def test_complex_matmul_by_hand():
    a = xp.asarray([[1j, 1.0], [0.0, 2.0]], dtype=xp.complex64)
    b = xp.asarray([[1.0], [1j]], dtype=xp.complex64)
    # row 0: 1j*1 + 1*1j = 2j; row 1: 0 + 2*1j = 2j
    assert (a @ b).tolist() == [[2j], [2j]]
    # vecdot conjugates its first argument: conj(1j)*1j + conj(1)*1 = 1 + 1 = 2
    assert xp.vecdot(xp.asarray([1j, 1.0]), xp.asarray([1j, 1.0])).item() == 2


def test_promotion():
    assert xp.result_type(xp.float32, xp.complex64) == xp.complex64
    assert xp.result_type(xp.float64, xp.complex64) == xp.complex128
    assert xp.result_type(xp.complex64, xp.complex128) == xp.complex128
    assert xp.result_type(xp.complex64, 1.0) == xp.complex64
    assert xp.can_cast(xp.float32, xp.complex64) and not xp.can_cast(xp.complex64, xp.float64)
    assert not xp.can_cast(xp.float64, xp.complex64)
    with pytest.raises(TypeError):
        xp.result_type(xp.int32, xp.complex64)
    assert xp.isdtype(xp.complex128, "complex floating") and not xp.isdtype(xp.complex64, "real floating")
    assert xp.finfo(xp.complex64).eps == 2.0 ** -23 and xp.finfo(xp.complex128).bits == 64
    r = xp.asarray([1.0, 2.0], dtype=xp.float64) + xp.asarray([1j, 0j], dtype=xp.complex64)
    assert r.dtype == xp.complex128 and r.tolist() == [1 + 1j, 2 + 0j]
    assert xp.astype(xp.asarray([3], dtype=xp.int8), xp.complex64).tolist() == [3 + 0j]
    with pytest.raises(TypeError):
        xp.astype(xp.asarray([1j]), xp.float32)


def test_complex_indexing_and_manipulation():
    z = xp.asarray([[1 + 1j, 2 + 2j, 3 + 3j], [4 + 4j, 5 + 5j, 6 + 6j]])
    assert z.dtype == xp.complex64 and z.shape == (2, 3)
    assert z[1, 2].item() == 6 + 6j
    assert z[:, ::2].tolist() == [[1 + 1j, 3 + 3j], [4 + 4j, 6 + 6j]]
    assert z[xp.asarray([True, False])].tolist() == [[1 + 1j, 2 + 2j, 3 + 3j]]
    z[0, 0] = -1j
    assert z[0].tolist() == [-1j, 2 + 2j, 3 + 3j]
    assert z.mT.shape == (3, 2) and z.mT[2, 1].item() == 6 + 6j
    assert xp.flip(z, axis=1)[1].tolist() == [6 + 6j, 5 + 5j, 4 + 4j]
    assert xp.concat([z[0], xp.asarray([7.0])]).tolist() == [-1j, 2 + 2j, 3 + 3j, 7 + 0j]
    assert xp.where(xp.asarray([True, False]), xp.asarray([1j, 1j]), 2.0).tolist() == [1j, 2 + 0j]
    with pytest.raises(TypeError):
        float(z[0, 0])
    assert complex(z[0, 1]) == 2 + 2j and bool(z[0, 0])
    with pytest.raises(TypeError):
        xp.max(z)


def test_real_indexing_and_special_values():
    x = xp.asarray([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    assert x[..., 1].tolist() == [1.0, 4.0]
    assert x[x > 2.5].tolist() == [3.0, 4.0, 5.0]
    assert x[None, 1, -1].tolist() == [5.0]
    assert xp.sign(xp.asarray([-0.0, -2.0, math.nan])).tolist()[:2] == [0.0, -1.0]
    assert math.copysign(1.0, xp.sign(xp.asarray(-0.0)).item()) == 1.0
    assert xp.signbit(xp.asarray([-math.nan, math.nan, -0.0])).tolist() == [True, False, True]
    assert xp.sum(xp.asarray([200, 100], dtype=xp.uint8), dtype=xp.uint8).item() == 44  # 300 mod 256


def test_linalg_and_fft_by_hand():
    pytest.importorskip("numpy")  # the decompositions and transforms compute with NumPy
    a = xp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=xp.float64)
    assert close(xp.linalg.det(a), -2.0, 1e-12)  # 1*4 - 2*3
    # inv([[1, 2], [3, 4]]) = [[4, -2], [-3, 1]] / -2
    assert xp.reshape(xp.linalg.inv(a), (-1,)).tolist() == pytest.approx([-2.0, 1.0, 1.5, -0.5])
    assert xp.linalg.solve(a, xp.asarray([5.0, 11.0], dtype=xp.float64)).tolist() == pytest.approx([1.0, 2.0])
    assert xp.linalg.trace(a).item() == 5.0 and xp.linalg.vector_norm(xp.asarray([3.0, 4.0])).item() == 5.0
    # The DFT of an impulse is flat; of a constant, an impulse of height n.
    assert xp.fft.fft(xp.asarray([1.0, 0.0, 0.0, 0.0])).tolist() == [1 + 0j] * 4
    assert xp.fft.fft(xp.asarray([1.0, 1.0, 1.0, 1.0])).tolist() == [4 + 0j, 0j, 0j, 0j]
    assert xp.fft.fft(xp.asarray([1.0, 1.0, 1.0, 1.0])).dtype == xp.complex64
    # [0, 1, 0, 0] gives exp(-2*pi*i*k/4) = 1, -i, -1, i
    got = xp.fft.fft(xp.asarray([0j, 1 + 0j, 0j, 0j], dtype=xp.complex128)).tolist()
    assert all(close(g, e, 1e-12) for g, e in zip(got, [1, -1j, -1, 1j]))
    assert xp.fft.fftfreq(4).tolist() == [0.0, 0.25, -0.5, -0.25]
