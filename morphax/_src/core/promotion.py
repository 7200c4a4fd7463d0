"""JAX's dtype promotion: the type lattice of strong dtypes and weak Python-scalar kinds, its
least upper bounds, strict promotion, and ``result_type`` with its per-mode cache.

The lattice follows jax.readthedocs.io/en/latest/type_promotion.html. The narrow ml_dtypes types
join the tables here when core.dtypes loads ml_dtypes (its `when_ml_dtypes_loaded` callback).
"""

from __future__ import annotations

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _d
from morphax._src.core.dtypes import (
    _INTN_NAMES,
    _JAX_DTYPES,
    _NARROW_FLOAT_NAMES,
    _NUMERIC,
    _PYTHON_SCALAR_DTYPES,
    _UINTN_NAMES,
    _WEAK_PYTYPES,
    ExtendedDType,
    TypePromotionError,
    _as_dtype,
    _default_dtype_for_kind,
    _kind,
    bool_,
    canonicalize_dtype,
    complex64,
    complex128,
    dtype,
    float32,
    float64,
    int32,
    int64,
    python_scalar_dtype,
)

__all__ = ["promote_types", "result_type"]

# ---------------------------------------------------------------------------------------------
# The promotion lattice. Nodes are dtype names for strong types and 'i*', 'f*', 'c*' for the weak
# Python-scalar kinds; string nodes avoid np.dtype.__eq__ matching Python types (np.dtype(int) == int).

_I, _F, _C = "i*", "f*", "c*"
_WEAK_NODES = frozenset((_I, _F, _C))
_EDGES = {
    "bool": [_I],
    _I: ["uint8", "int8", *_INTN_NAMES, *_UINTN_NAMES],
    "uint8": ["uint16", "int16"],
    "uint16": ["uint32", "int32"],
    "uint32": ["uint64", "int64"],
    "uint64": [_F],
    "int8": ["int16"],
    "int16": ["int32"],
    "int32": ["int64"],
    "int64": [_F],
    # Narrow floats and ints are leaves: JAX refuses to promote them implicitly to anything wider.
    _F: [*_NARROW_FLOAT_NAMES, "bfloat16", "float16", _C],
    "bfloat16": ["float32"],
    "float16": ["float32"],
    "float32": ["float64", "complex64"],
    "float64": ["complex128"],
    _C: ["complex64"],
    "complex64": ["complex128"],
    "complex128": [],
    **{name: [] for name in (*_NARROW_FLOAT_NAMES, *_INTN_NAMES, *_UINTN_NAMES)},
}
_NODE_DTYPE = {d.name: d for d in (bool_, *_NUMERIC)}
_NODE_OF_DTYPE = {d: d.name for d in (bool_, *_NUMERIC)}
_PY_OF_WEAK = {_I: int, _F: float, _C: complex}


def _upper_bounds():
    ub = {}

    def visit(n):
        if n not in ub:
            ub[n] = {n}.union(*(visit(m) for m in _EDGES[n]))
        return ub[n]

    for n in _EDGES:
        visit(n)
    return ub


_UB = _upper_bounds()


def _lub_pair(a, b):
    common = _UB[a] & _UB[b]
    least = [n for n in common if _UB[n] >= common]
    return least[0] if least else None


_LUB = {(a, b): _lub_pair(a, b) for a in _EDGES for b in _EDGES}


def _promotion_error(dts):
    names = tuple(str(d) for d in dts)
    if any(d in _d._NARROW_FLOATS for d in dts):
        hint = "8-bit floats do not support implicit promotion"
    elif any(d in _d._INTN or d in _d._UINTN for d in dts):
        hint = "4-bit integers do not support implicit promotion"
    else:
        hint = "these dtypes do not support implicit promotion"
    return TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path. To avoid unintended "
        f"promotion, {hint}. If you'd like your inputs to be promoted to another type, you can do so "
        "explicitly using e.g. x.astype('float32')"
    )


def _lub(nodes, dts):
    it = iter(nodes)
    out = next(it)
    for n in it:
        out = _LUB[out, n]
        if out is None:
            raise _promotion_error(dts)
    return out


def _strong_node(dt, dts):
    node = _NODE_OF_DTYPE.get(dt)
    if node is None and _d._ensure_ml_dtypes():
        node = _NODE_OF_DTYPE.get(dt)
    if node is None:
        raise _promotion_error(dts)
    return node


def _weak_node(dt):
    # A weak-typed value joins the lattice as its Python kind; weak bool stays plain bool.
    k = _kind(dt)
    return "bool" if k == "b" else _I if k in "iu" else _F if k == "f" else _C


