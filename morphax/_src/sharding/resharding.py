"""`reshard` (move arrays to a new sharding over Explicit mesh axes), `auto_axes` and
`explicit_axes` (run a function with mesh axes switched between Explicit and Auto)."""

from __future__ import annotations

import functools

from morphax._src.core import pytree
from morphax._src.core.values import is_concrete_array
from morphax._src.prims._shape_util import as_lax_array
from morphax._src.runtime import array as _array
from morphax._src.sharding.constraint import sharding_constraint_p
from morphax._src.sharding.mesh import AxisType, Mesh, get_mesh, set_mesh
from morphax._src.sharding.partition_spec import PartitionSpec, flat_axes
from morphax._src.sharding.shardings import NamedSharding, Sharding


def _is_leaf(s):
    return s is None or isinstance(s, (Sharding, PartitionSpec))


def _resolve(s, who):
    if isinstance(s, PartitionSpec):
        mesh = get_mesh()
        if mesh.empty:
            raise ValueError(
                "Using PartitionSpec when you are not under a mesh context is not allowed. Please pass "
                "a NamedSharding instance or enter into a mesh context via `morphax.set_mesh`. Got "
                f"{s!r}"
            )
        for name in flat_axes(s):
            if name in mesh.axis_names and mesh.axis_type_of(name) is not AxisType.Explicit:
                raise ValueError(
                    f"PartitionSpec passed to {who} cannot contain axis names that are of type Auto or "
                    f"Manual. Got PartitionSpec: {s!r} with axis name: {name} of type: "
                    f"AxisType.{mesh.axis_type_of(name).name}."
                )
        return NamedSharding(mesh, s)
    if isinstance(s, Sharding):
        return s
    raise TypeError(f"{who}: expected a Sharding or PartitionSpec, got {s!r} of type {type(s).__name__}")


def _place(x, s, who):
    x = as_lax_array(x)
    if isinstance(s, NamedSharding):
        s.check_shape(x.shape, who)
    if is_concrete_array(x):
        from morphax._src.runtime.placement import put

        return put(x, s, who)
    _array.mark_placed()  # results of the program get placed (runtime/placement.py)
    return sharding_constraint_p.bind(x, sharding=s)


def reshard(xs, out_shardings):
    """`xs` (a pytree) laid out per `out_shardings` (one Sharding or PartitionSpec, resolved
    against the current mesh, or a pytree prefix of them); values are unchanged."""
    specs = pytree.broadcast_prefix(out_shardings, xs, is_leaf=_is_leaf)
    leaves, tree = pytree.tree_flatten(xs)
    out = [x if s is None else _place(x, _resolve(s, "reshard"), "reshard") for x, s in zip(leaves, specs)]
    return pytree.tree_unflatten(tree, out)


def _switched(axes, to):
    mesh = get_mesh()
    if mesh.empty:
        raise ValueError(
            "auto_axes/explicit_axes need a mesh in context: call them inside `with morphax.set_mesh(mesh):`"
        )
    names = mesh.axis_names if axes is None else ((axes,) if isinstance(axes, str) else tuple(axes))
    for n in names:
        if n not in mesh.axis_names:
            raise ValueError(f"axis {n!r} is not an axis of the current mesh {mesh}")
    return Mesh(
        mesh.devices,
        mesh.axis_names,
        tuple(to if n in names else t for n, t in zip(mesh.axis_names, mesh.axis_types)),
    )


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """`f` run with mesh `axes` (all by default) switched to Auto; its outputs resharded to
    `out_sharding` over the original mesh."""
    if f is None:
        return functools.partial(auto_axes, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        original = get_mesh()
        with set_mesh(_switched(axes, AxisType.Auto)):
            out = f(*args, **kwargs)
        if out_sharding is None:
            return out
        with set_mesh(original):
            return reshard(out, out_sharding)

    return wrapped


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """`f` run with mesh `axes` (all by default) switched to Explicit, its inputs first resharded
    to `in_sharding`."""
    if f is None:
        return functools.partial(explicit_axes, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        with set_mesh(_switched(axes, AxisType.Explicit)):
            if in_sharding is not None:
                args = reshard(
                    args, in_sharding if isinstance(in_sharding, tuple) else (in_sharding,) * len(args)
                )
            return f(*args, **kwargs)

    return wrapped
