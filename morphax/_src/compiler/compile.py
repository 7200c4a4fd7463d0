"""Compile a closed jaxpr for a backend: optimization passes, lowering to the kernel IR with
fusion (compiler/fusion.py), the backend's build of each fused kernel, and the executor's
straight-line program around them. Counters (lowerings, compiles, kernels) are what tests assert.

Backends are chosen by name (compiler/backends): `jit(backend=...)`, else the configured default.
"""

from __future__ import annotations

import logging

from morphax._src.compiler import executor

# The native backend is imported with morphax, not at the first jitted call (whose latency counts).
from morphax._src.compiler.backends import c as _c_backend  # noqa: F401
from morphax._src.compiler.backends import get_backend
from morphax._src.compiler.fusion import lower
from morphax._src.config import config
from morphax._src.core.jaxpr import ClosedJaxpr
from morphax._src.core.memo import MISSING, memo_get, memo_put

logger = logging.getLogger("morphax")


class Counters:
    """Lowerings and compiles of jaxprs, and fused kernels in the programs compiled."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.lowerings = 0
        self.compiles = 0
        self.kernels = 0


counters = Counters()
# Executables are memoized on the jaxpr they compile (core/memo.py), so they and the constants
# they hold live exactly as long as the traced program. Clearing bumps the generation: older
# entries stop matching and age out of their jaxpr's bounded memo.
_generation = 0


def _optimize(closed: ClosedJaxpr) -> ClosedJaxpr:
    from morphax._src.passes import pipeline

    out = pipeline.optimize(closed)
    return out[0] if isinstance(out, tuple) else out


def compile_jaxpr(closed: ClosedJaxpr, name: str = "jitted", backend: str | None = None):
    """The executable for `closed` on `backend` (default: the configured one), compiled once per
    jaxpr object and backend."""
    chosen = get_backend(backend)
    key = ("compiled", chosen.name, _generation)
    hit = memo_get(closed, key)
    if hit is not MISSING:
        return hit
    counters.lowerings += 1
    optimized = _optimize(closed)
    counters.compiles += 1
    if config.log_compiles:
        logger.warning("Compiling %s for args %s", name, [a.str_short() for a in closed.in_avals])
    program = lower(optimized, chosen.caps, name=executor.identifier(name))
    kernel_fns, sources = chosen.build(program)
    counters.kernels += len(program.kernels)

    def compile_call(inner, inner_name):
        return compile_jaxpr(inner, inner_name, chosen.name)

    executable = executor.compile_program(
        program, name, kernel_fns, compile_call, chosen.name, sources, getattr(chosen, "opaque", None)
    )
    return memo_put(closed, key, executable)


def clear_cache():
    global _generation
    _generation += 1
    from morphax._src.compiler.backends.c.build import clear_disk_cache  # memory and disk (issue 13)

    clear_disk_cache()
