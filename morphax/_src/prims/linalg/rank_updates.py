"""Low-rank updates of symmetric matrices: `cholesky_update` (the factor of R^T R + w w^T from R's,
by Givens rotations, O(n^2)) and `symmetric_product` (alpha a a^T + beta c, BLAS's syrk). Real
floating dtypes only and no derivative rules, as in JAX."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.arithmetic import add
from morphax._src.prims.linalg.householder import check_same_batch, check_same_dtype, leading_batcher
from morphax._src.prims.linalg.matrix_ops import _F32_TOL, _T, _check_operand, _tril

__all__ = ["cholesky_update_p", "cholesky_update", "symmetric_product_p", "symmetric_product"]


def _check_real(name, aval, argname):
    if _dtypes.is_complex(aval.dtype):
        raise TypeError(
            f"{name} does not accept dtype {aval.dtype.name} for {argname}: it is defined for real "
            "floating dtypes (float32, float64) only."
        )


# ------------------------------------------------------------------------------ cholesky_update

cholesky_update_p = Primitive("cholesky_update")
cholesky_update_p.kind = Kind.OPAQUE


def _cholesky_update_abstract_eval(r, w):
    _check_operand("cholesky_update", r, "r_matrix")
    _check_real("cholesky_update", r, "r_matrix")
    if w.ndim < 1:
        raise TypeError(f"cholesky_update: w_vector must have rank at least 1, got shape {w.shape}.")
    check_same_dtype("cholesky_update", ("r_matrix", r), ("w_vector", w))
    n = r.shape[-1]
    if r.shape[-2] != n or w.shape[-1] != n:
        raise ValueError(
            "Rank-1 update to Cholesky decomposition takes a square matrix and a vector of the same "
            f"size as input. Got shapes {r.shape} and {w.shape} instead"
        )
    # NB: JAX accepts one matrix only (and has no vmap rule); leading batch dims work here.
    check_same_batch("cholesky_update", ("r_matrix", r, 2), ("w_vector", w, 1))
    return ShapedArray(r.shape, r.dtype)


def _cholesky_update_impl(r, w):
    r = np.array(r, copy=True)
    z = np.array(w, copy=True)
    n = r.shape[-1]
    one, zero = np.ones((), r.dtype), np.zeros((), r.dtype)
    with np.errstate(all="ignore"):
        for k in range(n):
            # A Givens rotation (c, s) that zeroes z[k] against R[k, k], computed on scaled values so
            # it cannot overflow; rotating row k of R with z leaves R[k, k] = hypot(R[k, k], z[k]).
            x, y = r[..., k, k], z[..., k]
            big = np.maximum(np.abs(x), np.abs(y))
            rotate = y != 0
            big = np.where(rotate, big, one)
            xs, ys = x / big, y / big
            rh = one / np.sqrt(xs * xs + ys * ys)
            c = np.where(rotate, xs * rh, one)[..., None]
            s = np.where(rotate, -ys * rh, zero)[..., None]
            row = r[..., k, :].copy()
            r[..., k, :] = c * row - s * z
            z = c * z + s * row
    return r


def _cholesky_update_cases(rng):
    out = []
    for dt in ("float32",):
        for n, batch in ((3, ()), (4, (2,)), (1, ()), (5, ())):
            a = rng.standard_normal(batch + (n, n))
            spd = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
            r = np.swapaxes(np.linalg.cholesky(spd), -1, -2)
            w = rng.standard_normal(batch + (n,))
            out.append(Case((r.astype(dt), w.astype(dt)), {}, f"{dt}-n{n}-batch{list(batch)}"))
    return out


cholesky_update_p.abstract_eval = _cholesky_update_abstract_eval


cholesky_update_p.impl = _cholesky_update_impl


cholesky_update_p.test_spec = TestSpec(cases=_cholesky_update_cases, tol=_F32_TOL, differentiable=False)


leading_batcher(cholesky_update_p)


def cholesky_update(r_matrix, w_vector):
    """Rank-1 update of a Cholesky factorization: given upper-triangular R with A = R^T R and a
    vector w, the upper-triangular factor of A + w w^T, in O(n^2)."""
    return cholesky_update_p.bind(r_matrix, w_vector)


# ---------------------------------------------------------------------------- symmetric_product

symmetric_product_p = Primitive("symmetric_product")
symmetric_product_p.kind = Kind.OPAQUE


def _symmetric_product_abstract_eval(a, c, *, alpha, beta):
    _check_operand("symmetric_product", a, "a_matrix")
    _check_operand("symmetric_product", c, "c_matrix")
    _check_real("symmetric_product", a, "a_matrix")
    check_same_dtype("symmetric_product", ("a_matrix", a), ("c_matrix", c))
    if a.shape[-2] != c.shape[-1] or c.shape[-2] != c.shape[-1]:
        raise ValueError(
            "symmetric_product expects a rectangular matrix of shape (m, n) and a square matrix of "
            f"shape (m, m). Got shapes {a.shape} and {c.shape}."
        )
    check_same_batch("symmetric_product", ("a_matrix", a, 2), ("c_matrix", c, 2))
    return ShapedArray(c.shape, c.dtype)


def _symmetric_product_impl(a, c, *, alpha, beta):
    a, c = np.asarray(a), np.asarray(c)
    dt = c.dtype
    prod = np.matmul(a, np.swapaxes(a, -1, -2))
    # The whole matrix is computed (as JAX's CPU kernel does), not only its lower triangle.
    return (np.asarray(alpha, dt) * prod + np.asarray(beta, dt) * c).astype(dt)


def _symmetric_product_cases(rng):
    out = []
    for dt in ("float32",):
        for sa, alpha, beta in (
            ((3, 2), 1.0, 0.0),
            ((2, 4, 3), 0.5, 2.0),
            ((1, 1), -1.0, 1.0),
            ((3, 5), 2.0, -0.5),
        ):
            a = rng.standard_normal(sa).astype(dt)
            m = sa[-2]
            c = rng.standard_normal(sa[:-2] + (m, m))
            c = (c + np.swapaxes(c, -1, -2)).astype(dt)
            out.append(Case((a, c), {"alpha": alpha, "beta": beta}, f"{dt}{list(sa)}-a{alpha}-b{beta}"))
    return out


symmetric_product_p.abstract_eval = _symmetric_product_abstract_eval


symmetric_product_p.impl = _symmetric_product_impl


symmetric_product_p.test_spec = TestSpec(cases=_symmetric_product_cases, tol=_F32_TOL, differentiable=False)


leading_batcher(symmetric_product_p)


def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """alpha a a^T + beta c for a (..., m, n) and symmetric c (..., m, m). Only the lower triangle is
    guaranteed on every platform; `symmetrize_output` mirrors it into the upper one."""
    out = symmetric_product_p.bind(a_matrix, c_matrix, alpha=float(alpha), beta=float(beta))
    if symmetrize_output:
        out = add(_tril(out), _T(_tril(out, -1)))
    return out
