"""The pytree functions as users see them (``morphax.tree_util``, ``morphax.tree``).

They are ``morphax._src.core.pytree``'s functions with one difference: node types registered
with `register_array_leaf` count as single leaves. A typed PRNG key array is one: in JAX it is
one leaf of dtype ``key<fry>``, so ``tree.leaves({"k": key}) == [key]`` and ``tree.map`` calls
its function on the key array itself. morphax's transformations (jit, vmap, scan, cond, grad...)
flatten with the internal functions, which go through such a node to its data (the keys as one
value of aval ``key<fry>[...]``) and rebuild it on the way out, so a key crosses every
transformation.

Imports only the standard library and its sibling ``pytree*`` modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from morphax._src.core import pytree as _p
from morphax._src.core.pytree import *  # noqa: F403 - everything else is shared with the internal view
from morphax._src.core.pytree import __all__ as _all
from morphax._src.core.pytree_def import PyTreeDef, PyTreeRegistry

__all__ = [*_all, "register_array_leaf"]

# Registered node types that user-facing tree functions treat as leaves.
_ARRAY_LEAF_TYPES: set[type] = set()


def register_array_leaf(cls: type) -> type:
    """Makes instances of the registered node type `cls` single leaves for the user-facing tree
    functions (the internal ones still flatten them to their children)."""
    _ARRAY_LEAF_TYPES.add(cls)
    return cls


def _is_array_leaf(x: Any) -> bool:
    return type(x) in _ARRAY_LEAF_TYPES


def _leaf_pred(is_leaf: Callable[[Any], bool] | None) -> Callable[[Any], bool] | None:
    if not _ARRAY_LEAF_TYPES:
        return is_leaf
    if is_leaf is None:
        return _is_array_leaf
    return lambda x: type(x) in _ARRAY_LEAF_TYPES or is_leaf(x)


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    return _p.tree_flatten(tree, _leaf_pred(is_leaf))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return _p.tree_leaves(tree, _leaf_pred(is_leaf))


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return _p.tree_structure(tree, _leaf_pred(is_leaf))


def tree_flatten_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    return _p.tree_flatten_with_path(tree, _leaf_pred(is_leaf))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[[Any], bool] | None = None):
    return _p.tree_leaves_with_path(tree, _leaf_pred(is_leaf))


def tree_map(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    return _p.tree_map(f, tree, *rest, is_leaf=_leaf_pred(is_leaf))


def tree_map_with_path(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    return _p.tree_map_with_path(f, tree, *rest, is_leaf=_leaf_pred(is_leaf))


def broadcast_prefix(
    prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> list[Any]:
    return _p._broadcast_prefix(prefix_tree, full_tree, _leaf_pred(is_leaf), _leaf_pred(None))


prefix_broadcast = broadcast_prefix


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    return tree_structure(full_tree).unflatten(broadcast_prefix(prefix_tree, full_tree, is_leaf))


def tree_reduce(function, tree: Any, initializer: Any = _p.no_initializer, is_leaf=None) -> Any:
    return _p.tree_reduce(function, tree, initializer, _leaf_pred(is_leaf))


def tree_reduce_associative(operation, tree: Any, *, identity: Any = _p.no_initializer, is_leaf=None) -> Any:
    return _p.tree_reduce_associative(operation, tree, identity=identity, is_leaf=_leaf_pred(is_leaf))


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    return _p._tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose, _leaf_pred(None))


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    xs = list(iterable)
    if is_leaf is None:
        return not any(is_tree_node(x) for x in xs)
    return xs == tree_leaves(xs, is_leaf)


def is_tree_node(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return not _is_array_leaf(tree) and _p.is_tree_node(tree, is_leaf)


def flatten_one_level(pytree: Any):
    if _is_array_leaf(pytree):
        raise ValueError(f"can't tree-flatten type: {type(pytree)}")
    return _p.flatten_one_level(pytree)


def flatten_one_level_with_keys(pytree: Any):
    if _is_array_leaf(pytree):
        raise ValueError(f"can't tree-flatten type: {type(pytree)}")
    return _p.flatten_one_level_with_keys(pytree)


class _UserRegistry(PyTreeRegistry):
    """``default_registry`` as users see it: array leaves are leaves."""

    def flatten(self, tree: Any, is_leaf: Callable[[Any], bool] | None = None):
        return tree_flatten(tree, is_leaf)

    def flatten_one_level(self, tree: Any):
        return None if _is_array_leaf(tree) else super().flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree: Any):
        return None if _is_array_leaf(tree) else super().flatten_one_level_with_keys(tree)


default_registry = _UserRegistry()
