"""Compile a closed jaxpr for a backend: optimization passes, lowering to the kernel IR with
fusion (compiler/fusion.py), the backend's build of each fused kernel, and the executor's
straight-line program around them. Counters (lowerings, compiles, kernels) are what tests assert.

Backends are chosen by name (compiler/backends): `jit(backend=...)`, else the configured default.
"""

from __future__ import annotations

import logging
import threading
import time

from morphax._src import events
from morphax._src.compiler import analysis, donation, executor, physicalize, scan_matmuls, segments

# The native backend is imported with morphax, not at the first jitted call (whose latency counts).
from morphax._src.compiler.backends import c as _c_backend  # noqa: F401
from morphax._src.compiler.backends import get_backend, resolve_name
from morphax._src.compiler.fusion import lower
from morphax._src.compiler.kernel_ir import Kernel, Segment
from morphax._src.config import config
from morphax._src.core import state_types
from morphax._src.core.jaxpr import ClosedJaxpr, any_eqn
from morphax._src.core.memo import MISSING, memo_get, memo_put
from morphax._src.core.primitive import Kind
from morphax._src.higher_order import host_eval, state_discharge
from morphax._src.passes import inline, pipeline  # at import: the first jitted call's latency counts

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
    # Typed PRNG keys become their uint32 words and the random_* equations Threefry code.
    closed = physicalize.physicalize(closed)
    if state_types.state_used[0] and state_discharge.has_state(closed):
        # Refs created inside the program become functional code (higher_order/state_discharge.py);
        # callers pass ref values, never refs, so the program's signature is unchanged.
        closed = state_discharge.discharge_state(closed)
    # Nested calls first: their bodies then fuse, and share segments, with the code around them.
    out = pipeline.optimize(inline.inline_calls(closed))
    out = out[0] if isinstance(out, tuple) else out
    # Matmuls leave their scans (one large GEMM instead of one per step); the passes clean up.
    hoisted = scan_matmuls.hoist_scan_matmuls(out)
    if hoisted is not out:
        out = pipeline.optimize(hoisted)
        out = out[0] if isinstance(out, tuple) else out
    return out


def compile_jaxpr(
    closed: ClosedJaxpr, name: str = "jitted", backend: str | None = None, donate: tuple = (), optimized=None
):
    """The executable for `closed` on `backend` (default: the configured one), compiled once per
    jaxpr object, backend and set of donated input positions (whose buffers its kernels may
    write their outputs into: compiler/donation.py). `optimized`: `closed` already through the
    passes (the interim program of a background build is part of that compilation)."""
    if donate:
        donate = tuple(sorted(set(donate)))
    backend = resolve_name(backend)
    # The hot path of every jitted call: one memo lookup on the jaxpr.
    key = ("compiled", backend, _generation, donate)
    hit = memo_get(closed, key)
    if hit is not MISSING:
        return hit
    chosen = get_backend(backend)  # `backend` is its name: validated here, on a miss
    with events.span(f"compile {name}", "compile", {"backend": chosen.name}):
        return _compile_miss(closed, name, chosen, donate, key, optimized)


def compile_replicated(closed: ClosedJaxpr, name: str, backend: str | None, axis_env: tuple, blocks=None):
    """The per-device program of a pmap over the named axes `axis_env` ((name, size), ...),
    compiled by `backend` into one program run on all the devices at once with its collectives
    inside (the xla backend: a module of several replicas); None where the backend cannot (no
    such compiler, a collective or callback it must run on the host, too few devices). Then the
    caller runs `compile_jaxpr`'s program on each device, collectives through the host.
    `blocks`: the pmap's (in_axes, out_axes), for a program that can also keep its results on
    the devices as blocks of the mapped arrays (ReplicatedProgram.device_run)."""
    backend = resolve_name(backend)
    chosen = get_backend(backend)
    replicated = getattr(chosen, "compile_replicated", None)
    if replicated is None:
        return None
    key = ("replicated", backend, _generation, tuple(axis_env), blocks)
    hit = memo_get(closed, key)
    if hit is not MISSING:
        return hit
    counters.compiles += 1
    with events.span(f"compile {name}", "compile", {"backend": chosen.name, "replicas": len(axis_env)}):
        program = replicated(_optimize(closed), name, tuple(axis_env), blocks)
    return memo_put(closed, key, program)


# Compilations nested in another (the interim NumPy program of a background build, loop and
# branch bodies) are part of it: only the outermost one is logged.
_nesting = threading.local()


def _compile_miss(closed, name, chosen, donate, key, optimized=None):
    # As JAX: a line before and one after each compilation, at WARNING under log_compiles and at
    # DEBUG otherwise (optax's tests count the "Finished ... compilation" lines).
    depth = getattr(_nesting, "depth", 0)
    level = logging.WARNING if config.log_compiles else logging.DEBUG
    loud = depth == 0 and logger.isEnabledFor(level)
    if loud:
        logger.log(level, "Compiling %s for args %s", name, [a.str_short() for a in closed.in_avals])
    started = time.perf_counter()
    _nesting.depth = depth + 1
    try:
        executable = _build(closed, name, chosen, donate, key, optimized)
    finally:
        _nesting.depth = depth
    if loud:
        elapsed = time.perf_counter() - started
        logger.log(
            level, "Finished %s backend compilation of jit(%s) in %.9f sec", chosen.name, name, elapsed
        )
    return executable


