"""Trace inspection, aval helpers and partial evaluation with JAX's names (`jax.core`,
`jax.extend.core`, `jax.interpreters.partial_eval`), over morphax's traces and jaxprs."""

from __future__ import annotations

import contextlib
import functools
import weakref

from morphax._src import errors
from morphax._src.core import dtypes as _dtypes
from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import tangent_dtype
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var, eval_jaxpr
from morphax._src.core.trace import Tracer
from morphax._src.transforms.ad import PartialEvalTrace
from morphax._src.transforms.batching import BatchTrace
from morphax._src.transforms.staging import DebugInfo, StagingTrace, trace_to_jaxpr

# ------------------------------------------------------------------------------------- traces


def find_top_trace(_=None):
    """The current trace (JAX 0.10 ignores the argument too)."""
    return _trace.current_trace()


def unsafe_get_current_trace():
    return _trace.current_trace()


def unsafe_get_trace_stack(trace=None) -> list:
    """The traces from the base (eager) one to `trace` (default: the current one)."""
    trace = _trace.current_trace() if trace is None else trace
    stack = []
    while trace is not None:
        stack.append(trace)
        trace = trace.parent
    return stack[::-1]


class OpaqueTraceState:
    """Which trace is current, compared by identity: two states are equal when they were taken
    under the same trace (flax and nnx check that state is mutated where it was created)."""

    __slots__ = ("_trace_ref",)

    def __init__(self, trace_ref):
        self._trace_ref = trace_ref

    def __eq__(self, other):
        return isinstance(other, OpaqueTraceState) and self._trace_ref() is other._trace_ref()

    def __hash__(self):
        return hash(id(self._trace_ref()))

    def __repr__(self):
        return f"OpaqueTraceState({self._trace_ref()!r})"


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
    return OpaqueTraceState(weakref.ref(_trace.current_trace()))


def unsafe_am_i_under_a_jit() -> bool:
    return any(
        isinstance(t, StagingTrace) and not isinstance(t, PartialEvalTrace) for t in unsafe_get_trace_stack()
    )


def unsafe_am_i_under_a_vmap() -> bool:
    return any(isinstance(t, BatchTrace) for t in unsafe_get_trace_stack())


def unsafe_get_axis_names() -> list:
    return [t.axis_data.name for t in unsafe_get_trace_stack() if isinstance(t, BatchTrace)]


def nonempty_axis_env() -> bool:
    return bool(unsafe_get_axis_names())


@contextlib.contextmanager
def set_current_trace(trace, check_leaks=False):
    with _trace.set_current_trace(trace):
        yield trace


@contextlib.contextmanager
def take_current_trace():
    """The current trace, with the eager trace current inside the block (JAX's convention for
    code that binds on a trace it took)."""
    trace = _trace.current_trace()
    with _trace.set_current_trace(_trace.base_trace()):
        yield trace


class TraceTag:
    """An identity token for a trace (JAX uses it to recognise its own tracers)."""

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


# ----------------------------------------------------------------------------------- avals


def raise_to_shaped(aval, weak_type=None):
    """Identity on ShapedArrays (JAX's ConcreteArray is gone; so is the distinction)."""
    if weak_type is not None and isinstance(aval, ShapedArray):
        return aval.update(weak_type=weak_type)
    return aval


def mapped_aval(size, axis, aval):
    """`aval` with axis `axis` (of length `size`) removed; None leaves it as it is."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval} has size {aval.shape[axis]}, expected {size}")
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1 :])


def unmapped_aval(size, axis, aval, explicit_mesh_axis=None):
    """`aval` with a new axis of length `size` at `axis`; None leaves it as it is."""
    if axis is None:
        return aval
    axis = axis % (len(aval.shape) + 1)
    return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def primal_dtype_to_tangent_dtype(primal_dtype):
    return tangent_dtype(primal_dtype)


def valid_jaxtype(x) -> bool:
    """Whether `x` is a value morphax operations accept (an array, a NumPy array, a scalar)."""
    try:
        aval = get_aval(x)
    except TypeError:
        return False
    return aval.dtype.kind not in "OSUV" or aval.dtype == _dtypes.float0


def concrete_or_error(force, val, context=""):
    """``force(val)`` for a concrete value or a tracer with one; else ConcretizationTypeError."""
    if force is None:
        force = lambda x: x  # noqa: E731
    if isinstance(val, Tracer):
        concrete = val.to_concrete_value()
        if concrete is None:
            raise errors.ConcretizationTypeError(val, context)
        return force(concrete)
    return force(val)


def concrete_dim_or_error(val, context=""):
    import operator  # noqa: PLC0415

    return concrete_or_error(operator.index, val, context)


# ---------------------------------------------------------------------------------- jaxprs


def jaxprs_in_params(params):
    """The jaxprs held (alone or in tuples) in an equation's params."""
    for val in params.values():
        vals = val if isinstance(val, (tuple, list)) else (val,)
        for v in vals:
            if isinstance(v, Jaxpr):
                yield v
            elif isinstance(v, ClosedJaxpr):
                yield v.jaxpr


