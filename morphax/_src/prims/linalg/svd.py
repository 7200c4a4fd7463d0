"""`svd`: singular values (descending, real) and, with compute_uv, U and V^H, with the derivative
for distinct nonzero singular values."""

from __future__ import annotations

import enum

import numpy as np

from morphax._src.core.ad_util import is_zero
from morphax._src.core.avals import ShapedArray
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.arithmetic import add, div, mul, sub
from morphax._src.prims.compare import eq
from morphax._src.prims.complex_parts import real
from morphax._src.prims.conversion import convert_element_type
from morphax._src.prims.linalg.matrix_ops import (
    _F32_TOL,
    _H,
    _as_cols,
    _as_rows,
    _check_operand,
    _diag_part,
    _dtype,
    _eye,
    _eye_mask,
    _is_complex,
    _mm,
    _per_matrix,
    _randn,
    _real_dtype,
    _scalar,
    _shape,
    _to_dtype,
    _unary_batcher,
    _zero_tangents,
    _zeros,
)
from morphax._src.prims.selection import select_n

__all__ = ["SvdAlgorithm", "svd_p", "svd"]


class SvdAlgorithm(enum.Enum):
    """Which SVD kernel to use; the reference always runs LAPACK's gesdd."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


svd_p = Primitive("svd", multiple_results=True)
svd_p.kind = Kind.OPAQUE


def _svd_abstract_eval(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    _check_operand("svd", x)
    m, n = x.shape[-2:]
    rank = min(m, n)
    if subset_by_index is not None:
        if full_matrices and tuple(subset_by_index) != (0, rank):
            raise ValueError("full_matrices and subset_by_index cannot both be set")
        rank = min(rank, subset_by_index[1] - subset_by_index[0])
    batch = x.shape[:-2]
    s = ShapedArray(batch + (rank,), _real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    u = ShapedArray(batch + (m, m if full_matrices else rank), x.dtype)
    vh = ShapedArray(batch + (n if full_matrices else rank, n), x.dtype)
    return [s, u, vh]


def _svd_impl(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    x = np.asarray(x)
    rdt = _real_dtype(x.dtype)
    m, n = x.shape[-2:]
    if not compute_uv:
        if x.size == 0:
            s = np.zeros(x.shape[:-2] + (min(m, n),), rdt)
        else:
            try:
                s = np.linalg.svd(x, compute_uv=False)
            except np.linalg.LinAlgError:  # non-finite input: NaNs for that matrix
                (s,) = _per_matrix(lambda a: (np.linalg.svd(a, compute_uv=False),), x)
        if subset_by_index is not None:
            s = s[..., subset_by_index[0] : subset_by_index[1]]
        return [s.astype(rdt)]
    try:
        u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        u, s, vh = _per_matrix(lambda a: np.linalg.svd(a, full_matrices=full_matrices), x)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        s, u, vh = s[..., lo:hi], u[..., :, lo:hi], vh[..., lo:hi, :]
    return [s.astype(rdt), u.astype(x.dtype), vh.astype(x.dtype)]


def _svd_cases(rng):
    out = []
    base = {"subset_by_index": None, "algorithm": None}
    configs = (
        ((3, 3), True, True),
        ((4, 3), False, True),
        ((2, 3, 5), False, True),
        ((2, 4, 3), True, False),
        ((2, 2, 4, 4), True, True),
        ((3, 5), True, True),
        ((1, 1), True, True),
        ((0, 2), False, True),
    )
    for dt in ("float32", "complex64"):
        for shape, full, uv in configs:
            params = dict(base, full_matrices=full, compute_uv=uv)
            out.append(Case((_randn(rng, shape, dt),), params, f"{dt}{list(shape)}-full{full}-uv{uv}"))
    params = dict(base, full_matrices=False, compute_uv=True, subset_by_index=(0, 2))
    out.append(Case((_randn(rng, (4, 3), "float32"),), params, "float32-subset"))
    return out


svd_p.abstract_eval = _svd_abstract_eval


svd_p.impl = _svd_impl


svd_p.test_spec = TestSpec(cases=_svd_cases, tol=_F32_TOL)


_unary_batcher(svd_p)


def svd(x, *, full_matrices=True, compute_uv=True, subset_by_index=None, algorithm=None):
    """Singular value decomposition: (u, s, vh), or s alone without `compute_uv`."""
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    out = svd_p.bind(
        x,
        full_matrices=bool(full_matrices),
        compute_uv=bool(compute_uv),
        subset_by_index=subset,
        algorithm=algorithm,
    )
    if compute_uv:
        s, u, vh = out
        return u, s, vh
    return out[0]


def _diag_matrix(v):
    s = _shape(v)
    return select_n(_eye_mask(s + (s[-1],)), _zeros(s + (s[-1],), _dtype(v)), _as_cols(v, s[-1]))


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
    (a,), (da,) = primals, tangents
    m, n = _shape(a)[-2:]
    outs = svd_p.bind(
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
    dt = _dtype(a)
    s, u, vt = svd_p.bind(
        a, full_matrices=False, compute_uv=True, subset_by_index=subset_by_index, algorithm=algorithm
    )
    ut, v = _H(u), _H(vt)
    ds_mat = _mm(_mm(ut, da), v)
    ds = _diag_part(real(ds_mat) if _is_complex(ds_mat) else ds_mat)
    if not compute_uv:
        return outs, [ds]
    k = _shape(s)[-1]
    rdt = _dtype(s)
    s_row = _as_rows(s, k)  # [i, j] = s_j
    s_col = _as_cols(s, k)  # [i, j] = s_i
    eye = _eye(_shape(s_row), rdt)
    diffs = mul(add(s_row, s_col), sub(s_row, s_col))
    f = _to_dtype(sub(div(_scalar(1, rdt), add(diffs, eye)), eye), dt)
    s_row_c, s_col_c = _to_dtype(s_row, dt), _to_dtype(s_col, dt)
    dss = mul(s_row_c, ds_mat)
    sds = mul(s_col_c, ds_mat)
    s_zero = convert_element_type(eq(s, _scalar(0, rdt)), rdt)
    s_inv = sub(div(_scalar(1, rdt), add(s, s_zero)), s_zero)
    du_dv_diag = mul(mul(sub(ds_mat, _H(ds_mat)), _scalar(0.5, dt)), _to_dtype(_diag_matrix(s_inv), dt))
    du = _mm(u, add(mul(f, add(dss, _H(dss))), du_dv_diag))
    dv = _mm(v, mul(f, add(sds, _H(sds))))
    if m > n:
        dav = _mm(da, v)
        du = add(du, div(sub(dav, _mm(u, _mm(ut, dav))), _to_dtype(_as_rows(s, m), dt)))
    if n > m:
        dahu = _mm(_H(da), u)
        dv = add(dv, div(sub(dahu, _mm(v, _mm(vt, dahu))), _to_dtype(_as_rows(s, n), dt)))
    return outs, [ds, du, _H(dv)]


svd_p.jvp = _svd_jvp
