"""Comparison primitives: eq ne lt le gt ge, giving bool with lax broadcasting.

eq/ne accept every dtype (complex included); the ordered comparisons accept bool, integer and
floating dtypes (False < True). Float comparisons with nan are false except ne. Imports the core only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import defjvp_zero
from morphax._src.prims._operands import lax_binary_operands
from morphax._src.prims._spec import TestSpec, binary_cases
from morphax._src.prims.builders import as_bool, binary_elementwise

__all__ = ["eq", "eq_p", "ge", "ge_p", "gt", "gt_p", "le", "le_p", "lt", "lt_p", "ne", "ne_p"]

_ANY_DTYPES = ("float32", "float16", "bfloat16", "int32", "uint32", "int8", "uint8", "bool", "complex64")
_ORDERED_DTYPES = ("float32", "float16", "bfloat16", "int32", "uint32", "int8", "uint8", "bool")


def _comparison(name, fn, dtypes, dtype_list):
    return binary_elementwise(
        name, fn, dtypes=dtypes, out_dtype=as_bool, spec=TestSpec(cases=binary_cases(dtype_list=dtype_list))
    )


eq_p = _comparison("eq", np.equal, "any", _ANY_DTYPES)
eq_p.stablehlo = hlo.compare("EQ")
ne_p = _comparison("ne", np.not_equal, "any", _ANY_DTYPES)
ne_p.stablehlo = hlo.compare("NE")
lt_p = _comparison("lt", np.less, "real", _ORDERED_DTYPES)
lt_p.stablehlo = hlo.compare("LT")
le_p = _comparison("le", np.less_equal, "real", _ORDERED_DTYPES)
le_p.stablehlo = hlo.compare("LE")
gt_p = _comparison("gt", np.greater, "real", _ORDERED_DTYPES)
gt_p.stablehlo = hlo.compare("GT")
ge_p = _comparison("ge", np.greater_equal, "real", _ORDERED_DTYPES)
ge_p.stablehlo = hlo.compare("GE")


def eq(x, y):
    """Elementwise ``x == y`` as bool."""
    return eq_p.bind(*lax_binary_operands("eq", x, y))


def ne(x, y):
    """Elementwise ``x != y`` as bool."""
    return ne_p.bind(*lax_binary_operands("ne", x, y))


def lt(x, y):
    """Elementwise ``x < y`` as bool (not for complex)."""
    return lt_p.bind(*lax_binary_operands("lt", x, y))


def le(x, y):
    """Elementwise ``x <= y`` as bool (not for complex)."""
    return le_p.bind(*lax_binary_operands("le", x, y))


def gt(x, y):
    """Elementwise ``x > y`` as bool (not for complex)."""
    return gt_p.bind(*lax_binary_operands("gt", x, y))


def ge(x, y):
    """Elementwise ``x >= y`` as bool (not for complex)."""
    return ge_p.bind(*lax_binary_operands("ge", x, y))


# Bool valued: a zero derivative (float0 tangents), as JAX.
for _p in (eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    defjvp_zero(_p)
    _p.test_spec.differentiable = False
    _p.test_spec.grad_order = 0
