"""Batching (vmap) rules of the elementwise primitives (unary, transcendental, binary, comparisons,
bitwise) and of threefry2x32, against Python loops: every primitive over a sample of its spec's
cases and every in_axes combination; lax broadcasting under vmap (unbatched and batched rank-0
operands, size-1 axes, batch axes at different positions, batch size 1); where the result's batch
axis lands (no needless transposes); nested vmap with different in_axes; vmap of grad and grad of
vmap against loops of grad."""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest

import morphax
from morphax import lax
from morphax._src.core.primitive import registry
from morphax._src.prims import arithmetic, bitwise, compare, complex_parts, prng, transcendental, unary

_MODULES = (unary, transcendental, arithmetic, complex_parts, compare, bitwise, prng)
_PRIMS = sorted(
    {getattr(m, n) for m in _MODULES for n in m.__all__ if n.endswith("_p")},
    key=lambda p: p.name,
)


def _np(x):
    return np.asarray(x)


def _assert_same(got, want):
    got, want = _np(got), _np(want)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}"
    if got.dtype.type.__module__.startswith("ml_dtypes"):
        got, want = got.astype(np.float32), want.astype(np.float32)
    # Both sides run the same NumPy reference elementwise: the values agree bit for bit.
    np.testing.assert_array_equal(got, want)


def _loop(fun, args, in_axes, out_axes=0):
    """The reference: `fun` on each example (an unbatched operand is passed whole), stacked."""
    size = {np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None}.pop()
    outs = []
    for b in range(size):
        ex = [a if ax is None else np.take(_np(a), b, axis=ax) for a, ax in zip(args, in_axes)]
        outs.append(fun(*ex))
    if isinstance(outs[0], (tuple, list)):
        return [np.stack([_np(o[i]) for o in outs], axis=out_axes) for i in range(len(outs[0]))]
    return np.stack([_np(o) for o in outs], axis=out_axes)


def _check_vmap(fun, args, in_axes, out_axes=0):
    got = morphax.vmap(fun, in_axes=in_axes, out_axes=out_axes)(*args)
    want = _loop(fun, args, in_axes, out_axes)
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
    else:
        _assert_same(got, want)
    return got


# ---------------------------------------------------------------------------------------------
# Every primitive, a sample of its spec's cases, every in_axes combination.


def _sample_cases(prim):
    """The first case of each operand-shape signature and of each dtype signature, with the same
    cases drawn from two more seeds (different random values) to make distinct examples."""
    seed = zlib.crc32(prim.name.encode())
    draws = [prim.test_spec.cases(np.random.default_rng(seed + i)) for i in range(3)]
    seen, out = set(), []
    for i, case in enumerate(draws[0]):
        args = [_np(a) for a in case.args]
        shapes = tuple(a.shape for a in args)
        dtypes = tuple(a.dtype.name for a in args)
        if (shapes in seen and dtypes in seen) or any(0 in a.shape for a in args):
            continue
        seen.update((shapes, dtypes))
        same = [d[i] for d in draws]
        if any(c.name != case.name or [_np(a).shape for a in c.args] != list(shapes) for c in same):
            same = [case] * 3
        out.append(pytest.param(prim, same, id=f"{prim.name}-{case.name}"))
    return out


_CASES = [p for prim in _PRIMS for p in _sample_cases(prim)]


def test_every_elementwise_primitive_has_a_batch_rule():
    assert len(_PRIMS) > 60
    assert not [p.name for p in _PRIMS if p.batch is None]
    assert registry["threefry2x32"].batch is not None


@pytest.mark.parametrize("prim,cases", _CASES)
def test_vmap_matches_loop(prim, cases):
    params = cases[0].params
    n = len(cases[0].args)

    def fun(*args):
        out = prim.bind(*args, **params)
        return list(out) if prim.multiple_results else out

    with np.errstate(all="ignore"):
        for size in (3, 1):
            examples = [[_np(c.args[i]) for c in cases[:size]] for i in range(n)]
            for axes in itertools.product((0, -1, None), repeat=n):
                if all(a is None for a in axes):
                    continue
                args = [ex[0] if ax is None else np.stack(ex, axis=ax) for ex, ax in zip(examples, axes)]
                for out_axes in (0, -1):
                    _check_vmap(fun, args, axes, out_axes)


