"""vmap of gather, the scatter family, reductions, argmax/argmin, cumulative scans, dot_general,
sort and top_k, checked against a Python loop over the batch and a stack of the results.

Every operand is batched at axis 0, at its last axis or not at all (at least one batched), with
out_axes 0 and -1; batched integer indices differ per batch member (including out-of-bounds
ones). Also: nested vmap with different axes, jnp-level indexing under vmap, vmap of grad.
"""

from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest

import morphax as jax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.core import dtypes as _dtypes
from morphax._src.transforms.batching import MissingBatchRuleError

MINE = {
    "gather",
    "scatter",
    "scatter-add",
    "scatter-mul",
    "scatter-min",
    "scatter-max",
    "reduce_sum",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "reduce_and",
    "reduce_or",
    "reduce_xor",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "cumlogsumexp",
    "dot_general",
    "sort",
    "top_k",
}


def _run(fn):
    """Run `fn`; skip when a primitive outside this file's set has no batching rule yet."""
    try:
        return fn()
    except MissingBatchRuleError as e:
        m = re.search(r"'([^']+)'", str(e))
        if m and m.group(1) not in MINE:
            pytest.skip(f"batching rule for {m.group(1)!r} not available yet")
        raise


def _variants(a, size):
    """`size` different arrays like `a` (same dtype, shape and value range): rolled and flipped
    copies of its values; member 0 is `a` itself."""
    a = np.asarray(a)
    flat = a.reshape(-1)
    out = []
    for b in range(size):
        v = np.roll(flat, 2 * b + (b > 0))
        if b % 2:
            v = v[::-1]
        out.append(v.reshape(a.shape))
    return np.stack(out)


def _batched(a, axis, size):
    st = _variants(a, size)
    return st if axis == 0 else np.moveaxis(st, 0, -1)


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _loop(f, args, in_axes, size, out_axis):
    results = []
    for b in range(size):
        sl = [a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)]
        results.append([np.asarray(o) for o in _as_list(f(*sl))])
    return [np.stack([r[k] for r in results], axis=out_axis) for k in range(len(results[0]))]


def _compare(got, want, tight):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if not _dtypes.is_inexact(want.dtype):
        np.testing.assert_array_equal(got, want)
    elif tight:  # widened so that NaNs of the narrow float types compare equal
        wide = np.complex128 if _dtypes.is_complex(want.dtype) else np.float64
        np.testing.assert_array_equal(got.astype(wide), want.astype(wide))
    else:
        tol = 1e-2 if want.dtype in (_dtypes.bfloat16, _dtypes.float16) else 1e-5
        np.testing.assert_allclose(
            got.astype(np.complex128 if _dtypes.is_complex(want.dtype) else np.float64),
            want.astype(np.complex128 if _dtypes.is_complex(want.dtype) else np.float64),
            rtol=tol,
            atol=tol,
        )


def check_vmap(f, args, size=3, tight=True, combos=None, out_axes=(0, -1)):
    """vmap(f) over every batched/unbatched combination of `args` equals the loop."""
    n = len(args)
    if combos is None:
        combos = [c for c in itertools.product((0, -1, None), repeat=n) if any(x is not None for x in c)]
    for in_axes in combos:
        batched = [None if ax is None else _batched(a, ax, size) for a, ax in zip(args, in_axes)]
        vals = [a if ax is None else b for a, b, ax in zip(args, batched, in_axes)]
        norm_axes = [None if ax is None else ax % v.ndim for v, ax in zip(vals, in_axes)]
        for out_axis in out_axes:
            got = _as_list(jax.vmap(f, in_axes=tuple(in_axes), out_axes=out_axis)(*vals))
            want = _loop(f, vals, norm_axes, size, out_axis)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                try:
                    _compare(np.asarray(g), w, tight)
                except AssertionError as e:
                    raise AssertionError(f"in_axes={in_axes} out_axes={out_axis}: {e}") from None


