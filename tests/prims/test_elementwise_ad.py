"""Derivative rules of the elementwise primitives (unary, transcendental, binary, comparisons,
bitwise): JVPs against float64 central differences and VJPs against them by the inner-product
identity (`check_grads`, first and second order, third on a sample), on points away from each
function's singularities; JAX's conventions at the kinks (abs at 0, max/min ties, pow at x == 0,
integer exponents); the linear primitives' transposes (no conjugation for complex values);
cotangent shapes and dtypes of broadcast operands; symbolic zeros; zero-derivative primitives."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sp

import morphax
from morphax import lax
from morphax._src.api import autodiff as A
from morphax._src.core import dtypes as _dtypes
from morphax.test_util import check_grads

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


def _np(x):
    return np.asarray(x)


def _pair(a, b):
    """The real part of the plain (non-conjugating) pairing sum(a * b): JAX's transposes are
    transposes under this bilinear form."""
    return float(np.real(np.sum(_np(a).astype(np.complex128) * _np(b).astype(np.complex128))))


def _check_transpose(f, args, out_like):
    """Linear `f`: <ct, f(t)> == <f^T(ct), t>, cotangents shaped and typed like the operands."""
    ts = [_rand(np.shape(a), np.asarray(a).dtype) for a in args]
    ct = _rand(np.shape(out_like), _np(out_like).dtype)
    cts = A.linear_transpose(f, *args)(ct)
    assert len(cts) == len(args)
    for a, c in zip(args, cts):
        assert _np(c).shape == np.shape(a) and _np(c).dtype == np.asarray(a).dtype
    lhs = _pair(ct, f(*ts))
    rhs = sum(_pair(c, t) for c, t in zip(cts, ts))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Unary functions: (name, function, (lo, hi) of the sample points, also check complex128).

R, C = np.float64, np.complex128
UNARY = [
    ("neg", lax.neg, (-2, 2), True),
    ("exp", lax.exp, (-2, 2), True),
    ("exp2", lax.exp2, (-2, 2), True),
    ("expm1", lax.expm1, (-2, 2), True),
    ("log", lax.log, (0.2, 3), True),
    ("log1p", lax.log1p, (-0.5, 3), True),
    ("tanh", lax.tanh, (-2, 2), True),
    ("logistic", lax.logistic, (-3, 3), True),
    ("sin", lax.sin, (-3, 3), True),
    ("cos", lax.cos, (-3, 3), True),
    ("tan", lax.tan, (-1.2, 1.2), True),
    ("asin", lax.asin, (-0.8, 0.8), True),
    ("acos", lax.acos, (-0.8, 0.8), True),
    ("atan", lax.atan, (-0.8, 0.8), True),
    ("sinh", lax.sinh, (-2, 2), True),
    ("cosh", lax.cosh, (-2, 2), True),
    ("asinh", lax.asinh, (-0.8, 0.8), True),
    ("acosh", lax.acosh, (1.2, 3), True),
    ("atanh", lax.atanh, (-0.8, 0.8), True),
    ("sqrt", lax.sqrt, (0.2, 3), True),
    ("rsqrt", lax.rsqrt, (0.2, 3), True),
    ("cbrt", lax.cbrt, (0.2, 3), False),
    ("cbrt-negative", lax.cbrt, (-3, -0.2), False),
    ("abs", lax.abs, (0.2, 3), True),
    ("abs-negative", lax.abs, (-3, -0.2), False),
    ("erf", lax.erf, (-2, 2), False),
    ("erfc", lax.erfc, (-2, 2), False),
    ("erf_inv", lax.erf_inv, (-0.8, 0.8), False),
    ("lgamma", lax.lgamma, (0.5, 4), False),
    ("digamma", lax.digamma, (0.5, 4), False),
    ("square", lax.square, (-2, 2), True),
    ("conj", lax.conj, (-2, 2), True),
] + [(f"integer_pow-{y}", lambda x, y=y: lax.integer_pow(x, y), (0.3, 2), True) for y in (0, 1, 2, 3, -2)]


def _unary_params():
    out = []
    for name, fn, dom, cplx in UNARY:
        out.append(pytest.param(fn, dom, R, id=f"{name}-float64"))
        if cplx:
            out.append(pytest.param(fn, dom, C, id=f"{name}-complex128"))
    for name, fn in (("real", lax.real), ("imag", lax.imag)):
        out.append(pytest.param(fn, (-2, 2), C, id=f"{name}-complex128"))
    return out


@pytest.mark.parametrize("fn,dom,dtype", _unary_params())
def test_unary_second_order(fn, dom, dtype):
    x = _rand((3,), dtype, *dom)
    check_grads(fn, [x], order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize(
    "fn,dom",
    [
        (lax.sin, (-3, 3)),
        (lax.tan, (-1.2, 1.2)),
        (lax.atanh, (-0.8, 0.8)),
        (lax.sqrt, (0.2, 3)),
        (lax.lgamma, (0.5, 4)),
        (lax.erf_inv, (-0.8, 0.8)),
        (lax.abs, (0.2, 3)),
        (lambda x: lax.integer_pow(x, -3), (0.5, 2)),
    ],
)
def test_unary_third_order(fn, dom):
    check_grads(fn, [_rand((2,), R, *dom)], order=3, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_known_derivatives():
    x = np.array([0.7, 1.9, 3.2])
    ones = np.ones(3)
    assert np.allclose(_np(A.jvp(lax.lgamma, (x,), (ones,))[1]), sp.digamma(x))
    assert np.allclose(_np(A.jvp(lax.digamma, (x,), (ones,))[1]), sp.polygamma(1, x))
    assert np.allclose(
        _np(A.jvp(lax.erf_inv, (x / 4,), (ones,))[1]), np.sqrt(np.pi) / 2 * np.exp(sp.erfinv(x / 4) ** 2)
    )
    assert np.allclose(_np(A.jvp(lax.cbrt, (-x,), (ones,))[1]), np.cbrt(x) ** -2 / 3)
    assert np.allclose(_np(A.jvp(lax.exp2, (x,), (ones,))[1]), np.log(2) * 2**x)
    # d/dx x**3 = 3 x**2 and its derivative 6 x, through integer_pow's own rule.
    d2 = A.grad(A.grad(lambda v: lax.integer_pow(v, 3)))(np.float64(1.5))
    assert float(d2) == pytest.approx(9.0)


# ---------------------------------------------------------------------------------------------
# polygamma (added so that digamma's derivative is differentiable to any order).


def test_polygamma_values_and_x_derivative():
    x = np.array([0.6, 1.5, 4.0])
    for m in (0.0, 1.0, 2.0, 3.0):
        got = _np(lax.polygamma(m, x))
        np.testing.assert_allclose(got, sp.polygamma(int(m), x), rtol=1e-12)
        check_grads(
            lambda v, m=m: lax.polygamma(m, v), [x], order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6
        )
        t = A.jvp(lambda v, m=m: lax.polygamma(m, v), (x,), (np.ones(3),))[1]
        np.testing.assert_allclose(_np(t), sp.polygamma(int(m) + 1, x), rtol=1e-10)
    # Third derivative of lgamma is polygamma(2): lgamma -> digamma -> polygamma(1) -> polygamma(2).
    d3 = A.grad(A.grad(A.grad(lax.lgamma)))(np.float64(2.5))
    assert float(d3) == pytest.approx(sp.polygamma(2, 2.5), rel=1e-10)


def test_polygamma_special_values():
    got = _np(lax.polygamma(np.array([1.0, 2.0, 0.0, 0.5, -1.0]), np.array([-1.0, -2.0, 0.0, 1.0, 1.0])))
    assert got[0] == np.inf and np.isnan(got[1:]).all()


def test_polygamma_order_has_no_derivative():
    with pytest.raises(ValueError, match="order m"):
        A.jvp(lambda m: lax.polygamma(m, 2.0), (np.float64(1.0),), (np.float64(1.0),))


# ---------------------------------------------------------------------------------------------
# JAX's conventions at kinks and special points.


def test_abs_conventions():
    # Real: select(x >= 0, g, -g), so the slope is +1 at 0 and -0.0.
    assert float(A.grad(lax.abs)(np.float64(0.0))) == 1.0
    assert float(A.grad(lax.abs)(np.float64(-0.0))) == 1.0
    assert float(A.grad(lax.abs)(np.float64(-2.0))) == -1.0
    # Complex: real(conj(x) t) / |x|, zero at 0; the gradient is conj(x) / |x| (not conjugated back).
    assert complex(A.vjp(lax.abs, np.complex128(3 + 4j))[1](1.0)[0]) == pytest.approx(0.6 - 0.8j)
    t = A.jvp(lax.abs, (np.complex128(0),), (np.complex128(1 + 1j),))[1]
    assert _np(t).dtype == np.float64 and float(t) == 0.0
    # Integer abs: float0 tangent.
    t = A.jvp(lax.abs, (np.array([-2, 3], np.int32),), (np.zeros(2, _dtypes.float0),))[1]
    assert _np(t).dtype == _dtypes.float0


@pytest.mark.parametrize("op", [lax.max, lax.min])
def test_max_min_split_ties(op):
    gx, gy = A.grad(op, argnums=(0, 1))(np.float64(1.5), np.float64(1.5))
    assert (float(gx), float(gy)) == (0.5, 0.5)
    x, y = np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])
    tx, ty = A.vjp(op, x, y)[1](np.ones(3))
    pick_x = (x > y) if op is lax.max else (x < y)
    np.testing.assert_array_equal(_np(tx), np.where(x == y, 0.5, pick_x.astype(float)))
    np.testing.assert_array_equal(_np(ty), np.where(x == y, 0.5, (~pick_x).astype(float)))


def test_pow_at_zero_base():
    # y-derivative log(x) x**y is 0 (not nan) at x == 0; the x-derivative y x**(y-1) is 0 for y > 1.
    gx, gy = A.grad(lax.pow, argnums=(0, 1))(np.float64(0.0), np.float64(2.0))
    assert (float(gx), float(gy)) == (0.0, 0.0)
    # Complex base with a complex exponent.
    z, w = np.complex128(1.2 + 0.5j), np.complex128(0.7 - 0.3j)
    check_grads(lax.pow, [z, w], order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)


def test_pow_integer_exponent():
    y = np.array([0, 1, 2, 3, -2], np.int32)
    x = np.array([0.5, 1.3, -0.7, 2.0, 1.1])
    check_grads(lambda v: lax.pow(v, y), [x], order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    xc = _rand((5,), C, 0.5, 1.5)
    check_grads(lambda v: lax.pow(v, y), [xc], order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    # y == 0 at x == 0: 0 ** 0 = 1 has slope 0, without an inf * 0 (nan) to any order.
    for n in (1, 2, 3):
        f = lambda v: lax.pow(v, np.int32(0))  # noqa: E731
        for _ in range(n):
            f = A.grad(f)
        assert float(f(np.float64(0.0))) == 0.0
    assert float(A.grad(lambda v: lax.pow(v, np.int32(1)))(np.float64(0.0))) == 1.0
    # The integer exponent itself gets a float0 tangent.
    _, t = A.jvp(lambda v, e: lax.pow(v, e), (x, y), (np.ones(5), np.zeros(5, _dtypes.float0)))
    np.testing.assert_allclose(_np(t), np.where(y == 0, 0.0, y * x ** (y - 1.0)))


def test_integer_pow_zero_exponent_is_symbolic_zero():
    _, f_jvp = A.linearize(lambda v: lax.integer_pow(v, 0), np.array([0.0, 2.0]))
    assert not f_jvp.jaxpr.jaxpr.eqns
    np.testing.assert_array_equal(_np(f_jvp(np.ones(2))), np.zeros(2))


def test_rem_derivatives():
    x = np.array([2.3, -2.3, 5.5, 0.4])
    y = np.array([1.0, 1.1, -2.0, 3.0])
    check_grads(lax.rem, [x, y], order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    gx, gy = A.vjp(lax.rem, x, y)[1](np.ones(4))
    np.testing.assert_array_equal(_np(gx), np.ones(4))
    np.testing.assert_array_equal(_np(gy), -np.trunc(x / y))


# ---------------------------------------------------------------------------------------------
# Binary functions.

BINARY = [
    ("add", lax.add, (-2, 2), (-2, 2), True),
    ("sub", lax.sub, (-2, 2), (-2, 2), True),
    ("mul", lax.mul, (-2, 2), (-2, 2), True),
    ("div", lax.div, (-2, 2), (0.5, 2), True),
    ("pow", lax.pow, (0.5, 2), (-2, 2), True),
    ("atan2", lax.atan2, (-2, 2), (0.5, 2), False),
    ("max", lax.max, (-2, 2), (-2, 2), False),
    ("min", lax.min, (-2, 2), (-2, 2), False),
    ("complex", lax.complex, (-2, 2), (-2, 2), False),
]
BROADCAST_SHAPES = [((3,), (3,)), ((), (2, 3)), ((2, 3), ()), ((1, 3), (2, 3)), ((2, 1), (1, 3))]


def _binary_params():
    out = []
    for name, fn, dx, dy, cplx in BINARY:
        for sx, sy in BROADCAST_SHAPES:
            out.append(pytest.param(fn, dx, dy, R, sx, sy, id=f"{name}-float64-{sx}-{sy}"))
        if cplx:
            out.append(pytest.param(fn, dx, dy, C, (3,), (3,), id=f"{name}-complex128"))
    return out


@pytest.mark.parametrize("fn,dx,dy,dtype,sx,sy", _binary_params())
def test_binary(fn, dx, dy, dtype, sx, sy):
    x, y = _rand(sx, dtype, *dx), _rand(sy, dtype, *dy)
    check_grads(fn, [x, y], order=2, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    # Cotangents are summed back down to each operand's shape and keep its dtype.
    out, pullback = A.vjp(fn, x, y)
    cx, cy = pullback(_rand(_np(out).shape, _np(out).dtype))
    assert (_np(cx).shape, _np(cx).dtype) == (x.shape, x.dtype)
    assert (_np(cy).shape, _np(cy).dtype) == (y.shape, y.dtype)


@pytest.mark.parametrize("fn", [lax.mul, lax.div, lax.atan2, lax.sub])
def test_binary_third_order(fn):
    x, y = _rand((2,), R, 0.5, 2), _rand((2,), R, 0.5, 2)
    check_grads(fn, [x, y], order=3, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_float32_and_weak_scalars_keep_dtypes():
    x = np.array([0.5, 1.5], np.float32)
    with morphax.enable_x64(False):
        g = A.vjp(lambda v: lax.mul(lax.sin(v), 2.0), x)[1](np.ones(2, np.float32))[0]
        assert _np(g).dtype == np.float32
        np.testing.assert_allclose(_np(g), 2 * np.cos(x), rtol=1e-6)
        h = A.vjp(lax.exp, x.astype(np.float16))[1](np.ones(2, np.float16))[0]
        assert _np(h).dtype == np.float16


# ---------------------------------------------------------------------------------------------
# Linear primitives: transposes, and symbolic zeros that stay symbolic.


def test_linear_transposes():
    x = _rand((2, 3), R)
    z = _rand((2, 3), C)
    _check_transpose(lax.neg, [x], x)
    _check_transpose(lax.neg, [z], z)
    _check_transpose(lax.real, [z], x)
    _check_transpose(lax.imag, [z], x)
    _check_transpose(lax.conj, [z], z)
    _check_transpose(lax.conj, [x], z)  # a float input widened to complex: cotangent real(ct)
    _check_transpose(lax.complex, [x, x], z)
    _check_transpose(lax.complex, [_rand((), R), _rand((2, 3), R)], z)
    _check_transpose(lax.add, [_rand((1, 3), R), x], x)
    _check_transpose(lax.sub, [x, _rand((), R)], x)
    _check_transpose(lax.sub, [_rand((2, 1), C), _rand((1, 3), C)], z)
    y, w = _rand((1, 3), R), _rand((2, 1), C)
    _check_transpose(lambda v: lax.mul(v, y), [x], x)
    _check_transpose(lambda v: lax.mul(w, v), [z], z)
    _check_transpose(lambda v: lax.div(v, w), [_rand((), C)], w)


def test_transposes_do_not_conjugate():
    # JAX's convention: mul's transpose with respect to x is ct * y; real's is complex(ct, 0),
    # imag's complex(0, -ct), complex's (real(ct), -imag(ct)).
    y = np.complex128(1 - 2j)
    (ct_x,) = A.linear_transpose(lambda v: lax.mul(v, y), np.complex128(0))(np.complex128(3 + 1j))
    assert complex(ct_x) == (3 + 1j) * (1 - 2j)
    (g,) = A.linear_transpose(lax.real, np.complex128(0))(np.float64(2.0))
    assert complex(g) == 2.0
    (g,) = A.linear_transpose(lax.imag, np.complex128(0))(np.float64(2.0))
    assert complex(g) == -2.0j
    gx, gy = A.linear_transpose(lax.complex, np.float64(0), np.float64(0))(np.complex128(3 + 5j))
    assert (float(gx), float(gy)) == (3.0, -5.0)
    (g,) = A.linear_transpose(lax.conj, np.complex128(0))(np.complex128(3 + 5j))
    assert complex(g) == 3 - 5j


def test_zero_tangents_stay_symbolic():
    c = np.ones(3)
    # add/sub with a constant operand: the tangent passes through, no dense zeros added.
    for op in (lax.add, lax.sub):
        _, f_jvp = A.linearize(lambda v, op=op: op(v, c), np.zeros(3))
        assert not f_jvp.jaxpr.jaxpr.eqns
    _, f_jvp = A.linearize(lambda v: lax.sub(c, v), np.zeros(3))
    assert [e.primitive.name for e in f_jvp.jaxpr.jaxpr.eqns] == ["neg"]
    _, f_jvp = A.linearize(lambda v: lax.mul(v, c), np.zeros(3))
    assert [e.primitive.name for e in f_jvp.jaxpr.jaxpr.eqns] == ["mul"]
    _, f_jvp = A.linearize(lambda v: lax.complex(v, c), np.zeros(3))
    np.testing.assert_array_equal(_np(f_jvp(np.full(3, 2.0))), np.full(3, 2.0 + 0j))
    # A scalar operand of a broadcasting add: the tangent is broadcast, not added to zeros.
    _, f_jvp = A.linearize(lambda v: lax.add(v, np.ones((2, 3))), np.float64(0))
    assert [e.primitive.name for e in f_jvp.jaxpr.jaxpr.eqns] == ["broadcast_in_dim"]
    # Both operands linear: one add of the two tangents.
    _, f_jvp = A.linearize(lax.add, np.zeros(3), np.zeros(3))
    assert [e.primitive.name for e in f_jvp.jaxpr.jaxpr.eqns] == ["add"]


def test_mul_transpose_rejects_two_linear_operands():
    from morphax._src.core.ad_util import UndefinedPrimal
    from morphax._src.core.avals import ShapedArray
    from morphax._src.prims.arithmetic import mul_p

    a = UndefinedPrimal(ShapedArray((3,), np.dtype(np.float64), False))
    with pytest.raises(ValueError, match="both operands linear"):
        mul_p.transpose(np.ones(3), a, a)


# ---------------------------------------------------------------------------------------------
# Zero-derivative primitives.


@pytest.mark.parametrize(
    "fn",
    [lax.floor, lax.ceil, lax.round, lax.sign, lambda v: lax.round(v, lax.RoundingMethod.TO_NEAREST_EVEN)],
)
def test_piecewise_constant_have_zero_derivative(fn):
    x = np.array([0.3, 1.7, -2.2])
    _, t = A.jvp(fn, (x,), (np.ones(3),))
    np.testing.assert_array_equal(_np(t), np.zeros(3))
    # In a product only the other factor's derivative remains: d/dx floor(x) * x = floor(x).
    g = A.vjp(lambda v: lax.mul(fn(v), v), x)[1](np.ones(3))[0]
    np.testing.assert_array_equal(_np(g), _np(fn(x)))


def test_nextafter_has_zero_derivative():
    x = np.array([0.3, 1.7])
    _, t = A.jvp(lambda v: lax.nextafter(v, np.zeros(2)), (x,), (np.ones(2),))
    np.testing.assert_array_equal(_np(t), np.zeros(2))


@pytest.mark.parametrize("op", [lax.eq, lax.ne, lax.lt, lax.le, lax.gt, lax.ge])
def test_comparisons_have_float0_tangents(op):
    x = np.array([0.3, 1.7])
    _, t = A.jvp(lambda v: op(v, 1.0), (x,), (np.ones(2),))
    assert _np(t).dtype == _dtypes.float0 and _np(t).shape == (2,)
    _, t = A.jvp(lambda v: lax.is_finite(v), (x,), (np.ones(2),))
    assert _np(t).dtype == _dtypes.float0
    # Used as a mask: only the masked value's derivative flows.
    g = A.grad(lambda v: lax.mul(lax.convert_element_type(op(v, 1.0), np.float64), lax.sin(v)))(
        np.float64(0.5)
    )
    assert float(g) == pytest.approx(float(_np(op(0.5, 1.0))) * np.cos(0.5))


def test_integer_and_bool_primitives():
    i, j = np.array([3, 5], np.int32), np.array([1, 2], np.int32)
    f0 = np.zeros(2, _dtypes.float0)
    fns = [lax.bitwise_and, lax.bitwise_or, lax.bitwise_xor, lax.shift_left, lax.shift_right_logical]
    fns += [lax.shift_right_arithmetic, lax.add, lax.sub, lax.mul, lax.div, lax.rem, lax.max]
    for fn in fns:
        _, t = A.jvp(fn, (i, j), (f0, f0))
        assert _np(t).dtype == _dtypes.float0
    for fn in (lax.bitwise_not, lax.population_count, lax.clz, lax.neg, lambda v: lax.integer_pow(v, 2)):
        _, t = A.jvp(fn, (i,), (f0,))
        assert _np(t).dtype == _dtypes.float0
    # The rules themselves give symbolic zeros (reached when a float0 tangent is not pruned first).
    from morphax._src.core.ad_util import Zero
    from morphax._src.prims import bitwise, compare, unary

    for prim, args in (
        (bitwise.and_p, (i, j)),
        (bitwise.shift_left_p, (i, j)),
        (unary.population_count_p, (i,)),
        (unary.clz_p, (i,)),
        (unary.not_p, (i,)),
        (compare.lt_p, (i, j)),
    ):
        out, t = prim.jvp(args, [np.zeros(2, _dtypes.float0)] * len(args))
        assert isinstance(t, Zero) and t.aval.dtype == _dtypes.float0
