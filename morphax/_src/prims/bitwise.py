"""Bitwise primitives: and or xor on integers and bool, and the three shifts on integers.

Shifts follow XLA: the shift amount is read as unsigned, so a negative amount or one of at least
the bit width saturates (0 for shift_left and shift_right_logical; the sign fill, 0 or -1, for
shift_right_arithmetic). The logical and arithmetic right shifts act on the bit pattern whatever
the dtype's signedness (XLA's LLVM integers are signless). Imports the core only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.prims import _stablehlo as hlo
from morphax._src.prims._ad import defjvp_zero
from morphax._src.prims._operands import lax_binary_operands
from morphax._src.prims._spec import TestSpec, binary_cases
from morphax._src.prims.builders import as_arrays, binary_elementwise, concat_cases

__all__ = [
    "and_p",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "or_p",
    "shift_left",
    "shift_left_p",
    "shift_right_arithmetic",
    "shift_right_arithmetic_p",
    "shift_right_logical",
    "shift_right_logical_p",
    "xor_p",
]

_LOGIC_DTYPES = ("int32", "uint32", "int8", "uint8", "int16", "bool")

and_p = binary_elementwise(
    "and", np.bitwise_and, dtypes="int_or_bool", spec=TestSpec(cases=binary_cases(dtype_list=_LOGIC_DTYPES))
)
and_p.stablehlo = hlo.elementwise("stablehlo.and")
or_p = binary_elementwise(
    "or", np.bitwise_or, dtypes="int_or_bool", spec=TestSpec(cases=binary_cases(dtype_list=_LOGIC_DTYPES))
)
or_p.stablehlo = hlo.elementwise("stablehlo.or")
xor_p = binary_elementwise(
    "xor", np.bitwise_xor, dtypes="int_or_bool", spec=TestSpec(cases=binary_cases(dtype_list=_LOGIC_DTYPES))
)
xor_p.stablehlo = hlo.elementwise("stablehlo.xor")


def bitwise_and(x, y):
    """Elementwise AND of integer or bool arrays."""
    return and_p.bind(*lax_binary_operands("and", x, y))


def bitwise_or(x, y):
    """Elementwise OR of integer or bool arrays."""
    return or_p.bind(*lax_binary_operands("or", x, y))


def bitwise_xor(x, y):
    """Elementwise exclusive OR of integer or bool arrays."""
    return xor_p.bind(*lax_binary_operands("xor", x, y))


def _views(x, y):
    x, y = as_arrays(x, y)
    bits = x.dtype.itemsize * 8
    unsigned = np.dtype(f"uint{bits}")
    # Out of range when the amount, read as unsigned, is >= the width; shift those by 0 instead.
    over = y.view(unsigned) >= bits
    amount = np.where(over, 0, y.view(unsigned)).astype(unsigned)
    return x, amount, over, bits


def _shift_left_impl(x, y):
    x, amount, over, bits = _views(x, y)
    u = x.view(np.dtype(f"uint{bits}"))
    out = np.left_shift(u, amount).astype(u.dtype).view(x.dtype)
    return np.where(over, np.zeros_like(x), out)


def _shift_right_logical_impl(x, y):
    x, amount, over, bits = _views(x, y)
    u = x.view(np.dtype(f"uint{bits}"))
    out = np.right_shift(u, amount).astype(u.dtype).view(x.dtype)
    return np.where(over, np.zeros_like(x), out)


def _shift_right_arithmetic_impl(x, y):
    x, amount, over, bits = _views(x, y)
    s = x.view(np.dtype(f"int{bits}"))
    out = np.right_shift(s, amount.astype(s.dtype)).astype(s.dtype).view(x.dtype)
    fill = np.where(s < 0, np.full_like(s, -1), np.zeros_like(s)).view(x.dtype)
    return np.where(over, fill, out)


def _shift_cases():
    return concat_cases(
        binary_cases(dtype_list=("int32", "uint32"), rhs_domain=(-2, 40)),
        binary_cases(dtype_list=("int8", "uint8"), rhs_domain=(0, 9)),
        binary_cases(dtype_list=("int16",), domain=(-300, 300), rhs_domain=(-1, 17)),
    )


shift_left_p = binary_elementwise(
    "shift_left", _shift_left_impl, dtypes="integer", spec=TestSpec(cases=_shift_cases())
)
shift_left_p.stablehlo = hlo.elementwise("stablehlo.shift_left")
shift_right_logical_p = binary_elementwise(
    "shift_right_logical", _shift_right_logical_impl, dtypes="integer", spec=TestSpec(cases=_shift_cases())
)
shift_right_logical_p.stablehlo = hlo.elementwise("stablehlo.shift_right_logical")
shift_right_arithmetic_p = binary_elementwise(
    "shift_right_arithmetic",
    _shift_right_arithmetic_impl,
    dtypes="integer",
    spec=TestSpec(cases=_shift_cases()),
)
shift_right_arithmetic_p.stablehlo = hlo.elementwise("stablehlo.shift_right_arithmetic")


def shift_left(x, y):
    """Elementwise ``x << y``; amounts outside [0, bit width) give 0."""
    return shift_left_p.bind(*lax_binary_operands("shift_left", x, y))


def shift_right_logical(x, y):
    """Elementwise logical ``x >> y`` (zero fill, also for signed dtypes); out-of-range amounts give 0."""
    return shift_right_logical_p.bind(*lax_binary_operands("shift_right_logical", x, y))


def shift_right_arithmetic(x, y):
    """Elementwise arithmetic ``x >> y`` (sign fill); out-of-range amounts give 0 or -1 by sign."""
    return shift_right_arithmetic_p.bind(*lax_binary_operands("shift_right_arithmetic", x, y))


# Integer and bool valued: a zero derivative (float0 tangents), as JAX.
for _p in (and_p, or_p, xor_p, shift_left_p, shift_right_logical_p, shift_right_arithmetic_p):
    defjvp_zero(_p)
    _p.test_spec.differentiable = False
    _p.test_spec.grad_order = 0
