"""StableHLO lowering rules of gather and the scatter family, as JAX lowers them: XLA's gather
clamps its starts (CLIP, PROMISE_IN_BOUNDS), FILL_OR_DROP masks the out-of-bounds slices with the
fill value; XLA's scatter drops out-of-bounds windows (FILL_OR_DROP, PROMISE_IN_BOUNDS), CLIP
clamps the indices first. Rule makers for the `stablehlo` slot, like those of `_stablehlo.py`.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.prims._stablehlo import compare_values, i64_array
from morphax._src.prims.gather_scatter_dims import GatherScatterMode


def _dims(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def _dimension_numbers(kind: str, fields, index_vector_dim: int) -> str:
    """`#stablehlo.gather<...>` / `#stablehlo.scatter<...>`; empty fields are left out."""
    text = [f"{name} = {_dims(v)}" for name, v in fields if len(v)]
    text.append(f"index_vector_dim = {int(index_vector_dim)}")
    return f"#stablehlo.{kind}<" + ", ".join(text) + ">"


def _bool(flag) -> str:
    return "true" if flag else "false"


def _index_bounds(ctx, indices, upper):
    """Constant of the indices' shape: `upper[k]` along the index-vector (last) axis, kept within
    the index dtype's range (a bound past its maximum is that maximum: every index is below it)."""
    info = np.iinfo(indices.dtype)
    upper = np.clip(np.asarray(upper, np.int64), 0, int(info.max)).astype(indices.dtype)
    vector = ctx.constant(upper, indices.dtype)
    return ctx.broadcast(vector, indices.shape, [len(indices.shape) - 1])


def _in_bounds(ctx, indices, upper):
    """Bool Value over the index batch: whether each index vector lies in [0, upper]."""
    ok = compare_values(ctx, indices, _index_bounds(ctx, indices, upper), "LE")
    if not _dtypes.is_unsigned(indices.dtype):
        zero = ctx.constant(0, indices.dtype, indices.shape)
        ok = ctx.op1("stablehlo.and", [ok, compare_values(ctx, indices, zero, "GE")], ok)
    init = ctx.constant(True, np.bool_)
    body = ctx.scalar_region(np.bool_, "stablehlo.and")
    attrs = {"dimensions": i64_array([len(indices.shape) - 1])}
    return ctx.op1("stablehlo.reduce", [ok, init], (indices.shape[:-1], np.bool_), attrs, [body])


def gather(default_fill):
    """gather's rule; `default_fill(dtype)` is the fill value when FILL_OR_DROP gives none (as
    JAX: a clamped gather, then `select(in_bounds, gathered, fill)`)."""

    def rule(
        ctx, operand, indices, *, dimension_numbers, slice_sizes, indices_are_sorted, mode, fill_value, **_
    ):
        dn = dimension_numbers
        out = ctx.avals_out[0]
        fields = [
            ("offset_dims", dn.offset_dims),
            ("collapsed_slice_dims", dn.collapsed_slice_dims),
            ("operand_batching_dims", dn.operand_batching_dims),
            ("start_indices_batching_dims", dn.start_indices_batching_dims),
            ("start_index_map", dn.start_index_map),
        ]
        attrs = {
            "dimension_numbers": _dimension_numbers("gather", fields, len(indices.shape) - 1),
            "slice_sizes": i64_array(slice_sizes),
            "indices_are_sorted": _bool(indices_are_sorted),
        }
        gathered = ctx.op1("stablehlo.gather", [operand, indices], out, attrs)
        if mode != GatherScatterMode.FILL_OR_DROP:
            return [gathered]
        upper = [operand.shape[d] - slice_sizes[d] for d in dn.start_index_map]
        mask = _in_bounds(ctx, indices, upper)
        batch_dims = [d for d in range(len(out.shape)) if d not in dn.offset_dims]
        mask = ctx.broadcast(mask, out.shape, batch_dims)
        fill = default_fill(operand.dtype) if fill_value is None else fill_value
        with np.errstate(all="ignore"):
            fill = np.array(fill).astype(operand.dtype)
        fill = ctx.constant(fill, operand.dtype, out.shape)
        return [ctx.op1("stablehlo.select", [mask, gathered, fill], gathered)]

    return rule


def _clamp_indices(ctx, indices, operand, updates, dn):
    """CLIP: each start clamped to [0, operand size - window size], so the whole window fits."""
    window_sizes = iter(updates.shape[d] for d in dn.update_window_dims)
    window = [
        1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims else next(window_sizes)
        for d in range(len(operand.shape))
    ]
    upper = [operand.shape[d] - window[d] for d in dn.scatter_dims_to_operand_dims]
    zero = ctx.constant(0, indices.dtype, indices.shape)
    return ctx.op1("stablehlo.clamp", [zero, indices, _index_bounds(ctx, indices, upper)], indices)


def _lexicographic(ctx, a, b, direction: str):
    """Complex min (LT) / max (GT) as JAX lowers them: by real parts, ties by imaginary parts."""
    part = np.dtype(f"float{a.dtype.itemsize * 4}")
    ra, rb = (ctx.op1("stablehlo.real", [v], ((), part)) for v in (a, b))
    ia, ib = (ctx.op1("stablehlo.imag", [v], ((), part)) for v in (a, b))
    by_real = compare_values(ctx, ra, rb, direction, ())
    by_imag = compare_values(ctx, ia, ib, direction, ())
    pick_a = ctx.op1("stablehlo.select", [compare_values(ctx, ra, rb, "EQ", ()), by_imag, by_real], by_real)
    return ctx.op1("stablehlo.select", [pick_a, a, b], a)


# combiner -> (StableHLO op, its bool op, complex comparison direction or None)
_COMBINERS = {
    "add": ("stablehlo.add", "stablehlo.or", None),
    "mul": ("stablehlo.multiply", "stablehlo.and", None),
    "min": ("stablehlo.minimum", "stablehlo.and", "LT"),
    "max": ("stablehlo.maximum", "stablehlo.or", "GT"),
}


def _combine(ctx, combiner, a, b):
    """The scatter region's result for the current value `a` and the update `b`."""
    if combiner is None:
        return b  # plain scatter: the update replaces the value
    op_name, bool_op, direction = _COMBINERS[combiner]
    if _dtypes.is_bool(a.dtype):
        return ctx.op1(bool_op, [a, b], a)
    if direction is not None and _dtypes.is_complex(a.dtype):
        return _lexicographic(ctx, a, b, direction)
    return ctx.op1(op_name, [a, b], a)


def scatter(combiner=None):
    """A scatter's rule: `combiner` is None (plain scatter: the update wins), "add", "mul", "min"
    or "max"; bool operands combine with or/and, complex min/max lexicographically."""

    def rule(
        ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted, unique_indices, mode, **_
    ):
        dn = dimension_numbers
        if mode == GatherScatterMode.CLIP:
            indices = _clamp_indices(ctx, indices, operand, updates, dn)
        fields = [
            ("update_window_dims", dn.update_window_dims),
            ("inserted_window_dims", dn.inserted_window_dims),
            ("input_batching_dims", dn.operand_batching_dims),
            ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
            ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
        ]
        attrs = {
            "scatter_dimension_numbers": _dimension_numbers("scatter", fields, len(indices.shape) - 1),
            "indices_are_sorted": _bool(indices_are_sorted),
            "unique_indices": _bool(unique_indices),
        }
        scalar = ((), operand.dtype)
        region = ctx.region([scalar, scalar], lambda a, b: [_combine(ctx, combiner, a, b)])
        return ctx.op("stablehlo.scatter", [operand, indices, updates], [operand], attrs, [region])

    return rule
