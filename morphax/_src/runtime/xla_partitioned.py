"""A jitted call over a mesh of a plugin's devices (several TPU cores; XLA's CPU plugin as the
`xla_cpu` platform): one XLA program whose arguments and results carry their HLO shardings, which
XLA partitions over the devices itself (as JAX's jit does), run with every device's blocks as
they lie in device memory. Results are ShardedDeviceBuffers: each device keeps its block, and the
next program on the same mesh and layout takes it as it is. spmd_runner.py sends such calls here;
on the CPU's devices morphax partitions programs itself (sharding/spmd.py).
"""

from __future__ import annotations

import numpy as np

from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.backends.xla import executable_cache
from morphax._src.compiler.backends.xla.lowering import lower_module
from morphax._src.core.dtypes import float0
from morphax._src.runtime import devices as _devices
from morphax._src.runtime.array import Array
from morphax._src.runtime.buffers import ShardedDeviceBuffer, local_data

__all__ = ["on_plugin_mesh", "hlo_sharding", "run"]

_programs: dict = {}  # (closed, layouts, mesh) -> (executable, devices in partition order)


def on_plugin_mesh(mesh) -> bool:
    """Whether `mesh` is made of a plugin's devices (its programs are XLA's to partition)."""
    return all(isinstance(d, _devices.PjrtDevice) for d in mesh.devices.flat)


def hlo_sharding(lay, mesh) -> str:
    """XLA's sharding of a value laid out `lay` (per dimension, the mesh axes splitting it, the
    major one first) over `mesh`, its devices numbered as partitions in the mesh's flat order:
    `{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}` for ('x', None) on a 2x2 mesh."""
    if not any(lay):
        return "{replicated}"
    names, sizes = list(mesh.axis_names), dict(zip(mesh.axis_names, mesh.axis_sizes))
    used = [a for axes in lay for a in axes]
    unused = [a for a in names if a not in used]
    tiles = [int(np.prod([sizes[a] for a in axes], dtype=np.int64)) for axes in lay]
    replicas = int(np.prod([sizes[a] for a in unused], dtype=np.int64))
    # The partition at each (block per dimension..., replica): the mesh's ranks with the used
    # axes moved to the front in the layout's order and the unused ones last.
    ranks = np.arange(mesh.size).reshape(tuple(mesh.axis_sizes))
    order = [names.index(a) for a in used + unused]
    tile_assignment = ranks.transpose(order).reshape(tiles + ([replicas] if replicas > 1 else []))
    dims = ",".join(str(d) for d in tile_assignment.shape)
    ids = ",".join(str(int(i)) for i in tile_assignment.flat)
    return f"{{devices=[{dims}]{ids}{' last_tile_dim_replicate' if replicas > 1 else ''}}}"


def _compiled(closed, in_lays, out_lays, mesh, name):
    key = (closed, tuple(in_lays), tuple(out_lays), mesh)
    hit = _programs.get(key)
    if hit is None:
        devices = [d.pjrt for d in mesh.devices.flat]
        client = devices[0].client
        shardings = (
            [hlo_sharding(lay, mesh) for lay in in_lays],
            [hlo_sharding(lay, mesh) for lay in out_lays],
            mesh.size,
        )
        text = lower_module(
            closed, f"jit_{name}", platform=get_backend("xla").platform(), shardings=shardings
        )
        executable = executable_cache.compile(client, text, devices, partitioned=True)
        executable.in_avals = None  # its arguments are each device's blocks, not the global shapes
        if len(_programs) >= 256:
            _programs.clear()
        hit = _programs[key] = (executable, devices)
    return hit


def run(closed, args, in_lays, out_lays, mesh, coords, index_of, places, weak_types, name):
    """The call's result Arrays, computed by one partitioned XLA program; None where XLA cannot
    take the program whole (float0 values), so that the caller runs it otherwise. `coords`: each
    device's mesh coordinates (flat order); `index_of(lay, shape, coords)`: its block's slices."""
    if any(a.dtype == float0 for a in (*closed.in_avals, *closed.out_avals)):
        return None
    executable, devices = _compiled(closed, in_lays, out_lays, mesh, name)
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    per_device = [[] for _ in devices]
    for x, lay, aval in zip(args, in_lays, closed.in_avals):
        buf = x._buf if type(x) is Array else None
        if type(buf) is ShardedDeviceBuffer and buf.layout == (mesh, tuple(lay)):
            for k, (b, _) in enumerate(buf.shards):  # made by a program on this mesh: in place
                per_device[k].append(b)
            continue
        value = local_data(x._settle()) if type(x) is Array else np.asarray(x, dtype=aval.dtype)
        for k, (device, c) in enumerate(zip(devices, coords)):
            block = np.ascontiguousarray(value[index_of(lay, aval.shape, c, sizes)])
            per_device[k].append(device.client.buffer_from_host(block, device))
    outs = executable.execute_replicated(per_device)
    results = []
    for j, (lay, aval, w, place) in enumerate(zip(out_lays, closed.out_avals, weak_types, places)):
        shards = [(outs[k][j], index_of(lay, aval.shape, c, sizes)) for k, c in enumerate(coords)]
        a = Array(ShardedDeviceBuffer(shards, aval.shape, aval.dtype, (mesh, tuple(lay))), w)
        a._place = place
        results.append(a)
    return results
