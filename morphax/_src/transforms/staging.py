"""Staging: record primitives into a Jaxpr instead of running them.

`StagingTrace` is what `make_jaxpr`, `jit`, control flow and `eval_shape` trace with. Values
not owned by the trace (constants, tracers of outer transformations) become constvars, or
inline literals when they are scalars. Imports only the core (and the error types).

A trace may carry a `DebugInfo` (the traced function, where it is defined, a name per flat
input). When a concretization error is raised for one of its tracers, the trace walks its
recorded equations backwards to find the inputs the value depends on, so the message can name
them; nothing is computed for this unless an error is being raised.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from morphax._src import errors
from morphax._src.config import config
from morphax._src.core import pytree, values
from morphax._src.core import trace as _trace
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, eval_jaxpr
from morphax._src.core.state_types import AbstractRef
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array, make_array


class StagingTracer(Tracer):
    __slots__ = ("_aval",)

    def __init__(self, trace, aval: ShapedArray):
        self._trace = trace
        self._aval = aval

    @property
    def aval(self):
        return self._aval

    def _origin(self):
        return self._trace.origin_of(self)


_trace.register_tracer_type(StagingTracer)


class LiftedTracer(StagingTracer):
    """A constant lifted into a staging trace: what `jnp.array(0)` gives under `jit`, as JAX's
    `lax.stage` does. In the jaxpr being built it is its constant (a literal when a scalar); a
    jaxpr traced inside (a `cond` branch, `closure_convert`) that closes over it holds it as a
    constvar, as JAX's does. NB: its value stays known (`int(x)` works; JAX 0.10 raises)."""

    __slots__ = ("_const",)

    def __init__(self, trace, const):
        super().__init__(trace, get_aval(const))
        self._const = const

    def to_concrete_value(self):
        c = self._const
        return c._value if hasattr(c, "_value") else c

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.to_concrete_value(), dtype=dtype)


def lift(x):
    """`x` (a concrete Array) as a tracer of the current trace when that is a plain staging trace
    (jit, make_jaxpr, a control-flow body) outside `ensure_compile_time_eval`; else `x`."""
    trace = _trace.current_trace()
    if type(trace) is not StagingTrace or config.eager_constant_folding:
        return x
    tracer = LiftedTracer(trace, x)
    trace._tracers.append(tracer)
    return tracer


# ---------------------------------------------------------------------------------- debug info


class DebugInfo:
    """What a staging trace is tracing, for error messages.

    ``traced_for``: the transformation ("jit", "make_jaxpr"); ``func_src_info``: e.g.
    ``"f at /path/to/file.py:12"``; ``arg_names``: one name per flat input (``x``,
    ``params['w']``, ``args[1][0]``) or None; ``arg_sources``: per flat input, the top-level
    argument it belongs to as (label, positional index or None, parameter name or None).
    """

    __slots__ = ("traced_for", "fun_name", "func_src_info", "arg_names", "arg_sources")

    def __init__(self, traced_for, fun_name, func_src_info, arg_names=None, arg_sources=None):
        self.traced_for = traced_for
        self.fun_name = fun_name
        self.func_src_info = func_src_info
        self.arg_names = None if arg_names is None else tuple(arg_names)
        self.arg_sources = None if arg_sources is None else tuple(arg_sources)

    def __repr__(self):
        return f"DebugInfo({self.traced_for!r}, {self.func_src_info!r}, arg_names={self.arg_names})"


def fun_name(fun) -> str:
    """The name a function is shown by: its `__name__` where that is a string (an equinox Module
    rebuilt inside a loop answers a sentinel object), else its type's name."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    try:
        name = getattr(fun, "__name__", None)
    except Exception:  # noqa: BLE001 - a user object's attribute may raise anything
        name = None
    return name if isinstance(name, str) else type(fun).__name__


def fun_sourceinfo(fun) -> str:
    """``"name at file:line"`` of the definition of `fun`, or just its name when unknown."""
    name = fun_name(fun)
    try:
        while isinstance(fun, functools.partial):
            fun = fun.func
        fun = inspect.unwrap(fun)
        code = getattr(fun, "__code__", None)
        if code is None:  # a callable object: its __call__ method is what runs
            call = inspect.getattr_static(type(fun), "__call__", None)
            code = getattr(call, "__code__", None)
        if code is not None:
            return f"{name} at {code.co_filename}:{code.co_firstlineno}"
    except Exception:  # noqa: BLE001 - debug info is best effort
        pass
    return name


def _top_level_names(fun, nargs, kwarg_names):
    """(positional names, the name for a keyword) from the signature of `fun`, best effort."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return [f"args[{i}]" for i in range(nargs)], {k: k for k in kwarg_names}
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_pos = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "args")
    names = [
        positional[i] if i < len(positional) else f"{var_pos}[{i - len(positional)}]" for i in range(nargs)
    ]
    # A keyword the signature does not name lands in `**kw`: named kw['k'], as JAX does.
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_kw = next((p.name for p in params if p.kind == p.VAR_KEYWORD), None)
    return names, {k: k if k in named or var_kw is None else f"{var_kw}[{k!r}]" for k in kwarg_names}


