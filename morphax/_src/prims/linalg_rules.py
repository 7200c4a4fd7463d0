"""Derivative rules of the linear-algebra primitives (JAX's): cholesky, triangular_solve (with its
transpose in b), lu, qr, eigh, svd and eig, plus the lax-level matrix helpers they share.

Every rule is written with primitives, so rules compose with vmap, jit and further derivatives.
Primitives that read one triangle of their operand see only that part of a tangent too.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, is_undefined_primal, is_zero, tangent_aval
from morphax._src.core.avals import get_aval
from morphax._src.core.values import make_array
from morphax._src.prims import linalg as _la
from morphax._src.prims._ad import _lax, add_tangents, defjvp_zero

# ------------------------------------------------------------------------------------------------
# Matrix helpers on the trailing two axes (batch dims lead and must agree).


def _shape(x):
    return get_aval(x).shape


def _dtype(x):
    return get_aval(x).dtype


def _is_complex(x):
    return _dtypes.is_complex(_dtype(x))


def _scalar(value, dtype):
    return make_array(np.asarray(value, dtype=dtype))


def _T(x):
    nd = len(_shape(x))
    return _lax().transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _H(x):
    xt = _T(x)
    return _lax().conj(xt) if _is_complex(x) else xt


def _mm(a, b):
    """Batched matmul of (..., m, k) and (..., k, n) with equal batch dims."""
    L = _lax()
    nd = len(_shape(a))
    batch = tuple(range(nd - 2))
    return L.dot_general(a, b, (((nd - 1,), (nd - 2,)), (batch, batch)), precision=L.Precision.HIGHEST)


def _iotas(shape):
    L = _lax()
    nd = len(shape)
    return L.broadcasted_iota(np.int32, shape, nd - 2), L.broadcasted_iota(np.int32, shape, nd - 1)


def _band_mask(shape, k, lower):
    """True on and below diagonal k (lower) or on and above it (upper)."""
    L = _lax()
    i, j = _iotas(shape)
    d = L.sub(j, i)
    k = _scalar(k, np.int32)
    return L.le(d, k) if lower else L.ge(d, k)


def _eye_mask(shape):
    i, j = _iotas(shape)
    return _lax().eq(i, j)


def _zeros(shape, dtype):
    return _lax().full(tuple(shape), 0, dtype)


def _tril(x, k=0):
    return _lax().select_n(_band_mask(_shape(x), k, True), _zeros(_shape(x), _dtype(x)), x)


def _triu(x, k=0):
    return _lax().select_n(_band_mask(_shape(x), k, False), _zeros(_shape(x), _dtype(x)), x)


def _eye(shape, dtype):
    return _lax().convert_element_type(_eye_mask(shape), dtype)


def _diag_part(x):
    """(..., m, n) -> (..., min(m, n)) diagonal."""
    L = _lax()
    s = _shape(x)
    m, n = s[-2:]
    d = L.reduce_sum(L.select_n(_eye_mask(s), _zeros(s, _dtype(x)), x), (len(s) - 1,))
    if m > n:
        d = L.slice(d, (0,) * (len(s) - 1), s[:-2] + (n,))
    return d


def _as_rows(v, n):
    """(..., k) -> (..., n, k): out[..., i, j] = v[..., j]."""
    s = _shape(v)
    r = len(s)
    return _lax().broadcast_in_dim(v, s[:-1] + (n, s[-1]), tuple(range(r - 1)) + (r,))


def _as_cols(v, n):
    """(..., k) -> (..., k, n): out[..., i, j] = v[..., i]."""
    s = _shape(v)
    r = len(s)
    return _lax().broadcast_in_dim(v, s[:-1] + (s[-1], n), tuple(range(r)))


def _diag_matrix(v):
    s = _shape(v)
    return _lax().select_n(_eye_mask(s + (s[-1],)), _zeros(s + (s[-1],), _dtype(v)), _as_cols(v, s[-1]))


def _slice_last2(x, rows=None, cols=None):
    s = _shape(x)
    r0, r1 = rows if rows is not None else (0, s[-2])
    c0, c1 = cols if cols is not None else (0, s[-1])
    nb = len(s) - 2
    return _lax().slice(x, (0,) * nb + (r0, c0), s[:-2] + (r1, c1))


def _to_dtype(x, dtype):
    return x if _dtype(x) == dtype else _lax().convert_element_type(x, dtype)


def symmetrize(x):
    """(x + x^H) / 2."""
    L = _lax()
    return L.mul(L.add(x, _H(x)), _scalar(0.5, _dtype(x)))


def _herm_from_triangle(t, lower):
    """The Hermitian matrix a routine reading one triangle (and the real part of the diagonal)
    sees in place of `t`."""
    L = _lax()
    s, dt = _shape(t), _dtype(t)
    half = L.mul(t, _scalar(0.5, dt))
    strict = _tril(t, -1) if lower else _triu(t, 1)
    part = L.select_n(_eye_mask(s), strict, half)
    return L.add(part, _H(part))


def _trisolve(
    a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False
):
    return _la.triangular_solve_p.bind(
        a,
        b,
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=bool(conjugate_a and _is_complex(a)),
        unit_diagonal=unit_diagonal,
    )


def _permute_rows(x, perm):
    """x[..., perm, :] for a batch of permutations (a gather with batching dims)."""
    L = _lax()
    s = _shape(x)
    if s[-2] == 0:
        # No rows to permute (a 0x0 system: JAX's inv/solve return an empty array); a gather of
        # one-row slices from an empty axis would be out of range, so there is nothing to do.
        return x
    nb = len(s) - 2
    idx = L.expand_dims(perm, (nb + 1,))
    dn = L.GatherDimensionNumbers(
        offset_dims=(nb + 1,),
        collapsed_slice_dims=(nb,),
        start_index_map=(nb,),
        operand_batching_dims=tuple(range(nb)),
        start_indices_batching_dims=tuple(range(nb)),
    )
    return L.gather(x, idx, dn, (1,) * (nb + 1) + (s[-1],), mode=L.GatherScatterMode.PROMISE_IN_BOUNDS)


def _inverse_permutation(perm):
    L = _lax()
    s = _shape(perm)
    iota = L.broadcasted_iota(np.int32, s, len(s) - 1)
    return L.sort_key_val(perm, iota, dimension=len(s) - 1)[1]


def lu_solve(lu, perm, b, trans=0):
    """Solve a x = b (trans 0), a^T x = b (1) or a^H x = b (2) from a's LU factors; b is (..., m, k)."""
    if trans == 0:
        x = _permute_rows(b, perm)
        x = _trisolve(lu, x, left_side=True, lower=True, unit_diagonal=True)
        return _trisolve(lu, x, left_side=True, lower=False)
    conj = trans == 2
    x = _trisolve(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=conj)
    x = _trisolve(lu, x, left_side=True, lower=True, unit_diagonal=True, transpose_a=True, conjugate_a=conj)
    return _permute_rows(x, _inverse_permutation(perm))


