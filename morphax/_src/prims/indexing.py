"""XLA's general gather: dimension numbers and out-of-bounds modes shared with the scatter family
(`scatter.py`), the shape checks both use, and the `gather` primitive with its derivative rules.

The index vector is always the last axis of the indices (JAX's convention). The reference builds
the full grid of operand positions with NumPy fancy indexing.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.ad_util import tangent_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.prims._ad import Zero, _lax, is_undefined_primal, is_zero, zeros_like_aval
from morphax._src.prims._batching import moveaxis
from morphax._src.prims._spec import Case, TestSpec, random_array

__all__ = [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "gather",
    "gather_p",
]


class GatherDimensionNumbers(NamedTuple):
    """How a gather maps index vectors to operand slices (XLA's GatherDimensionNumbers).

    offset_dims: output axes that hold the (non-collapsed) slice axes, in operand order.
    collapsed_slice_dims: operand axes whose slice size is 1 and that are dropped from the output.
    start_index_map: for each entry of an index vector, the operand axis it starts.
    operand_batching_dims / start_indices_batching_dims: paired axes that index in lockstep.
    """

    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter maps update windows into the operand (XLA's ScatterDimensionNumbers).

    update_window_dims: axes of `updates` that are window axes (the others match the index batch).
    inserted_window_dims: operand axes of window size 1 that `updates` does not carry.
    scatter_dims_to_operand_dims: for each entry of an index vector, the operand axis it starts.
    operand_batching_dims / scatter_indices_batching_dims: paired axes that index in lockstep.
    """

    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


class GatherScatterMode(enum.Enum):
    """Out-of-bounds handling. CLIP clamps each start so the whole slice/window is in bounds;
    FILL_OR_DROP returns `fill_value` for gathers whose slice is not fully in bounds and drops
    such scatter updates; PROMISE_IN_BOUNDS leaves it to the backend (XLA clamps gathers and drops
    scatter updates, and so do the references here)."""

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()

    @staticmethod
    def from_any(s):
        """Like JAX: a mode, 'clip', 'fill' / 'drop' / None (-> FILL_OR_DROP), 'promise_in_bounds'."""
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{s}"; use "clip", "fill", "drop" or "promise_in_bounds".')


def _int_tuple(x, what):
    try:
        return tuple(int(d) for d in x)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of ints, got {x!r}") from None


def _normalize_gather_dnums(dn) -> GatherDimensionNumbers:
    if not isinstance(dn, tuple) or not 3 <= len(dn) <= 5:
        raise TypeError(f"gather: dimension_numbers must be a lax.GatherDimensionNumbers, got {dn!r}")
    return GatherDimensionNumbers(*(_int_tuple(f, "gather dimension_numbers fields") for f in dn))


def _normalize_scatter_dnums(name, dn) -> ScatterDimensionNumbers:
    if not isinstance(dn, tuple) or not 3 <= len(dn) <= 5:
        raise TypeError(f"{name}: dimension_numbers must be a lax.ScatterDimensionNumbers, got {dn!r}")
    return ScatterDimensionNumbers(*(_int_tuple(f, f"{name} dimension_numbers fields") for f in dn))


# ------------------------------------------------------------------------------------------------
# Validation helpers shared by gather and scatter (XLA's shape inference checks).


def _check_dims(name, dims, rank, what, ctx, sorted_=True):
    if sorted_ and tuple(sorted(dims)) != tuple(dims):
        raise TypeError(f"{name}: {what} in dimension_numbers must be sorted, got {dims} ({ctx}).")
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name}: {what} in dimension_numbers must not repeat, got {dims} ({ctx}).")
    for d in dims:
        if not 0 <= d < rank:
            raise TypeError(f"{name}: {what} {dims} must lie in [0, {rank}) ({ctx}).")


def _check_disjoint(name, a, b, what_a, what_b, ctx):
    common = sorted(set(a) & set(b))
    if common:
        raise TypeError(
            f"{name}: {what_a} {a} and {what_b} {b} must be disjoint, both contain {common} ({ctx})."
        )


