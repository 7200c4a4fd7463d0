"""The jaxpr inside a serialized Exported: pickled with primitives as their registry names and
dimension expressions as their text (read back in the deserialized scope), arrays as NumPy arrays,
no source info; calls whose params hold Python rules (custom_jvp/custom_vjp, checkpoint policies)
become plain jit calls of their jaxprs; any other Python callable is an error naming its primitive.
NB: JAX's deserialized functions have no VJP unless one was serialized (vjp_order); morphax's
differentiate the reloaded computation, without its custom rules.
"""

from __future__ import annotations

import functools
import importlib
import io
import os
import pickle
import pkgutil
import types

import numpy as np

from morphax._src.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn
from morphax._src.core.primitive import Primitive, registry
from morphax._src.core.values import is_concrete_array
from morphax._src.export.dim_expr import is_symbolic_dim
from morphax._src.export.shape_specs import parse_expr
from morphax._src.higher_order.pjit import pjit_p

_FUNCTIONS = (
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    functools.partial,
)
_SRC_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What a serialized jaxpr may name: morphax's and NumPy's classes, and plain containers.
_MODULE_ROOTS = {"morphax", "numpy", "ml_dtypes", "collections"}
_BUILTINS = {"tuple", "list", "dict", "set", "frozenset", "slice", "complex", "float", "int", "bool", "str",
             "bytes", "bytearray", "range", "object", "Ellipsis", "NotImplemented"}  # fmt: skip


class SerializationError(ValueError):
    """The exported function's jaxpr holds something with no serialized form."""


def _walk_leaves(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _walk_leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _walk_leaves(v)
    else:
        yield value


def _is_function(x) -> bool:
    """A Python function or callable object (a host callback), which has no serialized form."""
    if isinstance(x, _FUNCTIONS):
        return True
    return callable(x) and not isinstance(x, (type, Primitive, ClosedJaxpr, Jaxpr, np.dtype, np.generic))


class _Preparer:
    """Rewrites a jaxpr for pickling (see the module docstring); shared jaxprs stay shared."""

    def __init__(self, fun_name: str):
        self.fun_name = fun_name
        self.memo: dict = {}

    def closed(self, closed: ClosedJaxpr) -> ClosedJaxpr:
        key = ("closed", id(closed))
        if key not in self.memo:
            consts = [np.asarray(c) if is_concrete_array(c) else c for c in closed.consts]
            self.memo[key] = (closed, ClosedJaxpr(self.jaxpr(closed.jaxpr), consts))
        return self.memo[key][1]

    def jaxpr(self, jaxpr: Jaxpr) -> Jaxpr:
        key = ("open", id(jaxpr))
        if key not in self.memo:
            eqns = [self.eqn(e) for e in jaxpr.eqns]
            self.memo[key] = (jaxpr, Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns, None))
        return self.memo[key][1]

    def value(self, v):
        if isinstance(v, ClosedJaxpr):
            return self.closed(v)
        if isinstance(v, Jaxpr):
            return self.jaxpr(v)
        if isinstance(v, tuple) and hasattr(type(v), "_fields"):
            return type(v)._make(self.value(x) for x in v)
        if isinstance(v, (tuple, list)):
            return type(v)(self.value(x) for x in v)
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        return v

    def eqn(self, e: JaxprEqn) -> JaxprEqn:
        prim = e.primitive
        params = {k: self.value(v) for k, v in e.params.items()}
        param = prim.call_jaxpr_param
        if param is not None and any(_is_function(x) for x in _walk_leaves(list(params.values()))):
            inner = params.get(param)
            if isinstance(inner, Jaxpr):
                inner = ClosedJaxpr(inner, [])
            if (
                isinstance(inner, ClosedJaxpr)
                and len(inner.jaxpr.invars) == len(e.invars)
                and len(inner.jaxpr.outvars) == len(e.outvars)
            ):
                name = params.get("name")
                return JaxprEqn(pjit_p, e.invars, e.outvars, {"jaxpr": inner, "name": str(name or prim.name)})
        self.check(prim, params)
        return JaxprEqn(prim, e.invars, e.outvars, params)

    def check(self, prim, params):
        if registry.get(prim.name) is not prim:
            raise SerializationError(
                f"Cannot serialize the exported function '{self.fun_name}': its primitive '{prim.name}' is "
                "not in morphax's registry of primitives (it was defined outside the catalogue, e.g. with "
                "morphax.extend.core.Primitive), so another process could not look it up by name."
            )
        for name, value in params.items():
            for leaf in _walk_leaves(value):
                if _is_function(leaf):
                    raise SerializationError(
                        f"Cannot serialize the exported function '{self.fun_name}': the parameter '{name}' of "
                        f"its primitive '{prim.name}' holds {leaf!r}, a Python callable, which has no "
                        "serialized form (host callbacks cannot be serialized, as in JAX)."
                    )


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Primitive):
            return ("primitive", obj.name)
        if is_symbolic_dim(obj):
            return ("dim", str(obj))
        return None

    def reducer_override(self, obj):
        t = type(obj)
        if t is JaxprEqn:
            return (JaxprEqn, (obj.primitive, obj.invars, obj.outvars, obj.params))
        if t is Jaxpr:
            return (Jaxpr, (obj.constvars, obj.invars, obj.outvars, obj.eqns))
        if t is ClosedJaxpr:
            return (ClosedJaxpr, (obj.jaxpr, obj.consts))
        if is_concrete_array(obj) and not isinstance(obj, np.ndarray):
            return (np.asarray, (np.asarray(obj),))
        return NotImplemented