# ---------------------------------------------------------------------------------------------
# lax broadcasting under vmap, and where the batch axis of the result lands.

RNG = np.random.default_rng(0)


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _eqn_names(fun, *args):
    return [str(e.primitive) for e in morphax.make_jaxpr(fun)(*args).jaxpr.eqns]


def _transposes_in_rules(fun, *args):
    """Transposes before the last eqn that is not one: those the rules made (vmap itself may move
    the result's batch axis to out_axes at the end)."""
    names = _eqn_names(fun, *args)
    while names and names[-1] == "transpose":
        names.pop()
    return names.count("transpose")


@pytest.mark.parametrize(
    "x_shape,y_shape,in_axes",
    [
        ((4, 3), (), (0, None)),  # unbatched rank-0 with a batched operand
        ((), (4, 3), (None, 1)),
        ((4,), (2, 3), (0, None)),  # batched rank-0 (shape (B,)) with unbatched rank-2
        ((2, 3), (4,), (None, 0)),
        ((2, 4, 3), (4,), (1, 0)),  # batched rank-0 with batched rank-2 batched in the middle
        ((4,), (4,), (0, 0)),  # both rank-0 per example
        ((4,), (), (0, None)),
        ((1, 4, 3), (2, 1), (1, None)),  # size-1 axes broadcasting against each other
        ((2, 1), (4, 1, 3), (None, 0)),
        ((4, 2, 3), (2, 3, 4), (0, 2)),  # batch axes at different positions
        ((2, 4, 1), (4, 1, 3), (1, 0)),
        ((1, 1, 3), (2, 3), (0, None)),  # batch size 1 next to size-1 example axes
        ((1, 3), (1, 1), (0, 1)),
    ],
)
@pytest.mark.parametrize("op", [lax.add, lax.atan2, lax.lt, lax.max, lax.nextafter])
def test_broadcasting_under_vmap(x_shape, y_shape, in_axes, op):
    x, y = _f32(*x_shape), _f32(*y_shape)
    _check_vmap(op, (x, y), in_axes)
    _check_vmap(op, (x, y), in_axes, out_axes=-1)


def test_batched_rank0_with_unbatched_rank2_is_a_broadcast_not_a_tile():
    s, m = _f32(5), _f32(2, 3)
    got = morphax.vmap(lax.mul, (0, None))(s, m)
    np.testing.assert_array_equal(_np(got), s[:, None, None] * m)
    names = _eqn_names(morphax.vmap(lax.mul, (0, None)), s, m)
    # The scalar becomes (5, 1, 1) and the matrix (1, 2, 3); nothing is transposed or tiled.
    assert names.count("transpose") == 0 and names.count("mul") == 1


def test_shared_batch_axis_needs_no_transpose():
    x, y = _f32(2, 5, 3), _f32(2, 5, 3)

    def f(a, b):
        return lax.div(lax.sin(a), lax.add(lax.exp(b), 1.0))

    assert _transposes_in_rules(morphax.vmap(f, in_axes=(1, 1), out_axes=1), x, y) == 0
    _check_vmap(f, (x, y), (1, 1), out_axes=1)
    # An unbatched operand gains a size-1 axis where the batched ones keep theirs.
    z = _f32(2, 3)
    assert _transposes_in_rules(morphax.vmap(lax.sub, in_axes=(1, None), out_axes=1), x, z) == 0
    _check_vmap(lax.sub, (x, z), (1, None), out_axes=1)


def test_mixed_batch_axes_move_only_the_minority():
    # Three of the four threefry operands are batched along axis 2: only the fourth moves.
    keys = [_u32(2, 3, 4), _u32(2, 3, 4), _u32(2, 3, 4), _u32(4, 2, 3)]
    assert _transposes_in_rules(morphax.vmap(lax.threefry2x32, in_axes=(2, 2, 2, 0)), *keys) == 1
    _check_vmap(lax.threefry2x32, keys, (2, 2, 2, 0))


