"""Independent checks of dot_general (against np.einsum in float64 and exact integer loops), sort
(against np.lexsort / stable argsort, NaN and signed-zero placement) and top_k (against a sorted
Python list), plus their bad-input errors."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import morphax as jax
from morphax import lax

BF16 = np.dtype(ml_dtypes.bfloat16)

# name, lhs shape, rhs shape, dimension_numbers, einsum spelling
DOT_CASES = [
    ("vv", (4,), (4,), (((0,), (0,)), ((), ())), "i,i->"),
    ("mv", (3, 4), (4,), (((1,), (0,)), ((), ())), "ij,j->i"),
    ("mm", (3, 4), (4, 5), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ("mTm", (4, 3), (4, 5), (((0,), (0,)), ((), ())), "ji,jk->ik"),
    ("bmm", (2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
    ("batch-moved", (3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,))), "ibj,jkb->bik"),
    ("two-contract", (2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ())), "ijk,kjl->il"),
    ("outer", (2,), (3,), (((), ()), ((), ())), "i,j->ij"),
    ("zero-contract", (2, 0), (0, 3), (((1,), (0,)), ((), ())), "ij,jk->ik"),
]


@pytest.mark.parametrize("name,ls,rs,dn,spec", DOT_CASES, ids=[c[0] for c in DOT_CASES])
def test_dot_general_float_matches_einsum_f64(name, ls, rs, dn, spec):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(ls).astype(np.float32)
    y = rng.standard_normal(rs).astype(np.float32)
    got = lax.dot_general(x, y, dn)
    want = np.einsum(spec, x.astype(np.float64), y.astype(np.float64))
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    # bfloat16 operands: float32 accumulation rounded once.
    xb, yb = x.astype(BF16), y.astype(BF16)
    got = lax.dot_general(xb, yb, dn)
    want = np.einsum(spec, xb.astype(np.float64), yb.astype(np.float64))
    assert got.dtype == BF16
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("name,ls,rs,dn,spec", DOT_CASES, ids=[c[0] for c in DOT_CASES])
def test_dot_general_int32_wraps_exactly(name, ls, rs, dn, spec):
    rng = np.random.default_rng(1)
    x = rng.integers(-(2**31), 2**31, size=ls, dtype=np.int64).astype(np.int32)
    y = rng.integers(-(2**31), 2**31, size=rs, dtype=np.int64).astype(np.int32)
    got = lax.dot_general(x, y, dn)
    # Exact Python-int arithmetic, then wrap to 32 bits.
    exact = np.einsum(spec, x.astype(object), y.astype(object)) if x.size and y.size else None
    want = (
        np.zeros(np.asarray(got).shape, np.int32)
        if exact is None
        else np.vectorize(lambda v: ((int(v) + 2**31) % 2**32) - 2**31, otypes=[np.int64])(exact).astype(
            np.int32
        )
    )
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), want)


def test_dot_known_answers():
    a = np.array([[1, 2], [3, 4]], np.int8)
    assert np.asarray(lax.dot(a, a)).tolist() == [[7, 10], [15, 22]]
    big = np.full((1, 4), 100, np.int8)
    assert int(np.asarray(lax.dot(big, big.T))[0, 0]) == (40000 + 128) % 256 - 128
    wide = lax.dot(big, big.T, preferred_element_type=np.int32)
    assert wide.dtype == np.int32 and int(np.asarray(wide)[0, 0]) == 40000
    b = np.array([[True, False], [False, False]])
    assert np.asarray(lax.dot(b, b)).tolist() == [[True, False], [False, False]]
    v = np.array([1.0, 2.0, 3.0], np.float32)
    assert float(lax.dot(v, v)) == 14.0
    c = np.array([1 + 1j, 2 - 1j], np.complex64)
    assert complex(lax.dot(c, c)) == (1 + 1j) ** 2 + (2 - 1j) ** 2


def test_dot_mixed_dtypes_and_preferred():
    x = np.ones((2, 3), np.int8)
    y = np.full((3, 2), 0.5, np.float32)
    got = lax.dot_general(x, y, (((1,), (0,)), ((), ())))
    assert got.dtype == np.float32 and np.asarray(got).tolist() == [[1.5, 1.5], [1.5, 1.5]]
    got = lax.dot(np.ones((2, 3), BF16), np.ones((3, 2), BF16), preferred_element_type=np.float32)
    assert got.dtype == np.float32
    with pytest.raises(
        TypeError, match="preferred_element_type.*must not be narrower.*int8 for result type of int32"
    ):
        lax.dot(np.ones((2, 2), np.int32), np.ones((2, 2), np.int32), preferred_element_type=np.int8)


def test_dot_general_jaxpr_params_and_precision():
    x = np.ones((2, 3), np.float32)
    text = str(jax.make_jaxpr(lambda a: lax.dot(a, np.ones((3, 4), np.float32)))(x))
    # printed as JAX 0.10.2 prints it
    assert "c:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] b a" in text
    text = str(jax.make_jaxpr(lambda a: lax.dot(a, np.ones((3,), np.float32), precision="highest"))(x))
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in text
    assert lax.Precision("tensorfloat32") is lax.Precision.HIGH
    with pytest.raises(ValueError, match="Unknown precision 'fast'"):
        lax.dot(x, np.ones(3, np.float32), precision="fast")


def test_dot_general_errors():
    x = np.ones((2, 3), np.float32)
    y = np.ones((4, 5), np.float32)
    with pytest.raises(
        TypeError,
        match=r"contracting dimensions to have the same shape, got \(3,\) and \(4,\) \(lhs shape \(2, 3\).*rhs shape \(4, 5\)",
    ):
        lax.dot_general(x, y, (((1,), (0,)), ((), ())))
    with pytest.raises(TypeError, match=r"batch dimensions to have the same shape, got \(2,\) and \(4,\)"):
        lax.dot_general(x, y, (((), ()), ((0,), (0,))))
    with pytest.raises(TypeError, match=r"lhs contracting dimensions to be in range \[0, 2\)"):
        lax.dot_general(x, y, (((2,), (0,)), ((), ())))
    with pytest.raises(TypeError, match="batch dimensions to have the same length"):
        lax.dot_general(x, y, (((), ()), ((0,), ())))
    with pytest.raises(TypeError, match="disjoint"):
        lax.dot_general(x, x, (((0,), (0,)), ((0,), (0,))))
    with pytest.raises(TypeError, match=r"Incompatible shapes for dot: got \(2, 3\) and \(4, 5\)"):
        lax.dot(x, y)


# ------------------------------------------------------------------------------------------------
# sort


def _jax_key(v):
    """JAX's float sort key: -0.0 equals +0.0, NaN after everything."""
    return (1, 0.0) if math.isnan(v) else (0, v + 0.0)