def _check_indices(name, indices: ShapedArray, ctx):
    if not _dtypes.is_integer(indices.dtype):
        raise TypeError(f"{name}: indices must have an integer dtype, got {indices.dtype.name} ({ctx}).")
    if indices.ndim < 1:
        raise TypeError(
            f"{name}: indices must have at least 1 dimension (the last one holds the index vectors), "
            f"got {indices.str_short()} ({ctx}). Reshape a scalar index to shape (1,)."
        )


def _check_index_map(name, index_map, batching, indices, operand, what, ctx):
    _check_dims(name, index_map, operand.ndim, what, ctx, sorted_=False)
    if len(index_map) != indices.shape[-1]:
        raise TypeError(
            f"{name}: {what} has {len(index_map)} entries but the index vectors (last axis of the indices) "
            f"have {indices.shape[-1]} ({ctx})."
        )
    _check_disjoint(name, index_map, batching, what, "operand_batching_dims", ctx)


def _check_batching(name, operand, indices, op_bdims, idx_bdims, idx_what, ctx):
    _check_dims(name, op_bdims, operand.ndim, "operand_batching_dims", ctx)
    _check_dims(name, idx_bdims, indices.ndim - 1, idx_what, ctx, sorted_=False)
    if len(op_bdims) != len(idx_bdims):
        raise TypeError(
            f"{name}: operand_batching_dims {op_bdims} and {idx_what} {idx_bdims} must have the same length ({ctx})."
        )
    for od, idim in zip(op_bdims, idx_bdims):
        if operand.shape[od] != indices.shape[idim]:
            raise TypeError(
                f"{name}: operand batching axis {od} (size {operand.shape[od]}) and indices batching axis "
                f"{idim} (size {indices.shape[idim]}) must have the same size ({ctx})."
            )


def _starts(indices, operand_shape, index_map, op_bdims, idx_bdims, window, clamp):
    """Per batch position, the full start vector (one int64 array of the batch shape per operand
    axis) and a mask of positions whose whole slice/window lies in bounds."""
    batch = indices.shape[:-1]
    idx = indices.astype(np.int64)
    if indices.dtype == np.uint64:  # values past int64's range are out of bounds, not negative
        idx = np.where(indices > np.uint64(np.iinfo(np.int64).max), np.iinfo(np.int64).max, idx)
    starts = [np.zeros(batch, np.int64) for _ in operand_shape]
    valid = np.ones(batch, bool)
    for k, d in enumerate(index_map):
        s = idx[..., k]
        upper = operand_shape[d] - window[d]
        valid &= (s >= 0) & (s <= upper)
        starts[d] = np.clip(s, 0, max(upper, 0)) if clamp else s
    for od, idim in zip(op_bdims, idx_bdims):
        shape = [1] * len(batch)
        shape[idim] = batch[idim]
        starts[od] = np.broadcast_to(np.arange(batch[idim], dtype=np.int64).reshape(shape), batch)
    return starts, valid


def _grid(starts, window_axes, window_shape, nbatch):
    """Operand positions of shape batch + window for each operand axis."""
    nw = len(window_shape)
    out = []
    for d, s in enumerate(starts):
        g = s.reshape(s.shape + (1,) * nw)
        if d in window_axes:
            j = window_axes.index(d)
            shape = [1] * (nbatch + nw)
            shape[nbatch + j] = window_shape[j]
            g = g + np.arange(window_shape[j], dtype=np.int64).reshape(shape)
        out.append(g)
    return np.broadcast_arrays(*out) if out else out


# ------------------------------------------------------------------------------------------------
# gather

gather_p = Primitive("gather")
gather_p.kind = Kind.GATHER


