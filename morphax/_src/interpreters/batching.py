"""`morphax.interpreters.batching` (`jax.interpreters.batching`): vmap rules.

``primitive_batchers[p] = rule`` with ``rule(args, dims, **params) -> (out, out_dims)`` (dims an
axis or `not_mapped` per argument); `axis_primitive_batchers` rules also get the axis size and name
first, and `fancy_primitive_batchers` rules the `AxisData`.
"""

from __future__ import annotations

from morphax._src.core.batch_axes import AxisData, bdim_to_front, moveaxis
from morphax._src.extend.primitives import (
    axis_primitive_batchers,
    defbroadcasting,
    defreducer,
    defvectorized,
    fancy_primitive_batchers,
    primitive_batchers,
    vectorized_batcher,
)
from morphax._src.transforms.batching import BatchTrace, BatchTracer

# The batch dimension of an argument that is not batched.
not_mapped = None


def bdim_at_front(x, bdim, size, mesh_axis=None):
    """`x` with its batch axis first; an unbatched `x` is broadcast along a new leading axis."""
    return bdim_to_front(x, bdim, size)


def broadcast(x, sz, axis, mesh_axis=None):
    """`x` with a new axis of length `sz` inserted at `axis`."""
    from morphax._src.numpy import manipulation  # noqa: PLC0415

    shape = _insert(manipulation.shape(x), axis, sz)
    return manipulation.broadcast_to(manipulation.expand_dims(x, axis), shape)


def _insert(shape, axis, size):
    shape = list(shape)
    axis = axis % (len(shape) + 1)
    shape.insert(axis, size)
    return tuple(shape)


def matchaxis(axis_data, src, dst, x, sum_match=False):
    """Move `x`'s batch axis from `src` to `dst` (broadcasting an unbatched `x`)."""
    if src == dst:
        return x
    if dst is None:
        if sum_match:
            from morphax._src.numpy import reductions  # noqa: PLC0415

            return reductions.sum(x, axis=src)
        raise ValueError(f"matchaxis: cannot unbatch a value batched along axis {src}")
    x = bdim_to_front(x, src, axis_data.size)
    return moveaxis(x, 0, dst) if dst != 0 else x


__all__ = [
    "AxisData",
    "BatchTrace",
    "BatchTracer",
    "axis_primitive_batchers",
    "bdim_at_front",
    "broadcast",
    "defbroadcasting",
    "defreducer",
    "defvectorized",
    "fancy_primitive_batchers",
    "matchaxis",
    "moveaxis",
    "not_mapped",
    "primitive_batchers",
    "vectorized_batcher",
]
