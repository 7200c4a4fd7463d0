"""`Array`: the user-visible immutable array, over a buffer that is pending, ready or failed.

Operators and methods are installed by `_src/numpy/array_methods.py` (shared with tracers), so
this file only owns storage, host conversion and printing.
"""

from __future__ import annotations

import sys

import numpy as np

from morphax._src import errors, events
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, pytype_aval_mappings
from morphax._src.core.trace import Tracer
from morphax._src.core.trace import _base_trace_holder as _base_trace
from morphax._src.core.trace import ctx as _trace_ctx
from morphax._src.core.values import tick as _tick
from morphax._src.runtime.buffers import (
    DeletedBuffer,
    DeviceBuffer,
    PendingBuffer,
    ProcessLocalBuffer,
    ShardedDeviceBuffer,
)


class _ArrayMeta(type):
    """Makes `Array` the type of every array value a program sees: concrete Arrays are its
    instances, and so are tracers of any transformation (jit, grad, vmap, scan bodies...), as
    `jax.Array` is the base of both ArrayImpl and Tracer in JAX. Libraries test
    ``isinstance(x, jax.Array)`` (or ``jnp.ndarray``) to tell arrays from other leaves, and that
    test must not change inside a transformation.

    Python answers ``isinstance(a, Array)`` for an exact Array without calling this, so only
    other values pay for the extra check. The fast paths that test ``type(x) is Array`` still
    mean "a concrete Array"."""

    def __instancecheck__(cls, instance):
        if type.__instancecheck__(cls, instance):
            return True
        # A virtual type may disown an instance that holds no array (a key array unflattened
        # around a placeholder by a tree utility) by `_counts_as_array` False.
        return (
            cls is Array
            and isinstance(instance, _virtual_array_types[0])
            and getattr(instance, "_counts_as_array", True)
        )

    def __subclasscheck__(cls, subclass):
        if type.__subclasscheck__(cls, subclass):
            return True
        return cls is Array and isinstance(subclass, type) and issubclass(subclass, _virtual_array_types[0])


# The types `isinstance(x, Array)` accepts besides Array: tracers, and the typed PRNG key arrays
# (random/keys.py registers them; `jax.random.key(0)` is a `jax.Array` too).
_virtual_array_types: list = [(Tracer,)]


def register_virtual_array_type(t: type) -> None:
    """Make instances of `t` count as instances of `Array` (for `isinstance`)."""
    _virtual_array_types[0] = (*_virtual_array_types[0], t)


