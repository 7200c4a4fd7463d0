"""Meshes: devices arranged in an n-dimensional grid with named axes (`Mesh`), their device-free
shape (`AbstractMesh`), axis types, `make_mesh`, and the current mesh (`set_mesh`,
`get_mesh`, `get_abstract_mesh`, `use_abstract_mesh`)."""

from __future__ import annotations

import collections
import enum
import math
import threading
import warnings

import numpy as np

from morphax._src.runtime import devices as _devices


class AxisType(enum.Enum):
    """How a mesh axis is treated by tracing: `Explicit` axes are part of array types (shardings
    propagate by rule, errors where ambiguous), `Auto` axes are left to the compiler, `Manual`
    axes are handled by the user (inside shard_map)."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name

    __str__ = __repr__


class ManualAxisType:
    """The per-value state of Manual mesh axes (which axes a value varies over, is unreduced or
    reduced over), as JAX's `jax.sharding.ManualAxisType`."""

    __slots__ = ("varying", "unreduced", "reduced")

    def __init__(self, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        varying, unreduced, reduced = frozenset(varying), frozenset(unreduced), frozenset(reduced)
        for other, name in ((unreduced, "unreduced"), (reduced, "reduced")):
            if varying & other:
                raise ValueError(
                    f"varying and {name} cannot have common mesh axes. Got varying={varying} and "
                    f"{name}={other}"
                )
        object.__setattr__(self, "varying", varying)
        object.__setattr__(self, "unreduced", unreduced)
        object.__setattr__(self, "reduced", reduced)

    def __setattr__(self, name, value):
        raise AttributeError("ManualAxisType is immutable")

    def update(self, **kwargs):
        fields = {"varying": self.varying, "unreduced": self.unreduced, "reduced": self.reduced}
        fields.update(kwargs)
        return ManualAxisType(**fields)

    def __eq__(self, other):
        return isinstance(other, ManualAxisType) and (self.varying, self.unreduced, self.reduced) == (
            other.varying,
            other.unreduced,
            other.reduced,
        )

    def __hash__(self):
        return hash((self.varying, self.unreduced, self.reduced))

    def __repr__(self):
        return f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, reduced={self.reduced})"


class AbstractDevice:
    """What an abstract mesh knows of its devices: their kind and core count."""

    def __init__(self, device_kind, num_cores=None):
        self.device_kind = device_kind
        self.num_cores = num_cores

    def __eq__(self, other):
        return isinstance(other, AbstractDevice) and (self.device_kind, self.num_cores) == (
            other.device_kind,
            other.num_cores,
        )

    def __hash__(self):
        return hash((self.device_kind, self.num_cores))

    def __repr__(self):
        return f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores})"


def _axis_types(axis_types, n, default, who):
    if axis_types is None:
        return (default,) * n
    if isinstance(axis_types, AxisType):
        return (axis_types,) * n
    axis_types = tuple(axis_types)
    if len(axis_types) != n or not all(isinstance(t, AxisType) for t in axis_types):
        raise ValueError(
            f"{who}: axis_types must be an AxisType or a tuple of {n} AxisTypes (one per axis), "
            f"got {axis_types!r}"
        )
    return axis_types


def _names(axis_names) -> tuple:
    return (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)


def _shape_text(names, sizes, types) -> str:
    body = ", ".join(f"'{n}': {s}" for n, s in zip(names, sizes))
    return f"{body}, axis_types={tuple(types)!r}" if names else f"(), axis_types={tuple(types)!r}"


class _MeshShape:
    """What Mesh and AbstractMesh share: axis names, sizes and types."""

    axis_names: tuple
    axis_sizes: tuple
    axis_types: tuple

    @property
    def shape(self):
        return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

    @property
    def shape_tuple(self):
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self):
        return math.prod(self.axis_sizes)

    @property
    def empty(self):
        return not self.axis_names

    def _axis_types_of(self, kind):
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t is kind)

    @property
    def explicit_axes(self):
        return self._axis_types_of(AxisType.Explicit)

    @property
    def auto_axes(self):
        return self._axis_types_of(AxisType.Auto)

    @property
    def manual_axes(self):
        return self._axis_types_of(AxisType.Manual)

    def axis_type_of(self, name):
        return self.axis_types[self.axis_names.index(name)]

    # As JAX's: False for a mesh without axes.
    are_all_axes_explicit = property(lambda self: _all_of(self.axis_types, AxisType.Explicit))
    are_all_axes_auto = property(lambda self: _all_of(self.axis_types, AxisType.Auto))
    are_all_axes_manual = property(lambda self: _all_of(self.axis_types, AxisType.Manual))


