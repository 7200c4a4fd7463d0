"""`tridiagonal_solve`: A x = b for tridiagonal A given by its three diagonals (dl[0] and du[-1]
unused), by LU with partial pivoting (LAPACK's gtsv), or with `perturb_singular` by a scaled-pivoting
LU whose tiny pivots are nudged so numerically singular systems give finite answers (what inverse
iteration needs). Nonlinear in the diagonals, linear in b (with its transpose)."""

from __future__ import annotations

import numpy as np

from morphax._src.core.ad_util import Zero, instantiate, is_undefined_primal, is_zero
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import bdim_to_front, moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.arithmetic import add, mul, sub
from morphax._src.prims.concatenate import concatenate
from morphax._src.prims.conversion import full
from morphax._src.prims.linalg.householder import check_same_dtype
from morphax._src.prims.linalg.matrix_ops import _F32_TOL, _check_operand, _randn, _zeros
from morphax._src.prims.shape import expand_dims, reshape
from morphax._src.prims.slicing import pad, slice_in_dim
from morphax._src.prims.unary import neg

__all__ = ["tridiagonal_solve_p", "tridiagonal_solve"]


tridiagonal_solve_p = Primitive("tridiagonal_solve")
tridiagonal_solve_p.kind = Kind.OPAQUE


def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
    for name, aval in (("dl", dl), ("d", d), ("du", du)):
        if aval.ndim < 1:
            raise TypeError(
                f"Input {name} to tridiagonal_solve must have rank at least 1, got shape {aval.shape}"
            )
    _check_operand("tridiagonal_solve", b, "b")
    check_same_dtype("tridiagonal_solve", ("dl", dl), ("d", d), ("du", du), ("b", b))
    if dl.shape != d.shape or du.shape != d.shape:
        raise TypeError(
            "tridiagonal_solve requires that all diagonal arguments have the same shape; got dl "
            f"{dl.shape}, d {d.shape}, du {du.shape}."
        )
    if b.shape[:-1] != d.shape:
        raise TypeError(
            "tridiagonal_solve requires that the leading ndim-1 dimensions of b equal the dimensions "
            f"of the diagonal arguments; got b {b.shape} and diagonals {d.shape}."
        )
    return ShapedArray(b.shape, b.dtype)


def _gtsv_one(gtsv, dl, d, du, b):
    if d.shape[0] == 1:
        # SciPy's wrapper refuses the empty off-diagonals of a 1x1 system.
        return np.full(b.shape, np.nan, b.dtype) if d[0] == 0 else b / d[0]
    _, _, _, x, info = gtsv(dl[1:], d, du[:-1], b)
    if info != 0:
        return np.full(b.shape, np.nan, b.dtype)  # singular: JAX's NaNs
    return x


def _maybe_perturb(pivot, perturb, row):
    """Nudge a pivot below one (with the sign of its real part) until dividing the right-hand-side
    row by it cannot overflow, as LAPACK's lagts does; returns (pivot, row)."""
    fin = np.finfo(row.dtype)
    safemin = fin.tiny if 1 / fin.max < fin.tiny else (1 / fin.max) * (1 + fin.eps)
    bignum = 1 / safemin
    size = abs(pivot)
    if size >= 1:
        return pivot, row
    perturb = max(abs(perturb), safemin)
    perturb = perturb if np.real(pivot) >= 0 and not np.signbit(np.real(pivot)) else -perturb
    biggest = np.max(np.abs(row)) if row.size else 0.0
    while size < 1:
        if size < safemin:
            if size == 0 or biggest * safemin > size:
                pivot, perturb = pivot + perturb, perturb * 2
            else:
                return pivot * bignum, row * bignum
        elif biggest > size * bignum:
            pivot, perturb = pivot + perturb, perturb * 2
        else:
            break
        size = abs(pivot)
    return pivot, row


