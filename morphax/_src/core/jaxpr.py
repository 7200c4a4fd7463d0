"""The jaxpr IR: variables, literals, equations, (closed) jaxprs, the printer, checker and evaluator.

Printing follows JAX's textual form exactly, e.g.
``{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }`` spread over lines.
Depends on avals and primitives only.
"""

from __future__ import annotations

import collections
import itertools
import re

import numpy as np

from morphax._src.core import pretty_printer as pp
from morphax._src.core.avals import ShapedArray
from morphax._src.core.effects import eqn_effects, jaxpr_effects


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
    # As JAX 0.10 prints a literal: a Python scalar as written, an array's value as the Python
    # scalar it converts to (a float32 0.1 prints as 0.10000000149011612).
    if type(val) in (bool, int, float, complex):
        return str(val)
    v = np.asarray(val)
    if v.dtype == np.bool_:
        return str(bool(v))
    if v.dtype.kind in "biufc" or v.dtype.name in _ML_FLOATS:
        # ml_dtypes' bfloat16 and float8s (kind "V") too: 0.0 and 1.046875, not 0 and 1.04688.
        return str(v.item())
    return str(v)


_ML_FLOATS = frozenset(
    "bfloat16 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz float8_e4m3b11fnuz float8_e4m3 "
    "float8_e3m4 float8_e8m0fnu float4_e2m1fn float6_e2m3fn float6_e3m2fn int4 uint4 int2 uint2".split()
)


class JaxprEqn:
    __slots__ = ("primitive", "invars", "outvars", "params", "source_info")

    def __init__(self, primitive, invars, outvars, params, source_info=None):
        self.primitive = primitive
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = params
        self.source_info = source_info

    @property
    def effects(self) -> set:
        """The effects of this equation (core/effects.py), as JAX's `JaxprEqn.effects`."""
        return eqn_effects(self)

    def replace(self, **kw):
        new = JaxprEqn(self.primitive, self.invars, self.outvars, self.params, self.source_info)
        for k, v in kw.items():
            if k == "effects":  # derived from the primitive and params here, not stored
                continue
            setattr(new, k, v)
        return new

    def __repr__(self):
        return pp.format_doc(_eqn_doc(self, _NameContext()))


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

    def pretty_print(self, *, print_shapes=True, width=80, custom_pp_eqn_rules=True, **_):
        return pretty_print(
            self, print_shapes=print_shapes, width=width, custom_pp_eqn_rules=custom_pp_eqn_rules
        )


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

    def pretty_print(self, **kw):
        return self.jaxpr.pretty_print(**kw)

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


# ------------------------------------------------------------------------------------------- printer
#
# The printer builds a layout document (core/pretty_printer.py) with the structure JAX's printer
# uses, so that a jaxpr breaks into lines (80 columns) and names its variables as JAX 0.10 does:
# - names are handed out in order of appearance (a, b, ..., z, ba, ...), one sequence for the
#   whole printout, inner jaxprs continuing it;
# - a primitive may rewrite what is printed of its parameters (``pp_params``) and put some first
#   (``pp_leading_params``), as JAX's per-primitive printing rules do;
# - a primitive with ``pp_shares_names`` (jit) names its jaxpr's inputs and outputs after the
#   equation's operands and results, so a call reads like its caller;
# - results of the top-level jaxpr that nothing reads print as ``_``;
# - a jaxpr met more than once, or an inner one of more than 10 equations, is printed once up
#   front as ``let name = { ... } in`` and referred to by name.


def _encode_name(n: int) -> str:
    # a, b, ..., z, ba, bb, ...: base 26 with letters as digits (JAX's scheme).
    s = ""
    while True:
        n, r = divmod(n, 26)
        s = chr(ord("a") + r) + s
        if n == 0:
            return s


