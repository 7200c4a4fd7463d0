"""Pytree core: node registry, the PyTreeDef structure, flatten/unflatten and registration.

Owns the structure encoding and everything that must know it (matching a structure against a
tree included). Imports only the standard library and ``pytree_keys``; ``pytree.py`` builds the
public tree_* utilities on top and re-exports these names.

The registry of node types is in pytree_registry.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from morphax._src.core.pytree_keys import (
    DictKey,
    GetAttrKey,
    KeyPath,
    SequenceKey,
    keystr,
)
from morphax._src.core.pytree_registry import (
    _bad_flatten_result,
    _NoneType,
    _registry,
    _sorted_keys,
    register_dataclass,
    register_pytree_node,
    unsortable_keys_error,
)

__all__ = [
    "PyTreeDef",
    "tree_flatten",
    "tree_leaves",
    "tree_structure",
    "tree_unflatten",
    "tree_flatten_with_path",
    "tree_leaves_with_path",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "PyTreeRegistry",
    "default_registry",
    "Partial",
]


# ---------------------------------------------------------------------------------------------
# Internal structure encoding ("spec").
#
# A PyTreeDef wraps a nested tuple called a spec:
#   * a leaf is the Python ``None`` object (the cheapest identity test on the hot paths);
#   * a node is ``(node_type, aux_data, child_specs)`` where child_specs is a tuple of specs.
# Tuples give structural ``==`` and ``hash`` for free (node types compare by identity, aux data
# by ``==``), so PyTreeDef equality is a single C-level comparison. A ``None`` *node* (the value
# None, which has no children) is ``(NoneType, None, ())`` and is never confused with a leaf.
# ---------------------------------------------------------------------------------------------
_NONE_SPEC = (_NoneType, None, ())


_EMPTY_DICT_SPEC = (dict, (), ())


def _is_namedtuple_type(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields")


# ---------------------------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------------------------
class PyTreeDef:
    """The structure of a pytree: node types, aux data and where the leaves go.

    Hashable and compared by structure. Built by ``tree_flatten``/``tree_structure``; not meant
    to be constructed directly.
    """

    # _num_nodes and _hash are filled lazily: the hot path (tree_flatten) sets only two slots.
    __slots__ = ("_spec", "_num_leaves", "_num_nodes", "_hash")

    def __init__(self, *args: Any, **kwargs: Any):
        # Instances come from object.__new__ in the flatten functions, which skips __init__.
        raise TypeError("PyTreeDef cannot be constructed directly; use tree_structure or tree_flatten.")

    @property
    def num_leaves(self) -> int:
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        try:
            return self._num_nodes
        except AttributeError:
            self._num_nodes = n = _count_nodes(self._spec)
            return n

    def children(self) -> list[PyTreeDef]:
        spec = self._spec
        if spec is None:
            return []
        return [_treedef_from_spec(s) for s in spec[2]]

    def node_data(self) -> tuple[type, Any] | None:
        """``(node_type, aux_data)`` of the root node, or None when the root is a leaf."""
        spec = self._spec
        if spec is None:
            return None
        t, aux, _ = spec
        if t is dict:
            return (dict, list(aux))
        if t is not tuple and t is not list and t is not _NoneType and t not in _registry:
            return (t, None)  # namedtuple: the type is the node data
        return (t, aux)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        if type(leaves) is not list and type(leaves) is not tuple:
            leaves = list(leaves)
        n = self._num_leaves
        if len(leaves) != n:
            how = "few" if len(leaves) < n else "many"
            raise ValueError(f"Too {how} leaves for PyTreeDef; expected {n}, got {len(leaves)}.")
        spec = self._spec
        if spec is None:
            return leaves[0]
        return _unflatten_spec(spec, iter(leaves))

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of ``tree`` sitting where this structure has its leaves."""
        out: list[Any] = []
        try:
            _flatten_up_to(self._spec, tree, out)
        except _Mismatch as e:
            raise ValueError(
                f"{e.detail} (at key path {_path_desc(e.key_path())}; expected structure {self})."
            ) from None
        return out

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The structure obtained by putting ``inner`` at every leaf of ``self``."""
        return _make_treedef(
            _substitute_leaves(self._spec, inner._spec), self._num_leaves * inner._num_leaves
        )

    @classmethod
    def make_from_node_data_and_children(cls, registry, node_data, children) -> PyTreeDef:
        """Inverse of ``node_data``/``children``; ``registry`` is accepted for JAX compatibility."""
        del registry
        if node_data is None:
            return _treedef_from_spec(None)
        t, aux = node_data
        if t is dict:
            aux = tuple(aux)
        elif _is_namedtuple_type(t) and t not in _registry:
            aux = None
        return _treedef_from_spec((t, aux, tuple(c._spec for c in children)))

    def __eq__(self, other: object) -> bool:
        if type(other) is not PyTreeDef:
            return NotImplemented
        return self is other or self._spec == other._spec

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            try:
                h = hash(self._spec)
            except TypeError:
                # Unhashable aux data (a list, a dict): JAX accepts it, e.g. as part of a jit
                # cache key, comparing it with ==. Such aux data contributes only its type here,
                # which keeps equal treedefs hashing equal.
                h = _spec_hash(self._spec)
            self._hash = h
            return h

    def __repr__(self) -> str:
        return f"PyTreeDef({_spec_str(self._spec)})"

    def __reduce__(self):
        # Node types are pickled by reference, so a treedef round-trips whenever its types are
        # importable; registrations are looked up again on unflatten.
        return (_treedef_from_spec, (self._spec,))


_new_treedef = object.__new__


def _make_treedef(spec, num_leaves: int) -> PyTreeDef:
    td = _new_treedef(PyTreeDef)
    td._spec = spec
    td._num_leaves = num_leaves
    return td


def _treedef_from_spec(spec) -> PyTreeDef:
    return _make_treedef(spec, _count_leaves(spec))


def _count_leaves(spec) -> int:
    if spec is None:
        return 1
    return sum([1 if s is None else _count_leaves(s) for s in spec[2]])


def _count_nodes(spec) -> int:
    if spec is None:
        return 1
    return 1 + sum([1 if s is None else _count_nodes(s) for s in spec[2]])


def _substitute_leaves(spec, inner):
    if spec is None:
        return inner
    t, aux, specs = spec
    return (t, aux, tuple([_substitute_leaves(s, inner) for s in specs]))


def _spec_hash(spec) -> int:
    if spec is None:
        return hash(None)
    t, aux, specs = spec
    try:
        aux_hash = hash(aux)
    except TypeError:
        aux_hash = hash(type(aux))
    return hash((t, aux_hash, tuple(_spec_hash(c) for c in specs)))


def _spec_str(spec) -> str:
    if spec is None:
        return "*"
    t, aux, specs = spec
    parts = [_spec_str(s) for s in specs]
    if t is tuple:
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if t is list:
        return "[" + ", ".join(parts) + "]"
    if t is dict:
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(aux, parts)) + "}"
    if t is _NoneType:
        return "None"
    if t not in _registry and _is_namedtuple_type(t):
        return f"CustomNode(namedtuple[{t.__name__}], [{', '.join(parts)}])"  # as JAX prints it
    return f"CustomNode({t.__name__}[{aux}], [{', '.join(parts)}])"


# ---------------------------------------------------------------------------------------------
# Flattening
# ---------------------------------------------------------------------------------------------
def _flatten_spec(x: Any, leaves: list) -> Any:
    """Appends the leaves of ``x`` to ``leaves`` and returns its spec (no is_leaf)."""
    t = type(x)
    if t is tuple or t is list:
        children = x
        aux = None
    elif t is dict:
        if not x:
            return _EMPTY_DICT_SPEC  # e.g. the kwargs of most calls
        try:  # inlined _sorted_keys: this is the hot path
            aux = tuple(sorted(x))
        except Exception as e:
            raise unsortable_keys_error(x, e) from e
        children = [x[k] for k in aux]
    elif t is _NoneType:
        return _NONE_SPEC
    else:
        reg = _registry.get(t)
        if reg is not None:
            res = reg.flatten(x)
            if type(res) is not tuple or len(res) != 2 or type(res[0]) not in (list, tuple):
                res = _bad_flatten_result(t, res)
            children, aux = res
        elif isinstance(x, tuple) and hasattr(t, "_fields"):
            children = x
            aux = None
        else:
            leaves.append(x)
            return None
    specs = []
    for c in children:
        # Inline the leaf test so the common case (an array child) costs no recursive call;
        # anything that might be a node (registered type or tuple subclass) recurses. Plain
        # `specs.append` (not a cached bound method) is what CPython 3.11+ specializes best.
        if type(c) in _registry or isinstance(c, tuple):
            specs.append(_flatten_spec(c, leaves))
        else:
            leaves.append(c)
            specs.append(None)
    return (t, aux, tuple(specs))


def _node_parts(x: Any):
    """``(type, children, aux)`` for a pytree node, or None for a leaf."""
    t = type(x)
    if t is tuple or t is list:
        return t, x, None
    if t is dict:
        keys = _sorted_keys(x)
        return t, [x[k] for k in keys], keys
    if t is _NoneType:
        return t, (), None
    reg = _registry.get(t)
    if reg is not None:
        children, aux = _bad_flatten_result(t, reg.flatten(x))
        return t, children, aux
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return t, x, None
    return None


def _flatten_spec_pred(x: Any, leaves: list, is_leaf: Callable[[Any], bool]) -> Any:
    """Like ``_flatten_spec`` but asks ``is_leaf`` first at every subtree."""
    if is_leaf(x):
        leaves.append(x)
        return None
    parts = _node_parts(x)
    if parts is None:
        leaves.append(x)
        return None
    t, children, aux = parts
    return (t, aux, tuple([_flatten_spec_pred(c, leaves, is_leaf) for c in children]))


def _keyed_node_parts(x: Any):
    """``(type, [(key, child), ...], aux)`` for a pytree node, or None for a leaf."""
    t = type(x)
    if t is tuple or t is list:
        return t, [(SequenceKey(i), c) for i, c in enumerate(x)], None
    if t is dict:
        keys = _sorted_keys(x)
        return t, [(DictKey(k), x[k]) for k in keys], keys
    if t is _NoneType:
        return t, [], None
    reg = _registry.get(t)
    if reg is not None:
        keyed, aux = _bad_flatten_result(t, reg.flatten_with_keys(x))
        return t, keyed, aux
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return t, [(GetAttrKey(f), c) for f, c in zip(t._fields, x)], None
    return None


def _flatten_spec_with_keys(x, path: tuple, out: list, is_leaf) -> Any:
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return None
    parts = _keyed_node_parts(x)
    if parts is None:
        out.append((path, x))
        return None
    t, keyed, aux = parts
    return (t, aux, tuple([_flatten_spec_with_keys(c, (*path, k), out, is_leaf) for k, c in keyed]))


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    """Flattens ``tree`` into its leaves (left to right) and its structure."""
    leaves: list[Any] = []
    if is_leaf is None:
        spec = _flatten_spec(tree, leaves)
    else:
        spec = _flatten_spec_pred(tree, leaves, is_leaf)
    td = _new_treedef(PyTreeDef)
    td._spec = spec
    td._num_leaves = len(leaves)
    return leaves, td


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    leaves: list[Any] = []
    if is_leaf is None:
        _flatten_spec(tree, leaves)
    else:
        _flatten_spec_pred(tree, leaves, is_leaf)
    return leaves


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    return treedef.unflatten(leaves)


def tree_flatten_with_path(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like ``tree_flatten`` but each leaf comes paired with its key path."""
    out: list[tuple[KeyPath, Any]] = []
    spec = _flatten_spec_with_keys(tree, (), out, is_leaf)
    return out, _make_treedef(spec, len(out))