def solve(a, b):
    """a^{-1} b for square a (..., m, m) and b (..., m, k) with the same batch dims."""
    lu, _, perm = _la.lu_p.bind(a)
    return lu_solve(lu, perm, b)


def _zero_tangents(outs):
    return [Zero(tangent_aval(get_aval(o))) for o in outs]


# ------------------------------------------------------------------------------------------------
# cholesky: L' = L Phi(L^{-1} S' L^{-H}), Phi taking the lower triangle with a halved diagonal
# (Murray 2016, arXiv:1602.07527); S' is the Hermitian tangent seen through the lower triangle.


def _cholesky_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    lc = _la.cholesky_p.bind(x)
    if is_zero(t):
        return lc, Zero(tangent_aval(get_aval(lc)))
    L = _lax()
    sigma = _herm_from_triangle(t, lower=True)
    tmp = _trisolve(lc, sigma, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    inner = _trisolve(lc, tmp, left_side=True, lower=True)
    phi = L.select_n(_eye_mask(_shape(inner)), _tril(inner, -1), L.mul(inner, _scalar(0.5, _dtype(inner))))
    return lc, _mm(lc, phi)


_la.cholesky_p.jvp = _cholesky_jvp


# ------------------------------------------------------------------------------------------------
# triangular_solve: nonlinear in a (x' = -op(a)^{-1} op(a') x, on the triangle a reads), linear in b.


def _triangular_solve_jvp_a(g_a, ans, a, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    L = _lax()
    m, n = _shape(ans)[-2:]
    k = 1 if unit_diagonal else 0
    g_a = _tril(g_a, -k) if lower else _triu(g_a, k)
    g_a = L.neg(g_a)
    if transpose_a:
        g_a = _T(g_a)
    if conjugate_a and _is_complex(g_a):
        g_a = L.conj(g_a)
    params = dict(
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )

    def a_inverse(rhs):
        return _la.triangular_solve_p.bind(a, rhs, **params)

    # Solve against whichever of (g_a, ans) is smaller.
    if left_side:
        return a_inverse(_mm(g_a, ans)) if m > n else _mm(a_inverse(g_a), ans)
    return a_inverse(_mm(ans, g_a)) if m < n else _mm(ans, a_inverse(g_a))


def _triangular_solve_jvp(primals, tangents, **params):
    a, b = primals
    ta, tb = tangents
    ans = _la.triangular_solve_p.bind(a, b, **params)
    out = Zero(tangent_aval(get_aval(ans)))
    if not is_zero(tb):
        out = _la.triangular_solve_p.bind(a, tb, **params)
    if not is_zero(ta):
        out = add_tangents(out, _triangular_solve_jvp_a(ta, ans, a, **params))
    return ans, out


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if is_undefined_primal(a):
        raise ValueError("triangular_solve is not linear in its first argument (a); cannot transpose it")
    if is_zero(ct):
        return [None, Zero(b.aval)]
    ct_b = _la.triangular_solve_p.bind(
        a,
        ct,
        left_side=left_side,
        lower=lower,
        transpose_a=not transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )
    return [None, ct_b]


_la.triangular_solve_p.jvp = _triangular_solve_jvp
_la.triangular_solve_p.transpose = _triangular_solve_transpose


# ------------------------------------------------------------------------------------------------
# lu: with P a = L U, L^{-1} P a' U^{-1} = L^{-1} L' + U' U^{-1} splits into its strictly lower
# part (L') and its upper part (U') (de Hoog, Anderssen & Lukas).


def _lu_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    outs = _la.lu_p.bind(a)
    lu, _, perm = outs
    zeros = _zero_tangents(outs)
    if is_zero(t):
        return outs, zeros
    L = _lax()
    s = _shape(a)
    nb = len(s) - 2
    m, n = s[-2:]
    k = min(m, n)
    dt = _dtype(a)
    zero = _scalar(0, dt)
    l_part = _tril(_slice_last2(lu, cols=(0, k)), -1)
    if m > k:
        l_part = L.pad(l_part, zero, [(0, 0, 0)] * (nb + 1) + [(0, m - k, 0)])
    l_full = L.add(l_part, _eye(s[:-2] + (m, m), dt))
    u_part = _triu(_slice_last2(lu, rows=(0, k)))
    if n > k:
        u_part = L.pad(u_part, zero, [(0, 0, 0)] * nb + [(0, n - k, 0), (0, 0, 0)])
        # The trailing block gets a unit diagonal so the solve below stays defined.
        i, j = _iotas(s[:-2] + (n, n))
        trail = L.convert_element_type(L.bitwise_and(L.eq(i, j), L.ge(i, _scalar(k, np.int32))), dt)
        u_part = L.add(u_part, trail)
    la = _trisolve(l_full, _permute_rows(t, perm), left_side=True, lower=True, unit_diagonal=True)
    lau = _trisolve(u_part, la, left_side=False, lower=False)
    l_dot = _mm(l_full, _tril(lau, -1))
    u_dot = _mm(_triu(lau), u_part)
    return outs, [L.add(l_dot, u_dot), zeros[1], zeros[2]]


_la.lu_p.jvp = _lu_jvp
defjvp_zero(_la.lu_pivots_to_permutation_p)


# ------------------------------------------------------------------------------------------------
# qr (Townsend's derivation for the thin part; arXiv:2409.13374 for the extra columns of a full Q).


def _thin_qr_jvp(q, r, dx):
    """(dq, dr) for x = q r with q (..., m, n), r (..., n, n), m >= n."""
    L = _lax()
    dx_rinv = _trisolve(r, dx)  # dx r^{-1}
    qt_dx_rinv = _mm(_H(q), dx_rinv)
    lower = _tril(qt_dx_rinv, -1)
    do = L.sub(lower, _H(lower))  # skew-Hermitian
    if _is_complex(q):
        # R's diagonal stays real: the imaginary diagonal of q^H dx r^{-1} goes into dq.
        imag_part = L.sub(qt_dx_rinv, _to_dtype(L.real(qt_dx_rinv), _dtype(q)))
        do = L.add(do, L.select_n(_eye_mask(_shape(do)), _zeros(_shape(do), _dtype(do)), imag_part))
    dq = L.add(_mm(q, L.sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(L.sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
    (x,), (dx,) = primals, tangents
    outs = _la.qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    zeros = _zero_tangents(outs)
    if is_zero(dx):
        return outs, zeros
    L = _lax()
    q, r = outs[0], outs[1]
    m, n = _shape(x)[-2:]
    if pivoting:
        # x[..., p] = q r: differentiate the column-permuted matrix.
        p = outs[2]
        dx = _T(_permute_rows(_T(dx), p))
        x = _T(_permute_rows(_T(x), p))
    nd = len(_shape(x))
    if m < n:
        # Square left block x1 = q r1; the rest r2 = q^H x2.
        x2 = _slice_last2(x, cols=(m, n))
        dx1 = _slice_last2(dx, cols=(0, m))
        dx2 = _slice_last2(dx, cols=(m, n))
        r1 = _slice_last2(r, cols=(0, m))
        dq, dr1 = _thin_qr_jvp(q, r1, dx1)
        dr2 = L.add(_mm(_H(dq), x2), _mm(_H(q), dx2))
        dr = L.concatenate([dr1, dr2], nd - 1)
        return outs, [dq, dr] + zeros[2:]
    q_mn = _slice_last2(q, cols=(0, n)) if full_matrices else q
    r_nn = _slice_last2(r, rows=(0, n)) if full_matrices else r
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
    if not full_matrices or m == n:
        return outs, [dq_mn, dr_nn] + zeros[2:]
    # Full Q, m > n: the trailing m - n columns follow the Householder construction.
    q_nn = _slice_last2(q_mn, rows=(0, n))
    q_pn = _slice_last2(q_mn, rows=(n, m))
    q_mp = _slice_last2(q, cols=(n, m))
    dq_nn = _slice_last2(dq_mn, rows=(0, n))
    dq_pn = _slice_last2(dq_mn, rows=(n, m))
    eye_n = _eye(_shape(q_nn), _dtype(q))
    lu_f, _, perm = _la.lu_p.bind(L.sub(q_nn, eye_n))
    z_pn_h = lu_solve(lu_f, perm, _H(q_pn), trans=2)
    z_pn = _H(z_pn_h)
    dq_mp = L.sub(
        _mm(dq_mn, z_pn_h),
        _mm(L.add(q_mn, _mm(q_mp, z_pn)), _H(L.sub(dq_pn, _mm(z_pn, dq_nn)))),
    )
    dq = L.concatenate([dq_mn, dq_mp], nd - 1)
    dr = L.concatenate([dr_nn, _zeros(_shape(dr_nn)[:-2] + (m - n, n), _dtype(dr_nn))], nd - 2)
    return outs, [dq, dr] + zeros[2:]


_la.qr_p.jvp = _qr_jvp


# ------------------------------------------------------------------------------------------------
# eigh: non-degenerate perturbation theory: w' = diag(v^H a' v), v' = v (F o v^H a' v) with
# F_ij = 1 / (w_j - w_i) off the diagonal.


def _inverse_gaps(w, dtype):
    """F_ij = 1/(w_j - w_i) for i != j and 0 on the diagonal, as `dtype`."""
    L = _lax()
    n = _shape(w)[-1]
    rdt = _dtype(w)
    eye = _eye(_shape(w) + (n,), rdt)
    gaps = L.sub(_as_rows(w, n), _as_cols(w, n))
    f = L.sub(L.integer_pow(L.add(eye, gaps), -1), eye)
    return _to_dtype(f, dtype)


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    (a,), (t,) = primals, tangents
    n = _shape(a)[-1]
    outs = _la.eigh_p.bind(
        a,
        lower=lower,
        sort_eigenvalues=sort_eigenvalues,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    if is_zero(t):
        return outs, _zero_tangents(outs)
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
    L = _lax()
    v, w = outs
    a_dot = _herm_from_triangle(t, lower)
    vhav = _mm(_mm(_H(v), a_dot), v)
    dv = _mm(v, L.mul(_inverse_gaps(w, _dtype(a)), vhav))
    dw = _diag_part(L.real(vhav) if _is_complex(vhav) else vhav)
    return outs, [dv, dw]


_la.eigh_p.jvp = _eigh_jvp


# ------------------------------------------------------------------------------------------------
# svd (distinct nonzero singular values): s' = Re diag(U^H a' V); U', V' from the off-diagonal
# parts, with projections onto the complement for rectangular a.


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
    (a,), (da,) = primals, tangents
    m, n = _shape(a)[-2:]
    outs = _la.svd_p.bind(
        a,
        full_matrices=full_matrices,
        compute_uv=compute_uv,
        subset_by_index=subset_by_index,
        algorithm=algorithm,
    )
    if is_zero(da):
        return outs, _zero_tangents(outs)
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for full matrices")
    L = _lax()
    dt = _dtype(a)
    s, u, vt = _la.svd_p.bind(
        a, full_matrices=False, compute_uv=True, subset_by_index=subset_by_index, algorithm=algorithm
    )
    ut, v = _H(u), _H(vt)
    ds_mat = _mm(_mm(ut, da), v)
    ds = _diag_part(L.real(ds_mat) if _is_complex(ds_mat) else ds_mat)
    if not compute_uv:
        return outs, [ds]
    k = _shape(s)[-1]
    rdt = _dtype(s)
    s_row = _as_rows(s, k)  # [i, j] = s_j
    s_col = _as_cols(s, k)  # [i, j] = s_i
    eye = _eye(_shape(s_row), rdt)
    diffs = L.mul(L.add(s_row, s_col), L.sub(s_row, s_col))
    f = _to_dtype(L.sub(L.div(_scalar(1, rdt), L.add(diffs, eye)), eye), dt)
    s_row_c, s_col_c = _to_dtype(s_row, dt), _to_dtype(s_col, dt)
    dss = L.mul(s_row_c, ds_mat)
    sds = L.mul(s_col_c, ds_mat)
    s_zero = L.convert_element_type(L.eq(s, _scalar(0, rdt)), rdt)
    s_inv = L.sub(L.div(_scalar(1, rdt), L.add(s, s_zero)), s_zero)
    du_dv_diag = L.mul(L.mul(L.sub(ds_mat, _H(ds_mat)), _scalar(0.5, dt)), _to_dtype(_diag_matrix(s_inv), dt))
    du = _mm(u, L.add(L.mul(f, L.add(dss, _H(dss))), du_dv_diag))
    dv = _mm(v, L.mul(f, L.add(sds, _H(sds))))
    if m > n:
        dav = _mm(da, v)
        du = L.add(du, L.div(L.sub(dav, _mm(u, _mm(ut, dav))), _to_dtype(_as_rows(s, m), dt)))
    if n > m:
        dahu = _mm(_H(da), u)
        dv = L.add(dv, L.div(L.sub(dahu, _mm(v, _mm(vt, dahu))), _to_dtype(_as_rows(s, n), dt)))
    return outs, [ds, du, _H(dv)]


_la.svd_p.jvp = _svd_jvp


# ------------------------------------------------------------------------------------------------
# eig: w' = diag(V^{-1} a' V); eigenvector derivatives (opt-in) follow LAPACK's normalization
# (unit 2-norm, largest-magnitude component real).


def _eig_vec_jvp(w, v, da):
    L = _lax()
    n = _shape(w)[-1]
    nd = len(_shape(v))
    cdt = _dtype(v)
    eye = _eye(_shape(w) + (n,), cdt)
    fmat = L.sub(L.div(_scalar(1, cdt), L.add(eye, L.sub(_as_rows(w, n), _as_cols(w, n)))), eye)
    p = _mm(solve(v, da), v)
    dw = _diag_part(p)
    u = _mm(v, L.mul(fmat, p))
    # dv_j = u_j + c_j v_j; the two real normalization constraints fix c_j.
    k = L.argmax(L.abs(v), nd - 2, np.int32)
    rows = L.broadcasted_iota(np.int32, _shape(v), nd - 2)
    mask = L.convert_element_type(
        L.eq(rows, L.broadcast_in_dim(k, _shape(v), tuple(i for i in range(nd) if i != nd - 2))), cdt
    )
    re = L.neg(L.real(L.reduce_sum(L.mul(L.conj(v), u), (nd - 2,))))
    im = L.neg(
        L.div(
            L.imag(L.reduce_sum(L.mul(mask, u), (nd - 2,))), L.real(L.reduce_sum(L.mul(mask, v), (nd - 2,)))
        )
    )
    c = L.complex(re, im)
    dv = L.add(u, L.mul(v, L.broadcast_in_dim(c, _shape(v), tuple(i for i in range(nd) if i != nd - 2))))
    return dw, dv


def _eig_jvp(
    primals,
    tangents,
    *,
    compute_left_eigenvectors,
    compute_right_eigenvectors,
    enable_eigvec_derivs,
    implementation,
):
    (a,), (da,) = primals, tangents
    params = dict(
        compute_left_eigenvectors=compute_left_eigenvectors,
        compute_right_eigenvectors=compute_right_eigenvectors,
        enable_eigvec_derivs=enable_eigvec_derivs,
        implementation=implementation,
    )
    outs = _la.eig_p.bind(a, **params)
    if is_zero(da):
        return outs, _zero_tangents(outs)
    if (compute_left_eigenvectors or compute_right_eigenvectors) and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the input "
            "that cannot be checked (distinct eigenvalues, no ties for an eigenvector's largest "
            "component). Pass enable_eigvec_derivs=True to lax.linalg.eig to opt in."
        )
    # The right eigenvectors always take part; their derivatives are enabled here so that
    # higher derivatives of the eigenvalues exist (the eigenvalue formula ignores their scaling).
    full = _la.eig_p.bind(
        a,
        compute_left_eigenvectors=compute_left_eigenvectors,
        compute_right_eigenvectors=True,
        enable_eigvec_derivs=True,
        implementation=implementation,
    )
    w, vr = full[0], full[-1]
    da = _to_dtype(da, _dtype(vr))
    if not (compute_left_eigenvectors or compute_right_eigenvectors):
        nd = len(_shape(vr))
        dw = _lax().reduce_sum(_lax().mul(solve(vr, da), _T(vr)), (nd - 1,))
        return outs, [dw]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    tangents_out = [dw]
    if compute_left_eigenvectors:
        _, dvl = _eig_vec_jvp(_lax().conj(w), full[1], _H(da))
        tangents_out.append(dvl)
    if compute_right_eigenvectors:
        tangents_out.append(dvr)
    return outs, tangents_out


_la.eig_p.jvp = _eig_jvp