def _gather_abstract_eval(
    operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted, unique_indices, mode, fill_value
):
    name = "gather"
    dn = dimension_numbers
    ctx = f"operand {operand.str_short()}, indices {indices.str_short()}, {dn}, slice_sizes={slice_sizes}"
    if not isinstance(dn, GatherDimensionNumbers):
        raise TypeError(f"gather: dimension_numbers must be a GatherDimensionNumbers, got {dn!r}")
    if not isinstance(mode, GatherScatterMode):
        raise TypeError(f"gather: mode must be a GatherScatterMode, got {mode!r}")
    _check_indices(name, indices, ctx)
    batch_rank = indices.ndim - 1
    out_rank = len(dn.offset_dims) + batch_rank
    _check_dims(name, dn.offset_dims, out_rank, "offset_dims", ctx)
    _check_dims(name, dn.collapsed_slice_dims, operand.ndim, "collapsed_slice_dims", ctx)
    _check_disjoint(
        name,
        dn.collapsed_slice_dims,
        dn.operand_batching_dims,
        "collapsed_slice_dims",
        "operand_batching_dims",
        ctx,
    )
    _check_batching(
        name,
        operand,
        indices,
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
        "start_indices_batching_dims",
        ctx,
    )
    _check_index_map(
        name, dn.start_index_map, dn.operand_batching_dims, indices, operand, "start_index_map", ctx
    )
    if len(slice_sizes) != operand.ndim:
        raise TypeError(
            f"gather: slice_sizes must have one entry per operand axis ({operand.ndim}), got {ctx}."
        )
    n_window = operand.ndim - len(dn.collapsed_slice_dims) - len(dn.operand_batching_dims)
    if len(dn.offset_dims) != n_window:
        raise TypeError(
            "gather: every operand axis must be an offset dim, collapsed, or batching: the operand has "
            f"{operand.ndim} axes but offset_dims has {len(dn.offset_dims)}, collapsed_slice_dims "
            f"{len(dn.collapsed_slice_dims)} and operand_batching_dims {len(dn.operand_batching_dims)} ({ctx})."
        )
    for d, (s, size) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= s <= size:
            raise TypeError(f"gather: slice size {s} for operand axis {d} must lie in [0, {size}] ({ctx}).")
    for d in dn.collapsed_slice_dims:
        if slice_sizes[d] != 1:
            raise TypeError(
                f"gather: collapsed axis {d} must have slice size 1, got {slice_sizes[d]} ({ctx})."
            )
    for d in dn.operand_batching_dims:
        if slice_sizes[d] > 1:
            raise TypeError(
                f"gather: batching axis {d} must have slice size 0 or 1, got {slice_sizes[d]} ({ctx})."
            )
    window = [
        s
        for d, s in enumerate(slice_sizes)
        if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    ]
    wit, bit = iter(window), iter(indices.shape[:-1])
    shape = tuple(next(wit) if i in dn.offset_dims else next(bit) for i in range(out_rank))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


def _default_fill(dtype):
    # JAX's defaults: NaN for inexact types, the minimum signed / maximum unsigned integer, True.
    if _dtypes.is_inexact(dtype):
        return np.nan
    if _dtypes.is_unsigned(dtype):
        return int(_dtypes.iinfo(dtype).max)
    if _dtypes.is_integer(dtype):
        return int(_dtypes.iinfo(dtype).min)
    if _dtypes.is_bool(dtype):
        return True
    raise ValueError(f"gather: unsupported dtype for fill_value {dtype}")


def _gather_impl(
    operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted, unique_indices, mode, fill_value
):
    dn = dimension_numbers
    nbatch = indices.ndim - 1
    window_axes = [
        d
        for d in range(operand.ndim)
        if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
    ]
    window_shape = [slice_sizes[d] for d in window_axes]
    # XLA clamps gather starts for PROMISE_IN_BOUNDS too; FILL_OR_DROP clamps, then masks.
    starts, valid = _starts(
        indices,
        operand.shape,
        dn.start_index_map,
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
        slice_sizes,
        clamp=True,
    )
    grid = _grid(starts, window_axes, window_shape, nbatch)
    out = operand[tuple(grid)] if grid else np.broadcast_to(operand, indices.shape[:-1]).copy()
    if mode == GatherScatterMode.FILL_OR_DROP:
        fill = _default_fill(operand.dtype) if fill_value is None else fill_value
        with np.errstate(all="ignore"):
            fill = np.array(fill).astype(operand.dtype)
        out = np.where(valid.reshape(valid.shape + (1,) * len(window_shape)), out, fill)
    # Output axes: offset_dims take the window axes in order, the rest the batch axes in order.
    w, b = iter(range(nbatch, nbatch + len(window_shape))), iter(range(nbatch))
    perm = [next(w) if i in dn.offset_dims else next(b) for i in range(out.ndim)]
    return np.transpose(out, perm)


