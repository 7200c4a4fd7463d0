"""`morphax.scipy.sparse.linalg`: Krylov solvers for ``A x = b`` mirroring
``jax.scipy.sparse.linalg``: `cg` (Hermitian positive definite A), `gmres` (restarted, with a
batched least-squares or an incremental Givens-QR inner solve) and `bicgstab`. A is a square
matrix, anything with ``@``, or a linear function on pytrees; b and x0 are pytrees. Each solve
runs inside `lax.custom_linear_solve`, so derivatives are one more solve, not a trip back
through the iterations.
"""

from __future__ import annotations

import functools
import operator

import numpy as np

import morphax.numpy as jnp
from morphax import lax
from morphax.tree_util import Partial, tree_leaves, tree_map, tree_structure

__all__ = ["bicgstab", "cg", "gmres"]

_HIGHEST = lax.Precision.HIGHEST


def _dot(a, b):
    return jnp.dot(a, b, precision=_HIGHEST)


# ------------------------------------------------------------------------- pytree vector algebra


def _vdot_real(x, y):
    """Re <x, y> without the cross terms: the real value z^H M z has for Hermitian M."""
    out = jnp.vdot(jnp.real(x), jnp.real(y), precision=_HIGHEST)
    if jnp.iscomplexobj(x) or jnp.iscomplexobj(y):
        out = out + jnp.vdot(jnp.imag(x), jnp.imag(y), precision=_HIGHEST)
    return out


def _vdot_real_tree(x, y):
    return sum(tree_leaves(tree_map(_vdot_real, x, y)))


def _vdot_tree(x, y):
    return sum(tree_leaves(tree_map(lambda a, b: jnp.vdot(a, b, precision=_HIGHEST), x, y)))


def _norm(x):
    return jnp.sqrt(sum(_vdot_real(v, v) for v in tree_leaves(x)))


def _scale(scalar, tree):
    return tree_map(lambda v: scalar * v, tree)


def _add(x, y):
    return tree_map(operator.add, x, y)


def _sub(x, y):
    return tree_map(operator.sub, x, y)


def _tree_dtype(tree):
    return jnp.result_type(*tree_leaves(tree))


@Partial
def _identity(x):
    return x


def _as_operator(name, arg, what):
    """A function computing ``arg @ x`` from a function, a square matrix or a matmul-able."""
    if callable(arg):
        return arg
    if hasattr(arg, "__matmul__") or isinstance(arg, np.ndarray):
        shape = getattr(arg, "shape", None)
        if shape is None or len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(
                f"{name}: the linear operator {what} must be a square matrix, but has shape {shape}."
            )
        if isinstance(arg, np.ndarray) or hasattr(arg, "dtype"):
            return functools.partial(_dot, jnp.asarray(arg))
        return functools.partial(operator.matmul, arg)
    raise TypeError(
        f"{name}: the linear operator {what} must be a function, a square matrix or an object with __matmul__, "
        f"got {type(arg).__name__}."
    )


def _prepare(name, A, b, x0, M):  # noqa: N803 - SciPy's names
    b = tree_map(jnp.asarray, b)
    x0 = tree_map(jnp.zeros_like, b) if x0 is None else tree_map(jnp.asarray, x0)
    if tree_structure(x0) != tree_structure(b):
        raise ValueError(
            f"{name}: x0 and b must have matching tree structure: {tree_structure(x0)} vs {tree_structure(b)}"
        )
    shapes_x0 = [np.shape(v) for v in tree_leaves(x0)]
    shapes_b = [np.shape(v) for v in tree_leaves(b)]
    if shapes_x0 != shapes_b:
        raise ValueError(f"{name}: arrays in x0 and b must have matching shapes: {shapes_x0} vs {shapes_b}")
    op = _as_operator(name, A, "A")
    precond = _identity if M is None else _as_operator(name, M, "M (the preconditioner)")
    size = sum(int(np.size(v)) for v in tree_leaves(b))
    return op, b, x0, precond, size


# ------------------------------------------------------------------------------------------- CG