def make_debug_info(traced_for, fun, args, kwargs, static_argnums=(), static_argnames=()) -> DebugInfo:
    """Debug info for tracing ``fun(*args, **kwargs)`` whose flat inputs are the leaves of
    ``(dynamic positional args, dynamic keyword args)``, static arguments removed."""
    try:
        static_argnums = set(static_argnums)
        pos_names, kw_names = _top_level_names(fun, len(args), list(kwargs))
        dyn_pos = [i for i in range(len(args)) if i not in static_argnums]
        dyn_args = tuple(args[i] for i in dyn_pos)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
        names, sources = [], []
        for path, _ in pytree.tree_flatten_with_path((dyn_args, dyn_kwargs))[0]:
            top, rest = path[1], path[2:]
            if path[0].idx == 0:
                i = dyn_pos[top.idx]
                label, pos = pos_names[i], i
                # (label, position, parameter name): a `*args` entry has no name to mark static by.
                param = None if "[" in label else label
            else:
                # A keyword is marked static by its own name, also when it lands in `**kw`.
                label, pos, param = kw_names[top.key], None, top.key
            names.append(label + pytree.keystr(rest))
            sources.append((label, pos, param))
    except Exception:  # noqa: BLE001 - debug info is best effort
        names, sources = None, None
    return DebugInfo(traced_for, fun_name(fun), fun_sourceinfo(fun), names, sources)


def _join_names(names) -> str:
    if len(names) == 1:
        return f"the argument {names[0]}"
    if len(names) == 2:
        return f"the arguments {names[0]} and {names[1]}"
    return f"the arguments {', '.join(names[:-1])}, and {names[-1]}"


def _is_literalable(x, aval: ShapedArray) -> bool:
    # JAX inlines scalar constants as literals; arrays become constvars.
    # A scalar Ref is a mutable box, never a literal; nor is a typed PRNG key (``key<fry>[]``).
    return (
        aval.shape == ()
        and not isinstance(x, Tracer)
        and type(aval) is not AbstractRef
        and isinstance(aval.dtype, np.dtype)
    )


def _made_before(x, start: int) -> bool:
    """Whether `x` is a concrete Array that existed before the trace started at `start` (a value
    the traced function closes over): JAX keeps those as constvars, also scalar ones, and
    inlines only the scalars made inside the trace (values.make_array stamps those)."""
    return is_concrete_array(x) and getattr(x, "_made_at", -1) < start


def _literal(x, aval: ShapedArray) -> Literal:
    # A literal stays one when its jaxpr is evaluated inside a later trace (jvp, partial eval
    # and vmap re-stage jaxprs), as JAX's literals hold NumPy values: its Array is stamped as
    # made at every time.
    if is_concrete_array(x):
        x._made_at = _ALWAYS
    return Literal(x, aval)


_ALWAYS = float("inf")


# How a staging trace records a custom_jvp / custom_vjp call: filled in by custom_call.py, which
# defines the primitives of those equations and builds on this module (so it cannot be imported
# from here). transforms/__init__ imports it, so the table is full before anything is traced.
custom_call_stagers: dict = {}


