"""`cholesky`: the lower Cholesky factor, reading only the lower triangle (LAPACK potrf), with its
derivative L' = L Phi(L^{-1} S' L^{-H}) (Murray 2016, arXiv:1602.07527)."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.arithmetic import mul
from morphax._src.prims.linalg.matrix_ops import (
    _F32_TOL,
    _check_operand,
    _dtype,
    _eye_mask,
    _herm_from_triangle,
    _mm,
    _per_matrix,
    _randn,
    _scalar,
    _shape,
    _tril,
    _unary_batcher,
    symmetrize,
)
from morphax._src.prims.linalg.triangular_solve import _trisolve
from morphax._src.prims.selection import select_n

__all__ = ["cholesky_p", "cholesky"]


def _hermitian_pd(rng, shape, dt):
    a = _randn(rng, shape, dt).astype(np.complex128 if _dtypes.is_complex(np.dtype(dt)) else np.float64)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt)


cholesky_p = Primitive("cholesky")
cholesky_p.kind = Kind.OPAQUE
# StableHLO's cholesky reads the lower triangle, as the reference does (a matrix that is not
# positive definite gives NaN in XLA and in JAX).
cholesky_p.stablehlo = lambda ctx, x: [ctx.op1("stablehlo.cholesky", [x], x, {"lower": "true"})]


def _cholesky_abstract_eval(x):
    _check_operand("cholesky", x, square=True)
    return ShapedArray(x.shape, x.dtype)


def _cholesky_impl(x):
    x = np.asarray(x)
    try:
        out = np.linalg.cholesky(x)
    except np.linalg.LinAlgError:
        (out,) = _per_matrix(lambda m: (np.linalg.cholesky(m),), x)
    return np.asarray(out).astype(x.dtype)


def _cholesky_cases(rng):
    out = []
    for dt in ("float32", "complex64"):
        for shape in ((3, 3), (2, 4, 4), (1, 1), (2, 3, 2, 2), (0, 0)):
            out.append(Case((_hermitian_pd(rng, shape, dt),), {}, f"{dt}{list(shape)}"))
    # The upper triangle is never read: garbage there leaves the result alone.
    a = _hermitian_pd(rng, (3, 3), "float32")
    a[0, 2] = 100.0
    out.append(Case((a,), {}, "float32-upper-ignored"))
    return out


cholesky_p.abstract_eval = _cholesky_abstract_eval


cholesky_p.impl = _cholesky_impl


cholesky_p.test_spec = TestSpec(cases=_cholesky_cases, tol=_F32_TOL)


_unary_batcher(cholesky_p)


def cholesky(x, *, symmetrize_input: bool = True):
    """Lower Cholesky factor L with x = L L^H; NaNs where x is not positive definite. Without
    `symmetrize_input` only the lower triangle of x is read."""
    if symmetrize_input:
        x = symmetrize(x)
    return cholesky_p.bind(x)


def _cholesky_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    lc = cholesky_p.bind(x)
    if is_zero(t):
        return lc, Zero(tangent_aval(get_aval(lc)))
    sigma = _herm_from_triangle(t, lower=True)
    tmp = _trisolve(lc, sigma, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    inner = _trisolve(lc, tmp, left_side=True, lower=True)
    phi = select_n(_eye_mask(_shape(inner)), _tril(inner, -1), mul(inner, _scalar(0.5, _dtype(inner))))
    return lc, _mm(lc, phi)


cholesky_p.jvp = _cholesky_jvp
