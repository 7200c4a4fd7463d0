"""Shared checks for the basic morphax.numpy tests (creation, reductions, manipulation, products):
compare with NumPy (values, shape, and the dtype JAX gives under x32) and re-run each function
through make_jaxpr + check_jaxpr + eval_jaxpr."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import tree_util
from morphax._src.core.jaxpr import check_jaxpr, eval_jaxpr

_X32 = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}
_LOW = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def x32(dtype) -> np.dtype:
    """The dtype JAX gives (in x32 mode) where NumPy gives `dtype`."""
    dt = np.dtype(dtype)
    return _X32.get(dt, dt)


def default_tol(dtype):
    dt = np.dtype(dtype)
    if dt in _LOW:
        return 2e-2 if dt == np.float16 else 5e-2
    if dt in (np.float32, np.complex64):
        return 2e-5
    return 1e-12


def rand(rng, shape, dtype):
    """A random NumPy array of `dtype` with small values (bools ~half true)."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -5
        return rng.integers(lo, 6, size=shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def assert_matches(got, want, dtype=None, rtol=None, atol=None, weak=None):
    """`got` (a morphax array) equals NumPy's `want` in shape and value, with JAX's dtype."""
    want = np.asarray(want)
    expected = np.dtype(dtype) if dtype is not None else x32(want.dtype)
    assert isinstance(got, morphax.Array), f"expected a morphax Array, got {type(got).__name__}"
    assert got.dtype == expected, f"dtype {got.dtype} != expected {expected}"
    assert got.shape == want.shape, f"shape {got.shape} != expected {want.shape}"
    if weak is not None:
        assert got.weak_type == weak, f"weak_type {got.weak_type} != expected {weak}"
    g = np.asarray(got)
    if expected.kind in "biu":
        np.testing.assert_array_equal(g, want.astype(expected))
        return
    tol = default_tol(expected)
    rtol = tol if rtol is None else rtol
    atol = tol if atol is None else atol
    wide = np.complex128 if expected.kind == "c" else np.float64
    np.testing.assert_allclose(g.astype(wide), want.astype(wide), rtol=rtol, atol=atol, equal_nan=True)


def _to_numpy(x):
    return np.asarray(x) if isinstance(x, morphax.Array) else x


def staged(fn, *args):
    """Run `fn` through make_jaxpr (the jaxpr must type-check) and evaluate the jaxpr."""
    closed, shapes = morphax.make_jaxpr(fn, return_shape=True)(*args)
    check_jaxpr(closed.jaxpr)
    leaves = tree_util.tree_leaves(args)
    outs = eval_jaxpr(closed.jaxpr, closed.consts, *leaves)
    return tree_util.tree_unflatten(tree_util.tree_structure(shapes), outs)


def assert_same(a, b):
    """Eager and staged results agree exactly: dtype, shape, weak type and values."""
    la, lb = tree_util.tree_leaves(a), tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        assert x.weak_type == y.weak_type, (x, y)
        xv, yv = np.asarray(x), np.asarray(y)
        if xv.dtype in _LOW:
            xv, yv = xv.astype(np.float32), yv.astype(np.float32)
        np.testing.assert_allclose(xv, yv, rtol=1e-6, atol=1e-6, equal_nan=True)


def check(jfn, nfn, *args, dtype=None, rtol=None, atol=None, trace=True, weak=None):
    """jfn(*morphax args) matches nfn(*numpy args) (trees of arrays allowed), eagerly and staged.

    `args` are NumPy arrays; `jfn` receives them as morphax arrays (same dtype under x32).
    """
    jargs = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    got = jfn(*jargs)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # NumPy's own warnings (mean of an empty slice, all-NaN slices) are not under test.
        warnings.simplefilter("ignore", RuntimeWarning)
        want = nfn(*[_to_numpy(a) for a in args])
    g_leaves = got if isinstance(got, (list, tuple)) else [got]
    w_leaves = want if isinstance(want, (list, tuple)) else [want]
    assert len(g_leaves) == len(w_leaves), f"{len(g_leaves)} results, expected {len(w_leaves)}"
    for g, w in zip(g_leaves, w_leaves):
        assert_matches(g, w, dtype=dtype, rtol=rtol, atol=atol, weak=weak)
    if trace:
        array_args = [a for a in jargs if isinstance(a, morphax.Array)]
        positions = [i for i, a in enumerate(jargs) if isinstance(a, morphax.Array)]

        def traced(*arrs):
            full = list(jargs)
            for i, a in zip(positions, arrs):
                full[i] = a
            return jfn(*full)

        assert_same(got, staged(traced, *array_args))
    return got
