"""Traces and tracers: the current-trace context every `Primitive.bind` dispatches through.

One current trace per thread; each trace keeps its parent, and a tracer keeps the trace that owns
it, so values of outer transformations are plain constants to inner ones. The eager trace is
installed by the runtime (this module must not import it).
"""

from __future__ import annotations

import contextlib
import threading

from morphax._src import errors
from morphax._src.core.avals import ShapedArray, pytype_aval_mappings
from morphax._src.core.state_types import AbstractRef


class Trace:
    """A way of interpreting primitives. Subclasses implement `process_primitive`."""

    parent: Trace | None = None
    level = 0
    invalid = False

    def process_primitive(self, primitive, args, params):
        raise NotImplementedError

    def invalidate(self):
        self.invalid = True

    # JAX's names for a trace's identity (libraries compare `tracer._trace.main` with the trace
    # they started, as equinox's filter_jvp does): the trace object itself.
    @property
    def main(self):
        return self

    @property
    def tag(self):
        return self

    def full_raise(self, x):
        return x

    def __repr__(self):
        return f"{type(self).__name__}(level={self.level})"


class _Context(threading.local):
    def __init__(self):
        self.trace = _base_trace_holder[0]


# The eager trace, set by the runtime at import; threads created later start from it.
_base_trace_holder: list = [None]
ctx = _Context()


def set_base_trace(trace: Trace) -> None:
    _base_trace_holder[0] = trace
    ctx.trace = trace


def current_trace() -> Trace:
    return ctx.trace


def base_trace() -> Trace:
    return _base_trace_holder[0]


@contextlib.contextmanager
def set_current_trace(trace: Trace):
    """Make `trace` current inside the block (used by traces to run on their parent)."""
    prev = ctx.trace
    ctx.trace = trace
    try:
        yield trace
    finally:
        ctx.trace = prev


@contextlib.contextmanager
def new_trace(trace: Trace):
    """Install a fresh trace whose parent is the current one; it is invalid after the block,
    so tracers that escape it raise a clear error when used."""
    prev = ctx.trace
    trace.parent = prev
    trace.level = prev.level + 1 if prev is not None else 0
    ctx.trace = trace
    try:
        yield trace
    finally:
        ctx.trace = prev
        trace.invalidate()


class Tracer:
    """A value inside a transformation: has an aval and the trace that owns it.

    The NumPy-style operator surface (``+``, ``.sum()``, ``.at``...) is installed by the
    `morphax.numpy` layer, identically on `Array` and `Tracer`, so user code cannot tell them apart.
    """

    __slots__ = ("_trace", "__weakref__")
    __array_priority__ = 1000

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def weak_type(self):
        return self.aval.weak_type

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        return self.aval.size

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def to_concrete_value(self):
        """The concrete value behind this tracer when one is known (JVP of concrete inputs), else None."""
        return None

    def _origin(self):
        """Where this value came from, for error messages: an `errors.TracerOrigin` or None.

        Called only while an error is being built. Tracers that wrap another value answer for it:
        a JVP tracer with its primal, a batch tracer with its (unbatched) value; a batched value
        says so, since it has one value per element of the vmapped axis.
        """
        if getattr(self, "batch_dim", None) is not None:
            return errors.TracerOrigin(
                description=(
                    f"This value is batched: it is a {type(self).__name__} of a function transformed by "
                    "vmap, with a different value for each element of the mapped axis, so it has no "
                    "single concrete value in Python."
                ),
                traced_for="vmap",
                batched=True,
            )
        for name in ("primal", "val"):
            inner = getattr(self, name, None)
            if isinstance(inner, Tracer):
                return inner._origin()
        return None

    def _concretization_error(self, context: str):
        return errors.ConcretizationTypeError(self, context)

    def __bool__(self):
        v = self.to_concrete_value()
        if v is None:
            raise errors.TracerBoolConversionError(self)
        return bool(v)

    def __int__(self):
        v = self.to_concrete_value()
        if v is None:
            raise self._concretization_error(
                "The problem arose with the `int` function. To convert the data type of an array, use "
                "`x.astype(int)` or `jnp.asarray(x, int)` instead."
            )
        return int(v)

    def __float__(self):
        v = self.to_concrete_value()
        if v is None:
            raise self._concretization_error(
                "The problem arose with the `float` function. To convert the data type of an array, use "
                "`x.astype(float)` or `jnp.asarray(x, float)` instead."
            )
        return float(v)

    def __complex__(self):
        v = self.to_concrete_value()
        if v is None:
            raise self._concretization_error(
                "The problem arose with the `complex` function. To convert the data type of an array, "
                "use `x.astype(complex)` or `jnp.asarray(x, complex)` instead."
            )
        return complex(v)

    def __index__(self):
        v = self.to_concrete_value()
        if v is None:
            raise errors.TracerIntegerConversionError(self)
        return int(v)

    def __array__(self, dtype=None, copy=None):
        raise errors.TracerArrayConversionError(self)

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__} (traced arrays are not hashable)")

    def __setitem__(self, idx, value):
        aval = self.aval
        if type(aval) is AbstractRef:  # a traced mutable array reference: ref[idx] = value
            return aval._setitem(self, idx, value)
        raise TypeError(errors.immutable_message(type(self).__name__))

    def addupdate(self, x, idx=()):
        """``ref[idx] += x`` on a traced mutable array reference."""
        aval = self.aval
        if type(aval) is not AbstractRef:
            raise AttributeError(f"addupdate is a method of mutable array references (Ref), not of {aval}")
        aval._addupdate(self, idx, x)

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.aval.shape[0]))

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}>with<{type(self._trace).__name__}>"


def _tracer_aval(t):
    return t.aval


def register_tracer_type(cls) -> None:
    """Each Tracer subclass registers so `get_aval` finds its aval without an isinstance chain."""
    pytype_aval_mappings[cls] = _tracer_aval


def check_tracer_valid(x, trace: Trace) -> None:
    """Raise the escaped-tracer error when `x` belongs to a finished transformation. The message
    names the function whose trace `x` came from (the trace's ``debug_info``, when it has one)."""
    if x._trace.invalid:
        raise errors.UnexpectedTracerError(x)