def _spec_cases(prim, prefixes):
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # specials cast to narrow floats
        cases = prim.test_spec.cases(rng)
    return [c for c in cases if c.name.startswith(prefixes)]


def _binder(prim, params):
    def f(*args):
        return prim.bind(*args, **params)

    return f


# ------------------------------------------------------------------------------------------------
# Every case of each primitive's own test spec (a few dtypes), every in_axes combination.

GATHER_CASES = _spec_cases(lax.gather_p, ("float32", "int32", "bool"))


@pytest.mark.parametrize("case", GATHER_CASES, ids=[c.name for c in GATHER_CASES])
def test_gather_matrix(case):
    check_vmap(_binder(lax.gather_p, case.params), case.args)


SCATTER_PRIMS = [lax.scatter_p, lax.scatter_add_p, lax.scatter_mul_p, lax.scatter_min_p, lax.scatter_max_p]
SCATTER_CASES = [(p, c) for p in SCATTER_PRIMS for c in _spec_cases(p, ("float32", "int32"))]


@pytest.mark.parametrize("prim,case", SCATTER_CASES, ids=[f"{p.name}-{c.name}" for p, c in SCATTER_CASES])
def test_scatter_matrix(prim, case):
    check_vmap(_binder(prim, case.params), case.args)


REDUCE_PRIMS = [
    lax.reduce_sum_p,
    lax.reduce_prod_p,
    lax.reduce_max_p,
    lax.reduce_min_p,
    lax.reduce_and_p,
    lax.reduce_or_p,
    lax.reduce_xor_p,
    lax.argmax_p,
    lax.argmin_p,
    lax.cumsum_p,
    lax.cumprod_p,
    lax.cummax_p,
    lax.cummin_p,
    lax.cumlogsumexp_p,
]
REDUCE_CASES = [(p, c) for p in REDUCE_PRIMS for c in _spec_cases(p, ("float32", "int32", "bool"))]


@pytest.mark.parametrize("prim,case", REDUCE_CASES, ids=[f"{p.name}-{c.name}" for p, c in REDUCE_CASES])
def test_reduction_matrix(prim, case):
    check_vmap(_binder(prim, case.params), case.args, tight=False)


DOT_CASES = _spec_cases(lax.dot_general_p, ("float32", "int32", "bool", "int8x", "bfloat16x"))


@pytest.mark.parametrize("case", DOT_CASES, ids=[c.name for c in DOT_CASES])
def test_dot_general_matrix(case):
    check_vmap(_binder(lax.dot_general_p, case.params), case.args, tight=False)


SORT_CASES = [
    (p, c) for p in (lax.sort_p, lax.top_k_p) for c in _spec_cases(p, ("float32", "int32", "3ops", "2ops"))
]


@pytest.mark.parametrize("prim,case", SORT_CASES, ids=[f"{p.name}-{c.name}" for p, c in SORT_CASES])
def test_sort_matrix(prim, case):
    check_vmap(_binder(prim, case.params), case.args)


@pytest.mark.parametrize("prim", [lax.gather_p, lax.scatter_add_p, lax.dot_general_p, lax.sort_p])
def test_batch_size_one(prim):
    for case in _spec_cases(prim, ("float32",))[:12]:
        check_vmap(_binder(prim, case.params), case.args, size=1, tight=False)


# ------------------------------------------------------------------------------------------------
# Parameter rewrites worth a direct look.


def test_gather_indices_batched_at_index_vector_axis():
    # Per example the indices are (4, 2); batched along their last axis the batch axis sits after
    # the index-vector axis and must be moved off it.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    idx = rng.integers(0, 4, size=(4, 2, 3)).astype(np.int32)
    dn = lax.GatherDimensionNumbers((), (0, 1), (0, 1))

    def f(x, i):
        return lax.gather(x, i, dn, (1, 1), mode="clip")

    got = jax.vmap(f, in_axes=(None, 2))(x, idx)
    want = np.stack([np.asarray(f(x, idx[..., b])) for b in range(3)])
    np.testing.assert_array_equal(np.asarray(got), want)


