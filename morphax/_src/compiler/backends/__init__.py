"""The backend contract, and choosing a backend by name.

A backend is one folder here exposing `BACKEND`, an object with:
  name: str
  caps: what it fuses -- `supports(eqn) -> bool` for ELEMENTWISE and REDUCE equations and
        `fuses_view(eqn) -> bool` for LAYOUT ones (loads through their index maps, no copy)
  build(program, on_ready=None) -> ({id(kernel): callable}, [source per kernel]): render and
        compile every fused kernel of a Program (with whatever caching it does); a kernel callable
        takes the input arrays in slot order and returns the outputs in store order. A backend
        may build in the background when given `on_ready`: it returns None for the callables
        (the program runs on the numpy backend meanwhile) and calls
        `on_ready({id(kernel): callable})` once they are built
  available() -> bool: whether it can run on this machine (probed once, cached)
  opaque(eqn) -> callable | None (optional): its own implementation of an equation left out of
        the kernels (arrays in, list of arrays out), else the primitive's NumPy reference runs
The executor (compiler/executor.py) runs the Program's steps: kernels through those callables,
opaque equations through their primitive's NumPy reference. Allocation and host transfer are
NumPy's on every CPU backend: buffers are NumPy arrays.

`morphax_backend` (config) or MORPHAX_BACKEND picks the default: "c" where a C compiler works,
else "numpy" (with one logged message); `jit(backend=...)` picks per function.
"""

from __future__ import annotations

import importlib
import logging

from morphax._src.compiler.backends import platform
from morphax._src.config import config

logger = logging.getLogger("morphax")

NAMES = ("c", "numpy", "xla")
_loaded: dict = {}
_default: list = []


def get_backend(name: str):
    """The backend called `name` ("c", "numpy" or "xla"); "cpu" means the default CPU backend."""
    name = resolve_name(name)
    backend = _loaded.get(name)
    if backend is None:
        if name not in NAMES:
            raise ValueError(f"Unknown morphax backend {name!r}; choose one of {', '.join(NAMES)}.")
        backend = _loaded[name] = importlib.import_module(f"{__name__}.{name}").BACKEND
    return backend


def resolve_name(name):
    """The backend a jit's `backend=` names: None the default, "cpu" the host's, a device
    platform's name ("tpu") the xla backend on it."""
    if name is None:
        return default_backend_name()
    if name == "cpu":
        return host_backend_name()
    if name in platform.DEVICE_PLATFORMS:
        if default_backend_name() != "xla" or _platform[0] != name:
            raise RuntimeError(f"Unknown backend {name}: this process runs on the {_platform[0]} platform")
        return "xla"
    return name


def default_backend_name() -> str:
    """The configured backend; "c" falls back to "numpy" (logged once) where no C compiler works.
    On a device platform (a TPU: backends/platform.py) every program is an xla one."""
    if _platform[0] is None:
        _platform[0] = platform.chosen()
    if _platform[0] != "cpu":
        return "xla"
    return host_backend_name()


# [the platform] once decided (backends/platform.py): read on every compile.
_platform: list = [None]


def host_backend_name() -> str:
    """The backend of programs on the host CPU: the configured one, "c" falling back to "numpy"."""
    wanted = config.morphax_backend or "c"
    if wanted != "c":
        return wanted
    if not _default:
        ok = get_backend("c").available()
        if not ok:
            logger.warning(
                "morphax: no working C compiler found (%s); jit runs on the NumPy backend.",
                get_backend("c").unavailable_reason(),
            )
        _default.append("c" if ok else "numpy")
    return _default[0]
