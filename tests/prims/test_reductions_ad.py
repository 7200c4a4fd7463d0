"""Derivative rules of the reductions, cumulative scans and dot_general: JVPs against float64
central finite differences, VJPs against JVPs by the inner-product identity, transposes of the
linear ones, second order, and hand-computed values where the rule makes a choice (ties of
max/min, zeros in products, -inf in cumlogsumexp, dtypes of dot_general cotangents)."""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.api import autodiff as A
from morphax.test_util import check_grads

RNG = np.random.default_rng(1)


@pytest.fixture(autouse=True)
def _x64():
    with morphax.enable_x64():
        yield


def _rand(shape, lo=-2.0, hi=2.0, dtype=np.float64):
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return (RNG.uniform(lo, hi, shape) + 1j * RNG.uniform(lo, hi, shape)).astype(dt)
    return RNG.uniform(lo, hi, shape).astype(dt)


def _num(x):
    return np.asarray(x)


def _pair(a, b):
    return float(np.real(np.sum(np.asarray(a) * np.asarray(b))))


def _fd(f, args, tangents, eps=1e-6):
    plus = [a + eps * t for a, t in zip(args, tangents)]
    minus = [a - eps * t for a, t in zip(args, tangents)]
    return (_num(f(*plus)) - _num(f(*minus))) / (2 * eps)