gather_p.impl = _gather_impl
gather_p.abstract_eval = _gather_abstract_eval


def _gdn(offset, collapsed, start_map, obatch=(), ibatch=()):
    return GatherDimensionNumbers(offset, collapsed, start_map, obatch, ibatch)


def _oob_indices(rng, shape, size, dtype="int32", oob=True):
    lo, hi = (-2, size + 1) if oob else (0, max(size - 1, 0))
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def _gather_cases(rng):
    out = []
    modes = (GatherScatterMode.FILL_OR_DROP, GatherScatterMode.CLIP)
    for dt in ("float32", "bfloat16", "int32", "uint8", "int8", "bool", "complex64"):
        x53 = random_array(rng, (5, 3), dt)
        x35 = random_array(rng, (3, 5), dt)
        x45 = random_array(rng, (4, 5), dt)
        x6 = random_array(rng, (6,), dt)
        patterns = (
            # name, operand, indices shape, index bound, dnums, slice_sizes
            ("x[i]", x53, (1,), 5, _gdn((0,), (0,), (0,)), (1, 3)),
            ("x[idx]", x53, (4, 1), 5, _gdn((1,), (0,), (0,)), (1, 3)),
            ("x[idx2d]", x53, (2, 3, 1), 5, _gdn((2,), (0,), (0,)), (1, 3)),
            ("x[:,idx]", x35, (4, 1), 5, _gdn((0,), (1,), (1,)), (3, 1)),
            ("x[i,j]", x45, (6, 2), 4, _gdn((), (0, 1), (0, 1)), (1, 1)),
            ("x[j,i]-map", x45, (6, 2), 4, _gdn((), (0, 1), (1, 0)), (1, 1)),
            ("windows", x6, (3, 1), 6, _gdn((1,), (), (0,)), (2,)),
            ("windows-first", x6, (3, 1), 6, _gdn((0,), (), (0,)), (3,)),
            ("take_along", x35, (3, 2, 1), 5, _gdn((), (1,), (1,), (0,), (0,)), (1, 1)),
            ("empty-idx", x53, (0, 1), 5, _gdn((1,), (0,), (0,)), (1, 3)),
            ("zero-slice", x53, (2, 1), 5, _gdn((1, 2), (), (0,)), (1, 0)),
        )
        # Inexact cases fill with a finite value, so finite differences see a constant; the default
        # NaN fill has its own (special) case below.
        fill = -7.5 if _dtypes.is_inexact(np.dtype(dt)) else None
        for name, x, ishape, bound, dn, ss in patterns:
            for mode in modes:
                idx = _oob_indices(rng, ishape, bound)
                params = dict(
                    dimension_numbers=dn,
                    slice_sizes=ss,
                    indices_are_sorted=False,
                    unique_indices=False,
                    mode=mode,
                    fill_value=fill if mode == GatherScatterMode.FILL_OR_DROP else None,
                )
                out.append(Case((x, idx), params, f"{dt}-{name}-{mode.name}"))
            idx = _oob_indices(rng, ishape, bound, oob=False)
            params = dict(
                dimension_numbers=dn,
                slice_sizes=ss,
                indices_are_sorted=False,
                unique_indices=False,
                mode=GatherScatterMode.PROMISE_IN_BOUNDS,
                fill_value=None,
            )
            out.append(Case((x, idx), params, f"{dt}-{name}-PROMISE"))
    x = random_array(rng, (5, 3), "float32")
    params = dict(
        dimension_numbers=_gdn((1,), (0,), (0,)),
        slice_sizes=(1, 3),
        indices_are_sorted=False,
        unique_indices=False,
        mode=GatherScatterMode.FILL_OR_DROP,
        fill_value=None,
    )
    idx = np.array([[1], [-1], [4], [5]], np.int32)
    out.append(Case((x, idx), params, "float32-default-nan-fill-special"))
    for idt in ("uint8", "int8", "int16"):
        idx = _oob_indices(rng, (4, 1), 5, idt)
        params = dict(
            dimension_numbers=_gdn((1,), (0,), (0,)),
            slice_sizes=(1, 3),
            indices_are_sorted=False,
            unique_indices=False,
            mode=GatherScatterMode.FILL_OR_DROP,
            fill_value=-7.5,
        )
        out.append(Case((x, idx), params, f"float32-{idt}-indices-fill"))
    return out