def tree_leaves_with_path(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> list[tuple[KeyPath, Any]]:
    out: list[tuple[KeyPath, Any]] = []
    _flatten_spec_with_keys(tree, (), out, is_leaf)
    return out


# ---------------------------------------------------------------------------------------------
# Unflattening
# ---------------------------------------------------------------------------------------------
def _unflatten_spec(spec, it) -> Any:
    t, aux, specs = spec
    children = [next(it) if s is None else _unflatten_spec(s, it) for s in specs]
    if t is tuple:
        return tuple(children)
    if t is list:
        return children
    if t is dict:
        return dict(zip(aux, children))
    if t is _NoneType:
        return None
    reg = _registry.get(t)
    if reg is not None:
        return reg.unflatten(aux, tuple(children))
    return t(*children)  # namedtuple


# ---------------------------------------------------------------------------------------------
# Matching one structure against another tree (flatten_up_to, tree_map, prefix broadcasting)
# ---------------------------------------------------------------------------------------------
class _Mismatch(Exception):
    """Internal: raised at the first disagreement; the key path is collected while unwinding."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail
        self.frames: list[tuple[Any, Any, int]] = []  # (spec, value, child index), innermost first

    def key_path(self) -> KeyPath:
        # Keys are only computed on this error path, so matching costs nothing for them.
        return tuple(_child_key(spec, value, i) for spec, value, i in reversed(self.frames))


def _child_key(spec, value: Any, i: int) -> Any:
    t, aux, _ = spec
    if t is tuple or t is list:
        return SequenceKey(i)
    if t is dict:
        return DictKey(aux[i])
    reg = _registry.get(t)
    if reg is not None:
        return list(reg.flatten_with_keys(value)[0])[i][0]
    return GetAttrKey(t._fields[i])


def _path_desc(path: KeyPath) -> str:
    return keystr(path) if path else "'' (the root)"


def _aux_differs(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:  # e.g. array-valued aux data: fall back to identity
        return a is not b


def _flatten_up_to(spec, x: Any, out: list) -> None:
    if spec is None:
        out.append(x)
        return
    t, aux, specs = spec
    n = len(specs)
    if t is tuple:
        # Like JAX, any tuple (or list, dict) instance matches the builtin node of that kind.
        if not isinstance(x, tuple):
            raise _Mismatch(f"Expected tuple, got {x!r}.")
        if len(x) != n:
            raise _Mismatch(f"Tuple arity mismatch: {len(x)} != {n}; tuple: {x!r}.")
        children = x
    elif t is list:
        if not isinstance(x, list):
            raise _Mismatch(f"Expected list, got {x!r}.")
        if len(x) != n:
            raise _Mismatch(f"List arity mismatch: {len(x)} != {n}; list: {x!r}.")
        children = x
    elif t is dict:
        if not isinstance(x, dict):
            raise _Mismatch(f"Expected dict, got {x!r}.")
        if len(x) != n or any(k not in x for k in aux):
            raise _Mismatch(f"Dict key mismatch; expected keys: {list(aux)!r}; dict: {x!r}.")
        children = [x[k] for k in aux]
    elif t is _NoneType:
        if x is not None:
            raise _Mismatch(f"Expected None, got {x!r}.")
        return
    else:
        reg = _registry.get(t)
        if reg is not None:
            if type(x) is not t:
                raise _Mismatch(f"Custom node type mismatch; expected type: {t}; value: {x!r}.")
            children, x_aux = _bad_flatten_result(t, reg.flatten(x))
            children = tuple(children)
            if len(children) != n:
                raise _Mismatch(f"Custom node arity mismatch: {len(children)} != {n}; value: {x!r}.")
            if _aux_differs(aux, x_aux):
                raise _Mismatch(f"Mismatch custom node data: {aux!r} != {x_aux!r}; value: {x!r}.")
        else:
            if type(x) is not t:
                raise _Mismatch(f"Named tuple type mismatch: expected type {t}, got {x!r}.")
            children = x
    i = 0
    for s, c in zip(specs, children):
        if s is None:
            out.append(c)
        else:
            try:
                _flatten_up_to(s, c, out)
            except _Mismatch as e:
                e.frames.append((spec, x, i))
                raise
        i += 1


# ---------------------------------------------------------------------------------------------
# One-level flattening
# ---------------------------------------------------------------------------------------------
def flatten_one_level(pytree: Any) -> tuple[Iterable[Any], Hashable]:
    """``(children, aux_data)`` of a node; ValueError for a leaf."""
    parts = _node_parts(pytree)
    if parts is None:
        raise ValueError(f"can't tree-flatten type: {type(pytree)}")
    t, children, aux = parts
    if t is dict:
        children = tuple(children)
    elif t not in _registry:
        aux = t  # namedtuple: its type is the metadata
    return children, aux


def flatten_one_level_with_keys(pytree: Any) -> tuple[list[tuple[Any, Any]], Hashable]:
    """``([(key, child), ...], aux_data)`` of a node; ValueError for a leaf."""
    parts = _keyed_node_parts(pytree)
    if parts is None:
        raise ValueError(f"can't tree-flatten type: {type(pytree)}")
    t, keyed, aux = parts
    if t not in _registry:
        aux = t
    return list(keyed), aux


class PyTreeRegistry:
    """Handle on the (single, global) node registry, mirroring JAX's ``default_registry``."""

    def flatten(self, tree: Any, is_leaf: Callable[[Any], bool] | None = None):
        return tree_flatten(tree, is_leaf)

    def flatten_one_level(self, tree: Any):
        return None if _node_parts(tree) is None else flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree: Any):
        return None if _node_parts(tree) is None else flatten_one_level_with_keys(tree)

    def register_node(self, nodetype, flatten_func, unflatten_func, flatten_with_keys_func=None) -> None:
        register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)

    def register_dataclass_node(self, nodetype, data_fields, meta_fields) -> None:
        register_dataclass(nodetype, data_fields, meta_fields)

    def __repr__(self) -> str:
        return "default_registry"


default_registry = PyTreeRegistry()


# ---------------------------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------------------------
class _HashableCallableShim:
    """Stands in for a functools.partial passed as ``func`` to Partial.

    functools.partial would otherwise merge the inner partial's arguments into the new one,
    moving them into the pytree's leaves; the shim keeps them in the (static) aux data while
    delegating calls, hashing and equality to the wrapped object.
    """

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _HashableCallableShim):
            return self.fun == other.fun
        return self.fun == other

    def __repr__(self) -> str:
        return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: bound args and keyword values are leaves, the
    function is static aux data (so two Partials of equal functions have equal structure)."""

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            func = _HashableCallableShim(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)
