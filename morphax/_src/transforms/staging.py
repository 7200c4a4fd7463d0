"""Staging: record primitives into a Jaxpr instead of running them.

`StagingTrace` is what `make_jaxpr`, `jit`, control flow and `eval_shape` trace with. Values
not owned by the trace (constants, tracers of outer transformations) become constvars, or
inline literals when they are scalars. Imports only the core.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import trace as _trace
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from morphax._src.core.trace import Tracer


class StagingTracer(Tracer):
    __slots__ = ("_aval",)

    def __init__(self, trace, aval: ShapedArray):
        self._trace = trace
        self._aval = aval

    @property
    def aval(self):
        return self._aval


_trace.register_tracer_type(StagingTracer)


def _is_literalable(x, aval: ShapedArray) -> bool:
    # JAX inlines scalar constants as literals; arrays become constvars.
    return aval.shape == () and not isinstance(x, Tracer)


class StagingTrace(_trace.Trace):
    """Builds one jaxpr. Each tracer maps to a Var; each distinct constant to one constvar."""

    def __init__(self):
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self._var_of: dict[int, Var] = {}
        self._tracers: list[StagingTracer] = []  # keeps ids stable while tracing
        self._const_var_of: dict[int, Var] = {}
        self.constvars: list[Var] = []
        self.consts: list = []

    def new_arg(self, aval: ShapedArray) -> StagingTracer:
        tracer = StagingTracer(self, aval)
        var = Var(aval)
        self._tracers.append(tracer)
        self._var_of[id(tracer)] = var
        self.invars.append(var)
        return tracer

    def _new_tracer(self, aval: ShapedArray) -> tuple[StagingTracer, Var]:
        tracer = StagingTracer(self, aval)
        var = Var(aval)
        self._tracers.append(tracer)
        self._var_of[id(tracer)] = var
        return tracer, var

    def to_var(self, x):
        if isinstance(x, Tracer):
            if x._trace is self:
                return self._var_of[id(x)]
            _trace.check_tracer_valid(x, self)
        aval = get_aval(x)
        if _is_literalable(x, aval):
            return Literal(x, aval)
        var = self._const_var_of.get(id(x))
        if var is None:
            var = Var(aval)
            self._const_var_of[id(x)] = var
            self.constvars.append(var)
            self.consts.append(x)
        return var

    def process_primitive(self, prim, args, params):
        invars = [self.to_var(x) for x in args]
        out = prim.abstract_eval(*[v.aval for v in invars], **params)
        if prim.multiple_results:
            pairs = [self._new_tracer(a) for a in out]
            self.eqns.append(JaxprEqn(prim, invars, [v for _, v in pairs], params))
            return [t for t, _ in pairs]
        tracer, var = self._new_tracer(out)
        self.eqns.append(JaxprEqn(prim, invars, [var], params))
        return tracer

    def to_closed_jaxpr(self, outs) -> ClosedJaxpr:
        outvars = [self.to_var(x) for x in outs]
        jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns)
        return ClosedJaxpr(jaxpr, self.consts)


def trace_to_jaxpr(flat_fun, in_avals, *, check_outputs=None) -> tuple[ClosedJaxpr, object]:
    """Trace `flat_fun` (flat list of args -> flat list of outputs) on abstract inputs.

    Returns the closed jaxpr and whatever auxiliary value `flat_fun` attached to itself.
    """
    with _trace.new_trace(StagingTrace()) as trace:
        args = [trace.new_arg(a) for a in in_avals]
        outs = flat_fun(*args)
        if check_outputs is not None:
            check_outputs(outs)
        closed = trace.to_closed_jaxpr(outs)
    return closed


def is_constant_value(x) -> bool:
    """True for values that are not tracers (usable as constants while staging)."""
    return not isinstance(x, Tracer) or isinstance(x, np.ndarray)
