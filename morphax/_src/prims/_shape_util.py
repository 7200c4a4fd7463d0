"""Helpers shared by the structural families (`shape`, `slicing`): shape/axis canonicalization,
the array test, test-case builders and small lax-built values the derivative rules use."""

from __future__ import annotations

import operator

import numpy as np

from morphax._src.core.ad_util import aval_of, zeros_like_aval
from morphax._src.core.avals import ShapedArray, get_aval
from morphax._src.core.structural import reduce_sum
from morphax._src.core.trace import Tracer
from morphax._src.core.values import is_concrete_array, make_array
from morphax._src.prims._spec import Case

# Dtypes every structural primitive is exercised with (they accept any dtype).
SHAPE_DTYPES = ("float32", "int32", "bool", "complex64", "bfloat16")


def is_array(x) -> bool:
    """A morphax Array or tracer (duck-typed: prims may not import the runtime)."""
    return isinstance(x, Tracer) or is_concrete_array(x)


def fresh(a) -> np.ndarray:
    """A new array owning its data: results must never alias an input NumPy buffer."""
    return np.array(a, copy=True)


def canonical_shape(shape, name: str, what: str = "shape") -> tuple:
    """A user shape (sequence of ints or integer scalars) as a tuple of Python ints."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(
            f"{name}: {what} must be a sequence of concrete integers, got {shape!r}. Shapes cannot depend "
            "on traced values; pass Python ints (mark the argument static under jit)."
        ) from None


def check_nonnegative_shape(name: str, shape, what: str = "shape") -> None:
    if not isinstance(shape, tuple) or not all(isinstance(d, (int, np.integer)) for d in shape):
        raise TypeError(f"{name}: {what} must be a tuple of integers, got {shape!r}.")
    if any(d < 0 for d in shape):
        raise TypeError(f"{name}: {what} must contain only non-negative sizes, got {shape}.")


def canonical_axis(axis, ndim: int, name: str) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for array of dimension {ndim}.")
    return axis + ndim if axis < 0 else axis


def axis_of_shape(name: str, axis, shape) -> int:
    """Wrapper-side normalization of one axis of an operand of `shape`: negative axes count from
    the end (JAX's lax wants them non-negative; accepting them here is a convenience, the bound
    param is always >= 0)."""
    ndim = len(shape)
    axis = int(axis)
    if -ndim <= axis < 0:
        axis += ndim
    if not 0 <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an operand of shape {tuple(shape)}")
    return axis


def as_lax_array(x):
    """`lax.asarray`: arrays and tracers pass through; NumPy values and Python scalars become constants
    (Python int/float/complex weakly typed)."""
    if is_array(x):
        return x
    aval = get_aval(x)
    return make_array(np.asarray(x, dtype=aval.dtype), aval.dtype, weak_type=aval.weak_type)


def _axes_cases(dtypes, configs, make_args, rng):
    """One Case per (dtype, config); `make_args(rng, dt, config) -> (args, params)`."""
    out = []
    for dt in dtypes:
        for cfg in configs:
            args, params = make_args(rng, dt, cfg)
            shapes = ",".join(str(list(np.shape(a))) for a in args)
            out.append(Case(args, params, f"{dt}{shapes}{tuple(params.values())}"))
    return out


def _scalar_zero(x):
    """A rank-0 zero of `x`'s dtype (the padding value of the transposes that pad)."""
    return zeros_like_aval(ShapedArray((), aval_of(x).dtype, False))


def _total(x):
    """The sum of every element of `x`, a scalar (x itself when it already is one)."""
    nd = len(aval_of(x).shape)
    return reduce_sum(x, tuple(range(nd))) if nd else x


def _inverse_permutation(perm) -> tuple:
    return tuple(int(i) for i in np.argsort(perm))