def _build(closed, name, chosen, donate, key, optimized=None):
    counters.lowerings += 1
    aliases = {}
    if donate:
        aliases, unusable = donation.output_aliases(closed.in_avals, closed.out_avals, donate)
        donation.warn_unusable(closed.in_avals, unusable)
    if optimized is None:
        with events.span("jaxpr passes", "compile"):
            optimized = _optimize(closed)
    counters.compiles += 1
    whole = getattr(chosen, "compile_whole", None)
    if whole is not None:  # the xla backend: one module for the whole program, XLA fuses
        with events.span(f"{chosen.name} backend build", "compile"):
            executable = whole(optimized, name)
        if executable.device_run is not None:
            # On a device, as in JAX: donated arrays are consumed (deleted) by the call.
            executable.donated = tuple(donate)
        _set_cost(executable, optimized, *analysis.describe_whole(optimized))
        return memo_put(closed, key, executable)
    with events.span("lower and fuse", "compile"):
        program = lower(optimized, chosen.caps, name=executor.identifier(name))
        # Positions index the optimized jaxpr's inputs: the passes keep every input (DCE drops none).
        reuse = donation.plan(program, donate, aliases) if donate else {}
    with events.span("cost analysis", "compile"):
        cost, memory = analysis.describe(program, reuse)
    native_scratch = getattr(chosen.caps, "native_scratch", None)
    if native_scratch is not None:
        lower_body = _body_lowering(chosen.caps, native_scratch)
        with events.span("native segments", "compile"):
            program, reuse = segments.group(
                program, native_scratch, reuse, executor.identifier(name), lower_body
            )
    opaque = getattr(chosen, "opaque", None)

    def compile_call(inner, inner_name):
        return compile_jaxpr(inner, inner_name, chosen.name)

    executable = None
    swap = threading.Lock()  # held until `executable` exists: a background build may finish first

    def on_ready(native_fns):
        # Called from the build thread: the same program with the native kernels replaces the
        # interim one in a single assignment, so each call runs one or the other, never a mix.
        native = executor.compile_program(
            program, name, native_fns, compile_call, chosen.name, (), opaque, reuse
        )
        with swap:
            executable.fn = native.fn
            executable.direct = native.direct

    background = on_ready if config.morphax_compile_in_background else None
    with swap:
        with events.span(f"{chosen.name} backend build", "compile", {"kernels": len(program.kernels)}):
            kernel_fns, sources = chosen.build(program, on_ready=background)
        counters.kernels += len(program.kernels)
        if kernel_fns is None:
            # Built in the background: run on the numpy backend (one NumPy call per equation)
            # until the native kernels arrive.
            # One compilation: the passes (and the Python lowerings they trace) run once.
            interim = compile_jaxpr(closed, name, "numpy", optimized=optimized)
            placeholders = {id(s): None for s in program.steps if isinstance(s, (Kernel, Segment))}
            executable = executor.compile_program(
                program, name, placeholders, compile_call, chosen.name, sources, opaque, reuse
            )
            executable.fn = _interim(interim.fn, chosen.name)
        else:
            executable = executor.compile_program(
                program, name, kernel_fns, compile_call, chosen.name, sources, opaque, reuse
            )
    if aliases:
        # Outputs land in their donated buffers after the run where no kernel wrote them there.
        executable.output_aliases = aliases
        executable.donated = tuple(sorted({*executable.donated, *aliases}))
    _set_cost(executable, optimized, cost, memory)
    return memo_put(closed, key, executable)


def _set_cost(executable, optimized, cost, memory):
    executable.cost, executable.memory = cost, memory
    # Loop bodies count once in the cost (as XLA counts them): with loops the work is unknown.
    if not any_eqn(optimized, lambda e: e.primitive.kind is Kind.LOOP):
        executable.work = sum(cost.values())


def _body_lowering(caps, native_scratch):
    """`(closed, name) -> Program`: a loop or branch body optimized, lowered and grouped into
    segments like a program (its own loops included), for native loops (compiler/segments.py)."""

    def lower_body(closed: ClosedJaxpr, name: str):
        program = lower(_optimize(closed), caps, name=name)
        return segments.group(program, native_scratch, {}, name, lower_body)[0]

    return lower_body


def _body_executable(closed: ClosedJaxpr):
    """A loop or branch body (higher_order/host_eval.py): compiled once per jaxpr for the
    backend of the program it runs in, and run on the calling thread."""
    depth = getattr(_nesting, "depth", 0)
    _nesting.depth = depth + 1
    try:
        return compile_jaxpr(closed, "body", executor.body_backend.name)
    finally:
        _nesting.depth = depth


class _Interim(threading.local):
    """The native backend whose build the interim program running on this thread waits for."""

    native = None


_interim_of = _Interim()


def _interim(fn, native: str):
    """The interim NumPy program's function, noting while it runs that `native` is being built
    (for `_native_runner`)."""

    def run(*args, **kwargs):
        saved = _interim_of.native
        _interim_of.native = native
        try:
            return fn(*args, **kwargs)
        finally:
            _interim_of.native = saved

    run.__wrapped__ = fn
    run._morphax_backend = fn._morphax_backend  # the backend `profiled` names; timed as one step
    run._morphax_interim = True
    return run


def _native_runner():
    """While an interim program runs its loops on NumPy: `prepare(closed)` compiling `closed`
    (one loop equation) for the native backend being built, waiting for the build, or None
    where that build failed. Else None."""
    native = _interim_of.native
    if native is None or executor.body_backend.name != "numpy":
        return None

    def prepare(closed):
        executable = compile_jaxpr(closed, "loop", native)
        _c_backend.background.wait()
        if getattr(executable.fn, "_morphax_interim", False):
            return None  # the build failed: the loop stays on NumPy
        return executable

    return prepare


host_eval.set_runner(_body_executable, _native_runner)


def clear_cache():
    global _generation
    _generation += 1
    from morphax._src.compiler.backends.c import generic
    from morphax._src.compiler.backends.c.build import clear_disk_cache  # memory and disk (issue 13)

    clear_disk_cache()
    generic.REGISTRY.clear()  # its generic libraries were among those forgotten
