"""Global configuration flags (x64 mode, threefry mode, logging).

Sits below everything: any module may import it, it imports nothing from morphax.
Flags are read through attributes (``config.enable_x64``) so hot paths pay one lookup.
"""

from __future__ import annotations

import contextlib
import os


def _env_flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return raw.strip().lower() in ("1", "true", "yes", "on")


class Config:
    """Holds the flags; ``update`` is the JAX-compatible setter."""

    _known = {
        "jax_enable_x64": (
            "enable_x64",
            lambda: _env_flag("MORPHAX_ENABLE_X64", _env_flag("JAX_ENABLE_X64", False)),
        ),
        "jax_threefry_partitionable": ("threefry_partitionable", lambda: True),
        "jax_log_compiles": ("log_compiles", lambda: False),
        "jax_disable_jit": ("disable_jit", lambda: False),
        "jax_numpy_rank_promotion": ("numpy_rank_promotion", lambda: "allow"),
        "jax_default_matmul_precision": ("default_matmul_precision", lambda: None),
        "jax_debug_nans": ("debug_nans", lambda: False),
        "jax_debug_infs": ("debug_infs", lambda: False),
        "jax_traceback_filtering": ("traceback_filtering", lambda: "auto"),
    }

    def __init__(self):
        self._listeners = []
        for _, (attr, default) in self._known.items():
            object.__setattr__(self, attr, default())

    def update(self, name: str, value) -> None:
        try:
            attr, _ = self._known[name]
        except KeyError:
            raise AttributeError(
                f"config.update: unknown option {name!r}; known options are {sorted(self._known)}"
            ) from None
        object.__setattr__(self, attr, value)
        for listener in self._listeners:
            listener(name, value)

    def read(self, name: str):
        return getattr(self, self._known[name][0])

    def __getattr__(self, name):
        # JAX spells flags both ways: config.jax_enable_x64 and config.x64_enabled.
        if name in Config._known:
            return getattr(self, Config._known[name][0])
        if name == "x64_enabled":
            return self.enable_x64
        raise AttributeError(name)

    def trace_context(self) -> tuple:
        """The flags that change what tracing produces; part of every trace-cache key."""
        return (
            self.enable_x64,
            self.threefry_partitionable,
            self.numpy_rank_promotion,
            self.default_matmul_precision,
        )

    def add_listener(self, fn) -> None:
        """``fn(name, value)`` runs after each update (caches that depend on flags clear here)."""
        self._listeners.append(fn)

    @contextlib.contextmanager
    def _override(self, name, value):
        old = self.read(name)
        self.update(name, value)
        try:
            yield
        finally:
            self.update(name, old)


config = Config()


def enable_x64(new_val: bool = True):
    """Context manager that switches 64-bit mode on (or off) inside its block."""
    return config._override("jax_enable_x64", bool(new_val))
