"""Argument handling shared by every `morphax.numpy` function: array-like checks, JAX's dtype
promotion (weak types included) and NumPy rank promotion, expressed with primitives.

Sits above the primitive catalogue; has no rules of its own.
"""

from __future__ import annotations

import warnings

import numpy as np

from morphax._src.config import config
from morphax._src.core import dtypes as _dtypes
from morphax._src.core.promotion import lattice_result_type, result_type
from morphax._src.core.trace import Tracer
from morphax._src.core.values import make_array
from morphax._src.prims import conversion as _conversion
from morphax._src.prims import shape as _shape
from morphax._src.runtime import guards
from morphax._src.runtime.array import Array, type_key

_SCALAR_TYPES = (bool, int, float, complex)


def is_arraylike(x) -> bool:
    # Python scalars first: Array's isinstance hook (tracers are Arrays) would cost them a call.
    return (
        type(x) in _SCALAR_TYPES
        or isinstance(x, (Tracer, Array, np.ndarray, np.generic))
        or isinstance(x, _SCALAR_TYPES)
        or hasattr(x, "__jax_array__")
    )


def check_arraylike(fun_name: str, *args, emit_warning=False) -> None:
    """JAX refuses lists and tuples where arrays are expected (they would be silently copied)."""
    for pos, arg in enumerate(args):
        if not is_arraylike(arg):
            raise TypeError(
                f"{fun_name} requires ndarray or scalar arguments, got {type(arg).__name__} at position {pos}."
                + (
                    " Convert lists and tuples with jnp.asarray(...) first."
                    if isinstance(arg, (list, tuple))
                    else ""
                )
            )


def _python_scalar_to_array(x, dtype, weak_type):
    if isinstance(x, bool) and not _dtypes.is_bool(dtype):
        x = int(x)
    if isinstance(x, int) and _dtypes.is_integer(dtype):
        info = _dtypes.iinfo(dtype)
        if not info.min <= x <= info.max:
            raise OverflowError(
                f"Python int {x} too large to convert to {np.dtype(dtype).name}. Use a wider dtype "
                "(enable 64-bit mode with config.update('jax_enable_x64', True)) or a float."
            )
    return make_array(x, dtype, weak_type)


def convert_operand(x, dtype, weak_type=False):
    """`convert_element_type` for an operand being promoted. As JAX, a Python int operand is
    first an array of the default integer dtype (int32, or int64 under x64), which it must fit,
    and then converts to `dtype` as arrays do: wrapping modulo 2**bits into a narrower integer
    dtype (``jnp.uint8(1) + 300`` is uint8 45, ``jnp.int8(1) + 200`` is int8 -55)."""
    if type(x) is not int:
        return convert_element_type(x, dtype, weak_type)
    default = _dtypes.default_int_dtype()
    info = np.iinfo(default)
    if not info.min <= x <= info.max:
        hint = "" if config.enable_x64 else ", or enable 64-bit mode (config.update('jax_enable_x64', True))"
        raise OverflowError(
            f"Python int {x} too large to convert to {default.name} (the default integer dtype "
            f"that Python int operands take). Use a float{hint}."
        )
    dtype = np.dtype(dtype)
    if _dtypes.is_integer(dtype) and dtype != default:
        return make_array(np.array(x, default).astype(dtype), dtype, weak_type)
    return _python_scalar_to_array(x, dtype, weak_type)


def _guard_host_array(x):
    """A NumPy operand becoming an Array is a host-to-device transfer (runtime/guards.py). NB:
    Python scalars are not counted (JAX counts them): they are also the constants of morphax's
    own library functions, which run eagerly."""
    if guards.active:
        guards.host_to_device(x, explicit=False, what="operand")


def convert_element_type(x, dtype, weak_type=False):
    """Convert to (dtype, weak_type); constants convert on the host, values bind the primitive."""
    dtype = np.dtype(dtype)
    if type(x) in _SCALAR_TYPES:
        return _python_scalar_to_array(x, dtype, weak_type)
    if isinstance(x, (np.ndarray, np.generic)):
        _guard_host_array(x)
        if x.dtype != dtype:
            x = _conversion.convert_element_type_p.impl(
                np.asarray(x), new_dtype=dtype, weak_type=weak_type, sharding=None
            )
        return make_array(x, dtype, weak_type)
    if x.dtype == dtype and x.weak_type == weak_type:
        return x
    return _conversion.convert_element_type_p.bind(
        x, new_dtype=dtype, weak_type=bool(weak_type), sharding=None
    )


def promote_dtypes(*args):
    """Convert every argument to JAX's common result dtype (weak if all deciding inputs are weak)."""
    if len(args) < 2:
        return [asarray_like(a) for a in args]
    to_dtype, weak = lattice_result_type(*args)
    return [convert_operand(x, to_dtype, weak) for x in args]


def promote_dtypes_inexact(*args):
    """Like `promote_dtypes`, then integers and bools go to the default float (sin(1) is a float)."""
    to_dtype, weak = lattice_result_type(*args)
    to_dtype = _dtypes.to_inexact_dtype(to_dtype)
    return [convert_operand(x, to_dtype, weak) for x in args]


def promote_dtypes_numeric(*args):
    to_dtype, weak = lattice_result_type(*args)
    if _dtypes.is_bool(to_dtype):
        to_dtype = _dtypes.default_int_dtype()
    return [convert_operand(x, to_dtype, weak) for x in args]


def asarray_like(x):
    """Python scalars become weak arrays of their default dtype; other values pass through."""
    if type(x) in _SCALAR_TYPES:
        return _python_scalar_to_array(x, _dtypes.python_scalar_dtype(x), True)
    if isinstance(x, (np.ndarray, np.generic)):
        _guard_host_array(x)
        return make_array(x, _dtypes.canonicalize_dtype(x.dtype), False)
    return x


