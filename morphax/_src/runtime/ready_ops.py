"""Eager operators on ready Arrays without the primitive's dispatch: `x + y` and `jnp.sin(x)` on
computed NumPy values, unplaced, with nothing tracing or watching operations
(eager.READY_SHORTCUT), run the primitive's NumPy function (`Primitive.ready_impl`) inline and
wrap its result, which is what the eager trace's own fast path computes for them, in a few
hundred nanoseconds instead of microseconds. Everything else (tracers, device or pending
buffers, other dtypes or ranks, NumPy warnings raised as errors, NumPy scalars from 0-d
operands) goes to the operator's general path, `fallback`.
"""

from __future__ import annotations

import threading

import numpy as np

from morphax._src.compiler.backends import platform as _platform
from morphax._src.core import trace as _trace
from morphax._src.runtime.array import Array
from morphax._src.runtime.eager import READY_SHORTCUT

_ndarray = np.ndarray
_new_array = object.__new__
_ctx = _trace.ctx
_base_trace = _trace._base_trace_holder  # [the base trace]: current when nothing is tracing

__all__ = ["accelerate", "binary", "unary"]

# Every shortcut made: id(python op) -> (python op, ready, kinds, fallback, arity), for
# `accelerate` to put its C form in the op's place.
_made: dict = {}
_accelerated: list = []  # [bool] once accelerate() has run
_accelerate_lock = threading.Lock()


def binary(ready, kinds: str, fallback):
    """`fallback(self, other)` (a binary operator of Array), with the shortcut in front for two
    ready Arrays of one dtype of a kind in `kinds`, one rank and one weak type. With one dtype
    and rank NumPy's broadcasting is jnp's (no rank promotion for jax_numpy_rank_promotion to
    refuse), and shapes it cannot broadcast raise ValueError: the general path's error then."""

    def op(self, other):
        if (
            type(other) is Array
            and type(self) is Array
            and READY_SHORTCUT[0]
            and _ctx.trace is _base_trace[0]
        ):
            ba, bb = self._buf, other._buf
            if (
                type(ba) is _ndarray
                and type(bb) is _ndarray
                and ba.dtype is bb.dtype
                and ba.ndim == bb.ndim
                and self.weak_type == other.weak_type
                and self._place is None
                and other._place is None
                and ba.dtype.kind in kinds
            ):
                try:
                    out = ready(ba, bb)
                except (RuntimeWarning, FloatingPointError, ValueError):
                    return fallback(self, other)  # warnings as errors, or unbroadcastable
                if type(out) is _ndarray and out.dtype is ba.dtype:
                    # Array(out, weak) without the __init__ frame: this is the hot path.
                    result = _new_array(Array)
                    result._buf = out
                    result.weak_type = self.weak_type
                    result._place = None
                    return result
        return fallback(self, other)

    _made[id(op)] = (op, ready, kinds, fallback, 2)
    return op


def unary(ready, kinds: str, fallback):
    """`fallback(x)` (a jnp function of one array) with the shortcut in front for a ready Array
    of a dtype of a kind in `kinds`; it keeps fallback's name and docstring."""

    def fn(x, /):
        if type(x) is Array and READY_SHORTCUT[0] and _ctx.trace is _base_trace[0]:
            b = x._buf
            if type(b) is _ndarray and x._place is None and b.dtype.kind in kinds:
                try:
                    out = ready(b)
                except (RuntimeWarning, FloatingPointError):
                    return fallback(x)  # warnings as errors
                if type(out) is _ndarray and out.dtype is b.dtype:
                    result = _new_array(Array)
                    result._buf = out
                    result.weak_type = x.weak_type
                    result._place = None
                    return result
        return fallback(x)

    fn.__name__ = fallback.__name__
    fn.__qualname__ = fallback.__qualname__
    fn.__module__ = fallback.__module__
    fn.__doc__ = fallback.__doc__
    fn.__wrapped__ = fallback
    _made[id(fn)] = (fn, ready, kinds, fallback, 1)
    return fn


def accelerate() -> bool:
    """Put the C form of every shortcut (runtime/ready_ext.py) where its Python form is: Array's
    operators and the jnp functions in morphax's loaded modules. Builds the extension the first
    time on a machine. False where it cannot be built (the Python shortcuts stay)."""
    from morphax._src.runtime import ready_ext
    from morphax._src.runtime.eager import READY_SHORTCUT as switch

    with _accelerate_lock:
        if not _accelerated:
            _accelerated.append(_install(ready_ext, switch))
    return _accelerated[0]


def _install(ready_ext, switch) -> bool:
    import sys

    module = ready_ext.build()
    if module is None:
        return False
    slots = [Array.__dict__[name] for name in ("_buf", "weak_type", "_place")]
    module.configure(Array, switch, _ctx, _base_trace, *slots)
    fast = {}
    for key, (py, ready, kinds, fallback, arity) in list(_made.items()):
        name = getattr(py, "__name__", "op")
        fast[key] = module.ReadyOp(
            ready, fallback, kinds, arity, name, getattr(py, "__qualname__", name),
            getattr(py, "__module__", None), getattr(py, "__doc__", None),
        )  # fmt: skip
    # Where the shortcuts live: Array's operators, and the jnp functions in the numpy modules.
    owners = [Array] + [
        m
        for n, m in list(sys.modules.items())
        if m is not None and (n.startswith("morphax.numpy") or n.startswith("morphax._src.numpy"))
    ]
    for owner in owners:
        for attr, value in list(vars(owner).items()):
            made = _made.get(id(value))
            if made is not None and made[0] is value:
                setattr(owner, attr, fast[id(value)])
    return True


def _on_platform(name: str) -> None:
    """Once the CPU is the platform (the shortcuts' only home), install their C form: in a
    background thread where programs build in the background (the first build on a machine runs
    the C compiler), else now."""
    if name != "cpu" or _accelerated:
        return
    from morphax._src.config import config

    if config.morphax_compile_in_background:
        threading.Thread(target=accelerate, name="morphax-ready-ops", daemon=True).start()
    else:
        accelerate()


_platform.on_chosen(_on_platform)
