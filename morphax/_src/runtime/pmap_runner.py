"""Running a pmap: each device runs the compiled per-device program on its slice of the inputs,
on its own stream, at the same time as the others; their collectives meet in a
`ThreadCommunicator` (one per call), bound to the axis name on each device's thread.

Across processes (after morphax.distributed.initialize) each process runs its own devices'
share, their ranks numbered across processes (`participants`), and collectives go through the
two-level communicator of distributed/device_collectives.py instead.

Registered as the `xla_pmap` primitive's evaluation (higher_order/pmap.py), eagerly and inside
compiled programs. Calls block until every device is done: a device that fails aborts the
communicator, so the others stop at their next collective instead of waiting for it, and the
first failure (not the others' "a participant failed" errors) is raised.
"""

from __future__ import annotations

import threading

import numpy as np

from morphax._src.compiler.compile import compile_jaxpr, compile_replicated
from morphax._src.compiler.executor import ReplicatedProgram
from morphax._src.core.avals import get_aval
from morphax._src.core.dtypes import float0
from morphax._src.core.jaxpr import any_eqn
from morphax._src.core.memo import memoized
from morphax._src.distributed import state as _state
from morphax._src.distributed.device_collectives import ProcessDevicesCommunicator
from morphax._src.higher_order import pmap as _pmap
from morphax._src.prims import collective_axes
from morphax._src.runtime import devices as _devices
from morphax._src.runtime import dispatch, placement, replicated_outputs
from morphax._src.runtime.array import Array
from morphax._src.runtime.buffers import (
    ShardedDeviceBuffer,
    fail_outputs,
    fill_outputs,
    local_data,
    pending_outputs,
)
from morphax._src.runtime.communicators import CollectiveError, ThreadCommunicator
from morphax._src.sharding.mesh import Mesh
from morphax._src.sharding.partition_spec import PartitionSpec
from morphax._src.sharding.shardings import NamedSharding

__all__ = [
    "check_device_count",
    "global_axis_size",
    "launch",
    "mesh_bindings",
    "participants",
    "run_on_devices",
    "stats",
    "with_shardings",
]

_launch_lock = threading.Lock()
# Per-device programs launched (one per device per call), and of those the calls of programs a
# backend ran on all the devices at once (compile_replicated): tests count these.
stats = {"launches": 0, "replicated": 0}


def check_device_count(name, size, devices=None):
    """Raise JAX's error when `size` devices are needed but fewer are available (or `devices`
    lists another number of them)."""
    if devices is not None:
        if len(devices) != size:
            raise ValueError(
                f"pmap({name}): the mapped axis has size {size}, but devices= lists {len(devices)} "
                "devices; each device takes one slice, so pass as many devices as the axis has "
                "entries (or leave devices=None to use the first ones)."
            )
        return
    count = _devices.device_count()
    if size > count:
        raise ValueError(
            f"compiling computation that requires {size} logical devices, but only {count} XLA devices "
            f"are available (num_replicas={size}): pmap({name}) maps an axis of size {size}. Map at most "
            f"{count} entries per call, or start with more devices (XLA_FLAGS="
            f"--xla_force_host_platform_device_count={size}, or "
            f"morphax.config.update('jax_num_cpu_devices', {size}) before the first computation)."
        )


def global_axis_size(name, size, devices=None) -> int:
    """The size of pmap's mapped axis across processes when each process maps `size` entries
    (its inputs' size), checking the devices. As JAX: after morphax.distributed.initialize with
    devices=None every process maps its own devices, `size` at most its local device count, and
    the axis spans them all (size * process_count); with `devices` (global ids), this process maps
    those of its own and the axis spans the list."""
    if _devices.process_count() == 1:
        check_device_count(name, size, devices)
        return size
    me = _devices.process_index()
    if devices is None:
        check_device_count(name, size)
        counts = [len(_devices.local_devices(p)) for p in range(_devices.process_count())]
        if min(counts) < size:
            raise ValueError(
                f"pmap({name}): each process maps {size} entries onto its own devices, but the processes "
                f"have {counts} devices; map at most {min(counts)} entries per process"
            )
        return size * _devices.process_count()
    owners = _owners(name, devices)
    mine = sum(1 for p in owners if p == me)
    if mine == len(devices):
        check_device_count(name, size, devices)
        return size
    if mine != size:
        raise ValueError(
            f"pmap({name}): the mapped axis has size {size} in process {me}, but devices= lists {mine} of "
            "its devices; each process passes one slice per device of its own in the list."
        )
    return len(devices)


