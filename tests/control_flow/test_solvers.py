"""`lax.custom_linear_solve` and `lax.custom_root`: values against NumPy; derivatives against finite
differences (check_grads, orders 1 and 2, forward and reverse) and against the closed forms
(d solve(A, b) = A^-1 (db - dA x); d sqrt(a) = 1 / (2 sqrt(a))); vmap against a Python loop; jit,
grad of jit and jit of grad; pytrees, aux outputs, and JAX's errors. The solvers used (conjugate
gradients and Newton in `while_loop`) are not differentiable themselves: only the implicit rules are.
"""

from __future__ import annotations

import numpy as np
import pytest

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.higher_order.solvers import custom_linear_solve_p, custom_root_p
from morphax.test_util import check_grads

RNG = np.random.default_rng(0)
N = 4
_M = RNG.normal(size=(N, N)).astype(np.float32)
SPD = (_M @ _M.T + N * np.eye(N)).astype(np.float32)
NONSYM = (SPD + np.triu(RNG.normal(size=(N, N)), 1)).astype(np.float32)
B = RNG.normal(size=N).astype(np.float32)


def close(got, want, rtol=1e-4, atol=1e-5):
    g, w = morphax.tree.leaves(got), morphax.tree.leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------------------- solvers


def cg(matvec, b):
    """Conjugate gradients in a while_loop (not reverse-differentiable on its own)."""
    n = b.shape[0]
    tiny = jnp.asarray(1e-30, b.dtype)

    def cond(c):
        i, _, _, _, rr = c
        return (i < 3 * n) & (rr > tiny)

    def body(c):
        i, x, r, p, rr = c
        ap = matvec(p)
        alpha = rr / jnp.vdot(p, ap)
        x = x + alpha * p
        r = r - alpha * ap
        rr_new = jnp.vdot(r, r)
        p = r + (rr_new / rr) * p
        return i + 1, x, r, p, rr_new

    x0 = jnp.zeros_like(b)
    init = (0, x0, b, b, jnp.vdot(b, b))
    return lax.while_loop(cond, body, init)[1]


def spd_solve(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, cg, symmetric=True)


def explicit_solve(a, b):
    """Any matrix, solved directly; the transpose system with a.T."""
    return lax.custom_linear_solve(
        lambda x: jnp.dot(a, x),
        b,
        lambda mv, y: jnp.linalg.solve(a, y),
        transpose_solve=lambda vm, y: jnp.linalg.solve(a.T, y),
    )


def vecmat_solve(a, b):
    """transpose_solve solving with the automatically transposed matvec (by CG on vm∘mv)."""

    def tsolve(vm, y):
        # Checks vecmat: vm(x) must equal a.T @ x.
        return jnp.linalg.solve(a.T, y) + 0.0 * (vm(y) - a.T @ y)

    return lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, y: jnp.linalg.solve(a, y), tsolve)


# ------------------------------------------------------------------------------ custom_linear_solve


@pytest.mark.parametrize("fn,a", [(spd_solve, SPD), (explicit_solve, NONSYM), (vecmat_solve, NONSYM)])
def test_linear_solve_values_and_jit(fn, a):
    want = np.linalg.solve(a.astype(np.float64), B)
    close(fn(a, B), want)
    close(morphax.jit(fn)(a, B), want)


@pytest.mark.parametrize("fn,a", [(spd_solve, SPD), (explicit_solve, NONSYM), (vecmat_solve, NONSYM)])
def test_linear_solve_check_grads(fn, a):
    check_grads(fn, (a, B), order=2, modes=("fwd", "rev"), atol=5e-3, rtol=5e-3)


def test_linear_solve_closed_form_derivatives():
    a, b = NONSYM.astype(np.float64), B.astype(np.float64)
    x = np.linalg.solve(a, b)
    da = RNG.normal(size=(N, N))
    db = RNG.normal(size=N)
    _, t = morphax.jvp(explicit_solve, (NONSYM, B), (da.astype(np.float32), db.astype(np.float32)))
    close(t, np.linalg.solve(a, db - da @ x), rtol=1e-3, atol=1e-4)
    # Reverse: d<c, x>/db = A^-T c and d<c, x>/dA = -(A^-T c) x^T.
    c = RNG.normal(size=N)
    ga, gb = morphax.grad(lambda a_, b_: jnp.vdot(c.astype(np.float32), explicit_solve(a_, b_)), (0, 1))(
        NONSYM, B
    )
    lam = np.linalg.solve(a.T, c)
    close(gb, lam, rtol=1e-3, atol=1e-4)
    close(ga, -np.outer(lam, x), rtol=1e-3, atol=1e-4)


