"""`morphax.ref`: mutable array references, mirroring ``jax.ref``: the types (`Ref`, and
`AbstractRef`, a ref's abstract value), creation (`new_ref`, `empty_ref`), the reads and writes
as functions (`get`, `set`, `swap`, `addupdate`: what ``ref[idx]``, ``ref[idx] = v`` and
``ref.addupdate`` do) and invalidation (`freeze`, `free_ref`). The refs are those of
`morphax.new_ref`: these functions work on them eagerly, under jit, vmap and autodiff alike."""

from __future__ import annotations

import builtins

from morphax._src.core.avals import get_aval
from morphax._src.core.state_types import AbstractRef, Ref, encode_index, is_ref_aval
from morphax._src.prims.state import (
    _int_array_shape,
    addupdate_p,
    empty_ref,
    free_ref,
    freeze,
    get_p,
    new_ref,
    swap_p,
)

__all__ = [
    "AbstractRef",
    "Ref",
    "addupdate",
    "empty_ref",
    "free_ref",
    "freeze",
    "get",
    "new_ref",
    "set",
    "swap",
]


def _indexed(name, ref, idx):
    """The (tree, dynamic operands) of ``ref[idx]``; `idx` None or () means the whole ref."""
    try:
        aval = get_aval(ref)
    except TypeError:
        aval = None
    if aval is None or not is_ref_aval(aval):
        raise TypeError(
            f"{name}: expected a Ref (from morphax.new_ref) as its first argument, got "
            f"{type(ref).__name__} {ref!r}"
        )
    if idx is None or (isinstance(idx, builtins.tuple) and not idx):
        idx = ...
    return encode_index(aval.shape, idx, name, _int_array_shape)


def get(ref, idx=None):
    """``ref[idx]``: the value of the indexed part of `ref` (the whole ref when `idx` is None)."""
    tree, dyn = _indexed("ref_get", ref, idx)
    return get_p.bind(ref, *dyn, tree=tree)


def swap(ref, idx, value, _function_name="ref_swap"):
    """Write `value` to ``ref[idx]`` (the whole ref when `idx` is None) and return what was
    there before."""
    tree, dyn = _indexed(_function_name, ref, idx)
    return swap_p.bind(ref, value, *dyn, tree=tree)


def set(ref, idx, value):  # noqa: A001 - JAX's name
    """``ref[idx] = value`` (the whole ref when `idx` is None); returns None."""
    tree, dyn = _indexed("ref_set", ref, idx)
    swap_p.bind(ref, value, *dyn, tree=tree)


def addupdate(ref, idx, x):
    """``ref[idx] += x`` as one operation (the whole ref when `idx` is None); returns None."""
    tree, dyn = _indexed("ref_addupdate", ref, idx)
    addupdate_p.bind(ref, x, *dyn, tree=tree)
