"""Derivative rules of gather, the scatter family, sort and top_k: JVPs against float64 central
finite differences, VJPs against JVPs by the inner-product identity, transposes of the linear
ones, second order, and hand-computed gradients for duplicate, clamped and dropped indices (also
through the jnp layer: fancy indexing, .at[] updates, sort)."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.api import autodiff as A
from morphax.lax import GatherDimensionNumbers as GDN
from morphax.lax import ScatterDimensionNumbers as SDN
from morphax.test_util import check_grads

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _x64():
    with morphax.enable_x64():
        yield


def _rand(shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape)


def _num(x):
    return np.asarray(x)


def _pair(a, b):
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def _fd(f, args, tangents, eps=1e-6):
    plus = [a + eps * t for a, t in zip(args, tangents)]
    minus = [a - eps * t for a, t in zip(args, tangents)]
    return (_num(f(*plus)) - _num(f(*minus))) / (2 * eps)


def check_first_order(f, args, rtol=1e-6, atol=1e-7):
    """JVP against finite differences, then each operand's VJP against the JVP (inner-product
    identity), with cotangents of exactly the operands' shapes and dtypes."""
    args = tuple(np.asarray(a, np.float64) for a in args)
    tangents = tuple(_rand(np.shape(a)) for a in args)
    out, out_t = A.jvp(f, args, tangents)
    np.testing.assert_allclose(_num(out), _num(f(*args)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_num(out_t), _fd(f, args, tangents), rtol=rtol, atol=atol)
    _, pullback = A.vjp(f, *args)
    ct = _rand(_num(out).shape)
    cts = pullback(ct)
    for i, (a, c) in enumerate(zip(args, cts)):
        assert _num(c).shape == a.shape and _num(c).dtype == a.dtype, (i, _num(c).shape, _num(c).dtype)
        only = tuple(t if j == i else np.zeros_like(t) for j, t in enumerate(tangents))
        _, jt = A.jvp(f, args, only)
        np.testing.assert_allclose(_pair(c, tangents[i]), _pair(ct, jt), rtol=1e-9, atol=1e-9)
    return cts


def check_linear_transpose(f, x):
    """For linear f: <ct, f(t)> == <f^T(ct), t>."""
    t = _rand(np.shape(x))
    y = _num(f(t))
    ct = _rand(y.shape)
    (back,) = A.linear_transpose(f, np.asarray(x, np.float64))(ct)
    assert _num(back).shape == np.shape(x)
    np.testing.assert_allclose(_pair(back, t), _pair(ct, y), rtol=1e-10, atol=1e-10)


# ------------------------------------------------------------------------------------------ gather

ROWS = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))


def _gather_rows(idx, mode, fill_value=None):
    idx = np.asarray(idx, np.int32).reshape(-1, 1)
    return lambda x: lax.gather(x, idx, ROWS, (1, 3), mode=mode, fill_value=fill_value)


@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_gather_duplicates_first_and_second_order(mode):
    idx = [0, 3, 3, 1, 0] if mode == "promise_in_bounds" else [0, 3, 3, -2, 7, 1]
    f = _gather_rows(idx, mode, fill_value=2.5 if mode == "fill" else None)
    x = _rand((5, 3))
    check_first_order(f, (x,))
    check_linear_transpose(_gather_rows(idx, mode, fill_value=0.0 if mode == "fill" else None), x)
    check_grads(lambda x: f(x) ** 3, (x,), order=2, atol=1e-5, rtol=1e-5)


def test_gather_grad_hand_computed_clip_and_fill():
    x = _rand((5, 3))
    w = _rand((6, 3))
    idx = np.array([0, 3, 3, -2, 7, 1])
    for mode in ("clip", "fill"):
        g = A.grad(lambda x, mode=mode: jnp.sum(_gather_rows(idx, mode, 0.0)(x) * w))(x)
        want = np.zeros((5, 3))
        for k, i in enumerate(idx):
            if mode == "clip":
                np.add.at(want, min(max(i, 0), 4), w[k])
            elif 0 <= i < 5:  # filled rows do not depend on x
                want[i] += w[k]
        np.testing.assert_allclose(_num(g), want, rtol=1e-12)


def test_gather_fill_default_nan_has_zero_tangent():
    x = _rand((5, 3))
    f = _gather_rows([1, 9], "fill")  # row 9 is filled with NaN
    _, t = A.jvp(f, (x,), (np.ones((5, 3)),))
    np.testing.assert_array_equal(_num(t), [[1.0] * 3, [0.0] * 3])


