"""The C side of a call of an XLA program: one PJRT execution from NumPy inputs to NumPy outputs.

Through ctypes a call costs tens of microseconds of Python per PJRT function (argument structs,
pointer arrays, events) and, on XLA's CPU plugin, a thread handoff for each copy back to the
host: about 150 us for a jitted `x + 1`, where JAX takes 6. This module builds (once per machine,
with the C backend's extension builder, c/extension.py) a tiny extension type, `Launcher`, that
makes the same calls in C with the GIL released: each input is copied into a new device buffer,
the program runs, every output's ready event is awaited (an error of the computation is raised
here), and the outputs come back as NumPy arrays. On a CPU plugin an output's device buffer *is*
host memory: the array views it (a `HeldBuffer` owns the PJRT buffer and destroys it when the
array goes), so nothing is copied back, and such an array passed to a later program goes in as
that buffer, not copied; elsewhere each output is copied with PJRT_Buffer_ToHostBuffer. An input that is not a C-contiguous NumPy array of its expected dtype
and shape makes the call return None, and the ctypes path (morphax._src.pjrt) runs it.

The PJRT argument structs are written into the C source from their ctypes mirrors
(morphax._src.pjrt.c_api, checked against the header), each field's offset asserted at compile
time.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from morphax._src.compiler.backends.xla.launcher_source import SOURCE_TEMPLATE
from morphax._src.pjrt import c_api
from morphax._src.pjrt.buffer import _dense_layout, buffer_type
from morphax._src.pjrt.errors import PjrtError, _code_name

# The table entries the launcher calls, in the order of its `fn` array.
ENTRIES = (
    "Client_BufferFromHostBuffer",
    "LoadedExecutable_Execute",
    "Event_Await",
    "Event_Destroy",
    "Buffer_ReadyEvent",
    "Buffer_Destroy",
    "Buffer_UnsafePointer",
    "Buffer_ToHostBuffer",
    "Error_Message",
    "Error_GetCode",
    "Error_Destroy",
)

_STRUCTS = (
    c_api.Error_Destroy_Args,
    c_api.Error_Message_Args,
    c_api.Error_GetCode_Args,
    c_api.Event_Destroy_Args,
    c_api.Event_Await_Args,
    c_api.Client_BufferFromHostBuffer_Args,
    c_api.ExecuteOptions,
    c_api.LoadedExecutable_Execute_Args,
    c_api.Buffer_Destroy_Args,
    c_api.Buffer_ReadyEvent_Args,
    c_api.Buffer_UnsafePointer_Args,
    c_api.Buffer_ToHostBuffer_Args,
)

# ctypes' type codes of the simple field types these structs use, as C types.
_C_TYPES = {
    "L": "size_t",
    "Q": "uint64_t",
    "l": "int64_t",
    "q": "int64_t",
    "i": "int",
    "?": "_Bool",
    "f": "float",
}


def _c_field_type(ctype) -> str:
    code = getattr(ctype, "_type_", None)
    if isinstance(code, str) and code in _C_TYPES:
        return _C_TYPES[code]
    return "void *"  # c_void_p ('P'), c_char_p ('z') and every POINTER(...)


def c_struct(cls) -> str:
    """`cls` (a ctypes mirror of a PJRT struct) as a C typedef of the same name, with its
    PJRT_STRUCT_SIZE and a compile-time check of every field's offset."""
    name = cls.__name__
    fields = [f"  {_c_field_type(t)} {f};" for f, t in cls._fields_]
    checks = [
        f'_Static_assert(offsetof({name}, {f}) == {getattr(cls, f).offset}, "{name}.{f}");'
        for f, _ in cls._fields_
    ]
    return "\n".join(
        ["typedef struct {", *fields, f"}} {name};", f"#define {name}_SIZE {cls.STRUCT_SIZE}", *checks]
    )


SOURCE = SOURCE_TEMPLATE.replace("@STRUCTS@", "\n\n".join(c_struct(s) for s in _STRUCTS))

# Inputs of at least this many bytes are lent to a CPU plugin rather than copied: below it, a
# copy costs less than the bookkeeping of a lent buffer.
ZERO_COPY_BYTES = 1 << 16

_module: list = []
_lock = threading.Lock()


def module(wait: bool = True):
    """The built extension, or None where it cannot be built (no compiler or headers). Without
    `wait`, None also while it is being built, in a background thread started here: a fresh
    machine's first call then does not wait for the C compiler (the ctypes path runs it)."""
    if not _module:
        if not wait:
            if not _background:
                with _lock:
                    if not _background and not _module:
                        _background.append(
                            threading.Thread(target=module, name="morphax-launcher-build", daemon=True)
                        )
                        _background[0].start()
            return None
        with _lock:
            if not _module:
                from morphax._src.compiler.backends.c import extension

                _module.append(extension.build("mx_pjrt_launch", SOURCE, "PJRT launcher extension"))
    return _module[0]


_background: list = []  # [the thread building the extension], once started


def _make_error(code: int, message: bytes, where: str) -> PjrtError:
    return PjrtError(_code_name(code), message.decode("utf-8", "replace"), where)


def launcher(client, compiled, device, in_avals, out_avals, device_outputs=False, wait=True):
    """A C launcher of `compiled` (a morphax._src.pjrt Executable for one device), or None (then
    the ctypes path runs every call). `device_outputs`: inputs may be PJRT buffer addresses and
    the outputs are the addresses of new PJRT buffers (arrays that live on the device). Without
    `wait`, None while the extension is being built (`module`)."""
    mod = module(wait)
    if mod is None:
        return None
    plugin = client.plugin
    entries = tuple(plugin.address(name) for name in ENTRIES)
    required = [n for n, a in zip(ENTRIES, entries) if not a and n != "Buffer_UnsafePointer"]
    if required:
        return None
    ins = tuple(
        (buffer_type(np.dtype(a.dtype)), np.dtype(a.dtype), tuple(int(d) for d in a.shape)) for a in in_avals
    )
    layouts, outs = [], []
    for a in out_avals:
        layout, minor_to_major = _dense_layout(len(a.shape))
        layouts.append((layout, minor_to_major))
        outs.append((np.dtype(a.dtype), tuple(int(d) for d in a.shape), ctypes.addressof(layout)))
    # Device memory is host memory on a CPU plugin: NumPy views the outputs (no copy back), and
    # large inputs are lent to the plugin (no copy in).
    host_memory = client.platform_name == "cpu" and not device_outputs
    zero_copy = ZERO_COPY_BYTES if host_memory else 2**62
    owner = (plugin, client, compiled, layouts)
    return mod.Launcher(
        entries,
        client._ptr,
        device._ptr,
        compiled._handle(),
        ins,
        tuple(outs),
        host_memory,
        device_outputs,
        zero_copy,
        _make_error,
        owner,
    )
