"""Where Arrays live: their sharding and whether they are committed, where a computation on them
runs, and where its results go (JAX's rules).

- A new array is uncommitted on the default device (`default_device`'s, else the first).
- `device_put(x, device or sharding)` commits it there; results of a computation on committed
  inputs are committed to the same devices. Uncommitted inputs follow committed ones; computations
  on uncommitted inputs only run on (and leave results on) the default device.
- Committed inputs on different devices raise JAX's "Received incompatible devices" ValueError.

All devices share host memory: a sharded Array keeps one global buffer, and each shard's data is a
NumPy view of its piece (no copies). Results of a jitted computation are laid out per the
propagated or requested shardings; a computation split over a mesh of several devices runs SPMD,
each device computing its own blocks (runtime/spmd_runner.py); otherwise it runs on one device's
stream (the first of the shardings' devices).
"""

from __future__ import annotations

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.runtime import array as _array
from morphax._src.runtime import devices as _devices
from morphax._src.runtime.array import Array
from morphax._src.runtime.buffers import DeviceBuffer, ProcessLocalBuffer, ShardedDeviceBuffer, local_data
from morphax._src.sharding.partition_spec import PartitionSpec
from morphax._src.sharding.propagation import out_shardings as propagated
from morphax._src.sharding.shardings import (
    NamedSharding,
    Shard,
    Sharding,
    SingleDeviceSharding,
    is_local,
    replica_ids,
    spans_processes,
)

_singles: dict = {}


def single(device) -> SingleDeviceSharding:
    """The (cached) SingleDeviceSharding of `device`."""
    key = (device.platform, device.id)
    s = _singles.get(key)
    if s is None or s._device is not device:
        s = _singles[key] = SingleDeviceSharding(device)
    return s


def _first():
    return _devices.devices()[0]


def default_device():
    d = config.default_device
    return _first() if d is None else d


def default_place():
    """The placement of a new array: None (uncommitted, first device) unless a default_device
    context names another device."""
    d = config.default_device
    if d is None or d is _first():
        return None
    return (single(d), False)


def sharding_of(x: Array) -> Sharding:
    p = x._place
    return single(_first()) if p is None else p[0]


def device_of(x: Array):
    """The device of a single-device array; for an array on several devices, its sharding (as
    JAX's `Array.device`)."""
    s = sharding_of(x)
    if len(s.device_set) != 1:
        return s
    return next(iter(s.device_set))


def shards_of(x: Array, every_process: bool = False) -> list:
    """The Shards of this process's devices (`every_process`: of all devices, with data None
    for other processes' devices)."""
    s = sharding_of(x)
    buf = x._buf
    if type(buf) is ShardedDeviceBuffer:  # each device's block, where it is
        replicas = replica_ids(s, buf.shape)
        by_device = {id(b.device): (b, index) for b, index in buf.shards}
        out = []
        for device, index in s.devices_indices_map(buf.shape).items():
            b, held = by_device[id(device.pjrt)]
            shape = tuple(_extent(ix, n) for ix, n in zip(held, buf.shape))
            if shape == tuple(_extent(ix, n) for ix, n in zip(index, buf.shape)):
                data = Array(DeviceBuffer(b, shape, buf.dtype), x.weak_type, (single(device), True))
            else:  # a block the layout could not split evenly is held whole: cut it on the host
                view = buf.result()[(*index, Ellipsis)]
                data = Array(view, x.weak_type, (single(device), True))
            out.append(Shard(device, data=data, index=index, replica_id=replicas[device]))
        return out
    value = local_data(x._settle())
    shape = value.shape
    replicas = replica_ids(s, shape)
    out = []
    for device, index in s.devices_indices_map(shape).items():
        if not is_local(device):
            if every_process:
                out.append(Shard(device, data=None, index=index, replica_id=replicas[device]))
            continue
        view = value[(*index, Ellipsis)]  # a view, also of a 0-d array
        view.flags.writeable = False
        data = Array(view, x.weak_type, (single(device), True))
        out.append(Shard(device, data=data, index=index, replica_id=replicas[device]))
    return out


def _extent(index: slice, n: int) -> int:
    return len(range(*index.indices(n)))