def _owners(name, devices):
    by_id = _devices_by_id()
    missing = [i for i in devices if i not in by_id]
    if missing:
        raise ValueError(f"pmap({name}): devices= names unknown device ids {missing}")
    return [by_id[i].process_index for i in devices]


def participants(axis_size, global_size, devices):
    """(ids of this process's devices that run the map, their ranks among all participants, and
    the process of each rank, or None when all are this process's)."""
    if devices is None:
        if global_size == axis_size:
            return tuple(d.id for d in _devices.local_devices()[:axis_size]), tuple(range(axis_size)), None
        every = [d for p in range(_devices.process_count()) for d in _devices.local_devices(p)[:axis_size]]
        layout = [d.process_index for d in every]
        ids = [d.id for d in every]
    else:
        ids, layout = list(devices), _owners("", devices)
    me = _devices.process_index()
    ranks = tuple(r for r, p in enumerate(layout) if p == me)
    mine = tuple(ids[r] for r in ranks)
    if len(ranks) == len(layout):
        return mine, tuple(range(len(ranks))), None
    return mine, ranks, layout


def _host(x, dtype):
    if type(x) is Array:
        x = local_data(x._settle())  # of a global array, its process's pieces (_check_process_local)
    return x if type(x) is np.ndarray and x.dtype == dtype else np.asarray(x, dtype=dtype)


def _slice(x, axis, i):
    return x[(slice(None),) * axis + (i,)]


def _primary(errors):
    """The cause among the devices' errors, not the "participant failed" errors it provoked."""
    failures = [e for e in errors if e is not None]
    if not failures:
        return None
    return ([e for e in failures if not isinstance(e, CollectiveError)] or failures)[0]


def launch(executable, ids, args_for, bindings, on_done) -> None:
    """Start `executable` (one callable, or a list of one per device) once per device without
    waiting: device `ids[r]` runs it (or `executable[r]`) on
    `args_for(r)` (NumPy values; called on the device's thread, so it may wait for inputs) with
    `bindings(r)` (axis name -> (communicator, rank)) bound. The last device to finish calls
    `on_done(results, errors)` (per device). A failing device aborts the communicators of its
    bindings, so the others stop at their next collective. A device whose stream is the calling
    thread runs its share here, after the others are queued."""
    n = len(ids)
    if isinstance(executable, ReplicatedProgram):
        _launch_replicated(executable, ids, args_for, on_done)
        return
    programs = executable if isinstance(executable, (list, tuple)) else [executable] * n
    results: list = [None] * n
    errors: list = [None] * n
    remaining = [n]
    lock = threading.Lock()
    outer = dict(collective_axes._device_axes.bound)  # a program launched from a device keeps its names

    def job_for(r):
        def job():
            try:
                values = args_for(r)
                with np.errstate(all="ignore"), collective_axes.bind_device_axes({**outer, **bindings(r)}):
                    results[r] = programs[r](*values)
            except BaseException as e:  # noqa: BLE001 - handed to on_done
                errors[r] = e
                for comm, rank in bindings(r).values():
                    abort = getattr(comm, "abort", None)
                    if abort is not None:
                        abort(rank, e)
            finally:
                with lock:
                    remaining[0] -= 1
                    last = remaining[0] == 0
                if last:
                    on_done(results, errors)

        return job

    here = None
    # One launch enqueues on every stream at once: two threads launching programs with
    # collectives on the same devices must queue them in the same order on every stream, or
    # each would wait at a collective for work queued behind the other's.
    with _launch_lock:
        stats["launches"] += n
        for r, dev in enumerate(ids):
            stream = dispatch.stream_for(dev)
            if stream.is_worker():
                here = r
                continue
            stream.submit(job_for(r))
    if here is not None:
        job_for(here)()


