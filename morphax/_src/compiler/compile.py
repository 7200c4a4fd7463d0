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
from morphax._src.core.memo import MISSING, memo_get, memo_put

logger = logging.getLogger("morphax")


class Counters:
    def __init__(self):
        self.lowerings = 0
        self.compiles = 0

    def reset(self):
        self.lowerings = 0
        self.compiles = 0


counters = Counters()
# Executables are memoized on the jaxpr they compile (core/memo.py), so they and the constants
# they hold live exactly as long as the traced program. Clearing bumps the generation: older
# entries stop matching and age out of their jaxpr's bounded memo.
_generation = 0


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
    key = ("compiled", _generation)
    hit = memo_get(closed, key)
    if hit is not MISSING:
        return hit
    counters.lowerings += 1
    optimized = _optimize(closed)
    counters.compiles += 1
    if config.log_compiles:
        logger.warning("Compiling %s for args %s", name, [a.str_short() for a in closed.in_avals])
    executable = reference.compile_closed_jaxpr(optimized, name, compile_call=compile_jaxpr)
    return memo_put(closed, key, executable)


def clear_cache():
    global _generation
    _generation += 1