class _NameContext:
    def __init__(self, preset: dict | None = None):
        self.names: dict[int, str] = dict(preset or {})
        self.count = 0
        self.shared_jaxprs: dict[int, str] = {}  # id(Jaxpr) -> the name it is printed under
        self.shared_names: set[str] = set()
        self.custom_rules = True  # the primitives' printing rules (pp_rule, pp_params, ...)

    def _fresh(self) -> str:
        while True:
            name = _encode_name(self.count)
            self.count += 1
            if name not in self.shared_names:
                return name

    def name(self, v) -> str:
        if isinstance(v, Literal):
            return repr(v)
        if isinstance(v, DropVar):
            return "_"
        key = id(v)
        got = self.names.get(key)
        if got is None:
            got = self.names[key] = self._fresh() + v.suffix
        return got

    def binder(self, v) -> str:
        return f"{self.name(v)}:{v.aval.str_short()}"

    def suggest_same_names(self, for_vars, like_vars) -> None:
        """Name each of `for_vars` (not yet named) after the matching one of `like_vars`, each of
        those lending its name once."""
        if len(for_vars) != len(like_vars):
            return
        lent: set[int] = set()
        for for_v, like_v in zip(for_vars, like_vars):
            if (
                isinstance(like_v, Var)
                and id(like_v) not in lent
                and isinstance(for_v, Var)
                and id(for_v) not in self.names
            ):
                lent.add(id(like_v))
                self.names[id(for_v)] = self.name(like_v)


_ADDRESS = re.compile(r" at 0x([0-9a-fA-F]+)")


def _format_value(value) -> str:
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, frozenset):
        return "frozenset({" + ", ".join(repr(e) for e in sorted(value)) + "})"
    # Addresses differ from run to run: X them out as JAX does.
    return _ADDRESS.sub(lambda m: " at 0x" + "X" * len(m.group(1)), str(value))


def _is_jaxpr(x) -> bool:
    return isinstance(x, (Jaxpr, ClosedJaxpr))


def _unwrap(x) -> Jaxpr:
    return x.jaxpr if isinstance(x, ClosedJaxpr) else x


def _vars_doc(vs, names: _NameContext, *, separator: str = "", shapes: bool = False):
    docs = [pp.text(names.binder(v) if shapes else names.name(v)) for v in vs]
    return pp.nest(2, pp.group(pp.join(pp.text(separator) + pp.group(pp.brk()), docs)))


def _param_doc(key, value, names: _NameContext, shapes: bool):
    if type(value) is tuple and all(_is_jaxpr(x) for x in value):
        inner = pp.join(pp.brk(), [_jaxpr_doc(_unwrap(x), names, shapes) for x in value])
        body = pp.nest(2, pp.concat([pp.text("("), pp.brk(""), inner]))
        doc = pp.group(pp.concat([body, pp.brk(""), pp.text(")")]))
    elif _is_jaxpr(value):
        doc = _jaxpr_doc(_unwrap(value), names, shapes)
    else:
        doc = pp.text(_format_value(value))
    return pp.text(f"{key}=") + doc


def _eqn_doc(eqn: JaxprEqn, names: _NameContext, shapes: bool = True):
    prim = eqn.primitive
    params = eqn.params
    custom = names.custom_rules  # False: every parameter as it is, in sorted order
    pp_rule = prim.pp_rule if custom else None  # refs' ``a[i] <- b``
    if pp_rule is not None:
        return pp.text(pp_rule(eqn, names))
    hidden = prim.print_hidden_defaults if custom else None
    if hidden and params:
        params = {k: v for k, v in params.items() if k not in hidden or hidden[k] is not v}
    rewrite = prim.pp_params if custom else None  # (eqn, params) -> params
    if rewrite is not None:
        params = rewrite(eqn, dict(params))
    if custom and prim.pp_shares_names:
        call = params.get(prim.call_jaxpr_param)
        if call is not None and id(_unwrap(call)) not in names.shared_jaxprs:
            names.suggest_same_names(_unwrap(call).invars, eqn.invars)
            names.suggest_same_names(_unwrap(call).outvars, eqn.outvars)
    leading = [k for k in prim.pp_leading_params if k in params] if custom else []
    keys = leading + sorted(k for k in params if k not in leading)
    # Built in this order (results, parameters, operands) so that names are handed out in it.
    lhs = _vars_doc(eqn.outvars, names, shapes=shapes)
    kvs = pp.nil()
    if keys:
        pairs = pp.join(pp.brk(), [_param_doc(k, params[k], names, shapes) for k in keys])
        opened = pp.nest(2, pp.concat([pp.text("["), pp.brk(""), pairs]))
        kvs = pp.group(pp.concat([opened, pp.brk(""), pp.text("]")]))
    rhs = [pp.text(prim.name), kvs, pp.text(" ") + _vars_doc(eqn.invars, names)]
    if eqn.outvars:
        return pp.concat([lhs, pp.text(" = "), *rhs])
    return pp.concat(rhs)