def _launch_replicated(program, ids, args_for, on_done) -> None:
    """`launch` of a program the backend runs on all the devices at once: one job, on the first
    device's stream (or here, when this thread is that stream's worker)."""
    n = len(ids)

    def job():
        try:
            results, errors = program.run([args_for(r) for r in range(n)]), [None] * n
        except BaseException as e:  # noqa: BLE001 - handed to on_done
            results, errors = [None] * n, [e] * n
        on_done(results, errors)

    with _launch_lock:
        stats["launches"] += n
        stats["replicated"] += 1
        stream = dispatch.stream_for(ids[0])
        if not stream.is_worker():
            stream.submit(job)
            return
    job()


def run_on_devices(executable, ids, per_device_args, bindings) -> list:
    """`launch`, waiting: returns each device's outputs, or raises the first device's failure."""
    done = threading.Event()
    box = {}

    def on_done(results, errors):
        box["results"], box["error"] = results, _primary(errors)
        done.set()

    launch(executable, ids, lambda r: per_device_args[r], bindings, on_done)
    done.wait()
    if box["error"] is not None:
        raise box["error"]
    return box["results"]


def mesh_bindings(mesh_axes, comm):
    """`bindings(rank)` for devices in row-major order over `mesh_axes` ((name, size), ...): each
    name bound to the communicator of the devices that differ from this one only along it
    (`comm`'s subgroup) and this device's coordinate along it."""
    sizes = [s for _, s in mesh_axes]
    if len(sizes) == 1:
        name = mesh_axes[0][0]
        return lambda r: {name: (comm, r)}
    ranks = np.arange(comm.size).reshape(sizes)
    per_axis = []
    for a, (name, _) in enumerate(mesh_axes):
        lines = np.moveaxis(ranks, a, -1).reshape(-1, sizes[a])  # each line varies along axis a only
        groups = [[int(r) for r in line] for line in lines]
        subs = comm.subgroups(groups)
        where = {r: (subs[g], k) for g, line in enumerate(groups) for k, r in enumerate(line)}
        per_axis.append((name, where))

    def bindings(r):
        return {name: where[r] for name, where in per_axis}

    return bindings


def _stack(outs, out_axes, owner, gathered=False):
    """The pmap's outputs from the devices' (`outs[r]`): output j stacked along out_axes[j], or
    (out_axes None) device owner[j]'s. `gathered`: the first device's mapped outputs are every
    device's already (`_gathering`), stacked along axis 0."""
    result = []
    for j, ax in enumerate(out_axes):
        if ax is None:
            result.append(np.asarray(outs[owner[j]][j]))
        elif gathered:
            result.append(np.moveaxis(np.asarray(outs[0][j]), 0, ax))
        else:
            result.append(np.stack([np.asarray(o[j]) for o in outs], axis=ax))
    return result


