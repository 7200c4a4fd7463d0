"""Value-selection primitives: `select_n` (elementwise choice among cases by a bool or integer
`which`) and `clamp`, with the lax helpers `select_n`, `select` and `clamp`. Imports the core only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import (
    Zero,
    aval_of,
    instantiate,
    is_undefined_primal,
    is_zero,
    tangent_aval,
    zeros_like_aval,
)
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.batch_axes import moveaxis
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.core.values import make_array
from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import broadcast_to_shape, defjvp
from morphax._src.prims._spec import DTYPES_FOR_CLASS, Case, TestSpec, random_array
from morphax._src.prims.bitwise import bitwise_and
from morphax._src.prims.builders import check_dtype, same_dtypes
from morphax._src.prims.compare import gt, lt
from morphax._src.prims.shape import broadcast_in_dim

__all__ = ["clamp", "clamp_p", "select", "select_n", "select_n_p"]


# -------------------------------------------------------------------------------------------- select_n


def _select_n_abstract_eval(which, *cases):
    if not cases:
        raise TypeError("select_n: must have at least one case.")
    if any(c.shape != cases[0].shape for c in cases[1:]):
        raise TypeError(
            f"select_n: cases must have the same shapes, got {', '.join(str(c.shape) for c in cases)}."
        )
    same_dtypes("select_n", cases)
    if not (_dtypes.is_bool(which.dtype) or _dtypes.is_integer(which.dtype)):
        raise TypeError(f"select_n: `which` must be a boolean or integer array, got {which.str_short()}.")
    if _dtypes.is_bool(which.dtype) and len(cases) > 2:
        raise TypeError(
            f"select_n: a boolean `which` selects between at most 2 cases, got {len(cases)}. Use an integer "
            "`which` for more cases."
        )
    if which.shape and which.shape != cases[0].shape:
        raise TypeError(
            f"select_n: `which` must be a scalar or have the same shape as the cases, got `which` shape "
            f"{which.shape} and case shape {cases[0].shape}."
        )
    return ShapedArray(cases[0].shape, cases[0].dtype, all(c.weak_type for c in cases))


def _select_n_impl(which, *cases):
    which = np.asarray(which)
    n = len(cases)
    # Out-of-range `which` is implementation-defined in XLA; JAX lowers select_n to a tree of
    # `which < k` comparisons, which amounts to clamping into [0, n - 1]. We clamp.
    if _dtypes.is_unsigned(which.dtype):
        idx = np.minimum(which, n - 1).astype(np.int64)
    else:
        idx = np.clip(which.astype(np.int64), 0, n - 1)
    out = np.array(np.broadcast_to(cases[0], np.broadcast_shapes(idx.shape, cases[0].shape)))
    for k in range(1, n):
        out = np.where(idx == k, cases[k], out)
    return np.asarray(out, dtype=cases[0].dtype)


def _select_n_stablehlo(ctx, which, *cases):
    # A bool `which` picks between two cases; an integer one is clamped into range and tested
    # against each k (out-of-range values take the nearest case, as the reference does).
    shape = ctx.avals_out[0].shape
    cases = [hlo.broadcast_operand(ctx, c, shape) for c in cases]
    which = hlo.broadcast_operand(ctx, which, shape)
    if len(cases) == 1:
        return [cases[0]]
    if which.dtype == np.bool_:
        return [ctx.op1("stablehlo.select", [which, cases[1], cases[0]], cases[0])]
    out = cases[0]
    for k in range(1, len(cases)):
        at_least_k = hlo.compare_values(ctx, which, ctx.constant(k, which.dtype, shape), "GE")
        out = ctx.op1("stablehlo.select", [at_least_k, cases[k], out], out)
    return [out]


select_n_p = Primitive("select_n")
select_n_p.stablehlo = _select_n_stablehlo
select_n_p.kind = Kind.ELEMENTWISE
select_n_p.kernel_op = "select_n"
select_n_p.impl = _select_n_impl
select_n_p.abstract_eval = _select_n_abstract_eval


def _select_n_cases(rng):
    out = []
    for dt in DTYPES_FOR_CLASS["any"] + ("bfloat16",):
        for shape in ((), (3,), (2, 3), (0,), (1, 4)):
            c0, c1 = random_array(rng, shape, dt), random_array(rng, shape, dt)
            out.append(Case((rng.random(shape) < 0.5, c0, c1), {}, f"{dt}{list(shape)}-bool"))
            out.append(Case((np.array(True), c0, c1), {}, f"{dt}{list(shape)}-bool-scalar"))
    for wdt in ("int32", "uint8", "int8", "uint32"):
        for shape in ((), (7,), (2, 3)):
            cases = tuple(random_array(rng, shape, "float32") for _ in range(4))
            lo = -3 if np.dtype(wdt).kind == "i" else 0
            which = rng.integers(lo, 7, size=shape).astype(wdt)  # includes out-of-range values
            out.append(Case((which, *cases), {}, f"{wdt}-which{list(shape)}-4cases"))
        one = random_array(rng, (2, 2), "int32")
        out.append(Case((np.array(5, wdt), one), {}, f"{wdt}-which-1case"))
    return out


select_n_p.test_spec = TestSpec(cases=_select_n_cases)


def _select_n_jvp(primals, tangents):
    # Linear in the cases; `which` only picks (integer/bool: no tangent).
    ans = select_n_p.bind(*primals)
    out_t = tangent_aval(aval_of(ans))
    case_ts = tangents[1:]
    if out_t.dtype == _dtypes.float0 or all(is_zero(t) for t in case_ts):
        return ans, Zero(out_t)
    return ans, select_n_p.bind(primals[0], *[instantiate(t) for t in case_ts])


def _select_n_transpose(ct, which, *cases):
    if is_undefined_primal(which):
        raise ValueError("select_n: the `which` operand cannot be a linear input of a transpose.")
    if is_zero(ct):
        return [None] + [Zero(c.aval) if is_undefined_primal(c) else None for c in cases]
    zeros = zeros_like_aval(aval_of(ct))  # keeps the weak type, as JAX's full_like(ct, 0)
    out = [None]
    for i, c in enumerate(cases):
        if is_undefined_primal(c):
            picked = [ct if j == i else zeros for j in range(len(cases))]
            out.append(select_n_p.bind(which, *picked))
        else:
            out.append(None)
    return out


select_n_p.jvp = _select_n_jvp
select_n_p.transpose = _select_n_transpose


def _to_batched(v, d, bd, shape, size, scalar_ok):
    """`v` (an operand that is rank-0 or shaped like `shape`, the unbatched operand shape) as an
    array of `shape` with the batch axis at `bd`; an unbatched rank-0 `v` stays as it is when
    `scalar_ok` (lax broadcasts scalars itself)."""
    bshape = shape[:bd] + (size,) + shape[bd:]
    rank = len(get_aval(v).shape) - (d is not None)
    if d is None:
        if rank == 0 and scalar_ok:
            return v
        keep = () if rank == 0 else tuple(k for k in range(len(bshape)) if k != bd)
        return broadcast_in_dim(v, bshape, keep)
    if rank == 0:
        return broadcast_in_dim(v, bshape, (bd,))
    return moveaxis(v, d, bd)


def _common_batch_axis(vals, dims, shape, prefer):
    """Where the result's batch axis goes: the axis of the first batched operand among `prefer`
    (indices into vals) that has the full shape; 0 if none (only batched scalars)."""
    for i in prefer:
        v, d = vals[i], dims[i]
        if d is not None and len(get_aval(v).shape) - 1 == len(shape):
            return d
    return 0


def _select_n_batch(vals, dims, *, axis_data):
    # `which` may be rank-0 or case-shaped, and any operand batched or not. A batched `which` or
    # batched cases force everything to the batched case shape, which then shares one batch axis
    # (the one already used by a batched `which` or the first batched case, so moves are rare);
    # an unbatched rank-0 `which` stays rank-0.
    which, cases = vals[0], vals[1:]
    shape = get_aval(cases[0]).shape
    if dims[1] is not None:
        shape = shape[: dims[1]] + shape[dims[1] + 1 :]
    bd = _common_batch_axis(vals, dims, shape, range(len(vals)))
    size = axis_data.size
    which = _to_batched(which, dims[0], bd, shape, size, scalar_ok=True)
    cases = [_to_batched(c, d, bd, shape, size, scalar_ok=False) for c, d in zip(cases, dims[1:])]
    return select_n_p.bind(which, *cases), bd


select_n_p.batch = _select_n_batch


def select_n(which, *cases):
    """Elementwise ``cases[which]``: `which` is bool (at most 2 cases) or integer, scalar or case-shaped.

    Out-of-range integer `which` values clamp to the first or last case (XLA leaves it undefined).
    """
    if not cases:
        raise ValueError("select_n() must have at least one case")
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """Elementwise ``on_true if pred else on_false``."""
    return select_n_p.bind(pred, on_false, on_true)


# ----------------------------------------------------------------------------------------------- clamp


def _clamp_abstract_eval(lo, x, hi):
    for arg, aval in (("min", lo), ("max", hi)):
        if aval.shape and aval.shape != x.shape:
            raise TypeError(
                f"clamp requires {arg}.shape == operand.shape or {arg}.shape == (), got {arg} {aval.str_short()} "
                f"for operand {x.str_short()}."
            )
    dt = same_dtypes("clamp", (lo, x, hi))
    check_dtype("clamp", dt, "real")
    return ShapedArray(x.shape, dt, lo.weak_type and x.weak_type and hi.weak_type)


def _clamp_impl(lo, x, hi):
    # XLA's clamp is min(max(x, lo), hi): NaN anywhere propagates, and lo > hi gives hi.
    return np.asarray(np.minimum(np.maximum(x, lo), hi), dtype=x.dtype)


clamp_p = Primitive("clamp")


def _clamp_stablehlo(ctx, lo, x, hi):
    out = ctx.avals_out[0]
    if out.dtype == np.bool_:
        # min(max(x, lo), hi) of booleans is (x | lo) & hi: XLA's TPU compiler has no boolean
        # clamp ("not implemented for these element types"), every compiler has `or` and `and`.
        lo, hi = (hlo.broadcast_operand(ctx, v, out.shape) for v in (lo, hi))
        return [ctx.op1("stablehlo.and", [ctx.op1("stablehlo.or", [x, lo], out), hi], out)]
    return [ctx.op1("stablehlo.clamp", [lo, x, hi], out)]


clamp_p.stablehlo = _clamp_stablehlo
clamp_p.kind = Kind.ELEMENTWISE
clamp_p.kernel_op = "clamp"
clamp_p.impl = _clamp_impl
clamp_p.abstract_eval = _clamp_abstract_eval


def _clamp_cases(rng):
    out = []
    for dt in DTYPES_FOR_CLASS["real"] + ("bfloat16", "int8"):
        for sl, sx, sh in (
            ((), (), ()),
            ((), (5,), ()),
            ((5,), (5,), (5,)),
            ((), (2, 3), (2, 3)),
            ((2, 3), (2, 3), ()),
            ((), (0,), ()),
            ((1, 4), (1, 4), (1, 4)),
        ):
            lo = random_array(rng, sl, dt, (-5, 0))
            hi = random_array(rng, sh, dt, (0, 5))
            out.append(
                Case((lo, random_array(rng, sx, dt, (-8, 8)), hi), {}, f"{dt}{list(sl)}{list(sx)}{list(sh)}")
            )
    sp = np.array([np.nan, -np.inf, np.inf, -1.0, 0.0, 2.0, -0.0], np.float32)
    out.append(Case((np.array(-1.0, np.float32), sp, np.array(1.0, np.float32)), {}, "float32-specials"))
    out.append(Case((np.array(np.nan, np.float32), sp, np.array(1.0, np.float32)), {}, "float32-nan-bound"))
    out.append(Case((np.array(2.0, np.float32), sp, np.array(1.0, np.float32)), {}, "float32-min-above-max"))
    return out


clamp_p.test_spec = TestSpec(cases=_clamp_cases)


# JAX's partials: the operand's tangent passes where min < x < max strictly; min's where
# x < min < max; max's where max < x. Ties (x equal to a bound) and min > max give zero.
def _zeros_like_operand(x):
    return zeros_like_aval(tangent_aval(aval_of(x)))


def _clamp_min_jvp(g, ans, lo, x, hi):
    pred = bitwise_and(gt(lo, x), lt(lo, hi))
    return select(pred, broadcast_to_shape(g, aval_of(x).shape), _zeros_like_operand(x))


def _clamp_operand_jvp(g, ans, lo, x, hi):
    pred = bitwise_and(gt(x, lo), lt(x, hi))
    return select(pred, g, _zeros_like_operand(x))


def _clamp_max_jvp(g, ans, lo, x, hi):
    return select(lt(hi, x), broadcast_to_shape(g, aval_of(x).shape), _zeros_like_operand(x))


defjvp(clamp_p, _clamp_min_jvp, _clamp_operand_jvp, _clamp_max_jvp)


def _clamp_batch(vals, dims, *, axis_data):
    # Like select_n: the bounds may be rank-0 or operand-shaped, any of the three batched. The
    # operand gets the batch (its own axis when batched); unbatched rank-0 bounds stay scalars.
    x, dx = vals[1], dims[1]
    shape = get_aval(x).shape
    if dx is not None:
        shape = shape[:dx] + shape[dx + 1 :]
    bd = _common_batch_axis(vals, dims, shape, (1, 0, 2))
    size = axis_data.size
    lo, x, hi = (
        _to_batched(v, d, bd, shape, size, scalar_ok=k != 1) for k, (v, d) in enumerate(zip(vals, dims))
    )
    return clamp_p.bind(lo, x, hi), bd


clamp_p.batch = _clamp_batch


def clamp(min, x, max):  # noqa: A002 - JAX's parameter names
    """Elementwise ``min(max(x, min), max)``; `min` and `max` are scalars or shaped like `x`."""
    args = [min, x, max]
    ref = (
        x
        if not _dtypes.is_python_scalar(x)
        else next((a for a in args if not _dtypes.is_python_scalar(a)), None)
    )
    if ref is not None:
        dt = get_aval(ref).dtype
        args = [make_array(a, dt, weak_type=True) if _dtypes.is_python_scalar(a) else a for a in args]
    return clamp_p.bind(*args)
