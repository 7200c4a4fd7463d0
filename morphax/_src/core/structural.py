"""The five structural primitives the transformation machinery itself binds, declared by name.

Making a dense zero tangent, summing two tangents, moving or adding a batch axis and summing a
cotangent down to an operand's shape need `broadcast_in_dim`, `add`, `transpose`, `reshape` and
`reduce_sum`. They are declared here (the `Primitive` objects only) so that the core helpers
below, the transformations, and the rules of every primitive family can bind them without
importing the primitive catalogue; that keeps imports one way and the catalogue free of cycles
(broadcast_in_dim transposes to reduce_sum and back). Each one's rules (abstract eval, reference,
derivatives, batching, kernel metadata, test spec) are filled in one block in `prims/`:
`shape.py` (broadcast_in_dim, reshape, transpose), `reductions.py` (reduce_sum) and
`arithmetic.py` (add).

The helpers take canonical arguments (tuples of ints, operands that already agree in dtype):
they are for rules and transformations, not for users, whose lax wrappers check and canonicalize.
"""

from __future__ import annotations

from morphax._src.core.avals import get_aval
from morphax._src.core.primitive import Primitive

broadcast_in_dim_p = Primitive("broadcast_in_dim")
reshape_p = Primitive("reshape")
transpose_p = Primitive("transpose")
reduce_sum_p = Primitive("reduce_sum")
add_p = Primitive("add")


def broadcast_in_dim(x, shape: tuple, broadcast_dimensions: tuple):
    """Operand dimension i becomes output dimension ``broadcast_dimensions[i]``."""
    if not shape and not get_aval(x).shape:
        return x
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=broadcast_dimensions, sharding=None)


def reshape(x, new_sizes: tuple):
    """Row-major reshape (no dimension permutation)."""
    shape = get_aval(x).shape
    if shape and shape == new_sizes:
        return x
    return reshape_p.bind(x, new_sizes=new_sizes, dimensions=None, sharding=None)


def transpose(x, permutation: tuple):
    """Output dimension i is operand dimension ``permutation[i]``; the identity binds nothing."""
    if permutation == tuple(range(len(get_aval(x).shape))):
        return x
    return transpose_p.bind(x, permutation=permutation)


def reduce_sum(x, axes: tuple):
    """Sum over `axes` (distinct, non-negative)."""
    return reduce_sum_p.bind(x, axes=axes)


def add(x, y):
    """``x + y`` of two operands of one dtype under lax's broadcasting."""
    return add_p.bind(x, y)
