"""Symbolic jaxprs by sampling: a function traced at several concrete values of its dimension
variables, the traces unified into one template jaxpr whose size-dependent numbers (shapes,
params, literals) are dimension expressions fitted exactly, then instantiated at a call's sizes.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np

from morphax._src.core.avals import ShapedArray
from morphax._src.core.jaxpr import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var
from morphax._src.core.primitive import Primitive
from morphax._src.core.values import is_concrete_array
from morphax._src.export.dim_expr import _DimExpr, is_symbolic_dim


class StructureMismatch(Exception):
    """Two traces (or a trace and an instantiated template) differ beyond their numbers."""

    def __init__(self, path, detail: str):
        self.where = " / ".join(path) or "the top level"
        self.detail = detail
        super().__init__(f"{detail} (at {self.where})")


@dataclasses.dataclass(frozen=True)
class Hole:
    """A number that is not a plain int in the template (a float literal, a NumPy scalar, a 0-d
    array): its value is `expr` at the call's sizes, converted to `kind` ("float", "complex" or
    a NumPy dtype name, `as_array` for 0-d arrays)."""

    expr: object
    kind: str
    as_array: bool = False

    def value(self, env):
        v = self.expr._evaluate(env) if is_symbolic_dim(self.expr) else int(self.expr)
        if self.kind in ("float", "complex", "int"):
            return {"float": float, "complex": complex, "int": int}[self.kind](v)
        return np.asarray(v, np.dtype(self.kind)) if self.as_array else np.dtype(self.kind).type(v)

    def __str__(self):
        return str(self.expr)


def _is_number(x) -> bool:
    return isinstance(
        x, (int, float, complex, np.integer, np.floating, np.complexfloating)
    ) and not isinstance(x, (bool, np.bool_))


def _kind(x) -> str:
    if isinstance(x, np.generic):
        return x.dtype.name
    return type(x).__name__


def _is_callable_atom(x) -> bool:
    return callable(x) and not isinstance(x, (type, Primitive, ClosedJaxpr, Jaxpr))


class Unifier:
    """Walks corresponding objects of several traces together; `fit(values, path)` gives the
    template's value where numbers differ (or raises StructureMismatch)."""

    def __init__(self, n: int, fit):
        self.n, self.fit = n, fit
        self.var_maps = [dict() for _ in range(n)]
        self.memo: dict = {}
        self.keep: list = []  # the traces' objects stay alive while their ids are keys

    def unify(self, objs, path):
        x0 = objs[0]
        t = type(x0)
        if all(isinstance(o, np.ndarray) or is_concrete_array(o) for o in objs):
            return self._array(objs, path)
        if _is_number(x0) and all(_is_number(o) for o in objs):
            return x0 if all(o == x0 for o in objs[1:]) else self.fit(list(objs), path)
        if any(type(o) is not t for o in objs[1:]):
            raise StructureMismatch(
                path, f"a {t.__name__} in one trace is a {type(objs[1]).__name__} in another"
            )
        if t is bool or t is np.bool_ or x0 is None or isinstance(x0, (str, bytes)):
            return self._atom(objs, path)
        handler = _HANDLERS.get(t)
        if handler is not None:
            return handler(self, objs, path)
        if isinstance(x0, (Var, ShapedArray)):
            return _HANDLERS[Var if isinstance(x0, Var) else ShapedArray](self, objs, path)
        if isinstance(x0, tuple) and hasattr(t, "_fields"):
            fields = [
                self.unify([o[i] for o in objs], [*path, f"field {f}"]) for i, f in enumerate(t._fields)
            ]
            return t._make(fields)
        if dataclasses.is_dataclass(x0) and not isinstance(x0, type):
            return self._dataclass(objs, path)
        if _is_callable_atom(x0):
            same = all(
                o is x0
                or (getattr(o, "__qualname__", None), getattr(o, "__module__", None))
                == (getattr(x0, "__qualname__", 0), getattr(x0, "__module__", 0))
                for o in objs[1:]
            )
            if not same:
                raise StructureMismatch(path, f"different functions {x0!r} and {objs[1]!r}")
            return x0
        return self._atom(objs, path)

    def _atom(self, objs, path):
        x0 = objs[0]
        for o in objs[1:]:
            try:
                equal = o is x0 or bool(o == x0)
            except Exception:  # noqa: BLE001 - an object that cannot say: not the same
                equal = False
            if not equal:
                raise StructureMismatch(path, f"{x0!r} in one trace is {o!r} in another")
        return x0

    def _array(self, objs, path):
        arrays = [np.asarray(o) for o in objs]
        a0 = arrays[0]
        if all(
            a.shape == a0.shape and a.dtype == a0.dtype and np.array_equal(a, a0, equal_nan=True)
            for a in arrays
        ):
            return objs[0]
        if a0.ndim == 0 and all(a.shape == () and a.dtype == a0.dtype for a in arrays):
            got = self.fit([a.item() for a in arrays], path)
            return Hole(got.expr if isinstance(got, Hole) else got, a0.dtype.name, as_array=True)
        raise StructureMismatch(
            path, f"a constant array differs between the traces ({a0.shape} vs {arrays[1].shape})"
        )

    def _dataclass(self, objs, path):
        x0 = objs[0]
        out = None
        for f in dataclasses.fields(x0):
            vals = [getattr(o, f.name) for o in objs]
            new = self.unify(vals, [*path, f"field {f.name}"])
            if new is not vals[0]:
                out = out or copy.copy(x0)
                object.__setattr__(out, f.name, new)
        return x0 if out is None else out