def _all_of(axis_types, kind) -> bool:
    return bool(axis_types) and all(t is kind for t in axis_types)


class AbstractMesh(_MeshShape):
    """A mesh's axis names, sizes and types without its devices (what tracing sees)."""

    def __init__(self, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
        self.axis_sizes = tuple(int(s) for s in axis_sizes)
        self.axis_names = _names(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(
                f"AbstractMesh: axis_sizes {self.axis_sizes} and axis_names {self.axis_names} must "
                "have the same length (one size per axis name)."
            )
        self.axis_types = _axis_types(axis_types, len(self.axis_names), AxisType.Auto, "AbstractMesh")
        self.abstract_device = abstract_device

    def _key(self):
        return (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

    def __eq__(self, other):
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        text = _shape_text(self.axis_names, self.axis_sizes, self.axis_types)
        d = self.abstract_device
        if d is not None:
            text += f", device_kind={d.device_kind}, num_cores={d.num_cores}, platform={d.device_kind}"
        return f"AbstractMesh({text})"

    def update_axis_types(self, name_to_type: dict):
        types = tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
        return AbstractMesh(self.axis_sizes, self.axis_names, types, abstract_device=self.abstract_device)

    @property
    def abstract_mesh(self):
        return self


class Mesh(_MeshShape):
    """Devices in an n-dimensional grid whose axes have names: ``Mesh(devices_array, ('x', 'y'))``.

    NB: all of morphax's devices are CPU devices of this process sharing host memory."""

    def __init__(self, devices, axis_names, axis_types=None):
        arr = np.empty(np.shape(devices), dtype=object)
        for index in np.ndindex(arr.shape):  # element by element: nested lists, arrays, tuples
            item = devices
            for i in index:
                item = item[i]
            arr[index] = item
        names = _names(axis_names)
        if arr.ndim != len(names):
            raise ValueError(
                "Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
                f"second argument (`axis_names`), but got devices.ndim == {arr.ndim} and "
                f"len(axis_names) == {len(names)}."
            )
        if len(set(names)) != len(names):
            raise ValueError(f"Mesh: axis names must be unique, got {names}")
        ids = [d.id for d in arr.flat]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Mesh: a device appears more than once in the mesh's devices: ids {ids}")
        arr.flags.writeable = False
        self.devices = arr
        self.axis_names = names
        self.axis_sizes = tuple(arr.shape)
        self.axis_types = _axis_types(axis_types, len(names), AxisType.Auto, "Mesh")
        self._prev = []
        # Compared and hashed on every placed call (layouts, memo keys): computed once.
        self._identity = (tuple(d.id for d in arr.flat), self.axis_sizes, self.axis_names, self.axis_types)

    def _key(self):
        return self._identity

    def __eq__(self, other):
        return self is other or (isinstance(other, Mesh) and self._identity == other._identity)

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self.empty:
            return "Mesh(axis_sizes=(), axis_names=())"
        return (
            f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
            f"axis_types={tuple(self.axis_types)!r})"
        )

    def __str__(self):
        if self.empty:
            return "Mesh()"
        return f"Mesh({_shape_text(self.axis_names, self.axis_sizes, self.axis_types)})"

    @property
    def device_ids(self):
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices) if self.devices.size else np.array([])

    @property
    def _flat_devices_tuple(self):
        return tuple(self.devices.flat)

    @property
    def local_devices(self):
        return list(self.devices.flat)

    @property
    def local_mesh(self):
        return self

    @property
    def is_multi_process(self):
        return False

    @property
    def abstract_mesh(self):
        kind = self.devices.flat[0].device_kind if self.devices.size else None
        device = AbstractDevice(kind) if kind is not None else None
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types, abstract_device=device)

    def update_axis_types(self, name_to_type: dict):
        types = tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
        return Mesh(self.devices, self.axis_names, types)

    # `with mesh:` (deprecated in JAX): bare PartitionSpecs given to jit resolve against it.
    def __enter__(self):
        warnings.warn(
            "`with mesh:` context manager has been deprecated. Please use `with morphax.set_mesh(mesh):` "
            "instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        self._prev.append(_state.legacy)
        _state.legacy = self
        return self

    def __exit__(self, *exc):
        _state.legacy = self._prev.pop()
        return False


def _as_object_array(devices):
    items = list(devices)
    arr = np.empty(len(items), dtype=object)
    for i, d in enumerate(items):
        arr[i] = d
    return arr


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
    """A mesh of shape `axis_shapes` over the first devices (or `devices`), axes Explicit by
    default (as JAX 0.10)."""
    shape = tuple(int(s) for s in axis_shapes)
    names = _names(axis_names)
    if len(shape) != len(names):
        raise ValueError(
            "Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
            f"second argument (`axis_names`), but got devices.ndim == {len(shape)} and "
            f"len(axis_names) == {len(names)}."
        )
    pool = list(_devices.devices()) if devices is None else list(devices)
    n = math.prod(shape)
    if len(pool) < n:
        raise ValueError(f"Number of devices {len(pool)} must be >= the product of mesh_shape {shape}")
    arr = _as_object_array(pool[:n]).reshape(shape)
    return Mesh(arr, names, _axis_types(axis_types, len(names), AxisType.Explicit, "make_mesh"))


def _empty_mesh() -> Mesh:
    mesh = object.__new__(Mesh)
    mesh.devices = np.empty((0,), dtype=object)
    mesh.axis_names, mesh.axis_sizes, mesh.axis_types, mesh._prev = (), (), (), []
    return mesh


_EMPTY_MESH = _empty_mesh()
_EMPTY_ABSTRACT = AbstractMesh((), ())


class _State(threading.local):
    """This thread's mesh contexts; `None` entries defer to the process-wide setting."""

    def __init__(self):
        self.mesh = None
        self.abstract = None
        self.legacy = None


_state = _State()
# What `set_mesh(m)` called outside a `with` sets: the mesh of every thread without a context.
_global = {"mesh": None}


class set_mesh:  # noqa: N801 - a function in JAX's API that doubles as a context manager
    """Make `mesh` the current mesh: ``with morphax.set_mesh(mesh): ...`` for a block (this thread),
    or ``morphax.set_mesh(mesh)`` alone for the whole process. Bare PartitionSpecs (jit's shardings,
    `reshard`, `with_sharding_constraint`) resolve against it."""

    def __init__(self, mesh):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(
                f"set_mesh: expected a Mesh (or None), got {mesh!r} of type {type(mesh).__name__}"
            )
        self._mesh = mesh
        self._prev_global = _global["mesh"]
        self._prev_local = None
        _global["mesh"] = mesh  # a call on its own sets it process-wide; `with` undoes this

    def __enter__(self):
        _global["mesh"] = self._prev_global
        self._prev_local = (_state.mesh, _state.abstract)
        _state.mesh = self._mesh if self._mesh is not None else _EMPTY_MESH
        _state.abstract = None
        return self._mesh

    def __exit__(self, *exc):
        _state.mesh, _state.abstract = self._prev_local
        return False


def get_mesh() -> Mesh:
    """The current concrete mesh (`set_mesh`), or an empty Mesh."""
    mesh = _state.mesh if _state.mesh is not None else _global["mesh"]
    return mesh if mesh is not None else _EMPTY_MESH


def get_abstract_mesh() -> AbstractMesh:
    """The current mesh's abstract mesh (`use_abstract_mesh` or `set_mesh`), or an empty one."""
    if _state.abstract is not None:
        return _state.abstract
    mesh = get_mesh()
    return _EMPTY_ABSTRACT if mesh.empty else mesh.abstract_mesh


class use_abstract_mesh:  # noqa: N801 - JAX's name
    """Context manager making `mesh` (an AbstractMesh) the current abstract mesh in this thread."""

    def __init__(self, mesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError(f"use_abstract_mesh: expected an AbstractMesh, got {mesh!r}")
        self._mesh = mesh
        self._prev = None

    def __enter__(self):
        self._prev = _state.abstract
        _state.abstract = self._mesh
        return self._mesh

    def __exit__(self, *exc):
        _state.abstract = self._prev
        return False


def resolving_mesh():
    """The mesh bare PartitionSpecs resolve against: `set_mesh`'s, else `with mesh:`'s, else None."""
    mesh = get_mesh()
    if not mesh.empty:
        return mesh
    return _state.legacy