def test_gather_operand_batched_keeps_batch_axis_in_place():
    # x[:, idx] per example with the operand batched in the middle: no transpose is needed, the
    # new full-size slice axis lands between the existing offset axes.
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    idx = np.array([[4], [0], [2]], np.int32)
    dn = lax.GatherDimensionNumbers((0,), (1,), (1,))

    def f(x):
        return lax.gather(x, idx, dn, (3, 1), mode="clip")

    # (vmap's own output handling may transpose afterwards; the rule itself adds nothing.)
    jaxpr = jax.make_jaxpr(jax.vmap(f, in_axes=1, out_axes=1))(x)
    assert jaxpr.jaxpr.eqns[0].primitive.name == "gather"
    assert jaxpr.jaxpr.eqns[0].outvars[0].aval.shape == (3, 4, 3)
    got = jax.vmap(f, in_axes=1, out_axes=1)(x)
    want = np.stack([np.asarray(f(x[:, b])) for b in range(4)], 1)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_gather_both_batched_uses_batching_dims():
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    idx = np.array([[[1], [7]], [[0], [0]], [[5], [9]]], np.int32)
    dn = lax.GatherDimensionNumbers((), (0,), (0,))

    def f(x, i):
        return lax.gather(x, i, dn, (1,), mode="fill", fill_value=-1.0)

    jaxpr = str(jax.make_jaxpr(jax.vmap(f))(x, idx))
    assert "operand_batching_dims=(0,)" in jaxpr and "start_indices_batching_dims=(0,)" in jaxpr
    got = np.asarray(jax.vmap(f)(x, idx))
    np.testing.assert_array_equal(got, [[1.0, 7.0], [8.0, 8.0], [21.0, -1.0]])


def test_scatter_unbatched_operand_is_broadcast():
    operand = np.zeros((4,), np.float32)
    idx = np.array([[1], [3]], np.int32)
    ups = np.arange(6, dtype=np.float32).reshape(3, 2)
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))

    def f(u):
        return lax.scatter_add(operand, idx, u, dn)

    got = np.asarray(jax.vmap(f)(ups))
    want = np.zeros((3, 4), np.float32)
    want[:, 1], want[:, 3] = ups[:, 0], ups[:, 1]
    np.testing.assert_array_equal(got, want)


def test_scatter_plain_duplicates_last_wins_per_member():
    operand = np.zeros((3,), np.int32)
    idx = np.array([[[0], [0], [2]], [[1], [1], [1]]], np.int32)
    ups = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))
    got = jax.vmap(lambda i, u: lax.scatter(operand, i, u, dn))(idx, ups)
    np.testing.assert_array_equal(np.asarray(got), [[2, 0, 3], [0, 6, 0]])


def test_dot_general_output_axis_for_one_sided_batch():
    # lhs (b, i, k) batched at its middle axis; rhs unbatched: the batch axis is a free lhs axis,
    # landing after the dot's batch axis and before rhs's free axes.
    rng = np.random.default_rng(3)
    lhs = rng.standard_normal((2, 5, 3, 4)).astype(np.float32)  # per example (2, 3, 4)
    rhs = rng.standard_normal((2, 4, 6)).astype(np.float32)
    dn = (((2,), (1,)), ((0,), (0,)))

    def f(a, b):
        return lax.dot_general(a, b, dn)

    jaxpr = jax.make_jaxpr(jax.vmap(f, in_axes=(1, None), out_axes=1))(lhs, rhs)
    assert jaxpr.jaxpr.eqns[0].primitive.name == "dot_general"
    assert jaxpr.jaxpr.eqns[0].outvars[0].aval.shape == (2, 5, 3, 6)
    got = jax.vmap(f, in_axes=(1, None), out_axes=1)(lhs, rhs)
    want = np.einsum("bnik,bkj->bnij", lhs, rhs)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_argmax_keeps_index_dtype():
    x = np.random.default_rng(4).standard_normal((3, 4, 5)).astype(np.float32)
    got = jax.vmap(lambda v: lax.argmax(v, 1, np.int16), in_axes=2)(x)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(np.asarray(got), np.argmax(x, axis=1).T)