def _prepare(jaxpr, mesh_axes, axis_size, in_axes, out_axes, devices, backend, name):
    """(this process's device ids, the program of each, the owner of each output (_stack),
    whether a program calls back into Python, the bindings of the devices' axis names, and
    where the mapped arguments are whole in every process (shard_map over several processes'
    devices) each local device's index into them, else None)."""
    global_size = int(np.prod([s for _, s in mesh_axes]))
    if global_size == axis_size:
        check_device_count(name, axis_size, devices)
    ids, ranks, layout = participants(axis_size, global_size, devices)
    # Across processes every process needs every output: no device's share is enough.
    split = replicated_outputs.plan(jaxpr, mesh_axes, in_axes, out_axes, len(ids) if layout is None else 1)
    if layout is None and not split.split:
        # One program over all the devices, collectives inside, where the backend can (xla).
        with _pmap.axis_frame(mesh_axes):
            replicated = compile_replicated(
                split.programs[0],
                f"pmap_{name}",
                backend,
                tuple(mesh_axes),
                (tuple(in_axes), tuple(out_axes)),
            )
        if replicated is not None:
            return ids, replicated, split.owner, False, None, None
    # Compiled with the axis names bound: loop forms retrace bodies that hold collectives.
    with _pmap.axis_frame(mesh_axes):
        compiled = [
            compile_jaxpr(p, f"pmap_{name}", backend)
            for p in split.programs[: len(ids) if split.split else 1]
        ]
    calls_host = any(c.calls_host for c in compiled)
    if split.split:
        programs = [widened(c, pos, len(out_axes)) for c, pos in zip(compiled, split.positions)]
    else:
        programs = compiled[0]
    if layout is None:
        bindings = mesh_bindings(mesh_axes, ThreadCommunicator(axis_size))
        return ids, programs, split.owner, calls_host, bindings, None
    # The devices of several processes (morphax.distributed): collectives meet among this
    # process's devices, then between processes.
    comm = ProcessDevicesCommunicator(_state.devices_communicator(), layout)
    _make_groups(jaxpr, mesh_axes, comm, name)
    by_rank = mesh_bindings(mesh_axes, comm)
    owner, picks = split.owner, None  # pmap's form: each process passes its own devices' slices
    if axis_size == global_size:  # shard_map's form: every process passes the global arrays
        programs = _gathering(programs, out_axes, comm, ranks)
        owner, picks = [0] * len(out_axes), ranks
    return ids, programs, owner, calls_host, lambda r: by_rank(ranks[r]), picks


def _index_groups(jaxpr) -> tuple:
    """The distinct axis_index_groups of the program's collectives (nested bodies included)."""

    def collect():
        found: list = []

        def note(eqn):
            groups = eqn.params.get("axis_index_groups")
            if groups is not None:
                key = tuple(tuple(int(r) for r in g) for g in groups)
                if key not in found:
                    found.append(key)
            return False

        any_eqn(jaxpr, note)
        return tuple(found)

    return memoized(jaxpr, ("axis_index_groups",), collect)


def _make_groups(jaxpr, mesh_axes, comm, name):
    """Make, before the devices start, the communicators of the program's axis_index_groups:
    groups that span processes get MPI communicators split collectively, which the processes'
    launching threads do in the same order (a device thread cannot). Groups of a mesh of several
    axes across processes raise here, not at a device (a failing device would leave the
    processes' communicator unusable)."""
    groups = _index_groups(jaxpr)
    if groups and len(mesh_axes) != 1:
        raise NotImplementedError(
            f"{name}: axis_index_groups over a mesh of several axes whose devices belong to several processes "
            "are not supported yet; give each group its own mesh axis (shard_map, or jit over that mesh)"
        )
    for g in groups:
        comm.subgroups(g)


def _gathering(programs, out_axes, comm, ranks):
    """For a map whose every process passes the whole mapped arrays (shard_map over the devices
    of several processes): each device's program, then an all-gather of its mapped outputs over
    every process's devices, so that each process's first device returns every output whole
    (stacked along a leading axis in global rank order; `_stack` moves it to its out_axis).
    NB: JAX returns these as global arrays of which each process holds its pieces."""
    each = programs if isinstance(programs, (list, tuple)) else [programs] * len(ranks)

    def gathering(program, rank):
        def run(*args):
            outs = program(*args)
            return [
                o if ax is None else comm.all_gather(rank, np.asarray(o)) for o, ax in zip(outs, out_axes)
            ]

        return run

    return [gathering(p, r) for p, r in zip(each, ranks)]


def widened(executable, positions, n_out):
    """`executable`, whose first outputs are the pmap's outputs at `positions`, as a program
    returning all `n_out` (None where another device computes it)."""

    def run(*args):
        outs = executable(*args)
        full = [None] * n_out
        for j, o in zip(positions, outs):
            full[j] = o
        return full

    return run


def _run_pmap(np_args, *, jaxpr, mesh_axes, axis_size, in_axes, out_axes, devices, backend, name):
    """The host rule (inside compiled programs): runs and waits."""
    ids, programs, owner, _, bindings, picks = _prepare(
        jaxpr, mesh_axes, axis_size, in_axes, out_axes, devices, backend, name
    )
    args = [_host(x, a.dtype) for x, a in zip(np_args, jaxpr.in_avals)]
    at = range(len(ids)) if picks is None else picks
    per_device = [[x if ax is None else _slice(x, ax, r) for x, ax in zip(args, in_axes)] for r in at]
    outs = run_on_devices(programs, ids, per_device, bindings)
    return _stack(outs, out_axes, owner, picks is not None)


