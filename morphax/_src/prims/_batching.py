"""Helpers that make batching (vmap) rules one line each, and the rule convention.

Rule convention (every primitive block follows it):
  prim.batch(vals, dims, *, axis_data, **params) -> (out, out_dim)
      `dims[i]` is the batch axis of `vals[i]` (an int) or None when that operand is not batched;
      at least one is batched. Runs on the parent trace, so it is written with lax functions and
      never loops over the batch. For primitives with several results, `out` and `out_dim` are
      lists. `axis_data` has `.size` and `.name` (collectives read the name).
"""

from __future__ import annotations

from morphax._src.core import structural
from morphax._src.core.avals import get_aval
from morphax._src.core.batch_axes import AxisData, bdim_to_front, moveaxis


def vectorized_batcher(prim):
    """Unary elementwise (or any shape-preserving single-operand) primitive: batch axis stays."""

    def rule(vals, dims, *, axis_data, **params):
        (x,), (d,) = vals, dims
        return prim.bind(x, **params), d

    prim.batch = rule
    return rule


def broadcasting_batcher(prim):
    """n-ary elementwise primitive under lax broadcasting: batched operands get their batch axis
    at the front; unbatched ones keep their shape but gain a size-1 leading axis when they are not
    rank-0, so lax's size-1 broadcasting does the rest. Batched rank-0 operands become (B, 1, ...)."""

    def rule(vals, dims, *, axis_data, **params):
        ranks = [len(get_aval(v).shape) - (d is not None) for v, d in zip(vals, dims)]
        rank = max(ranks)
        out = []
        for v, d, r in zip(vals, dims, ranks):
            if d is None:
                if r == 0:
                    out.append(v)
                    continue
                shape = get_aval(v).shape
                v = structural.broadcast_in_dim(
                    v, (1,) * (rank - r + 1) + tuple(shape), tuple(range(rank - r + 1, rank + 1))
                )
            else:
                v = moveaxis(v, d, 0)
                if r < rank:
                    shape = get_aval(v).shape
                    new_shape = (shape[0],) + (1,) * (rank - r) + tuple(shape[1:])
                    v = structural.reshape(v, new_shape)
            out.append(v)
        return prim.bind(*out, **params), 0

    prim.batch = rule
    return rule


__all__ = ["AxisData", "bdim_to_front", "broadcasting_batcher", "moveaxis", "vectorized_batcher"]