def test_rank_mismatch_per_example_still_errors():
    # (3,) against (2, 3) per example is not lax broadcasting, batched or not.
    with pytest.raises(TypeError, match="same number of dimensions"):
        morphax.vmap(lax.add, (0, None))(_f32(4, 3), _f32(2, 3))
    with pytest.raises(TypeError, match="same number of dimensions"):
        morphax.vmap(lax.add, (0, 0))(_f32(4, 3), _f32(4, 2, 3))


def test_dtype_weak_type_and_params_survive():
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4).astype(np.dtype("bfloat16"))
    _check_vmap(lambda v: lax.round(v, lax.RoundingMethod.TO_NEAREST_EVEN), (x,), (1,))
    _check_vmap(lambda v: lax.integer_pow(v, -3), (_f32(3, 4) + 4,), (0,))
    _check_vmap(lax.conj, (_f32(3, 4),), (1,))
    z = (_f32(3, 2) + 1j * _f32(3, 2)).astype(np.complex64)
    _check_vmap(lambda v: lax.complex(lax.real(v), lax.imag(v)), (z,), (0,))
    # A Python scalar operand stays weakly typed per example and under vmap alike.
    jaxpr = morphax.make_jaxpr(morphax.vmap(lambda v: lax.mul(2.0, lax.add(v, 1.0))))(_f32(3, 2))
    assert jaxpr.out_avals[0].dtype == np.float32


def test_pow_integer_exponent_and_polygamma_order_batched():
    x = np.abs(_f32(4, 3)) + 0.5
    n = RNG.integers(-3, 4, size=(4,)).astype(np.int32)
    _check_vmap(lax.pow, (x, n), (0, 0))  # batched rank-0 integer exponent
    _check_vmap(lax.pow, (x, n[:3]), (0, None))
    m = np.array([0.0, 1.0, 2.0, 3.0], np.float32)
    _check_vmap(lax.polygamma, (m, x), (0, 0))
    _check_vmap(lax.polygamma, (m, x.T), (0, 1))
    _check_vmap(lax.polygamma, (np.float32(1.0), x), (None, 1))


# ---------------------------------------------------------------------------------------------
# threefry2x32: keys and counters broadcast against each other.


def _u32(*shape):
    return RNG.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)


@pytest.mark.parametrize(
    "shapes,in_axes",
    [
        (((5,), (5,), (7,), (7,)), (0, 0, None, None)),  # a batch of keys, shared counters
        (((), (), (5, 7), (5, 7)), (None, None, 0, 0)),  # one key, batched counters
        (((5,), (), (2, 3), (2, 3)), (0, None, None, None)),  # one key word batched
        (((1, 3), (1, 3), (2, 3, 5), (2, 3, 5)), (None, None, 2, 2)),  # size-1 key axis
        (((5, 1, 3), (1, 3, 5), (2, 3), (5, 2, 3)), (0, 2, None, 0)),
        (((5,), (5,), (5,), (5,)), (0, 0, 0, 0)),
        (((1,), (1,), (4,), (1, 4)), (0, 0, None, 0)),  # batch size 1
    ],
)
def test_threefry_batched(shapes, in_axes):
    args = [_u32(*s) for s in shapes]
    _check_vmap(lax.threefry2x32, args, in_axes)
    _check_vmap(lax.threefry2x32, args, in_axes, out_axes=-1)


def test_threefry_nested_vmap():
    k1, k2, x1, x2 = _u32(3), _u32(3), _u32(4, 2), _u32(2, 4)
    inner = morphax.vmap(lax.threefry2x32, in_axes=(None, None, 0, 1))
    outer = morphax.vmap(inner, in_axes=(0, 0, None, None), out_axes=1)
    got = outer(k1, k2, x1, x2)
    for w in range(2):
        want = np.stack(
            [
                np.stack([_np(lax.threefry2x32(k1[i], k2[i], x1[j], x2[:, j])[w]) for j in range(4)])
                for i in range(3)
            ],
            axis=1,
        )
        _assert_same(got[w], want)


@pytest.mark.parametrize(
    "fn",
    [
        lambda k: morphax.random.normal(k, (3,)),
        lambda k: morphax.random.uniform(k, (2, 2)),
        lambda k: morphax.random.split(k),
        lambda k: morphax.random.fold_in(k, 7),
    ],
    ids=["normal", "uniform", "split", "fold_in"],
)
def test_vmap_over_keys(fn):
    # A batch of keys draws exactly what each key draws alone.
    keys = morphax.random.split(morphax.random.PRNGKey(0), 4)
    _check_vmap(fn, (keys,), (0,))