gather_p.test_spec = TestSpec(cases=_gather_cases)


def _gather_jvp(primals, tangents, **params):
    # Linear in the operand; the indices are integers and carry no tangent. Filled (out-of-bounds)
    # entries are constants, so their tangent is 0 rather than the primal fill value.
    operand, indices = primals
    ans = gather_p.bind(operand, indices, **params)
    t = tangents[0]
    out_aval = tangent_aval(get_aval(ans))
    if is_zero(t) or out_aval.dtype == _dtypes.float0:
        return ans, Zero(out_aval)
    fill = 0 if params["mode"] == GatherScatterMode.FILL_OR_DROP else None
    return ans, gather_p.bind(t, indices, **dict(params, fill_value=fill))


def _gather_transpose(
    ct,
    operand,
    indices,
    *,
    dimension_numbers,
    slice_sizes,
    indices_are_sorted,
    unique_indices,
    mode,
    fill_value,
):
    # Scatter-add the cotangent back where each slice came from (duplicates accumulate). The
    # scatter uses the same mode: CLIP clamps the windows exactly as the gather clamped the slices,
    # FILL_OR_DROP drops the updates whose slices were filled (they had no operand dependence).
    if is_undefined_primal(indices):
        raise ValueError("gather: cannot transpose with respect to the (integer) indices")
    aval = operand.aval
    if is_zero(ct):
        return [Zero(aval), None]
    dn = dimension_numbers
    sdn = ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims,
        inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims,
    )
    zeros = zeros_like_aval(ShapedArray(aval.shape, get_aval(ct).dtype, False))
    out = _lax().scatter_add_p.bind(
        zeros,
        indices,
        ct,
        dimension_numbers=sdn,
        indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices,
        mode=mode,
        update_jaxpr=None,
        update_consts=(),
    )
    return [out, None]


gather_p.jvp = _gather_jvp
gather_p.transpose = _gather_transpose


# Batching helpers shared with the scatter family.


def _shift(dims, at):
    """Axis numbers after inserting a new axis at `at`."""
    return tuple(d + (d >= at) for d in dims)


def _broadcast_at(x, pos, size):
    """Unbatched `x` with a new axis of `size` inserted at `pos`."""
    shape = tuple(get_aval(x).shape)
    rank = len(shape) + 1
    dims = tuple(i for i in range(rank) if i != pos)
    return _lax().broadcast_in_dim(x, shape[:pos] + (size,) + shape[pos:], dims)


def _insertion_window(window, k, rank):
    """Range [lo, hi] of positions where a new axis can be inserted into an array of `rank`
    whose sorted axis list `window` then has the new axis as its k-th member."""
    lo = window[k - 1] + 1 if k > 0 else 0
    hi = window[k] if k < len(window) else rank
    return lo, hi


