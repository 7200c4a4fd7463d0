"""JAX's dtype system: dtype constants, x64 canonicalization, dtype categories and limits.
Promotion (the type lattice and ``result_type``) is in core/promotion.py.

The narrow types (bfloat16, float8_*, float4_e2m1fn, int2/int4/uint2/uint4) come from ml_dtypes,
whose import costs several times `import numpy`; it is imported, and those types join the tables
below, at the first use of one of their names (``dtypes.bfloat16``, the string "bfloat16") or
when a value of such a type (made with ml_dtypes by the caller) reaches a function here.
"""

from __future__ import annotations

import sys
import threading
import warnings

import numpy as np

from morphax._src.config import config

# ---------------------------------------------------------------------------------------------
# Dtype constants.

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

# The ml_dtypes types, by kind; module attributes (np.dtype, or None where the installed
# ml_dtypes lacks one) once `_load_ml_dtypes` has run.
_NARROW_FLOAT_NAMES = (
    "float8_e3m4",
    "float8_e4m3",
    "float8_e4m3b11fnuz",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn",
)
_INTN_NAMES = ("int2", "int4")
_UINTN_NAMES = ("uint2", "uint4")
ML_DTYPE_NAMES = ("bfloat16", *_NARROW_FLOAT_NAMES, *_INTN_NAMES, *_UINTN_NAMES)

# JAX's tangent dtype for integer and boolean primals: zero-sized, so it carries no data.
float0 = np.dtype([("float0", np.void, 0)])


# The tables below hold the ml_dtypes types only after `_load_ml_dtypes`, which adds them in
# place (other modules read these sets). numpy gives those types kind 'V', so every category test
# below has to know them by membership.
_NARROW_FLOATS: tuple = ()
_INTN: tuple = ()
_UINTN: tuple = ()
_CUSTOM_FLOATS: set = set()
_CUSTOM_SCALAR_TYPES: set = set()

_SIGNED = {int8, int16, int32, int64}
_UNSIGNED = {uint8, uint16, uint32, uint64}
_FLOATING = {float16, float32, float64}
_COMPLEX = frozenset((complex64, complex128))
_NUMERIC = _SIGNED | _UNSIGNED | _FLOATING | _COMPLEX
_JAX_DTYPES = _NUMERIC | {bool_, float0}

_KIND = {bool_: "b", **dict.fromkeys(_SIGNED, "i"), **dict.fromkeys(_UNSIGNED, "u")}
_KIND.update({**dict.fromkeys(_FLOATING, "f"), **dict.fromkeys(_COMPLEX, "c")})

# Dtypes numpy produces for Python scalars before canonicalization (JAX's python_scalar_dtypes).
_PYTHON_SCALAR_DTYPES = {bool: bool_, int: int64, float: float64, complex: complex128}
_WEAK_PYTYPES = (int, float, complex)

_TO_32BIT = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


class TypePromotionError(ValueError):
    """Raised when inputs have no implicit promotion path (e.g. float8 with float32)."""


class extended(np.generic):  # noqa: N801 - spelled like JAX's abstract category
    """Abstract category of extended (non-numpy) dtypes, such as PRNG key types."""


class ExtendedDType:
    """Base for extended dtypes; subclasses set ``type`` (a subclass of ``extended``) and ``name``."""

    type = extended
    name = "extended"

    def __repr__(self):
        return self.name


# ---------------------------------------------------------------------------------------------
# Canonicalization.


def _np_dtype(x) -> np.dtype:
    """np.dtype(x) with a TypeError that names the offending value."""
    try:
        return np.dtype(x)
    except (TypeError, ValueError) as e:
        # numpy knows "bfloat16" and friends only once ml_dtypes is imported.
        if not _ml_loaded and isinstance(x, str) and x in ML_DTYPE_NAMES:
            _load_ml_dtypes()
            return np.dtype(x)
        raise TypeError(f"dtype {x!r} not understood") from e