def test_gather_windows_and_batching_dims():
    x = _rand((6,))
    idx = np.array([[0], [4], [5], [-1]], np.int32)
    win = GDN(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,))
    f = lambda x: lax.gather(x, idx, win, (3,), mode="clip")  # noqa: E731
    check_first_order(f, (x,))
    check_linear_transpose(f, x)
    # take_along_axis: operand axis 0 and indices axis 0 index in lockstep.
    y = _rand((3, 5))
    bidx = np.array([[[4], [0]], [[2], [2]], [[1], [3]]], np.int32)
    along = GDN(
        offset_dims=(),
        collapsed_slice_dims=(1,),
        start_index_map=(1,),
        operand_batching_dims=(0,),
        start_indices_batching_dims=(0,),
    )
    g = lambda y: lax.gather(y, bidx, along, (1, 1), mode="clip")  # noqa: E731
    check_first_order(g, (y,))
    grad = A.grad(lambda y: jnp.sum(g(y)))(y)
    want = np.zeros((3, 5))
    for b in range(3):
        for j in range(2):
            want[b, bidx[b, j, 0]] += 1
    np.testing.assert_array_equal(_num(grad), want)


def test_gather_grad_of_grad():
    x = _rand((5, 3))
    f = lambda x: jnp.sum(jnp.sin(_gather_rows([0, 0, 4], "clip")(x)))  # noqa: E731
    hvp = A.grad(lambda x: jnp.sum(A.grad(f)(x) * x))(x)
    # d/dx sum(grad f * x) = grad f + H x; H is diagonal: -sin(x) times the row counts.
    counts = np.array([2, 0, 0, 0, 1])[:, None]
    want = counts * np.cos(x) - counts * np.sin(x) * x
    np.testing.assert_allclose(_num(hvp), want, rtol=1e-12)


def test_jnp_fancy_indexing_grad():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    g = A.grad(lambda x: jnp.sum(x[jnp.array([0, 0, 2])] ** 2))(x)
    np.testing.assert_allclose(_num(g), [4.0, 0.0, 6.0, 0.0])
    # Out-of-bounds indices clamp for retrieval, but (as in JAX, whose default read is a
    # PROMISE_IN_BOUNDS gather transposed to an XLA scatter) their cotangent is dropped.
    g = A.grad(lambda x: jnp.sum(x[jnp.array([-1, 7, 1])] * jnp.array([1.0, 10.0, 100.0])))(x)
    np.testing.assert_allclose(_num(g), [0.0, 100.0, 0.0, 1.0])
    g = A.grad(
        lambda x: jnp.sum(x.at[jnp.array([-1, 7, 1])].get(mode="clip") * jnp.array([1.0, 10.0, 100.0]))
    )(x)
    np.testing.assert_allclose(_num(g), [0.0, 100.0, 0.0, 11.0])
    m = _rand((4, 3))
    g = A.grad(lambda m: jnp.sum(m[jnp.array([2, 2]), jnp.array([0, 1])] * jnp.array([3.0, 5.0])))(m)
    want = np.zeros((4, 3))
    want[2, 0], want[2, 1] = 3.0, 5.0
    np.testing.assert_allclose(_num(g), want)


# ----------------------------------------------------------------------------------------- scatter

# Row scatter into a (5, 3) operand: updates (n, 3), indices (n, 1).
SROWS = SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
# Scalar scatter into a vector: updates (n,), indices (n, 1).
SVEC = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))

IDX_DUP_OOB = np.array([[1], [3], [1], [-1], [6], [4], [1]], np.int32)


def _scatter(op, idx, dn=SROWS, mode=None, unique=False):
    fn = getattr(lax, op)
    return lambda x, u: fn(x, idx, u, dn, mode=mode, unique_indices=unique)


