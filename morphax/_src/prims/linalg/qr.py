"""`qr`: Householder QR (geqrf/orgqr), column-pivoted with `pivoting` (geqp3), with its derivative
(Townsend's for the thin part; arXiv:2409.13374 for a full Q's extra columns); and `geqrf`, the
Householder form itself (R above the diagonal, the reflectors below, their scalar factors), which
`jnp.linalg.qr(mode="raw")` returns. Like JAX's, geqrf has no derivative."""

from __future__ import annotations

import numpy as np

from morphax._src.core.ad_util import is_zero
from morphax._src.core.avals import ShapedArray
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.arithmetic import add, sub
from morphax._src.prims.complex_parts import real
from morphax._src.prims.concatenate import concatenate
from morphax._src.prims.linalg.lu import lu_p, lu_solve
from morphax._src.prims.linalg.matrix_ops import (
    _F32_TOL,
    _H,
    _T,
    _check_operand,
    _dtype,
    _eye,
    _eye_mask,
    _is_complex,
    _mm,
    _per_matrix,
    _permute_rows,
    _randn,
    _shape,
    _slice_last2,
    _to_dtype,
    _tril,
    _unary_batcher,
    _zero_tangents,
    _zeros,
)
from morphax._src.prims.linalg.triangular_solve import _trisolve
from morphax._src.prims.selection import select_n

__all__ = ["qr_p", "qr"]  # geqrf_p and geqrf are not jax.lax.linalg names: imported by name


qr_p = Primitive("qr", multiple_results=True)
qr_p.kind = Kind.OPAQUE


def _qr_abstract_eval(x, *, pivoting, full_matrices, use_magma):
    _check_operand("qr", x)
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    batch = x.shape[:-2]
    out = [ShapedArray(batch + (m, k), x.dtype), ShapedArray(batch + (k, n), x.dtype)]
    if pivoting:
        out.append(ShapedArray(batch + (n,), np.dtype(np.int32)))
    return out


def _qr_impl(x, *, pivoting, full_matrices, use_magma):
    x = np.asarray(x)
    if not pivoting:
        q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
        return [q.astype(x.dtype), r.astype(x.dtype)]
    mode = "full" if full_matrices else "economic"
    m, n = x.shape[-2:]
    if x.size == 0:
        k = m if full_matrices else min(m, n)
        eye = np.broadcast_to(np.eye(m, k, dtype=x.dtype), x.shape[:-2] + (m, k)).copy()
        p = np.broadcast_to(np.arange(n, dtype=np.int32), x.shape[:-2] + (n,)).copy()
        return [eye, np.zeros(x.shape[:-2] + (k, n), x.dtype), p]
    import scipy.linalg  # here, not at the top: `import morphax` does not load SciPy

    q, r, p = _per_matrix(lambda a: scipy.linalg.qr(a, mode=mode, pivoting=True), x)
    return [q.astype(x.dtype), r.astype(x.dtype), p.astype(np.int32)]


def _qr_cases(rng):
    out = []
    base = {"pivoting": False, "use_magma": None}
    for dt in ("float32", "complex64"):
        for shape, full in (
            ((3, 3), False),
            ((4, 3), False),
            ((2, 3, 5), True),
            ((2, 5, 3), True),
            ((3, 5), False),
            ((1, 1), True),
            ((0, 2), False),
        ):
            out.append(
                Case(
                    (_randn(rng, shape, dt),), dict(base, full_matrices=full), f"{dt}{list(shape)}-full{full}"
                )
            )
    out.append(
        Case(
            (_randn(rng, (4, 3), "float32"),),
            dict(base, full_matrices=False, pivoting=True),
            "float32-pivoting",
        )
    )
    return out


qr_p.abstract_eval = _qr_abstract_eval


qr_p.impl = _qr_impl


qr_p.test_spec = TestSpec(cases=_qr_cases, tol=_F32_TOL)


