"""XLA's general gather and its transpose, scatter-add (each one's derivative rules bind the
other, so they live together), with `_inverse_gather`: the gather that reads back, for every
update of a scatter, the operand element it went to. Dimension numbers, modes and shape checks are
in `gather_scatter_dims.py`, the builder of the scatter primitives in `scatter_builder.py`.

The index vector is always the last axis of the indices (JAX's convention). The reference builds
the full grid of operand positions with NumPy fancy indexing.
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
from morphax._src.prims import _stablehlo_indexing as hlo_indexing
from morphax._src.prims._spec import Case, TestSpec, random_array
from morphax._src.prims.gather_scatter_dims import (
    GATHER_FIELDS,
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    _check_indices,
    _grid,
    _insert_paired,
    _int_tuple,
    _normalize_gather_dnums,
    _oob_indices,
    _shift,
    _starts,
    check_dimension_numbers,
)
from morphax._src.prims.scatter_builder import (
    _ARITH,
    _scatter_primitive,
    _scatter_wrapper,
    def_scatter_jvp,
    def_scatter_transpose,
)

__all__ = ["gather_p", "gather", "scatter_add_p", "scatter_add"]


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
    check_dimension_numbers(name, operand, indices, dn, GATHER_FIELDS, out_rank, ctx)
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
gather_p.stablehlo = hlo_indexing.gather(_default_fill)


def _gdn(offset, collapsed, start_map, obatch=(), ibatch=()):
    return GatherDimensionNumbers(offset, collapsed, start_map, obatch, ibatch)


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

    def rows_filled_with(fill_value):
        return dict(
            dimension_numbers=_gdn((1,), (0,), (0,)),
            slice_sizes=(1, 3),
            indices_are_sorted=False,
            unique_indices=False,
            mode=GatherScatterMode.FILL_OR_DROP,
            fill_value=fill_value,
        )

    idx = np.array([[1], [-1], [4], [5]], np.int32)
    out.append(Case((x, idx), rows_filled_with(None), "float32-default-nan-fill-special"))
    for idt in ("uint8", "int8", "int16"):
        idx = _oob_indices(rng, (4, 1), 5, idt)
        out.append(Case((x, idx), rows_filled_with(-7.5), f"float32-{idt}-indices-fill"))
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
    out = scatter_add_p.bind(
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
    # The paired batching axis takes one element per batch entry: none when the batch is empty.
    new_sizes = tuple(slice_sizes[:d_op]) + (min(1, size),) + tuple(slice_sizes[d_op:])
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
    `slice_sizes` starting there. `mode` None means PROMISE_IN_BOUNDS, as in JAX: an out-of-bounds
    start is clamped so the slice fits (and the transpose drops its cotangent). Under 'fill' the
    default `fill_value` is NaN for inexact dtypes, the minimum (signed) or maximum (unsigned)
    integer, or True."""
    dn = _normalize_gather_dnums(dimension_numbers)
    parsed = GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else GatherScatterMode.from_any(mode)
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


def _inverse_gather(x, indices, updates_shape, params, fill_value=0):
    """Gather from operand-shaped `x`, for every element of the updates, the element it is
    scattered to: the gather with the "same" dimension numbers and mode. Under FILL_OR_DROP the
    updates the scatter drops read `fill_value`."""
    dn = params["dimension_numbers"]
    gdn = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims,
        collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims,
    )
    window = iter(updates_shape[d] for d in dn.update_window_dims)
    slice_sizes = tuple(
        1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims else next(window)
        for d in range(len(aval_of(x).shape))
    )
    mode = params["mode"]
    return gather_p.bind(
        x,
        indices,
        dimension_numbers=gdn,
        slice_sizes=slice_sizes,
        indices_are_sorted=params["indices_are_sorted"],
        unique_indices=params["unique_indices"],
        mode=mode,
        fill_value=fill_value if mode == GatherScatterMode.FILL_OR_DROP else None,
    )


scatter_add_p = _scatter_primitive("scatter-add", np.add, _ARITH)
scatter_add_p.stablehlo = hlo_indexing.scatter("add")
scatter_add = _scatter_wrapper(
    scatter_add_p,
    """Add `updates` into `operand` at the selected windows; duplicates accumulate.""",
)


def _scatter_add_tangent(ans, primals, t_op, t_up, params):
    if is_zero(t_up):
        return t_op
    return scatter_add_p.bind(instantiate(t_op), primals[1], t_up, **params)


def _scatter_add_cotangents(ct, indices, op_aval, up_aval, linear_op, linear_up, params):
    # Linear in both: the operand passes the cotangent through; each update reads it back from
    # where it was added (a dropped update reads 0: it never reached the output).
    up_ct = _inverse_gather(ct, indices, up_aval.shape, params) if linear_up else None
    return (ct if linear_op else None), up_ct


def_scatter_jvp(scatter_add_p, _scatter_add_tangent)
def_scatter_transpose(scatter_add_p, _scatter_add_cotangents)