def test_linear_solve_matches_differentiating_the_direct_solve():
    f1 = morphax.grad(lambda a: spd_solve(a, B).sum())
    f2 = morphax.grad(lambda a: jnp.linalg.solve(a, B).sum())
    close(f1(SPD), f2(SPD), rtol=1e-3, atol=1e-4)
    h1 = morphax.jacfwd(morphax.grad(lambda b: (spd_solve(SPD, b) ** 2).sum()))(B)
    h2 = morphax.jacfwd(morphax.grad(lambda b: (jnp.linalg.solve(SPD, b) ** 2).sum()))(B)
    close(h1, h2, rtol=1e-3, atol=1e-4)


def test_linear_solve_vmap_matches_loop():
    bs = RNG.normal(size=(3, N)).astype(np.float32)
    as_ = np.stack([SPD, SPD + np.eye(N, dtype=np.float32), 2 * SPD])
    for in_axes, args in (((None, 0), (SPD, bs)), ((0, None), (as_, B)), ((0, 0), (as_, bs))):
        got = morphax.vmap(spd_solve, in_axes=in_axes)(*args)
        loop = [spd_solve(*[a if ax is None else a[i] for a, ax in zip(args, in_axes)]) for i in range(3)]
        close(got, np.stack(loop))
    # vmap of grad and grad of vmap
    g1 = morphax.vmap(morphax.grad(lambda a, b: spd_solve(a, b).sum()))(as_, bs)
    g2 = np.stack([morphax.grad(lambda a, b: spd_solve(a, b).sum())(as_[i], bs[i]) for i in range(3)])
    close(g1, g2, rtol=1e-3, atol=1e-4)
    g3 = morphax.grad(lambda a: morphax.vmap(spd_solve, in_axes=(None, 0))(a, bs).sum())(SPD)
    g4 = sum(morphax.grad(lambda a, b: spd_solve(a, b).sum())(SPD, bs[i]) for i in range(3))
    close(g3, g4, rtol=1e-3, atol=1e-4)


def test_linear_solve_grad_of_jit_and_jit_of_grad():
    f = lambda a, b: (explicit_solve(a, b) ** 2).sum()  # noqa: E731
    want = morphax.grad(f, (0, 1))(NONSYM, B)
    close(morphax.grad(morphax.jit(f), (0, 1))(NONSYM, B), want)
    close(morphax.jit(morphax.grad(f, (0, 1)))(NONSYM, B), want)


def test_linear_solve_is_one_equation_and_its_tangent_another():
    jaxpr = morphax.make_jaxpr(spd_solve)(SPD, B)
    assert [e.primitive for e in jaxpr.jaxpr.eqns] == [custom_linear_solve_p]
    lin = morphax.make_jaxpr(lambda b: morphax.linearize(lambda b_: spd_solve(SPD, b_), b)[1](b))(B)
    assert "custom_linear_solve" in str(lin)


def test_linear_solve_pytree_and_aux():
    scale = {"u": np.float32(2.0), "v": np.arange(1.0, 4.0, dtype=np.float32)}
    b = {"u": np.float32(3.0), "v": np.ones(3, np.float32)}

    def solve(mv, y):
        return {"u": y["u"] / scale["u"], "v": y["v"] / scale["v"]}, {"iters": 1}

    def f(s, y):
        return lax.custom_linear_solve(
            lambda x: {"u": s["u"] * x["u"], "v": s["v"] * x["v"]}, y, solve, symmetric=True, has_aux=True
        )

    x, aux = f(scale, b)
    close(x, {"u": 1.5, "v": 1.0 / scale["v"]})
    assert int(aux["iters"]) == 1
    g = morphax.grad(lambda y: f(scale, y)[0]["v"].sum())(b)
    close(g, {"u": 0.0, "v": 1.0 / scale["v"]})


