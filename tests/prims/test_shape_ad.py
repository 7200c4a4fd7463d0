"""Derivative rules of the structural and conversion primitives (shape, slicing, conversion):
JVPs against central finite differences in float64, VJPs against JVPs by the inner-product
identity (real part of the plain, non-conjugated pairing), second order (JVP of JVP, and the
transpose of a transpose giving the JVP back), cotangent shapes/dtypes of broadcast operands, and
the zero-derivative primitives (bitcast, iota, stop_gradient, integer conversions)."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
from morphax import lax
from morphax._src.api import autodiff as A
from morphax._src.api.tracing import make_jaxpr
from morphax._src.core import dtypes as _dtypes
from morphax._src.prims.conversion import clamp_p, convert_element_type_p, select_n_p, stop_gradient_p
from morphax._src.prims.dynamic_slicing import dynamic_slice_p, dynamic_update_slice_p
from morphax._src.prims.shape import reshape_p
from morphax._src.prims.slicing import pad_p

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _x64():
    with morphax.enable_x64():
        yield


def _rand(shape, dtype=np.float64, lo=-2.0, hi=2.0):
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return (RNG.uniform(lo, hi, shape) + 1j * RNG.uniform(lo, hi, shape)).astype(dt)
    return RNG.uniform(lo, hi, shape).astype(dt)


def _like(x):
    return _rand(np.shape(x), np.asarray(x).dtype)


def _pair(a, b):
    """The real part of the plain (non-conjugating) pairing sum(a * b)."""
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def _num(x):
    return np.asarray(x)


def _fd(f, args, tangents, eps=1e-6):
    plus = [a + eps * t for a, t in zip(args, tangents)]
    minus = [a - eps * t for a, t in zip(args, tangents)]
    return (_num(f(*plus)) - _num(f(*minus))) / (2 * eps)


def check_jvp(f, args, rtol=1e-7, atol=1e-7):
    """JVP against central finite differences; the primal output against f itself."""
    tangents = tuple(_like(a) for a in args)
    out, out_t = A.jvp(f, tuple(args), tangents)
    np.testing.assert_allclose(_num(out), _num(f(*args)), rtol=1e-12, atol=1e-12)
    want = _fd(f, args, tangents)
    assert _num(out_t).shape == want.shape
    np.testing.assert_allclose(_num(out_t), want, rtol=rtol, atol=atol)
    return tangents, out_t


def check_vjp(f, args, rtol=1e-10):
    """<ct, J t> == <J^T ct, t> (each operand separately), and the cotangents have the exact
    shape and dtype of their operands."""
    tangents = tuple(_like(a) for a in args)
    out, pullback = A.vjp(f, *args)
    ct = _like(_num(out))
    cts = pullback(ct)
    assert len(cts) == len(args)
    for i, (a, c) in enumerate(zip(args, cts)):
        assert _num(c).shape == np.shape(a), f"cotangent {i}: shape {_num(c).shape} != {np.shape(a)}"
        assert _num(c).dtype == np.asarray(a).dtype, f"cotangent {i}: dtype {_num(c).dtype}"
        only = tuple(t if j == i else np.zeros_like(t) for j, t in enumerate(tangents))
        _, jt = A.jvp(f, tuple(args), only)
        lhs, rhs = _pair(ct, jt), _pair(c, tangents[i])
        np.testing.assert_allclose(lhs, rhs, rtol=rtol, atol=1e-10)
    return cts


def check_second_order(f, args, rtol=1e-6, atol=1e-7):
    """JVP of the JVP (tangent fixed) against finite differences of the JVP."""
    t = tuple(_like(a) for a in args)
    s = tuple(_like(a) for a in args)

    def f_t(*xs):
        return A.jvp(f, xs, t)[1]

    _, got = A.jvp(f_t, tuple(args), s)
    np.testing.assert_allclose(_num(got), _fd(f_t, args, s), rtol=rtol, atol=atol)


def check_transpose_twice(f, args):
    """The pullback is linear in the cotangent; its own pullback must give back the JVP."""
    out, pullback = A.vjp(f, *args)
    ct = _like(_num(out))
    tangents = tuple(_like(a) for a in args)
    _, pull2 = A.vjp(lambda c: pullback(c), ct)
    (back,) = pull2(tangents)
    _, want = A.jvp(f, tuple(args), tangents)
    np.testing.assert_allclose(_num(back), _num(want), rtol=1e-10, atol=1e-12)


def check_linear(f, args):
    """A linear map: linear_transpose agrees with the VJP."""
    cts = check_vjp(f, args)
    out = f(*args)
    ct = _like(_num(out))
    got = A.linear_transpose(f, *args)(ct)
    _, pullback = A.vjp(f, *args)
    for g, w in zip(got, pullback(ct)):
        np.testing.assert_allclose(_num(g), _num(w), rtol=1e-12)
    return cts


def check_all(f, args, *, linear=True, twice=True):
    args = tuple(args)
    check_jvp(f, args)
    (check_linear if linear else check_vjp)(f, args)
    check_second_order(f, args)
    if twice:
        check_transpose_twice(f, args)


# ------------------------------------------------------------------------------------- shape family


@pytest.mark.parametrize(
    "xs,shape,bd",
    [
        ((), (2, 3), ()),
        ((3,), (2, 3), (1,)),
        ((3,), (3, 2), (0,)),
        ((2, 1), (2, 4, 3), (0, 1)),
        ((1, 3), (2, 4, 3), (0, 2)),
        ((1,), (1,), (0,)),
        ((2, 3), (2, 3), (0, 1)),
        ((1,), (0, 2), (1,)),
    ],
)
def test_broadcast_in_dim(xs, shape, bd):
    check_all(lambda x: lax.broadcast_in_dim(x, shape, bd), [_rand(xs)])


@pytest.mark.parametrize(
    "xs,new,dims",
    [
        ((6,), (2, 3), None),
        ((2, 3), (3, 2), None),
        ((2, 3), (3, 2), (1, 0)),
        ((2, 3), (6,), (1, 0)),
        ((2, 3, 4), (4, 6), (2, 0, 1)),
        ((), (1, 1), None),
    ],
)
def test_reshape(xs, new, dims):
    # Bind the primitive directly so the `dimensions` param is exercised as given.
    def f(x):
        return reshape_p.bind(x, new_sizes=new, dimensions=dims, sharding=None)

    check_all(f, [_rand(xs)])


@pytest.mark.parametrize("xs,perm", [((2, 3), (1, 0)), ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (1, 2, 0))])
def test_transpose(xs, perm):
    check_all(lambda x: lax.transpose(x, perm), [_rand(xs)])


@pytest.mark.parametrize("xs,dims", [((1, 3, 1), (0, 2)), ((3, 1), (1,)), ((1,), (0,))])
def test_squeeze(xs, dims):
    check_all(lambda x: lax.squeeze(x, dims), [_rand(xs)])


@pytest.mark.parametrize("xs,dims", [((4,), (0,)), ((2, 3), (0, 1)), ((3, 4), (1,)), ((2, 3, 4), (2, 0))])
def test_rev(xs, dims):
    check_all(lambda x: lax.rev(x, dims), [_rand(xs)])


_PAD_CONFIGS = [
    ((3,), ((1, 2, 0),)),
    ((3,), ((-1, 0, 1),)),
    ((4,), ((-2, -1, 0),)),
    ((3,), ((-5, 0, 1),)),
    ((2,), ((-3, 1, 2),)),
    ((0,), ((2, 1, 3),)),
    ((2, 3), ((1, -1, 2), (0, 2, 1))),
    ((1, 4), ((0, 0, 5), (-3, 2, 0))),
    ((), ()),
]


@pytest.mark.parametrize("xs,config", _PAD_CONFIGS)
def test_pad_operand_and_value(xs, config):
    def f(x, v):
        return pad_p.bind(x, v, padding_config=config)

    x, v = _rand(xs), _rand(())
    check_all(f, [x, v])
    # Each operand alone (the other a constant).
    check_vjp(lambda x: f(x, v), [x])
    check_vjp(lambda v: f(x, v), [v])


def test_pad_value_cotangent_counts_padding_positions():
    x = _rand((2, 3))
    config = ((1, -1, 2), (-1, 2, 1))
    out = pad_p.bind(x, np.float64(0.0), padding_config=config)
    _, pullback = A.vjp(lambda x, v: pad_p.bind(x, v, padding_config=config), x, np.float64(0.0))
    ct_x, ct_v = pullback(np.ones(np.shape(out)))
    # Operand elements that survive the cropping get 1; the value gets one per padding position.
    want_x = _num(pad_p.bind(np.ones((2, 3)), np.float64(0.0), padding_config=config))
    assert float(_num(ct_x).sum()) == want_x.sum()
    assert float(_num(ct_v)) == out.size - want_x.sum()


@pytest.mark.parametrize(
    "shapes,dim",
    [
        (((3,), (2,)), 0),
        (((2, 3), (2, 1), (2, 0), (2, 2)), 1),
        (((1, 3), (2, 3)), 0),
    ],
)
def test_concatenate(shapes, dim):
    check_all(lambda *xs: lax.concatenate(xs, dim), [_rand(s) for s in shapes])


def test_concatenate_with_constant_operand():
    c = _rand((2, 2))
    check_vjp(lambda x: lax.concatenate([c, x, c], 1), [_rand((2, 3))])


# ---------------------------------------------------------------------------------- slicing family


@pytest.mark.parametrize(
    "xs,start,limit,strides",
    [
        ((5,), (1,), (4,), None),
        ((5,), (0,), (5,), (2,)),
        ((6,), (1,), (6,), (3,)),
        ((7,), (0,), (7,), (10,)),
        ((5,), (2,), (2,), (4,)),
        ((4, 5), (1, 0), (3, 5), (1, 2)),
        ((2, 3, 4), (0, 1, 1), (2, 3, 4), (2, 1, 2)),
        ((4, 5), (1, 1), (3, 4), (1, 1)),
    ],
)
def test_slice(xs, start, limit, strides):
    check_all(lambda x: lax.slice(x, start, limit, strides), [_rand(xs)])


@pytest.mark.parametrize(
    "xs,starts,sizes",
    [
        ((5,), (1,), (3,)),
        ((5,), (4,), (3,)),  # clamped back to 2
        ((5,), (-2,), (2,)),  # the primitive clamps negative starts to 0
        ((5,), (100,), (0,)),
        ((3, 4), (1, 3), (2, 2)),
        ((3, 4), (-1, -7), (1, 4)),
        ((2, 3, 4), (1, 5, -3), (2, 1, 2)),
    ],
)
def test_dynamic_slice(xs, starts, sizes):
    idx = [np.int32(s) for s in starts]

    def f(x):
        return dynamic_slice_p.bind(x, *idx, slice_sizes=sizes)

    check_all(f, [_rand(xs)])


def test_dynamic_slice_transpose_matches_clamped_window():
    x = _rand((6,))
    _, pullback = A.vjp(lambda x: dynamic_slice_p.bind(x, np.int32(5), slice_sizes=(3,)), x)
    (ct,) = pullback(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(_num(ct), [0, 0, 0, 1, 2, 3])


def test_dynamic_slice_traced_index():
    # The index is computed from a primal input (int): no tangent, and the VJP still places ct.
    x = _rand((5, 2))

    def f(x, i):
        return lax.dynamic_slice(x, (i, np.int32(0)), (2, 2))

    out, pullback = A.vjp(f, x, np.int32(-1))
    ct_x, ct_i = pullback(np.ones((2, 2)))
    np.testing.assert_array_equal(_num(ct_x), [[0, 0]] * 3 + [[1, 1]] * 2)
    assert _num(ct_i).dtype == _dtypes.float0


@pytest.mark.parametrize(
    "xs,us,starts",
    [
        ((5,), (2,), (1,)),
        ((5,), (2,), (4,)),
        ((5,), (2,), (-3,)),
        ((4,), (4,), (1,)),
        ((3, 4), (2, 2), (2, 3)),
        ((3, 4), (0, 2), (1, 1)),
        ((1, 4), (1, 3), (-1, 2)),
    ],
)
def test_dynamic_update_slice(xs, us, starts):
    idx = [np.int32(s) for s in starts]

    def f(x, u):
        return dynamic_update_slice_p.bind(x, u, *idx)

    x, u = _rand(xs), _rand(us)
    check_all(f, [x, u])
    check_vjp(lambda x: f(x, u), [x])
    check_vjp(lambda u: f(x, u), [u])


def test_dynamic_update_slice_cotangents_by_hand():
    x, u = _rand((5,)), _rand((2,))
    _, pullback = A.vjp(lambda x, u: dynamic_update_slice_p.bind(x, u, np.int32(9)), x, u)
    ct_x, ct_u = pullback(np.arange(5.0))
    np.testing.assert_array_equal(_num(ct_x), [0, 1, 2, 0, 0])
    np.testing.assert_array_equal(_num(ct_u), [3, 4])


# ------------------------------------------------------------------------------- conversion family


def _convert(dt):
    return lambda x: convert_element_type_p.bind(x, new_dtype=np.dtype(dt), weak_type=False, sharding=None)


@pytest.mark.parametrize(
    "src,dst",
    [
        ("float64", "float64"),
        ("float64", "complex128"),
        ("complex128", "float64"),
        ("complex128", "complex128"),
    ],
)
def test_convert_inexact(src, dst):
    check_all(_convert(dst), [_rand((2, 3), src)])


@pytest.mark.parametrize("src,dst", [("float64", "float32"), ("float32", "float64"), ("float64", "float16")])
def test_convert_precision_change(src, dst):
    x = _rand((4,), src)
    t = _rand((4,), src)
    out, out_t = A.jvp(_convert(dst), (x,), (t,))
    assert _num(out_t).dtype == np.dtype(dst)
    np.testing.assert_array_equal(_num(out_t), t.astype(dst))
    _, pullback = A.vjp(_convert(dst), x)
    (ct,) = pullback(np.ones(4, dst))
    assert _num(ct).dtype == np.dtype(src)
    np.testing.assert_array_equal(_num(ct), np.ones(4, src))


def test_convert_complex_real_transposes():
    # real -> complex transposes to the real part; complex -> real to complex(ct, 0).
    x = _rand((3,))
    _, pull = A.vjp(_convert("complex128"), x)
    (ct,) = pull(np.array([1 + 2j, 3 - 1j, -2 + 5j]))
    np.testing.assert_array_equal(_num(ct), [1.0, 3.0, -2.0])
    z = _rand((3,), np.complex128)
    _, pull = A.vjp(_convert("float64"), z)
    (ct,) = pull(np.array([1.0, 2.0, 3.0]))
    assert _num(ct).dtype == np.complex128
    np.testing.assert_array_equal(_num(ct), [1.0, 2.0, 3.0])


def test_convert_to_and_from_integers_has_zero_derivative():
    x = _rand((3,))
    _, t = A.jvp(_convert("int32"), (x,), (np.ones(3),))
    assert _num(t).dtype == _dtypes.float0
    i = np.arange(3, dtype=np.int32)
    _, t = A.jvp(_convert("float64"), (i,), (np.zeros(3, _dtypes.float0),))
    np.testing.assert_array_equal(_num(t), np.zeros(3))
    assert _num(t).dtype == np.float64
    # grad through a round trip float -> int -> float is zero.
    g = A.grad(lambda x: lax.reduce_sum(_convert("float64")(_convert("int32")(x)), (0,)))(x)
    np.testing.assert_array_equal(_num(g), np.zeros(3))


def test_bitcast_and_iota_have_zero_derivative():
    x = _rand((3,))

    def f(x):
        bits = lax.bitcast_convert_type(x, np.int64)
        back = lax.bitcast_convert_type(bits, np.float64)
        return back + lax.iota(np.float64, 3)

    out, t = A.jvp(f, (x,), (np.ones(3),))
    np.testing.assert_array_equal(_num(out), x + np.arange(3))
    np.testing.assert_array_equal(_num(t), np.zeros(3))


@pytest.mark.parametrize("which_kind", ["bool", "bool-scalar", "int3", "int-scalar"])
def test_select_n(which_kind):
    shape = (2, 3)
    if which_kind == "bool":
        which, n = RNG.random(shape) < 0.5, 2
    elif which_kind == "bool-scalar":
        which, n = np.array(True), 2
    elif which_kind == "int3":
        which, n = RNG.integers(0, 3, shape).astype(np.int32), 3
    else:
        which, n = np.int32(1), 3

    def f(*cases):
        return select_n_p.bind(which, *cases)

    cases = [_rand(shape) for _ in range(n)]
    check_all(f, cases)
    # One case differentiated, the others constant: the Zero tangents are instantiated.
    check_vjp(lambda c: f(cases[0], c, *cases[2:]), [cases[1]])


def test_select_n_cotangents_by_hand():
    which = np.array([0, 1, 2, 1], np.int32)
    cases = [_rand((4,)) for _ in range(3)]
    _, pullback = A.vjp(lambda *c: select_n_p.bind(which, *c), *cases)
    cts = pullback(np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(_num(cts[0]), [1, 0, 0, 0])
    np.testing.assert_array_equal(_num(cts[1]), [0, 2, 0, 4])
    np.testing.assert_array_equal(_num(cts[2]), [0, 0, 3, 0])


def _away_from(x, bounds, gap=0.1):
    """Move entries of x at least `gap` away from each bound (finite differences need smooth points)."""
    x = np.array(x)
    for b in bounds:
        close = np.abs(x - b) < gap
        x = np.where(close, x + 3 * gap, x)
    return x


@pytest.mark.parametrize(
    "ls,xs,hs",
    [((), (6,), ()), ((6,), (6,), (6,)), ((), (2, 3), (2, 3)), ((2, 3), (2, 3), ()), ((), (), ())],
)
def test_clamp(ls, xs, hs):
    lo = _rand(ls, lo=-1.5, hi=-0.5)
    hi = _rand(hs, lo=0.5, hi=1.5)
    x = _rand(xs, lo=-3, hi=3)
    x = _away_from(_away_from(x, np.ravel(lo)), np.ravel(hi))
    check_jvp(lax.clamp, [lo, x, hi])
    check_vjp(lax.clamp, [lo, x, hi])
    check_second_order(lax.clamp, [lo, x, hi])


def test_clamp_partials_follow_jax():
    lo, hi = np.float64(-1.0), np.float64(1.0)
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    g_x = A.grad(lambda x: lax.reduce_sum(lax.clamp(lo, x, hi), (0,)))(x)
    np.testing.assert_array_equal(_num(g_x), [0, 0, 1, 0, 0])  # ties give zero
    g_lo, g_hi = A.grad(lambda a, b: lax.reduce_sum(lax.clamp(a, x, b), (0,)), argnums=(0, 1))(lo, hi)
    assert float(_num(g_lo)) == 1.0  # only x = -2 lies strictly below min
    assert float(_num(g_hi)) == 1.0  # only x = 2 lies strictly above max
    assert _num(g_lo).shape == () and _num(g_hi).shape == ()
    # min > max: the result is max, but JAX's rule gives min no derivative and max its own.
    g = A.grad(lambda a: lax.reduce_sum(lax.clamp(a, x, hi), (0,)))(np.float64(3.0))
    assert float(_num(g)) == 0.0


def test_copy():
    check_all(lax.copy_p.bind, [_rand((2, 3))])


# -------------------------------------------------------------------------------------- stop_gradient


def test_stop_gradient_blocks_derivatives():
    x = _rand((3,))

    def f(x):
        return lax.mul(x, lax.stop_gradient(x))

    out, t = A.jvp(f, (x,), (np.ones(3),))
    np.testing.assert_allclose(_num(t), x)  # d/dx [x * c] with c = x held fixed
    g = A.grad(lambda x: lax.reduce_sum(f(x), (0,)))(x)
    np.testing.assert_allclose(_num(g), x)
    _, pullback = A.vjp(lax.stop_gradient, x)
    (ct,) = pullback(np.ones(3))
    np.testing.assert_array_equal(_num(ct), np.zeros(3))


def test_stop_gradient_pytree_and_dtypes():
    x = _rand((2,))
    i = np.arange(3, dtype=np.int32)
    out = lax.stop_gradient({"a": x, "b": (i, True)})
    np.testing.assert_array_equal(_num(out["a"]), x)
    assert out["b"][0] is i and out["b"][1] is True
    jaxpr = make_jaxpr(lambda x, i: lax.stop_gradient((x, i)))(x, i)
    assert [e.primitive for e in jaxpr.jaxpr.eqns] == [stop_gradient_p]


def test_linear_rules_are_registered():
    for prim in (clamp_p, select_n_p, convert_element_type_p, dynamic_slice_p, dynamic_update_slice_p):
        assert prim.jvp is not None
    assert stop_gradient_p.test_spec.differentiable is False
