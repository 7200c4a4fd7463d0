"""Forward and reverse mode: the JVP trace, linearization by partial evaluation, and transposition.

`jvp` pushes (primal, tangent) pairs through each primitive's JVP rule. `linearize` runs the JVP
under a partial-evaluation trace: primal work (all inputs known) runs now, tangent work is
staged into a linear jaxpr whose constants are the residuals. `backward_pass` transposes that
jaxpr with the primitives' transpose rules, which gives the VJP. No primitive is named here.
"""

from __future__ import annotations

from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import (
    UndefinedPrimal,
    Zero,
    add_tangents,
    instantiate,
    is_undefined_primal,
    is_zero,
    tangent_aval,
)
from morphax._src.core.avals import get_aval, typed_scalar
from morphax._src.core.dtypes import float0, is_python_scalar, python_scalar_dtype
from morphax._src.core.jaxpr import ClosedJaxpr, Literal, eval_jaxpr
from morphax._src.core.memo import memoized
from morphax._src.core.state_types import REF_CREATORS
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.transforms.custom import jvp_of_custom_vjp
from morphax._src.transforms.staging import StagingTrace, StagingTracer, eval_call_jaxpr, trace_to_jaxpr


class MissingRuleError(NotImplementedError):
    pass


# --------------------------------------------------------------------------------------------- JVP


class JVPTracer(Tracer):
    __slots__ = ("primal", "tangent")

    def __init__(self, trace, primal, tangent):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return get_aval(self.primal)

    def to_concrete_value(self):
        p = self.primal
        if isinstance(p, Tracer):
            return p.to_concrete_value()
        return p._value if hasattr(p, "_value") else p

    def __repr__(self):
        return f"JVPTracer<{self.aval.str_short()}>(primal={self.primal!r}, tangent={self.tangent!r})"


_trace.register_tracer_type(JVPTracer)


class JVPTrace(_trace.Trace):
    """Pairs each value with its tangent; values from outside carry a symbolic zero tangent."""

    def lift(self, x):
        if isinstance(x, JVPTracer) and x._trace is self:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            _trace.check_tracer_valid(x, self)
        return x, Zero.from_primal_value(x)

    def process_primitive(self, prim, args, params):
        primals, tangents = [], []
        for x in args:
            p, t = self.lift(x)
            primals.append(p)
            tangents.append(t)
        # Python scalars reach here as primals of the inputs (jvp passes them through as JAX
        # does, so an identity or a custom rule returns the float).
        if not prim.jvp_takes_python_scalars:
            primals = [_scalar_to_array(p) for p in primals]
        parent = self.parent
        # A ref made inside the differentiated function gets a tangent ref even from a
        # non-differentiated value, so differentiated values may be written into it later.
        if all(is_zero(t) for t in tangents) and prim not in REF_CREATORS:
            with _trace.set_current_trace(parent):
                return prim.bind(*primals, **params)
        rule = prim.jvp
        if rule is None:
            raise MissingRuleError(
                f"Differentiation rule for '{prim.name}' not implemented: the primitive has no JVP rule, "
                "so it cannot be differentiated (jvp, grad, linearize)."
            )
        with _trace.set_current_trace(parent):
            out, out_t = rule(primals, tangents, **params)
        if prim.multiple_results:
            return [self.pair(o, t) for o, t in zip(out, out_t)]
        return self.pair(out, out_t)

    def pair(self, primal, tangent):
        """An output of this trace: a tracer, or the plain primal where the tangent is a symbolic
        zero (or float0), as JAX's `maybe_jvp_tracer` does. So a value the inputs do not perturb (a
        jit output independent of them, a stop_gradient) is not a tracer of this trace, which is
        how libraries (equinox) recognize a zero tangent."""
        if is_zero(tangent) or _is_float0(tangent):
            return primal
        return JVPTracer(self, primal, tangent)

    def process_custom_jvp_call(self, fun, jvp_rule, args, symbolic_zeros):
        primals, tangents = zip(*[self.lift(x) for x in args]) if args else ((), ())
        if all(is_zero(t) for t in tangents):
            with _trace.set_current_trace(self.parent):
                return fun(*primals)
        if not symbolic_zeros:
            tangents = [instantiate(t) for t in tangents]
        with _trace.set_current_trace(self.parent):
            out, out_t = jvp_rule(list(primals), list(tangents))
        return [self.pair(o, t) for o, t in zip(out, out_t)]

    def process_custom_vjp_call(self, fun, fwd, bwd, args, symbolic_zeros):
        out, out_t = jvp_of_custom_vjp(self, self.lift, fun, fwd, bwd, args, symbolic_zeros)
        if out is None:
            return out_t
        return [self.pair(o, t) for o, t in zip(out, out_t)]

    def unpack(self, out):
        """Split outputs of a traced function into primals and tangents (Zero if untouched)."""
        if isinstance(out, JVPTracer) and out._trace is self:
            return out.primal, out.tangent
        return out, Zero.from_primal_value(out)


