"""Reductions, cumulative reductions and logsumexp against NumPy/SciPy: values and JAX's result
dtypes (sums of small ints accumulate in int32, means of ints are float32...), over shapes, axes,
keepdims, masks and initial values; each traced through make_jaxpr; bad inputs raise.
"""

from __future__ import annotations

import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest
import scipy.special

import morphax
import morphax.numpy as jnp
from morphax._src.errors import ConcretizationTypeError

# The shared helpers live beside this file (pytest runs with --import-mode=importlib).
sys.path.insert(0, str(pathlib.Path(__file__).parent))
from basic_api_check import assert_matches, check, rand  # noqa: E402

SHAPES_AXES = [
    ((), None),
    ((5,), None),
    ((5,), 0),
    ((5,), -1),
    ((2, 3), None),
    ((2, 3), 0),
    ((2, 3), 1),
    ((2, 3), (0, 1)),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), -2),
    ((2, 3, 4), (-1, 0)),
    ((2, 3, 4), ()),
    ((3, 0, 2), 0),
    ((3, 0, 2), 1),
]
DTYPES = [np.float32, np.int32, np.int8, np.uint8, np.bool_, np.float16, np.complex64]


def _skip(name, dtype, shape, axis):
    dt = np.dtype(dtype)
    if name in ("max", "min", "amax", "amin", "ptp") and dt.kind == "c":
        return True
    if name == "ptp" and dt == np.bool_:
        return True
    if name in ("max", "min", "amax", "amin", "ptp"):
        axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
        return any(shape[a] == 0 for a in axes) if shape else False
    return False


@pytest.mark.parametrize("shape,axis", SHAPES_AXES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "ptp"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_matches_numpy(name, dtype, shape, axis, keepdims):
    if _skip(name, dtype, shape, axis):
        pytest.skip("NumPy has no such reduction")
    rng = np.random.default_rng(len(shape) * 7 + len(name))
    x = rand(rng, shape, dtype)
    expected = None
    if name == "mean" and np.dtype(dtype) == np.float16:
        expected = np.float16  # NumPy agrees; made explicit since float16 is accumulated in float32
    tol = 2e-2 if np.dtype(dtype) == np.float16 else None
    check(
        lambda a: getattr(jnp, name)(a, axis=axis, keepdims=keepdims),
        lambda a: getattr(np, name)(a, axis=axis, keepdims=keepdims),
        x,
        dtype=expected,
        rtol=tol,
        atol=tol,
    )


@pytest.mark.parametrize("shape,axis", [s for s in SHAPES_AXES if 0 not in s[0]])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.complex64, np.float16])
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std(name, dtype, shape, axis, ddof):
    rng = np.random.default_rng(3)
    x = rand(rng, shape, dtype)
    wide = np.complex128 if x.dtype.kind == "c" else np.float64
    expected = {np.dtype(np.complex64): np.float32, np.dtype(np.float16): np.float16}.get(
        np.dtype(dtype), np.float32
    )
    tol = 2e-2 if np.dtype(dtype) == np.float16 else 1e-4
    check(
        lambda a: getattr(jnp, name)(a, axis=axis, ddof=ddof),
        lambda a: getattr(np, name)(a.astype(wide), axis=axis, ddof=ddof),
        x,
        dtype=expected,
        rtol=tol,
        atol=tol,
    )