def test_sort_nan_placement_and_signed_zero_stability():
    x = np.array([3.0, np.nan, -0.0, -np.inf, 0.0, -np.nan, 1.0, -0.0, np.inf], np.float32)
    keys, perm = lax.sort_key_val(x, np.arange(x.size, dtype=np.int32))
    want_perm = sorted(range(x.size), key=lambda i: (_jax_key(float(x[i])), i))
    assert np.asarray(perm).tolist() == want_perm
    got = np.asarray(keys)
    assert np.isnan(got[-2:]).all()
    # The zeros keep their input order (-0.0, +0.0, -0.0): stable, not ordered by sign.
    assert [math.copysign(1, v) for v in got[1:4]] == [-1, 1, -1]
    for dt in (np.float16, BF16):
        assert (
            np.asarray(lax.sort_key_val(x.astype(dt), np.arange(9, dtype=np.int32))[1]).tolist() == want_perm
        )


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.int8, bool])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1), ((0, 2), 0)])
def test_sort_matches_stable_argsort(dtype, shape, dim):
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, size=shape).astype(dtype)
    payload = rng.standard_normal(shape).astype(np.float32)
    s = lax.sort(x, dimension=dim)
    np.testing.assert_array_equal(np.asarray(s), np.sort(x, axis=dim, kind="stable"))
    k, v = lax.sort((x, payload), dimension=dim)
    perm = np.argsort(x, axis=dim, kind="stable")
    np.testing.assert_array_equal(np.asarray(v), np.take_along_axis(payload, perm, axis=dim))
    np.testing.assert_array_equal(np.asarray(k), np.take_along_axis(x, perm, axis=dim))


