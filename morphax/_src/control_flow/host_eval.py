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

from morphax._src.core.jaxpr import ClosedJaxpr
from morphax._src.core.values import make_array

__all__ = [
    "body_runner",
    "host_rules",
    "native_while",
    "run_closed_jaxpr",
    "run_host_rule",
    "set_native_while",
    "set_runner",
]

# Higher-order primitives that run on host values register
# ``fn(np_args, **params) -> list of np arrays`` here (scan, while_loop, cond).
host_rules: dict = {}

_runner: list = []
_native_while: list = []


def set_native_while(make) -> None:
    """Install `make(step, n_consts, n_carry) -> run | None`: the compiler's native form of a
    while loop whose step (`body_runner` of the loop's step jaxpr) allows one."""
    _native_while[:] = [make]


def native_while(step, n_consts: int, n_carry: int):
    """`run(consts + carry) -> final carry` running the whole loop natively, or None."""
    return _native_while[0](step, n_consts, n_carry) if _native_while else None


def set_runner(prepare) -> None:
    """Install `prepare(closed) -> fn`, the executor's entry point: `fn(*np_args)` runs `closed`
    and returns its outputs as NumPy arrays."""
    _runner[:] = [prepare]


def body_runner(closed: ClosedJaxpr):
    """A callable running `closed` on NumPy arrays (of its input types): loops fetch it once and
    call it every iteration."""
    if not _runner:  # pragma: no cover - `import morphax` imports the compiler
        raise RuntimeError("morphax: control flow ran before the compiler registered its executor")
    return _runner[0](closed)


def run_closed_jaxpr(closed: ClosedJaxpr, args) -> list:
    """Evaluate `closed` on NumPy arrays (of its input types); returns NumPy arrays."""
    return body_runner(closed)(*args)


def run_host_rule(rule, args, in_avals, out_avals, params) -> list:
    """A loop primitive's eager impl: its host rule on NumPy values of `in_avals`' dtypes, the
    results returned as Arrays of `out_avals`' types."""
    vals = [np.asarray(x, dtype=a.dtype) for x, a in zip(args, in_avals)]
    with np.errstate(all="ignore"):  # float edge cases are not errors (JAX is silent)
        outs = rule(vals, **params)
    return [make_array(o, dtype=a.dtype, weak_type=a.weak_type) for o, a in zip(outs, out_avals)]
