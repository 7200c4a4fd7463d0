"""morphax's implementation (see /DESIGN.md for its layers).

Modules named after JAX's internal ones (`dispatch`, `dtypes`, `xla_bridge`, ...) hold what
libraries written for JAX reach for in `jax._src` under `morphax.compat`; as in JAX, they are
reachable as attributes (`jax._src.xla_bridge`) once `jax` is imported.
"""

_JAX_INTERNAL_NAMES = frozenset({"dispatch", "dtypes", "state", "tree_util", "xla_bridge"})


def __getattr__(name):
    if name in _JAX_INTERNAL_NAMES:
        import importlib  # noqa: PLC0415

        return importlib.import_module(f"morphax._src.{name}")
    raise AttributeError(f"module 'morphax._src' has no attribute {name!r}")