def _insert_paired(obd, ibd, od, idim):
    """Add the pair (od, idim) to the paired batching dims, keeping the operand side sorted."""
    pairs = sorted(zip(obd + (od,), ibd + (idim,)))
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def _gather_batch(vals, dims, *, axis_data, dimension_numbers, slice_sizes, **params):
    # Operand only: its batch axis becomes one more full-size slice axis. Indices only: their batch
    # axis becomes one more index batch axis (so an output batch axis). Both: a paired batching axis.
    operand, indices = vals
    d_op, d_idx = dims
    size = axis_data.size
    dn = dimension_numbers
    out_rank = len(dn.offset_dims) + len(get_aval(indices).shape) - (d_idx is not None) - 1
    if d_idx is None:
        window = [
            d
            for d in range(len(slice_sizes))
            if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims
        ]
        k = sum(1 for d in window if d < d_op)
        q = dn.offset_dims[k - 1] + 1 if k > 0 else 0
        new_dn = GatherDimensionNumbers(
            offset_dims=tuple(dn.offset_dims[:k]) + (q,) + tuple(o + 1 for o in dn.offset_dims[k:]),
            collapsed_slice_dims=_shift(dn.collapsed_slice_dims, d_op),
            start_index_map=_shift(dn.start_index_map, d_op),
            operand_batching_dims=_shift(dn.operand_batching_dims, d_op),
            start_indices_batching_dims=dn.start_indices_batching_dims,
        )
        new_sizes = tuple(slice_sizes[:d_op]) + (size,) + tuple(slice_sizes[d_op:])
        out = gather_p.bind(operand, indices, dimension_numbers=new_dn, slice_sizes=new_sizes, **params)
        return out, q
    # The indices' batch axis must not be the index-vector (last) axis.
    idx_rank = len(get_aval(indices).shape)
    if d_idx == idx_rank - 1:
        indices = moveaxis(indices, d_idx, idx_rank - 2)
        d_idx = idx_rank - 2
    batch_pos = [i for i in range(out_rank) if i not in dn.offset_dims]
    q = batch_pos[d_idx] if d_idx < len(batch_pos) else (batch_pos[-1] + 1 if batch_pos else 0)
    offset_dims = _shift(dn.offset_dims, q)
    sib = _shift(dn.start_indices_batching_dims, d_idx)
    if d_op is None:
        new_dn = dn._replace(offset_dims=offset_dims, start_indices_batching_dims=sib)
        out = gather_p.bind(operand, indices, dimension_numbers=new_dn, slice_sizes=slice_sizes, **params)
        return out, q
    obd, sib = _insert_paired(_shift(dn.operand_batching_dims, d_op), sib, d_op, d_idx)
    new_dn = GatherDimensionNumbers(
        offset_dims=offset_dims,
        collapsed_slice_dims=_shift(dn.collapsed_slice_dims, d_op),
        start_index_map=_shift(dn.start_index_map, d_op),
        operand_batching_dims=obd,
        start_indices_batching_dims=sib,
    )
    new_sizes = tuple(slice_sizes[:d_op]) + (1,) + tuple(slice_sizes[d_op:])
    out = gather_p.bind(operand, indices, dimension_numbers=new_dn, slice_sizes=new_sizes, **params)
    return out, q


gather_p.batch = _gather_batch


def gather(
    operand,
    start_indices,
    dimension_numbers,
    slice_sizes,
    *,
    unique_indices=False,
    indices_are_sorted=False,
    mode=None,
    fill_value=None,
):
    """XLA gather: for each index vector (last axis of `start_indices`) take the operand slice of
    `slice_sizes` starting there. `mode` None means FILL_OR_DROP, whose default `fill_value` is
    NaN for inexact dtypes, the minimum (signed) or maximum (unsigned) integer, or True."""
    dn = _normalize_gather_dnums(dimension_numbers)
    parsed = GatherScatterMode.from_any(mode)
    if parsed == GatherScatterMode.FILL_OR_DROP:
        if fill_value is None:
            fill_value = _default_fill(get_aval(operand).dtype)
    else:
        fill_value = None
    return gather_p.bind(
        operand,
        start_indices,
        dimension_numbers=dn,
        slice_sizes=_int_tuple(slice_sizes, "gather slice_sizes"),
        indices_are_sorted=bool(indices_are_sorted),
        unique_indices=bool(unique_indices),
        mode=parsed,
        fill_value=fill_value,
    )