# One cache per x64 mode, picked by the calling thread's flag: enable_x64() is a thread-local
# override, so two threads may canonicalize in different modes at the same time.
_canon_caches: dict = {False: {}, True: {}}


def canonicalize_dtype(dtype, allow_extended=False) -> np.dtype:
    """The dtype arrays of ``dtype`` actually get: 64-bit types narrow to 32 bits unless x64 is on."""
    x64 = config.enable_x64
    try:
        return _canon_caches[x64][dtype]
    except (KeyError, TypeError):
        pass
    if isinstance(dtype, ExtendedDType):
        if not allow_extended:
            raise ValueError(f"canonicalize_dtype called on extended dtype {dtype} with allow_extended=False")
        return dtype
    dt = _np_dtype(dtype)
    _ensure_ml_dtypes()  # an ml_dtypes type the caller made: the tables learn it here
    out = dt if x64 else _TO_32BIT.get(dt, dt)
    # None is left out of the cache: np.dtype('float64') == None, which would alias keys.
    if dtype is not None:
        try:
            _canon_caches[x64][dtype] = out
        except TypeError:
            pass
    return out


def default_int_dtype() -> np.dtype:
    return int64 if config.enable_x64 else int32


def default_uint_dtype() -> np.dtype:
    return uint64 if config.enable_x64 else uint32


def default_float_dtype() -> np.dtype:
    return float64 if config.enable_x64 else float32


def default_complex_dtype() -> np.dtype:
    return complex128 if config.enable_x64 else complex64


def _default_dtype_for_kind(kind: str) -> np.dtype:
    if kind == "b":
        return bool_
    if kind == "i":
        return default_int_dtype()
    if kind == "u":
        return default_uint_dtype()
    if kind == "f":
        return default_float_dtype()
    return default_complex_dtype()


def _kind(dt) -> str:
    """numpy's kind letter, but 'f'/'i'/'u' for the ml_dtypes types numpy calls 'V'."""
    k = _KIND.get(dt)
    if k is None and _ensure_ml_dtypes():
        k = _KIND.get(dt)
    return k if k is not None else dt.kind


def is_python_scalar(x) -> bool:
    """Python bool/int/float/complex; numpy scalars (even np.float64, a float subclass) are not."""
    return type(x) in _PYTHON_SCALAR_DTYPES


def python_scalar_dtype(x) -> np.dtype:
    """Canonical default dtype for a Python scalar (or Python scalar type)."""
    typ = x if isinstance(x, type) else type(x)
    try:
        return canonicalize_dtype(_PYTHON_SCALAR_DTYPES[typ])
    except KeyError:
        raise TypeError(f"{x!r} is not a Python scalar") from None


def is_weakly_typed(x) -> bool:
    """Python int/float/complex are weak; bool is strong, as in JAX; arrays carry ``weak_type``."""
    if type(x) in _WEAK_PYTYPES:
        return True
    return bool(getattr(x, "weak_type", False))


def _is_typeclass(x) -> bool:
    return isinstance(x, type) and issubclass(x, np.generic)


def dtype(x, canonicalize=False):
    """The dtype of an array, scalar or dtype-like; Python scalars give 64-bit dtypes unless canonicalized."""
    if x is None:
        raise ValueError(f"Invalid argument to dtype: {x}.")
    if isinstance(x, type) and x in _PYTHON_SCALAR_DTYPES:
        dt = _PYTHON_SCALAR_DTYPES[x]
    elif type(x) in _PYTHON_SCALAR_DTYPES:
        dt = _PYTHON_SCALAR_DTYPES[type(x)]
    elif isinstance(x, (np.dtype, ExtendedDType)):
        dt = x
    elif isinstance(getattr(x, "dtype", None), (np.dtype, ExtendedDType)):
        dt = x.dtype
    elif isinstance(x, str) or _is_typeclass(x):
        dt = _np_dtype(x)
    else:
        try:
            dt = np.result_type(x)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Cannot determine dtype of {x!r}") from e
    if (
        not isinstance(dt, ExtendedDType)
        and dt not in _JAX_DTYPES
        and not (_ensure_ml_dtypes() and dt in _JAX_DTYPES)
    ):
        raise TypeError(
            f"Value {x!r} with dtype {dt} is not a valid JAX array type. "
            "Only arrays of numeric types are supported by JAX."
        )
    return canonicalize_dtype(dt, allow_extended=True) if canonicalize else dt


