"""`triangular_solve`: op(a) x = b (left_side) or x op(a) = b, reading one triangle of a; nonlinear
in a, linear in b (with its transpose)."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import Zero, add_tangents, is_undefined_primal, is_zero, tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import bdim_to_front, moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.complex_parts import conj
from morphax._src.prims.linalg.matrix_ops import (
    _F32_TOL,
    _T,
    _check_operand,
    _is_complex,
    _mm,
    _randn,
    _shape,
    _tril,
    _triu,
)
from morphax._src.prims.shape import expand_dims, reshape, squeeze
from morphax._src.prims.unary import neg

__all__ = ["triangular_solve_p", "triangular_solve"]


def _triangular_solve_stablehlo(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if conjugate_a and not transpose_a and a.dtype.kind == "c":  # conj(a) alone: conjugate it first
        a = ctx.op1("chlo.conj", [a], a)
    transpose = (
        "ADJOINT"
        if (conjugate_a and transpose_a and a.dtype.kind == "c")
        else "TRANSPOSE"
        if transpose_a
        else "NO_TRANSPOSE"
    )
    attrs = {
        "left_side": "true" if left_side else "false",
        "lower": "true" if lower else "false",
        "unit_diagonal": "true" if unit_diagonal else "false",
        "transpose_a": f"#stablehlo<transpose {transpose}>",
    }
    return [ctx.op1("stablehlo.triangular_solve", [a, b], b, attrs)]


triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.stablehlo = _triangular_solve_stablehlo
triangular_solve_p.kind = Kind.OPAQUE


def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    _check_operand("triangular_solve", a, "a", square=True)
    _check_operand("triangular_solve", b, "b")
    if a.dtype != b.dtype:
        raise TypeError(
            f"triangular_solve requires a and b to have the same dtype, got {a.dtype.name} and {b.dtype.name}."
        )
    if a.ndim != b.ndim:
        raise TypeError(
            "All inputs to triangular_solve must have the same number of batch dimensions, but got "
            f"a of shape {a.shape} and b of shape {b.shape}."
        )
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"triangular_solve: batch dimensions of a {a.shape} and b {b.shape} must be equal.")
    common = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[-1] != common:
        raise ValueError(
            f"Incompatible shapes for arguments to triangular_solve: {a.shape} and {b.shape} "
            f"(left_side={left_side})."
        )
    return ShapedArray(b.shape, b.dtype)


def _triangular_solve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = np.asarray(a), np.asarray(b)
    out = np.empty(b.shape, b.dtype)
    if out.size == 0:
        return out
    import scipy.linalg  # here, not at the top: `import morphax` does not load SciPy

    trsm = scipy.linalg.get_blas_funcs("trsm", (a, b))
    complex_ = _dtypes.is_complex(a.dtype)
    # BLAS trsm solves op(a) with op in {a, a^T, a^H}; conj(a) alone is conj(trsm(a, conj(b))).
    trans = (2 if conjugate_a and complex_ else 1) if transpose_a else 0
    conj_only = conjugate_a and complex_ and not transpose_a
    flat_a = a.reshape((-1,) + a.shape[-2:])
    flat_b = b.reshape((-1,) + b.shape[-2:])
    flat_o = out.reshape((-1,) + b.shape[-2:])
    with np.errstate(all="ignore"):
        for i in range(flat_b.shape[0]):
            rhs = np.conj(flat_b[i]) if conj_only else flat_b[i]
            x = trsm(
                1.0,
                flat_a[i],
                rhs,
                side=0 if left_side else 1,
                lower=int(lower),
                trans_a=trans,
                diag=int(unit_diagonal),
            )
            flat_o[i] = np.conj(x) if conj_only else x
    return out


def _triangular_solve_batch(vals, dims, *, axis_data, left_side, **params):
    a, b = vals
    da, db = dims
    if da is None:
        # a shared by every example: fold the batch into b's free axis and solve once.
        bs = get_aval(b).shape
        nd = len(bs)
        if left_side:
            b = moveaxis(b, db, nd - 1)
            s = get_aval(b).shape
            out = triangular_solve_p.bind(a, _fold(b, left_side=True), left_side=True, **params)
            return reshape(out, s), nd - 1
        b = moveaxis(b, db, nd - 3)
        s = get_aval(b).shape
        out = triangular_solve_p.bind(a, _fold(b, left_side=False), left_side=False, **params)
        return reshape(out, s), nd - 3
    a = moveaxis(a, da, 0)
    b = bdim_to_front(b, db, axis_data.size)
    return triangular_solve_p.bind(a, b, left_side=left_side, **params), 0


def _fold(b, *, left_side):
    """(..., m, n, B) -> (..., m, n*B) for a left solve; (..., B, n, m) -> (..., B*n, m) for a right one."""
    s = get_aval(b).shape
    if left_side:
        return reshape(b, s[:-2] + (s[-2] * s[-1],))
    return reshape(b, s[:-3] + (s[-3] * s[-2], s[-1]))


def _triangular_solve_cases(rng):
    out = []
    configs = (
        ((3, 3), (3, 2), True),
        ((4, 4), (2, 4), False),
        ((2, 3, 3), (2, 3, 4), True),
        ((2, 3, 3), (2, 1, 3), False),
        ((1, 1), (1, 3), True),
        ((3, 3), (3, 0), True),
    )
    flags = (
        dict(lower=True, transpose_a=False, conjugate_a=False, unit_diagonal=False),
        dict(lower=False, transpose_a=True, conjugate_a=False, unit_diagonal=False),
        dict(lower=True, transpose_a=True, conjugate_a=True, unit_diagonal=True),
        dict(lower=False, transpose_a=False, conjugate_a=True, unit_diagonal=False),
    )
    for dt in ("float32", "complex64"):
        for k, (sa, sb, left) in enumerate(configs):
            # A dominant diagonal keeps the solve well conditioned; the unread triangle is random too.
            a = _randn(rng, sa, dt) + (3 * np.eye(sa[-1])).astype(dt)
            b = _randn(rng, sb, dt)
            f = flags[k % len(flags)]
            params = dict(left_side=left, **f)
            tag = "".join(n[0] for n, v in params.items() if v)
            out.append(Case((a, b), params, f"{dt}{list(sa)}{list(sb)}-{tag}"))
    return out


triangular_solve_p.abstract_eval = _triangular_solve_abstract_eval


triangular_solve_p.impl = _triangular_solve_impl


triangular_solve_p.batch = _triangular_solve_batch


triangular_solve_p.test_spec = TestSpec(cases=_triangular_solve_cases, tol=_F32_TOL)


def triangular_solve(
    a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False
):
    """Solve op(a) x = b (left_side) or x op(a) = b for triangular a; op transposes and/or conjugates.
    A `b` with one dimension fewer than `a` is a (batch of) vectors."""
    a_aval, b_aval = get_aval(a), get_aval(b)
    conjugate_a = bool(conjugate_a) and _dtypes.is_complex(a_aval.dtype)
    singleton = b_aval.ndim == a_aval.ndim - 1
    if singleton:
        b = expand_dims(b, (b_aval.ndim if left_side else b_aval.ndim - 1,))
    out = triangular_solve_p.bind(
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        conjugate_a=conjugate_a,
        unit_diagonal=bool(unit_diagonal),
    )
    if singleton:
        nd = len(get_aval(out).shape)
        out = squeeze(out, (nd - 1 if left_side else nd - 2,))
    return out


def _triangular_solve_jvp_a(g_a, ans, a, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    m, n = _shape(ans)[-2:]
    k = 1 if unit_diagonal else 0
    g_a = _tril(g_a, -k) if lower else _triu(g_a, k)
    g_a = neg(g_a)
    if transpose_a:
        g_a = _T(g_a)
    if conjugate_a and _is_complex(g_a):
        g_a = conj(g_a)
    params = dict(
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, **params)

    # Solve against whichever of (g_a, ans) is smaller.
    if left_side:
        return a_inverse(_mm(g_a, ans)) if m > n else _mm(a_inverse(g_a), ans)
    return a_inverse(_mm(ans, g_a)) if m < n else _mm(ans, a_inverse(g_a))


def _triangular_solve_jvp(primals, tangents, **params):
    a, b = primals
    ta, tb = tangents
    ans = triangular_solve_p.bind(a, b, **params)
    out = Zero(tangent_aval(get_aval(ans)))
    if not is_zero(tb):
        out = triangular_solve_p.bind(a, tb, **params)
    if not is_zero(ta):
        out = add_tangents(out, _triangular_solve_jvp_a(ta, ans, a, **params))
    return ans, out


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if is_undefined_primal(a):
        raise ValueError("triangular_solve is not linear in its first argument (a); cannot transpose it")
    if is_zero(ct):
        return [None, Zero(b.aval)]
    ct_b = triangular_solve_p.bind(
        a,
        ct,
        left_side=left_side,
        lower=lower,
        transpose_a=not transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )
    return [None, ct_b]


triangular_solve_p.jvp = _triangular_solve_jvp


triangular_solve_p.transpose = _triangular_solve_transpose


def _trisolve(
    a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False, unit_diagonal=False
):
    return triangular_solve_p.bind(
        a,
        b,
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=bool(conjugate_a and _is_complex(a)),
        unit_diagonal=unit_diagonal,
    )
