"""The collectives' impls on devices: a collective met while a device runs its share of a pmap or
shard_map program exchanges its operands through the communicator bound to its axis name
(collective_axes.bind_device_axes), with the device's rank. Outside such a program the impls
raise the unbound-axis-name error, as before.

Each function is the `impl` of one primitive of collectives.py and takes NumPy values; results
have the operand's dtype. `axis_index_groups` selects the communicator of the caller's group
(`Communicator.subgroups`), in which its rank is its position in the group.
"""

from __future__ import annotations

import numpy as np

from morphax._src.prims.collective_axes import device_axis

_OPS = {"psum": "sum", "pmax": "max", "pmin": "min"}


def _comm(name, prim_name, groups):
    comm, rank = device_axis(name, prim_name)
    if groups is None:
        return comm, rank
    groups = [[int(r) for r in g] for g in groups]
    subs = comm.subgroups(groups)
    for g, sub in zip(groups, subs):
        if rank in g:
            return sub, g.index(rank)
    raise ValueError(
        f"{prim_name}: axis_index_groups {groups} do not contain index {rank} of axis {name!r}; the groups "
        "must cover every index of the axis."
    )


def reduction_impl(prim_name):
    op = _OPS[prim_name]

    def impl(*xs, axes, axis_index_groups):
        if axis_index_groups is not None and len(axes) != 1:
            raise NotImplementedError(f"{prim_name}: axis_index_groups with several axis names {axes}")
        outs = [np.asarray(x) for x in xs]
        # Over several names: reduce over each in turn (sum, max and min are associative).
        for name in axes:
            comm, rank = _comm(name, prim_name, axis_index_groups)
            # One exchange for all operands (a psum of a pytree of gradients): one rendezvous,
            # and across processes one MPI call.
            outs = (
                comm.all_reduce_many(rank, outs, op)
                if len(outs) != 1
                else [comm.all_reduce(rank, outs[0], op)]
            )
        return outs

    return impl


def axis_index_impl(*, axis_name):
    _, rank = device_axis(axis_name, "axis_index")
    return np.asarray(rank, dtype=np.int32)


def all_gather_impl(x, *, axis_name, axis, tiled, axis_index_groups, axis_size):
    comm, rank = _comm(axis_name, "all_gather", axis_index_groups)
    y = np.moveaxis(comm.all_gather(rank, np.asarray(x)), 0, axis)
    if tiled:
        shape = y.shape
        y = y.reshape(shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2 :])
    return y


def psum_scatter_impl(x, *, axis_name, scatter_dimension, axis_index_groups, axis_size, tiled):
    comm, rank = _comm(axis_name, "psum_scatter", axis_index_groups)
    total = comm.all_reduce(rank, np.asarray(x), "sum")
    sd = scatter_dimension
    if tiled:
        m = total.shape[sd] // comm.size
        return np.ascontiguousarray(np.take(total, np.arange(rank * m, (rank + 1) * m), axis=sd))
    # np.array, not ascontiguousarray: that makes a 0-d result (of a 1-d operand) 1-d.
    return np.array(np.take(total, rank, axis=sd), order="C")


def ppermute_impl(x, *, axis_name, perm):
    comm, rank = _comm(axis_name, "ppermute", None)
    return comm.ppermute(rank, np.asarray(x), perm)


def all_to_all_impl(x, *, axis_name, split_axis, concat_axis, axis_index_groups, tiled, axis_size):
    comm, rank = _comm(axis_name, "all_to_all", axis_index_groups)
    return comm.all_to_all(rank, np.asarray(x), split_axis, concat_axis)