class Array(metaclass=_ArrayMeta):
    """An immutable n-dimensional array. ``_buf`` is a NumPy array once ready, else a PendingBuffer.

    ``_place`` says where it lives: None for the common case, uncommitted on the first device;
    otherwise ``(sharding, committed)`` (runtime/placement.py). All devices share host memory, so
    a sharded Array keeps one global buffer and its shards are views of it."""

    # `_made_at`: set only on a constant made while tracing (core/values.make_array, _new_array).
    __slots__ = ("_buf", "weak_type", "_place", "_made_at", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, buf, weak_type: bool = False, place=None):
        self._buf = buf
        self.weak_type = weak_type
        self._place = place

    # -- storage ------------------------------------------------------------------------------
    @property
    def _value(self) -> np.ndarray:
        buf = self._buf
        if type(buf) is np.ndarray:
            return buf
        return self._wait()

    def _wait(self) -> np.ndarray:
        value = self._settle()
        if type(value) is ProcessLocalBuffer:
            raise RuntimeError(
                "Fetching value for `jax.Array` that spans non-addressable (non process local) devices is "
                f"not possible (this array, {self.dtype.name}{list(self.shape)}, is laid out over the devices "
                "of several processes). You can use `morphax.experimental.multihost_utils.process_allgather` "
                "to print the global array or use `.addressable_shards` method of jax.Array to inspect the "
                "addressable (process local) shards."
            )
        return value

    def _settle(self):
        """The buffer once ready (waiting for pending work): an ndarray, or a ProcessLocalBuffer."""
        buf = self._buf
        if isinstance(buf, PendingBuffer):
            if events.on and not buf.done():
                with events.span(f"wait for {_describe(buf)}", "transfer"):
                    value = buf.result()
            else:
                value = buf.result()
            if type(buf) not in _ON_DEVICES:  # a device array keeps its buffer (and the copy)
                self._buf = value
            return value
        return buf

    def is_ready(self) -> bool:
        buf = self._buf
        return not isinstance(buf, PendingBuffer) or buf.done()

    def block_until_ready(self):
        buf = self._buf
        if type(buf) is np.ndarray:
            return self  # computed on the host
        if type(buf) in _ON_DEVICES:
            buf.wait()  # the computation, not a copy to the host
        else:
            self._settle()
        return self

    def is_deleted(self) -> bool:
        return type(self._buf) is DeletedBuffer

    def delete(self) -> None:
        """Free the buffer; later reads raise "Array has been deleted"."""
        buf = self._buf
        self._buf = DeletedBuffer(buf.shape, buf.dtype)
        if type(buf) is DeviceBuffer:
            buf.pjrt.delete()  # device memory is freed now (after work already queued on it)
        elif type(buf) is ShardedDeviceBuffer:
            for shard, _ in buf.shards:
                shard.delete()

    @property
    def aval(self) -> ShapedArray:
        buf = self._buf
        return ShapedArray(buf.shape, buf.dtype, self.weak_type)

    @property
    def shape(self):
        return self._buf.shape

    @property
    def dtype(self):
        return self._buf.dtype

    @property
    def ndim(self):
        return len(self._buf.shape)

    @property
    def size(self):
        return int(np.prod(self._buf.shape, dtype=np.int64))

    @property
    def itemsize(self):
        return self._buf.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self._buf.dtype.itemsize

    # -- host conversion ----------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        start = events.now() if events.on else 0
        value = self._value
        if copy:
            out = np.array(value, dtype=dtype, copy=True)
        elif dtype is not None and np.dtype(dtype) != value.dtype:
            out = value.astype(dtype)
        else:
            out = value.view()
            out.flags.writeable = False
        # Only the program's own reads: morphax converts constants to NumPy while compiling.
        if start and not sys._getframe(1).f_globals.get("__name__", "").startswith("morphax."):
            events.complete(f"to host {_describe(value)}", "transfer", start)
        return out

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The array's value as a DLPack capsule (the protocol of `np.from_dlpack`, torch's
        `from_dlpack`). NB: exported from a host copy (JAX shares the device buffer); morphax's
        buffers are read-only, which DLPack before 1.0 cannot signal."""
        host = np.array(self._value, copy=True)
        return host.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return (1, 0)  # (kDLCPU, device 0): exported from host memory (a device array's copy)

    def _scalar(self, fn, name):
        if self.size != 1:
            raise TypeError(
                f"Only arrays with one element can be converted to Python scalars; {name}() got an "
                f"array of shape {self.shape}."
            )
        return fn(
            self._value.reshape(()).item()
            if not _dtypes.is_bfloat16(self.dtype)
            else float(self._value.reshape(()))
        )

    def __float__(self):
        return self._scalar(float, "float")

    def __int__(self):
        return self._scalar(int, "int")

    def __complex__(self):
        return self._scalar(complex, "complex")

    def __bool__(self):
        if self.size != 1:
            raise ValueError(
                f"The truth value of an array with more than one element is ambiguous (shape {self.shape}). "
                "Use a.any() or a.all()."
            )
        return bool(self._value.reshape(()).item())

    def __index__(self):
        if self.ndim != 0 or not (_dtypes.is_integer(self.dtype) or _dtypes.is_bool(self.dtype)):
            raise TypeError(
                f"Only integer scalar arrays can be converted to a scalar index; got {self.dtype.name}{list(self.shape)}"
            )
        return int(self._value.item())

    def item(self, *args):
        value = self._value
        if _dtypes.is_bfloat16(value.dtype) or value.dtype.kind == "V":
            return value.astype(np.float32).item(*args) if value.dtype.kind != "V" else value.item(*args)
        return value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        # Rows come from the host copy: iteration is a host-side loop anyway.
        value = self._value
        weak = self.weak_type
        place = self._place if self._place is None or _single_device(self._place) else None
        # np.array (not ascontiguousarray, which turns 0-d into 1-d) keeps each row's shape.
        return (Array(np.array(value[i]), weak, place) for i in range(self.shape[0]))

    def __hash__(self):
        raise TypeError(
            "unhashable type: 'Array' (morphax arrays are mutable-looking values; use a tuple of Python numbers as a key)"
        )

    def __setitem__(self, idx, value):
        raise TypeError(errors.immutable_message("Array"))

    def __reduce__(self):
        return (_rebuild, (self._value, self.weak_type))

    def __repr__(self):
        if type(self._settle()) is ProcessLocalBuffer:  # as JAX: the type only
            weak = ", weak_type=True" if self.weak_type else ""
            return f"Array(shape={self.shape}, dtype={self.dtype.name}{weak})"
        value = self._value
        suffix = f", dtype={value.dtype.name}" + (", weak_type=True" if self.weak_type else "")
        if value.size == 0 and value.shape != (0,):
            return f"Array([], shape={value.shape}{suffix})"
        body = np.array2string(value, separator=", ", prefix="Array(")
        return f"Array({body}{suffix})"

    def __str__(self):
        return str(self._value)

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self._value.item(), spec)
        return format(str(self), spec)

    def copy_to_host_async(self):
        """Start copying a device array's value to the host; a later read waits for the copy."""
        buf = self._buf
        if type(buf) is DeviceBuffer:
            buf.start_copy()

    def unsafe_buffer_pointer(self) -> int:
        """The address of the array's buffer: device memory for a device array (where the plugin
        gives one), else its host memory."""
        buf = self._buf
        if type(buf) is DeviceBuffer:
            return buf.pjrt.unsafe_pointer()
        return int(self._value.ctypes.data)

    # -- placement (runtime/placement.py) ------------------------------------------------------
    def devices(self) -> set:
        """The set of devices holding (a piece of) this array."""
        return set(self.sharding.device_set)

    @property
    def device(self):
        """The device of a single-device array (sharded arrays have several: use `devices()`)."""
        return placement_hooks["device_of"](self)

    @property
    def committed(self) -> bool:
        """Whether the array was placed explicitly (device_put with a device or sharding, or
        computed from such arrays): computations on it then run where it is."""
        return self._place is not None and self._place[1]

    @property
    def _committed(self) -> bool:
        return self.committed

    @property
    def sharding(self):
        """How the array is laid out over devices (SingleDeviceSharding of its device by default)."""
        return placement_hooks["sharding_of"](self)

    @property
    def addressable_shards(self) -> list:
        """One `Shard` per device: its device, index into the array, replica id and data (an Array
        viewing the shared host buffer)."""
        return placement_hooks["shards_of"](self)

    @property
    def global_shards(self) -> list:
        """One `Shard` per device of every process (`data` None for other processes' devices)."""
        return placement_hooks["global_shards_of"](self)

    def addressable_data(self, index: int):
        return self.addressable_shards[index].data

    @property
    def is_fully_replicated(self) -> bool:
        return self.sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        """Whether this process's devices hold all of it (False for an array laid out over the
        devices of several processes)."""
        return self._place is None or self._place[0].is_fully_addressable