def _cg_solve(A, b, x0, *, maxiter, tol, atol, M):  # noqa: N803
    # SciPy's non-legacy stopping rule: ||r|| <= max(tol * ||b||, atol), compared in squares.
    bound2 = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))
    r0 = _sub(b, A(x0))
    z0 = M(r0)
    dtype = _tree_dtype(z0)
    gamma0 = _vdot_real_tree(r0, z0).astype(dtype)

    def cond(carry):
        _, r, gamma, _, k = carry
        # Without a preconditioner gamma is already ||r||^2.
        rs = jnp.real(gamma) if M is _identity else _vdot_real_tree(r, r)
        return (rs > bound2) & (k < maxiter)

    def body(carry):
        x, r, gamma, p, k = carry
        ap = A(p)
        alpha = gamma / _vdot_real_tree(p, ap).astype(dtype)
        x = _add(x, _scale(alpha, p))
        r = _sub(r, _scale(alpha, ap))
        z = M(r)
        gamma_next = _vdot_real_tree(r, z).astype(dtype)
        p = _add(z, _scale(gamma_next / gamma, p))
        return x, r, gamma_next, p, k + 1

    return lax.while_loop(cond, body, (x0, r0, gamma0, z0, 0))[0]


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):  # noqa: N803
    """Solve ``A x = b`` for Hermitian positive definite A by (preconditioned) conjugate
    gradients, stopping when ``norm(b - A x) <= max(tol * norm(b), atol)`` or after `maxiter`
    (default 10 * size of b) steps. Returns ``(x, None)``; x has b's structure.

    Derivatives solve the adjoint system with cg again (implicit differentiation).
    """
    return _iterative("cg", _cg_solve, A, b, x0, tol, atol, maxiter, M, symmetric_if_real=True)


# ------------------------------------------------------------------------------------- BiCGSTAB


