"""Pytree core: node registry, the PyTreeDef structure, flatten/unflatten and registration.

Owns the structure encoding and everything that must know it (matching a structure against a
tree included). Imports only the standard library and ``pytree_keys``; ``pytree.py`` builds the
public tree_* utilities on top and re-exports these names.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from morphax._src.core.pytree_keys import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyPath,
    SequenceKey,
    keystr,
)

_NoneType = type(None)

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


class _NodeDef:
    """One registry entry: how to take a node type apart and put it back together."""

    __slots__ = ("type", "flatten", "unflatten", "flatten_with_keys")

    def __init__(self, nodetype, flatten, unflatten, flatten_with_keys):
        self.type = nodetype
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys


# Exact-type lookup table (subclasses of registered types are leaves, as in JAX).
_registry: dict[type, _NodeDef] = {}


def _sorted_keys(d: dict) -> tuple:
    # JAX orders dict children by sorted key; keys that cannot be compared with each other
    # (e.g. a mix of str and int) fall back to insertion order instead of failing.
    try:
        return tuple(sorted(d))
    except TypeError:
        return tuple(d)


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


def _bad_flatten_result(t: type, res: Any):
    """The (children, aux) pair a custom node's flatten function returned, or a clear error."""
    if isinstance(res, tuple) and len(res) == 2:
        children, aux = res
        if isinstance(children, (list, tuple)):
            return children, aux
        try:
            return list(children), aux
        except TypeError:
            raise ValueError(
                f"The flatten function registered for the pytree node type {t.__qualname__} must "
                f"return a (children, aux_data) tuple where children is an iterable, got {res!r}."
            ) from None
    raise ValueError(
        f"The flatten function registered for the pytree node type {t.__qualname__} must return a "
        f"(children, aux_data) tuple, got {res!r}. Return e.g. ((x.a, x.b), None) from it."
    )


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
        return f"{t.__name__}(" + ", ".join(f"{f}={p}" for f, p in zip(t._fields, parts)) + ")"
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
        except TypeError:
            aux = tuple(x)
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


# ---------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------
def _keys_from_plain_flatten(flatten: Callable) -> Callable:
    # Nodes registered without keys get positional FlattenedIndexKey paths.
    def flatten_with_keys(x):
        children, aux = _bad_flatten_result(type(x), flatten(x))
        return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux

    return flatten_with_keys


def _plain_from_keyed_flatten(flatten_with_keys: Callable) -> Callable:
    def flatten(x):
        keyed, aux = _bad_flatten_result(type(x), flatten_with_keys(x))
        return [c for _, c in keyed], aux

    return flatten


def _register(nodetype: type, flatten, unflatten, flatten_with_keys) -> None:
    if not isinstance(nodetype, type):
        raise TypeError(f"Expected a type to register as a pytree node, got {nodetype!r}.")
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    if flatten is None:
        flatten = _plain_from_keyed_flatten(flatten_with_keys)
    if flatten_with_keys is None:
        flatten_with_keys = _keys_from_plain_flatten(flatten)
    _registry[nodetype] = _NodeDef(nodetype, flatten, unflatten, flatten_with_keys)


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_with_keys_func: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Hashable]] | None = None,
) -> None:
    """Makes ``nodetype`` a pytree node: ``flatten_func(x) -> (children, aux)``,
    ``unflatten_func(aux, children) -> x``."""
    _register(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: uses ``cls.tree_flatten`` and the classmethod ``cls.tree_unflatten``."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys(
    nodetype: type,
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], Any],
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """Like ``register_pytree_node`` with a key-aware flatten; ``flatten_func`` is an optional
    faster keyless variant that must agree with it."""
    _register(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: type) -> type:
    """Class decorator: uses ``tree_flatten_with_keys``, ``tree_unflatten`` and, if defined,
    ``tree_flatten``."""
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(
        cls, operator.methodcaller("tree_flatten_with_keys"), cls.tree_unflatten, flatten
    )
    return cls


def register_dataclass(
    nodetype: type | None = None,
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
):
    """Registers a dataclass-like type: ``data_fields`` are children, ``meta_fields`` aux data.

    With both field lists omitted, ``nodetype`` must be a dataclass and fields declared with
    ``metadata=dict(static=True)`` become meta fields. Returns ``nodetype`` (decorator use);
    called without ``nodetype`` it returns a decorator.
    """
    if nodetype is None:
        return functools.partial(
            register_dataclass, data_fields=data_fields, meta_fields=meta_fields, drop_fields=drop_fields
        )
    drop = set(drop_fields)
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields must both be specified when either "
                f"is specified. Got data_fields={data_fields!r}, meta_fields={meta_fields!r}."
            )
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                "register_dataclass: data_fields and meta_fields are required when nodetype is not "
                f"a dataclass. Got nodetype={nodetype!r}."
            )
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    # Copies as tuples: the closures below must not see later mutation of the caller's lists.
    data_fields = tuple(data_fields)
    meta_fields = tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - drop
        given = {*data_fields, *meta_fields}
        if given != init_fields:
            msg = "data_fields and meta_fields must include all dataclass fields with ``init=True`` and only them."
            if missing := init_fields - given:
                msg += f" Missing fields: {missing}. Add them to drop_fields to suppress this error."
            if unexpected := given - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)

    def flatten(x):
        return [getattr(x, name) for name in data_fields], tuple([getattr(x, name) for name in meta_fields])

    def flatten_with_keys(x):
        return (
            [(GetAttrKey(name), getattr(x, name)) for name in data_fields],
            tuple([getattr(x, name) for name in meta_fields]),
        )

    def unflatten(meta, data):
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, data)))

    _register(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def register_static(cls: type) -> type:
    """Makes ``cls`` a node with no children whose instances are their own aux data."""
    register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _children: obj, lambda obj: ((), obj))
    return cls


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


# Builtin containers live in the same table (flatten_one_level, is_tree_node and duplicate
# checks use it); tree_flatten/unflatten special-case them before ever looking an entry up.
def _register_builtins() -> None:
    def seq_keys(x):
        return [(SequenceKey(i), c) for i, c in enumerate(x)], None

    def dict_flatten(x):
        keys = _sorted_keys(x)
        return [x[k] for k in keys], keys

    def dict_keys(x):
        keys = _sorted_keys(x)
        return [(DictKey(k), x[k]) for k in keys], keys

    _register(tuple, lambda x: (x, None), lambda _, xs: tuple(xs), seq_keys)
    _register(list, lambda x: (x, None), lambda _, xs: list(xs), seq_keys)
    _register(dict, dict_flatten, lambda keys, xs: dict(zip(keys, xs)), dict_keys)
    _register(_NoneType, lambda x: ((), None), lambda _, xs: None, lambda x: ((), None))

    # OrderedDict keeps insertion order (part of its structure); defaultdict is sorted like
    # dict and carries its default_factory in the aux data.
    _register(
        collections.OrderedDict,
        lambda x: (list(x.values()), tuple(x)),
        lambda keys, xs: collections.OrderedDict(zip(keys, xs)),
        lambda x: ([(DictKey(k), v) for k, v in x.items()], tuple(x)),
    )

    def defaultdict_flatten(x):
        keys = _sorted_keys(x)
        return [x[k] for k in keys], (x.default_factory, keys)

    def defaultdict_keys(x):
        keys = _sorted_keys(x)
        return [(DictKey(k), x[k]) for k in keys], (x.default_factory, keys)

    _register(
        collections.defaultdict,
        defaultdict_flatten,
        lambda aux, xs: collections.defaultdict(aux[0], zip(aux[1], xs)),
        defaultdict_keys,
    )


_register_builtins()


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