@pytest.mark.parametrize(
    "dtype,expected",
    [
        (np.bool_, np.int32),
        (np.int8, np.int32),
        (np.int16, np.int32),
        (np.uint8, np.uint32),
        (np.uint16, np.uint32),
        (np.int32, np.int32),
        (np.uint32, np.uint32),
        (np.float16, np.float16),
        (np.float32, np.float32),
    ],
)
@pytest.mark.parametrize("name", ["sum", "prod", "cumsum", "cumprod"])
def test_integer_promotion(name, dtype, expected):
    if name in ("cumsum", "cumprod") and dtype != np.bool_:
        expected = dtype  # JAX's cumsum/cumprod keep the input dtype (only bools widen).
    x = np.array([[1, 0, 1], [1, 1, 1]], dtype=dtype)
    check(lambda a: getattr(jnp, name)(a, axis=1), lambda a: getattr(np, name)(a, axis=1), x, dtype=expected)
    # An explicit dtype wins, and promote_integers=False keeps the input dtype.
    check(
        lambda a: getattr(jnp, name)(a, dtype=jnp.int16),
        lambda a: getattr(np, name)(a, dtype=np.int16),
        x,
        dtype=np.int16,
    )
    if name in ("sum", "prod"):
        assert getattr(jnp, name)(jnp.asarray(x), promote_integers=False).dtype == dtype


def test_mean_dtypes():
    assert jnp.mean(jnp.arange(4)).dtype == np.float32
    assert jnp.mean(jnp.array([True, False])).dtype == np.float32
    check(
        lambda a: jnp.mean(a, dtype=jnp.int32),
        lambda a: np.mean(a, dtype=np.int32),
        np.array([1, 2, 2], np.int32),
    )
    check(
        lambda a: jnp.mean(a, axis=0, dtype=jnp.float16),
        lambda a: np.mean(a, axis=0, dtype=np.float16),
        np.arange(6, dtype=np.int32).reshape(3, 2),
    )
    # Mean of an empty axis is NaN, silently.
    out = jnp.mean(jnp.zeros((0, 2)), axis=0)
    assert np.isnan(np.asarray(out)).all()


def test_reductions_are_not_weak():
    for fn in (jnp.sum, jnp.prod, jnp.max, jnp.mean, jnp.var):
        out = fn(jnp.array(2.0))
        assert not out.weak_type and out.dtype == np.float32, fn
    assert not jnp.sum(3).weak_type and jnp.sum(3).dtype == np.int32


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "all", "any", "var"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_where_masks(name, axis):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    mask = rng.random((3, 4)) < 0.6
    mask[:, 0] = True
    kw = {"initial": 0.5} if name in ("max", "min") else {}
    check(
        lambda a, m: getattr(jnp, name)(a, axis=axis, where=m, **kw),
        lambda a, m: getattr(np, name)(a, axis=axis, where=m, **kw),
        x,
        mask,
        rtol=1e-5,
        atol=1e-5,
    )
    # A mask that broadcasts against the operand.
    row = np.array([True, False, True, True])
    check(
        lambda a, m: getattr(jnp, name)(a, axis=axis, where=m, **kw),
        lambda a, m: getattr(np, name)(a, axis=axis, where=np.broadcast_to(m, a.shape), **kw),
        x,
        row,
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize(
    "name,initial", [("sum", 10), ("prod", 2.0), ("max", 1.0), ("min", -1.0), ("max", -100)]
)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_initial(name, initial, dtype):
    x = np.arange(-3, 3).reshape(2, 3).astype(dtype)
    check(
        lambda a: getattr(jnp, name)(a, axis=1, initial=initial),
        lambda a: getattr(np, name)(a, axis=1, initial=np.asarray(initial).astype(dtype)),
        x,
    )
    # With an initial value, max/min of an empty axis is the initial value.
    if name in ("max", "min"):
        check(
            lambda a: getattr(jnp, name)(a, axis=0, initial=initial),
            lambda a: getattr(np, name)(a, axis=0, initial=np.asarray(initial).astype(dtype)),
            np.zeros((0, 2), dtype),
        )


def test_reduction_errors():
    x = jnp.ones((2, 3))
    with pytest.raises(ValueError, match="zero-size array to reduction operation max"):
        jnp.max(jnp.zeros((0, 3)), axis=0)
    with pytest.raises(ValueError, match="min does not have an identity"):
        jnp.min(x, where=jnp.ones((2, 3), bool))
    with pytest.raises(NotImplementedError, match="'out' argument to jnp.sum"):
        jnp.sum(x, out=x)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.sum(x, axis=2)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.sum(jnp.float32(1), axis=0)
    with pytest.raises(ValueError, match="duplicate"):
        jnp.mean(x, axis=(0, 0))
    with pytest.raises(TypeError, match="sum requires ndarray"):
        jnp.sum([1, 2])
    with pytest.raises(ValueError, match="initial value must be a scalar"):
        jnp.sum(x, initial=jnp.ones(2))
    with pytest.raises(ValueError, match="ddof and correction"):
        jnp.var(x, ddof=1, correction=1)
    with pytest.raises(ConcretizationTypeError, match="axis argument to jnp.sum"):
        morphax.make_jaxpr(lambda a, ax: jnp.sum(a, axis=ax))(x, 0)


# ------------------------------------------------------------------------------ argmax/argmin


@pytest.mark.parametrize(
    "shape,axis", [((5,), None), ((5,), 0), ((2, 3), None), ((2, 3), 1), ((2, 3, 4), -2), ((), None)]
)
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.bool_, np.float16])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin(name, dtype, shape, axis, keepdims):
    rng = np.random.default_rng(5)
    x = rand(rng, shape, dtype)
    check(
        lambda a: getattr(jnp, name)(a, axis=axis, keepdims=keepdims),
        lambda a: getattr(np, name)(a, axis=axis, keepdims=keepdims),
        x,
        dtype=np.int32,
    )