class StagingTrace(_trace.Trace):
    """Builds one jaxpr. Each tracer maps to a Var; each distinct constant to one constvar."""

    def __init__(self, debug_info: DebugInfo | None = None):
        self.debug_info = debug_info
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self._var_of: dict[int, Var] = {}
        self._tracers: list[StagingTracer] = []  # keeps ids stable while tracing
        self._const_var_of: dict[int, Var] = {}
        self.constvars: list[Var] = []
        self.consts: list = []
        self._start = values.tick()

    def invalidate(self):
        super().invalidate()
        # The tracers were kept only so their ids stay unique while tracing. Each one points back
        # at this trace, so keeping them would make a reference cycle holding the constants
        # (closed-over arrays) alive until the cyclic GC runs. An escaped tracer is still alive
        # through its holder, so origin_of can still describe it.
        self._tracers = []

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
                var = self._var_of.get(id(x))
                if var is None:  # a LiftedTracer: its constant, the first time it is used
                    var = self._var_of[id(x)] = self._lifted_var(x._const)
                return var
            _trace.check_tracer_valid(x, self)
        aval = get_aval(x)
        if _is_literalable(x, aval) and not _made_before(x, self._start):
            return _literal(x, aval)
        var = self._const_var_of.get(id(x))
        if var is None:
            var = Var(aval)
            self._const_var_of[id(x)] = var
            self.constvars.append(var)
            self.consts.append(x)
        return var

    def _lifted_var(self, const):
        # A lifted constant was made inside this trace (`jnp.array(0)` under jit): a scalar one
        # is a literal whenever it was made.
        aval = get_aval(const)
        if _is_literalable(const, aval):
            return _literal(const, aval)
        return self.to_var(const)

    def process_primitive(self, prim, args, params):
        if (
            config.eager_constant_folding
            and not prim.has_side_effects
            and not any(isinstance(x, Tracer) for x in args)
        ):
            # ensure_compile_time_eval: operands known now give a value now, not an equation.
            with _trace.set_current_trace(_trace.base_trace()):
                return prim.bind(*args, **params)
        invars = [self.to_var(x) for x in args]
        out = prim.abstract_eval(*[v.aval for v in invars], **params)
        if prim.multiple_results:
            pairs = [self._new_tracer(a) for a in out]
            self.eqns.append(JaxprEqn(prim, invars, [v for _, v in pairs], params))
            return [t for t, _ in pairs]
        tracer, var = self._new_tracer(out)
        self.eqns.append(JaxprEqn(prim, invars, [var], params))
        return tracer

    # A custom_jvp / custom_vjp call becomes one equation that keeps its rule (custom_call.py).
    def process_custom_jvp_call(self, fun, jvp_rule, args, symbolic_zeros):
        return custom_call_stagers["jvp"](fun, jvp_rule, args, symbolic_zeros)

    def process_custom_vjp_call(self, fun, fwd, bwd, args, symbolic_zeros):
        return custom_call_stagers["vjp"](fun, fwd, bwd, args, symbolic_zeros)

    def _progenitors(self, var: Var):
        """Positions of the invars `var` depends on, the constants it depends on, and the
        equations that compute it (walking the recorded equations backwards)."""
        needed = {var}
        eqns = []
        for eqn in reversed(self.eqns):
            if any(o in needed for o in eqn.outvars):
                eqns.append(eqn)
                needed.update(v for v in eqn.invars if isinstance(v, Var))
        positions = [i for i, v in enumerate(self.invars) if v in needed]
        consts = [c for v, c in zip(self.constvars, self.consts) if v in needed]
        return positions, consts, eqns[::-1]

    def origin_of(self, tracer) -> errors.TracerOrigin | None:
        """Where `tracer`'s value comes from, for a concretization error message."""
        var = self._var_of.get(id(tracer))
        if var is None:
            return None
        positions, consts, eqns = self._progenitors(var)
        outer = [c for c in consts if isinstance(c, Tracer)]
        dbg = self.debug_info
        if dbg is None:
            # An inner trace (a cond branch, a scan body): the enclosing transformation knows more.
            return outer[0]._origin() if outer else None
        head = f"The error occurred while tracing the function {dbg.func_src_info} for {dbg.traced_for}."
        if positions and dbg.arg_names is not None and max(positions) < len(dbg.arg_names):
            names = [dbg.arg_names[i] for i in positions]
            static_args = []
            for i in positions:
                if dbg.arg_sources is not None and dbg.arg_sources[i] not in static_args:
                    static_args.append(dbg.arg_sources[i])
            plural = "s" if len(names) > 1 else ""
            return errors.TracerOrigin(
                description=(
                    f"{head} This concrete value was not available in Python because it depends on the "
                    f"value{plural} of {_join_names(names)}."
                ),
                arg_names=tuple(names),
                static_args=tuple(static_args),
                traced_for=dbg.traced_for,
                fun_name=dbg.fun_name,
            )
        if positions:
            return errors.TracerOrigin(
                description=f"{head} This value depends on the function's traced arguments.",
                traced_for=dbg.traced_for,
                fun_name=dbg.fun_name,
            )
        if outer:
            inner = outer[0]._origin()
            if inner is not None:
                inner.description = (
                    f"{head} The value depends on a traced value captured from an enclosing "
                    f"transformation.\n{inner.description}"
                )
                return inner
        prims = ", ".join(dict.fromkeys(e.primitive.name for e in eqns[-5:]))
        return errors.TracerOrigin(
            description=(
                f"{head} This value does not depend on the function's arguments; it became a tracer "
                f"because it was computed by morphax operations ({prims}) while tracing. To keep a "
                "constant concrete, compute it with NumPy (`np`) instead."
            ),
            traced_for=dbg.traced_for,
            fun_name=dbg.fun_name,
        )

    def to_closed_jaxpr(self, outs) -> ClosedJaxpr:
        outvars = [self.to_var(x) for x in outs]
        jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns)
        return ClosedJaxpr(jaxpr, self.consts)


