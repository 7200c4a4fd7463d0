"""Abstract values: what a transformation knows about an array without its data.

`ShapedArray` (shape, dtype, weak_type) is the type of every jaxpr variable and tracer.
Imports only numpy and the dtype module; everything above it depends on it.
"""

from __future__ import annotations

import math

import numpy as np

from morphax._src.core import dtypes as _dtypes


class ShapedArray:
    """An array type: static shape, dtype, and whether the dtype is weak (from a Python scalar)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False, *, sharding=None, vma=None, memory_space=None):
        # NB: JAX avals carry a sharding, varying manual axes and a memory space; morphax's do not
        # (`sharding` is derived from the shape), so those arguments are accepted and ignored.
        self.shape = tuple(shape)
        # Extended dtypes (typed PRNG keys, ``key<fry>``) are kept as they are.
        self.dtype = (
            dtype if type(dtype) is np.dtype or isinstance(dtype, _dtypes.ExtendedDType) else np.dtype(dtype)
        )
        self.weak_type = bool(weak_type)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(math.prod(self.shape))  # not np.prod: microseconds per call on hot paths

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def update(self, shape=None, dtype=None, weak_type=None):
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def to_tangent_aval(self):
        """The type of this value's tangents: float0 for integers and bools (JAX's name)."""
        dtype = self.dtype if _dtypes.is_inexact(self.dtype) else _dtypes.float0
        return ShapedArray(self.shape, dtype, self.weak_type)

    @property
    def sharding(self):
        """JAX's ``aval.sharding`` (what ``jax.typeof(x).sharding`` reads). NB: morphax's avals
        carry no sharding; this is what JAX reports for a value outside any explicit-axes mesh,
        replicated over the empty abstract mesh: ``NamedSharding(AbstractMesh((), ()), P(None, ...))``."""
        return replicated_sharding(len(self.shape))

    def strip_weak_type(self):
        return ShapedArray(self.shape, self.dtype, False) if self.weak_type else self

    def __eq__(self, other):
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def str_short(self):
        """The jaxpr spelling, e.g. ``f32[3,4]``."""
        return f"{_dtypes.short_dtype_name(self.dtype)}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.dtype.name}[{','.join(str(d) for d in self.shape)}]{weak})"

    __str__ = str_short


def replicated_sharding(ndim: int):
    """The sharding of an unsharded value of `ndim` dimensions; the sharding layer replaces this
    (morphax/_src/sharding/shardings.py), as the core imports none of it."""
    raise NotImplementedError("ShapedArray.sharding: morphax's sharding module is not loaded")


# Maps a Python type to a function giving the aval of its instances. Higher layers (the
# Array class, tracers) register here so the core never imports them.
pytype_aval_mappings: dict[type, object] = {}


def _scalar_aval(x):
    # Python bools are strong in JAX; ints, floats and complexes are weak.
    return ShapedArray((), _dtypes.python_scalar_dtype(x), type(x) is not bool)


def _numpy_aval(x):
    dt = x.dtype
    canon = _dtypes.canonicalize_dtype(dt)
    return ShapedArray(np.shape(x), canon, False)


for _t in (bool, int, float, complex):
    pytype_aval_mappings[_t] = _scalar_aval


# Typed Python scalars (JAX's literals.TypedInt/TypedFloat/TypedComplex): what a Python number
# passed to jvp/grad becomes, so a custom rule that receives it as is (a float, as in JAX) can
# still read its `dtype`. Python arithmetic on them gives plain numbers; morphax treats them as
# the Python scalars they are (weakly typed).
class _TypedScalar:
    """What the three typed scalars share: a dtype, a weak 0-d aval, JAX's repr and pickling."""

    __slots__ = ()
    # Read as a weakly typed 0-d value wherever morphax looks at an operand's type.
    weak_type, shape, ndim, size = True, (), 0, 1
    _plain: type

    def __new__(cls, value, dtype):
        v = super().__new__(cls, value)
        v.dtype = np.dtype(dtype)
        v.aval = ShapedArray((), v.dtype, True)
        return v

    def __repr__(self):
        return f"{type(self).__name__}({self._plain(self)}, dtype={self.dtype.name})"

    def __getnewargs__(self):
        return (self._plain(self), self.dtype)


class TypedInt(_TypedScalar, int):  # (an int subclass cannot have slots)
    _plain = int


class TypedFloat(_TypedScalar, float):
    __slots__ = ("dtype", "aval")
    _plain = float

    def __str__(self):
        return str(float(self))


class TypedComplex(_TypedScalar, complex):
    __slots__ = ("dtype", "aval")
    _plain = complex


_TYPED = {int: TypedInt, float: TypedFloat, complex: TypedComplex}
for _plain, _typed in _TYPED.items():
    pytype_aval_mappings[_typed] = lambda v: v.aval
    _dtypes._PYTHON_SCALAR_DTYPES[_typed] = _dtypes._PYTHON_SCALAR_DTYPES[_plain]


def typed_scalar(x):
    """A Python int, float or complex as its typed form (its canonical weak dtype); anything else
    (bools, arrays, typed scalars already) as it is."""
    typed = _TYPED.get(type(x))
    return x if typed is None else typed(x, _dtypes.python_scalar_dtype(x))


pytype_aval_mappings[np.ndarray] = _numpy_aval
for _t in set(np.sctypeDict.values()):
    pytype_aval_mappings[_t] = _numpy_aval


def get_aval(x) -> ShapedArray:
    """The abstract value of any array-like accepted by a primitive."""
    fn = pytype_aval_mappings.get(type(x))
    if fn is None:
        aval = getattr(x, "aval", None)
        if isinstance(aval, ShapedArray):
            return aval
        if isinstance(x, np.generic):
            return _numpy_aval(x)
        raise TypeError(
            f"Value {x!r} of type {type(x).__name__} is not a valid morphax type: expected an array, "
            "a NumPy array or a Python scalar. Convert it with jnp.asarray first."
        )
    return fn(x)


def is_valid_value(x) -> bool:
    return type(x) in pytype_aval_mappings or hasattr(x, "aval") or isinstance(x, np.generic)
