"""Sorting, searching, set operations and histograms against NumPy: values and JAX's dtypes over a
few shapes, the ``size=``/``fill_value=`` forms, and a jitted sample per function."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
from morphax._src.numpy import searching as S

RNG = np.random.default_rng(0)
SHAPES = [(7,), (3, 4), (2, 3, 5)]
DTYPES = [np.float32, np.int32]


def _rand(shape, dtype, lo=-4, hi=5):
    return RNG.integers(lo, hi, size=shape).astype(dtype)


def _eq(got, want, dtype=None, **kw):
    got = np.asarray(got)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got, want, **kw)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_argsort(shape, dtype):
    x = _rand(shape, dtype)
    for axis in (-1, 0, None):
        _eq(S.sort(x, axis=axis), np.sort(x, axis=axis), dtype)
        _eq(S.argsort(x, axis=axis), np.argsort(x, axis=axis, kind="stable"), np.int32)
        _eq(
            S.sort(x, axis=axis, descending=True),
            np.flip(np.sort(x, axis=axis), -1 if axis is None else axis),
        )
        _eq(
            S.argsort(x, axis=axis, descending=True),
            np.argsort(-x.astype(np.float64), axis=axis, kind="stable"),
        )
    _eq(morphax.jit(S.argsort)(x), np.argsort(x, kind="stable"))


def test_sort_nan_and_complex():
    x = np.array([3.0, np.nan, -1.0, 2.0], np.float32)
    _eq(S.sort(x), np.sort(x))
    c = np.array([1 + 2j, 1 - 1j, 0 + 5j], np.complex64)
    _eq(S.sort_complex(c), np.sort_complex(c), np.complex64)
    _eq(S.sort_complex(np.array([3, 1, 2], np.int32)), [1, 2, 3], np.complex64)


@pytest.mark.parametrize("shape", SHAPES)
def test_lexsort(shape):
    keys = [_rand(shape, np.int32, 0, 3) for _ in range(3)]
    _eq(S.lexsort(keys), np.lexsort(keys), np.int32)
    _eq(S.lexsort(keys, axis=0), np.lexsort(keys, axis=0))
    _eq(morphax.jit(S.lexsort)(keys), np.lexsort(keys))


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_searchsorted(side, dtype):
    a = np.sort(_rand((9,), dtype))
    for vshape in [(), (5,), (2, 3)]:
        v = _rand(vshape, dtype, -6, 7)
        _eq(S.searchsorted(a, v, side=side), np.searchsorted(a, v, side=side), np.int32)
    perm = RNG.permutation(9)
    unsorted = a[perm]
    sorter = np.argsort(unsorted, kind="stable")
    _eq(
        S.searchsorted(unsorted, v, side=side, sorter=sorter),
        np.searchsorted(unsorted, v, side=side, sorter=sorter),
    )
    _eq(morphax.jit(lambda a, v: S.searchsorted(a, v, side=side))(a, v), np.searchsorted(a, v, side=side))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_nan(side):
    a = np.array([-1.0, 2.0, 2.0, np.nan, np.nan], np.float32)
    v = np.array([np.nan, 2.0, -3.0, 5.0], np.float32)
    _eq(S.searchsorted(a, v, side=side), np.searchsorted(a, v, side=side))


@pytest.mark.parametrize("shape", SHAPES)
def test_partition(shape):
    x = _rand(shape, np.float32)
    n = shape[-1]
    for kth in (0, n // 2, -1):
        p = np.asarray(S.partition(x, kth))
        k = kth % n
        want = np.sort(x, axis=-1)
        _eq(p[..., k], want[..., k])
        assert np.all(p[..., :k] <= p[..., k : k + 1]) and np.all(p[..., k + 1 :] >= p[..., k : k + 1])
        idx = np.asarray(S.argpartition(x, kth))
        _eq(np.take_along_axis(x, idx, -1)[..., k], want[..., k])
    _eq(np.asarray(morphax.jit(lambda x: S.partition(x, 1))(x))[..., 1], np.sort(x, axis=-1)[..., 1])


@pytest.mark.parametrize("shape", SHAPES)
def test_nonzero_family(shape):
    x = _rand(shape, np.int32, 0, 3) * (RNG.random(shape) > 0.5)
    for g, w in zip(S.nonzero(x), np.nonzero(x)):
        _eq(g, w, np.int32)
    _eq(S.flatnonzero(x), np.flatnonzero(x), np.int32)
    _eq(S.argwhere(x), np.argwhere(x), np.int32)
    m = x > 0
    _eq(S.extract(m, x), np.extract(m, x))
    cnt = int(np.count_nonzero(x))
    for size in (cnt, cnt + 3, max(cnt - 1, 0)):
        got = S.nonzero(x, size=size, fill_value=-1)
        want = [np.concatenate([w, -np.ones(size, w.dtype)])[:size] for w in np.nonzero(x)]
        for g, w in zip(got, want):
            _eq(g, w)
        f = S.flatnonzero(x, size=size, fill_value=7)
        _eq(f, np.concatenate([np.flatnonzero(x), np.full(size, 7)])[:size])
        aw = S.argwhere(x, size=size)
        _eq(aw, np.concatenate([np.argwhere(x), np.zeros((size, len(shape)), int)])[:size])
        ex = S.extract(m, x, size=size, fill_value=-5)
        _eq(ex, np.concatenate([np.extract(m, x), np.full(size, -5)])[:size])
    jitted = morphax.jit(lambda x: S.nonzero(x, size=4))(x)
    want = [np.concatenate([w, np.zeros(4, w.dtype)])[:4] for w in np.nonzero(x)]
    for g, w in zip(jitted, want):
        _eq(g, w)
    with pytest.raises(Exception, match="size"):
        morphax.jit(S.nonzero)(x)


def test_argwhere_scalar():
    assert S.argwhere(np.float32(3)).shape == (1, 0)
    assert S.argwhere(np.float32(0)).shape == (0, 0)


def test_select_piecewise():
    x = _rand((3, 4), np.float32)
    conds = [x < 0, x > 2]
    choices = [x * 2, x - 1]
    _eq(S.select(conds, choices, default=9), np.select(conds, choices, default=9), np.float32)
    _eq(morphax.jit(lambda x: S.select([x < 0, x > 2], [x * 2, x - 1]))(x), np.select(conds, choices))
    fl = [lambda v: -v, 7.0]
    _eq(S.piecewise(x, conds, fl), np.piecewise(x, conds, fl), np.float32)
    fl3 = [lambda v: -v, 7.0, lambda v: v * 10]
    _eq(S.piecewise(x, conds, fl3), np.piecewise(x, conds, fl3))
    xi = _rand((6,), np.int32)
    _eq(
        S.piecewise(xi, [xi < 0], [lambda v: v * 3, 1]),
        np.piecewise(xi, [xi < 0], [lambda v: v * 3, 1]),
        np.int32,
    )
    _eq(morphax.jit(lambda x: S.piecewise(x, [x < 0], [lambda v: -v, 7.0]))(x), np.piecewise(x, [x < 0], fl))


@pytest.mark.parametrize("shape", SHAPES)
def test_nanarg(shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    x[RNG.random(shape) < 0.3] = np.nan
    x.reshape(-1)[0] = 1.0
    _eq(S.nanargmax(x), np.nanargmax(x), np.int32)
    _eq(S.nanargmin(x), np.nanargmin(x), np.int32)
    y = RNG.standard_normal(shape).astype(np.float32)
    y.reshape(-1)[1] = np.nan
    _eq(S.nanargmax(y, axis=-1), np.nanargmax(y, axis=-1))
    _eq(S.nanargmin(y, axis=0, keepdims=True), np.nanargmin(y, axis=0, keepdims=True))
    _eq(S.nanargmax(np.array([np.nan, np.nan], np.float32)), -1)
    _eq(morphax.jit(S.nanargmin)(y), np.nanargmin(y))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("invert", [False, True])
def test_isin(shape, invert):
    x = _rand(shape, np.int32)
    t = np.array([0, 2, 3], np.int32)
    _eq(S.isin(x, t, invert=invert), np.isin(x, t, invert=invert))
    _eq(morphax.jit(S.isin)(x, t), np.isin(x, t))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_unique(shape, dtype):
    x = _rand(shape, dtype)
    v, i, inv, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    g = S.unique(x, return_index=True, return_inverse=True, return_counts=True)
    _eq(g[0], v, dtype)
    _eq(g[1], i, np.int32)
    _eq(g[2], inv.reshape(x.shape))
    _eq(g[3], c)
    _eq(S.unique(x), v)
    _eq(S.unique(x, axis=0), np.unique(x, axis=0))
    _eq(S.unique_values(x), v)
    _eq(S.unique_counts(x)[1], c)
    _eq(S.unique_inverse(x)[1], inv.reshape(x.shape))
    _eq(S.unique_all(x)[3], c)
    n = len(v)
    for size in (n, n + 2, n - 1):
        gs = S.unique(x, return_index=True, return_inverse=True, return_counts=True, size=size, fill_value=99)
        pad = max(size - n, 0)
        _eq(gs[0], np.concatenate([v, np.full(pad, 99)])[:size], dtype)
        _eq(gs[1], np.concatenate([i, np.full(pad, i[0])])[:size])
        _eq(gs[3], np.concatenate([c, np.zeros(pad)])[:size])
        if size >= n:
            _eq(gs[2], inv.reshape(x.shape))
    jv = morphax.jit(lambda x: S.unique(x, size=n + 1))(x)
    _eq(jv, np.concatenate([v, v[:1]]))


def test_unique_nan():
    x = np.array([3, 1, np.nan, 1, np.nan], np.float32)
    _eq(S.unique(x), [1, 3, np.nan])
    _eq(S.unique(x, size=4, fill_value=0), [1, 3, np.nan, 0])


@pytest.mark.parametrize("fn", ["intersect1d", "union1d", "setdiff1d", "setxor1d"])
def test_set_ops(fn):
    a = _rand((8,), np.int32)
    b = _rand((2, 3), np.int32)
    want = getattr(np, fn)(a, b)
    _eq(getattr(S, fn)(a, b), want, np.int32)
    n = len(want)
    for size in (n, n + 2):
        got = getattr(S, fn)(a, b, size=size, fill_value=-9)
        _eq(got, np.concatenate([want, np.full(size - n, -9)]))
    jf = morphax.jit(lambda a, b: getattr(S, fn)(a, b, size=n + 1, fill_value=-9))
    _eq(jf(a, b), np.concatenate([want, [-9]]))


def test_intersect1d_indices():
    a = np.array([5, 1, 3, 3, 9], np.int32)
    b = np.array([3, 9, 2], np.int32)
    for g, w in zip(S.intersect1d(a, b, return_indices=True), np.intersect1d(a, b, return_indices=True)):
        _eq(g, w)


@pytest.mark.parametrize("right", [False, True])
def test_digitize(right):
    x = RNG.integers(-2, 8, size=(3, 4)).astype(np.float32)
    for bins in (np.array([0, 1, 3, 5], np.float32), np.array([5, 3, 1, 0], np.float32)):
        _eq(S.digitize(x, bins, right=right), np.digitize(x, bins, right=right), np.int32)
        _eq(
            morphax.jit(lambda x, b: S.digitize(x, b, right=right))(x, bins),
            np.digitize(x, bins, right=right),
        )


def test_bincount():
    x = np.array([0, 1, 1, 3, 2, 1, 7], np.int32)
    _eq(S.bincount(x), np.bincount(x), np.int32)
    _eq(S.bincount(x, minlength=10), np.bincount(x, minlength=10))
    w = RNG.standard_normal(7).astype(np.float32)
    _eq(S.bincount(x, weights=w), np.bincount(x, weights=w), np.float32, rtol=1e-6)
    _eq(S.bincount(x, length=5), np.bincount(x)[:5])
    _eq(S.bincount(np.array([-2, 0, 1], np.int32)), [2, 1])
    _eq(morphax.jit(lambda x: S.bincount(x, length=9))(x), np.bincount(x, minlength=9))


@pytest.mark.parametrize("shape", SHAPES)
def test_histogram(shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    for bins in (3, 10, np.array([-1.0, 0.0, 0.5, 2.0], np.float32)):
        h, e = S.histogram(x, bins=bins)
        hw, ew = np.histogram(x, bins=bins)
        _eq(h, hw, np.float32)
        _eq(e, ew, np.float32, rtol=1e-5, atol=1e-6)
        _eq(S.histogram_bin_edges(x, bins=bins), np.histogram_bin_edges(x, bins=bins), rtol=1e-5, atol=1e-6)
    h, e = S.histogram(x, bins=4, range=(-1, 1), density=True)
    hw, ew = np.histogram(x, bins=4, range=(-1, 1), density=True)
    _eq(h, hw, rtol=1e-5)
    w = RNG.random(shape).astype(np.float32)
    _eq(S.histogram(x, bins=5, weights=w)[0], np.histogram(x, bins=5, weights=w)[0], rtol=1e-5)
    _eq(morphax.jit(lambda x: S.histogram(x, bins=6)[0])(x), np.histogram(x, bins=6)[0])


def test_histogramdd_2d():
    x = RNG.standard_normal(20).astype(np.float32)
    y = RNG.standard_normal(20).astype(np.float32)
    h, ex, ey = S.histogram2d(x, y, bins=(3, 4))
    hw, exw, eyw = np.histogram2d(x, y, bins=(3, 4))
    _eq(h, hw)
    _eq(ex, exw, rtol=1e-5, atol=1e-6)
    _eq(ey, eyw, rtol=1e-5, atol=1e-6)
    h, _, _ = S.histogram2d(x, y, bins=3, density=True)
    _eq(h, np.histogram2d(x, y, bins=3, density=True)[0], rtol=1e-5)
    s = RNG.standard_normal((30, 3)).astype(np.float32)
    h, edges = S.histogramdd(s, bins=(2, 3, 4))
    hw, edw = np.histogramdd(s, bins=(2, 3, 4))
    _eq(h, hw)
    for g, w in zip(edges, edw):
        _eq(g, w, rtol=1e-5, atol=1e-6)
    _eq(morphax.jit(lambda s: S.histogramdd(s, bins=2)[0])(s), np.histogramdd(s, bins=2)[0])
