"""`eigh`: Hermitian eigendecomposition reading one triangle (syevd/heevd): eigenvectors and
ascending real eigenvalues, with the non-degenerate perturbation-theory derivative."""

from __future__ import annotations

import enum

import numpy as np

from morphax._src.core.ad_util import is_zero
from morphax._src.core.avals import ShapedArray
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.arithmetic import add, integer_pow, mul, sub
from morphax._src.prims.complex_parts import real
from morphax._src.prims.linalg.matrix_ops import (
    _F32_TOL,
    _H,
    _as_cols,
    _as_rows,
    _check_operand,
    _diag_part,
    _dtype,
    _eye,
    _herm_from_triangle,
    _is_complex,
    _mm,
    _per_matrix,
    _randn,
    _real_dtype,
    _shape,
    _to_dtype,
    _unary_batcher,
    _zero_tangents,
    symmetrize,
)

__all__ = ["EighImplementation", "eigh_p", "eigh"]


class EighImplementation(enum.Enum):
    """Which eigh kernel to use; the reference always runs LAPACK's syevd/heevd."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


eigh_p = Primitive("eigh", multiple_results=True)
eigh_p.kind = Kind.OPAQUE


def _eigh_abstract_eval(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"Argument to symmetric eigendecomposition must have shape [..., n, n], got shape {x.shape}"
        )
    _check_operand("eigh", x, square=True)
    n = x.shape[-1]
    d = n
    if subset_by_index is not None:
        lo, hi = subset_by_index
        if not 0 <= lo <= hi <= n:
            raise ValueError(
                f"eigh: subset_by_index must satisfy 0 <= start <= end <= {n}, got {subset_by_index}."
            )
        d = hi - lo
    batch = x.shape[:-2]
    return [ShapedArray(batch + (n, d), x.dtype), ShapedArray(batch + (d,), _real_dtype(x.dtype))]


def _eigh_impl(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    x = np.asarray(x)
    uplo = "L" if lower else "U"
    try:
        w, v = np.linalg.eigh(x, UPLO=uplo)
    except np.linalg.LinAlgError:
        w, v = _per_matrix(lambda m: np.linalg.eigh(m, UPLO=uplo), x)
    if subset_by_index is not None:
        lo, hi = subset_by_index
        w, v = w[..., lo:hi], v[..., :, lo:hi]
    return [np.asarray(v).astype(x.dtype), np.asarray(w).astype(_real_dtype(x.dtype))]


def _eigh_cases(rng):
    out = []
    base = {"sort_eigenvalues": True, "subset_by_index": None, "algorithm": None}
    for dt in ("float32", "complex64"):
        for shape, lower in (
            ((3, 3), True),
            ((2, 4, 4), False),
            ((1, 1), True),
            ((2, 2, 3, 3), True),
            ((0, 0), True),
        ):
            a = _randn(rng, shape, dt)
            a = (a + np.conj(np.swapaxes(a, -1, -2))) / 2
            out.append(Case((a.astype(dt),), dict(base, lower=lower), f"{dt}{list(shape)}-lower{lower}"))
    a = _randn(rng, (4, 4), "float32")
    out.append(Case((a + a.T,), dict(base, lower=True, subset_by_index=(1, 3)), "float32-subset"))
    return out


eigh_p.abstract_eval = _eigh_abstract_eval


eigh_p.impl = _eigh_impl


eigh_p.test_spec = TestSpec(cases=_eigh_cases, tol=_F32_TOL)


_unary_batcher(eigh_p)


def eigh(
    x, *, lower=True, symmetrize_input=True, sort_eigenvalues=True, subset_by_index=None, implementation=None
):
    """Hermitian eigendecomposition: (v, w) with eigenvalues w ascending and eigenvectors v[..., :, i]."""
    if symmetrize_input:
        x = symmetrize(x)
    subset = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    v, w = eigh_p.bind(
        x,
        lower=bool(lower),
        sort_eigenvalues=bool(sort_eigenvalues),
        subset_by_index=subset,
        algorithm=implementation,
    )
    return v, w


def _inverse_gaps(w, dtype):
    """F_ij = 1/(w_j - w_i) for i != j and 0 on the diagonal, as `dtype`."""
    n = _shape(w)[-1]
    rdt = _dtype(w)
    eye = _eye(_shape(w) + (n,), rdt)
    gaps = sub(_as_rows(w, n), _as_cols(w, n))
    f = sub(integer_pow(add(eye, gaps), -1), eye)
    return _to_dtype(f, dtype)


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    (a,), (t,) = primals, tangents
    n = _shape(a)[-1]
    outs = eigh_p.bind(
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
    v, w = outs
    a_dot = _herm_from_triangle(t, lower)
    vhav = _mm(_mm(_H(v), a_dot), v)
    dv = _mm(v, mul(_inverse_gaps(w, _dtype(a)), vhav))
    dw = _diag_part(real(vhav) if _is_complex(vhav) else vhav)
    return outs, [dv, dw]


eigh_p.jvp = _eigh_jvp
