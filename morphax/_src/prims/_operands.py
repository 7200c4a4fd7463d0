"""Operand conversion shared by the lax wrappers: Python scalars adopt the array operand's dtype
as a weakly typed constant (so ``lax.add(x, 2.0)`` works for any float x, as in JAX)."""

from __future__ import annotations

from morphax._src.core import dtypes as _dtypes
from morphax._src.core.avals import get_aval
from morphax._src.core.values import make_array


def lax_binary_operands(name, x, y):
    x_scalar = _dtypes.is_python_scalar(x)
    y_scalar = _dtypes.is_python_scalar(y)
    if x_scalar and not y_scalar:
        x = make_array(x, get_aval(y).dtype, weak_type=True)
    elif y_scalar and not x_scalar:
        y = make_array(y, get_aval(x).dtype, weak_type=True)
    return x, y


def lax_nary_operands(name, *args):
    """Like `lax_binary_operands` for any arity: scalars take the dtype of the first array."""
    arrays = [a for a in args if not _dtypes.is_python_scalar(a)]
    if not arrays or len(arrays) == len(args):
        return args
    dtype = get_aval(arrays[0]).dtype
    return tuple(make_array(a, dtype, weak_type=True) if _dtypes.is_python_scalar(a) else a for a in args)