def _is_float0(t) -> bool:
    dtype = getattr(t, "dtype", None)
    return dtype is not None and dtype == float0


def _scalar_to_array(x):
    if is_python_scalar(x):
        return make_array(x, python_scalar_dtype(x), weak_type=type(x) is not bool)
    return x


def jvp_flat(flat_fun, primals, tangents):
    """Run `flat_fun` on (primal, tangent) pairs; returns output primals and tangents (maybe Zero)."""
    # Python-scalar primals stay Python scalars, as in JAX: a function returning its input (or a
    # custom_jvp rule computing in Python floats) returns the float; process_primitive gives
    # the built-in primitives' rules arrays.
    with _trace.new_trace(JVPTrace()) as trace:
        ins = [JVPTracer(trace, p, t) for p, t in zip(primals, tangents)]
        outs = flat_fun(*ins)
        pairs = [trace.unpack(o) for o in outs]
    return [p for p, _ in pairs], [t for _, t in pairs]


# -------------------------------------------------------------------------------- partial evaluation


class PartialEvalTrace(StagingTrace):
    """Evaluates primitives whose inputs are all known (not this trace's tracers) on the parent
    trace, and stages the rest; known values used by staged equations become residual constants."""

    def _owns(self, x) -> bool:
        return isinstance(x, StagingTracer) and x._trace is self

    def process_primitive(self, prim, args, params):
        owned = [self._owns(x) for x in args]
        if not any(owned):
            with _trace.set_current_trace(self.parent):
                return prim.bind(*args, **params)
        if prim.inline_when_unknown:
            # Its jaxpr is all of its meaning here (the custom rule it carries is a derivative
            # rule, and unknown inputs make this the linear part): evaluated on this trace.
            with _trace.set_current_trace(self):
                return eval_call_jaxpr(params[prim.call_jaxpr_param], args)
        if prim.partial_eval is not None and not all(owned):
            # Higher-order primitives split their bodies into known and unknown parts.
            return prim.partial_eval(self, args, params)
        return super().process_primitive(prim, args, params)

    # A call whose inputs are all known runs on the parent trace as a custom call, so an enclosing
    # JVP (grad of grad) still applies its rule. With unknown inputs it is inlined, as JAX's
    # partial evaluation does: unknown values are tangents (partial evaluation builds the linear
    # part of a linearization), where the rule (a custom_jvp applied to a tangent inside another
    # rule, as lineax does) is not needed, and its primal body, linear there, transposes.
    def process_custom_jvp_call(self, fun, jvp_rule, args, symbolic_zeros):
        if any(self._owns(x) for x in args):
            with _trace.set_current_trace(self):
                return list(fun(*args))
        with _trace.set_current_trace(self.parent):
            handler = getattr(self.parent, "process_custom_jvp_call", None)
            return fun(*args) if handler is None else handler(fun, jvp_rule, list(args), symbolic_zeros)

    def process_custom_vjp_call(self, fun, fwd, bwd, args, symbolic_zeros):
        if any(self._owns(x) for x in args):
            return super().process_custom_vjp_call(fun, fwd, bwd, args, symbolic_zeros)
        with _trace.set_current_trace(self.parent):
            handler = getattr(self.parent, "process_custom_vjp_call", None)
            return fun(*args) if handler is None else handler(fun, fwd, bwd, list(args), symbolic_zeros)


class LinearFunction:
    """The result of `linearize`: evaluates the linear jaxpr (no retracing) on new tangents."""

    def __init__(self, closed: ClosedJaxpr, out_zero_avals, in_avals):
        self.jaxpr = closed
        self.out_zero_avals = out_zero_avals  # Zero aval for outputs whose tangent is symbolically 0
        self.in_avals = in_avals

    def __call__(self, *tangents):
        outs = eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *tangents)
        it = iter(outs)
        return [Zero(a) if a is not None else next(it) for a in self.out_zero_avals]

    def transpose(self, cts):
        """Cotangents of the outputs -> cotangents of the inputs (Zero where none flows)."""
        live_cts = [ct for ct, z in zip(cts, self.out_zero_avals) if z is None]
        return backward_pass(self.jaxpr, live_cts)