def test_linear_solve_forward_mode_needs_no_transpose_solve():
    f = lambda a, b: lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, y: jnp.linalg.solve(a, y))  # noqa: E731
    _, t = morphax.jvp(f, (NONSYM, B), (np.zeros_like(NONSYM), B))
    close(t, np.linalg.solve(NONSYM.astype(np.float64), B))
    with pytest.raises(TypeError, match="transpose_solve required for backwards mode"):
        morphax.grad(lambda b: f(NONSYM, b).sum())(B)


def test_linear_solve_errors():
    with pytest.raises(TypeError, match=r"matvec\(\) output pytree structure must match b"):
        lax.custom_linear_solve(lambda x: (x, x), B, lambda mv, y: y)
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match b"):
        lax.custom_linear_solve(lambda x: x, B, lambda mv, y: [y])
    with pytest.raises(TypeError, match=r"solve\(\) output shapes and dtypes must match b"):
        lax.custom_linear_solve(lambda x: x, B, lambda mv, y: y[:2])
    with pytest.raises(ValueError, match="has_aux was set to True"):
        lax.custom_linear_solve(lambda x: x, B, lambda mv, y: y, has_aux=True)


# -------------------------------------------------------------------------------------- custom_root


def newton(f, x0):
    # Newton's method with the derivative by forward mode, in a while_loop.
    def body(c):
        i, x = c
        fx, dfx = morphax.jvp(f, (x,), (jnp.ones_like(x),))
        return i + 1, x - fx / dfx

    def cond(c):
        i, x = c
        return (i < 50) & (jnp.abs(f(x)) > 1e-12 * (1 + jnp.abs(x)))

    return lax.while_loop(cond, body, (0, x0))[1]


def scalar_tangent_solve(g, y):
    return y / g(1.0)


def sqrt_root(a):
    return lax.custom_root(lambda x: x**2 - a, 1.0, newton, scalar_tangent_solve)


def test_root_values_jit_and_closed_form_derivatives():
    a = 2.0
    close(sqrt_root(a), np.sqrt(a), rtol=1e-6)
    close(morphax.jit(sqrt_root)(a), np.sqrt(a), rtol=1e-6)
    close(morphax.grad(sqrt_root)(a), 0.5 / np.sqrt(a), rtol=1e-5)
    close(morphax.grad(morphax.grad(sqrt_root))(a), -0.25 * a**-1.5, rtol=1e-4)
    close(morphax.grad(morphax.jit(sqrt_root))(a), 0.5 / np.sqrt(a), rtol=1e-5)
    close(morphax.jit(morphax.grad(sqrt_root))(a), 0.5 / np.sqrt(a), rtol=1e-5)
    assert [e.primitive for e in morphax.make_jaxpr(sqrt_root)(a).jaxpr.eqns] == [custom_root_p]


def test_root_check_grads():
    check_grads(sqrt_root, (np.float32(3.0),), order=2, modes=("fwd", "rev"), atol=5e-3, rtol=5e-3)


def test_root_vmap_matches_loop():
    a = np.array([2.0, 3.0, 5.0], np.float32)
    close(morphax.vmap(sqrt_root)(a), np.sqrt(a), rtol=1e-5)
    g = morphax.vmap(morphax.grad(sqrt_root))(a)
    close(g, np.array([morphax.grad(sqrt_root)(float(v)) for v in a]), rtol=1e-5)
    close(g, 0.5 / np.sqrt(a), rtol=1e-5)


def vector_root(p):
    """Solve x + p * x**3 = c elementwise-coupled through a matrix: f(x) = M x + p x^3 - c."""
    m = SPD
    c = B

    def f(x):
        return m @ x + p * x**3 - c

    def solve(f_, x0):
        def body(c_):
            i, x = c_
            jac = morphax.jacfwd(f_)(x)
            return i + 1, x - jnp.linalg.solve(jac, f_(x))

        return lax.while_loop(lambda c_: c_[0] < 30, body, (0, x0))[1]

    def tangent_solve(g, y):
        return jnp.linalg.solve(morphax.jacfwd(g)(y), y)

    return lax.custom_root(f, jnp.zeros(N, jnp.asarray(p).dtype), solve, tangent_solve)