def _run_pmap_eager(args, *, jaxpr, mesh_axes, axis_size, in_axes, out_axes, devices, backend, name):
    """An eager pmap: returns pending Arrays at once, as a jitted call does; each device reads
    its inputs when its stream reaches the work, and the last device to finish stacks the
    results (or fails them all with the first device's error). Programs that call back into
    Python run and raise at the call, as dispatch runs them."""
    ids, programs, owner, calls_host, bindings, picks = _prepare(
        jaxpr, mesh_axes, axis_size, in_axes, out_axes, devices, backend, name
    )
    _check_process_local(args, in_axes, ids, picks, name)
    out_avals = _pmap.pmap_p.abstract_eval(
        *_global_avals(args),
        jaxpr=jaxpr,
        mesh_axes=mesh_axes,
        axis_size=axis_size,
        in_axes=in_axes,
        out_axes=out_axes,
        devices=devices,
        backend=backend,
        name=name,
    )
    if calls_host:
        outs = _run_pmap(
            args, jaxpr=jaxpr, mesh_axes=mesh_axes, axis_size=axis_size, in_axes=in_axes, out_axes=out_axes,
            devices=devices, backend=backend, name=name,
        )  # fmt: skip
        return [Array(np.asarray(o, dtype=a.dtype), a.weak_type) for o, a in zip(outs, out_avals)]
    if picks is None and _in_device_memory(programs, ids, out_avals):
        return _run_in_device_memory(programs, ids, args, jaxpr.in_avals, in_axes, out_axes, out_avals)
    inputs = [
        x._buf if type(x) is Array else np.asarray(x, dtype=a.dtype) for x, a in zip(args, jaxpr.in_avals)
    ]
    buffers = pending_outputs(out_avals)

    at = range(len(ids)) if picks is None else picks

    def args_for(r):
        values = [local_data(b) for b in inputs]
        return [v if ax is None else _slice(v, ax, at[r]) for v, ax in zip(values, in_axes)]

    def on_done(results, errors):
        error = _primary(errors)
        if error is None:
            try:
                stacked = _stack(results, out_axes, owner, picks is not None)
                values = [v if v.dtype == b.dtype else v.astype(b.dtype) for v, b in zip(stacked, buffers)]
            except BaseException as e:  # noqa: BLE001
                error = e
        if error is not None:
            fail_outputs(buffers, error)
        else:
            fill_outputs(buffers, values)

    launch(programs, ids, args_for, bindings, on_done)
    return [Array(b, a.weak_type) for b, a in zip(buffers, out_avals)]


def _in_device_memory(programs, ids, out_avals) -> bool:
    """Whether the pmap runs as one program whose results stay in its devices' memory: a
    plugin's devices (a TPU's cores; XLA's CPU plugin as `xla_cpu`), the map's devices in the
    program's order."""
    if not isinstance(programs, ReplicatedProgram) or programs.device_run is None:
        return False
    if any(a.dtype == float0 for a in out_avals) or len(ids) != len(programs.devices):
        return False
    by_id = _devices_by_id()
    return all(getattr(by_id.get(i), "pjrt", None) is p for i, p in zip(ids, programs.devices))


_by_id: dict = {}  # the default platform's devices by id, per device count (they change with it)


def _devices_by_id():
    count = _devices.device_count()
    hit = _by_id.get(count)
    if hit is None:
        hit = _by_id[count] = {d.id: d for d in _devices.devices()}
    return hit


def _block_index(ndim, axis, r) -> tuple:
    """Device r's block of an array mapped along `axis` (None: the whole array, a replica)."""
    return tuple(slice(r, r + 1) if k == axis else slice(None) for k in range(ndim))


