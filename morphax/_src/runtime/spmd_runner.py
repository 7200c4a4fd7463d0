"""Running a jitted call SPMD: when its inputs (or jit's in_shardings, or a sharding constraint
inside) split arrays over a mesh of several devices, the program is partitioned
(sharding/spmd.py) and every device of the mesh runs the per-device program on its blocks, on its
own stream, with collectives through a `ThreadCommunicator` (as shard_map's bodies run:
runtime/pmap_runner.py). Results are pending Arrays, as for any jitted call; the blocks the
devices return are written into each result's one global buffer (a replicated result is the
first device's block, not a copy).

A mesh whose devices belong to several processes (morphax.distributed) runs the same way on each
process's own devices, with collectives that meet among them and then between the processes over
MPI (one mesh axis); a result split over the mesh holds this process's pieces only (a
ProcessLocalBuffer: host reads raise, as JAX's do), a replicated one is whole in every process.

Programs that call back into Python (host callbacks, nested pmaps) keep the one-device path:
run on every device they would call back once per device.
"""

from __future__ import annotations

import numpy as np

from morphax._src import events
from morphax._src.compiler.compile import compile_jaxpr
from morphax._src.distributed import state
from morphax._src.distributed.device_collectives import ProcessDevicesCommunicator
from morphax._src.higher_order.pmap import axis_frame
from morphax._src.runtime import placement, pmap_runner, replicated_outputs, xla_partitioned
from morphax._src.runtime.array import Array
from morphax._src.runtime.buffers import (
    ProcessLocalBuffer,
    fail_outputs,
    fill_outputs,
    local_data,
    pending_outputs,
)
from morphax._src.runtime.communicators import ThreadCommunicator
from morphax._src.sharding.propagation import layout_of
from morphax._src.sharding.shardings import NamedSharding, is_local
from morphax._src.sharding.spmd import partition, spmd_stats

__all__ = ["run_partitioned"]


def _mesh_of(committed, places):
    for _, s in committed:
        if type(s) is NamedSharding and s.mesh.size > 1 and getattr(s.mesh, "devices", None) is not None:
            return s.mesh
    for p in places:
        s = p[0] if p is not None else None
        if type(s) is NamedSharding and s.mesh.size > 1 and getattr(s.mesh, "devices", None) is not None:
            return s.mesh
    return None


def _lay(s, mesh, shape):
    """The layout of a value of `shape` placed per `s` (whole where `s` is not on `mesh`, or
    where its split would not divide the dimension)."""
    lay = layout_of(s if isinstance(s, NamedSharding) and s.mesh == mesh else None, len(shape))
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    for axes, n in zip(lay, shape):
        parts = 1
        for a in axes:
            parts *= sizes[a]
        if n % parts:
            return ((),) * len(shape)
    return lay


def _index(lay, shape, coords, sizes):
    """The slices of a value of `shape` laid out `lay` that the device at mesh `coords` holds."""
    index = []
    for n, axes in zip(shape, lay):
        if not axes:
            index.append(slice(None))
            continue
        block, parts = 0, 1
        for a in axes:  # the first axis is the major one
            block = block * sizes[a] + coords[a]
            parts *= sizes[a]
        m = n // parts
        index.append(slice(block * m, (block + 1) * m))
    return tuple(index)


def run_partitioned(executable, closed, args, committed, places, name, backend, weak_types):
    """Run the call SPMD over its mesh and return its (pending) result Arrays, placed per
    `places`; None when the call is not split over a mesh of several devices (or calls back into
    Python), so that the caller runs it on one device."""
    if executable.calls_host:
        return None
    mesh = _mesh_of(committed, places)
    if mesh is None:
        return None
    given = dict(committed)
    for i, s in given.items():
        # An input holding only its process's pieces must be cut by this mesh: read whole, the
        # other processes' pieces would be zeros.
        if placement.local_only(s) and not (isinstance(s, NamedSharding) and s.mesh == mesh):
            raise NotImplementedError(
                f"jit({name}): argument {i} is laid out over the devices of several processes on {s!r}, "
                f"but the program is split over another mesh, {mesh}; put the arguments on one mesh "
                "(device_put to a NamedSharding of the same mesh)."
            )
    in_lays = [_lay(given.get(i), mesh, a.shape) for i, a in enumerate(closed.in_avals)]
    out_lays = [_lay(p[0] if p else None, mesh, a.shape) for p, a in zip(places, closed.out_avals)]
    if not any(any(lay) for lay in in_lays + out_lays):
        return None
    if xla_partitioned.on_plugin_mesh(mesh):  # XLA partitions it (runtime/xla_partitioned.py)
        _, _, _, coords = _geometry(mesh)
        return xla_partitioned.run(
            closed, args, in_lays, out_lays, mesh, coords, _index, places, weak_types, name
        )
    part = partition(closed, in_lays, out_lays, mesh)
    devices, ranks, ids, coords = _geometry(mesh)
    programs, owner = _programs(
        part, in_lays, out_lays, len(ranks) if len(ranks) == len(devices) else 1, name, backend
    )
    spmd_stats.record_call(part)
    sizes = dict(part.mesh_axes)
    bindings = _bindings(part.mesh_axes, devices, ranks)
    inputs = [
        x._buf if type(x) is Array else np.asarray(x, dtype=a.dtype) for x, a in zip(args, closed.in_avals)
    ]
    in_index = [[_index(lay, a.shape, c, sizes) for lay, a in zip(in_lays, closed.in_avals)] for c in coords]
    buffers = pending_outputs(closed.out_avals)

    def args_for(k):
        spmd_stats.record_device(ids[k])
        values = [local_data(b) for b in inputs]
        return [v[ix] if any(lay) else v for v, ix, lay in zip(values, in_index[k], in_lays)]

    def on_done(results, errors):
        error = pmap_runner._primary(errors)
        outs = []
        if error is None:
            try:
                outs = [
                    _assemble(results, j, b, lay, coords, sizes, len(ranks) == len(devices), owner[j])
                    for j, (b, lay) in enumerate(zip(buffers, out_lays))
                ]
                # Over several processes' devices a split result holds this process's pieces only.
                outs = [
                    ProcessLocalBuffer(o) if p is not None and placement.local_only(p[0]) else o
                    for o, p in zip(outs, places)
                ]
            except BaseException as e:  # noqa: BLE001 - handed to the buffers
                error = e
        if error is not None:
            fail_outputs(buffers, error)
        else:
            fill_outputs(buffers, outs)

    def timed(program):
        def run(*values):
            if not events.on:
                return program(*values)
            start = events.now()  # the profiler's timeline: one event per device stream
            try:
                return program(*values)
            finally:
                events.complete(f"spmd {name}", "device", start)

        return run

    each = programs if len(programs) == len(ids) else programs * len(ids)
    pmap_runner.launch([timed(p) for p in each], ids, args_for, bindings, on_done)
    out = []
    for b, w, p in zip(buffers, weak_types, places):
        a = Array(b, w)
        a._place = p
        out.append(a)
    return out