def checked_array(fun_name: str, x):
    """`x` as an array, after checking it is array-like (the error names `fun_name`)."""
    check_arraylike(fun_name, x)
    return asarray_like(x)


def checked_inexact(fun_name: str, x):
    """`x` as an inexact array (integers promoted to float), after checking it is array-like."""
    check_arraylike(fun_name, x)
    return promote_dtypes_inexact(x)[0]


def host_value(x, fun_name: str, what: str) -> np.ndarray:
    """The value of `x` on the host, for functions whose output shape depends on it; a traced `x`
    raises an error naming the function and the argument."""
    if isinstance(x, Tracer):
        raise ValueError(
            f"jnp.{fun_name}: {what} must be concrete (its value decides the output shape); "
            "pass size= where supported, or call it outside jit."
        )
    return np.asarray(x)


def _shape_of(x):
    return np.shape(x) if type(x) in _SCALAR_TYPES else x.shape


def promote_shapes(fun_name: str, *args):
    """NumPy rank promotion: lower-rank non-scalar operands gain leading size-1 axes; scalars are
    left alone (lax broadcasts them), as are equal-rank operands (lax broadcasts size-1 axes)."""
    if len(args) < 2:
        return list(args)
    shapes = [_shape_of(a) for a in args]
    ranks = {len(s) for s in shapes if s}
    if len(ranks) < 2:
        nonscalar = [s for s in shapes if s]
        if nonscalar:
            _check_broadcastable(fun_name, shapes)
        return list(args)
    _check_broadcastable(fun_name, shapes)
    mode = config.numpy_rank_promotion
    if mode != "allow":
        described = " ".join(str(tuple(s)) for s in shapes)
        if mode == "raise":
            raise ValueError(
                f"Operands could not be broadcast together for {fun_name} on shapes {described} and with the "
                "config option jax_numpy_rank_promotion='raise'. Add the leading axes explicitly (e.g. "
                "x[None, :]) or allow rank promotion."
            )
        warnings.warn(
            f"Following NumPy automatic rank promotion for {fun_name} on shapes {described}. Set the "
            "jax_numpy_rank_promotion config option to 'allow' to disable this warning.",
            stacklevel=3,
        )
    rank = max(ranks)
    out = []
    for a, s in zip(args, shapes):
        if s and len(s) < rank:
            new_shape = (1,) * (rank - len(s)) + tuple(s)
            dims = tuple(range(rank - len(s), rank))
            a = _shape.broadcast_in_dim(a, new_shape, dims)
        out.append(a)
    return out


def _check_broadcastable(fun_name, shapes):
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(
            f"{fun_name}: operands could not be broadcast together with shapes "
            f"{' '.join(str(tuple(s)) for s in shapes)}"
        ) from None


def promote_args(fun_name: str, *args):
    if len(args) == 2:
        # Hot path of every eager binary op: two arrays of one type need no promotion.
        a, b = args
        if type(a) is Array and type(b) is Array and type_key(a) == type_key(b):
            return args
    check_arraylike(fun_name, *args)
    _refuse_key_arrays(fun_name, args)
    return promote_shapes(fun_name, *promote_dtypes(*args))


def _refuse_key_arrays(fun_name, args):
    """Arithmetic on typed PRNG keys raises JAX's TypeError, naming the operation and dtypes."""
    dtypes = [getattr(a, "dtype", None) for a in args]
    if any(isinstance(d, _dtypes.ExtendedDType) for d in dtypes):
        names = [
            str(d)
            if d is not None
            else str(
                np.asarray(a).dtype
                if not isinstance(a, (bool, int, float, complex))
                else _dtypes.canonicalize_dtype(_dtypes.python_scalar_dtype(a))
            )
            for d, a in zip(dtypes, args)
        ]
        raise TypeError(f"{fun_name} does not accept dtypes {', '.join(names)}.")


def promote_args_inexact(fun_name: str, *args):
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name: str, *args):
    check_arraylike(fun_name, *args)
    return promote_shapes(fun_name, *promote_dtypes_numeric(*args))


def canonicalize_axis(axis, ndim: int, fun_name: str = "", argname: str = "axis") -> int:
    try:
        axis = int(axis)
    except TypeError:
        raise TypeError(f"{fun_name}: {argname} must be an integer, got {axis!r}") from None
    if not -ndim <= axis < max(ndim, 1) or (ndim == 0 and axis not in (0, -1)):
        raise ValueError(f"{fun_name}: {argname} {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim if ndim else 0


def axis_sequence(axis) -> tuple:
    """An `axis` argument as a tuple of its entries: a tuple, list, range or 1-D array gives its
    elements (JAX takes any of them), anything else is one axis."""
    if isinstance(axis, np.ndarray) and axis.ndim == 1:
        return tuple(axis.tolist())
    if isinstance(axis, (tuple, list, range)):
        return tuple(axis)
    return (axis,)


def canonicalize_axes(axis, ndim: int, fun_name: str = "") -> tuple:
    """None -> all axes; int or sequence -> sorted tuple of non-negative axes (no duplicates)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list, range)) or (isinstance(axis, np.ndarray) and axis.ndim == 1):
        axes = tuple(canonicalize_axis(a, ndim, fun_name) for a in axis_sequence(axis))
        if len(set(axes)) != len(axes):
            raise ValueError(f"{fun_name}: duplicate value in 'axis': {axis}")
        return tuple(sorted(axes))
    return (canonicalize_axis(axis, ndim, fun_name),)
