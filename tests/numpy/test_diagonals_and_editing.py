"""Diagonal, triangle, index-grid and construction helpers against NumPy: values and JAX dtypes,
eager and staged through make_jaxpr, plus a jit sample per function."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import morphax
import morphax.numpy as C
import morphax.numpy as jnp  # noqa: F401 - registers array methods
from morphax._src.numpy import index_tricks as IT
from morphax._src.numpy import padding as P

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from basic_api_check import assert_matches, check, rand  # noqa: E402

RNG = np.random.default_rng(7)
DTYPES = [np.float32, np.int32, np.bool_]


@pytest.mark.parametrize("shape", [(3,), (4, 4), (3, 5), (5, 2)])
@pytest.mark.parametrize("k", [-2, 0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_diag(shape, k, dtype):
    x = rand(RNG, shape, dtype)
    check(lambda a: C.diag(a, k), lambda a: np.diag(a, k), x)


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
@pytest.mark.parametrize("k", [-1, 0, 2])
def test_diagflat(shape, k):
    x = rand(RNG, shape, np.float32)
    check(lambda a: C.diagflat(a, k), lambda a: np.diagflat(a, k), x)


@pytest.mark.parametrize(
    "shape,axes", [((4, 4), (0, 1)), ((3, 5), (1, 0)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 1))]
)
@pytest.mark.parametrize("offset", [-1, 0, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_diagonal_trace(shape, axes, offset, dtype):
    x = rand(RNG, shape, dtype)
    check(lambda a: C.diagonal(a, offset, *axes), lambda a: np.diagonal(a, offset, *axes), x)
    if dtype != np.bool_:
        check(lambda a: C.trace(a, offset, *axes), lambda a: np.trace(a, offset, *axes), x)


@pytest.mark.parametrize("n,m,k", [(3, None, 0), (3, 5, 1), (4, 2, -1)])
@pytest.mark.parametrize("dtype", [None, np.int32, np.bool_])
def test_tri(n, m, k, dtype):
    assert_matches(C.tri(n, m, k, dtype), np.tri(n, m, k, dtype=dtype or np.float32))


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("k", [-1, 0, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_tril_triu(shape, k, dtype):
    x = rand(RNG, shape, dtype)
    check(lambda a: C.tril(a, k), lambda a: np.tril(a, k), x)
    check(lambda a: C.triu(a, k), lambda a: np.triu(a, k), x)


@pytest.mark.parametrize("n,k,m", [(3, 0, None), (4, 1, 5), (4, -1, 2)])
def test_tri_indices(n, k, m):
    for got, want in zip(C.tril_indices(n, k, m), np.tril_indices(n, k, m)):
        assert_matches(got, want)
    for got, want in zip(C.triu_indices(n, k, m), np.triu_indices(n, k, m)):
        assert_matches(got, want)
    x = np.zeros((n, m or n))
    for got, want in zip(C.tril_indices_from(x, k), np.tril_indices_from(x, k)):
        assert_matches(got, want)
    for got, want in zip(C.triu_indices_from(x, k), np.triu_indices_from(x, k)):
        assert_matches(got, want)


@pytest.mark.parametrize("n,ndim", [(3, 2), (2, 3), (0, 2)])
def test_diag_indices(n, ndim):
    for got, want in zip(C.diag_indices(n, ndim), np.diag_indices(n, ndim)):
        assert_matches(got, want)
    x = np.zeros((n,) * ndim)
    for got, want in zip(C.diag_indices_from(x), np.diag_indices_from(x)):
        assert_matches(got, want)


def _np_fill(a, val):
    a = a.copy()
    np.fill_diagonal(a, val)
    return a


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 2), (3, 3, 3)])
@pytest.mark.parametrize("val", [7, [1, 2], np.array([[4, 5], [6, 8]])])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_fill_diagonal(shape, val, dtype):
    x = rand(RNG, shape, dtype)
    check(lambda a: C.fill_diagonal(a, val, inplace=False), lambda a: _np_fill(a, val), x)
    with pytest.raises(NotImplementedError):
        C.fill_diagonal(x, val)


@pytest.mark.parametrize("sizes", [(3,), (2, 3), (2, 3, 4)])
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(sizes, indexing, sparse):
    xs = [rand(RNG, (s,), np.float32) for s in sizes]
    check(
        lambda *a: C.meshgrid(*a, indexing=indexing, sparse=sparse),
        lambda *a: list(np.meshgrid(*a, indexing=indexing, sparse=sparse)),
        *xs,
    )


@pytest.mark.parametrize("dims", [(3,), (2, 3), (2, 1, 4), ()])
@pytest.mark.parametrize("sparse", [False, True])
def test_indices(dims, sparse):
    got, want = C.indices(dims, sparse=sparse), np.indices(dims, sparse=sparse)
    if sparse:
        for g, w in zip(got, want):
            assert_matches(g, w)
    else:
        assert_matches(got, want)
    assert_matches(C.indices((2, 3), dtype=np.float32), np.indices((2, 3), dtype=np.float32))


def test_ix_():
    a, b = np.array([0, 2], np.int32), np.array([1, 0, 3], np.int32)
    check(lambda x, y: C.ix_(x, y), lambda x, y: np.ix_(x, y), a, b)
    x = rand(RNG, (3, 4), np.float32)
    assert_matches(jnp.asarray(x)[C.ix_(a, b)], x[np.ix_(a, b)])


@pytest.mark.parametrize(
    "shapes,axis", [(((2, 3), (4,)), None), (((2, 3), (1, 3)), 0), (((2, 3), (2, 2)), 1)]
)
@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.int32, np.float32)])
def test_append(shapes, axis, dtypes):
    a, b = rand(RNG, shapes[0], dtypes[0]), rand(RNG, shapes[1], dtypes[1])
    check(lambda x, y: C.append(x, y, axis), lambda x, y: np.append(x, y, axis), a, b)


def test_jit_samples():
    x = rand(RNG, (4, 4), np.float32)
    v = rand(RNG, (3,), np.float32)
    assert_matches(morphax.jit(lambda a: C.diag(a, 1))(v), np.diag(v, 1))
    assert_matches(morphax.jit(C.trace)(x), np.trace(x))
    assert_matches(morphax.jit(lambda a: C.tril(a, -1))(x), np.tril(x, -1))
    assert_matches(morphax.jit(lambda a: C.triu(a, 1))(x), np.triu(x, 1))
    assert_matches(morphax.jit(lambda a: C.fill_diagonal(a, 0.0, inplace=False))(x), _np_fill(x, 0.0))
    assert_matches(morphax.jit(lambda a: C.meshgrid(a, a)[0])(v), np.meshgrid(v, v)[0])
    assert_matches(morphax.jit(lambda a: C.append(a, a))(v), np.append(v, v))
    assert_matches(morphax.jit(lambda a: a[C.tril_indices(4)])(x), x[np.tril_indices(4)])


X234 = rand(RNG, (2, 3, 4), np.float32)


@pytest.mark.parametrize("axis,start", [(0, 0), (2, 0), (0, 3), (1, -1), (-1, 1)])
def test_rollaxis(axis, start):
    check(lambda a: C.rollaxis(a, axis, start), lambda a: np.rollaxis(a, axis, start), X234)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack(axis):
    check(lambda a: C.unstack(a, axis=axis), lambda a: tuple(np.moveaxis(a, axis, 0)), X234)


@pytest.mark.parametrize("n", [None, 0, 2, 5])
@pytest.mark.parametrize("increasing", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_vander(n, increasing, dtype):
    x = rand(RNG, (4,), dtype)
    check(lambda a: C.vander(a, n, increasing), lambda a: np.vander(a, n, increasing), x)


@pytest.mark.parametrize("s1,s2", [((3, 4), (4,)), ((2, 3, 4), (4,)), ((3, 4), (2, 4))])
def test_matvec_vecmat(s1, s2):
    a, b = rand(RNG, s1, np.float32), rand(RNG, s2, np.float32)
    check(C.matvec, lambda x, y: np.einsum("...ij,...j->...i", x, y), a, b)
    m = rand(RNG, s1[:-2] + (s1[-1], s1[-2]), np.complex64)
    v = rand(RNG, s2, np.complex64)
    check(C.vecmat, lambda x, y: np.einsum("...j,...ji->...i", np.conj(x), y), v, m)


@pytest.mark.parametrize("shape", [(6,), (2, 3, 4), (5, 1)])
def test_unravel_ravel(shape):
    n = int(np.prod(shape))
    idx = np.arange(n, dtype=np.int32)[::2].copy()
    check(lambda i: C.unravel_index(i, shape), lambda i: np.unravel_index(i, shape), idx)
    coords = np.unravel_index(idx, shape)
    for order in "CF":
        for mode in ["raise", "clip", "wrap"]:
            assert_matches(
                C.ravel_multi_index(coords, shape, mode=mode, order=order),
                np.ravel_multi_index(coords, shape, order=order).astype(np.int32),
            )
    # JAX clips out-of-range flat indices
    got = C.unravel_index(np.array([n + 3, -1], np.int32), shape)
    for g, w in zip(got, np.unravel_index([n - 1, n - 1], shape)):
        assert_matches(g, w.astype(np.int32))


@pytest.mark.parametrize(
    "obj,axis", [(1, None), ([0, 2], 2), (slice(1, None), 1), (-1, 0), ([True, False, True], 1)]
)
def test_delete(obj, axis):
    check(lambda a: C.delete(a, obj, axis), lambda a: np.delete(a, obj, axis), X234)


def test_index_tricks():
    assert IT.s_[1:2, ::3] == np.s_[1:2, ::3]
    assert IT.s_[3] == np.s_[3]
    assert IT.index_exp[3] == np.index_exp[3]
    assert IT.index_exp[1:, None] == np.index_exp[1:, None]


@pytest.mark.parametrize("shape", [(3, 4), 7, (2, 0), (1,)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_resize(shape, dtype):
    check(lambda a: C.resize(a, shape), lambda a: np.resize(a, shape), rand(RNG, (2, 3), dtype))


@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_choose(mode):
    a = (
        np.array([[0, 1, 2], [2, 1, 0]], np.int32)
        if mode == "raise"
        else np.array([[0, 4, -1], [2, 1, 0]], np.int32)
    )
    chs = [rand(RNG, (2, 3), np.float32), rand(RNG, (3,), np.float32), rand(RNG, (), np.float32)]
    assert_matches(C.choose(a, chs, mode=mode), np.choose(a, chs, mode=mode))


def test_fromfunction_apply():
    f = lambda i, j: i * 10 + j  # noqa: E731
    assert_matches(C.fromfunction(f, (2, 3)), np.fromfunction(f, (2, 3)).astype(np.float32))
    assert_matches(C.fromfunction(f, (3, 2), dtype=np.int32), np.fromfunction(f, (3, 2), dtype=np.int32))
    assert_matches(C.apply_over_axes(jnp.sum, X234, [0, 2]), np.apply_over_axes(np.sum, X234, [0, 2]))
    assert_matches(C.apply_over_axes(jnp.cumsum, X234, 1), np.apply_over_axes(np.cumsum, X234, 1))
    for axis in [0, 1, 2]:
        assert_matches(C.apply_along_axis(jnp.sum, axis, X234), np.apply_along_axis(np.sum, axis, X234))
        assert_matches(
            C.apply_along_axis(lambda v: v[::-1] * 2, axis, X234),
            np.apply_along_axis(lambda v: v[::-1] * 2, axis, X234),
        )


def test_block():
    a, b = rand(RNG, (2, 2), np.float32), rand(RNG, (2, 3), np.int32)
    c, d = rand(RNG, (1, 2), np.float32), rand(RNG, (1, 3), np.float32)
    check(
        lambda *x: C.block([[x[0], x[1]], [x[2], x[3]]]),
        lambda *x: np.block([[x[0], x[1]], [x[2], x[3]]]),
        a,
        b,
        c,
        d,
    )
    v = rand(RNG, (3,), np.float32)
    check(lambda x: C.block([x, x]), lambda x: np.block([x, x]), v)
    check(lambda x: C.block([[x], [x]]), lambda x: np.block([[x], [x]]), v)
    assert_matches(C.block(v), np.block(v))


def test_jit_samples_2():
    v = rand(RNG, (3,), np.float32)
    assert_matches(morphax.jit(lambda a: C.rollaxis(a, 2))(X234), np.rollaxis(X234, 2))
    assert_matches(morphax.jit(lambda a: C.unstack(a)[1])(X234), X234[1])
    assert_matches(morphax.jit(C.vander)(v), np.vander(v))
    assert_matches(morphax.jit(C.matvec)(X234, rand(RNG, (4,), np.float32) * 0 + 1), X234.sum(-1))
    idx = np.array([3, 5], np.int32)
    assert_matches(
        morphax.jit(lambda i: C.unravel_index(i, (2, 3))[1])(idx), np.unravel_index(idx, (2, 3))[1]
    )
    assert_matches(
        morphax.jit(lambda i, j: C.ravel_multi_index((i, j), (2, 3), mode="clip"))(idx, idx),
        np.ravel_multi_index((np.clip(idx, 0, 1), np.clip(idx, 0, 2)), (2, 3)).astype(np.int32),
    )
    assert_matches(morphax.jit(lambda a: C.delete(a, 1, 0))(X234), np.delete(X234, 1, 0))
    assert_matches(morphax.jit(lambda a: C.resize(a, (4, 4)))(v), np.resize(v, (4, 4)))
    a = np.array([0, 1, 2], np.int32)
    assert_matches(
        morphax.jit(lambda i: C.choose(i, [v, v * 2, v * 3], mode="clip"))(a), np.choose(a, [v, v * 2, v * 3])
    )
    assert_matches(morphax.jit(lambda x: C.block([x, x]))(v), np.block([v, v]))
    assert_matches(morphax.jit(lambda x: C.apply_along_axis(jnp.sum, 1, x))(X234), X234.sum(1))
    with pytest.raises(ValueError):
        morphax.jit(lambda i: C.choose(i, [v, v]))(a)


PAD_WIDTHS = [2, (1, 2), ((1, 0),), ((0, 2), (3, 1)), ((1, 1), (0, 0))]


@pytest.mark.parametrize("pw", PAD_WIDTHS)
@pytest.mark.parametrize(
    "mode", ["constant", "edge", "reflect", "symmetric", "wrap", "maximum", "minimum", "mean"]
)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad_modes(pw, mode, dtype):
    x = rand(RNG, (3, 4), dtype)
    check(lambda a: P.pad(a, pw, mode), lambda a: np.pad(a, pw, mode), x)


@pytest.mark.parametrize("mode", ["reflect", "symmetric", "wrap"])
def test_pad_large_widths(mode):
    x = rand(RNG, (3,), np.float32)
    check(lambda a: P.pad(a, (7, 5), mode), lambda a: np.pad(a, (7, 5), mode), x)
    check(
        lambda a: P.pad(a, (1, 2), mode, reflect_type="odd") if mode != "wrap" else P.pad(a, 1, mode),
        lambda a: np.pad(a, (1, 2), mode, reflect_type="odd") if mode != "wrap" else np.pad(a, 1, mode),
        x,
    )


def test_pad_kwargs():
    x = rand(RNG, (3, 4), np.float32)
    check(
        lambda a: P.pad(a, 2, constant_values=(1.5, -2)), lambda a: np.pad(a, 2, constant_values=(1.5, -2)), x
    )
    check(
        lambda a: P.pad(a, ((1, 2), (2, 1)), constant_values=((1, 2), (3, 4))),
        lambda a: np.pad(a, ((1, 2), (2, 1)), constant_values=((1, 2), (3, 4))),
        x,
    )
    check(
        lambda a: P.pad(a, ((2, 3), (1, 2)), "linear_ramp", end_values=(5, -3)),
        lambda a: np.pad(a, ((2, 3), (1, 2)), "linear_ramp", end_values=(5, -3)),
        x,
    )
    for mode in ["maximum", "minimum", "mean", "median"]:
        check(
            lambda a, mode=mode: P.pad(a, 2, mode, stat_length=((1, 2), (2, 3))),
            lambda a, mode=mode: np.pad(a, 2, mode, stat_length=((1, 2), (2, 3))),
            x,
        )
    assert P.pad(x, ((1, 2), (0, 3)), "empty").shape == (6, 7)
    assert_matches(P.pad(rand(RNG, (0, 2), np.float32), 1), np.pad(np.zeros((0, 2), np.float32), 1))
    with pytest.raises(ValueError):
        P.pad(x, -1)
    with pytest.raises(ValueError):
        P.pad(x, 1, "edge", constant_values=1)


def test_pad_jit():
    x = rand(RNG, (3, 4), np.float32)
    assert_matches(
        morphax.jit(lambda a: P.pad(a, ((1, 2), (3, 0)), "reflect"))(x),
        np.pad(x, ((1, 2), (3, 0)), "reflect"),
    )
    assert_matches(
        morphax.jit(lambda a, c: P.pad(a, 1, constant_values=c))(x, np.float32(3)),
        np.pad(x, 1, constant_values=3),
    )
    assert_matches(morphax.jit(lambda a: P.pad(a, 2, "mean"))(x), np.pad(x, 2, "mean"))


@pytest.mark.parametrize("key", [np.s_[0:5], np.s_[0:4, 1:3], np.s_[0:1:5j, 2:4], np.s_[-1:1:0.5, 0:3:2]])
def test_mgrid_ogrid(key):
    want = np.mgrid[key]
    assert_matches(IT.mgrid[key], want.astype(np.float32 if want.dtype.kind == "f" else np.int32))
    got, want = IT.ogrid[key], np.ogrid[key]
    if isinstance(want, np.ndarray):
        got, want = [got], [want]
    for g, w in zip(got, want):
        assert_matches(g, w.astype(np.float32 if w.dtype.kind == "f" else np.int32))


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_mask_indices(k):
    for f, nf in [(C.triu, np.triu), (C.tril, np.tril)]:
        for g, w in zip(C.mask_indices(4, f, k), np.mask_indices(4, nf, k)):
            assert_matches(g, w.astype(np.int32))


@pytest.mark.parametrize("trim", ["fb", "f", "b", "FB"])
def test_trim_zeros(trim):
    x = np.array([0, 0, 3, 0, 2, 0], np.float32)
    assert_matches(C.trim_zeros(jnp.asarray(x), trim), np.trim_zeros(x, trim))
    assert_matches(C.trim_zeros(jnp.zeros(3, np.int32), trim), np.trim_zeros(np.zeros(3, np.int32), trim))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress(axis):
    x = rand(RNG, (3, 4), np.float32)
    cond = np.array([True, False, True])
    check(lambda a: C.compress(cond, a, axis), lambda a: np.compress(cond, a, axis), x)
    got = C.compress(cond, x, axis=0, size=3, fill_value=9)
    want = np.concatenate([x[[0, 2]], np.full((1, 4), 9, np.float32)])
    assert_matches(got, want)
    with pytest.raises(ValueError, match="size must be"):  # as in JAX: size <= a.shape[axis]
        C.compress(cond, x, axis=0, size=4)


@pytest.mark.parametrize("mode", [None, "wrap", "clip"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_put_place(mode, dtype):
    x = rand(RNG, (3, 4), dtype)
    ind = np.array([0, 5, 11], np.int32) if mode is None else np.array([0, 13, -2], np.int32)
    v = np.array([7, 8], dtype)
    want = x.copy()
    np.put(want, ind, v, mode=mode or "raise")
    check(lambda a: C.put(a, ind, v, mode=mode, inplace=False), lambda a: want, x)
    with pytest.raises(ValueError):
        C.put(x, ind, v)
    mask = x > 0
    want = x.copy()
    np.place(want, mask, v)
    assert_matches(C.place(x, mask, v, inplace=False), want)
    assert_matches(
        morphax.jit(lambda a: C.put(a, ind, v, mode=mode, inplace=False))(x),
        C.put(x, ind, v, mode=mode, inplace=False),
    )
    assert_matches(morphax.jit(lambda a: C.place(a, mask, v, inplace=False))(x), want)


@pytest.mark.parametrize(
    "obj,vals,axis",
    [(1, 5, None), (2, [1, 2, 3], 1), (0, [[1], [2]], 1), ([1], [[1], [2], [3]], 1), ([0, 2, 2], [7, 8, 9], 1),
     (slice(0, 3), 4, 0), ([-1, 1], [[1, 2, 3, 4]], 0), ([3, 0], 2, 1), (-1, [9, 9, 9, 9], 0)],
)  # fmt: skip
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_insert(obj, vals, axis, dtype):
    x = rand(RNG, (3, 4), dtype)
    check(lambda a: C.insert(a, obj, vals, axis), lambda a: np.insert(a, obj, vals, axis), x)
    assert_matches(morphax.jit(lambda a: C.insert(a, obj, vals, axis))(x), np.insert(x, obj, vals, axis))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad_linear_ramp(dtype):
    x = rand(RNG, (5,), dtype) * 3
    check(
        lambda a: P.pad(a, (4, 3), "linear_ramp", end_values=(7, -4)),
        lambda a: np.pad(a, (4, 3), "linear_ramp", end_values=(7, -4)),
        x,
    )


def test_r_c_():
    a = np.array([1.0, 2.0], np.float32)
    b = np.array([[1, 2], [3, 4]], np.int32)
    assert_matches(IT.r_[a, 0.5, a], np.r_[a, 0.5, a].astype(np.float32))
    assert_matches(IT.r_[1:4, 7], np.r_[1:4, 7].astype(np.int32))
    assert_matches(IT.r_[0:1:3j, a], np.r_[0:1:3j, a].astype(np.float32))
    assert_matches(IT.r_["-1", b, b], np.r_["-1", b, b])
    assert_matches(IT.r_["0,2", a, a], np.r_["0,2", a, a].astype(np.float32))
    assert_matches(IT.r_["0,2,0", a, a], np.r_["0,2,0", a, a].astype(np.float32))
    assert_matches(IT.r_["1,3,1", a, a], np.r_["1,3,1", a, a].astype(np.float32))
    assert_matches(IT.c_[a, a], np.c_[a, a].astype(np.float32))
    assert_matches(IT.c_[b, b], np.c_[b, b])
    assert_matches(IT.c_[a, 1:3], np.c_[a, 1:3].astype(np.float32))
