"""reduce_window (sum/max/min) against a direct NumPy loop over output positions: pooling windows
(2x2 stride 2, SAME padding), padding, base and window dilation; the `lax.reduce_window` wrapper;
derivatives (check_grads, max pooling away from ties, the selected element getting the tangent),
select_and_gather_add / select_and_scatter_add transposes, vmap against a loop, jit against eager."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import morphax
from morphax import lax
from morphax._src.prims.compare import ge_p, le_p
from morphax._src.prims.windowed import select_and_gather_add_p, select_and_scatter_add_p
from morphax.test_util import check_grads

RNG = np.random.default_rng(11)


def _distinct(shape, dtype=np.float32):
    """Values spaced at least 0.1 apart (no ties: max/min selections are stable under small steps)."""
    n = int(np.prod(shape, dtype=np.int64))
    return (RNG.permutation(n).reshape(shape) * 0.1 - n * 0.05).astype(dtype)


def _pads(shape, window, strides, padding, window_dilation):
    if not isinstance(padding, str):
        return list(padding)
    if padding == "VALID":
        return [(0, 0)] * len(shape)
    pads = []
    for n, k, s, r in zip(shape, window, strides, window_dilation):
        total = max((-(-n // s) - 1) * s + (k - 1) * r + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def window_loop(x, op, init, window, strides, padding, base_dilation=None, window_dilation=None):
    """op-reduce each window (elements from padding or dilation holes are `init`), then fold in
    `init` once, one output element at a time."""
    nd = x.ndim
    base_dilation = base_dilation or (1,) * nd
    window_dilation = window_dilation or (1,) * nd
    padding = _pads(x.shape, window, strides, padding, window_dilation)
    dil = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base_dilation)]
    eff = [(k - 1) * r + 1 for k, r in zip(window, window_dilation)]
    out_shape = [max(0, (d + lo + hi - e) // s + 1) for d, (lo, hi), e, s in zip(dil, padding, eff, strides)]
    out = np.zeros(out_shape, x.dtype)
    for pos in itertools.product(*map(range, out_shape)):
        acc = init
        for k in itertools.product(*map(range, window)):
            idx = []
            for p, kk, s, r, (lo, _), b, n in zip(
                pos, k, strides, window_dilation, padding, base_dilation, x.shape
            ):
                q = p * s + kk * r - lo
                if q < 0 or q % b or q // b >= n:
                    break
                idx.append(q // b)
            else:
                acc = op(acc, x[tuple(idx)])
        out[pos] = acc
    return out


# name, operand shape, window, strides, padding, base dilation, window dilation
CASES = [
    ("pool-2x2-stride-2", (2, 4, 6, 3), (1, 2, 2, 1), (1, 2, 2, 1), "VALID", None, None),
    ("pool-3x3-same", (2, 5, 5, 2), (1, 3, 3, 1), (1, 1, 1, 1), "SAME", None, None),
    ("pool-3x3-same-stride-2", (1, 2, 7, 6), (1, 1, 3, 3), (1, 1, 2, 2), "SAME", None, None),
    ("1d-explicit", (7,), (3,), (2,), [(2, 1)], None, None),
    ("negative-pad", (6, 5), (2, 2), (1, 2), [(-1, 1), (1, -1)], None, None),
    ("window-dilation", (6, 7), (2, 3), (1, 1), [(1, 1), (0, 2)], None, (2, 2)),
    ("base-dilation", (3, 4), (2, 3), (1, 2), [(1, 0), (1, 1)], (2, 2), None),
]
OPS = {
    "add": (lax.add, np.add, 0.0),
    "max": (lax.max, np.maximum, -np.inf),
    "min": (lax.min, np.minimum, np.inf),
}


def _rw(op, x, shape_args, init=None):
    _, _, window, strides, padding, bd, wd = shape_args
    fn, _, ident = OPS[op]
    return lax.reduce_window(x, ident if init is None else init, fn, window, strides, padding, bd, wd)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_direct_loop(case, op):
    _, shape, window, strides, padding, bd, wd = case
    _, np_op, ident = OPS[op]
    x = RNG.standard_normal(shape).astype(np.float32)
    got = _rw(op, x, case)
    want = window_loop(x.astype(np.float64), np_op, ident, window, strides, padding, bd, wd)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    xi = RNG.integers(-50, 50, shape).astype(np.int32)
    iinit = {"add": 0, "max": np.iinfo(np.int32).min, "min": np.iinfo(np.int32).max}[op]
    want = window_loop(xi, np_op, iinit, window, strides, padding, bd, wd)
    np.testing.assert_array_equal(np.asarray(_rw(op, xi, case, iinit)), want)


def test_avg_and_max_pool_by_hand():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    mx = lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 2), "VALID")
    np.testing.assert_array_equal(np.asarray(mx), [[5, 7], [13, 15]])
    avg = lax.reduce_window(x, 0.0, lax.add, (2, 2), (2, 2), "VALID") / 4
    np.testing.assert_array_equal(np.asarray(avg), [[2.5, 4.5], [10.5, 12.5]])
    same = lax.reduce_window(x, -np.inf, lax.max, (3, 3), (2, 2), "SAME")
    np.testing.assert_array_equal(np.asarray(same), [[10, 11], [14, 15]])  # padding (0, 1)
    assert lax.reduce_window_shape_tuple((4, 4), (3, 3), (2, 2), [(1, 1), (1, 1)]) == (2, 2)


def test_init_value_and_unsupported_computations():
    x = RNG.standard_normal((5,)).astype(np.float32)
    base = np.asarray(lax.reduce_window(x, 0.0, lax.add, (3,), (1,), [(1, 1)]))
    # A non-identity init is folded in once per window (as XLA does).
    np.testing.assert_allclose(
        np.asarray(lax.reduce_window(x, 1.5, lax.add, (3,), (1,), [(1, 1)])), base + 1.5
    )
    mx = np.asarray(lax.reduce_window(x, 0.0, lax.max, (2,), (1,), "VALID"))
    np.testing.assert_array_equal(mx, np.maximum(np.maximum(x[:-1], x[1:]), 0))
    b = lax.reduce_window(np.array([True, False, False]), False, lax.max, (2,), (1,), "VALID")
    assert b.dtype == np.bool_ and np.asarray(b).tolist() == [True, False]
    with pytest.raises(NotImplementedError, match="lax.add, lax.max and lax.min"):
        lax.reduce_window(x, 1.0, lax.mul, (2,), (1,), "VALID")
    with pytest.raises(TypeError, match="window_dimensions"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1,), "VALID")
    with pytest.raises(TypeError, match="reduce_window_sum does not accept dtype bool"):
        lax.reduce_window(np.array([True]), False, lax.add, (1,), (1,), "VALID")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_grads(case, op):
    # Every window here holds a real element, and values are distinct: no ties, no all-padding windows.
    with morphax.enable_x64():
        x = _distinct(case[1], np.float64)
        check_grads(lambda x: _rw(op, x, case), (x,), order=2, atol=1e-6, rtol=1e-6)


def test_max_pool_gradient_goes_to_the_argmax():
    x = _distinct((4, 6))
    g = morphax.grad(lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (2, 2), "VALID").sum())(x)
    want = np.zeros_like(x)
    for i, j in itertools.product(range(2), range(3)):
        block = x[2 * i : 2 * i + 2, 2 * j : 2 * j + 2]
        a, b = np.unravel_index(np.argmax(block), (2, 2))
        want[2 * i + a, 2 * j + b] = 1
    np.testing.assert_array_equal(np.asarray(g), want)
    # Overlapping windows add up at an element chosen by several of them.
    y = np.array([0.0, 3.0, 1.0, 2.0], np.float32)
    g = morphax.grad(lambda y: lax.reduce_window(y, -np.inf, lax.max, (2,), (1,), "VALID").sum())(y)
    np.testing.assert_array_equal(np.asarray(g), [0, 2, 0, 1])
    # Ties: the first extreme element of the window takes the tangent.
    t = np.array([1.0, 1.0], np.float32)
    g = morphax.grad(lambda t: lax.reduce_window(t, np.inf, lax.min, (2,), (1,), "VALID").sum())(t)
    np.testing.assert_array_equal(np.asarray(g), [1, 0])


@pytest.mark.parametrize("select_prim", [ge_p, le_p])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_select_gather_and_scatter_are_transposes(case, select_prim):
    _, shape, window, strides, padding, bd, wd = case
    nd = len(shape)
    params = dict(
        select_prim=select_prim, window_dimensions=window, window_strides=strides,
        padding=tuple(_pads(shape, window, strides, padding, wd or (1,) * nd)),
        base_dilation=bd or (1,) * nd, window_dilation=wd or (1,) * nd,
    )  # fmt: skip
    x = _distinct(shape, np.float64)
    t = RNG.standard_normal(shape)
    with morphax.enable_x64():
        gathered = np.asarray(select_and_gather_add_p.bind(t, x, **params))
        s = RNG.standard_normal(gathered.shape)
        scattered = np.asarray(select_and_scatter_add_p.bind(s, x, **params))
    np.testing.assert_allclose(np.sum(gathered * s), np.sum(t * scattered), rtol=1e-12)


VMAP_CASES = [0, 2, 5, 6]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("index", VMAP_CASES, ids=[CASES[i][0] for i in VMAP_CASES])
def test_vmap_and_vmap_of_grad(index, axis, op):
    case = CASES[index]
    xs = np.stack([_distinct(case[1]) for _ in range(3)], axis)

    def f(x):
        return _rw(op, x, case)

    def loss(x):
        return (f(x) ** 2).sum()

    for fn in (f, morphax.grad(loss)):
        got = morphax.vmap(fn, in_axes=axis)(xs)
        want = np.stack([np.asarray(fn(np.take(xs, k, axis))) for k in range(3)])
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", OPS)
def test_jit_matches_eager(op):
    case = CASES[2]
    x = _distinct(case[1])
    f = lambda x: _rw(op, x, case)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(morphax.jit(f)(x)), np.asarray(f(x)))
    g = morphax.grad(lambda x: (f(x) ** 2).sum())
    np.testing.assert_allclose(np.asarray(morphax.jit(g)(x)), np.asarray(g(x)), rtol=1e-6)


def _jax_oracle(jax, x, ct, case, ops):
    """Outputs and VJPs of all three reductions from one JAX compilation (JAX compiles each eager
    reduce_window separately, which takes seconds)."""
    _, _, window, strides, padding, bd, wd = case
    jops = {"add": jax.lax.add, "max": jax.lax.max, "min": jax.lax.min}

    def one(x, op):
        return jax.lax.reduce_window(x, OPS[op][2], jops[op], window, strides, padding, bd, wd)

    def grad(x, ct, op):
        return jax.vjp(lambda v: one(v, op), x)[1](ct)[0] if op in ops else None

    def all_ops(x, ct):
        return {op: (one(x, op), grad(x, ct, op)) for op in OPS}

    return jax.jit(all_ops)(x, ct)


@pytest.mark.parametrize("index", [0, 2, 4, 6])
def test_matches_jax_gradients(index):
    jax = pytest.importorskip("jax")
    case = CASES[index]
    x = _distinct(case[1])
    ct = RNG.standard_normal(_rw("add", x, case).shape).astype(np.float32)
    # JAX has no max/min VJP with window dilation or negative padding.
    ops = ["add"] if (case[6] is not None or case[0] == "negative-pad") else list(OPS)
    for op, (want, jg) in _jax_oracle(jax, x, ct, case, ops).items():
        np.testing.assert_allclose(
            np.asarray(_rw(op, x, case)), np.asarray(want), rtol=1e-6, atol=1e-5, err_msg=op
        )
        if jg is not None:
            mg = morphax.vjp(lambda v, op=op: _rw(op, v, case), x)[1](ct)[0]
            np.testing.assert_allclose(np.asarray(mg), np.asarray(jg), rtol=1e-5, atol=1e-5, err_msg=op)


@pytest.mark.parametrize(
    "shape,window,native_on_tpu", [((4, 6), (2, 2), False), ((2, 4, 6, 3), (1, 2, 2, 1), True)]
)
def test_tpu_lowering_takes_the_scatter_where_the_chip_has_no_layout(shape, window, native_on_tpu):
    # A TPU compiles select_and_scatter only with two window-1, stride-1 dimensions to put
    # minor-most ("not implemented for TPU" otherwise); the CPU takes it for any window.
    from morphax._src.compiler.backends.xla.lowering import lower_module

    def pooled_sum(x):
        return lax.reduce_window(x, -np.inf, lax.max, window, window, "VALID").sum()

    closed = morphax.make_jaxpr(morphax.grad(pooled_sum))(np.ones(shape, np.float32))
    assert "stablehlo.select_and_scatter" in lower_module(closed, "pool", platform="cpu")
    on_tpu = lower_module(closed, "pool", platform="tpu")
    assert ("stablehlo.select_and_scatter" in on_tpu) == native_on_tpu
    assert ("stablehlo.scatter" in on_tpu) != native_on_tpu
