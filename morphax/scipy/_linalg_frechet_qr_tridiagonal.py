"""Three functions of `morphax.scipy.linalg` (re-exported there): `expm_frechet`, the Fréchet
derivative of the matrix exponential (Al-Mohy & Higham 2009, as SciPy); `qr_multiply`, a QR
factorization applied to another matrix (with SciPy's column pivoting); and `eigh_tridiagonal`,
the spectrum of a Hermitian tridiagonal matrix by Sturm-count bisection, with eigenvectors by
inverse iteration (as JAX). Everything is morphax.numpy / lax, so it jits, batches and
differentiates where those do. This module must not import `morphax.scipy.linalg` (it is
imported by it).
"""

from __future__ import annotations

import numpy as np

import morphax
import morphax.numpy as jnp
from morphax import lax
from morphax._src.numpy import util as _util

_HIGHEST = lax.Precision.HIGHEST


def _mm(a, b):
    return jnp.matmul(a, b, precision=_HIGHEST)


# --------------------------------------------------------------------------------- expm_frechet

# Padé coefficients b_0..b_m of degree m for exp (Higham 2005, Table 2.3 numerators).
_PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0, 90.0, 1.0),
    13: (
        64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
        10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0,
    ),
}  # fmt: skip
# The largest 1-norm for which degree m keeps the backward error of the Fréchet derivative
# below the unit roundoff of double precision (Al-Mohy & Higham 2009, Table 6.1, ell_m).
_ELL = {3: 1.08e-2, 5: 2.00e-1, 7: 7.83e-1, 9: 1.78e0, 13: 4.74e0}
_MAX_SQUARINGS = 16  # as JAX's expm


