"""`schur`: the Schur decomposition A = Q T Q^H (LAPACK's gees). T is quasi upper triangular for a
real matrix (2x2 diagonal blocks for complex conjugate eigenvalue pairs) and upper triangular for a
complex one. No derivative rule, as in JAX."""

from __future__ import annotations

import numpy as np

from morphax._src.core.avals import ShapedArray
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.linalg.matrix_ops import _F32_TOL, _check_operand, _per_matrix, _randn, _unary_batcher

__all__ = ["schur_p", "schur"]

_SCIPY_SORTS = ("lhp", "rhp", "iuc", "ouc")


schur_p = Primitive("schur", multiple_results=True)
schur_p.kind = Kind.OPAQUE


def _schur_abstract_eval(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    _check_operand("schur", x, "x")
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The input to schur must be a square matrix. Got shape {x.shape}.")
    if sort_eig_vals and not (callable(select_callable) or select_callable in _SCIPY_SORTS):
        raise ValueError(
            "schur: sort_eig_vals=True needs select_callable, a predicate on eigenvalues (for a real "
            "matrix it receives the real and imaginary parts, for a complex one the eigenvalue, as in "
            f"scipy.linalg.schur's `sort`) or one of {_SCIPY_SORTS}; got {select_callable!r}."
        )
    out = ShapedArray(x.shape, x.dtype)
    return [out, out] if compute_schur_vectors else [out]


def _schur_impl(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    import scipy.linalg

    x = np.asarray(x)
    if x.shape[-1] == 0:
        outs = [np.zeros(x.shape, x.dtype), np.zeros(x.shape, x.dtype)]
    else:
        sort = select_callable if sort_eig_vals else None
        output = "complex" if x.dtype.kind == "c" else "real"
        # With a sort SciPy also returns how many eigenvalues were selected; T and Z come first.
        outs = _per_matrix(lambda m: scipy.linalg.schur(m, output=output, sort=sort)[:2], x)
        outs = [o.astype(x.dtype) for o in outs]
    return outs if compute_schur_vectors else outs[:1]


def _schur_cases(rng):
    out = []
    base = {"sort_eig_vals": False, "select_callable": None}
    for dt in ("float32", "complex64"):
        for shape, vectors in (
            ((4, 4), True),
            ((2, 3, 3), True),
            ((1, 1), True),
            ((3, 3), False),
            ((0, 0), True),
        ):
            out.append(
                Case(
                    (_randn(rng, shape, dt),),
                    dict(base, compute_schur_vectors=vectors),
                    f"{dt}{list(shape)}-v{vectors}",
                )
            )
    out.append(
        Case(
            (_randn(rng, (4, 4), "float32"),),
            {"compute_schur_vectors": True, "sort_eig_vals": True, "select_callable": "lhp"},
            "float32-sorted-lhp",
        )
    )
    return out


schur_p.abstract_eval = _schur_abstract_eval


schur_p.impl = _schur_impl


schur_p.test_spec = TestSpec(cases=_schur_cases, tol=_F32_TOL, differentiable=False)


_unary_batcher(schur_p)


def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    """Schur decomposition x = Q T Q^H: [T, Q], or [T] without `compute_schur_vectors`. T is quasi
    upper triangular for real x (2x2 blocks for complex conjugate pairs), triangular for complex x.
    With `sort_eig_vals`, the eigenvalues `select_callable` selects come first on T's diagonal."""
    # NB: JAX raises NotImplementedError for sort_eig_vals=True; here it follows LAPACK's gees
    # ordering with SciPy's conventions for the predicate (or SciPy's 'lhp'/'rhp'/'iuc'/'ouc').
    return schur_p.bind(
        x,
        compute_schur_vectors=bool(compute_schur_vectors),
        sort_eig_vals=bool(sort_eig_vals),
        select_callable=select_callable,
    )