def test_sort_mixed_batched_and_unbatched_operands():
    keys = np.array([[3, 1, 2], [1, 2, 0]], np.int32)
    vals = np.array([10.0, 20.0, 30.0], np.float32)
    k, v = jax.vmap(lambda a, b: lax.sort_key_val(a, b), in_axes=(0, None))(keys, vals)
    np.testing.assert_array_equal(np.asarray(k), [[1, 2, 3], [0, 1, 2]])
    np.testing.assert_array_equal(np.asarray(v), [[20.0, 30.0, 10.0], [30.0, 10.0, 20.0]])


def test_top_k_batch_on_operated_axis_side():
    x = np.random.default_rng(5).standard_normal((6, 3)).astype(np.float32)
    vals, idx = jax.vmap(lambda v: lax.top_k(v, 2), in_axes=1, out_axes=-1)(x)
    order = np.argsort(-x, axis=0, kind="stable")[:2]
    np.testing.assert_array_equal(np.asarray(idx), order)
    np.testing.assert_array_equal(np.asarray(vals), np.take_along_axis(x, order, 0))


# ------------------------------------------------------------------------------------------------
# Nested vmap with different axes.


def test_nested_vmap_gather():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)  # outer batch 2 at axis 0, inner 3 at -1
    idx = rng.integers(-1, 6, size=(4, 1, 3)).astype(np.int32)  # inner batch 3 at axis -1
    dn = lax.GatherDimensionNumbers((), (0,), (0,))

    def f(x, i):
        return lax.gather(x, i, dn, (1,), mode="fill", fill_value=0.0)

    g = jax.vmap(jax.vmap(f, in_axes=(1, 2)), in_axes=(0, None), out_axes=1)
    got = np.asarray(g(x, idx))
    want = np.stack(
        [np.stack([np.asarray(f(x[o, :, n], idx[..., n])) for n in range(3)]) for o in range(2)], 1
    )
    np.testing.assert_array_equal(got, want)