def test_argmax_nan_and_ties():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 2.0, 0.0, 2.0]], np.float32)
    check(lambda a: jnp.argmax(a, axis=1), lambda a: np.argmax(a, axis=1), x, dtype=np.int32)
    check(lambda a: jnp.argmin(a, axis=1), lambda a: np.argmin(a, axis=1), x, dtype=np.int32)
    with pytest.raises(ValueError, match="argmax of an empty sequence"):
        jnp.argmax(jnp.zeros((0,)))
    with pytest.raises(NotImplementedError):
        jnp.argmin(jnp.zeros(3), out=jnp.zeros(()))


# -------------------------------------------------------------------------------- cumulative


@pytest.mark.parametrize(
    "shape,axis",
    [((5,), None), ((5,), 0), ((2, 3), None), ((2, 3), 0), ((2, 3, 4), -1), ((), None), ((0, 3), 1)],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.bool_, np.complex64])
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative(name, dtype, shape, axis):
    rng = np.random.default_rng(9)
    x = rand(rng, shape, dtype)
    check(
        lambda a: getattr(jnp, name)(a, axis=axis),
        lambda a: getattr(np, name)(a, axis=axis),
        x,
        dtype=np.int8 if dtype == np.int8 else None,  # JAX keeps small integer dtypes here
        rtol=1e-5,
        atol=1e-5,
    )


def test_cumulative_bool_dtype_and_array_api():
    x = np.array([False, True, False, True])
    check(lambda a: jnp.cumsum(a, dtype=bool), lambda a: np.cumsum(a).astype(bool), x, dtype=np.bool_)
    check(
        lambda a: jnp.cumulative_sum(a, include_initial=True),
        lambda a: np.concatenate([[0], np.cumsum(a)]),
        np.arange(1, 5, dtype=np.int32),
    )
    check(
        lambda a: jnp.cumulative_prod(a, axis=1),
        lambda a: np.cumprod(a, axis=1),
        np.arange(1, 7, dtype=np.float32).reshape(2, 3),
    )
    with pytest.raises(ValueError, match="axis must be given"):
        jnp.cumulative_sum(jnp.ones((2, 2)))


# ----------------------------------------------------------------------------- nan-reductions


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nan_reductions(name, axis):
    x = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [2.0, -1.0, np.nan]], np.float32)
    check(lambda a: getattr(jnp, name)(a, axis=axis), lambda a: getattr(np, name)(a, axis=axis), x)
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    check(lambda a: getattr(jnp, name)(a, axis=axis), lambda a: getattr(np, name)(a, axis=axis), ints)


