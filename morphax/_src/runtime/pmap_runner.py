"""Running a pmap: each device runs the compiled per-device program on its slice of the inputs,
on its own stream, at the same time as the others; their collectives meet in a
`ThreadCommunicator` (one per call), bound to the axis name on each device's thread.

Registered as the `xla_pmap` primitive's evaluation (higher_order/pmap.py), eagerly and inside
compiled programs. Calls block until every device is done: a device that fails aborts the
communicator, so the others stop at their next collective instead of waiting for it, and the
first failure (not the others' "a participant failed" errors) is raised.
"""

from __future__ import annotations

import threading

import numpy as np

from morphax._src.compiler.compile import compile_jaxpr
from morphax._src.higher_order import pmap as _pmap
from morphax._src.prims import collective_axes
from morphax._src.runtime import devices as _devices
from morphax._src.runtime import dispatch
from morphax._src.runtime.array import Array
from morphax._src.runtime.communicators import CollectiveError, ThreadCommunicator

__all__ = ["check_device_count", "device_ids", "run_on_devices", "stats"]

_launch_lock = threading.Lock()
# Per-device programs launched (one per device per call): tests count these.
stats = {"launches": 0}


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


def device_ids(size, devices):
    return tuple(range(size)) if devices is None else tuple(devices)


def _host(x, dtype):
    if type(x) is Array:
        x = x._value
    return x if type(x) is np.ndarray and x.dtype == dtype else np.asarray(x, dtype=dtype)


def _slice(x, axis, i):
    return x[(slice(None),) * axis + (i,)]


def run_on_devices(executable, ids, per_device_args, bindings) -> list:
    """Run `executable` once per device: device `ids[r]` gets `per_device_args[r]` (NumPy values)
    with `bindings(r)` (axis name -> (communicator, rank)) bound. Returns each device's outputs.
    `bindings(r)` must share communicators whose `abort` the failing device calls."""
    n = len(ids)
    results: list = [None] * n
    errors: list = [None] * n
    done = threading.Semaphore(0)
    outer = dict(collective_axes._device_axes.bound)  # a pmap inside a device's program keeps its names

    def job_for(r):
        def job():
            try:
                with np.errstate(all="ignore"), collective_axes.bind_device_axes({**outer, **bindings(r)}):
                    results[r] = executable(*per_device_args[r])
            except BaseException as e:  # noqa: BLE001 - reported to the caller below
                errors[r] = e
                for comm, rank in bindings(r).values():
                    abort = getattr(comm, "abort", None)  # the others stop at their next collective
                    if abort is not None:
                        abort(rank, e)
            finally:
                done.release()

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
                here = r  # this thread is the device's stream: its share runs here, after the others start
                continue
            stream.submit(job_for(r))
    if here is not None:
        job_for(here)()
    for _ in range(n):
        done.acquire()
    failures = [e for e in errors if e is not None]
    if failures:
        # The cause, not the "participant failed" errors it provoked on the other devices.
        primary = [e for e in failures if not isinstance(e, CollectiveError)] or failures
        raise primary[0]
    return results


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


def _run_pmap(np_args, *, jaxpr, mesh_axes, axis_size, in_axes, out_axes, devices, backend, name):
    check_device_count(name, axis_size, devices)
    ids = device_ids(axis_size, devices)
    executable = compile_jaxpr(jaxpr, f"pmap_{name}", backend)
    args = [_host(x, a.dtype) for x, a in zip(np_args, jaxpr.in_avals)]
    per_device = [
        [x if ax is None else _slice(x, ax, r) for x, ax in zip(args, in_axes)] for r in range(axis_size)
    ]
    comm = ThreadCommunicator(axis_size)
    outs = run_on_devices(executable, ids, per_device, mesh_bindings(mesh_axes, comm))
    result = []
    for j, ax in enumerate(out_axes):
        if ax is None:
            result.append(outs[0][j])
        else:
            result.append(np.stack([np.asarray(o[j]) for o in outs], axis=ax))
    return result


_pmap.set_runner(_run_pmap)