def test_nested_vmap_scatter_and_dot():
    rng = np.random.default_rng(7)
    op = rng.standard_normal((3, 5, 2)).astype(np.float32)
    idx = rng.integers(0, 5, size=(2, 4, 1)).astype(np.int32)
    up = rng.standard_normal((4, 3)).astype(np.float32)
    dn = lax.ScatterDimensionNumbers((), (0,), (0,))

    def f(o, i, u):
        return lax.scatter_max(o, i, u, dn)

    # inner over op axis 2 / idx axis 0 (size 2); outer over op axis 0 / up axis 1 (size 3)
    g = jax.vmap(jax.vmap(f, in_axes=(1, 0, None)), in_axes=(0, None, 1))
    got = np.asarray(g(op, idx, up))
    want = np.stack(
        [np.stack([np.asarray(f(op[a, :, b], idx[b], up[:, a])) for b in range(2)]) for a in range(3)]
    )
    np.testing.assert_array_equal(got, want)

    lhs = rng.standard_normal((3, 4, 2)).astype(np.float32)
    rhs = rng.standard_normal((2, 4, 5)).astype(np.float32)
    h = jax.vmap(jax.vmap(jnp.dot, in_axes=(0, None)), in_axes=(2, 0))
    got = np.asarray(h(lhs, rhs))
    want = np.einsum("ikb,bkj->bij", lhs, rhs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_nested_vmap_reductions_and_sort():
    x = np.random.default_rng(8).standard_normal((2, 3, 4, 5)).astype(np.float32)
    f = jax.vmap(jax.vmap(lambda v: lax.reduce_max(v, (0,)), in_axes=2), in_axes=1)
    np.testing.assert_array_equal(np.asarray(f(x)), np.max(x, axis=0).transpose(0, 2, 1))
    s = jax.vmap(jax.vmap(lambda v: lax.sort(v, dimension=0), in_axes=0), in_axes=3, out_axes=3)
    np.testing.assert_array_equal(np.asarray(s(x)), np.sort(x, axis=1))
    c = jax.vmap(jax.vmap(lambda v: lax.cumsum(v, 1), in_axes=2), in_axes=0)
    np.testing.assert_allclose(np.asarray(c(x)), np.cumsum(x, axis=2).transpose(0, 3, 1, 2), rtol=1e-5)


# ------------------------------------------------------------------------------------------------
# jnp-level indexing and vmap of grad (these also need the elementwise/shape rules).


def test_vmap_jnp_getitem_batched_indices():
    rng = np.random.default_rng(9)
    x = jnp.asarray(rng.standard_normal((5, 3)).astype(np.float32))
    idx = rng.integers(-5, 5, size=(4, 2)).astype(np.int32)
    got = _run(lambda: jax.vmap(lambda x, i: x[i], in_axes=(None, 0))(x, idx))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(x)[idx])
    xs = rng.standard_normal((4, 5, 3)).astype(np.float32)
    got = _run(lambda: jax.vmap(lambda x, i: x[i])(jnp.asarray(xs), idx))
    np.testing.assert_array_equal(np.asarray(got), np.stack([xs[b][idx[b]] for b in range(4)]))


def test_vmap_jnp_at_add():
    rng = np.random.default_rng(10)
    xs = rng.standard_normal((3, 5, 2)).astype(np.float32)
    idx = rng.integers(0, 5, size=(3, 4)).astype(np.int32)
    v = rng.standard_normal((4, 2)).astype(np.float32)

    def f(x, i, v):
        return jnp.asarray(x).at[i].add(v)

    for in_axes in ((0, 0, None), (None, 0, None), (0, None, None)):
        args = [xs if in_axes[0] == 0 else xs[0], idx if in_axes[1] == 0 else idx[0], v]
        got = _run(lambda in_axes=in_axes, args=args: jax.vmap(f, in_axes=in_axes)(*args))
        want = []
        for b in range(3):
            x = (xs[b] if in_axes[0] == 0 else xs[0]).copy()
            np.add.at(x, idx[b] if in_axes[1] == 0 else idx[0], v)
            want.append(x)
        np.testing.assert_allclose(np.asarray(got), np.stack(want), rtol=1e-6, atol=1e-6)


def test_vmap_of_grad_through_gather():
    rng = np.random.default_rng(11)
    xs = rng.standard_normal((3, 6)).astype(np.float32)
    idx = np.array([[0, 0, 5], [1, 2, 3], [4, 4, 4]], np.int32)

    def loss(x, i):
        return jnp.sum(jnp.sin(x[i]))

    got = _run(lambda: jax.vmap(jax.grad(loss))(xs, idx))
    want = np.zeros_like(xs)
    for b in range(3):
        np.add.at(want[b], idx[b], np.cos(xs[b][idx[b]]))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def test_vmap_of_grad_through_dot_general():
    rng = np.random.default_rng(12)
    ws = rng.standard_normal((4, 3, 2)).astype(np.float32)
    x = rng.standard_normal((5, 3)).astype(np.float32)

    def loss(w, x):
        return jnp.sum(jnp.dot(x, w) ** 2)

    got = _run(lambda: jax.vmap(jax.grad(loss), in_axes=(0, None))(ws, x))
    want = np.stack([2 * x.T @ (x @ w) for w in ws])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
    # grad of vmap too.
    got = _run(lambda: jax.grad(lambda w: jnp.sum(jax.vmap(loss, in_axes=(0, None))(w, x)))(ws))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