# Buffers in a plugin's device memory: an Array keeps them after reading its value.
_ON_DEVICES = (DeviceBuffer, ShardedDeviceBuffer)


def _single_device(place) -> bool:
    return len(place[0].device_set) == 1


def _describe(buf) -> str:
    """`f32[3,4]`: a buffer's type in a span's name."""
    return f"{_dtypes.short_dtype_name(buf.dtype)}[{','.join(map(str, buf.shape))}]"


def type_key(x: Array) -> tuple:
    """(shape, dtype, weak_type) of an Array, read without waiting for its value: the cheap
    hashable stand-in for its aval on the dispatch paths (jit's cache key, eager promotion)."""
    buf = x._buf
    return (buf.shape, buf.dtype, x.weak_type)


def computed_pair_dtype(a: Array, b: Array):
    """The dtype of two Arrays whose values are computed NumPy arrays of one shape, dtype and weak
    type, else None: the condition of the eager binary operators' fast path."""
    ba, bb = a._buf, b._buf
    if type(ba) is np.ndarray and type(bb) is np.ndarray and ba.dtype is bb.dtype and ba.shape == bb.shape:
        if a.weak_type == b.weak_type:
            return ba.dtype
    return None


def computed_host_value(a: Array):
    """The NumPy array holding `a`'s value when it is computed and `a` is not placed (the common
    eager case), else None: the condition of the operators' shortcuts (numpy/ready_shortcuts.py).
    Also None while a transformation traces: JAX stages `c * 2`, `c[0]` on a constant `c` there
    (`mul a 2.0:f32[]`), where computing them now would leave a constant in the jaxpr."""
    buf = a._buf
    if type(buf) is np.ndarray and a._place is None and _trace_ctx.trace is _base_trace[0]:
        return buf
    return None