def check_first_order(f, args, rtol=1e-6, atol=1e-7):
    """JVP against finite differences, each operand's VJP against the JVP (inner-product identity),
    cotangents of exactly the operands' shapes and dtypes."""
    args = tuple(np.asarray(a) for a in args)
    tangents = tuple(_rand(np.shape(a), dtype=a.dtype) for a in args)
    out, out_t = A.jvp(f, args, tangents)
    np.testing.assert_allclose(_num(out), _num(f(*args)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_num(out_t), _fd(f, args, tangents), rtol=rtol, atol=atol)
    _, pullback = A.vjp(f, *args)
    ct = _rand(_num(out).shape, dtype=_num(out).dtype)
    cts = pullback(ct)
    for i, (a, c) in enumerate(zip(args, cts)):
        assert _num(c).shape == a.shape and _num(c).dtype == a.dtype, (i, _num(c).shape, _num(c).dtype)
        only = tuple(t if j == i else np.zeros_like(t) for j, t in enumerate(tangents))
        _, jt = A.jvp(f, args, only)
        np.testing.assert_allclose(_pair(c, tangents[i]), _pair(ct, jt), rtol=1e-9, atol=1e-9)
    return cts


# ------------------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 2), (2, 0, 1), ()])
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
def test_monoid_reductions(op, axes):
    f = lambda x: getattr(lax, op)(x, axes)  # noqa: E731
    x = _rand((2, 3, 4), 0.6, 1.4)
    check_first_order(f, (x,))
    check_grads(f, (x,), order=2, atol=1e-5, rtol=1e-5)


def test_reduce_sum_transpose_and_complex():
    x = _rand((2, 3))
    (back,) = A.linear_transpose(lambda x: lax.reduce_sum(x, (1,)), x)(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(_num(back), [[1.0] * 3, [2.0] * 3])
    z = _rand((2, 3), dtype=np.complex128)
    check_first_order(lambda z: lax.reduce_sum(z, (0,)), (z,))
    check_first_order(lambda z: lax.reduce_prod(z, (1,)), (z,))


def test_reduce_max_min_ties_share_equally():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    g = A.grad(lambda x: jnp.sum(lax.reduce_max(x, (1,)) * jnp.array([1.0, 10.0])))(x)
    np.testing.assert_allclose(_num(g), [[0, 0.5, 0.5, 0], [2.5, 2.5, 2.5, 2.5]])
    g = A.grad(lambda x: jnp.sum(lax.reduce_min(x, (0, 1))))(x)
    np.testing.assert_allclose(_num(g), [[0, 0, 0, 1.0], [0, 0, 0, 0]])
    g = A.grad(lambda x: jnp.max(x))(np.array([1.0, 4.0, 4.0, 4.0]))
    np.testing.assert_allclose(_num(g), [0, 1 / 3, 1 / 3, 1 / 3])


def test_reduce_max_grad_of_grad():
    x = np.array([0.3, 1.2, -0.7])
    f = lambda x: lax.reduce_max(jnp.sin(x) * x, (0,))  # noqa: E731
    h = A.grad(lambda x: jnp.sum(A.grad(f)(x) * jnp.array([1.0, 2.0, 3.0])))(x)
    # Only x[1] is the max: d2/dx2 of sin(x) x = 2 cos x - x sin x.
    np.testing.assert_allclose(_num(h), [0.0, 2 * (2 * np.cos(1.2) - 1.2 * np.sin(1.2)), 0.0])


def test_reduce_prod_with_zeros_is_exact():
    x = np.array([[2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 1.0], [1.5, 2.0, -1.0, 0.5]])
    g = A.grad(lambda x: jnp.sum(lax.reduce_prod(x, (1,))))(x)
    want = np.array([[0.0, 24.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [-1.0, -0.75, 1.5, -3.0]])
    np.testing.assert_allclose(_num(g), want)
    check_first_order(lambda x: lax.reduce_prod(x, (1,)), (x,))
    y = np.array([[1.5, 0.0, 0.8], [1.2, -0.9, 1.1]])  # one zero: second derivatives are nonzero
    check_grads(lambda y: lax.reduce_prod(y, (0, 1)), (y,), order=2, atol=1e-6, rtol=1e-6)
    # The Hessian at a point with two zeros: d2/dx_i dx_j prod = prod of the rest.
    v = np.array([0.0, 2.0, 0.0, 3.0])
    hess = _num(A.jacfwd(A.grad(lambda v: lax.reduce_prod(v, (0,))))(v))
    want = np.zeros((4, 4))
    want[0, 2] = want[2, 0] = 6.0
    np.testing.assert_allclose(hess, want)


def test_integer_reductions_and_arg_extrema_have_zero_tangent():
    x = _rand((3, 4))
    for f in (
        lambda x: lax.argmax(x, 1, np.int32),
        lambda x: lax.argmin(x, 0, np.int32),
        lambda x: lax.reduce_or(x > 0, (0,)),
        lambda x: lax.reduce_and(x > 0, (1,)),
        lambda x: lax.reduce_xor(lax.convert_element_type(x, np.int32), (1,)),
    ):
        _, t = A.jvp(f, (x,), (np.ones_like(x),))
        assert _num(t).dtype == morphax.dtypes.float0
    g = A.grad(lambda x: jnp.sum(x.T * lax.convert_element_type(lax.argmax(x, 1, np.int32), x.dtype)))(x)
    np.testing.assert_allclose(_num(g), np.broadcast_to(np.argmax(x, 1)[:, None], x.shape))


# ---------------------------------------------------------------------------------------- scans


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
def test_scans(op, reverse):
    for shape, axis in (((7,), 0), ((3, 5), 1), ((4, 2), 0), ((1,), 0)):
        f = lambda x: getattr(lax, op)(x, axis, reverse)  # noqa: B023, E731
        x = _rand(shape, 0.5, 2.0) * RNG.choice([-1.0, 1.0], shape)
        check_first_order(f, (x,))
    check_grads(f, (x,), order=2, atol=1e-5, rtol=1e-5)
    x = _rand((2, 6), 0.5, 2.0)
    check_grads(lambda x: getattr(lax, op)(x, 1, reverse), (x,), order=2, atol=1e-5, rtol=1e-5)


def test_cumsum_transpose_is_reverse_cumsum():
    ct = np.array([1.0, 2.0, 3.0, 4.0])
    (back,) = A.linear_transpose(lambda x: lax.cumsum(x, 0), np.zeros(4))(ct)
    np.testing.assert_allclose(_num(back), [10.0, 9.0, 7.0, 4.0])
    (back,) = A.linear_transpose(lambda x: lax.cumsum(x, 0, reverse=True), np.zeros(4))(ct)
    np.testing.assert_allclose(_num(back), [1.0, 3.0, 6.0, 10.0])
    z = _rand((2, 3), dtype=np.complex128)
    check_first_order(lambda z: lax.cumsum(z, 1), (z,))
    check_first_order(lambda z: lax.cumprod(z, 1), (z,))


def test_cumprod_with_zeros_is_exact():
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])
    jac = _num(A.jacfwd(lambda x: lax.cumprod(x, 0))(x))
    want = np.zeros((5, 5))
    for i in range(5):
        for j in range(i + 1):
            want[i, j] = np.prod([x[k] for k in range(i + 1) if k != j])
    np.testing.assert_allclose(jac, want)
    np.testing.assert_allclose(_num(A.jacrev(lambda x: lax.cumprod(x, 0))(x)), want)
    check_grads(lambda x: lax.cumprod(x, 0, True), (x,), order=2, atol=1e-6, rtol=1e-6)


def test_cummax_follows_the_running_maximum():
    x = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    jac = _num(A.jacfwd(lambda x: lax.cummax(x, 0))(x))
    want = np.zeros((5, 5))
    for i, j in enumerate([0, 1, 1, 3, 3]):
        want[i, j] = 1.0
    np.testing.assert_allclose(jac, want)
    jac = _num(A.jacrev(lambda x: lax.cummin(x, 0, reverse=True))(x))
    want = np.zeros((5, 5))
    for i, j in enumerate([0, 2, 2, 4, 4]):
        want[i, j] = 1.0
    np.testing.assert_allclose(jac, want)
    # Ties: the weights over the tied elements are a convex combination.
    jac = _num(A.jacfwd(lambda x: lax.cummax(x, 0))(np.array([2.0, 2.0, 1.0])))
    np.testing.assert_allclose(jac.sum(1), 1.0)
    assert jac[2, 2] == 0.0


def test_cumlogsumexp_stable():
    x = np.array([-np.inf, -1000.0, 0.0, 1000.0, -np.inf, 3.0])
    _, t = A.jvp(lambda x: lax.cumlogsumexp(x, 0), (x,), (np.ones(6),))
    assert np.all(np.isfinite(_num(t)))
    # d out_i / dx_j = softmax(x[:i+1])_j: a tangent of ones gives exactly 1 once anything is finite.
    np.testing.assert_allclose(_num(t)[1:], 1.0)
    w = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    g = A.grad(lambda x: jnp.sum(lax.cumlogsumexp(x, 0) * w[::-1]))(np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]))
    p = np.exp(np.arange(6.0))
    np.testing.assert_allclose(_num(g), p / p.sum(), rtol=1e-12)


