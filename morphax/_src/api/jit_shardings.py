"""`jit`'s `in_shardings` and `out_shardings`: checked when `jit` is applied, resolved (bare
PartitionSpecs against the current mesh) and flattened to one entry per argument/result leaf
when the function is called eagerly (results laid out per them: runtime/placement.py; split over
a mesh of several devices, the call runs SPMD: runtime/spmd_runner.py). NB: inside an enclosing
trace they are not applied (the enclosing computation's placement rules decide)."""

from __future__ import annotations

from morphax._src.core import pytree
from morphax._src.runtime.devices import Device
from morphax._src.sharding.constraint import canonical_sharding
from morphax._src.sharding.mesh import resolving_mesh
from morphax._src.sharding.partition_spec import PartitionSpec
from morphax._src.sharding.shardings import Sharding, SingleDeviceSharding


def _is_leaf(s) -> bool:
    return s is None or isinstance(s, (Sharding, PartitionSpec, Device))


def check(fun_name, what, value):
    """Raise at `jit` time for entries that are not shardings; returns `value`."""
    if value is None:
        return None
    for s in pytree.tree_leaves(value, is_leaf=_is_leaf):
        if not _is_leaf(s):
            raise TypeError(
                f"jit({fun_name}): {what} must hold Shardings (NamedSharding, SingleDeviceSharding), "
                f"PartitionSpecs or None, as one value or a pytree prefix; got {s!r} of type "
                f"{type(s).__name__}"
            )
    return value


def _resolve(s, fun_name, what):
    if isinstance(s, Device):
        return SingleDeviceSharding(s)
    if isinstance(s, PartitionSpec) and resolving_mesh() is None:
        raise RuntimeError(
            f"jit requires a non-empty mesh in context if you are passing `PartitionSpec`s to {what}. "
            "You can define a context mesh via `morphax.set_mesh(mesh)`. Alternatively, provide "
            f"`Sharding`s to {what} and then the mesh context manager is not required. (jit({fun_name}))"
        )
    return canonical_sharding(s, f"jit({fun_name}) {what}")


def flat(fun_name, in_shardings, out_shardings, dyn_args, n_leaves, out_tree):
    """(in, out): a Sharding or None per flat argument leaf (positional arguments first, as jit
    flattens them; keyword arguments get None) and per result leaf."""
    ins = None
    if in_shardings is not None:
        args = tuple(dyn_args)
        prefix = in_shardings
        if isinstance(prefix, list):
            prefix = tuple(prefix)
        if _is_leaf(prefix):
            prefix = (prefix,) * len(args)
        try:
            per_leaf = pytree.broadcast_prefix(prefix, args, is_leaf=_is_leaf)
        except ValueError as e:
            raise ValueError(
                f"jit({fun_name}): in_shardings must be one sharding or a pytree prefix of the "
                f"positional arguments ({len(args)} given): {e}"
            ) from None
        per_leaf = [_resolve(s, fun_name, "in_shardings") for s in per_leaf]
        ins = per_leaf + [None] * (n_leaves - len(per_leaf))
    outs = None
    if out_shardings is not None:
        dummy = pytree.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
        prefix = tuple(out_shardings) if isinstance(out_shardings, list) else out_shardings
        try:
            per_leaf = pytree.broadcast_prefix(prefix, dummy, is_leaf=_is_leaf)
        except ValueError as e:
            raise ValueError(
                f"jit({fun_name}): out_shardings must be one sharding or a pytree prefix of the "
                f"function's output: {e}"
            ) from None
        outs = [_resolve(s, fun_name, "out_shardings") for s in per_leaf]
    return ins, outs
