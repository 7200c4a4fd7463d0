"""`morphax.extend.backend` (`jax.extend.backend`): the backends computations run on.

morphax has one platform, "cpu"; `get_backend()` describes it (its devices, platform and
version) as JAX's backend clients do.
"""

from morphax._src.extend.backends import (
    Backend,
    backend_xla_version,
    backends,
    clear_backends,
    clear_in_memory_compilation_cache,
    get_backend,
    get_default_device,
    register_backend_factory,
)

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