def _unify_seq(u: Unifier, objs, path):
    if any(len(o) != len(objs[0]) for o in objs[1:]):
        raise StructureMismatch(
            path, f"a sequence of length {len(objs[0])} has length {len(objs[1])} in another trace"
        )
    items = [u.unify([o[i] for o in objs], [*path, f"[{i}]"]) for i in range(len(objs[0]))]
    return type(objs[0])(items)


def _unify_dict(u: Unifier, objs, path):
    keys = list(objs[0])
    if any(list(o) != keys for o in objs[1:]):
        raise StructureMismatch(path, f"keys {keys} are {list(objs[1])} in another trace")
    return {k: u.unify([o[k] for o in objs], [*path, f"param {k!r}"]) for k in keys}


def _unify_aval(u: Unifier, objs, path):
    a0 = objs[0]
    if type(a0) is not ShapedArray:
        return u._atom(objs, path)
    if any(len(a.shape) != len(a0.shape) for a in objs):
        raise StructureMismatch(path, f"rank {len(a0.shape)} differs from {len(objs[1].shape)}")
    u._atom([a.dtype for a in objs], [*path, "dtype"])
    u._atom([a.weak_type for a in objs], [*path, "weak_type"])
    shape = tuple(u.unify([a.shape[i] for a in objs], [*path, f"shape[{i}]"]) for i in range(len(a0.shape)))
    return ShapedArray(shape, a0.dtype, a0.weak_type)


def _unify_var(u: Unifier, objs, path):
    v0 = objs[0]
    known = u.var_maps[0].get(id(v0))
    if known is not None:
        for t in range(1, u.n):
            if u.var_maps[t].get(id(objs[t])) is not known:
                raise StructureMismatch(path, "the equations read different variables")
        return known
    if any(id(o) in u.var_maps[t] for t, o in enumerate(objs)):
        raise StructureMismatch(path, "the equations read different variables")
    new = type(v0)(_unify_aval(u, [o.aval for o in objs], [*path, "type"]), v0.suffix)
    for t, o in enumerate(objs):
        u.var_maps[t][id(o)] = new
    u.keep.append(objs)
    return new


def _unify_literal(u: Unifier, objs, path):
    return Literal(u.unify([o.val for o in objs], path), _unify_aval(u, [o.aval for o in objs], path))


def _unify_eqn(u: Unifier, objs, path):
    e0 = objs[0]
    here = [*path, f"equation {e0.primitive.name}"]
    if any(e.primitive is not e0.primitive for e in objs):
        raise StructureMismatch(
            path, f"equation {e0.primitive.name} is {objs[1].primitive.name} in another trace"
        )
    ins = _unify_seq(u, [e.invars for e in objs], [*here, "operands"])
    params = _unify_dict(u, [e.params for e in objs], here)
    outs = _unify_seq(u, [e.outvars for e in objs], [*here, "results"])
    return JaxprEqn(e0.primitive, ins, outs, params, e0.source_info)


