"""Collectives between the processes of a run on host (NumPy) data, as JAX's
``jax.experimental.multihost_utils``: `process_allgather`, `broadcast_one_to_all`,
`sync_global_devices` and `assert_equal`, over the MPI communicator of morphax.distributed. With
one process they need no MPI and return the local data."""

from __future__ import annotations

import zlib

import numpy as np

from morphax._src.core import pytree
from morphax._src.distributed import state
from morphax._src.runtime import devices
from morphax._src.runtime.array import Array
from morphax._src.runtime.buffers import local_data

__all__ = ["assert_equal", "broadcast_one_to_all", "process_allgather", "sync_global_devices"]


def _communicator(name):
    if not state.is_initialized():
        raise RuntimeError(
            f"multihost_utils.{name}: this run has {devices.process_count()} processes but morphax.distributed "
            "is not initialized (or was shut down); call morphax.distributed.initialize() first"
        )
    return state.global_communicator()


def process_allgather(in_tree, tiled: bool = False):
    """Every process's value of each leaf of `in_tree` (leaves of the same shape and dtype in all
    processes), as NumPy arrays: stacked along a new leading axis, or with `tiled` concatenated
    along the first axis (scalars are always stacked). A leaf laid out over the devices of
    several processes (a global Array) comes back whole, as its global value."""

    def gather(leaf):
        if type(leaf) is Array and not leaf.is_fully_addressable:
            return _global_value(leaf)
        x = np.asarray(leaf)
        if devices.process_count() == 1:
            return x if tiled and x.ndim else np.expand_dims(x, 0)
        comm = _communicator("process_allgather")
        stacked = comm.all_gather(comm.rank, x)
        return np.concatenate(list(stacked), axis=0) if tiled and x.ndim else stacked

    return pytree.tree_map(gather, in_tree)


def _global_value(x) -> np.ndarray:
    """The whole value of an Array laid out over several processes' devices: each process sends
    the pieces its devices hold (in its global-shaped buffer), every process assembles them."""
    if x.is_fully_replicated:
        return np.asarray(x)  # every process holds all of it
    comm = _communicator("process_allgather")
    held = comm.all_gather(comm.rank, local_data(x._settle()))  # (processes, *shape)
    out = np.empty(x.shape, x.dtype)
    for device, index in x.sharding.devices_indices_map(x.shape).items():
        out[index] = held[device.process_index][index]
    return out


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """The leaves of `in_tree` from the source process (process 0 unless `is_source` says which),
    as NumPy arrays in every process; leaves must have the same shape in all processes. As in JAX,
    the result is the sum over processes of the sources' values and the others' zeros."""
    if devices.process_count() == 1:
        return pytree.tree_map(np.asarray, in_tree)
    comm = _communicator("broadcast_one_to_all")
    if is_source is None:
        is_source = devices.process_index() == 0

    def broadcast(leaf):
        x = np.asarray(leaf)
        return comm.all_reduce(comm.rank, x if is_source else np.zeros_like(x), "sum")

    return pytree.tree_map(broadcast, in_tree)


def assert_equal(in_tree, fail_message: str = ""):
    """Raise AssertionError unless every process holds the same values in `in_tree`."""
    gathered = process_allgather(in_tree, tiled=True)

    def repeated(leaf):
        x = np.asarray(leaf)
        return np.concatenate([x.reshape(1) if x.ndim == 0 else x] * devices.process_count())

    expected = pytree.tree_map(repeated, in_tree)
    same = pytree.tree_leaves(pytree.tree_map(lambda a, b: bool(np.array_equal(a, b)), expected, gathered))
    if not all(same):
        raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")


def sync_global_devices(name: str):
    """A barrier across all processes; raises AssertionError if they pass different `name`s."""
    digest = np.uint32(zlib.crc32(name.encode()))
    assert_equal(digest, f"sync_global_devices name mismatch ('{name}')")