_geometries: dict = {}  # mesh -> _geometry(mesh)


def _geometry(mesh):
    """(the mesh's devices in rank order, the ranks of this process's devices (all of them,
    unless the mesh spans processes), their ids, their coordinates {axis name: index})."""
    hit = _geometries.get(mesh)
    if hit is None:
        devices = list(mesh.devices.flat)
        shape = tuple(mesh.devices.shape)
        ranks = [r for r, d in enumerate(devices) if is_local(d)]
        ids = tuple(int(devices[r].id) for r in ranks)
        coords = [dict(zip(mesh.axis_names, (int(i) for i in np.unravel_index(r, shape)))) for r in ranks]
        if len(_geometries) >= 64:
            _geometries.clear()
        hit = _geometries[mesh] = (devices, ranks, ids, coords)
    return hit


def _programs(part, in_lays, out_lays, devices, name, backend):
    """(the program of each of this process's `devices`, or one for all; the device whose
    result is each output). Results every device holds alike (replicated, and computed from
    values that cannot differ between devices: a data-parallel step's new parameters after the
    gradients' psum) are computed by one device each (runtime/replicated_outputs.py); across
    processes (`devices` 1) every process computes them."""
    in_axes = [0 if any(lay) else None for lay in in_lays]
    out_axes = [0 if any(lay) else None for lay in out_lays]
    split = replicated_outputs.plan(part.closed, part.mesh_axes, in_axes, out_axes, devices)
    # Compiled with the mesh axis names bound: loop forms retrace bodies holding collectives.
    with axis_frame(part.mesh_axes):
        compiled = [
            compile_jaxpr(p, f"spmd_{name}", backend) for p in split.programs[: devices if split.split else 1]
        ]
    if not split.split:
        return compiled, [0 if o is None else o for o in split.owner]
    n = len(out_axes)
    programs = [pmap_runner.widened(c, pos, n) for c, pos in zip(compiled, split.positions)]
    return programs, [0 if o is None else o for o in split.owner]


def _bindings(mesh_axes, devices, ranks):
    """`bindings(k)` for this process's k-th device of the mesh (global rank ranks[k]): a
    ThreadCommunicator when the mesh is this process's, else collectives that meet among the
    process's devices and then between processes (distributed/device_collectives.py)."""
    if len(ranks) == len(devices):
        return pmap_runner.mesh_bindings(mesh_axes, ThreadCommunicator(len(devices)))
    comm = ProcessDevicesCommunicator(state.devices_communicator(), [d.process_index for d in devices])
    by_rank = pmap_runner.mesh_bindings(mesh_axes, comm)
    return lambda k: by_rank(ranks[k])


def _assemble(results, j, buf, lay, coords, sizes, whole=True, owner=0):
    """Output `j`'s global value from the blocks of this process's devices (`coords`: their
    mesh coordinates); unless they are the `whole` mesh, the other processes' blocks stay zero."""
    if not any(lay):
        v = np.asarray(results[owner][j])
        return v if v.dtype == buf.dtype else v.astype(buf.dtype)
    out = np.empty(buf.shape, buf.dtype) if whole else np.zeros(buf.shape, buf.dtype)
    written = set()
    for r, c in enumerate(coords):
        ix = _index(lay, buf.shape, c, sizes)
        key = tuple((s.start, s.stop) for s in ix)
        if key in written:
            continue  # a replica along an axis the layout does not split
        written.add(key)
        out[ix] = results[r][j]
    return out