_unary_batcher(qr_p)


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition: (q, r), or (q, r, p) with column pivoting (x[..., p] = q r)."""
    out = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices), use_magma=use_magma)
    return tuple(out)


def _thin_qr_jvp(q, r, dx):
    """(dq, dr) for x = q r with q (..., m, n), r (..., n, n), m >= n."""
    dx_rinv = _trisolve(r, dx)  # dx r^{-1}
    qt_dx_rinv = _mm(_H(q), dx_rinv)
    lower = _tril(qt_dx_rinv, -1)
    do = sub(lower, _H(lower))  # skew-Hermitian
    if _is_complex(q):
        # R's diagonal stays real: the imaginary diagonal of q^H dx r^{-1} goes into dq.
        imag_part = sub(qt_dx_rinv, _to_dtype(real(qt_dx_rinv), _dtype(q)))
        do = add(do, select_n(_eye_mask(_shape(do)), _zeros(_shape(do), _dtype(do)), imag_part))
    dq = add(_mm(q, sub(do, qt_dx_rinv)), dx_rinv)
    dr = _mm(sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
    (x,), (dx,) = primals, tangents
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    zeros = _zero_tangents(outs)
    if is_zero(dx):
        return outs, zeros
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
        dr2 = add(_mm(_H(dq), x2), _mm(_H(q), dx2))
        dr = concatenate([dr1, dr2], nd - 1)
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
    lu_f, _, perm = lu_p.bind(sub(q_nn, eye_n))
    z_pn_h = lu_solve(lu_f, perm, _H(q_pn), trans=2)
    z_pn = _H(z_pn_h)
    dq_mp = sub(
        _mm(dq_mn, z_pn_h),
        _mm(add(q_mn, _mm(q_mp, z_pn)), _H(sub(dq_pn, _mm(z_pn, dq_nn)))),
    )
    dq = concatenate([dq_mn, dq_mp], nd - 1)
    dr = concatenate([dr_nn, _zeros(_shape(dr_nn)[:-2] + (m - n, n), _dtype(dr_nn))], nd - 2)
    return outs, [dq, dr] + zeros[2:]


qr_p.jvp = _qr_jvp


# ------------------------------------------------------------------------------------------------
# geqrf: the Householder form of a QR decomposition, as LAPACK's geqrf leaves it.

geqrf_p = Primitive("geqrf", multiple_results=True)
geqrf_p.kind = Kind.OPAQUE


def _geqrf_abstract_eval(x):
    _check_operand("geqrf", x)
    m, n = x.shape[-2:]
    return [ShapedArray(x.shape, x.dtype), ShapedArray(x.shape[:-2] + (min(m, n),), x.dtype)]


def _geqrf_impl(x):
    x = np.asarray(x)
    m, n = x.shape[-2:]
    if x.size == 0:
        return [x.copy(), np.zeros(x.shape[:-2] + (min(m, n),), x.dtype)]
    # NumPy's "raw" mode is LAPACK's geqrf, its packed matrix transposed (Fortran order).
    h, tau = np.linalg.qr(x, mode="raw")
    return [np.ascontiguousarray(np.swapaxes(h, -1, -2)).astype(x.dtype), tau.astype(x.dtype)]


def _geqrf_cases(rng):
    out = []
    for dt in ("float32", "complex64"):
        for shape in ((4, 3), (3, 5), (2, 3, 3), (1, 1), (0, 2)):
            out.append(Case((_randn(rng, shape, dt),), {}, f"{dt}{list(shape)}"))
    return out


geqrf_p.abstract_eval = _geqrf_abstract_eval


geqrf_p.impl = _geqrf_impl


geqrf_p.test_spec = TestSpec(cases=_geqrf_cases, tol=_F32_TOL, differentiable=False)


_unary_batcher(geqrf_p)


def geqrf(x):
    """(a, taus): R in a's upper triangle, the Householder reflectors below its diagonal (unit
    diagonal implied), taus their scalar factors; Q = householder_product(a, taus)."""
    a, taus = geqrf_p.bind(x)
    return a, taus