def promote_types(a, b) -> np.dtype:
    """Lattice join of two dtypes without canonicalization; Python types int/float/complex are weak."""
    na = a if any(a is t for t in _WEAK_PYTYPES) else _as_dtype(a)
    nb = b if any(b is t for t in _WEAK_PYTYPES) else _as_dtype(b)
    nodes = []
    for n in (na, nb):
        if isinstance(n, type):
            nodes.append(_weak_node(_PYTHON_SCALAR_DTYPES[n]))
        else:
            nodes.append(_strong_node(n, (na, nb)))
    if config.numpy_dtype_promotion == "strict" and not (isinstance(na, type) and isinstance(nb, type)):
        _check_strict(
            [(_PYTHON_SCALAR_DTYPES[n], True) if isinstance(n, type) else (n, False) for n in (na, nb)]
        )
    out = _lub(nodes, (na, nb))
    return _NODE_DTYPE[out] if out not in _WEAK_NODES else _PYTHON_SCALAR_DTYPES[_PY_OF_WEAK[out]]


# jax_numpy_dtype_promotion="strict": the weak kinds a strong dtype of each kind absorbs.
_STRICT_WEAK_KINDS = {"b": "", "u": "i", "i": "i", "f": "if", "c": "ifc"}


def _check_strict(pairs):
    """Strict promotion: one strong dtype, and only weak values of a kind it can hold."""
    strong = {d for d, w in pairs if not w}
    weak_kinds = {_kind(d) for d, w in pairs if w}
    if len(strong) == 1:
        (dt,) = strong
        allowed = _STRICT_WEAK_KINDS.get(_kind(dt), "")
        if all(k in allowed for k in weak_kinds):
            return
    names = tuple(str(d) for d, _ in pairs)
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path when "
        "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output "
        "type, or set jax_numpy_dtype_promotion=standard."
    )


def _compute_result(pairs):
    """Slow path of result_type for a list of uncanonicalized (dtype, weak) operands."""
    for dt, _ in pairs:
        if (
            not isinstance(dt, ExtendedDType)
            and dt not in _JAX_DTYPES
            and not (_d._ensure_ml_dtypes() and dt in _JAX_DTYPES)
        ):
            raise TypeError(
                f"dtype {dt} is not a valid JAX array type. Only arrays of numeric types are supported by JAX."
            )
    # Inputs are canonicalized first: under x32 a uint64 operand promotes as uint32.
    pairs = [(canonicalize_dtype(d, allow_extended=True), w) for d, w in pairs]
    dts = [d for d, _ in pairs]
    weak = [w for _, w in pairs]
    if len(pairs) == 1:
        dt, w = pairs[0]
        return (_default_dtype_for_kind(_kind(dt)) if w else dt), w
    if all(d == dts[0] for d in dts) and not all(weak):
        # Same dtype everywhere needs no lattice; this also lets extended dtypes and float0 through.
        return dts[0], False
    if all(weak):
        # Join the strong counterparts so weak int16 + weak int8 stays an integer, then take the
        # default dtype of the result's kind.
        try:
            node = _lub([_strong_node(d, dts) for d in dts], dts)
            kind = _kind(_NODE_DTYPE[node]) if node not in _WEAK_NODES else node[0]
        except TypePromotionError:
            kind = _lub([_weak_node(d) for d in dts], dts)[0]
        return _default_dtype_for_kind(kind), True
    if config.numpy_dtype_promotion == "strict":
        _check_strict(pairs)
    nodes = [_weak_node(d) if w else _strong_node(d, dts) for d, w in pairs]
    node = _lub(nodes, dts)
    if node in _WEAK_NODES:
        return _default_dtype_for_kind(node[0]), True
    return canonicalize_dtype(_NODE_DTYPE[node]), False


# The result_type cache is keyed by (id(dtype), weak) per operand so a hit hashes only small ints
# (hashing an np.dtype costs more than the whole lookup). Only dtypes in _REGISTERED, which this
# module keeps alive, are ever stored, so an id in a stored key cannot be reused by another object.
_REGISTERED = {id(d): d for d in _JAX_DTYPES}
# Both tables depend on the x64 mode (the default dtypes of Python scalars, the canonical
# result), so there is one of each per mode, chosen by the calling thread's flag.
# Python int/float/complex values are weak; bool values are strong, as in JAX.
_scalar_keys_by_mode: dict = {
    x64: {
        bool: (id(bool_), False),
        int: (id(int64 if x64 else int32), True),
        float: (id(float64 if x64 else float32), True),
        complex: (id(complex128 if x64 else complex64), True),
    }
    for x64 in (False, True)
}
# Indexed by config._promotion_mode: x64 (bit 0) and strict promotion (bit 1).
_result_caches: list = [{}, {}, {}, {}]