def placed(value, weak_type, sharding, committed=True) -> Array:
    """An Array over `value` (a NumPy array or pending buffer) placed per `sharding`. Over the
    devices of several processes, unless replicated on all, only this process's pieces of a
    NumPy `value` count (a ProcessLocalBuffer)."""
    _array.mark_placed()
    if type(value) is np.ndarray and local_only(sharding):
        value = ProcessLocalBuffer(value)
    return Array(value, weak_type, (sharding, committed))


def local_only(sharding) -> bool:
    """Whether arrays laid out per `sharding` hold only this process's pieces: it spans the
    devices of several processes and is not replicated on every device."""
    return spans_processes(sharding) and not sharding.is_fully_replicated


def holds_local_pieces(x) -> bool:
    """Whether `x` is an Array holding only its process's pieces of a global array."""
    return type(x) is Array and x._place is not None and local_only(x._place[0])


def _type_text(x) -> str:
    """`float32[8@x,4]`: the type with the Explicit mesh axes splitting each dimension, as JAX
    writes sharded types."""
    dims = [str(d) for d in np.shape(x)]
    s = sharding_of(x) if type(x) is Array else None
    if isinstance(s, NamedSharding):
        for d in range(len(dims)):
            axes = [a for a in s.spec._axes_of(d) if s.mesh.axis_type_of(a).name == "Explicit"]
            if axes:
                dims[d] += "@" + (axes[0] if len(axes) == 1 else "(" + ",".join(axes) + ")")
    return f"{np.dtype(x.dtype).name}[{','.join(dims)}]"


def _ids(s: Sharding) -> list:
    return [d.id for d in s._device_assignment]


class IncompatibleDevicesError(ValueError):
    """JAX's error for committed inputs on different devices. `first`/`second` are (position, x,
    sharding); jit relabels the positions with its arguments' names (`with_labels`). NB: an eager
    primitive names its operands by position ("argument 0 of add"), where JAX names the
    parameters of the jnp function it jits."""

    def __init__(self, who, first, second, labels=None):
        self.who, self.first, self.second = who, first, second
        (pa, a, sa), (pb, b, sb) = first, second
        la, lb = (labels[pa], labels[pb]) if labels is not None else (pa, pb)
        super().__init__(
            "Received incompatible devices for jitted computation. Got argument "
            f"{la} of {who} with shape {_type_text(a)} and with device ids {_ids(sa)} on platform CPU "
            f"and argument {lb} of {who} with shape {_type_text(b)} and with device ids {_ids(sb)} on "
            "platform CPU"
        )

    def with_labels(self, labels):
        return IncompatibleDevicesError(self.who, self.first, self.second, labels)


def incompatible(who, first, second) -> ValueError:
    return IncompatibleDevicesError(who, first, second)


def committed_inputs(args, who, labels=None):
    """The committed input shardings of a computation on `args` as [(position, sharding)], after
    checking they are all on the same devices (else the incompatible-devices ValueError)."""
    found = []
    first = None
    for i, a in enumerate(args):
        if type(a) is not Array:
            continue
        p = a._place
        if p is None or not p[1]:
            continue
        s = p[0]
        if first is None:
            first = (i, a, s)
        elif set(_ids(s)) != set(_ids(first[2])):
            raise IncompatibleDevicesError(who, first, (i, a, s), labels)
        found.append((i, s))
    return found


def run_device(committed) -> int:
    """The id of the device whose stream runs a computation with these committed inputs."""
    if committed:
        return committed[0][1]._device_assignment[0].id
    return default_device().id


def put(x, target, who="device_put"):
    """`x` (an Array or host value already converted to an Array) placed on `target`: a Device, a
    Sharding, or None (unchanged)."""
    if target is None:
        return x
    if isinstance(target, _devices.Device):
        return _moved(x, single(target), who)
    if isinstance(target, SingleDeviceSharding):
        return _moved(x, single(target._device), who)
    if isinstance(target, NamedSharding):
        target._concrete(who)
        target.check_shape(x.shape, who)
        return _moved(x, target, who)
    if isinstance(target, Sharding):
        return _moved(x, target, who)
    raise TypeError(
        f"{who}: the placement must be a Device, a Sharding (NamedSharding, SingleDeviceSharding) "
        f"or None, got {target!r} of type {type(target).__name__}"
    )