def test_count_nonzero():
    x = np.array([[0, 1, 2], [0, 0, 3]], np.int8)
    check(lambda a: jnp.count_nonzero(a, axis=1), lambda a: np.count_nonzero(a, axis=1), x, dtype=np.int32)
    check(jnp.count_nonzero, np.count_nonzero, x, dtype=np.int32)


# --------------------------------------------------------------------------------- logsumexp


@pytest.mark.parametrize(
    "shape,axis", [((5,), None), ((2, 3), 1), ((2, 3, 4), (0, 2)), ((3, 4), -1), ((), None)]
)
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp(shape, axis, keepdims):
    if shape == () and keepdims:
        pytest.skip("SciPy gives shape (1,) for a 0-d input with keepdims; JAX gives ()")
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) * 10).astype(np.float32)
    check(
        lambda a: jnp.logsumexp(a, axis=axis, keepdims=keepdims),
        lambda a: scipy.special.logsumexp(a, axis=axis, keepdims=keepdims),
        x,
        dtype=np.float32,
        rtol=1e-5,
    )


def test_logsumexp_weights_sign_and_infinities():
    x = np.array([[1.0, 2.0, 3.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0]], np.float32)
    check(
        lambda a: jnp.logsumexp(a, axis=1), lambda a: scipy.special.logsumexp(a, axis=1), x, dtype=np.float32
    )
    b = np.array([[1.0, -2.0, 0.5], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]], np.float32)
    y = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 2.0], [np.inf, 0.0, 1.0]], np.float32)
    for b_row in (b, np.abs(b)):
        with np.errstate(all="ignore"):
            want = scipy.special.logsumexp(y, axis=1, b=b_row, return_sign=True)
        check(
            lambda a, w: jnp.logsumexp(a, axis=1, b=w, return_sign=True),
            lambda a, w, want=want: want,
            y,
            b_row,
            dtype=None,
        )
    # Without return_sign a negative total is NaN (as SciPy).
    got = jnp.logsumexp(jnp.array([0.0, 1.0]), b=jnp.array([1.0, -2.0]))
    assert np.isnan(float(got))
    ints = np.arange(4, dtype=np.int32)
    check(jnp.logsumexp, scipy.special.logsumexp, ints, dtype=np.float32, rtol=1e-6)
    m = np.array([True, False, True, False])
    check(
        lambda a, w: jnp.logsumexp(a, where=w),
        lambda a, w: scipy.special.logsumexp(a[w]),
        np.arange(4, dtype=np.float32),
        m,
    )


def test_methods_forward_to_reductions():
    x = jnp.arange(6.0).reshape(2, 3)
    assert_matches(x.sum(axis=0), np.arange(6.0).reshape(2, 3).sum(axis=0))
    assert_matches(x.mean(), np.float32(2.5))
    assert_matches(x.max(axis=1, keepdims=True), np.array([[2.0], [5.0]]))
    assert_matches(x.argmin(axis=1), np.array([0, 0]))
    assert_matches(x.std(ddof=1), np.std(np.arange(6.0), ddof=1), rtol=1e-6)
    assert_matches(x.cumsum(axis=1), np.cumsum(np.arange(6.0).reshape(2, 3), axis=1))
    assert_matches((x > 2).any(axis=1), np.array([False, True]))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "cumsum", "argmax"])
def test_bfloat16_reductions(name):
    # bfloat16 accumulates in float32 and returns bfloat16 (argmax: int32), as in JAX.
    x = np.linspace(-1.5, 2.0, 12, dtype=np.float32).reshape(3, 4)
    xb = x.astype(ml_dtypes.bfloat16)
    expected = np.int32 if name == "argmax" else ml_dtypes.bfloat16
    check(
        lambda a: getattr(jnp, name)(a, axis=1),
        lambda a: getattr(np, name)(a.astype(np.float32), axis=1),
        xb,
        dtype=expected,
        rtol=3e-2,
        atol=3e-2,
    )