def _operand_pair(x):
    """(dtype, weak) of one result_type operand, before canonicalization."""
    typ = type(x)
    if typ in _PYTHON_SCALAR_DTYPES:
        # Canonical already, so the pair matches the fast key built from _scalar_keys.
        return (python_scalar_dtype(x), typ is not bool)
    if x is None:
        return (float64, False)  # JAX reads None as a request for the default float
    if isinstance(x, type) and x in _PYTHON_SCALAR_DTYPES:
        # The Python types count as weak kinds too: jnp.result_type(int, int8) == int8.
        return (_PYTHON_SCALAR_DTYPES[x], x is not bool)
    if isinstance(x, ExtendedDType):
        return (x, False)
    dt = getattr(x, "dtype", None)
    if isinstance(dt, (np.dtype, ExtendedDType)):
        return (dt, bool(getattr(x, "weak_type", False)))
    return (dtype(x), False)


def _result_type_slow(args, key):
    if not args:
        raise ValueError("at least one array or dtype is required")
    pairs = [_operand_pair(x) for x in args]
    out = _compute_result(pairs)
    ids = tuple(v for d, w in pairs for v in (id(d), w))
    if ids == key and all(_REGISTERED.get(id(d)) is d for d, _ in pairs):
        _result_caches[config._promotion_mode][key] = out
    return out


def result_type(*args, return_weak_type_flag=False):
    """JAX's result dtype for combining ``args`` (dtypes, arrays, Python scalars, weak-typed arrays).

    With ``return_weak_type_flag=True`` returns ``(dtype, weak)``; the result is weak only when every
    input that decided it was weak (e.g. a float32 array + 2.0 is strong float32).
    """
    # Hand-inlined key building: a helper call per operand would cost more than the cache lookup.
    # getattr with a default does not raise internally, so numpy arrays and dtypes stay fast too.
    mode = config._promotion_mode
    _scalar_keys = _scalar_keys_by_mode[bool(mode & 1)]
    if len(args) == 2:
        a, b = args
        ka = _scalar_keys.get(type(a))
        if ka is None:
            ka = (id(getattr(a, "dtype", a)), getattr(a, "weak_type", False))
        kb = _scalar_keys.get(type(b))
        if kb is None:
            kb = (id(getattr(b, "dtype", b)), getattr(b, "weak_type", False))
        key = ka + kb
    else:
        key = ()
        for x in args:
            k = _scalar_keys.get(type(x))
            if k is None:
                k = (id(getattr(x, "dtype", x)), getattr(x, "weak_type", False))
            key += k
    out = _result_caches[mode].get(key)
    if out is None:
        out = _result_type_slow(args, key)
    return out if return_weak_type_flag else out[0]


def lattice_result_type(*args):
    """(dtype, weak) that jnp's functions convert their operands to, as JAX's
    `dtypes.lattice_result_type`: `result_type`'s answer, except where every operand is weak.
    Then the operands keep the join of their own dtypes (weak int8 + weak int8 is weak int8,
    weak int16 + weak int8 weak int16), where `result_type` answers the kind's default dtype."""
    dt, weak = result_type(*args, return_weak_type_flag=True)
    if not weak or config.numpy_dtype_promotion == "strict" and len(args) > 1:
        return dt, weak
    pairs = [_operand_pair(x) for x in args]
    if not all(w for _, w in pairs):
        return dt, weak  # a weak result of mixed operands: the kind's default, as JAX's
    dts = [canonicalize_dtype(d, allow_extended=True) for d, _ in pairs]
    if len(dts) == 1:
        return dts[0], True
    try:
        node = _lub([_strong_node(d, dts) for d in dts], dts)
    except TypePromotionError:
        return dt, weak
    return canonicalize_dtype(_NODE_DTYPE[node]), True


def _add_narrow_types():
    new = [d for d in _d._NUMERIC if d.name not in _NODE_DTYPE]
    _NODE_DTYPE.update({d.name: d for d in new})
    _NODE_OF_DTYPE.update({d: d.name for d in new})
    _REGISTERED.update({id(d): d for d in new})


_d.when_ml_dtypes_loaded(_add_narrow_types)
