"""Staged custom-derivative calls: the `custom_jvp_call` and `custom_vjp_call` primitives.

A custom_jvp / custom_vjp function traced into a jaxpr (by jit, make_jaxpr, a control-flow body)
must keep its rule: `grad(jit(f))` differentiates the jaxpr after tracing has ended. So the
staging trace records one equation whose `call_jaxpr` is the primal function and whose params
hold the rule as a Python callable (JAX's thunks). Evaluating the equation runs the primal
jaxpr; its JVP rule calls the user's rule (custom_vjp: `fwd`, and `bwd` through `custom_lin`);
its batching rule batches function and rule as wholes. Values the function closes over that are
tracers become leading operands (`num_consts`); differentiating with respect to them is an
error, as in JAX, since the rule only covers the explicit arguments.
"""

from __future__ import annotations

from morphax._src.core import trace as _trace
from morphax._src.core.ad_util import Zero, instantiate, is_zero, tangent_aval
from morphax._src.core.avals import get_aval
from morphax._src.core.jaxpr import eval_jaxpr
from morphax._src.core.primitive import Kind, Primitive
from morphax._src.transforms.batching import batch_custom_jvp_call, batch_custom_vjp_call, batch_flat_fun
from morphax._src.transforms.custom import SymbolicZero, custom_vjp_jvp
from morphax._src.transforms.staging import (
    call_out_avals,
    closure_convert_tracers,
    custom_call_stagers,
    eval_call_jaxpr,
    trace_to_jaxpr,
)


class _WrappedFun:
    """A function as JAX's `lu.WrappedFun` shows one to interpreters: ``call_wrapped(*args)``.
    `recorded` (the primal function of a `custom_jvp_call` equation only): the params it came
    from, so rebinding it records the same equation."""

    def __init__(self, f, name, recorded=None):
        self.f, self.__name__, self.recorded = f, name, recorded

    def call_wrapped(self, *args):
        return self.f(*args)

    __call__ = call_wrapped


class _CustomJVPCallPrimitive(Primitive):
    """`custom_jvp_call` with JAX's interface for interpreters that re-evaluate a jaxpr
    (equinox's `finalise_jaxpr` calls ``subfuns[0].call_wrapped(*args)``): `get_bind_params`
    gives the primal function and the rule as ``subfuns``, in place of ``call_jaxpr``,
    ``jvp_jaxpr_fun`` and ``num_consts``, and `bind` takes them back."""

    def get_bind_params(self, params):
        new = dict(params)
        call_jaxpr, rule = new.pop("call_jaxpr"), new.pop("jvp_jaxpr_fun")
        num_consts, name = new.pop("num_consts"), new.pop("name")

        def jvp(*xs):  # JAX's convention: every primal, then every tangent (constants' too)
            n = len(xs) // 2
            out, out_t = rule(list(xs[num_consts:n]), list(xs[n + num_consts :]))
            return list(out) + list(out_t)

        fun = _WrappedFun(lambda *xs: eval_call_jaxpr(call_jaxpr, xs), name, dict(params))
        new["subfuns"] = (fun, _WrappedFun(jvp, _rule_name(rule)))
        return new

    def bind(self, *args, **params):
        subfuns = params.pop("subfuns", None)
        if subfuns is None:
            return super().bind(*args, **params)
        fun, jvp = subfuns
        recorded = getattr(fun, "recorded", None)
        if recorded is not None:
            return super().bind(*args, **recorded)
        # Functions from elsewhere (JAX's form): the call as a custom_jvp function's call is.
        symbolic_zeros = params.get("symbolic_zeros", False)
        call = getattr(fun, "call_wrapped", fun)
        jvp_call = getattr(jvp, "call_wrapped", jvp)

        def rule(primals, tangents):
            ts = [SymbolicZero(t.aval) if is_zero(t) else t for t in tangents]
            outs = list(jvp_call(*primals, *ts))
            n = len(outs) // 2
            out_t = [Zero(t.aval) if isinstance(t, SymbolicZero) else t for t in outs[n:]]
            return outs[:n], out_t

        rule.__name__ = _rule_name(jvp)  # how the staged equation prints (``jvp=``)
        trace = _trace.current_trace()
        handler = getattr(trace, "process_custom_jvp_call", None)
        if handler is None:
            return list(call(*args))
        return handler(lambda *xs: list(call(*xs)), rule, list(args), symbolic_zeros)


