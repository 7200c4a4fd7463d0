"""Named axes for the collectives: resolving axis names against the axis environment that vmap
and pmap bind, with errors that name the unbound axis; `axis_size`; the check every
collective runs when it is typed; and the small helpers the collectives share."""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from morphax._src.core import pytree
from morphax._src.core import trace as _trace
from morphax._src.core.avals import get_aval
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.prims._spec import TestSpec

__all__ = ["axis_size"]


# ------------------------------------------------------------------------------------------------
# Axis names and the axis environment.


def _unbound(name, prim_name: str) -> NameError:
    return NameError(
        f"unbound axis name: {name}. The collective {prim_name} refers to an axis name that no enclosing "
        f"transformation binds; run it inside vmap(f, axis_name={name!r}) or pmap(f, axis_name={name!r}) "
        "(or a nest of them binding every name it mentions)."
    )


def _names_tuple(axis_name, prim_name: str) -> tuple:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for n in names:
        if n is None:
            raise TypeError(f"{prim_name}: None is not an axis name; name the vmap axis with axis_name=...")
        try:
            hash(n)
        except TypeError:
            raise TypeError(f"{prim_name}: axis names must be hashable, got {n!r}") from None
    return names


def _single_name(axis_name, prim_name: str):
    names = _names_tuple(axis_name, prim_name)
    if len(names) != 1:
        raise NotImplementedError(
            f"{prim_name} over several axis names {names} is not supported; use one name."
        )
    return names[0]


def _env_size(name, prim_name: str) -> int:
    """Size of the axis `name` bound by the innermost enclosing transformation that binds it."""
    t = _trace.current_trace()
    while t is not None:
        data = getattr(t, "axis_data", None)
        if data is not None and data.name == name:
            return int(data.size)
        t = t.parent
    raise _unbound(name, prim_name)


def axis_size(axis_name) -> int:
    """The size of a named axis (a product for a tuple of names), as a Python int."""
    size = 1
    for n in _names_tuple(axis_name, "axis_size"):
        size *= _env_size(n, "axis_size")
    return size


def _no_groups(prim_name: str, groups):
    if groups is not None:
        raise NotImplementedError(f"{prim_name}: axis_index_groups is not supported under vmap.")


def _check_size(prim_name: str, axis_name, traced_size, size):
    if traced_size != size:
        raise ValueError(
            f"{prim_name} was traced for axis {axis_name!r} of size {traced_size}, but the axis has size "
            f"{size} here (a jitted function traced under one vmap reused under another size)."
        )


# ------------------------------------------------------------------------------------------------
# The device axis context: while a device runs its share of a pmap or shard_map program, the
# runner binds each mapped axis name to (communicator, this device's rank in it) on the device's
# thread, and the collectives' impls (collectives_on_devices.py) exchange values through it.


class _DeviceAxes(threading.local):
    def __init__(self):
        self.bound = {}


_device_axes = _DeviceAxes()


@contextlib.contextmanager
def bind_device_axes(mapping):
    """Bind axis names to (communicator, rank) on this thread inside the block (inner bindings
    of a name shadow outer ones)."""
    prev = _device_axes.bound
    _device_axes.bound = {**prev, **mapping}
    try:
        yield
    finally:
        _device_axes.bound = prev


def bound_on_this_thread() -> bool:
    """Whether this thread is running a device's share of a mapped program (axis names bound)."""
    return bool(_device_axes.bound)


def device_axis(name, prim_name: str):
    """(communicator, rank) bound to `name` on this thread; the unbound-name error otherwise."""
    hit = _device_axes.bound.get(name)
    if hit is None:
        raise _unbound(name, prim_name)
    return hit


def _no_cases(rng):
    # Collectives need a transformation binding their axis name, which the generated matrices
    # (eager, staged, vmap, grad over one operand) do not provide: see test_collectives.py.
    return []


def _spec():
    return TestSpec(cases=_no_cases, differentiable=False)


def _as_array(x):
    """Arrays and tracers pass through; NumPy values and Python scalars (weakly typed) become arrays."""
    if isinstance(x, _trace.Tracer) or is_concrete_array(x):
        return x
    aval = get_aval(x)
    return make_array(np.asarray(x, dtype=aval.dtype), aval.dtype, weak_type=aval.weak_type)


def _rebind_leaves(x, fn):
    leaves, tree = pytree.tree_flatten(x)
    return pytree.tree_unflatten(tree, fn([_as_array(v) for v in leaves]))


# ------------------------------------------------------------------------------------------------
# Every collective checks, when it is typed (staged by jit or make_jaxpr, or run eagerly), that the
# transformations around it bind its names: jit(lambda x: psum(x, 'i')) outside a vmap binding 'i'
# fails at trace time, as in JAX, not later when the compiled function runs.


def _check_bound(prim):
    typed = prim.abstract_eval
    key = prim.named_axes_param

    def abstract_eval(*avals, **params):
        names = params[key]
        for n in names if isinstance(names, tuple) else (names,):
            _env_size(n, prim.name)
        return typed(*avals, **params)

    prim.abstract_eval = abstract_eval
