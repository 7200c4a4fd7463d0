"""`eig`: general eigendecomposition (geev): complex eigenvalues and the left and/or right
eigenvectors (unit 2-norm, largest component real), with the eigenvalue derivative and opt-in
eigenvector derivatives."""

from __future__ import annotations

import enum

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import is_zero
from morphax._src.core.avals import ShapedArray
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims import arithmetic, complex_parts
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.arithmetic import add, div, mul, sub
from morphax._src.prims.compare import eq
from morphax._src.prims.complex_parts import conj, imag, real
from morphax._src.prims.conversion import broadcasted_iota, convert_element_type
from morphax._src.prims.linalg.lu import solve
from morphax._src.prims.linalg.matrix_ops import (
    _F32_TOL,
    _H,
    _T,
    _as_cols,
    _as_rows,
    _check_operand,
    _diag_part,
    _dtype,
    _eye,
    _mm,
    _per_matrix,
    _randn,
    _scalar,
    _shape,
    _to_dtype,
    _unary_batcher,
    _zero_tangents,
)
from morphax._src.prims.reductions import argmax, reduce_sum
from morphax._src.prims.shape import broadcast_in_dim
from morphax._src.prims.unary import neg

__all__ = ["EigImplementation", "eig_p", "eig"]


class EigImplementation(enum.Enum):
    """Which eig kernel to use; the reference always runs LAPACK's geev."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


eig_p = Primitive("eig", multiple_results=True)
eig_p.kind = Kind.OPAQUE


def _eig_abstract_eval(
    x, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs, implementation
):
    _check_operand("eig", x, square=True)
    cdt = np.dtype(_dtypes.to_complex_dtype(x.dtype))
    out = [ShapedArray(x.shape[:-1], cdt)]
    out += [ShapedArray(x.shape, cdt)] * (int(compute_left_eigenvectors) + int(compute_right_eigenvectors))
    return out


def _eig_impl(
    x, *, compute_left_eigenvectors, compute_right_eigenvectors, enable_eigvec_derivs, implementation
):
    x = np.asarray(x)
    cdt = np.dtype(_dtypes.to_complex_dtype(x.dtype))
    nv = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    if x.size == 0:
        return [np.zeros(x.shape[:-1], cdt)] + [np.zeros(x.shape, cdt)] * nv

    def one(a):
        if not np.all(np.isfinite(a)):
            raise np.linalg.LinAlgError("non-finite input")
        import scipy.linalg  # here, not at the top: `import morphax` does not load SciPy

        w, vl, vr = scipy.linalg.eig(a, left=True, right=True, check_finite=False)
        res = [w]
        if compute_left_eigenvectors:
            res.append(vl)
        if compute_right_eigenvectors:
            res.append(vr)
        return res

    with np.errstate(all="ignore"):
        outs = _per_matrix(one, x)
    return [o.astype(cdt) for o in outs]


def _eig_cases(rng):
    out = []
    flags = (
        (False, False, False),
        (False, True, True),
        (True, True, True),
        (True, False, True),
    )
    for dt in ("float32", "complex64"):
        for k, shape in enumerate(((3, 3), (2, 4, 4), (2, 2, 3, 3), (1, 1), (2, 2))):
            left, right, derivs = flags[k % len(flags)]
            params = {
                "compute_left_eigenvectors": left,
                "compute_right_eigenvectors": right,
                "enable_eigvec_derivs": derivs,
                "implementation": None,
            }
            out.append(Case((_randn(rng, shape, dt),), params, f"{dt}{list(shape)}-l{left:d}r{right:d}"))
    return out


eig_p.abstract_eval = _eig_abstract_eval


eig_p.impl = _eig_impl


eig_p.test_spec = TestSpec(cases=_eig_cases, tol=_F32_TOL, grad_order=2)


_unary_batcher(eig_p)


def eig(
    x,
    *,
    compute_left_eigenvectors=True,
    compute_right_eigenvectors=True,
    enable_eigvec_derivs=False,
    implementation=None,
    use_magma=None,
):
    """General eigendecomposition: [w, vl?, vr?]. Eigenvector derivatives need enable_eigvec_derivs
    (valid for distinct eigenvalues under LAPACK's normalization)."""
    del use_magma
    out = eig_p.bind(
        x,
        compute_left_eigenvectors=bool(compute_left_eigenvectors),
        compute_right_eigenvectors=bool(compute_right_eigenvectors),
        enable_eigvec_derivs=bool(enable_eigvec_derivs),
        implementation=implementation,
    )
    return list(out)


def _eig_vec_jvp(w, v, da):
    n = _shape(w)[-1]
    nd = len(_shape(v))
    cdt = _dtype(v)
    eye = _eye(_shape(w) + (n,), cdt)
    fmat = sub(div(_scalar(1, cdt), add(eye, sub(_as_rows(w, n), _as_cols(w, n)))), eye)
    p = _mm(solve(v, da), v)
    dw = _diag_part(p)
    u = _mm(v, mul(fmat, p))
    # dv_j = u_j + c_j v_j; the two real normalization constraints fix c_j.
    k = argmax(arithmetic.abs(v), nd - 2, np.int32)
    rows = broadcasted_iota(np.int32, _shape(v), nd - 2)
    mask = convert_element_type(
        eq(rows, broadcast_in_dim(k, _shape(v), tuple(i for i in range(nd) if i != nd - 2))), cdt
    )
    re = neg(real(reduce_sum(mul(conj(v), u), (nd - 2,))))
    im = neg(div(imag(reduce_sum(mul(mask, u), (nd - 2,))), real(reduce_sum(mul(mask, v), (nd - 2,)))))
    c = complex_parts.complex(re, im)
    dv = add(u, mul(v, broadcast_in_dim(c, _shape(v), tuple(i for i in range(nd) if i != nd - 2))))
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
    outs = eig_p.bind(a, **params)
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
    full = eig_p.bind(
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
        dw = reduce_sum(mul(solve(vr, da), _T(vr)), (nd - 1,))
        return outs, [dw]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    tangents_out = [dw]
    if compute_left_eigenvectors:
        _, dvl = _eig_vec_jvp(conj(w), full[1], _H(da))
        tangents_out.append(dvl)
    if compute_right_eigenvectors:
        tangents_out.append(dvr)
    return outs, tangents_out


eig_p.jvp = _eig_jvp
