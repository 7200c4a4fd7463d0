"""Predicates on values and dtypes: iscomplexobj, isrealobj, iscomplex, isreal, isscalar,
iterable and isdtype (the array API's dtype kinds)."""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.numpy import creation, ufuncs, util
from morphax._src.runtime.array import Array

__all__ = ["iscomplexobj", "isrealobj", "iscomplex", "isreal", "isscalar", "iterable", "isdtype"]


def iscomplexobj(x):
    if x is None:
        return False
    try:
        dt = x.dtype
    except AttributeError:
        dt = np.asarray(x).dtype
    if isinstance(dt, _dtypes.ExtendedDType):  # typed PRNG keys: not complex, as in JAX
        return False
    return np.issubdtype(dt, np.complexfloating)


def isrealobj(x):
    return not iscomplexobj(x)


def iscomplex(x):
    x = util.checked_array("iscomplex", x)
    i = ufuncs.imag(x)
    return ufuncs.not_equal(i, creation.zeros_like(i))


def isreal(x):
    x = util.checked_array("isreal", x)
    i = ufuncs.imag(x)
    return ufuncs.equal(i, creation.zeros_like(i))


def isscalar(element):
    from morphax._src.core.trace import Tracer

    if isinstance(element, (Array, Tracer)) or hasattr(element, "__jax_array__"):
        return element.ndim == 0 if hasattr(element, "ndim") else False
    if isinstance(element, (np.ndarray, np.generic)):
        return np.ndim(element) == 0
    return isinstance(element, (bool, int, float, complex))


def iterable(y):
    try:
        iter(y)
    except TypeError:
        return False
    return True


_KIND_CHECKS = {
    "bool": lambda d: d == np.bool_,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: np.issubdtype(d, np.floating) or _dtypes.is_inexact(d) and d.kind not in "c",
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d != np.bool_,
}


def isdtype(dtype, kind):
    dt = _dtypes._np_dtype(dtype)  # knows "bfloat16" before ml_dtypes is loaded
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KIND_CHECKS:
                raise ValueError(f"Unrecognized {k=!r}")
            if _KIND_CHECKS[k](dt):
                return True
        else:
            if _dtypes._np_dtype(k) == dt:
                return True
    return False