def _bicgstab_solve(A, b, x0, *, maxiter, tol, atol, M):  # noqa: N803
    bound2 = jnp.maximum(jnp.square(tol) * _vdot_real_tree(b, b), jnp.square(atol))
    r0 = _sub(b, A(x0))
    one = jnp.ones((), _tree_dtype(b))

    def cond(carry):
        r, k = carry[1], carry[-1]
        # k < 0 flags a breakdown (rho = 0: -10; alpha or omega = 0: -11).
        return (_vdot_real_tree(r, r) > bound2) & (k < maxiter) & (k >= 0)

    def body(carry):
        x, r, rhat, alpha, omega, rho, p, q, k = carry
        rho_next = _vdot_tree(rhat, r)
        beta = rho_next / rho * alpha / omega
        p = _add(r, _scale(beta, _sub(p, _scale(omega, q))))
        phat = M(p)
        q = A(phat)
        alpha = rho_next / _vdot_tree(rhat, q)
        s = _sub(r, _scale(alpha, q))
        # Converged after the half step: take it and skip the stabilizing one.
        half = _vdot_real_tree(s, s) < bound2
        shat = M(s)
        t = A(shat)
        omega = _vdot_tree(t, s) / _vdot_tree(t, t)
        x_half = _add(x, _scale(alpha, phat))
        x = tree_map(lambda h, f: jnp.where(half, h, f), x_half, _add(x_half, _scale(omega, shat)))
        r = tree_map(lambda h, f: jnp.where(half, h, f), s, _sub(s, _scale(omega, t)))
        k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = jnp.where(rho_next == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_next, p, q, k

    return lax.while_loop(cond, body, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):  # noqa: N803
    """Solve ``A x = b`` for general A by (preconditioned) BiCGSTAB, stopping when
    ``norm(b - A x) <= max(tol * norm(b), atol)`` or after `maxiter` (default 10 * size of b)
    steps. Returns ``(x, None)``; x has b's structure. Derivatives use bicgstab on A^T."""
    return _iterative("bicgstab", _bicgstab_solve, A, b, x0, tol, atol, maxiter, M)


def _iterative(name, method, A, b, x0, tol, atol, maxiter, M, symmetric_if_real=False):  # noqa: N803
    op, b, x0, precond, size = _prepare(name, A, b, x0, M)
    if maxiter is None:
        maxiter = 10 * size  # SciPy's default
    solve = functools.partial(method, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=precond)
    # A real positive definite operator is symmetric, so its transpose solve is the solve itself.
    symmetric = symmetric_if_real and not any(jnp.iscomplexobj(v) for v in tree_leaves(b))
    x = lax.custom_linear_solve(op, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
    return x, None


# ---------------------------------------------------------------------------------------- GMRES


def _safe_normalize(x, thresh=None):
    """(x / ||x||, ||x||), or (0, 0) when ||x|| <= thresh (default: the dtype's epsilon)."""
    norm = _norm(x)
    dtype = _tree_dtype(x)
    if thresh is None:
        thresh = jnp.finfo(norm.dtype).eps
    use = norm > jnp.real(jnp.asarray(thresh).astype(dtype))
    unit = tree_map(lambda v: jnp.where(use, v / norm.astype(dtype), jnp.zeros_like(v)), x)
    return unit, jnp.where(use, norm, jnp.zeros_like(norm))


def _project(V, v):  # noqa: N803
    """V^H v for the Krylov basis V (each leaf has the basis index last)."""
    parts = tree_map(lambda basis, y: jnp.einsum("...n,...->n", jnp.conj(basis), y, precision=_HIGHEST), V, v)
    return sum(tree_leaves(parts))


def _arnoldi_step(k, A, M, V, H):  # noqa: N803
    """Extend the orthonormal Krylov basis V by M(A(V[..., k])) into column k + 1, storing its
    overlaps as row k of H (the transposed Hessenberg matrix). Returns (V, H, breakdown)."""
    dtype = _tree_dtype(V)
    v = M(A(tree_map(lambda basis: basis[..., k], V)))
    _, norm0 = _safe_normalize(v)
    # Classical Gram-Schmidt applied twice ("twice is enough", Giraud et al. 2005): one pass
    # loses orthogonality when v nearly lies in span(V).
    h = jnp.zeros(tree_leaves(V)[0].shape[-1], dtype)
    for _ in range(2):
        overlap = _project(V, v)
        v = _sub(v, tree_map(functools.partial(_combine, coefficients=overlap), V))
        h = h + overlap
    unit, norm1 = _safe_normalize(v, thresh=jnp.finfo(dtype).eps * norm0)
    V = tree_map(lambda basis, u: basis.at[..., k + 1].set(u), V, unit)
    H = H.at[k, :].set(h.at[k + 1].set(norm1.astype(dtype)))
    return V, H, norm1 == 0.0


def _combine(basis, coefficients):
    return _dot(basis, coefficients)


def _initial_basis(unit_residual, restart):
    return tree_map(lambda v: jnp.pad(v[..., None], ((0, 0),) * v.ndim + ((0, restart),)), unit_residual)


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):  # noqa: N803
    """One restart cycle: build the whole Krylov basis, then solve the small least-squares
    problem min ||beta e1 - Hbar y|| at once (no early exit inside the cycle)."""
    V = _initial_basis(unit_residual, restart)
    dtype = _tree_dtype(b)
    # Identity rows stand in for steps never taken, keeping the least-squares matrix full rank.
    H = jnp.eye(restart, restart + 1, dtype=dtype)

    def body(carry):
        V, H, _, k = carry
        V, H, breakdown = _arnoldi_step(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(lambda c: (c[3] < restart) & ~c[2], body, (V, H, jnp.array(False), 0))
    beta = jnp.zeros(restart + 1, dtype).at[0].set(residual_norm.astype(dtype))
    # NB: JAX solves the normal equations (squaring the condition number); a QR of the
    # (restart + 1) x restart Hessenberg matrix gives the same minimizer more accurately.
    q, r = lax.linalg.qr(H.T, full_matrices=False)
    y = lax.linalg.triangular_solve(r, (jnp.conj(q).T @ beta)[:, None], left_side=True, lower=False)[:, 0]
    x = _add(x0, tree_map(lambda basis: _dot(basis[..., :-1], y), V))
    return (x, *_safe_normalize(M(_sub(b, A(x)))))


def _givens(a, b):
    """(c, s) of the rotation [[conj c, -conj s], [s, c]] that zeroes b under a."""
    b_zero = jnp.abs(b) == 0
    a_small = jnp.abs(a) < jnp.abs(b)
    t = -jnp.where(a_small, a, b) / jnp.where(a_small, b, a)
    r = lax.rsqrt(1 + jnp.abs(t) ** 2).astype(t.dtype)
    c = jnp.where(b_zero, 1, jnp.where(a_small, r * t, r))
    s = jnp.where(b_zero, 0, jnp.where(a_small, r, r * t))
    return c, s


def _rotate(v, i, c, s):
    x, y = v[i], v[i + 1]
    return v.at[i].set(jnp.conj(c) * x - jnp.conj(s) * y).at[i + 1].set(s * x + c * y)


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):  # noqa: N803
    """One restart cycle that keeps a QR factorization of the Hessenberg matrix by Givens
    rotations as the basis grows, so the residual norm is known at each step and the cycle
    stops once it is below `ptol`."""
    V = _initial_basis(unit_residual, restart)
    dtype = _tree_dtype(b)
    R = jnp.eye(restart, restart + 1, dtype=dtype)
    rotations = jnp.zeros((restart, 2), dtype)
    beta = jnp.zeros(restart + 1, dtype).at[0].set(residual_norm.astype(dtype))

    def body(carry):
        k, _, V, R, beta, rotations = carry
        V, H, _ = _arnoldi_step(k, A, M, V, R)
        row = lax.fori_loop(0, k, lambda i, v: _rotate(v, i, rotations[i, 0], rotations[i, 1]), H[k, :])
        c, s = _givens(row[k], row[k + 1])
        rotations = rotations.at[k].set(jnp.stack([c, s]))
        R = R.at[k, :].set(_rotate(row, k, c, s))
        beta = _rotate(beta, k, c, s)
        return k + 1, jnp.abs(beta[k + 1]), V, R, beta, rotations

    init = (0, residual_norm, V, R, beta, rotations)
    _, _, V, R, beta, _ = lax.while_loop(lambda c: (c[0] < restart) & (c[1] > ptol), body, init)
    y = lax.linalg.triangular_solve(R[:, :-1].T, beta[:-1, None], left_side=True, lower=False)[:, 0]
    x = _add(x0, tree_map(lambda basis: _dot(basis[..., :-1], y), V))
    return (x, *_safe_normalize(M(_sub(b, A(x)))))


def _gmres_solve(A, b, x0, atol, ptol, restart, maxiter, M, cycle):  # noqa: N803
    """Restart `cycle` from the previous solution until the preconditioned residual is below
    `atol` or `maxiter` cycles ran."""
    unit, norm = _safe_normalize(M(_sub(b, A(x0))))

    def body(carry):
        x, k, unit, norm = carry
        x, unit, norm = cycle(A, b, x, unit, norm, ptol, restart, M)
        return x, k + 1, unit, norm

    return lax.while_loop(lambda c: (c[1] < maxiter) & (c[3] > atol), body, (x0, 0, unit, norm))[0]


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None, solve_method="batched"):  # noqa: N803
    """Solve ``A x = b`` for general A by restarted GMRES: at most `maxiter` (default 10 * size)
    cycles, each projecting onto a Krylov space of dimension `restart`, until
    ``norm(residual) <= max(tol * norm(b), atol)``. `solve_method` is ``"batched"`` (solve each
    cycle's least-squares problem at its end) or ``"incremental"`` (Givens QR during the cycle,
    with early exit). Returns ``(x, info)``: info is -1 when x is not finite, else 0."""
    if solve_method == "incremental":
        cycle = _gmres_incremental
    elif solve_method == "batched":
        cycle = _gmres_batched
    else:
        raise ValueError(
            f"gmres: invalid solve_method {solve_method!r}, must be either 'incremental' or 'batched'"
        )
    op, b, x0, precond, size = _prepare("gmres", A, b, x0, M)
    if maxiter is None:
        maxiter = 10 * size
    restart = min(restart, size)
    b_norm = _norm(b)
    atol = jnp.maximum(tol * b_norm, atol)
    # Inside a cycle the preconditioned residual is what is known; scale the target to it.
    ptol = _norm(precond(b)) * jnp.minimum(1.0, atol / b_norm)

    def solve(op, rhs):
        return _gmres_solve(op, rhs, x0, atol, ptol, restart, maxiter, precond, cycle)

    x = lax.custom_linear_solve(op, b, solve=solve, transpose_solve=solve)
    info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
    return x, info
