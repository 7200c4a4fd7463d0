"""Shardings: how an array's elements are laid out over devices. `SingleDeviceSharding` (the whole
array on one device), `NamedSharding` (split over the axes of a Mesh by a PartitionSpec), the
`Sharding` base with the index maps every sharding answers, and `Shard` (one device's piece)."""

from __future__ import annotations

import math

from morphax._src.core import avals as _avals
from morphax._src.runtime import devices as _devices
from morphax._src.sharding.mesh import AbstractMesh, AxisType, Mesh
from morphax._src.sharding.partition_spec import PartitionSpec, flat_axes, layout_key


class Sharding:
    """The layout of an array over devices (`jax.sharding.Sharding`)."""

    @property
    def device_set(self) -> set:
        raise NotImplementedError

    @property
    def _device_assignment(self) -> tuple:
        raise NotImplementedError

    def devices_indices_map(self, global_shape) -> dict:
        """device -> the index (a tuple of slices) of the part of an array of `global_shape` it holds."""
        raise NotImplementedError

    @property
    def memory_kind(self):
        return "device"

    @property
    def is_fully_addressable(self) -> bool:
        """Whether every device of the sharding belongs to this process."""
        return not spans_processes(self)

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set:
        """The sharding's devices that belong to this process."""
        return {d for d in self.device_set if is_local(d)}

    def addressable_devices_indices_map(self, global_shape) -> dict:
        return {d: ix for d, ix in self.devices_indices_map(global_shape).items() if is_local(d)}

    def shard_shape(self, global_shape) -> tuple:
        """The shape of each device's piece of an array of `global_shape`."""
        index = next(iter(self.devices_indices_map(tuple(global_shape)).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(index, global_shape))

    def is_equivalent_to(self, other, ndim: int) -> bool:
        """Whether both lay out an `ndim`-dimensional array alike on the same devices."""
        if not isinstance(other, Sharding):
            return False
        if self._device_assignment != other._device_assignment:
            return False
        shape = (2 * len(self._device_assignment),) * ndim  # divisible by any split over these devices
        try:
            return self.devices_indices_map(shape) == other.devices_indices_map(shape)
        except ValueError:
            return False

    def with_memory_kind(self, kind):
        return self


def is_local(device) -> bool:
    """Whether `device` belongs to this process (always, in a one-process run)."""
    return _devices.process_count() == 1 or device.process_index == _devices.process_index()


def spans_processes(sharding) -> bool:
    """Whether some of `sharding`'s devices belong to another process (morphax.distributed).
    In a one-process run it answers before building the device set: it is on every placed call."""
    if _devices.process_count() == 1:
        return False
    me = _devices.process_index()
    return any(d.process_index != me for d in sharding.device_set)


def _memory_kind(kind):
    if kind not in (None, "device", "pinned_host", "unpinned_host"):
        raise ValueError(
            f"memory_kind {kind!r} is not one of the CPU device's memories ('device', "
            "'pinned_host', 'unpinned_host')"
        )
    return kind or "device"


class SingleDeviceSharding(Sharding):
    """The whole array on one device."""

    def __init__(self, device, *, memory_kind=None):
        self._device = device
        self._memory_kind = _memory_kind(memory_kind)

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self._memory_kind})"

    def __eq__(self, other):
        return (
            isinstance(other, SingleDeviceSharding)
            and self._device is other._device
            and self._memory_kind == other._memory_kind
        )

    def __hash__(self):
        return hash((SingleDeviceSharding, self._device.id))

    @property
    def memory_kind(self):
        return self._memory_kind

    @property
    def device_set(self):
        return {self._device}

    @property
    def _device_assignment(self):
        return (self._device,)

    @property
    def is_fully_replicated(self):
        return True

    def devices_indices_map(self, global_shape):
        return {self._device: (slice(None),) * len(global_shape)}

    def shard_shape(self, global_shape):
        return tuple(global_shape)

    def with_memory_kind(self, kind):
        return SingleDeviceSharding(self._device, memory_kind=kind)


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def check_spec_axes(mesh, spec, who="NamedSharding"):
    names = flat_axes(spec)
    for name in names:
        if name not in mesh.axis_names:
            raise ValueError(f"Resource axis: {name} of {spec!r} is not found in mesh: {mesh.axis_names}.")
    for name in set(names):
        if names.count(name) > 1:
            raise ValueError(
                f"A one-dimensional array can be sharded over a mesh axis at most once: {who}'s spec "
                f"{spec!r} uses mesh axis {name!r} for more than one dimension."
            )


