"""`qdwh`: the polar decomposition x = u h by the QR-based dynamically weighted Halley iteration
(Nakatsukasa, Bai and Gygi, SIAM J. Matrix Anal. Appl. 31(5), 2010), as `jax.lax.linalg.qdwh`: a
composition of qr, cholesky and triangular solves inside fori/while loops, so it traces, batches
and differentiates (forward mode through the while loop) like any other composition. Optionally the
true matrix is the top-left `dynamic_shape` corner of a zero-padded one."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.higher_order.loops import fori_loop
from morphax._src.higher_order.while_loop import while_loop
from morphax._src.prims import lax_api as lax
from morphax._src.prims.linalg.cholesky import cholesky
from morphax._src.prims.linalg.matrix_ops import _H, _T, _eye, _mm
from morphax._src.prims.linalg.qr import qr
from morphax._src.prims.linalg.triangular_solve import triangular_solve

__all__ = ["qdwh"]

# Above this weight c the iteration's matrix c u^H u + I is too ill conditioned for Cholesky, so the
# step goes through a QR factorization instead (the paper's switch).
_CHOLESKY_CUTOFF = 100


def _const(value, dtype):
    return lax.full((), value, dtype)


def _mask(x, dims, alternative):
    """x inside the leading corner of sizes `dims` (None: the whole axis), `alternative` outside."""
    shape = get_aval(x).shape
    keep = None
    for axis, size in enumerate(dims):
        if size is None:
            continue
        inside = lax.lt(lax.broadcasted_iota(np.int32, shape, axis), lax.convert_element_type(size, np.int32))
        keep = inside if keep is None else lax.bitwise_and(keep, inside)
    return x if keep is None else lax.select_n(keep, alternative, x)


def _frobenius(x):
    a = lax.abs(x)
    return lax.sqrt(lax.reduce_sum(lax.mul(a, a), (0, 1)))


def _qr_step(u, m, n, params):
    """u <- e u + (a - e)/sqrt(c) q1 q2^H, where [sqrt(c) u; I] = [q1; q2] r."""
    a_minus_e_by_sqrt_c, sqrt_c, e = params
    big_m, big_n = get_aval(u).shape
    dt = get_aval(u).dtype
    eye = _eye((big_n, big_n), dt)
    top = lax.mul(sqrt_c, u)
    if m is None:
        q, _ = qr(lax.concatenate([top, eye], 0), full_matrices=False)
        q1 = lax.slice(q, (0, 0), (big_m, big_n))
        q2 = lax.slice(q, (big_m, 0), (big_m + big_n, big_n))
    else:
        # The identity block goes right under the true m rows of the padded matrix.
        stacked = lax.pad(top, _const(0, dt), [(0, big_n, 0), (0, 0, 0)])
        stacked = lax.dynamic_update_slice(stacked, eye, (lax.convert_element_type(m, np.int32), 0))
        q, _ = qr(stacked, full_matrices=False)
        zero = lax.full((big_m, big_n), 0, dt)
        q1 = _mask(lax.slice(q, (0, 0), (big_m, big_n)), (m, n), zero)
        q2 = lax.dynamic_slice(q, (lax.convert_element_type(m, np.int32), 0), (big_n, big_n))
        q2 = _mask(q2, (n, n), lax.full((big_n, big_n), 0, dt))
    return lax.add(lax.mul(e, u), lax.mul(a_minus_e_by_sqrt_c, _mm(q1, _H(q2))))


def _cholesky_step(u, m, n, params):
    """u <- e u + (a - e) u (c u^H u + I)^{-1}, through the Cholesky factor of c u^H u + I."""
    a_minus_e, c, e = params
    _, big_n = get_aval(u).shape
    dt = get_aval(u).dtype
    eye = _eye((big_n, big_n), dt)
    x = lax.add(lax.mul(c, _mm(_H(u), u)), eye)
    if n is not None:
        # The identity in the padded corner keeps the matrix positive definite.
        x = _mask(x, (n, n), eye)
    y = cholesky(x, symmetrize_input=False)
    z = triangular_solve(y, _T(u), left_side=True, lower=True, conjugate_a=True)
    if _dtypes.is_complex(dt):
        z = lax.conj(z)
    z = triangular_solve(y, z, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    return lax.add(lax.mul(e, u), lax.mul(a_minus_e, _H(z)))


def _weights(eps, max_iterations):
    """The dynamically weighted (a, b, c) of each step while the lower bound l on the smallest
    singular value has not reached 1, split by which factorization the step uses."""
    l, k = eps, 0
    tol_l = 10.0 * eps / 2.0
    qr_coefs, chol_coefs = [], []
    while l + tol_l < 1 and k < max_iterations:
        k += 1
        l2 = l * l
        dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        sqd = (1.0 + dd) ** (1 / 2)
        a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        l = l * (a + b * l2) / (1 + c * l2)
        e = b / c
        if c > _CHOLESKY_CUTOFF:
            qr_coefs.append(((a - e) / c ** (1 / 2), c ** (1 / 2), e))
        else:
            chol_coefs.append((a - e, c, e))
    return qr_coefs, chol_coefs


def _row(coefs, k):
    row = lax.dynamic_index_in_dim(coefs, k, 0, keepdims=False)
    return tuple(lax.squeeze(lax.slice(row, (i,), (i + 1,)), (0,)) for i in range(3))


def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
    """Polar decomposition x = u h of a full-rank M x N matrix (M >= N) by the QDWH iteration:
    (u, h, num_iters, is_converged) with u's columns orthonormal, h Hermitian positive
    semidefinite, the number of iterations taken, and whether ||u_k - u_{k-1}||_F reached
    (10 eps / 2)^(1/3) within `max_iterations` (default 10). `is_hermitian` is accepted and unused,
    as in JAX. With `dynamic_shape=(m, n)` only the top-left m x n corner of x is the matrix."""
    aval = get_aval(x)
    if not _dtypes.is_inexact(aval.dtype):
        raise TypeError(
            f"qdwh: x must have a floating or complex dtype, got {aval.dtype.name}; convert it with "
            "lax.convert_element_type first."
        )
    if aval.ndim != 2:
        raise ValueError(f"qdwh: x must be one M x N matrix (vmap it for a batch), got shape {aval.shape}.")
    if not isinstance(is_hermitian, (bool, np.bool_)):
        raise TypeError(
            "The `is_hermitian` argument must be statically specified (a Python bool) to use `qdwh`."
        )
    if max_iterations is None:
        max_iterations = 10
    elif not isinstance(max_iterations, (int, np.integer)):
        raise TypeError(
            "The `max_iterations` argument must be statically specified (a Python int) to use `qdwh`, "
            f"got {max_iterations!r}."
        )
    big_m, big_n = aval.shape
    if big_m < big_n:
        raise ValueError(f"The input matrix of shape M x N must have M >= N; got {aval.shape}.")
    dt = aval.dtype
    rdt = _dtypes.real_dtype(dt)
    m = n = None
    if dynamic_shape is not None:
        m, n = dynamic_shape
        x = _mask(x, (m, n), lax.full(aval.shape, 0, dt))
    if eps is None:
        eps = float(np.finfo(rdt).eps)

    # alpha = sqrt(||x||_1 ||x||_inf) bounds ||x||_2 from above, so u starts with ||u||_2 <= 1.
    ax = lax.abs(x)
    one_norm = lax.reduce_max(lax.reduce_sum(ax, (0,)), (0,))
    inf_norm = lax.reduce_max(lax.reduce_sum(ax, (1,)), (0,))
    alpha_inverse = lax.mul(lax.rsqrt(one_norm), lax.rsqrt(inf_norm))
    alpha_inverse = lax.select_n(lax.eq(one_norm, _const(0, rdt)), alpha_inverse, _const(1, rdt))
    u = lax.mul(x, lax.convert_element_type(alpha_inverse, dt))

    tol_norm = lax.cbrt(_const(10.0 * eps / 2.0, rdt))
    qr_coefs, chol_coefs = _weights(eps, max_iterations)

    if qr_coefs:
        table = lax.convert_element_type(np.asarray(qr_coefs, np.float64), dt)
        u = fori_loop(0, len(qr_coefs), lambda k, u: _qr_step(u, m, n, _row(table, k)), u)

    def converging(u, params):
        new = _cholesky_step(u, m, n, params)
        return new, lax.gt(_frobenius(lax.sub(new, u)), tol_norm)

    not_converged = lax.full((), True, np.bool_)
    if chol_coefs:
        table = lax.convert_element_type(np.asarray(chol_coefs, np.float64), dt)
        u, not_converged = fori_loop(
            0, len(chol_coefs), lambda k, s: converging(s[0], _row(table, k)), (u, not_converged)
        )

    # Once l has converged, plain Halley steps (a, b, c) = (3, 1, 3) until u settles.
    halley = tuple(_const(v, dt) for v in (3 - 1 / 3, 3, 1 / 3))

    def cond_fun(state):
        k, _, flag = state
        return lax.bitwise_and(flag, lax.lt(k, lax.full((), max_iterations)))

    def body_fun(state):
        k, u, _ = state
        u, flag = converging(u, halley)
        return lax.add(k, lax.full((), 1)), u, flag

    # A weakly typed default int, as the Python int JAX starts its loop counter from.
    k0 = lax.full((), len(qr_coefs) + len(chol_coefs))
    num_iters, u, not_converged = while_loop(cond_fun, body_fun, (k0, u, not_converged))

    # One Newton-Schulz step polishes the orthogonality of u.
    u = lax.sub(lax.mul(_const(1.5, dt), u), lax.mul(_const(0.5, dt), _mm(u, _mm(_H(u), u))))
    h = _mm(_H(u), x)
    h = lax.mul(lax.add(h, _H(h)), _const(0.5, dt))
    return u, h, num_iters, lax.bitwise_not(not_converged)