custom_jvp_call_p = _CustomJVPCallPrimitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.kind = Kind.CALL
custom_jvp_call_p.higher_order = True
custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.kind = Kind.CALL
custom_vjp_call_p.higher_order = True


def _rule_name(rule) -> str:
    return getattr(rule, "__name__", type(rule).__name__)


def _custom_jvp_pp_params(eqn, params):
    # Printed as JAX prints it: name first, the rule by its name as ``jvp``, num_consts when
    # nonzero.
    if not params.get("num_consts"):
        params.pop("num_consts", None)
    params["jvp"] = _rule_name(params.pop("jvp_jaxpr_fun"))
    return params


def _custom_vjp_pp_params(eqn, params):
    if not params.get("num_consts"):
        params.pop("num_consts", None)
    params["fwd"] = _rule_name(params.pop("fwd_jaxpr_thunk"))
    params["bwd"] = _rule_name(params.pop("bwd"))
    return params


custom_jvp_call_p.pp_params = _custom_jvp_pp_params
custom_vjp_call_p.pp_params = _custom_vjp_pp_params
custom_jvp_call_p.pp_leading_params = custom_vjp_call_p.pp_leading_params = ("name",)


def _stage(prim, fun, args, params):
    """Trace `fun` at the avals of `args` and bind `prim` with the traced jaxpr as `call_jaxpr`."""
    closed = trace_to_jaxpr(lambda *xs: list(fun(*xs)), [get_aval(x) for x in args])
    closed, lifted = closure_convert_tracers(closed)
    return prim.bind(*lifted, *args, call_jaxpr=closed, num_consts=len(lifted), **params)


def stage_custom_jvp_call(fun, jvp_rule, args, symbolic_zeros):
    """What a staging trace does with a custom_jvp call: one `custom_jvp_call` equation."""
    name = getattr(fun, "__name__", "custom_jvp")
    return _stage(
        custom_jvp_call_p, fun, args, dict(name=name, jvp_jaxpr_fun=jvp_rule, symbolic_zeros=symbolic_zeros)
    )


def stage_custom_vjp_call(fun, fwd, bwd, args, symbolic_zeros):
    """What a staging trace does with a custom_vjp call: one `custom_vjp_call` equation."""
    name = getattr(fun, "__name__", "custom_vjp")
    params = dict(name=name, fwd_jaxpr_thunk=fwd, bwd=bwd, symbolic_zeros=symbolic_zeros)
    return _stage(custom_vjp_call_p, fun, args, params)


def _impl(*args, call_jaxpr, **_):
    return eval_call_jaxpr(call_jaxpr, args)


def _abstract_eval(*in_avals, call_jaxpr, name, **_):
    return call_out_avals(f"custom call {name}", in_avals, call_jaxpr)


def _split_consts(tangents, num_consts, name, kind):
    if any(not is_zero(t) for t in tangents[:num_consts]):
        raise TypeError(
            f"Detected differentiation of the {kind} function {name} with respect to a closed-over "
            f"value. The custom rule only says how to differentiate {name} with respect to its explicit "
            f"arguments: pass the value as an argument instead (or use morphax.closure_convert)."
        )
    return tangents[num_consts:]


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros, name):
    tangents = _split_consts(tangents, num_consts, name, "custom_jvp")
    if all(is_zero(t) for t in tangents):
        outs = custom_jvp_call_p.bind(
            *primals,
            call_jaxpr=call_jaxpr,
            jvp_jaxpr_fun=jvp_jaxpr_fun,
            num_consts=num_consts,
            symbolic_zeros=symbolic_zeros,
            name=name,
        )
        return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]
    if not symbolic_zeros:
        tangents = [instantiate(t) for t in tangents]
    out, out_t = jvp_jaxpr_fun(list(primals[num_consts:]), list(tangents))
    return list(out), list(out_t)