def _find_primitive(name: str) -> Primitive:
    prim = registry.get(name)
    if prim is None:  # a primitive registered by a module `import morphax` does not load
        for info in pkgutil.walk_packages([_SRC_DIR], "morphax._src."):
            if name not in registry:
                try:
                    importlib.import_module(info.name)
                except Exception:  # noqa: BLE001 - an optional module that does not load here
                    pass
        prim = registry.get(name)
    if prim is None:
        raise SerializationError(f"Cannot deserialize the exported function: unknown primitive '{name}'.")
    return prim


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, scope):
        super().__init__(file)
        self.scope = scope

    def persistent_load(self, pid):
        kind, value = pid
        if kind == "primitive":
            return _find_primitive(value)
        if kind == "dim":
            return parse_expr(value, self.scope)
        raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")

    def find_class(self, module, name):
        if module.split(".")[0] in _MODULE_ROOTS or (module == "builtins" and name in _BUILTINS):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a serialized jaxpr may not refer to {module}.{name}")


def dumps(closed: ClosedJaxpr, fun_name: str) -> bytes:
    """The bytes of `closed`, prepared for another process."""
    prepared = _Preparer(fun_name).closed(closed)
    buf = io.BytesIO()
    try:
        _Pickler(buf, protocol=5).dump(prepared)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise SerializationError(
            f"Cannot serialize the exported function '{fun_name}': {_culprit(prepared)}({type(e).__name__}: {e})"
        ) from e
    return buf.getvalue()


def _culprit(closed: ClosedJaxpr) -> str:
    """Which equation's params do not pickle, for the error message."""
    stack, seen = [closed.jaxpr], set()
    while stack:
        jaxpr = stack.pop()
        if id(jaxpr) in seen:
            continue
        seen.add(id(jaxpr))
        for e in jaxpr.eqns:
            for name, value in e.params.items():
                inner = [getattr(x, "jaxpr", x) for x in _walk_leaves(value)]
                subs = [x for x in inner if isinstance(x, Jaxpr)]
                if subs:
                    stack.extend(subs)
                    continue
                try:
                    _Pickler(io.BytesIO(), protocol=5).dump(value)
                except Exception:  # noqa: BLE001 - any failure names the culprit
                    return f"the parameter '{name}' of its primitive '{e.primitive.name}' does not pickle "
    return ""


def loads(data: bytes, scope) -> ClosedJaxpr:
    """The jaxpr `dumps` wrote, its dimension expressions parsed in `scope`."""
    return _Unpickler(io.BytesIO(data), scope).load()