def _unify_jaxpr(u: Unifier, objs, path):
    key = tuple(id(o) for o in objs)
    if key in u.memo:
        return u.memo[key]
    j0 = objs[0]
    if any(len(j.eqns) != len(j0.eqns) for j in objs):
        raise StructureMismatch(
            path, f"{len(j0.eqns)} equations in one trace, {len(objs[1].eqns)} in another"
        )
    constvars = _unify_seq(u, [j.constvars for j in objs], [*path, "constants"])
    invars = _unify_seq(u, [j.invars for j in objs], [*path, "inputs"])
    eqns = [u.unify([j.eqns[i] for j in objs], [*path, f"equation {i}"]) for i in range(len(j0.eqns))]
    outvars = _unify_seq(u, [j.outvars for j in objs], [*path, "outputs"])
    out = u.memo[key] = Jaxpr(constvars, invars, outvars, eqns, j0.debug_info)
    u.keep.append(objs)
    return out


def _unify_closed(u: Unifier, objs, path):
    key = tuple(id(o) for o in objs)
    if key in u.memo:
        return u.memo[key]
    jaxpr = _unify_jaxpr(u, [c.jaxpr for c in objs], path)
    consts = [
        u._array([c.consts[i] for c in objs], [*path, f"constant {i}"]) for i in range(len(jaxpr.constvars))
    ]
    out = u.memo[key] = ClosedJaxpr(jaxpr, consts)
    u.keep.append(objs)
    return out


_HANDLERS = {
    list: _unify_seq,
    tuple: _unify_seq,
    dict: _unify_dict,
    ShapedArray: _unify_aval,
    Var: _unify_var,
    DropVar: _unify_var,
    Literal: _unify_literal,
    JaxprEqn: _unify_eqn,
    Jaxpr: _unify_jaxpr,
    ClosedJaxpr: _unify_closed,
}


# ------------------------------------------------------------------------------------ fitting
class Sampling:
    """Where to trace: for dimension variables v_1..v_k, a base point, the base moved by one in
    each variable and in each pair of variables (so each number is fitted exactly as a
    polynomial in the monomials 1, v_i, v_i*v_j), and further points to verify the fit."""

    def __init__(self, names, scope, valid):
        self.names, self.scope = list(names), scope
        k = len(self.names)
        self.monomials = [()] + [(i,) for i in range(k)] + list(itertools.combinations(range(k), 2))
        for base, step in ((11, 6), (101, 12), (1009, 20), (5, 4), (3, 2), (2, 1)):
            p0 = [base + step * i for i in range(k)]
            pts = [p0] + [[p + (j == i) for j, p in enumerate(p0)] for i in range(k)]
            pts += [[p + (j in m) for j, p in enumerate(p0)] for m in self.monomials[1 + k :]]
            envs = [dict(zip(self.names, p)) for p in pts]
            if all(valid(env) and scope._satisfied_at(env) for env in envs):
                self.points = envs
                # Verified at a nearby, a small and a large size (a branch on a size shows there).
                checks = [
                    [p + 3 + i for i, p in enumerate(p0)],
                    [2 + i for i in range(k)],
                    [1013 + 6 * i for i in range(k)],
                ]
                checks = [dict(zip(self.names, p)) for p in checks]
                self.checks = [env for env in checks if valid(env) and scope._satisfied_at(env)]
                break
        else:
            raise ValueError(
                f"morphax could not find sizes for the dimension variables {self.names} that satisfy the "
                "symbolic constraints to trace the function at."
            )
        rows = [
            [Fraction(math.prod(env[self.names[i]] for i in m)) for m in self.monomials]
            for env in self.points
        ]
        self.inverse = _invert(rows)
        self.basis = [math.prod(_DimExpr._from_var(self.names[i], scope) for i in m) for m in self.monomials]

    def fit(self, values, path):
        """The dimension expression taking `values` at the points (or a Hole for non-ints)."""
        try:
            ys = [Fraction(v) for v in values]
        except (TypeError, ValueError, OverflowError):
            raise StructureMismatch(
                path, f"the values {values} depend on the sizes in a way morphax cannot express"
            ) from None
        coeffs = [sum(r * y for r, y in zip(row, ys)) for row in self.inverse]
        if any(c.denominator != 1 for c in coeffs):
            raise StructureMismatch(
                path,
                f"the values {values} at the sizes {self.points} are not a polynomial in the dimension "
                "variables with integer coefficients",
            )
        expr = sum((int(c) * b for c, b in zip(coeffs, self.basis) if c != 0), 0)
        v0 = values[0]
        return expr if type(v0) is int else Hole(expr, _kind(v0))


