"""The backends computations run on, as `jax.extend.backend` describes them (re-exported by
`morphax.extend.backend`).

morphax has one platform, "cpu"; `get_backend()` describes it (its devices, platform and
version) as JAX's backend clients do.
"""

from __future__ import annotations

from morphax._src.api.jit import clear_caches as _clear_caches
from morphax._src.runtime import devices as _devices
from morphax._src.version import __version__ as _version


class Backend:
    """A backend client: the devices of one platform."""

    platform = "cpu"
    platform_version = f"morphax {_version}"
    runtime_type = "morphax"

    def devices(self):
        return _devices.devices()

    def local_devices(self):
        return _devices.local_devices()

    def device_count(self) -> int:
        return _devices.device_count()

    def local_device_count(self) -> int:
        return _devices.local_device_count()

    def process_index(self) -> int:
        return _devices.process_index()

    def __repr__(self):
        return f"<morphax backend {self.platform!r}: {self.device_count()} devices>"


_BACKEND = Backend()


def _check_platform(where: str, platform) -> None:
    if platform is not None and getattr(platform, "platform", platform) != "cpu":
        raise RuntimeError(f"{where}: unknown backend {platform!r}; morphax runs on the 'cpu' platform only.")


def get_backend(platform=None) -> Backend:
    _check_platform("get_backend", platform)
    return _BACKEND


def backends() -> dict:
    """Every initialised backend by platform name."""
    return {"cpu": _BACKEND}


def get_default_device():
    return _devices.default_device()


def backend_xla_version(platform=None):
    """None: morphax does not use XLA."""
    _check_platform("backend_xla_version", platform)
    return None


def clear_backends() -> None:
    """Drop compiled programs (morphax's backends hold no other state)."""
    _clear_caches()


def clear_in_memory_compilation_cache() -> None:
    _clear_caches()


def register_backend_factory(name, factory, *, priority=0, fail_quietly=True, experimental=False):
    """NB: morphax has no pluggable backends; registering one is refused unless it may fail quietly."""
    if not fail_quietly:
        raise NotImplementedError(f"register_backend_factory({name!r}): morphax has no pluggable backends")


__all__ = [
    "Backend",
    "backend_xla_version",
    "backends",
    "clear_backends",
    "clear_in_memory_compilation_cache",
    "get_backend",
    "get_default_device",
    "register_backend_factory",
]