def live_buffers():
    """(bytes, buffer, the NumPy array owning its memory or None while pending) for each
    distinct buffer of a live, undeleted Array (views of one NumPy array count once): the
    device memory profile's samples. Walks the garbage collector's objects: slow, never hot."""
    import gc

    seen = set()
    for obj in gc.get_objects():
        if type(obj) is not Array:
            continue
        buf = obj._buf
        if type(buf) is DeletedBuffer:
            continue
        if isinstance(buf, PendingBuffer):  # being computed: its size is known already
            if id(buf) not in seen:
                seen.add(id(buf))
                yield buf.size * buf.dtype.itemsize, buf, None
            continue
        owner = buf
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        if id(owner) not in seen:
            seen.add(id(owner))
            yield owner.nbytes, buf, owner


def _rebuild(value, weak_type):
    return Array(value, weak_type)


def _array_aval(x: Array) -> ShapedArray:
    buf = x._buf
    return ShapedArray(buf.shape, buf.dtype, x.weak_type)


pytype_aval_mappings[Array] = _array_aval


# Whether any Array has been placed off the default (uncommitted, first device) placement, or a
# default_device context is in use: until then the dispatch fast paths skip placement entirely.
# Modules that test it on hot paths keep a copy, kept current by `on_placed` listeners.
placed = False
_placed_listeners: list = []
# runtime/placement.py's functions, installed there (it imports this module).
placement_hooks: dict = {}


def on_placed(fn) -> None:
    """Call `fn()` once placement starts to matter (at once if it already does)."""
    _placed_listeners.append(fn)
    if placed:
        fn()


def mark_placed() -> None:
    global placed
    if not placed:
        placed = True
        for fn in _placed_listeners:
            fn()


def from_numpy(value, weak_type: bool = False) -> Array:
    """Wrap a host value; 0-d results of NumPy ufuncs arrive as scalars and become arrays."""
    if type(value) is not np.ndarray:
        value = np.asarray(value)
    return Array(value, weak_type)


def _register():
    from morphax._src.core import values

    values.register_array_type(Array, _new_array)


def _new_array(value, weak_type):
    """A new Array from a host value: on the default device (uncommitted). A constant made while
    a transformation traces is stamped with the time (core/values.tick), so a staging trace
    inlines it as a literal where it keeps older Arrays as constvars."""
    if placed:
        out = Array(value, weak_type, placement_hooks["default_place"]())
    else:
        out = Array(value, weak_type)
    if _trace_ctx.trace is not _base_trace[0]:
        out._made_at = _tick()
    return out


_register()