# ------------------------------------------------------------------------------------ dot_general

DOT_CONFIGS = [
    ("mm", (2, 3), (3, 4), (((1,), (0,)), ((), ()))),
    ("mTm", (3, 2), (3, 4), (((0,), (0,)), ((), ()))),
    ("outer", (2,), (3,), (((), ()), ((), ()))),
    ("vv", (3,), (3,), (((0,), (0,)), ((), ()))),
    ("bmm", (5, 2, 3), (5, 3, 4), (((2,), (1,)), ((0,), (0,)))),
    ("moved-batch", (2, 5, 3), (3, 4, 5), (((2,), (0,)), ((1,), (2,)))),
    ("two-contract-unsorted", (2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ()))),
    ("two-batch-swapped", (2, 3, 4, 6), (4, 6, 2, 7), (((2,), (0,)), ((3, 0), (1, 2)))),
    ("batch-only", (4, 3), (4, 3), (((), ()), ((0, 1), (0, 1)))),
]


@pytest.mark.parametrize("name,ls,rs,dn", DOT_CONFIGS, ids=[c[0] for c in DOT_CONFIGS])
def test_dot_general(name, ls, rs, dn):
    f = lambda a, b: lax.dot_general(a, b, dn)  # noqa: E731
    a, b = _rand(ls), _rand(rs)
    check_first_order(f, (a, b))
    # Linear in each operand: the transpose against the JVP.
    for i in (0, 1):
        lin = (lambda x: f(x, b)) if i == 0 else (lambda y: f(a, y))
        t = _rand((ls, rs)[i])
        y = _num(lin(t))
        ct = _rand(y.shape)
        (back,) = A.linear_transpose(lin, (a, b)[i])(ct)
        np.testing.assert_allclose(_pair(back, t), _pair(ct, y), rtol=1e-10)
    check_grads(lambda a, b: f(jnp.sin(a), b), (a, b), order=2, atol=1e-5, rtol=1e-5)