def linearize_flat(flat_fun, primals):
    """Returns (output primals, LinearFunction of the input tangents)."""
    in_tangent_avals = [tangent_aval(get_aval(p)) for p in primals]
    with _trace.new_trace(PartialEvalTrace()) as pe:
        tangent_args = [pe.new_arg(a) for a in in_tangent_avals]
        # Integer inputs have float0 tangents: they stay symbolic zeros (their invars go unused).
        jvp_tangents = [Zero(a) if a.dtype == float0 else t for a, t in zip(in_tangent_avals, tangent_args)]
        # grad/vjp hand Python numbers on as typed scalars (a float with a dtype, as JAX's
        # TypedFloat), so a custom rule that receives one can read its dtype; jvp leaves them.
        typed = [typed_scalar(p) for p in primals]
        out_primals, out_tangents = jvp_flat(flat_fun, typed, jvp_tangents)
        out_zero_avals = [t.aval if is_zero(t) else None for t in out_tangents]
        live = [t for t in out_tangents if not is_zero(t)]
        closed = pe.to_closed_jaxpr(live)
    return out_primals, LinearFunction(closed, out_zero_avals, in_tangent_avals)


# ------------------------------------------------------------------------------------- transposition


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros, instantiate=False):
    """The JVP of `closed` as a jaxpr: (primals, tangents of the inputs marked in `nonzeros`) ->
    (primal outputs, tangents of the outputs marked in `out_nonzero`).

    Returns (jaxpr, out_nonzero). An output marked in `instantiate` (a bool per output, or one for
    all) gets a dense tangent even where it is symbolically zero, so that several bodies (the
    branches of a cond, a loop's carry) agree on one layout. Every higher-order primitive
    differentiates its bodies with this; memoized on `closed`."""
    n_out = len(closed.out_avals)
    force = (bool(instantiate),) * n_out if isinstance(instantiate, bool) else tuple(map(bool, instantiate))
    nonzeros = tuple(map(bool, nonzeros))
    return memoized(closed, ("jvp", nonzeros, force), lambda: _jvp_closed(closed, nonzeros, force))


def _jvp_closed(closed, nonzeros, force):
    avals, n = closed.in_avals, len(closed.in_avals)
    box = {}

    def fun(*args):
        nz_tangents = iter(args[n:])
        tangents = [next(nz_tangents) if nz else Zero(tangent_aval(a)) for a, nz in zip(avals, nonzeros)]
        out_p, out_t = jvp_flat(lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs), args[:n], tangents)
        box["out_nonzero"] = [not is_zero(t) or f for t, f in zip(out_t, force)]
        return list(out_p) + [instantiate(t) for t, nz in zip(out_t, box["out_nonzero"]) if nz]

    tangent_avals = [tangent_aval(a) for a, nz in zip(avals, nonzeros) if nz]
    return trace_to_jaxpr(fun, list(avals) + tangent_avals), box["out_nonzero"]


def backward_pass(closed: ClosedJaxpr, cts_out):
    """Transpose a linear jaxpr: constvars are residuals (known); every other variable is linear."""
    jaxpr = closed.jaxpr
    known = {id(v): c for v, c in zip(jaxpr.constvars, closed.consts)}
    ct_env: dict[int, object] = {}

    def write(v, ct):
        if type(v) is Literal or ct is None or is_zero(ct) or id(v) in known:
            return
        prev = ct_env.get(id(v))
        ct_env[id(v)] = ct if prev is None else add_tangents(prev, ct)

    for v, ct in zip(jaxpr.outvars, cts_out):
        write(v, ct)
    for eqn in reversed(jaxpr.eqns):
        cts = [ct_env.pop(id(v), None) for v in eqn.outvars]
        if all(ct is None for ct in cts):
            continue
        cts = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outvars, cts)]
        args = []
        for v in eqn.invars:
            if type(v) is Literal:
                args.append(v.val)
            elif id(v) in known:
                args.append(known[id(v)])
            else:
                args.append(UndefinedPrimal(v.aval))
        rule = eqn.primitive.transpose
        if rule is None:
            raise MissingRuleError(
                f"Transpose rule (for reverse-mode differentiation) for '{eqn.primitive.name}' not "
                "implemented: the primitive appeared in a linear function but has no transpose rule."
            )
        cts_in = rule(cts if eqn.primitive.multiple_results else cts[0], *args, **eqn.params)
        for v, a, ct in zip(eqn.invars, args, cts_in):
            if is_undefined_primal(a):
                write(v, ct)
    return [ct_env.get(id(v), Zero(v.aval)) for v in jaxpr.invars]