def _perturbed_one(dl, d, du, b):
    """LU with scaled partial pivoting (LAPACK's lagtf) fused with the forward solve, then the
    back substitution with perturbed pivots: U is kept as three diagonals u[:, 0..2]."""
    n = d.shape[0]
    dt = b.dtype
    x = np.array(b, dtype=dt, copy=True)
    if n == 0:
        return x
    eps = np.finfo(dt).eps
    if n == 1:
        p, row = _maybe_perturb(d[0], eps * abs(d[0]), x[0])
        x[0] = row / p
        return x
    u = np.zeros((n, 3), dt)
    u[0, 0], u[0, 1] = d[0], du[0]
    max_u = max(abs(u[0, 0]), abs(u[0, 1]))
    scale1 = abs(u[0, 0]) + abs(u[0, 1])
    for k in range(n - 1):
        u[k + 1, 0] = d[k + 1]
        scale2 = abs(dl[k + 1]) + abs(u[k + 1, 0]) + (abs(du[k + 1]) if k < n - 2 else 0)
        if dl[k + 1] == 0:
            scale1 = scale2
            u[k + 1, 1] = du[k + 1]
            u[k, 2] = 0
        else:
            piv1 = 0 if u[k, 0] == 0 else abs(u[k, 0]) / scale1
            piv2 = abs(dl[k + 1]) / scale2
            if piv2 <= piv1:
                scale1 = scale2
                f = dl[k + 1] / u[k, 0]
                u[k + 1, 0] -= f * u[k, 1]
                u[k + 1, 1] = du[k + 1]
                u[k, 2] = 0
                x[k + 1] = x[k + 1] - f * x[k]
            else:
                # Swap rows k and k+1: the subdiagonal entry becomes the pivot.
                f = u[k, 0] / dl[k + 1]
                old = u[k, 1]
                u[k, 0] = dl[k + 1]
                u[k + 1, 0] = old - f * d[k + 1]
                u[k, 1] = d[k + 1]
                if k < n - 2:
                    u[k, 2] = du[k + 1]
                    u[k + 1, 1] = -f * du[k + 1]
                row_k = x[k].copy()
                x[k] = x[k + 1]
                x[k + 1] = row_k - f * x[k + 1]
                scale1 = abs(u[k + 1, 0]) + abs(u[k + 1, 1])
        if k < n - 2:
            max_u = max(max_u, *np.abs(u[k]))
    max_u = max(max_u, abs(u[n - 1, 0]))
    perturb = eps * max_u
    for k in range(n - 1, -1, -1):
        row = x[k].copy()
        if k + 1 < n:
            row = row - u[k, 1] * x[k + 1]
        if k + 2 < n:
            row = row - u[k, 2] * x[k + 2]
        p, row = _maybe_perturb(u[k, 0], perturb, row)
        x[k] = row * (1 / p)
    return x


def _tridiagonal_solve_impl(dl, d, du, b, *, perturb_singular):
    dl, d, du, b = (np.asarray(v) for v in (dl, d, du, b))
    out = np.empty(b.shape, b.dtype)
    if out.size == 0:
        return out
    m = d.shape[-1]
    count = int(np.prod(d.shape[:-1], dtype=np.int64))
    flat = [v.reshape((count, m)) for v in (dl, d, du)]
    flat_b = b.reshape((count,) + b.shape[-2:])
    flat_o = out.reshape(flat_b.shape)
    if not perturb_singular:
        import scipy.linalg

        (gtsv,) = scipy.linalg.get_lapack_funcs(("gtsv",), (flat_b,))
    with np.errstate(all="ignore"):
        for i in range(flat_b.shape[0]):
            args = (flat[0][i], flat[1][i], flat[2][i], flat_b[i])
            flat_o[i] = _perturbed_one(*args) if perturb_singular else _gtsv_one(gtsv, *args)
    return out


def _tridiagonal_solve_cases(rng):
    out = []
    for dt in ("float32", "complex64"):
        for sd, k, perturb in (((3,), 2, False), ((2, 4), 3, False), ((1,), 1, False), ((5,), 1, True)):
            dl, du = _randn(rng, sd, dt), _randn(rng, sd, dt)
            d = (_randn(rng, sd, dt) + 4).astype(dt)  # diagonally dominant: well conditioned
            b = _randn(rng, sd + (k,), dt)
            out.append(Case((dl, d, du, b), {"perturb_singular": perturb}, f"{dt}{list(sd)}-k{k}-p{perturb}"))
    return out


tridiagonal_solve_p.abstract_eval = _tridiagonal_solve_abstract_eval


tridiagonal_solve_p.impl = _tridiagonal_solve_impl


