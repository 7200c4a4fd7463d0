"""Values autodiff rules talk about: symbolic zeros and undefined (linear) primals.

`Zero(aval)` stands for a tangent or cotangent known to be zero, so no dense zeros are built.
`UndefinedPrimal(aval)` marks the linear inputs handed to a transpose rule. The helpers at the end
make a symbolic zero dense and add tangents; they bind the structural primitives of
`core/structural.py`, so transformations and rules share them without importing `prims/`.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core import structural
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.pytree_registry import register_pytree_node
from morphax._src.core.values import make_array


def tangent_dtype(dtype) -> np.dtype:
    """Integers, bools and PRNG keys have float0 tangents (they cannot be perturbed), as in JAX."""
    if isinstance(dtype, _dtypes.ExtendedDType):
        return _dtypes.float0
    dtype = np.dtype(dtype)
    if _dtypes.is_inexact(dtype):
        return dtype
    return _dtypes.float0


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The aval of a tangent (or cotangent) of a value of `aval`: it keeps the weak type, as
    JAX's, so the gradient of a Python float is weakly typed (float0 tangents never are)."""
    dt = tangent_dtype(aval.dtype)
    return ShapedArray(aval.shape, dt, aval.weak_type and dt != _dtypes.float0)


class Zero:
    """A symbolic zero tangent/cotangent of the given aval (the tangent aval, float0 for ints)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def from_primal_value(x) -> Zero:
        return Zero(tangent_aval(get_aval(x)))

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """A linear input of a transpose rule: only its type is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


# Both are pytree nodes without leaves, as in JAX: a transformation that flattens its arguments
# (vmap with in_axes=None, jit) passes them through untouched, so a custom batching rule can vmap
# a JVP or transpose rule over symbolic zeros and undefined primals (equinox's vprim does).
register_pytree_node(Zero, lambda z: ((), z.aval), lambda aval, _: Zero(aval))
register_pytree_node(UndefinedPrimal, lambda u: ((), u.aval), lambda aval, _: UndefinedPrimal(aval))


def is_undefined_primal(x) -> bool:
    return type(x) is UndefinedPrimal


def is_zero(x) -> bool:
    return type(x) is Zero


def aval_of(x) -> ShapedArray:
    """The aval of a value, a symbolic Zero or an UndefinedPrimal."""
    if isinstance(x, (Zero, UndefinedPrimal)):
        return x.aval
    return get_aval(x)


def zeros_like_aval(aval: ShapedArray):
    """Dense zeros of `aval` (float0 zeros for integer tangents)."""
    if aval.dtype == _dtypes.float0:
        # A NumPy array, as JAX returns float0 cotangents: no device data, and NumPy's ==, copy
        # and printing work on it (they have no meaning for a morphax Array of void dtype).
        return np.zeros(aval.shape, dtype=_dtypes.float0)
    zero = make_array(0, aval.dtype, weak_type=aval.weak_type)
    return structural.broadcast_in_dim(zero, aval.shape, ())


def instantiate(t):
    """A dense value for a tangent/cotangent that may be a symbolic Zero."""
    return zeros_like_aval(t.aval) if is_zero(t) else t


def add_tangents(a, b):
    """The sum of two tangents (or cotangents) of one aval; a symbolic Zero costs nothing."""
    if is_zero(a):
        return b
    if is_zero(b):
        return a
    return structural.add(a, b)
