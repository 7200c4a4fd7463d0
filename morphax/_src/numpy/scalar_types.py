"""The `jnp.float32`-style scalar types: classes usable as ``dtype=`` anywhere (NumPy reads their
``dtype`` attribute) and callable to make a strongly typed array, ``jnp.float32(3)`` giving
``Array(3., dtype=float32)``. Also NumPy's abstract categories (``jnp.floating``...).

The ml_dtypes types (``jnp.bfloat16``, ``jnp.float8_e4m3fn``, ``jnp.int4``...) are made at their
first use (`LAZY_NAMES`, module ``__getattr__``), so that importing morphax does not import ml_dtypes.
"""

from __future__ import annotations

import numpy as np

from morphax._src.core import dtypes as _dtypes

__all__ = [
    "generic", "number", "inexact", "floating", "integer", "signedinteger", "unsignedinteger",
    "complexfloating", "flexible", "character", "object_",
    "bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
    "float_", "int_", "uint", "complex_", "single", "double", "half", "csingle", "cdouble",
    "intc", "uintc", "longlong", "ulonglong",
]  # fmt: skip


class _ScalarMeta(type):
    """Metaclass of the scalar types: equal to (and hashed like) the NumPy scalar type, callable
    to convert a value into an array of that dtype."""

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        # Not `cls.__eq__(other)`: on a class that finds object's unbound slot, not this method.
        return not (cls == other)

    def __call__(cls, x):
        from morphax._src.numpy import creation

        return creation.asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'morphax.numpy.{cls.__name__}'>"


def _scalar_type(np_type, name=None) -> type:
    dt = np.dtype(np_type)
    name = name or dt.name
    return _ScalarMeta(name, (object,), {"dtype": dt, "__doc__": f"The {dt.name} scalar type (a dtype)."})


# NumPy's abstract categories are the same classes in JAX.
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
complexfloating = np.complexfloating
flexible = np.flexible
character = np.character
object_ = np.object_

bool_ = _scalar_type(np.bool_, "bool_")
bool = bool_  # noqa: A001 - NumPy 2 spells it both ways
int8 = _scalar_type(np.int8)
int16 = _scalar_type(np.int16)
int32 = _scalar_type(np.int32)
int64 = _scalar_type(np.int64)
uint8 = _scalar_type(np.uint8)
uint16 = _scalar_type(np.uint16)
uint32 = _scalar_type(np.uint32)
uint64 = _scalar_type(np.uint64)
float16 = _scalar_type(np.float16)
float32 = _scalar_type(np.float32)
float64 = _scalar_type(np.float64)
complex64 = _scalar_type(np.complex64)
complex128 = _scalar_type(np.complex128)

# Aliases: the 64-bit names; canonicalization narrows them under x32 like any explicit dtype.
float_ = float64
int_ = int64
uint = uint64
complex_ = complex128
single = float32
double = float64
half = float16
csingle = complex64
cdouble = complex128
intc = int32
uintc = uint32
longlong = int64
ulonglong = uint64

# bfloat16 and the narrow floats and ints, where the installed ml_dtypes has them: made at first use.
LAZY_NAMES = (
    "bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn", "int2", "int4", "uint2", "uint4",
    "float6_e2m3fn", "float6_e3m2fn", "int1", "uint1",
)  # fmt: skip


def __getattr__(name):
    if name in LAZY_NAMES:
        ml_dtypes = _dtypes._load_ml_dtypes()
        # The newer formats come from ml_dtypes directly where morphax's dtype table lacks them.
        dt = getattr(_dtypes, name, None) if name in _dtypes.ML_DTYPE_NAMES else None
        dt = dt if dt is not None else getattr(ml_dtypes, name, None)
        if dt is not None:
            return globals().setdefault(name, _scalar_type(dt, name))  # the first thread's wins
        raise AttributeError(
            f"{name}: the installed ml_dtypes ({ml_dtypes.__version__}) does not have this type"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
