"""Pytrees: the public tree_* utilities behind ``morphax.tree_util`` and ``morphax.tree``.

Builds tree_map, broadcasting, reductions and transposition on ``pytree_def`` (PyTreeDef,
flatten) and ``pytree_registry`` (the node registry) and re-exports all of it. Imports only the
standard library and its sibling ``pytree_*`` modules; nothing else from morphax may be imported
here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from morphax._src.core.pytree_def import (
    Partial,
    PyTreeDef,
    PyTreeRegistry,
    _flatten_up_to,
    _make_treedef,
    _Mismatch,
    _path_desc,
    _unflatten_spec,
    default_registry,
    flatten_one_level,
    flatten_one_level_with_keys,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_structure,
    tree_unflatten,
)
from morphax._src.core.pytree_keys import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    SequenceKey,
    keystr,
)
from morphax._src.core.pytree_registry import (
    _registry,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
)

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "Partial",
    "PyTreeDef",
    "PyTreeRegistry",
    "SequenceKey",
    "all_leaves",
    "broadcast_prefix",
    "default_registry",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "keystr",
    "prefix_broadcast",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_broadcast",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_reduce_associative",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
]


# ---------------------------------------------------------------------------------------------
# Mapping over several trees and prefix broadcasting
# ---------------------------------------------------------------------------------------------
def _match_or_raise(treedef: PyTreeDef, other: Any, out: list, what: str, names: tuple[str, str]) -> None:
    """``treedef.flatten_up_to(other)`` into ``out``, with an error naming the key path and both
    structures (``names`` labels them) when ``treedef`` is not a prefix of ``other``."""
    try:
        _flatten_up_to(treedef._spec, other, out)
    except _Mismatch as e:
        raise ValueError(
            f"{what}: pytree structure mismatch at key path {_path_desc(e.key_path())}: {e.detail}\n"
            f"  {names[0]} structure: {treedef}\n"
            f"  {names[1]} structure: {tree_structure(other)}"
        ) from None


def tree_map(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """Applies ``f`` leafwise; every tree in ``rest`` must have ``tree``'s structure as a prefix."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        new = [f(x) for x in leaves]
    else:
        columns = [leaves]
        for j, r in enumerate(rest):
            other: list[Any] = []
            _match_or_raise(treedef, r, other, "tree_map", ("first tree", f"tree argument {j + 1}"))
            columns.append(other)
        new = [f(*xs) for xs in zip(*columns)]
    spec = treedef._spec
    return new[0] if spec is None else _unflatten_spec(spec, iter(new))


def tree_map_with_path(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """Like ``tree_map`` but ``f`` receives the key path of each leaf as its first argument."""
    path_leaves, treedef = tree_flatten_with_path(tree, is_leaf)
    columns = [[p for p, _ in path_leaves], [x for _, x in path_leaves]]
    for j, r in enumerate(rest):
        other: list[Any] = []
        _match_or_raise(treedef, r, other, "tree_map_with_path", ("first tree", f"tree argument {j + 1}"))
        columns.append(other)
    return treedef.unflatten([f(*xs) for xs in zip(*columns)])


def broadcast_prefix(
    prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> list[Any]:
    """Each leaf of ``prefix_tree`` repeated once per leaf of the matching subtree of ``full_tree``.

    ``is_leaf`` applies to ``prefix_tree`` only. Note that ``None`` is a node with no children, so
    a ``None`` in the prefix only matches ``None``; callers that use None as a value (vmap's
    ``in_axes``) pass ``is_leaf=lambda x: x is None``.
    """
    return _broadcast_prefix(prefix_tree, full_tree, is_leaf, None)


def _broadcast_prefix(prefix_tree, full_tree, is_leaf, full_is_leaf) -> list[Any]:
    """`broadcast_prefix`, the leaves of `full_tree`'s subtrees counted by `full_is_leaf` (the
    user-facing view, core/pytree_api.py, counts a key array as one)."""
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees: list[Any] = []
    _match_or_raise(prefix_def, full_tree, subtrees, "broadcast_prefix", ("prefix tree", "full tree"))
    result: list[Any] = []
    for p, sub in zip(prefix_leaves, subtrees):
        result.extend([p] * len(tree_leaves(sub, full_is_leaf)))
    return result


prefix_broadcast = broadcast_prefix


def tree_broadcast(prefix_tree: Any, full_tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``prefix_tree`` expanded to the structure of ``full_tree``."""
    return tree_structure(full_tree).unflatten(broadcast_prefix(prefix_tree, full_tree, is_leaf))


# ---------------------------------------------------------------------------------------------
# Reductions and structural helpers
# ---------------------------------------------------------------------------------------------
class _NoInitializer:
    def __repr__(self) -> str:
        return "<no initializer>"


no_initializer = _NoInitializer()


def tree_reduce(
    function: Callable[[Any, Any], Any],
    tree: Any,
    initializer: Any = no_initializer,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    leaves = tree_leaves(tree, is_leaf)
    if initializer is no_initializer:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def _balanced_reduce(op: Callable[[Any, Any], Any], xs: list) -> Any:
    # Split in halves so the combination tree has logarithmic depth.
    if len(xs) == 1:
        return xs[0]
    mid = len(xs) // 2
    return op(_balanced_reduce(op, xs[:mid]), _balanced_reduce(op, xs[mid:]))


def tree_reduce_associative(
    operation: Callable[[Any, Any], Any],
    tree: Any,
    *,
    identity: Any = no_initializer,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is no_initializer:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    return _balanced_reduce(operation, leaves)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    """Turns an outer-of-inner tree into an inner-of-outer tree."""
    return _tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose, None)


def _tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose, is_leaf):
    """`tree_transpose`, flattening with `is_leaf` (the user-facing view's key arrays)."""
    flat, treedef = tree_flatten(pytree_to_transpose, is_leaf)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0], is_leaf)
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(f"tree_transpose: structure mismatch\n{treedef}\n != \n{expected}")
    inner_n = inner_treedef.num_leaves
    # flat is outer-major: leaf j of the inner tree sitting at outer leaf i is flat[i * inner_n + j].
    columns = [flat[j::inner_n] for j in range(inner_n)]
    return inner_treedef.unflatten([outer_treedef.unflatten(col) for col in columns])


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    # As in JAX this is "has a single node", so the structure of None also counts.
    return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    treedefs = list(treedefs)
    spec = (tuple, None, tuple(td._spec for td in treedefs))
    return _make_treedef(spec, sum(td._num_leaves for td in treedefs))


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True when no element of ``iterable`` is a pytree node (None counts as a node)."""
    if is_leaf is None:
        return not any(is_tree_node(x) for x in iterable)
    xs = list(iterable)
    return xs == tree_leaves(xs, is_leaf)


def is_tree_node(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    if is_leaf is not None and is_leaf(tree):
        return False
    t = type(tree)
    return t in _registry or (isinstance(tree, tuple) and hasattr(t, "_fields"))