def _moved(x, sharding, who):
    """`x` placed per `sharding`. A value whole in this process (a host value, as every process
    passes it to device_put) keeps only this process's pieces where `sharding` spans processes.
    An array holding only its process's pieces moves to another layout of the same devices by a
    program that returns it unchanged, split over the processes (the pieces travel between
    them), and to one of this process's devices through its replicated layout."""
    source = x._place[0] if x._place is not None else None
    if source is not None and local_only(source):
        if source == sharding or source.is_equivalent_to(sharding, x.ndim):
            return placed(x._buf, x.weak_type, sharding)
        if isinstance(sharding, NamedSharding) and sharding.device_set == source.device_set:
            return relayout[0](x, sharding)
        if len(sharding.device_set) == 1 and is_local(next(iter(sharding.device_set))):
            whole = relayout[0](x, NamedSharding(source.mesh, PartitionSpec()))
            return placed(whole._buf, x.weak_type, sharding)
        raise NotImplementedError(
            f"{who}: this {_type_text(x)} array is laid out over the devices of several processes "
            f"({source!r}); morphax moves it to another layout of the same devices, or to one of this "
            f"process's devices, not to {sharding!r}. Gather it first with "
            "morphax.experimental.multihost_utils.process_allgather."
        )
    if local_only(sharding):
        return placed(local_data(x._settle()), x.weak_type, sharding)
    return placed(buffer_on(x, sharding, who), x.weak_type, sharding)


def buffer_on(x: Array, sharding, who="device_put"):
    """The buffer of `x` where `sharding` puts it: a device buffer on a plugin's device (copied
    from the host, or kept when it is there already), host memory on the CPU's devices."""
    buf = x._buf
    devices = sharding.device_set
    plugin = [d for d in devices if isinstance(d, _devices.PjrtDevice)]
    if not plugin:
        return x._value if type(buf) in (DeviceBuffer, ShardedDeviceBuffer) else buf
    if len(devices) != 1:
        if len(plugin) != len(devices):
            raise ValueError(
                f"{who}: {sharding!r} mixes the {plugin[0].platform} platform's devices with others; "
                "lay an array out over the devices of one platform"
            )
        return sharded_on_devices(x._value, sharding)
    device = plugin[0]
    if type(buf) is DeviceBuffer and buf.pjrt.device is device.pjrt:
        return buf
    return to_device(x._value, device)


def to_default_device(x: Array) -> Array:
    """A new array from the host, copied into the default device's memory where that is a
    plugin's (a TPU's), so that later programs read it there."""
    device = default_device()
    if not isinstance(device, _devices.PjrtDevice) or type(x._buf) is not np.ndarray:
        return x
    return Array(to_device(x._buf, device), x.weak_type, x._place)


def sharded_on_devices(value: np.ndarray, sharding) -> ShardedDeviceBuffer:
    """A host value laid out per `sharding` over several devices of a plugin: each device gets
    its block (a copy of the value's slice), replicas each their own copy."""
    shards = []
    for device, index in sharding.devices_indices_map(value.shape).items():
        block = np.ascontiguousarray(value[index])
        shards.append((device.pjrt.client.buffer_from_host(block, device.pjrt), index))
    return ShardedDeviceBuffer(shards, value.shape, value.dtype)


def to_device(value: np.ndarray, device) -> DeviceBuffer:
    """A host value copied to the memory of `device` (a PjrtDevice)."""
    client = device.pjrt.client
    return DeviceBuffer(client.buffer_from_host(value, device.pjrt), value.shape, value.dtype)


def on_host_device(args) -> bool:
    """Whether an input is an Array committed to the CPU's devices (a computation on it runs on
    the host, whatever the default platform)."""
    for x in args:
        if type(x) is Array and x._place is not None and x._place[1]:
            if not any(isinstance(d, _devices.PjrtDevice) for d in x._place[0].device_set):
                return True
    return False


# [relayout(x, sharding)]: `x` laid out per `sharding` by an identity program run SPMD, set by
# runtime/eager.py (which runs programs and imports this module).
relayout: list = [None]


# ------------------------------------------------------------------ jit's in/out shardings


