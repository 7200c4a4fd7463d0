"""`morphax.flatten_util.ravel_pytree`: a pytree of arrays as one 1-D array, and the function
that undoes it.

Leaves are raveled in tree order and concatenated after promotion to their common dtype; the
unravel function splits a vector of that length back, reshapes each piece and converts it back
to its leaf's dtype. When every leaf already has the common dtype the unravel function converts
nothing, so it also accepts vectors of other dtypes (JAX's convention).
"""

from __future__ import annotations

import functools

import numpy as np

from morphax._src.core import pytree
from morphax._src.core.avals import get_aval
from morphax._src.core.promotion import result_type
from morphax._src.numpy import manipulation, util
from morphax._src.prims import lax_api as L

__all__ = ["ravel_pytree"]


def ravel_pytree(tree):
    """(flat, unravel): the leaves of `tree` raveled and concatenated in one 1-D array of their
    promoted dtype (float32 and empty for a tree without leaves), and the function mapping such
    a vector back to a tree of the same structure, shapes and dtypes."""
    leaves, treedef = pytree.tree_flatten(tree)
    flat, unravel_leaves = _ravel_leaves(leaves)
    return flat, functools.partial(_unravel_tree, treedef, unravel_leaves)


def _unravel_tree(treedef, unravel_leaves, flat):
    return pytree.tree_unflatten(treedef, unravel_leaves(flat))


def _ravel_leaves(leaves):
    if not leaves:
        return L.full((0,), 0, np.float32), lambda _: []
    leaves = [util.asarray_like(x) for x in leaves]
    dtypes = tuple(get_aval(x).dtype for x in leaves)
    target = result_type(*dtypes)
    shapes = tuple(get_aval(x).shape for x in leaves)
    sizes = tuple(int(np.prod(s, dtype=np.int64)) for s in shapes)
    raveled = [L.reshape(util.convert_element_type(x, target, False), (n,)) for x, n in zip(leaves, sizes)]
    flat = L.concatenate(raveled, 0)
    if all(dt == target for dt in dtypes):
        return flat, functools.partial(_split, sizes, shapes, None, None)
    return flat, functools.partial(_split, sizes, shapes, dtypes, target)


def _split(sizes, shapes, dtypes, target, flat):
    flat = util.asarray_like(flat)
    if target is not None and get_aval(flat).dtype != target:
        raise TypeError(
            f"unravel function given array of dtype {get_aval(flat).dtype}, but expected dtype {target}"
        )
    if get_aval(flat).shape != (sum(sizes),):
        raise ValueError(
            f"unravel function given an array of shape {get_aval(flat).shape}, but expected shape ({sum(sizes)},)"
        )
    offsets = np.cumsum((0,) + sizes)
    pieces = [
        manipulation.reshape(L.slice(flat, (lo,), (hi,)), shape)
        for lo, hi, shape in zip(offsets[:-1], offsets[1:], shapes)
    ]
    if dtypes is None:
        return pieces
    return [util.convert_element_type(p, dt, False) for p, dt in zip(pieces, dtypes)]