def test_sort_lexicographic_num_keys():
    rng = np.random.default_rng(4)
    a = rng.integers(0, 3, size=(4, 10)).astype(np.int32)
    b = rng.integers(0, 3, size=(4, 10)).astype(np.float32)
    c = np.tile(np.arange(10, dtype=np.int32), (4, 1))
    for nk in (1, 2):
        outs = lax.sort([a, b, c], dimension=1, num_keys=nk)
        keys = (b, a) if nk == 2 else (a,)
        perm = np.lexsort(keys, axis=1)  # lexsort: last key most significant, stable
        for got, x in zip(outs, (a, b, c)):
            np.testing.assert_array_equal(np.asarray(got), np.take_along_axis(x, perm, axis=1))
    # Lists of Python rows: the ties of (a, b) keep increasing c.
    outs = lax.sort([a, b, c], dimension=1, num_keys=2)
    rows = [
        sorted(zip(a[r].tolist(), b[r].tolist(), c[r].tolist()), key=lambda t: (t[0], t[1])) for r in range(4)
    ]
    assert np.asarray(outs[2]).tolist() == [[t[2] for t in row] for row in rows]


def test_sort_complex_and_jaxpr():
    z = np.array([1 + 2j, 1 + 1j, complex(np.nan, 0), -1 + 5j, 0 - 1j], np.complex64)
    got = np.asarray(lax.sort(z))
    assert got[:4].tolist() == [-1 + 5j, 0 - 1j, 1 + 1j, 1 + 2j] and np.isnan(got[4].real)
    text = str(jax.make_jaxpr(lambda x: lax.sort(x))(np.ones((2, 3), np.float32)))
    assert "sort[dimension=1 is_stable=True num_keys=1]" in text


def test_sort_errors():
    with pytest.raises(TypeError, match=r"sort: arguments must have equal shapes, got f32\[3\], i32\[4\]"):
        lax.sort([np.ones(3, np.float32), np.ones(4, np.int32)])
    with pytest.raises(ValueError, match="num_keys=3 must be between 1 and len"):
        lax.sort([np.ones(3), np.ones(3)], num_keys=3)
    with pytest.raises(ValueError, match="num_keys=2 must equal 1 for a single operand"):
        lax.sort(np.ones(3, np.float32), num_keys=2)
    with pytest.raises(ValueError, match=r"sort: axis -1 is out of bounds for an operand of shape \(\)"):
        lax.sort(np.float32(1.0))
    with pytest.raises(TypeError, match="sort requires at least one operand"):
        lax.sort([])


# ------------------------------------------------------------------------------------------------
# top_k


def _total_key(v):
    """IEEE total order for float32 values: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < NaN."""
    bits = int(np.array(v, np.float32).view(np.int32))
    return bits if bits >= 0 else -(bits & 0x7FFFFFFF) - 1


@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_top_k_matches_sorted_list(k):
    x = np.array([1.0, np.nan, -0.0, 0.0, 5.0, 5.0, -np.inf], np.float32)
    vals, idx = lax.top_k(x, k)
    order = sorted(range(7), key=lambda i: (-_total_key(x[i]), i))[:k]
    assert idx.dtype == np.int32 and np.asarray(idx).tolist() == order
    np.testing.assert_array_equal(np.asarray(vals), x[order])
    if k == 7:
        assert order == [1, 4, 5, 0, 3, 2, 6]  # NaN first, 5.0 ties by index, +0.0 before -0.0


def test_top_k_batched_and_axis():
    rng = np.random.default_rng(5)
    x = rng.integers(-5, 5, size=(3, 8)).astype(np.int32)
    vals, idx = lax.top_k(x, 4)
    for r in range(3):
        order = sorted(range(8), key=lambda i: (-int(x[r, i]), i))[:4]
        assert np.asarray(idx)[r].tolist() == order
        assert np.asarray(vals)[r].tolist() == x[r, order].tolist()
    v0, i0 = lax.top_k(x, 2, axis=0)
    assert v0.shape == (2, 8) and i0.shape == (2, 8)
    for c in range(8):
        order = sorted(range(3), key=lambda i: (-int(x[i, c]), i))[:2]
        assert np.asarray(i0)[:, c].tolist() == order
    text = str(jax.make_jaxpr(lambda a: lax.top_k(a, 2))(x))
    assert "top_k[axis=1 k=2]" in text


def test_top_k_errors():
    with pytest.raises(ValueError, match=r"top_k: k=5 must be no larger than the size of axis 0 .*\(3,\)"):
        lax.top_k(np.ones(3, np.float32), 5)
    with pytest.raises(TypeError, match=r"top_k: operand must have at least 1 dimension, got f32\[\]"):
        lax.top_k(np.float32(1.0), 1)
    with pytest.raises(ValueError, match="top_k is not compatible with complex inputs"):  # as JAX
        lax.top_k(np.ones(3, np.complex64), 1)