def test_dot_general_grad_of_grad():
    a, b = _rand((2, 3)), _rand((3, 2))
    # f = sum((a @ b)^2); d2f/da2 applied to a: 2 * (a b) b^T.
    f = lambda a: jnp.sum(lax.dot(a, b) ** 2)  # noqa: E731
    hv = A.grad(lambda a: jnp.sum(A.grad(f)(a) * a))(a)
    np.testing.assert_allclose(_num(hv), 4 * (a @ b) @ b.T, rtol=1e-12)


def test_dot_general_cotangent_dtypes():
    mm = (((1,), (0,)), ((), ()))
    a32, b32 = _rand((2, 3), dtype=np.float32), _rand((3, 4), dtype=np.float32)
    # preferred_element_type widens the output; the cotangents come back in the operand dtypes.
    f = lambda a, b: lax.dot_general(a, b, mm, preferred_element_type=np.float64)  # noqa: E731
    out, pull = A.vjp(f, a32, b32)
    assert _num(out).dtype == np.float64
    ga, gb = pull(np.ones((2, 4)))
    assert _num(ga).dtype == np.float32 and _num(gb).dtype == np.float32
    np.testing.assert_allclose(_num(ga), np.ones((2, 4)) @ b32.T.astype(np.float64), rtol=1e-6)
    # Mixed dtypes: a float32 lhs with an int rhs (no tangent) and a real lhs with a complex rhs.
    bi = np.arange(12, dtype=np.int32).reshape(3, 4)
    ga = A.grad(lambda a: jnp.sum(lax.dot_general(a, bi, mm)))(a32)
    assert _num(ga).dtype == np.float32
    np.testing.assert_allclose(_num(ga), np.ones((2, 4)) @ bi.T)
    bc = _rand((3, 4), dtype=np.complex128)
    a64 = _rand((2, 3))
    ga = A.grad(lambda a: jnp.sum(lax.dot_general(a, bc, mm)).real)(a64)
    assert _num(ga).dtype == np.float64
    np.testing.assert_allclose(_num(ga), np.ones((2, 4)) @ bc.T.real, rtol=1e-12)
    check_first_order(lambda a, b: lax.dot_general(a, b, mm), (_rand((2, 3), dtype=np.complex128), bc))


def test_jnp_level_reductions():
    x = np.array([[1.0, 2.0, 0.0], [3.0, -1.0, 2.0]])
    np.testing.assert_allclose(_num(A.grad(lambda x: jnp.sum(x * x))(x)), 2 * x)
    np.testing.assert_allclose(_num(A.grad(lambda x: jnp.prod(x))(x)), [[0, 0, -12.0], [0, 0, 0]])
    np.testing.assert_allclose(_num(A.grad(lambda x: jnp.sum(jnp.max(x, axis=0)))(x)), [[0, 1, 0], [1, 0, 1]])
    g = A.grad(lambda x: jnp.sum(jnp.cumsum(x, axis=1)))(x)
    np.testing.assert_allclose(_num(g), [[3, 2, 1.0], [3, 2, 1.0]])
    w = np.array([[1.0], [2.0], [3.0]])
    np.testing.assert_allclose(_num(A.grad(lambda x: jnp.sum(jnp.matmul(x, w)))(x)), np.ones((2, 1)) @ w.T)