def _skeleton_doc(jaxpr: Jaxpr, names: _NameContext, shapes: bool):
    consts = _vars_doc(jaxpr.constvars, names, shapes=shapes)
    ins = _vars_doc(jaxpr.invars, names, shapes=shapes)
    eqns = pp.join(pp.brk("; "), [_eqn_doc(e, names, shapes) for e in jaxpr.eqns])
    close = ")" if len(jaxpr.outvars) != 1 else ",)"
    outs = pp.concat([pp.text("("), _vars_doc(jaxpr.outvars, names, separator=","), pp.text(close)])
    body = [pp.text("{ lambda "), consts, pp.text("; "), ins, pp.text(". let")]
    body += [pp.nest(2, pp.brk() + eqns), pp.brk(), pp.text("in "), outs]
    return pp.group(pp.nest(2, pp.concat(body)) + pp.text(" }"))


def _jaxpr_doc(jaxpr: Jaxpr, names: _NameContext, shapes: bool):
    shared = names.shared_jaxprs.get(id(jaxpr))
    if shared is not None:
        return pp.text(shared)
    return _skeleton_doc(jaxpr, names, shapes)


def _unread_results(jaxpr: Jaxpr) -> dict[int, str]:
    # Equation results that nothing reads, named ``_`` (top level only, as JAX prints).
    out: dict[int, str] = {}
    read = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if id(v) not in read:
                out[id(v)] = "_"
        read.update(id(v) for v in eqn.invars if isinstance(v, Var))
    return out


def _shared_jaxprs(top: Jaxpr) -> list[tuple[str, Jaxpr]]:
    """The inner jaxprs printed once up front, with their names: those met more than once and
    those of more than 10 equations, named after the jit call holding them, else "jaxpr"."""
    counts: dict[int, int] = {}
    objs: dict[int, Jaxpr] = {}
    first_name: dict[int, str] = {}
    queue = collections.deque([top])
    while queue:
        j = queue.popleft()
        counts[id(j)] = counts.get(id(j), 0) + 1 + (j is not top and len(j.eqns) > 10)
        objs[id(j)] = j
        for eqn in j.eqns:
            subs = [_unwrap(x) for x in sub_jaxprs(eqn.params)]
            queue.extend(subs)
            # Named after a jit call's name= (JAX's custom-rule calls show a name when printed
            # but hold none: their jaxprs go by "jaxpr").
            name = eqn.params.get("name") if eqn.primitive.pp_shares_names else None
            if isinstance(name, str):
                for sub in subs:
                    first_name.setdefault(id(sub), name.strip("<>"))
    taken: collections.Counter = collections.Counter()
    shared = []
    for key, c in counts.items():
        if c == 1:
            continue
        name = first_name.get(key, "jaxpr")
        n = taken[name]
        taken[name] += 1
        if n > 0:
            name += str(n)
            taken[name] += 1
        shared.append((name, objs[key]))
    return shared


def _toplevel_doc(jaxpr: Jaxpr, names: _NameContext, shapes: bool):
    names.names.update(_unread_results(jaxpr))
    shared = _shared_jaxprs(jaxpr)
    for name, j in shared:
        names.shared_names.add(name)
        names.shared_jaxprs[id(j)] = name
    docs = []
    for name, j in shared:
        docs.append(pp.text(f"let {name} = ") + _skeleton_doc(j, names, shapes))
        docs.append(pp.text(" in") + pp.brk())
    docs.append(_jaxpr_doc(jaxpr, names, shapes))
    return pp.concat(docs)


def pretty_print(
    jaxpr: Jaxpr, *, print_shapes: bool = True, width: int = 80, custom_pp_eqn_rules: bool = True
) -> str:
    names = _NameContext()
    names.custom_rules = custom_pp_eqn_rules
    return pp.format_doc(_toplevel_doc(jaxpr, names, print_shapes), width)


def _print_jaxpr(jaxpr: Jaxpr, names: _NameContext, indent: int = 0) -> str:
    """`jaxpr` printed with the name context `names` (which keeps the names handed out, for
    code generators that label their output as the printed jaxpr does)."""
    del indent
    return pp.format_doc(_toplevel_doc(jaxpr, names, True))


def _print_eqn(eqn: JaxprEqn, names: _NameContext, indent: int = 0) -> str:
    del indent
    return pp.format_doc(_eqn_doc(eqn, names))


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
