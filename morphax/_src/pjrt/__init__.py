"""PJRT in pure Python (ctypes): load a plugin (`xla/pjrt/c/pjrt_c_api.h`), make a client, move
NumPy arrays to its devices and back, compile StableHLO and run it. Sits beside `core/`, below the
compiler and the runtime, and imports nothing else of morphax (DESIGN.md section 5)."""

from .buffer import Buffer
from .client import Client, Device, get_client
from .errors import PjrtError
from .executable import Executable, compile_options, main_signature
from .plugin import Plugin, PluginError, find_plugin, live_objects, load

__all__ = [
    "Buffer",
    "Client",
    "Device",
    "Executable",
    "PjrtError",
    "Plugin",
    "PluginError",
    "compile_options",
    "find_plugin",
    "get_client",
    "live_objects",
    "load",
    "main_signature",
]
