"""Compile a closed jaxpr for a backend: optimization passes, then code generation, with an
in-memory cache and counters (lowerings, compiles) that tests assert on.

The backend interface is one function, `backend.compile(closed, name, compile_call) -> Executable`;
the reference (NumPy) backend is the default and the fused C backend slots in here later.
"""

from __future__ import annotations

import logging

from morphax._src.compiler import reference
from morphax._src.config import config
from morphax._src.core.jaxpr import ClosedJaxpr

logger = logging.getLogger("morphax")


class Counters:
    def __init__(self):
        self.lowerings = 0
        self.compiles = 0

    def reset(self):
        self.lowerings = 0
        self.compiles = 0


counters = Counters()
_cache: dict[int, tuple] = {}
_CACHE_LIMIT = 4096


def _optimize(closed: ClosedJaxpr) -> ClosedJaxpr:
    try:
        from morphax._src.passes import pipeline
    except ImportError:  # passes not available: compile the jaxpr as traced
        return closed
    optimize = getattr(pipeline, "optimize", None)
    if optimize is None:
        return closed
    out = optimize(closed)
    return out[0] if isinstance(out, tuple) else out


def compile_jaxpr(closed: ClosedJaxpr, name: str = "jitted"):
    """The executable for `closed`, compiled once per jaxpr object."""
    hit = _cache.get(id(closed))
    if hit is not None and hit[0] is closed:
        return hit[1]
    counters.lowerings += 1
    optimized = _optimize(closed)
    counters.compiles += 1
    if config.log_compiles:
        logger.warning("Compiling %s for args %s", name, [a.str_short() for a in closed.in_avals])
    executable = reference.compile_closed_jaxpr(optimized, name, compile_call=compile_jaxpr)
    executable.unoptimized = closed
    if len(_cache) > _CACHE_LIMIT:
        _cache.clear()
    _cache[id(closed)] = (closed, executable)
    return executable


def clear_cache():
    _cache.clear()
