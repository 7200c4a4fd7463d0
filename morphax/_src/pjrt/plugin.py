"""Finding and loading a PJRT plugin: the shared library is opened once per path per process (and
never unloaded), its API version checked, `PJRT_Plugin_Initialize` called, its table bound to ctypes
functions and its attributes read. Also the live-object counts the rest of the package keeps. Part
of morphax._src.pjrt, which imports nothing else of morphax."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading

from . import c_api
from .errors import PjrtError, consume

ENV_VAR = "MORPHAX_PJRT_PLUGIN"
CPU_PACKAGE = "lammps_jax_pjrt_cpu"
CPU_LIBRARY = "pjrt_c_api_cpu_plugin.so"

# Entries a plugin may lack (NULL, or past the end of an older table); everything else bound here
# is required.
OPTIONAL = frozenset(
    {
        "Plugin_Initialize",
        "Event_Error",
        "DeviceDescription_ToString",
        "DeviceDescription_DebugString",
        "Executable_Name",
        "Executable_NumReplicas",
        "Executable_NumPartitions",
        "Executable_Serialize",
        "Executable_DeserializeAndLoad",
        "Executable_OutputElementTypes",
        "Executable_OutputDimensions",
        "Executable_Fingerprint",
        "LoadedExecutable_AddressableDevices",
        "Buffer_OnDeviceSizeInBytes",
        "Buffer_UnsafePointer",
    }
)


class PluginError(RuntimeError):
    """A library that cannot be used as a PJRT plugin (missing, not a plugin, or an API version this
    package does not speak)."""


# ---------------------------------------------------------------- live-object accounting

_live = {"buffers": 0, "loaded_executables": 0, "executables": 0, "events": 0, "clients": 0}
_live_lock = threading.Lock()


def count(kind: str, delta: int) -> None:
    with _live_lock:
        _live[kind] += delta


def live_objects() -> dict:
    """How many PJRT objects this process holds right now, by kind: buffers, loaded_executables,
    executables (from GetExecutable), events and clients. Each is destroyed exactly once."""
    with _live_lock:
        return dict(_live)


# ---------------------------------------------------------------- discovery


def find_plugin() -> str | None:
    """The path of the PJRT plugin to use: `$MORPHAX_PJRT_PLUGIN` when set (returned even if it
    does not exist, so that loading reports it), else the XLA CPU plugin of the installed package
    `lammps_jax_pjrt_cpu` (located without importing anything), else None."""
    env = os.environ.get(ENV_VAR)
    if env:
        return env
    return _package_file(CPU_PACKAGE, CPU_LIBRARY)


TPU_ENV_VAR = "TPU_LIBRARY_PATH"
TPU_PACKAGE = "libtpu"
TPU_LIBRARY = "libtpu.so"


def find_tpu_plugin() -> str | None:
    """The path of libtpu, as JAX finds it: `$TPU_LIBRARY_PATH` when set, else `libtpu.so` in the
    installed package `libtpu` (located without importing it), else None. Finding it opens
    nothing: the chip admits one process at a time."""
    env = os.environ.get(TPU_ENV_VAR)
    if env:
        return env
    return _package_file(TPU_PACKAGE, TPU_LIBRARY)


def _package_file(package: str, name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for folder in spec.submodule_search_locations or ():
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
    return None


_loaded: dict[str, Plugin] = {}
_load_lock = threading.Lock()


def load(path: str | None = None) -> Plugin:
    """The loaded, initialized plugin at `path` (default: `find_plugin()`), opened once per process."""
    if path is None:
        path = find_plugin()
        if path is None:
            raise PluginError(
                f"no PJRT plugin found: set {ENV_VAR} to a plugin's .so, or "
                "`pip install --no-deps lammps-jax-pjrt-cpu` for XLA's CPU plugin"
            )
    key = os.path.realpath(os.fspath(path))
    with _load_lock:
        plugin = _loaded.get(key)
        if plugin is None:
            plugin = Plugin(key)
            _loaded[key] = plugin
        return plugin


# ---------------------------------------------------------------- named values


def named_values(array, size: int) -> dict:
    """A dict from a C array of PJRT_NamedValue (strings, ints, int lists as tuples, floats, bools)."""
    out = {}
    for i in range(size):
        item = array[i]
        name = ctypes.string_at(item.name, item.name_size).decode("utf-8", "replace")
        kind, n = item.type, item.value_size
        if kind == c_api.NAMED_STRING:
            value = ctypes.string_at(item.value.string_value, n).decode("utf-8", "replace") if n else ""
        elif kind == c_api.NAMED_INT64:
            value = int(item.value.int64_value)
        elif kind == c_api.NAMED_INT64_LIST:
            value = tuple(item.value.int64_array_value[j] for j in range(n))
        elif kind == c_api.NAMED_FLOAT:
            value = float(item.value.float_value)
        elif kind == c_api.NAMED_BOOL:
            value = bool(item.value.bool_value)
        else:
            value = None  # a type newer than this header: keep the name, say nothing of the value
        out[name] = value
    return out


def make_named_values(options: dict):
    """A C array of PJRT_NamedValue for `options`, and the objects that must outlive its use."""
    array = (c_api.NamedValue * max(len(options), 1))()
    keep = [array]
    for i, (name, value) in enumerate(options.items()):
        item = array[i]
        item.struct_size = c_api.NamedValue.STRUCT_SIZE
        raw_name = str(name).encode()
        keep.append(raw_name)
        item.name = ctypes.cast(ctypes.c_char_p(raw_name), ctypes.c_void_p)
        item.name_size = len(raw_name)
        if isinstance(value, bool):
            item.type, item.value.bool_value, item.value_size = c_api.NAMED_BOOL, value, 1
        elif isinstance(value, int):
            item.type, item.value.int64_value, item.value_size = c_api.NAMED_INT64, value, 1
        elif isinstance(value, float):
            item.type, item.value.float_value, item.value_size = c_api.NAMED_FLOAT, value, 1
        elif isinstance(value, str):
            raw = value.encode()
            keep.append(raw)
            item.type, item.value_size = c_api.NAMED_STRING, len(raw)
            item.value.string_value = ctypes.cast(ctypes.c_char_p(raw), ctypes.c_void_p)
        elif isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
            ints = (ctypes.c_int64 * max(len(value), 1))(*value)
            keep.append(ints)
            item.type, item.value_size = c_api.NAMED_INT64_LIST, len(value)
            item.value.int64_array_value = ctypes.cast(ints, ctypes.POINTER(ctypes.c_int64))
        else:
            raise TypeError(
                f"PJRT option {name!r}: {type(value).__name__} is not a str, int, float, bool or int list"
            )
    return array, keep


# ---------------------------------------------------------------- the plugin


class Plugin:
    """One opened PJRT plugin. `fn[name]` calls a table entry (names as in `c_api.FUNCTIONS`);
    `call` raises PjrtError for a returned PJRT_Error; `await_event` waits for and destroys an event."""

    def __init__(self, path: str):
        if not os.path.isfile(path):
            raise PluginError(f"PJRT plugin {path!r} does not exist")
        self.path = path
        try:
            self._lib = ctypes.CDLL(path)
        except OSError as exc:
            raise PluginError(f"cannot open PJRT plugin {path!r}: {exc}") from None
        try:
            get_api = self._lib.GetPjrtApi
        except AttributeError:
            raise PluginError(f"{path!r} exports no GetPjrtApi: not a PJRT plugin") from None
        get_api.restype, get_api.argtypes = ctypes.c_void_p, []
        address = get_api()
        if not address:
            raise PluginError(f"{path!r}: GetPjrtApi returned NULL")
        self._api_address = address
        # Read the table through its own size: an older plugin's table is shorter than ours.
        self.api_struct_size = ctypes.c_size_t.from_address(address).value
        version = c_api.Api_Version.from_address(address + c_api.Api.pjrt_api_version.offset)
        self.api_version = (version.major_version, version.minor_version)
        major, minor = self.api_version
        if major != c_api.MAJOR_VERSION or minor < c_api.MIN_MINOR_VERSION:
            raise PluginError(
                f"PJRT plugin {path!r} speaks API {major}.{minor}; morphax needs "
                f"{c_api.MAJOR_VERSION}.{c_api.MIN_MINOR_VERSION} or newer (same major version)"
            )
        self.fn = {}
        missing = []
        for name, args in c_api.FUNCTIONS:
            if args is None:
                continue
            offset = c_api.table_offset(name)
            pointer = 0
            if offset + ctypes.sizeof(ctypes.c_void_p) <= self.api_struct_size:
                pointer = ctypes.c_void_p.from_address(address + offset).value or 0
            if pointer:
                self.fn[name] = c_api.prototype(name, args)(pointer)
            elif name not in OPTIONAL:
                missing.append(name)
        if missing:
            raise PluginError(
                f"PJRT plugin {path!r} (API {major}.{minor}) lacks {', '.join('PJRT_' + m for m in missing)}"
            )
        if "Plugin_Initialize" in self.fn:
            self.call("Plugin_Initialize", c_api.new(c_api.Plugin_Initialize_Args))
        attrs = c_api.new(c_api.Plugin_Attributes_Args)
        self.call("Plugin_Attributes", attrs)
        self.attributes = named_values(attrs.attributes, attrs.num_attributes) if attrs.attributes else {}

    def __repr__(self):
        major, minor = self.api_version
        return f"<PJRT plugin {os.path.basename(self.path)} API {major}.{minor}>"

    def has(self, name: str) -> bool:
        return name in self.fn

    def address(self, name: str) -> int:
        """The C address of table entry `name` (0 where the plugin lacks it), for C callers."""
        fn = self.fn.get(name)
        return 0 if fn is None else ctypes.c_void_p.from_address(ctypes.addressof(fn)).value

    def call(self, name: str, args) -> None:
        """Calls table entry `name` with `args` (an args struct); a returned error becomes PjrtError."""
        error = self.fn[name](ctypes.byref(args))
        if error:
            raise consume(self.fn, error, "PJRT_" + name)

    def error(self, error: int, where: str) -> PjrtError:
        return consume(self.fn, error, where)

    def event_is_ready(self, event: int) -> bool:
        """Whether `event` (a PJRT_Event*, may be 0) has fired; destroys it."""
        if not event:
            return True
        count("events", 1)
        try:
            args = c_api.new(c_api.Event_IsReady_Args, event=event)
            self.call("Event_IsReady", args)
            return bool(args.is_ready)
        finally:
            error = self.fn["Event_Destroy"](ctypes.byref(c_api.new(c_api.Event_Destroy_Args, event=event)))
            count("events", -1)
            if error:
                raise consume(self.fn, error, "PJRT_Event_Destroy")

    def await_event(self, event: int, where: str) -> None:
        """Blocks until `event` (a PJRT_Event*, may be 0) fires, destroys it, and raises the
        PjrtError it carried, if any."""
        if not event:
            return
        count("events", 1)
        try:
            error = self.fn["Event_Await"](ctypes.byref(c_api.new(c_api.Event_Await_Args, event=event)))
        finally:
            destroy_error = self.fn["Event_Destroy"](
                ctypes.byref(c_api.new(c_api.Event_Destroy_Args, event=event))
            )
            count("events", -1)
        if destroy_error:
            destroy = consume(self.fn, destroy_error, "PJRT_Event_Destroy")
            if not error:
                raise destroy
        if error:
            raise consume(self.fn, error, where)
