"""The pytree node registry: which types are nodes and how to take them apart and rebuild them.
Builtin containers (tuple, list, dict, None, OrderedDict, defaultdict) are registered at import;
users add their own with register_pytree_node, register_pytree_node_class, the keyed variants,
register_dataclass and register_static. Lookups are by exact type: subclasses of a registered
type are leaves, as in JAX."""

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
    SequenceKey,
)

__all__ = [
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_dataclass",
    "register_static",
]

_NoneType = type(None)


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
    # JAX orders dict children by sorted key, and refuses keys that cannot be compared with
    # each other (e.g. a mix of str and int) with a ValueError.
    try:
        return tuple(sorted(d))
    except Exception as e:
        raise unsortable_keys_error(d, e) from e


def unsortable_keys_error(d: dict, cause: BaseException) -> ValueError:
    """JAX's error for a dict whose keys cannot be sorted (the cause chained to it)."""
    keys = ", ".join(repr(k) for k in list(d)[:6]) + (", ..." if len(d) > 6 else "")
    return ValueError(
        "Comparator raised exception while sorting pytree dictionary keys. A dict's children "
        f"are ordered by sorted key, and its keys ({keys}) cannot be sorted: {cause}. Use keys "
        "of one type, or an OrderedDict, whose children keep their insertion order."
    )


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

    # A defaultdict's keys are sorted by the flatten function itself in JAX, so keys that
    # cannot be sorted raise the comparison's own TypeError there.
    def defaultdict_flatten(x):
        keys = tuple(sorted(x))
        return [x[k] for k in keys], (x.default_factory, keys)

    def defaultdict_keys(x):
        keys = tuple(sorted(x))
        return [(DictKey(k), x[k]) for k in keys], (x.default_factory, keys)

    _register(
        collections.defaultdict,
        defaultdict_flatten,
        lambda aux, xs: collections.defaultdict(aux[0], zip(aux[1], xs)),
        defaultdict_keys,
    )


_register_builtins()