def apply_in_shardings(args, in_shardings, committed, who):
    """Check committed arguments against jit's in_shardings (JAX's mismatch ValueError) and treat
    uncommitted ones as placed there; returns the committed [(position, sharding)] of the call."""
    by_pos = dict(committed)
    for i, (a, s) in enumerate(zip(args, in_shardings)):
        if s is None:
            continue
        shape = np.shape(a)
        if isinstance(s, NamedSharding):
            s.check_shape(shape, f"jit({who})")
        have = by_pos.get(i)
        if have is not None:
            if not (have == s or have.is_equivalent_to(s, len(shape))):
                raise ValueError(
                    "Sharding passed to jit does not match the sharding on the respective arg. Got jit "
                    f"sharding: {s!r},\narg sharding: {have!r} for arg type: {_type_text(a)}"
                )
            continue
        by_pos[i] = s
    out = sorted(by_pos.items())
    for (i, s), (j, t) in zip(out, out[1:]):
        if set(_ids(s)) != set(_ids(t)):
            raise incompatible(who, (i, args[i], s), (j, args[j], t))
    return out


def result_shardings(closed, args, committed, out_shardings, typed=None) -> list:
    """The placement of each result of a jitted call: jit's out_shardings where given, else the
    shardings propagated from the inputs (sharding/propagation.py); committed when any input was
    or out_shardings placed it; uncommitted on the default device otherwise. `typed`: the positions
    of committed arrays (the other committed entries come from jit's in_shardings); None: all."""
    n = len(closed.out_avals)
    given = list(out_shardings) if out_shardings is not None else None
    ins = dict(committed)
    in_list = tuple([ins.get(i) for i in range(len(args))])
    # Uncommitted inputs too: the program's sharding constraints (reshard) may place results.
    flags = None if typed is None else tuple(i in typed for i in range(len(args)))
    found = propagated(closed, in_list, flags) if given is None or committed else [None] * n
    if given is None:
        if all(f is not None for f in found):
            return [(f, True) for f in found]
        if not committed:
            if not any(f is not None for f in found):
                return [default_place()] * n
            mesh = next(f.mesh for f in found if f is not None)
            return [(f if f is not None else NamedSharding(mesh, PartitionSpec()), True) for f in found]
        given = [None] * n
    # Results no sharding reaches: replicated over the computation's devices.
    anchors = [s for _, s in committed] + [s for s in given if s is not None]
    if not anchors:  # out_shardings given as all None, nothing committed: as if not given
        return [default_place()] * n
    mesh = next((s.mesh for s in anchors if isinstance(s, NamedSharding)), None)
    if mesh is not None:
        fallback = NamedSharding(mesh, PartitionSpec())
    else:
        fallback = single(anchors[0]._device_assignment[0])
    return [
        ((g if g is not None else (f if f is not None else fallback)), True) for g, f in zip(given, found)
    ]


# --------------------------------------------------------------------- building sharded arrays


def _host(value):
    arr = np.asarray(value)
    return arr.astype(_dtypes.canonicalize_dtype(arr.dtype), copy=False)


def make_array_from_callback(shape, sharding, data_callback, dtype=None) -> Array:
    """The array of `shape` laid out per `sharding` whose piece on each of this process's devices
    is ``data_callback(index)`` (index: a tuple of slices into the global array). Over the devices
    of several processes each process supplies its own devices' pieces."""
    shape = tuple(int(d) for d in shape)
    if isinstance(sharding, NamedSharding):
        sharding.check_shape(shape, "make_array_from_callback")
    buf = None
    for device, index in sharding.addressable_devices_indices_map(shape).items():
        piece = _host(data_callback(index))
        if buf is None:
            buf = np.zeros(shape, dtype=dtype if dtype is not None else piece.dtype)
        expected = buf[index].shape
        if piece.shape != expected:
            raise ValueError(
                f"make_array_from_callback: the callback returned shape {piece.shape} for device "
                f"{device} and index {index}; expected {expected} (the shard shape of {shape} under "
                f"{sharding!r})"
            )
        buf[index] = piece
    if buf is None:
        buf = np.zeros(shape, dtype=dtype or np.float32)
    return placed(buf, False, sharding)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None) -> Array:
    """The global array of `shape` laid out per `sharding` from one array per device of this
    process (in the order of `sharding`'s addressable_devices_indices_map, each of the shard
    shape)."""
    shape = tuple(int(d) for d in shape)
    arrays = list(arrays)
    index_map = sharding.addressable_devices_indices_map(shape)
    if len(arrays) != len(index_map):
        raise ValueError(
            f"make_array_from_single_device_arrays: got {len(arrays)} arrays for a sharding over "
            f"{len(index_map)} devices of this process; pass one array per addressable device."
        )
    by_device = {}
    for a in arrays:
        if type(a) is Array and (a._place is not None and len(a._place[0].device_set) == 1):
            by_device.setdefault(next(iter(a._place[0].device_set)), a)
    buf = None
    written = set()
    for k, (device, index) in enumerate(index_map.items()):
        a = by_device.pop(device, None)
        a = arrays[k] if a is None else a
        piece = _host(a)
        if buf is None:
            buf = np.zeros(shape, dtype=dtype if dtype is not None else piece.dtype)
        where = tuple((s.start, s.stop) for s in index)
        if where in written:
            continue  # a replica: the first device's piece is the value, as JAX's replica 0
        written.add(where)
        if piece.shape != buf[index].shape:
            raise ValueError(
                f"make_array_from_single_device_arrays: the array for device {device} has shape "
                f"{piece.shape}, expected the shard shape {buf[index].shape} of {shape} under {sharding!r}"
            )
        buf[index] = piece
    weak = all(getattr(a, "weak_type", False) for a in arrays)
    return placed(buf, weak, sharding)