def _pade_and_derivative(a, e, degree):
    """(U, V, L_U, L_V): the odd and even parts of the degree-`degree` Padé numerator at `a`
    and their derivatives in direction `e`."""
    b = _PADE[degree]
    eye = jnp.eye(a.shape[-1], dtype=a.dtype)
    a2 = _mm(a, a)
    m2 = _mm(a, e) + _mm(e, a)
    if degree == 13:
        a4, m4 = _mm(a2, a2), _mm(a2, m2) + _mm(m2, a2)
        a6, m6 = _mm(a2, a4), _mm(a4, m2) + _mm(m4, a2)
        w1 = b[13] * a6 + b[11] * a4 + b[9] * a2
        w2 = b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye
        z1 = b[12] * a6 + b[10] * a4 + b[8] * a2
        z2 = b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
        w = _mm(a6, w1) + w2
        lw = _mm(a6, b[13] * m6 + b[11] * m4 + b[9] * m2) + _mm(m6, w1) + b[7] * m6 + b[5] * m4 + b[3] * m2
        lz = _mm(a6, b[12] * m6 + b[10] * m4 + b[8] * m2) + _mm(m6, z1) + b[6] * m6 + b[4] * m4 + b[2] * m2
        return _mm(a, w), _mm(a6, z1) + z2, _mm(a, lw) + _mm(e, w), lz
    # Even powers A^(2j) and their derivatives: d(A^(2j)) = d(A^(2j-2)) A^2 + A^(2j-2) d(A^2).
    powers, derivs = [eye, a2], [jnp.zeros_like(a), m2]
    while len(powers) <= degree // 2:
        derivs.append(_mm(derivs[-1], a2) + _mm(powers[-1], m2))
        powers.append(_mm(powers[-1], a2))
    half = range(degree // 2 + 1)
    w = sum(b[2 * j + 1] * powers[j] for j in half)
    lw = sum(b[2 * j + 1] * derivs[j] for j in half)
    v = sum(b[2 * j] * powers[j] for j in half)
    lv = sum(b[2 * j] * derivs[j] for j in half)
    return _mm(a, w), v, _mm(a, lw) + _mm(e, w), lv


def _expm_frechet_2d(a, e):
    # NB: JAX takes the JVP of its expm (whose float32 path uses lower Padé degrees); this is
    # SciPy's algorithm with the double-precision degree bounds in every dtype, so float32
    # results can differ from JAX's in the last bits.
    norm = jnp.max(jnp.sum(jnp.abs(a), axis=0))
    finite = jnp.isfinite(norm)
    safe_norm = jnp.where(finite, norm, 0.0)
    squarings = jnp.ceil(jnp.log2(jnp.maximum(safe_norm, _ELL[13]) / _ELL[13]))
    squarings = jnp.minimum(squarings, _MAX_SQUARINGS).astype(jnp.int32)
    scale = jnp.exp2(-squarings.astype(safe_norm.dtype)).astype(a.dtype)
    parts = _pade_and_derivative(a * scale, e * scale, 13)
    # The lowest degree whose bound covers the norm needs no scaling (checked from the top).
    for degree in (9, 7, 5, 3):
        low = _pade_and_derivative(a, e, degree)
        parts = tuple(jnp.where(safe_norm <= _ELL[degree], x, y) for x, y in zip(low, parts))
    squarings = jnp.where(safe_norm <= _ELL[9], 0, squarings)
    u, v, lu, lv = parts
    # exp(A) ~ R = (V - U)^-1 (V + U); differentiating (V - U) R = V + U gives L below.
    r = jnp.linalg.solve(v - u, u + v)
    frechet = jnp.linalg.solve(v - u, lu + lv + _mm(lu - lv, r))

    def square(carry, i):
        # Undo the scaling: exp(2X) = exp(X)^2, L(2X, 2E) = R L + L R.
        r, frechet = carry
        return lax.cond(
            i < squarings, lambda c: (_mm(c[0], c[0]), _mm(c[0], c[1]) + _mm(c[1], c[0])), lambda c: c, carry
        ), None

    (r, frechet), _ = lax.scan(square, (r, frechet), jnp.arange(_MAX_SQUARINGS, dtype=jnp.int32))
    nan = jnp.full_like(a, np.nan)
    return jnp.where(finite, r, nan), jnp.where(finite, frechet, nan)


def expm_frechet(A, E, *, method=None, compute_expm=True):  # noqa: N803 - SciPy's names
    """The Fréchet derivative of expm at `A` in direction `E` (both ``(..., N, N)``), i.e. the
    JVP of ``expm(A)`` along E, by Al-Mohy & Higham's scaling-and-squaring algorithm. Returns
    ``(expm(A), derivative)``, or the derivative alone without `compute_expm`. `method` is
    accepted for SciPy's signature and ignored, as in JAX."""
    del method
    _util.check_arraylike("expm_frechet", A, E)
    a, e = _util.promote_dtypes_inexact(A, E)
    if a.ndim < 2 or a.shape[-2] != a.shape[-1]:
        raise ValueError(f"expm_frechet: expected A to be a (batched) square matrix, got A.shape={a.shape}")
    if e.ndim < 2 or e.shape[-2] != e.shape[-1]:
        raise ValueError(f"expm_frechet: expected E to be a (batched) square matrix, got E.shape={e.shape}")
    if a.shape != e.shape:
        raise ValueError(
            f"expm_frechet: expected A and E to be the same shape, got A.shape={a.shape} E.shape={e.shape}"
        )
    if a.ndim > 2:
        expm_a, frechet = jnp.vectorize(_expm_frechet_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(a, e)
    else:
        expm_a, frechet = _expm_frechet_2d(a, e)
    return (expm_a, frechet) if compute_expm else frechet


# --------------------------------------------------------------------------------- qr_multiply


def _pivot_order(a):
    """Column order of Householder QR with column pivoting (LAPACK's geqp3): at step j the
    remaining column with the largest norm orthogonal to the chosen ones is swapped into j."""
    m, n = a.shape
    cols = jnp.arange(n)

    def step(j, carry):
        w, perm = carry
        norms = jnp.sum(jnp.real(w * jnp.conj(w)), axis=0)
        p = jnp.argmax(jnp.where(cols < j, -1.0, norms))  # the first of equal maxima, like idamax
        swap = jnp.where(cols == j, p, jnp.where(cols == p, j, cols))
        w, perm = w[:, swap], perm[swap]
        q = w[:, j]
        q_norm = jnp.sqrt(jnp.sum(jnp.real(q * jnp.conj(q))))
        q = jnp.where(q_norm > 0, q / jnp.where(q_norm > 0, q_norm, 1), jnp.zeros_like(q))
        # Project the chosen direction out of the later columns (Gram-Schmidt, applied twice).
        later = (cols > j).astype(w.dtype)
        for _ in range(2):
            w = w - jnp.outer(q, _mm(jnp.conj(q), w) * later)
        return w, perm

    _, perm = lax.fori_loop(0, min(m, n), step, (a, cols.astype(jnp.int32)))
    return perm


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False, overwrite_c=False):
    """QR-factorize `a` (``(..., M, N)``, K = min(M, N)) and multiply Q with `c`: ``mode="left"``
    gives ``Q[:, :K] @ c`` (c ``(..., K, P)``), ``"right"`` gives ``c @ Q[:, :K]`` (c
    ``(..., P, M)``); `conjugate` uses conj(Q). A 1-D c is a column (left) or row (right) and the
    product is raveled. Returns ``(product, R)`` with R ``(..., K, N)``, plus the 0-based column
    permutation P (``a[:, P] = Q R``) with `pivoting`."""
    del overwrite_a, overwrite_c
    if mode not in ("right", "left"):
        raise ValueError(f"qr_multiply: mode must be 'right' or 'left', got {mode!r}")
    _util.check_arraylike("qr_multiply", a, c)
    a, c = _util.promote_dtypes_inexact(a, c)
    if a.ndim < 2:
        raise ValueError(f"qr_multiply: a must be a (batched) matrix, got shape {a.shape}")
    onedim = c.ndim == 1
    if onedim:
        c = c[:, None] if mode == "left" else c[None, :]
    m, n = a.shape[-2:]
    k = min(m, n)
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(
            f"qr_multiply: shapes are not compatible for Q @ c: a has shape {a.shape} so Q has {k} columns, "
            f"but c has {c.shape[-2]} rows (expected {k})."
        )
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(
            f"qr_multiply: shapes are not compatible for c @ Q: a has shape {a.shape} so Q has {m} rows, "
            f"but c has {c.shape[-1]} columns (expected {m})."
        )
    batch = jnp.broadcast_shapes(a.shape[:-2], c.shape[:-2])
    a = jnp.broadcast_to(a, batch + a.shape[-2:])
    c = jnp.broadcast_to(c, batch + c.shape[-2:])
    perm = None
    if pivoting:
        perm = jnp.vectorize(_pivot_order, signature="(m,n)->(n)")(a) if batch else _pivot_order(a)
        a = jnp.take_along_axis(a, perm[..., None, :], axis=-1)
    q, r = lax.linalg.qr(a, full_matrices=False)  # Q: (..., M, K)
    if conjugate:
        q = jnp.conj(q)
    product = _mm(q, c) if mode == "left" else _mm(c, q)
    if onedim:
        product = product.ravel()
    r = jnp.triu(r)
    return (product, r, perm) if pivoting else (product, r)


# ----------------------------------------------------------------------------- eigh_tridiagonal


def _sturm_counts(alpha, beta_sq, pivmin, first_perturbation, x):
    """For each shift in `x`, the number of eigenvalues of T below it: the negative pivots of
    the LDL^T factorization of T - x I, with pivots kept away from zero (LAPACK's dstebz)."""
    q = alpha[0] - x
    count = (q < 0).astype(jnp.int32)
    q = jnp.where(alpha[0] == x, first_perturbation, q)

    def step(carry, ab):
        q, count = carry
        a_i, b2 = ab
        q = a_i - b2 / q - x
        small = q <= pivmin
        return (jnp.where(small, jnp.minimum(q, -pivmin), q), count + small.astype(jnp.int32)), None

    (_, count), _ = lax.scan(step, (q, count), (alpha[1:], beta_sq))
    return count


def _tridiagonal_solve_shifted(sub, diag, sup, rhs, perturb):
    """Solve (T_i) x_i = rhs_i for k tridiagonal systems sharing `sub` and `sup` (length n - 1)
    with diagonals `diag` (n, k): Gaussian elimination with partial pivoting (LAPACK's gttrf /
    gtts2), zero pivots replaced by `perturb` so that singular shifts still give a direction."""
    k = diag.shape[1]
    zero = jnp.zeros((k,), diag.dtype)

    def eliminate(row, nxt):
        d_cur, u_cur, b_cur = row
        lo, d_next, u_next, b_next = nxt
        keep = jnp.abs(d_cur) >= jnp.abs(lo)
        pivot = jnp.where(keep, d_cur, lo)
        pivot = jnp.where(pivot == 0, perturb, pivot)
        fact = jnp.where(keep, lo, d_cur) / pivot
        u_row = (
            pivot,
            jnp.where(keep, u_cur, d_next),
            jnp.where(keep, zero, u_next),
            jnp.where(keep, b_cur, b_next),
        )
        new = (
            jnp.where(keep, d_next - fact * u_cur, u_cur - fact * d_next),
            jnp.where(keep, u_next, -fact * u_next),
            jnp.where(keep, b_next - fact * b_cur, b_cur - fact * b_next),
        )
        return new, u_row

    n = diag.shape[0]
    sub_b = jnp.broadcast_to(sub[:, None], (n - 1, k)).astype(diag.dtype)
    sup_next = jnp.broadcast_to(jnp.concatenate([sup[1:], jnp.zeros((1,), sup.dtype)])[:, None], (n - 1, k))
    (d_last, _, b_last), (u0, u1, u2, bu) = lax.scan(
        eliminate,
        (diag[0], jnp.broadcast_to(sup[0], (k,)).astype(diag.dtype), rhs[0]),
        (sub_b, diag[1:], sup_next.astype(diag.dtype), rhs[1:]),
    )
    d_last = jnp.where(d_last == 0, perturb, d_last)
    x_last = b_last / d_last

    def back(carry, row):
        x1, x2 = carry
        p, v1, v2, b = row
        x = (b - v1 * x1 - v2 * x2) / p
        return (x, x1), x

    _, xs = lax.scan(back, (x_last, zero), (u0, u1, u2, bu), reverse=True)
    return jnp.concatenate([xs, x_last[None]], axis=0)


def _inverse_iteration(alpha, beta, eigvals, key, t_norm, pivmin):
    """Eigenvectors (k, n) for the sorted `eigvals` by inverse iteration from random starts,
    re-orthogonalizing vectors of eigenvalues closer than 1e-3 |T| (LAPACK's dstein). `t_norm`
    bounds |T|; `pivmin` is the smallest pivot the bisection allowed."""
    n, k = alpha.shape[0], eigvals.shape[0]
    dtype = beta.dtype
    real = alpha.dtype
    eps = np.finfo(real).eps
    # NB: JAX groups eigenvalues closer than sqrt(eps) |T|; inverse iteration loses
    # orthogonality like eps |T| / gap, so that leaves ~sqrt(eps) errors (1e-8 in float64 on
    # Wilkinson's W21+). LAPACK's dstein threshold, 1e-3 |T|, keeps them near 1e3 eps. The
    # pivmin floor groups the eigenvalues of a (near) zero matrix, which bisection leaves
    # pivmin apart (JAX returns NaN vectors there).
    close = (eigvals[1:] - eigvals[:-1]) < jnp.maximum(1e-3 * t_norm, 10 * pivmin)
    cluster = jnp.concatenate([jnp.zeros((1,), jnp.int32), jnp.cumsum(~close).astype(jnp.int32)])
    same = (cluster[:, None] == cluster[None, :]) & (jnp.arange(k)[:, None] > jnp.arange(k)[None, :])
    perturb = (eps * jnp.where(t_norm > 0, t_norm, 1)).astype(dtype)
    shifted = (alpha[:, None] - eigvals[None, :]).astype(dtype)  # (n, k)

    def orthogonalize(v):
        # Modified Gram-Schmidt within each cluster, in eigenvalue order.
        def one(i, v):
            earlier = same[i].astype(dtype)
            coeffs = _mm(jnp.conj(v), v[i]) * earlier
            vi = v[i] - _mm(coeffs, v)
            return v.at[i].set(vi / jnp.linalg.norm(vi).astype(dtype))

        return lax.fori_loop(0, k, one, v)

    def step(state):
        i, v, norm, _ = state
        w = _tridiagonal_solve_shifted(jnp.conj(beta), shifted, beta, v.T, perturb).T
        # Scale by the largest entry first: the growth that signals convergence may
        # overflow the sum of squares.
        big = jnp.max(jnp.abs(w), axis=-1, keepdims=True)
        w = w / jnp.where(big > 0, big, 1).astype(dtype)
        w_norm = jnp.linalg.norm(w, axis=-1)
        growth = w_norm * big[:, 0]
        return i + 1, orthogonalize(w / w_norm[:, None].astype(dtype)), growth, norm

    def keep_going(state):
        # Stop after 5 steps (as dstein) or once no norm grows by 10% any more.
        i, _, norm, old = state
        return (i < 5) & jnp.any(norm >= 1.1 * old)

    v = morphax.random.normal(key, (k, n), dtype=real).astype(dtype)
    v = v / jnp.linalg.norm(v, axis=-1, keepdims=True).astype(dtype)
    init = (0, v, jnp.ones((k,), real), jnp.zeros((k,), real))
    return lax.while_loop(keep_going, step, init)[1]


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None, key=None):
    """Eigenvalues (ascending), and unless `eigvals_only` eigenvectors as columns, of the
    Hermitian tridiagonal matrix with diagonal `d` (N,) and off-diagonal `e` (N - 1,), in
    float32/float64 or complex. ``select="a"`` gives all, ``"i"`` those with index in the
    inclusive `select_range`; `tol` is the absolute bisection tolerance; `key` seeds the random
    starting vectors of inverse iteration (default ``random.key(42)``, as JAX)."""
    if not eigvals_only and key is None:
        key = morphax.random.key(42)
    _util.check_arraylike("eigh_tridiagonal", d, e)
    alpha, beta = jnp.asarray(d), jnp.asarray(e)
    supported = (np.float32, np.float64, np.complex64, np.complex128)
    if alpha.dtype != beta.dtype:
        raise TypeError(
            f"eigh_tridiagonal: diagonal and off-diagonal values must have the same dtype, got {alpha.dtype} and {beta.dtype}"
        )
    if alpha.dtype not in supported:
        raise TypeError(
            f"eigh_tridiagonal: only float32, float64, complex64 and complex128 inputs are supported, got {alpha.dtype}"
        )
    if alpha.ndim != 1 or beta.shape != (max(alpha.shape[0] - 1, 0),):
        raise ValueError(
            f"eigh_tridiagonal: expected d of shape (N,) and e of shape (N-1,), got {alpha.shape} and {beta.shape}"
        )
    n = alpha.shape[0]
    if n <= 1:
        values = jnp.real(alpha)
        return values if eigvals_only else (values, jnp.eye(n, dtype=alpha.dtype))
    if jnp.iscomplexobj(alpha):
        alpha = jnp.real(alpha)
        beta_sq = jnp.real(beta * jnp.conj(beta))
        beta_abs = jnp.sqrt(beta_sq)
    else:
        beta_abs, beta_sq = jnp.abs(beta), jnp.square(beta)

    # Gershgorin bounds on the spectrum, and from them a bound on ||T||_2.
    radius = jnp.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]])
    top, bottom = jnp.max(alpha + radius), jnp.min(alpha - radius)
    t_norm = jnp.maximum(jnp.abs(bottom), jnp.abs(top))
    info = np.finfo(alpha.dtype)
    one = np.ones((), alpha.dtype)
    safemin = np.maximum(one / info.max, (one + info.eps) * info.tiny)
    pivmin = safemin * jnp.maximum(1, jnp.max(beta_sq))
    first_perturbation = jnp.square(info.eps * beta_abs[0])
    abs_tol = info.eps * t_norm
    if tol is not None:
        abs_tol = jnp.maximum(tol, abs_tol)
    # Each bisection halves the interval: mantissa bits + 1 steps reach eps * ||T||.
    max_steps = info.nmant + 1

    if select == "a":
        targets = jnp.arange(n, dtype=jnp.int32)
    elif select == "i":
        if select_range is None:
            raise ValueError("eigh_tridiagonal: for select='i', select_range must be specified.")
        if select_range[0] > select_range[1]:
            raise ValueError(f"eigh_tridiagonal: got empty index range in select_range={select_range}.")
        targets = jnp.arange(select_range[0], select_range[1] + 1, dtype=jnp.int32)
    elif select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented (as in JAX).")
    else:
        raise ValueError(f"eigh_tridiagonal: select must be one of 'a', 'i', 'v', got {select!r}")

    # All the bisections run side by side, from the Gershgorin interval widened a little.
    slack = jnp.array(n, alpha.dtype) * 2.1 * info.eps * t_norm
    shape = targets.shape
    lower = jnp.broadcast_to(bottom - slack - 2 * 2.1 * pivmin, shape)
    upper = jnp.broadcast_to(top + slack + 2.1 * pivmin, shape)
    pivmin = jnp.broadcast_to(pivmin, shape)
    first_perturbation = jnp.broadcast_to(first_perturbation, shape)

    def bisect(state):
        i, lower, mid, upper = state
        counts = _sturm_counts(alpha, beta_sq, pivmin, first_perturbation, mid)
        lower = jnp.where(counts <= targets, mid, lower)
        upper = jnp.where(counts > targets, mid, upper)
        return i + 1, lower, 0.5 * (lower + upper), upper

    def unfinished(state):
        i, lower, _, upper = state
        return (i < max_steps) & (abs_tol < jnp.max(upper - lower))

    _, _, values, _ = lax.while_loop(unfinished, bisect, (0, lower, 0.5 * (lower + upper), upper))
    if eigvals_only:
        return values
    return values, _inverse_iteration(alpha, jnp.asarray(e), values, key, t_norm, pivmin[0]).T
