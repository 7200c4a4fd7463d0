"""What libraries read from JAX's internal `jax._src.xla_bridge` (the module `morphax.compat` maps
that name to): `_backends`, the backends initialised so far by platform (empty until the first
computation or device query, after which the CPU device count can no longer change; chex's
`set_n_cpu_devices` checks it), and `backends()` / `get_backend()`."""

from __future__ import annotations

from morphax._src.extend import backends as _backends_module
from morphax._src.runtime import devices as _devices


def backends() -> dict:
    """The backends by platform, initialising them (as a device query does)."""
    _devices.devices()
    return _backends_module.backends()


def get_backend(platform=None):
    return _backends_module.get_backend(platform)


def __getattr__(name):
    if name == "_backends":  # computed on each read: empty until the devices exist
        return backends() if _devices.initialized() else {}
    raise AttributeError(f"module 'morphax._src.xla_bridge' has no attribute {name!r}")