def _run_in_device_memory(program, ids, args, in_avals, in_axes, out_axes, out_avals):
    """The pmap's results as arrays whose blocks stay where the devices computed them
    (ShardedDeviceBuffers, not waited for): an argument that an earlier pmap over the same
    devices left there, mapped the same way, goes in as it lies; others are sliced on the host
    and copied in."""
    layout_of = lambda ax: ("pmap", tuple(ids), ax)  # noqa: E731 - what the next pmap matches
    per_device = [[] for _ in ids]
    for x, a, ax in zip(args, in_avals, in_axes):
        buf = x._buf if type(x) is Array else None
        if type(buf) is ShardedDeviceBuffer and buf.layout == layout_of(ax):
            for r, (b, _) in enumerate(buf.shards):
                per_device[r].append(b)
            continue
        value = local_data(x._settle()) if type(x) is Array else np.asarray(x, dtype=a.dtype)
        for r in range(len(ids)):
            per_device[r].append(value if ax is None else np.ascontiguousarray(_slice(value, ax, r)))
    rows = program.device_run(per_device)
    outs = []
    for j, (a, ax) in enumerate(zip(out_avals, out_axes)):
        shards = [(rows[r][j], _block_index(len(a.shape), ax, r)) for r in range(len(ids))]
        buf = ShardedDeviceBuffer(shards, a.shape, a.dtype, layout_of(ax))
        if rows[0][j].dtype != a.dtype:  # a program's output type that is not the map's
            buf = buf.result().astype(a.dtype)
        outs.append(Array(buf, a.weak_type))
    return outs


def _check_process_local(args, in_axes, ids, picks, name):
    """Arguments that hold only their process's pieces (global arrays over several processes'
    devices) can be mapped only where every process passes the global arrays (`picks`) and each
    of this process's devices finds its own slice among its process's pieces."""
    for i, (x, ax) in enumerate(zip(args, in_axes)):
        if not placement.holds_local_pieces(x):
            continue
        sharding = x._place[0]
        found = {d.id: ix for d, ix in sharding.devices_indices_map(x.shape).items()}
        wanted = [
            tuple(slice(p, p + 1) if k == ax else slice(None) for k in range(x.ndim)) for p in picks or ()
        ]
        if ax is None or picks is None or any(found.get(d) != w for d, w in zip(ids, wanted)):
            raise NotImplementedError(
                f"{name}: argument {i} ({x.dtype.name}{list(x.shape)}) is laid out over the devices of several "
                f"processes as {sharding!r}, which does not give each device of this map its slice along axis "
                f"{ax}; pass each process's own values, or gather it first "
                "(morphax.experimental.multihost_utils.process_allgather)."
            )


def _global_avals(args):
    return [get_aval(x) for x in args]


def with_shardings(outs, out_axes, axis_name, ids):
    """pmap's results laid out as JAX's: NamedSharding over a 1-D mesh of the devices (axis
    `axis_name`), split along each output's out_axes (None: replicated), committed there."""
    shardings = _pmap_shardings(tuple(out_axes), axis_name, tuple(ids))
    return [
        placement.placed(o._buf, o.weak_type, sharding) if type(o) is Array else o
        for o, sharding in zip(outs, shardings)
    ]


# (out_axes, axis name, device ids) -> the shardings of a pmap's outputs: built once, not per
# call (they are immutable, and building a mesh and a sharding per output was a third of an
# eager pmap call's dispatch).
_shardings_cache: dict = {}


def _pmap_shardings(out_axes, axis_name, ids) -> list:
    key = (out_axes, axis_name, ids, _devices.device_count())
    hit = _shardings_cache.get(key)
    if hit is None:
        by_id = _devices_by_id()
        mesh = Mesh(np.array([by_id[i] for i in ids], dtype=object), (axis_name,))
        by_axis: dict = {}
        for ax in out_axes:
            if ax not in by_axis:
                spec = PartitionSpec() if ax is None else PartitionSpec(*([None] * ax), axis_name)
                by_axis[ax] = NamedSharding(mesh, spec)
        if len(_shardings_cache) >= 256:
            _shardings_cache.clear()
        hit = _shardings_cache[key] = [by_axis[ax] for ax in out_axes]
    return hit


_pmap.set_runner(_run_pmap, _run_pmap_eager)
