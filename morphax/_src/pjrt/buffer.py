"""Device buffers: a NumPy array copied onto a PJRT device and back, its shape, dtype and device, and
the PJRT_Buffer freed when the Python object goes. Also the dtype <-> PJRT_Buffer_Type table. Part
of morphax._src.pjrt, which imports nothing else of morphax."""

from __future__ import annotations

import ctypes
import sys

import numpy as np

from . import c_api
from .plugin import count

# NumPy dtype name -> PJRT_Buffer_Type. Names, not dtypes, so that ml_dtypes (bfloat16, float8_*)
# is imported only when such an array is met.
_TYPE_OF_NAME = {
    "bool": "PRED",
    "int8": "S8",
    "int16": "S16",
    "int32": "S32",
    "int64": "S64",
    "uint8": "U8",
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
    "float16": "F16",
    "float32": "F32",
    "float64": "F64",
    "bfloat16": "BF16",
    "complex64": "C64",
    "complex128": "C128",
    "float8_e5m2": "F8E5M2",
    "float8_e4m3fn": "F8E4M3FN",
    "float8_e4m3b11fnuz": "F8E4M3B11FNUZ",
    "float8_e5m2fnuz": "F8E5M2FNUZ",
    "float8_e4m3fnuz": "F8E4M3FNUZ",
    "float8_e4m3": "F8E4M3",
    "float8_e3m4": "F8E3M4",
    "float8_e8m0fnu": "F8E8M0FNU",
}
_NAME_OF_TYPE = {c_api.BUFFER_TYPES.index(t): n for n, t in _TYPE_OF_NAME.items()}
_ML_DTYPES = frozenset(n for n in _TYPE_OF_NAME if n == "bfloat16" or n.startswith("float8"))


def buffer_type(dtype) -> int:
    """The PJRT_Buffer_Type of a NumPy dtype; TypeError for one PJRT cannot hold."""
    dtype = np.dtype(dtype)
    name = _TYPE_OF_NAME.get(dtype.name)
    if name is None:
        raise TypeError(f"no PJRT buffer type for dtype {dtype}")
    return c_api.BUFFER_TYPES.index(name)


def numpy_dtype(buffer_type: int) -> np.dtype:
    """The NumPy dtype of a PJRT_Buffer_Type (bfloat16 and float8 come from ml_dtypes)."""
    name = _NAME_OF_TYPE.get(buffer_type)
    if name is None:
        label = c_api.BUFFER_TYPES[buffer_type] if 0 <= buffer_type < len(c_api.BUFFER_TYPES) else buffer_type
        raise TypeError(f"PJRT buffer type {label} has no NumPy dtype here")
    if name in _ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def _dense_layout(ndim: int):
    """A PJRT_Buffer_MemoryLayout for a C-order array of rank `ndim` (minor-to-major = last axis
    first), and the array it points into (keep both alive through the call)."""
    minor_to_major = (ctypes.c_int64 * max(ndim, 1))(*range(ndim - 1, -1, -1))
    layout = c_api.new(c_api.Buffer_MemoryLayout, type=c_api.LAYOUT_TILED)
    tiled = layout.layout.tiled
    tiled.struct_size = c_api.Buffer_MemoryLayout_Tiled.STRUCT_SIZE
    tiled.minor_to_major = ctypes.cast(minor_to_major, ctypes.POINTER(ctypes.c_int64))
    tiled.minor_to_major_size = ndim
    return layout, minor_to_major