def subjaxprs(jaxpr):
    """The jaxprs in the params of `jaxpr`'s equations (not recursively)."""
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)


def jaxpr_as_fun(closed: ClosedJaxpr, *args):
    """The function a closed jaxpr computes. Curried as JAX's: ``jaxpr_as_fun(closed)(*args)``
    evaluates it, and so does ``jaxpr_as_fun(closed, *some)(*rest)`` (the leading arguments
    bound; a call with all of them is still a function, of no arguments)."""
    return functools.partial(_eval_closed, closed, *args)


def _eval_closed(closed: ClosedJaxpr, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None, ctx=None):
    return JaxprEqn(primitive, invars, outvars, params, source_info)


def gensym(suffix: str = ""):
    """A factory of fresh variables: ``gensym()(aval)``."""
    return lambda aval: Var(aval, suffix)


# ------------------------------------------------------------------------ partial evaluation


class PartialVal(tuple):
    """JAX's partial value: ``(None, value)`` when known, ``(aval, None)`` when unknown."""

    def __new__(cls, xs):
        pv, const = xs
        return tuple.__new__(cls, (pv, const))

    @classmethod
    def known(cls, const) -> PartialVal:
        return PartialVal((None, const))

    @classmethod
    def unknown(cls, aval) -> PartialVal:
        return PartialVal((aval, None))

    def is_known(self) -> bool:
        return self[0] is None

    def get_known(self):
        return self[1] if self[0] is None else None

    def get_aval(self):
        pv, const = self
        return get_aval(const) if pv is None else pv


def _call(fun, args):
    call = getattr(fun, "call_wrapped", None)
    return call(*args) if call is not None else fun(*args)


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
    """Run `fun` with the known inputs' values and the unknown ones abstract: work on known values
    happens now; the rest is staged. Returns ``(jaxpr, out_pvals, consts)``: the jaxpr takes its
    constvars (bound to `consts`, the residuals) and the unknown inputs to the unknown outputs."""
    pvals = [PartialVal(p) for p in pvals]
    with _trace.new_trace(PartialEvalTrace()) as pe:
        args = [pe.new_arg(pv[0]) if not pv.is_known() else pv[1] for pv in pvals]
        outs = list(_call(fun, args))
        force = [bool(instantiate)] * len(outs) if isinstance(instantiate, bool) else list(instantiate)
        unknown = [pe._owns(o) or f for o, f in zip(outs, force)]
        closed = pe.to_closed_jaxpr([o for o, u in zip(outs, unknown) if u])
    out_pvals, it = [], iter(closed.jaxpr.outvars)  # the outvars are the unknown outputs
    for o, u in zip(outs, unknown):
        out_pvals.append(PartialVal.unknown(next(it).aval) if u else PartialVal.known(o))
    jaxpr = closed.jaxpr
    return jaxpr, out_pvals, list(closed.consts)


def trace_to_jaxpr_dynamic(fun, in_avals, *, keep_inputs=None, lower=False, auto_dce=False):
    """Stage all of `fun` on abstract inputs: ``(jaxpr, out_avals, consts)``."""
    # A WrappedFun built with wrap_init(f, debug_info=api_util.debug_info(...)) names f in errors.
    dbg = getattr(fun, "debug_info", None)
    dbg = dbg if isinstance(dbg, DebugInfo) else None
    closed = trace_to_jaxpr(lambda *xs: list(_call(fun, xs)), list(in_avals), debug_info=dbg)
    return closed.jaxpr, list(closed.out_avals), list(closed.consts)


__all__ = [
    "OpaqueTraceState",
    "PartialVal",
    "TraceTag",
    "concrete_dim_or_error",
    "concrete_or_error",
    "find_top_trace",
    "gensym",
    "get_opaque_trace_state",
    "jaxpr_as_fun",
    "jaxprs_in_params",
    "mapped_aval",
    "new_jaxpr_eqn",
    "nonempty_axis_env",
    "primal_dtype_to_tangent_dtype",
    "raise_to_shaped",
    "set_current_trace",
    "subjaxprs",
    "take_current_trace",
    "trace_to_jaxpr_dynamic",
    "trace_to_jaxpr_nounits",
    "unmapped_aval",
    "unsafe_am_i_under_a_jit",
    "unsafe_am_i_under_a_vmap",
    "unsafe_get_axis_names",
    "unsafe_get_current_trace",
    "unsafe_get_trace_stack",
    "valid_jaxtype",
]
