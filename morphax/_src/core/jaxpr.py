"""The jaxpr IR: variables, literals, equations, (closed) jaxprs, the printer, checker and evaluator.

Printing follows JAX's textual form exactly, e.g.
``{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }`` spread over lines.
Depends on avals and primitives only.
"""

from __future__ import annotations

import itertools

import numpy as np

from morphax._src.core.avals import ShapedArray
from morphax._src.core.effects import jaxpr_effects


class Var:
    """A jaxpr variable; its printed name is assigned when printing, by order of appearance."""

    __slots__ = ("aval", "suffix")
    _counter = itertools.count()

    def __init__(self, aval: ShapedArray, suffix: str = ""):
        self.aval = aval
        self.suffix = suffix

    def __repr__(self):
        return f"Var(id={id(self):x}):{self.aval.str_short()}"


class DropVar(Var):
    """An output nobody reads (printed ``_``)."""

    __slots__ = ()


class Literal:
    """A scalar constant written inline in an equation (``2.0:f32[]``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"{_literal_str(self.val)}:{self.aval.str_short()}"


def _literal_str(val) -> str:
    v = np.asarray(val)
    if v.dtype == np.bool_:
        return str(bool(v))
    item = v.item() if v.dtype.kind in "biufc" else v
    if isinstance(item, float) and v.dtype != np.float64:
        # Shortest repr that round-trips in the literal's own precision, as JAX prints.
        return str(v[()]) if v.shape == () else str(item)
    return str(item)


class JaxprEqn:
    __slots__ = ("primitive", "invars", "outvars", "params", "source_info")

    def __init__(self, primitive, invars, outvars, params, source_info=None):
        self.primitive = primitive
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = params
        self.source_info = source_info

    def replace(self, **kw):
        new = JaxprEqn(self.primitive, self.invars, self.outvars, self.params, self.source_info)
        for k, v in kw.items():
            setattr(new, k, v)
        return new

    def __repr__(self):
        return _print_eqn(self, _NameContext(), 0)


class Jaxpr:
    """constvars and invars in, outvars out, a list of equations in between."""

    # _memo: results derived from this jaxpr (core/memo.py), freed with it.
    __slots__ = ("constvars", "invars", "outvars", "eqns", "debug_info", "_memo")

    def __init__(self, constvars, invars, outvars, eqns, debug_info=None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.debug_info = debug_info
        self._memo = None

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    @property
    def effects(self) -> set:
        """The effects of its equations (core/effects.py), e.g. ``{DebugEffect}`` for a print."""
        return jaxpr_effects(self)

    def __str__(self):
        return pretty_print(self)

    __repr__ = __str__

    def pretty_print(self, **_):
        return pretty_print(self)


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    # _memo: results derived from this closed jaxpr (core/memo.py: compiled executables, JVP and
    # batched forms), freed with it together with the constants.
    __slots__ = ("jaxpr", "consts", "_memo", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts):
        assert len(consts) == len(jaxpr.constvars)
        self.jaxpr = jaxpr
        self.consts = list(consts)
        self._memo = None

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    effects = property(lambda self: self.jaxpr.effects)

    def __str__(self):
        return pretty_print(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, **_):
        return pretty_print(self.jaxpr)

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


# ------------------------------------------------------------------------------------------- printer


def _encode_name(n: int) -> str:
    # a, b, ..., z, ba, bb, ...: base 26 with letters as digits (JAX's scheme).
    s = ""
    while True:
        n, r = divmod(n, 26)
        s = chr(ord("a") + r) + s
        if n == 0:
            return s


class _NameContext:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.count = 0

    def name(self, v) -> str:
        if isinstance(v, Literal):
            return repr(v)
        if isinstance(v, DropVar):
            return "_"
        key = id(v)
        got = self.names.get(key)
        if got is None:
            got = self.names[key] = _encode_name(self.count) + v.suffix
            self.count += 1
        return got

    def binder(self, v) -> str:
        return f"{self.name(v)}:{v.aval.str_short()}"


def _format_param(value, names: _NameContext, indent: int) -> str:
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
        inner = value.jaxpr if isinstance(value, ClosedJaxpr) else value
        return _print_jaxpr(inner, names, indent)
    if isinstance(value, (tuple, list)) and value and all(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in value):
        parts = [_format_param(x, names, indent + 2) for x in value]
        return "(\n" + "".join(" " * (indent + 2) + p + "\n" for p in parts) + " " * indent + ")"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return str(value)


def _has_subjaxpr(params) -> bool:
    for v in params.values():
        if isinstance(v, (Jaxpr, ClosedJaxpr)):
            return True
        if isinstance(v, (tuple, list)) and any(isinstance(x, (Jaxpr, ClosedJaxpr)) for x in v):
            return True
    return False


def _print_eqn(eqn: JaxprEqn, names: _NameContext, indent: int) -> str:
    pp_rule = getattr(eqn.primitive, "pp_rule", None)  # the ref operations' ``a[i] <- b``
    if pp_rule is not None:
        return pp_rule(eqn, names)
    lhs = " ".join(names.binder(v) for v in eqn.outvars)
    rhs_args = " ".join(names.name(v) for v in eqn.invars)
    params = eqn.params
    hidden = eqn.primitive.print_hidden_defaults
    if hidden and params:
        params = {k: v for k, v in params.items() if k not in hidden or hidden[k] is not v}
    if not params:
        head = eqn.primitive.name
    elif _has_subjaxpr(params):
        pad = " " * (indent + 2)
        lines = [f"{pad}{k}={_format_param(v, names, indent + 2)}" for k, v in sorted(params.items())]
        head = eqn.primitive.name + "[\n" + "\n".join(lines) + "\n" + " " * indent + "]"
    else:
        head = (
            eqn.primitive.name
            + "["
            + " ".join(f"{k}={_format_param(v, names, 0)}" for k, v in sorted(params.items()))
            + "]"
        )
    rhs = f"{head} {rhs_args}" if rhs_args else head
    return f"{lhs} = {rhs}" if lhs else rhs


def _print_jaxpr(jaxpr: Jaxpr, names: _NameContext, indent: int) -> str:
    consts = " ".join(names.binder(v) for v in jaxpr.constvars)
    ins = " ".join(names.binder(v) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {ins}. let" if consts else f"{{ lambda ; {ins}. let"
    body = [" " * (indent + 4) + _print_eqn(e, names, indent + 4) for e in jaxpr.eqns]
    outs = ", ".join(names.name(v) for v in jaxpr.outvars)
    outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
    if not body:
        return f"{head}  in {outs} }}"
    return head + "\n" + "\n".join(body) + "\n" + " " * (indent + 2) + f"in {outs} }}"


def pretty_print(jaxpr: Jaxpr) -> str:
    return _print_jaxpr(jaxpr, _NameContext(), 0)


# ------------------------------------------------------------------------------------------- checker


class JaxprTypeError(TypeError):
    pass


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
    # Weak types may differ between an equation's recorded output and a re-derivation.
    return a.shape == b.shape and a.dtype == b.dtype


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Verify scoping (defined once, before use) and that every equation's recorded output types
    agree with its primitive's abstract evaluation. Raises `JaxprTypeError` naming the equation."""
    defined: set[int] = set()

    def define(v, where):
        if isinstance(v, DropVar):
            return
        if id(v) in defined:
            raise JaxprTypeError(f"check_jaxpr: variable {v} defined twice ({where})")
        defined.add(id(v))

    def read(v, where):
        if isinstance(v, Literal):
            return v.aval
        if id(v) not in defined:
            raise JaxprTypeError(f"check_jaxpr: variable {v} used before it is defined ({where})")
        return v.aval

    for v in jaxpr.constvars:
        define(v, "constvars")
    for v in jaxpr.invars:
        define(v, "invars")
    for i, eqn in enumerate(jaxpr.eqns):
        where = f"equation {i}: {eqn}"
        in_avals = [read(v, where) for v in eqn.invars]
        out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
        out_avals = list(out) if eqn.primitive.multiple_results else [out]
        if len(out_avals) != len(eqn.outvars):
            raise JaxprTypeError(
                f"check_jaxpr: {where} has {len(eqn.outvars)} outputs, expected {len(out_avals)}"
            )
        for got, want in zip(eqn.outvars, out_avals):
            if not _typematch(got.aval, want):
                raise JaxprTypeError(
                    f"check_jaxpr: {where} records output type {got.aval.str_short()} but "
                    f"{eqn.primitive.name} produces {want.str_short()}"
                )
        for v in eqn.outvars:
            define(v, where)
    for v in jaxpr.outvars:
        read(v, "outvars")