tridiagonal_solve_p.test_spec = TestSpec(cases=_tridiagonal_solve_cases, tol=_F32_TOL)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """Solve A x = b for tridiagonal A with subdiagonal dl (dl[..., i] = A[i, i-1], dl[..., 0]
    unused), diagonal d and superdiagonal du (du[..., i] = A[i, i+1], du[..., -1] unused); b is
    (..., m, k). A singular system gives NaNs, or with `perturb_singular` a finite answer from
    pivots perturbed by about eps * max|U|."""
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))


# --------------------------------------------------------------------------------------- batching


def _tridiagonal_solve_batch(vals, dims, *, axis_data, perturb_singular):
    dl, d, du, b = vals
    ddl, dd, ddu, db = dims
    if ddl is None and dd is None and ddu is None:
        # One matrix for every example: the examples become extra right-hand-side columns.
        nd = len(get_aval(b).shape)
        b = moveaxis(b, db, nd - 2)  # (..., m, B, k)
        s = get_aval(b).shape
        flat = reshape(b, s[:-2] + (s[-2] * s[-1],))
        out = tridiagonal_solve_p.bind(dl, d, du, flat, perturb_singular=perturb_singular)
        return reshape(out, s), nd - 2
    size = axis_data.size
    dl, d, du, b = (bdim_to_front(v, i, size) for v, i in zip(vals, dims))
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular), 0


tridiagonal_solve_p.batch = _tridiagonal_solve_batch


# ------------------------------------------------------------------------------------ derivatives


def _shift_rows(x, down):
    """x shifted by one along its second-to-last axis, zero filled: down gives out[i] = x[i-1]."""
    s = get_aval(x).shape
    ax = len(s) - 2
    if s[ax] == 0:
        return x
    kept = slice_in_dim(x, 0, s[ax] - 1, axis=ax) if down else slice_in_dim(x, 1, s[ax], axis=ax)
    cfg = [(0, 0, 0)] * len(s)
    cfg[ax] = (1, 0, 0) if down else (0, 1, 0)
    return pad(kept, full((), 0, get_aval(x).dtype), cfg)


def _tridiagonal_product(dl, d, du, x):
    """A x for the tridiagonal A of (dl, d, du): (A x)[i] = dl[i] x[i-1] + d[i] x[i] + du[i] x[i+1]."""
    nd = len(get_aval(d).shape)
    col = lambda v: expand_dims(v, (nd,))  # noqa: E731 - (..., m) -> (..., m, 1)
    y = mul(col(d), x)
    y = add(y, mul(col(dl), _shift_rows(x, down=True)))
    return add(y, mul(col(du), _shift_rows(x, down=False)))


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    dl, d, du, b = primals
    tdl, td, tdu, tb = tangents
    ans = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
    if all(is_zero(t) for t in (tdl, td, tdu)):
        rhs = tb
    else:
        # d(A x) = dA x + A dx = db  =>  dx = A^{-1} (db - dA x); the product never reads the unused
        # corners dl[0] and du[-1].
        prod = _tridiagonal_product(instantiate(tdl), instantiate(td), instantiate(tdu), ans)
        rhs = neg(prod) if is_zero(tb) else sub(tb, prod)
    if is_zero(rhs):
        return ans, Zero.from_primal_value(ans)
    return ans, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    if any(is_undefined_primal(v) for v in (dl, d, du)):
        raise ValueError(
            "tridiagonal_solve is linear only in b; it cannot be transposed with respect to its diagonals."
        )
    if is_zero(ct):
        return [None, None, None, Zero(b.aval)]
    # A^T has subdiagonal du shifted down one place and superdiagonal dl shifted up one place.
    s = get_aval(d).shape
    ax = len(s) - 1
    m = s[-1]
    zero = _zeros(s[:-1] + (1,), get_aval(d).dtype)
    if m == 0:
        return [None, None, None, ct]
    dl_t = concatenate([zero, slice_in_dim(du, 0, m - 1, axis=ax)], ax)
    du_t = concatenate([slice_in_dim(dl, 1, m, axis=ax), zero], ax)
    ct_b = tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular)
    return [None, None, None, ct_b]


tridiagonal_solve_p.jvp = _tridiagonal_solve_jvp


tridiagonal_solve_p.transpose = _tridiagonal_solve_transpose