def trace_to_jaxpr(
    flat_fun, in_avals, *, check_outputs=None, debug_info: DebugInfo | None = None
) -> ClosedJaxpr:
    """Trace `flat_fun` (flat list of args -> flat list of outputs) on abstract inputs and
    return the closed jaxpr. `debug_info` (optional) names the function and its flat inputs in
    the errors raised while tracing.
    """
    with _trace.new_trace(StagingTrace(debug_info)) as trace:
        args = [trace.new_arg(a) for a in in_avals]
        outs = flat_fun(*args)
        if check_outputs is not None:
            check_outputs(outs)
        closed = trace.to_closed_jaxpr(outs)
    if config.check_tracer_leaks:
        del args, outs
        _check_no_leaked_tracers(trace, debug_info)
    return closed


def _check_no_leaked_tracers(trace, debug_info) -> None:
    """jax_check_tracer_leaks: after a trace ends, none of its tracers may still be alive (one
    kept in a global or a closure would carry a value without meaning out of the trace)."""
    import gc

    gc.collect()
    leaked = [t for t in gc.get_referrers(trace) if isinstance(t, Tracer) and t._trace is trace]
    if not leaked:
        return
    holders = sorted({type(h).__name__ for t in leaked for h in gc.get_referrers(t) if h is not leaked})
    where = f" of {debug_info.func_src_info} for {debug_info.traced_for}" if debug_info is not None else ""
    raise Exception(  # noqa: TRY002 - JAX raises a plain Exception here too
        f"Leaked trace{where}: {len(leaked)} tracer(s) outlived it ({', '.join(map(repr, leaked[:3]))}), "
        f"referred to by objects of type {', '.join(holders) or 'unknown'}. A traced value was stored "
        "outside the function (a global, a list, self); return it instead."
    )


def closure_convert_tracers(closed: ClosedJaxpr):
    """Turn constants that are tracers of enclosing transformations into leading inputs.
    Returns the new closed jaxpr and those tracers (to pass as its first arguments)."""
    idx = [i for i, c in enumerate(closed.consts) if isinstance(c, Tracer)]
    if not idx:
        return closed, []
    jaxpr = closed.jaxpr
    keep = [i for i in range(len(closed.consts)) if i not in idx]
    new = Jaxpr(
        [jaxpr.constvars[i] for i in keep],
        [jaxpr.constvars[i] for i in idx] + list(jaxpr.invars),
        jaxpr.outvars,
        jaxpr.eqns,
        jaxpr.debug_info,
    )
    return ClosedJaxpr(new, [closed.consts[i] for i in keep]), [closed.consts[i] for i in idx]


def call_out_avals(what: str, in_avals, closed: ClosedJaxpr) -> list:
    """Abstract evaluation of a call-like primitive carrying `closed`: the arguments must have
    the jaxpr's input types; the outputs are its output types."""
    expected = closed.in_avals
    if len(in_avals) != len(expected) or any(
        a.shape != b.shape or a.dtype != b.dtype for a, b in zip(in_avals, expected)
    ):
        raise TypeError(
            f"{what}: called with argument types {[a.str_short() for a in in_avals]} but its jaxpr "
            f"takes {[a.str_short() for a in expected]}"
        )
    return list(closed.out_avals)


def eval_call_jaxpr(closed: ClosedJaxpr, args) -> list:
    """Evaluate a call-like primitive's jaxpr; literal or constant outputs still come back as
    arrays of the declared type."""
    outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return [
        o
        if is_concrete_array(o) or isinstance(o, Tracer)
        else make_array(o, dtype=a.dtype, weak_type=a.weak_type)
        for o, a in zip(outs, closed.out_avals)
    ]


def is_constant_value(x) -> bool:
    """True for values that are not tracers (usable as constants while staging)."""
    return not isinstance(x, Tracer) or isinstance(x, np.ndarray)