class Buffer:
    """An array on a PJRT device. Made by `Client.buffer_from_host` or returned by
    `Executable.execute`; `to_numpy()` copies it back. The device memory is freed by `delete()` or
    when the object is collected."""

    __slots__ = ("client", "_ptr", "_shape", "_dtype", "__weakref__")

    def __init__(self, client, ptr: int, shape=None, dtype=None):
        self.client = client
        self._ptr = ptr
        self._shape = None if shape is None else tuple(int(d) for d in shape)
        self._dtype = None if dtype is None else np.dtype(dtype)
        count("buffers", 1)

    # -- creation

    @classmethod
    def from_host(cls, client, array, device) -> Buffer:
        a = np.asarray(array)
        kind = buffer_type(a.dtype)
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        if not a.flags.c_contiguous:
            a = a.copy(order="C")  # PJRT could take byte strides, but a dense copy is one path for all
        dims = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        args = c_api.new(
            c_api.Client_BufferFromHostBuffer_Args,
            client=client._ptr,
            data=a.ctypes.data,
            type=kind,
            dims=ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64)),
            num_dims=a.ndim,
            # The plugin copies during the call, so `a` may go as soon as it returns.
            host_buffer_semantics=c_api.HOST_IMMUTABLE_ONLY_DURING_CALL,
            device=device._ptr,
        )
        plugin = client.plugin
        plugin.call("Client_BufferFromHostBuffer", args)
        buffer = cls(client, args.buffer, a.shape, a.dtype)
        # Still await the done-with-host-buffer event (and destroy it) before `a` can be freed.
        plugin.await_event(args.done_with_host_buffer, "PJRT_Client_BufferFromHostBuffer")
        return buffer

    # -- metadata

    def _handle(self, what: str) -> int:
        if not self._ptr:
            raise RuntimeError(f"{what}: the buffer was destroyed")
        return self._ptr

    @property
    def shape(self) -> tuple:
        if self._shape is None:
            args = c_api.new(c_api.Buffer_Dimensions_Args, buffer=self._handle("shape"))
            self.client.plugin.call("Buffer_Dimensions", args)
            self._shape = tuple(args.dims[i] for i in range(args.num_dims))
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        if self._dtype is None:
            args = c_api.new(c_api.Buffer_ElementType_Args, buffer=self._handle("dtype"))
            self.client.plugin.call("Buffer_ElementType", args)
            self._dtype = numpy_dtype(args.type)
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def on_device_size_in_bytes(self) -> int:
        args = c_api.new(
            c_api.Buffer_OnDeviceSizeInBytes_Args, buffer=self._handle("on_device_size_in_bytes")
        )
        self.client.plugin.call("Buffer_OnDeviceSizeInBytes", args)
        return int(args.on_device_size_in_bytes)

    @property
    def device(self):
        args = c_api.new(c_api.Buffer_Device_Args, buffer=self._handle("device"))
        self.client.plugin.call("Buffer_Device", args)
        return self.client._device_of(args.device)

    # -- state

    def is_deleted(self) -> bool:
        if not self._ptr:
            return True
        args = c_api.new(c_api.Buffer_IsDeleted_Args, buffer=self._ptr)
        self.client.plugin.call("Buffer_IsDeleted", args)
        return bool(args.is_deleted)

    def delete(self) -> None:
        """Frees the device memory now (the handle stays until the object goes). Idempotent."""
        if self._ptr:
            self.client.plugin.call("Buffer_Delete", c_api.new(c_api.Buffer_Delete_Args, buffer=self._ptr))

    def block_until_ready(self) -> Buffer:
        """Waits until the buffer's value is computed; raises the PjrtError of a failed computation."""
        args = c_api.new(c_api.Buffer_ReadyEvent_Args, buffer=self._handle("block_until_ready"))
        plugin = self.client.plugin
        plugin.call("Buffer_ReadyEvent", args)
        plugin.await_event(args.event, "PJRT_Buffer_ReadyEvent")
        return self

    def unsafe_pointer(self) -> int:
        """The buffer's address on its device (on a CPU plugin, host memory holding its value once
        ready); valid while the buffer lives. NotImplementedError where the plugin gives none."""
        plugin = self.client.plugin
        if not plugin.has("Buffer_UnsafePointer"):
            raise NotImplementedError(f"the {self.client.platform_name} plugin gives no buffer pointers")
        args = c_api.new(c_api.Buffer_UnsafePointer_Args, buffer=self._handle("unsafe_pointer"))
        plugin.call("Buffer_UnsafePointer", args)
        return int(args.buffer_pointer)

    def is_ready(self) -> bool:
        """Whether the buffer's value is computed (or its computation failed); does not wait."""
        args = c_api.new(c_api.Buffer_ReadyEvent_Args, buffer=self._handle("is_ready"))
        plugin = self.client.plugin
        plugin.call("Buffer_ReadyEvent", args)
        return plugin.event_is_ready(args.event)

    # -- back to the host

    def to_numpy(self) -> np.ndarray:
        """A new C-contiguous NumPy array with the buffer's value (waits for it)."""
        return self.to_numpy_async()()

    def to_numpy_async(self):
        """Starts the copy to a new NumPy array and returns `finish() -> array`, which waits for
        it (and raises what went wrong)."""
        if self.is_deleted():
            raise RuntimeError("to_numpy: the buffer was deleted (or donated to a computation)")
        out = np.empty(self.shape, self.dtype)
        layout, minor_to_major = _dense_layout(out.ndim)
        args = c_api.new(
            c_api.Buffer_ToHostBuffer_Args,
            src=self._ptr,
            host_layout=ctypes.pointer(layout),
            dst=out.ctypes.data,
            dst_size=out.nbytes,
        )
        plugin = self.client.plugin
        plugin.call("Buffer_ToHostBuffer", args)
        event = args.event
        keep = [args, layout, minor_to_major]  # the plugin reads the layout until the copy is done

        def finish():
            plugin.await_event(event, "PJRT_Buffer_ToHostBuffer")
            keep.clear()
            return out

        return finish

    def __array__(self, dtype=None, copy=None):
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __repr__(self):
        if not self._ptr:
            return "<pjrt Buffer (destroyed)>"
        return f"<pjrt Buffer {self.dtype.name}{list(self.shape)}>"

    # -- lifetime

    def _destroy(self) -> None:
        ptr, self._ptr = self._ptr, 0
        if ptr:
            error = self.client.plugin.fn["Buffer_Destroy"](
                ctypes.byref(c_api.new(c_api.Buffer_Destroy_Args, buffer=ptr))
            )
            count("buffers", -1)
            if error:
                raise self.client.plugin.error(error, "PJRT_Buffer_Destroy")

    def __del__(self):
        # At interpreter exit the plugin's threads may already be gone: leave it to the OS.
        if self._ptr and not sys.is_finalizing():
            self._destroy()


