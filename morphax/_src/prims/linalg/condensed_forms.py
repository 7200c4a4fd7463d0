"""`hessenberg` (gehrd) and `tridiagonal` (sytrd/hetrd): Householder reductions of a square matrix
to upper Hessenberg form and of a Hermitian one to real tridiagonal form, returned in LAPACK's packed
layout (the reduced matrix and the reflectors' vectors share one array; the reflectors' scalar
factors come separately). Neither has a derivative rule, as in JAX."""

from __future__ import annotations

import numpy as np

from morphax._src.core.avals import ShapedArray
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.linalg.matrix_ops import (
    _F32_TOL,
    _check_operand,
    _per_matrix,
    _randn,
    _real_dtype,
    _unary_batcher,
)

__all__ = ["hessenberg_p", "hessenberg", "tridiagonal_p", "tridiagonal"]


def _lapack(name, x):
    # scipy is imported on first use so that importing morphax stays cheap.
    import scipy.linalg

    (fn,) = scipy.linalg.get_lapack_funcs((name,), (x,))
    return fn


def _checked(info, name):
    if info != 0:
        # _per_matrix turns this into NaNs for the one matrix, JAX's convention on failure.
        raise np.linalg.LinAlgError(f"{name} failed with info={info}")


# ------------------------------------------------------------------------------------ hessenberg

hessenberg_p = Primitive("hessenberg", multiple_results=True)
hessenberg_p.kind = Kind.OPAQUE


def _hessenberg_abstract_eval(a):
    _check_operand("hessenberg", a, "a")
    n = a.shape[-1]
    if a.shape[-2] != n:
        raise ValueError(f"Argument to Hessenberg reduction must have shape [..., n, n], got shape {a.shape}")
    if n == 0:
        # NB: JAX fails while compiling (a taus array of size -1); say what is wrong instead.
        raise ValueError(
            "hessenberg: the matrix must be at least 1x1 (its taus have n - 1 entries); got shape "
            f"{a.shape}. jax.scipy.linalg.hessenberg handles the empty case."
        )
    return [ShapedArray(a.shape, a.dtype), ShapedArray(a.shape[:-2] + (n - 1,), a.dtype)]


def _hessenberg_impl(a):
    a = np.asarray(a)
    n = a.shape[-1]
    gehrd = _lapack("gehrd", a)

    def one(m):
        # SciPy's wrapper counts lo/hi from 0: the whole matrix is reduced (LAPACK's ilo=1, ihi=n).
        h, tau, info = gehrd(m, lo=0, hi=n - 1, lwork=max(1, 32 * n))
        _checked(info, "gehrd")
        return h, tau[: n - 1]

    h, tau = _per_matrix(one, a)
    return [h.astype(a.dtype), tau.astype(a.dtype)]


def _hessenberg_cases(rng):
    out = []
    for dt in ("float32", "complex64"):
        for shape in ((4, 4), (2, 3, 3), (1, 1), (2, 2)):
            out.append(Case((_randn(rng, shape, dt),), {}, f"{dt}{list(shape)}"))
    return out


hessenberg_p.abstract_eval = _hessenberg_abstract_eval


hessenberg_p.impl = _hessenberg_impl


hessenberg_p.test_spec = TestSpec(cases=_hessenberg_cases, tol=_F32_TOL, differentiable=False)


_unary_batcher(hessenberg_p)


def hessenberg(a):
    """Reduce square matrices to upper Hessenberg form: (a, taus). The upper triangle and first
    subdiagonal of the returned `a` hold the Hessenberg matrix H, the entries below hold the
    Householder vectors, and `taus` their scalar factors (LAPACK's gehrd layout), so that
    a = Q H Q^H with Q = householder_product(a[..., 1:, :-1], taus) bordered by a leading 1."""
    return hessenberg_p.bind(a)


# ----------------------------------------------------------------------------------- tridiagonal

tridiagonal_p = Primitive("tridiagonal", multiple_results=True)
tridiagonal_p.kind = Kind.OPAQUE


def _tridiagonal_abstract_eval(a, *, lower):
    _check_operand("tridiagonal", a, "a")
    n = a.shape[-1]
    if a.shape[-2] != n or n == 0:
        raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape {a.shape}.")
    batch = a.shape[:-2]
    real = _real_dtype(a.dtype)
    return [
        ShapedArray(a.shape, a.dtype),
        ShapedArray(batch + (n,), real),
        ShapedArray(batch + (n - 1,), real),
        ShapedArray(batch + (n - 1,), a.dtype),
    ]


def _tridiagonal_impl(a, *, lower):
    a = np.asarray(a)
    n = a.shape[-1]
    name = "hetrd" if a.dtype.kind == "c" else "sytrd"
    trd = _lapack(name, a)

    def one(m):
        c, d, e, tau, info = trd(m, lower=int(lower), lwork=max(1, 32 * n))
        _checked(info, name)
        return c, d, e[: n - 1], tau[: n - 1]

    c, d, e, tau = _per_matrix(one, a)
    real = _real_dtype(a.dtype)
    return [c.astype(a.dtype), d.astype(real), e.astype(real), tau.astype(a.dtype)]


def _tridiagonal_cases(rng):
    out = []
    for dt in ("float32", "complex64"):
        for shape, lower in (((4, 4), True), ((2, 3, 3), False), ((1, 1), True), ((3, 3), False)):
            a = _randn(rng, shape, dt)
            a = (a + np.conj(np.swapaxes(a, -1, -2))).astype(dt)
            out.append(Case((a,), {"lower": lower}, f"{dt}{list(shape)}-lower{lower}"))
    return out


tridiagonal_p.abstract_eval = _tridiagonal_abstract_eval


tridiagonal_p.impl = _tridiagonal_impl


tridiagonal_p.test_spec = TestSpec(cases=_tridiagonal_cases, tol=_F32_TOL, differentiable=False)


_unary_batcher(tridiagonal_p)


def tridiagonal(a, *, lower=True):
    """Reduce Hermitian matrices to real symmetric tridiagonal form, reading only the `lower` (or
    upper) triangle: (a, d, e, taus). `d` is the diagonal and `e` the off-diagonal (both real);
    the returned `a` holds them too, with the Householder vectors beyond the off-diagonal, and
    `taus` holds the reflectors' scalar factors (LAPACK's sytrd/hetrd layout)."""
    return tridiagonal_p.bind(a, lower=bool(lower))