def _custom_vjp_call_jvp(
    primals, tangents, *, call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts, symbolic_zeros, name
):
    tangents = _split_consts(tangents, num_consts, name, "custom_vjp")
    params = dict(
        call_jaxpr=call_jaxpr,
        fwd_jaxpr_thunk=fwd_jaxpr_thunk,
        bwd=bwd,
        num_consts=num_consts,
        symbolic_zeros=symbolic_zeros,
        name=name,
    )
    if all(is_zero(t) for t in tangents):
        outs = custom_vjp_call_p.bind(*primals, **params)
        return outs, [Zero(tangent_aval(get_aval(o))) for o in outs]
    consts = primals[:num_consts]

    def fun(*xs):
        return custom_vjp_call_p.bind(*consts, *xs, **params)

    out, out_t = custom_vjp_jvp(
        list(primals[num_consts:]), tangents, fun, fwd_jaxpr_thunk, bwd, symbolic_zeros
    )
    return list(out), list(out_t)


def _batch_call(vals, dims, axis_data, call_jaxpr, num_consts, batch_with_rule):
    """Batch a custom call keeping its rule: `batch_with_rule(fun, explicit vals, their dims)`.
    The rule sees the explicit arguments only; closed-over operands stay with the function. A
    batched closed-over value (which the rule sees unbatched, through its Python closure) leaves
    the rule out: then the primal jaxpr is batched on its own."""
    primal = lambda *xs: eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *xs)  # noqa: E731
    if any(d is not None for d in dims[:num_consts]):
        outs = batch_flat_fun(primal, axis_data, list(dims))(*vals)
        return outs, [0] * len(outs)
    consts = vals[:num_consts]
    return batch_with_rule(lambda *xs: primal(*consts, *xs), vals[num_consts:], dims[num_consts:])


def _custom_jvp_call_batch(
    vals, dims, *, axis_data, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros, name
):
    def with_rule(fun, xs, xs_dims):
        return batch_custom_jvp_call(axis_data, fun, jvp_jaxpr_fun, xs, xs_dims, symbolic_zeros)

    return _batch_call(vals, dims, axis_data, call_jaxpr, num_consts, with_rule)


def _custom_vjp_call_batch(
    vals, dims, *, axis_data, call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts, symbolic_zeros, name
):
    def with_rule(fun, xs, xs_dims):
        return batch_custom_vjp_call(axis_data, fun, fwd_jaxpr_thunk, bwd, xs, xs_dims, symbolic_zeros)

    return _batch_call(vals, dims, axis_data, call_jaxpr, num_consts, with_rule)


for _prim, _jvp, _batch in (
    (custom_jvp_call_p, _custom_jvp_call_jvp, _custom_jvp_call_batch),
    (custom_vjp_call_p, _custom_vjp_call_jvp, _custom_vjp_call_batch),
):
    _prim.impl = _impl
    _prim.abstract_eval = _abstract_eval
    _prim.jvp = _jvp
    _prim.batch = _batch
    _prim.test_spec = None
    _prim.call_jaxpr_param = "call_jaxpr"


# In the linear part of a linearization (a custom_jvp applied to a tangent inside a JVP rule), the
# call is inlined: its body is linear there and transposes; the rule is not needed (JAX does so).
custom_jvp_call_p.inline_when_unknown = True

custom_call_stagers.update(jvp=stage_custom_jvp_call, vjp=stage_custom_vjp_call)