def scalar_type_of(x) -> type:
    """The Python scalar type (bool/int/float/complex) matching the dtype of ``x``."""
    k = _kind(dtype(x))
    if k == "b":
        return bool
    if k in "iu":
        return int
    if k == "f":
        return float
    if k == "c":
        return complex
    raise TypeError(f"Invalid scalar value {x!r}")


def check_user_dtype_supported(dtype, fun_name=None) -> None:
    """Rejects non-numeric dtypes and warns when x32 mode will truncate a requested 64-bit dtype."""
    if dtype is None or (isinstance(dtype, type) and dtype in _PYTHON_SCALAR_DTYPES):
        return
    if isinstance(dtype, ExtendedDType):
        return
    dt = _np_dtype(dtype)
    where = f" in {fun_name}" if fun_name else ""
    if dt not in _JAX_DTYPES and not (_ensure_ml_dtypes() and dt in _JAX_DTYPES):
        raise TypeError(f"JAX only supports number and bool dtypes, got dtype {dtype}{where}")
    canon = canonicalize_dtype(dt)
    if canon != dt:
        warnings.warn(
            f"Explicitly requested dtype {dt.name}{where} is not available, and will be truncated to "
            f"dtype {canon.name}. To enable more dtypes, set the jax_enable_x64 configuration option "
            "or the JAX_ENABLE_X64 shell environment variable.",
            UserWarning,
            stacklevel=3,
        )


# ---------------------------------------------------------------------------------------------
# Categories.


def issubdtype(a, b) -> bool:
    """np.issubdtype that also files bfloat16/float8 under floating and int4/uint4 under integer."""
    if isinstance(a, ExtendedDType) or isinstance(b, ExtendedDType):
        if isinstance(b, ExtendedDType):
            return a == b
        return _is_typeclass(b) and issubclass(a.type, b)
    _ensure_ml_dtypes()
    a = a if _is_typeclass(a) and a not in _CUSTOM_SCALAR_TYPES else _np_dtype(a)
    b = b if _is_typeclass(b) and b not in _CUSTOM_SCALAR_TYPES else _np_dtype(b)
    if isinstance(a, np.dtype):
        if a in _CUSTOM_FLOATS or a in _INTN or a in _UINTN:
            if isinstance(b, np.dtype):
                return a == b
            k = _kind(a)
            cat = np.floating if k == "f" else np.signedinteger if k == "i" else np.unsignedinteger
            return b in (a.type, cat, np.inexact if k == "f" else np.integer, np.number, np.generic)
        a = a.type
    if isinstance(b, np.dtype):
        b = b.type
    return issubclass(a, b)


# The helpers below run inside every primitive, so they look the dtype up in a dict first:
# isinstance(x, np.dtype) and np.dtype.__eq__ each cost more than the whole dict lookup.
_DTYPE_CLASSES = {type(d) for d in _JAX_DTYPES}


def _as_dtype(dt) -> np.dtype:
    return dt if type(dt) in _DTYPE_CLASSES else _np_dtype(dt)


def _kind_of(dt) -> str:
    try:
        k = _KIND.get(dt)
    except TypeError:  # unhashable dtype-likes such as structured-field lists
        k = None
    if k is None:
        k = "V" if isinstance(dt, ExtendedDType) else _kind(_np_dtype(dt))
    return k


def is_bool(dt) -> bool:
    return _kind_of(dt) == "b"


def is_unsigned(dt) -> bool:
    return _kind_of(dt) == "u"


def is_integer(dt) -> bool:
    k = _kind_of(dt)
    return k == "i" or k == "u"