def _invert(rows):
    n = len(rows)
    m = [list(r) + [Fraction(int(i == j)) for j in range(n)] for i, r in enumerate(rows)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if m[r][col] != 0)
        m[col], m[pivot] = m[pivot], m[col]
        p = m[col][col]
        m[col] = [x / p for x in m[col]]
        for r in range(n):
            if r != col and m[r][col] != 0:
                f = m[r][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col])]
    return [row[n:] for row in m]


def mismatch_only(values, path):
    raise StructureMismatch(path, f"the values {values[0]!r} and {values[1]!r} differ")


# ------------------------------------------------------------------------------ instantiation
def instantiate(obj, env: dict, memo: dict):
    """`obj` (a template jaxpr or part of one) with its dimension expressions evaluated at `env`."""
    if is_symbolic_dim(obj):
        return obj._evaluate(env)
    if isinstance(obj, Hole):
        return obj.value(env)
    t = type(obj)
    if (
        t in (int, float, str, bool)
        or obj is None
        or isinstance(obj, (np.generic, np.ndarray, np.dtype, Primitive))
    ):
        return obj
    key = id(obj)
    if key in memo:
        return memo[key][1]
    if isinstance(obj, Var):
        out = t(instantiate(obj.aval, env, memo), obj.suffix)
    elif t is ShapedArray:
        out = ShapedArray(tuple(instantiate(d, env, memo) for d in obj.shape), obj.dtype, obj.weak_type)
    elif t is Literal:
        out = Literal(instantiate(obj.val, env, memo), instantiate(obj.aval, env, memo))
    elif t is JaxprEqn:
        out = JaxprEqn(
            obj.primitive,
            instantiate(obj.invars, env, memo),
            instantiate(obj.outvars, env, memo),
            instantiate(obj.params, env, memo),
            obj.source_info,
        )
    elif t is Jaxpr:
        parts = [instantiate(getattr(obj, f), env, memo) for f in ("constvars", "invars", "outvars", "eqns")]
        out = Jaxpr(*parts, obj.debug_info)
    elif t is ClosedJaxpr:
        out = ClosedJaxpr(instantiate(obj.jaxpr, env, memo), obj.consts)
    elif t in (list, tuple):
        out = t(instantiate(x, env, memo) for x in obj)
    elif isinstance(obj, tuple) and hasattr(t, "_fields"):
        out = t._make(instantiate(x, env, memo) for x in obj)
    elif t is dict:
        out = {k: instantiate(v, env, memo) for k, v in obj.items()}
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = copy.copy(obj)
        for f in dataclasses.fields(obj):
            object.__setattr__(out, f.name, instantiate(getattr(obj, f.name), env, memo))
    else:
        out = obj
    memo[key] = (obj, out)
    return out


def has_symbols(obj, seen=None) -> bool:
    """Whether a template holds any dimension expression (else it is a plain jaxpr)."""
    seen = set() if seen is None else seen
    if is_symbolic_dim(obj) or isinstance(obj, Hole):
        return True
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if isinstance(obj, Var):
        return has_symbols(obj.aval, seen)
    if isinstance(obj, ShapedArray):
        return any(is_symbolic_dim(d) for d in obj.shape)
    if isinstance(obj, Literal):
        return has_symbols(obj.val, seen) or has_symbols(obj.aval, seen)
    if isinstance(obj, JaxprEqn):
        return any(has_symbols(x, seen) for x in (*obj.invars, *obj.outvars, *obj.params.values()))
    if isinstance(obj, Jaxpr):
        return any(has_symbols(x, seen) for x in (*obj.constvars, *obj.invars, *obj.outvars, *obj.eqns))
    if isinstance(obj, ClosedJaxpr):
        return has_symbols(obj.jaxpr, seen)
    if isinstance(obj, (list, tuple)):
        return any(has_symbols(x, seen) for x in obj)
    if isinstance(obj, dict):
        return any(has_symbols(x, seen) for x in obj.values())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return any(has_symbols(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    return False
