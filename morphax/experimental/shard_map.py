"""`morphax.experimental.shard_map` (JAX's `jax.experimental.shard_map`, deprecated there in favour
of the top-level `shard_map`): the older signature with positional mesh and specs."""

from __future__ import annotations

from morphax._src.api.shard_map import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f, mesh, in_specs, out_specs, check_rep=True):
    """`morphax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_rep)`."""
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_rep)
