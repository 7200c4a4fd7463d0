"""The `fma` primitive (one rounding of a * b + c, which XLA's CPU compiler fuses and JAX's
uniform sampler therefore computes) against exact rational arithmetic, in float32 and float64,
eagerly and in compiled C."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import morphax
from morphax._src.prims.arithmetic import fma


def _correctly_rounded(a, b, c, dtype):
    """Round the exact a*b + c to `dtype` (nearest, ties to even) by comparing neighbours."""
    uint = np.uint32 if dtype == np.float32 else np.uint64
    out = []
    for x, y, z in zip(a, b, c):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        guess = dtype(float(exact))
        candidates = [np.nextafter(guess, dtype(-np.inf)), guess, np.nextafter(guess, dtype(np.inf))]
        out.append(
            min(candidates, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.array(v).view(uint)) & 1))
        )
    return np.array(out, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_one_rounding(dtype, backend):
    rng = np.random.default_rng(0)
    a = (rng.normal(size=400) * 10).astype(dtype)
    b = rng.normal(size=400).astype(dtype)
    c = (rng.normal(size=400) * 3).astype(dtype)
    want = _correctly_rounded(a, b, c, dtype)
    assert np.count_nonzero((a * b + c).astype(dtype) != want) > 50  # two roundings differ often
    with morphax.enable_x64(dtype == np.float64):
        got = morphax.jit(fma, backend=backend)(a, b, c)
        eager = fma(a, b, c)
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(eager), want)


def test_special_values_follow_ieee():
    inf, nan = np.float32(np.inf), np.float32(np.nan)
    a = np.array([inf, 0.0, inf, 1.0, 3e38, nan], np.float32)
    b = np.array([0.0, inf, 1.0, 1.0, 10.0, 1.0], np.float32)
    c = np.array([1.0, 1.0, -inf, inf, -3e38, 1.0], np.float32)
    got = np.asarray(fma(a, b, c))
    assert np.isnan(got[[0, 1, 2, 5]]).all() and got[3] == inf and got[4] == inf
