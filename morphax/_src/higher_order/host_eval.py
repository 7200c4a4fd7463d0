"""The host side of control flow. Loop and branch primitives declare a *host rule*: their
semantics as a Python loop or branch over NumPy values (`host_rules[prim](np_args, **params)`).
Their bodies are closed jaxprs, and they run through the one executor of compiled programs
(compiler/executor.py): the compiler registers its runner here (`set_runner`) when it is
imported, because control flow sits below the compiler in the import order. A loop body is
therefore fused and compiled like any jitted program, on the backend of the program the loop is
in (`jit(backend=...)`), or the default backend for eager loops.

Nothing here dispatches to a device stream: a loop inside a compiled program runs on the stream's
worker thread, and queueing work there and waiting for it would never finish. Compiled bodies run
synchronously on the calling thread.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core.avals import ShapedArray
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var, sub_jaxprs
from morphax._src.core.memo import memoized
from morphax._src.core.values import make_array

__all__ = [
    "body_runner",
    "host_rules",
    "native_runner",
    "one_equation",
    "run_as_program",
    "run_closed_jaxpr",
    "set_runner",
]

# Higher-order primitives that run on host values register
# ``fn(np_args, **params) -> list of np arrays`` here (scan, while_loop, cond).
host_rules: dict = {}

_runner: list = []
_native: list = []


def set_runner(prepare, native=None) -> None:
    """Install `prepare(closed) -> fn`, the executor's entry point: `fn(*np_args)` runs `closed`
    and returns its outputs as NumPy arrays; and `native() -> prepare or None`, which answers a
    `prepare` compiling for the native backend while the running program is the interim NumPy
    one of a background build (compile.py), so a long loop can finish natively."""
    _runner[:] = [prepare]
    _native[:] = [native] if native is not None else []


def native_runner():
    """`prepare(closed) -> fn` for the native backend whose build the running program waits for,
    or None (no such build, or the program is already native)."""
    return _native[0]() if _native else None


def body_runner(closed: ClosedJaxpr):
    """A callable running `closed` on NumPy arrays (of its input types): loops fetch it once and
    call it every iteration."""
    if not _runner:  # pragma: no cover - `import morphax` imports the compiler
        raise RuntimeError("morphax: control flow ran before the compiler registered its executor")
    return _runner[0](closed)


def run_closed_jaxpr(closed: ClosedJaxpr, args) -> list:
    """Evaluate `closed` on NumPy arrays (of its input types); returns NumPy arrays."""
    return body_runner(closed)(*args)


def run_as_program(prim, args, in_avals, out_avals, params) -> list:
    """A loop primitive's eager impl: the equation compiled as a program of its own (so the loop
    runs as native code where the backend can, and through its host rule otherwise), run on
    NumPy values of `in_avals`' dtypes; the results are Arrays of `out_avals`' types."""
    vals = [np.asarray(x, dtype=a.dtype) for x, a in zip(args, in_avals)]
    closed = one_equation(prim, [ShapedArray(v.shape, v.dtype) for v in vals], out_avals, params)
    with np.errstate(all="ignore"):  # float edge cases are not errors (JAX is silent)
        outs = body_runner(closed)(*vals)
    return [make_array(o, dtype=a.dtype, weak_type=a.weak_type) for o, a in zip(outs, out_avals)]


def one_equation(prim, in_avals, out_avals, params) -> ClosedJaxpr:
    """`prim` applied to inputs of `in_avals`, as a closed jaxpr, memoized on the equation's first
    sub-jaxpr (the entry holds them all, so the ids in the key stay unique while it lives)."""
    subs = sub_jaxprs(params)
    key = (
        "eager program",
        prim.name,
        tuple((a.shape, a.dtype) for a in in_avals),
        tuple((a.shape, a.dtype, a.weak_type) for a in out_avals),
        tuple(id(j) for j in subs),
        tuple((k, v) for k, v in sorted(params.items()) if not _holds_jaxpr(v)),
    )

    def build() -> ClosedJaxpr:
        invars = [Var(a) for a in in_avals]
        outvars = [Var(a) for a in out_avals]
        return ClosedJaxpr(Jaxpr([], invars, outvars, [JaxprEqn(prim, invars, outvars, params)]), [])

    return memoized(subs[0], key, build)


def _holds_jaxpr(value) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_holds_jaxpr(v) for v in value)
    return isinstance(value, (ClosedJaxpr, Jaxpr))
