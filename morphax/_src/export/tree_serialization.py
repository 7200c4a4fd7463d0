"""Serializing the pytree structures of an exported function's arguments and results, as
`jax.export` does: tuples, lists, dicts with string keys, None, and the namedtuples and custom
nodes registered with `register_namedtuple_serialization` / `register_pytree_node_serialization`.
"""

from __future__ import annotations

import base64
import collections
import itertools
import json
import types
from collections.abc import Sequence

from morphax._src.core import pytree
from morphax._src.core.pytree_registry import _registry as _pytree_registry

# type -> (serialized_name, serialize_auxdata); serialized_name -> (type, deserialize, from_children)
serialization_registry: dict = {}
deserialization_registry: dict = {}


def _is_namedtuple(nodetype) -> bool:
    return (
        isinstance(nodetype, type)
        and issubclass(nodetype, tuple)
        and isinstance(getattr(nodetype, "_fields", None), Sequence)
        and all(isinstance(f, str) for f in nodetype._fields)
    )


def register_pytree_node_serialization(
    nodetype, *, serialized_name: str, serialize_auxdata, deserialize_auxdata, from_children=None
):
    """Registers a custom pytree node type for serialization: `serialize_auxdata(aux) -> bytes`,
    `deserialize_auxdata(bytes) -> aux`, and `from_children(aux, children)` (default: the
    unflatten function of its `register_pytree_node` registration). Returns `nodetype`."""
    if nodetype in serialization_registry:
        raise ValueError(
            f"Duplicate serialization registration for type `{nodetype}`. Previous registration was "
            f"with serialized_name `{serialization_registry[nodetype][0]}`."
        )
    if serialized_name in deserialization_registry:
        raise ValueError(
            f"Duplicate serialization registration for serialized_name `{serialized_name}`. Previous "
            f"registration was for type `{deserialization_registry[serialized_name][0]}`."
        )
    if from_children is None:
        if nodetype not in _pytree_registry:
            raise ValueError(
                "If `from_children` is not present, you must call first"
                f"`jax.tree_util.register_pytree_node` for `{nodetype}`"
            )
        from_children = _pytree_registry[nodetype].unflatten
    serialization_registry[nodetype] = (serialized_name, serialize_auxdata)
    deserialization_registry[serialized_name] = (nodetype, deserialize_auxdata, from_children)
    return nodetype


def register_namedtuple_serialization(nodetype, *, serialized_name: str):
    """Registers a `collections.namedtuple` type for serialization under `serialized_name`; on
    deserialization the type must have the fields that were serialized. Returns `nodetype`."""
    if not _is_namedtuple(nodetype):
        raise ValueError(
            "Use `jax.export.register_pytree_node_serialization` for types other than `collections.namedtuple`."
        )

    def serialize_auxdata(aux_data) -> bytes:
        del aux_data
        return json.dumps(nodetype._fields).encode("utf-8")

    def deserialize_auxdata(data: bytes):
        return json.loads(data.decode("utf-8"))

    def from_children(aux_data, children):
        assert len(aux_data) == len(children)
        return nodetype(**dict(zip(aux_data, children)))

    return register_pytree_node_serialization(
        nodetype,
        serialized_name=serialized_name,
        serialize_auxdata=serialize_auxdata,
        deserialize_auxdata=deserialize_auxdata,
        from_children=from_children,
    )


def _serialize_ordereddict_keys(keys):
    if isinstance(keys, Sequence) and all(isinstance(k, str) for k in keys):
        return json.dumps(list(keys)).encode("utf-8")
    raise NotImplementedError(
        f"Serialization of collections.OrderedDict is supported only when the keys are strings. Found keys: {keys}."
    )


register_pytree_node_serialization(
    collections.OrderedDict,
    serialized_name="collections.OrderedDict",
    serialize_auxdata=_serialize_ordereddict_keys,
    deserialize_auxdata=lambda b: json.loads(b.decode("utf-8")),
    from_children=lambda keys, children: collections.OrderedDict(zip(keys, children)),
)


def serialize_treedef(treedef) -> dict:
    """A JSON-able description of `treedef`: {"kind": leaf|none|tuple|list|dict|custom, ...}."""
    node_data = treedef.node_data()
    children = [serialize_treedef(c) for c in treedef.children()]
    if node_data is None:
        return {"kind": "leaf"}
    node_type, aux = node_data
    if node_type is types.NoneType:
        return {"kind": "none"}
    if node_type is tuple or node_type is list:
        return {"kind": node_type.__name__, "children": children}
    if node_type is dict:
        for k in aux:
            if not isinstance(k, str):
                raise TypeError(
                    "Serialization is supported only for dictionaries with string keys."
                    f" Found key {k} of type {type(k)}."
                )
        return {"kind": "dict", "keys": list(aux), "children": children}
    if node_type in serialization_registry:
        name, serialize_aux = serialization_registry[node_type]
        data = serialize_aux(aux)
        if not isinstance(data, (bytes, bytearray)):
            raise ValueError(
                "The custom serialization function for `node_type` must return a `bytes` object. "
                f"It returned a {type(data)}."
            )
        return {
            "kind": "custom",
            "name": name,
            "aux": base64.b64encode(bytes(data)).decode("ascii"),
            "children": children,
        }
    raise ValueError(
        f"Cannot serialize PyTreeDef containing an unregistered type `{node_type}`. "
        "Use `export.register_pytree_node_serialization` or `export.register_namedtuple_serialization`."
    )


def deserialize_treedef(data: dict):
    """The PyTreeDef `serialize_treedef` described (built from a tree of placeholder leaves)."""
    return pytree.tree_structure(_to_tree(data, itertools.repeat(0.0)))


def _to_tree(data: dict, leaves):
    kind = data["kind"]
    children = [_to_tree(c, leaves) for c in data.get("children", ())]
    if kind == "leaf":
        return next(leaves)
    if kind == "none":
        return None
    if kind == "tuple":
        return tuple(children)
    if kind == "list":
        return list(children)
    if kind == "dict":
        return dict(zip(data["keys"], children))
    if kind == "custom":
        name = data["name"]
        if name not in deserialization_registry:
            raise ValueError(
                f"Cannot deserialize a PyTreeDef containing an unregistered type `{name}`. "
                "Use `export.register_pytree_node_serialization` or `export.register_namedtuple_serialization`."
            )
        _, deserialize_aux, from_children = deserialization_registry[name]
        return from_children(deserialize_aux(base64.b64decode(data["aux"])), children)
    raise ValueError(f"Cannot deserialize PyTreeDef with unknown kind: {kind}")