def test_vector_root_closed_form():
    p = np.float32(0.3)
    x = np.asarray(vector_root(p), np.float64)
    np.testing.assert_allclose(SPD @ x + 0.3 * x**3, B, atol=1e-4)
    # dx/dp = -(M + 3 p diag(x^2))^-1 x^3
    want = -np.linalg.solve(SPD + 3 * 0.3 * np.diag(x**2), x**3)
    close(morphax.jacfwd(vector_root)(p), want, rtol=1e-3, atol=1e-4)
    close(morphax.jacrev(vector_root)(p), want, rtol=1e-3, atol=1e-4)
    check_grads(vector_root, (p,), order=1, modes=("fwd", "rev"), atol=5e-3, rtol=5e-3)


def test_root_with_linear_solve_tangent_and_aux():
    # tangent_solve through custom_linear_solve; solve returning (root, iterations).
    def f_root(a):
        def solve(f, x0):
            def body(c):
                i, x = c
                return i + 1, x - f(x) / (2 * x)

            i, x = lax.while_loop(lambda c: c[0] < 40, body, (0, x0))
            return x, i

        def tangent_solve(g, y):
            return lax.custom_linear_solve(g, y, lambda mv, z: z / mv(1.0), symmetric=True)

        return lax.custom_root(lambda x: x**2 - a, 1.0, solve, tangent_solve, has_aux=True)

    x, iters = f_root(9.0)
    close(x, 3.0, rtol=1e-6)
    assert int(iters) == 40
    close(morphax.grad(lambda a: f_root(a)[0])(9.0), 1 / 6, rtol=1e-5)
    close(morphax.grad(morphax.grad(lambda a: f_root(a)[0]))(9.0), -0.25 * 9.0**-1.5, rtol=1e-4)


def test_root_gradient_ignores_the_initial_guess():
    g = morphax.grad(lambda x0: lax.custom_root(lambda x: x**2 - 4.0, x0, newton, scalar_tangent_solve))(1.0)
    assert float(g) == 0.0


def test_root_errors():
    with pytest.raises(TypeError, match=r"f\(\) output pytree structure must match initial_guess"):
        lax.custom_root(lambda x: (x, x), 1.0, newton, scalar_tangent_solve)
    with pytest.raises(TypeError, match=r"solve\(\) output pytree structure must match initial_guess"):
        lax.custom_root(lambda x: x, 1.0, lambda f, x: [x], scalar_tangent_solve)
    with pytest.raises(TypeError, match=r"tangent_solve\(\) output pytree structure must match x"):
        lax.custom_root(lambda x: x, 1.0, newton, lambda g, y: (y, y))
    with pytest.raises(ValueError, match="has_aux was set to True"):
        lax.custom_root(lambda x: x, 1.0, newton, scalar_tangent_solve, has_aux=True)


def test_jax_oracle():
    jax = pytest.importorskip("jax")
    jnp_ = jax.numpy

    def jax_solve(a, b):
        return jax.lax.custom_linear_solve(
            lambda x: a @ x,
            b,
            lambda mv, y: jnp_.linalg.solve(a, y),
            transpose_solve=lambda vm, y: jnp_.linalg.solve(a.T, y),
        )

    f_jax = lambda a, b: (jax_solve(a, b) ** 2).sum()  # noqa: E731
    f_mx = lambda a, b: (explicit_solve(a, b) ** 2).sum()  # noqa: E731
    close(morphax.grad(f_mx, (0, 1))(NONSYM, B), jax.grad(f_jax, (0, 1))(NONSYM, B), rtol=1e-3, atol=1e-4)
    jax_root = lambda a: jax.lax.custom_root(  # noqa: E731
        lambda x: x**2 - a, 1.0, lambda f, x: jnp_.sqrt(a) + 0 * x, lambda g, y: y / g(1.0)
    )
    close(morphax.grad(sqrt_root)(2.0), jax.grad(jax_root)(2.0), rtol=1e-5)
