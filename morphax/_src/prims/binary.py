"""Binary elementwise primitives: arithmetic, comparisons, bitwise and shifts.

Operands share a dtype; shapes follow lax broadcasting (scalars, size-1 axes). Integer
semantics follow JAX: wrapping arithmetic, division toward zero, no trap on division by zero,
shifts by >= the bit width give 0 (or the sign for arithmetic right shifts). Imports the core only.
"""

from __future__ import annotations

import numpy as np

from morphax._src.prims._helpers import binary_elementwise
from morphax._src.prims._operands import lax_binary_operands

__all__ = ["add", "add_p", "mul", "mul_p"]

add_p = binary_elementwise("add", np.add, dtypes="numeric")


def add(x, y):
    """Elementwise ``x + y``; operands share a dtype (Python scalars adopt the other's)."""
    return add_p.bind(*lax_binary_operands("add", x, y))


mul_p = binary_elementwise("mul", np.multiply, dtypes="any")


def mul(x, y):
    """Elementwise ``x * y``."""
    return mul_p.bind(*lax_binary_operands("mul", x, y))