@pytest.mark.parametrize("op", ["scatter_add", "scatter", "scatter_mul", "scatter_min", "scatter_max"])
@pytest.mark.parametrize("mode", ["clip", "drop"])
def test_scatter_family_first_and_second_order(op, mode):
    f = _scatter(op, IDX_DUP_OOB, mode=mode)
    x = _rand((5, 3), 0.5, 2.0)
    u = _rand((7, 3), 0.5, 2.0)
    check_first_order(f, (x, u))
    check_grads(f, (x, u), order=2, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("op", ["scatter_add", "scatter", "scatter_mul", "scatter_min", "scatter_max"])
def test_scatter_family_unique_indices(op):
    idx = np.array([[3], [0], [4]], np.int32)
    f = _scatter(op, idx, unique=True)
    x, u = _rand((5, 3), 0.5, 2.0), _rand((3, 3), 0.5, 2.0)
    check_first_order(f, (x, u))
    check_grads(f, (x, u), order=2, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("op", ["scatter_add", "scatter"])
def test_scatter_linear_transposes(op):
    f = _scatter(op, IDX_DUP_OOB, mode="drop")
    x, u = _rand((5, 3)), _rand((7, 3))
    t_x, t_u = _rand((5, 3)), _rand((7, 3))
    y = _num(f(t_x, t_u))
    ct = _rand(y.shape)
    back_x, back_u = A.linear_transpose(f, x, u)(ct)
    np.testing.assert_allclose(_pair(back_x, t_x) + _pair(back_u, t_u), _pair(ct, y), rtol=1e-10)


def test_scatter_add_grads_hand_computed():
    x = np.zeros(4)
    u = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    idx = np.array([[0], [2], [0], [9], [-3]], np.int32)
    w = np.array([10.0, 20.0, 30.0, 40.0])
    for mode, want_u in (("drop", [10.0, 30.0, 10.0, 0.0, 0.0]), ("clip", [10.0, 30.0, 10.0, 40.0, 10.0])):
        f = lambda x, u: jnp.sum(lax.scatter_add(x, idx, u, SVEC, mode=mode) * w)  # noqa: B023, E731
        gx, gu = A.grad(f, argnums=(0, 1))(x, u)
        np.testing.assert_allclose(_num(gx), w)
        np.testing.assert_allclose(_num(gu), want_u)


def test_scatter_set_grads_last_duplicate_wins():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    u = np.array([5.0, 6.0, 7.0, 8.0, 9.0])
    idx = np.array([[0], [2], [0], [9], [0]], np.int32)
    w = np.array([10.0, 20.0, 30.0, 40.0])
    f = lambda x, u: jnp.sum(lax.scatter(x, idx, u, SVEC, mode="drop") * w)  # noqa: E731
    assert np.allclose(_num(lax.scatter(x, idx, u, SVEC, mode="drop")), [9.0, 2.0, 6.0, 4.0])
    gx, gu = A.grad(f, argnums=(0, 1))(x, u)
    np.testing.assert_allclose(_num(gx), [0.0, 20.0, 0.0, 40.0])  # overwritten positions get nothing
    np.testing.assert_allclose(_num(gu), [0.0, 30.0, 0.0, 0.0, 10.0])  # only the winners


def test_scatter_mul_with_zero_updates_and_duplicates():
    # Position 0 gets updates (2, 0, 3): one zero; position 1 gets (0, 0): two zeros.
    x = np.array([1.5, -2.0, 4.0])
    u = np.array([2.0, 0.0, 3.0, 0.0, 0.0, 5.0])
    idx = np.array([[0], [0], [0], [1], [1], [2]], np.int32)
    f = lambda x, u: jnp.sum(lax.scatter_mul(x, idx, u, SVEC))  # noqa: E731
    gx, gu = A.grad(f, argnums=(0, 1))(x, u)
    np.testing.assert_allclose(_num(gx), [0.0, 0.0, 5.0])
    np.testing.assert_allclose(_num(gu), [0.0, 1.5 * 6.0, 0.0, 0.0, 0.0, 4.0])
    check_first_order(lambda x, u: lax.scatter_mul(x, idx, u, SVEC), (x, u))


def test_scatter_extrema_ties_share_the_tangent():
    x = np.array([1.0, 5.0, 0.0])
    u = np.array([1.0, 2.0, 1.0, -1.0])  # position 0: operand 1 and two updates of 1 tie
    idx = np.array([[0], [1], [0], [2]], np.int32)
    f = lambda x, u: jnp.sum(lax.scatter_max(x, idx, u, SVEC))  # noqa: E731
    gx, gu = A.grad(f, argnums=(0, 1))(x, u)
    np.testing.assert_allclose(_num(gx), [1 / 3, 1.0, 1.0])
    np.testing.assert_allclose(_num(gu), [1 / 3, 0.0, 1 / 3, 0.0])
    g = lambda x, u: jnp.sum(lax.scatter_min(x, idx, u, SVEC))  # noqa: E731
    gx, gu = A.grad(g, argnums=(0, 1))(x, u)
    np.testing.assert_allclose(_num(gx), [1 / 3, 0.0, 0.0])
    np.testing.assert_allclose(_num(gu), [1 / 3, 1.0, 1 / 3, 1.0])


def test_scatter_windows_and_batching_dims():
    # Windows of 2 into a vector, clamped at the end.
    dn = SDN(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(0,))
    idx = np.array([[0], [5], [2]], np.int32)
    x, u = _rand((6,)), _rand((3, 2))
    for op in ("scatter_add", "scatter", "scatter_max"):
        check_first_order(_scatter(op, idx, dn, mode="clip"), (x, u))
    # put_along_axis-style: operand axis 0 and indices axis 0 index in lockstep.
    bdn = SDN(
        update_window_dims=(),
        inserted_window_dims=(1,),
        scatter_dims_to_operand_dims=(1,),
        operand_batching_dims=(0,),
        scatter_indices_batching_dims=(0,),
    )
    bidx = np.array([[[4], [4]], [[0], [2]], [[1], [1]]], np.int32)
    y, v = _rand((3, 5)), _rand((3, 2))
    for op in ("scatter_add", "scatter", "scatter_mul"):
        check_first_order(_scatter(op, bidx, bdn), (y, v))


def test_jnp_at_updates_grads():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    v = np.array([10.0, 20.0, 30.0])
    i = jnp.array([1, 1, 3])
    gx, gv = A.grad(lambda x, v: jnp.sum(x.at[i].add(v) ** 2), argnums=(0, 1))(x, v)
    y = np.array([1.0, 32.0, 3.0, 34.0])
    np.testing.assert_allclose(_num(gx), 2 * y)
    np.testing.assert_allclose(_num(gv), [64.0, 64.0, 68.0])
    gx, gv = A.grad(lambda x, v: jnp.sum(x.at[i].set(v) * x), argnums=(0, 1))(x, v)
    # out = [1, 20, 3, 30]; d/dx sum(out * x) = out + x * d out/dx (0 where overwritten).
    np.testing.assert_allclose(_num(gx), [2.0, 20.0, 6.0, 30.0])
    np.testing.assert_allclose(_num(gv), [0.0, 2.0, 4.0])
    gx = A.grad(lambda x: jnp.sum(x.at[i].multiply(v)))(x)
    np.testing.assert_allclose(_num(gx), [1.0, 200.0, 1.0, 30.0])


# -------------------------------------------------------------------------------------- sort, top_k


def test_sort_single_and_multi_operand():
    x = _rand((3, 5))
    check_first_order(lambda x: lax.sort(x, dimension=1), (x,))
    check_first_order(lambda x: lax.sort(x, dimension=0), (x,))
    check_grads(lambda x: lax.sort(x, dimension=1) ** 2, (x,), order=2, atol=1e-5, rtol=1e-5)
    keys = np.array([[2, 0, 1, 0, 2], [1, 1, 0, 0, 1]], np.int32)
    vals = _rand((2, 5))

    def f(v, w):
        _, a, b = lax.sort([keys, v, w], dimension=1, num_keys=1)
        return a * b

    check_first_order(f, (vals, _rand((2, 5))))

    def g(k2, v):  # two keys: the int keys, then a float key; a float payload
        _, a, b = lax.sort([keys, k2, v], dimension=1, num_keys=2)
        return a + 2 * b

    check_first_order(g, (_rand((2, 5)), vals))


def test_sort_grad_hand_computed():
    x = np.array([3.0, 1.0, 2.0])
    w = np.array([10.0, 20.0, 30.0])
    g = A.grad(lambda x: jnp.sum(lax.sort(x) * w))(x)
    np.testing.assert_allclose(_num(g), [30.0, 10.0, 20.0])
    k = np.array([2.0, 0.0, 1.0])
    g = A.grad(lambda v: jnp.sum(lax.sort_key_val(k, v)[1] * w))(x)
    np.testing.assert_allclose(_num(g), [30.0, 10.0, 20.0])


def test_top_k():
    x = _rand((3, 6))
    check_first_order(lambda x: lax.top_k(x, 3)[0], (x,))
    check_first_order(lambda x: lax.top_k(x, 2, axis=0)[0], (x,))
    check_grads(lambda x: lax.top_k(x, 2)[0] ** 2, (x,), order=2, atol=1e-5, rtol=1e-5)
    v = np.array([1.0, 5.0, 3.0, 4.0])
    g = A.grad(lambda v: jnp.sum(lax.top_k(v, 2)[0] * jnp.array([10.0, 1.0])))(v)
    np.testing.assert_allclose(_num(g), [0.0, 10.0, 0.0, 1.0])
    _, (_, idx_t) = A.jvp(lambda v: lax.top_k(v, 2), (v,), (np.ones(4),))
    assert _num(idx_t).dtype == morphax.dtypes.float0
