"""What gather and every scatter share: XLA's dimension numbers (`GatherDimensionNumbers`,
`ScatterDimensionNumbers`), the out-of-bounds `GatherScatterMode`, the shape checks that name
the offending argument, and the index arithmetic of their references and batching rules.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.prims.shape import broadcast_in_dim

__all__ = ["GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode"]


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


# The dimension-number fields gather and scatter check alike: (window dims of the result/updates,
# operand dims the index selects and drops, index batching dims, the index-to-operand map).
GATHER_FIELDS = ("offset_dims", "collapsed_slice_dims", "start_indices_batching_dims", "start_index_map")
SCATTER_FIELDS = (
    "update_window_dims",
    "inserted_window_dims",
    "scatter_indices_batching_dims",
    "scatter_dims_to_operand_dims",
)


def check_dimension_numbers(name, operand, indices, dn, fields, window_rank, ctx):
    """The checks gather's and every scatter's dimension numbers share, naming `fields` (one of
    GATHER_FIELDS / SCATTER_FIELDS) in their messages; `window_rank` is the rank the window dims
    index (the gather's output, the scatter's updates)."""
    window, dropped, index_batching, index_map = fields
    _check_dims(name, getattr(dn, window), window_rank, window, ctx)
    _check_dims(name, getattr(dn, dropped), operand.ndim, dropped, ctx)
    _check_disjoint(
        name, getattr(dn, dropped), dn.operand_batching_dims, dropped, "operand_batching_dims", ctx
    )
    batching = getattr(dn, index_batching)
    _check_batching(name, operand, indices, dn.operand_batching_dims, batching, index_batching, ctx)
    _check_index_map(name, getattr(dn, index_map), dn.operand_batching_dims, indices, operand, index_map, ctx)


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


def _oob_indices(rng, shape, size, dtype="int32", oob=True):
    lo, hi = (-2, size + 1) if oob else (0, max(size - 1, 0))
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def _shift(dims, at):
    """Axis numbers after inserting a new axis at `at`."""
    return tuple(d + (d >= at) for d in dims)


def _broadcast_at(x, pos, size):
    """Unbatched `x` with a new axis of `size` inserted at `pos`."""
    shape = tuple(get_aval(x).shape)
    rank = len(shape) + 1
    dims = tuple(i for i in range(rank) if i != pos)
    return broadcast_in_dim(x, shape[:pos] + (size,) + shape[pos:], dims)


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