def is_floating(dt) -> bool:
    return _kind_of(dt) == "f"


def is_complex(dt) -> bool:
    return _kind_of(dt) == "c"


def is_inexact(dt) -> bool:
    k = _kind_of(dt)
    return k == "f" or k == "c"


def to_inexact_dtype(dt) -> np.dtype:
    """Floating and complex dtypes unchanged; bool and integers become a float of their width.

    As in JAX (0.10): bool and integers of up to 32 bits become float32 even in x64 mode (so
    ``jnp.mean``/``jnp.sqrt`` of int32 is float32 there); only 64-bit integers become float64.
    """
    dt = _as_dtype(dt)
    k = _kind(dt)
    if k == "f" or k == "c":
        return dt
    return canonicalize_dtype(float64) if dt.itemsize == 8 else float32


_COMPLEX_OF = {float64: complex128, complex64: complex64, complex128: complex128}
_REAL_OF = {complex64: float32, complex128: float64}


def to_complex_dtype(dt) -> np.dtype:
    """The complex dtype holding ``dt``: float64 -> complex128, narrower floats -> complex64."""
    return _COMPLEX_OF.get(to_inexact_dtype(dt), complex64)


def real_dtype(dt) -> np.dtype:
    """The component dtype of a complex dtype; other dtypes are returned unchanged."""
    dt = _as_dtype(dt)
    return _REAL_OF.get(dt, dt)


def itemsize_bits(dt) -> int:
    """Storage width in bits; int4 reports 4 even though numpy stores it in a byte."""
    dt = _as_dtype(dt)
    _ensure_ml_dtypes()
    if dt in _INTN or dt in _UINTN:
        return _load_ml_dtypes().iinfo(dt).bits
    if dt in _CUSTOM_FLOATS:
        return _load_ml_dtypes().finfo(dt).bits
    return dt.itemsize * 8


_short_names: dict = {float0: "float0"}


def short_dtype_name(dt) -> str:
    """JAX's jaxpr abbreviation: float32 -> 'f32', uint8 -> 'u8', bfloat16 -> 'bf16', bool -> 'bool'."""
    try:
        return _short_names[dt]
    except (KeyError, TypeError):
        pass
    if isinstance(dt, ExtendedDType):
        return str(dt)
    name = _as_dtype(dt).name.replace("float", "f").replace("uint", "u").replace("int", "i")
    name = name.replace("complex", "c")
    _short_names[dt] = name
    return name


def finfo(dt):
    """Floating-point limits of the canonical dtype (ml_dtypes.finfo handles bfloat16 and float8)."""
    dt = canonicalize_dtype(dtype(dt))
    # NB: JAX always returns ml_dtypes.finfo; for numpy's own dtypes that is np.finfo with the same
    # fields, which morphax returns so that jnp.finfo(jnp.float32) does not import ml_dtypes.
    if dt in _CUSTOM_FLOATS:
        return _load_ml_dtypes().finfo(dt)
    return np.finfo(dt)


def iinfo(dt):
    """Integer limits of the canonical dtype (ml_dtypes.iinfo handles int4/uint4)."""
    dt = canonicalize_dtype(dtype(dt))
    # NB: np.iinfo for numpy's own integer dtypes, as in finfo (the same fields as ml_dtypes').
    if dt in _INTN or dt in _UINTN:
        return _load_ml_dtypes().iinfo(dt)
    return np.iinfo(dt)


def can_cast(from_, to, casting="safe") -> bool:
    """np.can_cast on dtypes; arrays (anything with ``.dtype``) are judged by their dtype."""

    def conv(x):
        dt = getattr(x, "dtype", None)
        if isinstance(dt, np.dtype):
            return dt
        # Python scalar values go through untouched so numpy raises its NEP 50 error.
        return x if type(x) in _PYTHON_SCALAR_DTYPES else _np_dtype(x)

    return bool(np.can_cast(conv(from_), conv(to), casting=casting))


# ---------------------------------------------------------------------------------------------
# The ml_dtypes types, added to the tables above on first use.

