"""Public ``morphax.tree``: short names for the pytree utilities (``jax.tree``).

Aliases only, of ``morphax._src.core.pytree_api`` functions (the user view: key arrays are leaves); holds no logic and imports nothing else.
The names ``map``, ``all`` and ``reduce`` deliberately shadow builtins inside this module.
"""

from morphax._src.core import pytree_api as _pytree

all = _pytree.tree_all
broadcast = _pytree.tree_broadcast
flatten = _pytree.tree_flatten
flatten_with_path = _pytree.tree_flatten_with_path
leaves = _pytree.tree_leaves
leaves_with_path = _pytree.tree_leaves_with_path
map = _pytree.tree_map
map_with_path = _pytree.tree_map_with_path
reduce = _pytree.tree_reduce
reduce_associative = _pytree.tree_reduce_associative
static = _pytree.register_static
structure = _pytree.tree_structure
transpose = _pytree.tree_transpose
unflatten = _pytree.tree_unflatten

__all__ = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]