class NamedSharding(Sharding):
    """An array split over the axes of `mesh`: dimension i over the mesh axes ``spec[i]`` names
    (whole where None or past the spec's end), replicated over the mesh axes the spec omits."""

    def __init__(self, mesh, spec, *, memory_kind=None):
        if not isinstance(mesh, (Mesh, AbstractMesh)):
            raise TypeError(f"NamedSharding: mesh must be a Mesh or AbstractMesh, got {type(mesh).__name__}")
        if not isinstance(spec, PartitionSpec):
            raise TypeError(
                f"NamedSharding: spec must be a PartitionSpec (morphax.P), got {spec!r} of type "
                f"{type(spec).__name__}. Write P{tuple(spec)!r}" if isinstance(spec, tuple) else
                f"NamedSharding: spec must be a PartitionSpec (morphax.P), got {spec!r}"
            )  # fmt: skip
        check_spec_axes(mesh, spec)
        self.mesh = mesh
        self.spec = spec
        self._memory_kind = _memory_kind(memory_kind)

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh!s}, spec={self.spec!r}, memory_kind={self._memory_kind})"

    def __eq__(self, other):
        return (
            isinstance(other, NamedSharding)
            and self.mesh == other.mesh
            and self.spec == other.spec
            and self._memory_kind == other._memory_kind
        )

    def __hash__(self):
        return hash((NamedSharding, self.mesh, self.spec))

    @property
    def memory_kind(self):
        return self._memory_kind

    def _concrete(self, who):
        if not isinstance(self.mesh, Mesh):
            raise ValueError(f"{who}: this NamedSharding's mesh is abstract (no devices): {self.mesh}")
        return self.mesh

    @property
    def device_set(self):
        return set(self._concrete("device_set").devices.flat)

    @property
    def _device_assignment(self):
        return tuple(self._concrete("device assignment").devices.flat)

    @property
    def num_devices(self):
        return self.mesh.size

    @property
    def is_fully_replicated(self):
        sizes = dict(zip(self.mesh.axis_names, self.mesh.axis_sizes))
        return all(sizes[n] == 1 for n in flat_axes(self.spec))

    def _parts(self, ndim):
        """For each dimension: the mesh axes that split it and how many pieces they make."""
        sizes = dict(zip(self.mesh.axis_names, self.mesh.axis_sizes))
        out = []
        for d in range(ndim):
            axes = self.spec._axes_of(d)
            out.append((axes, math.prod(sizes[a] for a in axes)))
        return out

    def check_shape(self, global_shape, who=None):
        """Raise when the spec does not fit an array of `global_shape` (too many entries, or a
        split that does not divide its dimension)."""
        if len(self.spec) > len(global_shape):
            raise ValueError(
                f"One of {who or 'device_put'} got a sharding with spec {self.spec!r} of length "
                f"{len(self.spec)} for an array of rank {len(global_shape)} (shape {tuple(global_shape)}): "
                "the spec must have at most one entry per dimension."
            )
        for d, (axes, n) in enumerate(self._parts(len(global_shape))):
            if n > 1 and global_shape[d] % n:
                raise ValueError(
                    f"Sharding spec {axes!r} implies that array axis {d} is partitioned {n} times, but "
                    f"does not evenly divide the dimension size {global_shape[d]}. Got shape: "
                    f"{tuple(global_shape)} and sharding {self!r}"
                )

    def devices_indices_map(self, global_shape):
        mesh = self._concrete("devices_indices_map")
        global_shape = tuple(global_shape)
        self.check_shape(global_shape)
        names = mesh.axis_names
        sizes = dict(zip(names, mesh.axis_sizes))
        parts = self._parts(len(global_shape))
        out = {}
        for coords, device in _enumerate(mesh.devices):
            where = dict(zip(names, coords))
            index = []
            for d, (axes, n) in enumerate(parts):
                if n == 1:
                    index.append(slice(None))
                    continue
                k = 0
                for a in axes:  # the first axis named is the most significant
                    k = k * sizes[a] + where[a]
                step = global_shape[d] // n
                index.append(slice(k * step, (k + 1) * step))
            out[device] = tuple(index)
        return out

    def is_equivalent_to(self, other, ndim):
        if isinstance(other, NamedSharding) and not isinstance(self.mesh, Mesh) and other.mesh == self.mesh:
            return layout_key(self.spec, ndim) == layout_key(other.spec, ndim)  # no devices to compare
        return super().is_equivalent_to(other, ndim)

    def with_memory_kind(self, kind):
        return NamedSharding(self.mesh, self.spec, memory_kind=kind)

    def with_spec(self, spec):
        return NamedSharding(self.mesh, spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec))

    def update(self, **kwargs):
        return NamedSharding(
            kwargs.get("mesh", self.mesh),
            kwargs.get("spec", self.spec),
            memory_kind=kwargs.get("memory_kind"),
        )

    @property
    def _explicit(self) -> bool:
        """Whether the spec names Explicit mesh axes (their shardings are part of array types)."""
        return any(self.mesh.axis_type_of(a) is AxisType.Explicit for a in flat_axes(self.spec))


_REPLICATED: dict = {}


def _replicated_sharding(ndim: int) -> NamedSharding:
    """`ShapedArray.sharding`: replicated over the empty abstract mesh, one None per dimension."""
    got = _REPLICATED.get(ndim)
    if got is None:
        got = _REPLICATED[ndim] = NamedSharding(AbstractMesh((), ()), PartitionSpec(*[None] * ndim))
    return got


_avals.replicated_sharding = _replicated_sharding


def _enumerate(devices):
    import numpy as np

    for coords in np.ndindex(devices.shape):
        yield coords, devices[coords]


def replica_ids(sharding, global_shape) -> dict:
    """device -> its replica number among the devices holding the same piece (0 for the first)."""
    seen: dict = {}
    out = {}
    for device, index in sharding.devices_indices_map(tuple(global_shape)).items():
        key = tuple((s.start, s.stop) for s in index)
        out[device] = seen.get(key, 0)
        seen[key] = out[device] + 1
    return out


class Shard:
    """One device's piece of an array: its `device`, `index` (slices into the global array),
    `replica_id` and `data` (an Array holding the piece, on that device)."""

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device, sharding=None, global_shape=None, data=None, *, index=None, replica_id=0):
        self.device = device
        if index is None and sharding is not None:
            index = sharding.devices_indices_map(tuple(global_shape))[device]
            replica_id = replica_ids(sharding, global_shape)[device]
        self.index = index
        self.replica_id = replica_id
        self.data = data

    def __repr__(self):
        return (
            f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, "
            f"data={self.data})"
        )