# ---------------------------------------------------------------------------------------------
# Nested vmap with different in_axes.


def _f(x, y):
    return lax.add(lax.mul(lax.sin(x), lax.exp(lax.neg(lax.square(y)))), lax.atan2(x, lax.add(y, 2.0)))


@pytest.mark.parametrize(
    "x_shape,y_shape,inner_axes,outer_axes",
    [
        ((3, 4), (3, 4), (0, 0), (1, 1)),
        ((3, 4), (4, 2, 3), (0, 1), (1, 0)),
        ((3, 4), (4,), (0, None), (1, 0)),  # the inner vmap sees y unbatched, the outer batches it
        ((3,), (4,), (None, 0), (0, None)),  # an outer product
        ((3, 4, 2), (2,), (0, None), (1, None)),  # inner example (2,) against unbatched (2,)
        ((3, 4, 2), (4, 3, 2), (0, 1), (2, 2)),
    ],
)
def test_nested_vmap(x_shape, y_shape, inner_axes, outer_axes):
    x, y = _f32(*x_shape), _f32(*y_shape)
    got = morphax.vmap(morphax.vmap(_f, inner_axes), outer_axes)(x, y)
    want = _loop(lambda a, b: _loop(_f, (a, b), inner_axes), (x, y), outer_axes)
    np.testing.assert_allclose(_np(got), want, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# vmap of grad and grad of vmap.


def _g(x, y):
    # Derivatives of these stay within elementwise primitives (no casts, no reductions).
    num = lax.mul(lax.tanh(x), lax.integer_pow(y, 3))
    den = lax.add(lax.exp(lax.mul(x, y)), lax.logistic(y))
    return lax.add(lax.div(num, den), lax.pow(lax.add(lax.square(x), 1.0), y))


_grad = morphax.grad(_g, argnums=(0, 1))


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)])
def test_vmap_of_grad(in_axes):
    x, y = _f32(6), _f32(6)
    x, y = (x if in_axes[0] == 0 else x[0]), (y if in_axes[1] == 0 else y[0])
    got = morphax.vmap(_grad, in_axes)(x, y)
    want = _loop(_grad, (x, y), in_axes)
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), w, rtol=1e-6, atol=1e-6)


def test_nested_vmap_of_grad():
    x, y = _f32(3, 4), _f32(4)
    got = morphax.vmap(morphax.vmap(_grad, (0, None)), (1, 0))(x, y)
    want = _loop(lambda a, b: _loop(_grad, (a, b), (0, None)), (x, y), (1, 0))
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), w, rtol=1e-6, atol=1e-6)


def test_vmap_of_second_derivative():
    gg = morphax.grad(morphax.grad(lambda x: lax.mul(lax.sin(x), lax.log1p(lax.square(x)))))
    x = _f32(5)
    np.testing.assert_allclose(_np(morphax.vmap(gg)(x)), _loop(gg, (x,), (0,)), rtol=1e-5, atol=1e-6)


def test_grad_of_vmap():
    # Summing outside vmap: the cotangent of every example is its own grad.
    x, y = _f32(5), _f32(5)

    def total(a, b):
        out = morphax.vmap(_g)(a, b)
        return lax.reduce_sum(out, (0,))

    got = morphax.grad(total, argnums=(0, 1))(x, y)
    want = _loop(_grad, (x, y), (0, 0))
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), w, rtol=1e-6, atol=1e-6)


def test_grad_of_vmap_with_broadcast_operand():
    # The unbatched y meets a batched x: its cotangent sums over the batch.
    x, y = _f32(5, 3), _f32(3)

    def total(a, b):
        out = morphax.vmap(lambda u, v: lax.mul(lax.sin(u), lax.exp(v)), (0, None))(a, b)
        return lax.reduce_sum(out, (0, 1))

    gx, gy = morphax.grad(total, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(_np(gx), np.cos(x) * np.exp(y), rtol=1e-6)
    np.testing.assert_allclose(_np(gy), (np.sin(x) * np.exp(y)).sum(0), rtol=1e-5)
