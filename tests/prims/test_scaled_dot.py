"""lax.scaled_dot against a NumPy oracle of its definition (operands and repeated block scales
rounded to bfloat16, products in bfloat16, float64 accumulation), under jit and vmap, its errors,
and JAX's results when JAX is installed."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import morphax
from morphax import lax

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(0)


def _oracle(lhs, rhs, ls, rs, lk, rk, subscripts):
    def scaled(x, s, k):
        x = x.astype(BF16)
        if s is None:
            return x.astype(np.float64)
        rep = np.repeat(s.astype(BF16), x.shape[k] // s.shape[k], axis=k)
        return (x * rep).astype(BF16).astype(np.float64)

    return np.einsum(subscripts, scaled(lhs, ls, lk), scaled(rhs, rs, rk))


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _scales(*shape):
    return RNG.uniform(0.5, 2.0, shape).astype(np.float32)


CASES = [
    # (lhs, rhs, lhs_scale, rhs_scale, dimension_numbers, lhs axis, rhs axis, einsum)
    ((4, 64), (64, 3), (4, 2), (2, 3), None, 1, 0, "mk,kn->mn"),
    ((2, 4, 64), (2, 64, 3), (2, 4, 4), (2, 4, 3), None, 2, 1, "bmk,bkn->bmn"),
    ((32, 5), (3, 32), (4, 5), (3, 4), (((0,), (1,)), ((), ())), 0, 1, "km,nk->mn"),
    ((4, 16), (16, 3), None, (1, 3), None, 1, 0, "mk,kn->mn"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c[0]))
@pytest.mark.parametrize("out_dtype", [None, np.float32])
def test_against_the_definition(case, out_dtype):
    ls_shape, rs_shape = case[2], case[3]
    lhs, rhs = _f32(*case[0]), _f32(*case[1])
    ls = None if ls_shape is None else _scales(*ls_shape)
    rs = None if rs_shape is None else _scales(*rs_shape)
    kw = dict(lhs_scale=ls, rhs_scale=rs, dimension_numbers=case[4], preferred_element_type=out_dtype)
    got = lax.scaled_dot(lhs, rhs, **kw)
    want = _oracle(lhs, rhs, ls, rs, case[5], case[6], case[7])
    expected_dtype = np.dtype(BF16) if out_dtype is None else np.dtype(out_dtype)
    assert got.dtype == expected_dtype and got.shape == want.shape
    tol = 1e-2 if out_dtype is None else 1e-5
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol * 4)
    jitted = morphax.jit(lambda a, b: lax.scaled_dot(a, b, **kw))(lhs, rhs)
    np.testing.assert_array_equal(np.asarray(jitted, np.float32), np.asarray(got, np.float32))


def test_vmap_matches_loop():
    lhs, rhs, ls, rs = _f32(3, 4, 32), _f32(32, 2), _scales(3, 4, 2), _scales(2, 2)
    f = lambda a, s: lax.scaled_dot(a, rhs, lhs_scale=s, rhs_scale=rs, preferred_element_type=np.float32)  # noqa: E731
    got = morphax.vmap(f)(lhs, ls)
    want = np.stack([np.asarray(f(lhs[i], ls[i])) for i in range(3)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_errors_name_the_argument():
    lhs, rhs = _f32(4, 64), _f32(64, 3)
    with pytest.raises(TypeError, match="multiple of lhs_scale"):
        lax.scaled_dot(lhs, rhs, lhs_scale=_scales(4, 5))
    with pytest.raises(TypeError, match="rhs_scale .* must match rhs"):
        lax.scaled_dot(lhs, rhs, rhs_scale=_scales(2, 4))
    with pytest.raises(ValueError, match="dimension_numbers"):
        lax.scaled_dot(_f32(2, 2, 2, 2), _f32(2, 2, 2, 2))


def test_matches_jax():
    jax = pytest.importorskip("jax")
    lhs, rhs, ls, rs = _f32(2, 4, 64), _f32(2, 64, 3), _scales(2, 4, 2), _scales(2, 2, 3)
    want = np.asarray(jax.lax.scaled_dot(lhs, rhs, lhs_scale=ls, rhs_scale=rs))
    got = np.asarray(lax.scaled_dot(lhs, rhs, lhs_scale=ls, rhs_scale=rs))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