# ----------------------------------------------------------------------------------------- evaluator


def interpret(jaxpr: Jaxpr, consts, args, run_eqn) -> list:
    """Walk `jaxpr` in order, computing each equation with ``run_eqn(eqn, input values)`` (a list
    of outputs for a multiple-results primitive); returns the output values. Every jaxpr
    interpreter (eval_jaxpr, checkify, state discharge) is this loop with its own `run_eqn`."""
    env: dict[int, object] = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x

    def read(v):
        return v.val if type(v) is Literal else env[id(v)]

    for eqn in jaxpr.eqns:
        out = run_eqn(eqn, [read(v) for v in eqn.invars])
        if eqn.primitive.multiple_results:
            for v, x in zip(eqn.outvars, out):
                env[id(v)] = x
        else:
            env[id(eqn.outvars[0])] = out
    return [read(v) for v in jaxpr.outvars]


def _bind_eqn(eqn, ins):
    return eqn.primitive.bind(*ins, **eqn.params)


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
    """Interpret `jaxpr` by binding each equation's primitive, so it runs under whatever trace is
    current (eagerly, or inside another transformation). Returns the list of outputs."""
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"eval_jaxpr: jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    return interpret(jaxpr, consts, args, _bind_eqn)


def jaxpr_as_fun(closed: ClosedJaxpr):
    def fun(*args):
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)

    return fun


def literal_from_value(x, aval: ShapedArray) -> Literal:
    """Keep the original value (an Array keeps its weak type when the jaxpr is evaluated)."""
    return Literal(x, aval)


def sub_jaxprs(params) -> list:
    """Every Jaxpr / ClosedJaxpr held in an equation's `params`, directly or in a tuple/list
    (cond's branches): the one place that knows where higher-order primitives keep jaxprs."""
    out = []
    for v in params.values():
        if isinstance(v, (Jaxpr, ClosedJaxpr)):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            out.extend(x for x in v if isinstance(x, (Jaxpr, ClosedJaxpr)))
    return out


def any_eqn(jaxpr, predicate) -> bool:
    """Whether `predicate(eqn)` holds for an equation of `jaxpr` or of any jaxpr nested in it
    (control flow bodies and branches, nested jit calls, custom-rule calls, remat, ...)."""
    j = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    for eqn in j.eqns:
        if predicate(eqn):
            return True
        if eqn.primitive.higher_order and any(any_eqn(sub, predicate) for sub in sub_jaxprs(eqn.params)):
            return True
    return False


def split_list(xs, *sizes) -> list:
    """Split `xs` into consecutive groups of the given sizes plus the rest (len(sizes) + 1 lists):
    how call-like equations lay out their operand groups."""
    out, i = [], 0
    for n in sizes:
        out.append(list(xs[i : i + n]))
        i += n
    out.append(list(xs[i:]))
    return out
