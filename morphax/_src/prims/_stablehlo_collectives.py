"""StableHLO rules of the named-axis collectives (collectives.py), for a module lowered for
several replicas, one per device of a pmap: the context maps axis names to replica groups
(`ctx.replica_groups`), as JAX lowers pmap's collectives to cross-replica operations. Outside
such a module the context raises a LoweringError naming the axis. Like _stablehlo.py, imports
nothing of the compiler: rules only call methods of the context they are given.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes

# psum of booleans is an `or`, their pmin an `and` (as the NumPy references combine them).
_BOOL_OPS = {
    "stablehlo.add": "stablehlo.or",
    "stablehlo.maximum": "stablehlo.or",
    "stablehlo.minimum": "stablehlo.and",
}


def all_reduce(op_name: str):
    """psum/pmax/pmin: one `stablehlo.all_reduce` per operand over the named axes' replicas."""

    def rule(ctx, *xs, axes, axis_index_groups):
        groups = ctx.replica_groups(axes, axis_index_groups)
        outs = []
        for x in xs:
            if _dtypes.is_complex(x.dtype) and op_name != "stablehlo.add":
                raise NotImplementedError(f"{ctx.primitive_name} of complex values on the xla backend")
            combine = _BOOL_OPS[op_name] if x.dtype == np.bool_ else op_name
            body = ctx.scalar_region(x.dtype, combine)
            outs.append(ctx.op1("stablehlo.all_reduce", [x], x, {"replica_groups": groups}, [body]))
        return outs

    return rule


def axis_index(ctx, *, axis_name):
    return [ctx.axis_index(axis_name)]


def all_gather(ctx, x, *, axis_name, axis, tiled, axis_index_groups, axis_size):
    out = ctx.avals_out[0]
    if not tiled:  # a new axis of the members' values: gather along a unit axis put there
        shape = list(x.shape)
        shape.insert(axis, 1)
        x = ctx.op1("stablehlo.reshape", [x], (tuple(shape), x.dtype))
    attrs = {
        "all_gather_dim": f"{int(axis)} : i64",
        "replica_groups": ctx.replica_groups((axis_name,), axis_index_groups),
    }
    return [ctx.op1("stablehlo.all_gather", [x], out, attrs)]


def psum_scatter(ctx, x, *, axis_name, scatter_dimension, axis_index_groups, axis_size, tiled):
    out = ctx.avals_out[0]
    shape = list(x.shape)
    shape[scatter_dimension] //= axis_size
    attrs = {
        "scatter_dimension": f"{int(scatter_dimension)} : i64",
        "replica_groups": ctx.replica_groups((axis_name,), axis_index_groups),
    }
    combine = "stablehlo.or" if x.dtype == np.bool_ else "stablehlo.add"
    body = ctx.scalar_region(x.dtype, combine)
    y = ctx.op1("stablehlo.reduce_scatter", [x], (tuple(shape), x.dtype), attrs, [body])
    if not tiled:  # the member's own entry of the scattered axis, without the axis
        y = ctx.op1("stablehlo.reshape", [y], out)
    return [y]


def ppermute(ctx, x, *, axis_name, perm):
    attrs = {"source_target_pairs": ctx.source_target_pairs(axis_name, perm)}
    return [ctx.op1("stablehlo.collective_permute", [x], x, attrs)]


def all_to_all(ctx, x, *, axis_name, split_axis, concat_axis, axis_index_groups, tiled, axis_size):
    attrs = {
        "split_dimension": f"{int(split_axis)} : i64",
        "concat_dimension": f"{int(concat_axis)} : i64",
        "split_count": f"{int(axis_size)} : i64",
        "replica_groups": ctx.replica_groups((axis_name,), axis_index_groups),
    }
    return [ctx.op1("stablehlo.all_to_all", [x], ctx.avals_out[0], attrs)]
