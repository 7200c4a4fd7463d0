"""Window functions: bartlett, blackman, hamming, hanning and kaiser (with its Bessel I0 series)."""

from __future__ import annotations

import math

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import (
    creation,
    ufuncs,
    util,
)

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser"]


def _float():
    return _dtypes.canonicalize_dtype(np.float64)


def _window_grid(M):
    """(M, dtype, the sample points 1-M, 3-M, ..., M-1), or the whole window when M < 2 (empty,
    or the single sample 1), as NumPy's window functions define them."""
    M = int(M)
    dt = _float()
    if M < 1:
        return M, dt, creation.zeros((0,), dtype=dt)
    if M == 1:
        return M, dt, creation.ones((1,), dtype=dt)
    return M, dt, creation.arange(1 - M, M, 2, dtype=dt)


def _cos_window(M, coefs):
    M, dt, n = _window_grid(M)
    if M < 2:
        return n
    out = creation.full((M,), coefs[0], dtype=dt)
    for j, c in enumerate(coefs[1:], start=1):
        out = ufuncs.add(out, ufuncs.multiply(c, ufuncs.cos(ufuncs.multiply(n, j * math.pi / (M - 1)))))
    return out


def bartlett(M: int):
    """The Bartlett (triangular) window."""
    M, dt, n = _window_grid(M)
    if M < 2:
        return n
    return ufuncs.subtract(1.0, ufuncs.absolute(ufuncs.divide(n, M - 1)))


def blackman(M: int):
    """The Blackman window."""
    return _cos_window(M, (0.42, 0.5, 0.08))


def hamming(M: int):
    """The Hamming window."""
    return _cos_window(M, (0.54, 0.46))


def hanning(M: int):
    """The Hann window."""
    return _cos_window(M, (0.5, 0.5))


def _i0_series(x, terms=60):
    q = ufuncs.square(ufuncs.multiply(x, 0.5))
    term = creation.ones_like(x)
    out = term
    for k in range(1, terms):
        term = ufuncs.multiply(term, ufuncs.divide(q, float(k * k)))
        out = ufuncs.add(out, term)
    return out


def kaiser(M: int, beta):
    """The Kaiser window with shape parameter ``beta``."""
    M, dt, n = _window_grid(M)
    if M < 2:
        return n
    beta = util.convert_element_type(beta, dt)
    # n / (M - 1) is (k - (M-1)/2) / ((M-1)/2): the same exact halves, so the same quotients.
    arg = ufuncs.sqrt(ufuncs.subtract(1.0, ufuncs.square(ufuncs.divide(n, M - 1))))
    return ufuncs.divide(_i0_series(ufuncs.multiply(beta, arg)), _i0_series(beta))