class OwnedBuffer(Buffer):
    """A Buffer whose PJRT buffer another object owns and destroys when it goes (`owner`: the C
    launcher's HeldBuffer of a program's output, with its `address`); freeing it early
    (`delete`) works as for any Buffer. `launcher`, the C launcher of the program that made it
    (output number `output`), waits for it and copies it to the host without ctypes."""

    __slots__ = ("_owner", "_launcher", "_output", "_deleted")

    def __init__(self, client, owner, shape, dtype, launcher=None, output=0):
        self.client = client
        self._ptr = owner.address
        self._shape = shape
        self._dtype = dtype
        self._owner = owner
        self._launcher = launcher
        self._output = output
        self._deleted = False

    def delete(self) -> None:
        self._deleted = True
        super().delete()

    def block_until_ready(self) -> Buffer:
        if self._launcher is None or self._deleted or not self._ptr:
            return super().block_until_ready()
        self._launcher.wait(self._ptr)
        return self

    def to_numpy(self) -> np.ndarray:
        if self._launcher is None or self._deleted or not self._ptr:
            return super().to_numpy()
        return self._launcher.to_host(self._ptr, self._output)

    def _destroy(self) -> None:
        self._ptr = 0
        self._owner = None

    def __del__(self):
        pass  # the owner destroys the PJRT buffer
