"""Values autodiff rules talk about: symbolic zeros and undefined (linear) primals.

`Zero(aval)` stands for a tangent or cotangent known to be zero, so no dense zeros are built.
`UndefinedPrimal(aval)` marks the linear inputs handed to a transpose rule. Core layer: imports
only avals and dtypes.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import ShapedArray, get_aval


def tangent_dtype(dtype) -> np.dtype:
    """Integers and bools have float0 tangents (they cannot be perturbed), as in JAX."""
    dtype = np.dtype(dtype)
    if _dtypes.is_inexact(dtype):
        return dtype
    return _dtypes.float0


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    return ShapedArray(aval.shape, tangent_dtype(aval.dtype), False)


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


def is_undefined_primal(x) -> bool:
    return type(x) is UndefinedPrimal


def is_zero(x) -> bool:
    return type(x) is Zero
