"""Products of elementary Householder reflectors H_i = I - tau_i v_i v_i^H, with the vectors v_i in
the strictly lower part of a packed matrix (unit diagonal implied), as geqrf and gehrd leave them:
`householder_product` forms Q = H_1 ... H_k (orgqr/ungqr) and `ormqr` applies Q or Q^H to another
matrix without forming it (ormqr/unmqr). Neither has a derivative rule, as in JAX. Also the batching
rule of the linalg primitives with several operands of equal leading (batch) dims."""

from __future__ import annotations

import numpy as np

from morphax._src.core.avals import ShapedArray
from morphax._src.core.batch_axes import bdim_to_front
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._spec import Case, TestSpec
from morphax._src.prims.linalg.matrix_ops import _F32_TOL, _check_operand, _randn

__all__ = ["householder_product_p", "householder_product", "ormqr_p", "ormqr"]


def leading_batcher(prim):
    """Batching for a primitive whose operands share their leading (batch) dims: every batched
    operand's axis goes in front and the unbatched ones are broadcast to match."""

    def rule(vals, dims, *, axis_data, **params):
        vals = [bdim_to_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
        out = prim.bind(*vals, **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0

    prim.batch = rule
    return rule


def check_same_dtype(name, *named):
    dts = {aval.dtype for _, aval in named}
    if len(dts) > 1:
        got = ", ".join(f"{arg}: {aval.dtype.name}" for arg, aval in named)
        raise TypeError(
            f"{name} requires its operands to have one dtype, got {got}. Cast them to a common "
            "dtype (jnp.promote_types) first."
        )


def check_same_batch(name, *named):
    """Operands given as (argname, aval, core rank): their leading dims must agree."""
    batches = {aval.shape[: aval.ndim - rank] for _, aval, rank in named}
    if len(batches) > 1:
        got = ", ".join(f"{arg} {aval.shape}" for arg, aval, _ in named)
        raise ValueError(
            f"{name}: the operands' leading (batch) dimensions must be equal, got {got}. "
            "Broadcast them explicitly, or use vmap."
        )


def _lapack(name, x):
    import scipy.linalg

    (fn,) = scipy.linalg.get_lapack_funcs((name,), (x,))
    return fn


def _stacked(x, core):
    """(batch dims, x viewed with those dims flattened into one leading axis)."""
    x = np.asarray(x)
    batch = x.shape[: x.ndim - core]
    return batch, x.reshape((int(np.prod(batch, dtype=np.int64)),) + x.shape[x.ndim - core :])


# --------------------------------------------------------------------------- householder_product

householder_product_p = Primitive("householder_product")
householder_product_p.kind = Kind.OPAQUE


def _householder_product_abstract_eval(a, taus):
    _check_operand("householder_product", a, "a")
    if taus.ndim < 1:
        raise TypeError(f"householder_product: taus must have rank at least 1, got shape {taus.shape}.")
    check_same_dtype("householder_product", ("a", a), ("taus", taus))
    check_same_batch("householder_product", ("a", a, 2), ("taus", taus, 1))
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError(
            "The first argument to householder_product must have at least as many rows as columns, "
            f"got shape {a.shape}"
        )
    if taus.shape[-1] > min(m, n):
        raise ValueError(
            "The second argument to householder_product must not have more rows than the minimum of "
            f"the first argument's rows and columns: taus {taus.shape}, a {a.shape}."
        )
    return ShapedArray(a.shape, a.dtype)


def _householder_product_impl(a, taus):
    a, taus = np.asarray(a), np.asarray(taus)
    _, flat_a = _stacked(a, 2)
    _, flat_t = _stacked(taus, 1)
    m, n = a.shape[-2:]
    k = taus.shape[-1]
    out = np.empty(flat_a.shape, a.dtype)
    if out.size == 0:
        return out.reshape(a.shape)
    orgqr = _lapack("ungqr" if a.dtype.kind == "c" else "orgqr", a)
    for i in range(flat_a.shape[0]):
        if k == 0:
            out[i] = np.eye(m, n, dtype=a.dtype)  # the empty product
            continue
        q, _, info = orgqr(flat_a[i], flat_t[i], lwork=max(1, 32 * n))
        out[i] = q if info == 0 else np.nan
    return out.reshape(a.shape)


def _householder_product_cases(rng):
    out = []
    for dt in ("float32", "complex64"):
        for sa, k in (((4, 3), 3), ((3, 3), 2), ((2, 5, 3), 3), ((1, 1), 1), ((4, 2), 0)):
            a = _randn(rng, sa, dt)
            taus = (0.5 * _randn(rng, sa[:-2] + (k,), dt)).astype(dt)
            out.append(Case((a, taus), {}, f"{dt}{list(sa)}-k{k}"))
    return out


householder_product_p.abstract_eval = _householder_product_abstract_eval


householder_product_p.impl = _householder_product_impl


householder_product_p.test_spec = TestSpec(
    cases=_householder_product_cases, tol=_F32_TOL, differentiable=False
)


leading_batcher(householder_product_p)


def householder_product(a, taus):
    """Q = H_1 ... H_k, the product of the elementary reflectors H_i = I - taus[i] v_i v_i^H whose
    vectors v_i are the strictly lower columns of `a` (m x n, m >= n) with a unit diagonal: the
    first n columns of Q, shaped like `a`."""
    return householder_product_p.bind(a, taus)


# ------------------------------------------------------------------------------------------ ormqr

ormqr_p = Primitive("ormqr")
ormqr_p.kind = Kind.OPAQUE


def _ormqr_abstract_eval(a, taus, c, *, left, transpose):
    _check_operand("ormqr", a, "a")
    _check_operand("ormqr", c, "c")
    if taus.ndim < 1:
        raise TypeError(f"ormqr: taus must have rank at least 1, got shape {taus.shape}.")
    check_same_dtype("ormqr", ("a", a), ("taus", taus), ("c", c))
    check_same_batch("ormqr", ("a", a, 2), ("taus", taus, 1), ("c", c, 2))
    m, n = a.shape[-2:]
    if left and c.shape[-2] != m:
        raise ValueError(
            "ormqr with left=True expects c to have the same number of rows as the Householder matrix "
            f"a. Got a shape {a.shape} and c shape {c.shape}."
        )
    if not left and c.shape[-1] != m:
        raise ValueError(
            "ormqr with left=False expects c to have the same number of columns as the Householder "
            f"matrix a has rows. Got a shape {a.shape} and c shape {c.shape}."
        )
    if taus.shape[-1] > min(m, n):
        # NB: JAX does not check this and reads past a's columns; LAPACK needs k <= min(m, n).
        raise ValueError(
            f"ormqr: taus has {taus.shape[-1]} reflectors but a {a.shape} holds at most min(m, n) = "
            f"{min(m, n)} of them."
        )
    return ShapedArray(c.shape, c.dtype)


def _ormqr_impl(a, taus, c, *, left, transpose):
    a, taus, c = np.asarray(a), np.asarray(taus), np.asarray(c)
    _, flat_a = _stacked(a, 2)
    _, flat_t = _stacked(taus, 1)
    _, flat_c = _stacked(c, 2)
    k = taus.shape[-1]
    out = np.array(flat_c, dtype=c.dtype, copy=True)
    if out.size == 0 or k == 0:
        return out.reshape(c.shape)
    complex_ = c.dtype.kind == "c"
    mqr = _lapack("unmqr" if complex_ else "ormqr", c)
    trans = ("C" if complex_ else "T") if transpose else "N"
    side = "L" if left else "R"
    lwork = max(1, 64 * max(c.shape[-2:]))
    for i in range(flat_c.shape[0]):
        # LAPACK takes exactly the k columns that hold reflectors.
        r, _, info = mqr(side, trans, np.ascontiguousarray(flat_a[i][:, :k]), flat_t[i], flat_c[i], lwork)
        out[i] = r if info == 0 else np.nan
    return out.reshape(c.shape)


def _ormqr_cases(rng):
    out = []
    configs = (
        ((4, 3), 3, (4, 2), True, False),
        ((4, 3), 3, (2, 4), False, True),
        ((2, 3, 3), 2, (2, 3, 3), True, True),
        ((3, 5), 3, (2, 3), False, False),
        ((1, 1), 1, (1, 2), True, False),
    )
    for dt in ("float32", "complex64"):
        for sa, k, sc, left, transpose in configs:
            a = _randn(rng, sa, dt)
            taus = (0.5 * _randn(rng, sa[:-2] + (k,), dt)).astype(dt)
            c = _randn(rng, sc, dt)
            out.append(
                Case(
                    (a, taus, c),
                    {"left": left, "transpose": transpose},
                    f"{dt}{list(sa)}-k{k}-c{list(sc)}-left{left}-t{transpose}",
                )
            )
    return out


ormqr_p.abstract_eval = _ormqr_abstract_eval


ormqr_p.impl = _ormqr_impl


ormqr_p.test_spec = TestSpec(cases=_ormqr_cases, tol=_F32_TOL, differentiable=False)


leading_batcher(ormqr_p)


def ormqr(a, taus, c, *, left=True, transpose=False):
    """Multiply `c` by the Q of a QR factorization held as Householder reflectors (`a` and `taus`
    as geqrf leaves them) without forming Q: Q c (left), Q^H c (left, transpose), c Q, or c Q^H;
    Q^H is the plain transpose for real dtypes."""
    return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))