def make_array_from_process_local_data(sharding, local_data, global_shape=None) -> Array:
    """The global array laid out per `sharding` from this process's data: along each dimension
    the sharding splits over several processes, the process's pieces in order (its devices'
    blocks, concatenated); whole along the others. In a one-process run (or a sharding on this
    process's devices only) the local data is the global array."""
    value = _host(local_data)
    if not spans_processes(sharding):
        shape = tuple(value.shape if global_shape is None else global_shape)
        if value.shape != shape:
            raise ValueError(
                f"make_array_from_process_local_data: the local data has shape {value.shape} but "
                f"global_shape is {shape}; with one process they must match."
            )
        if isinstance(sharding, NamedSharding):
            sharding.check_shape(shape, "make_array_from_process_local_data")
        return placed(np.array(value, copy=True), False, sharding)
    # Each device's block numbers, from the map of an array with one element per block.
    parts = [n for _, n in sharding._parts(value.ndim)] if isinstance(sharding, NamedSharding) else None
    if parts is None:
        raise NotImplementedError(
            f"make_array_from_process_local_data: {sharding!r} spans several processes; use a NamedSharding"
        )
    blocks = {
        d: tuple(s.start or 0 for s in ix) for d, ix in sharding.devices_indices_map(tuple(parts)).items()
    }
    mine = {d: b for d, b in blocks.items() if is_local(d)}
    held = [sorted({b[k] for b in mine.values()}) for k in range(value.ndim)]  # this process's blocks
    shape = []
    for k, (n, local_n) in enumerate(zip(parts, value.shape)):
        if local_n % len(held[k]):
            raise ValueError(
                f"make_array_from_process_local_data: dimension {k} of the local data ({local_n}) does not "
                f"split into the {len(held[k])} block(s) this process's devices hold under {sharding!r}"
            )
        shape.append(local_n // len(held[k]) * n)
    shape = tuple(shape)
    if global_shape is not None and tuple(global_shape) != shape:
        raise ValueError(
            f"make_array_from_process_local_data: global_shape={tuple(global_shape)}, but local data of shape "
            f"{value.shape} laid out per {sharding!r} over {len(sharding.device_set)} devices makes {shape}"
        )
    sharding.check_shape(shape, "make_array_from_process_local_data")
    buf = np.zeros(shape, value.dtype)
    step = [n // p for n, p in zip(shape, parts)]
    for block in mine.values():
        at = tuple(slice(b * m, (b + 1) * m) for b, m in zip(block, step))
        local = tuple(slice(h.index(b) * m, (h.index(b) + 1) * m) for b, m, h in zip(block, step, held))
        buf[at] = value[local]
    return placed(buf, False, sharding)


_array.placement_hooks.update(
    sharding_of=sharding_of,
    device_of=device_of,
    shards_of=shards_of,
    global_shards_of=lambda x: shards_of(x, every_process=True),
    default_place=default_place,
)