_ml_loaded = False
_ml_lock = threading.RLock()
_ml_callbacks: list = []
_bf16 = None  # bfloat16 once loaded, for the functions below (the public name is bound lazily)


def when_ml_dtypes_loaded(fn) -> None:
    """Call ``fn()`` once the ml_dtypes types are in this module's tables (now, if they are), so
    other modules keep their own tables of bfloat16 and friends without importing ml_dtypes."""
    with _ml_lock:
        if not _ml_loaded:
            _ml_callbacks.append(fn)
            return
    fn()


def _load_ml_dtypes():
    """Import ml_dtypes, bind its types as this module's constants and add them to every table
    (in place: other modules hold these sets), then run the `when_ml_dtypes_loaded` callbacks.
    Returns the ml_dtypes module."""
    global _ml_loaded
    import ml_dtypes

    if _ml_loaded:
        return ml_dtypes
    with _ml_lock:
        if not _ml_loaded:
            _add_ml_dtypes(ml_dtypes)
            # The constants are bound, so the callbacks can read them (and re-enter harmlessly).
            _ml_loaded = True
            for fn in _ml_callbacks:
                fn()
            _ml_callbacks.clear()
    return ml_dtypes


def _add_ml_dtypes(ml_dtypes):
    global _NARROW_FLOATS, _INTN, _UINTN, _bf16
    found = {}
    for name in ML_DTYPE_NAMES:
        # Older ml_dtypes releases lack some narrow types; those constants are then None.
        scalar = getattr(ml_dtypes, name, None)
        found[name] = None if scalar is None else np.dtype(scalar)
    narrow = tuple(found[n] for n in _NARROW_FLOAT_NAMES if found[n] is not None)
    intn = tuple(found[n] for n in _INTN_NAMES if found[n] is not None)
    uintn = tuple(found[n] for n in _UINTN_NAMES if found[n] is not None)
    custom_floats = (found["bfloat16"], *narrow)
    _CUSTOM_FLOATS.update(custom_floats)
    _CUSTOM_SCALAR_TYPES.update(d.type for d in (*custom_floats, *intn, *uintn))
    _SIGNED.update(intn)
    _UNSIGNED.update(uintn)
    _FLOATING.update(custom_floats)
    new = (*custom_floats, *intn, *uintn)
    _NUMERIC.update(new)
    _JAX_DTYPES.update(new)
    _KIND.update(
        {**dict.fromkeys(intn, "i"), **dict.fromkeys(uintn, "u"), **dict.fromkeys(custom_floats, "f")}
    )
    _DTYPE_CLASSES.update(type(d) for d in new)
    _NARROW_FLOATS, _INTN, _UINTN, _bf16 = narrow, intn, uintn, found["bfloat16"]
    globals().update(found)


def _ensure_ml_dtypes() -> bool:
    """Add the ml_dtypes types to the tables if the caller imported ml_dtypes itself (a value of
    such a type may then be on its way in). True when this call added them."""
    if _ml_loaded or "ml_dtypes" not in sys.modules:
        return False
    _load_ml_dtypes()
    return True


def _ml_types_possible() -> bool:
    """Whether a value of an ml_dtypes type can exist: ml_dtypes is imported (the tables then
    know its types)."""
    return _ml_loaded or _ensure_ml_dtypes()


def is_bfloat16(dt) -> bool:
    """``dt == bfloat16``, without importing ml_dtypes while no bfloat16 value can exist."""
    return _ml_types_possible() and dt == _bf16


def is_16bit_float(dt) -> bool:
    """float16 or bfloat16 (the floats computed in float32 and rounded back), without importing
    ml_dtypes while no bfloat16 value can exist."""
    return dt == float16 or (_ml_types_possible() and dt == _bf16)


def __getattr__(name):
    # The ml_dtypes constants (dtypes.bfloat16, ...) exist once ml_dtypes is imported.
    if name in ML_DTYPE_NAMES:
        _load_ml_dtypes()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
