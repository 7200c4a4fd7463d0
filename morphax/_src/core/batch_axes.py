"""Batch-axis bookkeeping shared by `vmap`, the batching rules and the higher-order primitives:
`AxisData` (the size and name of the mapped axis) and the two moves every rule needs, both
through the structural primitives of `core/structural.py`."""

from __future__ import annotations

from morphax._src.core import structural
from morphax._src.core.avals import get_aval


class AxisData:
    __slots__ = ("size", "name", "spmd_name")

    def __init__(self, size, name=None, spmd_name=None):
        self.size = size
        self.name = name
        self.spmd_name = spmd_name

    def __repr__(self):
        return f"AxisData(size={self.size}, name={self.name!r})"


def moveaxis(x, src: int, dst: int):
    """Move axis `src` of `x` to position `dst` (a transpose; free when src == dst)."""
    nd = len(get_aval(x).shape)
    src, dst = src % nd, dst % nd
    if src == dst:
        return x
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return structural.transpose(x, tuple(perm))


def bdim_to_front(x, d, size):
    """Batch axis first; an unbatched operand is broadcast to have a leading axis of `size`."""
    if d is None:
        shape = tuple(get_aval(x).shape)
        return structural.broadcast_in_dim(x, (size,) + shape, tuple(range(1, len(shape) + 1)))
    return moveaxis(x, d, 0)
