"""`morphax.experimental.compilation_cache.compilation_cache` (JAX's module): where compiled
programs are kept across processes. morphax's disk cache holds the C backend's libraries and the
executables a PJRT plugin compiled (XLA, a TPU); it is on by default, under MORPHAX_CACHE_DIR or
~/.cache/morphax, and `set_cache_dir` moves it (config's `jax_compilation_cache_dir`)."""

from __future__ import annotations

import os

from morphax._src.config import config


def set_cache_dir(path) -> None:
    """Keep compiled programs under `path` from now on, and look for them there before compiling.
    Programs already compiled in this process stay in its memory. The cache is trusted: whoever
    can write the directory can make this process run code."""
    config.update("jax_compilation_cache_dir", None if path is None else os.fspath(path))


def reset_cache() -> None:
    """Forget the resolved cache directory: the next compile looks it up again (config, then
    MORPHAX_CACHE_DIR, then the default)."""
    from morphax._src.compiler.backends.c import disk_cache

    disk_cache.reset()


__all__ = ["reset_cache", "set_cache_dir"]
